//! Office Open XML (ECMA-376): the text of Word documents (body with its tables, headers and
//! footers, footnotes and endnotes, comments, HTML pasted in as `altChunk`), Excel workbooks
//! (sheet names, shared and inline strings, the values of cells, headers and footers, comments)
//! and PowerPoint presentations (slides in order, their notes and comments, diagrams), each read
//! from its XML parts in the zip container, and the documents embedded in any of them. Macro and
//! template variants (`.docm`, `.dotx`, `.xlsm`, `.pptm`) have the same parts. Deleted revisions
//! and the fallback copies of drawings are not the document's text and are left out.

use std::io::BufReader;
use std::rc::Rc;

use quick_xml::events::Event;

use super::xml::{self, Rules};
use super::zip::{self, Archive};
use super::{Halt, Metered, Sink};

/// WordprocessingML: text runs (`w:t`), paragraphs, tabs and breaks; the fallback copy of a
/// drawing (`mc:Fallback`, the same text box again) is left out, and so are deleted runs
/// (`w:delText` is not `w:t`) and field instructions (`w:instrText`).
const WORD: Rules = Rules {
    text: &["t"],
    skip: &["Fallback"],
    lines: &["p", "tr"],
    tabs: &["tab"],
    breaks: &["br", "cr"],
    spaces: &[],
    cells: &["tc"],
};

/// DrawingML text in slides, notes and diagrams (`a:t`), and comments' text (`p:text`).
const DRAWING: Rules = Rules {
    text: &["t", "text"],
    skip: &["Fallback"],
    lines: &["p", "cm"],
    tabs: &["tab"],
    breaks: &["br"],
    spaces: &[],
    cells: &["tc"],
};

/// Comments of a workbook: their `t`, not a phonetic reading.
const STRINGS: Rules =
    Rules { text: &["t"], skip: &["rPh"], lines: &["si", "comment"], tabs: &[], breaks: &[], spaces: &[], cells: &[] };

/// Threaded comments of a workbook.
const THREADED: Rules =
    Rules { text: &["text"], skip: &[], lines: &["threadedComment"], tabs: &[], breaks: &[], spaces: &[], cells: &[] };

/// Parts whose names sort as `prefix` + number + `.xml`, in numeric order (`slide2` before
/// `slide10`).
fn numbered(names: &[String], prefix: &str) -> Vec<String> {
    let mut found: Vec<(u64, &String)> = names
        .iter()
        .filter_map(|n| {
            let number = n.strip_prefix(prefix)?.strip_suffix(".xml")?;
            Some((number.parse().ok()?, n))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, n)| n.clone()).collect()
}

/// The files embedded in the document (`word/embeddings/`, `xl/embeddings/`, `ppt/embeddings/`),
/// read as documents of their own, and HTML pasted into it.
fn embedded(archive: &mut Archive<'_>, names: &[String], folder: &str, sink: &mut Sink) -> Result<(), Halt> {
    for name in names.iter().filter(|n| n.starts_with(folder) && n.contains("/embeddings/")) {
        match zip::member(archive, name, sink) {
            Ok(Some(data)) => {
                let short = name.rsplit('/').next().unwrap_or(name);
                sink.nested(&data, short, "")?;
            }
            Ok(None) => {}
            Err(Halt::Stop(s)) => return Err(Halt::Stop(s)),
            Err(Halt::Unreadable(why)) => sink.notices.push(format!("{name}: {why}")),
        }
    }
    Ok(())
}

/// A Word document: the body, then headers and footers, notes, comments, pasted HTML and
/// embedded files.
pub(super) fn word(bytes: &[u8], sink: &mut Sink) -> Result<(), Halt> {
    let mut archive = zip::open(bytes)?;
    let names = zip::names(&archive);
    zip::walk(&mut archive, "word/document.xml", &WORD, sink)?;
    let mut parts = numbered(&names, "word/header");
    parts.extend(numbered(&names, "word/footer"));
    parts.extend(
        ["word/footnotes.xml", "word/endnotes.xml", "word/comments.xml", "word/glossary/document.xml"]
            .iter()
            .map(|s| s.to_string()),
    );
    for part in parts {
        sink.newline()?;
        zip::walk(&mut archive, &part, &WORD, sink)?;
    }
    for name in names.iter().filter(|n| n.starts_with("word/") && (n.ends_with(".html") || n.ends_with(".htm"))) {
        if let Some(data) = zip::member(&mut archive, name, sink)? {
            sink.newline()?;
            super::text::html(&crate::parse::charset::decode_html(&data), sink)?;
        }
    }
    embedded(&mut archive, &names, "word/", sink)
}

