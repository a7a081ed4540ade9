//! Telling what a part is by its bytes: the magic numbers and containers of the formats read,
//! the Office files recognised and not read, archives never opened, and names or types that
//! claim a format the bytes are not.

use super::{odf, zip, Format, Input, Recognised};
use crate::ingest::starts_with_field;
use crate::model::Part;

/// What `part` is as a document, from its bytes first and its name and type after; `None` when it
/// is none (a picture, a signature, anything without text to read).
pub fn recognise(part: &Part) -> Option<Recognised> {
    let input = Input::of(part)?;
    recognise_input(&input, &super::declared_type(part), part.filename.as_deref())
}

pub(super) fn recognise_input(input: &Input<'_>, declared: &str, name: Option<&str>) -> Option<Recognised> {
    let decoded = matches!(input, Input::Text(_));
    recognise_bytes(input.bytes(), declared, name, decoded)
}

/// Extensions of files that are text, whatever type they were sent with.
const TEXT_EXTENSIONS: &[&str] = &[
    "txt", "text", "csv", "tsv", "tab", "md", "markdown", "log", "ini", "cfg", "conf", "json", "yaml", "yml", "ics",
    "vcf",
];

/// Extensions and types that claim a document format: a part that says so and is not one is
/// damaged rather than no document.
const CLAIMS: &[(&str, &str, &str)] = &[
    ("pdf", "application/pdf", "damaged: it is not a PDF file"),
    (
        "docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "damaged: it is not an Office Open XML file",
    ),
    (
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "damaged: it is not an Office Open XML file",
    ),
    (
        "pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "damaged: it is not an Office Open XML file",
    ),
    ("odt", "application/vnd.oasis.opendocument.text", "damaged: it is not an OpenDocument file"),
    ("ods", "application/vnd.oasis.opendocument.spreadsheet", "damaged: it is not an OpenDocument file"),
    ("odp", "application/vnd.oasis.opendocument.presentation", "damaged: it is not an OpenDocument file"),
    ("rtf", "application/rtf", "damaged: it is not an RTF file"),
    ("zip", "application/zip", "damaged: it is not a zip archive"),
    ("doc", "application/msword", "damaged: it is not a Word file"),
    ("xls", "application/vnd.ms-excel", "damaged: it is not an Excel file"),
    ("ppt", "application/vnd.ms-powerpoint", "damaged: it is not a PowerPoint file"),
    ("msg", "application/vnd.ms-outlook", "damaged: it is not an Outlook message"),
];

/// Magic numbers of archive formats that are never opened (only zip archives are).
const OTHER_ARCHIVES: &[(&[u8], &str)] = &[
    (b"Rar!\x1a\x07", "a RAR archive: only zip archives are opened"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive: only zip archives are opened"),
    (b"\x1f\x8b", "a gzip file: only zip archives are opened"),
    (b"BZh", "a bzip2 file: only zip archives are opened"),
    (b"\xfd7zXZ\x00", "an xz file: only zip archives are opened"),
    (b"\x28\xb5\x2f\xfd", "a Zstandard file: only zip archives are opened"),
];

pub(super) fn extension(name: Option<&str>) -> Option<String> {
    let name = name?;
    let (_, ext) = name.rsplit_once('.')?;
    (!ext.is_empty() && ext.len() <= 10).then(|| ext.trim().to_ascii_lowercase())
}

/// Recognises a document by its bytes, then by what it claims to be. `decoded`: the bytes are
/// text the parser decoded (a `text/*` part).
pub(super) fn recognise_bytes(bytes: &[u8], declared: &str, name: Option<&str>, decoded: bool) -> Option<Recognised> {
    use Recognised::{NotRead, Readable};
    let head = &bytes[..bytes.len().min(1024)];
    let ext = extension(name);
    if memchr::memmem::find(head, b"%PDF-").is_some() {
        return Some(Readable(Format::Pdf));
    }
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return Some(zip::classify(bytes));
    }
    if bytes.starts_with(crate::ingest::OLE_MAGIC) {
        return ole_kind(bytes);
    }
    let start = skip_bom_and_space(head);
    if start.starts_with(b"{\\rtf") {
        return Some(Readable(Format::Rtf));
    }
    if let Some((_, why)) = OTHER_ARCHIVES.iter().find(|(magic, _)| bytes.starts_with(magic)) {
        return Some(NotRead(why));
    }
    // A flat OpenDocument file names its type after its namespaces, a few kilobytes in.
    if let Some(format) = odf::flat_format(start, &bytes[..bytes.len().min(8192)]) {
        return Some(Readable(format));
    }
    let text_type = declared.starts_with("text/");
    if declared == "text/html" || declared == "application/xhtml+xml" || looks_like_html(start) {
        return Some(Readable(Format::Html));
    }
    if ext.as_deref() == Some("eml") && starts_with_field(start) {
        return Some(Readable(Format::Message));
    }
    let untyped = declared.is_empty() || declared == "application/octet-stream";
    let text_name = ext.as_deref().is_some_and(|e| TEXT_EXTENSIONS.contains(&e));
    // A CSV file is often sent as an Excel type: its name and its bytes say what it is.
    let utf16 = bytes.starts_with(b"\xff\xfe") || bytes.starts_with(b"\xfe\xff");
    if text_type || (decoded && untyped) || (text_name && (utf16 || looks_textual(head))) {
        return Some(Readable(Format::Text));
    }
    let claim = CLAIMS.iter().find(|(e, t, _)| ext.as_deref() == Some(*e) || declared == *t);
    claim.map(|(_, _, why)| NotRead(why))
}

fn skip_bom_and_space(b: &[u8]) -> &[u8] {
    let b = b.strip_prefix(b"\xef\xbb\xbf").unwrap_or(b);
    let start = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
    &b[start..]
}

fn starts_with_ignore_case(b: &[u8], prefix: &[u8]) -> bool {
    b.len() >= prefix.len() && b[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn looks_like_html(start: &[u8]) -> bool {
    starts_with_ignore_case(start, b"<!doctype html") || starts_with_ignore_case(start, b"<html")
}

/// No NUL and few control characters: text in some charset, not binary data.
fn looks_textual(head: &[u8]) -> bool {
    let control = head.iter().filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)).count();
    !head.contains(&0) && control * 100 <= head.len()
}

/// What an OLE compound file holds: an Outlook message is read; Office 97–2003 files and
/// password-encrypted Office files are recognised and not read.
fn ole_kind(bytes: &[u8]) -> Option<Recognised> {
    let Ok(cf) = cfb::CompoundFile::open(std::io::Cursor::new(bytes)) else {
        return Some(Recognised::NotRead("damaged: an unreadable OLE compound file"));
    };
    let names: Vec<String> = cf.read_root_storage().map(|e| e.name().to_string()).take(4096).collect();
    let has = |n: &str| names.iter().any(|x| x == n);
    Some(if has("EncryptionInfo") && has("EncryptedPackage") {
        Recognised::NotRead("encrypted with a password")
    } else if has("WordDocument") {
        Recognised::NotRead("a Word 97–2003 document (.doc), a format mailshelf does not read")
    } else if has("Workbook") || has("Book") {
        Recognised::NotRead("an Excel 97–2003 workbook (.xls), a format mailshelf does not read")
    } else if has("PowerPoint Document") {
        Recognised::NotRead("a PowerPoint 97–2003 presentation (.ppt), a format mailshelf does not read")
    } else if names.iter().any(|n| n.starts_with("__substg1.0_") || n == "__properties_version1.0") {
        Recognised::Readable(Format::Message)
    } else {
        return None;
    })
}
