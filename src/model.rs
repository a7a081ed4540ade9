//! mailshelf's own model of a message: a header summary and a flat tree of parts, owned, independent
//! of the parser crate, and free of HTTP types.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// Index of a part in [`Message::parts`]; part 0 is the message body's root.
pub type PartIdx = usize;

/// A parsed message (top-level or nested in a `message/rfc822` part).
#[derive(Debug, Clone)]
pub struct Message {
    /// The Message-ID without angle brackets, when the message has one.
    pub message_id: Option<String>,
    /// The id this message is addressed by: its Message-ID, or one derived from its bytes.
    pub id: String,
    pub summary: Summary,
    /// Where its header lies in `raw`, for [`crate::parse::header_fields`] to read its fields when
    /// they are shown (most messages parsed are only indexed, which needs the summary alone).
    pub header: HeaderAt,
    pub parts: Vec<Part>,
    /// Where the body shown on the message page lives (RFC 2557 §7 root rules applied).
    pub html_body: Option<PartIdx>,
    pub text_body: Option<PartIdx>,
    /// With neither of those: an image that is the body, shown by itself as a browser shows an
    /// image (a saved page whose root part is an image).
    pub image_body: Option<PartIdx>,
    /// The other inline texts of a `multipart/mixed`, shown after the body in order (a list's
    /// footer, a text after an attachment): see `parse::mhtml::select_more`.
    pub more_bodies: Vec<PartIdx>,
    /// More parts than [`crate::limits::MAX_PARTS`]: those beyond it are not in `parts`.
    pub truncated: bool,
    /// Multiparts and enclosed messages nested deeper than [`crate::limits::MAX_DEPTH`]: what lies
    /// deeper is an opaque part, or (a multipart's children) not in `parts`.
    pub too_deep: bool,
    /// The Internet message the parts were read from, byte for byte: the message as it was given,
    /// or, for a file in another format (an Outlook `.msg`, an Apple Mail `.emlx`, a Safari
    /// `.webarchive`, UTF-16), the equivalent message made of it (see [`Origin`]). `raw_range`
    /// offsets point into these bytes.
    pub raw: bytes::Bytes,
    /// What a file in another format than an Internet message brought besides the message.
    pub origin: Origin,
    /// Parts by Content-ID and by resolved Content-Location, built on first use once the parts are
    /// final: a body with many references resolves each in constant time, never by a scan.
    pub lookups: Lookups,
    /// Its signed and encrypted layers (S/MIME, OpenPGP), as parsing found them (see [`Seal`]).
    pub seals: Vec<Seal>,
}

/// Where a message's header lies in its bytes, as parsing found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderAt {
    /// From this offset to where mail-parser ends it (its blank line, or the end).
    From(usize),
    /// Exactly these bytes: a message read again by RFC 2046 itself (`parse::mime::rebuild`),
    /// whose header ends where that reading ends it.
    Within(std::ops::Range<usize>),
}

/// One signed or encrypted layer of a message, found when it was parsed: where it is, and what
/// checking or decrypting it needs later, in the view stage, with the user's keys (see
/// `parse::secure`). What is only signed is already unwrapped: its content is ordinary parts.
#[derive(Debug, Clone)]
pub struct Seal {
    pub protocol: crate::crypto::Protocol,
    /// The part that carries it: a `multipart/signed` or `multipart/encrypted`, an
    /// `application/pkcs7-mime` part, a text part holding an armored block.
    pub part: PartIdx,
    /// Where its content is (or, once decrypted, goes): the first part of a `multipart/signed`,
    /// the parts grafted under the wrapping part.
    pub content: Option<PartIdx>,
    /// Parts that are the layer's machinery, not the message's: never listed as attachments.
    pub hidden: Vec<PartIdx>,
    pub kind: SealKind,
}

