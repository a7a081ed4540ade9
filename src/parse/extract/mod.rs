//! The text of the documents a message carries, for search and for reading in a browser
//! (`/part/<mid>/<cid>?text=1`): PDF ([`pdf`]), Office Open XML ([`ooxml`]: Word, Excel,
//! PowerPoint), OpenDocument ([`odf`]: text, spreadsheet, presentation, zipped or flat), RTF
//! ([`rtf`], through the same reader as Outlook's RTF bodies), HTML, plain text and CSV in any
//! charset ([`text`], read as bodies are), messages attached as files (an Outlook `.msg`, an
//! `.eml`: their text and their own documents), and zip archives ([`zip`]: the documents inside,
//! one level, each under its name; no other archive format is opened).
//!
//! **Which parts.** Every leaf of a message that is not the body it shows, not a resource of a
//! page (`multipart/related`), not stored elsewhere and not an enclosed message (those are read as
//! messages of their own): [`documents`]. Each is recognised by its bytes ([`recognise`](mod@recognise)): `%PDF-`
//! near the start; a zip whose `[Content_Types].xml` and parts make it Word, Excel or PowerPoint,
//! or whose `mimetype` names an OpenDocument type; an OLE compound file (Outlook messages are read;
//! Word, Excel and PowerPoint 97–2003 files and password-encrypted Office files are recognised and
//! said not to be read); `{\rtf`; HTML and text by their type, their name or a look at their bytes.
//! A part whose name or type claims a document its bytes are not is said to be damaged.
//!
//! **Bounds** ([`crate::limits`]). A [`Budget`] is made for each message: the text it may still
//! add to the index ([`crate::limits::MAX_INDEXED_TEXT`], shared with the body), the bytes its
//! documents may still decompress (256 MiB) and a deadline (10 s). Each document then gets at most
//! 64 MiB of decompression and 2 s, less when the message has less left. Every reader checks them
//! as it goes (a [`Sink`] takes the text, a [`Meter`] counts what is decompressed) and stops where
//! one runs out; what was read is kept and the [`Extracted`] says the document was cut and why.
//! Nothing is decompressed without being counted, nor allocated from a size a file declares.
//!
//! HTML becomes text through the function the caller gives ([`HtmlText`]), so that attachments
//! and bodies are read alike without this stage depending on the HTML rewriter.

mod odf;
mod ooxml;
mod pdf;
mod recognise;
mod rtf;
mod sink;
mod text;
mod xml;
mod zip;

use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

pub use recognise::recognise;
use recognise::recognise_input;
use sink::{unreadable, Halt, Meter, Metered, Sink, Stop};

use crate::limits::{MAX_DOCUMENT_INFLATED, MAX_DOCUMENT_TIME, MAX_MESSAGE_DOCUMENTS_TIME, MAX_MESSAGE_INFLATED};
use crate::model::{Body, Message, Part, PartIdx};

/// Turns HTML into the text a reader sees (the same function that reads HTML bodies for search).
pub type HtmlText = fn(&str) -> String;

/// The kinds of document whose text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Pdf,
    Word,
    Excel,
    PowerPoint,
    OpenText,
    OpenSpreadsheet,
    OpenPresentation,
    /// Another OpenDocument type (a drawing, a formula): the text of its content.
    OpenDocument,
    Rtf,
    Html,
    Text,
    Zip,
    /// An email attached as a file: an Outlook `.msg`, an `.eml`.
    Message,
}

impl Format {
    /// The format in words, for notices and pages.
    pub fn describe(self) -> &'static str {
        match self {
            Format::Pdf => "PDF document",
            Format::Word => "Word document",
            Format::Excel => "Excel workbook",
            Format::PowerPoint => "PowerPoint presentation",
            Format::OpenText => "OpenDocument text",
            Format::OpenSpreadsheet => "OpenDocument spreadsheet",
            Format::OpenPresentation => "OpenDocument presentation",
            Format::OpenDocument => "OpenDocument file",
            Format::Rtf => "RTF document",
            Format::Html => "HTML document",
            Format::Text => "text file",
            Format::Zip => "zip archive",
            Format::Message => "attached message",
        }
    }
}

