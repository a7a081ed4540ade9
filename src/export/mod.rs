//! Taking mail out again: every message a search matches written as one mbox (mboxrd), one zip of
//! `.eml` files, or one CSV row each. HTTP-free: the writers take any `std::io::Write`, so the web
//! layer can pour them into a response body a chunk at a time, and a test or a tool into a file.
//!
//! Memory stays flat however many messages match: only the matching ids are held (four bytes
//! each), and each message is read from its source, written, and dropped before the next. Messages
//! are read past the archive's cache of parsed messages, so an export does not push out what
//! people are reading.

mod csv;
mod mbox;
pub(crate) mod pdf;
mod zip;

pub(crate) use mbox::{mbox_sender, MboxWriter};
pub(crate) use zip::{safe_file_stem, ZipExport};

/// The file a message's own bytes (`/raw/`, [`Message::given`]) make: its extension, and the type
/// `/raw/` serves it as.
pub(crate) struct GivenFile {
    /// `eml` for an Internet message, `msg` for an Outlook one, else the source file's own
    /// (`emlx`, `webarchive`, …).
    pub ext: String,
    /// An Outlook message's own type, other binary files as data, the rest as text, so a browser
    /// never takes a message for a page.
    pub served_as: &'static str,
}

impl GivenFile {
    pub(crate) fn of(entry: &Entry, msg: &Message) -> GivenFile {
        let (ext, served_as) = match &msg.origin.original {
            Some(o) if o.starts_with(crate::ingest::OLE_MAGIC) => ("msg".to_string(), "application/vnd.ms-outlook"),
            Some(o) if o.contains(&0) => (source_extension(&entry.location), "application/octet-stream"),
            Some(_) => (source_extension(&entry.location), "text/plain; charset=utf-8"),
            None => ("eml".to_string(), "text/plain; charset=utf-8"),
        };
        GivenFile { ext, served_as }
    }

    /// The type a file of these bytes has among others (a PDF's embedded file): an Internet
    /// message is `message/rfc822`.
    pub(crate) fn file_type(&self) -> &'static str {
        match (self.ext.as_str(), self.served_as) {
            ("msg", _) => "application/vnd.ms-outlook",
            // A message in UTF-16 is no `message/rfc822`, whatever its name.
            ("eml", served_as) if served_as.starts_with("text/") => "message/rfc822",
            _ => "application/octet-stream",
        }
    }
}

/// The extension of the file a message in another format came from (an item of an Outlook data
/// file: the `.msg` it stands for), `eml` when there is none fit for a file name.
fn source_extension(location: &Location) -> String {
    let ext = match location {
        Location::Top { source: crate::ingest::Source::Pst { .. }, .. } => Some("msg"),
        Location::Top { source, .. } => source.path().extension().and_then(|e| e.to_str()),
        Location::Nested { .. } => None,
    };
    ext.filter(|e| e.len() <= 16 && e.chars().all(|c| c.is_ascii_alphanumeric())).unwrap_or("eml").to_ascii_lowercase()
}

use std::collections::HashSet;
use std::io::Write;
use std::sync::Arc;

use crate::archive::Archive;
use crate::error::Error;
use crate::index::{Access, Entry, EntryId, Location};
use crate::model::Message;
use crate::view::browse::Scope;

/// What an export is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// One mboxrd file (`From ` separator lines, `>From ` escaping).
    Mbox,
    /// A zip of one file per message with its exact bytes.
    Zip,
    /// One CSV row per message (RFC 4180, UTF-8, header row).
    Csv,
}

impl Format {
    pub(crate) fn parse(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "mbox" => Some(Format::Mbox),
            "zip" => Some(Format::Zip),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }

    pub(crate) fn extension(self) -> &'static str {
        match self {
            Format::Mbox => "mbox",
            Format::Zip => "zip",
            Format::Csv => "csv",
        }
    }

    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::Mbox => "application/mbox",
            Format::Zip => "application/zip",
            Format::Csv => "text/csv; charset=utf-8; header=present",
        }
    }
}

/// The listed messages a query matches within what `access` may read, in the list's order (newest first). An empty query is
/// every listed message; with search turned off only an empty query can run.
///
/// All the ids are taken at once, as a snapshot: four bytes a message, and an export then never
/// pages deep into the search index (which costs the whole depth on every page) nor sees the list
/// shift under it while indexing goes on.
pub(crate) fn matching_ids(
    archive: &Archive,
    access: &Access,
    scope: &Scope,
    query: &str,
) -> Result<Vec<EntryId>, Error> {
    let matched: Option<HashSet<EntryId>> =
        if query.trim().is_empty() { None } else { Some(archive.search_ids_within(access, query)?) };
    let index = archive.index();
    // Only what the reader may read, whatever the scope and the search say.
    let table = access.table(&index);
    Ok(scope
        .ids(&index)
        .into_iter()
        .filter(|id| matched.as_ref().is_none_or(|m| m.contains(id)) && table.allows(index.folder_of(*id)))
        .collect())
}

