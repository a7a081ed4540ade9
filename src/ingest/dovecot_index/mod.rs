//! Dovecot's index files, which say what its message files do not: a message's flags and keywords,
//! which messages a mailbox holds now (a move or an expunge changes only the index), and in mdbox
//! where each message's bytes lie. An index is a snapshot and a log of changes after it:
//! `dovecot.index` (a header, extension headers, then one fixed-size record a message: its uid,
//! its flags, and each extension's data at that extension's offset — see [`index`]) says what was
//! so when it was written, up to a place in the log it names; `dovecot.index.log` (and the older
//! `dovecot.index.log.2`) are transaction logs — a header, then records of a size and a type
//! (appends, expunges, flag and keyword changes, extensions' data; see [`log`]) — replayed from that
//! place. A small mailbox often has only the log, replayed from its start. mdbox keeps one more
//! index of the same two formats, its map (`storage/dovecot.map.index` and its logs; see [`map`]):
//! for each map uid, the `m.<file id>` file, offset and size of a message's frame, and how many
//! mailboxes hold it. A mailbox's index names each of its messages' map uids (the `mdbox`
//! extension). Files are read in full within [`MAX_FILE`]; little-endian files only (what
//! Dovecot writes on x86 and ARM), the others are refused. Damage ends a log's replay where it
//! lies, keeping what came before; a damaged `dovecot.index` is an error. [`places`] puts it
//! together for the walker: which mailboxes hold each message of a store now, with which flags.

mod index;
mod log;
mod map;
mod places;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::Path;

pub use map::{read_map_index, MapIndex, MapMail};
pub(in crate::ingest) use places::digest;
pub use places::{Held, Indexes, Mdbox, Placed};

use super::invalid;

/// The largest index or log file read (Dovecot rotates its logs at 1 MiB; an index of a million
/// messages is some 50 MiB).
const MAX_FILE: u64 = 64 * 1024 * 1024;

/// The most messages an index may hold at once: beyond, it is refused (each takes some 100 bytes
/// here).
const MAX_MESSAGES: usize = 1 << 22;

/// How many messages a replay may touch in all (a change over a range of uids touches each message
/// in it): beyond, it is refused, so that a small hostile log cannot take long.
const MAX_WORK: u64 = 1 << 27;

/// The size of Dovecot 2.3's base header of `dovecot.index` (`struct mail_index_header`).
const BASE_HEADER_SIZE: usize = 120;
/// Where the base header keeps the uid validity and the next uid to be given.
const UID_VALIDITY_AT: usize = 24;
const NEXT_UID_AT: usize = 28;

/// What Dovecot's index says of one mailbox's messages (`dovecot.index`, then its log replayed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailboxIndex {
    pub uid_validity: u32,
    pub next_uid: u32,
    /// The messages the mailbox holds, by uid; expunged ones are absent.
    pub messages: BTreeMap<u32, IndexedMessage>,
}

/// One message of a mailbox, as its index has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedMessage {
    /// Maildir's letters for the flags, sorted: D (draft), F (flagged), R (answered), S (seen),
    /// T (deleted).
    pub flags: String,
    /// The keywords set on it, by name (e.g. "$Forwarded", "$label1", "Work"), in the order the
    /// mailbox first knew them.
    pub keywords: Vec<String>,
    /// mdbox: the message's map uid (the `mdbox` extension of the mailbox's index), its key in
    /// [`MapIndex::mails`]; `None` for sdbox.
    pub map_uid: Option<u32>,
}

/// Reads the index of the mailbox whose index files lie in `dir` (`dovecot.index`,
/// `dovecot.index.log`, `dovecot.index.log.2` — any may be missing; a small mailbox often has only
/// the log). `Ok(None)` when there are no index files at all.
pub fn read_mailbox_index(dir: &Path) -> std::io::Result<Option<MailboxIndex>> {
    Ok(replayed_files(dir, "dovecot.index")?.map(MailboxIndex::of))
}

impl MailboxIndex {
    /// A mailbox's index from the bytes of its files: `dovecot.index` if there is one, and its
    /// logs in any order (each names its place in the sequence).
    pub fn from_bytes(index: Option<&[u8]>, logs: &[&[u8]]) -> std::io::Result<MailboxIndex> {
        State::replayed(index, logs).map(MailboxIndex::of)
    }

    fn of(state: State) -> MailboxIndex {
        let messages = state
            .records
            .iter()
            .map(|(&uid, record)| {
                let keywords =
                    record.keywords.iter().filter_map(|&k| state.keywords.name(k).map(str::to_string)).collect();
                let message =
                    IndexedMessage { flags: flag_letters(record.flags), keywords, map_uid: state.map_uid(record) };
                (uid, message)
            })
            .collect();
        MailboxIndex { uid_validity: state.uid_validity(), next_uid: state.next_uid(), messages }
    }
}