/// A PowerPoint presentation: each slide in order with its notes, then comments and diagrams.
pub(super) fn powerpoint(bytes: &[u8], sink: &mut Sink) -> Result<(), Halt> {
    let mut archive = zip::open(bytes)?;
    let names = zip::names(&archive);
    let mut parts = numbered(&names, "ppt/slides/slide");
    parts.extend(numbered(&names, "ppt/notesSlides/notesSlide"));
    parts.extend(numbered(&names, "ppt/comments/comment"));
    parts.extend(numbered(&names, "ppt/diagrams/data"));
    for part in parts {
        sink.newline()?;
        zip::walk(&mut archive, &part, &DRAWING, sink)?;
    }
    embedded(&mut archive, &names, "ppt/", sink)
}

/// An Excel workbook: sheet names, then each sheet row by row (shared strings in the cells that
/// use them), its headers and footers, and comments.
pub(super) fn excel(bytes: &[u8], sink: &mut Sink) -> Result<(), Halt> {
    let mut archive = zip::open(bytes)?;
    let names = zip::names(&archive);
    sheet_names(&mut archive, sink)?;
    let strings = shared_strings(&mut archive, sink)?;
    for sheet in numbered(&names, "xl/worksheets/sheet") {
        sink.newline()?;
        cells(&mut archive, &sheet, &strings, sink)?;
    }
    for comments in numbered(&names, "xl/comments") {
        sink.newline()?;
        zip::walk(&mut archive, &comments, &STRINGS, sink)?;
    }
    for comments in numbered(&names, "xl/threadedComments/threadedComment") {
        sink.newline()?;
        zip::walk(&mut archive, &comments, &THREADED, sink)?;
    }
    embedded(&mut archive, &names, "xl/", sink)
}

/// The names of a workbook's sheets, one a line.
fn sheet_names(archive: &mut Archive<'_>, sink: &mut Sink) -> Result<(), Halt> {
    let meter = Rc::clone(&sink.meter);
    let Ok(file) = archive.by_name("xl/workbook.xml") else { return Ok(()) };
    let mut reader = xml::reader(BufReader::new(Metered::new(file, meter)));
    let mut buf = Vec::new();
    loop {
        sink.tick()?;
        buf.clear();
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e) | Event::Empty(e)) if e.local_name().as_ref() == "sheet" => {
                if let Some(name) = xml::attribute(&e, "name") {
                    sink.push(&name)?;
                    sink.push("\n")?;
                }
            }
            Ok(Event::Eof) => return Ok(()),
            Ok(_) => {}
            Err(_) => return Err(sink.read_error("the workbook")),
        }
    }
}

/// The workbook's shared strings, in order, as many as the text the document may still give
/// (past that, the rest are empty: no cell could show them anyway).
fn shared_strings(archive: &mut Archive<'_>, sink: &mut Sink) -> Result<Vec<String>, Halt> {
    let meter = Rc::clone(&sink.meter);
    let Ok(file) = archive.by_name("xl/sharedStrings.xml") else { return Ok(Vec::new()) };
    let mut reader = xml::reader(BufReader::new(Metered::new(file, meter)));
    let (mut buf, mut strings, mut kept) = (Vec::new(), Vec::new(), 0usize);
    let mut current = String::new();
    // Inside a `t` that is not a phonetic reading's.
    let (mut text, mut phonetic) = (false, false);
    loop {
        sink.tick()?;
        buf.clear();
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => match e.local_name().as_ref() {
                "t" => text = !phonetic,
                "rPh" => phonetic = true,
                _ => {}
            },
            Ok(Event::Empty(e)) if e.local_name().as_ref() == "si" => strings.push(String::new()),
            Ok(Event::End(e)) => match e.local_name().as_ref() {
                "t" => text = false,
                "rPh" => phonetic = false,
                "si" => {
                    kept += current.len();
                    strings.push(if kept <= sink.room() { std::mem::take(&mut current) } else { String::new() });
                    current.clear();
                }
                _ => {}
            },
            Ok(Event::Text(t)) if text => current.push_str(&t.xml10_content()),
            Ok(Event::GeneralRef(r)) if text => current.extend(xml::reference(&r)),
            Ok(Event::Eof) => return Ok(strings),
            Ok(_) => {}
            Err(_) => return Err(sink.read_error("the shared strings")),
        }
    }
}

/// What a cell's value is, by its `t` attribute.
#[derive(Clone, Copy, PartialEq)]
enum Cell {
    /// A boolean or an error: not shown here.
    Hidden,
    /// An index into the shared strings.
    Shared,
    /// A number, a date as a number, or a formula's string result: its `<v>`.
    Value,
    /// An inline string: its `<is><t>`.
    Inline,
}

