//! The text of an XML part of an Office Open XML or OpenDocument file, as a stream of quick-xml
//! events: which elements hold text, which end a line or stand for a tab, which subtrees are not
//! the document's text. Elements are matched by their local name, whatever prefix a producer gave
//! their namespace. One event is in memory at a time, and the reader below counts every byte it
//! decompresses.

use std::io::BufRead;

use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::Reader;

use super::{Halt, Sink};

/// Which elements of one kind of XML part matter for its text.
pub(super) struct Rules {
    /// Text is kept only inside these elements; empty: everywhere not skipped.
    pub text: &'static [&'static str],
    /// Subtrees that are not the document's text (a deleted revision, a fallback copy).
    pub skip: &'static [&'static str],
    /// A line ends after each of these (paragraphs, rows, items).
    pub lines: &'static [&'static str],
    /// Empty elements standing for a tab.
    pub tabs: &'static [&'static str],
    /// Empty elements standing for a line break.
    pub breaks: &'static [&'static str],
    /// Empty elements standing for a space (OpenDocument's `text:s`).
    pub spaces: &'static [&'static str],
    /// Elements that separate what they hold from what is around it by a space (cells).
    pub cells: &'static [&'static str],
}

/// A reader of XML events over a (decompressing, metered) byte stream, lenient about what
/// producers get wrong.
pub(super) fn reader<R: BufRead>(input: R) -> Reader<R> {
    let mut reader = Reader::from_reader(input);
    let config = reader.config_mut();
    config.check_end_names = false;
    config.allow_unmatched_ends = true;
    config.allow_dangling_amp = true;
    reader
}

/// The text of one XML part by `rules`.
pub(super) fn walk<R: BufRead>(input: R, rules: &Rules, sink: &mut Sink) -> Result<(), Halt> {
    let mut reader = reader(input);
    let mut buf = Vec::new();
    // Depth inside a skipped subtree, and inside elements that hold text.
    let (mut skipping, mut inside) = (0usize, 0usize);
    loop {
        sink.tick()?;
        buf.clear();
        let event = match reader.read_event_into(&mut buf) {
            Ok(e) => e,
            Err(_) => return Err(sink.read_error("its XML")),
        };
        match event {
            Event::Start(e) => {
                let name = e.local_name();
                let name = name.as_ref();
                if skipping > 0 || rules.skip.contains(&name) {
                    skipping += 1;
                    continue;
                }
                if rules.text.contains(&name) {
                    inside += 1;
                }
                if rules.cells.contains(&name) {
                    sink.space()?;
                }
            }
            Event::End(e) => {
                if skipping > 0 {
                    skipping -= 1;
                    continue;
                }
                let name = e.local_name();
                let name = name.as_ref();
                if rules.text.contains(&name) {
                    inside = inside.saturating_sub(1);
                }
                if rules.lines.contains(&name) {
                    sink.newline()?;
                } else if rules.cells.contains(&name) {
                    sink.space()?;
                }
            }
            Event::Empty(e) if skipping == 0 => empty(&e, rules, sink)?,
            Event::Text(t) if skipping == 0 && (rules.text.is_empty() || inside > 0) => {
                sink.push(&t.xml10_content())?;
            }
            Event::CData(t) if skipping == 0 && (rules.text.is_empty() || inside > 0) => {
                sink.push(&t)?;
            }
            Event::GeneralRef(r) if skipping == 0 && (rules.text.is_empty() || inside > 0) => {
                if let Some(c) = reference(&r) {
                    let mut utf8 = [0u8; 4];
                    sink.push(c.encode_utf8(&mut utf8))?;
                }
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// What an empty element stands for.
fn empty(e: &BytesStart<'_>, rules: &Rules, sink: &mut Sink) -> Result<(), Halt> {
    let name = e.local_name();
    let name = name.as_ref();
    if rules.tabs.contains(&name) {
        sink.push("\t")?;
    } else if rules.breaks.contains(&name) || rules.lines.contains(&name) {
        sink.newline()?;
    } else if rules.spaces.contains(&name) {
        sink.push(" ")?;
    } else if rules.cells.contains(&name) {
        sink.space()?;
    }
    Ok(())
}

/// The character an entity or character reference stands for (the five XML defines, and any
/// number).
pub(super) fn reference(r: &BytesRef<'_>) -> Option<char> {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return Some(c);
    }
    match r.xml10_content().as_ref() {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => None,
    }
}

/// The unescaped value of an attribute, by local name.
pub(super) fn attribute(e: &BytesStart<'_>, local: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == local)
        .and_then(|a| a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok().map(|v| v.into_owned()))
}
