//! OpenPGP (RFC 9580, and the RFC 4880 keys and messages people have) through rPGP: finding
//! armored blocks in text (inline PGP), opening what is only signed (a clear-signed text, a
//! signed-only message) so that its content can be shown at once, listing whom an encrypted
//! message is for, and, on demand, [`verify_detached`]ing signatures with the public keys the user gave
//! and [`decrypt()`]ing with the secret keys the user gave.
//!
//! Signatures are kept apart from what they sign ([`Opened::signatures`], serialized signature
//! packets): a signature inside a message (one-pass signed, or signed then encrypted) is checked
//! later exactly as a detached one, over the literal data it covers.

pub mod decrypt;
pub mod verify;

use std::io::Read;

use pgp::composed::{CleartextSignedMessage, DetachedSignature, Message};
use pgp::ser::Serialize;

pub use decrypt::{decrypt, Decrypted};
pub use verify::{verify_cleartext, verify_detached};

use super::CryptoError;
use crate::limits::MAX_DECRYPTED_BYTES;

pub(crate) const SIGNED_BEGIN: &str = "-----BEGIN PGP SIGNED MESSAGE-----";
pub(crate) const SIGNATURE_END: &str = "-----END PGP SIGNATURE-----";
pub(crate) const MESSAGE_BEGIN: &str = "-----BEGIN PGP MESSAGE-----";
pub(crate) const MESSAGE_END: &str = "-----END PGP MESSAGE-----";

/// An armored block inside a text: the text before it, the block, the text after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block<'a> {
    pub before: &'a str,
    pub armored: &'a str,
    pub after: &'a str,
}

/// The first clear-signed block in `text` (RFC 9580 §7), if it has one that starts a line.
pub fn find_cleartext(text: &str) -> Option<Block<'_>> {
    find_block(text, SIGNED_BEGIN, SIGNATURE_END)
}

/// The first armored OpenPGP message in `text` (inline PGP), if it has one that starts a line.
pub fn find_message(text: &str) -> Option<Block<'_>> {
    find_block(text, MESSAGE_BEGIN, MESSAGE_END)
}

fn find_block<'a>(text: &'a str, begin: &str, end: &str) -> Option<Block<'a>> {
    let mut from = 0;
    let start = loop {
        let at = from + text.get(from..)?.find(begin)?;
        if at == 0 || text.as_bytes().get(at - 1) == Some(&b'\n') {
            break at;
        }
        from = at + begin.len();
    };
    let stop = start + text[start..].find(end)? + end.len();
    Some(Block { before: &text[..start], armored: &text[start..stop], after: &text[stop..] })
}

/// A clear-signed text opened: what it says, for the reader (dash-escaping undone, RFC 9580
/// §7.2), and the signature block kept whole for [`verify_cleartext`].
pub fn cleartext_text(armored: &str) -> Result<String, CryptoError> {
    let (msg, _) = CleartextSignedMessage::from_string(armored)
        .map_err(|e| CryptoError::new(format!("the clear-signed text is unreadable: {e}")))?;
    let mut out = String::with_capacity(msg.text().len());
    for line in msg.text().split_inclusive('\n') {
        out.push_str(line.strip_prefix("- ").unwrap_or(line));
    }
    Ok(out)
}

/// What an OpenPGP message holds, told without any key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Encrypted, to these recipients (key ids, or `a passphrase`).
    Encrypted(Vec<String>),
    /// Only signed (or compressed, or plain literal data): openable without a key.
    Readable,
}

/// Reads the first packets of a message (armored or binary) to tell what it is.
pub fn kind(data: &[u8]) -> Result<Kind, CryptoError> {
    let (msg, _) = Message::from_reader(data).map_err(|e| unreadable(&e))?;
    Ok(match &msg {
        Message::Encrypted { esk, .. } => Kind::Encrypted(decrypt::describe_recipients(esk)),
        _ => Kind::Readable,
    })
}

