//! A PDF's bytes before lopdf reads them, and the bounded decompression every stream goes
//! through.
//!
//! lopdf inflates object streams and cross-reference streams while it loads a file, with no
//! bound; [`guard`] finds them in the bytes first, counts what each inflates to (never keeping
//! it), and makes the ones past the document's budget unreadable (their first bytes zeroed, so
//! lopdf sees a corrupt stream and moves on) before lopdf is given the file. In an encrypted file
//! these streams cannot be read before lopdf decrypts them, so their worst case (a deflate stream
//! inflates at most about 1,032 times) is counted instead.
//!
//! [`repair`] gives a file whose cross-reference table is broken a new one, made by scanning for
//! its objects, as PDF readers do: lopdf refuses such files outright.

use flate2::{Decompress, FlushDecompress, Status};
use memchr::memmem;

/// The most a deflate stream inflates to, per byte of input.
const DEFLATE_RATIO: u64 = 1032;

/// How far before a `stream` keyword its dictionary is looked for.
const DICTIONARY_WINDOW: usize = 8192;

/// What a bounded decompression came to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Inflated {
    /// The stream's end, after this many bytes.
    Done(u64),
    /// More than the limit.
    Over,
    /// Damaged data, after this many bytes.
    Failed(u64),
}

/// Inflates zlib (or, failing that from the start, raw deflate) `data`, giving each piece to
/// `out` as it comes, and stops past `limit` bytes.
pub(super) fn inflate(data: &[u8], limit: u64, out: &mut dyn FnMut(&[u8])) -> Inflated {
    match inflate_with(Decompress::new(true), data, limit, out) {
        Inflated::Failed(0) if data.len() > 2 => inflate_with(Decompress::new(false), &data[2..], limit, out),
        other => other,
    }
}

fn inflate_with(mut z: Decompress, data: &[u8], limit: u64, out: &mut dyn FnMut(&[u8])) -> Inflated {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let (before_in, before_out) = (z.total_in(), z.total_out());
        let at = usize::try_from(before_in).unwrap_or(data.len()).min(data.len());
        let status = z.decompress(&data[at..], &mut buf, FlushDecompress::None);
        let produced = usize::try_from(z.total_out() - before_out).unwrap_or(0);
        if z.total_out() > limit {
            return Inflated::Over;
        }
        out(&buf[..produced]);
        match status {
            Ok(Status::StreamEnd) => return Inflated::Done(z.total_out()),
            Ok(_) if z.total_in() == before_in && produced == 0 => return Inflated::Done(z.total_out()),
            Ok(_) => {}
            Err(_) => return Inflated::Failed(z.total_out()),
        }
    }
}

/// Decodes LZW `data` (PDF's variant: MSB first, the code size growing one code early unless
/// `early` is false), stopping past `limit` bytes.
pub(super) fn lzw(data: &[u8], early: bool, limit: u64, out: &mut dyn FnMut(&[u8])) -> Inflated {
    use weezl::{decode::Decoder, BitOrder, LzwStatus};
    let mut decoder =
        if early { Decoder::with_tiff_size_switch(BitOrder::Msb, 8) } else { Decoder::new(BitOrder::Msb, 8) };
    let mut buf = vec![0u8; 64 * 1024];
    let (mut at, mut total) = (0usize, 0u64);
    loop {
        let result = decoder.decode_bytes(&data[at..], &mut buf);
        at += result.consumed_in;
        total += result.consumed_out as u64;
        if total > limit {
            return Inflated::Over;
        }
        out(&buf[..result.consumed_out]);
        match result.status {
            Ok(LzwStatus::Done) => return Inflated::Done(total),
            Ok(LzwStatus::NoProgress) => return Inflated::Done(total),
            Ok(LzwStatus::Ok) if result.consumed_in == 0 && result.consumed_out == 0 => return Inflated::Done(total),
            Ok(LzwStatus::Ok) => {}
            Err(_) => return Inflated::Failed(total),
        }
    }
}

/// What [`guard`] found.
#[derive(Debug, Default)]
pub(super) struct Guarded {
    /// Bytes the counted streams inflate to.
    pub inflated: u64,
    /// Some were made unreadable.
    pub cut: bool,
}

