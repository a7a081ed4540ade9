//! Folders: where a message was filed, in the names the mail client that wrote the tree gave it.
//! A folder comes from the message's path relative to the PATH it was found under — Maildir and
//! Maildir++ (`.Sub.Folder` is `Sub/Folder`), Thunderbird (`X` beside `X.sbd/`), Apple Mail
//! (`X.mbox/`, its inner UUID and `Messages` folders hidden), each mbox file a folder of its own,
//! an Outlook data file a folder holding its own tree, Dovecot's dbox stores by the mailbox each
//! message was filed in — and uploads are `Uploads`. The one place a
//! folder's name is decided ([`of_location`] for every listed message); also the terms `folder:`
//! searches by, and the tree the pages show. Pure functions, no I/O.

use std::path::{Component, Path};

use serde::Serialize;

use super::Location;
use crate::ingest::Source;

/// The folder of uploaded messages.
pub(crate) const UPLOADS: &str = "Uploads";

/// The folder of messages found directly in a Maildir given as PATH (Maildir++ calls it so).
pub(crate) const INBOX: &str = "INBOX";

/// The folder a listed message is filed in, from where it is (`None` for a message enclosed in
/// another): an upload under [`UPLOADS`], anything else by its path relative to the PATH it was
/// found under ([`folder_of`], [`pst_folder`]).
pub(crate) fn of_location(location: &Location) -> Option<String> {
    let Location::Top { source, rel, uploaded, .. } = location else { return None };
    Some(match source {
        Source::Stored { folder, .. } => under_uploads(folder),
        // An Outlook data file uploaded to a data folder before uploads were kept in the store.
        Source::Pst { path, folder, .. } if *uploaded => {
            under_uploads(&uploaded_item(&path.file_name().unwrap_or_default().to_string_lossy(), folder))
        }
        _ if *uploaded => UPLOADS.to_string(),
        _ => {
            let full = source.path().to_string_lossy();
            let rel_path = Path::new(full.get(usize::from(*rel)..).unwrap_or(&full));
            match source {
                Source::Pst { folder, .. } => pst_folder(rel_path, folder),
                Source::Dbox { mailbox, .. } => dbox_folder(rel_path, mailbox),
                _ => folder_of(rel_path, matches!(source, Source::Mbox { .. } | Source::Framed { .. })),
            }
        }
    })
}

/// The folder of a message of a Dovecot dbox store (see [`crate::ingest::DboxReader`]): the
/// folders above the store's own (`mailboxes/…/dbox-Mails`, `storage`) as [`folder_of`] names
/// them, then the mailbox Dovecot filed it in, its names decoded from IMAP's modified UTF-7.
fn dbox_folder(rel: &Path, mailbox: &str) -> String {
    let dirs: Vec<&std::ffi::OsStr> = rel.parent().map(|p| p.iter().collect()).unwrap_or_default();
    // sdbox: `mailboxes/<mailbox>/dbox-Mails/u.<uid>`; mdbox: `storage/m.<n>` (a mailbox may be
    // named `storage` or `mailboxes`: only the name where the layout has it counts, and for sdbox
    // that is where the mailbox's own folders begin).
    let store = match dirs.last() {
        Some(d) if *d == "dbox-Mails" => {
            let names: Vec<&str> = mailbox.split('/').filter(|n| !n.is_empty()).collect();
            let at = dirs.len().checked_sub(names.len() + 2);
            let laid_out = at.is_some_and(|at| {
                dirs[at] == "mailboxes" && dirs[at + 1..dirs.len() - 1].iter().zip(&names).all(|(d, n)| *d == *n)
            });
            if laid_out {
                at
            } else {
                dirs.iter().rposition(|d| *d == "mailboxes")
            }
        }
        Some(d) if *d == "storage" => Some(dirs.len() - 1),
        _ => None,
    }
    .unwrap_or(dirs.len());
    let above: std::path::PathBuf = dirs[..store].iter().collect();
    let mut out: Vec<String> = [folder_of(&above.join("m"), false)].into_iter().filter(|f| !f.is_empty()).collect();
    out.extend(
        mailbox.split('/').filter(|s| !s.is_empty()).map(|n| decode_imap_utf7(n).unwrap_or_else(|| n.to_string())),
    );
    if out.is_empty() {
        return INBOX.to_string();
    }
    out.join("/")
}

