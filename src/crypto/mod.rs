//! Signed and encrypted mail: S/MIME (RFC 8551: CMS signed-data, enveloped-data and
//! authEnveloped-data, RFC 5652, RFC 5083) and OpenPGP (RFC 9580 and RFC 4880, in PGP/MIME,
//! RFC 3156, and inline), on bytes, free of HTTP and of our message model.
//!
//! Where it sits: the parse stage calls it to *unwrap* what is only signed (the protected
//! entity of an opaque S/MIME signature, the text of an OpenPGP clear-signed or signed-only
//! message) and to list the recipients of what is encrypted; the view stage calls it on demand to
//! *verify* signatures against the trust anchors the user gave and to *decrypt* with the keys the
//! user gave, which run only when a message is looked at, never while indexing (see
//! `parse::secure` and `view::security`). The archive calls it only with `--index-decrypted`.
//!
//! Its rooms: [`status`] the vocabulary both protocols report in; [`keys`] reads `--key` and
//! `--trust` material (PEM, PKCS #12 through [`pkcs12`], OpenPGP keys) into a [`Keyring`] held in
//! memory only; [`smime`] and [`openpgp`] the two protocols; [`asn1`] turns the BER S/MIME agents
//! send into the DER RustCrypto's types read.
//!
//! The cryptography is the crates': RustCrypto (`cms`, `x509-cert`, `der`, `rsa`, `p256`,
//! `p384`, `aes`, `cbc`, `aes-gcm`, `aes-kw`, `des`, `sha1`, `sha2`, `pkcs5`, `pkcs8`, `pkcs12`)
//! and rPGP (`pgp`). What is written here is the glue: which algorithm an identifier names, which
//! bytes a signature covers, the certificate path walk, and the statuses. Every input is hostile:
//! sizes, nesting and key sizes are bounded by [`crate::limits`], and every failure is a reason in
//! words, never a panic.

pub mod asn1;
pub mod keys;
pub mod openpgp;
pub mod pkcs12;
pub mod smime;
pub mod status;

pub use keys::{KeyError, Keyring};
pub use status::{CertificateInfo, EncryptionReport, EncryptionStatus, Protocol, SignatureReport, SignatureStatus};

/// Why something could not be read, verified or decrypted, in words a reader can be shown (never
/// key material).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CryptoError(pub String);

impl CryptoError {
    pub fn new(reason: impl Into<String>) -> CryptoError {
        CryptoError(reason.into())
    }
}

impl std::fmt::Display for CryptoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CryptoError {}

impl From<asn1::Asn1Error> for CryptoError {
    fn from(e: asn1::Asn1Error) -> Self {
        CryptoError(format!("its structure is unreadable: {e}"))
    }
}

/// What a signature is checked against besides the keys: who the message says sent it, and when.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub keys: &'a Keyring,
    /// The sender's address (from the message's From), lower case.
    pub sender: Option<&'a str>,
    /// The message's Date, for signatures that do not say when they were made.
    pub date: Option<i64>,
    /// Now, for signatures and messages that say neither.
    pub now: i64,
}

/// One PEM block: its label (`CERTIFICATE`, `PRIVATE KEY`, …) and its decoded contents.
pub(crate) struct PemBlock {
    pub label: String,
    pub der: Vec<u8>,
    /// Whether the block carries RFC 1421 headers (`Proc-Type: 4,ENCRYPTED`): OpenSSL's old
    /// encrypted form.
    pub has_headers: bool,
}

/// Every PEM block in `text`, in order; text around and between them is skipped (OpenSSL's `Bag
/// Attributes`, comments). A block whose base64 does not decode is left out.
pub(crate) fn pem_blocks(text: &[u8]) -> Vec<PemBlock> {
    use base64::Engine as _;
    let text = String::from_utf8_lossy(text);
    let mut out = Vec::new();
    let mut rest: &str = &text;
    while let Some(begin) = rest.find("-----BEGIN ") {
        let after = &rest[begin + 11..];
        let Some(label_end) = after.find("-----") else { break };
        let label = after[..label_end].trim().to_string();
        let body_start = &after[label_end + 5..];
        let end_marker = format!("-----END {label}-----");
        let Some(end) = body_start.find(&end_marker) else { break };
        let body = &body_start[..end];
        rest = &body_start[end + end_marker.len()..];
        let has_headers = body.lines().any(|l| l.contains(':'));
        let b64: String =
            body.lines().filter(|l| !l.contains(':')).flat_map(|l| l.chars()).filter(|c| !c.is_whitespace()).collect();
        if let Ok(der) =
            base64::engine::general_purpose::STANDARD.decode(b64.trim_end_matches('=').to_string() + pad(&b64))
        {
            out.push(PemBlock { label, der, has_headers });
        }
    }
    out
}

/// The padding a base64 text without its own needs (`=` signs are stripped and put back, so that
/// text with and without them reads alike).
fn pad(b64: &str) -> &'static str {
    match b64.trim_end_matches('=').len() % 4 {
        2 => "==",
        3 => "=",
        _ => "",
    }
}

/// The bare address of a From header value (`Alice <alice@example.org>` → `alice@example.org`),
/// lower case.
pub fn address_of(from: &str) -> Option<String> {
    let inner = match (from.rfind('<'), from.rfind('>')) {
        (Some(a), Some(b)) if a < b => &from[a + 1..b],
        _ => from.split(',').next().unwrap_or(from),
    };
    let a = inner.trim().trim_matches('"').to_ascii_lowercase();
    (a.contains('@') && !a.contains(char::is_whitespace)).then_some(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_blocks_are_found_between_other_text() {
        let text = b"Bag Attributes\n    localKeyID: 01\nsubject=CN = x\n-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\nBag Attributes\n-----BEGIN PRIVATE KEY-----\nAwQ=\n-----END PRIVATE KEY-----\n";
        let blocks = pem_blocks(text);
        let got: Vec<(&str, &[u8])> = blocks.iter().map(|b| (b.label.as_str(), b.der.as_slice())).collect();
        assert_eq!(got, [("CERTIFICATE", &[0u8, 1, 2][..]), ("PRIVATE KEY", &[3u8, 4][..])]);
    }

    #[test]
    fn sender_addresses() {
        let cases = [
            ("Alice Lovelace <Alice@Smime.Example>", Some("alice@smime.example")),
            ("bob@example.org", Some("bob@example.org")),
            ("\"Q, R\" <q@example.org>", Some("q@example.org")),
            ("nobody", None),
        ];
        for (from, want) in cases {
            assert_eq!(address_of(from).as_deref(), want, "{from}");
        }
    }
}
