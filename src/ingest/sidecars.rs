//! The files beside a message file that say more of its messages than the file does: Dovecot's
//! indexes (a dbox message's flags and keywords, and for mdbox the mailboxes that hold it now)
//! and an MH folder's `.mh_sequences` (its messages' flags). A change there leaves the message
//! file as it was, so the scan that decides what to read again asks them too: [`Sidecars::digest`]
//! is a digest of what they say of one file, mixed into what the scan compares.

use std::path::{Path, PathBuf};

use super::{mh_number, Indexes, MhSequences};

/// What the scan has read of the files beside message files: the last dbox store's and sdbox
/// mailbox's indexes, the last MH folder's sequences (a walk comes to a folder's files one after
/// another).
#[derive(Default)]
pub struct Sidecars {
    dovecot: Indexes,
    mh: Option<(PathBuf, Option<MhSequences>)>,
}

impl Sidecars {
    /// A digest of what the files beside `file` say of its messages, as the walker and the
    /// workers take it: Dovecot's indexes for a dbox file, `.mh_sequences` for an MH message.
    /// `None` when nothing beside it says anything (most files).
    pub fn digest(&mut self, file: &Path) -> Option<u64> {
        if let Some(digest) = self.dovecot.digest(file) {
            return Some(digest);
        }
        let (number, folder) = (mh_number(file)?, file.parent()?);
        if self.mh.as_ref().is_none_or(|(at, _)| at != folder) {
            self.mh = Some((folder.to_path_buf(), MhSequences::of_folder(folder)));
        }
        let (_, sequences) = self.mh.as_ref()?;
        let flags = sequences.as_ref()?.flags(number);
        let mut hash = blake3::Hasher::new();
        hash.update(flags.as_bytes());
        Some(super::dovecot_index::digest(&hash))
    }
}

/// What the scan compares of a source file, given its modification time (nanoseconds) and the
/// digest of what the files beside it say: the two mixed, so that either changing reads it again.
pub fn version(mtime_ns: i64, beside: Option<u64>) -> i64 {
    match beside {
        Some(digest) => mtime_ns ^ (digest as i64),
        None => mtime_ns,
    }
}
