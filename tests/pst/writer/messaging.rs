//! The messaging layer of a written archive (MS-PST §2.4): the message store, the name-to-id map,
//! the root folder, folders with their hierarchy, contents and associated contents tables, and
//! messages with their recipient tables.

use std::collections::BTreeMap;

use super::ltp::{pc, tc};
use super::ndb::Ndb;
use super::{Layout, Props, PT_BOOLEAN, PT_LONG, PT_STRING8, PT_UNICODE, V};

/// A folder of an [`Archive`].
struct Folder {
    nid: u32,
    parent: u32,
    props: Props,
}

/// A message of an [`Archive`].
struct Message {
    nid: u32,
    folder: u32,
    props: Props,
    recipients: Vec<Props>,
}

/// An Outlook data file made of a store, folders and messages (MS-PST §2.4).
pub struct Archive {
    pub ndb: Ndb,
    store: Props,
    /// Named properties (property set GUID, LID), the first being property id 0x8000.
    named: Vec<([u8; 16], u32)>,
    folders: Vec<Folder>,
    messages: Vec<Message>,
}

/// PSETID_Address and PSETID_Appointment (MS-OXPROPS §1.3.2), as GUIDs are stored.
pub const PSETID_ADDRESS: [u8; 16] = [4, 0x20, 6, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0x46];
pub const PSETID_APPOINTMENT: [u8; 16] = [2, 0x20, 6, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0x46];

/// The node of the root folder; the top of the personal folders is [`Archive::TOP`].
pub const ROOT: u32 = 0x122;

impl Archive {
    /// The folder Outlook shows as the store itself.
    pub const TOP: u32 = 0x8022;

    pub fn new(layout: Layout, crypt: u8) -> Archive {
        let mut a = Archive {
            ndb: Ndb::new(layout, crypt),
            store: Vec::new(),
            named: Vec::new(),
            folders: Vec::new(),
            messages: Vec::new(),
        };
        // PidLidFileUnder, which Outlook's own files always name.
        a.named(PSETID_ADDRESS, 0x8005);
        a.folders.push(Folder {
            nid: Self::TOP,
            parent: ROOT,
            props: vec![(0x3001, V::Text("Top of Personal Folders".into()))],
        });
        a
    }

    /// Properties of the message store besides its name, record key and the entry ids of its
    /// special folders.
    pub fn store_props(&mut self, props: Props) {
        self.store.extend(props);
    }

    /// A folder named `name` (and `props`) below `parent`; its node id.
    pub fn folder(&mut self, parent: u32, name: V, props: Props) -> u32 {
        let nid = ((0x402 + self.folders.len() as u32) << 5) | 0x02;
        let mut all = vec![(0x3001, name)];
        all.extend(props);
        self.folders.push(Folder { nid, parent, props: all });
        nid
    }

    /// A message in `folder` with `props` and recipients; its node id.
    pub fn message(&mut self, folder: u32, props: Props, recipients: Vec<Props>) -> u32 {
        let nid = ((0x10001 + self.messages.len() as u32) << 5) | 0x04;
        self.messages.push(Message { nid, folder, props, recipients });
        nid
    }

    const UID: [u8; 16] = *b"mailshelf-tests!";

    /// The property id of the named property `lid` of the set `guid` in this archive.
    pub fn named(&mut self, guid: [u8; 16], lid: u32) -> u16 {
        let at = match self.named.iter().position(|n| *n == (guid, lid)) {
            Some(at) => at,
            None => {
                self.named.push((guid, lid));
                self.named.len() - 1
            }
        };
        0x8000 + at as u16
    }

    /// An EntryID of a node in this store (MS-PST §2.4.3.2).
    pub fn entry_id(nid: u32) -> Vec<u8> {
        let mut e = vec![0u8; 4];
        e.extend_from_slice(&Self::UID);
        e.extend_from_slice(&nid.to_le_bytes());
        e
    }

