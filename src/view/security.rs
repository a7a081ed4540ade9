//! What a message's signed and encrypted layers mean to its reader, worked out when it is looked
//! at: encrypted layers opened with the user's keys ([`Secrets::opened`], a decrypted copy of the message
//! held only in memory, in a bounded cache), signatures checked against the user's trust anchors
//! ([`Security`], in a bounded cache too). Nothing here is written anywhere: the index, the search
//! index and the database only ever see what parsing saw, unless `--index-decrypted` (see
//! [`crate::archive`]).
//!
//! The page, the print view and the PDF show one line above the body from this; the JSON
//! (`security`) carries it whole.

use std::sync::Arc;

use quick_cache::sync::Cache;

use crate::crypto::{
    address_of, openpgp, smime, Context, EncryptionReport, EncryptionStatus, Keyring, Protocol, SignatureReport,
    SignatureStatus,
};
use crate::index::{ContentHash, EntryId};
use crate::model::{Message, SealKind};

/// Decrypted messages kept (each is a whole message with its attachments).
const OPENED: usize = 16;

/// Signature reports kept.
const CHECKED: usize = 1024;

/// What a message's layers come to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Security {
    /// Every signature over what the message shows, outermost first.
    pub signatures: Vec<SignatureReport>,
    /// Its outermost encrypted layer, if it has one.
    pub encryption: Option<EncryptionReport>,
    /// Every encrypted layer (nested ones after the outermost).
    pub layers: Vec<EncryptionReport>,
}

impl Security {
    pub fn is_empty(&self) -> bool {
        self.signatures.is_empty() && self.encryption.is_none()
    }

    /// Whether the reader sees nothing of the message: an encrypted layer stayed closed.
    pub fn closed(&self) -> bool {
        self.layers.iter().any(|l| l.status != EncryptionStatus::Decrypted)
    }

    /// The line shown above the body: each signature's status in words, then the encryption.
    pub fn summary(&self) -> Vec<Line> {
        let mut lines: Vec<Line> = self.signatures.iter().map(Line::signature).collect();
        if let Some(e) = &self.encryption {
            lines.push(Line::encryption(e));
        }
        lines
    }
}

/// One line of the summary above a message's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// `valid`, `invalid`, …, or `decrypted`, `no-key`, `failed`: a class for its colour.
    pub status: &'static str,
    /// What it says (`Signed by Alice Signer <alice@example.org> — valid`).
    pub text: String,
    /// The sentence that explains it.
    pub detail: String,
    /// Label and value pairs shown one click away (the certificate, the key).
    pub facts: Vec<(&'static str, String)>,
}

impl Line {
    fn signature(r: &SignatureReport) -> Line {
        let who = match (&r.name, &r.signer) {
            (Some(n), Some(a)) => format!("{n} <{a}>"),
            (None, Some(a)) => a.clone(),
            (Some(n), None) => n.clone(),
            (None, None) => match &r.key_id {
                Some(k) => format!("key {k}"),
                None => "an unknown signer".to_string(),
            },
        };
        let status = match r.status {
            SignatureStatus::Valid => "valid",
            SignatureStatus::Invalid => "invalid: the content was changed",
            SignatureStatus::Untrusted => "not trusted",
            SignatureStatus::Expired => "certificate not valid when signed",
            SignatureStatus::UnknownKey => "no public key to check it",
            SignatureStatus::Error => "could not be checked",
        };
        let mut facts = vec![("Protocol", r.protocol.label().to_string())];
        if let Some(c) = &r.certificate {
            facts.push(("Subject", c.subject.clone()));
            facts.push(("Issuer", c.issuer.clone()));
            facts.push(("Serial", c.serial.clone()));
            facts.push(("Valid from", c.not_before.clone()));
            facts.push(("Valid until", c.not_after.clone()));
        }
        if let Some(k) = &r.key_id {
            facts.push(("Key", k.clone()));
        }
        if let Some(t) = &r.signed_at {
            facts.push(("Signed at", t.clone()));
        }
        match &r.only_part {
            None => Line {
                status: r.status.name(),
                text: format!("Signed by {who} — {status}"),
                detail: r.detail.clone(),
                facts,
            },
            // Said first, and never in a valid signature's colour: a text beside a signed part
            // must not borrow its signature.
            Some(section) => Line {
                status: "partial",
                text: format!(
                    "Only part {section} is signed, by {who} — {status}; the rest of the message is not signed"
                ),
                detail: r.detail.clone(),
                facts,
            },
        }
    }

    fn encryption(e: &EncryptionReport) -> Line {
        let text = match e.status {
            EncryptionStatus::Decrypted => format!("Encrypted ({}) — decrypted with your key", e.protocol.label()),
            EncryptionStatus::NoKey => format!(
                "This message is encrypted ({}) and none of the keys given opens it. It is for: {}",
                e.protocol.label(),
                if e.recipients.is_empty() {
                    "recipients it does not name".to_string()
                } else {
                    e.recipients.join("; ")
                }
            ),
            EncryptionStatus::Failed => {
                format!("This message is encrypted ({}) and could not be decrypted", e.protocol.label())
            }
        };
        let mut facts = vec![("Protocol", e.protocol.label().to_string())];
        facts.extend(e.recipients.iter().map(|r| ("Recipient", r.clone())));
        Line { status: e.status.name(), text, detail: e.detail.clone().unwrap_or_default(), facts }
    }
}

