//! CMS enveloped-data (RFC 5652 §6) and authEnveloped-data (RFC 5083): whom a message was
//! encrypted to, and its content decrypted with a key the user gave. Recipients by key transport
//! (RSA, PKCS #1 v1.5 or OAEP) or by key agreement (ECDH on P-256 and P-384 with the X9.63 KDF and
//! AES key wrap, RFC 5753); content in AES-CBC, AES-GCM (RFC 5084) or, for old mail, 3DES-CBC.
//!
//! A failed RSA PKCS #1 v1.5 unwrap goes on with a random key (RFC 3218 §2.3.2), so that the
//! answer, and the time it takes, tell nothing about the padding.

use aes::cipher::{BlockDecryptMut, KeyInit, KeyIvInit};
use cbc::cipher::block_padding::Pkcs7;
use cms::enveloped_data::{
    EncryptedContentInfo, KeyAgreeRecipientIdentifier, KeyAgreeRecipientInfo, KeyTransRecipientInfo,
    OriginatorIdentifierOrKey, RecipientIdentifier, RecipientInfo,
};
use der::asn1::{ObjectIdentifier as Oid, OctetString};
use der::{Decode, Encode};

use super::algorithms::{self, P256, P384};
use super::{describe_issuer_serial, describe_key_id, ContentInfo, ID_AUTH_ENVELOPED_DATA, ID_ENVELOPED_DATA};
use crate::crypto::keys::{PrivateKey, SmimeKey};
use crate::crypto::status::EncryptionStatus;
use crate::crypto::{CryptoError, Keyring};

const AES128_CBC: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.2");
const AES192_CBC: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.22");
const AES256_CBC: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.42");
const AES128_GCM: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.6");
const AES192_GCM: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.26");
const AES256_GCM: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.46");
const DES_EDE3_CBC: Oid = Oid::new_unwrap("1.2.840.113549.3.7");
const AES128_WRAP: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.5");
const AES192_WRAP: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.25");
const AES256_WRAP: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.45");
const RSAES_OAEP: Oid = Oid::new_unwrap("1.2.840.113549.1.1.7");
const ECDH_SHA1_KDF: Oid = Oid::new_unwrap("1.3.133.16.840.63.0.2");
const ECDH_SHA224_KDF: Oid = Oid::new_unwrap("1.3.132.1.11.0");
const ECDH_SHA256_KDF: Oid = Oid::new_unwrap("1.3.132.1.11.1");
const ECDH_SHA384_KDF: Oid = Oid::new_unwrap("1.3.132.1.11.2");
const ECDH_SHA512_KDF: Oid = Oid::new_unwrap("1.3.132.1.11.3");
const ECDH_COFACTOR_SHA256_KDF: Oid = Oid::new_unwrap("1.3.132.1.14.1");
const ECDH_COFACTOR_SHA384_KDF: Oid = Oid::new_unwrap("1.3.132.1.14.2");
const ECDH_COFACTOR_SHA512_KDF: Oid = Oid::new_unwrap("1.3.132.1.14.3");

/// `GCMParameters` (RFC 5084 §3.2).
#[derive(Clone, Debug, der::Sequence)]
struct GcmParameters {
    nonce: OctetString,
    #[asn1(default = "default_icv_len")]
    icv_len: u8,
}

fn default_icv_len() -> u8 {
    12
}

/// `ECC-CMS-SharedInfo` (RFC 5753 §7.2): what the KDF derives the key-encryption key over.
#[derive(Clone, Debug, der::Sequence)]
struct EccCmsSharedInfo {
    key_info: spki::AlgorithmIdentifierOwned,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    entity_u_info: Option<OctetString>,
    #[asn1(context_specific = "2", tag_mode = "EXPLICIT")]
    supp_pub_info: OctetString,
}

/// An enveloped object read: its recipients and its encrypted content.
struct Envelope {
    recipients: Vec<RecipientInfo>,
    content: EncryptedContentInfo,
    /// For authEnveloped-data: the authenticated attributes as the tag covers them, and the tag.
    auth: Option<(Vec<u8>, Vec<u8>)>,
}

