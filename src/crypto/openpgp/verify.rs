//! OpenPGP signature checks (RFC 9580 §5.2, RFC 3156 §5): each signature's issuer looked up among
//! the public keys the user gave (`--trust`, and the public halves of `--key`), the signature
//! checked by rPGP over the bytes it covers, then the key's validity at the time of signing
//! (created before, not expired, not revoked) and its user IDs against the sender's address.

use pgp::composed::{CleartextSignedMessage, Deserializable, DetachedSignature, SignedPublicKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::packet::{Signature, SignatureType};
use pgp::types::KeyDetails;

use super::hex_upper;
use crate::crypto::status::{Protocol, SignatureReport, SignatureStatus};
use crate::crypto::Context;
use crate::limits::MAX_SIGNERS;

/// Checks the detached signature(s) in `signature` (armored or binary) over `data` (the first
/// part of a `multipart/signed` as sent, or the literal data of an opened message).
pub fn verify_detached(signature: &[u8], data: &[u8], ctx: &Context<'_>) -> Vec<SignatureReport> {
    let parsed: Result<Vec<DetachedSignature>, String> = if signature.trim_ascii_start().starts_with(b"-----BEGIN") {
        DetachedSignature::from_armor_many(signature)
            .map_err(|e| e.to_string())
            .and_then(|(sigs, _)| sigs.take(MAX_SIGNERS).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string()))
    } else {
        DetachedSignature::from_bytes_many(signature)
            .map_err(|e| e.to_string())
            .and_then(|sigs| sigs.take(MAX_SIGNERS).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string()))
    };
    match parsed {
        Ok(sigs) if !sigs.is_empty() => sigs.iter().map(|s| check(&s.signature, data, ctx)).collect(),
        Ok(_) => vec![SignatureReport::error(Protocol::OpenPgp, "The signature part holds no signature.")],
        Err(e) => vec![SignatureReport::error(Protocol::OpenPgp, format!("The signature is unreadable: {e}."))],
    }
}

/// Checks the signatures of a clear-signed text (the whole armored block).
pub fn verify_cleartext(armored: &str, ctx: &Context<'_>) -> Vec<SignatureReport> {
    match CleartextSignedMessage::from_string(armored) {
        Ok((msg, _)) => {
            let text = msg.signed_text();
            let sigs = msg.signatures();
            if sigs.is_empty() {
                return vec![SignatureReport::error(Protocol::OpenPgp, "The clear-signed text carries no signature.")];
            }
            sigs.iter().take(MAX_SIGNERS).map(|s| check(s, text.as_bytes(), ctx)).collect()
        }
        Err(e) => vec![SignatureReport::error(Protocol::OpenPgp, format!("The clear-signed text is unreadable: {e}."))],
    }
}

/// One key of a certificate that a signature may have been made with.
enum Component<'a> {
    Primary(&'a SignedPublicKey),
    Subkey(&'a SignedPublicKey, &'a pgp::composed::SignedPublicSubKey),
}

fn find_key<'a>(sig: &Signature, keys: &'a [SignedPublicKey]) -> Option<Component<'a>> {
    let fingerprints = sig.issuer_fingerprint();
    let ids = sig.issuer_key_id();
    let named = |details: &dyn Fn() -> (pgp::types::Fingerprint, pgp::types::KeyId)| {
        let (fp, id) = details();
        fingerprints.iter().any(|f| **f == fp) || ids.iter().any(|i| **i == id)
    };
    for key in keys {
        if named(&|| (key.primary_key.fingerprint(), key.primary_key.legacy_key_id())) {
            return Some(Component::Primary(key));
        }
        for sub in &key.public_subkeys {
            if named(&|| (sub.key.fingerprint(), sub.key.legacy_key_id())) {
                return Some(Component::Subkey(key, sub));
            }
        }
    }
    None
}

/// The addresses and the first name of a certificate's user IDs (`Name <address>`), addresses in
/// lower case.
fn identities(key: &SignedPublicKey) -> (Vec<String>, Option<String>) {
    let mut emails = Vec::new();
    let mut name = None;
    for user in &key.details.users {
        let Some(uid) = user.id.as_str() else { continue };
        if let Some(a) = crate::crypto::address_of(uid) {
            emails.push(a);
        }
        if name.is_none() {
            let n = uid.split('<').next().unwrap_or("").trim();
            if !n.is_empty() && !n.contains('@') {
                name = Some(n.to_string());
            }
        }
    }
    (emails, name)
}

