//! CMS signed-data (RFC 5652 §5): the content an opaque signature carries, and each signer's
//! signature checked (RFC 8551 §3.5, RFC 5652 §5.4–5.6): the digest of the content against the
//! signed `messageDigest` attribute, the signature over the signed attributes exactly as they were
//! sent, then the signer's certificate walked to a trust anchor at the time of signing, its use and
//! its address.

use der::asn1::ObjectIdentifier as Oid;
use der::Decode;

use super::algorithms::{self, DigestAlg};
use super::cert::Cert;
use super::chain::{self, Path};
use super::{ContentInfo, ID_DATA, ID_SIGNED_DATA};
use crate::crypto::asn1::Tlv;
use crate::crypto::status::{Protocol, SignatureReport, SignatureStatus};
use crate::crypto::{Context, CryptoError};
use crate::limits::MAX_SIGNERS;

const ATTR_CONTENT_TYPE: Oid = Oid::new_unwrap("1.2.840.113549.1.9.3");
const ATTR_MESSAGE_DIGEST: Oid = Oid::new_unwrap("1.2.840.113549.1.9.4");
const ATTR_SIGNING_TIME: Oid = Oid::new_unwrap("1.2.840.113549.1.9.5");

/// A SignedData's pieces, borrowed from its DER.
struct SignedData<'a> {
    content_type: Oid,
    /// The encapsulated content, when it is not detached.
    content: Option<&'a [u8]>,
    /// The certificates it carries (those that read).
    certs: Vec<Cert>,
    /// Each SignerInfo as sent.
    signers: Vec<Tlv<'a>>,
}

fn signed_data<'a>(info: &'a ContentInfo<'_>, with_certs: bool) -> Result<SignedData<'a>, CryptoError> {
    if info.oid != ID_SIGNED_DATA {
        return Err(CryptoError::new("it is not a signature (CMS signed-data)"));
    }
    let sd = info.content()?;
    let fields = sd.children()?;
    let encap = fields.get(2).filter(|t| t.tag == 0x30).ok_or(CryptoError::new("it has no encapsulated content"))?;
    let encap_fields = encap.children()?;
    let content_type = encap_fields
        .first()
        .and_then(|t| Oid::from_der(t.whole).ok())
        .ok_or(CryptoError::new("its content type is unreadable"))?;
    let content = match encap_fields.get(1) {
        Some(explicit) if explicit.tag == 0xa0 => {
            let inner = Tlv::single(explicit.value)?;
            Some(if inner.tag == 0x04 { inner.value } else { inner.whole })
        }
        _ => None,
    };
    let mut certs = Vec::new();
    let mut signers = Vec::new();
    for f in &fields[3..] {
        match f.tag {
            0xa0 if with_certs => certs
                .extend(f.children()?.iter().filter(|c| c.tag == 0x30).filter_map(|c| Cert::from_der(c.whole).ok())),
            0x31 => signers = f.children()?,
            _ => {}
        }
    }
    Ok(SignedData { content_type, content, certs, signers })
}

/// The content an opaque S/MIME signature (`application/pkcs7-mime; smime-type=signed-data`)
/// carries: the MIME entity that was signed. Nothing is checked here; [`verify`] does that.
pub fn opaque_content(ber: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let info = ContentInfo::read(ber)?;
    let sd = signed_data(&info, false)?;
    if sd.content_type != ID_DATA {
        return Err(CryptoError::new(format!("it signs content of type {}, not a message", sd.content_type)));
    }
    sd.content.map(<[u8]>::to_vec).ok_or(CryptoError::new("it carries no content (a detached signature)"))
}

/// Checks every signature of the signed-data in `ber`: over its own content, or over `detached`
/// (the first part of a `multipart/signed`, exactly as sent, line ends made CRLF). One report per
/// signer; one `error` report when the object cannot be read at all.
pub fn verify(ber: &[u8], detached: Option<&[u8]>, ctx: &Context<'_>) -> Vec<SignatureReport> {
    let info = match ContentInfo::read(ber) {
        Ok(i) => i,
        Err(e) => return vec![SignatureReport::error(Protocol::Smime, format!("The signature is unreadable: {e}."))],
    };
    let sd = match signed_data(&info, true) {
        Ok(sd) => sd,
        Err(e) => return vec![SignatureReport::error(Protocol::Smime, format!("The signature is unreadable: {e}."))],
    };
    let Some(content) = detached.or(sd.content) else {
        return vec![SignatureReport::error(Protocol::Smime, "The signed content is missing.")];
    };
    if sd.signers.is_empty() {
        return vec![SignatureReport::error(Protocol::Smime, "The signature names no signer.")];
    }
    sd.signers.iter().take(MAX_SIGNERS).map(|si| check_signer(si, &sd, content, ctx)).collect()
}

