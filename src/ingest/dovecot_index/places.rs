//! Where Dovecot's indexes put the messages of a dbox store, for the walker: in an mdbox store,
//! which mailboxes hold each message of its `storage/m.<n>` files now (two for a copy, the one it
//! was moved to, none once it was expunged) and with which flags and keywords; in an sdbox
//! mailbox, each `u.<uid>` file's flags and keywords. Each store's indexes are read once, as the
//! walker comes to its files (a store's files are walked one after another). When an index cannot
//! be read, or does not know a message (saved after the index was last written), nothing is known
//! of it: it shows in the mailbox its file names, without flags, and nothing is left out.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{each_message, flag_letters, read_map_index, MapIndex, Names};

/// The most mailboxes of one mdbox store whose indexes are read (beyond, none is: the store's
/// messages show as their files name them).
const MAX_MAILBOXES: usize = 10_000;
/// How deep mailboxes may nest below `mailboxes/`.
const MAX_DEPTH: usize = 64;

/// What Dovecot's indexes say of one message of an mdbox storage file.
#[derive(Debug, PartialEq, Eq)]
pub enum Placed {
    /// Nothing: shown in the mailbox its file names, without flags.
    Unknown,
    /// No mailbox holds it any more: expunged, its bytes waiting for `doveadm purge`.
    Expunged,
    /// The mailboxes that hold it now, each with the message's flags and keywords there.
    In(Vec<Held>),
}

/// A message as one mailbox holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The mailbox, in Dovecot's own name for it (as an mdbox file's `B` line has it).
    pub mailbox: String,
    pub flags: String,
    pub keywords: Vec<String>,
}

/// An mdbox store's map and what the indexes of all its mailboxes say of each map uid, kept small
/// (a store may hold a million messages): about 100 bytes a message, map included.
pub struct Mdbox {
    map: MapIndex,
    /// The store's mailboxes' names, and the keywords' names of all of them.
    mailboxes: Vec<String>,
    keywords: Names,
    /// Each mailbox's message, by the map uid it names (sorted by it: a copy's two are side by
    /// side).
    holders: Vec<Holder>,
}

/// One mailbox message of an mdbox store, by its map uid.
struct Holder {
    map_uid: u32,
    /// Into [`Mdbox::mailboxes`].
    mailbox: u32,
    /// Dovecot's flag bits.
    flags: u8,
    /// Into [`Mdbox::keywords`].
    keywords: Box<[u32]>,
}

