//! The algorithms S/MIME names by object identifier, mapped to RustCrypto's implementations:
//! digests, signature checks with a certificate's public key (RSA PKCS #1 v1.5 and PSS, ECDSA on
//! P-256 and P-384), and the key sizes refused. Nothing here is cryptography of its own: each arm
//! hands bytes to a crate.

use der::asn1::ObjectIdentifier as Oid;
use der::Decode;
use rsa::traits::PublicKeyParts;
use sha2_10::Digest;
use spki::SubjectPublicKeyInfoRef;

use crate::crypto::CryptoError;
use crate::limits::MAX_RSA_BITS;

pub(crate) const RSA_ENCRYPTION: Oid = Oid::new_unwrap("1.2.840.113549.1.1.1");
const SHA1_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.5");
const SHA256_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.11");
const SHA384_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.12");
const SHA512_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.13");
const SHA224_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.14");
const RSASSA_PSS: Oid = Oid::new_unwrap("1.2.840.113549.1.1.10");
const MGF1: Oid = Oid::new_unwrap("1.2.840.113549.1.1.8");
pub(crate) const EC_PUBLIC_KEY: Oid = Oid::new_unwrap("1.2.840.10045.2.1");
const ECDSA_SHA1: Oid = Oid::new_unwrap("1.2.840.10045.4.1");
const ECDSA_SHA224: Oid = Oid::new_unwrap("1.2.840.10045.4.3.1");
const ECDSA_SHA256: Oid = Oid::new_unwrap("1.2.840.10045.4.3.2");
const ECDSA_SHA384: Oid = Oid::new_unwrap("1.2.840.10045.4.3.3");
const ECDSA_SHA512: Oid = Oid::new_unwrap("1.2.840.10045.4.3.4");
pub(crate) const P256: Oid = Oid::new_unwrap("1.2.840.10045.3.1.7");
pub(crate) const P384: Oid = Oid::new_unwrap("1.3.132.0.34");
const MD5: Oid = Oid::new_unwrap("1.2.840.113549.2.5");
const SHA1: Oid = Oid::new_unwrap("1.3.14.3.2.26");
const SHA224: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.4");
const SHA256: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.1");
const SHA384: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.2");
const SHA512: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.3");

/// A digest algorithm S/MIME may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DigestAlg {
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl DigestAlg {
    pub(crate) fn from_oid(oid: &Oid) -> Result<DigestAlg, CryptoError> {
        Ok(match *oid {
            SHA1 => DigestAlg::Sha1,
            SHA224 => DigestAlg::Sha224,
            SHA256 => DigestAlg::Sha256,
            SHA384 => DigestAlg::Sha384,
            SHA512 => DigestAlg::Sha512,
            MD5 => return Err(CryptoError::new("it is made with MD5, which is broken and not accepted")),
            other => return Err(CryptoError::new(format!("its digest algorithm {other} is not supported"))),
        })
    }

    pub(crate) fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            DigestAlg::Sha1 => sha1::Sha1::digest(data).to_vec(),
            DigestAlg::Sha224 => sha2_10::Sha224::digest(data).to_vec(),
            DigestAlg::Sha256 => sha2_10::Sha256::digest(data).to_vec(),
            DigestAlg::Sha384 => sha2_10::Sha384::digest(data).to_vec(),
            DigestAlg::Sha512 => sha2_10::Sha512::digest(data).to_vec(),
        }
    }

    fn pkcs1v15(self) -> rsa::Pkcs1v15Sign {
        match self {
            DigestAlg::Sha1 => rsa::Pkcs1v15Sign::new::<sha1::Sha1>(),
            DigestAlg::Sha224 => rsa::Pkcs1v15Sign::new::<sha2_10::Sha224>(),
            DigestAlg::Sha256 => rsa::Pkcs1v15Sign::new::<sha2_10::Sha256>(),
            DigestAlg::Sha384 => rsa::Pkcs1v15Sign::new::<sha2_10::Sha384>(),
            DigestAlg::Sha512 => rsa::Pkcs1v15Sign::new::<sha2_10::Sha512>(),
        }
    }

    fn pss(self, salt: usize) -> rsa::Pss {
        match self {
            DigestAlg::Sha1 => rsa::Pss::new_with_salt::<sha1::Sha1>(salt),
            DigestAlg::Sha224 => rsa::Pss::new_with_salt::<sha2_10::Sha224>(salt),
            DigestAlg::Sha256 => rsa::Pss::new_with_salt::<sha2_10::Sha256>(salt),
            DigestAlg::Sha384 => rsa::Pss::new_with_salt::<sha2_10::Sha384>(salt),
            DigestAlg::Sha512 => rsa::Pss::new_with_salt::<sha2_10::Sha512>(salt),
        }
    }
}