/// A sheet's text, row by row (cells apart by tabs): numbers as stored, strings, and its headers
/// and footers without their formatting codes.
fn cells(archive: &mut Archive<'_>, name: &str, strings: &[String], sink: &mut Sink) -> Result<(), Halt> {
    let meter = Rc::clone(&sink.meter);
    let Ok(file) = archive.by_name(name) else { return Ok(()) };
    let mut reader = xml::reader(BufReader::new(Metered::new(file, meter)));
    let mut buf = Vec::new();
    let mut cell = Cell::Hidden;
    // Inside `<v>` of a shown value, `<t>` of an inline string: text to take.
    let mut taking = false;
    // Inside `<v>` of a shared string: its index.
    let mut index = String::new();
    // A header or footer, gathered whole: its codes may be split by character references.
    let mut header: Option<String> = None;
    loop {
        sink.tick()?;
        buf.clear();
        let event = match reader.read_event_into(&mut buf) {
            Ok(e) => e,
            Err(_) => return Err(sink.read_error("a worksheet")),
        };
        match event {
            Event::Start(e) => match e.local_name().as_ref() {
                "c" => {
                    cell = match xml::attribute(&e, "t").as_deref() {
                        Some("b" | "e") => Cell::Hidden,
                        Some("s") => Cell::Shared,
                        Some("inlineStr") => Cell::Inline,
                        _ => Cell::Value,
                    };
                    if !sink.text.ends_with(['\n', '\t']) && !sink.text.is_empty() {
                        sink.push("\t")?;
                    }
                }
                "v" => {
                    taking = cell == Cell::Value;
                    index.clear();
                }
                "t" => taking = cell == Cell::Inline,
                "oddHeader" | "oddFooter" | "evenHeader" | "evenFooter" | "firstHeader" | "firstFooter" => {
                    header = Some(String::new());
                }
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                "v" if cell == Cell::Shared => {
                    if let Some(s) = index.trim().parse::<usize>().ok().and_then(|i| strings.get(i)) {
                        sink.push(s)?;
                    }
                }
                "v" | "t" => taking = false,
                "c" => cell = Cell::Hidden,
                "row" => sink.newline()?,
                "oddHeader" | "oddFooter" | "evenHeader" | "evenFooter" | "firstHeader" | "firstFooter" => {
                    if let Some(h) = header.take() {
                        sink.newline()?;
                        sink.push(&header_text(&h))?;
                        sink.newline()?;
                    }
                }
                _ => {}
            },
            Event::Text(t) if taking && cell == Cell::Value => sink.push(&number(&t.xml10_content()))?,
            Event::Text(t) if taking => sink.push(&t.xml10_content())?,
            Event::Text(t) if cell == Cell::Shared && index.len() < 16 => index.push_str(&t.xml10_content()),
            Event::Text(t) => {
                if let Some(h) = header.as_mut().filter(|h| h.len() < sink.room()) {
                    h.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(r) if taking => {
                if let Some(c) = xml::reference(&r) {
                    let mut utf8 = [0u8; 4];
                    sink.push(c.encode_utf8(&mut utf8))?;
                }
            }
            Event::GeneralRef(r) => {
                if let Some(h) = header.as_mut() {
                    h.extend(xml::reference(&r));
                }
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// A number as Excel shows it when nothing formats it: the shortest decimal that is the same
/// binary number (`2.5000000000000001E-2` is stored, `0.025` is shown). Anything else (a formula's
/// string result) as it is.
fn number(value: &str) -> String {
    match value.trim().parse::<f64>() {
        Ok(n) if n.is_finite() => n.to_string(),
        _ => value.to_string(),
    }
}

/// A header or footer without its codes (`&L`, `&C`, `&R` for where text goes, `&P` and `&D` for
/// fields, `&"Arial,Bold"` for the font, `&12` for the size; `&&` is an ampersand).
fn header_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '&' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('&') => out.push('&'),
            Some('"') => {
                for c in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                }
            }
            Some(d) if d.is_ascii_digit() => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
            }
            Some('L' | 'C' | 'R') => out.push(' '),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_codes_are_left_out() {
        for (code, text) in [
            ("&L&\"Arial,Bold\"&12Quarterly &P of &N&RConfidential", " Quarterly  of  Confidential"),
            ("Tom && Jerry", "Tom & Jerry"),
            ("", ""),
            ("&", ""),
        ] {
            assert_eq!(header_text(code), text, "{code}");
        }
    }

    #[test]
    fn numbers_read_as_excel_shows_them() {
        for (stored, shown) in [
            ("2.5000000000000001E-2", "0.025"),
            ("19.989999999999998", "19.99"),
            ("198356388", "198356388"),
            ("-1599.99", "-1599.99"),
            ("#N/A", "#N/A"),
        ] {
            assert_eq!(number(stored), shown, "{stored}");
        }
    }

    #[test]
    fn numbered_parts_sort_by_number() {
        let names: Vec<String> =
            ["ppt/slides/slide10.xml", "ppt/slides/slide2.xml", "ppt/slides/slide1.xml", "ppt/slides/x.xml"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        assert_eq!(
            numbered(&names, "ppt/slides/slide"),
            vec!["ppt/slides/slide1.xml", "ppt/slides/slide2.xml", "ppt/slides/slide10.xml"]
        );
    }
}
