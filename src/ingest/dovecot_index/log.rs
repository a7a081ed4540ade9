//! Dovecot's transaction logs (`dovecot.index.log`, and `.log.2`, the one before it), log format
//! 1 as Dovecot 2.3 writes it: a header (`struct mail_transaction_log_header`: versions, the
//! header's size, the index id, the file's sequence number, the previous file's sequence number
//! and offset, a creation stamp, the initial modseq, compatibility flags telling the byte order),
//! then records, each `struct mail_transaction_header` — its size, header included, stored as
//! `mail_index_uint32_to_offset` stores it (a multiple of 4 shifted down two bits, seven bits in each
//! byte, each byte's top bit set), and its type — then its data. What each type holds:
//!
//! | type | data |
//! |---|---|
//! | expunge (`0x1`) | uid ranges, pairs of `u32` |
//! | append (`0x2`) | 8 bytes a message: uid, flags, padding (extensions' data follows as record updates) |
//! | flag update (`0x4`) | uid range, flags added, flags removed, modseq flag, padding |
//! | header update (`0x20`) | offset and size (`u16`s), bytes for the base header, padded to 4 |
//! | extension intro (`0x40`) | id (or `u32::MAX` and a name), reset id, header size, record size, alignment, flags, name size, name, padded to 4 |
//! | extension reset (`0x80`) | new reset id, whether to keep the data |
//! | extension record update (`0x200`) | uid and the introduced extension's record data, each padded to 4 |
//! | keyword update (`0x400`) | add or remove, name size, name, padding to 4, uid ranges |
//! | keyword reset (`0x800`) | uid ranges whose keywords are all cleared |
//! | extension atomic increment (`0x1000`) | uid and a signed difference to the introduced extension's number |
//! | expunge with GUID (`0x2000`) | uid and its GUID, 20 bytes |
//! | boundary (`0x80000`) | the size of the transaction it begins |
//!
//! Expunges carry the protection bits `0xcd90` in their type (a type without them is damage);
//! `0x10000000` (the change was the backend's own) and `0x20000000` (it came from dsync) say where a
//! change came from and are ignored, as are the types this reader has no use for (extension header
//! updates, modseq updates, the index's deletion, attributes), skipped by their size. A
//! transaction whose boundary reaches past the file's end is unfinished: the replay stops before it.

use super::index::{LogPosition, MESSAGE_FLAGS};
use super::{align, invalid, u16_at, u32_at, Extension, Field, Record, State};

const MAJOR_VERSION: u8 = 1;
/// The fields of the header up to the creation stamp: older logs have no more.
const MIN_HEADER_SIZE: usize = 24;
/// Where the header's compatibility flags are (log format 1.2 and later).
const COMPAT_FLAGS_AT: usize = 32;
const COMPAT_LITTLE_ENDIAN: u8 = 0x01;

const EXPUNGE: u32 = 0x1;
const APPEND: u32 = 0x2;
const FLAG_UPDATE: u32 = 0x4;
const HEADER_UPDATE: u32 = 0x20;
const EXT_INTRO: u32 = 0x40;
const EXT_RESET: u32 = 0x80;
const EXT_HDR_UPDATE: u32 = 0x100;
const EXT_REC_UPDATE: u32 = 0x200;
const KEYWORD_UPDATE: u32 = 0x400;
const KEYWORD_RESET: u32 = 0x800;
const EXT_ATOMIC_INC: u32 = 0x1000;
const EXPUNGE_GUID: u32 = 0x2000;
const EXT_HDR_UPDATE32: u32 = 0x10000;
const BOUNDARY: u32 = 0x80000;
/// The bits of a record's type that say what it is.
const TYPE_MASK: u32 = 0x0fff_ffff;
/// What an expunge's type must also carry.
const EXPUNGE_PROTECTION: u32 = 0xcd90;
/// The types that act on the extension last introduced.
const EXT_TYPES: u32 = EXT_INTRO | EXT_RESET | EXT_HDR_UPDATE | EXT_HDR_UPDATE32 | EXT_REC_UPDATE | EXT_ATOMIC_INC;

/// `struct mail_transaction_ext_intro`, without its name.
const EXT_INTRO_SIZE: usize = 20;

/// One log file, its header read.
struct LogFile<'a> {
    bytes: &'a [u8],
    header_size: usize,
    indexid: u32,
    file_seq: u32,
}

