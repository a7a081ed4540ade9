//! Outlook `.msg` files (MS-OXMSG): MAPI properties in an OLE compound file (read with the `cfb`
//! crate). A `.msg` is turned into the Internet message it stands for — headers from
//! `PidTagTransportMessageHeaders` or from the properties, the body (HTML, HTML or text out of
//! compressed RTF, plain text) and the attachments as MIME parts, attached messages as
//! `message/rfc822` — and that is read by [`super::mime`] like any other message, so pages, the part
//! tree, `cid:` resolution, search and threads work unchanged. Other item classes (contacts,
//! appointments, tasks, notes) become a text body listing their main fields.

use std::collections::HashMap;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::build::{self, clean, mailbox, param, Node, Writer};
use super::{charset, mime, rtf};
use crate::error::Error;
use crate::limits::{MAX_MSG_ENTRIES, MAX_MSG_NESTING, MAX_MSG_STREAM, MSG_READ_FACTOR};
use crate::mapi::codepage;
use crate::mapi::{
    self, ADDRTYPE, ATTACHMENT_HIDDEN, ATTACH_CONTENT_ID, ATTACH_CONTENT_LOCATION, ATTACH_DATA, ATTACH_EMBEDDED_MSG,
    ATTACH_FILENAME, ATTACH_LONG_FILENAME, ATTACH_METHOD, ATTACH_MIME_TAG, BODY, BODY_HTML, BUSINESS_FAX,
    BUSINESS_PHONE, CLIENT_SUBMIT_TIME, COMPANY_NAME, COUNTRY, CREATION_TIME, DELIVERY_TIME, DEPARTMENT, DISPLAY_CC,
    DISPLAY_NAME, DISPLAY_TO, EMAIL_ADDRESS, ENTRY_ID, GIVEN_NAME, HOME_PHONE, INTERNET_CODEPAGE, INTERNET_MESSAGE_ID,
    INTERNET_REFERENCES, IN_REPLY_TO, LAST_MODIFICATION_TIME, LOCALITY, MESSAGE_CLASS, MESSAGE_CODEPAGE, MOBILE_PHONE,
    POSTAL_CODE, PSETID_ADDRESS, PSETID_APPOINTMENT, PSETID_TASK, PT_BINARY, PT_BOOLEAN, PT_LONG, PT_MV_BINARY,
    PT_OBJECT, PT_STRING8, PT_SYSTIME, PT_UNICODE, RECIPIENT_TYPE, RTF_COMPRESSED, SENDER_ADDRTYPE, SENDER_EMAIL,
    SENDER_NAME, SENDER_SMTP_ADDRESS, SENT_REPRESENTING_ADDRTYPE, SENT_REPRESENTING_EMAIL, SENT_REPRESENTING_NAME,
    SENT_REPRESENTING_SMTP_ADDRESS, SMTP_ADDRESS, STATE, STREET, SUBJECT, SURNAME, TITLE, TRANSPORT_HEADERS,
};
use crate::model::Message;

/// A `.msg` file as a message. `raw` of the result is the Internet message built from the file,
/// whose parts the model points into; `original` keeps the file as given (what `/raw/` serves and
/// what identifies it). Something that could not be read marks the body damaged, which the page
/// shows as a notice. An OLE file with no message properties at all (a Word or Excel document) is
/// not a message.
pub(super) fn parse(data: Arc<[u8]>) -> Result<Message, Error> {
    parse_in(data, None)
}

/// [`parse`] for a `.msg` carried by something that knows the code page of its 8-bit strings when
/// the `.msg` does not say (a TNEF stream's message).
pub(super) fn parse_in(data: Arc<[u8]>, codepage: Option<u32>) -> Result<Message, Error> {
    // A `.msg` can reach another through a winmail.dat it carries (see [`super::tnef`]); this
    // bounds how deep that goes on one thread.
    let _nesting = Nesting::enter().ok_or(Error::Unparseable)?;
    let converted = convert(&data, codepage).ok_or(Error::Unparseable)?;
    let mut msg = mime::parse(Arc::from(converted.mime))?;
    if converted.damaged {
        let body = msg.html_body.or(msg.text_body).unwrap_or(0);
        if let Some(p) = msg.parts.get_mut(body) {
            p.damaged = true;
        }
    }
    msg.origin.original = Some(data);
    Ok(msg)
}

