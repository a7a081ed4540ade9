//! RFC 2047 encoded-words in header text that mail-parser hands back undecoded: the value of a
//! field it does not know (`X-Gmail-Labels` among them) is given raw, folding and all, and the
//! Subject is read raw to be decoded here (mail-parser decodes each word alone, so a character
//! split across two words came out as two replacement characters).
//!
//! Decoded as mail clients decode them, which is more than RFC 2047 asks: an encoded-word is
//! recognised wherever it stands (Gmail writes a whole comma-separated list as one word, commas
//! and quotes inside it), white space between two adjacent words goes (§6.2), and the bytes of
//! adjacent words in one charset are joined before they are decoded, so a character split across
//! two words (as some encoders split long values) comes back whole. A word that does not parse,
//! or names a charset nobody knows, stays as written. The same words mend the display names
//! mail-parser decodes a word at a time ([`split_characters`]).
//!
//! A word whose encoded-text holds raw 8-bit bytes (`=?iso-8859-1?Q?Fr\xf6sche?=`, as Eudora and
//! Outlook 2000 wrote them) is outside RFC 2047, which wants printable ASCII there; the word names
//! its charset all the same, and Thunderbird, Python's `email` and mail-parser decode those bytes
//! in it. So are they here: [`raw_bytes_escaped`] writes them as the `=XX` a writer should have,
//! before anything reads the field's other 8-bit text as text without a charset.

/// A field's bytes with the raw 8-bit bytes inside its "Q" encoded-words written as `=XX`, so that
/// each word is decoded in the charset it names; `None` when no word holds such a byte (the field
/// is read as it is). A raw byte in a "B" word is no base64 and is skipped when it is decoded.
pub(super) fn raw_bytes_escaped(field: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    // Where the field has been copied up to.
    let mut copied = 0;
    let mut from = 0;
    while let Some(at) = memchr::memmem::find(&field[from..], b"=?").map(|i| from + i) {
        let Some(word) = raw_word(&field[at..]) else {
            from = at + 2;
            continue;
        };
        let (text_start, text_end) = (at + word.text.start, at + word.text.end);
        if word.quoted && !field[text_start..text_end].is_ascii() {
            let buf = out.get_or_insert_with(|| Vec::with_capacity(field.len() + 16));
            buf.extend_from_slice(&field[copied..text_start]);
            for &b in &field[text_start..text_end] {
                if b.is_ascii() {
                    buf.push(b);
                } else {
                    buf.extend_from_slice(&[b'=', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xF)]]);
                }
            }
            copied = text_end;
        }
        from = at + word.len;
    }
    let mut buf = out?;
    buf.extend_from_slice(&field[copied..]);
    Some(buf)
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Where an encoded-word's parts lie in the bytes it begins (see [`raw_word`]).
struct RawWord {
    /// Its charset, with an RFC 2231 language if one is given.
    charset: std::ops::Range<usize>,
    /// Whether it is in the "Q" encoding.
    quoted: bool,
    /// Its encoded-text.
    text: std::ops::Range<usize>,
    /// Its whole length, `?=` included.
    len: usize,
}

/// The encoded-word at the start of `s`, read as bytes: the charset and encoding as RFC 2047 has
/// them, the encoded-text any bytes but white space, controls and `?`.
fn raw_word(s: &[u8]) -> Option<RawWord> {
    let body = s.strip_prefix(b"=?")?;
    let body = &body[..body.len().min(MAX_WORD)];
    let charset = body.iter().position(|&b| b == b'?')?;
    if charset == 0 || charset > 64 || !body[..charset].iter().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    let quoted = match body.get(charset + 1..charset + 3)? {
        [b'Q' | b'q', b'?'] => true,
        [b'B' | b'b', b'?'] => false,
        _ => return None,
    };
    let text_start = 2 + charset + 3;
    let text_len = s[text_start..].iter().take(MAX_WORD).position(|&b| b == b'?' || b <= b' ' || b == 0x7F)?;
    let end = text_start + text_len;
    (s.get(end..end + 2) == Some(b"?=")).then_some(RawWord {
        charset: 2..2 + charset,
        quoted,
        text: text_start..end,
        len: end + 2,
    })
}

