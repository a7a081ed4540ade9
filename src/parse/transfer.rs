//! Undoing a Content-Transfer-Encoding (RFC 2045 §6) for the parts whose bytes we decode ourselves
//! (documents without a charset, whose encoding is found in their own bytes; uuencoded parts; the
//! parts of messages whose structure mail-parser misreads).
//!
//! Each decoder is the robust one RFC 2045 recommends and mail clients use, so a stray byte never
//! leaves a whole part encoded. Quoted-printable (§6.7): an `=` that starts neither an escape nor
//! a soft line break is kept as it is (Blink once left the `=` of `id="h1"` unescaped in MHTML, and
//! a strict decoder would leave every `=3D` showing). Base64 (§6.8): characters outside the
//! alphabet are ignored, and the padding ends the data. A name RFC 2045 does not know
//! (`7-bit`, `plain`, `8 bit`) is an identity, as Python's `email` and mail clients take it; the
//! `x-uuencode` that old clients wrote is undone as they undid it.

use std::borrow::Cow;

/// A body's bytes with its Content-Transfer-Encoding undone; as they are when the encoding is an
/// identity or unknown.
pub(super) fn decoded<'a>(raw: &'a [u8], encoding: Option<&str>) -> Cow<'a, [u8]> {
    decode(raw, encoding).bytes
}

/// What [`decode`] made of a body.
pub(super) struct Decoded<'a> {
    pub bytes: Cow<'a, [u8]>,
    /// False when the body held what its encoding cannot (a character outside the base64
    /// alphabet, a quantum cut short, a uuencoded body without its `end`).
    pub clean: bool,
}

/// [`decoded`], saying whether the body was clean.
pub(super) fn decode<'a>(raw: &'a [u8], encoding: Option<&str>) -> Decoded<'a> {
    let name = encoding.map(|e| e.trim().to_ascii_lowercase());
    match name.as_deref() {
        Some("base64") => {
            let (bytes, clean) = base64(raw);
            Decoded { bytes: Cow::Owned(bytes), clean }
        }
        Some("quoted-printable") => Decoded { bytes: Cow::Owned(quoted_printable(raw)), clean: true },
        Some("x-uuencode" | "uuencode" | "x-uue" | "uue") => match uudecode(raw) {
            Some(bytes) => Decoded { bytes: Cow::Owned(bytes), clean: true },
            None => Decoded { bytes: Cow::Borrowed(raw), clean: false },
        },
        _ => Decoded { bytes: Cow::Borrowed(raw), clean: true },
    }
}

/// The encoding [`decode`] undoes for `encoding` as written, by its one name (`None`: an identity,
/// or a name no decoder knows): what a part keeps of its Content-Transfer-Encoding, without a
/// string of its own for every part.
pub(super) fn named(encoding: Option<&str>) -> Option<&'static str> {
    let e = encoding?.trim();
    if e.eq_ignore_ascii_case("base64") {
        Some("base64")
    } else if e.eq_ignore_ascii_case("quoted-printable") {
        Some("quoted-printable")
    } else if is_uuencode(Some(e)) {
        Some("x-uuencode")
    } else {
        None
    }
}

/// Whether mail-parser leaves `encoding` undone while [`decode`] undoes it.
pub(super) fn is_uuencode(encoding: Option<&str>) -> bool {
    encoding.is_some_and(|e| {
        let e = e.trim();
        ["x-uuencode", "uuencode", "x-uue", "uue"].iter().any(|n| e.eq_ignore_ascii_case(n))
    })
}