/// Makes the object and cross-reference streams of `bytes` that inflate past `budget` (all of
/// them together) unreadable, in place.
pub(super) fn guard(bytes: &mut [u8], budget: u64) -> Guarded {
    let encrypted = memmem::find(bytes, b"/Encrypt").is_some();
    let mut found = Guarded::default();
    let starts: Vec<usize> = memmem::find_iter(bytes, b"stream").collect();
    for at in starts {
        let Some((data, dict)) = stream_at(bytes, at) else { continue };
        let has = |word: &[u8]| memmem::find(dict, word).is_some();
        if !(has(b"/ObjStm") || has(b"/XRef")) {
            continue;
        }
        let left = budget.saturating_sub(found.inflated);
        let flate = has(b"/FlateDecode") || has(b"/Fl ") || has(b"/Fl/") || has(b"/Fl]");
        let early = !has(b"/EarlyChange 0");
        let counted = if encrypted && has(b"/ObjStm") {
            // Encrypted: its size, times the most it could inflate.
            let end = memmem::find(&bytes[data..], b"endstream").map_or(bytes.len(), |e| data + e);
            let worst = ((end - data) as u64).saturating_mul(DEFLATE_RATIO);
            if worst > left {
                Inflated::Over
            } else {
                Inflated::Done(worst)
            }
        } else if flate {
            inflate(&bytes[data..], left, &mut |_| {})
        } else if has(b"/LZWDecode") || has(b"/LZW") {
            lzw(&bytes[data..], early, left, &mut |_| {})
        } else {
            continue;
        };
        match counted {
            Inflated::Done(n) | Inflated::Failed(n) => found.inflated += n,
            Inflated::Over => {
                let end = bytes.len().min(data + 16);
                bytes[data..end].fill(0);
                found.cut = true;
            }
        }
    }
    found
}

/// For a `stream` keyword at `at`: where its data starts and the dictionary before it; `None`
/// when the word is not a stream's keyword (`endstream`, a word in a string).
fn stream_at(bytes: &[u8], at: usize) -> Option<(usize, &[u8])> {
    if at >= 3 && &bytes[at - 3..at] == b"end" {
        return None;
    }
    let after = at + b"stream".len();
    let data = match bytes.get(after..after + 2) {
        Some(b"\r\n") => after + 2,
        Some([b'\n', _]) | Some([b'\r', _]) => after + 1,
        _ => return None,
    };
    let before = &bytes[..at];
    let end = before.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if end < 1 || &before[end - 1..=end] != b">>" {
        return None;
    }
    let from = at.saturating_sub(DICTIONARY_WINDOW);
    let window = &bytes[from..at];
    let obj = memmem::rfind(window, b"obj").map_or(0, |o| o + 3);
    Some((data, &window[obj..]))
}

/// `bytes` with a cross-reference table rebuilt from the objects found in them, appended with a
/// trailer naming the catalog (and the encryption dictionary and file id, when the file has
/// them); `None` when no catalog is found.
pub(super) fn repair(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = true_lengths(bytes);
    let bytes = out.clone();
    let bytes = bytes.as_slice();
    let objects = scan_objects(bytes);
    let root = last_reference(bytes, b"/Root").or_else(|| catalog(bytes, &objects))?;
    out.extend_from_slice(b"\n");
    let xref = out.len();
    out.extend_from_slice(b"xref\n0 1\n0000000000 65535 f\r\n");
    let mut numbers: Vec<&(u32, u16, usize)> = objects.iter().filter(|o| o.0 > 0).collect();
    numbers.sort_by_key(|o| o.0);
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1].0 == numbers[j].0 + 1 {
            j += 1;
        }
        out.extend_from_slice(format!("{} {}\n", numbers[i].0, j - i + 1).as_bytes());
        for o in &numbers[i..=j] {
            out.extend_from_slice(format!("{:010} {:05} n\r\n", o.2, o.1).as_bytes());
        }
        i = j + 1;
    }
    let size = numbers.last().map_or(1, |o| o.0 + 1);
    let mut trailer = format!("trailer\n<< /Size {size} /Root {} {} R", root.0, root.1);
    if let Some(e) = last_reference(bytes, b"/Encrypt") {
        trailer.push_str(&format!(" /Encrypt {} {} R", e.0, e.1));
    }
    if let Some(id) = file_id(bytes) {
        trailer.push_str(" /ID ");
        trailer.push_str(&String::from_utf8_lossy(id));
    }
    trailer.push_str(&format!(" >>\nstartxref\n{xref}\n%%EOF\n"));
    out.extend_from_slice(trailer.as_bytes());
    Some(out)
}