/// The caches of decrypted messages and checked signatures, and the keys they are made with.
pub struct Secrets {
    keys: Arc<Keyring>,
    /// Decrypted top-level messages, by the hash of the bytes they were read from.
    opened: Cache<ContentHash, Arc<Message>>,
    /// What a shown message's layers come to, by its entry and its bytes.
    checked: Cache<(EntryId, ContentHash), Arc<Security>>,
}

impl Secrets {
    pub fn new(keys: Arc<Keyring>) -> Secrets {
        Secrets { keys, opened: Cache::new(OPENED), checked: Cache::new(CHECKED) }
    }

    pub fn keys(&self) -> &Keyring {
        &self.keys
    }

    /// The decrypted copy of `top` (read from bytes hashing to `hash`), when it has encrypted layers
    /// and keys are given; from the cache when there. Blocking work.
    pub fn opened(&self, hash: ContentHash, top: &Message) -> Option<Arc<Message>> {
        if !self.keys.can_decrypt() || !crate::parse::secure::has_closed_layers(top) {
            return None;
        }
        if let Some(hit) = self.opened.get(&hash) {
            return Some(hit);
        }
        let opened = Arc::new(crate::parse::secure::decrypt(top, &self.keys)?);
        self.opened.insert(hash, Arc::clone(&opened));
        Some(opened)
    }

    /// What the layers of `msg` (the message shown, entry `id`, read from bytes hashing to
    /// `hash`) come to; from the cache when there. Blocking work.
    pub fn security(&self, id: EntryId, hash: ContentHash, msg: &Message) -> Arc<Security> {
        if msg.seals.is_empty() {
            return Arc::default();
        }
        if let Some(hit) = self.checked.get(&(id, hash)) {
            return hit;
        }
        let checked = Arc::new(check(msg, &self.keys, crate::view::now()));
        self.checked.insert((id, hash), Arc::clone(&checked));
        checked
    }
}

/// Whether what `seal` signs is all the message shows: every part the reader is shown (a leaf
/// with something in it, other than a layer's machinery) lies inside it, and a clear-signed
/// block has no text around it. A text beside a signed part, a list's footer after one, is not
/// signed, and must not look as if it were (the partial-signature spoofing of mail clients).
fn signs_all_shown(msg: &Message, seal: &crate::model::Seal) -> bool {
    use crate::model::Body;
    let signed = seal.content.unwrap_or(seal.part);
    let inside = |mut at: usize| loop {
        if at == signed || at == seal.part {
            return true;
        }
        match msg.parts[at].parent {
            Some(up) => at = up,
            None => return false,
        }
    };
    let machinery: std::collections::HashSet<usize> = msg.seals.iter().flat_map(|s| s.hidden.iter().copied()).collect();
    let shows_something = |p: &crate::model::Part| match &p.body {
        Body::Text(t) => !t.trim().is_empty(),
        Body::Multipart => false,
        _ => true,
    };
    let leaves_inside = msg
        .parts
        .iter()
        .enumerate()
        .filter(|(i, p)| p.children.is_empty() && !machinery.contains(i) && shows_something(p))
        .all(|(i, _)| inside(i));
    let block_alone = match (&seal.kind, &msg.parts[seal.part].body) {
        (SealKind::Cleartext { .. }, Body::Text(text)) => {
            openpgp::find_cleartext(text).is_none_or(|b| b.before.trim().is_empty() && b.after.trim().is_empty())
        }
        _ => true,
    };
    leaves_inside && block_alone
}

/// Checks every signature of `msg` and reports its encrypted layers, as of `now`.
pub fn check(msg: &Message, keys: &Keyring, now: i64) -> Security {
    let sender = msg.summary.from.as_deref().and_then(address_of);
    let ctx = Context { keys, sender: sender.as_deref(), date: msg.summary.timestamp, now };
    let mut out = Security::default();
    for seal in &msg.seals {
        let before = out.signatures.len();
        match &seal.kind {
            SealKind::Detached { signed, signature } => out.signatures.extend(match seal.protocol {
                Protocol::Smime => smime::verify(signature, Some(signed), &ctx),
                Protocol::OpenPgp => openpgp::verify_detached(signature, signed, &ctx),
            }),
            SealKind::Opaque { cms } => out.signatures.extend(smime::verify(cms, None, &ctx)),
            SealKind::Cleartext { armored } => {
                out.signatures.extend(openpgp::verify_cleartext(&String::from_utf8_lossy(armored), &ctx))
            }
            SealKind::Inline { content, signatures } => {
                for s in signatures {
                    out.signatures.extend(openpgp::verify_detached(s, content, &ctx));
                }
            }
            SealKind::Unreadable { reason } => out
                .signatures
                .push(SignatureReport::error(seal.protocol, format!("The signed part could not be opened: {reason}."))),
            SealKind::Encrypted { recipients, outcome, .. } => {
                let (status, detail) = match outcome {
                    Some(o) => (o.status, o.detail.clone()),
                    None => (EncryptionStatus::NoKey, None),
                };
                out.layers.push(EncryptionReport {
                    protocol: seal.protocol,
                    status,
                    recipients: recipients.clone(),
                    detail,
                });
            }
        }
        if out.signatures.len() > before && !signs_all_shown(msg, seal) {
            let section = msg.parts[seal.part].section.clone();
            for r in &mut out.signatures[before..] {
                r.only_part = Some(section.clone());
            }
        }
    }
    out.encryption = out.layers.first().cloned();
    out
}