/// `raw` unfolded (line breaks out, the white space after them kept) and with its encoded-words
/// decoded.
pub(super) fn decode_header_text(raw: &str) -> String {
    // Most values hold no encoded-word and are on one line.
    if !raw.contains("=?") {
        return raw.replace(['\r', '\n'], "");
    }
    let unfolded = unfold(raw);
    let mut out = String::with_capacity(unfolded.len());
    walk(&unfolded, |piece| match piece {
        Piece::Text(t) => out.push_str(t),
        Piece::Words(run) => out.push_str(&run.joined()),
    });
    out
}

/// Where adjacent encoded-words of `raw` split a character between them: what decoding each word
/// alone gives (as mail-parser decodes the words of an address's display name, `J��rgen`; with
/// the white space between the words dropped, and kept as inside a quoted string) and what the
/// words say joined (`Jürgen`). Empty when no character is split.
pub(super) fn split_characters(raw: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    if !raw.contains("=?") {
        return out;
    }
    walk(&unfold(raw), |piece| {
        let Piece::Words(run) = piece else { return };
        if run.words.len() < 2 || out.len() >= MAX_SPLIT {
            return;
        }
        let joined = run.joined();
        for gaps in [false, true] {
            let alone = run.alone(gaps);
            if alone != joined && alone.contains('\u{FFFD}') && !out.iter().any(|(a, _)| *a == alone) {
                out.push((alone, joined.clone()));
            }
        }
    });
    out
}

/// Most runs of split characters [`split_characters`] gives: a field's names hold a few, and each
/// one found is looked for in every name of the field (a field of thousands is made to cost).
const MAX_SPLIT: usize = 64;

fn unfold(raw: &str) -> String {
    raw.chars().filter(|&c| c != '\r' && c != '\n').collect()
}

