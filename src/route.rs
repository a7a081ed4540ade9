//! Our own URLs for messages and parts, and the resolver that maps a reference inside a message
//! (`cid:`, `mid:`, a Content-Location match) to one of them (RFC 2392, RFC 2557 §8).
//!
//! URL forms:
//! - `/message/<mid>`: a message's page; `<mid>` is its key, percent-encoded (`ids::encode_segment`).
//! - `/part/<mid>/<cid>`: a part with a Content-ID that names it alone in its message.
//! - `/part/<mid>/~<section>`: any part by MIME section number (`~1`, `~2.1`): parts without a
//!   Content-ID, and parts whose Content-ID is shared or starts with `~`.
//! - `/thumb/<mid>/<cid>`: a small picture of an image part (same segments as `/part/`).
//! - `/raw/<mid>`: the message as it was given.
//! - `/thread/<mid>`: the conversation a message belongs to, on one page.
//! - `/folder/<path>`, `/label/<name>`: one folder's or one label's messages; `/overview`: counts.

use crate::archive::Archive;
use crate::ids::{self, encode_segment, parse_section_segment, IdUrl};
use crate::index::Access;
use crate::model::{Message, PartIdx};
use crate::rewrite::{Resolve, Target};
use crate::uri;

pub fn message_url(key: &str) -> String {
    format!("/message/{}", encode_segment(key))
}

pub fn raw_url(key: &str) -> String {
    format!("/raw/{}", encode_segment(key))
}

pub fn thread_url(key: &str) -> String {
    format!("/thread/{}", encode_segment(key))
}

/// A folder's list: each segment of its path encoded, the slashes between them kept.
pub fn folder_url(path: &str) -> String {
    let segments: Vec<String> = path.split('/').map(encode_segment).collect();
    format!("/folder/{}", segments.join("/"))
}

pub fn label_url(name: &str) -> String {
    format!("/label/{}", encode_segment(name))
}

/// The part segment: its Content-ID when that names this part alone, else `~section`.
pub fn part_segment(msg: &Message, idx: PartIdx) -> String {
    let part = &msg.parts[idx];
    match part.reference_id() {
        Some(cid) if !cid.starts_with(ids::SECTION_PREFIX) && msg.part_by_content_id(cid) == Some(idx) => {
            encode_segment(cid)
        }
        _ => ids::section_segment(&part.section),
    }
}

pub fn part_url(key: &str, msg: &Message, idx: PartIdx) -> String {
    format!("/part/{}/{}", encode_segment(key), part_segment(msg, idx))
}

/// A part's thumbnail: the same segments as its `/part/` URL.
pub fn thumb_url(key: &str, msg: &Message, idx: PartIdx) -> String {
    format!("/thumb/{}/{}", encode_segment(key), part_segment(msg, idx))
}

/// Finds a part by its (decoded) segment: a section number first, then a Content-ID.
pub fn find_part(msg: &Message, segment: &str) -> Option<PartIdx> {
    parse_section_segment(segment).and_then(|s| msg.part_by_section(&s)).or_else(|| msg.part_by_content_id(segment))
}

/// Types that come back rewritten, and so carry the remote-content choice along.
fn is_document(content_type: &str) -> bool {
    matches!(content_type, "text/html" | "application/xhtml+xml" | "text/css")
}

/// Resolves references that stand in one part of one message.
pub struct Resolver<'a> {
    /// Where other messages are found; `None` resolves within this message alone (as the fuzz
    /// targets do, with no archive behind them).
    pub archive: Option<&'a Archive>,
    /// What the reader may read: a reference into a message out of their reach resolves to
    /// nothing, as one to a message that does not exist ([`Access::EVERYTHING`] without readers).
    pub access: &'a Access,
    pub key: &'a str,
    pub msg: &'a Message,
    /// The part whose content holds the references.
    pub part: PartIdx,
    /// The reader asked for remote content: documents we link to keep that choice.
    pub remote: bool,
}

