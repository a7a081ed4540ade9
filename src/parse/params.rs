//! RFC 2231 parameter values continued over several segments (`filename*0*=UTF-8''%C3;
//! filename*1*=%A9t%C3%A9.txt`), read again from the field's own text. mail-parser decodes each
//! segment alone, and later segments as UTF-8 whatever the first one named: a character whose
//! bytes a writer split between two segments, or any non-ASCII letter of a Latin-1 name after the
//! first segment, came out as a replacement character. Here the segments' bytes are joined in
//! their order first (RFC 2231 §4.1), then decoded by the charset the first one names.
//!
//! A value written in raw 8-bit bytes with no charset at all (`filename="Fr\xf6sche.txt"`, as
//! Eudora wrote it), which mail-parser reads as UTF-8 with a replacement character for each such
//! byte, is read again from the field's bytes as 8-bit header text without a charset is read
//! ([`super::charset::decode_unlabelled`]), as mail clients read it with their fallback charset.

/// The value of parameter `name` in a header field's value, from its numbered segments; `None`
/// when the field has no such segments.
pub(super) fn continued(field: &str, name: &str) -> Option<String> {
    let mut segments: Vec<(u32, bool, String)> = Vec::new();
    // The parameters are cut at ASCII bytes, so each is UTF-8 as the field is.
    for param in split_params(field.as_bytes()).into_iter().filter_map(|p| std::str::from_utf8(p).ok()) {
        let Some((key, value)) = param.split_once('=') else { continue };
        let key = key.trim();
        let Some(rest) = key.get(..name.len()).filter(|k| k.eq_ignore_ascii_case(name)).map(|_| &key[name.len()..])
        else {
            continue;
        };
        let Some(rest) = rest.strip_prefix('*') else { continue };
        let (number, extended) = match rest.strip_suffix('*') {
            Some(n) => (n, true),
            None => (rest, false),
        };
        let Ok(n) = number.parse::<u32>() else { continue };
        if !segments.iter().any(|s| s.0 == n) {
            segments.push((n, extended, String::from_utf8_lossy(&unquote(value.trim().as_bytes())).into_owned()));
        }
    }
    if segments.is_empty() {
        return None;
    }
    segments.sort_by_key(|s| s.0);
    let mut charset = None;
    let mut bytes = Vec::new();
    for (n, extended, value) in &segments {
        let mut value = value.as_str();
        if *n == 0 && *extended {
            let mut fields = value.splitn(3, '\'');
            if let (Some(cs), Some(_language), Some(rest)) = (fields.next(), fields.next(), fields.next()) {
                charset = Some(cs);
                value = rest;
            }
        }
        if *extended {
            bytes.extend(percent_encoding::percent_decode_str(value));
        } else {
            bytes.extend_from_slice(value.as_bytes());
        }
    }
    let decoder = charset.and_then(|c| mail_parser::decoders::charsets::map::charset_decoder(c.as_bytes()));
    Some(match decoder {
        Some(decode) => decode(&bytes),
        None => String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// The value of parameter `name` (not continued) in a header field's bytes, read as 8-bit text
/// without a charset; `None` when the field has no such parameter.
pub(super) fn unlabelled(field: &[u8], name: &str) -> Option<String> {
    split_params(field).into_iter().skip(1).find_map(|param| {
        let eq = memchr::memchr(b'=', param)?;
        let key = param[..eq].trim_ascii();
        if !key.eq_ignore_ascii_case(name.as_bytes()) {
            return None;
        }
        // Unfolded: a line break in a folded quoted value goes, the white space after it stays.
        let mut value = unquote(param[eq + 1..].trim_ascii());
        value.retain(|&b| b != b'\r' && b != b'\n');
        Some(super::charset::decode_unlabelled(&value))
    })
}

/// The `;`-separated parameters of a field's value (its first item, the type or disposition,
/// among them), quoted strings kept whole.
fn split_params(field: &[u8]) -> Vec<&[u8]> {
    let (mut out, mut start, mut quoted, mut escaped) = (Vec::new(), 0, false, false);
    for (i, &b) in field.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            b';' if !quoted => {
                out.push(&field[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&field[start..]);
    out
}

/// A quoted string's content (its escapes undone), or the token as it is.
fn unquote(v: &[u8]) -> Vec<u8> {
    match v.strip_prefix(b"\"").and_then(|v| v.strip_suffix(b"\"")) {
        Some(inner) => {
            let mut out = Vec::with_capacity(inner.len());
            let mut bytes = inner.iter();
            while let Some(&b) = bytes.next() {
                out.push(if b == b'\\' { bytes.next().copied().unwrap_or(b'\\') } else { b });
            }
            out
        }
        None => v.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::{continued, unlabelled};

    #[test]
    fn raw_8bit_values_without_a_charset_read_as_unlabelled_text() {
        let cases: &[(&[u8], &str, Option<&str>)] = &[
            (b"attachment; filename=\"HasenundFr\xf6sche.txt\"", "filename", Some("HasenundFr\u{f6}sche.txt")),
            (b"application/octet-stream; NAME=Fr\xf6sche.bin", "name", Some("Fr\u{f6}sche.bin")),
            (
                b"attachment; size=3;\r\n filename=\"Gr\xfc\xdfe\r\n an alle.txt\"",
                "filename",
                Some("Gr\u{fc}\u{df}e an alle.txt"),
            ),
            (b"attachment; filename=\"caf\xc3\xa9.txt\"", "filename", Some("caf\u{e9}.txt")),
            (b"attachment; filename=\"a \\\"b\\\" ;c.txt\"", "filename", Some("a \"b\" ;c.txt")),
            // Another parameter, the disposition itself, a continued value: not this one.
            (b"attachment; creation-date=\"x\"", "filename", None),
            (b"filename", "filename", None),
            (b"attachment; filename*0=\"a\"; filename*1=\"b\"", "filename", None),
        ];
        for (field, name, want) in cases {
            assert_eq!(unlabelled(field, name).as_deref(), *want, "{}", String::from_utf8_lossy(field));
        }
    }

    #[test]
    fn segments_are_joined_before_they_are_decoded() {
        for (field, want) in [
            ("attachment; filename*0*=UTF-8''%C3; filename*1*=%A9t%C3%A9.txt", Some("été.txt")),
            ("attachment;\r\n filename*1*=%E9.txt;\r\n filename*0*=iso-8859-1'fr'caf%E9", Some("caféé.txt")),
            ("attachment; filename*0=\"long \\\"name\\\" \"; filename*1*=%C3%A9.pdf", Some("long \"name\" é.pdf")),
            ("attachment; filename*0*=utf-8''a%; FILENAME*1=b", Some("a%b")),
            ("attachment; filename=\"plain.txt\"", None),
            ("attachment; filename*=UTF-8''%C3%A9.txt", None),
        ] {
            assert_eq!(continued(field, "filename").as_deref(), want, "{field}");
        }
    }
}
