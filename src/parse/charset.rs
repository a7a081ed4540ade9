//! The encoding of a document whose MIME type names none, found the way a browser finds it, so a
//! saved page reads as it read when it was saved.
//!
//! HTML (HTML Standard, "determining the character encoding"): a byte order mark, else the
//! prescan of the first 1024 bytes for `<meta charset>` or `<meta http-equiv=Content-Type>`, else
//! UTF-8 when the bytes are valid UTF-8, else chardetng's guess (the detector Firefox uses for
//! legacy content without a label). CSS (CSS Syntax §3.2): a byte order mark, else `@charset "…";`
//! at the very start, else the same fallback. encoding_rs does the decoding.

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8, WINDOWS_1252, X_USER_DEFINED};

/// How much of an HTML document the prescan reads, as the HTML Standard advises.
const PRESCAN_BYTES: usize = 1024;

/// Decodes an HTML document that declared no charset.
pub(super) fn decode_html(bytes: &[u8]) -> String {
    let encoding = Encoding::for_bom(bytes)
        .map(|(e, _)| e)
        .or_else(|| prescan(&bytes[..bytes.len().min(PRESCAN_BYTES)]))
        .unwrap_or_else(|| fallback(bytes));
    decode(encoding, bytes)
}

/// Decodes a stylesheet that declared no charset.
pub(super) fn decode_css(bytes: &[u8]) -> String {
    let encoding =
        Encoding::for_bom(bytes).map(|(e, _)| e).or_else(|| css_charset(bytes)).unwrap_or_else(|| fallback(bytes));
    decode(encoding, bytes)
}

/// Decodes a text part that declared no charset: as UTF-8 when its bytes are UTF-8, else in the
/// legacy encoding they most likely are, as mail clients read unlabelled 8-bit mail (their
/// fallback encoding, or a detector), rather than replacing every byte that is not US-ASCII.
/// UTF-8 cut short in its last character (a name a mailer cut at a byte count) is UTF-8 with
/// that character replaced, once UTF-8 beyond ASCII came before it.
pub(super) fn decode_unlabelled(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(e) if e.error_len().is_none() && !bytes[..e.valid_up_to()].is_ascii() => {
            String::from_utf8_lossy(bytes).into_owned()
        }
        Err(_) => decode(fallback(bytes), bytes),
    }
}

/// Whether a charset label names US-ASCII, which no 8-bit byte can be in.
pub(super) fn is_ascii_label(label: &str) -> bool {
    let label = label.trim().trim_matches('"');
    ["us-ascii", "ascii", "ansi_x3.4-1968", "iso646-us"].iter().any(|l| label.eq_ignore_ascii_case(l))
}

/// Decodes a part labelled US-ASCII that holds 8-bit bytes, so that the label is wrong: as UTF-8
/// when the bytes are UTF-8 (what such mail almost always is), else as windows-1252, to which the
/// Encoding Standard maps the label.
pub(super) fn decode_mislabelled_ascii(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => WINDOWS_1252.decode_without_bom_handling(bytes).0.into_owned(),
    }
}

/// Decodes a plain text file that declared no charset (an attached `.txt` or `.csv` sent as
/// `application/octet-stream`): a byte order mark, else UTF-8 when the bytes are UTF-8, else the
/// same fallback as for HTML.
pub(super) fn decode_text(bytes: &[u8]) -> String {
    let encoding = Encoding::for_bom(bytes).map(|(e, _)| e).unwrap_or_else(|| fallback(bytes));
    decode(encoding, bytes)
}

/// `decode` honours a BOM over the encoding given, as browsers do.
fn decode(encoding: &'static Encoding, bytes: &[u8]) -> String {
    encoding.decode(bytes).0.into_owned()
}

/// UTF-8 when the bytes are UTF-8, else the legacy encoding they most likely are.
fn fallback(bytes: &[u8]) -> &'static Encoding {
    if std::str::from_utf8(bytes).is_ok() {
        return UTF_8;
    }
    // Message content never runs script, so ISO-2022-JP is safe to guess (as mail clients do).
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Allow);
    detector.feed(bytes, true);
    detector.guess(None, chardetng::Utf8Detection::Deny)
}

/// CSS Syntax §3.2: the bytes `@charset "` at the very start, a label, then `";`.
fn css_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let rest = bytes.strip_prefix(b"@charset \"")?;
    let end = rest.iter().take(64).position(|&b| b == b'"')?;
    if rest.get(end + 1) != Some(&b';') {
        return None;
    }
    // A stylesheet that says UTF-16 in ASCII bytes is not UTF-16.
    Encoding::for_label(&rest[..end]).map(|e| if e == UTF_16BE || e == UTF_16LE { UTF_8 } else { e })
}

