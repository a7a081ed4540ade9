//! The records the store keeps, one per indexed message: an [`Entry`] with what the list shows of
//! it ([`Listing`]), where its bytes are ([`Location`]), its content hash and its folder's number.
//! They live here, below both the store that writes them and the index that makes them (which
//! re-exports them), so that the store never imports the index. Their serialized form is what the
//! store holds: fields keep their order.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::ingest::Source;
use crate::model::PartIdx;

/// Position of an entry in the index; stable for the life of the index.
pub type EntryId = u32;

/// One indexed message: what the list and the API need, and where to find its bytes again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// The id in URLs (decoded): the Message-ID, or a derived id when it has none or shares it.
    pub key: String,
    /// The Message-ID when it is not the key (a message without one, or one sharing it); see
    /// [`Entry::message_id`]. Most messages are keyed by their Message-ID, which then lives once.
    other_message_id: Option<String>,
    mid_is_key: bool,
    pub summary: Listing,
    pub location: Location,
    /// Size of the message in bytes.
    pub size: u64,
    /// Hash of the message's bytes: the same bytes found twice are one message.
    pub hash: ContentHash,
    /// Content-IDs of its parts, for `cid:` references from other messages.
    pub content_ids: Vec<String>,
    pub has_attachments: bool,
    /// The Message-ID this one replies to: the last References entry, else In-Reply-To.
    pub parent: Option<String>,
    /// Labels and keywords.
    pub labels: Vec<String>,
    /// The mailing list it came through (its List-Id).
    pub list: Option<String>,
    /// The type and decoded size of each of its attachments (the first few), for the overview.
    pub attachments: Vec<AttachmentInfo>,
    /// The folder it is filed in (its path is kept once, by number), derived from its location
    /// when it is indexed.
    pub folder: FolderId,
    /// The other messages it is enclosed in, each with the part that holds it, besides the place
    /// its location names: the same bytes found in several places are one entry, and whoever may
    /// read any message enclosing it reads it there (see [`crate::index::Access`]). Kept last, so
    /// that an entry stored before it was kept reads with none (see [`none_when_absent`]).
    #[serde(default, deserialize_with = "none_when_absent")]
    pub enclosed_in: Vec<(EntryId, PartIdx)>,
    /// The hash of its bytes, when it is kept under another: a copy filed in another folder than
    /// the same bytes found first (see [`crate::index::in_folder`]). A copy without a Message-ID
    /// answers to the id derived from its bytes ([`Entry::answers_to`]), the key the first copy
    /// has. Kept after [`Entry::enclosed_in`], and read as none from an entry stored before it.
    #[serde(default, deserialize_with = "none_when_absent")]
    pub plain: Option<ContentHash>,
}

/// Reads a field kept last, or its default ("none") from an entry stored before the field was
/// kept: there its bytes end where the field would begin, and the stored form (postcard) has no
/// way to say "absent" but running out. Entries in a shared database outlive a server's version,
/// so they must read on both sides of it (a server of the version before ignores the bytes at
/// the end).
fn none_when_absent<'de, D: serde::Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(T::deserialize(d).unwrap_or_default())
}

/// An attachment's type and size, as the overview counts them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AttachmentInfo {
    pub content_type: String,
    pub size: u64,
}

/// No entry: an empty slot in a table indexed by entry id.
pub const NO_ENTRY: EntryId = EntryId::MAX;

/// A folder's number: its path is kept once, in the store's folder table.
pub type FolderId = u32;

/// The folder of a message that is not listed (one enclosed in another).
pub const NO_FOLDER: FolderId = FolderId::MAX;

/// What the list shows of a message; the rest is read from the message when it is opened.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Listing {
    pub subject: Option<String>,
    pub from: Option<String>,
    /// Seconds since the epoch, for ordering.
    pub timestamp: Option<i64>,
    /// The zone the Date header was written in, in minutes east of UTC.
    pub zone: Option<i16>,
}

impl Listing {
    /// The Date header as RFC 3339, in the zone it was written in.
    pub fn date(&self) -> Option<String> {
        Some(crate::dates::rfc3339(self.timestamp?, self.zone.unwrap_or(0)))
    }
}

/// Where an entry's message is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Location {
    /// A message given to mailshelf: it is listed.
    Top {
        source: Source,
        /// Where, in the source path, the part relative to the PATH it was found under begins.
        rel: u16,
        /// Maildir flags, when the file name carries them.
        flags: Option<String>,
        /// True for uploads (the only messages that can be deleted).
        uploaded: bool,
    },
    /// A message enclosed in another (message/rfc822): reached through its parent, not listed.
    Nested { parent: EntryId, part: PartIdx },
}

/// The other messages one entry is noted as enclosed in, at most ([`Entry::enclosed_in`]): a
/// message forwarded inside hundreds of others is read through the first hundred found, and its
/// entry stays small.
pub(crate) const MAX_ENCLOSURES: usize = 100;

impl Entry {
    /// A new entry under `key`, for a message with these bytes at `location`: the rest is filled
    /// in by the index. The Message-ID is kept once when it is the key.
    pub fn new(key: String, message_id: Option<String>, location: Location, hash: ContentHash) -> Entry {
        Entry {
            mid_is_key: message_id.as_ref() == Some(&key),
            other_message_id: message_id.filter(|m| *m != key),
            key,
            summary: Listing::default(),
            location,
            size: 0,
            hash,
            content_ids: Vec::new(),
            has_attachments: false,
            parent: None,
            labels: Vec::new(),
            list: None,
            attachments: Vec::new(),
            folder: NO_FOLDER,
            enclosed_in: Vec::new(),
            plain: None,
        }
    }

