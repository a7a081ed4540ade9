//! Signed and encrypted layers (S/MIME, RFC 8551; OpenPGP, RFC 3156 and inline) found in a parsed
//! message, and what the parse stage does with them.
//!
//! What is only signed is *unwrapped* here, so that the page, the part tree, `/part/`, search and
//! thumbnails see its content like any other: the entity an opaque S/MIME signature carries is
//! read as a message and its parts grafted under the `application/pkcs7-mime` part; the text of a
//! clear-signed or signed-only OpenPGP message is grafted as a text part under the part that held
//! it; a `multipart/signed` already has its content as its first part. Each layer is recorded as a
//! [`Seal`] with the exact bytes its check needs, and its machinery (the signature part, the
//! blob) is kept out of the attachments. Nothing is verified here: that needs the user's trust
//! anchors, and runs in the view stage on demand.
//!
//! What is encrypted is recorded with its recipients and left closed. [`decrypt`] opens it, with
//! the user's keys, into a copy of the message: the view stage calls it when a message is looked
//! at (the copy is held only in memory), the archive only with `--index-decrypted`.
//!
//! Layers nest (signed inside encrypted inside signed): each grafted entity is read by
//! `parse::mime` like any message, which finds its own layers, down to
//! [`MAX_SECURITY_LAYERS`].

use bytes::Bytes;

use super::mime;
use crate::crypto::openpgp;
use crate::crypto::smime::{self, Kind as CmsKind};
use crate::crypto::{EncryptionStatus, Keyring, Protocol};
use crate::limits::{MAX_DEPTH, MAX_PARTS, MAX_SECURITY_LAYERS};
use crate::model::{Body, Decryption, Message, Part, PartIdx, Seal, SealKind};

/// What kind of layer a part is.
enum Layer {
    Detached(Protocol),
    PgpMime,
    Cms,
    Inline,
}

fn layer(msg: &Message, idx: PartIdx) -> Option<Layer> {
    let part = &msg.parts[idx];
    let protocol = part.param("protocol").map(|p| p.trim().to_ascii_lowercase());
    match part.content_type.as_str() {
        "multipart/signed" if part.children.len() >= 2 => match protocol.as_deref() {
            Some("application/pkcs7-signature" | "application/x-pkcs7-signature") => {
                Some(Layer::Detached(Protocol::Smime))
            }
            Some("application/pgp-signature") => Some(Layer::Detached(Protocol::OpenPgp)),
            _ => None,
        },
        "multipart/encrypted"
            if part.children.len() >= 2 && protocol.as_deref() == Some("application/pgp-encrypted") =>
        {
            Some(Layer::PgpMime)
        }
        "application/pkcs7-mime" | "application/x-pkcs7-mime" if matches!(part.body, Body::Binary(_)) => {
            Some(Layer::Cms)
        }
        "application/octet-stream"
            if matches!(part.body, Body::Binary(_))
                && part.filename.as_deref().is_some_and(|f| f.to_ascii_lowercase().ends_with(".p7m")) =>
        {
            Some(Layer::Cms)
        }
        "text/plain" => match &part.body {
            Body::Text(t) if t.contains("-----BEGIN PGP ") => Some(Layer::Inline),
            _ => None,
        },
        _ => None,
    }
}

/// Finds the signed and encrypted layers among the parts of `out` (a message read `layers`
/// layers deep, enclosed `depth` deep), unwraps what is only signed, and records every layer.
pub(super) fn unwrap(out: &mut Message, depth: usize, parts_left: &mut usize, layers: usize) {
    let count = out.parts.len();
    for idx in 0..count {
        let Some(kind) = layer(out, idx) else { continue };
        if layers >= MAX_SECURITY_LAYERS {
            let reason =
                format!("it lies inside more than {MAX_SECURITY_LAYERS} signed or encrypted layers, and is not opened");
            let protocol = match kind {
                Layer::Detached(p) => p,
                Layer::Cms => Protocol::Smime,
                Layer::PgpMime | Layer::Inline => Protocol::OpenPgp,
            };
            out.seals.push(Seal {
                protocol,
                part: idx,
                content: None,
                hidden: Vec::new(),
                kind: SealKind::Unreadable { reason },
            });
            continue;
        }
        match kind {
            Layer::Detached(protocol) => detached(out, idx, protocol),
            Layer::PgpMime => pgp_mime(out, idx),
            Layer::Cms => cms(out, idx, depth, parts_left, layers),
            Layer::Inline => inline(out, idx),
        }
    }
}

