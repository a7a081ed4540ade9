//! OpenPGP decryption (RFC 9580 §5.1, §5.13): whom a message is encrypted to, from its session
//! key packets, and its content with the secret keys the user gave, by rPGP. A message without an
//! integrity check (the old SED packet) is refused, as rPGP refuses it.

use pgp::composed::{Esk, Message, SignedSecretKey};
use pgp::types::KeyDetails;

use super::{hex_upper, read_out, Opened};
use crate::crypto::status::EncryptionStatus;
use crate::crypto::Keyring;

/// The outcome of decrypting one OpenPGP message.
#[derive(Debug, Clone)]
pub struct Decrypted {
    pub status: EncryptionStatus,
    pub recipients: Vec<String>,
    /// The content and the signatures over it, when decrypted.
    pub opened: Option<Opened>,
    pub detail: Option<String>,
}

/// The recipients the session key packets name: key ids (or fingerprints), or a passphrase.
pub(crate) fn describe_recipients(esk: &[Esk]) -> Vec<String> {
    esk.iter()
        .map(|e| match e {
            Esk::PublicKeyEncryptedSessionKey(p) => match (p.id(), p.fingerprint()) {
                (Ok(id), _) if id.as_ref().iter().all(|&b| b == 0) => "an anonymous recipient".to_string(),
                (Ok(id), _) => format!("key {}", hex_upper(id.as_ref())),
                (_, Ok(Some(fp))) => format!("key {}", hex_upper(fp.as_bytes())),
                _ => "an anonymous recipient".to_string(),
            },
            Esk::SymKeyEncryptedSessionKey(_) => "a passphrase".to_string(),
        })
        .collect()
}

/// Whether a session key packet is for `key` (its primary key or a subkey), or for anyone.
fn is_for(esk: &Esk, key: &SignedSecretKey) -> bool {
    let Esk::PublicKeyEncryptedSessionKey(p) = esk else { return false };
    let ids = std::iter::once((key.primary_key.legacy_key_id(), key.primary_key.fingerprint()))
        .chain(key.secret_subkeys.iter().map(|s| (s.key.legacy_key_id(), s.key.fingerprint())));
    match (p.id(), p.fingerprint()) {
        (Ok(id), _) if id.as_ref().iter().all(|&b| b == 0) => true,
        (Ok(id), _) => ids.into_iter().any(|(k, _)| k == *id),
        (_, Ok(Some(fp))) => ids.into_iter().any(|(_, f)| f == *fp),
        _ => true,
    }
}

/// Decrypts the message in `data` (armored or binary) with the secret keys in `keys`.
pub fn decrypt(data: &[u8], keys: &Keyring) -> Decrypted {
    let failed = |recipients, detail: String| Decrypted {
        status: EncryptionStatus::Failed,
        recipients,
        opened: None,
        detail: Some(detail),
    };
    let msg = match Message::from_reader(data) {
        Ok((m, _)) => m,
        Err(e) => return failed(Vec::new(), format!("The encrypted message is unreadable: {e}.")),
    };
    let Message::Encrypted { esk, .. } = &msg else {
        return failed(Vec::new(), "The message is not encrypted.".into());
    };
    let recipients = describe_recipients(esk);
    let candidates: Vec<&SignedSecretKey> =
        keys.pgp_secret_keys().iter().filter(|k| esk.iter().any(|e| is_for(e, k))).collect();
    if candidates.is_empty() {
        return Decrypted { status: EncryptionStatus::NoKey, recipients, opened: None, detail: None };
    }
    let pw = keys.pgp_passphrase();
    let passwords = vec![&pw; candidates.len()];
    match msg.decrypt_with_keys(passwords, candidates) {
        Ok(plain) => match read_out(plain) {
            Ok(opened) => {
                Decrypted { status: EncryptionStatus::Decrypted, recipients, opened: Some(opened), detail: None }
            }
            Err(e) => failed(recipients, format!("It was decrypted, but its content is unreadable: {e}.")),
        },
        Err(e) => failed(recipients, format!("A key given fits, but the message could not be decrypted: {e}.")),
    }
}