fn check_signer(si: &Tlv<'_>, sd: &SignedData<'_>, content: &[u8], ctx: &Context<'_>) -> SignatureReport {
    let mut report = SignatureReport::error(Protocol::Smime, String::new());
    let info = match cms::signed_data::SignerInfo::from_der(si.whole) {
        Ok(i) => i,
        Err(_) => {
            report.detail = "A signer's information is unreadable.".into();
            return report;
        }
    };
    let keyring_certs = ctx.keys.smime_certificates();
    let signer = sd.certs.iter().chain(keyring_certs).find(|c| match &info.sid {
        cms::signed_data::SignerIdentifier::IssuerAndSerialNumber(isn) => {
            c.is_issuer_serial(&isn.issuer, &isn.serial_number)
        }
        cms::signed_data::SignerIdentifier::SubjectKeyIdentifier(ski) => {
            c.subject_key_id().as_deref() == Some(ski.0.as_bytes())
        }
    });
    let Some(signer) = signer else {
        report.detail = "The signer's certificate is neither in the message nor among the certificates given.".into();
        return report;
    };
    report.certificate = Some(signer.info());
    report.name = signer.common_name();
    report.signer = signer.emails().into_iter().next();
    let digest = match DigestAlg::from_oid(&info.digest_alg.oid) {
        Ok(d) => d,
        Err(e) => {
            report.detail = format!("The signature cannot be checked: {e}.");
            return report;
        }
    };
    let content_digest = digest.digest(content);
    let mut signing_time = None;
    let signed_bytes: std::borrow::Cow<'_, [u8]> = match &info.signed_attrs {
        Some(attrs) => {
            let value = |oid: Oid| attrs.iter().find(|a| a.oid == oid).and_then(|a| a.values.iter().next());
            let matches = value(ATTR_MESSAGE_DIGEST)
                .and_then(|v| v.decode_as::<der::asn1::OctetStringRef<'_>>().ok())
                .is_some_and(|d| d.as_bytes() == content_digest.as_slice());
            let right_type = value(ATTR_CONTENT_TYPE).and_then(|v| v.decode_as::<Oid>().ok()) == Some(sd.content_type);
            if !matches || !right_type {
                report.status = SignatureStatus::Invalid;
                report.detail = "The content does not match the signature: it was changed after it was signed.".into();
                return report;
            }
            signing_time = value(ATTR_SIGNING_TIME)
                .and_then(|v| der::Encode::to_der(v).ok())
                .and_then(|d| x509_cert::time::Time::from_der(&d).ok())
                .and_then(|t| i64::try_from(t.to_unix_duration().as_secs()).ok());
            match raw_signed_attrs(si) {
                Some(bytes) => std::borrow::Cow::Owned(bytes),
                None => {
                    report.detail = "The signed attributes are unreadable.".into();
                    return report;
                }
            }
        }
        None => std::borrow::Cow::Borrowed(content),
    };
    report.signed_at = signing_time.map(|t| crate::dates::rfc3339(t, 0));
    match algorithms::verify(
        signer.spki_der(),
        &info.signature_algorithm,
        digest,
        &signed_bytes,
        info.signature.as_bytes(),
    ) {
        Ok(true) => {}
        Ok(false) => {
            report.status = SignatureStatus::Invalid;
            report.detail = "The signature does not match: the content or its signed attributes were changed, or it was not made with this certificate.".into();
            return report;
        }
        Err(e) => {
            report.detail = format!("The signature cannot be checked: {e}.");
            return report;
        }
    }
    let at = signing_time.or(ctx.date).unwrap_or(ctx.now);
    let issuer = &signer.parsed.tbs_certificate.issuer;
    let (status, detail) = match chain::walk(signer, &sd.certs, ctx.keys.anchors(), at) {
        Path::Untrusted => (
            SignatureStatus::Untrusted,
            format!("The content matches the signature, but its certificate (issued by {issuer}) does not lead to a trusted authority."),
        ),
        Path::Expired(subject) => (
            SignatureStatus::Expired,
            format!("The content matches the signature, but the certificate of {subject} was not valid when it was signed."),
        ),
        Path::Trusted => match (signer.signing_refusal(), ctx.sender) {
            (Some(why), _) => (SignatureStatus::Untrusted, format!("The content matches the signature, but {why}.")),
            (None, sender) => address_check(&signer.emails(), sender),
        },
    };
    report.status = status;
    report.detail = detail;
    report
}

/// `valid` when the certificate is for the sender's address (RFC 8550 §3), else `untrusted`.
fn address_check(emails: &[String], sender: Option<&str>) -> (SignatureStatus, String) {
    match sender {
        Some(s) if emails.iter().any(|e| e == s) => {
            (SignatureStatus::Valid, "The signature is valid and its certificate is trusted.".into())
        }
        Some(s) if emails.is_empty() => (
            SignatureStatus::Untrusted,
            format!("The signature is valid, but its certificate names no mail address, so it does not vouch for {s}."),
        ),
        Some(s) => (
            SignatureStatus::Untrusted,
            format!(
                "The signature is valid, but its certificate is for {}, not for the sender {s}.",
                emails.join(", ")
            ),
        ),
        None => (
            SignatureStatus::Untrusted,
            "The signature is valid, but the message names no sender to compare its certificate with.".into(),
        ),
    }
}

/// The signed attributes as the signature covers them: their DER with the SET tag in place of the
/// `[0] IMPLICIT` they are sent with (RFC 5652 §5.4), from the bytes as sent (not re-encoded).
fn raw_signed_attrs(si: &Tlv<'_>) -> Option<Vec<u8>> {
    let fields = si.children().ok()?;
    let attrs = fields.iter().find(|f| f.tag == 0xa0)?;
    let mut out = attrs.whole.to_vec();
    out[0] = 0x31;
    Some(out)
}
