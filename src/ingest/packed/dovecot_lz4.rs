//! Dovecot's own LZ4 files: what its `zlib` plugin writes for each message of a Maildir or dbox
//! when `zlib_save = lz4`. Not the LZ4 frame format of the `lz4` tool but a header of its own
//! ([`MAGIC`], then the largest chunk's inflated size, four bytes big-endian) and chunks, each
//! four bytes big-endian giving its packed length and an LZ4 block that inflates to at most that
//! size. A chunk is read whole and inflated into a buffer of the size the header gave, which is
//! bounded ([`MAX_CHUNK`]), as Dovecot's own reader bounds it.

use std::io::{ErrorKind, Read};

use crate::ingest::{invalid, read_up_to};

/// The first bytes of every such file.
pub(super) const MAGIC: &[u8] = b"Dovecot-LZ4\x0d\x2a\x9b\xc5";

/// The largest chunk read: Dovecot writes chunks of 64 KiB and refuses any over 8 MiB.
const MAX_CHUNK: usize = 8 << 20;

/// A reader of what a Dovecot LZ4 file holds, inflated chunk by chunk.
pub(super) struct DovecotLz4<R> {
    inner: R,
    /// The largest inflated chunk, from the header; `None` until it is read.
    max_chunk: Option<usize>,
    packed: Vec<u8>,
    chunk: Vec<u8>,
    /// How much of `chunk` the last chunk inflated to (the buffer is kept at the largest chunk's
    /// size, allocated once: a file of chunks that inflate to nothing costs no more than its bytes).
    end: usize,
    /// How far into `chunk` has been read out.
    at: usize,
}

impl<R: Read> DovecotLz4<R> {
    pub(super) fn new(inner: R) -> DovecotLz4<R> {
        DovecotLz4 { inner, max_chunk: None, packed: Vec::new(), chunk: Vec::new(), end: 0, at: 0 }
    }

    /// Reads the header: the magic and the largest chunk's size, which must be one Dovecot reads.
    fn header(&mut self) -> std::io::Result<usize> {
        let mut head = [0u8; MAGIC.len() + 4];
        self.inner.read_exact(&mut head)?;
        if !head.starts_with(MAGIC) {
            return Err(invalid("not a Dovecot LZ4 file"));
        }
        let max = u32::from_be_bytes([head[15], head[16], head[17], head[18]]);
        match usize::try_from(max) {
            Ok(max) if max > 0 && max <= MAX_CHUNK => Ok(max),
            _ => Err(invalid("a Dovecot LZ4 file announces chunks larger than are read")),
        }
    }

    /// Reads and inflates the next chunk; false at the end of the file.
    fn next_chunk(&mut self, max: usize) -> std::io::Result<bool> {
        let mut length = [0u8; 4];
        match read_up_to(&mut self.inner, &mut length)? {
            0 => return Ok(false),
            4 => {}
            _ => return Err(std::io::Error::new(ErrorKind::UnexpectedEof, "a Dovecot LZ4 file cut short")),
        }
        let length = usize::try_from(u32::from_be_bytes(length)).unwrap_or(usize::MAX);
        if length == 0 || length > lz4_flex::block::get_maximum_output_size(max) {
            return Err(invalid("a Dovecot LZ4 chunk longer than its largest chunk packs to"));
        }
        self.packed.resize(length, 0);
        self.inner.read_exact(&mut self.packed)?;
        if self.chunk.len() != max {
            self.chunk.resize(max, 0);
        }
        self.end = lz4_flex::block::decompress_into(&self.packed, &mut self.chunk)
            .map_err(|e| invalid(&format!("a damaged Dovecot LZ4 chunk: {e}")))?;
        self.at = 0;
        Ok(true)
    }
}

impl<R: Read> Read for DovecotLz4<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let max = match self.max_chunk {
            Some(max) => max,
            None => {
                let max = self.header()?;
                self.max_chunk = Some(max);
                max
            }
        };
        while self.at >= self.end {
            if !self.next_chunk(max)? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.end - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `text` as Dovecot writes it, in chunks of `chunk` bytes.
    pub(crate) fn packed(text: &[u8], chunk: usize) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&u32::try_from(chunk).expect("small").to_be_bytes());
        for piece in text.chunks(chunk) {
            let block = lz4_flex::block::compress(piece);
            out.extend_from_slice(&u32::try_from(block.len()).expect("small").to_be_bytes());
            out.extend_from_slice(&block);
        }
        out
    }

    fn read(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        DovecotLz4::new(bytes).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn chunks_are_read_in_order() {
        let text: Vec<u8> = (0..20_000u32).flat_map(|n| format!("{n} ").into_bytes()).collect();
        assert_eq!(read(&packed(&text, 65_536)).expect("read"), text);
        assert_eq!(read(&packed(&text, 100)).expect("read"), text);
        assert_eq!(read(&packed(b"", 65_536)).expect("read"), b"", "no chunk at all");
    }

    /// A file of many chunks that each inflate to nothing is read in time proportional to its
    /// bytes (the buffer is not filled again for each chunk).
    #[test]
    fn empty_chunks_cost_only_their_bytes() {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&(8u32 << 20).to_be_bytes());
        let empty = lz4_flex::block::compress(b"");
        for _ in 0..200_000 {
            bytes.extend_from_slice(&u32::try_from(empty.len()).expect("small").to_be_bytes());
            bytes.extend_from_slice(&empty);
        }
        bytes.extend_from_slice(&u32::try_from(lz4_flex::block::compress(b"end").len()).expect("small").to_be_bytes());
        bytes.extend_from_slice(&lz4_flex::block::compress(b"end"));
        assert_eq!(read(&bytes).expect("read"), b"end");
    }

    #[test]
    fn damage_is_an_error_never_a_panic() {
        let good = packed(&b"a line of text\n".repeat(1000), 4096);
        let mut huge = good.clone();
        huge[15..19].copy_from_slice(&u32::MAX.to_be_bytes());
        let mut long = good.clone();
        long[19..23].copy_from_slice(&u32::MAX.to_be_bytes());
        let mut noise = good.clone();
        for b in noise.iter_mut().skip(23).step_by(3) {
            *b ^= 0x5a;
        }
        for (name, bytes) in [
            ("cut in the header", &good[..10]),
            ("cut in a chunk's length", &good[..21]),
            ("cut in a chunk", &good[..good.len() - 3]),
            ("chunks said to inflate to 4 GiB", &huge[..]),
            ("a chunk said to be 4 GiB long", &long[..]),
            ("a chunk of noise", &noise[..]),
            ("no magic", b"Dovecot-LZ5\x0d\x2a\x9b\xc5\0\0\x10\0"),
        ] {
            assert!(read(bytes).is_err(), "{name}");
        }
    }
}
