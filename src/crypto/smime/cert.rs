//! X.509 certificates as S/MIME uses them (RFC 5280, RFC 8550): read with `x509-cert`, with the
//! raw bytes their signatures cover kept beside, and the questions the path walk and the reader
//! ask of them (who, for which addresses, valid when, allowed to do what).

use std::sync::Arc;

use der::asn1::ObjectIdentifier as Oid;
use der::{Decode, Encode, Tagged};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAltName, SubjectKeyIdentifier};
use x509_cert::name::Name;

use super::algorithms::{self, DigestAlg};
use crate::crypto::asn1::Tlv;
use crate::crypto::status::CertificateInfo;
use crate::crypto::CryptoError;

const COMMON_NAME: Oid = Oid::new_unwrap("2.5.4.3");
const EMAIL_ADDRESS: Oid = Oid::new_unwrap("1.2.840.113549.1.9.1");
const EMAIL_PROTECTION: Oid = Oid::new_unwrap("1.3.6.1.5.5.7.3.4");
const ANY_EXTENDED_KEY_USAGE: Oid = Oid::new_unwrap("2.5.29.37.0");

/// One certificate, parsed, with the exact encodings of the parts signatures and matches use.
#[derive(Clone)]
pub struct Cert {
    pub(crate) der: Arc<[u8]>,
    pub(crate) parsed: x509_cert::Certificate,
    tbs: std::ops::Range<usize>,
    issuer: std::ops::Range<usize>,
    subject: std::ops::Range<usize>,
    spki: std::ops::Range<usize>,
}

impl std::fmt::Debug for Cert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cert({})", self.parsed.tbs_certificate.subject)
    }
}

/// Where `inner` lies in `outer`, which holds it.
fn range_in(outer: &[u8], inner: &[u8]) -> std::ops::Range<usize> {
    let start = inner.as_ptr() as usize - outer.as_ptr() as usize;
    start..start + inner.len()
}

impl Cert {
    pub fn from_der(der: &[u8]) -> Result<Cert, CryptoError> {
        let bad = || CryptoError::new("a certificate is unreadable");
        let parsed = x509_cert::Certificate::from_der(der).map_err(|_| bad())?;
        let top = Tlv::single(der).map_err(|_| bad())?;
        let tbs = *top.children().map_err(|_| bad())?.first().ok_or(CryptoError::new("a certificate is empty"))?;
        let fields = tbs.children().map_err(|_| bad())?;
        let skip = usize::from(fields.first().is_some_and(|f| f.tag == 0xa0));
        let field = |i: usize| fields.get(skip + i).map(|t| t.whole).ok_or(CryptoError::new("a certificate is cut"));
        let (issuer, subject, spki) = (field(2)?, field(4)?, field(5)?);
        Ok(Cert {
            tbs: range_in(der, tbs.whole),
            issuer: range_in(der, issuer),
            subject: range_in(der, subject),
            spki: range_in(der, spki),
            der: Arc::from(der),
            parsed,
        })
    }

    /// Every certificate in PEM text (other blocks are skipped).
    pub fn from_pem_all(text: &[u8]) -> Result<Vec<Cert>, CryptoError> {
        let mut out = Vec::new();
        for block in crate::crypto::pem_blocks(text) {
            if block.label == "CERTIFICATE" || block.label == "X509 CERTIFICATE" || block.label == "TRUSTED CERTIFICATE"
            {
                out.push(Cert::from_der(&block.der)?);
            }
        }
        Ok(out)
    }

    pub(crate) fn tbs(&self) -> &[u8] {
        &self.der[self.tbs.clone()]
    }
    pub(crate) fn issuer_der(&self) -> &[u8] {
        &self.der[self.issuer.clone()]
    }
    pub(crate) fn subject_der(&self) -> &[u8] {
        &self.der[self.subject.clone()]
    }
    pub(crate) fn spki_der(&self) -> &[u8] {
        &self.der[self.spki.clone()]
    }

    pub fn subject(&self) -> &Name {
        &self.parsed.tbs_certificate.subject
    }

    /// `(not before, not after)` in seconds since the epoch.
    pub fn validity(&self) -> (i64, i64) {
        let v = &self.parsed.tbs_certificate.validity;
        let secs = |t: &x509_cert::time::Time| i64::try_from(t.to_unix_duration().as_secs()).unwrap_or(i64::MAX);
        (secs(&v.not_before), secs(&v.not_after))
    }

    pub fn valid_at(&self, at: i64) -> bool {
        let (from, to) = self.validity();
        from <= at && at <= to
    }

    fn extension<T: for<'a> Decode<'a> + const_oid::AssociatedOid>(&self) -> Option<Result<T, CryptoError>> {
        let ext = self.parsed.tbs_certificate.extensions.as_ref()?.iter().find(|e| e.extn_id == T::OID)?;
        Some(
            T::from_der(ext.extn_value.as_bytes())
                .map_err(|_| CryptoError::new("a certificate extension is unreadable")),
        )
    }

