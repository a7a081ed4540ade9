//! What the search index gets of a message: its headers, the text a reader sees, the names of
//! its files and the text of its documents ([`crate::parse::extract`]), for it and every message
//! it encloses. An external body's phantom is not text a reader sees (it is the header of data
//! that lives elsewhere, then filler): only its description is searched, and its name with the
//! file names. The body's text and the documents' share [`MAX_INDEXED_TEXT`], the body first.

use std::borrow::Cow;

use crate::index::EntryId;
use crate::limits::MAX_INDEXED_TEXT;
use crate::model::{Body, Message, PartIdx};
use crate::parse::extract::{self, Budget, Outcome};
use crate::rewrite::visible_text;
use crate::search::Doc;

/// What the search index gets of a message: its headers, the text a reader sees and the names of
/// its files (its own and those of the messages it encloses), and with `documents` the text of
/// its documents.
pub fn search_doc(id: EntryId, msg: &Message, documents: bool) -> Doc {
    let mut filenames = Vec::new();
    let mut stack = vec![msg];
    while let Some(m) = stack.pop() {
        filenames.extend(m.parts.iter().filter_map(|p| p.filename.clone()));
        filenames.extend(m.parts.iter().filter_map(|p| p.external.as_ref()?.name.clone()));
        stack.extend(m.nested().map(|(_, n)| n));
    }
    let body = reader_text(msg);
    let attachments =
        if documents { attachment_text(msg, MAX_INDEXED_TEXT.saturating_sub(body.len())) } else { String::new() };
    Doc {
        id,
        subject: msg.summary.subject.clone().unwrap_or_default(),
        from: msg.summary.from.clone().unwrap_or_default(),
        to: msg.summary.to.clone().unwrap_or_default(),
        cc: msg.summary.cc.clone().unwrap_or_default(),
        body,
        filenames: filenames.join(" "),
        attachments,
        timestamp: msg.summary.timestamp,
        size: msg.size(),
        has_attachment: msg.has_attachments(),
        labels: msg.summary.labels.clone(),
        list: msg.summary.list.clone(),
        // Where it is filed is the index's to say, once it is added.
        folder: String::new(),
    }
}

/// The text a reader sees: the text body, else the visible text of the HTML body, the inline
/// texts shown after it, and the descriptions of external bodies, of the message and of every
/// message it encloses; at most [`MAX_INDEXED_TEXT`]. Of a message with both a text and an HTML
/// version, the words of the HTML version (which its page shows) that the text version lacks
/// follow the text: a version is seldom a word-for-word copy of the other, and either is what
/// someone read.
pub(super) fn reader_text(msg: &Message) -> String {
    let mut body = String::new();
    let mut stack = vec![msg];
    while let Some(m) = stack.pop() {
        if body.len() < MAX_INDEXED_TEXT {
            let shown = m.text_body.or(m.html_body).into_iter().chain(m.more_bodies.iter().copied());
            for text in shown.map(|i| text_seen(&m.parts[i])) {
                body.push_str(&text);
                body.push('\n');
            }
            if let (Some(text), Some(html)) = (m.text_body, m.html_body.filter(|&h| Some(h) != m.text_body)) {
                let (text, html) = (text_seen(&m.parts[text]), text_seen(&m.parts[html]));
                let only_in_html = words_missing_from(&html, &text);
                if !only_in_html.is_empty() {
                    body.push_str(&only_in_html);
                    body.push('\n');
                }
            }
            for d in m.parts.iter().filter_map(|p| p.external.as_ref()?.description.as_deref()) {
                body.push_str(d);
                body.push('\n');
            }
        }
        stack.extend(m.nested().map(|(_, n)| n));
    }
    if body.len() > MAX_INDEXED_TEXT {
        let mut cut = MAX_INDEXED_TEXT;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        body.truncate(cut);
    }
    body
}

/// The words of `text` that `from` does not hold, ignoring case, each once, in the order they
/// first come, separated by spaces (so that a phrase of such words is still found).
fn words_missing_from(text: &str, from: &str) -> String {
    fn words(s: &str) -> impl Iterator<Item = &str> {
        s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty())
    }
    // Lower-cased only when it changes the word: most words are written in lower case.
    fn key(w: &str) -> Cow<'_, str> {
        if w.chars().any(char::is_uppercase) {
            Cow::Owned(w.to_lowercase())
        } else {
            Cow::Borrowed(w)
        }
    }
    let mut missing = String::new();
    if same_words(text, from) {
        return missing;
    }
    let mut seen: rustc_hash::FxHashSet<Cow<'_, str>> = words(from).map(key).collect();
    for word in words(text) {
        if seen.insert(key(word)) {
            if !missing.is_empty() {
                missing.push(' ');
            }
            missing.push_str(word);
        }
    }
    missing
}

