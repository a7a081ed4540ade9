//! The mail-aware tokenizer: how text becomes the words the search index holds and a query looks
//! for. Letters and digits of any script make words, each CJK character is a word of its own, and
//! so is each letter (with its marks) of the scripts written without spaces between words, Thai,
//! Lao, Khmer and Myanmar (so a phrase of them matches inside longer runs), and words are lower-cased and folded to ASCII, so
//! "Café" finds "cafe" (whether its `é` is one character or `e` and a combining accent), Greek
//! loses its accents and final sigma, and Russian `ё` is `е`.

use unicode_normalization::char::is_combining_mark;

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

/// Letters of the scripts written without spaces between words (Thai, Lao, Myanmar, Khmer): as
/// with CJK, each letter with the marks after it (vowel signs, tone marks) is a word of its own,
/// so a word is found inside the run it is written in, as the phrase of its letters.
fn is_unspaced(c: char) -> bool {
    matches!(c as u32, 0x0E00..=0x0EFF | 0x1000..=0x109F | 0x1780..=0x17FF)
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF
        | 0x1100..=0x11FF | 0x3130..=0x318F | 0x20000..=0x2FFFF | 0xFF66..=0xFF9F)
}

/// `word` in Unicode's compatibility composed form (NFKC) when it is not in it already: a letter
/// and its combining accent (NFD, as macOS and some mailers write them) become the one letter the
/// folding filter knows, half-width katakana the full-width ones, a ligature its letters. Most
/// words are known to be in it already as they are found ([`Word::normal`]): Unicode's own check
/// looks each character up in its tables, and was a twentieth of a cold index.
fn compatible(word: &str) -> std::borrow::Cow<'_, str> {
    use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};
    match is_nfkc_quick(word.chars()) {
        IsNormalized::Yes => std::borrow::Cow::Borrowed(word),
        _ => std::borrow::Cow::Owned(word.nfkc().collect()),
    }
}

/// Whether NFKC leaves `c` as it is, whatever stands beside it (a combining mark after it is not
/// such a character, and is looked at on its own): ASCII, the letters of Latin-1 and Latin
/// Extended-A but for its compatibility ligatures, Cyrillic, the Greek, Hebrew, Arabic and Thai
/// letters, CJK ideographs, kana, Hangul syllables. Others are asked of Unicode's tables.
#[inline]
fn stays_as_written(c: char) -> bool {
    match c as u32 {
        0x132 | 0x133 | 0x13F | 0x140 | 0x149 | 0x17F => false,
        0..=0x7F | 0xC0..=0xD6 | 0xD8..=0xF6 | 0xF8..=0x17E => true,
        0x386 | 0x388..=0x3CE | 0x400..=0x4FF => true,
        0x5D0..=0x5EA | 0x621..=0x64A | 0xE01..=0xE30 => true,
        0x3005 | 0x3041..=0x3096 | 0x309D | 0x309E | 0x30A1..=0x30FA | 0x30FC..=0x30FE => true,
        0x4E00..=0x9FFF | 0xAC00..=0xD7A3 => true,
        _ => false,
    }
}

/// What tantivy's folding leaves, folded as Latin is: a lower-case Greek vowel with its tonos or
/// dialytika is the vowel, and a final sigma (ς) is σ, so `σισυφος` finds `Σίσυφος` and
/// `Σοφοκλέους` finds `ΣΟΦΟΚΛΕΟΥΣ`; Russian `ё` is `е` (as [`push_basic_cyrillic_lowercase`]
/// makes it in the words it takes).
fn fold_more(word: &mut String) {
    // Greek and Coptic (U+0370..U+03FF) are two bytes in UTF-8, led by 0xCD, 0xCE or 0xCF; ё is
    // 0xD1 0x91.
    if !word.bytes().any(|b| matches!(b, 0xCD..=0xCF | 0xD1)) {
        return;
    }
    *word = word
        .chars()
        .map(|c| match c {
            'ά' => 'α',
            'έ' => 'ε',
            'ή' => 'η',
            'ί' | 'ϊ' | 'ΐ' => 'ι',
            'ό' => 'ο',
            'ύ' | 'ϋ' | 'ΰ' => 'υ',
            'ώ' => 'ω',
            'ς' => 'σ',
            'ё' => 'е',
            c => c,
        })
        .collect();
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
            // Ё and ё are searched as е, as Russian is mostly written (and as search engines
            // fold it).
            0x401 | 0x451 => 0x435,
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
    /// Every character one no normalization changes ([`stays_as_written`]).
    normal: bool,
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
    /// The letter `c` of an unspaced script at `at` as a word, with the marks written over, under
    /// and after it. Out of [`Self::any_word`]'s loop: most text has no such letter.
    #[inline(never)]
    fn unspaced_letter(&self, at: usize, c: char) -> Word {
        let mut to = at + c.len_utf8();
        let mut normal = stays_as_written(c);
        for mark in self.text.get(to..).unwrap_or("").chars().take_while(|&m| is_combining_mark(m)) {
            to += mark.len_utf8();
            normal &= stays_as_written(mark);
        }
        Word { from: at, to, ascii: false, normal }
    }

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
            None => Some(Word { from, to: i, ascii: true, normal: true }),
            Some(&b) if i > from && kind(b) == ByteKind::Between => {
                Some(Word { from, to: i, ascii: true, normal: true })
            }
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
        let mut normal = true;
        while let Some(&b) = bytes.get(i) {
            if b.is_ascii() {
                if b.is_ascii_alphanumeric() {
                    start.get_or_insert(i);
                } else if let Some(from) = start {
                    return Some(Word { from, to: i, ascii, normal });
                }
                i += 1;
                continue;
            }
            let c = self.text.get(i..).and_then(|rest| rest.chars().next())?;
            if is_cjk(c) {
                return Some(match start {
                    Some(from) => Word { from, to: i, ascii, normal },
                    None => Word { from: i, to: i + c.len_utf8(), ascii: false, normal: stays_as_written(c) },
                });
            } else if is_alphanumeric(c) || (start.is_some() && is_combining_mark(c)) {
                // Latin, Greek, Cyrillic, Hebrew and Arabic lie below the unspaced scripts: one
                // comparison for most letters that are not ASCII.
                if c >= '\u{0E00}' && is_unspaced(c) && is_alphanumeric(c) {
                    return Some(match start {
                        Some(from) => Word { from, to: i, ascii, normal },
                        None => self.unspaced_letter(i, c),
                    });
                }
                // A combining mark belongs to the letter before it (`i` and U+0308 are `ï`
                // written decomposed): it does not end the word.
                start.get_or_insert(i);
                ascii = false;
                normal &= stays_as_written(c);
            } else if let Some(from) = start {
                return Some(Word { from, to: i, ascii, normal });
            }
            i += c.len_utf8();
        }
        start.map(|from| Word { from, to: bytes.len(), ascii, normal })
    }
}

