//! The `.msg` writer: an item of an archive holds the same MAPI properties a `.msg` file does, so it
//! is written as the `.msg` Outlook would export (MS-OXMSG: the same property streams, recipients,
//! attachments and named-property map, in a compound file built in memory with the `cfb` crate)
//! and read by the parse stage like any `.msg`: every item class is shown as a `.msg` of that
//! class is, and `/raw/` serves the item as a `.msg`.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::ltp::{codepage, find, Prop, Val};
use super::messaging::{
    notice_message, NID_MESSAGE_STORE, NID_NAME_TO_ID_MAP, NID_RECIPIENT_TABLE, NID_TYPE_ATTACHMENT,
};
use super::ndb::{le32, Pst};
use crate::error::Error;
use crate::limits::{MAX_MSG_ENTRIES, MAX_MSG_NESTING, MAX_MSG_STREAM};
use crate::mapi::{
    ATTACH_DATA, ATTACH_LONG_FILENAME, ENTRY_ID, MESSAGE_CODEPAGE, PT_BINARY, PT_CLSID, PT_LONG, PT_MV_BINARY,
    PT_STRING8, PT_UNICODE, RECORD_KEY, SUBJECT,
};

/// What the `.msg` of an item carries besides the item's own properties.
struct Item {
    entry_id: Vec<u8>,
    /// The store's code page, for an item that names none.
    store_codepage: Option<u32>,
}

/// One item of an archive, as the `.msg` file Outlook would save it as, with its EntryID.
pub fn item_msg(path: &Path, node: u32) -> Result<Vec<u8>, Error> {
    let mut pst = Pst::open(path)?;
    let n = pst.node(node).ok_or(Error::MessageNotFound)?;
    let shared = shared(&mut pst, path);
    // The item's EntryID (MS-PST §2.4.3.2: flags, the store's record key, the node id) is what
    // tells apart copies of one message in two folders, or twice in one: Outlook shows each.
    let mut entry_id = vec![0u8; 4];
    entry_id.extend_from_slice(&shared.record_key);
    entry_id.extend_from_slice(&node.to_le_bytes());
    let item = Item { entry_id, store_codepage: shared.codepage };
    let mut out = MsgWriter::new()?;
    if pst.write_message(&mut out, "/", n.data, n.sub, Some(&item), 0).is_none() {
        // A damaged item is still listed, saying what could not be read.
        let notice = format!("item {node} of this Outlook data file could not be read: its data is damaged or missing");
        return Ok(notice_message(path, &[notice]));
    }
    let dir = "/__nameid_version1.0";
    out.storage(dir)?;
    for (bytes, stream) in shared.named.iter().zip(["00020102", "00030102", "00040102"]) {
        out.stream(&format!("{dir}/__substg1.0_{stream}"), bytes)?;
    }
    out.finish()
}

/// What every item of an archive shares: the store's record key and code page, and the streams of
/// the name-to-id map. Read once for the items of one file (workers read a file's items one after
/// another), not once per item.
struct Shared {
    /// The file it was read from, as it was: path, length, time of last change.
    file: (PathBuf, u64, Option<SystemTime>),
    record_key: [u8; 16],
    codepage: Option<u32>,
    /// The GUID, entry and string streams of the name-to-id map (MS-PST §2.4.7).
    named: [Vec<u8>; 3],
}

/// The archive read last.
static LAST: Mutex<Option<Arc<Shared>>> = Mutex::new(None);

fn shared(pst: &mut Pst, path: &Path) -> Arc<Shared> {
    let modified = pst.file.metadata().ok().and_then(|m| m.modified().ok());
    let file = (path.to_path_buf(), pst.len, modified);
    if let Some(s) = LAST.lock().ok().and_then(|last| last.clone()).filter(|s| s.file == file) {
        return s;
    }
    let store = pst.node_props(NID_MESSAGE_STORE).unwrap_or_default();
    let names = pst.node_props(NID_NAME_TO_ID_MAP).unwrap_or_default();
    let bytes = |props: &[Prop], id: u16| match find(props, id).map(|p| &p.value) {
        Some(Val::Bytes(b)) => b.clone(),
        _ => Vec::new(),
    };
    let mut record_key = [0u8; 16];
    if let Ok(key) = <[u8; 16]>::try_from(bytes(&store, RECORD_KEY).as_slice()) {
        record_key = key;
    }
    let shared = Arc::new(Shared {
        file,
        record_key,
        codepage: codepage(&store, None),
        named: [bytes(&names, 0x0002), bytes(&names, 0x0003), bytes(&names, 0x0004)],
    });
    if let Ok(mut last) = LAST.lock() {
        *last = Some(Arc::clone(&shared));
    }
    shared
}