fn unreadable(e: &pgp::errors::Error) -> CryptoError {
    CryptoError::new(format!("the OpenPGP message is unreadable: {e}"))
}

/// A message opened: its literal data and the signatures over it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Opened {
    pub content: Vec<u8>,
    /// Each signature over `content`, as a serialized signature packet.
    pub signatures: Vec<Vec<u8>>,
    /// The literal data says it is text (`t` or `u`), not binary.
    pub text: bool,
}

/// Opens a message that needs no key (signed, compressed or literal).
pub fn open(data: &[u8]) -> Result<Opened, CryptoError> {
    let (msg, _) = Message::from_reader(data).map_err(|e| unreadable(&e))?;
    if msg.is_encrypted() {
        return Err(CryptoError::new("the message is encrypted"));
    }
    read_out(msg)
}

/// Reads a (decrypted or plain) message to its end: its literal data, within
/// [`MAX_DECRYPTED_BYTES`], and its signatures.
pub(crate) fn read_out(mut msg: Message<'_>) -> Result<Opened, CryptoError> {
    // Compressed layers, and the one a signed message may hold inside its signatures.
    let mut opened_signed = false;
    for depth in 0.. {
        if depth > 8 {
            return Err(CryptoError::new("the message is nested too deeply"));
        }
        match &msg {
            Message::Compressed { .. } => {}
            Message::Signed { .. } if !opened_signed => opened_signed = true,
            _ => break,
        }
        msg = msg.decompress().map_err(|e| unreadable(&e))?;
    }
    let text = msg.literal_data_header().is_some_and(|h| !matches!(h.mode(), pgp::packet::DataMode::Binary));
    let mut content = Vec::new();
    let limit = u64::try_from(MAX_DECRYPTED_BYTES).unwrap_or(u64::MAX);
    (&mut msg)
        .take(limit + 1)
        .read_to_end(&mut content)
        .map_err(|e| CryptoError::new(format!("the OpenPGP message is damaged: {e}")))?;
    if content.len() > MAX_DECRYPTED_BYTES {
        return Err(CryptoError::new(format!(
            "its content is larger than the {} MiB mailshelf opens",
            MAX_DECRYPTED_BYTES >> 20
        )));
    }
    let text = text || msg.literal_data_header().is_some_and(|h| !matches!(h.mode(), pgp::packet::DataMode::Binary));
    let mut signatures = Vec::new();
    if let Message::Signed { reader, .. } = &msg {
        for i in 0..reader.num_signatures() {
            if let Some(sig) = reader.signature(i) {
                if let Ok(bytes) = DetachedSignature::new(sig.clone()).to_bytes() {
                    signatures.push(bytes);
                }
            }
        }
    }
    Ok(Opened { content, signatures, text })
}

/// Hexadecimal as OpenPGP tools show ids, upper case.
pub(crate) fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_found_only_at_line_starts() {
        let text = "Hello\n-----BEGIN PGP MESSAGE-----\n\nabc\n-----END PGP MESSAGE-----\nbye\n";
        let b = find_message(text).expect("found");
        assert_eq!(b.before, "Hello\n");
        assert!(b.armored.starts_with(MESSAGE_BEGIN) && b.armored.ends_with(MESSAGE_END));
        assert_eq!(b.after, "\nbye\n");
        assert!(find_message("quoted: -----BEGIN PGP MESSAGE----- x -----END PGP MESSAGE-----").is_none());
        assert!(find_message("-----BEGIN PGP MESSAGE-----\nnever ends").is_none());
        assert!(find_cleartext(text).is_none());
    }

    #[test]
    fn unreadable_messages_are_errors() {
        for input in [&b""[..], b"-----BEGIN PGP MESSAGE-----\n\n!!!\n-----END PGP MESSAGE-----\n", &[0xff; 64]] {
            assert!(kind(input).is_err());
            assert!(open(input).is_err());
        }
    }
}
