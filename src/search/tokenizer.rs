//! The mail-aware tokenizer: how text becomes the words the search index holds and a query looks
//! for. Letters and digits of any script make words, each CJK character is a word of its own (so a
//! phrase of them matches inside longer runs), and words are lower-cased and folded to ASCII, so
//! "Café" finds "cafe".

use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RawTokenizer, TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer,
};

/// The whole chain, for the index and for queries alike.
pub(super) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::from(mail_tokenizer())
}

/// Words longer than this many bytes (a base64 run, a hash, a long URL path) are left out: no
/// one searches for them and each would be a term of its own.
const LONGEST_WORD: usize = 48;

/// Letters and digits of any script make words; each CJK character is a word of its own. Words
/// of [`LONGEST_WORD`] bytes or more are skipped (their position still counts, so a phrase does
/// not match across one). The token is one buffer refilled word by word: tokenizing is a large
/// share of indexing, and a string per word was most of its cost.
///
/// Lower-casing and folding happen in the same pass: a word of ASCII (most words of most mail) is
/// found byte by byte and copied lower-cased, instead of being walked again by a lower-casing
/// filter and a folding one; any other word goes through tantivy's own two filters, so every word
/// becomes exactly the term those filters make of it. Those filters are one typed chain
/// ([`mail_tokenizer`]): as an analyzer they were a boxed stream, an allocation for every word
/// that is not ASCII, on the one thread that indexes.
#[derive(Clone)]
pub(super) struct MailTokenizer<U> {
    token: Token,
    /// Lower-cases and folds one non-ASCII word at a time.
    unicode: U,
}

/// The tokenizer, with tantivy's lower-casing and folding filters over a word for the words that
/// are not ASCII.
pub(super) fn mail_tokenizer() -> MailTokenizer<impl Tokenizer> {
    MailTokenizer {
        token: Token::default(),
        unicode: AsciiFoldingFilter.transform(LowerCaser.transform(RawTokenizer::default())),
    }
}

pub(super) struct MailTokens<'a, U> {
    text: &'a str,
    /// Byte offset where the next word is looked for.
    at: usize,
    token: &'a mut Token,
    unicode: &'a mut U,
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF
        | 0x1100..=0x11FF | 0x3130..=0x318F | 0x20000..=0x2FFFF | 0xFF66..=0xFF9F)
}

/// `char::is_alphanumeric`, answered without its tables for the letters most mail that is not
/// ASCII is written in (Latin-1 and Latin Extended-A, Cyrillic), which are letters throughout
/// those ranges; the tables were a fortieth of a cold index.
fn is_alphanumeric(c: char) -> bool {
    match c as u32 {
        0xC0..=0xD6 | 0xD8..=0xF6 | 0xF8..=0x17F | 0x400..=0x481 | 0x48A..=0x52F => true,
        _ => c.is_alphanumeric(),
    }
}

/// Appends `word` lower-cased when all of it is basic Cyrillic (U+0400..U+045F), as the filters
/// would make it (folding leaves Cyrillic as it is; upper case is 0x20 or 0x50 below lower case);
/// false, with `out` partly filled, for any other word.
fn push_basic_cyrillic_lowercase(word: &str, out: &mut String) -> bool {
    for c in word.chars() {
        let lower = match c as u32 {
            0x410..=0x42F => c as u32 + 0x20,
            0x400..=0x40F => c as u32 + 0x50,
            0x430..=0x45F => c as u32,
            _ => return false,
        };
        out.extend(char::from_u32(lower));
    }
    true
}

impl<U: Tokenizer> Tokenizer for MailTokenizer<U> {
    type TokenStream<'a> = MailTokens<'a, U>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> MailTokens<'a, U> {
        self.token.reset();
        // The first word advances this to 0.
        self.token.position = usize::MAX;
        MailTokens { text, at: 0, token: &mut self.token, unicode: &mut self.unicode }
    }
}

/// A word found: its byte range, and whether all of it is ASCII.
struct Word {
    from: usize,
    to: usize,
    ascii: bool,
}

/// What an ASCII byte is to a word: part of one, or between words; every other byte is the
/// start or the continuation of a character that has to be decoded to tell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ByteKind {
    Between,
    InWord,
    NotAscii,
}

