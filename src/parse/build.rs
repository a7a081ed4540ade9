//! The one MIME writer. A file in another format becomes the Internet message it stands for (an
//! Outlook `.msg`, a Safari web archive, an Apple Mail message with its attachments put back), so
//! that it is read by the same MIME reader and the rest of mailshelf sees one kind of message; it
//! is written here.
//!
//! Bodies go in base64 (the `base64` crate, lines of 76 characters). Header values go through one
//! encoder: text that is not ASCII as RFC 2047 encoded words, parameters as quoted strings or, when
//! not ASCII, RFC 2231 values, addresses as `"Name" <address>` (an encoded name when it is not
//! ASCII); control characters never reach a header, so no value can start a field of its own.

use base64::Engine as _;

/// Base64 (RFC 2045 §6.8) in lines of 76 characters, each ended by CRLF.
pub(super) fn base64_lines(data: &[u8], out: &mut Vec<u8>) {
    out.reserve(data.len() / 57 * 78 + 80);
    for line in data.chunks(57) {
        let at = out.len();
        out.resize(at + line.len().div_ceil(3) * 4, 0);
        let written = base64::engine::general_purpose::STANDARD.encode_slice(line, &mut out[at..]).unwrap_or(0);
        out.truncate(at + written);
        out.extend_from_slice(b"\r\n");
    }
}

/// A header value safe to write on one line: control characters (line breaks among them) become
/// spaces, and white space at the ends goes.
pub(super) fn clean(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().trim().to_string()
}

/// An unstructured header value (a subject, a title): printable ASCII as it is, anything else as
/// RFC 2047 encoded words of at most 45 bytes of text each, on folded lines.
pub(super) fn header_text(value: &str) -> String {
    let clean = clean(value);
    if clean.is_ascii() && !clean.contains("=?") {
        return clean;
    }
    encoded_words(&clean).join("\r\n ")
}

/// `text` as RFC 2047 encoded words (UTF-8, base64), split between characters.
fn encoded_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut chunk = String::new();
    for c in text.chars() {
        if chunk.len() + c.len_utf8() > 45 {
            words.push(encoded_word(&chunk));
            chunk.clear();
        }
        chunk.push(c);
    }
    if !chunk.is_empty() {
        words.push(encoded_word(&chunk));
    }
    words
}

fn encoded_word(s: &str) -> String {
    format!("=?utf-8?b?{}?=", base64::engine::general_purpose::STANDARD.encode(s))
}

/// Labels as a label field's value (`X-Keywords`, as [`super::labels`] reads it): a comma between
/// them, a label holding a comma or a quote in double quotes, one that is not ASCII as encoded
/// words (its quotes inside them, as Gmail writes them), the list folded with `eol` and a space
/// before a line would pass 76 characters.
pub(crate) fn label_list(labels: &[&str], eol: &str) -> String {
    let mut out = String::new();
    let mut line = "X-Keywords: ".len();
    for (i, label) in labels.iter().enumerate() {
        let label = clean(label);
        let item = if label.contains([',', '"']) { quote(&label) } else { label };
        let item = if item.is_ascii() && !item.contains("=?") { item } else { encoded_words(&item).join(" ") };
        if i > 0 {
            out.push(',');
            if line + item.len() + 2 > 76 {
                out.push_str(eol);
                line = 0;
            }
            out.push(' ');
            line += 2;
        }
        line += item.len();
        out.push_str(&item);
    }
    out
}

/// A parameter value as a quoted string, or `None` when it cannot be one (non-ASCII or control
/// characters).
pub(super) fn quoted(value: &str) -> Option<String> {
    let ok = value.chars().all(|c| c.is_ascii() && !c.is_ascii_control());
    ok.then(|| quote(value))
}

/// `value` in double quotes, a backslash before each quote and backslash in it.
fn quote(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A Content-Type or Content-Disposition parameter: a quoted string when ASCII, an RFC 2231 value
/// in UTF-8 otherwise.
pub(super) fn param(name: &str, value: &str) -> String {
    let value = clean(value);
    match quoted(&value) {
        Some(q) => format!("{name}={q}"),
        None => {
            let encoded: String = value
                .bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                        (b as char).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect();
            format!("{name}*=utf-8''{encoded}")
        }
    }
}

/// A mailbox for an address header: `"Name" <address>`, `address`, or `"Name" <>` for a name
/// without an address a reader can use; a name that is not ASCII as encoded words.
pub(super) fn mailbox(name: Option<&str>, address: Option<&str>) -> String {
    let address = address.map(clean).filter(|a| a.contains('@') && !a.contains(['<', '>', ' ', ',', '"']));
    let name = name.map(clean).filter(|n| !n.is_empty());
    let phrase = |n: &str| quoted(n).unwrap_or_else(|| encoded_words(n).join(" "));
    match (name, address) {
        (Some(n), Some(a)) if n != a => format!("{} <{a}>", phrase(&n)),
        (_, Some(a)) => a,
        (Some(n), None) => format!("{} <>", phrase(&n)),
        (None, None) => String::new(),
    }
}

/// A MIME type as written by another program, when it is a plain `type/subtype`.
pub(super) fn clean_type(t: &str) -> Option<String> {
    let t = t.trim().to_ascii_lowercase();
    let (main, sub) = t.split_once('/')?;
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b));
    (token(main) && token(sub)).then_some(t)
}

