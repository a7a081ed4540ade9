//! `dovecot.index` (and mdbox's `dovecot.map.index`), as Dovecot 2.3 writes it (major version 7):
//! a base header (`struct mail_index_header`: versions, the base header's and the whole header's
//! sizes, the record size, compatibility flags telling the byte order, the index id, the uid
//! validity, the next uid, the message count, and the log file and offset it was written up to),
//! then the extensions' headers up to the header's size, each `struct mail_index_ext_header`
//! (its header data's size, reset id, record offset, record size, record alignment and name
//! size), its name, padding to 8 bytes, and its header data padded to 8 bytes; then one record a
//! message, of the record size: the uid (`u32`), the flags (`u8`), and each extension's data at
//! its record offset. The `keywords` extension's header lists the keywords' names (a count, a
//! `u32` pair a keyword the second of which is where its name begins, then the names, each ended
//! by a NUL); its record data is a bit a keyword.

use super::{align, invalid, u16_at, u32_at, Extension, Field, Record, State, BASE_HEADER_SIZE};

/// The major version of the index files this reader knows.
const MAJOR_VERSION: u8 = 7;
/// `MAIL_INDEX_COMPAT_LITTLE_ENDIAN`.
const COMPAT_LITTLE_ENDIAN: u8 = 0x01;
/// The smallest base header Dovecot accepts (the fields up to the log offsets).
const MIN_BASE_HEADER_SIZE: usize = 72;
/// `struct mail_index_ext_header`.
const EXT_HEADER_SIZE: usize = 16;
/// The flags Dovecot keeps in a record's flag byte that are the message's own (the rest are its
/// bookkeeping).
pub(super) const MESSAGE_FLAGS: u8 = 0x1f;

/// Where in the logs a `dovecot.index` was written up to: the file's sequence number and the
/// offset of the first change it does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LogPosition {
    pub file_seq: u32,
    pub offset: u32,
}

/// The state `bytes` hold, and where in the logs to go on from.
pub(super) fn read(bytes: &[u8]) -> std::io::Result<(State, LogPosition)> {
    let damaged = |what: &str| invalid(&format!("a damaged Dovecot index file: {what}"));
    if bytes.len() < MIN_BASE_HEADER_SIZE {
        return Err(damaged("shorter than its header"));
    }
    if bytes[0] != MAJOR_VERSION {
        return Err(damaged("not of major version 7"));
    }
    let base_size = usize::from(u16_at(bytes, 2).unwrap_or(0));
    let header_size = u32_at(bytes, 4).map_or(usize::MAX, |s| s as usize);
    let record_size = u32_at(bytes, 8).map_or(0, |s| s as usize);
    if bytes[12] & COMPAT_LITTLE_ENDIAN == 0 {
        return Err(invalid("a Dovecot index file written big-endian"));
    }
    if base_size < MIN_BASE_HEADER_SIZE || base_size > header_size || header_size > bytes.len() {
        return Err(damaged("header sizes"));
    }
    if record_size < 8 {
        return Err(damaged("record size"));
    }
    let mut state = State::empty();
    let kept = base_size.min(BASE_HEADER_SIZE);
    state.base[..kept].copy_from_slice(&bytes[..kept]);
    state.indexid = u32_at(bytes, 16).unwrap_or(0);
    let messages = u32_at(bytes, 32).unwrap_or(0) as usize;
    let from = LogPosition { file_seq: u32_at(bytes, 60).unwrap_or(0), offset: u32_at(bytes, 68).unwrap_or(0) };

    let extensions = extensions(bytes, base_size, header_size)?;
    let mut keywords_at = None;
    // The keyword each bit of a record's keyword data stands for.
    let mut keyword_bits = Vec::new();
    let mut fields = Vec::new();
    for ext in &extensions {
        let in_record = ext.record_offset + ext.record_size <= record_size && ext.record_offset >= 5;
        if ext.name == "keywords" {
            keyword_bits =
                keyword_names(&bytes[ext.header.clone()]).iter().filter_map(|name| state.keyword_id(name)).collect();
            if in_record && ext.record_size > 0 {
                keywords_at = Some(ext.record_offset..ext.record_offset + ext.record_size);
            }
        } else if let Some(field) = Field::named(&ext.name).filter(|_| in_record && ext.record_size > 0) {
            fields.push((field, ext.record_offset..ext.record_offset + ext.record_size));
        }
        let field = Field::named(&ext.name);
        state.extensions.push(Extension { name: ext.name.clone(), reset_id: ext.reset_id, field });
    }

    let records_len = messages.checked_mul(record_size).ok_or_else(|| damaged("message count"))?;
    let records = bytes
        .get(header_size..)
        .and_then(|r| r.get(..records_len))
        .ok_or_else(|| damaged("fewer records than its message count"))?;
    for record in records.chunks_exact(record_size) {
        let uid = u32_at(record, 0).unwrap_or(0);
        if uid == 0 {
            return Err(damaged("a record of uid 0"));
        }
        let mut read = Record { flags: record[4] & MESSAGE_FLAGS, ..Record::default() };
        if let Some(at) = &keywords_at {
            for (byte_index, &byte) in record[at.clone()].iter().enumerate() {
                for bit in (0..8).filter(|bit| byte & (1 << bit) != 0) {
                    if let Some(&id) = keyword_bits.get(byte_index * 8 + bit) {
                        read.keywords.insert(id);
                    }
                }
            }
        }
        for (field, at) in &fields {
            State::set_field(&state.generations, &mut read, *field, &record[at.clone()]);
        }
        state.insert(uid, read)?;
        if uid >= state.next_uid() {
            state.set_next_uid(uid.saturating_add(1));
        }
    }
    Ok((state, from))
}