fn is_space(b: u8) -> bool {
    matches!(b, 0x09 | 0x0A | 0x0C | 0x0D | 0x20)
}

/// "Prescan a byte stream to determine its encoding", step for step; `None` when the bytes run out
/// before a `<meta>` declares one.
pub(super) fn prescan(b: &[u8]) -> Option<&'static Encoding> {
    let mut pos = 0;
    while pos < b.len() {
        let rest = &b[pos..];
        if rest.starts_with(b"<!--") {
            // To the end of the first `-->` whose dashes come after the `<!`.
            pos += 2 + find(&rest[2..], b"-->")? + 3;
            continue;
        }
        if starts_with_ignore_case(rest, b"<meta") && rest.get(5).is_some_and(|&c| is_space(c) || c == b'/') {
            pos += 5;
            if let Some(found) = meta(b, &mut pos)? {
                return Some(found);
            }
            continue;
        }
        let tag_start = match rest {
            [b'<', c, ..] if c.is_ascii_alphabetic() => Some(1),
            [b'<', b'/', c, ..] if c.is_ascii_alphabetic() => Some(2),
            _ => None,
        };
        if let Some(skip) = tag_start {
            pos += skip;
            while pos < b.len() && !(is_space(b[pos]) || b[pos] == b'>') {
                pos += 1;
            }
            while attribute(b, &mut pos)?.is_some() {}
            pos += 1;
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"</") || rest.starts_with(b"<?") {
            pos += find(rest, b">")? + 1;
            continue;
        }
        pos += 1;
    }
    None
}

/// The attributes of a `<meta>` (`pos` just after `<meta`): `Some(Some(encoding))` when it
/// declares one, `Some(None)` when it does not, `None` when the bytes ran out.
fn meta(b: &[u8], pos: &mut usize) -> Option<Option<&'static Encoding>> {
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let (mut got_pragma, mut need_pragma, mut charset) = (false, None, None);
    while let Some((name, value)) = attribute(b, pos)? {
        if seen.contains(&name) {
            continue;
        }
        match name.as_slice() {
            b"http-equiv" => got_pragma |= value == b"content-type",
            b"content" if charset.is_none() => {
                if let Some(e) = charset_in_content(&value) {
                    charset = Some(e);
                    need_pragma = Some(true);
                }
            }
            b"charset" => {
                charset = Encoding::for_label(&value);
                need_pragma = Some(false);
            }
            _ => {}
        }
        seen.push(name);
    }
    *pos += 1;
    let declared = match (need_pragma, charset) {
        (Some(true), Some(_)) if !got_pragma => None,
        (Some(_), Some(e)) if e == UTF_16BE || e == UTF_16LE => Some(UTF_8),
        (Some(_), Some(e)) if e == X_USER_DEFINED => Some(WINDOWS_1252),
        (Some(_), e) => e,
        (None, _) => None,
    };
    Some(declared)
}

/// "Get an attribute": `Some(None)` at the end of the tag, `None` when the bytes ran out. Names
/// and unquoted values come back lower-cased, as the algorithm says.
#[allow(clippy::type_complexity)]
fn attribute(b: &[u8], pos: &mut usize) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
    let at = |p: usize| b.get(p).copied();
    while at(*pos).is_some_and(|c| is_space(c) || c == b'/') {
        *pos += 1;
    }
    if at(*pos)? == b'>' {
        return Some(None);
    }
    let (mut name, mut value) = (Vec::new(), Vec::new());
    loop {
        let c = at(*pos)?;
        match c {
            b'=' if !name.is_empty() => {
                *pos += 1;
                break;
            }
            c if is_space(c) => {
                while at(*pos).is_some_and(is_space) {
                    *pos += 1;
                }
                if at(*pos)? != b'=' {
                    return Some(Some((name, value)));
                }
                *pos += 1;
                break;
            }
            b'/' | b'>' => return Some(Some((name, value))),
            c => name.push(c.to_ascii_lowercase()),
        }
        *pos += 1;
    }
    while at(*pos).is_some_and(is_space) {
        *pos += 1;
    }
    match at(*pos)? {
        quote @ (b'"' | b'\'') => loop {
            *pos += 1;
            let c = at(*pos)?;
            if c == quote {
                *pos += 1;
                return Some(Some((name, value)));
            }
            value.push(c.to_ascii_lowercase());
        },
        b'>' => Some(Some((name, value))),
        c => {
            value.push(c.to_ascii_lowercase());
            loop {
                *pos += 1;
                let c = at(*pos)?;
                if is_space(c) || c == b'>' {
                    return Some(Some((name, value)));
                }
                value.push(c.to_ascii_lowercase());
            }
        }
    }
}