/// [`ByteKind`] of every byte value, looked up once per byte of text.
static BYTE_KINDS: [ByteKind; 256] = {
    let mut kinds = [ByteKind::NotAscii; 256];
    let mut b = 0;
    while b < 128 {
        kinds[b] = if (b as u8).is_ascii_alphanumeric() { ByteKind::InWord } else { ByteKind::Between };
        b += 1;
    }
    kinds
};

fn kind(b: u8) -> ByteKind {
    BYTE_KINDS[usize::from(b)]
}

impl<U> MailTokens<'_, U> {
    /// The next word at or after `self.at`, if any: an ASCII word between ASCII separators (most
    /// words of most mail) is found by a table lookup per byte; any other by [`Self::any_word`].
    fn next_word(&self) -> Option<Word> {
        let bytes = self.text.as_bytes();
        let mut i = self.at;
        while bytes.get(i).is_some_and(|&b| kind(b) == ByteKind::Between) {
            i += 1;
        }
        let from = i;
        while bytes.get(i).is_some_and(|&b| kind(b) == ByteKind::InWord) {
            i += 1;
        }
        match bytes.get(i) {
            _ if i == from && i >= bytes.len() => None,
            None => Some(Word { from, to: i, ascii: true }),
            Some(&b) if i > from && kind(b) == ByteKind::Between => Some(Word { from, to: i, ascii: true }),
            _ => self.any_word(from),
        }
    }

    /// The next word at or after `from`, of any script. ASCII bytes are classified as bytes; only
    /// the others are decoded as characters.
    fn any_word(&self, from: usize) -> Option<Word> {
        let bytes = self.text.as_bytes();
        let mut i = from;
        let mut start: Option<usize> = None;
        let mut ascii = true;
        while let Some(&b) = bytes.get(i) {
            if b.is_ascii() {
                if b.is_ascii_alphanumeric() {
                    start.get_or_insert(i);
                } else if let Some(from) = start {
                    return Some(Word { from, to: i, ascii });
                }
                i += 1;
                continue;
            }
            let c = self.text.get(i..).and_then(|rest| rest.chars().next())?;
            if is_cjk(c) {
                return Some(match start {
                    Some(from) => Word { from, to: i, ascii },
                    None => Word { from: i, to: i + c.len_utf8(), ascii: false },
                });
            } else if is_alphanumeric(c) {
                start.get_or_insert(i);
                ascii = false;
            } else if let Some(from) = start {
                return Some(Word { from, to: i, ascii });
            }
            i += c.len_utf8();
        }
        start.map(|from| Word { from, to: bytes.len(), ascii })
    }
}

