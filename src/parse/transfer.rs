//! Undoing a Content-Transfer-Encoding (RFC 2045 §6) for the parts whose bytes we decode ourselves
//! (documents without a charset, whose encoding is found in their own bytes).
//!
//! Quoted-printable is decoded the robust way RFC 2045 §6.7 recommends, as browsers and mail
//! clients do: an `=` that starts neither an escape nor a soft line break is kept as it is. Savers
//! write such bytes (Blink once left the `=` of `id="h1"` unescaped in MHTML), and a strict decoder
//! that gives up on the first one would leave the whole part encoded, every `=3D` showing.

use std::borrow::Cow;

/// A body's bytes with its Content-Transfer-Encoding undone; as they are when the encoding is an
/// identity or unknown, or base64 that does not decode.
pub(super) fn decoded<'a>(raw: &'a [u8], encoding: Option<&str>) -> Cow<'a, [u8]> {
    match encoding.map(|e| e.trim().to_ascii_lowercase()).as_deref() {
        Some("base64") => mail_parser::decoders::base64::base64_decode(raw).map_or(Cow::Borrowed(raw), Cow::Owned),
        Some("quoted-printable") => Cow::Owned(quoted_printable(raw)),
        _ => Cow::Borrowed(raw),
    }
}

/// RFC 2045 §6.7: `=XX` is the octet XX (lower-case hex digits accepted, as the section advises a
/// robust decoder to); `=` followed by optional white space and a line break is a soft line break
/// and vanishes; white space at the end of a line was added in transport and is deleted; any other
/// `=` is kept with what follows it ("include the "=" character and the following character in
/// the decoded data without any transformation"). Line breaks stay as written (CRLF or LF).
pub(super) fn quoted_printable(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'=' => {
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
            b'\r' | b'\n' => {
                while out.last().is_some_and(|&b| b == b' ' || b == b'\t') {
                    out.pop();
                }
                out.push(raw[i]);
                i += 1;
            }
            b => {
                out.push(b);
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
            (b"trailing  \r\nspace\t\nends", b"trailing\r\nspace\nends"),
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
    fn a_blink_form_with_unescaped_equals_signs_decodes_whole() {
        let raw = b"<meta http-equiv=3D\"Content-Type\" content=3D\"text/html; charset=\r\n=3DUTF-8\">\r\n<h1 id=\"h1\">Form</h1>\r\n<input class=\"fc\" type=3D\"submit\" value=3D\"Submit\">\r\n";
        let out = String::from_utf8(decoded(raw, Some("Quoted-Printable")).into_owned()).expect("ascii");
        assert!(out.contains("<input class=\"fc\" type=\"submit\" value=\"Submit\">"), "{out}");
        assert!(!out.contains("=3D"), "{out}");
    }
}
