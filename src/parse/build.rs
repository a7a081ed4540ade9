//! Writing the Internet message a file in another format stands for (a Safari web archive, an
//! Apple Mail message with its attachments put back), so that it is read by the same MIME reader
//! and the rest of mailshelf sees one kind of message.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Base64 (RFC 2045 §6.8) in lines of 76 characters, each ended by CRLF.
pub(super) fn base64_lines(data: &[u8], out: &mut Vec<u8>) {
    out.reserve(data.len() / 57 * 78 + 80);
    for line in data.chunks(57) {
        for chunk in line.chunks(3) {
            let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]);
                } else {
                    out.push(b'=');
                }
            }
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// A header value that is safe to write: printable ASCII as it is (control characters become
/// spaces), anything else as one RFC 2047 encoded word per chunk.
pub(super) fn header_text(value: &str) -> String {
    let clean: String = value.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let clean = clean.trim();
    if clean.is_ascii() && !clean.contains("=?") {
        return clean.to_string();
    }
    let mut words = Vec::new();
    let mut chunk = String::new();
    for c in clean.chars() {
        if chunk.len() + c.len_utf8() > 45 {
            words.push(encoded_word(&chunk));
            chunk.clear();
        }
        chunk.push(c);
    }
    if !chunk.is_empty() {
        words.push(encoded_word(&chunk));
    }
    words.join("\r\n ")
}

fn encoded_word(s: &str) -> String {
    let mut b = Vec::new();
    base64_lines(s.as_bytes(), &mut b);
    let b = String::from_utf8_lossy(&b).replace("\r\n", "");
    format!("=?utf-8?b?{b}?=")
}

/// A parameter value as a quoted string, or `None` when it cannot be one (non-ASCII or control
/// characters): such a value is left out.
pub(super) fn quoted(value: &str) -> Option<String> {
    let ok = value.chars().all(|c| c.is_ascii() && !c.is_ascii_control());
    ok.then(|| format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\"")))
}

/// A MIME type as written by another program, when it is a plain `type/subtype`.
pub(super) fn clean_type(t: &str) -> Option<String> {
    let t = t.trim().to_ascii_lowercase();
    let (main, sub) = t.split_once('/')?;
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b));
    (token(main) && token(sub)).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_vectors() {
        let cases: &[(&[u8], &str)] = &[
            (b"", ""),
            (b"f", "Zg==\r\n"),
            (b"fo", "Zm8=\r\n"),
            (b"foo", "Zm9v\r\n"),
            (b"foob", "Zm9vYg==\r\n"),
            (b"fooba", "Zm9vYmE=\r\n"),
            (b"foobar", "Zm9vYmFy\r\n"),
        ];
        for (input, want) in cases {
            let mut out = Vec::new();
            base64_lines(input, &mut out);
            assert_eq!(String::from_utf8(out).expect("ascii"), *want);
        }
        let mut out = Vec::new();
        base64_lines(&[0u8; 100], &mut out);
        assert_eq!(out.split(|&b| b == b'\n').next().map(<[u8]>::len), Some(77));
    }

    #[test]
    fn header_values_and_types() {
        assert_eq!(header_text("Plain\ttitle"), "Plain title");
        assert_eq!(header_text("Tübingen"), "=?utf-8?b?VMO8YmluZ2Vu?=");
        assert_eq!(quoted("a\"b"), Some("\"a\\\"b\"".into()));
        assert_eq!(quoted("ü"), None);
        assert_eq!(clean_type(" Text/HTML "), Some("text/html".into()));
        assert_eq!(clean_type("text/html; x"), None);
    }
}
