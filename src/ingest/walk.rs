//! Walking the given paths: every file under a folder in a stable order (Maildir `tmp/`, hidden
//! files and Apple Mail's attachment folders left out), Maildir flags from file names, and the files
//! Apple Mail keeps beside a `.partial.emlx`. Read-only.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A file found under a given PATH, with that PATH (for display as a relative source).
#[derive(Debug, Clone)]
pub struct Found {
    /// Shared by every file found under it.
    pub root: std::sync::Arc<Path>,
    pub path: PathBuf,
}

/// Every regular file under the given paths, in a stable order. Maildir `tmp/` folders (messages
/// still being delivered) and hidden files are skipped (but not Maildir++ folders, nor KMail's
/// `.X.directory`); a symbolic link to a file within `root` is that file, but links to folders
/// are not followed, so a link loop cannot trap the walk. A link to a file outside `root` is
/// passed over: whoever may put a link in a mail folder must not be able to have the server read,
/// and show, a file they could not read themselves (its keys, its users, `/proc`).
pub fn walk(root: &Path) -> impl Iterator<Item = Found> + '_ {
    let shared: std::sync::Arc<Path> = std::sync::Arc::from(root);
    let within = super::Within::new([root]);
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .follow_root_links(true)
        // By name, compared as whole paths: siblings share their folder's path, so the order is
        // the same, and a path compares as bytes where a name is first parsed out of it (which was
        // a hundredth of a cold index, sorting a Maildir of 20,000).
        .sort_by(|a, b| a.path().as_os_str().cmp(b.path().as_os_str()))
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            let is_dir = e.file_type().is_dir();
            // Maildir++ keeps subfolders as hidden folders (`.Lists.rust/cur`; only `new/` in a copy
            // that dropped empty folders, as zip and git do), KMail the subfolders of `X` in
            // `.X.directory/`: those are mail.
            let maildir = |leaf: &str| e.path().join(leaf).is_dir();
            let mail_dir = || is_dir && (is_kmail_subfolders(&name) || maildir("cur") || maildir("new"));
            let hidden = name.starts_with('.') && !mail_dir();
            e.depth() == 0 || !(hidden || (is_dir && name == "tmp") || (is_dir && is_apple_attachments(e.path())))
        })
        // A folder that cannot be read (its permissions) is said, not passed over in silence.
        .filter_map(|entry| {
            entry
                .map_err(|e| {
                    let path = e.path().map(|p| p.display().to_string()).unwrap_or_default();
                    tracing::warn!(path, error = %e, "not read");
                })
                .ok()
        })
        // A link to a file within the root is the file (mairix and mu keep search results as
        // Maildirs of links).
        .filter(move |e| {
            e.file_type().is_file()
                || (e.depth() == 0 && e.path().is_file())
                || (e.path_is_symlink() && e.path().is_file() && links_within(e.path(), &within))
        })
        .map(move |e| Found { root: std::sync::Arc::clone(&shared), path: e.into_path() })
}

/// Whether the link at `path` leads to a file inside the folder walked, following every link.
fn links_within(path: &Path, root: &super::Within) -> bool {
    let inside = root.leads_inside(path);
    if !inside {
        if first_told(path) {
            tracing::warn!(path = %path.display(), "a link to a file outside the folder given: not read");
        } else {
            tracing::debug!(path = %path.display(), "a link to a file outside the folder given: not read");
        }
    }
    inside
}

/// Whether `path` is told of for the first time since the server started: a watched folder of
/// links leading out is walked again at each change, and its log should not say it again each
/// time. At most [`TOLD_AT_MOST`] paths are remembered; past them, each is told every time.
fn first_told(path: &Path) -> bool {
    static TOLD: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<PathBuf>>> = std::sync::OnceLock::new();
    let mut told = TOLD.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if told.contains(path) {
        return false;
    }
    if told.len() < TOLD_AT_MOST {
        told.insert(path.to_path_buf());
    }
    true
}

/// How many paths [`first_told`] remembers.
const TOLD_AT_MOST: usize = 10_000;

/// KMail's folder of the subfolders of `X`: `.X.directory`.
fn is_kmail_subfolders(name: &str) -> bool {
    name.strip_prefix('.').and_then(|n| n.strip_suffix(".directory")).is_some_and(|s| !s.is_empty())
}

