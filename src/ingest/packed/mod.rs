//! Mail kept compressed: Dovecot's `zlib` plugin writes each Maildir file as gzip, bzip2, xz,
//! zstd or LZ4 (a format of its own, [`dovecot_lz4`]), a single message is often kept as `.eml.gz`, and mbox files are kept as `.mbox.gz`,
//! `.mbox.xz`, `.mbox.lz4` or a mailing list's `2024-May.txt.gz`. Such a file is told by its first bytes (never
//! by its name) and read through the decompressor, so the messages it holds are what is indexed,
//! shown and served by `/raw/`. What it inflates to is bounded: a message past `--max-message` is
//! only counted, and only so far ([`MAX_COUNTED_PAST`]); an mbox is read up to
//! [`mbox_bound`]; decoders may ask for at most 16 MiB (zstd) or 64 MiB (xz) of window.
//!
//! A message of a compressed mbox is read back by inflating the file up to it: no format here
//! can be entered in the middle. The places the last reads reached are kept ([`Places`]), with
//! the last 8 MiB inflated before each, so that messages read in order (an export, a folder's
//! thumbnails) cost one pass over the file, and those just before one read (a folder paged
//! through newest first) none.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{reserve, Given};

mod dovecot_lz4;

/// How a file is compressed, by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Gzip,
    Zstd,
    Bzip2,
    Xz,
    /// The LZ4 frame format, as the `lz4` tool writes it.
    Lz4,
    /// Dovecot's own LZ4 format.
    DovecotLz4,
}

/// Bytes past `--max-message` that are inflated only to count the message's whole size; a
/// message said to be at least that large when there is more.
pub(crate) const MAX_COUNTED_PAST: u64 = 1 << 30;

/// The largest window a zstd frame may ask for (16 MiB): what `zstd -19` and Dovecot write fits;
/// a frame asking for more (up to 2 GiB in the format) is refused rather than allocated.
const ZSTD_WINDOW_LOG_MAX: u32 = 24;

/// The most memory an xz stream may ask for, in KiB: the 64 MiB dictionary of `xz -9` and the
/// decoder's own state; a stream asking for more (up to 4 GiB in the format) is refused.
const XZ_MEM_LIMIT_KB: u32 = 65 * 1024;

/// The compression suffixes a file's name may carry over the name of what it holds.
const SUFFIXES: &[&str] = &[".gz", ".zst", ".bz2", ".xz", ".lz4"];

/// The packing a file's first bytes announce, if any.
pub fn packing(head: &[u8]) -> Option<Packing> {
    if head.starts_with(&[0x1f, 0x8b, 0x08]) {
        Some(Packing::Gzip)
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some(Packing::Zstd)
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        Some(Packing::Xz)
    } else if is_bzip2(head) {
        Some(Packing::Bzip2)
    } else if head.starts_with(&[0x04, 0x22, 0x4d, 0x18]) || head.starts_with(&[0x02, 0x21, 0x4c, 0x18]) {
        // A frame, or a file of the format before frames (`lz4 -l`).
        Some(Packing::Lz4)
    } else if head.starts_with(dovecot_lz4::MAGIC) {
        Some(Packing::DovecotLz4)
    } else {
        None
    }
}

/// The packing of the file `file` is, by its first bytes; the file is left at its start.
pub fn packing_of(file: &mut File) -> std::io::Result<Option<Packing>> {
    let mut magic = Vec::with_capacity(16);
    file.take(16).read_to_end(&mut magic)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(packing(&magic))
}

/// `BZh`, the block size (`1` to `9`) and the magic of a first block (the digits of pi) or of the
/// stream's end (of the square root of pi): a text that starts "BZh5" is no bzip2 stream.
fn is_bzip2(head: &[u8]) -> bool {
    const BLOCK: [u8; 6] = [0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
    const END: [u8; 6] = [0x17, 0x72, 0x45, 0x38, 0x50, 0x90];
    head.len() >= 10
        && head.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&head[3])
        && (head[4..10] == BLOCK || head[4..10] == END)
}

/// The name a compressed file's name stands for (`list.mbox.gz` → `list.mbox`); a name without a
/// compression suffix as it is.
pub fn name_beneath(name: &str) -> &str {
    SUFFIXES
        .iter()
        .find_map(|s| {
            let at = name.len().checked_sub(s.len())?;
            (name.is_char_boundary(at) && name[at..].eq_ignore_ascii_case(s) && at > 0).then(|| &name[..at])
        })
        .unwrap_or(name)
}

