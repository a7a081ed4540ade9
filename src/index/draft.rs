//! What the index keeps of a parsed message, taken from it where it was parsed: a parse worker
//! makes the [`Draft`] and drops the message there, so the one thread that adds to the index
//! neither walks the parts again nor frees what another thread allocated (glibc then locks the
//! other thread's arena for every piece: at 100,000 messages that was half of the adding
//! thread's time).

use bytes::Bytes;

use crate::model::{Message, PartIdx};
use crate::store::entry::{content_hash, AttachmentInfo, ContentHash, Listing};

/// A parsed message as the index needs it, and the messages it encloses.
pub struct Draft {
    /// The message's [`content_hash`], by which the same bytes are found again.
    pub hash: ContentHash,
    /// The message as read, for the id derived from its bytes when its Message-ID is missing or
    /// taken (shared, not copied).
    pub(super) raw: Bytes,
    pub(super) message_id: Option<String>,
    pub(super) content_ids: Vec<String>,
    pub(super) has_attachments: bool,
    /// The message it answers: the last of References, else the first In-Reply-To.
    pub(super) parent: Option<String>,
    pub(super) summary: Listing,
    /// Bytes as given (before any decryption).
    pub(super) size: u64,
    pub(super) labels: Vec<String>,
    pub(super) list: Option<String>,
    pub(super) attachments: Vec<AttachmentInfo>,
    /// The enclosed messages, by the part that holds each.
    pub(super) nested: Vec<(PartIdx, Draft)>,
}

impl Draft {
    /// What the index keeps of `msg` and of every message it encloses.
    pub fn of(msg: &Message) -> Draft {
        let mut content_ids: Vec<String> =
            msg.parts.iter().filter_map(|p| p.reference_id().map(str::to_string)).collect();
        content_ids.dedup();
        let parent = msg
            .summary
            .references
            .last()
            .or_else(|| msg.summary.in_reply_to.first())
            .filter(|p| Some(*p) != msg.message_id.as_ref())
            .cloned();
        Draft {
            hash: content_hash(&msg.raw),
            raw: msg.raw.clone(),
            message_id: msg.message_id.clone(),
            content_ids,
            has_attachments: msg.has_attachments(),
            parent,
            summary: Listing {
                subject: msg.summary.subject.clone(),
                from: msg.summary.from.clone(),
                timestamp: msg.summary.timestamp,
                zone: msg.summary.date.as_deref().and_then(crate::dates::offset_minutes),
            },
            size: msg.size(),
            labels: msg.summary.labels.clone(),
            list: msg.summary.list.clone(),
            attachments: msg
                .attachments()
                .take(crate::limits::MAX_LISTED_ATTACHMENTS)
                .map(|p| AttachmentInfo { content_type: p.content_type.clone(), size: p.size() as u64 })
                .collect(),
            nested: msg.nested().map(|(part, inner)| (part, Draft::of(inner))).collect(),
        }
    }
}
