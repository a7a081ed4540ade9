//! TNEF (MS-OXTNEF: `application/ms-tnef`, `winmail.dat`): the attachments Outlook and Exchange
//! hide inside it become child parts of the TNEF part (addressable, downloadable, reached by `cid:`),
//! and its body (usually compressed RTF) is offered as the message's body when it has no better one.
//!
//! Every length read is checked against what is left of the input, so a hostile stream costs at
//! most a pass over its own bytes.

use std::sync::Arc;

use bytes::Bytes;

use super::rtf;
use crate::ingest::OLE_MAGIC;
use crate::limits::MAX_MSG_STREAM;
use crate::mapi::{
    self, ATTACH_CONTENT_ID, ATTACH_DATA, ATTACH_FILENAME, ATTACH_LONG_FILENAME, ATTACH_MIME_TAG, BODY, BODY_HTML,
    DISPLAY_NAME, INTERNET_CODEPAGE, MESSAGE_CODEPAGE, MV_FLAG, PT_BINARY, PT_LONG, PT_OBJECT, PT_STRING8, PT_UNICODE,
    RTF_COMPRESSED,
};
use crate::model::{Body, Message, Part, PartIdx};

const SIGNATURE: u32 = 0x223e_9f78;

// Attribute ids (the low 16 bits; MS-OXTNEF §2.1.3.3).
const ATT_BODY: u16 = 0x800c;
const ATT_ATTACH_DATA: u16 = 0x800f;
const ATT_ATTACH_TITLE: u16 = 0x8010;
const ATT_ATTACH_REND_DATA: u16 = 0x9002;
const ATT_MAPI_PROPS: u16 = 0x9003;
const ATT_ATTACHMENT: u16 = 0x9005;
const ATT_OEM_CODEPAGE: u16 = 0x9007;

/// What a TNEF stream holds.
#[derive(Debug, Default)]
pub(super) struct Tnef {
    pub html: Option<String>,
    pub text: Option<String>,
    pub attachments: Vec<Attachment>,
    /// The stream ended early, a checksum did not match, or a value was cut.
    pub damaged: bool,
    /// The code page of the message's 8-bit strings, by the one rule of [`mapi::codepage`](fn@mapi::codepage): its
    /// PidTagMessageCodepage, else its PidTagInternetCodepage, else the stream's attOemCodepage.
    pub codepage: Option<u32>,
}

#[derive(Debug, Default)]
pub(super) struct Attachment {
    pub name: Option<String>,
    pub content_type: Option<String>,
    pub content_id: Option<String>,
    pub data: Vec<u8>,
}

/// One MAPI property value as TNEF carries it.
enum Value {
    Bytes(u16, Vec<u8>),
    Long(i32),
    Other,
}

/// An attachment as the stream gives it, its strings not yet decoded (the code page that decodes
/// them is known only once the message's properties have been read).
#[derive(Default)]
struct Raw {
    title: Option<Vec<u8>>,
    data: Vec<u8>,
    props: Vec<(u16, Value)>,
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn padded(&mut self, n: usize) -> Option<&'a [u8]> {
        let v = self.take(n)?;
        self.take((4 - n % 4) % 4)?;
        Some(v)
    }
}