    /// Notes that it is enclosed in `parent`, in part `part`, besides where it is; whether that
    /// is new (a place noted already, or one past [`MAX_ENCLOSURES`], changes nothing).
    pub fn enclose_in(&mut self, parent: EntryId, part: PartIdx) -> bool {
        if self.enclosed_in.contains(&(parent, part)) || self.enclosed_in.len() >= MAX_ENCLOSURES {
            return false;
        }
        self.enclosed_in.push((parent, part));
        true
    }

    /// The message's Message-ID, if it has one.
    pub fn message_id(&self) -> Option<&str> {
        if self.mid_is_key {
            Some(&self.key)
        } else {
            self.other_message_id.as_deref()
        }
    }

    /// The name the message is looked up by besides its key: its Message-ID, or, for a copy
    /// without one kept under another key, the id derived from its bytes (the first copy's key).
    /// A reader who may not read the message keyed so knows this one by it
    /// ([`crate::index::Access::shown_key`]).
    pub fn answers_to(&self) -> Option<Cow<'_, str>> {
        match (self.message_id(), &self.plain) {
            (Some(mid), _) => Some(Cow::Borrowed(mid)),
            (None, Some(plain)) => Some(Cow::Owned(crate::ids::derived_id(&plain.0))),
            (None, None) => None,
        }
    }
}

impl Location {
    /// The source as a user knows it: relative to the PATH given, `file@offset` inside an mbox;
    /// `None` for an enclosed message.
    pub fn display(&self) -> Option<String> {
        let Location::Top { source, rel, .. } = self else { return None };
        let path = source.path().to_string_lossy();
        let shown = path.get(usize::from(*rel)..).unwrap_or(&path).to_string();
        Some(match source {
            Source::Mbox { offset, .. } | Source::Dbox { offset, .. } | Source::Framed { offset, .. } => {
                format!("{shown}@{offset}")
            }
            Source::Pst { node, .. } => format!("{shown}#{node}"),
            Source::File { .. } | Source::Stored { .. } => shown,
        })
    }
}

/// 128 bits of BLAKE3 over a message's bytes: stable, and short enough to keep for every message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContentHash(pub [u8; 16]);

impl std::fmt::Display for ContentHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// The hash of a message's bytes.
pub fn content_hash(raw: &[u8]) -> ContentHash {
    let mut out = [0u8; 16];
    out.copy_from_slice(&blake3::hash(raw).as_bytes()[..16]);
    ContentHash(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        let location = Location::Top {
            source: Source::File { path: "/mail/Open/a.eml".into() },
            rel: 6,
            flags: Some("S".into()),
            uploaded: false,
        };
        let mut e = Entry::new("a@x".into(), Some("a@x".into()), location, content_hash(b"a"));
        e.labels = vec!["Work".into()];
        e.folder = 3;
        e
    }

    #[test]
    fn entries_stored_before_enclosures_were_kept_read_with_none() {
        let mut e = entry();
        let before = postcard::to_stdvec(&e).expect("encodes");
        // The form stored before: the same bytes without the empty list and the absent hash of
        // the bytes at the end.
        let old = &before[..before.len() - 2];
        let read: Entry = postcard::from_bytes(old).expect("reads");
        assert!(read.enclosed_in.is_empty());
        assert_eq!((read.key.as_str(), read.folder, read.labels.clone()), ("a@x", 3, vec!["Work".to_string()]));
        e.enclosed_in = vec![(7, 2), (9, 1)];
        let now = postcard::to_stdvec(&e).expect("encodes");
        let read: Entry = postcard::from_bytes(&now).expect("reads");
        assert_eq!(read.enclosed_in, [(7, 2), (9, 1)]);
        // A server of the version before reads the new form as it always did.
        assert!(now.starts_with(old));
    }

    #[test]
    fn entries_stored_before_the_hash_of_a_copys_bytes_was_kept_read_with_none() {
        let mut e = entry();
        e.enclosed_in = vec![(7, 2)];
        let before = postcard::to_stdvec(&e).expect("encodes");
        let old = &before[..before.len() - 1];
        let read: Entry = postcard::from_bytes(old).expect("reads");
        assert_eq!((read.enclosed_in.as_slice(), read.plain), (&[(7, 2)][..], None));
        e.plain = Some(content_hash(b"bytes"));
        let now = postcard::to_stdvec(&e).expect("encodes");
        assert!(now.starts_with(old), "a server of the version before reads the new form");
        let read: Entry = postcard::from_bytes(&now).expect("reads");
        assert_eq!(read.plain, Some(content_hash(b"bytes")));
    }

    /// A copy without a Message-ID answers to the id derived from its bytes; a message with one,
    /// to its Message-ID; a message without either, to nothing but its key.
    #[test]
    fn what_an_entry_answers_to_besides_its_key() {
        let location = || Location::Nested { parent: 0, part: 1 };
        let mut copy = Entry::new("k@mailshelf.invalid".into(), None, location(), content_hash(b"x"));
        assert_eq!(copy.answers_to(), None);
        copy.plain = Some(content_hash(b"raw"));
        assert_eq!(copy.answers_to().as_deref(), Some(crate::ids::derived_message_id(b"raw").as_str()));
        let named = Entry::new("k@mailshelf.invalid".into(), Some("m@x".into()), location(), content_hash(b"x"));
        assert_eq!(named.answers_to().as_deref(), Some("m@x"));
    }
}