#[derive(Debug, Clone)]
pub enum SealKind {
    /// A detached signature (`multipart/signed`): the first part exactly as sent (line ends made
    /// CRLF) and the signature part's data.
    Detached { signed: bytes::Bytes, signature: bytes::Bytes },
    /// S/MIME signed-data that carries its content (`smime-type=signed-data`, a `.p7m`).
    Opaque { cms: bytes::Bytes },
    /// OpenPGP clear-signed text: the armored block.
    Cleartext { armored: bytes::Bytes },
    /// Signatures inside an OpenPGP message (signed only, or signed and encrypted), over its
    /// literal data.
    Inline { content: bytes::Bytes, signatures: Vec<bytes::Bytes> },
    /// Encrypted content and whom it is for; `outcome` once decryption was tried.
    Encrypted { data: bytes::Bytes, recipients: Vec<String>, outcome: Option<Decryption> },
    /// A signed layer that could not be opened, and why.
    Unreadable { reason: String },
}

/// What came of decrypting an encrypted layer.
#[derive(Debug, Clone)]
pub struct Decryption {
    pub status: crate::crypto::EncryptionStatus,
    pub detail: Option<String>,
}

impl Seal {
    /// Whether it is a signature (checked, or unreadable) rather than encryption.
    pub fn is_signature(&self) -> bool {
        !matches!(self.kind, SealKind::Encrypted { .. })
    }
}

/// A message read from a file that is not itself an Internet message: an Outlook `.msg` (made into
/// the MIME message it stands for), an Apple Mail `.emlx` (the
/// message between a byte count and a property list; a `.partial.emlx` with its attachments put
/// back from the files stored beside it), a Safari `.webarchive` (turned into the MHTML it is
/// equivalent to), or a file in UTF-16 (turned into the bytes it stands for). [`Message::raw`] is
/// then the message that was parsed, and [`Origin::original`] the file exactly as given, which is
/// what `/raw/` serves.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The file as given, when it is not [`Message::raw`].
    pub original: Option<std::sync::Arc<[u8]>>,
    /// Flags the file keeps for the message, as Maildir letters (`F`, `P`, `R`, `S`, `T`, `D`).
    pub flags: Option<String>,
    /// What could not be read, for the reader.
    pub notices: Vec<String>,
    /// The message's whole size in its source, when only its first bytes were read (see
    /// [`crate::limits::DEFAULT_MAX_MESSAGE`]): what is shown and searched ends where they do.
    pub cut_from: Option<u64>,
}

impl Message {
    /// Takes on what was cut of a message it encloses.
    pub fn cuts_of(&mut self, inner: &Message) {
        self.truncated |= inner.truncated;
        self.too_deep |= inner.too_deep;
    }

    /// The bytes as they were given: the original file, else [`Message::raw`].
    pub fn given(&self) -> &[u8] {
        self.origin.original.as_deref().unwrap_or(&self.raw)
    }

    /// [`Message::given`] as shared bytes, for an answer that sends them: not a copy, so a large
    /// message is held once while it is sent.
    pub fn given_bytes(&self) -> bytes::Bytes {
        match &self.origin.original {
            Some(original) => bytes::Bytes::from_owner(std::sync::Arc::clone(original)),
            None => self.raw.clone(),
        }
    }

    /// The message's size in its source: that of [`Message::given`], or the whole size of a
    /// message of which only the first bytes were read.
    pub fn size(&self) -> u64 {
        self.origin.cut_from.unwrap_or(self.given().len() as u64)
    }
}

/// See [`Message::lookups`].
#[derive(Debug, Clone, Default)]
pub struct Lookups {
    by_content_id: OnceLock<HashMap<String, PartIdx>>,
    by_location: OnceLock<HashMap<(Option<PartIdx>, String), PartIdx>>,
    at_location: OnceLock<HashMap<String, PartIdx>>,
}

/// What the list and the API show of a message without opening its parts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub subject: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub cc: Option<String>,
    /// RFC 3339, as the message states it (its own time zone).
    pub date: Option<String>,
    /// Seconds since the epoch, for sorting; `None` when the Date header is missing or unreadable.
    pub timestamp: Option<i64>,
    pub in_reply_to: Vec<String>,
    pub references: Vec<String>,
    #[serde(default)]
    /// Labels and keywords it carries (see [`crate::index::folders`]).
    pub labels: Vec<String>,
    #[serde(default)]
    /// The mailing list it came through: the List-Id's identifier (`rust-users.lists.rust-lang.org`).
    pub list: Option<String>,
}