/// The folder, below [`UPLOADS`], of an item of an uploaded Outlook data file named `file_name`,
/// filed in `inner` there: the file's tree under its name (`Uploads/backup/Inbox`).
pub(crate) fn uploaded_item(file_name: &str, inner: &str) -> String {
    pst_folder(Path::new(file_name), inner)
}

/// `folder` (`""`: none) below [`UPLOADS`].
fn under_uploads(folder: &str) -> String {
    if folder.is_empty() {
        UPLOADS.to_string()
    } else {
        format!("{UPLOADS}/{folder}")
    }
}

/// The folder a message belongs to, from its path relative to the PATH it was found under
/// (`Archives.sbd/2017`, `.Lists.rust/cur/123:2,S`, `Work.mbox/…/Messages/1.emlx`); `mbox` when the
/// file is an mbox (then the file itself is a folder). Empty for a loose file at the top of a PATH.
pub(crate) fn folder_of(rel: &Path, mbox: bool) -> String {
    let names: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let Some((file, dirs)) = names.split_last() else { return String::new() };
    let mut out: Vec<String> = Vec::new();
    // Inside an Apple Mail `X.mbox` folder only further `.mbox` folders are mailboxes; the rest
    // (`<UUID>/Data/1/2/Messages`) is storage.
    let mut in_apple = false;
    let mut skipped_maildir_leaf = false;
    // A Maildir's folder names are kept as IMAP names (Dovecot, Courier): `&APw-` is `ü`.
    let maildir = dirs.last().is_some_and(|d| matches!(d.as_str(), "cur" | "new" | "tmp"));
    let imap_name = |name: &str| {
        if maildir {
            decode_imap_utf7(name).unwrap_or_else(|| name.to_string())
        } else {
            name.to_string()
        }
    };
    for (i, d) in dirs.iter().enumerate() {
        let last = i + 1 == dirs.len();
        // KMail keeps the subfolders of `X` in `.X.directory/` beside it (a Maildir or an mbox),
        // as Thunderbird does in `X.sbd/`; a `.X.directory` that holds `cur/` is a Maildir++
        // folder of that name.
        let holds_maildir = maildir && i + 2 == dirs.len();
        let kmail = d
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".directory"))
            .filter(|s| !s.is_empty())
            .filter(|_| !holds_maildir);
        if let Some(stem) = d.strip_suffix(".mbox").filter(|s| !s.is_empty()) {
            out.push(stem.to_string());
            in_apple = true;
        } else if in_apple {
            continue;
        } else if let Some(stem) = d.strip_suffix(".sbd").filter(|s| !s.is_empty()) {
            out.push(stem.to_string());
        } else if let Some(stem) = kmail {
            out.push(imap_name(stem));
        } else if last && matches!(d.as_str(), "cur" | "new" | "tmp") {
            skipped_maildir_leaf = true;
        } else if let Some(sub) = d.strip_prefix('.').filter(|s| !s.is_empty()) {
            // Maildir++: `.Lists.rust` is `Lists/rust`.
            out.extend(sub.split('.').filter(|s| !s.is_empty()).map(imap_name));
        } else {
            out.push(imap_name(d));
        }
    }
    if mbox && !(in_apple && file == "mbox") {
        // `2024-May.txt.gz` is the folder `2024-May.txt`, `Archive.mbox.xz` the folder `Archive`.
        let file = crate::ingest::name_beneath(file);
        let stem = [".mbox", ".mbx", ".mmdf", ".babyl", ".rmail"]
            .iter()
            .find_map(|ext| file.strip_suffix(ext))
            .filter(|s| !s.is_empty());
        out.push(stem.unwrap_or(file).to_string());
    }
    if out.is_empty() && skipped_maildir_leaf {
        return INBOX.to_string();
    }
    out.join("/")
}