/// A MIME entity being built.
pub(super) enum Node {
    /// Content-Type, other header fields, decoded body (written base64).
    Leaf(String, Vec<(String, String)>, Vec<u8>),
    /// An enclosed message, written as it is.
    Message(Vec<(String, String)>, Vec<u8>),
    Multi(String, Vec<Node>),
}

impl Node {
    pub(super) fn leaf(ct: &str, headers: &[(String, String)], body: Vec<u8>) -> Node {
        Node::Leaf(ct.to_string(), headers.to_vec(), body)
    }

    /// The HTML text of the body, to see which attachments it refers to.
    pub(super) fn html(&self) -> Option<String> {
        match self {
            Node::Leaf(ct, _, b) if ct.starts_with("text/html") => Some(String::from_utf8_lossy(b).into_owned()),
            Node::Multi(_, kids) => kids.iter().find_map(Node::html),
            _ => None,
        }
    }
}

/// Writes MIME entities, with boundaries unique to the file (`seed`) and to each multipart.
pub(super) struct Writer {
    seed: String,
    next: usize,
}

impl Writer {
    pub(super) fn new(seed: String) -> Writer {
        Writer { seed, next: 0 }
    }

    /// Header fields as they are (their values already made safe by the encoder above).
    pub(super) fn header_block(&self, headers: &[(String, String)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (n, v) in headers {
            out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        out
    }

    /// Writes `node`'s header fields (its Content-Type and the rest) and body.
    pub(super) fn node(&mut self, node: &Node, out: &mut Vec<u8>) {
        match node {
            Node::Leaf(ct, headers, body) => {
                out.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
                out.extend_from_slice(&self.header_block(headers));
                out.extend_from_slice(b"Content-Transfer-Encoding: base64\r\n\r\n");
                base64_lines(body, out);
            }
            Node::Message(headers, body) => {
                out.extend_from_slice(b"Content-Type: message/rfc822\r\n");
                out.extend_from_slice(&self.header_block(headers));
                out.extend_from_slice(b"Content-Transfer-Encoding: 8bit\r\n\r\n");
                out.extend_from_slice(body);
                if !body.ends_with(b"\r\n") {
                    out.extend_from_slice(b"\r\n");
                }
            }
            Node::Multi(ct, kids) => {
                self.next += 1;
                let boundary = format!("=_mailshelf_{}_{}", self.seed, self.next);
                out.extend_from_slice(format!("Content-Type: {ct}; boundary=\"{boundary}\"\r\n\r\n").as_bytes());
                for kid in kids {
                    out.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
                    self.node(kid, out);
                }
                out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
            }
        }
    }
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
        assert!(
            clean_type("image/png").is_some() && clean_type("image/png; x=1").is_none() && clean_type("png").is_none()
        );
    }

    #[test]
    fn addresses_and_parameters_are_safe() {
        let cases: &[(Option<&str>, Option<&str>, &str)] = &[
            (Some("Ann Lee"), Some("ann@example.com"), "\"Ann Lee\" <ann@example.com>"),
            (Some("ann@example.com"), Some("ann@example.com"), "ann@example.com"),
            (Some("Say \"hi\"\r\nBcc: x"), None, "\"Say \\\"hi\\\"  Bcc: x\" <>"),
            (None, Some("/O=ORG/OU=EXCHANGE/CN=RECIPIENTS/CN=ANN"), ""),
            (Some("Zoë"), Some("z@example.com"), "=?utf-8?b?Wm/Dqw==?= <z@example.com>"),
        ];
        for (name, addr, want) in cases {
            assert_eq!(mailbox(*name, *addr), *want);
        }
        assert_eq!(param("filename", "a \"b\".txt"), "filename=\"a \\\"b\\\".txt\"");
        assert_eq!(param("filename", "résumé.pdf"), "filename*=utf-8''r%C3%A9sum%C3%A9.pdf");
        // A long subject is folded between encoded words, and reads back whole.
        let long = "Résumé ".repeat(20);
        let folded = header_text(&long);
        assert!(folded.lines().all(|l| l.len() <= 78), "{folded}");
        let msg = format!("Subject: {folded}\r\n\r\n");
        let parsed = crate::parse::parse_message(std::sync::Arc::from(msg.into_bytes())).expect("parses");
        assert_eq!(parsed.summary.subject.as_deref(), Some(long.trim()));
    }
}