/// The most an mbox kept compressed is read to: 64 times its compressed size, and at least
/// 1 GiB (mail compresses three to ten times; a file that inflates beyond this is a bomb, and
/// what it held up to here is kept, with a warning).
pub fn mbox_bound(packed_size: u64) -> u64 {
    packed_size.saturating_mul(64).max(1 << 30)
}
/// A reader of what `packed` holds, inflated.
fn unpacking<'a>(packed: impl Read + Send + 'a, packing: Packing) -> std::io::Result<Box<dyn Read + Send + 'a>> {
    Ok(match packing {
        // Several members one after another are one stream (`cat a.gz b.gz`, as gunzip reads them).
        Packing::Gzip => Box::new(flate2::read::MultiGzDecoder::new(packed)),
        Packing::Zstd => {
            let mut decoder = zstd::stream::read::Decoder::new(packed)?;
            decoder.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
            Box::new(decoder)
        }
        // Streams one after another, as bunzip2 and xz read them.
        Packing::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(packed)),
        Packing::Xz => Box::new(lzma_rust2::XzReader::new_mem_limit(packed, true, XZ_MEM_LIMIT_KB)),
        // Frames one after another, as `lz4 -d` reads them; a frame's blocks are at most 4 MiB.
        Packing::Lz4 => Box::new(Lz4Frames::new(packed)),
        Packing::DovecotLz4 => Box::new(dovecot_lz4::DovecotLz4::new(packed)),
    })
}

/// LZ4 frames one after another: the decoder ends at the end of each frame, and a new one reads
/// on while what it reads from has not ended (one decoder reused across frames of different
/// block sizes breaks its own assertions). Each frame costs its block size in zeroed memory
/// however little it holds, so a run of [`MAX_SMALL_FRAMES`] frames that each inflate to less
/// than [`SMALL_FRAME`] ends the stream as damaged.
struct Lz4Frames<R: Read> {
    decoder: Option<lz4_flex::frame::FrameDecoder<Ending<R>>>,
    /// What the current frame has inflated to so far.
    in_frame: usize,
    small_frames: usize,
}

/// A frame that inflates to less than this is small.
const SMALL_FRAME: usize = 64 * 1024;

/// Small frames one after another that end an LZ4 stream (`cat` of that many whole files is
/// not mail; 16 bytes each asking for 4 MiB of zeroed memory is an attack).
const MAX_SMALL_FRAMES: usize = 1024;

impl<R: Read> Lz4Frames<R> {
    fn new(packed: R) -> Self {
        let decoder = lz4_flex::frame::FrameDecoder::new(Ending { inner: packed, ended: false });
        Lz4Frames { decoder: Some(decoder), in_frame: 0, small_frames: 0 }
    }
}

impl<R: Read> Read for Lz4Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let Some(decoder) = self.decoder.as_mut() else { return Ok(0) };
            let n = decoder.read(buf)?;
            self.in_frame += n;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // The end of a frame; the end of the stream when what it reads from has ended.
            let Some(decoder) = self.decoder.take() else { return Ok(0) };
            let inner = decoder.into_inner();
            if inner.ended {
                return Ok(0);
            }
            self.small_frames = if self.in_frame < SMALL_FRAME { self.small_frames + 1 } else { 0 };
            if self.small_frames > MAX_SMALL_FRAMES {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "an LZ4 stream of many frames that hold almost nothing",
                ));
            }
            self.in_frame = 0;
            self.decoder = Some(lz4_flex::frame::FrameDecoder::new(inner));
        }
    }
}

/// A reader that notes when it has come to its end.
struct Ending<R> {
    inner: R,
    ended: bool,
}

impl<R: Read> Read for Ending<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.ended |= n == 0 && !buf.is_empty();
        Ok(n)
    }
}

/// A reader of the mbox `packed` holds (`packed_size` bytes of it), inflated from its start, at
/// most [`mbox_bound`] of it.
pub fn unpacked_mbox<'a>(
    packed: impl Read + Send + 'a,
    packing: Packing,
    packed_size: u64,
) -> std::io::Result<Forward<impl Read + Send + 'a>> {
    Ok(Forward { inner: unpacking(packed, packing)?.take(mbox_bound(packed_size)), at: 0, damaged: false })
}

