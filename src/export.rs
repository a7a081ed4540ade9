//! Taking mail out again: every message a search matches written as one mbox (mboxrd), one zip of
//! `.eml` files, or one CSV row each. HTTP-free: the writers take any `std::io::Write`, so the web
//! layer can pour them into a response body a chunk at a time, and a test or a tool into a file.
//!
//! Memory stays flat however many messages match: only the matching ids are held (four bytes
//! each), and each message is read from its source, written, and dropped before the next. Messages
//! are read past the archive's cache of parsed messages, so an export does not push out what
//! people are reading.

use std::collections::HashSet;
use std::io::Write;
use std::sync::Arc;

use crate::archive::Archive;
use crate::error::Error;
use crate::index::{Entry, EntryId, Location};
use crate::ingest::Source;
use crate::model::{Message, PartIdx};
use crate::view::browse::Scope;

/// What an export is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One mboxrd file (`From ` separator lines, `>From ` escaping).
    Mbox,
    /// A zip of one file per message with its exact bytes.
    Zip,
    /// One CSV row per message (RFC 4180, UTF-8, header row).
    Csv,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "mbox" => Some(Format::Mbox),
            "zip" => Some(Format::Zip),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Mbox => "mbox",
            Format::Zip => "zip",
            Format::Csv => "csv",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Mbox => "application/mbox",
            Format::Zip => "application/zip",
            Format::Csv => "text/csv; charset=utf-8; header=present",
        }
    }
}

/// The listed messages a query matches, in the list's order (newest first). An empty query is
/// every listed message; with search turned off only an empty query can run.
///
/// All the ids are taken at once, as a snapshot: four bytes a message, and an export then never
/// pages deep into the search index (which costs the whole depth on every page) nor sees the list
/// shift under it while indexing goes on.
pub fn matching_ids(archive: &Archive, scope: &Scope, query: &str) -> Result<Vec<EntryId>, Error> {
    let matched: Option<HashSet<EntryId>> =
        if query.trim().is_empty() { None } else { Some(archive.search_ids(query)?) };
    let index = archive.index();
    Ok(scope.ids(&index).into_iter().filter(|id| matched.as_ref().is_none_or(|m| m.contains(id))).collect())
}

/// A message read for export: its index entry, its bytes as given, and the message parsed from
/// them when the format needs it.
pub struct Exported {
    pub entry: Arc<Entry>,
    /// The folder it is filed in.
    pub folder: String,
    /// The source's bytes, as `/raw/` serves them.
    given: Arc<[u8]>,
    /// `None` when the bytes are a plain Internet message and the format needs nothing parsed.
    message: Option<Message>,
}

impl Exported {
    /// The bytes `/raw/` serves.
    pub fn given(&self) -> &[u8] {
        &self.given
    }

    /// The Internet message: the bytes given, or for a file in another format the one made of it.
    pub fn internet_message(&self) -> &[u8] {
        self.message.as_ref().map_or(&self.given, |m| &m.raw)
    }
}

/// Reads a listed message from its source, bypassing the archive's cache, and parses it when
/// `format` needs more than its bytes (CSV, or a file in another format). `None` for an id that is
/// gone or not listed (removed while the export ran).
pub fn read(archive: &Archive, id: EntryId, format: Format) -> Result<Option<Exported>, Error> {
    let (entry, folder) = {
        let index = archive.index();
        let Some(entry) = index.get(id) else { return Ok(None) };
        let folder = index.folder_path(entry.folder).to_string();
        (entry, folder)
    };
    let Location::Top { source, .. } = &entry.location else { return Ok(None) };
    let given: Arc<[u8]> = Arc::from(archive.read_source(source)?);
    let path = match source {
        Source::File { path } => Some(path.as_path()),
        Source::Mbox { .. } | Source::Pst { .. } | Source::Stored { .. } => None,
    };
    let message = if format == Format::Csv || !crate::parse::is_plain_message(&given, path) {
        Some(crate::parse::parse_file(given.clone(), path)?)
    } else {
        None
    };
    Ok(Some(Exported { entry, folder, given, message }))
}