fn envelope(ber: &[u8]) -> Result<Envelope, CryptoError> {
    let info = ContentInfo::read(ber)?;
    let inner = info.content()?;
    let unreadable = || CryptoError::new("its envelope is unreadable");
    let authenticated = match info.oid {
        ID_ENVELOPED_DATA => false,
        ID_AUTH_ENVELOPED_DATA => true,
        _ => return Err(CryptoError::new("it is not an encrypted message (CMS enveloped-data)")),
    };
    // version, [0] originatorInfo (optional), recipientInfos, the encrypted content, then the
    // attributes and, for authEnveloped-data, the tag (RFC 5652 §6.1, RFC 5083 §2.1).
    let fields = inner.children()?;
    let at = match fields.get(1).map(|f| f.tag) {
        Some(0x31) => 1,
        Some(0xa0) if fields.get(2).is_some_and(|f| f.tag == 0x31) => 2,
        _ => return Err(unreadable()),
    };
    // Each recipient is read by itself: `der` reading the SET OF whole would check its order by
    // comparing re-encoded recipients pairwise, which costs the square of their number (minutes for
    // a message to a few thousand people).
    let recipients = fields[at]
        .children()?
        .iter()
        .map(|r| RecipientInfo::from_der(r.whole).map_err(|_| unreadable()))
        .collect::<Result<Vec<_>, _>>()?;
    let content =
        fields.get(at + 1).and_then(|c| EncryptedContentInfo::from_der(c.whole).ok()).ok_or_else(unreadable)?;
    let auth = if authenticated {
        let rest = fields.get(at + 2..).unwrap_or(&[]);
        // The tag covers the authenticated attributes' DER with the SET tag (RFC 5083 §2.2),
        // taken as sent.
        let (aad, mac_at) = match rest.first() {
            Some(attrs) if attrs.tag == 0xa1 => {
                let mut bytes = attrs.whole.to_vec();
                bytes[0] = 0x31;
                (bytes, 1)
            }
            _ => (Vec::new(), 0),
        };
        let mac = rest.get(mac_at).filter(|m| m.tag == 0x04).ok_or_else(unreadable)?;
        Some((aad, mac.value.to_vec()))
    } else {
        None
    };
    Ok(Envelope { recipients, content, auth })
}

/// Whom the enveloped-data in `ber` was encrypted to, as a reader is shown them.
pub fn recipients(ber: &[u8]) -> Result<Vec<String>, CryptoError> {
    Ok(envelope(ber)?.recipients.iter().flat_map(describe).collect())
}

fn describe(ri: &RecipientInfo) -> Vec<String> {
    let issuer_serial =
        |isn: &cms::cert::IssuerAndSerialNumber| describe_issuer_serial(&isn.issuer, isn.serial_number.as_bytes());
    match ri {
        RecipientInfo::Ktri(k) => vec![match &k.rid {
            RecipientIdentifier::IssuerAndSerialNumber(isn) => issuer_serial(isn),
            RecipientIdentifier::SubjectKeyIdentifier(ski) => describe_key_id(ski.0.as_bytes()),
        }],
        RecipientInfo::Kari(k) => k
            .recipient_enc_keys
            .iter()
            .map(|r| match &r.rid {
                KeyAgreeRecipientIdentifier::IssuerAndSerialNumber(isn) => issuer_serial(isn),
                KeyAgreeRecipientIdentifier::RKeyId(id) => describe_key_id(id.subject_key_identifier.0.as_bytes()),
            })
            .collect(),
        RecipientInfo::Kekri(_) => vec!["a key agreed beforehand (KEK)".into()],
        RecipientInfo::Pwri(_) => vec!["a password".into()],
        RecipientInfo::Ori(_) => vec!["a recipient of a kind mailshelf does not know".into()],
    }
}