/// A `multipart/signed`: its first part as the signature covers it, its second the signature.
fn detached(out: &mut Message, idx: PartIdx, protocol: Protocol) {
    let part = &out.parts[idx];
    let (content, signature_part) = (part.children[0], part.children[1]);
    let signature = out.parts[signature_part].shared_bytes();
    let range = part.raw_range.clone();
    let body = if range.start <= range.end && range.end <= out.raw.len() { out.raw.slice(range) } else { Bytes::new() };
    let signed = part.param("boundary").and_then(|b| first_body_part(&body, b)).map(|signed| {
        // Already CRLF throughout (as sent): the message's own bytes, shared, not copied.
        if has_bare_lf(signed) {
            canonical_line_ends(signed)
        } else {
            body.slice_ref(signed)
        }
    });
    let kind = match signed {
        Some(signed) => SealKind::Detached { signed, signature },
        None => SealKind::Unreadable { reason: "its signed part could not be found in the message".into() },
    };
    out.seals.push(Seal { protocol, part: idx, content: Some(content), hidden: vec![signature_part], kind });
}

/// The first body part of a multipart body exactly as sent: after the first delimiter line, up to
/// the line break before the next (RFC 2046 §5.1.1; RFC 1847 §2.1 signs exactly these bytes).
/// Delimiters are told as the parts a reader is shown are cut ([`super::boundary::cut`]: whole
/// lines only), so that what is checked is what is shown: a line that merely begins with the
/// boundary is content, and is covered by the signature.
pub(crate) fn first_body_part<'a>(body: &'a [u8], boundary: &str) -> Option<&'a [u8]> {
    let cut = super::boundary::cut(body, 0..body.len(), boundary.as_bytes());
    let first = cut.parts.first()?;
    // The part ends at a delimiter of its own; one that runs to the end was cut short.
    (cut.parts.len() > 1 || cut.closed).then(|| &body[first.clone()])
}

/// Whether `bytes` has a line feed without a carriage return before it.
fn has_bare_lf(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'\n', bytes).any(|i| i == 0 || bytes[i - 1] != b'\r')
}

