//! A field's words as PostgreSQL's text search keeps them, in the text forms mailshelf sends:
//! a tsvector within PostgreSQL's limits (positions 1 to 16,383, 256 a word, under 1 MB), the
//! passages a field too long for one is also cut into, and the tsquery of a search term. The
//! words are the analyzer's ([`crate::search::each_word`]), never PostgreSQL's parser's.

use std::collections::HashMap;
use std::fmt::Write;

use crate::search::Terms;

/// The last position a word keeps as it is. PostgreSQL stores 1 to 16,383; the words after this
/// one all go to [`FAR_POSITION`], one apart from nothing, so that no phrase matches across the
/// cut or among the words beyond it.
const LAST_EXACT_POSITION: u16 = 16_381;
const FAR_POSITION: u16 = 16_383;

/// Positions PostgreSQL keeps for one word (it drops the rest).
pub(super) const MAX_POSITIONS: usize = 256;

/// What a tsvector may hold of words and positions, counted as PostgreSQL does, with a margin
/// below its limit of 1 MB (a larger one is refused, and the whole batch with it).
pub(super) const TSVECTOR_BUDGET: usize = 900_000;

/// The most passages a field is cut into ([`passages`]). A passage ends at 16,381 words, or
/// where one of its words comes for the 257th time: a table whose every row repeats a word (a
/// currency) makes passages of a few thousand words. This holds the 1 MiB of text a body or a
/// message's documents are indexed to, unless a few words make up most of it.
pub(super) const MAX_PASSAGES: usize = 512;

/// Words a passage shares with the end of the one before it: a phrase of up to this many words
/// and one more is found whole in one passage wherever it lies.
pub(super) const PASSAGE_OVERLAP: usize = 32;

/// PostgreSQL's position of the word at `position` (from 0) in the analyzer's numbering.
pub(super) fn pg_position(position: usize) -> u16 {
    match u16::try_from(position.saturating_add(1)) {
        Ok(p) if p <= LAST_EXACT_POSITION => p,
        _ => FAR_POSITION,
    }
}

/// A text's words as a tsvector in text form: `'word':1,5 'other':2`, within PostgreSQL's limits
/// (see the module's notes); and whether it holds every word at its place (else the text is
/// also cut into [`passages`]).
pub(super) fn tsvector(text: &str) -> (String, bool) {
    let mut lexemes = Lexemes::default();
    crate::search::each_word(text, &mut |word, position| lexemes.push(word, position));
    lexemes.render()
}

/// A tsvector being made: its words in order of first appearance (so that when the budget runs
/// out the earlier words stay), each with its positions.
#[derive(Default)]
struct Lexemes {
    list: Vec<(String, Vec<u16>)>,
    seen: HashMap<String, usize>,
    /// A place was lost: past the last exact position, or past a word's [`MAX_POSITIONS`].
    lost: bool,
}

impl Lexemes {
    /// Adds a word at its position (from 0).
    fn push(&mut self, word: &str, position: usize) {
        self.lost |= position >= usize::from(LAST_EXACT_POSITION);
        let position = pg_position(position);
        match self.seen.get(word) {
            Some(&i) => {
                let positions = &mut self.list[i].1;
                // Positions only grow; the far one repeats, and PostgreSQL keeps it once.
                if positions.last() != Some(&position) {
                    if positions.len() < MAX_POSITIONS {
                        positions.push(position);
                    } else {
                        self.lost = true;
                    }
                }
            }
            None => {
                self.seen.insert(word.to_string(), self.list.len());
                self.list.push((word.to_string(), vec![position]));
            }
        }
    }

    /// The tsvector in text form, trimmed to its budget, and whether it holds every word at its
    /// place.
    fn render(mut self) -> (String, bool) {
        let whole = fit(&mut self.list) && !self.lost;
        let mut out = String::with_capacity(self.list.iter().map(|(w, p)| w.len() + 4 + 6 * p.len()).sum());
        for (word, positions) in &self.list {
            if !out.is_empty() {
                out.push(' ');
            }
            quote(word, &mut out);
            for (i, p) in positions.iter().enumerate() {
                let _ = write!(out, "{}{p}", if i == 0 { ':' } else { ',' });
            }
        }
        (out, whole)
    }
}