/// A mailbox name in IMAP's modified UTF-7 (RFC 3501 §5.1.3), as Dovecot and Courier name Maildir
/// folders on disk (`Entw&APw-rfe` is `Entwürfe`, `R&-D` is `R&D`): the name it stands for, `None`
/// when it has no `&` or is not valid modified UTF-7 (then it is a name as it is).
fn decode_imap_utf7(name: &str) -> Option<String> {
    if !name.contains('&') {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let end = after.find('-')?;
        let encoded = &after[..end];
        if encoded.is_empty() {
            out.push('&');
        } else {
            let mut bits = 0u32;
            let mut held = 0u32;
            let mut units = Vec::new();
            for c in encoded.bytes() {
                let value = match c {
                    b'A'..=b'Z' => c - b'A',
                    b'a'..=b'z' => c - b'a' + 26,
                    b'0'..=b'9' => c - b'0' + 52,
                    b'+' => 62,
                    b',' => 63,
                    _ => return None,
                };
                held = (held << 6) | u32::from(value);
                bits += 6;
                if bits >= 16 {
                    bits -= 16;
                    units.push(u16::try_from((held >> bits) & 0xFFFF).ok()?);
                    held &= (1 << bits) - 1;
                }
            }
            // What is left over is padding: fewer than 6 bits, all zero. Printable ASCII stands
            // for itself and is never encoded (so `&AC8-` is no way to put a `/` in a name), and
            // no mailbox name holds a control character (`&AAA-` would be NUL, which no database
            // keeps in text).
            if bits >= 6 || held != 0 || units.is_empty() || units.iter().any(|u| (0x20..0x7f).contains(u)) {
                return None;
            }
            for c in char::decode_utf16(units) {
                match c {
                    Ok(c) if !c.is_control() => out.push(c),
                    _ => return None,
                }
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// The folder of an item of an Outlook data file at `rel` (relative to the PATH it was found
/// under), filed in `inner` there: the data file is a folder named as the file without its
/// extension (Outlook shows the store, not its "Top of Personal Folders" folder), and Outlook's
/// folders are below it (`backup/2019/Inbox` for `Inbox` of `backup/2019.pst`).
pub(crate) fn pst_folder(rel: &Path, inner: &str) -> String {
    let mut out = folder_of(rel, false);
    let stem = rel.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    for part in std::iter::once(stem.as_str()).chain(inner.split('/')).filter(|s| !s.is_empty()) {
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(part);
    }
    out
}

/// What a folder is known by, in the tree, on its page and in `folder:` alike: its path without
/// case, without quotes, white space around its segments or empty segments. Paths that differ only
/// so are one folder (a Maildir's `INBOX` and a mail client's `Inbox` in two trees served together,
/// as IMAP has it), and a folder is found whether it is typed as the tree shows it or in lower
/// case, quoted or not.
pub(crate) fn key(path: &str) -> String {
    let segments: Vec<String> =
        path.split('/').map(|s| s.replace('"', "").trim().to_lowercase()).filter(|s| !s.is_empty()).collect();
    segments.join("/")
}

/// The search terms a folder is found by: the [`key`] of itself and of each folder above it, so
/// that `folder:archives` finds `Archives/2017`.
pub(crate) fn folder_terms(folder: &str) -> Vec<String> {
    let key = key(folder);
    let mut out: Vec<String> = key.match_indices('/').map(|(i, _)| key[..i].to_string()).collect();
    if !key.is_empty() {
        out.push(key);
    }
    out
}

/// How folder paths are spelled when several spellings are one folder (see [`key`]): the first
/// spelling met of each folder and of each folder above it, so that `Archives/2017` and
/// `archives/2018` show as `Archives` holding both.
#[derive(Debug, Default)]
pub(crate) struct Spellings {
    first: std::collections::HashMap<String, String>,
}

impl Spellings {
    /// `path` as the folders it lies in were first spelled (itself too, when it is new).
    pub(crate) fn spell(&mut self, path: &str) -> String {
        let segments: Vec<&str> = path.split('/').collect();
        let mut out = String::new();
        for (i, seg) in segments.iter().enumerate() {
            let mut next = out.clone();
            if i > 0 {
                next.push('/');
            }
            next.push_str(seg);
            out = self.first.entry(key(&segments[..=i].join("/"))).or_insert(next).clone();
        }
        out
    }
}

/// A folder and the folders below it, as the API and the pages show them.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, utoipa::ToSchema)]
pub struct FolderNode {
    /// The folder's own name (the last segment of its path).
    pub name: String,
    /// `/`-separated, relative to the PATH it was found under; the key of `/folder/<path>` and of
    /// `folder:<path>`.
    pub path: String,
    /// Messages filed in this folder itself (not in its subfolders).
    pub messages: usize,
    #[schema(no_recursion)]
    pub folders: Vec<FolderNode>,
}

/// Builds the folder tree from each folder's own count. Folders that hold no message but lie
/// above one that does are in the tree with 0; names sort as a person expects (`INBOX` first,
/// then case-insensitively).
pub(crate) fn tree(counts: impl IntoIterator<Item = (String, usize)>) -> Vec<FolderNode> {
    let mut roots: Vec<FolderNode> = Vec::new();
    for (path, n) in counts {
        if path.is_empty() {
            continue;
        }
        let mut level = &mut roots;
        let mut at = 0;
        let segments: Vec<&str> = path.split('/').collect();
        for (i, seg) in segments.iter().enumerate() {
            at += seg.len() + usize::from(i > 0);
            let pos = match level.iter().position(|f| f.name == *seg) {
                Some(p) => p,
                None => {
                    level.push(FolderNode {
                        name: seg.to_string(),
                        path: path[..at].to_string(),
                        messages: 0,
                        folders: Vec::new(),
                    });
                    level.len() - 1
                }
            };
            if i + 1 == segments.len() {
                level[pos].messages += n;
            }
            level = &mut level[pos].folders;
        }
    }
    sort_tree(&mut roots);
    roots
}

fn sort_tree(level: &mut [FolderNode]) {
    level.sort_by(|a, b| {
        let rank = |f: &FolderNode| match f.name.as_str() {
            INBOX | "Inbox" => 0,
            UPLOADS => 2,
            _ => 1,
        };
        rank(a).cmp(&rank(b)).then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
    });
    for f in level {
        sort_tree(&mut f.folders);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outlook_data_files_are_folders_of_their_own() {
        let cases: &[(&str, &str, &str)] = &[
            ("backup.pst", "", "backup"),
            ("backup.pst", "Inbox", "backup/Inbox"),
            ("old/2019.pst", "Inbox/Projects", "old/2019/Inbox/Projects"),
            ("mail/offline.ost", "Sent Items", "mail/offline/Sent Items"),
        ];
        for (rel, inner, want) in cases {
            assert_eq!(pst_folder(Path::new(rel), inner), *want, "{rel} {inner}");
        }
    }

    #[test]
    fn every_listed_message_is_filed_by_where_it_is() {
        let top = |source: Source, uploaded: bool| Location::Top { source, rel: 6, flags: None, uploaded };
        let pst = |path: &str, folder: &str| Source::Pst { path: path.into(), node: 7, folder: folder.into() };
        let stored = |folder: &str| Source::Stored { name: "h.eml".into(), folder: folder.into() };
        let cases: Vec<(Location, Option<&str>)> = vec![
            (top(Source::File { path: "/mail/.Lists.rust/cur/1:2,S".into() }, false), Some("Lists/rust")),
            (
                top(Source::Mbox { path: "/mail/Archives.sbd/2017".into(), offset: 0, len: 9 }, false),
                Some("Archives/2017"),
            ),
            (top(pst("/mail/old/2019.pst", "Inbox"), false), Some("old/2019/Inbox")),
            (
                top(Source::Framed { path: "/mail/emacs/RMAIL".into(), offset: 0, len: 9, skip: None }, false),
                Some("emacs/RMAIL"),
            ),
            (top(Source::File { path: "/mail/loose.eml".into() }, false), Some("")),
            (top(stored(""), true), Some("Uploads")),
            (top(stored("backup/Inbox"), true), Some("Uploads/backup/Inbox")),
            (top(pst("/data/uploads/ab12/backup.pst", "Inbox"), true), Some("Uploads/backup/Inbox")),
            (top(Source::File { path: "/data/uploads/ab12.eml".into() }, true), Some("Uploads")),
            (Location::Nested { parent: 1, part: 2 }, None),
        ];
        for (location, want) in cases {
            assert_eq!(of_location(&location).as_deref(), want, "{location:?}");
        }
        assert_eq!(uploaded_item("backup.pst", "Inbox"), "backup/Inbox");
    }

    /// Dovecot's stores, a mailbox named as the stores name their own folders among them.
    #[test]
    fn dbox_messages_are_filed_in_their_mailboxes() {
        for (rel, mailbox, want) in [
            ("sdbox/mailboxes/INBOX/dbox-Mails/u.1", "INBOX", "sdbox/INBOX"),
            ("mailboxes/Entw&APw-rfe/Alt/dbox-Mails/u.1", "Entw&APw-rfe/Alt", "Entwürfe/Alt"),
            ("mailboxes/storage/dbox-Mails/u.1", "storage", "storage"),
            ("mailboxes/Work/storage/dbox-Mails/u.1", "Work/storage", "Work/storage"),
            // Mailboxes named `mailboxes`, and a store in a folder so named.
            ("sdbox/mailboxes/Work/mailboxes/dbox-Mails/u.1", "Work/mailboxes", "sdbox/Work/mailboxes"),
            ("sdbox/mailboxes/Work/mailboxes/2019/dbox-Mails/u.1", "Work/mailboxes/2019", "sdbox/Work/mailboxes/2019"),
            ("mailboxes/alice/mailboxes/INBOX/dbox-Mails/u.1", "INBOX", "mailboxes/alice/INBOX"),
            ("mdbox/storage/m.1", "Work", "mdbox/Work"),
            ("storage/m.7", "mailboxes", "mailboxes"),
            ("storage/m.7", "", INBOX),
        ] {
            assert_eq!(dbox_folder(Path::new(rel), mailbox), want, "{rel}");
        }
    }

    #[test]
    fn folders_follow_each_mail_clients_layout() {
        let cases: &[(&str, bool, &str)] = &[
            ("message.eml", false, ""),
            ("Inbox", true, "Inbox"),
            ("Archives.sbd/2017", true, "Archives/2017"),
            ("Archives.sbd/2017.sbd/March", true, "Archives/2017/March"),
            ("lists/rust/2024-May.txt.gz", true, "lists/rust/2024-May.txt"),
            ("Archive.mbox.xz", true, "Archive"),
            ("cur/1234.host:2,S", false, INBOX),
            ("new/1234.host", false, INBOX),
            (".Lists.rust/cur/1:2,S", false, "Lists/rust"),
            ("work/cur/1:2,", false, "work"),
            ("work/.Sent/new/1", false, "work/Sent"),
            ("INBOX.mbox/9F3A-UUID/Data/1/2/Messages/123.emlx", false, "INBOX"),
            ("Work.mbox/Projects.mbox/UUID/Data/Messages/7.partial.emlx", false, "Work/Projects"),
            ("Export.mbox/mbox", true, "Export"),
            (
                "Takeout/Mail/All mail Including Spam and Trash.mbox",
                true,
                "Takeout/Mail/All mail Including Spam and Trash",
            ),
            ("lists/rust.mbx", true, "lists/rust"),
            ("old/archive.mmdf", true, "old/archive"),
            ("emacs/friends.babyl", true, "emacs/friends"),
            // KMail: the subfolders of `inbox` in `.inbox.directory/`, Maildir or mbox.
            ("inbox/cur/1:2,S", false, "inbox"),
            (".inbox.directory/Lists/new/1", false, "inbox/Lists"),
            (".inbox.directory/.Lists.directory/rust/cur/1:2,S", false, "inbox/Lists/rust"),
            (".inbox.directory/archive", true, "inbox/archive"),
            (".Notes.directory/cur/1:2,", false, "Notes/directory"),
            // Dovecot and Courier write folder names in IMAP's modified UTF-7.
            (".Entw&APw-rfe/cur/1:2,S", false, "Entwürfe"),
            (".Archiv.&AMQ-lter/cur/1:2,S", false, "Archiv/Älter"),
            ("&ZeVnLIqe-/cur/1:2,S", false, "日本語"),
            (".R&-D/new/1", false, "R&D"),
            (".Tom & Jerry/cur/1:2,S", false, "Tom & Jerry"),
            (".Bad&AB/cur/1:2,S", false, "Bad&AB"),
            ("&AC8-etc/cur/1:2,S", false, "&AC8-etc"),
            ("&AAA-/cur/1:2,S", false, "&AAA-"),
            (".&AB8-x/cur/1:2,S", false, "&AB8-x"),
            ("saved/R&-D/page.eml", false, "saved/R&-D"),
            ("saved/pages/page.mhtml", false, "saved/pages"),
        ];
        for (rel, mbox, want) in cases {
            assert_eq!(folder_of(Path::new(rel), *mbox), *want, "{rel}");
        }
    }

    #[test]
    fn folder_prefixes_match_whole_segments() {
        assert_eq!(folder_terms("Archives/2017/March"), ["archives", "archives/2017", "archives/2017/march"]);
        assert!(folder_terms("").is_empty());
    }

    #[test]
    fn one_folder_whatever_its_case_quotes_or_spaces() {
        let cases = [
            ("INBOX", "inbox"),
            ("Inbox/Sub", "inbox/sub"),
            ("Notes \"2024\"", "notes 2024"),
            ("/Drafts /Old/", "drafts/old"),
            ("a//b", "a/b"),
            ("Entwürfe", "entwürfe"),
        ];
        for (path, want) in cases {
            assert_eq!(key(path), want, "{path}");
        }
        assert_eq!(folder_terms("Inbox /Sub"), ["inbox", "inbox/sub"]);
        let mut spellings = Spellings::default();
        let spelled: Vec<String> = ["Archives/2017", "archives/2018", "INBOX", "Inbox/Sub", "inbox"]
            .iter()
            .map(|p| spellings.spell(p))
            .collect();
        assert_eq!(spelled, ["Archives/2017", "Archives/2018", "INBOX", "INBOX/Sub", "INBOX"]);
    }

    #[test]
    fn the_tree_holds_every_folder_above_one_with_mail() {
        let t = tree([("Archives/2017".to_string(), 3), ("INBOX".into(), 2), ("Uploads".into(), 1), ("a".into(), 1)]);
        let names: Vec<&str> = t.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["INBOX", "a", "Archives", "Uploads"]);
        let archives = &t[2];
        assert_eq!((archives.messages, archives.path.as_str()), (0, "Archives"));
        assert_eq!((archives.folders[0].messages, archives.folders[0].path.as_str()), (3, "Archives/2017"));
    }
}