impl Mdbox {
    /// The store whose `storage` folder is given: its map, and the index of every mailbox under
    /// `mailboxes/` beside it. `None` when the map or one of the mailboxes' indexes cannot be read
    /// (a message whose mailbox is not known must not be taken for expunged).
    pub fn read(storage: &Path) -> Option<Mdbox> {
        let map = match read_map_index(storage) {
            Ok(Some(map)) => map,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(path = %storage.display(), error = %e, "Dovecot's map index not read: messages shown as their files name them");
                return None;
            }
        };
        let mut store = Mdbox { map, mailboxes: Vec::new(), keywords: Names::default(), holders: Vec::new() };
        for (name, dir) in mailbox_dirs(&storage.parent()?.join("mailboxes"))? {
            let mailbox = u32::try_from(store.mailboxes.len()).ok()?;
            store.mailboxes.push(name);
            let keywords = &mut store.keywords;
            let holders = &mut store.holders;
            let read = each_message(&dir, |_, flags, names, map_uid| {
                let Some(map_uid) = map_uid else { return };
                let keywords = names.iter().filter_map(|n| keywords.id(n)).collect();
                holders.push(Holder { map_uid, mailbox, flags, keywords });
            });
            if let Err(e) = read {
                tracing::warn!(path = %dir.display(), error = %e, "a Dovecot mailbox index not read: messages shown as their files name them");
                return None;
            }
        }
        store.holders.sort_by_key(|h| h.map_uid);
        store.holders.shrink_to_fit();
        Some(store)
    }

    /// What the indexes say of the message of `m.<file_id>` whose bytes start at `at`
    /// (`DboxMessage::offset`).
    pub fn place(&self, file_id: u32, at: u64) -> Placed {
        let Some((map_uid, mail)) = self.map.holding(file_id, at) else { return Placed::Unknown };
        let held: Vec<Held> = self
            .holders_of(map_uid)
            .iter()
            .map(|h| Held {
                mailbox: self.mailboxes.get(h.mailbox as usize).cloned().unwrap_or_default(),
                flags: flag_letters(h.flags),
                keywords: h.keywords.iter().filter_map(|&k| self.keywords.name(k).map(str::to_string)).collect(),
            })
            .collect();
        match held {
            held if !held.is_empty() => Placed::In(held),
            _ if mail.refcount == 0 => Placed::Expunged,
            // The map says a mailbox holds it, and none of those read does: a mailbox whose
            // index is elsewhere, or behind the map.
            _ => Placed::Unknown,
        }
    }

    /// The mailbox messages that name `map_uid`.
    fn holders_of(&self, map_uid: u32) -> &[Holder] {
        let from = self.holders.partition_point(|h| h.map_uid < map_uid);
        let to = from + self.holders.get(from..).unwrap_or(&[]).partition_point(|h| h.map_uid == map_uid);
        self.holders.get(from..to).unwrap_or(&[])
    }

    /// The digest ([`Mdbox::digest_of_file`]) of every storage file the map names.
    fn file_digests(&self) -> Vec<(u32, u64)> {
        let files: std::collections::BTreeSet<u32> = self.map.mails.values().map(|m| m.file_id).collect();
        files.into_iter().map(|id| (id, self.digest_of_file(id))).collect()
    }

    /// A digest of what the indexes say of the messages of `m.<file_id>`: where each lies, how
    /// many mailboxes hold it, and which, with which flags and keywords. Dovecot flags, moves,
    /// copies and expunges a message in its indexes alone, leaving its storage file as it was: the
    /// digest is how a change there is seen.
    pub fn digest_of_file(&self, file_id: u32) -> u64 {
        let mut hash = blake3::Hasher::new();
        for (map_uid, mail) in self.map.in_file(file_id) {
            hash.update(&mail.offset.to_le_bytes());
            hash.update(&mail.size.to_le_bytes());
            hash.update(&mail.refcount.to_le_bytes());
            for h in self.holders_of(map_uid) {
                hash.update(self.mailboxes.get(h.mailbox as usize).map_or(&b""[..], |m| m.as_bytes()));
                hash.update(&[0, h.flags]);
                for name in h.keywords.iter().filter_map(|&k| self.keywords.name(k)) {
                    hash.update(name.as_bytes());
                    hash.update(&[0]);
                }
                hash.update(&[1]);
            }
            hash.update(&[2]);
        }
        digest(&hash)
    }
}

/// The first eight bytes of a hash, as a number.
pub(in crate::ingest) fn digest(hash: &blake3::Hasher) -> u64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.finalize().as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// The mailboxes of an mdbox store, below its `mailboxes` folder: each folder holding a
/// `dbox-Mails` folder is one, named by its path below `mailboxes` (`Entw&APw-rfe/Alt`). `None`
/// when they cannot all be listed.
fn mailbox_dirs(mailboxes: &Path) -> Option<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut stack = vec![(mailboxes.to_path_buf(), Vec::<String>::new())];
    while let Some((dir, names)) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && names.is_empty() => return Some(out),
            Err(_) => return None,
        };
        for entry in entries {
            let entry = entry.ok()?;
            if !entry.file_type().ok()?.is_dir() {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "dbox-Mails" {
                if !names.is_empty() {
                    out.push((names.join("/"), entry.path()));
                }
            } else if names.len() < MAX_DEPTH {
                let mut below = names.clone();
                below.push(name);
                stack.push((entry.path(), below));
            }
            if out.len() + stack.len() > MAX_MAILBOXES {
                return None;
            }
        }
    }
    // In an order of their own, not the file system's: a copy's holders, and so the digest of
    // its file, follow the mailboxes' order.
    out.sort_unstable();
    Some(out)
}

/// An sdbox mailbox's index, kept small as [`Mdbox`]'s: each message's flags and keywords by its
/// uid.
struct Sdbox {
    keywords: Names,
    /// Dovecot's flag bits and the keywords (into `keywords`) of each uid.
    messages: HashMap<u32, (u8, Box<[u32]>)>,
}

impl Sdbox {
    /// The index of the sdbox mailbox whose files are in `dir`, if it has a readable one.
    fn read(dir: &Path) -> Option<Sdbox> {
        let mut mailbox = Sdbox { keywords: Names::default(), messages: HashMap::new() };
        let keywords = &mut mailbox.keywords;
        let messages = &mut mailbox.messages;
        let read = each_message(dir, |uid, flags, names, _| {
            messages.insert(uid, (flags, names.iter().filter_map(|n| keywords.id(n)).collect()));
        });
        match read {
            Ok(true) => Some(mailbox),
            Ok(false) => None,
            Err(e) => {
                tracing::warn!(path = %dir.display(), error = %e, "a Dovecot mailbox index not read: its messages shown without flags");
                None
            }
        }
    }
}

