//! One CSV row per message (RFC 4180, UTF-8, a header row), with cells a spreadsheet cannot take
//! for formulas.

use std::io::Write;

use super::Exported;
use crate::index::Entry;
use crate::model::Message;

/// A CSV writer with its header row written.
pub(super) fn writer<W: Write>(out: W) -> std::io::Result<::csv::Writer<W>> {
    let mut w = ::csv::WriterBuilder::new().terminator(::csv::Terminator::CRLF).from_writer(out);
    w.write_record(CSV_HEADER)?;
    Ok(w)
}

/// Writes one message's row.
pub(super) fn add<W: Write>(w: &mut ::csv::Writer<W>, m: &Exported) -> std::io::Result<()> {
    match &m.message {
        Some(msg) => Ok(w.write_record(csv_row(&m.entry, &m.folder, msg))?),
        None => Err(std::io::Error::other("a CSV row needs the parsed message")),
    }
}

const CSV_HEADER: [&str; 11] = [
    "date",
    "from",
    "to",
    "cc",
    "subject",
    "message_id",
    "folder",
    "labels",
    "attachment_count",
    "attachment_names",
    "size",
];

fn csv_row(entry: &Entry, folder: &str, msg: &Message) -> [String; 11] {
    let names: Vec<String> = msg.attachments().map(crate::view::part_filename).collect();
    let labels = entry.labels.join("; ");
    [
        entry.summary.date().unwrap_or_default(),
        cell(msg.summary.from.as_deref()),
        cell(msg.summary.to.as_deref()),
        cell(msg.summary.cc.as_deref()),
        cell(msg.summary.subject.as_deref()),
        cell(entry.message_id()),
        cell(Some(folder)),
        cell(Some(&labels)),
        names.len().to_string(),
        cell(Some(&names.join("; "))),
        entry.size.to_string(),
    ]
}

/// A text cell. One that a spreadsheet would take for a formula (starting with `=`, `+`, `-`, `@`,
/// a tab or a carriage return: "CSV injection") gets a leading `'`, which spreadsheets show as
/// text and hide; a subject such as `=HYPERLINK(…)` then stays a subject.
fn cell(s: Option<&str>) -> String {
    let s = s.unwrap_or("");
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_are_defused() {
        assert_eq!(cell(Some("=1+1")), "'=1+1");
        assert_eq!(cell(Some("hello")), "hello");
    }
}
