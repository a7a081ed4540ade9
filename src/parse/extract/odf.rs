//! OpenDocument (ODF 1.0–1.3): text documents, spreadsheets, presentations and the rest, zipped
//! (`mimetype`, `content.xml`, `styles.xml`, embedded objects' own `content.xml`) or flat (one
//! XML file, `.fodt` and its kin). The text is that of the document's body and of its master
//! pages (headers, footers, a presentation's footer); tracked deletions are left out. A
//! spreadsheet's repeated cells are read once: the repetition is a count, not copies. A file
//! whose content is encrypted (its manifest says so) is not read.

use super::xml::{self, Rules};
use super::{unreadable, zip, Format, Halt, Sink};

/// Everything inside the body and the master pages; what is deleted in a tracked revision is not
/// the text.
const CONTENT: Rules = Rules {
    text: &["body", "master-styles"],
    skip: &["tracked-changes", "deletion"],
    lines: &["p", "h", "table-row", "list-item"],
    tabs: &["tab"],
    breaks: &["line-break"],
    spaces: &["s"],
    cells: &["table-cell", "covered-table-cell"],
};

/// The format an OpenDocument `mimetype` names.
pub(super) fn format_of(mimetype: &str) -> Option<Format> {
    let kind = mimetype.strip_prefix("application/vnd.oasis.opendocument.")?;
    Some(match kind.strip_suffix("-template").unwrap_or(kind) {
        "text" | "text-master" | "text-web" => Format::OpenText,
        "spreadsheet" => Format::OpenSpreadsheet,
        "presentation" => Format::OpenPresentation,
        _ => Format::OpenDocument,
    })
}

/// The format of a flat OpenDocument file (`<office:document office:mimetype="…">`), from its
/// first bytes.
pub(super) fn flat_format(start: &[u8], head: &[u8]) -> Option<Format> {
    if !(start.starts_with(b"<?xml") || start.starts_with(b"<office:document")) {
        return None;
    }
    let at = memchr::memmem::find(head, b"office:mimetype=")?;
    let rest = &head[at + b"office:mimetype=".len()..];
    let quote = *rest.first()?;
    let end = rest.get(1..)?.iter().position(|&b| b == quote)?;
    format_of(std::str::from_utf8(&rest[1..1 + end]).ok()?)
}

/// An OpenDocument file's text.
pub(super) fn read(bytes: &[u8], sink: &mut Sink) -> Result<(), Halt> {
    if !bytes.starts_with(b"PK") {
        // Flat: the whole document is one XML file.
        return xml::walk(bytes, &CONTENT, sink);
    }
    let mut archive = zip::open(bytes)?;
    if let Some(manifest) = zip::member(&mut archive, "META-INF/manifest.xml", sink)? {
        if memchr::memmem::find(&manifest, b"encryption-data").is_some() {
            return Err(unreadable("encrypted with a password"));
        }
    }
    let names = zip::names(&archive);
    zip::walk(&mut archive, "content.xml", &CONTENT, sink)?;
    sink.newline()?;
    zip::walk(&mut archive, "styles.xml", &CONTENT, sink)?;
    // Embedded objects (charts, formulas, other documents) are documents of their own.
    for name in names.iter().filter(|n| n.ends_with("/content.xml") && n.matches('/').count() == 1) {
        sink.newline()?;
        zip::walk(&mut archive, name, &CONTENT, sink)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mimetypes_name_formats() {
        for (mimetype, format) in [
            ("application/vnd.oasis.opendocument.text", Some(Format::OpenText)),
            ("application/vnd.oasis.opendocument.text-template", Some(Format::OpenText)),
            ("application/vnd.oasis.opendocument.spreadsheet", Some(Format::OpenSpreadsheet)),
            ("application/vnd.oasis.opendocument.presentation", Some(Format::OpenPresentation)),
            ("application/vnd.oasis.opendocument.graphics", Some(Format::OpenDocument)),
            ("application/epub+zip", None),
        ] {
            assert_eq!(format_of(mimetype), format, "{mimetype}");
        }
        let flat = br#"<?xml version="1.0"?><office:document xmlns:office="x" office:mimetype="application/vnd.oasis.opendocument.text">"#;
        assert_eq!(flat_format(flat, flat), Some(Format::OpenText));
        assert_eq!(flat_format(b"<?xml version='1.0'?><svg/>", b"<svg/>"), None);
    }
}
