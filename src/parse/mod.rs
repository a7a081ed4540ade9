//! Bytes → [`crate::model::Message`], one module per input format, all producing the same model:
//! [`mime`] reads Internet messages (RFC 5322 and MIME, the only module that knows mail-parser);
//! [`mhtml`] applies the MHTML rules (RFC 2557) that make a saved web page out of a
//! `multipart/related` tree: absolute Content-Locations, bases, and which part is the page;
//! [`external`] reads `message/external-body` parts (RFC 2046 §5.2.3, RFC 2017): where their data
//! lives, never the data itself; [`outlook`] turns Outlook `.msg` files into the Internet message
//! they stand for (with [`rtf`] for their compressed RTF bodies) and hands that to [`mime`];
//! [`tnef`] opens `winmail.dat` parts found by [`mime`] into child parts.

mod charset;
mod codepage;
mod external;
mod mhtml;
mod mime;
mod outlook;
mod rtf;
mod tnef;

use std::sync::Arc;

use crate::error::Error;
use crate::model::Message;

// Deeper nesting (multiparts or enclosed messages) is shown as opaque data. mail-parser caps its
// own recursion; this keeps our walk bounded too.
use crate::limits::MAX_DEPTH;

/// Parses one message. Fails only when there is nothing that reads as a message at all; a message
/// that is partly broken comes back with its good parts and `damaged` set where decoding guessed.
pub fn parse_message(raw: Arc<[u8]>) -> Result<Message, Error> {
    // Hostile input must never take the server down: should the parser panic on some message, that
    // message is reported unparseable and everything else goes on.
    std::panic::catch_unwind(|| parse_by_format(raw.clone())).unwrap_or_else(|_| {
        tracing::warn!(bytes = raw.len(), "the parser gave up on a message");
        Err(Error::Unparseable)
    })
}

/// The format the bytes are in decides the reader.
fn parse_by_format(raw: Arc<[u8]>) -> Result<Message, Error> {
    if raw.starts_with(crate::ingest::OLE_MAGIC) {
        return outlook::parse(raw);
    }
    mime::parse(raw)
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
    fn unparseable_input_is_an_error() {
        assert!(matches!(parse_message(Arc::from(&b""[..])), Err(Error::Unparseable)));
    }
}