/// One extension as the index file's header describes it.
struct ExtensionHeader {
    name: String,
    reset_id: u32,
    record_offset: usize,
    record_size: usize,
    /// Where its header data lies in the file.
    header: std::ops::Range<usize>,
}

/// The extensions the header lists between the base header and `header_size`.
fn extensions(bytes: &[u8], base_size: usize, header_size: usize) -> std::io::Result<Vec<ExtensionHeader>> {
    let damaged = || invalid("a damaged Dovecot index file: an extension's header");
    let mut found = Vec::new();
    let mut at = align(base_size, 8).ok_or_else(damaged)?;
    while at < header_size {
        if at + EXT_HEADER_SIZE > header_size {
            return Err(damaged());
        }
        let hdr_size = u32_at(bytes, at).unwrap_or(0) as usize;
        let reset_id = u32_at(bytes, at + 4).unwrap_or(0);
        let record_offset = usize::from(u16_at(bytes, at + 8).unwrap_or(0));
        let record_size = usize::from(u16_at(bytes, at + 10).unwrap_or(0));
        let name_size = usize::from(u16_at(bytes, at + 14).unwrap_or(0));
        let name_at = at + EXT_HEADER_SIZE;
        let name = bytes.get(name_at..name_at + name_size).filter(|_| name_at + name_size <= header_size);
        let name = name.ok_or_else(damaged)?;
        let data_at = align(name_at + name_size, 8).ok_or_else(damaged)?;
        let data_end = data_at.checked_add(hdr_size).filter(|&end| end <= header_size).ok_or_else(damaged)?;
        found.push(ExtensionHeader {
            name: String::from_utf8_lossy(name).into_owned(),
            reset_id,
            record_offset,
            record_size,
            header: data_at..data_end,
        });
        at = align(data_end, 8).ok_or_else(damaged)?;
    }
    Ok(found)
}

/// The keywords' names the `keywords` extension's header lists, in their order; a damaged list
/// gives the names before the damage.
fn keyword_names(header: &[u8]) -> Vec<String> {
    let count = u32_at(header, 0).unwrap_or(0) as usize;
    // Each keyword takes 8 bytes of the list, and at least a NUL among the names.
    let count = count.min(header.len() / 9);
    let names_at = 4 + count * 8;
    let names = header.get(names_at..).unwrap_or(&[]);
    let mut found = Vec::with_capacity(count);
    for i in 0..count {
        let Some(offset) = u32_at(header, 4 + i * 8 + 4) else { break };
        let Some(rest) = names.get(offset as usize..) else { break };
        let Some(end) = rest.iter().position(|&b| b == 0) else { break };
        found.push(String::from_utf8_lossy(&rest[..end]).into_owned());
    }
    found
}
