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
    /// A digest of what the files beside `file` say of its messages: Dovecot's indexes for a
    /// dbox file, `.mh_sequences` for an MH message. `None` when nothing beside it says anything
    /// (most files). The walker takes the digest of a file it reads from the same reading of
    /// those files as what it gives the file's messages, so that what the index records of the
    /// file is what it holds.
    pub fn digest(&mut self, file: &Path) -> Option<u64> {
        if let Some(digest) = self.dovecot.digest(file) {
            return Some(digest);
        }
        let flags = self.mh_flags(file)?;
        let mut hash = blake3::Hasher::new();
        hash.update(flags.as_bytes());
        Some(super::dovecot_index::digest(&hash))
    }

    /// Drops what was read of the files beside (read again when next asked), keeping only the
    /// digests of mdbox stores with the state of the index files they were made from: what a scan
    /// keeps for the next.
    pub fn forget_read(&mut self) {
        self.dovecot.forget_read();
        self.mh = None;
    }

    /// Dovecot's indexes of the dbox store the walk is in.
    pub fn dovecot(&mut self) -> &mut Indexes {
        &mut self.dovecot
    }

    /// The flags (Maildir's letters) the sequences of its folder give the MH message `file`;
    /// `None` when it is not named by a number or its folder keeps no sequences.
    pub fn mh_flags(&mut self, file: &Path) -> Option<String> {
        let (number, folder) = (mh_number(file)?, file.parent()?);
        if self.mh.as_ref().is_none_or(|(at, _)| at != folder) {
            self.mh = Some((folder.to_path_buf(), MhSequences::of_folder(folder)));
        }
        let (_, sequences) = self.mh.as_ref()?;
        Some(sequences.as_ref()?.flags(number))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest is what the files beside say of one file: the same for the same, another once
    /// they say otherwise, none where nothing beside says anything.
    #[test]
    fn sidecar_digests_follow_what_the_files_beside_say() {
        let dir = tempfile::tempdir().expect("dir");
        let inbox = dir.path().join("inbox");
        std::fs::create_dir_all(&inbox).expect("mkdir");
        for name in ["1", "2", "3", "note.eml"] {
            std::fs::write(inbox.join(name), "Subject: x\n\nx\n").expect("write");
        }
        let digests = |sequences: &str| {
            std::fs::write(inbox.join(".mh_sequences"), sequences).expect("write");
            let mut sidecars = Sidecars::default();
            ["1", "2", "3", "note.eml"].map(|n| sidecars.digest(&inbox.join(n)))
        };
        let before = digests("unseen: 1-2\nflagged: 3\n");
        assert!(before[..3].iter().all(Option::is_some), "{before:?}");
        assert_eq!(before[0], before[1], "the same flags");
        assert_ne!(before[1], before[2], "other flags");
        assert_eq!(before[3], None, "not an MH message");
        let after = digests("unseen: 1\nflagged: 3\n");
        assert_eq!((after[0], after[2]), (before[0], before[2]), "unchanged");
        assert_ne!(after[1], before[1], "message 2 read");

        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dovecot-index");
        let mut sidecars = Sidecars::default();
        let sdbox = fixtures.join("sdbox/mailboxes/INBOX/dbox-Mails");
        let flagged = sidecars.digest(&sdbox.join("u.1"));
        let drafted = sidecars.digest(&sdbox.join("u.3"));
        assert!(flagged.is_some() && drafted.is_some() && flagged != drafted, "{flagged:?} {drafted:?}");
        assert!(sidecars.digest(&fixtures.join("mdbox/storage/m.1")).is_some(), "mdbox");
        assert_eq!(sidecars.digest(&fixtures.join("mdbox/storage/dovecot.map.index")), None);
        assert_eq!(version(7, None), 7);
        assert_ne!(version(7, Some(1)), 7);
    }
}