/// Line ends as signatures cover them (RFC 8551 §3.1.1, RFC 3156 §5): bare LF (as mbox and
/// Maildir files often store mail) made CRLF.
fn canonical_line_ends(bytes: &[u8]) -> Bytes {
    if !has_bare_lf(bytes) {
        return Bytes::copy_from_slice(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 32);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' && (i == 0 || bytes[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    Bytes::from(out)
}

/// A PGP/MIME encrypted message (RFC 3156 §4): its second part holds the OpenPGP message.
fn pgp_mime(out: &mut Message, idx: PartIdx) {
    let (control, data_part) = (out.parts[idx].children[0], out.parts[idx].children[1]);
    let data = out.parts[data_part].shared_bytes();
    let (recipients, outcome) = match openpgp::kind(&data) {
        Ok(openpgp::Kind::Encrypted(r)) => (r, None),
        Ok(openpgp::Kind::Readable) => (Vec::new(), None),
        Err(e) => (Vec::new(), Some(Decryption { status: EncryptionStatus::Failed, detail: Some(e.to_string()) })),
    };
    out.seals.push(Seal {
        protocol: Protocol::OpenPgp,
        part: data_part,
        content: None,
        hidden: vec![control, data_part],
        kind: SealKind::Encrypted { data, recipients, outcome },
    });
}

/// An S/MIME `application/pkcs7-mime` part (or a `.p7m` file): signed-data is unwrapped,
/// enveloped-data recorded.
fn cms(out: &mut Message, idx: PartIdx, depth: usize, parts_left: &mut usize, layers: usize) {
    let data = out.parts[idx].shared_bytes();
    let declared =
        matches!(out.parts[idx].content_type.as_str(), "application/pkcs7-mime" | "application/x-pkcs7-mime");
    let seal = |kind, content, hidden| Seal { protocol: Protocol::Smime, part: idx, content, hidden, kind };
    match smime::kind(&data) {
        Ok(CmsKind::Signed) => match smime::opaque_content(&data) {
            Ok(inner) => {
                let root = graft_content(out, idx, Bytes::from(inner), depth, parts_left, layers + 1);
                out.seals.push(seal(SealKind::Opaque { cms: data }, root, vec![idx]));
            }
            Err(e) => {
                let reason = format!("the signed content could not be read: {e}");
                out.seals.push(seal(SealKind::Unreadable { reason }, None, Vec::new()));
            }
        },
        Ok(CmsKind::Enveloped | CmsKind::AuthEnveloped) => {
            let (recipients, outcome) = match smime::recipients(&data) {
                Ok(r) => (r, None),
                Err(e) => {
                    (Vec::new(), Some(Decryption { status: EncryptionStatus::Failed, detail: Some(e.to_string()) }))
                }
            };
            out.seals.push(seal(SealKind::Encrypted { data, recipients, outcome }, None, vec![idx]));
        }
        Ok(CmsKind::Compressed) if declared => {
            let reason = "it is CMS compressed-data, which mailshelf does not open".to_string();
            out.seals.push(seal(SealKind::Unreadable { reason }, None, Vec::new()));
        }
        Err(e) if declared => {
            let reason = format!("the S/MIME part is unreadable: {e}");
            out.seals.push(seal(SealKind::Unreadable { reason }, None, Vec::new()));
        }
        _ => {}
    }
}

/// A text part with an armored OpenPGP block: a clear-signed text or a signed-only message is
/// opened at once (the text shown is the grafted part's); an encrypted one is recorded.
fn inline(out: &mut Message, idx: PartIdx) {
    let Body::Text(text) = &out.parts[idx].body else { return };
    let text = text.clone();
    if let Some(block) = openpgp::find_cleartext(&text) {
        let armored = Bytes::copy_from_slice(block.armored.as_bytes());
        match openpgp::cleartext_text(block.armored) {
            Ok(inner) => {
                let shown = format!("{}{}{}", block.before, inner, block.after);
                let child = graft_text(out, idx, shown);
                out.seals.push(Seal {
                    protocol: Protocol::OpenPgp,
                    part: idx,
                    content: child,
                    hidden: Vec::new(),
                    kind: SealKind::Cleartext { armored },
                });
            }
            Err(e) => out.seals.push(Seal {
                protocol: Protocol::OpenPgp,
                part: idx,
                content: None,
                hidden: Vec::new(),
                kind: SealKind::Unreadable { reason: e.to_string() },
            }),
        }
        return;
    }
    let Some(block) = openpgp::find_message(&text) else { return };
    let data = Bytes::copy_from_slice(block.armored.as_bytes());
    match openpgp::kind(&data) {
        Ok(openpgp::Kind::Encrypted(recipients)) => out.seals.push(Seal {
            protocol: Protocol::OpenPgp,
            part: idx,
            content: None,
            hidden: vec![idx],
            kind: SealKind::Encrypted { data, recipients, outcome: None },
        }),
        Ok(openpgp::Kind::Readable) => match openpgp::open(&data) {
            Ok(opened) => {
                let shown = format!("{}{}{}", block.before, String::from_utf8_lossy(&opened.content), block.after);
                let child = graft_text(out, idx, shown);
                out.seals.push(Seal {
                    protocol: Protocol::OpenPgp,
                    part: idx,
                    content: child,
                    hidden: Vec::new(),
                    kind: SealKind::Inline {
                        content: Bytes::from(opened.content),
                        signatures: opened.signatures.into_iter().map(Bytes::from).collect(),
                    },
                });
            }
            Err(e) => out.seals.push(Seal {
                protocol: Protocol::OpenPgp,
                part: idx,
                content: None,
                hidden: Vec::new(),
                kind: SealKind::Unreadable { reason: e.to_string() },
            }),
        },
        // Not an OpenPGP message after all: the text stays as it is.
        Err(_) => {}
    }
}

/// Whether `bytes` start like a MIME entity (a header field), rather than a bare document.
fn looks_like_entity(bytes: &[u8]) -> bool {
    let line = bytes.split(|&b| b == b'\n').next().unwrap_or(&[]);
    match line.iter().position(|&b| b == b':') {
        Some(colon) => colon > 0 && line[..colon].iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-'),
        None => false,
    }
}

/// Grafts the entity `content` under part `at`: read as a message when it is one, else (a signed
/// document, `report.pdf.p7m`) as one file named after the wrapper. Returns the grafted root.
fn graft_content(
    out: &mut Message,
    at: PartIdx,
    content: Bytes,
    depth: usize,
    parts_left: &mut usize,
    layers: usize,
) -> Option<PartIdx> {
    if looks_like_entity(&content) {
        let inner = mime::parse_entity(content, depth + 1, parts_left, layers)?;
        return graft(out, at, inner);
    }
    if *parts_left == 0 {
        out.truncated = true;
        return None;
    }
    *parts_left -= 1;
    let wrapper = &out.parts[at];
    let name = wrapper
        .filename
        .as_deref()
        .and_then(|f| f.strip_suffix(".p7m").or_else(|| f.strip_suffix(".P7M")))
        .filter(|f| !f.is_empty() && !f.eq_ignore_ascii_case("smime"))
        .map(str::to_string);
    let content_type = name
        .as_deref()
        .and_then(|n| mime_guess::from_path(n).first())
        .map_or_else(|| "application/octet-stream".to_string(), |m| m.essence_str().to_string());
    let mut part = child_of(wrapper, content_type);
    part.filename = name;
    part.disposition = Some("attachment".into());
    part.body = Body::Binary(content);
    Some(push_child(out, at, part))
}

/// Grafts a text part holding `text` under part `at`.
fn graft_text(out: &mut Message, at: PartIdx, text: String) -> Option<PartIdx> {
    let mut part = child_of(&out.parts[at], "text/plain".into());
    part.charset = Some("utf-8".into());
    part.params = out.parts[at].params.iter().filter(|(n, _)| n == "format" || n == "delsp").cloned().collect();
    part.filename = out.parts[at].filename.clone();
    part.disposition = out.parts[at].disposition.clone();
    part.body = Body::Text(text);
    Some(push_child(out, at, part))
}

/// A new part to go under `parent`: no bytes in the message's own source (its `raw_range` is
/// empty), its section filled in by [`push_child`].
fn child_of(parent: &Part, content_type: String) -> Part {
    let at = parent.raw_range.start;
    Part {
        section: String::new(),
        parent: None,
        children: Vec::new(),
        content_type,
        declared_type: true,
        charset: None,
        start: None,
        params: Vec::new(),
        content_id: None,
        content_location: None,
        location: None,
        base: String::new(),
        related_scope: None,
        filename: None,
        disposition: None,
        body: Body::Binary(Bytes::new()),
        raw_range: at..at,
        damaged: false,
        transfer_encoding: None,
        external: None,
    }
}

fn push_child(out: &mut Message, at: PartIdx, mut part: Part) -> PartIdx {
    part.section = format!("{}.1", out.parts[at].section);
    part.parent = Some(at);
    let idx = out.parts.len();
    out.parts.push(part);
    out.parts[at].children.push(idx);
    idx
}

/// Grafts the parts of `inner` (an entity read from inside a layer) under part `at` of `out`,
/// with their seals; returns the root's index. Sections continue the wrapper's: the root is
/// `<at>.1`, what lay at `n` in the entity is at `<at>.1.n`.
fn graft(out: &mut Message, at: PartIdx, inner: Message) -> Option<PartIdx> {
    if inner.parts.is_empty() {
        return None;
    }
    // Protected headers (draft-ietf-lamps-header-protection, `protected-headers="v1"` on the
    // entity's root): what the layer carries replaces what the outside shows ("Subject
    // Unavailable", "..."). Only the root of the protected entity counts.
    if inner.parts[0].param("protected-headers").is_some() {
        let s = &inner.summary;
        let o = &mut out.summary;
        o.subject = s.subject.clone().or(o.subject.take());
        o.from = s.from.clone().or(o.from.take());
        o.to = s.to.clone().or(o.to.take());
        o.cc = s.cc.clone().or(o.cc.take());
        if s.date.is_some() {
            (o.date, o.timestamp) = (s.date.clone(), s.timestamp);
        }
    }
    out.cuts_of(&inner);
    let base = out.parts.len();
    let prefix = format!("{}.1", out.parts[at].section);
    let empty = out.parts[at].raw_range.start;
    for (i, mut part) in inner.parts.into_iter().enumerate() {
        part.section = if i == 0 { prefix.clone() } else { format!("{prefix}.{}", part.section) };
        part.parent = Some(part.parent.map_or(at, |p| p + base));
        part.children.iter_mut().for_each(|c| *c += base);
        // Its bytes are the entity's, not the message's: `raw_range` cannot point at them.
        part.raw_range = empty..empty;
        out.parts.push(part);
    }
    out.parts[at].children.push(base);
    out.origin.notices.extend(inner.origin.notices);
    for mut seal in inner.seals {
        seal.part += base;
        seal.content = seal.content.map(|c| c + base);
        seal.hidden.iter_mut().for_each(|h| *h += base);
        out.seals.push(seal);
    }
    Some(base)
}

/// Whether the message (or one it encloses) has an encrypted layer not yet opened.
pub fn has_closed_layers(msg: &Message) -> bool {
    msg.seals.iter().any(|s| matches!(s.kind, SealKind::Encrypted { outcome: None, .. }))
        || msg.nested().any(|(_, m)| has_closed_layers(m))
}

/// A copy of `msg` with every encrypted layer (its own, and those of the messages it encloses)
/// opened with `keys` as far as they open: decrypted content grafted in like signed content, the
/// outcome of each attempt recorded in its seal. `None` when there is nothing to open.
pub fn decrypt(msg: &Message, keys: &Keyring) -> Option<Message> {
    if !has_closed_layers(msg) {
        return None;
    }
    let mut out = msg.clone();
    let mut parts_left = MAX_PARTS.saturating_sub(count_parts(&out));
    open_layers(&mut out, keys, 0, &mut parts_left);
    Some(out)
}

fn count_parts(msg: &Message) -> usize {
    msg.parts.len() + msg.nested().map(|(_, m)| count_parts(m)).sum::<usize>()
}

fn open_layers(msg: &mut Message, keys: &Keyring, depth: usize, parts_left: &mut usize) {
    let mut changed = false;
    // Layers found in what was just decrypted are appended: they are opened in turn.
    let mut i = 0;
    while i < msg.seals.len() {
        if let SealKind::Encrypted { data, outcome: None, .. } = &msg.seals[i].kind {
            let (data, at, protocol) = (data.clone(), msg.seals[i].part, msg.seals[i].protocol);
            let layers = layers_around(msg, at) + 1;
            let (outcome, root) = if layers > MAX_SECURITY_LAYERS {
                let detail = format!(
                    "it lies inside more than {MAX_SECURITY_LAYERS} signed or encrypted layers, and is not opened"
                );
                (Decryption { status: EncryptionStatus::Failed, detail: Some(detail) }, None)
            } else {
                match protocol {
                    Protocol::Smime => open_smime(msg, at, &data, keys, depth, parts_left, layers),
                    Protocol::OpenPgp => open_openpgp(msg, at, &data, keys, depth, parts_left, layers),
                }
            };
            changed |= root.is_some();
            let seal = &mut msg.seals[i];
            seal.content = root.or(seal.content);
            if let SealKind::Encrypted { outcome: o, .. } = &mut seal.kind {
                *o = Some(outcome);
            }
        }
        i += 1;
    }
    if depth < MAX_DEPTH {
        for part in &mut msg.parts {
            if let Body::Message(inner) = &mut part.body {
                if has_closed_layers(inner) {
                    open_layers(inner, keys, depth + 1, parts_left);
                }
            }
        }
    }
    if changed {
        let (html, text) = (msg.html_body, msg.text_body);
        mime::choose_bodies(msg, html, text);
        msg.lookups = Default::default();
    }
}

/// How many signed or encrypted layers enclose part `idx`.
fn layers_around(msg: &Message, idx: PartIdx) -> usize {
    std::iter::once(idx).chain(msg.ancestors(idx)).filter(|&a| msg.seals.iter().any(|s| s.content == Some(a))).count()
}

fn open_smime(
    msg: &mut Message,
    at: PartIdx,
    data: &[u8],
    keys: &Keyring,
    depth: usize,
    parts_left: &mut usize,
    layers: usize,
) -> (Decryption, Option<PartIdx>) {
    let d = smime::decrypt(data, keys);
    let root = d.content.and_then(|c| graft_content(msg, at, Bytes::from(c), depth, parts_left, layers));
    (Decryption { status: d.status, detail: d.detail }, root)
}

fn open_openpgp(
    msg: &mut Message,
    at: PartIdx,
    data: &[u8],
    keys: &Keyring,
    depth: usize,
    parts_left: &mut usize,
    layers: usize,
) -> (Decryption, Option<PartIdx>) {
    let d = openpgp::decrypt(data, keys);
    let outcome = Decryption { status: d.status, detail: d.detail };
    let Some(opened) = d.opened else { return (outcome, None) };
    let content = Bytes::from(opened.content);
    let root = match &msg.parts[at].body {
        // Inline PGP: the text around the block stays, the block becomes what it said.
        Body::Text(text) => {
            let shown = match openpgp::find_message(text) {
                Some(b) => format!("{}{}{}", b.before, String::from_utf8_lossy(&content), b.after),
                None => String::from_utf8_lossy(&content).into_owned(),
            };
            graft_text(msg, at, shown)
        }
        _ => graft_content(msg, at, content.clone(), depth, parts_left, layers),
    };
    if !opened.signatures.is_empty() {
        msg.seals.push(Seal {
            protocol: Protocol::OpenPgp,
            part: at,
            content: root,
            hidden: Vec::new(),
            kind: SealKind::Inline { content, signatures: opened.signatures.into_iter().map(Bytes::from).collect() },
        });
    }
    (outcome, root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_body_part_is_cut_exactly() {
        type Case<'a> = (&'a str, &'a [u8], Option<&'a [u8]>);
        let cases: &[Case<'_>] = &[
            (
                "crlf",
                b"preamble\r\n--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b\r\nsig\r\n--b--\r\n",
                Some(b"Content-Type: text/plain\r\n\r\nhi"),
            ),
            ("lf", b"--b\nA: 1\n\nx\n--b\nsig\n--b--\n", Some(b"A: 1\n\nx")),
            (
                "boundary inside a line is not one",
                b"--b\nA: 1\n\nsee --b here\n--b\nsig\n",
                Some(b"A: 1\n\nsee --b here"),
            ),
            (
                "a line beginning with the boundary is content",
                b"--b\r\nA: 1\r\n\r\nx\r\n--bX\r\nunsigned\r\n--b\r\nsig\r\n--b--\r\n",
                Some(b"A: 1\r\n\r\nx\r\n--bX\r\nunsigned"),
            ),
            ("transport padding after a delimiter", b"--b \nA: 1\n\nx\n--b\t\nsig\n", Some(b"A: 1\n\nx")),
            ("no second delimiter", b"--b\nA: 1\n", None),
            ("no delimiter", b"nothing", None),
            ("empty part", b"--b\n\n--b\n", Some(b"")),
        ];
        for (name, body, want) in cases {
            assert_eq!(first_body_part(body, "b"), *want, "{name}");
        }
    }

    #[test]
    fn line_ends_become_crlf() {
        assert_eq!(&canonical_line_ends(b"a\nb\r\nc\n")[..], b"a\r\nb\r\nc\r\n");
        assert_eq!(&canonical_line_ends(b"\n")[..], b"\r\n");
        assert_eq!(&canonical_line_ends(b"a\r\n")[..], b"a\r\n");
    }

    #[test]
    fn entities_are_told_from_documents() {
        assert!(looks_like_entity(b"Content-Type: text/plain\r\n\r\nhi"));
        assert!(!looks_like_entity(b"%PDF-1.4\n"));
        assert!(!looks_like_entity(b": x"));
    }
}