impl Resolver<'_> {
    fn local_part(&self, idx: PartIdx) -> Target {
        // An external body's data is elsewhere: a followable URL is remote, and loads (or is
        // blocked and counted) exactly as any remote reference; anything else names the part,
        // whose URL says where the data is and loads nothing.
        if let Some(link) = self.msg.parts[idx].external.as_ref().and_then(|e| e.link.as_deref()) {
            return Target::Remote(link.to_string());
        }
        let mut url = part_url(self.key, self.msg, idx);
        if self.remote && is_document(&self.msg.parts[idx].content_type) {
            url.push_str("?remote=1");
        }
        Target::Part(url)
    }

    /// `cid:` — this message first, then any loaded message (Content-IDs are meant to be unique).
    ///
    /// RFC 2557 §8.3 matches a `cid:` URL against Content-IDs only. Chrome, though, saves the
    /// stylesheets it made itself (CSSOM rules, shadow-DOM styles) as parts with
    /// `Content-Location: cid:…@mhtml.blink` and no Content-ID, and its loader resolves them. So
    /// when no part of this message has the Content-ID, a part of this message whose
    /// Content-Location is that very `cid:` URL is taken, as Chromium does; a Content-ID in the
    /// message always wins over it.
    fn content_id(&self, cid: &str) -> Target {
        if let Some(idx) = self.own_content_id(cid) {
            return self.local_part(idx);
        }
        let Some(archive) = self.archive else { return Target::Unresolved };
        let index = archive.index();
        let table = self.access.table(&index);
        let other = index
            .by_content_id(cid)
            .into_iter()
            .filter(|&id| self.access.permits_with(&index, &table, id))
            .filter_map(|id| index.get(id))
            .map(|e| self.access.shown_key(&index, &e).into_owned())
            .find(|key| key != self.key);
        match other {
            Some(key) => Target::Part(format!("/part/{}/{}", encode_segment(&key), encode_segment(cid))),
            None => Target::Unresolved,
        }
    }

    /// The part of this message a `cid:` URL names: its Content-ID, else its `cid:` location (see
    /// [`Resolver::content_id`]).
    fn own_content_id(&self, cid: &str) -> Option<PartIdx> {
        self.msg.part_by_content_id(cid).or_else(|| self.msg.part_at_location(&crate::ids::cid_url(cid)))
    }

    /// The part of this message a reference names, by the rules of [`Resolve::resolve`]; `None`
    /// for a reference to anything else (another message, the network, nothing).
    fn own_part(&self, base: &str, reference: &str) -> Option<PartIdx> {
        let r = uri::clean_reference(reference);
        match uri::scheme_of(&r).as_deref() {
            Some("cid" | "mid") => match ids::parse_id_url(&r)? {
                IdUrl::Content(c) => self.own_content_id(&c),
                IdUrl::MessagePart(m, c) if self.msg.message_id.as_deref() == Some(m.as_str()) => {
                    self.own_content_id(&c)
                }
                _ => None,
            },
            _ if r.is_empty() || r.starts_with('#') => None,
            _ => self.location(&uri::resolve(base, &r)?),
        }
    }

    fn message_id(&self, mid: &str, cid: Option<&str>) -> Target {
        let key = if self.msg.message_id.as_deref() == Some(mid) {
            Some(self.key.to_string())
        } else {
            self.archive.and_then(|archive| {
                let id = archive.find_within(mid, self.access)?;
                let index = archive.index();
                index.get(id).map(|e| self.access.shown_key(&index, &e).into_owned())
            })
        };
        match (key, cid) {
            (None, _) => Target::Unresolved,
            (Some(k), None) => Target::Page(message_url(&k)),
            (Some(k), Some(c)) if k == self.key => self.content_id(c),
            (Some(k), Some(c)) => Target::Part(format!("/part/{}/{}", encode_segment(&k), encode_segment(c))),
        }
    }

    /// RFC 2557 §8.2: a resolved URI equal to the resolved Content-Location of a part in the same or
    /// an enclosing multipart/related (never a sibling's or a nested one's, §9.6).
    fn location(&self, resolved: &str) -> Option<PartIdx> {
        let wanted = resolved.split('#').next().unwrap_or(resolved);
        let mut scopes = Vec::new();
        let mut scope = self.msg.parts.get(self.part).and_then(|p| p.related_scope);
        while let Some(s) = scope {
            scopes.push(Some(s));
            scope = self.msg.parts[s].related_scope;
        }
        scopes.push(None);
        scopes.into_iter().find_map(|scope| self.msg.part_by_location(scope, wanted))
    }
}

impl Resolve for Resolver<'_> {
    /// The type a part of this message is served with; none for a part whose data is elsewhere.
    fn part_type(&self, base: &str, reference: &str) -> Option<String> {
        let part = self.msg.parts.get(self.own_part(base, reference)?)?;
        part.external.is_none().then(|| crate::view::served_type(part))
    }

    fn resolve(&self, base: &str, reference: &str) -> Target {
        let r = uri::clean_reference(reference);
        if r.is_empty() {
            return Target::Unresolved;
        }
        if r.starts_with('#') {
            return Target::Fragment;
        }
        match uri::scheme_of(&r).as_deref() {
            Some("cid" | "mid") => {
                return match ids::parse_id_url(&r) {
                    Some(IdUrl::Content(c)) => self.content_id(&c),
                    Some(IdUrl::Message(m)) => self.message_id(&m, None),
                    Some(IdUrl::MessagePart(m, c)) => self.message_id(&m, Some(&c)),
                    None => Target::Unresolved,
                }
            }
            Some("data") => return Target::Data,
            Some("javascript" | "vbscript" | "livescript" | "jscript") => return Target::Script,
            Some("mailto" | "tel" | "sms" | "callto" | "news" | "nntp") => return Target::External,
            _ => {}
        }
        // A protocol-relative reference inherits the viewer's scheme, not the archive's.
        let network_guess = if r.starts_with("//") { Some(format!("https:{r}")) } else { None };
        let Some(resolved) = uri::resolve(base, &r) else {
            return Target::Unresolved;
        };
        if let Some(idx) = self.location(&resolved) {
            let frag = resolved.split_once('#').map(|(_, f)| f);
            return match (self.local_part(idx), frag) {
                (Target::Part(u), Some(f)) => Target::Part(format!("{u}#{f}")),
                (t, _) => t,
            };
        }
        match network_guess {
            Some(n) => Target::Remote(n),
            None if uri::is_network(&resolved) => Target::Remote(resolved),
            None => Target::Unresolved,
        }
    }
}
