//! The excerpt a search result shows of a text: the stretch of at most [`SNIPPET_CHARS`]
//! characters that holds the most of what the query looked for, HTML-escaped, with each place it
//! was found in `<mark>`. Found as the engines find it: the text's words as the analyzer makes
//! them, a phrase only where its words stand one after another (marked as one stretch, so
//! `"quarterly report"` or `会議` is one mark, not each word or letter wherever it stands), and a
//! word's start (`invoic*`) on every word that starts so.

use std::ops::Range;

use tantivy::tokenizer::TokenStream;

use super::{tokenizer, Terms};

/// The longest excerpt shown of a message's text, in characters.
pub(super) const SNIPPET_CHARS: usize = 240;

/// Characters of the text shown before the first place found, when the excerpt has room.
const LEAD_CHARS: usize = 40;

/// Places found in one text looked at: a text of many thousands of matches needs no more to
/// find its best stretch.
const MAX_PLACES: usize = 4096;

/// A stretch of the text found: its bytes, and which of the terms found it (a bit each, for the
/// first 64).
#[derive(Debug, Clone)]
struct Place {
    bytes: Range<usize>,
    terms: u64,
}

/// The excerpt of `text` for `terms`; `None` when none of them is found in it.
pub(super) fn excerpt(text: &str, terms: &[Terms]) -> Option<String> {
    let places = merged(found(text, terms));
    let (first, last) = best_window(text, &places)?;
    let (start, end) = bounds(text, places[first].bytes.start, places[last].bytes.end);
    let mut out = String::with_capacity(end - start + 32);
    let mut at = start;
    for place in places[first..].iter().take_while(|p| p.bytes.end <= end) {
        out.push_str(&crate::rewrite::escape_html(&text[at..place.bytes.start]));
        out.push_str("<mark>");
        out.push_str(&crate::rewrite::escape_html(&text[place.bytes.clone()]));
        out.push_str("</mark>");
        at = place.bytes.end;
    }
    out.push_str(&crate::rewrite::escape_html(&text[at..end]));
    Some(out)
}

/// Every place of `text` where one of `terms` stands, in the order they end.
fn found(text: &str, terms: &[Terms]) -> Vec<Place> {
    let longest = terms.iter().map(|t| t.words.len()).max().unwrap_or(0);
    if longest == 0 {
        return Vec::new();
    }
    // The last words seen, with where each lies, enough for the longest phrase.
    let mut window: std::collections::VecDeque<(String, Range<usize>)> =
        std::collections::VecDeque::with_capacity(longest);
    let mut places = Vec::new();
    let mut analyzer = tokenizer::analyzer();
    let mut stream = analyzer.token_stream(text);
    while places.len() < MAX_PLACES && stream.advance() {
        let token = stream.token();
        if window.len() == longest {
            window.pop_front();
        }
        window.push_back((token.text.clone(), token.offset_from..token.offset_to));
        let mut which = 0u64;
        let mut from = usize::MAX;
        for (i, t) in terms.iter().enumerate() {
            if t.end(window.iter().map(|(word, _)| word.as_str())) {
                which |= 1u64 << i.min(63);
                from = from.min(window[window.len() - t.words.len()].1.start);
            }
        }
        if which != 0 {
            places.push(Place { bytes: from..token.offset_to, terms: which });
        }
    }
    places
}

/// `places` in order of where they start, those that overlap made one.
fn merged(mut places: Vec<Place>) -> Vec<Place> {
    places.sort_by_key(|p| p.bytes.start);
    let mut out: Vec<Place> = Vec::with_capacity(places.len());
    for p in places {
        match out.last_mut() {
            Some(last) if p.bytes.start < last.bytes.end => {
                last.bytes.end = last.bytes.end.max(p.bytes.end);
                last.terms |= p.terms;
            }
            _ => out.push(p),
        }
    }
    out
}

/// The first and last of `places` (sorted, apart) that the best excerpt shows: the run that fits
/// in [`SNIPPET_CHARS`] and finds the most different terms, then the most places; the earliest
/// of equals. `None` when there is no place.
fn best_window(text: &str, places: &[Place]) -> Option<(usize, usize)> {
    // Where each place starts and ends, in characters, counted once along the text.
    let mut chars = Vec::with_capacity(places.len());
    let (mut byte, mut count) = (0, 0);
    for p in places {
        count += text[byte..p.bytes.start].chars().count();
        let start = count;
        count += text[p.bytes.clone()].chars().count();
        byte = p.bytes.end;
        chars.push((start, count));
    }
    let mut best: Option<(u32, usize, usize, usize)> = None;
    let mut last = 0;
    for first in 0..places.len() {
        last = last.max(first);
        while last + 1 < places.len() && chars[last + 1].1 - chars[first].0 <= SNIPPET_CHARS {
            last += 1;
        }
        let terms = places[first..=last].iter().fold(0u64, |all, p| all | p.terms).count_ones();
        let score = (terms, last - first + 1);
        if best.is_none_or(|(t, n, _, _)| score > (t, n)) {
            best = Some((score.0, score.1, first, last));
        }
    }
    best.map(|(_, _, first, last)| (first, last))
}