/// Each message of the mailbox whose index files lie in `dir`, as [`read_mailbox_index`] reads
/// them, handed to `each` in turn rather than kept all at once: its uid, its flags (Dovecot's
/// bits: see [`flag_letters`]), its keywords' names and its map uid. `Ok(false)` when there are
/// no index files at all.
pub(super) fn each_message(dir: &Path, mut each: impl FnMut(u32, u8, &[&str], Option<u32>)) -> std::io::Result<bool> {
    let Some(state) = replayed_files(dir, "dovecot.index")? else { return Ok(false) };
    let mut names: Vec<&str> = Vec::new();
    for (&uid, record) in &state.records {
        names.clear();
        names.extend(record.keywords.iter().filter_map(|&k| state.keywords.name(k)));
        each(uid, record.flags, &names, state.map_uid(record));
    }
    Ok(true)
}

/// Names (keywords, mailboxes), each kept once and known by its number.
#[derive(Debug, Default)]
pub(super) struct Names {
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Names {
    /// The number of `name`, known from now on if it was not; `None` once there are `u32::MAX`.
    pub(super) fn id(&mut self, name: &str) -> Option<u32> {
        if let Some(&id) = self.ids.get(name) {
            return Some(id);
        }
        let id = u32::try_from(self.names.len()).ok()?;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        Some(id)
    }

    pub(super) fn name(&self, id: u32) -> Option<&str> {
        self.names.get(id as usize).map(String::as_str)
    }
}

/// Maildir's letters for Dovecot's flag bits (`enum mail_flags`), sorted.
pub(super) fn flag_letters(flags: u8) -> String {
    // Bits: answered 0x01, flagged 0x02, deleted 0x04, seen 0x08, draft 0x10.
    [(0x10, 'D'), (0x02, 'F'), (0x01, 'R'), (0x08, 'S'), (0x04, 'T')]
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|&(_, letter)| letter)
        .collect()
}

/// The bytes of an index (`<base>`) and of its logs (`<base>.log`, `<base>.log.2`) in `dir`;
/// `None` when there is none of them.
type IndexFiles = (Option<Vec<u8>>, Vec<Vec<u8>>);

/// The index `<base>` in `dir` replayed with its logs; `None` when there is none of their files.
/// The files' bytes are dropped once replayed.
fn replayed_files(dir: &Path, base: &str) -> std::io::Result<Option<State>> {
    let Some((index, logs)) = read_files(dir, base)? else { return Ok(None) };
    let logs: Vec<&[u8]> = logs.iter().map(Vec::as_slice).collect();
    State::replayed(index.as_deref(), &logs).map(Some)
}

fn read_files(dir: &Path, base: &str) -> std::io::Result<Option<IndexFiles>> {
    let index = read_capped(&dir.join(base))?;
    let mut logs = Vec::new();
    for suffix in [".log.2", ".log"] {
        if let Some(log) = read_capped(&dir.join(format!("{base}{suffix}")))? {
            logs.push(log);
        }
    }
    Ok((index.is_some() || !logs.is_empty()).then_some((index, logs)))
}

/// A file's bytes, `None` when it does not exist; an error when it is larger than [`MAX_FILE`].
fn read_capped(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(invalid("a Dovecot index file larger than 64 MiB"));
    }
    Ok(Some(bytes))
}

/// The little-endian `u32` at `at`, if the bytes reach that far.
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The little-endian `u16` at `at`, if the bytes reach that far.
fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    let b = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

/// `n` rounded up to a multiple of `to` (a power of two), `None` on overflow.
fn align(n: usize, to: usize) -> Option<usize> {
    Some(n.checked_add(to - 1)? & !(to - 1))
}

/// The extensions' data this reader keeps, known by the extension's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// `mdbox`, in an mdbox mailbox's index: the map uid (then a save date).
    MapUid,
    /// `map`, in mdbox's map: file id, offset and size.
    Place,
    /// `ref`, in mdbox's map: how many mailboxes hold the message (a `u16`).
    Refcount,
}