/// Writes every message of `ids` in `format` to `out`, reading each with `read`. A message that
/// can no longer be read (its source gone or changed) is left out and logged; a write error (the
/// client went away) ends the export.
pub fn write_all<W: Write>(
    format: Format,
    ids: &[EntryId],
    mut read: impl FnMut(EntryId) -> Result<Option<Exported>, Error>,
    out: W,
) -> std::io::Result<W> {
    let mut writer = Writer::new(format, out)?;
    for &id in ids {
        match read(id) {
            Ok(Some(m)) => writer.add(&m)?,
            Ok(None) => {}
            Err(e) => tracing::warn!(id, error = %e, "left out of the export: unreadable"),
        }
    }
    writer.finish()
}

/// One export being written.
pub enum Writer<W: Write> {
    Mbox(MboxWriter<W>),
    Zip(Box<ZipExport<W>>),
    Csv(Box<csv::Writer<W>>),
}

impl<W: Write> Writer<W> {
    pub fn new(format: Format, out: W) -> std::io::Result<Writer<W>> {
        Ok(match format {
            Format::Mbox => Writer::Mbox(MboxWriter::new(out)),
            Format::Zip => Writer::Zip(Box::new(ZipExport::new(out))),
            Format::Csv => {
                let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::CRLF).from_writer(out);
                w.write_record(CSV_HEADER)?;
                Writer::Csv(Box::new(w))
            }
        })
    }

    pub fn add(&mut self, m: &Exported) -> std::io::Result<()> {
        match self {
            Writer::Mbox(w) => {
                w.add(&mbox_sender(m.entry.summary.from.as_deref()), m.entry.summary.timestamp, m.internet_message())
            }
            Writer::Zip(w) => w.add(m),
            Writer::Csv(w) => match &m.message {
                Some(msg) => Ok(w.write_record(csv_row(&m.entry, &m.folder, msg))?),
                None => Err(std::io::Error::other("a CSV row needs the parsed message")),
            },
        }
    }

    pub fn finish(self) -> std::io::Result<W> {
        match self {
            Writer::Mbox(w) => Ok(w.into_inner()),
            Writer::Zip(w) => w.finish(),
            Writer::Csv(w) => w.into_inner().map_err(|e| e.into_error()),
        }
    }
}

// ---- mbox -----------------------------------------------------------------------------------

/// mboxrd (the variant that can be undone exactly): each message after a `From ` line, every line
/// of it matching `^>*From ` given one more `>`. One newline goes before each `From ` line but the
/// first (an empty line after a message that ends with one), rather than after each message: the
/// file then ends with the last message's own bytes, and a reader that drops the newline before a
/// separator (as mailshelf's does) gets every message back byte for byte, including one that does
/// not end with a newline (its `From ` line then follows a line of its own text and is told apart
/// by the header field after it).
pub struct MboxWriter<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> MboxWriter<W> {
    pub fn new(out: W) -> Self {
        MboxWriter { out, first: true }
    }