/// The number of an mdbox storage file (`m.<n>`).
fn mdbox_file_id(file: &Path) -> Option<u32> {
    file.file_name()?.to_str()?.strip_prefix("m.")?.parse::<u32>().ok()
}

/// The walker's indexes of the store it is in: the last mdbox store's and the last sdbox
/// mailbox's, read when it first comes to one of their files; and, kept from one scan to the
/// next ([`Indexes::forget_read`]), the digests of each mdbox store's files and each sdbox
/// mailbox's messages with the state of the index files they were made from, so that a store
/// whose index files did not change is not read again to learn that nothing did.
#[derive(Default)]
pub struct Indexes {
    mdbox: Option<(PathBuf, Option<Mdbox>)>,
    sdbox: Option<(PathBuf, Option<Sdbox>)>,
    /// By the folder whose files they are of: an mdbox store's `storage`, an sdbox mailbox's
    /// `dbox-Mails`.
    kept: HashMap<PathBuf, Kept>,
    /// The folder whose digests were checked against its index files since the indexes read
    /// were last forgotten: its other files take them as they are (a store has thousands of
    /// files).
    checked: Option<PathBuf>,
    /// The folders checked since then: those not are gone from the walk, and their digests go.
    visited: std::collections::HashSet<PathBuf>,
}

/// The digests of one folder's files (an mdbox store's by file id, an sdbox mailbox's by uid),
/// sorted by that number, and the state of the index files they were made from: 12 bytes a file.
struct Kept {
    state: Vec<FileState>,
    numbers: Vec<u32>,
    digests: Vec<u64>,
}

impl Kept {
    fn new(state: Vec<FileState>, mut pairs: Vec<(u32, u64)>) -> Kept {
        pairs.sort_unstable();
        let (numbers, digests) = pairs.into_iter().unzip();
        Kept { state, numbers, digests }
    }

    fn get(&self, number: u32) -> Option<u64> {
        let at = self.numbers.binary_search(&number).ok()?;
        self.digests.get(at).copied()
    }
}

/// What tells one index file changed: its name, size, modification time and inode (`None`:
/// not there).
type FileState = (PathBuf, Option<(u64, i64, u64)>);

/// The state of the index files named `base` (and their logs) in each folder of `dirs`.
fn files_state(dirs: Vec<(PathBuf, &str)>) -> Vec<FileState> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::with_capacity(dirs.len() * 3);
    for (dir, base) in dirs {
        for suffix in ["", ".log", ".log.2"] {
            let path = dir.join(format!("{base}{suffix}"));
            let meta = std::fs::metadata(&path).ok();
            out.push((
                path,
                meta.map(|m| (m.len(), m.mtime().saturating_mul(1_000_000_000) + m.mtime_nsec(), m.ino())),
            ));
        }
    }
    out
}

/// The state of the index files of the mdbox store whose storage folder is `storage`: the map's
/// and every mailbox's. `None` when its mailboxes cannot all be listed.
fn mdbox_files_state(storage: &Path) -> Option<Vec<FileState>> {
    let mut dirs = vec![(storage.to_path_buf(), "dovecot.map.index")];
    for (_, dir) in mailbox_dirs(&storage.parent()?.join("mailboxes"))? {
        dirs.push((dir, "dovecot.index"));
    }
    Some(files_state(dirs))
}

/// The digest of what an sdbox mailbox's index says of one message.
fn sdbox_digest(flags: u8, keywords: &[&str]) -> u64 {
    let mut hash = blake3::Hasher::new();
    hash.update(flag_letters(flags).as_bytes());
    for name in keywords {
        hash.update(&[0]);
        hash.update(name.as_bytes());
    }
    digest(&hash)
}

impl Sdbox {
    /// The digest of each message the index knows, by uid.
    fn digests(&self) -> Vec<(u32, u64)> {
        self.messages
            .iter()
            .map(|(&uid, (flags, keywords))| {
                let names: Vec<&str> = keywords.iter().filter_map(|&k| self.keywords.name(k)).collect();
                (uid, sdbox_digest(*flags, &names))
            })
            .collect()
    }
}