/// `RSASSA-PSS-params` (RFC 4055 §3.1): every field has a default.
#[derive(Debug, Clone, der::Sequence)]
struct PssParams {
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    hash: Option<spki::AlgorithmIdentifierOwned>,
    #[asn1(context_specific = "1", tag_mode = "EXPLICIT", optional = "true")]
    mask_gen: Option<spki::AlgorithmIdentifierOwned>,
    #[asn1(context_specific = "2", tag_mode = "EXPLICIT", optional = "true")]
    salt_length: Option<u32>,
    #[asn1(context_specific = "3", tag_mode = "EXPLICIT", optional = "true")]
    trailer_field: Option<u32>,
}

/// How a signature is checked: the padding and the digest it was made over.
enum Scheme {
    Pkcs1(DigestAlg),
    Pss(DigestAlg, usize),
    Ecdsa(DigestAlg),
}

/// The scheme a signature algorithm names; `digest` is the signer's digest algorithm, which a bare
/// `rsaEncryption` or `id-ecPublicKey` leaves to say.
fn scheme(alg: &spki::AlgorithmIdentifierOwned, digest: DigestAlg) -> Result<Scheme, CryptoError> {
    Ok(match alg.oid {
        RSA_ENCRYPTION => Scheme::Pkcs1(digest),
        SHA1_WITH_RSA => Scheme::Pkcs1(DigestAlg::Sha1),
        SHA224_WITH_RSA => Scheme::Pkcs1(DigestAlg::Sha224),
        SHA256_WITH_RSA => Scheme::Pkcs1(DigestAlg::Sha256),
        SHA384_WITH_RSA => Scheme::Pkcs1(DigestAlg::Sha384),
        SHA512_WITH_RSA => Scheme::Pkcs1(DigestAlg::Sha512),
        RSASSA_PSS => {
            let params = match &alg.parameters {
                Some(p) => {
                    p.decode_as::<PssParams>().map_err(|_| CryptoError::new("its RSA-PSS parameters are unreadable"))?
                }
                None => PssParams { hash: None, mask_gen: None, salt_length: None, trailer_field: None },
            };
            let hash = params.hash.as_ref().map_or(Ok(DigestAlg::Sha1), |h| DigestAlg::from_oid(&h.oid))?;
            if let Some(mgf) = &params.mask_gen {
                let inner = mgf
                    .parameters
                    .as_ref()
                    .and_then(|p| p.decode_as::<spki::AlgorithmIdentifierOwned>().ok())
                    .map(|a| DigestAlg::from_oid(&a.oid));
                if mgf.oid != MGF1 || !matches!(inner, Some(Ok(h)) if h == hash) {
                    return Err(CryptoError::new("its RSA-PSS mask generation is not MGF1 with the same digest"));
                }
            }
            if params.trailer_field.is_some_and(|t| t != 1) {
                return Err(CryptoError::new("its RSA-PSS trailer field is not the standard one"));
            }
            let salt = params.salt_length.unwrap_or(20);
            Scheme::Pss(hash, usize::try_from(salt).map_err(|_| CryptoError::new("an RSA-PSS salt too long"))?)
        }
        EC_PUBLIC_KEY => Scheme::Ecdsa(digest),
        ECDSA_SHA1 => Scheme::Ecdsa(DigestAlg::Sha1),
        ECDSA_SHA224 => Scheme::Ecdsa(DigestAlg::Sha224),
        ECDSA_SHA256 => Scheme::Ecdsa(DigestAlg::Sha256),
        ECDSA_SHA384 => Scheme::Ecdsa(DigestAlg::Sha384),
        ECDSA_SHA512 => Scheme::Ecdsa(DigestAlg::Sha512),
        other => return Err(CryptoError::new(format!("its signature algorithm {other} is not supported"))),
    })
}

/// An RSA public key from its `RSAPublicKey` encoding, refused beyond [`MAX_RSA_BITS`].
pub(crate) fn rsa_public_key(pkcs1: &[u8]) -> Result<rsa::RsaPublicKey, CryptoError> {
    let key = rsa::pkcs1::RsaPublicKey::from_der(pkcs1).map_err(|_| CryptoError::new("the RSA key is unreadable"))?;
    let n = rsa::BigUint::from_bytes_be(key.modulus.as_bytes());
    let e = rsa::BigUint::from_bytes_be(key.public_exponent.as_bytes());
    if n.bits() > MAX_RSA_BITS {
        return Err(CryptoError::new(format!(
            "its RSA key has {} bits, more than the {MAX_RSA_BITS} mailshelf checks",
            n.bits()
        )));
    }
    rsa::RsaPublicKey::new_with_max_size(n, e, MAX_RSA_BITS)
        .map_err(|e| CryptoError::new(format!("the RSA key is not usable: {e}")))
}