thread_local! {
    static NESTING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many `.msg` files are being read inside one another on this thread, while it lives.
struct Nesting;

impl Nesting {
    fn enter() -> Option<Nesting> {
        NESTING.with(|n| {
            (n.get() < MAX_MSG_NESTING).then(|| {
                n.set(n.get() + 1);
                Nesting
            })
        })
    }
}

impl Drop for Nesting {
    fn drop(&mut self) {
        NESTING.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// The header field an item's EntryID is written in.
const ENTRY_ID_HEADER: &str = "X-Outlook-Entry-ID";

/// What reading a `.msg` gives: the Internet message it stands for, and whether something in it
/// could not be read.
pub(super) struct Converted {
    pub mime: Vec<u8>,
    pub damaged: bool,
}

/// Turns a `.msg` file into the Internet message it stands for. A file the compound file reader
/// cannot open becomes a message that says so; `None` for a compound file that holds no message.
/// `codepage` is the one its 8-bit strings are in when its properties do not say.
pub(super) fn convert(data: &[u8], codepage: Option<u32>) -> Option<Converted> {
    let budget = data.len().saturating_mul(MSG_READ_FACTOR).saturating_add(1 << 20);
    Some(match cfb::CompoundFile::open(Cursor::new(data)) {
        Ok(cf) => {
            let mut reader = Store { cf, budget, damaged: false, named: HashMap::new() };
            let root = reader.children(Path::new("/"));
            if !root.iter().any(|(n, _)| n.starts_with("__substg1.0_") || n == "__properties_version1.0") {
                return None;
            }
            reader.load_named();
            let mut writer = Writer::new(blake3::hash(data).to_hex()[..16].to_string());
            let mime = reader.message(Path::new("/"), codepage, &mut writer, 0);
            Converted { mime, damaged: reader.damaged }
        }
        Err(e) => Converted {
            mime: format!(
                "Subject: Unreadable Outlook message\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThis file starts like an Outlook message (an OLE compound file) but cannot be read: {}.\r\n",
                clean(&e.to_string())
            )
            .into_bytes(),
            damaged: true,
        },
    })
}

/// One property value as stored.
enum Value {
    Fixed(u16, [u8; 8]),
    /// A variable-length value: its stream.
    Stream(u16, PathBuf),
}

struct Props {
    by_id: HashMap<u16, Value>,
    /// The code page 8-bit strings of this object are in.
    codepage: Option<u32>,
}

struct Store<'a> {
    cf: cfb::CompoundFile<Cursor<&'a [u8]>>,
    /// Bytes still allowed to be read from streams.
    budget: usize,
    damaged: bool,
    /// Named properties: (property set, LID) → property id.
    named: HashMap<(u32, u32), u16>,
}

impl Store<'_> {
    fn read_stream(&mut self, path: &Path) -> Option<Vec<u8>> {
        let len = self.cf.entry(path).ok()?.len();
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len > MAX_MSG_STREAM || len > self.budget {
            self.damaged = true;
            return None;
        }
        self.budget -= len;
        let mut buf = Vec::with_capacity(len);
        match self.cf.open_stream(path).and_then(|s| s.take(len as u64).read_to_end(&mut buf)) {
            Ok(_) => Some(buf),
            Err(_) => {
                self.damaged = true;
                None
            }
        }
    }

    /// The names of the entries of a storage, each with whether it is a stream.
    fn children(&mut self, dir: &Path) -> Vec<(String, bool)> {
        match self.cf.read_storage(dir) {
            Ok(entries) => entries.take(4 * MAX_MSG_ENTRIES).map(|e| (e.name().to_string(), e.is_stream())).collect(),
            Err(_) => {
                self.damaged = true;
                Vec::new()
            }
        }
    }

    /// The properties of the object (message, recipient, attachment) stored at `dir`; `header` is
    /// the size of the property stream's header (32 top level, 24 embedded, 8 otherwise).
    fn props(&mut self, dir: &Path, header: usize, inherited_cp: Option<u32>) -> Props {
        let mut by_id = HashMap::new();
        for (name, is_stream) in self.children(dir) {
            let Some(tag) = name.strip_prefix("__substg1.0_") else { continue };
            let Ok(tag) = u32::from_str_radix(tag, 16) else { continue };
            let (id, ty) = ((tag >> 16) as u16, (tag & 0xffff) as u16);
            if is_stream || ty == PT_OBJECT {
                by_id.entry(id).or_insert(Value::Stream(ty, dir.join(&name)));
            }
        }
        if let Some(stream) = self.read_stream(&dir.join("__properties_version1.0")) {
            for entry in stream.get(header..).unwrap_or(&[]).chunks_exact(16) {
                let ty = u16::from_le_bytes([entry[0], entry[1]]);
                let id = u16::from_le_bytes([entry[2], entry[3]]);
                let mut value = [0u8; 8];
                value.copy_from_slice(&entry[8..16]);
                if mapi::fixed_size(ty).is_some_and(|n| n <= 8) {
                    by_id.insert(id, Value::Fixed(ty, value));
                }
            }
        }
        let mut props = Props { by_id, codepage: None };
        let cp = |id| props.long(id).and_then(|c| u32::try_from(c).ok());
        props.codepage = mapi::codepage(cp(MESSAGE_CODEPAGE), cp(INTERNET_CODEPAGE), inherited_cp);
        props
    }

    fn bytes(&mut self, props: &Props, id: u16) -> Option<Vec<u8>> {
        match props.by_id.get(&id)? {
            Value::Stream(PT_BINARY, path) => {
                let path = path.clone();
                self.read_stream(&path)
            }
            _ => None,
        }
    }

    /// The values of a multi-valued binary property (MS-OXMSG §2.1.4.2.2): a stream of lengths,
    /// eight bytes a value, and a stream per value beside it.
    fn binaries(&mut self, props: &Props, id: u16) -> Vec<Vec<u8>> {
        let Some(Value::Stream(PT_MV_BINARY, path)) = props.by_id.get(&id) else { return Vec::new() };
        let path = path.clone();
        let count = self.read_stream(&path).map_or(0, |lengths| lengths.len() / 8).min(MAX_MSG_ENTRIES);
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        (0..count).filter_map(|i| self.read_stream(&path.with_file_name(format!("{name}-{i:08X}")))).collect()
    }

    fn string(&mut self, props: &Props, id: u16) -> Option<String> {
        let (ty, path) = match props.by_id.get(&id)? {
            Value::Stream(ty @ (PT_UNICODE | PT_STRING8), path) => (*ty, path.clone()),
            _ => return None,
        };
        let data = self.read_stream(&path)?;
        let s = mapi::string(ty, &data, props.codepage)?;
        (!s.trim().is_empty()).then_some(s)
    }

    /// Reads the named-property mapping (MS-OXMSG §2.2.3): which property id a LID of a property
    /// set was given in this file.
    fn load_named(&mut self) {
        let dir = Path::new("/__nameid_version1.0");
        let guids = self.read_stream(&dir.join("__substg1.0_00020102")).unwrap_or_default();
        let entries = self.read_stream(&dir.join("__substg1.0_00030102")).unwrap_or_default();
        for e in entries.chunks_exact(8).take(0x7fff) {
            let lid = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
            let info = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
            if info & 1 != 0 {
                continue; // named by a string, not a LID
            }
            let guid_index = ((info >> 1) & 0x7fff) as usize;
            let prop_index = (info >> 16) as u16;
            let Some(g) = guid_index.checked_sub(3).and_then(|i| guids.get(i * 16..i * 16 + 16)) else { continue };
            let set = u32::from_le_bytes([g[0], g[1], g[2], g[3]]);
            if g[4..] == [0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0x46] {
                self.named.insert((set, lid), 0x8000u16.wrapping_add(prop_index));
            }
        }
    }

    fn named_string(&mut self, props: &Props, set: u32, lid: u32) -> Option<String> {
        let id = *self.named.get(&(set, lid))?;
        self.string(props, id)
    }

    fn named_time(&self, props: &Props, set: u32, lid: u32) -> Option<String> {
        props.time(*self.named.get(&(set, lid))?).map(crate::dates::rfc5322_utc)
    }

    /// One message (the file's, or an attached one at `dir`) as an Internet message; its 8-bit
    /// strings are in code page `cp` unless its own properties name one (an attached message is
    /// in the code page of the message it is attached to).
    fn message(&mut self, dir: &Path, cp: Option<u32>, w: &mut Writer, depth: usize) -> Vec<u8> {
        let header = if depth == 0 { 32 } else { 24 };
        let props = self.props(dir, header, cp);
        let class = self.string(&props, MESSAGE_CLASS).unwrap_or_else(|| "IPM.Note".into());
        let mut headers = self.headers(dir, &props);

        // The body: HTML, else HTML or text out of compressed RTF, else plain text.
        let text = self.string(&props, BODY);
        let mut html = self.html(&props);
        let mut rtf_text = None;
        if html.is_none() {
            if let Some(d) = self.bytes(&props, RTF_COMPRESSED).and_then(|b| rtf::decompress(&b)) {
                self.damaged |= d.damaged;
                match rtf::read(&d.rtf) {
                    rtf::Content::Html(h) => html = Some(h),
                    rtf::Content::Text(t) => rtf_text = Some(t),
                }
            }
        }
        let mut text = text.or(rtf_text);
        if !class.to_ascii_lowercase().starts_with("ipm.note") && !class.eq_ignore_ascii_case("ipm.post") {
            let fields = self.item_fields(&class, &props);
            if !fields.is_empty() {
                let listed = fields.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join("\r\n");
                text = Some(match text {
                    Some(t) => format!("{listed}\r\n\r\n{t}"),
                    None => listed,
                });
                // The fields are the item: they are shown, not an HTML rendering without them.
                html = None;
            }
        }

        // Attachments.
        let mut attachments = Vec::new();
        let mut names: Vec<String> = self
            .children(dir)
            .into_iter()
            .filter(|(n, s)| !s && n.starts_with("__attach_version1.0_#"))
            .map(|(n, _)| n)
            .collect();
        names.sort();
        if names.len() > MAX_MSG_ENTRIES {
            names.truncate(MAX_MSG_ENTRIES);
            self.damaged = true;
        }
        for name in names {
            if let Some(a) = self.attachment(&dir.join(name), props.codepage, w, depth) {
                attachments.push(a);
            }
        }

        // A signed message is kept whole, as MIME, in its one attachment (MS-OXOSMIME): that is
        // its body, signature and all.
        if class.to_ascii_lowercase().starts_with("ipm.note.smime.multipartsigned") {
            if let Some(signed) = attachments.iter().find(|a| a.content_type == "multipart/signed") {
                let first_line = signed.data.split(|&c| c == b'\n').next().unwrap_or(&[]);
                let colon = first_line.iter().position(|&c| c == b':');
                if colon.is_some_and(|c| c > 0 && first_line[..c].iter().all(|&b| (33..=126).contains(&b))) {
                    let mut out = w.header_block(&headers);
                    let header_end = signed.data.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(signed.data.len());
                    if !signed.data[..header_end].to_ascii_lowercase().windows(13).any(|w| w == b"mime-version:") {
                        out.extend_from_slice(b"MIME-Version: 1.0\r\n");
                    }
                    out.extend_from_slice(&signed.data);
                    return out;
                }
            }
        }

        // An opaque-signed or encrypted message (IPM.Note.SMIME) is its one attachment, the CMS
        // object (MS-OXOSMIME §2.1.3.2): that object is its body, unwrapped by the parse stage.
        if class.to_ascii_lowercase().starts_with("ipm.note.smime") {
            let is_cms = |a: &&Attachment| {
                a.content_type.contains("pkcs7-mime")
                    || a.name.as_deref().is_some_and(|n| n.to_ascii_lowercase().ends_with(".p7m"))
            };
            if let (1, Some(cms)) = (attachments.len(), attachments.iter().find(is_cms)) {
                headers.push(("MIME-Version".into(), "1.0".into()));
                let mut out = w.header_block(&headers);
                let ct = format!("application/pkcs7-mime; {}", param("name", "smime.p7m"));
                w.node(&Node::leaf(&ct, &[], cms.data.clone()), &mut out);
                return out;
            }
        }

        let body = match (html, text) {
            (Some(h), Some(t)) => Node::Multi(
                "multipart/alternative".into(),
                vec![
                    Node::leaf("text/plain; charset=utf-8", &[], t.into_bytes()),
                    Node::leaf("text/html; charset=utf-8", &[], h.into_bytes()),
                ],
            ),
            (Some(h), None) => Node::leaf("text/html; charset=utf-8", &[], h.into_bytes()),
            (None, Some(t)) => Node::leaf("text/plain; charset=utf-8", &[], t.into_bytes()),
            (None, None) => Node::leaf("text/plain; charset=utf-8", &[], Vec::new()),
        };
        // Attachments the HTML refers to by Content-ID are its inline resources.
        let html_refs = body.html().unwrap_or_default();
        let (inline, files): (Vec<_>, Vec<_>) = attachments
            .into_iter()
            .partition(|a| a.content_id.as_deref().is_some_and(|c| html_refs.contains(&format!("cid:{c}"))));
        let body = if inline.is_empty() {
            body
        } else {
            let mut kids = vec![body];
            kids.extend(inline.into_iter().map(|a| a.node("inline")));
            Node::Multi("multipart/related".into(), kids)
        };
        let root = if files.is_empty() {
            body
        } else {
            let mut kids = vec![body];
            kids.extend(files.into_iter().map(|a| a.node("attachment")));
            Node::Multi("multipart/mixed".into(), kids)
        };
        headers.push(("MIME-Version".into(), "1.0".into()));
        let mut out = w.header_block(&headers);
        w.node(&root, &mut out);
        out
    }

    fn html(&mut self, props: &Props) -> Option<String> {
        match props.by_id.get(&BODY_HTML)? {
            Value::Stream(PT_BINARY, _) => {
                let bytes = self.bytes(props, BODY_HTML)?;
                let cpid = props.long(INTERNET_CODEPAGE).and_then(|c| u32::try_from(c).ok());
                let s = match cpid.and_then(codepage::encoding) {
                    Some(enc) => enc.decode_with_bom_removal(&bytes).0.into_owned(),
                    None => charset::decode_html(&bytes),
                };
                let s = s.trim_end_matches('\0').to_string();
                (!s.trim().is_empty()).then_some(s)
            }
            _ => self.string(props, BODY_HTML),
        }
    }

    /// The header of the Internet message: the transport headers the message arrived with, when it
    /// has them (less their MIME fields, which describe a body this is not), completed from the
    /// properties.
    fn headers(&mut self, dir: &Path, props: &Props) -> Vec<(String, String)> {
        let mut headers: Vec<(String, String)> = Vec::new();
        if let Some(transport) = self.string(props, TRANSPORT_HEADERS) {
            for field in unfold(&transport) {
                let lower = field.0.to_ascii_lowercase();
                if !(lower.starts_with("content-") || lower == "mime-version") {
                    headers.push(field);
                }
            }
        }
        let has = |h: &[(String, String)], name: &str| h.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        if !has(&headers, "From") {
            let name = self.string(props, SENT_REPRESENTING_NAME).or_else(|| self.string(props, SENDER_NAME));
            let smtp = self
                .string(props, SENT_REPRESENTING_SMTP_ADDRESS)
                .or_else(|| self.string(props, SENDER_SMTP_ADDRESS))
                .or_else(|| self.smtp_of(props, SENT_REPRESENTING_ADDRTYPE, SENT_REPRESENTING_EMAIL))
                .or_else(|| self.smtp_of(props, SENDER_ADDRTYPE, SENDER_EMAIL));
            if name.is_some() || smtp.is_some() {
                headers.push(("From".into(), mailbox(name.as_deref(), smtp.as_deref())));
            }
        }
        if !has(&headers, "To") && !has(&headers, "Cc") {
            let (to, cc, bcc) = self.recipients(dir, props);
            let to = if to.is_empty() { self.names_only(props, DISPLAY_TO) } else { to };
            let cc = if cc.is_empty() { self.names_only(props, DISPLAY_CC) } else { cc };
            for (name, list) in [("To", to), ("Cc", cc), ("Bcc", bcc)] {
                if !list.is_empty() {
                    headers.push((name.into(), list.join(", ")));
                }
            }
        }
        // The subject Outlook shows is the property (an import or an edit may have changed it).
        if let Some(s) = self.string(props, SUBJECT) {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case("Subject"));
            headers.push(("Subject".into(), s));
        }
        if !has(&headers, "Date") {
            let t = [CLIENT_SUBMIT_TIME, DELIVERY_TIME, CREATION_TIME, LAST_MODIFICATION_TIME]
                .iter()
                .find_map(|&id| props.time(id));
            if let Some(t) = t {
                headers.push(("Date".into(), crate::dates::rfc5322_utc(t)));
            }
        }
        for (name, id) in
            [("Message-ID", INTERNET_MESSAGE_ID), ("In-Reply-To", IN_REPLY_TO), ("References", INTERNET_REFERENCES)]
        {
            if !has(&headers, name) {
                if let Some(v) = self.string(props, id) {
                    headers.push((name.into(), v));
                }
            }
        }
        // An item's EntryID (which a `.msg` made from an Outlook data file carries) tells it from
        // its copies: the same message in two folders, or twice in one, is two items, as Outlook
        // shows them.
        if let Some(id) = self.bytes(props, ENTRY_ID).filter(|b| !b.is_empty() && b.len() <= 256) {
            if !has(&headers, ENTRY_ID_HEADER) {
                headers.push((ENTRY_ID_HEADER.into(), id.iter().map(|b| format!("{b:02X}")).collect()));
            }
        }
        // The subject is text of any script: encoded words where it is not ASCII. The rest are
        // addresses made by the encoder, ids, dates, and transport headers kept as they came.
        headers
            .into_iter()
            .map(|(n, v)| {
                let v = if n.eq_ignore_ascii_case("Subject") { build::header_text(&v) } else { clean(&v) };
                (clean(&n), v)
            })
            .filter(|(n, _)| !n.is_empty())
            .collect()
    }

    /// An address property when its address type is SMTP.
    fn smtp_of(&mut self, props: &Props, addrtype: u16, address: u16) -> Option<String> {
        let ty = self.string(props, addrtype)?;
        ty.eq_ignore_ascii_case("smtp").then(|| self.string(props, address)).flatten()
    }

    fn names_only(&mut self, props: &Props, id: u16) -> Vec<String> {
        self.string(props, id)
            .map(|s| s.split(';').map(str::trim).filter(|n| !n.is_empty()).map(|n| mailbox(Some(n), None)).collect())
            .unwrap_or_default()
    }

    /// To, Cc and Bcc from the recipient objects.
    fn recipients(&mut self, dir: &Path, props: &Props) -> (Vec<String>, Vec<String>, Vec<String>) {
        let mut names: Vec<String> = self
            .children(dir)
            .into_iter()
            .filter(|(n, s)| !s && n.starts_with("__recip_version1.0_#"))
            .map(|(n, _)| n)
            .collect();
        names.sort();
        names.truncate(MAX_MSG_ENTRIES);
        let (mut to, mut cc, mut bcc) = (Vec::new(), Vec::new(), Vec::new());
        for name in names {
            let r = self.props(&dir.join(name), 8, props.codepage);
            let display = self.string(&r, DISPLAY_NAME);
            let smtp = self.string(&r, SMTP_ADDRESS).or_else(|| self.smtp_of(&r, ADDRTYPE, EMAIL_ADDRESS));
            let entry = mailbox(display.as_deref(), smtp.as_deref());
            match r.long(RECIPIENT_TYPE).map(|t| t & 0xf) {
                Some(2) => cc.push(entry),
                Some(3) => bcc.push(entry),
                _ => to.push(entry),
            }
        }
        (to, cc, bcc)
    }

    fn attachment(&mut self, dir: &Path, cp: Option<u32>, w: &mut Writer, depth: usize) -> Option<Attachment> {
        let props = self.props(dir, 8, cp);
        let method = props.long(ATTACH_METHOD).unwrap_or(1);
        let name = self
            .string(&props, ATTACH_LONG_FILENAME)
            .or_else(|| self.string(&props, ATTACH_FILENAME))
            .or_else(|| self.string(&props, DISPLAY_NAME));
        let content_id = self
            .string(&props, ATTACH_CONTENT_ID)
            .map(|c| clean(c.trim().trim_start_matches('<').trim_end_matches('>')));
        let location = self.string(&props, ATTACH_CONTENT_LOCATION).map(|c| clean(&c));
        let hidden = props.bool(ATTACHMENT_HIDDEN);
        if method == ATTACH_EMBEDDED_MSG {
            if depth >= MAX_MSG_NESTING {
                self.damaged = true;
                return None;
            }
            let inner = dir.join("__substg1.0_3701000D");
            if !self.cf.is_storage(&inner) {
                self.damaged = true;
                return None;
            }
            let data = self.message(&inner, props.codepage, w, depth + 1);
            return Some(Attachment {
                name,
                content_type: "message/rfc822".into(),
                content_id,
                location,
                hidden,
                data,
            });
        }
        let data = self.bytes(&props, ATTACH_DATA).unwrap_or_default();
        let declared = self.string(&props, ATTACH_MIME_TAG).map(|t| t.trim().to_ascii_lowercase());
        let content_type = declared
            .and_then(|t| build::clean_type(&t))
            .or_else(|| {
                name.as_deref().and_then(|n| mime_guess::from_path(n).first()).map(|m| m.essence_str().to_string())
            })
            .unwrap_or_else(|| "application/octet-stream".into());
        Some(Attachment { name, content_type, content_id, location, hidden, data })
    }

    /// The main fields of an item that is not mail, by its class.
    fn item_fields(&mut self, class: &str, props: &Props) -> Vec<(&'static str, String)> {
        let mut f = Vec::new();
        let lower = class.to_ascii_lowercase();
        let mut add = |k: &'static str, v: Option<String>| {
            if let Some(v) = v.filter(|v| !v.trim().is_empty()) {
                f.push((k, v.trim().to_string()));
            }
        };
        if lower.starts_with("ipm.contact") || lower.starts_with("ipm.distlist") {
            add("Name", self.string(props, DISPLAY_NAME).or_else(|| self.string(props, SUBJECT)));
            add("Given name", self.string(props, GIVEN_NAME));
            add("Surname", self.string(props, SURNAME));
            add("Company", self.string(props, COMPANY_NAME));
            add("Department", self.string(props, DEPARTMENT));
            add("Title", self.string(props, TITLE));
            add("E-mail", self.named_string(props, PSETID_ADDRESS, 0x8083));
            add("E-mail 2", self.named_string(props, PSETID_ADDRESS, 0x8093));
            add("E-mail 3", self.named_string(props, PSETID_ADDRESS, 0x80a3));
            add("Business phone", self.string(props, BUSINESS_PHONE));
            add("Home phone", self.string(props, HOME_PHONE));
            add("Mobile phone", self.string(props, MOBILE_PHONE));
            add("Business fax", self.string(props, BUSINESS_FAX));
            let address = [STREET, LOCALITY, STATE, POSTAL_CODE, COUNTRY]
                .iter()
                .filter_map(|&id| self.string(props, id))
                .collect::<Vec<_>>()
                .join(", ");
            add("Address", Some(address));
            add("Work address", self.named_string(props, PSETID_ADDRESS, 0x801b));
            add("Home address", self.named_string(props, PSETID_ADDRESS, 0x801a));
            add("Web page", self.named_string(props, PSETID_ADDRESS, 0x802b));
            // A distribution list's members, as the one-off addresses Outlook keeps beside its
            // references to contacts (PidLidDistributionListOneOffMembers).
            if let Some(&id) = self.named.get(&(PSETID_ADDRESS, 0x8054)) {
                let members: Vec<String> =
                    self.binaries(props, id).iter().filter_map(|b| one_off_address(b, props.codepage)).collect();
                add("Members", Some(members.join("; ")));
            }
        } else if lower.starts_with("ipm.appointment") || lower.starts_with("ipm.schedule") {
            add("Subject", self.string(props, SUBJECT));
            add("Location", self.named_string(props, PSETID_APPOINTMENT, 0x8208));
            add("Start", self.named_time(props, PSETID_APPOINTMENT, 0x820d));
            add("End", self.named_time(props, PSETID_APPOINTMENT, 0x820e));
        } else if lower.starts_with("ipm.task") {
            add("Subject", self.string(props, SUBJECT));
            add("Start", self.named_time(props, PSETID_TASK, 0x8104));
            add("Due", self.named_time(props, PSETID_TASK, 0x8105));
        } else if lower.starts_with("ipm.stickynote") {
            add("Note", self.string(props, SUBJECT));
        } else {
            add("Subject", self.string(props, SUBJECT));
        }
        if !f.is_empty() {
            f.insert(0, ("Item", class.to_string()));
        }
        f
    }
}