/// The outcome of decrypting one enveloped-data.
#[derive(Debug, Clone)]
pub struct Decrypted {
    pub status: EncryptionStatus,
    pub recipients: Vec<String>,
    /// The content (a MIME entity), when decrypted.
    pub content: Option<Vec<u8>>,
    pub detail: Option<String>,
}

/// Decrypts the enveloped-data or authEnveloped-data in `ber` with the first of `keys` it was
/// encrypted to.
pub fn decrypt(ber: &[u8], keys: &Keyring) -> Decrypted {
    let env = match envelope(ber) {
        Ok(e) => e,
        Err(e) => {
            return Decrypted {
                status: EncryptionStatus::Failed,
                recipients: Vec::new(),
                content: None,
                detail: Some(format!("The encrypted message is unreadable: {e}.")),
            }
        }
    };
    let recipients = env.recipients.iter().flat_map(describe).collect();
    let mut failure = None;
    for ri in &env.recipients {
        for key in keys.smime_keys() {
            let cek = match ri {
                RecipientInfo::Ktri(k) if ktri_is_for(k, key) => ktri_unwrap(k, key, &env.content),
                RecipientInfo::Kari(k) => match kari_encrypted_key(k, key) {
                    Some(enc) => kari_unwrap(k, enc, key),
                    None => continue,
                },
                _ => continue,
            };
            let result = cek.and_then(|cek| decrypt_content(&env.content, env.auth.as_ref(), &cek));
            match result {
                Ok(content) => {
                    return Decrypted {
                        status: EncryptionStatus::Decrypted,
                        recipients,
                        content: Some(content),
                        detail: None,
                    }
                }
                Err(e) => failure = Some(e),
            }
        }
    }
    match failure {
        Some(e) => Decrypted {
            status: EncryptionStatus::Failed,
            recipients,
            content: None,
            detail: Some(format!("A key given fits, but the message could not be decrypted: {e}.")),
        },
        None => Decrypted { status: EncryptionStatus::NoKey, recipients, content: None, detail: None },
    }
}

fn ktri_is_for(k: &KeyTransRecipientInfo, key: &SmimeKey) -> bool {
    match &k.rid {
        RecipientIdentifier::IssuerAndSerialNumber(isn) => key.cert.is_issuer_serial(&isn.issuer, &isn.serial_number),
        RecipientIdentifier::SubjectKeyIdentifier(ski) => {
            key.cert.subject_key_id().as_deref() == Some(ski.0.as_bytes())
        }
    }
}

/// The content-encryption key by RSA key transport.
fn ktri_unwrap(
    k: &KeyTransRecipientInfo,
    key: &SmimeKey,
    content: &EncryptedContentInfo,
) -> Result<Vec<u8>, CryptoError> {
    let PrivateKey::Rsa(rsa_key) = &key.key else {
        return Err(CryptoError::new("it was encrypted to an RSA key, and the key given is not one"));
    };
    let mut rng = rsa::rand_core::OsRng;
    let wrapped = k.enc_key.as_bytes();
    match k.key_enc_alg.oid {
        algorithms::RSA_ENCRYPTION => {
            let want = content_key_len(&content.content_enc_alg.oid)?;
            match rsa_key.decrypt_blinded(&mut rng, rsa::Pkcs1v15Encrypt, wrapped) {
                Ok(cek) if cek.len() == want => Ok(cek),
                // RFC 3218 §2.3.2: carry on with a key that cannot work.
                _ => {
                    let mut random = vec![0u8; want];
                    rsa::rand_core::RngCore::fill_bytes(&mut rng, &mut random);
                    Ok(random)
                }
            }
        }
        RSAES_OAEP => {
            let hash = oaep_hash(&k.key_enc_alg)?;
            let padding = match hash {
                algorithms::DigestAlg::Sha1 => rsa::Oaep::new::<sha1::Sha1>(),
                algorithms::DigestAlg::Sha224 => rsa::Oaep::new::<sha2_10::Sha224>(),
                algorithms::DigestAlg::Sha256 => rsa::Oaep::new::<sha2_10::Sha256>(),
                algorithms::DigestAlg::Sha384 => rsa::Oaep::new::<sha2_10::Sha384>(),
                algorithms::DigestAlg::Sha512 => rsa::Oaep::new::<sha2_10::Sha512>(),
            };
            rsa_key
                .decrypt_blinded(&mut rng, padding, wrapped)
                .map_err(|_| CryptoError::new("the key could not be unwrapped"))
        }
        other => Err(CryptoError::new(format!("its key transport {other} is not supported"))),
    }
}