/// The bytes of `text` an excerpt shows around the stretch `from..to`: some of the text before
/// it, from the start of a word, and after it up to [`SNIPPET_CHARS`] characters in all, to the
/// end of a word (a stretch longer than that, one long word, is cut).
fn bounds(text: &str, from: usize, to: usize) -> (usize, usize) {
    let width = text[from..to].chars().count();
    let room = SNIPPET_CHARS.saturating_sub(width);
    let lead = LEAD_CHARS.min(room / 2);
    // Back `lead` characters, then forward to the start of a word if white space is near.
    let mut start = text[..from].char_indices().rev().nth(lead.saturating_sub(1)).map_or(0, |(i, _)| i);
    if lead == 0 {
        start = from;
    } else if start > 0 {
        if let Some(space) = text[start..from].find(char::is_whitespace) {
            start += space;
            start += text[start..].chars().next().map_or(0, char::len_utf8);
        }
    }
    let shown_before = text[start..from].chars().count();
    let after = SNIPPET_CHARS.saturating_sub(width + shown_before);
    if width > SNIPPET_CHARS {
        let cut = text[from..].char_indices().nth(SNIPPET_CHARS).map_or(text.len(), |(i, _)| i);
        return (from, cut);
    }
    let mut end = text[to..].char_indices().nth(after).map_or(text.len(), |(i, _)| to + i);
    if end < text.len() {
        // Back to the end of a word, if one ends in what is shown after the stretch.
        if let Some(space) = text[to..end].rfind(char::is_whitespace) {
            end = to + space;
        }
    }
    (start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each term's text, and whether it is a word's start.
    type Asked<'a> = &'a [(&'a str, bool)];

    fn terms(list: Asked<'_>) -> Vec<Terms> {
        list.iter().filter_map(|(t, prefix)| Terms::of(t, *prefix)).collect()
    }

    #[test]
    fn excerpts_mark_what_the_query_found() {
        let cases: &[(&str, Asked<'_>, Option<&str>)] = &[
            ("Nothing here.", &[("absent", false)], None),
            (
                "The linker crashes on aarch64.",
                &[("aarch64", false)],
                Some("The linker crashes on <mark>aarch64</mark>."),
            ),
            // A phrase is one mark, and only where its words follow each other.
            (
                "report: the quarterly numbers; the quarterly report is late",
                &[("quarterly report", false)],
                Some("report: the quarterly numbers; the <mark>quarterly report</mark> is late"),
            ),
            // CJK: the phrase of letters, not each letter wherever it stands.
            ("会社の定例会議は水曜日", &[("会議", false)], Some("会社の定例<mark>会議</mark>は水曜日")),
            // Accents fold as in the index; the text keeps its own.
            (
                "Anbei die Rechnung für den Café crème.",
                &[("cafe", false)],
                Some("Anbei die Rechnung für den <mark>Café</mark> crème."),
            ),
            // A word's start marks every word that starts so.
            (
                "Invoices and an invoice, not voice.",
                &[("invoic", true)],
                Some("<mark>Invoices</mark> and an <mark>invoice</mark>, not voice."),
            ),
            // Escaped around the marks.
            ("a <b> & aarch64", &[("aarch64", false)], Some("a &lt;b&gt; &amp; <mark>aarch64</mark>")),
        ];
        for (text, list, want) in cases {
            assert_eq!(excerpt(text, &terms(list)).as_deref(), *want, "{text}");
        }
    }

    #[test]
    fn the_excerpt_is_the_stretch_with_most_of_the_terms() {
        let filler = "lorem ipsum dolor sit amet ".repeat(20);
        let text = format!("alpha {filler} alpha beta {filler}");
        let got = excerpt(&text, &terms(&[("alpha", false), ("beta", false)])).expect("found");
        assert!(got.contains("<mark>alpha</mark> <mark>beta</mark>"), "{got}");
        assert!(got.chars().count() <= SNIPPET_CHARS + "<mark></mark>".len() * 2, "{got}");
        // It starts at a word and ends at one.
        let plain = got.replace("<mark>", "").replace("</mark>", "");
        assert!(
            text.contains(&plain) && plain.split(' ').all(|w| "lorem ipsum dolor sit amet alpha beta".contains(w)),
            "{plain}"
        );
        // One word longer than an excerpt is cut.
        let long = format!("x {}", "y".repeat(40).repeat(10));
        let got = excerpt(&long, &terms(&[("x", false)])).expect("found");
        assert!(got.starts_with("<mark>x</mark>") && got.chars().count() <= SNIPPET_CHARS + 13, "{got}");
    }
}