/// A text too long for one tsvector cut into passages that each hold all their words at their
/// places (positions counted from each passage's start), one after another from the text's
/// start, each beginning [`PASSAGE_OVERLAP`] words before the end of the one before; at most
/// [`MAX_PASSAGES`]. For a field [`tsvector`] could not hold whole: the column keeps every word
/// (up to its budget), the passages every phrase.
pub(super) fn passages(text: &str) -> Vec<String> {
    let mut words: Vec<(String, usize)> = Vec::new();
    crate::search::each_word(text, &mut |word, position| words.push((word.to_string(), position)));
    let mut out = Vec::new();
    let mut start = 0;
    while start < words.len() && out.len() < MAX_PASSAGES {
        let first = words[start].1;
        let mut counts: HashMap<&str, usize> = HashMap::new();
        let mut cost = 0;
        let mut end = start;
        while let Some((word, position)) = words.get(end) {
            let count = counts.get(word.as_str()).copied().unwrap_or(0);
            let more = if count == 0 { lexeme_cost(word) } else { 2 };
            let far = position - first >= usize::from(LAST_EXACT_POSITION);
            if end > start && (far || count >= MAX_POSITIONS || cost + more > TSVECTOR_BUDGET) {
                break;
            }
            counts.insert(word, count + 1);
            cost += more;
            end += 1;
        }
        let mut lexemes = Lexemes::default();
        for (word, position) in &words[start..end] {
            lexemes.push(word, position - first);
        }
        out.push(lexemes.render().0);
        if end >= words.len() {
            break;
        }
        start = end.saturating_sub(PASSAGE_OVERLAP).max(start + 1);
    }
    out
}

/// The bytes PostgreSQL counts for a word and its first position (the word padded to an even
/// length, the count of positions, one position); each further position is two more.
pub(super) fn lexeme_cost(word: &str) -> usize {
    word.len().next_multiple_of(2) + 4
}

/// Trims a tsvector to [`TSVECTOR_BUDGET`]: first the later positions (phrases are found only
/// before a cut, words still everywhere), and only when every word's first position alone is too
/// much, the later words. Whether nothing had to go.
pub(super) fn fit(lexemes: &mut Vec<(String, Vec<u16>)>) -> bool {
    let base: usize = lexemes.iter().map(|(w, _)| lexeme_cost(w)).sum();
    let extra: usize = lexemes.iter().map(|(_, p)| p.len() - 1).sum();
    if base + 2 * extra <= TSVECTOR_BUDGET {
        return true;
    }
    let mut used = 0;
    let mut kept = 0;
    for (word, _) in lexemes.iter() {
        if used + lexeme_cost(word) > TSVECTOR_BUDGET {
            break;
        }
        used += lexeme_cost(word);
        kept += 1;
    }
    lexemes.truncate(kept);
    // The further positions that fit, taken from the start of the text.
    let allowed = (TSVECTOR_BUDGET - used) / 2;
    let mut further: Vec<u16> = lexemes.iter().flat_map(|(_, p)| p.iter().skip(1).copied()).collect();
    if further.len() <= allowed {
        return false;
    }
    further.sort_unstable();
    let cut = further[allowed];
    for (_, positions) in lexemes.iter_mut() {
        let first = positions[0];
        positions.retain(|&p| p == first || p < cut);
    }
    false
}

/// Appends `word` quoted as a lexeme of a tsvector or tsquery: in single quotes, with quotes and
/// backslashes doubled.
pub(super) fn quote(word: &str, out: &mut String) {
    out.push('\'');
    for c in word.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
}

/// The tsquery of a text term: its words one after another (a single word, or a phrase), the
/// last one as a prefix (`'invoic':*`) for a word's start.
pub(super) fn tsquery(terms: &Terms) -> String {
    let mut out = String::new();
    for (i, w) in terms.words.iter().enumerate() {
        if i > 0 {
            out.push_str(" <-> ");
        }
        quote(w, &mut out);
    }
    if terms.prefix {
        out.push_str(":*");
    }
    out
}