/// One MIME entity: a leaf with a body, a multipart container, or an enclosed message.
#[derive(Debug, Clone)]
pub struct Part {
    /// IMAP-style section number ("1", "2.1"); the root of a single-part message is "1".
    pub section: String,
    pub parent: Option<PartIdx>,
    pub children: Vec<PartIdx>,
    /// `type/subtype`, lower case, as declared (or the MIME default).
    pub content_type: String,
    /// Whether the Content-Type header was present at all.
    pub declared_type: bool,
    /// The charset the message declared; bodies of text parts are already decoded to UTF-8.
    pub charset: Option<String>,
    /// The multipart/related `start` parameter, without angle brackets.
    pub start: Option<String>,
    /// Every Content-Type parameter, names in lower case (`format`, `delsp`, `type`, …).
    pub params: Vec<(String, String)>,
    pub content_id: Option<String>,
    /// The Content-Location header as written (unfolded, trimmed).
    pub content_location: Option<String>,
    /// The Content-Location resolved to an absolute URI (RFC 2557 §5).
    pub location: Option<String>,
    /// The base URI for relative references inside this part (RFC 2557 §5 b–e).
    pub base: String,
    /// The nearest enclosing multipart/related, which bounds what relative references may reach.
    pub related_scope: Option<PartIdx>,
    pub filename: Option<String>,
    /// `inline` or `attachment` when a Content-Disposition was given.
    pub disposition: Option<String>,
    pub body: Body,
    /// Where the still-encoded body lies in [`Message::raw`].
    pub raw_range: std::ops::Range<usize>,
    /// The Content-Transfer-Encoding the body was written in (`base64`, `quoted-printable`,
    /// `x-uuencode`; `None` for an identity): what undoes `raw_range` into the bytes that were
    /// sent (see `parse::sent_bytes`).
    pub transfer_encoding: Option<&'static str>,
    /// True when the parser had to guess (bad transfer encoding, unknown charset).
    pub damaged: bool,
    /// For a `message/external-body` part: where its data lives. Its body then holds nothing (the
    /// phantom it carried is not the data and is never shown as if it were).
    pub external: Option<External>,
}

/// A `message/external-body` part (RFC 2046 §5.2.3, RFC 2017): data that lives elsewhere, described
/// by its Content-Type parameters and by the "phantom" header of the data it stands for. Every
/// field is as the message gives it, cleaned of control characters; nothing here was fetched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct External {
    /// `url`, `anon-ftp`, `ftp`, `tftp`, `local-file`, `mail-server`, or whatever else was written
    /// (lower case); `None` when the parameter is missing.
    pub access_type: Option<String>,
    /// For `URL`, the URL recovered as RFC 2017 §3.1 says; for `ANON-FTP`, `FTP` and `TFTP`, the URL
    /// they stand for. It may be anything: see [`External::link`] before making it a link.
    pub url: Option<String>,
    /// The phantom header's Content-Type (`type/subtype`, lower case).
    pub content_type: Option<String>,
    /// The phantom header's Content-ID, without angle brackets.
    pub content_id: Option<String>,
    /// The Content-Description of the phantom header, else of the external-body entity.
    pub description: Option<String>,
    pub name: Option<String>,
    pub site: Option<String>,
    pub directory: Option<String>,
    pub mode: Option<String>,
    pub server: Option<String>,
    pub subject: Option<String>,
    /// The `expiration` parameter as written (an RFC 822 date).
    pub expiration: Option<String>,
    /// `expiration` as seconds since the epoch, when it reads as a date.
    pub expires_at: Option<i64>,
    /// The `size` parameter: the data's size in octets, when it is a number.
    pub size: Option<u64>,
    pub permission: Option<String>,
    /// For `MAIL-SERVER`: the text after the phantom header, which is the request to mail to the
    /// server (RFC 2046 §5.2.3.6).
    pub request: Option<String>,
    /// [`External::url`] when a reader may follow it: a well-formed `http`, `https` or `ftp` URL.
    /// Anything else (`file:`, `javascript:`, `data:`, a URL with spaces or control characters) is
    /// shown, never linked.
    pub link: Option<String>,
}

