//! The encoding of a document whose MIME type names none, found the way a browser finds it, so a
//! saved page reads as it read when it was saved.
//!
//! HTML (HTML Standard, "determining the character encoding"): a byte order mark, else the
//! prescan of the first 1024 bytes for `<meta charset>` or `<meta http-equiv=Content-Type>`, which
//! turns to an XML declaration at the very start (`<?xml version="1.0" encoding="…"?>`, "get an XML
//! encoding") when it finds no `<meta>`, else UTF-8 when the bytes are valid UTF-8, else
//! chardetng's guess (the detector Firefox uses for legacy content without a label). XHTML and XML
//! (XML 1.0 §4.3.3 and Appendix F, as browsers read a document as XML): a byte order mark, else
//! the XML declaration; XHTML, which mailshelf reads as HTML, then the HTML prescan; else the same
//! fallback. CSS (CSS Syntax §3.2): a byte order mark, else `@charset "…";` at the very start, else
//! the same fallback. One rule ([`Document`]) for all three; encoding_rs does the decoding.

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8, WINDOWS_1252, X_USER_DEFINED};

/// How much of an HTML document the prescan reads, as the HTML Standard advises.
const PRESCAN_BYTES: usize = 1024;

/// What a document is read as, which decides where it may say its own encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Document {
    /// HTML: a `<meta>`, else an XML declaration.
    Html,
    /// XHTML, read as XML by a browser and as HTML by mailshelf: the XML declaration first (XML
    /// knows no `<meta>`), then a `<meta>`.
    Xhtml,
    /// Any other XML: the XML declaration.
    Xml,
    /// A stylesheet: `@charset`.
    Css,
}

impl Document {
    /// The document a part of this MIME type is, when it is one that may say its own encoding.
    pub(super) fn of_type(content_type: &str) -> Option<Document> {
        match content_type {
            "text/html" => Some(Document::Html),
            "application/xhtml+xml" => Some(Document::Xhtml),
            "text/xml" | "application/xml" => Some(Document::Xml),
            "text/css" => Some(Document::Css),
            _ => None,
        }
    }
}

/// Decodes a document that declared no charset where it was sent: in the encoding its byte order
/// mark, else its own declaration ([`Document`]), names; else UTF-8 when it is, else the legacy
/// encoding it most likely is.
pub(super) fn decode_document(document: Document, bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(PRESCAN_BYTES)];
    let declared = || match document {
        Document::Html => prescan(head),
        Document::Xhtml => xml_declaration(head).or_else(|| prescan(head)),
        Document::Xml => xml_declaration(head),
        Document::Css => css_charset(bytes),
    };
    let encoding = Encoding::for_bom(bytes).map(|(e, _)| e).or_else(declared).unwrap_or_else(|| fallback(bytes));
    decode(encoding, bytes)
}

/// Decodes an HTML document that declared no charset.
pub(super) fn decode_html(bytes: &[u8]) -> String {
    decode_document(Document::Html, bytes)
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

/// "Prescan a byte stream to determine its encoding", step for step: UTF-16 by the first bytes of
/// an XML declaration, else the first `<meta>` that declares an encoding, else, when the bytes run
/// out, the XML declaration's ("get an XML encoding"); `None` when none of them names one.
pub(super) fn prescan(b: &[u8]) -> Option<&'static Encoding> {
    utf16_declaration(b).or_else(|| meta_prescan(b)).or_else(|| xml_declaration(b))
}

/// `<?x` in UTF-16 without a byte order mark: the only way a declaration in UTF-16 can begin (XML
/// Appendix F; the HTML Standard's prescan, for compatibility with WebKit).
fn utf16_declaration(b: &[u8]) -> Option<&'static Encoding> {
    if b.starts_with(&[0x3C, 0, 0x3F, 0, 0x78, 0]) {
        Some(UTF_16LE)
    } else if b.starts_with(&[0, 0x3C, 0, 0x3F, 0, 0x78]) {
        Some(UTF_16BE)
    } else {
        None
    }
}

