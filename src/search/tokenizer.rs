//! The mail-aware tokenizer: how text becomes the words the search index holds and a query looks
//! for. Letters and digits of any script make words, each CJK character is a word of its own (so a
//! phrase of them matches inside longer runs), and the filters after it lower-case and fold to
//! ASCII, so "Café" finds "cafe".

use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser, TextAnalyzer, Token, TokenStream, Tokenizer};

/// The whole chain, for the index and for queries alike.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(MailTokenizer::default()).filter(LowerCaser).filter(AsciiFoldingFilter).build()
}

/// Words longer than this many bytes (a base64 run, a hash, a long URL path) are left out: no
/// one searches for them and each would be a term of its own.
const LONGEST_WORD: usize = 48;

/// Letters and digits of any script make words; each CJK character is a word of its own. Words
/// of [`LONGEST_WORD`] bytes or more are skipped (their position still counts, so a phrase does
/// not match across one). The token is one buffer refilled word by word: tokenizing is a large
/// share of indexing, and a string per word was most of its cost.
#[derive(Clone, Default)]
pub struct MailTokenizer {
    token: Token,
}

pub struct MailTokens<'a> {
    text: &'a str,
    /// Byte offset where the next word is looked for.
    at: usize,
    token: &'a mut Token,
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF
        | 0x1100..=0x11FF | 0x3130..=0x318F | 0x20000..=0x2FFFF | 0xFF66..=0xFF9F)
}

impl Tokenizer for MailTokenizer {
    type TokenStream<'a> = MailTokens<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> MailTokens<'a> {
        self.token.reset();
        // The first word advances this to 0.
        self.token.position = usize::MAX;
        MailTokens { text, at: 0, token: &mut self.token }
    }
}

impl MailTokens<'_> {
    /// The next word's byte range at or after `self.at`, if any.
    fn next_word(&mut self) -> Option<(usize, usize)> {
        let rest = &self.text[self.at..];
        let mut start = None;
        for (i, c) in rest.char_indices() {
            let i = self.at + i;
            if is_cjk(c) {
                return Some(match start {
                    Some(s) => (s, i),
                    None => (i, i + c.len_utf8()),
                });
            } else if c.is_alphanumeric() {
                start.get_or_insert(i);
            } else if let Some(s) = start {
                return Some((s, i));
            }
        }
        start.map(|s| (s, self.text.len()))
    }
}

impl TokenStream for MailTokens<'_> {
    fn advance(&mut self) -> bool {
        while let Some((from, to)) = self.next_word() {
            self.at = to;
            self.token.position = self.token.position.wrapping_add(1);
            if to - from >= LONGEST_WORD {
                continue;
            }
            self.token.offset_from = from;
            self.token.offset_to = to;
            self.token.text.clear();
            self.token.text.push_str(&self.text[from..to]);
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
        ];
        for (text, want) in cases {
            let want: Vec<(String, usize)> = want.iter().map(|(w, p)| (w.to_string(), *p)).collect();
            assert_eq!(words(text), want, "{text:?}");
        }
        // A long word is left out but keeps its place.
        assert_eq!(words(&format!("a {long} b")), vec![("a".to_string(), 0), ("b".to_string(), 2)]);
    }
}