/// What a part is, as far as its text goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recognised {
    /// A document whose text is read.
    Readable(Format),
    /// A document recognised and not read, and why (a legacy Office file, one encrypted with a
    /// password, another archive format, a damaged file).
    NotRead(&'static str),
}

/// How far a document was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// All of it.
    Whole,
    /// Up to a bound, or up to where it is damaged: what was read is kept.
    Cut,
    /// Nothing: not read at all (see the notices for why).
    Unreadable,
}

/// A document's text and how it was read.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// What it was recognised as (`None` when it is not read).
    pub format: Option<Format>,
    pub text: String,
    pub outcome: Outcome,
    /// Why it was cut or not read, and what inside it could not be read, in words.
    pub notices: Vec<String>,
}

impl Extracted {
    fn not_read(why: &str) -> Extracted {
        Extracted { format: None, text: String::new(), outcome: Outcome::Unreadable, notices: vec![why.to_string()] }
    }
}

/// What one message's documents may still cost: text for the index, decompressed bytes, time.
pub struct Budget {
    html: HtmlText,
    text_left: usize,
    inflate_left: u64,
    deadline: Instant,
}

impl Budget {
    /// The budget of one message whose documents may add `text` bytes of text.
    pub fn new(html: HtmlText, text: usize) -> Budget {
        Budget {
            html,
            text_left: text,
            inflate_left: MAX_MESSAGE_INFLATED,
            deadline: Instant::now() + MAX_MESSAGE_DOCUMENTS_TIME,
        }
    }

    /// Whether nothing more can be read: no text left to add, or no time.
    pub fn spent(&self) -> bool {
        self.text_left == 0 || Instant::now() >= self.deadline
    }

    /// Reads `part`'s text if it is a document (`None` when it is no document at all), charging
    /// what it cost to this budget.
    pub fn read(&mut self, part: &Part) -> Option<Extracted> {
        let input = Input::of(part)?;
        let declared = declared_type(part);
        match recognise_input(&input, &declared, part.filename.as_deref())? {
            Recognised::NotRead(why) => Some(Extracted::not_read(why)),
            Recognised::Readable(format) => Some(self.read_as(format, &input, part.filename.as_deref())),
        }
    }

    fn read_as(&mut self, format: Format, input: &Input<'_>, name: Option<&str>) -> Extracted {
        let now = Instant::now();
        if now >= self.deadline || self.text_left == 0 {
            let why = if now >= self.deadline {
                "not read: the message's documents took all the time allowed"
            } else {
                "not read: the message's text already fills what the index keeps"
            };
            return Extracted {
                format: Some(format),
                text: String::new(),
                outcome: Outcome::Cut,
                notices: vec![why.into()],
            };
        }
        let deadline = (now + MAX_DOCUMENT_TIME).min(self.deadline);
        let meter = Rc::new(Meter::new(self.inflate_left.min(MAX_DOCUMENT_INFLATED)));
        let mut sink = Sink::new(self.html, self.text_left, deadline, self.deadline, Rc::clone(&meter));
        let result = read_format(format, input, name, &mut sink);
        self.text_left = self.text_left.saturating_sub(sink.text.len());
        self.inflate_left = self.inflate_left.saturating_sub(meter.used());
        sink.finish(format, result)
    }
}

/// Reads a file named `name` (of declared type `declared`, empty when none) as a document on a
/// budget of its own: what a part holding these bytes would give. `None` when it is no document.
pub fn read_file(bytes: &[u8], name: Option<&str>, declared: &str, html: HtmlText) -> Option<Extracted> {
    let input = Input::Bytes(bytes);
    match recognise_input(&input, declared, name)? {
        Recognised::NotRead(why) => Some(Extracted::not_read(why)),
        Recognised::Readable(format) => {
            Some(Budget::new(html, crate::limits::MAX_INDEXED_TEXT).read_as(format, &input, name))
        }
    }
}

/// Reads any bytes as a document of `format`, on a budget of its own (the fuzz targets' way in:
/// each reader must answer whatever it is given).
pub fn read_as(format: Format, bytes: &[u8], html: HtmlText) -> Extracted {
    Budget::new(html, crate::limits::MAX_INDEXED_TEXT).read_as(format, &Input::Bytes(bytes), None)
}

