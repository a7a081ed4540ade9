//! S/MIME (RFC 8551) on CMS (RFC 5652): what kind of CMS object a blob is, the content an opaque
//! signature carries ([`signed`]), signature checks against the user's trust anchors with the
//! certificates the message carries ([`signed`], [`chain`], [`cert`]), and decryption of
//! enveloped-data and authEnveloped-data with the user's keys ([`enveloped`]). [`algorithms`] maps
//! identifiers to the crates that do the work.
//!
//! Input is BER as agents send it; [`crate::crypto::asn1::to_der`] makes it DER first, within the
//! size limit [`MAX_CMS_BYTES`].

pub mod algorithms;
pub mod cert;
pub mod chain;
pub mod enveloped;
pub mod signed;

use std::borrow::Cow;

use der::asn1::ObjectIdentifier as Oid;
use der::Decode;

pub use cert::Cert;
pub use enveloped::{decrypt, recipients, Decrypted};
pub use signed::{opaque_content, verify};

use super::asn1::{to_der, Tlv};
use super::CryptoError;
use crate::limits::MAX_CMS_BYTES;

pub(crate) const ID_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.1");
pub(crate) const ID_SIGNED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.2");
pub(crate) const ID_ENVELOPED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.3");
pub(crate) const ID_AUTH_ENVELOPED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.9.16.1.23");
pub(crate) const ID_COMPRESSED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.9.16.1.9");

/// What a CMS object holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Signed,
    Enveloped,
    AuthEnveloped,
    Compressed,
    Other,
}

/// The kind of the CMS object in `ber`, by its content type (what `smime-type` should have said).
pub fn kind(ber: &[u8]) -> Result<Kind, CryptoError> {
    // The content type is the first thing in the object: no need to read the rest for it.
    let oid = leading_oid(ber)?;
    Ok(match oid {
        ID_SIGNED_DATA => Kind::Signed,
        ID_ENVELOPED_DATA => Kind::Enveloped,
        ID_AUTH_ENVELOPED_DATA => Kind::AuthEnveloped,
        ID_COMPRESSED_DATA => Kind::Compressed,
        _ => Kind::Other,
    })
}

/// The OID that starts a ContentInfo, read from its first bytes whatever the length forms.
fn leading_oid(ber: &[u8]) -> Result<Oid, CryptoError> {
    let unreadable = || CryptoError::new("it is not a CMS object");
    if ber.first() != Some(&0x30) {
        return Err(unreadable());
    }
    let skip = match ber.get(1) {
        Some(&0x80) => 2,
        Some(&n) if n < 0x80 => 2,
        Some(&n) => 2 + usize::from(n & 0x7f),
        None => return Err(unreadable()),
    };
    let rest = ber.get(skip..).ok_or_else(unreadable)?;
    let (t, _) = Tlv::read(rest).map_err(|_| unreadable())?;
    if t.tag != 0x06 {
        return Err(unreadable());
    }
    Oid::from_der(t.whole).map_err(|_| unreadable())
}

/// A ContentInfo read: its DER (which the parts below borrow from), its content type.
pub(crate) struct ContentInfo<'a> {
    pub der: Cow<'a, [u8]>,
    pub oid: Oid,
}

impl<'a> ContentInfo<'a> {
    pub(crate) fn read(ber: &'a [u8]) -> Result<ContentInfo<'a>, CryptoError> {
        if ber.len() > MAX_CMS_BYTES {
            return Err(CryptoError::new(format!("it is larger than the {} MiB mailshelf reads", MAX_CMS_BYTES >> 20)));
        }
        let der = to_der(ber)?;
        let oid = {
            let top = Tlv::single(&der)?;
            let kids = top.children()?;
            let first = kids.first().ok_or(CryptoError::new("it is empty"))?;
            Oid::from_der(first.whole).map_err(|_| CryptoError::new("its content type is unreadable"))?
        };
        Ok(ContentInfo { der, oid })
    }

    /// The content: what the `[0] EXPLICIT` holds.
    pub(crate) fn content(&self) -> Result<Tlv<'_>, CryptoError> {
        let top = Tlv::single(&self.der)?;
        let kids = top.children()?;
        let explicit = kids.get(1).filter(|t| t.tag == 0xa0).ok_or(CryptoError::new("it has no content"))?;
        Ok(Tlv::single(explicit.value)?)
    }
}

/// A recipient or signer named by issuer and serial number, or by subject key identifier, as a
/// reader is shown it.
pub(crate) fn describe_issuer_serial(issuer: &x509_cert::name::Name, serial: &[u8]) -> String {
    format!("issuer {issuer}, serial {}", cert::hex_upper(serial))
}

pub(crate) fn describe_key_id(ski: &[u8]) -> String {
    format!("subject key identifier {}", cert::hex_upper(ski))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_told_by_the_content_type() {
        // `30 80 06 09 <signedData>` is how a streaming signer starts; `30 82 ..` a DER one.
        let signed_ber = [0x30, 0x80, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02];
        assert_eq!(kind(&signed_ber), Ok(Kind::Signed));
        let enveloped_der = [0x30, 0x82, 0x01, 0x00, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x03];
        assert_eq!(kind(&enveloped_der), Ok(Kind::Enveloped));
        assert!(kind(b"hello").is_err());
        assert!(kind(&[]).is_err());
        assert!(kind(&[0x30, 0x84]).is_err());
    }
}