/// Apple Mail's `Attachments/` folder beside a `Messages/` folder: the attachments of its
/// `.partial.emlx` messages, read with them, never messages of their own.
fn is_apple_attachments(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "Attachments") && dir.parent().is_some_and(|p| p.join("Messages").is_dir())
}

/// A file Apple Mail stored beside a `.partial.emlx` for one of its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredAttachment {
    Found {
        name: String,
        bytes: Vec<u8>,
    },
    /// No file for the part (Apple Mail had not downloaded it, or the tree was copied without it).
    Missing,
    /// A file larger than `max` bytes: not read.
    TooLarge {
        name: String,
        size: u64,
    },
}

/// The attachment Apple Mail stored for part `section` (`2`, `1.2`) of the message at `path`
/// (`…/Messages/<n>.partial.emlx`): the first file in `…/Attachments/<n>/<section>/`. Read-only,
/// and never more than `max` bytes.
pub fn apple_attachment(path: &Path, section: &str, max: u64) -> StoredAttachment {
    if section.is_empty() || !section.bytes().all(|b| b.is_ascii_digit() || b == b'.') || section.starts_with('.') {
        return StoredAttachment::Missing;
    }
    let Some(number) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.split('.').next()) else {
        return StoredAttachment::Missing;
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return StoredAttachment::Missing;
    }
    let Some(mailbox) = path.parent().and_then(Path::parent) else { return StoredAttachment::Missing };
    let dir = mailbox.join("Attachments").join(number).join(section);
    let Ok(entries) = std::fs::read_dir(&dir) else { return StoredAttachment::Missing };
    let mut files: Vec<(String, PathBuf, u64)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(std::fs::Metadata::is_file)?;
            Some((e.file_name().to_string_lossy().into_owned(), e.path(), meta.len()))
        })
        .filter(|(name, _, _)| !name.starts_with('.'))
        .collect();
    files.sort();
    let Some((name, file, size)) = files.into_iter().next() else { return StoredAttachment::Missing };
    if size > max {
        return StoredAttachment::TooLarge { name, size };
    }
    let mut bytes = Vec::new();
    match File::open(&file).and_then(|f| f.take(max + 1).read_to_end(&mut bytes)) {
        Ok(n) if n as u64 > max => StoredAttachment::TooLarge { name, size: n as u64 },
        Ok(_) => StoredAttachment::Found { name, bytes },
        Err(_) => StoredAttachment::Missing,
    }
}

/// Maildir flags from a file name (`…:2,FS` → "FS"); `None` outside Maildir naming.
pub fn maildir_flags(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    // `:2,` is the standard; `!2,` and `;2,` are the forms used where `:` cannot be in a name.
    let (_, info) = name.rsplit_once(":2,").or_else(|| name.rsplit_once("!2,")).or_else(|| name.rsplit_once(";2,"))?;
    Some(info.chars().filter(|c| c.is_ascii_alphabetic()).collect())
}

/// The flags of a Maildir name's letters (`DFPRST`, upper case, as `maildir_flags` gives them):
/// its lower-case letters are keywords, which name labels through the folder's keyword file and
/// mean nothing as flags.
pub fn standard_flags(letters: String) -> String {
    letters.chars().filter(char::is_ascii_uppercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maildir_flag_names() {
        assert_eq!(maildir_flags(Path::new("cur/1.M1P1.h:2,FS")).as_deref(), Some("FS"));
        assert_eq!(maildir_flags(Path::new("cur/1.M1P1.h!2,S")).as_deref(), Some("S"));
        assert_eq!(maildir_flags(Path::new("cur/1.M1.h,S=10;2,STln")).as_deref(), Some("STln"));
        assert_eq!(maildir_flags(Path::new("new/1.M1P1.h")), None);
        assert_eq!(standard_flags("STln".into()), "ST");
    }

    #[test]
    fn a_link_leading_out_is_told_of_once() {
        let path = Path::new("/nowhere/told-once-test/1.eml");
        assert!(first_told(path));
        assert!(!first_told(path));
        assert!(first_told(Path::new("/nowhere/told-once-test/2.eml")));
    }
}