    /// Adds one message: the Internet message's bytes (for a file in another format, the message
    /// made of it), from `sender` at `timestamp` (seconds since the epoch).
    pub fn add(&mut self, sender: &str, timestamp: Option<i64>, raw: &[u8]) -> std::io::Result<()> {
        if !self.first {
            self.out.write_all(b"\n")?;
        }
        self.first = false;
        writeln!(self.out, "From {sender} {}", asctime(timestamp.unwrap_or(0)))?;
        for line in raw.split_inclusive(|&b| b == b'\n') {
            let gts = line.iter().take_while(|&&b| b == b'>').count();
            if line[gts..].starts_with(b"From ") {
                self.out.write_all(b">")?;
            }
            self.out.write_all(line)?;
        }
        Ok(())
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// The address for a `From ` line: the sender's address, else `MAILER-DAEMON`; never with white
/// space, which would end the field.
pub fn mbox_sender(from: Option<&str>) -> String {
    let from = from.unwrap_or("");
    let first = from.split(", ").next().unwrap_or("");
    let addr = match (first.rfind('<'), first.rfind('>')) {
        (Some(a), Some(b)) if a < b => &first[a + 1..b],
        _ => first,
    };
    let addr = addr.trim();
    if addr.contains('@') && !addr.chars().any(|c| c.is_whitespace() || c.is_control()) {
        addr.to_string()
    } else {
        "MAILER-DAEMON".to_string()
    }
}

/// C's `asctime` layout, in UTC: `Mon Jan  1 00:00:00 2024`.
pub fn asctime(timestamp: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let days = timestamp.div_euclid(86_400);
    let secs = timestamp.rem_euclid(86_400);
    let (y, m, d) = crate::dates::civil_from_days(days);
    let weekday = DAYS[days.rem_euclid(7) as usize];
    let month = MONTHS[(m - 1).clamp(0, 11) as usize];
    format!("{weekday} {month} {d:>2} {:02}:{:02}:{:02} {y}", secs / 3600, secs % 3600 / 60, secs % 60)
}

// ---- zip ------------------------------------------------------------------------------------

/// A zip of one file per message, stored (not compressed: the bytes are the message's exactly and
/// cost no CPU to write), streamed with data descriptors so nothing is seeked or held. The zip's
/// central directory, written last, needs each file's name and offsets: about a hundred bytes a
/// message are kept until then (the names, to make them unique, are part of that).
pub struct ZipExport<W: Write> {
    zip: zip::ZipWriter<zip::write::StreamWriter<W>>,
    names: HashSet<String>,
}

impl<W: Write> ZipExport<W> {
    pub fn new(out: W) -> Self {
        ZipExport { zip: zip::ZipWriter::new_stream(out), names: HashSet::new() }
    }

    fn add(&mut self, m: &Exported) -> std::io::Result<()> {
        let name = self.unique(&zip_name(&m.entry, m.message.as_ref()));
        let mut options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(m.given().len() as u64 >= u64::from(u32::MAX));
        if let Some(t) = m.entry.summary.timestamp.and_then(|ts| zip_time(ts, m.entry.summary.zone.unwrap_or(0))) {
            options = options.last_modified_time(t);
        }
        self.zip.start_file(name, options).map_err(std::io::Error::other)?;
        self.zip.write_all(m.given())
    }

    /// `name`, or `name (2)`, `name (3)`… when a file of that name (compared without case, as
    /// Windows and macOS do) is already in the zip.
    fn unique(&mut self, name: &str) -> String {
        let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
        let mut candidate = name.to_string();
        let mut n = 1;
        while !self.names.insert(candidate.to_lowercase()) {
            n += 1;
            candidate = format!("{stem} ({n}).{ext}");
        }
        candidate
    }

    fn finish(self) -> std::io::Result<W> {
        let w = self.zip.finish().map_err(std::io::Error::other)?;
        Ok(w.into_inner())
    }
}

/// `<date>-<subject>.<ext>`: the date the message was written (its own zone), the subject made
/// safe as a file name on every common system, and the extension of what `/raw/` gives.
pub fn zip_name(entry: &Entry, msg: Option<&Message>) -> String {
    let date = entry.summary.date().and_then(|d| d.get(..10).map(str::to_string)).unwrap_or_else(|| "undated".into());
    let subject = safe_file_stem(entry.summary.subject.as_deref().unwrap_or(""));
    let subject = if subject.is_empty() { "no subject".to_string() } else { subject };
    format!("{date}-{subject}.{}", raw_extension(entry, msg))
}

/// The extension of the bytes `/raw/` serves: `.msg` for an Outlook file, the source file's own
/// extension for another format, else `.eml`.
fn raw_extension(entry: &Entry, msg: Option<&Message>) -> String {
    match msg.and_then(|m| m.origin.original.as_ref()) {
        Some(o) if o.starts_with(crate::ingest::OLE_MAGIC) => "msg".into(),
        Some(_) => match &entry.location {
            Location::Top { source, .. } => source
                .path()
                .extension()
                .and_then(|e| e.to_str())
                .filter(|e| e.len() <= 16 && e.chars().all(|c| c.is_ascii_alphanumeric()))
                .map_or_else(|| "eml".into(), str::to_ascii_lowercase),
            Location::Nested { .. } => "eml".into(),
        },
        None => "eml".into(),
    }
}

/// A subject as a file name that Windows, macOS and Linux all accept: no path separators, no
/// characters Windows reserves (`<>:"|?*`), no control characters, no trailing dot or space, runs
/// of white space as one space; at most 80 characters. (The date before it means it is never a
/// name Windows reserves, such as `CON`.)
pub fn safe_file_stem(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let c = if c.is_control() || matches!(c, '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*') {
            '_'
        } else if c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        out.push(c);
        if out.chars().count() >= 80 {
            break;
        }
    }
    out.trim_end_matches(['.', ' ']).to_string()
}

/// A zip time stamp (local time, two-second steps, 1980–2107) for a message date.
fn zip_time(timestamp: i64, zone_minutes: i16) -> Option<zip::DateTime> {
    let local = timestamp + i64::from(zone_minutes) * 60;
    let (y, m, d) = crate::dates::civil_from_days(local.div_euclid(86_400));
    let s = local.rem_euclid(86_400);
    zip::DateTime::from_date_and_time(
        u16::try_from(y).ok()?,
        u8::try_from(m).ok()?,
        u8::try_from(d).ok()?,
        u8::try_from(s / 3600).ok()?,
        u8::try_from(s % 3600 / 60).ok()?,
        u8::try_from(s % 60).ok()?,
    )
    .ok()
}

// ---- CSV ------------------------------------------------------------------------------------

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
    let names: Vec<String> = attachments(msg).map(|i| crate::view::part_filename(&msg.parts[i])).collect();
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

/// The parts a reader calls attachments: the same rule as [`Message::has_attachments`], which
/// decides the list's attachment badge and `has:attachment`.
pub fn attachments(msg: &Message) -> impl Iterator<Item = PartIdx> + '_ {
    msg.parts.iter().enumerate().filter_map(move |(i, p)| {
        let counts = !p.is_multipart()
            && p.is_attachment_like()
            && p.related_scope.is_none()
            && Some(i) != msg.html_body
            && Some(i) != msg.text_body;
        counts.then_some(i)
    })
}