impl Props {
    fn fixed(&self, id: u16) -> Option<(u16, [u8; 8])> {
        match self.by_id.get(&id)? {
            Value::Fixed(ty, v) => Some((*ty, *v)),
            Value::Stream(..) => None,
        }
    }

    fn long(&self, id: u16) -> Option<i32> {
        self.fixed(id).filter(|(t, _)| *t == PT_LONG).map(|(_, v)| i32::from_le_bytes([v[0], v[1], v[2], v[3]]))
    }

    fn bool(&self, id: u16) -> bool {
        self.fixed(id).is_some_and(|(t, v)| t == PT_BOOLEAN && v[0] != 0)
    }

    /// A PT_SYSTIME as seconds since the epoch.
    fn time(&self, id: u16) -> Option<i64> {
        let (ty, v) = self.fixed(id)?;
        (ty == PT_SYSTIME).then(|| crate::dates::from_filetime(u64::from_le_bytes(v)))?
    }
}

/// The provider of one-off entry identifiers ([MS-OXCDATA] §2.2.5.1): an address written out in
/// full rather than a reference to an address book entry.
const ONE_OFF_PROVIDER: [u8; 16] =
    [0x81, 0x2b, 0x1f, 0xa4, 0xbe, 0xa3, 0x10, 0x19, 0x9d, 0x6e, 0x00, 0xdd, 0x01, 0x0f, 0x54, 0x02];