/// When a key component expires, if ever: its creation plus the expiration its newest binding
/// (or, for the primary key, user ID or direct) self-signature states.
fn expires(component: &Component<'_>) -> Option<i64> {
    let (created, sigs): (i64, Vec<&Signature>) = match component {
        Component::Primary(k) => (
            i64::from(k.primary_key.created_at().as_secs()),
            k.details.users.iter().flat_map(|u| &u.signatures).chain(&k.details.direct_signatures).collect(),
        ),
        Component::Subkey(_, s) => (i64::from(s.key.created_at().as_secs()), s.signatures.iter().collect()),
    };
    let newest = sigs
        .into_iter()
        .filter(|s| s.typ() != Some(SignatureType::SubkeyRevocation))
        .max_by_key(|s| s.created().map(|t| t.as_secs()))?;
    let d = newest.key_expiration_time()?;
    (d.as_secs() > 0).then(|| created + i64::from(d.as_secs()))
}

fn revoked(component: &Component<'_>) -> bool {
    match component {
        Component::Primary(k) => !k.details.revocation_signatures.is_empty(),
        Component::Subkey(k, s) => {
            !k.details.revocation_signatures.is_empty()
                || s.signatures.iter().any(|sig| sig.typ() == Some(SignatureType::SubkeyRevocation))
        }
    }
}

fn check(sig: &Signature, data: &[u8], ctx: &Context<'_>) -> SignatureReport {
    let mut report = SignatureReport::error(Protocol::OpenPgp, String::new());
    let fingerprint = sig.issuer_fingerprint().first().map(|f| hex_upper(f.as_bytes()));
    report.key_id = fingerprint.or_else(|| sig.issuer_key_id().first().map(|k| hex_upper(k.as_ref())));
    let signed_at = sig.created().map(|t| i64::from(t.as_secs()));
    report.signed_at = signed_at.map(|t| crate::dates::rfc3339(t, 0));
    if matches!(sig.hash_alg(), Some(HashAlgorithm::Md5 | HashAlgorithm::Ripemd160) | None) {
        report.detail = "The signature is made with a digest that is broken or unknown, and is not checked.".into();
        return report;
    }
    let Some(component) = find_key(sig, ctx.keys.pgp_public_keys()) else {
        report.status = SignatureStatus::UnknownKey;
        report.detail = match report.key_id.as_deref() {
            Some(k) => format!("No public key for {k} was given (--trust), so the signature cannot be checked."),
            None => "The signature names no key, so it cannot be checked.".to_string(),
        };
        return report;
    };
    let (key, verified) = match &component {
        Component::Primary(k) => (*k, sig.verify(&k.primary_key, data)),
        Component::Subkey(k, s) => (*k, sig.verify(&s.key, data)),
    };
    let (emails, name) = identities(key);
    report.signer = emails.first().cloned();
    report.name = name;
    report.key_id = Some(hex_upper(key.primary_key.fingerprint().as_bytes()));
    if verified.is_err() {
        report.status = SignatureStatus::Invalid;
        report.detail = "The content does not match the signature: it was changed after it was signed.".into();
        return report;
    }
    let at = signed_at.or(ctx.date).unwrap_or(ctx.now);
    let created = match &component {
        Component::Primary(k) => i64::from(k.primary_key.created_at().as_secs()),
        Component::Subkey(_, s) => i64::from(s.key.created_at().as_secs()),
    };
    let (status, detail) = if revoked(&component) {
        (SignatureStatus::Untrusted, "The content matches the signature, but its key has been revoked.".to_string())
    } else if at < created || expires(&component).is_some_and(|end| at > end) {
        (
            SignatureStatus::Expired,
            "The content matches the signature, but its key was not valid when it was signed.".to_string(),
        )
    } else {
        match ctx.sender {
            Some(s) if emails.iter().any(|e| e == s) => {
                (SignatureStatus::Valid, "The signature is valid, made with a key you trust.".to_string())
            }
            Some(s) => (
                SignatureStatus::Untrusted,
                format!(
                    "The signature is valid, but its key is for {}, not for the sender {s}.",
                    if emails.is_empty() { "no address".to_string() } else { emails.join(", ") }
                ),
            ),
            None => (
                SignatureStatus::Untrusted,
                "The signature is valid, but the message names no sender to compare its key with.".to_string(),
            ),
        }
    };
    report.status = status;
    report.detail = detail;
    report
}