impl External {
    /// The URL a browser may be sent to in place of the part: `http` and `https` only.
    pub fn redirect(&self) -> Option<&str> {
        self.link.as_deref().filter(|l| {
            let scheme = l.split(':').next().unwrap_or("");
            scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
        })
    }

    /// Whether `expiration` has passed at `now` (seconds since the epoch).
    pub fn is_expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|t| t <= now)
    }
}

#[derive(Debug, Clone)]
pub enum Body {
    /// A text part, decoded from its transfer encoding and charset.
    Text(String),
    /// Any other leaf, decoded from its transfer encoding; shared, so serving it copies nothing.
    Binary(bytes::Bytes),
    Multipart,
    /// An enclosed `message/rfc822`.
    Message(Box<Message>),
}

impl Part {
    /// Size of the decoded body in bytes (for an enclosed message, its raw size).
    pub fn size(&self) -> usize {
        match &self.body {
            Body::Text(t) => t.len(),
            Body::Binary(b) => b.len(),
            Body::Multipart => 0,
            Body::Message(m) => m.raw.len(),
        }
    }

    /// The decoded body as a shared buffer: free for binary parts, a copy for text.
    pub fn shared_bytes(&self) -> bytes::Bytes {
        match &self.body {
            Body::Binary(b) => b.clone(),
            _ => bytes::Bytes::copy_from_slice(self.bytes()),
        }
    }

    /// The decoded body bytes of a leaf (an enclosed message gives its raw bytes).
    pub fn bytes(&self) -> &[u8] {
        match &self.body {
            Body::Text(t) => t.as_bytes(),
            Body::Binary(b) => b.as_ref(),
            Body::Multipart => &[],
            Body::Message(m) => &m.raw,
        }
    }

    pub fn is_multipart(&self) -> bool {
        matches!(self.body, Body::Multipart)
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn is_type(&self, ct: &str) -> bool {
        self.content_type == ct
    }

    /// HTML, CSS and other text types that we rewrite or serve as text.
    pub fn is_text(&self) -> bool {
        matches!(self.body, Body::Text(_))
    }

    /// An HTML document (`text/html`, or XHTML) held as text: shown in a frame, read for its
    /// visible text.
    pub fn is_html(&self) -> bool {
        self.is_text() && matches!(self.content_type.as_str(), "text/html" | "application/xhtml+xml")
    }

    /// An attachment in the user's sense: a leaf that is not the body being shown. An external body
    /// is not one: its data is not in the message.
    pub fn is_attachment_like(&self) -> bool {
        self.external.is_none() && (self.disposition.as_deref() == Some("attachment") || self.filename.is_some())
    }

    /// The Content-ID a `cid:` reaches this part by: its own, else, for an external body, the one of
    /// its phantom header (RFC 2045 §7 wants one on every external body; RFC 2046's examples put it
    /// in the phantom).
    pub fn reference_id(&self) -> Option<&str> {
        self.content_id.as_deref().or_else(|| self.external.as_ref().and_then(|e| e.content_id.as_deref()))
    }
}

impl Message {
    /// Finds a part by Content-ID ([`Part::reference_id`]), preferring, among parts sharing one id,
    /// the one a reader of the enclosing multipart/alternative would see (the last HTML alternative,
    /// else the first match).
    pub fn part_by_content_id(&self, cid: &str) -> Option<PartIdx> {
        let map = self.lookups.by_content_id.get_or_init(|| {
            let mut map = HashMap::new();
            for (i, p) in self.parts.iter().enumerate() {
                let Some(c) = p.reference_id() else { continue };
                match map.entry(c.to_string()) {
                    Entry::Vacant(v) => {
                        v.insert(i);
                    }
                    Entry::Occupied(mut o) if p.is_type("text/html") => {
                        o.insert(i);
                    }
                    Entry::Occupied(_) => {}
                }
            }
            map
        });
        map.get(cid).copied()
    }