/// "Name &lt;address&gt;" from a one-off entry identifier: flags, the provider, a version, its own
/// flags (0x8000: the strings are UTF-16), then the display name, the address type and the
/// address, each ending in a NUL.
fn one_off_address(b: &[u8], codepage: Option<u32>) -> Option<String> {
    if b.get(4..20)? != ONE_OFF_PROVIDER {
        return None;
    }
    let flags = u16::from_le_bytes([*b.get(22)?, *b.get(23)?]);
    let mut rest = b.get(24..)?;
    let mut strings = Vec::with_capacity(3);
    for _ in 0..3 {
        let (text, used) = if flags & 0x8000 != 0 {
            let end = rest.chunks_exact(2).position(|c| c == [0, 0])?;
            (mapi::string(PT_UNICODE, &rest[..end * 2], None).unwrap_or_default(), end * 2 + 2)
        } else {
            let end = rest.iter().position(|&c| c == 0)?;
            (mapi::decode8(&rest[..end], codepage), end + 1)
        };
        strings.push(clean(text.trim()));
        rest = rest.get(used..)?;
    }
    let (name, address) = (&strings[0], &strings[2]);
    Some(match (name.is_empty(), address.is_empty()) {
        (_, true) => name.clone(),
        (true, false) => address.clone(),
        (false, false) if name == address => address.clone(),
        (false, false) => format!("{name} <{address}>"),
    })
    .filter(|m| !m.is_empty())
}