/// Checks `signature` over `message` (the bytes signed, hashed here) with the key of `spki`
/// (a DER `SubjectPublicKeyInfo`). `Ok(false)` when it does not match; `Err` when it cannot be
/// checked at all.
pub(crate) fn verify(
    spki: &[u8],
    alg: &spki::AlgorithmIdentifierOwned,
    digest: DigestAlg,
    message: &[u8],
    signature: &[u8],
) -> Result<bool, CryptoError> {
    let scheme = scheme(alg, digest)?;
    let info = SubjectPublicKeyInfoRef::from_der(spki).map_err(|_| CryptoError::new("the public key is unreadable"))?;
    let key_bytes = info.subject_public_key.as_bytes().ok_or(CryptoError::new("the public key is unreadable"))?;
    match (info.algorithm.oid, scheme) {
        (RSA_ENCRYPTION | RSASSA_PSS, Scheme::Pkcs1(d)) => {
            let key = rsa_public_key(key_bytes)?;
            Ok(key.verify(d.pkcs1v15(), &d.digest(message), signature).is_ok())
        }
        (RSA_ENCRYPTION | RSASSA_PSS, Scheme::Pss(d, salt)) => {
            let key = rsa_public_key(key_bytes)?;
            if salt > key.size() {
                return Ok(false);
            }
            Ok(key.verify(d.pss(salt), &d.digest(message), signature).is_ok())
        }
        (EC_PUBLIC_KEY, Scheme::Ecdsa(d)) => {
            let curve = info
                .algorithm
                .parameters
                .and_then(|p| p.decode_as::<Oid>().ok())
                .ok_or(CryptoError::new("the EC key names no curve"))?;
            let hash = d.digest(message);
            use signature::hazmat::PrehashVerifier;
            match curve {
                P256 => {
                    let hash = ecdsa_prehash(hash, 32);
                    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(key_bytes)
                        .map_err(|_| CryptoError::new("the P-256 key is unreadable"))?;
                    let Ok(sig) = p256::ecdsa::Signature::from_der(signature) else { return Ok(false) };
                    Ok(key.verify_prehash(&hash, &sig).is_ok())
                }
                P384 => {
                    let hash = ecdsa_prehash(hash, 48);
                    let key = p384::ecdsa::VerifyingKey::from_sec1_bytes(key_bytes)
                        .map_err(|_| CryptoError::new("the P-384 key is unreadable"))?;
                    let Ok(sig) = p384::ecdsa::Signature::from_der(signature) else { return Ok(false) };
                    Ok(key.verify_prehash(&hash, &sig).is_ok())
                }
                other => Err(CryptoError::new(format!("its elliptic curve {other} is not supported"))),
            }
        }
        (key_alg, _) => Err(CryptoError::new(format!("its key ({key_alg}) does not fit its signature algorithm"))),
    }
}

/// A digest as ECDSA takes it on a curve whose order is `field` bytes long: a shorter digest is
/// used whole, as the same number (FIPS 186-5 §6.4.1), so it is padded with zeros in front. The
/// crates refuse a prehash shorter than half the field (SHA-1 on P-384), which agents still sign
/// with.
fn ecdsa_prehash(hash: Vec<u8>, field: usize) -> Vec<u8> {
    match field.checked_sub(hash.len()) {
        Some(pad) if pad > 0 => {
            let mut out = vec![0; pad];
            out.extend_from_slice(&hash);
            out
        }
        _ => hash,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `RSAPublicKey` with a modulus of `bytes` bytes (all ones: odd and of full length).
    fn rsa_key_der(bytes: usize) -> Vec<u8> {
        let int = |v: &[u8]| {
            let mut out = vec![0x02, 0x82, ((v.len() + 1) >> 8) as u8, (v.len() + 1) as u8, 0x00];
            out.extend_from_slice(v);
            out
        };
        let body: Vec<u8> = int(&vec![0xff; bytes]).into_iter().chain([0x02, 0x03, 0x01, 0x00, 0x01]).collect();
        let mut der = vec![0x30, 0x82, (body.len() >> 8) as u8, body.len() as u8];
        der.extend(body);
        der
    }

    #[test]
    fn rsa_keys_beyond_the_limit_are_refused_before_any_work() {
        assert!(rsa_public_key(&rsa_key_der(MAX_RSA_BITS / 8)).is_ok(), "16384 bits are checked");
        let err = rsa_public_key(&rsa_key_der(MAX_RSA_BITS / 8 + 1)).expect_err("16392 bits are not");
        assert!(err.0.contains("more than the 16384"), "{err}");
    }

    #[test]
    fn weak_and_unknown_digests_are_named() {
        let md5 = DigestAlg::from_oid(&MD5).expect_err("MD5 is refused");
        assert!(md5.0.contains("MD5"));
        assert!(DigestAlg::from_oid(&Oid::new_unwrap("1.2.3.4")).is_err());
        assert_eq!(DigestAlg::from_oid(&SHA256), Ok(DigestAlg::Sha256));
    }
}
