//! The one vocabulary both protocols report in: what a signature check found
//! ([`SignatureStatus`], with the signer and the certificate or key behind it) and what became of
//! an encrypted message ([`EncryptionStatus`], with the recipients it names). The pages, the JSON
//! and the PDF all show these, so they say the same thing.

/// Which standard protects a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// S/MIME (RFC 8551): CMS signed-data, enveloped-data, authEnveloped-data.
    Smime,
    /// OpenPGP (RFC 9580, RFC 4880) in PGP/MIME (RFC 3156) or inline.
    OpenPgp,
}

impl Protocol {
    /// The name the JSON uses.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Smime => "smime",
            Protocol::OpenPgp => "openpgp",
        }
    }

    /// The name a reader knows it by.
    pub fn label(self) -> &'static str {
        match self {
            Protocol::Smime => "S/MIME",
            Protocol::OpenPgp => "OpenPGP",
        }
    }
}

/// What a careful client concludes of one signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignatureStatus {
    /// The content matches, the signer's certificate (or key) chains to a trust anchor the user
    /// gave and was valid when it signed, and its address is the sender's.
    Valid,
    /// The content does not match the signature: it was changed after signing, or the signature
    /// was not made by this key.
    Invalid,
    /// The content matches, but nothing ties the signer to a trust anchor, or the certificate
    /// names another address than the sender's.
    Untrusted,
    /// The content matches, but the certificate or key was not valid when the message was signed.
    Expired,
    /// OpenPGP: no public key for the signer was given (`--trust`).
    UnknownKey,
    /// The signature could not be read or checked (the detail says why).
    Error,
}

impl SignatureStatus {
    /// The name the JSON and the page use.
    pub fn name(self) -> &'static str {
        match self {
            SignatureStatus::Valid => "valid",
            SignatureStatus::Invalid => "invalid",
            SignatureStatus::Untrusted => "untrusted",
            SignatureStatus::Expired => "expired",
            SignatureStatus::UnknownKey => "unknown-key",
            SignatureStatus::Error => "error",
        }
    }
}

/// A certificate as a reader is shown it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CertificateInfo {
    /// The subject's distinguished name (RFC 4514).
    pub subject: String,
    pub issuer: String,
    /// The serial number in hexadecimal.
    pub serial: String,
    /// RFC 3339.
    pub not_before: String,
    pub not_after: String,
}

/// One signature checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureReport {
    pub protocol: Protocol,
    pub status: SignatureStatus,
    /// The signer's address, from its certificate or key (lower case).
    pub signer: Option<String>,
    /// The signer's name, from its certificate or key.
    pub name: Option<String>,
    /// OpenPGP: the fingerprint (or, when the signature names only that, the key id) of the key
    /// that made it, in upper-case hexadecimal.
    pub key_id: Option<String>,
    /// S/MIME: the signer's certificate.
    pub certificate: Option<CertificateInfo>,
    /// When it says it was made (RFC 3339).
    pub signed_at: Option<String>,
    /// What was found, in a sentence.
    pub detail: String,
    /// The section of the part it signs (`2`, `1.2`) when the message shows more than that part:
    /// an unsigned text beside it, a list's footer after it. `None`: it signs all that is shown.
    pub only_part: Option<String>,
}

impl SignatureReport {
    /// A report of a signature that could not be checked at all.
    pub fn error(protocol: Protocol, detail: impl Into<String>) -> SignatureReport {
        SignatureReport {
            protocol,
            status: SignatureStatus::Error,
            signer: None,
            name: None,
            key_id: None,
            certificate: None,
            signed_at: None,
            detail: detail.into(),
            only_part: None,
        }
    }
}

/// What became of an encrypted message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EncryptionStatus {
    /// Decrypted with a key the user gave; its content is shown.
    Decrypted,
    /// None of the keys given (or none at all) is one it was encrypted to.
    NoKey,
    /// A key fits, but the message could not be decrypted (damaged, or an algorithm not supported).
    Failed,
}

impl EncryptionStatus {
    pub fn name(self) -> &'static str {
        match self {
            EncryptionStatus::Decrypted => "decrypted",
            EncryptionStatus::NoKey => "no-key",
            EncryptionStatus::Failed => "failed",
        }
    }
}

/// One encrypted layer of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncryptionReport {
    pub protocol: Protocol,
    pub status: EncryptionStatus,
    /// Whom it was encrypted to: for S/MIME the recipient certificates' issuers and serial numbers
    /// (or subject key identifiers), for OpenPGP the key ids.
    pub recipients: Vec<String>,
    /// What went wrong, when it did.
    pub detail: Option<String>,
}
