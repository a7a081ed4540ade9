//! Archives for the views' tests: files written to a folder and indexed as `serve` indexes them.

use std::path::Path;
use std::sync::Arc;

use tempfile::TempDir;

use super::View;
use crate::archive::Archive;
use crate::index::EntryId;

/// A view of an archive of files, and the folder they live in (removed when dropped).
pub(super) struct Fixture {
    pub view: View,
    pub dir: TempDir,
}

impl Fixture {
    /// An archive of `files` (path under the mail folder, contents), with search.
    pub(super) fn of(files: &[(&str, String)]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mail = dir.path().join("mail");
        write_all(&mail, files);
        let archive = Archive::open(&dir.path().join("data")).unwrap();
        archive.ingest_paths(&archive.roots(&[mail]));
        Fixture { view: View::new(Arc::new(archive)), dir }
    }

    /// Adds `files` and indexes the folder again.
    pub(super) fn add(&self, files: &[(&str, String)]) {
        let mail = self.dir.path().join("mail");
        write_all(&mail, files);
        let archive = self.view.archive();
        archive.ingest_paths(&archive.roots(&[mail]));
    }

    /// The entry of a URL id.
    pub(super) fn id(&self, key: &str) -> EntryId {
        self.view.archive().find(key).unwrap_or_else(|| panic!("{key} is indexed"))
    }

    /// The listed messages' URL ids, newest first.
    pub(super) fn listed(&self) -> Vec<String> {
        let index = self.view.archive().index();
        index.listed().iter().map(|&id| index.get(id).unwrap().key.clone()).collect()
    }
}

fn write_all(root: &Path, files: &[(&str, String)]) {
    for (path, contents) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

/// A plain message: its Message-ID (without brackets), subject, day of January 2024, more header
/// lines (each ending in a newline), and body.
pub(super) fn mail(mid: &str, subject: &str, day: u32, headers: &str, body: &str) -> String {
    format!(
        "From: Ann <ann@example.org>\nTo: Bob <bob@example.org>\nSubject: {subject}\n\
         Date: Mon, {day} Jan 2024 10:00:00 +0100\nMessage-ID: <{mid}>\n{headers}\n{body}\n"
    )
}