/// `bytes` with each stream's direct `/Length` set to where its `endstream` really is: a file
/// whose line ends were converted has both its offsets and its lengths wrong, and lopdf takes a
/// stream whose length misses its `endstream` for no stream at all.
fn true_lengths(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 1024);
    let mut copied = 0;
    for at in memmem::find_iter(bytes, b"stream") {
        if at < copied {
            continue;
        }
        let Some((data, dict)) = stream_at(bytes, at) else { continue };
        let Some(end) = memmem::find(&bytes[data..], b"endstream") else { continue };
        let mut length = end;
        if bytes[data..data + length].ends_with(b"\r\n") {
            length -= 2;
        } else if bytes[data..data + length].ends_with(b"\n") || bytes[data..data + length].ends_with(b"\r") {
            length -= 1;
        }
        let dict_start = at - dict.len();
        let Some(key) = memmem::rfind(dict, b"/Length") else { continue };
        let digits_start = dict_start + key + b"/Length".len();
        let rest = &bytes[digits_start..at];
        let skip = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let len = rest[skip..].iter().take_while(|b| b.is_ascii_digit()).count();
        let after = skip + len;
        // `/Length 12 0 R` is a reference, not a number to correct.
        let reference = rest[after..].iter().find(|b| !b.is_ascii_whitespace()).is_some_and(u8::is_ascii_digit);
        if len == 0 || reference {
            continue;
        }
        out.extend_from_slice(&bytes[copied..digits_start + skip]);
        out.extend_from_slice(length.to_string().as_bytes());
        copied = digits_start + after;
    }
    out.extend_from_slice(&bytes[copied..]);
    out
}

/// Every `N G obj` in the bytes: number, generation, offset; a number seen again is the later
/// one (an incremental update).
fn scan_objects(bytes: &[u8]) -> Vec<(u32, u16, usize)> {
    let mut found: std::collections::HashMap<u32, (u16, usize)> = std::collections::HashMap::new();
    for at in memmem::find_iter(bytes, b"obj") {
        if at >= 3 && &bytes[at - 3..at] == b"end" {
            continue;
        }
        if bytes.get(at + 3).is_some_and(|b| b.is_ascii_alphanumeric()) {
            continue;
        }
        let Some((generation, gen_start)) = number_before(bytes, at) else { continue };
        let Some((number, start)) = number_before(bytes, gen_start) else { continue };
        if start > 0 && !bytes[start - 1].is_ascii_whitespace() {
            continue;
        }
        let (Ok(number), Ok(generation)) = (u32::try_from(number), u16::try_from(generation)) else { continue };
        found.insert(number, (generation, start));
    }
    found.into_iter().map(|(n, (g, o))| (n, g, o)).collect()
}

/// The number that ends just before `at` (after white space): its value and where it starts.
fn number_before(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut end = at;
    let mut spaces = 0;
    while end > 0 && bytes[end - 1].is_ascii_whitespace() {
        end -= 1;
        spaces += 1;
    }
    if spaces == 0 {
        return None;
    }
    let mut start = end;
    while start > 0 && bytes[start - 1].is_ascii_digit() && end - start < 10 {
        start -= 1;
    }
    if start == end {
        return None;
    }
    std::str::from_utf8(&bytes[start..end]).ok()?.parse().ok().map(|n| (n, start))
}

/// The last `/Key N G R` in the bytes.
fn last_reference(bytes: &[u8], key: &[u8]) -> Option<(u32, u16)> {
    memmem::rfind_iter(bytes, key).find_map(|at| reference_after(&bytes[at + key.len()..]))
}