/// A part's bytes, or its text when the parser already decoded it.
enum Input<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
}

impl<'a> Input<'a> {
    fn of(part: &'a Part) -> Option<Input<'a>> {
        match &part.body {
            Body::Text(t) => Some(Input::Text(t)),
            Body::Binary(b) if !b.is_empty() => Some(Input::Bytes(b)),
            _ => None,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        match self {
            Input::Text(t) => t.as_bytes(),
            Input::Bytes(b) => b,
        }
    }
}

/// The type a part declared (lower case, parameters off), empty when it declared none.
fn declared_type(part: &Part) -> String {
    if part.declared_type {
        part.content_type.clone()
    } else {
        String::new()
    }
}

/// The parts of `msg` that may be documents (not of the messages it encloses): leaves that are
/// not the body shown, not resources of a page, not stored elsewhere, not enclosed messages.
pub fn documents(msg: &Message) -> impl Iterator<Item = PartIdx> + '_ {
    msg.parts.iter().enumerate().filter_map(move |(i, p)| {
        // A part with parts inside (an inline OpenPGP message, whose text is shown in its place)
        // is not a document.
        let leaf = matches!(p.body, Body::Text(_) | Body::Binary(_)) && p.children.is_empty();
        let shown = Some(i) == msg.html_body || Some(i) == msg.text_body || Some(i) == msg.image_body;
        (leaf && !shown && p.external.is_none() && p.related_scope.is_none()).then_some(i)
    })
}

/// Reads a document of a known format into `sink`.
fn read_format(format: Format, input: &Input<'_>, name: Option<&str>, sink: &mut Sink) -> Result<(), Halt> {
    let bytes = input.bytes();
    match format {
        Format::Pdf => pdf::read(bytes, sink),
        Format::Word => ooxml::word(bytes, sink),
        Format::Excel => ooxml::excel(bytes, sink),
        Format::PowerPoint => ooxml::powerpoint(bytes, sink),
        Format::OpenText | Format::OpenSpreadsheet | Format::OpenPresentation | Format::OpenDocument => {
            odf::read(bytes, sink)
        }
        Format::Rtf => rtf::read(bytes, sink),
        Format::Html => match input {
            Input::Text(t) => text::html(t, sink),
            Input::Bytes(b) => text::html(&super::charset::decode_html(b), sink),
        },
        Format::Text => match input {
            Input::Text(t) => text::plain(t, sink),
            Input::Bytes(b) => text::plain(&super::charset::decode_text(b), sink),
        },
        Format::Zip => zip::read(bytes, sink),
        Format::Message => message(bytes, name, sink),
    }
}

/// An email attached as a file (an Outlook `.msg`, an `.eml`): its header, its body, and its
/// own documents.
fn message(bytes: &[u8], name: Option<&str>, sink: &mut Sink) -> Result<(), Halt> {
    let msg = super::parse_message(Arc::from(bytes))
        .map_err(|_| unreadable(format!("damaged: {} does not read as a message", name.unwrap_or("it"))))?;
    let s = &msg.summary;
    for line in [&s.subject, &s.from, &s.to, &s.cc].into_iter().flatten() {
        sink.push(line)?;
        sink.push("\n")?;
    }
    let body = match (msg.text_body, msg.html_body) {
        (Some(t), _) => match &msg.parts[t].body {
            Body::Text(t) => t.clone(),
            _ => String::new(),
        },
        (None, Some(h)) => match &msg.parts[h].body {
            Body::Text(h) => (sink.html)(h),
            _ => String::new(),
        },
        _ => String::new(),
    };
    sink.push(&body)?;
    for idx in documents(&msg) {
        let part = &msg.parts[idx];
        let name = part.filename.clone().unwrap_or_else(|| format!("part {}", part.section));
        let _read = match &part.body {
            Body::Binary(b) => sink.nested(b, &name, &declared_type(part))?,
            Body::Text(t) => sink.nested(t.as_bytes(), &name, &declared_type(part))?,
            _ => false,
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests;
