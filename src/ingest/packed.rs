//! Message files kept compressed: Dovecot's `zlib` plugin writes each Maildir file as gzip or
//! zstd, and a single message is often kept as `.eml.gz`. Such a file is told by its first bytes
//! (never by its name) and read through the decompressor, within the same `--max-message` as any
//! message, so the message it holds is what is indexed, shown and served by `/raw/`. What it
//! inflates to is bounded: past the limit the rest is only counted, and only so far
//! ([`MAX_COUNTED_PAST`]), so a small file that inflates without end costs a bounded time.
//! An mbox kept compressed is not read (each message opened would inflate the file up to it).

use std::io::Read;

use super::{reserve, Given};

/// How a file is compressed, by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Gzip,
    Zstd,
}

/// Bytes past `--max-message` that are inflated only to count the message's whole size; a
/// message said to be at least that large when there is more.
pub(crate) const MAX_COUNTED_PAST: u64 = 1 << 30;

/// The largest window a zstd frame may ask for (16 MiB): what `zstd -19` and Dovecot write fits;
/// a frame asking for more (up to 2 GiB in the format) is refused rather than allocated.
const ZSTD_WINDOW_LOG_MAX: u32 = 24;

/// The packing a file's first bytes announce, if any.
pub fn packing(head: &[u8]) -> Option<Packing> {
    if head.starts_with(&[0x1f, 0x8b, 0x08]) {
        Some(Packing::Gzip)
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some(Packing::Zstd)
    } else {
        None
    }
}

/// A reader of what `packed` holds, inflated.
fn unpacking<'a>(packed: impl Read + 'a, packing: Packing) -> std::io::Result<Box<dyn Read + 'a>> {
    Ok(match packing {
        // Several members one after another are one stream (`cat a.gz b.gz`, as gunzip reads them).
        Packing::Gzip => Box::new(flate2::read::MultiGzDecoder::new(packed)),
        Packing::Zstd => {
            let mut decoder = zstd::stream::read::Decoder::new(packed)?;
            decoder.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
            Box::new(decoder)
        }
    })
}

/// The first `n` bytes (or fewer) of what `packed` holds: enough to tell what it is.
pub fn unpacked_head(packed: impl Read, packing: Packing, n: usize) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    reserve(&mut head, n)?;
    unpacking(packed, packing)?.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// The message `packed` holds, at most `limit` bytes of it; when it holds more, its whole size as
/// far as counted. A stream damaged partway gives what inflated before the damage (logged), as
/// a file cut short gives what it holds.
pub fn read_unpacked(packed: impl Read, packing: Packing, limit: usize) -> std::io::Result<Given> {
    let mut inflated = unpacking(packed, packing)?;
    let mut bytes = Vec::new();
    // Room grows as the message does: its size is not known before it is inflated.
    reserve(&mut bytes, limit.min(64 * 1024))?;
    let read = (&mut inflated).take(limit as u64 + 1).read_to_end(&mut bytes);
    match read {
        Ok(_) => {}
        // What inflated before the damage is the message as far as it goes.
        Err(e) if !bytes.is_empty() && e.kind() != std::io::ErrorKind::OutOfMemory => {
            tracing::warn!(error = %e, "a compressed message ends in damage: read as far as it goes");
            return Ok(Given::whole(bytes));
        }
        Err(e) => return Err(e),
    }
    if bytes.len() <= limit {
        return Ok(Given::whole(bytes));
    }
    bytes.truncate(limit);
    let past = std::io::copy(&mut inflated.take(MAX_COUNTED_PAST), &mut std::io::sink()).unwrap_or(0);
    Ok(Given { bytes, cut_from: Some(limit as u64 + 1 + past) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const MESSAGE: &[u8] = b"From: a@example.org\nSubject: packed\n\nbody words\n";

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).expect("write");
        e.finish().expect("finish")
    }

    #[test]
    fn compressed_messages_are_read_as_the_message_they_hold() {
        let zstd = zstd::encode_all(MESSAGE, 3).expect("zstd");
        let two_members = [gzip(&MESSAGE[..10]), gzip(&MESSAGE[10..])].concat();
        for (name, packed, want) in [
            ("gzip", gzip(MESSAGE), Packing::Gzip),
            ("zstd", zstd, Packing::Zstd),
            ("gzip members", two_members, Packing::Gzip),
        ] {
            assert_eq!(packing(&packed), Some(want), "{name}");
            let given = read_unpacked(&packed[..], want, 1 << 20).expect(name);
            assert_eq!(given.bytes, MESSAGE, "{name}");
            assert_eq!(given.cut_from, None, "{name}");
            assert_eq!(unpacked_head(&packed[..], want, 10).expect(name), &MESSAGE[..10], "{name}");
        }
        assert_eq!(packing(MESSAGE), None);
        assert_eq!(packing(b"\x1f\x8b"), None, "too short to say");
    }

    #[test]
    fn what_a_compressed_file_inflates_to_is_bounded() {
        let zeros = gzip(&vec![0u8; 8 << 20]);
        let given = read_unpacked(&zeros[..], Packing::Gzip, 1 << 20).expect("read");
        assert_eq!(given.bytes.len(), 1 << 20);
        assert_eq!(given.cut_from, Some(8 << 20), "the whole size, counted");
        // Damaged after a good start: what inflated is kept.
        let mut damaged = gzip(&[MESSAGE; 2000].concat());
        let half = damaged.len() / 2;
        damaged.truncate(half);
        let given = read_unpacked(&damaged[..], Packing::Gzip, 1 << 20).expect("read");
        assert!(given.bytes.starts_with(MESSAGE));
        // Not compressed at all past its magic: an error, not a panic.
        assert!(read_unpacked(&b"\x1f\x8b\x08garbage"[..], Packing::Gzip, 100).is_err());
    }
}