/// A message read for export: its index entry, its bytes as given, and the message parsed from
/// them when the format needs it.
pub(crate) struct Exported {
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
    pub(crate) fn given(&self) -> &[u8] {
        &self.given
    }

    /// Whether the bytes read are still the message indexed ([`crate::index::reads_as`]); a
    /// plain message is parsed for its Message-ID only when its bytes differ.
    fn reads_as_indexed(&self, path: Option<&std::path::Path>) -> Result<bool, Error> {
        let hash = crate::index::content_hash(self.internet_message());
        if crate::index::reads_as(&self.entry, &hash, None) {
            return Ok(true);
        }
        let message_id = match &self.message {
            Some(m) => m.message_id.clone(),
            None => crate::parse::parse_file(self.given.clone(), path)?.message_id,
        };
        Ok(crate::index::reads_as(&self.entry, &hash, message_id.as_deref()))
    }

    /// The Internet message: the bytes given, or for a file in another format the one made of it.
    pub(crate) fn internet_message(&self) -> &[u8] {
        self.message.as_ref().map_or(&self.given, |m| &m.raw)
    }
}

/// Reads a listed message from its source, bypassing the archive's cache, and parses it when
/// `format` needs more than its bytes (CSV, or a file in another format). `None` for an id that is
/// gone or not listed (removed while the export ran).
pub(crate) fn read(archive: &Archive, id: EntryId, format: Format) -> Result<Option<Exported>, Error> {
    let (entry, folder) = {
        let index = archive.index();
        let Some(entry) = index.get(id) else { return Ok(None) };
        let folder = index.folder_path(entry.folder).to_string();
        (entry, folder)
    };
    let Location::Top { source, .. } = &entry.location else { return Ok(None) };
    let read = archive.read_source(source)?;
    if let Some(whole) = read.cut_from {
        tracing::warn!(id, bytes = whole, "exported as far as it was read: its file holds the rest");
    }
    let given: Arc<[u8]> = Arc::from(read.bytes);
    let path = source.own_file().map(std::path::Path::to_path_buf);
    let path = path.as_deref();
    let message = if format == Format::Csv || !crate::parse::is_plain_message(&given, path) {
        Some(crate::parse::parse_file(given.clone(), path)?)
    } else {
        None
    };
    let exported = Exported { entry, folder, given, message };
    if !exported.reads_as_indexed(path)? {
        // Its file was rewritten since it was indexed: what lies there now is another message
        // (a compacted mbox puts the next one there); it is exported once the folder is read again.
        return Err(Error::SourceGone);
    }
    Ok(Some(exported))
}

/// Writes every message of `ids` in `format` to `out`, reading each with `read`. A message that
/// can no longer be read (its source gone or changed) is left out and logged; a write error (the
/// client went away) ends the export.
pub(crate) fn write_all<W: Write>(
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
pub(crate) enum Writer<W: Write> {
    Mbox(MboxWriter<W>),
    Zip(Box<ZipExport<W>>),
    Csv(Box<::csv::Writer<W>>),
}

impl<W: Write> Writer<W> {
    pub(crate) fn new(format: Format, out: W) -> std::io::Result<Writer<W>> {
        Ok(match format {
            Format::Mbox => Writer::Mbox(MboxWriter::new(out)),
            Format::Zip => Writer::Zip(Box::new(ZipExport::new(out))),
            Format::Csv => Writer::Csv(Box::new(csv::writer(out)?)),
        })
    }

    pub(crate) fn add(&mut self, m: &Exported) -> std::io::Result<()> {
        match self {
            Writer::Mbox(w) => {
                let flags = match &m.entry.location {
                    Location::Top { flags, .. } => flags.as_deref(),
                    Location::Nested { .. } => None,
                };
                let raw = mbox::with_state(m.internet_message(), flags, &m.entry.labels);
                w.add(&mbox_sender(m.entry.summary.from.as_deref()), m.entry.summary.timestamp, &raw)
            }
            Writer::Zip(w) => w.add(m),
            Writer::Csv(w) => csv::add(w, m),
        }
    }

    pub(crate) fn finish(self) -> std::io::Result<W> {
        match self {
            Writer::Mbox(w) => Ok(w.into_inner()),
            Writer::Zip(w) => w.finish(),
            Writer::Csv(w) => w.into_inner().map_err(|e| e.into_error()),
        }
    }
}

/// The file name an export of `query` is offered under: `mailshelf-<query>.<ext>`, the query made
/// safe as a file name (`mailshelf-all` for an empty one).
pub(crate) fn download_name(query: &str, format: Format) -> String {
    let q = safe_file_stem(query.trim()).replace(' ', "_");
    let q: String = q.chars().take(60).collect();
    let q = if q.is_empty() { "all".to_string() } else { q };
    format!("mailshelf-{q}.{}", format.extension())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downloads_are_named_for_their_query() {
        assert_eq!(download_name("", Format::Csv), "mailshelf-all.csv");
        assert_eq!(download_name("from:alice bob", Format::Mbox), "mailshelf-from_alice_bob.mbox");
        assert_eq!(download_name("folder:Work/2019 ", Format::Zip), "mailshelf-folder_Work_2019.zip");
    }
}