/// `RSAES-OAEP-params` (RFC 4055 §4.1): the hash; the mask is MGF1 with the same hash, and no label.
#[derive(Clone, Debug, der::Sequence)]
struct OaepParams {
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    hash: Option<spki::AlgorithmIdentifierOwned>,
    #[asn1(context_specific = "1", tag_mode = "EXPLICIT", optional = "true")]
    mask_gen: Option<spki::AlgorithmIdentifierOwned>,
    #[asn1(context_specific = "2", tag_mode = "EXPLICIT", optional = "true")]
    label: Option<spki::AlgorithmIdentifierOwned>,
}

fn oaep_hash(alg: &spki::AlgorithmIdentifierOwned) -> Result<algorithms::DigestAlg, CryptoError> {
    let Some(params) = &alg.parameters else { return Ok(algorithms::DigestAlg::Sha1) };
    let p = params.decode_as::<OaepParams>().map_err(|_| CryptoError::new("its OAEP parameters are unreadable"))?;
    if p.label.is_some() {
        return Err(CryptoError::new("its OAEP label is not supported"));
    }
    let hash = p.hash.map_or(Ok(algorithms::DigestAlg::Sha1), |h| algorithms::DigestAlg::from_oid(&h.oid))?;
    if let Some(mgf) = p.mask_gen {
        let inner = mgf.parameters.and_then(|a| a.decode_as::<spki::AlgorithmIdentifierOwned>().ok());
        if inner.map(|a| algorithms::DigestAlg::from_oid(&a.oid)) != Some(Ok(hash)) {
            return Err(CryptoError::new("its OAEP mask uses another hash, which is not supported"));
        }
    }
    Ok(hash)
}

/// The encrypted key a key-agreement recipient info holds for `key`, if any.
fn kari_encrypted_key<'a>(k: &'a KeyAgreeRecipientInfo, key: &SmimeKey) -> Option<&'a OctetString> {
    k.recipient_enc_keys
        .iter()
        .find(|r| match &r.rid {
            KeyAgreeRecipientIdentifier::IssuerAndSerialNumber(isn) => {
                key.cert.is_issuer_serial(&isn.issuer, &isn.serial_number)
            }
            KeyAgreeRecipientIdentifier::RKeyId(id) => {
                key.cert.subject_key_id().as_deref() == Some(id.subject_key_identifier.0.as_bytes())
            }
        })
        .map(|r| &r.enc_key)
}