/// A stream read forward only, which knows how far it has read: of [`Seek`], what an mbox reader
/// asks of its input, it answers where it is and refuses to go elsewhere (`Unsupported`). A
/// stream damaged partway (a download cut short) ends where the damage begins, logged: the
/// messages before it are read, the one it cuts as far as it goes, as in a file cut short.
pub struct Forward<R> {
    inner: R,
    at: u64,
    damaged: bool,
}

impl<R: Read> Read for Forward<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.damaged {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Ok(n) => {
                self.at += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Err(e),
            Err(e) => {
                tracing::warn!(error = %e, at = self.at, "a compressed mbox ends in damage: read as far as it goes");
                self.damaged = true;
                Ok(0)
            }
        }
    }
}

impl<R> Seek for Forward<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        match to {
            SeekFrom::Current(0) => Ok(self.at),
            SeekFrom::Start(at) if at == self.at => Ok(self.at),
            _ => Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "a compressed stream is read forward only")),
        }
    }
}

/// The first `n` bytes (or fewer) of what `packed` holds: enough to tell what it is.
pub fn unpacked_head(packed: impl Read + Send, packing: Packing, n: usize) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    reserve(&mut head, n)?;
    unpacking(packed, packing)?.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// The message `packed` holds, at most `limit` bytes of it; when it holds more, its whole size as
/// far as counted. A stream damaged partway gives what inflated before the damage (logged), as
/// a file cut short gives what it holds.
pub fn read_unpacked(packed: impl Read + Send, packing: Packing, limit: usize) -> std::io::Result<Given> {
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
    Ok(Given { bytes, cut_from: Some(limit as u64 + 1 + past), notices: Vec::new() })
}

/// Reads `want` bytes at `offset` of what `file` (the file at `path`) inflates to: a message of
/// an mbox kept compressed. From the bytes a kept place holds when it holds them (a message just
/// before one read already); else inflated on from the place kept furthest along before
/// `offset`, or from the start.
pub(super) fn read_unpacked_range(
    path: &Path,
    file: File,
    packing: Packing,
    offset: u64,
    want: u64,
) -> std::io::Result<Vec<u8>> {
    let meta = file.metadata()?;
    let key = Key::of(path, &meta);
    let mut place = match PLACES.take(&key, offset, want) {
        Some(place) => place,
        None => Place {
            key,
            reader: Box::new(unpacked_mbox(file, packing, meta.len())?),
            at: 0,
            window: Vec::new(),
            used: Instant::now(),
        },
    };
    let bytes = place.read(offset, want)?;
    PLACES.keep(place);
    Ok(bytes)
}

/// The inflated bytes a place keeps behind where it has read to: the messages just before one
/// read are read from them (a reader paging back through a folder, newest first).
const WINDOW: usize = 8 << 20;

/// What tells one state of a file from another: its path, inode, size and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    path: PathBuf,
    inode: (u64, u64),
    size: u64,
    modified: (i64, i64),
}

