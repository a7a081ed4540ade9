//! What the search index gets of a message: its headers, the text a reader sees, and the names of
//! its files, for it and every message it encloses. An external body's phantom is not text a
//! reader sees (it is the header of data that lives elsewhere, then filler): only its description
//! is searched, and its name with the file names.

use std::borrow::Cow;

use crate::index::EntryId;
use crate::limits::MAX_INDEXED_TEXT;
use crate::model::{Body, Message};
use crate::rewrite::visible_text;
use crate::search::Doc;

/// What the search index gets of a message: its headers, the text a reader sees and the names of
/// its files (its own and those of the messages it encloses).
pub fn search_doc(id: EntryId, msg: &Message) -> Doc {
    let mut filenames = Vec::new();
    let mut stack = vec![msg];
    while let Some(m) = stack.pop() {
        filenames.extend(m.parts.iter().filter_map(|p| p.filename.clone()));
        filenames.extend(m.parts.iter().filter_map(|p| p.external.as_ref()?.name.clone()));
        stack.extend(m.nested().map(|(_, n)| n));
    }
    Doc {
        id,
        subject: msg.summary.subject.clone().unwrap_or_default(),
        from: msg.summary.from.clone().unwrap_or_default(),
        to: msg.summary.to.clone().unwrap_or_default(),
        cc: msg.summary.cc.clone().unwrap_or_default(),
        body: reader_text(msg),
        filenames: filenames.join(" "),
        timestamp: msg.summary.timestamp,
        size: msg.given().len() as u64,
        has_attachment: msg.has_attachments(),
        labels: msg.summary.labels.clone(),
        list: msg.summary.list.clone(),
        // Where it is filed is the index's to say, once it is added.
        folder: String::new(),
    }
}

/// The text a reader sees: the text body, else the visible text of the HTML body, and the
/// descriptions of external bodies, of the message and of every message it encloses; at most
/// [`MAX_INDEXED_TEXT`].
pub(super) fn reader_text(msg: &Message) -> String {
    let mut body = String::new();
    let mut stack = vec![msg];
    while let Some(m) = stack.pop() {
        let text: Cow<'_, str> = match (m.text_body, m.html_body) {
            (Some(t), _) => match &m.parts[t].body {
                Body::Text(t) => Cow::Borrowed(t),
                _ => Cow::Borrowed(""),
            },
            (None, Some(h)) => match &m.parts[h].body {
                Body::Text(h) => Cow::Owned(visible_text(h)),
                _ => Cow::Borrowed(""),
            },
            _ => Cow::Borrowed(""),
        };
        if body.len() < MAX_INDEXED_TEXT {
            body.push_str(&text);
            body.push('\n');
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
