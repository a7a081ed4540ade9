//! The JSON of a message's signed and encrypted layers (S/MIME, OpenPGP), as
//! `GET /api/messages/<id>` gives it: `security` (each signature and what checking it found, the
//! encryption and for whom) and the `role` of the parts that are a layer's machinery rather than
//! attachments. What they say is worked out in [`crate::view::security`]; this is its shape.

use serde::{Deserialize, Serialize};

use crate::crypto::{EncryptionStatus, Protocol, SignatureStatus};
use crate::model::{Message, PartIdx};
use crate::view::security::Security;

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PartRole {
    Signature,
    Signed,
    Encrypted,
}

/// What part `idx` is to a signed or encrypted layer of `msg`, if anything.
pub(super) fn part_role(msg: &Message, idx: PartIdx) -> Option<PartRole> {
    use crate::model::SealKind;
    msg.seals.iter().filter(|s| s.hidden.contains(&idx)).find_map(|s| match s.kind {
        SealKind::Detached { .. } => Some(PartRole::Signature),
        SealKind::Opaque { .. } => Some(PartRole::Signed),
        SealKind::Encrypted { .. } => Some(PartRole::Encrypted),
        _ => None,
    })
}

/// A message's signed and encrypted layers (S/MIME, OpenPGP).
#[derive(Debug, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub(crate) struct SecurityInfo {
    /// Every signature over what the message shows, outermost first; empty when it is unsigned.
    pub signatures: Vec<SignatureInfo>,
    /// Its outermost encrypted layer; `null` when it is not encrypted.
    pub encryption: Option<EncryptionInfo>,
}

/// One signature and what checking it found.
#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub(crate) struct SignatureInfo {
    pub protocol: SecurityProtocol,
    pub status: SignatureStatusName,
    /// The signer's address, from its certificate or key.
    pub signer: Option<String>,
    /// The signer's name, from its certificate or key.
    pub name: Option<String>,
    /// OpenPGP: the fingerprint of the signing key (or the key id the signature names, when the
    /// key is unknown), upper-case hexadecimal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// S/MIME: the signer's certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<CertificateSummary>,
    /// When the signature says it was made (RFC 3339).
    pub signed_at: Option<String>,
    /// What was found, in a sentence (for `error`: why it could not be checked).
    pub detail: String,
    /// The section of the part it signs (`"2"`), when the message shows more than that part (an
    /// unsigned text beside it, a list's footer after it): what else is shown is not signed.
    /// Absent when it signs all that is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only_part: Option<String>,
}

/// `smime` (RFC 8551) or `openpgp` (RFC 3156, RFC 9580).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SecurityProtocol {
    Smime,
    Openpgp,
}

/// `valid`: the content matches, the signer chains to a trust anchor given and was valid when it
/// signed, and is the sender; `invalid`: the content does not match; `untrusted`: it matches, but
/// nothing given vouches for the signer (or the signer is not the sender); `expired`: the
/// certificate or key was not valid when it signed; `unknown-key`: no public key for the OpenPGP
/// signer was given; `error`: it could not be read or checked (see `detail`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SignatureStatusName {
    Valid,
    Invalid,
    Untrusted,
    Expired,
    UnknownKey,
    Error,
}

/// An X.509 certificate, as a reader is shown it.
#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub(crate) struct CertificateSummary {
    /// The subject's distinguished name (RFC 4514).
    pub subject: String,
    pub issuer: String,
    /// The serial number, upper-case hexadecimal.
    pub serial: String,
    /// RFC 3339.
    pub not_before: String,
    pub not_after: String,
}

/// A message's encryption.
#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub(crate) struct EncryptionInfo {
    pub protocol: SecurityProtocol,
    /// `decrypted` with a key given (`--key`): its content is shown (and held only in memory);
    /// `no-key`: none of the keys given opens it, and nothing of its content is shown; `failed`: a
    /// key fits but it could not be decrypted (see `detail`).
    pub status: EncryptionStatusName,
    /// Whom it was encrypted to: for S/MIME each recipient certificate's issuer and serial number
    /// (or subject key identifier), for OpenPGP the key ids.
    pub recipients: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum EncryptionStatusName {
    Decrypted,
    NoKey,
    Failed,
}

impl SecurityInfo {
    pub(crate) fn of(s: &Security) -> SecurityInfo {
        let protocol = |p: Protocol| match p {
            Protocol::Smime => SecurityProtocol::Smime,
            Protocol::OpenPgp => SecurityProtocol::Openpgp,
        };
        SecurityInfo {
            signatures: s
                .signatures
                .iter()
                .map(|r| SignatureInfo {
                    protocol: protocol(r.protocol),
                    status: match r.status {
                        SignatureStatus::Valid => SignatureStatusName::Valid,
                        SignatureStatus::Invalid => SignatureStatusName::Invalid,
                        SignatureStatus::Untrusted => SignatureStatusName::Untrusted,
                        SignatureStatus::Expired => SignatureStatusName::Expired,
                        SignatureStatus::UnknownKey => SignatureStatusName::UnknownKey,
                        SignatureStatus::Error => SignatureStatusName::Error,
                    },
                    signer: r.signer.clone(),
                    name: r.name.clone(),
                    key_id: r.key_id.clone(),
                    certificate: r.certificate.as_ref().map(|c| CertificateSummary {
                        subject: c.subject.clone(),
                        issuer: c.issuer.clone(),
                        serial: c.serial.clone(),
                        not_before: c.not_before.clone(),
                        not_after: c.not_after.clone(),
                    }),
                    signed_at: r.signed_at.clone(),
                    detail: r.detail.clone(),
                    only_part: r.only_part.clone(),
                })
                .collect(),
            encryption: s.encryption.as_ref().map(|e| EncryptionInfo {
                protocol: protocol(e.protocol),
                status: match e.status {
                    EncryptionStatus::Decrypted => EncryptionStatusName::Decrypted,
                    EncryptionStatus::NoKey => EncryptionStatusName::NoKey,
                    EncryptionStatus::Failed => EncryptionStatusName::Failed,
                },
                recipients: e.recipients.clone(),
                detail: e.detail.clone(),
            }),
        }
    }
}