/// Whether `a` and `b` hold the same words in the same order, ignoring ASCII case and what stands
/// between words: most HTML versions are their text version marked up, and this answers for them
/// byte by byte, without splitting words. Any byte of a character beyond ASCII counts as a
/// letter, so a "no" may be wrong (a no-break space against a space, `É` against `é`): it only
/// means looking closer.
fn same_words(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let letter = |c: u8| c.is_ascii_alphanumeric() || !c.is_ascii();
    let (mut i, mut j) = (0, 0);
    loop {
        while a.get(i).is_some_and(|&c| !letter(c)) {
            i += 1;
        }
        while b.get(j).is_some_and(|&c| !letter(c)) {
            j += 1;
        }
        let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) else { return i >= a.len() && j >= b.len() };
        if !x.eq_ignore_ascii_case(&y) {
            return false;
        }
        (i, j) = (i + 1, j + 1);
        // A word ends in both at once, or in neither.
        if a.get(i).is_some_and(|&c| letter(c)) != b.get(j).is_some_and(|&c| letter(c)) {
            return false;
        }
    }
}

/// The text a reader sees of a text part: the text, or an HTML part's visible text.
fn text_seen(part: &crate::model::Part) -> Cow<'_, str> {
    match &part.body {
        Body::Text(h) if part.is_html() => Cow::Owned(visible_text(h)),
        Body::Text(t) => Cow::Borrowed(t),
        _ => Cow::Borrowed(""),
    }
}

/// A document of a message: the parts holding the enclosed messages on the way down to it, and
/// its index in the innermost one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DocumentAt {
    pub path: Vec<PartIdx>,
    pub idx: PartIdx,
}

/// The parts of a message and of every message it encloses that may be documents, in order.
pub fn documents(msg: &Message) -> Vec<DocumentAt> {
    let mut out = Vec::new();
    let mut stack: Vec<(Vec<PartIdx>, &Message)> = vec![(Vec::new(), msg)];
    while let Some((path, m)) = stack.pop() {
        out.extend(extract::documents(m).map(|idx| DocumentAt { path: path.clone(), idx }));
        for (i, inner) in m.nested() {
            let mut down = path.clone();
            down.push(i);
            stack.push((down, inner));
        }
    }
    out
}

/// The message a [`DocumentAt`] lies in.
pub fn message_at<'a>(msg: &'a Message, path: &[PartIdx]) -> Option<&'a Message> {
    path.iter().try_fold(msg, |m, &i| match &m.parts.get(i)?.body {
        Body::Message(inner) => Some(&**inner),
        _ => None,
    })
}

/// The text of the documents of `msg` (and of the messages it encloses) for the index: at most
/// `room` bytes, within the message's bounds for time and decompression.
fn attachment_text(msg: &Message, room: usize) -> String {
    let mut budget = Budget::new(visible_text, room);
    let mut out = String::new();
    for at in documents(msg) {
        if budget.spent() {
            break;
        }
        let Some(part) = message_at(msg, &at.path).and_then(|m| m.parts.get(at.idx)) else { continue };
        let Some(read) = budget.read(part) else { continue };
        if read.outcome != Outcome::Whole {
            tracing::debug!(message = %msg.id, part = %part.section, notices = ?read.notices, "attachment text");
        }
        out.push_str(&read.text);
        if !read.text.is_empty() && out.len() < room {
            out.push('\n');
        }
    }
    out
}

/// One document's text for reading and for search results: on a budget of its own (the index's
/// whole text bound, its own time and decompression).
pub(super) fn document_text(msg: &Message, at: &DocumentAt) -> Option<extract::Extracted> {
    let part = message_at(msg, &at.path)?.parts.get(at.idx)?;
    Budget::new(visible_text, MAX_INDEXED_TEXT).read(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_html_versions_own_words_follow_the_text() {
        let cases = [
            (
                "This is the plain text",
                "This is what displays in most modern email clients",
                "what displays in most modern email clients",
            ),
            ("Hello Ann, see you.", "<p>hello <b>ANN</b>, see you.</p>", ""),
            ("Grüße", "GRÜSSE grüße Grüße Straße", "GRÜSSE Straße"),
            ("", "Don't find me", "Don t find me"),
        ];
        for (text, html, want) in cases {
            assert_eq!(words_missing_from(&visible_text(html), text), want, "{html}");
        }
    }

    #[test]
    fn the_same_words_are_told_without_splitting_them() {
        for (a, b, same) in [
            ("Hello, World!", "hello world", true),
            ("", " \n ", true),
            ("caf\u{e9} cr\u{e8}me", "caf\u{e9}  cr\u{e8}me.", true),
            ("Hello World", "Hello Worlds", false),
            ("a b", "ab", false),
            ("ab", "a b", false),
            ("one", "", false),
            ("", "one", false),
            // Told apart, though the same words: only a reason to look closer.
            ("CAF\u{c9}", "caf\u{e9}", false),
        ] {
            assert_eq!(same_words(a, b), same, "{a:?} {b:?}");
        }
    }
}