/// The file name an export of `query` is offered under: `mailshelf-<query>.<ext>`, the query made
/// safe as a file name (`mailshelf-all` for an empty one).
pub fn download_name(query: &str, format: Format) -> String {
    let q = safe_file_stem(query.trim()).replace(' ', "_");
    let q: String = q.chars().take(60).collect();
    let q = if q.is_empty() { "all".to_string() } else { q };
    format!("mailshelf-{q}.{}", format.extension())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asctime_layout() {
        assert_eq!(asctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(asctime(1_700_000_000), "Tue Nov 14 22:13:20 2023");
    }

    #[test]
    fn mboxrd_escapes_every_from_line() {
        let mut w = MboxWriter::new(Vec::new());
        w.add("a@b", Some(0), b"Subject: x\n\nFrom here\n>From there\nnot From\n").unwrap();
        w.add("MAILER-DAEMON", None, b"Subject: y\n\nno newline").unwrap();
        w.add("c@d", Some(0), b"Subject: z\n\nz\n").unwrap();
        let out = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(
            out,
            "From a@b Thu Jan  1 00:00:00 1970\nSubject: x\n\n>From here\n>>From there\nnot From\n\n\
             From MAILER-DAEMON Thu Jan  1 00:00:00 1970\nSubject: y\n\nno newline\n\
             From c@d Thu Jan  1 00:00:00 1970\nSubject: z\n\nz\n"
        );
    }

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(safe_file_stem("Re: a/b\\c  <d>?. "), "Re_ a_b_c _d__");
        assert_eq!(safe_file_stem("..."), "");
        assert_eq!(safe_file_stem(&"x".repeat(200)).len(), 80);
        assert_eq!(download_name("", Format::Csv), "mailshelf-all.csv");
        assert_eq!(download_name("from:alice bob", Format::Mbox), "mailshelf-from_alice_bob.mbox");
    }

    #[test]
    fn formula_cells_are_defused() {
        assert_eq!(cell(Some("=1+1")), "'=1+1");
        assert_eq!(cell(Some("hello")), "hello");
    }
}