impl Key {
    fn of(path: &Path, meta: &std::fs::Metadata) -> Key {
        use std::os::unix::fs::MetadataExt;
        Key {
            path: path.to_path_buf(),
            inode: (meta.dev(), meta.ino()),
            size: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

/// A decoder of a compressed mbox, `at` bytes into what it inflates to, with the last of those
/// bytes (at least [`WINDOW`] of them, at most twice that, when there were so many).
struct Place {
    key: Key,
    reader: Box<dyn Read + Send>,
    at: u64,
    window: Vec<u8>,
    used: Instant,
}

impl Place {
    /// Where the bytes kept begin.
    fn kept_from(&self) -> u64 {
        self.at - self.window.len() as u64
    }

    /// The bytes still to be inflated to read `want` bytes at `offset`; `None` when they lie
    /// before what is kept.
    fn cost(&self, offset: u64, want: u64) -> Option<u64> {
        (offset >= self.kept_from()).then(|| offset.saturating_add(want).saturating_sub(self.at))
    }

    /// `want` bytes at `offset` (at least [`Place::kept_from`]), or as many as there are.
    fn read(&mut self, offset: u64, want: u64) -> std::io::Result<Vec<u8>> {
        let end = offset.saturating_add(want);
        if want > WINDOW as u64 {
            // Larger than what is kept: read on its own, past the bytes kept.
            self.inflate_to(offset)?;
            let mut bytes = Vec::new();
            reserve(&mut bytes, usize::try_from(want).unwrap_or(usize::MAX))?;
            (&mut self.reader).take(want).read_to_end(&mut bytes)?;
            self.at += bytes.len() as u64;
            self.window.clear();
            return Ok(bytes);
        }
        self.inflate_to(end)?;
        let from = usize::try_from(offset.saturating_sub(self.kept_from())).unwrap_or(usize::MAX);
        let to = usize::try_from(end.min(self.at) - self.kept_from()).unwrap_or(usize::MAX);
        Ok(self.window.get(from..to).unwrap_or_default().to_vec())
    }

    /// Inflates on to `end` (or the end of the stream), keeping the last bytes.
    fn inflate_to(&mut self, end: u64) -> std::io::Result<()> {
        let mut chunk = vec![0u8; 64 * 1024];
        while self.at < end {
            let room = usize::try_from(end - self.at).unwrap_or(usize::MAX).min(chunk.len());
            let n = match self.reader.read(&mut chunk[..room]) {
                Ok(0) => break,
                Ok(n) => n.min(room),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.window.extend_from_slice(&chunk[..n]);
            self.at += n as u64;
            if self.window.len() > 2 * WINDOW {
                self.window.drain(..self.window.len() - WINDOW);
            }
        }
        Ok(())
    }
}

/// The places kept: at most [`Places::MAX`], none unused for longer than [`Places::IDLE`] (each
/// holds up to twice [`WINDOW`] and its decoder's window: up to 64 MiB for xz).
struct Places(Mutex<Vec<Place>>);

static PLACES: Places = Places(Mutex::new(Vec::new()));

impl Places {
    const MAX: usize = 2;
    const IDLE: Duration = Duration::from_secs(60);

    /// The place kept for `key` that reads `want` bytes at `offset` with the least inflating,
    /// taken out (a read has it to itself).
    fn take(&self, key: &Key, offset: u64, want: u64) -> Option<Place> {
        let mut places = self.0.lock().unwrap_or_else(|e| e.into_inner());
        places.retain(|p| p.used.elapsed() < Self::IDLE);
        let best = places
            .iter()
            .enumerate()
            .filter(|(_, p)| p.key == *key)
            .filter_map(|(i, p)| Some((i, p.cost(offset, want)?)))
            .min_by_key(|&(_, cost)| cost)
            .map(|(i, _)| i)?;
        Some(places.swap_remove(best))
    }

    /// Keeps `place` for the next read, in place of the one used longest ago when there are
    /// enough.
    fn keep(&self, mut place: Place) {
        place.used = Instant::now();
        let mut places = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if places.len() >= Self::MAX {
            if let Some(oldest) = places.iter().enumerate().min_by_key(|(_, p)| p.used).map(|(i, _)| i) {
                places.swap_remove(oldest);
            }
        }
        places.push(place);
    }
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

    fn bzip2(bytes: &[u8]) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
        e.write_all(bytes).expect("write");
        e.finish().expect("finish")
    }

    /// What the `xz` tool makes of `bytes` (`-9`: the 64 MiB dictionary users choose for archives).
    fn xz(bytes: &[u8]) -> Vec<u8> {
        xz_with(&["-9", "-c"], bytes)
    }

    /// What the `xz` tool makes of `bytes` with `args`.
    fn xz_with(args: &[&str], bytes: &[u8]) -> Vec<u8> {
        by_tool("xz", args, bytes)
    }

    /// What the command-line tool `tool` makes of `bytes` with `args`, read from its output.
    fn by_tool(tool: &str, args: &[&str], bytes: &[u8]) -> Vec<u8> {
        use std::process::{Command, Stdio};
        let mut child = Command::new(tool)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("the {tool} tool (scripts/test installs it): {e}"));
        child.stdin.take().expect("stdin").write_all(bytes).expect("write");
        child.wait_with_output().expect(tool).stdout
    }

    /// What the `lz4` tool makes of `bytes` with `args`.
    fn lz4(args: &[&str], bytes: &[u8]) -> Vec<u8> {
        by_tool("lz4", &[args, &["-c"]].concat(), bytes)
    }

    #[test]
    fn compressed_messages_are_read_as_the_message_they_hold() {
        let zstd = zstd::encode_all(MESSAGE, 3).expect("zstd");
        let two_members = [gzip(&MESSAGE[..10]), gzip(&MESSAGE[10..])].concat();
        for (name, packed, want) in [
            ("gzip", gzip(MESSAGE), Packing::Gzip),
            ("zstd", zstd, Packing::Zstd),
            ("gzip members", two_members, Packing::Gzip),
            ("bzip2", bzip2(MESSAGE), Packing::Bzip2),
            ("bzip2 streams", [bzip2(&MESSAGE[..7]), bzip2(&MESSAGE[7..])].concat(), Packing::Bzip2),
            ("xz", xz(MESSAGE), Packing::Xz),
            ("xz streams", [xz(&MESSAGE[..7]), xz(&MESSAGE[7..])].concat(), Packing::Xz),
            ("lz4", lz4(&[], MESSAGE), Packing::Lz4),
            ("lz4 frames", [lz4(&[], &MESSAGE[..7]), lz4(&["-9"], &MESSAGE[7..])].concat(), Packing::Lz4),
            (
                "lz4 frames of other block sizes",
                [
                    lz4(&["-B4"], &MESSAGE[..7]),
                    lz4(&["-B7", "--no-frame-crc"], &MESSAGE[7..20]),
                    lz4(&["-B5"], &MESSAGE[20..]),
                ]
                .concat(),
                Packing::Lz4,
            ),
            ("lz4 legacy", lz4(&["-l"], MESSAGE), Packing::Lz4),
            ("dovecot lz4", dovecot_lz4::tests::packed(MESSAGE, 16), Packing::DovecotLz4),
        ] {
            assert_eq!(packing(&packed), Some(want), "{name}");
            let given = read_unpacked(&packed[..], want, 1 << 20).expect(name);
            assert_eq!(given.bytes, MESSAGE, "{name}");
            assert_eq!(given.cut_from, None, "{name}");
            assert_eq!(unpacked_head(&packed[..], want, 10).expect(name), &MESSAGE[..10], "{name}");
        }
        assert_eq!(packing(MESSAGE), None);
        assert_eq!(packing(b"\x1f\x8b"), None, "too short to say");
        assert_eq!(packing(b"BZh5 is how this text starts"), None, "no bzip2 block follows");
        assert_eq!(packing(&bzip2(b"")), Some(Packing::Bzip2), "an empty stream is one still");
    }

    /// LZ4 frames that each hold nothing cost their block size in memory: a long run of them is
    /// damage, read as far as it goes; a few are read through.
    #[test]
    fn a_run_of_empty_lz4_frames_is_refused() {
        let empty = lz4(&["-B7"], b"");
        let few = [empty.repeat(10), lz4(&[], MESSAGE)].concat();
        assert_eq!(read_unpacked(&few[..], Packing::Lz4, 1 << 20).expect("few").bytes, MESSAGE);
        let many = [lz4(&[], MESSAGE), empty.repeat(5000), lz4(&[], b"never reached")].concat();
        let mut out = Vec::new();
        let read = unpacking(&many[..], Packing::Lz4).expect("starts").read_to_end(&mut out);
        assert!(read.is_err(), "a run of empty frames is damage");
        assert_eq!(out, MESSAGE, "what came before it is read");
    }

    #[test]
    fn names_beneath_compression_suffixes() {
        for (name, beneath) in [
            ("2024-May.txt.gz", "2024-May.txt"),
            ("Archive.mbox.XZ", "Archive.mbox"),
            ("m.eml.zst", "m.eml"),
            ("old.mbox.bz2", "old.mbox"),
            ("inbox", "inbox"),
            (".gz", ".gz"),
            ("résumé.gz", "résumé"),
        ] {
            assert_eq!(name_beneath(name), beneath, "{name}");
        }
    }

    /// A message of a compressed mbox read at its offset, in any order, from a place kept or from
    /// the start; a file changed since is read from its start again.
    #[test]
    fn messages_of_a_compressed_mbox_are_read_at_their_places() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("list.mbox.gz");
        let text: Vec<u8> = (0..200u32).flat_map(|n| format!("message {n:03}\n").into_bytes()).collect();
        std::fs::write(&path, gzip(&text)).expect("write");
        let at = |n: u64| -> Vec<u8> {
            let file = File::open(&path).expect("open");
            read_unpacked_range(&path, file, Packing::Gzip, n * 12, 12).expect("read")
        };
        for n in [150, 151, 3, 199, 0, 151, 152] {
            assert_eq!(at(n), format!("message {n:03}\n").into_bytes(), "{n}");
        }
        let other: Vec<u8> = (0..200u32).flat_map(|n| format!("changed {n:03}\n").into_bytes()).collect();
        std::fs::write(&path, gzip(&other)).expect("write");
        assert_eq!(at(153), b"changed 153\n");
        // Past the end: what there is.
        let file = File::open(&path).expect("open");
        assert_eq!(read_unpacked_range(&path, file, Packing::Gzip, 199 * 12, 100).expect("read"), b"changed 199\n");

        // A message larger than the bytes kept, then the ones around it.
        let big = [&b"head\n"[..], &vec![b'x'; WINDOW + 10], b"tail\n"].concat();
        std::fs::write(&path, gzip(&big)).expect("write");
        let read = |offset: usize, want: usize| {
            let file = File::open(&path).expect("open");
            read_unpacked_range(&path, file, Packing::Gzip, offset as u64, want as u64).expect("read")
        };
        assert_eq!(read(5, WINDOW + 10), big[5..WINDOW + 15]);
        assert_eq!(read(WINDOW + 15, 5), b"tail\n");
        assert_eq!(read(0, 5), b"head\n");
        assert_eq!(read(WINDOW, 20), big[WINDOW..WINDOW + 20]);
    }

    /// An mbox read through its decompressor cannot be looked ahead in: a Content-Length that
    /// points past what the reader holds does not decide where the message ends (its `From `
    /// lines do), and reading goes on to the end.
    #[test]
    fn an_mbox_read_forward_only_is_read_to_its_end() {
        let body = "x".repeat(3000);
        let text = format!(
            "From a Mon Nov  2 10:00:00 2026\nContent-Length: 3000\n\n{body}\nFrom b Mon Nov  2 10:00:00 2026\nSubject: 2\n\ntwo\n"
        );
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("box.gz");
        std::fs::write(&path, gzip(text.as_bytes())).expect("write");
        let mbox = unpacked_mbox(File::open(&path).expect("open"), Packing::Gzip, 100).expect("inflate");
        let read: Vec<_> = crate::ingest::MboxReader::with_capacity(256, mbox, 0).map(|m| m.expect("reads")).collect();
        assert_eq!(read.len(), 2);
        assert_eq!(read[1].offset + read[1].len, text.len() as u64);
    }

    /// A compressed mbox cut short (a download that stopped): every message before the damage,
    /// and the one it cuts as far as it goes, read with no error; read back the same.
    #[test]
    fn a_compressed_mbox_cut_short_gives_what_it_holds() {
        let text: String = (0..300)
            .map(|n| format!("From a Mon Nov  2 10:00:00 2026\nSubject: {n}\n\nbody {n} {}\n", "w".repeat(n % 50)))
            .collect();
        let packed = gzip(text.as_bytes());
        let cut = &packed[..packed.len() * 2 / 3];
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("cut.mbox.gz");
        std::fs::write(&path, cut).expect("write");
        let mbox = unpacked_mbox(File::open(&path).expect("open"), Packing::Gzip, cut.len() as u64).expect("inflate");
        let read: Vec<_> = crate::ingest::MboxReader::new(mbox, 0).collect::<Result<_, _>>().expect("no error");
        assert!(read.len() > 100 && read.len() < 300, "{}", read.len());
        for m in &read {
            let file = File::open(&path).expect("open");
            let again = read_unpacked_range(&path, file, Packing::Gzip, m.offset, m.len).expect("read back");
            assert_eq!(again, text.as_bytes()[m.offset as usize..(m.offset + m.len) as usize]);
        }
    }

    /// An xz stream asking for more memory than allowed is refused before it is allocated.
    #[test]
    fn an_xz_stream_asking_for_too_large_a_dictionary_is_refused() {
        let packed = xz_with(&["-c", "--lzma2=dict=128MiB,mf=hc3"], MESSAGE);
        assert!(read_unpacked(&packed[..], Packing::Xz, 1 << 20).is_err());
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