    /// The first leaf whose resolved Content-Location is `location` and whose nearest enclosing
    /// multipart/related is `scope` (`None`: outside any).
    pub fn part_by_location(&self, scope: Option<PartIdx>, location: &str) -> Option<PartIdx> {
        let map = self.lookups.by_location.get_or_init(|| {
            let mut map = HashMap::new();
            for (i, p) in self.parts.iter().enumerate() {
                if let (Some(l), false) = (&p.location, p.is_multipart()) {
                    map.entry((p.related_scope, l.clone())).or_insert(i);
                }
            }
            map
        });
        map.get(&(scope, location.to_string())).copied()
    }

    /// The first leaf whose resolved Content-Location is `location`, in whatever scope.
    pub fn part_at_location(&self, location: &str) -> Option<PartIdx> {
        let map = self.lookups.at_location.get_or_init(|| {
            let mut map = HashMap::new();
            for (i, p) in self.parts.iter().enumerate() {
                if let (Some(l), false) = (&p.location, p.is_multipart()) {
                    map.entry(l.clone()).or_insert(i);
                }
            }
            map
        });
        map.get(location).copied()
    }

    /// Whether the message carries files a reader would call attachments (not its body, and not the
    /// inline resources of a multipart/related body).
    pub fn has_attachments(&self) -> bool {
        self.attachments().next().is_some()
    }

    /// The parts a reader would call attachments, in order: the one rule behind the list's
    /// attachment badge, `has:attachment`, the message page, print, PDF and the CSV export (not
    /// the signatures and encrypted blobs of its signed and encrypted layers: see
    /// [`Message::seals`]).
    pub fn attachments(&self) -> impl Iterator<Item = &Part> {
        self.attachment_indices().map(|i| &self.parts[i])
    }

    /// The indices of [`Message::attachments`]: files that are not the body shown, nor a
    /// resource of a multipart/related body (an inline image or style is part of the page) unless
    /// the sender marked it an attachment.
    pub fn attachment_indices(&self) -> impl Iterator<Item = PartIdx> + '_ {
        let bodies = [self.html_body, self.text_body, self.image_body];
        self.parts.iter().enumerate().filter_map(move |(i, p)| {
            let inline_resource = p.related_scope.is_some() && p.disposition.as_deref() != Some("attachment");
            (!p.is_multipart()
                && p.is_attachment_like()
                && !self.is_seal_machinery(i)
                && !inline_resource
                && !bodies.contains(&Some(i)))
            .then_some(i)
        })
    }

    /// Whether part `idx` is the machinery of a signed or encrypted layer (a signature, an
    /// encrypted blob), which is shown as that layer rather than as an attachment.
    pub fn is_seal_machinery(&self, idx: PartIdx) -> bool {
        self.seals.iter().any(|s| s.hidden.contains(&idx))
    }

    /// The content a wrapping part stands for: the root of what was grafted under it (the entity
    /// an opaque signature carries, a decrypted message, an opened armored text).
    pub fn seal_content(&self, idx: PartIdx) -> Option<PartIdx> {
        self.seals.iter().filter_map(|s| s.content).find(|&c| self.parts.get(c).and_then(|p| p.parent) == Some(idx))
    }

    /// Finds a part by section numbers (`[2, 1]` is "2.1").
    pub fn part_by_section(&self, section: &[usize]) -> Option<PartIdx> {
        let want = section.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(".");
        self.parts.iter().position(|p| p.section == want)
    }

    /// Enclosed messages, depth first, with the part that holds each.
    pub fn nested(&self) -> impl Iterator<Item = (PartIdx, &Message)> {
        self.parts.iter().enumerate().filter_map(|(i, p)| match &p.body {
            Body::Message(m) => Some((i, &**m)),
            _ => None,
        })
    }

    /// Ancestors of a part, nearest first.
    pub fn ancestors(&self, idx: PartIdx) -> impl Iterator<Item = PartIdx> + '_ {
        std::iter::successors(self.parts.get(idx).and_then(|p| p.parent), move |&i| {
            self.parts.get(i).and_then(|p| p.parent)
        })
    }
}
