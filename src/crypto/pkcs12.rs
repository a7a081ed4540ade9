//! PKCS #12 files (`.p12`, `.pfx`; RFC 7292): the private keys and certificates inside, with the
//! passphrase checked against the file's MAC first, so that a wrong one is said plainly. Both
//! kinds real files come in: PBES2 with PBKDF2 and AES (what OpenSSL 3 and current Windows
//! write), and the legacy PKCS #12 schemes (3DES and RC2 keyed by the PKCS #12 KDF, what older
//! OpenSSL, Windows, macOS and `gpgsm` write). The KDF, ciphers and MAC are the crates' (`pkcs12`,
//! `pkcs5`, `des`, `rc2`, `hmac`); this reads the structure and picks the algorithm.

use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockDecryptMut, InnerIvInit, KeyIvInit};
use der::asn1::ObjectIdentifier as Oid;
use der::Decode;
use hmac::Mac;
use pkcs12::kdf::{derive_key, Pkcs12KeyType};
use zeroize::Zeroizing;

use super::asn1::{to_der, Tlv};
use super::CryptoError;
use crate::limits::MAX_KDF_ITERATIONS;

const ID_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.1");
const ID_ENCRYPTED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.6");
const KEY_BAG: Oid = Oid::new_unwrap("1.2.840.113549.1.12.10.1.1");
const SHROUDED_KEY_BAG: Oid = Oid::new_unwrap("1.2.840.113549.1.12.10.1.2");
const CERT_BAG: Oid = Oid::new_unwrap("1.2.840.113549.1.12.10.1.3");
const SAFE_CONTENTS_BAG: Oid = Oid::new_unwrap("1.2.840.113549.1.12.10.1.6");
const X509_CERTIFICATE: Oid = Oid::new_unwrap("1.2.840.113549.1.9.22.1");
const PBE_SHA1_3DES: Oid = Oid::new_unwrap("1.2.840.113549.1.12.1.3");
const PBE_SHA1_2DES: Oid = Oid::new_unwrap("1.2.840.113549.1.12.1.4");
const PBE_SHA1_RC2_128: Oid = Oid::new_unwrap("1.2.840.113549.1.12.1.5");
const PBE_SHA1_RC2_40: Oid = Oid::new_unwrap("1.2.840.113549.1.12.1.6");
const PBES2: Oid = Oid::new_unwrap("1.2.840.113549.1.5.13");
const SHA1: Oid = Oid::new_unwrap("1.3.14.3.2.26");
const SHA256: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.1");
const SHA384: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.2");
const SHA512: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.3");

/// Nesting of bags in bags followed.
const MAX_BAG_NESTING: usize = 4;

/// What a PKCS #12 file holds.
#[derive(Default)]
pub struct Bundle {
    /// Private keys, each a PKCS #8 `PrivateKeyInfo` (DER), wiped when dropped.
    pub keys: Vec<Zeroizing<Vec<u8>>>,
    /// Certificates (DER).
    pub certs: Vec<Vec<u8>>,
}

/// The password as the PKCS #12 KDF takes it: BMPString with a terminating NUL (RFC 7292 B.1);
/// an empty password is also tried as no bytes at all, as some writers make it.
fn password_forms(password: &str) -> Result<Vec<Zeroizing<Vec<u8>>>, CryptoError> {
    let bmp = der::asn1::BmpString::from_utf8(password)
        .map_err(|_| CryptoError::new("the passphrase has characters PKCS #12 cannot hold"))?;
    let mut first = Zeroizing::new(bmp.into_bytes().to_vec());
    first.extend([0, 0]);
    let mut forms = vec![first];
    if password.is_empty() {
        forms.push(Zeroizing::new(Vec::new()));
    }
    Ok(forms)
}

fn oid_of(t: &Tlv<'_>) -> Result<Oid, CryptoError> {
    Oid::from_der(t.whole).map_err(|_| CryptoError::new("an identifier is unreadable"))
}

fn integer(t: &Tlv<'_>) -> Result<i64, CryptoError> {
    if t.tag != 0x02 || t.value.is_empty() || t.value.len() > 8 {
        return Err(CryptoError::new("a number is unreadable"));
    }
    Ok(t.value.iter().fold(if t.value[0] & 0x80 != 0 { -1i64 } else { 0 }, |acc, &b| (acc << 8) | i64::from(b)))
}

fn iterations(t: &Tlv<'_>) -> Result<i32, CryptoError> {
    let n = integer(t)?;
    if n < 1 || n > i64::from(MAX_KDF_ITERATIONS) {
        return Err(CryptoError::new(format!(
            "it asks for {n} key derivation rounds, beyond the {MAX_KDF_ITERATIONS} mailshelf does"
        )));
    }
    i32::try_from(n).map_err(|_| CryptoError::new("a number is unreadable"))
}