/// Reads a TNEF stream; `None` when it does not start like one.
pub(super) fn read(data: &[u8]) -> Option<Tnef> {
    let mut c = Cursor { data, pos: 0 };
    if c.u32()? != SIGNATURE {
        return None;
    }
    c.u16()?;
    let mut out = Tnef::default();
    let mut oem = None;
    let mut body = None;
    let mut props = Vec::new();
    let mut raws: Vec<Raw> = Vec::new();
    let mut current: Option<Raw> = None;
    while c.pos < data.len() {
        let Some(header) = c.take(9) else {
            out.damaged = true;
            break;
        };
        let level = header[0];
        let id = u16::from_le_bytes([header[1], header[2]]);
        let len = u32::from_le_bytes([header[5], header[6], header[7], header[8]]) as usize;
        let Some(value) = c.take(len) else {
            out.damaged = true;
            break;
        };
        let checksum = c.u16();
        let sum = value.iter().fold(0u16, |s, &b| s.wrapping_add(u16::from(b)));
        out.damaged |= checksum != Some(sum);
        match (level, id) {
            (_, ATT_OEM_CODEPAGE) => oem = value.get(..4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            (1, ATT_BODY) => body = Some(trim_nul(value).to_vec()),
            (1, ATT_MAPI_PROPS) => props = mapi_props(value, &mut out.damaged),
            (2, ATT_ATTACH_REND_DATA) => {
                raws.extend(current.take());
                current = Some(Raw::default());
            }
            (2, ATT_ATTACH_TITLE) => current.get_or_insert_with(Raw::default).title = Some(trim_nul(value).to_vec()),
            (2, ATT_ATTACH_DATA) => current.get_or_insert_with(Raw::default).data = value.to_vec(),
            (2, ATT_ATTACHMENT) => {
                let a = current.get_or_insert_with(Raw::default);
                a.props.extend(mapi_props(value, &mut out.damaged));
            }
            _ => {}
        }
    }
    raws.extend(current.take());
    // TNEF's own string attributes are in the stream's code page; MAPI properties in the message's.
    let long = |id: u16| {
        props.iter().find_map(|(pid, v)| match v {
            Value::Long(n) if *pid == id => u32::try_from(*n).ok(),
            _ => None,
        })
    };
    let cp = mapi::codepage(long(MESSAGE_CODEPAGE), long(INTERNET_CODEPAGE), oem);
    let attribute_cp = mapi::codepage(None, None, oem);
    out.codepage = cp;
    out.text = body.map(|b| mapi::decode8(&b, attribute_cp));
    for raw in raws {
        let mut a = Attachment {
            name: raw.title.map(|t| mapi::decode8(&t, attribute_cp)).filter(|n| !n.trim().is_empty()),
            data: raw.data,
            ..Attachment::default()
        };
        for (pid, v) in raw.props {
            match (pid, v) {
                (ATTACH_LONG_FILENAME, v) => a.name = string(&v, cp).or(a.name.take()),
                (ATTACH_FILENAME | DISPLAY_NAME, v) if a.name.is_none() => a.name = string(&v, cp),
                (ATTACH_MIME_TAG, v) => a.content_type = string(&v, cp),
                (ATTACH_CONTENT_ID, v) => a.content_id = string(&v, cp),
                (ATTACH_DATA, Value::Bytes(PT_BINARY, b)) if a.data.is_empty() => a.data = b,
                _ => {}
            }
        }
        out.attachments.push(a);
    }
    for (pid, v) in props {
        match (pid, v) {
            (BODY_HTML, v) => out.html = string(&v, cp).or(out.html.take()),
            (BODY, v) if out.text.is_none() => out.text = string(&v, cp),
            (RTF_COMPRESSED, Value::Bytes(_, b)) if out.html.is_none() => {
                if let Some(d) = rtf::decompress(&b) {
                    out.damaged |= d.damaged;
                    match rtf::read(&d.rtf) {
                        rtf::Content::Html(h) => out.html = Some(h),
                        rtf::Content::Text(t) if !t.trim().is_empty() => out.text = Some(t),
                        rtf::Content::Text(_) => {}
                    }
                }
            }
            _ => {}
        }
    }
    Some(out)
}

fn trim_nul(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1);
    &b[..end]
}