/// Whether mail-parser's decoding of this body (encoded as `encoding` says) differs from the
/// robust decoding RFC 2045 recommends, which [`decode`] does; found by looking at the few bytes
/// where they differ. Base64: mail-parser drops a last quantum written without its padding, and
/// decodes on after the padding (RFC 2045 §6.8: the `=` is the end of the data); both show on the
/// last line. Quoted-printable: mail-parser loses an `=` and one hex digit at the end of a line
/// (`psc=1` in a URL), mangling the next line, drops the white space after an `=` that starts
/// nothing, loses the last character of a body that ends in a soft line break, and deletes the
/// white space before a line break, which [`quoted_printable`] keeps.
pub(super) fn parser_misdecodes(raw: &[u8], encoding: Option<&str>) -> bool {
    let name = encoding.map(str::trim);
    if name.is_some_and(|n| n.eq_ignore_ascii_case("base64")) {
        let body = raw.trim_ascii_end();
        let last = &body[memchr::memrchr(b'\n', body).map_or(0, |i| i + 1)..];
        match memchr::memchr(b'=', last) {
            Some(eq) => last[eq..].iter().any(|b| !matches!(b, b'=' | b' ' | b'\t' | b'\r')),
            None => {
                let written = |s: &[u8]| s.iter().filter(|b| !b.is_ascii_whitespace()).count();
                written(last) % 4 != 0 && matches!(written(body) % 4, 2 | 3)
            }
        }
    } else if name.is_some_and(|n| n.eq_ignore_ascii_case("quoted-printable")) {
        // Looked for at line ends and at `= `, which are few, rather than at every `=`.
        // White space at the end of a line, unless it follows the `=` of a soft line break.
        let padded =
            |line: &[u8]| matches!(line, [.., b' ' | b'\t' | b'\x0c']) && !line.trim_ascii_end().ends_with(b"=");
        let misread_line_end = |line: &[u8]| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            matches!(line, [.., b'=', h] if h.is_ascii_hexdigit()) || padded(line)
        };
        let trimmed = raw.trim_ascii_end();
        trimmed.ends_with(b"=")
            || misread_line_end(trimmed)
            || padded(raw)
            || memchr::memchr_iter(b'\n', raw).any(|nl| misread_line_end(&raw[..nl]))
            || [&b"= "[..], b"=\t"].iter().any(|eq_space| {
                memchr::memmem::find_iter(raw, eq_space).any(|at| {
                    let rest = &raw[at + 1..];
                    let spaces = rest.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
                    !matches!(rest.get(spaces), None | Some(b'\r' | b'\n'))
                })
            })
    } else {
        false
    }
}

/// RFC 2045 §6.8, read robustly: white space and any character outside the alphabet are ignored;
/// the `=` that pads the last quantum ends the data (what follows it is not base64 data, as the
/// section says and Python's `email` reads it); a quantum left incomplete at the end gives the
/// octets its characters hold. The flag is false when a character was ignored or a lone character
/// was left over.
pub(super) fn base64(raw: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::with_capacity(raw.len() / 4 * 3 + 3);
    let (mut quantum, mut held, mut clean) = (0u32, 0u8, true);
    let flush = |out: &mut Vec<u8>, quantum: u32, held: u8| {
        let bytes = (quantum << (6 * (4 - u32::from(held)))).to_be_bytes();
        match held {
            2 => out.push(bytes[1]),
            3 => out.extend_from_slice(&bytes[1..3]),
            _ => {}
        }
    };
    let mut at = 0;
    while at < raw.len() {
        // Four letters of the alphabet at the start of a quantum, as nearly all of a body is.
        if held == 0 {
            if let Some(&[a, b, c, d]) = raw.get(at..at + 4) {
                let [a, b, c, d] = [a, b, c, d].map(|x| BASE64[usize::from(x)]);
                if (a | b | c | d) < 64 {
                    out.extend_from_slice(&[a << 2 | b >> 4, b << 4 | c >> 2, c << 6 | d]);
                    at += 4;
                    continue;
                }
            }
        }
        let v = BASE64[usize::from(raw[at])];
        at += 1;
        match v {
            0..=63 => {}
            PAD if held >= 2 => {
                flush(&mut out, quantum, held);
                return (out, clean);
            }
            PAD | SPACE => continue,
            _ => {
                clean = false;
                continue;
            }
        }
        quantum = quantum << 6 | u32::from(v);
        held += 1;
        if held == 4 {
            out.extend_from_slice(&quantum.to_be_bytes()[1..]);
            (quantum, held) = (0, 0);
        }
    }
    flush(&mut out, quantum, held);
    (out, clean && held != 1)
}

/// In [`BASE64`]: white space, the padding, and what is neither nor of the alphabet.
const SPACE: u8 = 64;
const PAD: u8 = 65;
const OTHER: u8 = 66;