/// Reads the keys and certificates of the PKCS #12 file `input` with `password`.
pub fn read(input: &[u8], password: &str) -> Result<Bundle, CryptoError> {
    let der = to_der(input)?;
    let pfx = Tlv::single(&der)?;
    let fields = pfx.children()?;
    let (Some(auth_safe), mac) = (fields.get(1), fields.get(2)) else {
        return Err(CryptoError::new("it is not a PKCS #12 file"));
    };
    let ci = auth_safe.children()?;
    if ci.first().map(oid_of).transpose()? != Some(ID_DATA) {
        return Err(CryptoError::new(
            "it is protected by a public key rather than a passphrase, which is not supported",
        ));
    }
    let explicit = ci.get(1).ok_or(CryptoError::new("it holds nothing"))?;
    let octets = Tlv::single(explicit.value)?;
    if octets.tag != 0x04 {
        return Err(CryptoError::new("it is not a PKCS #12 file"));
    }
    let safe = octets.value;
    let forms = password_forms(password)?;
    let password_bytes = match mac {
        Some(mac) => forms
            .iter()
            .find(|p| mac_matches(mac, safe, p).unwrap_or(false))
            .ok_or(CryptoError::new("the passphrase is wrong (the file's integrity check does not match)"))?,
        None => forms.first().ok_or(CryptoError::new("no passphrase"))?,
    };
    let mut bundle = Bundle::default();
    let safe = to_der(safe)?;
    for content in Tlv::single(&safe)?.children()? {
        let parts = content.children()?;
        let oid = parts.first().map(oid_of).transpose()?;
        let explicit = parts.get(1).ok_or(CryptoError::new("a part of it is empty"))?;
        let inner = Tlv::single(explicit.value)?;
        match oid {
            Some(ID_DATA) if inner.tag == 0x04 => {
                bags(&to_der(inner.value)?, password, password_bytes, &mut bundle, 0)?
            }
            Some(ID_ENCRYPTED_DATA) => {
                // EncryptedData ::= SEQUENCE { version, EncryptedContentInfo }
                let ed = inner.children()?;
                let eci = ed.get(1).ok_or(CryptoError::new("an encrypted part is empty"))?.children()?;
                let (Some(alg), Some(data)) = (eci.get(1), eci.get(2)) else {
                    return Err(CryptoError::new("an encrypted part is empty"));
                };
                let plain = decrypt(alg, data.value, password, password_bytes)?;
                bags(&to_der(&plain)?, password, password_bytes, &mut bundle, 0)?;
            }
            _ => {}
        }
    }
    Ok(bundle)
}

/// Whether the MAC (`MacData`, RFC 7292 §4) over `data` matches with the password `pass`.
fn mac_matches(mac: &Tlv<'_>, data: &[u8], pass: &[u8]) -> Result<bool, CryptoError> {
    let f = mac.children()?;
    let digest_info = f.first().ok_or(CryptoError::new("its MAC is unreadable"))?.children()?;
    let alg = digest_info.first().ok_or(CryptoError::new("its MAC is unreadable"))?.children()?;
    let oid = alg.first().map(oid_of).transpose()?;
    let expected = digest_info.get(1).ok_or(CryptoError::new("its MAC is unreadable"))?.value;
    let salt = f.get(1).ok_or(CryptoError::new("its MAC is unreadable"))?.value;
    let rounds = f.get(2).map(iterations).transpose()?.unwrap_or(1);
    macro_rules! check {
        ($d:ty) => {{
            let key = derive_key::<$d>(pass, salt, Pkcs12KeyType::Mac, rounds, <$d as digest_size::Size>::SIZE);
            let mut m =
                hmac::Hmac::<$d>::new_from_slice(&key).map_err(|_| CryptoError::new("its MAC is unreadable"))?;
            m.update(data);
            m.verify_slice(expected).is_ok()
        }};
    }
    Ok(match oid {
        Some(SHA1) => check!(sha1::Sha1),
        Some(SHA256) => check!(sha2_10::Sha256),
        Some(SHA384) => check!(sha2_10::Sha384),
        Some(SHA512) => check!(sha2_10::Sha512),
        _ => return Err(CryptoError::new("its MAC algorithm is not supported")),
    })
}