/// The content-encryption key by ECDH key agreement (RFC 5753 §3.1.2).
fn kari_unwrap(k: &KeyAgreeRecipientInfo, wrapped: &OctetString, key: &SmimeKey) -> Result<Vec<u8>, CryptoError> {
    let OriginatorIdentifierOrKey::OriginatorKey(originator) = &k.originator else {
        return Err(CryptoError::new("its sender's key is not in the message (static-static ECDH is not supported)"));
    };
    let theirs = originator.public_key.as_bytes().ok_or(CryptoError::new("the sender's key is unreadable"))?;
    let curve = originator.algorithm.parameters.as_ref().and_then(|p| p.decode_as::<Oid>().ok());
    let shared: Vec<u8> = match (&key.key, curve) {
        (PrivateKey::P256(secret), Some(P256) | None) => {
            let public = p256::PublicKey::from_sec1_bytes(theirs)
                .map_err(|_| CryptoError::new("the sender's key is not on P-256"))?;
            p256::ecdh::diffie_hellman(secret.to_nonzero_scalar(), public.as_affine()).raw_secret_bytes().to_vec()
        }
        (PrivateKey::P384(secret), Some(P384) | None) => {
            let public = p384::PublicKey::from_sec1_bytes(theirs)
                .map_err(|_| CryptoError::new("the sender's key is not on P-384"))?;
            p384::ecdh::diffie_hellman(secret.to_nonzero_scalar(), public.as_affine()).raw_secret_bytes().to_vec()
        }
        _ => return Err(CryptoError::new("it was encrypted by key agreement on a curve the key given is not on")),
    };
    let wrap = k
        .key_enc_alg
        .parameters
        .as_ref()
        .and_then(|p| p.decode_as::<spki::AlgorithmIdentifierOwned>().ok())
        .ok_or(CryptoError::new("its key wrap algorithm is unreadable"))?;
    let kek_len = match wrap.oid {
        AES128_WRAP => 16,
        AES192_WRAP => 24,
        AES256_WRAP => 32,
        other => return Err(CryptoError::new(format!("its key wrap {other} is not supported"))),
    };
    let shared_info = EccCmsSharedInfo {
        key_info: spki::AlgorithmIdentifierOwned { oid: wrap.oid, parameters: None },
        entity_u_info: k.ukm.clone(),
        supp_pub_info: OctetString::new((kek_len as u32 * 8).to_be_bytes().to_vec())
            .map_err(|_| CryptoError::new("the KDF input could not be made"))?,
    }
    .to_der()
    .map_err(|_| CryptoError::new("the KDF input could not be made"))?;
    let mut kek = vec![0u8; kek_len];
    let kdf = match k.key_enc_alg.oid {
        ECDH_SHA1_KDF => ansi_x963_kdf::derive_key_into::<sha1_11::Sha1>(&shared, &shared_info, &mut kek),
        ECDH_SHA224_KDF => ansi_x963_kdf::derive_key_into::<sha2::Sha224>(&shared, &shared_info, &mut kek),
        ECDH_SHA256_KDF | ECDH_COFACTOR_SHA256_KDF => {
            ansi_x963_kdf::derive_key_into::<sha2::Sha256>(&shared, &shared_info, &mut kek)
        }
        ECDH_SHA384_KDF | ECDH_COFACTOR_SHA384_KDF => {
            ansi_x963_kdf::derive_key_into::<sha2::Sha384>(&shared, &shared_info, &mut kek)
        }
        ECDH_SHA512_KDF | ECDH_COFACTOR_SHA512_KDF => {
            ansi_x963_kdf::derive_key_into::<sha2::Sha512>(&shared, &shared_info, &mut kek)
        }
        other => return Err(CryptoError::new(format!("its key agreement {other} is not supported"))),
    };
    kdf.map_err(|_| CryptoError::new("the key-encryption key could not be derived"))?;
    let unwrapped = match kek_len {
        16 => aes_kw::KekAes128::new(kek.as_slice().into()).unwrap_vec(wrapped.as_bytes()),
        24 => aes_kw::KekAes192::new(kek.as_slice().into()).unwrap_vec(wrapped.as_bytes()),
        _ => aes_kw::KekAes256::new(kek.as_slice().into()).unwrap_vec(wrapped.as_bytes()),
    };
    unwrapped.map_err(|_| CryptoError::new("the key could not be unwrapped"))
}

/// The key length a content-encryption algorithm takes.
fn content_key_len(alg: &Oid) -> Result<usize, CryptoError> {
    Ok(match *alg {
        AES128_CBC | AES128_GCM => 16,
        AES192_CBC | AES192_GCM | DES_EDE3_CBC => 24,
        AES256_CBC | AES256_GCM => 32,
        other => return Err(CryptoError::new(format!("its content encryption {other} is not supported"))),
    })
}