impl Pst {
    /// Writes a message object (properties, recipients, attachments) under `dir` of the `.msg`:
    /// the item itself, with what `item` adds to its properties, or a message attached to it
    /// (`depth` levels down).
    fn write_message(
        &mut self,
        out: &mut MsgWriter,
        dir: &str,
        data: u64,
        sub: u64,
        item: Option<&Item>,
        depth: usize,
    ) -> Option<()> {
        let mut props = self.props(data, sub)?;
        if let Some(item) = item {
            props.retain(|p| p.id != ENTRY_ID);
            props.push(Prop { id: ENTRY_ID, ty: PT_BINARY, value: Val::Bytes(item.entry_id.clone()) });
            // An item that does not say which code page its 8-bit strings are in is in the store's:
            // the `.msg` says so, having no store to inherit from.
            if let Some(cp) = item.store_codepage.filter(|_| codepage(&props, None).is_none()) {
                props.push(Prop { id: MESSAGE_CODEPAGE, ty: PT_LONG, value: Val::Fixed(u64::from(cp)) });
            }
        }
        let subs = self.subnodes(sub);
        let recipients = match subs.get(&NID_RECIPIENT_TABLE) {
            Some(&(d, s)) => self.table(d, s).unwrap_or_default(),
            None => Vec::new(),
        };
        let mut attachments: Vec<(u32, (u64, u64))> =
            subs.iter().filter(|(nid, _)| *nid & 0x1f == NID_TYPE_ATTACHMENT).map(|(n, v)| (*n, *v)).collect();
        attachments.sort_by_key(|a| a.0);
        attachments.truncate(MAX_MSG_ENTRIES);
        let header = if depth == 0 {
            let mut h = vec![0u8; 32];
            for (at, v) in
                [(8, recipients.len()), (12, attachments.len()), (16, recipients.len()), (20, attachments.len())]
            {
                h[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
            }
            h
        } else {
            vec![0u8; 24]
        };
        out.object(dir, &props, header).ok()?;
        for (i, row) in recipients.iter().enumerate() {
            let r = format!("{}__recip_version1.0_#{i:08X}", slash(dir));
            out.storage(&r).ok()?;
            out.object(&r, row, vec![0u8; 8]).ok()?;
        }
        for (i, (_, (d, s))) in attachments.iter().enumerate() {
            let a = format!("{}__attach_version1.0_#{i:08X}", slash(dir));
            out.storage(&a).ok()?;
            let Some(props) = self.props(*d, *s) else {
                // Said where the attachment would be, rather than left out without a word.
                let utf16 = |s: &str| s.encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>();
                let said = [
                    Prop { id: ATTACH_LONG_FILENAME, ty: PT_UNICODE, value: Val::Bytes(utf16(&format!("attachment {} (unreadable).txt", i + 1))) },
                    Prop { id: ATTACH_DATA, ty: PT_BINARY, value: Val::Bytes(b"This attachment could not be read from the Outlook data file: its data is damaged, missing or larger than mailshelf reads.\r\n".to_vec()) },
                ];
                out.object(&a, &said, vec![0u8; 8]).ok()?;
                continue;
            };
            out.object(&a, &props, vec![0u8; 8]).ok()?;
            let inner = find(&props, ATTACH_DATA).and_then(|p| match p.value {
                Val::Object(node) => node,
                _ => None,
            });
            if let Some((d, s)) = inner.filter(|_| depth < MAX_MSG_NESTING) {
                let m = format!("{a}/__substg1.0_3701000D");
                out.storage(&m).ok()?;
                self.write_message(out, &m, d, s, None, depth + 1);
            }
        }
        Some(())
    }
}

fn slash(dir: &str) -> String {
    if dir.ends_with('/') {
        dir.to_string()
    } else {
        format!("{dir}/")
    }
}

/// A `.msg` compound file being built in memory. Every storage gets the same fixed time stamps, so
/// one item always gives the same bytes (its derived id stays the same across re-reads).
struct MsgWriter {
    cf: cfb::CompoundFile<Cursor<Vec<u8>>>,
}

impl MsgWriter {
    fn new() -> Result<MsgWriter, Error> {
        let cf = cfb::CompoundFile::create(Cursor::new(Vec::new()))?;
        let mut w = MsgWriter { cf };
        w.stamp("/")?;
        Ok(w)
    }