impl<'a> LogFile<'a> {
    fn parse(bytes: &'a [u8]) -> std::io::Result<LogFile<'a>> {
        let damaged = || invalid("a damaged Dovecot index log: its header");
        if bytes.len() < MIN_HEADER_SIZE || bytes[0] != MAJOR_VERSION {
            return Err(damaged());
        }
        let header_size = usize::from(u16_at(bytes, 2).unwrap_or(0));
        if header_size < MIN_HEADER_SIZE || header_size > bytes.len() {
            return Err(damaged());
        }
        if header_size > COMPAT_FLAGS_AT && bytes[COMPAT_FLAGS_AT] & COMPAT_LITTLE_ENDIAN == 0 {
            return Err(invalid("a Dovecot index log written big-endian"));
        }
        Ok(LogFile {
            bytes,
            header_size,
            indexid: u32_at(bytes, 4).unwrap_or(0),
            file_seq: u32_at(bytes, 8).unwrap_or(0),
        })
    }
}

/// Replays `logs` onto `state`: with an index, from the position it was written up to (the log of
/// that sequence number from that offset, later ones whole, earlier ones and those of another index
/// id not at all); without one, every log of the newest one's index id, oldest first.
pub(super) fn replay(state: &mut State, from: Option<LogPosition>, logs: &[&[u8]]) -> std::io::Result<()> {
    let mut files = logs.iter().map(|bytes| LogFile::parse(bytes)).collect::<std::io::Result<Vec<_>>>()?;
    files.sort_by_key(|f| f.file_seq);
    files.dedup_by_key(|f| f.file_seq);
    if from.is_none() {
        state.indexid = files.last().map_or(0, |f| f.indexid);
    }
    let indexid = state.indexid;
    for file in files.iter().filter(|f| f.indexid == indexid) {
        let start = match from {
            None => file.header_size,
            Some(at) if file.file_seq < at.file_seq => continue,
            Some(at) if file.file_seq == at.file_seq => {
                let offset = at.offset as usize;
                if offset < file.header_size || offset > file.bytes.len() {
                    // The index names a place the log does not have: what the index says stands.
                    continue;
                }
                offset
            }
            Some(_) => file.header_size,
        };
        replay_file(state, file.bytes, start)?;
    }
    Ok(())
}

/// The record size `mail_index_uint32_to_offset` stored: `None` if it is not such a number.
fn record_size(stored: u32) -> Option<usize> {
    if stored & 0x8080_8080 != 0x8080_8080 {
        return None;
    }
    let size = ((stored & 0x0000_007f) << 21)
        | ((stored & 0x0000_7f00) << 6)
        | ((stored & 0x007f_0000) >> 9)
        | ((stored & 0x7f00_0000) >> 24);
    Some((size as usize) << 2)
}

/// The extension the records that follow an intro act on.
#[derive(Debug, Clone, Copy)]
struct Introduced {
    /// Its place in [`State::extensions`].
    index: usize,
    /// The size of its record data in the records that follow.
    record_size: usize,
    /// Its reset id differs from the intro's: updates are for data since reset, and ignored.
    stale: bool,
}

/// Replays the records of one log from `start` on, up to its end or the first damage.
fn replay_file(state: &mut State, bytes: &[u8], start: usize) -> std::io::Result<()> {
    let mut at = start;
    let mut introduced: Option<Introduced> = None;
    while let (Some(stored), Some(kind)) = (u32_at(bytes, at), u32_at(bytes, at + 4)) {
        let Some(size) = record_size(stored).filter(|&s| s >= 8) else { break };
        let Some(data) = at.checked_add(size).and_then(|end| bytes.get(at + 8..end)) else { break };
        state.work(1)?;
        let mut kind = kind & TYPE_MASK;
        if kind & (EXPUNGE | EXPUNGE_GUID) != 0 {
            if kind & EXPUNGE_PROTECTION != EXPUNGE_PROTECTION {
                // An expunge without its protection: damage, not acted on.
                at += size;
                continue;
            }
            kind &= !EXPUNGE_PROTECTION;
        }
        if kind & EXT_TYPES == 0 {
            introduced = None;
        }
        match kind {
            BOUNDARY => {
                let whole = u32_at(data, 0).unwrap_or(0) as usize;
                if at.checked_add(whole).is_none_or(|end| end > bytes.len()) {
                    // A transaction not yet (or never) written whole.
                    break;
                }
            }
            EXPUNGE => {
                for range in data.chunks_exact(8) {
                    state.expunge(word(range, 0), word(range, 4))?;
                }
            }
            EXPUNGE_GUID => {
                for entry in data.chunks_exact(20) {
                    state.expunge(word(entry, 0), word(entry, 0))?;
                }
            }
            APPEND => {
                for entry in data.chunks_exact(8) {
                    let uid = word(entry, 0);
                    // Dovecot gives uids in order: an append below the next uid is damage.
                    if uid == 0 || uid < state.next_uid() {
                        continue;
                    }
                    state.insert(uid, Record { flags: entry[4] & MESSAGE_FLAGS, ..Record::default() })?;
                    state.set_next_uid(uid.saturating_add(1));
                }
            }
            FLAG_UPDATE => {
                for entry in data.chunks_exact(12) {
                    let (add, remove) = (entry[8] & MESSAGE_FLAGS, entry[9]);
                    state.each_in(word(entry, 0), word(entry, 4), |r| r.flags = (r.flags & !remove) | add)?;
                }
            }
            HEADER_UPDATE => header_updates(state, data),
            EXT_INTRO => introduced = intros(state, data),
            EXT_RESET => ext_reset(state, introduced, data),
            EXT_REC_UPDATE => ext_record_updates(state, introduced, data)?,
            EXT_ATOMIC_INC => ext_increments(state, introduced, data)?,
            KEYWORD_UPDATE => keyword_update(state, data)?,
            KEYWORD_RESET => {
                for range in data.chunks_exact(8) {
                    state.each_in(word(range, 0), word(range, 4), |r| r.keywords.clear())?;
                }
            }
            _ => {}
        }
        at += size;
    }
    Ok(())
}

/// The `u32` at `at` of a slice known to hold it.
fn word(bytes: &[u8], at: usize) -> u32 {
    u32_at(bytes, at).unwrap_or(0)
}

/// Header updates: bytes written into the base header (those reaching past it are damage, left
/// out). The next uid never goes back.
fn header_updates(state: &mut State, data: &[u8]) {
    let mut at = 0;
    while let (Some(offset), Some(size)) = (u16_at(data, at), u16_at(data, at + 2)) {
        let (offset, size) = (usize::from(offset), usize::from(size));
        let Some(bytes) = data.get(at + 4..at + 4 + size) else { break };
        if offset + size <= state.base.len() {
            let next_uid = state.next_uid();
            state.base[offset..offset + size].copy_from_slice(bytes);
            if state.next_uid() < next_uid {
                state.set_next_uid(next_uid);
            }
        }
        let Some(next) = align(at + 4 + size, 4) else { break };
        at = next;
    }
}

/// Extension intros (a record may hold several): the extension the next records act on, the last
/// one's; `None` when it is damaged or unknown.
fn intros(state: &mut State, data: &[u8]) -> Option<Introduced> {
    let mut introduced = None;
    let mut at = 0;
    while at + EXT_INTRO_SIZE <= data.len() {
        let ext_id = word(data, at);
        let reset_id = word(data, at + 4);
        let record_size = usize::from(u16_at(data, at + 12).unwrap_or(0));
        let name_size = usize::from(u16_at(data, at + 18).unwrap_or(0));
        let name = data.get(at + EXT_INTRO_SIZE..at + EXT_INTRO_SIZE + name_size)?;
        introduced = intro(state, ext_id, reset_id, record_size, &String::from_utf8_lossy(name));
        let next = align(at + EXT_INTRO_SIZE + name_size, 4)?;
        at = next;
    }
    introduced
}

/// One extension intro: by its number among those known, or (number `u32::MAX`) by its name,
/// known from now on if it was not.
fn intro(state: &mut State, ext_id: u32, reset_id: u32, record_size: usize, name: &str) -> Option<Introduced> {
    let index = if ext_id != u32::MAX {
        usize::try_from(ext_id).ok().filter(|&i| i < state.extensions.len())?
    } else if name.is_empty() || name == "keywords" {
        // Dovecot keeps the keywords' extension itself: an intro of it is damage.
        return None;
    } else if let Some(i) = state.extensions.iter().position(|e| e.name == name) {
        i
    } else {
        if state.extensions.len() >= u16::MAX as usize {
            return None;
        }
        let field = Field::named(name);
        state.extensions.push(Extension { name: name.to_string(), reset_id, field });
        state.extensions.len() - 1
    };
    let stale = state.extensions[index].reset_id != reset_id;
    Some(Introduced { index, record_size, stale })
}

/// An extension reset: a new reset id, and unless the data is kept, every message's data of it
/// void.
fn ext_reset(state: &mut State, introduced: Option<Introduced>, data: &[u8]) {
    let (Some(current), Some(new_reset_id), Some(&preserve)) = (introduced, u32_at(data, 0), data.get(4)) else {
        return;
    };
    let extension = &mut state.extensions[current.index];
    extension.reset_id = new_reset_id;
    if let (Some(field), 0) = (extension.field, preserve) {
        state.reset_field(field);
    }
}

/// Record updates of the introduced extension: a uid and its data, each padded to 4.
fn ext_record_updates(state: &mut State, introduced: Option<Introduced>, data: &[u8]) -> std::io::Result<()> {
    let Some(current) = introduced.filter(|c| !c.stale) else { return Ok(()) };
    let Some(field) = state.extensions[current.index].field else { return Ok(()) };
    let Some(entry_size) = align(4 + current.record_size, 4) else { return Ok(()) };
    let next_uid = state.next_uid();
    for entry in data.chunks_exact(entry_size) {
        let uid = word(entry, 0);
        if uid == 0 || uid >= next_uid {
            continue;
        }
        state.work(1)?;
        if let Some(record) = state.records.get_mut(&uid) {
            State::set_field(&state.generations, record, field, &entry[4..4 + current.record_size]);
        }
    }
    Ok(())
}

/// Atomic increments of the introduced extension's number: a uid and a signed difference. Only
/// mdbox's reference counts are kept; a change that would take one below 0 or past its size is
/// damage, left out, as Dovecot leaves it.
fn ext_increments(state: &mut State, introduced: Option<Introduced>, data: &[u8]) -> std::io::Result<()> {
    let Some(current) = introduced.filter(|c| !c.stale && c.record_size == 2) else { return Ok(()) };
    if state.extensions[current.index].field != Some(Field::Refcount) {
        return Ok(());
    }
    let next_uid = state.next_uid();
    for entry in data.chunks_exact(8) {
        let (uid, diff) = (word(entry, 0), word(entry, 4) as i32);
        if uid == 0 || uid >= next_uid {
            continue;
        }
        state.work(1)?;
        let Some(record) = state.records.get(&uid) else { continue };
        let old = state.current(Field::Refcount, record.refcount).unwrap_or(0);
        let Ok(new) = u16::try_from(i64::from(old) + i64::from(diff)) else { continue };
        if let Some(record) = state.records.get_mut(&uid) {
            State::set_field(&state.generations, record, Field::Refcount, &new.to_le_bytes());
        }
    }
    Ok(())
}

/// A keyword added to or removed from ranges of uids.
fn keyword_update(state: &mut State, data: &[u8]) -> std::io::Result<()> {
    let (Some(&modify), Some(name_size)) = (data.first(), u16_at(data, 2)) else { return Ok(()) };
    let name_end = 4 + usize::from(name_size);
    let Some(name) = data.get(4..name_end).filter(|n| !n.is_empty()) else { return Ok(()) };
    let Some(ranges) = align(name_end, 4).and_then(|at| data.get(at..)) else { return Ok(()) };
    let add = match modify {
        0 => true,
        1 => false,
        _ => return Ok(()),
    };
    let Some(id) = state.keyword_id(&String::from_utf8_lossy(name)) else { return Ok(()) };
    for range in ranges.chunks_exact(8) {
        state.each_in(word(range, 0), word(range, 4), |r| {
            if add {
                r.keywords.insert(id);
            } else {
                r.keywords.remove(&id);
            }
        })?;
    }
    Ok(())
}

#[cfg(test)]
pub(super) fn stored_size(size: u32) -> u32 {
    let size = size >> 2;
    0x8080_8080
        | ((size & 0x7f) << 24)
        | ((size & 0x3f80) >> 7 << 16)
        | ((size & 0x1f_c000) >> 14 << 8)
        | ((size & 0x0fe0_0000) >> 21)
}