struct Attachment {
    name: Option<String>,
    content_type: String,
    content_id: Option<String>,
    location: Option<String>,
    hidden: bool,
    data: Vec<u8>,
}

impl Attachment {
    fn node(self, disposition: &str) -> Node {
        let mut headers = Vec::new();
        let disposition = if self.hidden && self.content_id.is_some() { "inline" } else { disposition };
        match &self.name {
            Some(n) => {
                headers.push(("Content-Disposition".to_string(), format!("{disposition}; {}", param("filename", n))))
            }
            None => headers.push(("Content-Disposition".to_string(), disposition.to_string())),
        }
        if let Some(c) = self.content_id.filter(|c| !c.is_empty()) {
            headers.push(("Content-ID".into(), format!("<{c}>")));
        }
        if let Some(l) = self.location.filter(|l| !l.is_empty()) {
            headers.push(("Content-Location".into(), l));
        }
        let ct = match &self.name {
            Some(n) if self.content_type != "message/rfc822" => format!("{}; {}", self.content_type, param("name", n)),
            _ => self.content_type.clone(),
        };
        if self.content_type == "message/rfc822" {
            Node::Message(headers, self.data)
        } else {
            Node::Leaf(ct, headers, self.data)
        }
    }
}

/// Header fields out of a block of them (the transport headers), unfolded.
fn unfold(block: &str) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in block.lines() {
        if line.is_empty() {
            if fields.is_empty() {
                continue;
            }
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = fields.last_mut() {
                last.1.push(' ');
                last.1.push_str(line.trim());
            }
            continue;
        }
        if let Some((n, v)) = line.split_once(':') {
            let n = n.trim();
            if !n.is_empty() && n.bytes().all(|c| (33..=126).contains(&c)) {
                fields.push((n.to_string(), v.trim().to_string()));
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests;