    /// Whether it may issue certificates: a CA by its basic constraints, and allowed to sign
    /// certificates by its key usage when it states one. Returns the path length it allows.
    pub(crate) fn as_issuer(&self) -> Option<Option<u8>> {
        let basic = self.extension::<BasicConstraints>()?.ok()?;
        if !basic.ca {
            return None;
        }
        match self.extension::<KeyUsage>() {
            Some(Ok(ku)) if !ku.key_cert_sign() => None,
            Some(Err(_)) => None,
            _ => Some(basic.path_len_constraint),
        }
    }

    /// Why it may not sign mail, if it may not: a key usage without digitalSignature or
    /// nonRepudiation, an extended key usage without emailProtection (RFC 8550 §4.4).
    pub(crate) fn signing_refusal(&self) -> Option<&'static str> {
        match self.extension::<KeyUsage>() {
            Some(Ok(ku)) if !(ku.digital_signature() || ku.non_repudiation()) => {
                return Some("its certificate may not make signatures (key usage)")
            }
            Some(Err(_)) => return Some("its certificate's key usage is unreadable"),
            _ => {}
        }
        match self.extension::<ExtendedKeyUsage>() {
            Some(Ok(eku)) if !eku.0.iter().any(|o| *o == EMAIL_PROTECTION || *o == ANY_EXTENDED_KEY_USAGE) => {
                Some("its certificate is not for mail (extended key usage)")
            }
            Some(Err(_)) => Some("its certificate's extended key usage is unreadable"),
            _ => None,
        }
    }

    /// The mail addresses it is for (subject alternative names, then the subject's
    /// emailAddress), in lower case.
    pub fn emails(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(Ok(san)) = self.extension::<SubjectAltName>() {
            for name in san.0 {
                if let GeneralName::Rfc822Name(a) = name {
                    out.push(a.as_str().trim().to_ascii_lowercase());
                }
            }
        }
        for rdn in self.subject().0.iter() {
            for atv in rdn.0.iter() {
                if atv.oid == EMAIL_ADDRESS {
                    if let Some(s) = directory_string(&atv.value) {
                        out.push(s.trim().to_ascii_lowercase());
                    }
                }
            }
        }
        out.dedup();
        out
    }

    /// The subject's common name.
    pub fn common_name(&self) -> Option<String> {
        self.subject()
            .0
            .iter()
            .flat_map(|rdn| rdn.0.iter())
            .find(|atv| atv.oid == COMMON_NAME)
            .and_then(|atv| directory_string(&atv.value))
    }

    pub(crate) fn subject_key_id(&self) -> Option<Vec<u8>> {
        match self.extension::<SubjectKeyIdentifier>()? {
            Ok(ski) => Some(ski.0.as_bytes().to_vec()),
            Err(_) => None,
        }
    }

    /// Whether `self` issued `child`: the names match and `self`'s key made `child`'s signature.
    pub(crate) fn issued(&self, child: &Cert) -> bool {
        if self.subject_der() != child.issuer_der() {
            return false;
        }
        let alg = &child.parsed.signature_algorithm;
        let Some(sig) = child.parsed.signature.as_bytes() else { return false };
        algorithms::verify(self.spki_der(), alg, DigestAlg::Sha256, child.tbs(), sig).unwrap_or(false)
    }

    /// Whether it is the certificate a signer or a recipient names by issuer and serial number.
    pub(crate) fn is_issuer_serial(&self, issuer: &Name, serial: &x509_cert::serial_number::SerialNumber) -> bool {
        let t = &self.parsed.tbs_certificate;
        t.serial_number.as_bytes() == serial.as_bytes() && issuer.to_der().ok().as_deref() == Some(self.issuer_der())
    }

    pub fn info(&self) -> CertificateInfo {
        let t = &self.parsed.tbs_certificate;
        let (from, to) = self.validity();
        CertificateInfo {
            subject: t.subject.to_string(),
            issuer: t.issuer.to_string(),
            serial: hex_upper(t.serial_number.as_bytes()),
            not_before: crate::dates::rfc3339(from, 0),
            not_after: crate::dates::rfc3339(to, 0),
        }
    }
}

/// A DirectoryString (or IA5String) attribute value as text.
fn directory_string(value: &der::Any) -> Option<String> {
    use der::asn1::{Ia5StringRef, PrintableStringRef, TeletexStringRef, Utf8StringRef};
    let v = value.value();
    match value.tag() {
        der::Tag::Utf8String => Utf8StringRef::new(v).ok().map(|s| s.as_str().to_string()),
        der::Tag::PrintableString => PrintableStringRef::new(v).ok().map(|s| s.as_str().to_string()),
        der::Tag::Ia5String => Ia5StringRef::new(v).ok().map(|s| s.as_str().to_string()),
        der::Tag::TeletexString => TeletexStringRef::new(v).ok().map(|s| s.as_str().to_string()),
        der::Tag::BmpString => {
            let units: Vec<u16> = v.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
}

pub(crate) fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}
