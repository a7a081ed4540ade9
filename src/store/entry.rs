//! The records the store keeps, one per indexed message: an [`Entry`] with what the list shows of
//! it ([`Listing`]), where its bytes are ([`Location`]), its content hash and its folder's number.
//! They live here, below both the store that writes them and the index that makes them (which
//! re-exports them), so that the store never imports the index. Their serialized form is what the
//! store holds: fields keep their order.

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
#[derive(Debug, Clone, Serialize, Deserialize)]
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
        }
    }

    /// The message's Message-ID, if it has one.
    pub fn message_id(&self) -> Option<&str> {
        if self.mid_is_key {
            Some(&self.key)
        } else {
            self.other_message_id.as_deref()
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
            Source::Mbox { offset, .. } => format!("{shown}@{offset}"),
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