    fn stamp(&mut self, path: &str) -> Result<(), Error> {
        self.cf.set_created_time(path, std::time::UNIX_EPOCH)?;
        self.cf.set_modified_time(path, std::time::UNIX_EPOCH)?;
        Ok(())
    }

    fn storage(&mut self, path: &str) -> Result<(), Error> {
        self.cf.create_storage(path)?;
        self.stamp(path)
    }

    fn stream(&mut self, path: &str, bytes: &[u8]) -> Result<(), Error> {
        let mut s = self.cf.create_stream(path)?;
        s.write_all(bytes)?;
        Ok(())
    }

    /// An object's properties: fixed ones in the property stream, the others a stream each.
    fn object(&mut self, dir: &str, props: &[Prop], mut table: Vec<u8>) -> Result<(), Error> {
        for p in props {
            let mut entry = [0u8; 16];
            entry[0..2].copy_from_slice(&p.ty.to_le_bytes());
            entry[2..4].copy_from_slice(&p.id.to_le_bytes());
            entry[4..8].copy_from_slice(&6u32.to_le_bytes());
            match &p.value {
                Val::Fixed(v) => entry[8..16].copy_from_slice(&v.to_le_bytes()),
                Val::Bytes(b) if matches!(p.ty, PT_STRING8 | PT_UNICODE | PT_BINARY | PT_CLSID) => {
                    let mut b = b.as_slice();
                    // The archive keeps a subject's prefix length before it (`\u{1}\u{4}RE: …`); a
                    // `.msg` does not.
                    if p.id == SUBJECT {
                        b = strip_subject_marker(b, p.ty);
                    }
                    if b.len() > MAX_MSG_STREAM {
                        continue;
                    }
                    entry[8..12].copy_from_slice(&(b.len() as u32).to_le_bytes());
                    self.stream(&format!("{}__substg1.0_{:04X}{:04X}", slash(dir), p.id, p.ty), b)?;
                }
                // Multi-valued binaries (a distribution list's members): the archive keeps a count,
                // offsets and the values in one blob (MS-PST §2.3.3.4.2); a `.msg` keeps a stream
                // of lengths and a stream per value (MS-OXMSG §2.1.4.2.2).
                Val::Bytes(b) if p.ty == PT_MV_BINARY => {
                    let Some(values) = multi_values(b) else { continue };
                    let name = format!("{}__substg1.0_{:04X}{:04X}", slash(dir), p.id, p.ty);
                    let mut lengths = Vec::with_capacity(values.len() * 8);
                    for (i, v) in values.iter().enumerate() {
                        lengths.extend_from_slice(&(v.len() as u32).to_le_bytes());
                        lengths.extend_from_slice(&[0; 4]);
                        self.stream(&format!("{name}-{i:08X}"), v)?;
                    }
                    entry[8..12].copy_from_slice(&(lengths.len() as u32).to_le_bytes());
                    self.stream(&name, &lengths)?;
                }
                _ => continue,
            }
            table.extend_from_slice(&entry);
        }
        self.stream(&format!("{}__properties_version1.0", slash(dir)), &table)
    }

    fn finish(mut self) -> Result<Vec<u8>, Error> {
        self.cf.flush()?;
        Ok(self.cf.into_inner().into_inner())
    }
}

/// The values of a variable-size multi-valued property: a count, the offset of each value, the
/// values (each up to the next offset). `None` when the offsets do not fit the blob.
fn multi_values(b: &[u8]) -> Option<Vec<&[u8]>> {
    let count = usize::try_from(le32(b, 0)?).ok().filter(|&n| n <= MAX_MSG_ENTRIES)?;
    let offsets: Vec<usize> = (0..count).map(|i| le32(b, 4 + 4 * i).map(|o| o as usize)).collect::<Option<_>>()?;
    (0..count)
        .map(|i| {
            let end = offsets.get(i + 1).copied().unwrap_or(b.len());
            b.get(offsets[i]..end)
        })
        .collect()
}

fn strip_subject_marker(b: &[u8], ty: u16) -> &[u8] {
    match ty {
        PT_UNICODE if b.len() >= 4 && b[0] == 1 && b[1] == 0 => &b[4..],
        PT_STRING8 if b.len() >= 2 && b[0] == 1 => &b[2..],
        _ => b,
    }
}