impl<U: Tokenizer> TokenStream for MailTokens<'_, U> {
    fn advance(&mut self) -> bool {
        while let Some(Word { from, to, ascii, normal }) = self.next_word() {
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
            } else {
                // Written decomposed or in a compatibility form, a word is the word it stands for.
                let word = if normal { word.into() } else { compatible(word) };
                if word.chars().nth(1).is_none() && word.chars().next().is_some_and(is_cjk) {
                    // A CJK character is a word of its own, and has no case and nothing to fold.
                    self.token.text.push_str(&word);
                } else if word.chars().next().is_some_and(is_unspaced) {
                    // So is a letter of an unspaced script, with its marks.
                    self.token.text.push_str(&word);
                } else if !push_basic_cyrillic_lowercase(&word, &mut self.token.text) {
                    self.token.text.clear();
                    let mut folded = self.unicode.token_stream(&word);
                    if folded.advance() {
                        self.token.text.push_str(&folded.token().text);
                    }
                    fold_more(&mut self.token.text);
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

    /// What tantivy's filters make of each word (in its compatibility form, then folded further),
    /// as the analyzer had them before they were fused.
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
                let written = &text[word.from..word.to];
                let form = if word.ascii { written.into() } else { compatible(written) };
                let mut one = chain.token_stream(&form);
                assert!(one.advance());
                let mut term = one.token().text.clone();
                if !word.ascii {
                    fold_more(&mut term);
                }
                out.push((term, position));
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
    fn characters_that_stay_as_written_are_in_every_normal_form() {
        use unicode_normalization::UnicodeNormalization;
        for c in (0..0x10000).filter_map(char::from_u32).filter(|&c| stays_as_written(c)) {
            let one = c.to_string();
            assert_eq!(one.nfkc().collect::<String>(), one, "{c:?} U+{:04X}", c as u32);
            // Nothing composes with it from before: no normalization of a letter and it differs.
            let after_a: String = format!("a{c}").nfkc().collect();
            assert_eq!(after_a, format!("a{c}"), "U+{:04X}", c as u32);
        }
        // Nor is any the second of two characters that compose into one.
        for x in (0..0x30000).filter_map(char::from_u32) {
            let mut parts = Vec::new();
            unicode_normalization::char::decompose_canonical(x, |p| parts.push(p));
            if let [_, second] = parts.as_slice() {
                assert!(!stays_as_written(*second), "U+{:04X} composes into U+{:04X}", *second as u32, x as u32);
            }
        }
    }

    #[test]
    fn unspaced_scripts_are_words_of_a_letter_and_its_marks() {
        let terms = |text: &str| words(text).into_iter().map(|(w, _)| w).collect::<Vec<_>>();
        // ก, then ิ (a vowel sign) with its letter, then น: "กิน" (to eat) inside a longer run.
        assert_eq!(terms("ทานกินข้าว"), ["ท", "า", "น", "กิ", "น", "ข้", "า", "ว"]);
        assert_eq!(terms("Thai: กิน."), ["thai", "กิ", "น"]);
        assert_eq!(terms("សួស្តី"), ["សួ", "ស្", "តី"]);
        // A word of another script right before one stops there.
        assert_eq!(terms("abcกิน"), ["abc", "กิ", "น"]);
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
            // Decomposed accents are part of their word, and fold as composed ones do.
            ("a\u{301}b", &[("ab", 0)]),
            ("nai\u{308}ve Zu\u{308}rich", &[("naive", 0), ("zurich", 1)]),
            ("ｶﾀｶﾅ", &[("カ", 0), ("タ", 1), ("カ", 2), ("ナ", 3)]),
            // Greek without its accents and final sigma; Russian ё as е.
            ("Σίσυφος ΣΟΦΟΚΛΕΟΥΣ Σοφοκλέους ΐ", &[("σισυφοσ", 0), ("σοφοκλεουσ", 1), ("σοφοκλεουσ", 2), ("ι", 3)]),
            ("ЁЖИК ёжик Ёж1", &[("ежик", 0), ("ежик", 1), ("еж1", 2)]),
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