impl Field {
    fn named(name: &str) -> Option<Field> {
        match name {
            "mdbox" => Some(Field::MapUid),
            "map" => Some(Field::Place),
            "ref" => Some(Field::Refcount),
            _ => None,
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// One extension the index knows, in the order Dovecot numbers them (the index file's, then those
/// the logs introduce).
#[derive(Debug, Clone)]
struct Extension {
    name: String,
    reset_id: u32,
    field: Option<Field>,
}

/// A value of an extension's data, with the generation of that extension it was set in: a reset of
/// the extension makes older values void without visiting every message.
#[derive(Debug, Clone, Copy, Default)]
struct Stamped<T> {
    generation: u32,
    value: T,
}

/// What the index holds of one message.
#[derive(Debug, Clone, Default)]
struct Record {
    flags: u8,
    /// Indexes into [`State::keywords`].
    keywords: BTreeSet<u32>,
    map_uid: Option<Stamped<u32>>,
    place: Option<Stamped<[u32; 3]>>,
    refcount: Option<Stamped<u16>>,
}

/// An index as read and replayed so far.
#[derive(Debug)]
struct State {
    /// The base header's bytes (uid validity and next uid are read from it; logs update it).
    base: [u8; BASE_HEADER_SIZE],
    indexid: u32,
    extensions: Vec<Extension>,
    keywords: Names,
    records: BTreeMap<u32, Record>,
    /// Each [`Field`]'s generation, raised when its extension is reset.
    generations: [u32; 3],
    work_left: u64,
}

impl State {
    fn empty() -> State {
        State {
            base: [0; BASE_HEADER_SIZE],
            indexid: 0,
            extensions: Vec::new(),
            keywords: Names::default(),
            records: BTreeMap::new(),
            generations: [0; 3],
            work_left: MAX_WORK,
        }
    }

    /// The index `index` (or none), then the logs replayed after it.
    fn replayed(index: Option<&[u8]>, logs: &[&[u8]]) -> std::io::Result<State> {
        State::replayed_within(index, logs, MAX_WORK)
    }

    /// [`State::replayed`], refused once it has touched messages `work` times.
    fn replayed_within(index: Option<&[u8]>, logs: &[&[u8]], work: u64) -> std::io::Result<State> {
        let (mut state, from) = match index {
            Some(bytes) => {
                let (state, from) = index::read(bytes)?;
                (state, Some(from))
            }
            None => (State::empty(), None),
        };
        state.work_left = work;
        log::replay(&mut state, from, logs)?;
        Ok(state)
    }

    fn uid_validity(&self) -> u32 {
        u32_at(&self.base, UID_VALIDITY_AT).unwrap_or(0)
    }

    fn next_uid(&self) -> u32 {
        u32_at(&self.base, NEXT_UID_AT).unwrap_or(0)
    }

    fn set_next_uid(&mut self, uid: u32) {
        self.base[NEXT_UID_AT..NEXT_UID_AT + 4].copy_from_slice(&uid.to_le_bytes());
    }

    /// Counts `n` units of work; an error once the replay has done more than [`MAX_WORK`].
    fn work(&mut self, n: u64) -> std::io::Result<()> {
        self.work_left = self
            .work_left
            .checked_sub(n)
            .ok_or_else(|| invalid("a Dovecot index log with more changes than can be replayed"))?;
        Ok(())
    }

    /// Adds a message (an index record, or a log's append).
    fn insert(&mut self, uid: u32, record: Record) -> std::io::Result<()> {
        if self.records.len() >= MAX_MESSAGES && !self.records.contains_key(&uid) {
            return Err(invalid("a Dovecot index of too many messages"));
        }
        self.work(1)?;
        self.records.insert(uid, record);
        Ok(())
    }

    /// The index of keyword `name`, known from now on if it was not.
    fn keyword_id(&mut self, name: &str) -> Option<u32> {
        self.keywords.id(name)
    }

    /// Applies `change` to every message whose uid lies in `first..=last`.
    fn each_in(&mut self, first: u32, last: u32, mut change: impl FnMut(&mut Record)) -> std::io::Result<()> {
        if first > last {
            return Ok(());
        }
        self.work(1)?;
        let mut touched = 0u64;
        for record in self.records.range_mut(first..=last).map(|(_, r)| r) {
            change(record);
            touched += 1;
            if touched > self.work_left {
                break;
            }
        }
        self.work(touched)
    }

    /// Removes the messages whose uids lie in `first..=last`.
    fn expunge(&mut self, first: u32, last: u32) -> std::io::Result<()> {
        if first > last {
            return Ok(());
        }
        self.work(1)?;
        let uids: Vec<u32> = self.records.range(first..=last).map(|(&uid, _)| uid).collect();
        self.work(uids.len() as u64)?;
        for uid in uids {
            self.records.remove(&uid);
        }
        Ok(())
    }

    /// The current value of a field of `record`, if set since its extension was last reset.
    fn current<T: Copy>(&self, field: Field, value: Option<Stamped<T>>) -> Option<T> {
        value.filter(|s| s.generation == self.generations[field.slot()]).map(|s| s.value)
    }

    fn map_uid(&self, record: &Record) -> Option<u32> {
        self.current(Field::MapUid, record.map_uid).filter(|&uid| uid != 0)
    }

    /// Sets `field` of `record` from an extension's record data (zero-extended, as Dovecot does
    /// when a record is shorter than the extension's).
    fn set_field(generations: &[u32; 3], record: &mut Record, field: Field, data: &[u8]) {
        let mut bytes = [0u8; 12];
        let n = data.len().min(bytes.len());
        bytes[..n].copy_from_slice(&data[..n]);
        let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let generation = generations[field.slot()];
        match field {
            Field::MapUid => record.map_uid = Some(Stamped { generation, value: word(0) }),
            Field::Place => record.place = Some(Stamped { generation, value: [word(0), word(4), word(8)] }),
            Field::Refcount => {
                record.refcount = Some(Stamped { generation, value: u16::from_le_bytes([bytes[0], bytes[1]]) })
            }
        }
    }

    /// Makes every value of `field` void (its extension was reset without keeping its data).
    fn reset_field(&mut self, field: Field) {
        let generation = &mut self.generations[field.slot()];
        *generation = generation.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests;