    pub fn finish(mut self) -> Vec<u8> {
        let ndb = &mut self.ndb;
        // The message store.
        let mut store = vec![
            (0x0ff9, V::Binary(Self::UID.to_vec())),
            (0x3001, V::Text("Personal Folders".into())),
            (0x35e0, V::Binary(Self::entry_id(Self::TOP))),
        ];
        store.extend(self.store.iter().cloned());
        let (d, s) = pc(ndb, &store, &BTreeMap::new());
        ndb.node(0x21, 0, d, s);
        // The name-to-id map (MS-PST §2.4.7): 251 buckets, and the named properties given, each
        // an entry (LID, GUID index << 1, property index) with its GUID in the GUID stream.
        let mut guids: Vec<[u8; 16]> = Vec::new();
        let mut entries = Vec::new();
        for (i, (guid, lid)) in self.named.iter().enumerate() {
            let g = match guids.iter().position(|g| g == guid) {
                Some(g) => g,
                None => {
                    guids.push(*guid);
                    guids.len() - 1
                }
            };
            entries.extend_from_slice(&lid.to_le_bytes());
            entries.extend_from_slice(&(((g as u32 + 3) << 1) | ((i as u32) << 16)).to_le_bytes());
        }
        let names = vec![
            (0x0001, V::Long(251)),
            (0x0002, V::Binary(guids.concat())),
            (0x0003, V::Binary(entries)),
            (0x0004, V::Binary(Vec::new())),
        ];
        let (d, s) = pc(ndb, &names, &BTreeMap::new());
        ndb.node(0x61, 0, d, s);
        // Folders, the root first.
        let mut all: Vec<(u32, u32, Props)> = vec![(ROOT, ROOT, vec![(0x3001, V::Text(String::new()))])];
        all.extend(self.folders.iter().map(|f| (f.nid, f.parent, f.props.clone())));
        let folder_columns = [
            (0x3001, if ndb.layout == Layout::Ansi { PT_STRING8 } else { PT_UNICODE }),
            (0x3602, PT_LONG),
            (0x3603, PT_LONG),
            (0x360a, PT_BOOLEAN),
        ];
        let message_columns = [
            (0x001a, if ndb.layout == Layout::Ansi { PT_STRING8 } else { PT_UNICODE }),
            (0x0037, if ndb.layout == Layout::Ansi { PT_STRING8 } else { PT_UNICODE }),
            (0x0e07, PT_LONG),
        ];
        for (nid, parent, props) in &all {
            let children: Vec<&(u32, u32, Props)> = all.iter().filter(|c| c.1 == *nid && c.0 != *nid).collect();
            let messages: Vec<&Message> = self.messages.iter().filter(|m| m.folder == *nid).collect();
            let mut props = props.clone();
            props.push((0x3602, V::Long(messages.len() as u32)));
            props.push((0x3603, V::Long(0)));
            props.push((0x360a, V::Bool(!children.is_empty())));
            let (d, s) = pc(ndb, &props, &BTreeMap::new());
            ndb.node(*nid, *parent, d, s);
            let rows: Vec<(u32, Props)> = children
                .iter()
                .map(|c| {
                    let mut row = c.2.clone();
                    let count = self.messages.iter().filter(|m| m.folder == c.0).count() as u32;
                    row.push((0x3602, V::Long(count)));
                    row.push((0x3603, V::Long(0)));
                    row.push((0x360a, V::Bool(all.iter().any(|g| g.1 == c.0 && g.0 != c.0))));
                    (c.0, row)
                })
                .collect();
            let (d, s) = tc(ndb, &folder_columns, &rows);
            ndb.node((nid & !0x1f) | 0x0d, 0, d, s);
            let rows: Vec<(u32, Props)> = messages.iter().map(|m| (m.nid, m.props.clone())).collect();
            let (d, s) = tc(ndb, &message_columns, &rows);
            ndb.node((nid & !0x1f) | 0x0e, 0, d, s);
            let (d, s) = tc(ndb, &message_columns, &[]);
            ndb.node((nid & !0x1f) | 0x0f, 0, d, s);
        }
        // Messages, each with its recipient table.
        let text = if ndb.layout == Layout::Ansi { PT_STRING8 } else { PT_UNICODE };
        let recipient_columns = [(0x0c15, PT_LONG), (0x3001, text), (0x3002, text), (0x3003, text), (0x39fe, text)];
        for m in &self.messages {
            let rows: Vec<(u32, Props)> = m.recipients.iter().enumerate().map(|(i, r)| (i as u32, r.clone())).collect();
            let mut extra = BTreeMap::new();
            extra.insert(0x692, tc(ndb, &recipient_columns, &rows));
            let (d, s) = pc(ndb, &m.props, &extra);
            ndb.node(m.nid, m.folder, d, s);
        }
        self.ndb.finish()
    }
}
