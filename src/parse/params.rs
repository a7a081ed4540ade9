//! RFC 2231 parameter values continued over several segments (`filename*0*=UTF-8''%C3;
//! filename*1*=%A9t%C3%A9.txt`), read again from the field's own text. mail-parser decodes each
//! segment alone, and later segments as UTF-8 whatever the first one named: a character whose
//! bytes a writer split between two segments, or any non-ASCII letter of a Latin-1 name after the
//! first segment, came out as a replacement character. Here the segments' bytes are joined in
//! their order first (RFC 2231 §4.1), then decoded by the charset the first one names.

/// The value of parameter `name` in a header field's value, from its numbered segments; `None`
/// when the field has no such segments.
pub(super) fn continued(field: &str, name: &str) -> Option<String> {
    let mut segments: Vec<(u32, bool, String)> = Vec::new();
    for param in split_params(field) {
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
            segments.push((n, extended, unquote(value.trim())));
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

/// The `;`-separated parameters of a field's value (its first item, the type or disposition,
/// among them), quoted strings kept whole.
fn split_params(field: &str) -> Vec<&str> {
    let (mut out, mut start, mut quoted, mut escaped) = (Vec::new(), 0, false, false);
    for (i, c) in field.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ';' if !quoted => {
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
fn unquote(v: &str) -> String {
    match v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => {
            let mut out = String::with_capacity(inner.len());
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                out.push(if c == '\\' { chars.next().unwrap_or('\\') } else { c });
            }
            out
        }
        None => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::continued;

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