impl<U: Tokenizer> TokenStream for MailTokens<'_, U> {
    fn advance(&mut self) -> bool {
        while let Some(Word { from, to, ascii }) = self.next_word() {
            self.at = to;
            self.token.position = self.token.position.wrapping_add(1);
            if to - from >= LONGEST_WORD {
                continue;
            }
            self.token.offset_from = from;
            self.token.offset_to = to;
            self.token.text.clear();
            let word = self.text.get(from..to).unwrap_or("");
            if ascii {
                self.token.text.push_str(word);
                self.token.text.make_ascii_lowercase();
            } else if word.chars().nth(1).is_none() && word.chars().next().is_some_and(is_cjk) {
                // A CJK character is a word of its own, and has no case and nothing to fold.
                self.token.text.push_str(word);
            } else if !push_basic_cyrillic_lowercase(word, &mut self.token.text) {
                self.token.text.clear();
                let mut folded = self.unicode.token_stream(word);
                if folded.advance() {
                    self.token.text.push_str(&folded.token().text);
                }
            }
            return true;
        }
        false
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<(String, usize)> {
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push((stream.token().text.clone(), stream.token().position));
        }
        out
    }

    /// What tantivy's filters make of each word, as the analyzer had them before they were fused.
    fn unfused(text: &str) -> Vec<(String, usize)> {
        let mut chain =
            TextAnalyzer::builder(RawTokenizer::default()).filter(LowerCaser).filter(AsciiFoldingFilter).build();
        let mut tokenizer = mail_tokenizer();
        let mut stream = tokenizer.token_stream(text);
        let mut out = Vec::new();
        let mut position = 0;
        while let Some(word) = stream.next_word() {
            stream.at = word.to;
            if word.to - word.from < LONGEST_WORD {
                let mut one = chain.token_stream(&text[word.from..word.to]);
                assert!(one.advance());
                out.push((one.token().text.clone(), position));
            }
            position += 1;
        }
        out
    }

    /// The words found, each as `(from, to, ascii)`, by `find` from each word's end.
    fn spans(text: &str, find: impl Fn(&MailTokens<'_, ()>) -> Option<Word>) -> Vec<(usize, usize, bool)> {
        let mut token = Token::default();
        let mut unicode = ();
        let mut stream = MailTokens { text, at: 0, token: &mut token, unicode: &mut unicode };
        let mut out = Vec::new();
        while let Some(w) = find(&stream) {
            out.push((w.from, w.to, w.ascii));
            stream.at = w.to;
        }
        out
    }

    #[test]
    fn ascii_words_found_by_the_table_are_the_words_of_any_script() {
        let texts = [
            "",
            " ",
            "a",
            "ab cd",
            "  ab,cd;; ",
            "x",
            "é",
            "aé",
            "éa",
            "ab é cd",
            "ab\u{a0}cd",
            "ab—cd",
            "Caféx12 ABC123def",
            "abc東x",
            "東",
            "a\u{301}b",
            "ann@example.org",
            "2023-05-12,4711,\"a b\",12.50,EUR",
            "Привет, мир! ok",
            "ok Привет",
            "tab\tnew\nline\r\n",
            "ends with é",
            "ends with a",
        ];
        for text in texts {
            let all = spans(text, |s: &MailTokens<'_, ()>| s.any_word(s.at));
            assert_eq!(spans(text, |s: &MailTokens<'_, ()>| s.next_word()), all, "{text:?}");
        }
    }

    #[test]
    fn letters_answered_without_tables_are_letters() {
        for c in (0x80..0x800).filter_map(char::from_u32) {
            assert_eq!(is_alphanumeric(c), c.is_alphanumeric(), "{c:?} U+{:04X}", c as u32);
        }
    }

    #[test]
    fn fused_words_are_the_terms_the_filters_make() {
        let texts = [
            "Hello WORLD, Grüße aus München! 東京タワー ΑΘΗΝΑ naïve façade ǅemal ﬀ Ⅻ ½ ①②",
            "Ωmega ÆØÅ æøå Ĳssel İ ı ß ẞ 𝒜𝒷𝒸 ｆｕｌｌｗｉｄｔｈ",
            "mixed Caféx12 ABC123def ÀÉÎÕÜ-àéîõü",
            "Привет, МИР! Ёлка ёж Ђ ђ Ѣѣ Ґґ Ӂӂ Ԯԯ ҂ ҈ × ÷ ª º µ ŉ ſ Ÿ ÿ",
            "ｶﾀｶﾅ 한국어 ㄱㅏ 𠀋 丽 豈 ひらがな カタカナ 中文 ᄀ",
        ];
        for text in texts {
            assert_eq!(words(text), unfused(text), "{text:?}");
        }
    }

    #[test]
    fn words_are_lower_cased_folded_and_numbered() {
        let long = "x".repeat(LONGEST_WORD);
        let cases: &[(&str, &[(&str, usize)])] = &[
            ("", &[]),
            ("  ,;  ", &[]),
            ("Café au LAIT", &[("cafe", 0), ("au", 1), ("lait", 2)]),
            ("ann@example.org", &[("ann", 0), ("example", 1), ("org", 2)]),
            ("東京タワー", &[("東", 0), ("京", 1), ("タ", 2), ("ワ", 3), ("ー", 4)]),
            ("abc東x", &[("abc", 0), ("東", 1), ("x", 2)]),
            ("Ωmega 2026", &[("ωmega", 0), ("2026", 1)]),
            ("ÉCOLE Straße Œuvre", &[("ecole", 0), ("strasse", 1), ("oeuvre", 2)]),
            ("ПРИВЕТ мир", &[("привет", 0), ("мир", 1)]),
            ("x1Y2 ﬁn", &[("x1y2", 0), ("fin", 1)]),
            ("a\u{301}b", &[("a", 0), ("b", 1)]),
            ("İstanbul", &[("i\u{307}stanbul", 0)]),
            ("Zoë's résumé", &[("zoe", 0), ("s", 1), ("resume", 2)]),
        ];
        for (text, want) in cases {
            let want: Vec<(String, usize)> = want.iter().map(|(w, p)| (w.to_string(), *p)).collect();
            assert_eq!(words(text), want, "{text:?}");
        }
        // A long word is left out but keeps its place.
        assert_eq!(words(&format!("a {long} b")), vec![("a".to_string(), 0), ("b".to_string(), 2)]);
    }
}