/// Each byte's value in the base64 alphabet (RFC 2045 §6.8), or what else it is.
const BASE64: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut i = 0;
    while i < 26 {
        table[b'A' as usize + i] = i as u8;
        table[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        table[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    table[b'+' as usize] = 62;
    table[b'/' as usize] = 63;
    table[b'=' as usize] = PAD;
    table[b' ' as usize] = SPACE;
    table[b'\t' as usize] = SPACE;
    table[b'\r' as usize] = SPACE;
    table[b'\n' as usize] = SPACE;
    table
};

/// A uuencoded body: the lines between `begin <mode> <name>` and `end`, each led by a character
/// that gives its length. `None` without both (as Python's `email` then leaves the body as it is).
pub(super) fn uudecode(raw: &[u8]) -> Option<Vec<u8>> {
    let mut lines = raw.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    lines.find(|l| {
        let mut f = l.splitn(3, |&b| b == b' ');
        f.next() == Some(b"begin")
            && f.next().is_some_and(|m| !m.is_empty() && m.iter().all(|b| (b'0'..=b'7').contains(b)))
            && f.next().is_some()
    })?;
    let mut out = Vec::with_capacity(raw.len() / 4 * 3);
    for line in lines {
        if line.trim_ascii() == b"end" {
            return Some(out);
        }
        let Some((&count, chars)) = line.split_first() else { continue };
        let want = usize::from(count.wrapping_sub(b' ') & 63);
        let six = |i: usize| u32::from(chars.get(i).map_or(0, |&c| c.wrapping_sub(b' ') & 63));
        let mut got = 0;
        let mut i = 0;
        while got < want {
            let group = six(i) << 18 | six(i + 1) << 12 | six(i + 2) << 6 | six(i + 3);
            let bytes = group.to_be_bytes();
            let take = (want - got).min(3);
            out.extend_from_slice(&bytes[1..1 + take]);
            got += take;
            i += 4;
        }
    }
    None
}

/// RFC 2045 §6.7: `=XX` is the octet XX (lower-case hex digits accepted, as the section advises a
/// robust decoder to); `=` followed by optional white space and a line break is a soft line break
/// and vanishes; any other `=` is kept with what follows it ("include the "=" character and the
/// following character in the decoded data without any transformation"). Line breaks stay as
/// written (CRLF or LF), and so does white space before them: the section's note (rule 3) says a
/// decoder should delete it as padding added in transport, but Python's `email` and Chromium's
/// MHTML reader keep it, and a saved stylesheet or page keeps every byte it was saved with.
pub(super) fn quoted_printable(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let Some(eq) = memchr::memchr(b'=', &raw[i..]).map(|at| i + at) else {
            out.extend_from_slice(&raw[i..]);
            break;
        };
        out.extend_from_slice(&raw[i..eq]);
        i = eq;
        let hex = |b: Option<&u8>| b.and_then(|&b| char::from(b).to_digit(16));
        if let (Some(hi), Some(lo)) = (hex(raw.get(i + 1)), hex(raw.get(i + 2))) {
            // Both digits are below 16, so the octet fits.
            out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
            i += 3;
            continue;
        }
        let after_space = i + 1 + raw[i + 1..].iter().take_while(|&&b| b == b' ' || b == b'\t').count();
        match &raw[after_space..] {
            [b'\r', b'\n', ..] => i = after_space + 2,
            [b'\n', ..] => i = after_space + 1,
            // The encoded text ends: the `=` was a soft line break before the delimiter.
            [] => i = after_space,
            _ => {
                out.push(b'=');
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_printable_decodes_as_rfc_2045_advises_a_robust_decoder_to() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"caf=C3=A9", "café".as_bytes()),
            (b"lower =c3=a9 case", "lower é case".as_bytes()),
            (b"soft=\r\nbreak", b"softbreak"),
            (b"soft=\nbreak", b"softbreak"),
            (b"soft= \t\r\nbreak", b"softbreak"),
            (b"charset=\r\n=3DUTF-8", b"charset=UTF-8"),
            // White space before a line break stays (RFC 2045 §6.7's note would delete it).
            (b"trailing  \r\nspace\t\nends", b"trailing  \r\nspace\t\nends"),
            // An encoded space at the end of a line is data.
            (b"AsterixDB>=20\nIt", b"AsterixDB> \nIt"),
            (b"a =20 \r\nb", b"a   \r\nb"),
            // Literal `=` that start no escape: kept with what follows.
            (b"<h1 id=\"h1\">", b"<h1 id=\"h1\">"),
            (b"a=zz b==3D c=4", b"a=zz b== c=4"),
            (b"ends with=", b"ends with"),
            (b"ends with= \r\n", b"ends with"),
            (b"line\r\n\r\n", b"line\r\n\r\n"),
        ];
        for (input, want) in cases {
            assert_eq!(
                String::from_utf8_lossy(&quoted_printable(input)),
                String::from_utf8_lossy(want),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn base64_decodes_as_rfc_2045_advises_a_robust_decoder_to() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"aGVsbG8gd29ybGQK", b"hello world\n", true),
            (b"aGVs\r\nbG8g\r\n d29y bGQK\r\n", b"hello world\n", true),
            (b"aGVsbG8=", b"hello", true),
            (b"aGVsbA==", b"hell", true),
            // Missing padding; what follows the padding is not data.
            (b"aGVsbA", b"hell", true),
            (b"aGVsbA== ignored", b"hell", true),
            // Characters outside the alphabet are ignored: the RFC's own example parts carry
            // prose where their data would be.
            (
                b"... base64 data goes here ...",
                &[0x6d, 0xab, 0x1e, 0xeb, 0x87, 0x5a, 0xb5, 0xa8, 0x28, 0x7a, 0xc8, 0x5e, 0xad],
                false,
            ),
            (b"?garbage", &[0x81, 0xaa, 0xdb, 0x6a, 0x07], false),
            (b"aGVsbG8gd", b"hello ", false),
        ];
        for (input, want, clean) in cases {
            assert_eq!(base64(input), (want.to_vec(), *clean), "{}", String::from_utf8_lossy(input));
        }
    }

    /// Well-formed bodies of every length, in lines of 76 and of odd lengths, with CRLF: the same
    /// bytes as the `base64` crate's strict decoder gives.
    #[test]
    fn base64_agrees_with_a_strict_decoder_on_well_formed_bodies() {
        use ::base64::Engine as _;
        let data: Vec<u8> = (0..3000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for len in (0..200).chain([2999, 3000]) {
            let encoded = ::base64::engine::general_purpose::STANDARD.encode(&data[..len]);
            for width in [76, 7, 1] {
                let lines: Vec<&[u8]> = encoded.as_bytes().chunks(width).collect();
                assert_eq!(
                    base64(&lines.join(&b"\r\n"[..])),
                    (data[..len].to_vec(), true),
                    "{len} bytes in lines of {width}"
                );
            }
        }
    }

    #[test]
    fn bodies_mail_parser_decodes_otherwise_are_found() {
        let cases: &[(&[u8], &str, bool)] = &[
            (b"aGVsbG8g\r\nd29ybGQK\r\n", "base64", false),
            (b"aGVsbA==\r\n", "base64", false),
            (b"aGVsbA\r\n", "base64", true),
            (b"aGVsbG8g\r\naGVsbA\r\n", "base64", true),
            (b"aGVsbA== ignored\r\n", "base64", true),
            (b"caf=C3=A9 soft=\r\nbreak", "quoted-printable", false),
            (b"a=\r\n", "quoted-printable", true),
            (b"?ie=UTF8&psc=1\r\n\r\nnext", "quoted-printable", true),
            (b"= x", "quoted-printable", true),
            (b"=00;=\r\n", "quoted-printable", true),
            (b"?psc=1", "quoted-printable", true),
            (b"=3D=\r\n=41\r\n", "quoted-printable", false),
            (b"x = 1\r\n", "quoted-printable", true),
            (b"soft= \r\nbreak", "quoted-printable", false),
            // White space before a line break, or before the delimiter, which mail-parser deletes.
            (b"a { \r\n}\r\n", "quoted-printable", true),
            (b"a\t\nb", "quoted-printable", true),
            (b"} ", "quoted-printable", true),
            (b"=1\r\n", "7bit", false),
        ];
        for (input, encoding, want) in cases {
            assert_eq!(parser_misdecodes(input, Some(encoding)), *want, "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn uuencoded_parts_decode_between_begin_and_end() {
        let body = b"begin 644 hello.txt\r\n,:&5L;&\\@=V]R;&0*\r\n`\r\nend\r\n";
        assert_eq!(uudecode(body).as_deref(), Some(&b"hello world\n"[..]));
        let decoded = decode(body, Some(" X-UUENCODE "));
        assert_eq!((&decoded.bytes[..], decoded.clean), (&b"hello world\n"[..], true));
        // Without its `end` (or its `begin`) the body is left as it is.
        assert_eq!(uudecode(b"begin 644 x\n,:&5L;&\\@=V]R;&0*\n"), None);
        assert_eq!(uudecode(b",:&5L;&\\@=V]R;&0*\nend\n"), None);
        assert!(is_uuencode(Some("x-uuencode")) && !is_uuencode(Some("base64")) && !is_uuencode(None));
    }

    #[test]
    fn unknown_encodings_are_identities() {
        for name in [None, Some("7bit"), Some("7-bit"), Some("plain"), Some("8 bit"), Some("binary"), Some("x-what")] {
            let decoded = decode(b"caf=C3=A9 aGVsbG8=", name);
            assert_eq!(&decoded.bytes[..], b"caf=C3=A9 aGVsbG8=", "{name:?}");
        }
    }

    #[test]
    fn a_blink_form_with_unescaped_equals_signs_decodes_whole() {
        let raw = b"<meta http-equiv=3D\"Content-Type\" content=3D\"text/html; charset=\r\n=3DUTF-8\">\r\n<h1 id=\"h1\">Form</h1>\r\n<input class=\"fc\" type=3D\"submit\" value=3D\"Submit\">\r\n";
        let out = String::from_utf8(decoded(raw, Some("Quoted-Printable")).into_owned()).expect("ascii");
        assert!(out.contains("<input class=\"fc\" type=\"submit\" value=\"Submit\">"), "{out}");
        assert!(!out.contains("=3D"), "{out}");
    }
}