fn reference_after(rest: &[u8]) -> Option<(u32, u16)> {
    let rest = &rest[..rest.len().min(40)];
    let text = std::str::from_utf8(rest.split(|&b| b == b'/' || b == b'>').next()?).ok()?;
    let mut words = text.split_ascii_whitespace();
    let number = words.next()?.parse().ok()?;
    let generation = words.next()?.parse().ok()?;
    (words.next()? == "R").then_some((number, generation))
}

/// The object whose dictionary says `/Type /Catalog`.
fn catalog(bytes: &[u8], objects: &[(u32, u16, usize)]) -> Option<(u32, u16)> {
    let mut by_offset: Vec<&(u32, u16, usize)> = objects.iter().collect();
    by_offset.sort_by_key(|o| o.2);
    let at = memmem::find(bytes, b"/Catalog")?;
    let owner = by_offset.iter().rev().find(|o| o.2 < at)?;
    Some((owner.0, owner.1))
}

/// The last file identifier (`/ID [<…><…>]`), as written.
fn file_id(bytes: &[u8]) -> Option<&[u8]> {
    let at = memmem::rfind(bytes, b"/ID")? + 3;
    let rest = &bytes[at..bytes.len().min(at + 200)];
    let open = rest.iter().position(|&b| b == b'[')?;
    let close = rest.iter().position(|&b| b == b']')?;
    (open < close && rest[..open].iter().all(u8::is_ascii_whitespace)).then(|| &rest[open..=close])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zlib(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).expect("compress");
        e.finish().expect("compress")
    }

    #[test]
    fn inflation_stops_at_its_limit() {
        let bomb = zlib(&vec![0u8; 10 << 20]);
        assert_eq!(inflate(&bomb, 1 << 20, &mut |_| {}), Inflated::Over);
        assert_eq!(inflate(&bomb, 20 << 20, &mut |_| {}), Inflated::Done(10 << 20));
        let mut got = Vec::new();
        assert_eq!(inflate(&zlib(b"hello"), 100, &mut |b| got.extend_from_slice(b)), Inflated::Done(5));
        assert_eq!(got, b"hello");
        assert!(matches!(inflate(b"not zlib at all", 100, &mut |_| {}), Inflated::Failed(_)));
    }

    #[test]
    fn object_stream_bombs_are_defused_before_loading() {
        let bomb = zlib(&vec![b' '; 8 << 20]);
        let mut pdf = b"%PDF-1.5\n1 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode >>\nstream\n".to_vec();
        let data = pdf.len();
        pdf.extend_from_slice(&bomb);
        pdf.extend_from_slice(b"\nendstream\nendobj\n");
        let found = guard(&mut pdf, 1 << 20);
        assert!(found.cut);
        assert!(pdf[data..data + 16].iter().all(|&b| b == 0));
        let mut small = pdf.clone();
        small[data..data + bomb.len()].copy_from_slice(&bomb);
        let found = guard(&mut small, 16 << 20);
        assert!(!found.cut);
        assert_eq!(found.inflated, 8 << 20);
    }

    #[test]
    fn a_broken_cross_reference_table_is_rebuilt() {
        let pdf = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\nxref\ngarbage\ntrailer\n<< /Root 1 0 R >>\nstartxref\n99999\n%%EOF\n";
        let repaired = repair(pdf).expect("repaired");
        let text = String::from_utf8_lossy(&repaired);
        assert!(text.contains("1 2\n0000000009 00000 n\r\n"), "{text}");
        let wrong = b"1 0 obj\n<< /Length 3 >>\nstream\nabcdef\nendstream\nendobj\n2 0 obj\n<< /Length 4 0 R >>\nstream\nx\nendstream";
        let right = b"1 0 obj\n<< /Length 6 >>\nstream\nabcdef\nendstream\nendobj\n2 0 obj\n<< /Length 4 0 R >>\nstream\nx\nendstream";
        assert_eq!(String::from_utf8_lossy(&true_lengths(wrong)), String::from_utf8_lossy(right));
        assert!(text.contains("/Root 1 0 R"), "{text}");
        assert!(lopdf::Document::load_mem(&repaired).is_ok());
        assert_eq!(last_reference(b"<< /Root 12 3 R >>", b"/Root"), Some((12, 3)));
        assert_eq!(file_id(b"/ID [<01><02>] >>"), Some(&b"[<01><02>]"[..]));
    }
}
