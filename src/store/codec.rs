//! How index entries are stored: each value is one tag byte and the entry's bytes, either as they
//! are or compressed with zstd against a dictionary trained on the archive's own first entries.
//! An entry is a few hundred bytes of Message-IDs, names, subjects and paths that repeat across
//! messages but hardly within one, so compressing each alone gains little (5 %) and compressing
//! against a dictionary of what they share gains about half — a tenth of the whole index at a
//! million messages, with a microsecond to read one back.
//!
//! The dictionary is trained once, from the first commit large enough to learn from, and kept in
//! the store beside the entries; entries written before it stay as they are (tag 0).

use std::sync::Mutex;

/// Tags: the first byte of every stored value.
const RAW: u8 = 0;
const ZSTD_DICT: u8 = 1;

/// Entries to learn from before a dictionary is worth making; smaller commits (an upload, a few
/// new messages) are stored as they are.
pub(super) const TRAIN_MIN: usize = 1_000;
/// At most this many entries are learned from, spread over the commit. Training is the one slow
/// step of a first commit, and the indexer waits for it: on the bench archive, learning from 1,000
/// of a commit's 10,000 entries instead of all of them stores the same bytes (within 0.5 %) for
/// 14 % fewer instructions in the whole cold index of 5,000 messages (500 would store 2 % more).
const TRAIN_MAX: usize = 1_000;
/// The dictionary's size: what the entries of an archive share fits in it.
const DICT_BYTES: usize = 64 * 1024;
/// zstd's default level: most of the gain of higher ones, at a fraction of their time.
const LEVEL: i32 = 3;
/// No entry decompresses to more than this (a damaged value claiming more is unreadable).
const MAX_ENTRY: usize = 16 << 20;

/// Compresses and decompresses entries; shared by every thread reading the store.
#[derive(Default)]
pub(super) struct Codec {
    dict: Option<Vec<u8>>,
    compressor: Mutex<Option<zstd::bulk::Compressor<'static>>>,
    /// Decompression contexts ready for use (each holds the loaded dictionary).
    decompressors: Mutex<Vec<zstd::bulk::Decompressor<'static>>>,
}

impl Codec {
    /// A codec with the dictionary stored beside the entries, or none yet.
    pub(super) fn new(dict: Option<Vec<u8>>) -> Codec {
        let compressor = dict.as_deref().and_then(|d| zstd::bulk::Compressor::with_dictionary(LEVEL, d).ok());
        // A dictionary zstd refuses leaves the codec without one: entries stored with it become
        // unreadable, and are read again from their sources.
        let dict = if compressor.is_some() { dict } else { None };
        Codec { dict, compressor: Mutex::new(compressor), decompressors: Mutex::new(Vec::new()) }
    }

    /// A dictionary learned from `samples` (encoded entries), when there are enough of them.
    pub(super) fn train(samples: &[&[u8]]) -> Option<Vec<u8>> {
        if samples.len() < TRAIN_MIN {
            return None;
        }
        let step = samples.len().div_ceil(TRAIN_MAX);
        let picked: Vec<&[u8]> = samples.iter().step_by(step).copied().collect();
        zstd::dict::from_samples(&picked, DICT_BYTES).ok()
    }

    pub(super) fn has_dictionary(&self) -> bool {
        self.dict.is_some()
    }

    pub(super) fn dictionary(&self) -> Option<&[u8]> {
        self.dict.as_deref()
    }

    /// The stored form of an entry's bytes.
    pub(super) fn pack(&self, bytes: &[u8]) -> Vec<u8> {
        let mut compressor = self.compressor.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = compressor.as_mut() {
            if let Ok(packed) = c.compress(bytes) {
                let mut out = Vec::with_capacity(packed.len() + 1);
                out.push(ZSTD_DICT);
                out.extend_from_slice(&packed);
                return out;
            }
        }
        let mut out = Vec::with_capacity(bytes.len() + 1);
        out.push(RAW);
        out.extend_from_slice(bytes);
        out
    }

    /// An entry's bytes from their stored form; `None` when they cannot be read back.
    pub(super) fn unpack<R>(&self, stored: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let (&tag, rest) = stored.split_first()?;
        match tag {
            RAW => Some(f(rest)),
            ZSTD_DICT => {
                let size = zstd::zstd_safe::get_frame_content_size(rest).ok()??;
                let size = usize::try_from(size).ok().filter(|&s| s <= MAX_ENTRY)?;
                let mut d = self.decompressor()?;
                let bytes = d.decompress(rest, size).ok();
                self.decompressors.lock().unwrap_or_else(|e| e.into_inner()).push(d);
                Some(f(&bytes?))
            }
            _ => None,
        }
    }

    fn decompressor(&self) -> Option<zstd::bulk::Decompressor<'static>> {
        let pooled = self.decompressors.lock().unwrap_or_else(|e| e.into_inner()).pop();
        pooled.or_else(|| zstd::bulk::Decompressor::with_dictionary(self.dict.as_deref()?).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                format!(
                    "<{i:08x}.{}@mail.example.org> Re: the quarterly report, part {} \"Alice Example\" \
                     <alice{}@example.org> /archive/lists/team.mbox {}",
                    i * 7919 % 10007,
                    i % 13,
                    i % 97,
                    i * 7800
                )
                .into_bytes()
            })
            .collect()
    }

    #[test]
    fn entries_read_back_before_and_after_a_dictionary() {
        let all = samples(3_000);
        let plain = Codec::new(None);
        let raw: Vec<Vec<u8>> = all.iter().map(|s| plain.pack(s)).collect();
        assert!(raw.iter().all(|r| r[0] == RAW));

        let refs: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
        assert!(Codec::train(&refs[..TRAIN_MIN - 1]).is_none(), "too few to learn from");
        let dict = Codec::train(&refs).expect("a dictionary");
        let codec = Codec::new(Some(dict.clone()));
        assert!(codec.has_dictionary());
        let packed: Vec<Vec<u8>> = all.iter().map(|s| codec.pack(s)).collect();
        let (before, after): (usize, usize) = (all.iter().map(Vec::len).sum(), packed.iter().map(Vec::len).sum());
        assert!(after * 2 < before, "{after} of {before} bytes");

        // A codec opened later with the stored dictionary reads both kinds.
        let reopened = Codec::new(Some(dict));
        for ((s, r), p) in all.iter().zip(&raw).zip(&packed) {
            assert_eq!(reopened.unpack(r, <[u8]>::to_vec).as_ref(), Some(s));
            assert_eq!(reopened.unpack(p, <[u8]>::to_vec).as_ref(), Some(s));
        }
    }

    #[test]
    fn damaged_values_read_as_nothing() {
        let all = samples(2_000);
        let refs: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
        let codec = Codec::new(Codec::train(&refs));
        let good = codec.pack(&all[5]);
        let mut cases: Vec<Vec<u8>> = vec![Vec::new(), vec![9, 1, 2, 3], vec![ZSTD_DICT]];
        for cut in 1..good.len() {
            cases.push(good[..cut].to_vec());
        }
        for at in 1..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x5a;
            cases.push(bad);
        }
        for case in &cases {
            // Anything but a panic; a flipped byte may still decode to something.
            let _ = codec.unpack(case, <[u8]>::to_vec);
        }
        assert_eq!(codec.unpack(&[9, 1, 2, 3], <[u8]>::to_vec), None);
        // Without the dictionary, a compressed value cannot be read.
        assert_eq!(Codec::new(None).unpack(&good, <[u8]>::to_vec), None);
    }
}