/// The content decrypted with `cek`.
fn decrypt_content(
    eci: &EncryptedContentInfo,
    auth: Option<&(Vec<u8>, Vec<u8>)>,
    cek: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    let alg = &eci.content_enc_alg;
    if content_key_len(&alg.oid)? != cek.len() {
        return Err(CryptoError::new("the content key has the wrong length"));
    }
    let data = eci
        .encrypted_content
        .as_ref()
        .ok_or(CryptoError::new("the encrypted content is not in the message"))?
        .as_bytes()
        .to_vec();
    let params = alg.parameters.as_ref().ok_or(CryptoError::new("its content encryption has no parameters"))?;
    let wrong = |_| CryptoError::new("the content did not decrypt (a wrong key, or damaged data)");
    match alg.oid {
        AES128_CBC | AES192_CBC | AES256_CBC | DES_EDE3_CBC => {
            if auth.is_some() {
                return Err(CryptoError::new("an authenticated envelope with a mode that authenticates nothing"));
            }
            let iv = params.decode_as::<OctetString>().map_err(|_| CryptoError::new("its IV is unreadable"))?;
            let iv = iv.as_bytes();
            match (alg.oid, iv.len()) {
                (AES128_CBC, 16) => cbc::Decryptor::<aes::Aes128>::new(cek.into(), iv.into())
                    .decrypt_padded_vec_mut::<Pkcs7>(&data)
                    .map_err(wrong),
                (AES192_CBC, 16) => cbc::Decryptor::<aes::Aes192>::new(cek.into(), iv.into())
                    .decrypt_padded_vec_mut::<Pkcs7>(&data)
                    .map_err(wrong),
                (AES256_CBC, 16) => cbc::Decryptor::<aes::Aes256>::new(cek.into(), iv.into())
                    .decrypt_padded_vec_mut::<Pkcs7>(&data)
                    .map_err(wrong),
                (DES_EDE3_CBC, 8) => cbc::Decryptor::<des::TdesEde3>::new(cek.into(), iv.into())
                    .decrypt_padded_vec_mut::<Pkcs7>(&data)
                    .map_err(wrong),
                _ => Err(CryptoError::new("its IV has the wrong length")),
            }
        }
        AES128_GCM | AES192_GCM | AES256_GCM => {
            let (aad, tag) = auth.ok_or(CryptoError::new("AES-GCM outside an authenticated envelope"))?;
            let gcm = params
                .decode_as::<GcmParameters>()
                .map_err(|_| CryptoError::new("its GCM parameters are unreadable"))?;
            if gcm.nonce.as_bytes().len() != 12 || usize::from(gcm.icv_len) != tag.len() || tag.len() != 16 {
                return Err(CryptoError::new("its GCM nonce or tag size is not the usual one (12 and 16 bytes)"));
            }
            gcm_open(alg.oid, cek, gcm.nonce.as_bytes(), aad, data, tag)
        }
        other => Err(CryptoError::new(format!("its content encryption {other} is not supported"))),
    }
}

fn gcm_open(
    alg: Oid,
    key: &[u8],
    nonce: &[u8],
    aad: &[u8],
    mut data: Vec<u8>,
    tag: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    use aes_gcm::aead::AeadInPlace;
    let nonce = aes_gcm::Nonce::from_slice(nonce);
    let tag = aes_gcm::Tag::from_slice(tag);
    let opened = match alg {
        AES128_GCM => aes_gcm::Aes128Gcm::new(key.into()).decrypt_in_place_detached(nonce, aad, &mut data, tag),
        AES192_GCM => aes_gcm::AesGcm::<aes::Aes192, aes_gcm::aead::consts::U12>::new(key.into())
            .decrypt_in_place_detached(nonce, aad, &mut data, tag),
        _ => aes_gcm::Aes256Gcm::new(key.into()).decrypt_in_place_detached(nonce, aad, &mut data, tag),
    };
    opened.map_err(|_| CryptoError::new("the content did not decrypt, or was changed (its tag does not match)"))?;
    Ok(data)
}