/// Output sizes of the MAC digests.
mod digest_size {
    pub(super) trait Size {
        const SIZE: usize;
    }
    impl Size for sha1::Sha1 {
        const SIZE: usize = 20;
    }
    impl Size for sha2_10::Sha256 {
        const SIZE: usize = 32;
    }
    impl Size for sha2_10::Sha384 {
        const SIZE: usize = 48;
    }
    impl Size for sha2_10::Sha512 {
        const SIZE: usize = 64;
    }
}

/// Reads the bags of a `SafeContents`.
fn bags(safe: &[u8], password: &str, pass: &[u8], out: &mut Bundle, depth: usize) -> Result<(), CryptoError> {
    if depth > MAX_BAG_NESTING {
        return Err(CryptoError::new("its bags are nested too deeply"));
    }
    for bag in Tlv::single(safe)?.children()? {
        let f = bag.children()?;
        let (Some(id), Some(explicit)) = (f.first(), f.get(1)) else { continue };
        let value = Tlv::single(explicit.value)?;
        match oid_of(id)? {
            KEY_BAG => out.keys.push(Zeroizing::new(value.whole.to_vec())),
            SHROUDED_KEY_BAG => {
                let epki = value.children()?;
                let (Some(alg), Some(data)) = (epki.first(), epki.get(1)) else { continue };
                out.keys.push(Zeroizing::new(decrypt(alg, data.value, password, pass)?));
            }
            CERT_BAG => {
                let cb = value.children()?;
                let (Some(kind), Some(cv)) = (cb.first(), cb.get(1)) else { continue };
                if oid_of(kind)? == X509_CERTIFICATE {
                    let octets = Tlv::single(cv.value)?;
                    out.certs.push(octets.value.to_vec());
                }
            }
            SAFE_CONTENTS_BAG => bags(value.whole, password, pass, out, depth + 1)?,
            _ => {}
        }
    }
    Ok(())
}

/// Decrypts `data` with the password-based scheme `alg` (an AlgorithmIdentifier).
fn decrypt(alg: &Tlv<'_>, data: &[u8], password: &str, pass: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let f = alg.children()?;
    let oid = f.first().map(oid_of).transpose()?.ok_or(CryptoError::new("an encryption is unreadable"))?;
    if oid == PBES2 {
        let scheme = pkcs5::EncryptionScheme::try_from(alg.whole)
            .map_err(|_| CryptoError::new("its encryption (PBES2) is of a kind not supported"))?;
        if let Some(p) = scheme.pbes2().and_then(|p| p.kdf.pbkdf2()) {
            if p.iteration_count > MAX_KDF_ITERATIONS {
                return Err(CryptoError::new("it asks for more key derivation rounds than mailshelf does"));
            }
        }
        return scheme
            .decrypt(password.as_bytes(), data)
            .map_err(|_| CryptoError::new("it did not decrypt with the passphrase given"));
    }
    let params = f.get(1).ok_or(CryptoError::new("an encryption has no parameters"))?.children()?;
    let (Some(salt), Some(rounds)) = (params.first(), params.get(1)) else {
        return Err(CryptoError::new("an encryption has no parameters"));
    };
    let rounds = iterations(rounds)?;
    let key = |len: usize| {
        Zeroizing::new(derive_key::<sha1::Sha1>(pass, salt.value, Pkcs12KeyType::EncryptionKey, rounds, len))
    };
    let iv = derive_key::<sha1::Sha1>(pass, salt.value, Pkcs12KeyType::Iv, rounds, 8);
    let wrong = |_| CryptoError::new("it did not decrypt with the passphrase given");
    match oid {
        PBE_SHA1_3DES => cbc::Decryptor::<des::TdesEde3>::new_from_slices(&key(24), &iv)
            .map_err(|_| CryptoError::new("a key could not be made"))?
            .decrypt_padded_vec_mut::<Pkcs7>(data)
            .map_err(wrong),
        PBE_SHA1_2DES => cbc::Decryptor::<des::TdesEde2>::new_from_slices(&key(16), &iv)
            .map_err(|_| CryptoError::new("a key could not be made"))?
            .decrypt_padded_vec_mut::<Pkcs7>(data)
            .map_err(wrong),
        PBE_SHA1_RC2_128 | PBE_SHA1_RC2_40 => {
            let bits = if oid == PBE_SHA1_RC2_40 { 40 } else { 128 };
            let cipher = rc2::Rc2::new_with_eff_key_len(&key(bits / 8), bits);
            cbc::Decryptor::<rc2::Rc2>::inner_iv_slice_init(cipher, &iv)
                .map_err(|_| CryptoError::new("a key could not be made"))?
                .decrypt_padded_vec_mut::<Pkcs7>(data)
                .map_err(wrong)
        }
        other => Err(CryptoError::new(format!("its encryption {other} is not supported"))),
    }
}