/// What [`walk`] finds: text as written (white space included), or a run of adjacent words.
enum Piece<'a> {
    Text(&'a str),
    Words(&'a Run),
}

/// Adjacent encoded-words in one charset.
struct Run {
    charset: String,
    /// Each word's bytes, after the white space written before it (none for the first).
    words: Vec<(String, Vec<u8>)>,
}

impl Run {
    /// The words' bytes joined, then decoded.
    fn joined(&self) -> String {
        match self.words.as_slice() {
            [(_, bytes)] => decode(&self.charset, bytes),
            words => decode(&self.charset, &words.iter().flat_map(|(_, b)| b.iter().copied()).collect::<Vec<u8>>()),
        }
    }

    /// Each word decoded alone, with or without the white space between them.
    fn alone(&self, gaps: bool) -> String {
        let mut out = String::new();
        for (gap, bytes) in &self.words {
            if gaps {
                out.push_str(gap);
            }
            out.push_str(&decode(&self.charset, bytes));
        }
        out
    }
}

/// Walks an unfolded value, handing `visit` its text and its runs of adjacent words in one
/// charset. White space between two words goes (§6.2), between a word and text it stays.
fn walk(unfolded: &str, mut visit: impl FnMut(Piece<'_>)) {
    let mut pending: Option<Run> = None;
    // White space seen since the last word, written only if text (not another word) follows.
    let mut gap = String::new();
    let mut rest = unfolded;
    while !rest.is_empty() {
        if let Some((charset, bytes, len)) = encoded_word(rest) {
            match &mut pending {
                // After another word: the white space between them goes. The bytes of words in a
                // stateful charset (ISO-2022-JP) are not joined: each word returns to ASCII at its
                // end (RFC 1468), and a decoder takes the escape that ends one word next to the
                // escape that starts the next as an error.
                Some(run) if run.charset.eq_ignore_ascii_case(&charset) && !is_stateful(&charset) => {
                    run.words.push((std::mem::take(&mut gap), bytes));
                }
                Some(_) => {
                    if let Some(run) = pending.take() {
                        visit(Piece::Words(&run));
                    }
                    pending = Some(Run { charset, words: vec![(String::new(), bytes)] });
                }
                // After text: it stays.
                None => {
                    visit(Piece::Text(&gap));
                    pending = Some(Run { charset, words: vec![(String::new(), bytes)] });
                }
            }
            gap.clear();
            rest = &rest[len..];
            continue;
        }
        let c = rest.chars().next().unwrap_or(' ');
        let width = c.len_utf8();
        if c == ' ' || c == '\t' {
            gap.push(c);
        } else {
            if let Some(run) = pending.take() {
                visit(Piece::Words(&run));
            }
            visit(Piece::Text(&std::mem::take(&mut gap)));
            visit(Piece::Text(&rest[..width]));
        }
        rest = &rest[width..];
    }
    if let Some(run) = pending.take() {
        visit(Piece::Words(&run));
    }
    visit(Piece::Text(&gap));
}

/// A charset whose bytes switch between character sets with escape sequences.
fn is_stateful(charset: &str) -> bool {
    charset.get(..8).is_some_and(|p| p.eq_ignore_ascii_case("iso-2022"))
}

/// `bytes` decoded by `charset` (UTF-8 when it is unknown, as a reader would guess).
fn decode(charset: &str, bytes: &[u8]) -> String {
    match mail_parser::decoders::charsets::map::charset_decoder(charset.as_bytes()) {
        Some(decode) => decode(bytes),
        None => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Longest encoded-word looked for. RFC 2047 allows 75 characters; some writers make longer ones
/// (a whole list in one word), none this long. Bounds the work a value of many `=?` can cause.
const MAX_WORD: usize = 2048;

/// The encoded-word `=?charset?encoding?text?=` at the start of `s` ([`raw_word`]): its charset
/// (without an RFC 2231 language), its decoded bytes and its length.
fn encoded_word(s: &str) -> Option<(String, Vec<u8>, usize)> {
    let word = raw_word(s.as_bytes())?;
    // Both ranges end at an ASCII `?`, so they lie on character boundaries.
    let (charset_field, text) = (s.get(word.charset)?, s.get(word.text)?);
    // Raw 8-bit text in the encoded-text is decoded in the word's charset, as its bytes (see the
    // module's note); white space or a control past ASCII still ends the word.
    if !text.is_ascii() && text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let bytes = if word.quoted {
        q_decode(text)
    } else {
        // Read as bodies are (a last quantum without its padding still gives its octets).
        super::transfer::base64(text.as_bytes()).0
    };
    let charset = charset_field.split('*').next().unwrap_or(charset_field).to_string();
    Some((charset, bytes, word.len))
}

/// The "Q" encoding (RFC 2047 §4.2): `_` is a space, `=XX` a byte; anything else as it is.
fn q_decode(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'_' => out.push(b' '),
            b'=' => {
                let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    None => out.push(b'='),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{decode_header_text, raw_bytes_escaped, split_characters};

    #[test]
    fn raw_8bit_bytes_in_words_are_decoded_in_the_words_charset() {
        /// A field's bytes, the field with its words' raw bytes escaped, and that field shown.
        type Case<'a> = (&'a [u8], Option<&'a [u8]>, &'a str);
        let cases: &[Case<'_>] = &[
            (
                b"=?iso-8859-1?Q?Die_Hasen_und_die_Fr\xf6sche?=",
                Some(b"=?iso-8859-1?Q?Die_Hasen_und_die_Fr=F6sche?="),
                "Die Hasen und die Fr\u{f6}sche",
            ),
            (
                b"=?iso-8859-1?Q?J\xfcrgen?= =?iso-8859-1?Q?_Schm\xfcrgen?=",
                Some(b"=?iso-8859-1?Q?J=FCrgen?= =?iso-8859-1?Q?_Schm=FCrgen?="),
                "J\u{fc}rgen Schm\u{fc}rgen",
            ),
            (
                b"Heinz =?iso-8859-1?q?M\xfcller?= <m@example.com>",
                Some(b"Heinz =?iso-8859-1?q?M=FCller?= <m@example.com>"),
                "Heinz M\u{fc}ller <m@example.com>",
            ),
            (
                b"=?koi8-r?Q?\xf0\xd2\xc9\xd7\xc5\xd4?=",
                Some(b"=?koi8-r?Q?=F0=D2=C9=D7=C5=D4?="),
                "\u{41f}\u{440}\u{438}\u{432}\u{435}\u{442}",
            ),
            // 8-bit text outside a word, in a "B" word, or in what is no word: left as it is.
            (b"Fr\xf6sche =?utf-8?Q?ok?=", None, ""),
            (b"=?utf-8?B?\xff?=", None, ""),
            (b"=?iso-8859-1?Q?never ends \xf6", None, ""),
            (b"=?iso-8859-1?Q?two words\xf6?=", None, ""),
            (b"plain", None, ""),
        ];
        for (field, want, shown) in cases {
            let got = raw_bytes_escaped(field);
            assert_eq!(got.as_deref(), *want, "{}", String::from_utf8_lossy(field));
            if let Some(escaped) = got {
                assert_eq!(decode_header_text(&String::from_utf8_lossy(&escaped)), *shown);
            }
        }
    }

    #[test]
    fn characters_split_between_words_are_found_as_mail_parser_decodes_them() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("plain", &[]),
            ("=?UTF-8?B?SsO8cmdlbg==?=", &[]),
            ("=?UTF-8?B?5bGx?= =?UTF-8?B?55Sw?=", &[]),
            (
                "=?UTF-8?B?SsM=?=\r\n =?UTF-8?B?vHJnZW4=?= <j@x.de>",
                &[("J\u{FFFD}\u{FFFD}rgen", "Jürgen"), ("J\u{FFFD} \u{FFFD}rgen", "Jürgen")],
            ),
            ("=?iso-8859-1?Q?Caf=E9?= =?iso-8859-1?Q?_ok?=", &[]),
        ];
        // A field of many such runs gives a bounded number of them.
        let many: String = (0..20_000).map(|i| format!("=?UTF-8?Q?J=C3?= =?UTF-8?Q?=BC{i}?= <a{i}@x>, ")).collect();
        assert_eq!(split_characters(&many).len(), super::MAX_SPLIT);
        for (raw, want) in cases {
            let got = split_characters(raw);
            let got: Vec<(&str, &str)> = got.iter().map(|(a, j)| (a.as_str(), j.as_str())).collect();
            assert_eq!(&got, want, "{raw:?}");
        }
    }

    #[test]
    fn encoded_words_are_decoded_wherever_they_stand() {
        let cases = [
            ("plain, text", "plain, text"),
            ("=?UTF-8?Q?Otev=C5=99en=C3=A9?=", "Otevřené"),
            ("=?utf-8?b?UHLDvGZ1bmc=?=", "Prüfung"),
            // Adjacent words: the white space between them goes, folding too.
            ("=?UTF-8?Q?Archived,Categ?=\r\n =?UTF-8?Q?ory_Updates?=", "Archived,Category Updates"),
            // A character split across two words is joined before it is decoded.
            ("=?UTF-8?Q?=E2=98?= =?UTF-8?Q?=AF?=", "\u{262f}"),
            // Different encodings of one charset join; different charsets do not.
            ("=?utf-8?Q?Sent=2C?= =?utf-8?B?5Lit5paH?=", "Sent,中文"),
            ("=?iso-8859-1?Q?Caf=E9?= =?utf-8?Q?_ok?=", "Café ok"),
            // Words in ISO-2022-JP each end in ASCII: decoded one by one (joined, the escape that
            // ends one and the one that starts the next would be an error).
            (
                "=?ISO-2022-JP?B?GyRCRGpOYzJxNUQkTiQqQ04kaSQ7GyhC?=\r\n =?ISO-2022-JP?B?GyRCIUobKEIxMBskQjduGyhCMTUbJEJGfCFLGyhC?=",
                "定例会議のお知らせ（10月15日）",
            ),
            // Text between words keeps its white space.
            ("Inbox, =?UTF-8?Q?D=C3=A9j=C3=A0?= vu", "Inbox, Déjà vu"),
            ("a =?UTF-8?Q?b?=", "a b"),
            // RFC 2231's language is not part of the charset.
            ("=?UTF-8*cs?Q?=C4=8Cesky?=", "Česky"),
            // Raw text in a word: its bytes, in the word's charset.
            ("=?utf-8?Q?Die_Fr\u{f6}sche?=", "Die Fr\u{f6}sche"),
            // Not words: stays as written.
            ("=?UTF-8?X?abc?=", "=?UTF-8?X?abc?="),
            ("=?UTF-8?Q?never ends", "=?UTF-8?Q?never ends"),
            ("=??Q?x?=", "=??Q?x?="),
            ("50% =? maybe ?=", "50% =? maybe ?="),
            ("=?UTF-8?Q?bad=ZZ?=", "bad=ZZ"),
        ];
        for (raw, want) in cases {
            assert_eq!(decode_header_text(raw), want, "{raw:?}");
        }
    }
}