/// A string property, PT_UNICODE or PT_STRING8 (or a binary read as 8-bit text, as a content
/// type or an id may be given), in code page `codepage`.
fn string(v: &Value, codepage: Option<u32>) -> Option<String> {
    let s = match v {
        Value::Bytes(ty, b) => mapi::string(*ty, b, codepage).unwrap_or_else(|| mapi::decode8(trim_nul(b), codepage)),
        Value::Long(_) | Value::Other => return None,
    };
    let s = s.trim_end_matches('\0').trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// A MAPI property list (MS-OXTNEF §2.1.3.4): ids with their (first) values. Named properties
/// are read past, not kept.
fn mapi_props(data: &[u8], damaged: &mut bool) -> Vec<(u16, Value)> {
    let mut c = Cursor { data, pos: 0 };
    let mut out = Vec::new();
    let Some(count) = c.u32() else { return out };
    for _ in 0..count {
        match one_prop(&mut c) {
            Some(p) => out.push(p),
            None => {
                *damaged = true;
                break;
            }
        }
    }
    out
}

fn one_prop(c: &mut Cursor<'_>) -> Option<(u16, Value)> {
    let ty = c.u16()?;
    let id = c.u16()?;
    if id >= 0x8000 {
        c.take(16)?;
        match c.u32()? {
            0 => {
                c.u32()?;
            }
            _ => {
                let n = c.u32()? as usize;
                c.padded(n)?;
            }
        }
    }
    let multi = ty & MV_FLAG != 0;
    let base = ty & !MV_FLAG;
    let variable = matches!(base, PT_STRING8 | PT_UNICODE | PT_BINARY | PT_OBJECT);
    let count = if multi || variable { c.u32()? as usize } else { 1 };
    let mut first = None;
    for _ in 0..count {
        let v = match (base, mapi::fixed_size(base)) {
            (PT_LONG, _) => Value::Long(i32::from_le_bytes(c.take(4)?.try_into().ok()?)),
            // Values shorter than four bytes are padded to four.
            (_, Some(n)) => {
                c.take(n.max(4))?;
                Value::Other
            }
            (PT_STRING8 | PT_UNICODE | PT_BINARY | PT_OBJECT, None) => {
                let n = c.u32()? as usize;
                if n > MAX_MSG_STREAM {
                    return None;
                }
                let b = c.padded(n)?;
                // An object starts with the interface id it is stored as.
                let b = if base == PT_OBJECT { b.get(16..).unwrap_or(&[]) } else { b };
                Value::Bytes(base, b.to_vec())
            }
            _ => return None,
        };
        first.get_or_insert(v);
    }
    Some((id, first.unwrap_or(Value::Other)))
}

/// Whether a part is a TNEF stream by its type or its name.
pub(super) fn is_tnef(part: &Part) -> bool {
    matches!(part.content_type.as_str(), "application/ms-tnef" | "application/vnd.ms-tnef")
        || part.filename.as_deref().is_some_and(|f| f.eq_ignore_ascii_case("winmail.dat"))
}

/// Adds the contents of every TNEF part of `msg` as its children; returns the HTML and text bodies
/// found in them (the first of each), for a message that has no better one. `parts_left` is the
/// message's part budget.
pub(super) fn expand(msg: &mut Message, parts_left: &mut usize) -> (Option<PartIdx>, Option<PartIdx>) {
    let (mut html, mut text) = (None, None);
    let tnef_parts: Vec<PartIdx> = (0..msg.parts.len()).filter(|&i| is_tnef(&msg.parts[i])).collect();
    for idx in tnef_parts {
        let Body::Binary(data) = &msg.parts[idx].body else { continue };
        let Some(tnef) = read(data) else { continue };
        let damaged = tnef.damaged;
        let codepage = tnef.codepage;
        let section = msg.parts[idx].section.clone();
        let at = msg.parts[idx].raw_range.start;
        let mut add = |msg: &mut Message, mut part: Part| -> Option<PartIdx> {
            if *parts_left == 0 {
                msg.truncated = true;
                return None;
            }
            *parts_left -= 1;
            let n = msg.parts[idx].children.len() + 1;
            part.section = format!("{section}.{n}");
            part.parent = Some(idx);
            part.raw_range = at..at;
            part.damaged = damaged;
            let child = msg.parts.len();
            msg.parts.push(part);
            msg.parts[idx].children.push(child);
            Some(child)
        };
        if let Some(h) = tnef.html {
            let added = add(msg, leaf("text/html", Body::Text(h), None, None));
            html = html.or(added);
        }
        if let Some(t) = tnef.text.filter(|t| !t.trim().is_empty()) {
            let added = add(msg, leaf("text/plain", Body::Text(t), None, None));
            text = text.or(added);
        }
        for a in tnef.attachments {
            let ct = a
                .content_type
                .map(|t| t.trim().to_ascii_lowercase())
                .filter(|t| t.contains('/') && !t.contains([';', ' ']))
                .or_else(|| {
                    a.name
                        .as_deref()
                        .and_then(|n| mime_guess::from_path(n).first())
                        .map(|m| m.essence_str().to_string())
                })
                .unwrap_or_else(|| "application/octet-stream".into());
            let cid = a.content_id.map(|c| c.trim().trim_start_matches('<').trim_end_matches('>').to_string());
            // An attached Outlook item is stored as an OLE storage (after its interface id): it is
            // an enclosed message with its own page, as in a `.msg`.
            let ole = a
                .data
                .get(16..)
                .filter(|d| d.starts_with(OLE_MAGIC))
                .or(Some(&a.data[..]).filter(|d| d.starts_with(OLE_MAGIC)));
            let enclosed = ole.and_then(|d| super::outlook::parse_in(Arc::from(d), codepage).ok());
            let (ct, body) = match enclosed {
                Some(m) => ("message/rfc822".to_string(), Body::Message(Box::new(m))),
                None => (ct, Body::Binary(Bytes::from(a.data))),
            };
            let _ = add(msg, leaf(&ct, body, a.name, cid.filter(|c| !c.is_empty())));
        }
    }
    (html, text)
}

fn leaf(content_type: &str, body: Body, filename: Option<String>, content_id: Option<String>) -> Part {
    let is_text = matches!(body, Body::Text(_));
    let is_message = matches!(body, Body::Message(_));
    Part {
        section: String::new(),
        parent: None,
        children: Vec::new(),
        content_type: content_type.to_string(),
        declared_type: true,
        charset: is_text.then(|| "utf-8".to_string()),
        start: None,
        params: Vec::new(),
        disposition: Some(if content_id.is_some() && !is_message { "inline" } else { "attachment" }.to_string())
            .filter(|_| !is_text),
        content_id,
        content_location: None,
        location: None,
        base: String::new(),
        related_scope: None,
        filename: filename.map(|f| f.chars().filter(|c| !c.is_control()).collect()),
        body,
        raw_range: 0..0,
        damaged: false,
        transfer_encoding: None,
        external: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attribute(level: u8, id: u32, value: &[u8]) -> Vec<u8> {
        let mut out = vec![level];
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&(value.len() as u32).to_le_bytes());
        out.extend_from_slice(value);
        let sum = value.iter().fold(0u16, |s, &b| s.wrapping_add(u16::from(b)));
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    fn stream(attributes: &[Vec<u8>]) -> Vec<u8> {
        let mut out = SIGNATURE.to_le_bytes().to_vec();
        out.extend_from_slice(&[1, 0]);
        for a in attributes {
            out.extend_from_slice(a);
        }
        out
    }

    #[test]
    fn attachments_and_bodies_come_out() {
        // An attachment's MAPI properties: a long file name and a Content-ID (PT_STRING8).
        let mut props = 2u32.to_le_bytes().to_vec();
        for (id, v) in
            [(mapi::ATTACH_LONG_FILENAME, &b"a long name.txt\0"[..]), (mapi::ATTACH_CONTENT_ID, b"<img1@x>\0")]
        {
            props.extend_from_slice(&0x001eu16.to_le_bytes());
            props.extend_from_slice(&id.to_le_bytes());
            props.extend_from_slice(&1u32.to_le_bytes());
            props.extend_from_slice(&(v.len() as u32).to_le_bytes());
            props.extend_from_slice(v);
            props.resize(props.len() + (4 - v.len() % 4) % 4, 0);
        }
        let t = stream(&[
            attribute(1, 0x0002_800c, b"plain body\0"),
            attribute(2, 0x0006_9002, &[0; 14]),
            attribute(2, 0x0001_8010, b"A.TXT\0"),
            attribute(2, 0x0006_800f, b"hello"),
            attribute(2, 0x0006_9005, &props),
            attribute(2, 0x0006_9002, &[0; 14]),
            attribute(2, 0x0001_8010, b"second.bin\0"),
            attribute(2, 0x0006_800f, b"\x00\x01"),
        ]);
        let got = read(&t).expect("tnef");
        assert!(!got.damaged);
        assert_eq!(got.text.as_deref(), Some("plain body"));
        let names: Vec<_> = got.attachments.iter().map(|a| a.name.as_deref()).collect();
        assert_eq!(names, [Some("a long name.txt"), Some("second.bin")]);
        assert_eq!(got.attachments[0].data, b"hello");
        assert_eq!(got.attachments[0].content_id.as_deref(), Some("<img1@x>"));
    }

    #[test]
    fn damaged_streams_are_flagged_and_bounded() {
        let good = stream(&[attribute(2, 0x0006_9002, &[0; 14]), attribute(2, 0x0006_800f, b"data")]);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("cut", good[..good.len() - 3].to_vec()),
            ("bad checksum", {
                let mut v = good.clone();
                let n = v.len();
                v[n - 1] ^= 0xff;
                v
            }),
            ("huge length", {
                let mut v = good.clone();
                v[6 + 5..6 + 9].copy_from_slice(&u32::MAX.to_le_bytes());
                v
            }),
        ];
        for (name, input) in cases {
            assert!(read(&input).expect(name).damaged, "{name}");
        }
        assert!(read(b"not tnef").is_none());
        // A property list that claims billions of entries ends with its bytes.
        let mut damaged = false;
        assert!(mapi_props(&u32::MAX.to_le_bytes(), &mut damaged).is_empty());
        assert!(damaged);
    }
}
