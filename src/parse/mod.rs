//! Bytes → [`crate::model::Message`], one module per input format, all producing the same model:
//! [`mime`] reads Internet messages (RFC 5322 and MIME, the only module that knows mail-parser),
//! and reads again, with [`boundary`], the structure of those whose structure mail-parser misreads;
//! [`mhtml`] applies the MHTML rules (RFC 2557) that make a saved web page out of a
//! `multipart/related` tree: absolute Content-Locations, bases, and which part is the page;
//! [`external`] reads `message/external-body` parts (RFC 2046 §5.2.3, RFC 2017): where their data
//! lives, never the data itself. [`transfer`] undoes transfer encodings for the bodies decoded here
//! rather than by mail-parser (documents without a charset, uuencoded bodies, bodies mail-parser
//! decodes otherwise than RFC 2045 advises); [`words`] decodes the encoded-words of header fields
//! mail-parser leaves raw, for [`labels`] and the Subject; [`params`] reads again the RFC 2231
//! parameter values mail-parser decodes a segment at a time, and those in raw 8-bit bytes; [`addresses`] writes address fields
//! back as lines that split again.
//! Files in other formats become the Internet message they stand for and are read by [`mime`]:
//! [`emlx`] (Apple Mail), [`webarchive`] (Safari), and UTF-16 files; [`proplist`] reads the
//! property lists of the first two within bounds.
//! [`outlook`] turns Outlook `.msg` files into the Internet message they stand for (with [`rtf`]
//! for their compressed RTF bodies and [`crate::mapi::codepage`](fn@crate::mapi::codepage) for 8-bit strings); [`tnef`] opens
//! `winmail.dat` parts found by [`mime`] into child parts. [`build`] is the one MIME writer the
//! Outlook and TNEF readers write their messages with; [`charset`] turns declared charsets into
//! decoders; [`labels`] reads the folder and label headers of Gmail, Thunderbird and Apple Mail.
//! [`secure`] finds the signed and encrypted layers (S/MIME, OpenPGP) of what `mime` read, unwraps
//! what is only signed into parts, and opens encrypted layers on request with the user's keys
//! (through [`crate::crypto`]). [`extract`] reads the text of the documents a message carries
//! (PDF, Office, OpenDocument, RTF, text, zip archives), for search.
//!
//! One import circle here is deliberate, because formats nest: [`mime`] finds a `winmail.dat` and
//! calls [`tnef`], a TNEF attachment can hold an Outlook message that [`outlook`] turns into MIME,
//! and that MIME is read by [`mime`] again. Each turn is bounded by the nesting depth in
//! [`crate::limits::MAX_DEPTH`].

mod addresses;
pub mod extract;
pub(crate) mod labels;
pub mod secure;

mod boundary;
mod build;
pub(crate) use build::label_list;
mod charset;
mod emlx;
mod external;
mod mhtml;
mod mime;
mod outlook;
mod params;
mod proplist;
mod rtf;
mod tnef;
mod transfer;
mod webarchive;
mod words;

use std::path::Path;
use std::sync::Arc;

use crate::error::Error;
use crate::model::Message;

pub(crate) use mhtml::IMAGE_DOCUMENT_TYPES;

// Deeper nesting (multiparts or enclosed messages) is shown as opaque data. mail-parser caps its
// own recursion; this keeps our walk bounded too.
use crate::limits::MAX_DEPTH;

/// Parses one message. Fails only when there is nothing that reads as a message at all; a message
/// that is partly broken comes back with its good parts and `damaged` set where decoding guessed.
pub fn parse_message(raw: Arc<[u8]>) -> Result<Message, Error> {
    parse_file(raw, None)
}

/// [`parse_message`] for a file at `path`, which some formats need to find what belongs to the
/// message beside it (the attachments of an Apple Mail `.partial.emlx`). The format is told by the
/// bytes (and an `.emlx` name), never by the name alone.
pub fn parse_file(raw: Arc<[u8]>, path: Option<&Path>) -> Result<Message, Error> {
    // Hostile input must never take the server down: should the parser panic on some message, that
    // message is reported unparseable and everything else goes on.
    std::panic::catch_unwind(|| parse_format(raw.clone(), path)).unwrap_or_else(|_| {
        tracing::warn!(bytes = raw.len(), "the parser gave up on a message");
        Err(Error::Unparseable)
    })
}

/// [`parse_file`] for a message's bytes as read from its source: one cut at the limit keeps its
/// whole size ([`crate::model::Origin::cut_from`]).
pub fn parse_given(given: crate::ingest::Given, path: Option<&Path>) -> Result<Message, Error> {
    let mut msg = parse_file(Arc::from(given.bytes), path)?;
    msg.origin.cut_from = given.cut_from;
    msg.origin.notices.extend(given.notices);
    Ok(msg)
}