/// "Extracting a character encoding from a meta element": the label after `charset=` in a
/// `content` value such as `text/html; charset=koi8-r`.
fn charset_in_content(v: &[u8]) -> Option<&'static Encoding> {
    let mut pos = 0;
    loop {
        pos += find(&v[pos..], b"charset")? + b"charset".len();
        while v.get(pos).is_some_and(|&c| is_space(c)) {
            pos += 1;
        }
        if v.get(pos) != Some(&b'=') {
            continue;
        }
        pos += 1;
        while v.get(pos).is_some_and(|&c| is_space(c)) {
            pos += 1;
        }
        return match v.get(pos)? {
            &q @ (b'"' | b'\'') => {
                let end = v[pos + 1..].iter().position(|&c| c == q)?;
                Encoding::for_label(&v[pos + 1..pos + 1 + end])
            }
            _ => {
                let end = v[pos..].iter().position(|&c| is_space(c) || c == b';').unwrap_or(v.len() - pos);
                Encoding::for_label(&v[pos..pos + end])
            }
        };
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn starts_with_ignore_case(hay: &[u8], prefix: &[u8]) -> bool {
    hay.len() >= prefix.len() && hay[..prefix.len()].eq_ignore_ascii_case(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding_rs::{KOI8_R, SHIFT_JIS, WINDOWS_1251};

    #[test]
    fn unlabelled_text_is_utf8_even_cut_short() {
        let cases: &[(&[u8], &str)] = &[
            ("Картинка".as_bytes(), "Картинка"),
            // Cut in its last character (as Yahoo cut a long file name): UTF-8 all the same.
            (&"Картинка чт".as_bytes()[..20], "Картинка ч\u{FFFD}"),
            // Latin-1 whose last byte could begin a UTF-8 character, after ASCII only: Latin-1.
            (b"caf\xe9", "caf\u{e9}"),
            (b"Die Hasen und die Fr\xf6sche", "Die Hasen und die Fr\u{f6}sche"),
        ];
        for (input, want) in cases {
            assert_eq!(decode_unlabelled(input), *want, "{input:?}");
        }
    }

    #[test]
    fn prescan_finds_what_browsers_find() {
        let cases: &[(&[u8], Option<&'static Encoding>)] = &[
            (b"<meta charset=koi8-r>", Some(KOI8_R)),
            (b"<META CHARSET='Shift_JIS'>", Some(SHIFT_JIS)),
            (b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1251\">", Some(WINDOWS_1251)),
            (b"<meta content=\"text/html; charset=koi8-r\" http-equiv=content-type>", Some(KOI8_R)),
            (b"<meta content=\"text/html; charset=koi8-r\">", None),
            (b"<!-- <meta charset=koi8-r> --><meta charset=shift_jis>", Some(SHIFT_JIS)),
            (b"<title x='<meta charset=koi8-r>'></title><meta charset=windows-1251>", Some(WINDOWS_1251)),
            (b"<meta charset=utf-16le>", Some(UTF_8)),
            (b"<meta charset=x-user-defined>", Some(WINDOWS_1252)),
            (b"<meta charset=no-such-thing><meta charset=koi8-r>", Some(KOI8_R)),
            (b"<meta name=viewport><meta charset=koi8-r>", Some(KOI8_R)),
            (b"<metadata charset=koi8-r>", None),
            (b"<meta charset=\"koi8-r", None),
            (b"<p>no declaration</p>", None),
        ];
        for (input, want) in cases {
            assert_eq!(prescan(input), *want, "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn documents_decode_as_declared_or_detected() {
        let (koi8, _, _) = KOI8_R.encode("Привет, мир");
        let mut page = b"<html><head><meta charset=koi8-r></head><body>".to_vec();
        page.extend_from_slice(&koi8);
        assert!(decode_html(&page).contains("Привет, мир"));
        let (cp1251, _, _) = WINDOWS_1251.encode("Новини України: останні події та коментарі експертів");
        let mut undeclared = b"<p>".to_vec();
        undeclared.extend_from_slice(&cp1251);
        assert!(decode_html(&undeclared).contains("Новини України"), "{}", decode_html(&undeclared));
        assert_eq!(decode_html("<p>déjà vu</p>".as_bytes()), "<p>déjà vu</p>");
        assert_eq!(decode_html(b"\xef\xbb\xbf<meta charset=koi8-r>\xd0\xb6"), "<meta charset=koi8-r>ж");
        let mut css = b"@charset \"koi8-r\";\np::before { content: \"".to_vec();
        css.extend_from_slice(&koi8);
        assert!(decode_css(&css).contains("Привет"));
        assert_eq!(decode_css(b"p { color: red }"), "p { color: red }");
    }
}