impl Indexes {
    /// The indexes of the mdbox store whose storage file is `file` (`storage/m.<n>`), with `n`;
    /// `None` when the file is not named so or its store's indexes are unread.
    pub fn mdbox(&mut self, file: &Path) -> Option<(&Mdbox, u32)> {
        let file_id = mdbox_file_id(file)?;
        let storage = file.parent()?;
        if self.mdbox.as_ref().is_none_or(|(at, _)| at != storage) {
            self.mdbox = Some((storage.to_path_buf(), Mdbox::read(storage)));
        }
        let (_, store) = self.mdbox.as_ref()?;
        Some((store.as_ref()?, file_id))
    }

    /// Drops the indexes read (they are read again when next asked), keeping the digests of the
    /// folders checked since the last time (and what they were made from).
    pub fn forget_read(&mut self) {
        self.mdbox = None;
        self.sdbox = None;
        self.checked = None;
        let visited = std::mem::take(&mut self.visited);
        self.kept.retain(|dir, _| visited.contains(dir));
    }

    /// The flags (Maildir's letters) and keywords the index of its mailbox gives the sdbox file
    /// `file` (`dbox-Mails/u.<uid>`).
    pub fn sdbox(&mut self, file: &Path) -> Option<(String, Vec<String>)> {
        let uid = file.file_name()?.to_str()?.strip_prefix("u.")?.parse::<u32>().ok()?;
        let dir = file.parent()?;
        if self.sdbox.as_ref().is_none_or(|(at, _)| at != dir) {
            self.sdbox = Some((dir.to_path_buf(), Sdbox::read(dir)));
        }
        let (_, mailbox) = self.sdbox.as_ref()?;
        let mailbox = mailbox.as_ref()?;
        let (flags, keywords) = mailbox.messages.get(&uid)?;
        let names = keywords.iter().filter_map(|&k| mailbox.keywords.name(k).map(str::to_string)).collect();
        Some((flag_letters(*flags), names))
    }

    /// A digest of what Dovecot's indexes say of the messages of the dbox file `file` (an mdbox
    /// `storage/m.<n>`, an sdbox `u.<uid>`), as the walker would take it; `None` when `file` is
    /// neither, or its indexes are not read or (sdbox) do not know it.
    pub fn digest(&mut self, file: &Path) -> Option<u64> {
        let (number, mdbox) = match mdbox_file_id(file) {
            Some(id) => (id, true),
            None => {
                if !super::super::is_sdbox_file(file) {
                    return None;
                }
                (file.file_name()?.to_str()?.strip_prefix("u.")?.parse::<u32>().ok()?, false)
            }
        };
        let dir = file.parent()?;
        // A storage file the map does not name holds nothing the indexes know.
        let of = |kept: &Kept| kept.get(number).or_else(|| mdbox.then(|| digest(&blake3::Hasher::new())));
        if self.checked.as_deref() == Some(dir) {
            if let Some(kept) = self.kept.get(dir) {
                return of(kept);
            }
            // Its index files could not all be listed: as read already (or not) this time.
            return self.read_digests(file, mdbox).and_then(|pairs| of(&Kept::new(Vec::new(), pairs)));
        }
        self.checked = Some(dir.to_path_buf());
        self.visited.insert(dir.to_path_buf());
        let state =
            if mdbox { mdbox_files_state(dir) } else { Some(files_state(vec![(dir.to_path_buf(), "dovecot.index")])) };
        if let (Some(state), Some(kept)) = (&state, self.kept.get(dir)) {
            if *state == kept.state {
                return of(kept);
            }
        }
        // Read again: what was read last of this folder may be from before the change.
        if self.mdbox.as_ref().is_some_and(|(at, _)| at == dir) {
            self.mdbox = None;
        }
        if self.sdbox.as_ref().is_some_and(|(at, _)| at == dir) {
            self.sdbox = None;
        }
        let kept = Kept::new(state.clone().unwrap_or_default(), self.read_digests(file, mdbox)?);
        let found = of(&kept);
        if state.is_some() {
            self.kept.insert(dir.to_path_buf(), kept);
        }
        found
    }

    /// The digests of every file of the folder of `file`, from its indexes as read (read now if
    /// they are not yet).
    fn read_digests(&mut self, file: &Path, mdbox: bool) -> Option<Vec<(u32, u64)>> {
        if mdbox {
            let (store, _) = self.mdbox(file)?;
            return Some(store.file_digests());
        }
        self.sdbox(file);
        let (_, mailbox) = self.sdbox.as_ref()?;
        Some(mailbox.as_ref()?.digests())
    }
}