fn parse_format(raw: Arc<[u8]>, path: Option<&Path>) -> Result<Message, Error> {
    if let Some(text) = crate::ingest::utf16_to_bytes(&raw) {
        // The message is the text the file holds; the file stays what `/raw/` serves.
        let mut msg = parse_format(Arc::from(text), path)?;
        msg.origin.original = Some(raw);
        return Ok(msg);
    }
    let named_emlx = path.and_then(|p| p.extension()).is_some_and(|e| e.eq_ignore_ascii_case("emlx"));
    if raw.starts_with(crate::ingest::OLE_MAGIC) {
        outlook::parse(raw)
    } else if webarchive::is_webarchive(&raw) {
        webarchive::parse(raw)
    } else if named_emlx || emlx::is_emlx(&raw) {
        emlx::parse(raw, path)
    } else {
        mime::parse(raw)
    }
}

/// A text part's body as it was sent: its transfer encoding undone, in the charset it was written
/// in (a part's text is held decoded to UTF-8, and HTML is rewritten when shown). `None` for a
/// part whose bytes are not in the message as written (a decrypted layer, a winmail.dat's body),
/// or that is not text.
pub fn sent_bytes(msg: &Message, idx: crate::model::PartIdx) -> Option<std::borrow::Cow<'_, [u8]>> {
    let part = msg.parts.get(idx)?;
    if !part.is_text() || part.raw_range.is_empty() {
        return None;
    }
    let raw = msg.raw.get(part.raw_range.clone())?;
    Some(transfer::decoded(raw, part.transfer_encoding))
}

/// Every header field of a message in order, RFC 2047 decoded and unfolded, for showing them:
/// read again from the message's bytes, since indexing needs only the summary.
pub fn header_fields(msg: &Message) -> Vec<(String, String)> {
    mime::header_fields(msg)
}

/// Whether [`parse_file`] reads `raw` as the Internet message it is, with no other format to make
/// one of (the tests of `parse_format`, in its order): its bytes are then both the message and
/// what `/raw/` serves, and an export can copy them without parsing.
pub fn is_plain_message(raw: &[u8], path: Option<&Path>) -> bool {
    let named_emlx = path.and_then(|p| p.extension()).is_some_and(|e| e.eq_ignore_ascii_case("emlx"));
    let other_format = crate::ingest::utf16_to_bytes(raw).is_some()
        || raw.starts_with(crate::ingest::OLE_MAGIC)
        || webarchive::is_webarchive(raw)
        || named_emlx
        || emlx::is_emlx(raw);
    !other_format
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Message {
        parse_message(Arc::from(s.replace('\n', "\r\n").into_bytes())).expect("parses")
    }

    #[test]
    fn related_root_follows_start_parameter() {
        let m = parse(
            "Message-ID: <m@x>\nContent-Type: multipart/related; boundary=b; start=\"<two@x>\"\n\n--b\nContent-Type: text/html\nContent-ID: <one@x>\n\n<p>one</p>\n--b\nContent-Type: text/html\nContent-ID: <two@x>\n\n<p>two</p>\n--b--\n",
        );
        let html = m.html_body.expect("html body");
        assert_eq!(m.parts[html].content_id.as_deref(), Some("two@x"));
        assert_eq!(m.parts[html].section, "2");
    }

    #[test]
    fn relative_location_resolves_against_outer() {
        let m = parse(
            "Content-Type: multipart/related; boundary=b\nContent-Location: http://e.example/dir/\n\n--b\nContent-Type: text/html\nContent-Location: page.html\n\n<img src=a.png>\n--b\nContent-Type: image/png\nContent-Location: a.png\n\nx\n--b--\n",
        );
        assert_eq!(m.parts[1].location.as_deref(), Some("http://e.example/dir/page.html"));
        assert_eq!(m.parts[2].location.as_deref(), Some("http://e.example/dir/a.png"));
        assert_eq!(m.parts[2].related_scope, Some(0));
        assert!(m.id.ends_with("@mailshelf.invalid"));
    }

    #[test]
    fn utf16_files_read_as_the_message_they_hold() {
        let text = "Subject: caf\u{e9}\r\nFrom: a@example.com\r\n\r\nhello\r\n";
        let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect();
        let be: Vec<u8> = [0xFE, 0xFF].into_iter().chain(text.encode_utf16().flat_map(u16::to_be_bytes)).collect();
        for (name, raw) in [("little endian", le), ("big endian", be)] {
            let m = parse_message(Arc::from(raw.clone())).expect(name);
            assert_eq!(m.summary.subject.as_deref(), Some("café"), "{name}");
            assert_eq!(&m.raw[..], text.as_bytes(), "{name}");
            assert_eq!(m.given(), &raw[..], "{name}");
        }
    }

    #[test]
    fn unparseable_input_is_an_error() {
        assert!(matches!(parse_message(Arc::from(&b""[..])), Err(Error::Unparseable)));
    }
}