/// The encoding an XML declaration at the very start of `b` names (`<?xml version="1.0"
/// encoding="iso-8859-1"?>`), as the HTML Standard's "get an XML encoding" reads it: the first
/// `encoding` before the declaration's `>`, `=`, a quoted label without white space. A label of
/// UTF-16 in bytes that read as ASCII is UTF-8; a declaration in UTF-16 is found by its bytes.
fn xml_declaration(b: &[u8]) -> Option<&'static Encoding> {
    if let Some(utf16) = utf16_declaration(b) {
        return Some(utf16);
    }
    if !b.starts_with(b"<?xml") {
        return None;
    }
    let declaration = &b[..b.iter().position(|&c| c == b'>')?];
    let mut pos = find(declaration, b"encoding")? + b"encoding".len();
    let skip_space = |pos: &mut usize| {
        while declaration.get(*pos).is_some_and(|&c| c <= 0x20) {
            *pos += 1;
        }
    };
    skip_space(&mut pos);
    if declaration.get(pos) != Some(&b'=') {
        return None;
    }
    pos += 1;
    skip_space(&mut pos);
    let quote = *declaration.get(pos).filter(|&&q| q == b'"' || q == b'\'')?;
    let label = &declaration[pos + 1..];
    let label = &label[..label.iter().position(|&c| c == quote)?];
    if label.iter().any(|&c| c <= 0x20) {
        return None;
    }
    Encoding::for_label(label).map(|e| if e == UTF_16BE || e == UTF_16LE { UTF_8 } else { e })
}

/// The prescan's loop over the markup: the first `<meta>` that declares an encoding; `None` when
/// the bytes run out first.
fn meta_prescan(b: &[u8]) -> Option<&'static Encoding> {
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
    use encoding_rs::{ISO_8859_15, KOI8_R, SHIFT_JIS, WINDOWS_1251};

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
        assert!(decode_document(Document::Css, &css).contains("Привет"));
        assert_eq!(decode_document(Document::Css, b"p { color: red }"), "p { color: red }");
    }

    #[test]
    fn xml_declarations_name_the_encoding_as_browsers_read_them() {
        let cases: &[(&[u8], Option<&'static Encoding>)] = &[
            (b"<?xml version=\"1.0\" encoding=\"iso-8859-15\"?><html/>", Some(ISO_8859_15)),
            (b"<?xml version='1.0' encoding = 'Shift_JIS' standalone='yes'?>", Some(SHIFT_JIS)),
            (b"<?xml version=\"1.0\" encoding=\"UTF-16\"?>", Some(UTF_8)),
            (b"<\0?\0x\0m\0l\0", Some(UTF_16LE)),
            (b"\0<\0?\0x\0m\0l", Some(UTF_16BE)),
            // Only at the very start, only before the declaration's end, only a whole quoted label.
            (b" <?xml version=\"1.0\" encoding=\"koi8-r\"?>", None),
            (b"<?xml version=\"1.0\"?><p encoding=\"koi8-r\">", None),
            (b"<?xml version=\"1.0\" encoding=\"koi8-r", None),
            (b"<?xml version=\"1.0\" encoding=koi8-r?>", None),
            (b"<?xml version=\"1.0\" encoding=\"koi8 r\"?>", None),
            (b"<?xml version=\"1.0\" encoding=\"no-such-thing\"?>", None),
            (b"<?xml version=\"1.0\"?>", None),
        ];
        for (input, want) in cases {
            assert_eq!(xml_declaration(input), *want, "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn a_declaration_and_a_meta_count_as_the_document_s_kind_says() {
        let euro = ISO_8859_15.encode("5 \u{20ac}").0;
        let both =
            [b"<?xml version=\"1.0\" encoding=\"iso-8859-15\"?><meta charset=koi8-r><p>".as_slice(), &euro].concat();
        // XML knows no <meta>: the declaration.
        assert!(decode_document(Document::Xhtml, &both).ends_with("<p>5 \u{20ac}"));
        assert!(decode_document(Document::Xml, &both).ends_with("<p>5 \u{20ac}"));
        // HTML reads the <meta>, and the declaration only where there is none.
        let as_koi8 = KOI8_R.decode_without_bom_handling(&euro).0;
        assert!(decode_document(Document::Html, &both).ends_with(&format!("<p>{as_koi8}")));
        let declared_only = [b"<?xml version=\"1.0\" encoding=\"iso-8859-15\"?><p>".as_slice(), &euro].concat();
        for document in [Document::Html, Document::Xhtml, Document::Xml] {
            assert!(decode_document(document, &declared_only).ends_with("<p>5 \u{20ac}"), "{document:?}");
        }
        // A byte order mark before all; XHTML without a declaration still reads its <meta>.
        let bom = b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"koi8-r\"?>\xd0\xb6";
        assert_eq!(decode_document(Document::Xhtml, bom).chars().last(), Some('ж'));
        assert!(decode_document(Document::Xhtml, b"<meta charset=koi8-r><p>\xd6").ends_with("<p>ж"));
    }
}
