//! Address header fields written back as one line each, as RFC 5322 writes them, so that what
//! the pages, the API and the exports show can be split into addresses again: names with specials
//! quoted, groups closed and followed by a comma, and an address that only an encoded word's
//! decoded text holds shown as the name it is, never as a sender.
//!
//! Two misreadings of malformed lists are undone here. A comment standing alone where a mailbox
//! would be (`To: unlisted-recipients:; (no To-header on input)`, as sendmail writes it) is white
//! space (RFC 5322 §3.2.2), not a recipient, and is left out. Two mailboxes written without the
//! comma between them (`Bob <bob@example.com> Bobby <bobby@example.com>`), which mail-parser reads
//! as one address glued from both that exists nowhere, are read as the two they are, as enmime
//! reads them ([`glued`], [`commas_mended`]). And a sender hidden as Mailman's archives
//! (pipermail) hide every sender, `user at example.com (Name)`, which reads as a name without an
//! address, is the mailbox it stands for ([`unhidden`]): mail imported from a list's archive is
//! then found by `from:user@example.com` and shows its sender's name.

use std::borrow::Cow;

use mail_parser::{Addr, Address};

/// An address header as one line, as RFC 5322 writes one (its control characters left for the
/// caller to clean): `Name <addr>` or `addr`,
/// comma-separated, a group as `Name: members;`, a name with any of RFC 5322's specials quoted
/// (`"Doe, John" <jd@example.com>`), so that a script can split the line again. `field` is the
/// field's own bytes: an address found only in an encoded-word's decoded text (`From:
/// =?utf-8?q?Boss_=3Cboss=40corp.com=3E?=`) is not one (RFC 2047 §5: decoded text is never
/// taken apart as an address), and is shown as the quoted name it is. Written into one string
/// (it runs for every address header of every message).
pub(super) fn line(a: &Address<'_>, field: &[u8]) -> String {
    let mut out = String::new();
    // Each address written as such stands outside the field's encoded-words (RFC 2047 §5 allows
    // no `@` in one of a phrase): only when there are fewer `@` there than addresses can one have
    // come out of an encoded word, and only then is each looked for.
    let with_address = match a {
        Address::List(list) => list.iter().filter(|a| a.address.is_some()).count(),
        Address::Group(groups) => groups.iter().flat_map(|g| &g.addresses).filter(|a| a.address.is_some()).count(),
    };
    let plain = if memchr::memmem::find(field, b"=?").is_some() { outside_encoded_words(field) } else { Vec::new() };
    // mail-parser decodes each encoded-word of a name alone: a character split between two comes
    // out as replacement characters, mended here from the field's own words.
    let names = || match a {
        Address::List(list) => list.iter().filter_map(|a| a.name.as_deref()).any(|n| n.contains('\u{FFFD}')),
        Address::Group(groups) => groups.iter().any(|g| {
            g.name
                .as_deref()
                .into_iter()
                .chain(g.addresses.iter().filter_map(|a| a.name.as_deref()))
                .any(|n| n.contains('\u{FFFD}'))
        }),
    };
    let split = if !plain.is_empty() && names() {
        super::words::split_characters(&String::from_utf8_lossy(field))
    } else {
        Vec::new()
    };
    let whole = field;
    let field = if with_address > memchr::memchr_iter(b'@', &plain).count() { &plain[..] } else { &[][..] };
    let found = Found { plain: field, split: &split, field: whole };
    match a {
        Address::List(list) => push_addresses(&mut out, list, &found),
        Address::Group(groups) => {
            let mut first = true;
            for g in groups {
                // What is left of a list after its groups holds only a comment: nothing to write.
                if g.name.is_none() && g.addresses.iter().all(|a| found.comment_alone(a)) {
                    continue;
                }
                if !first {
                    out.push_str(", ");
                }
                first = false;
                match &g.name {
                    Some(n) => {
                        push_name(&mut out, found.mended(n).trim());
                        out.push_str(": ");
                        push_addresses(&mut out, &g.addresses, &found);
                        out.push(';');
                    }
                    None => push_addresses(&mut out, &g.addresses, &found),
                }
            }
        }
    }
    out
}

/// Whether mail-parser read two mailboxes written without a comma between them as one: their
/// addresses glued into one that holds two `@` (`bob@example.combobby@example.com`).
pub(super) fn glued(a: &Address<'_>) -> bool {
    let glued =
        |a: &Addr<'_>| a.address.as_deref().is_some_and(|a| memchr::memchr_iter(b'@', a.as_bytes()).nth(1).is_some());
    match a {
        Address::List(list) => list.iter().any(glued),
        Address::Group(groups) => groups.iter().flat_map(|g| &g.addresses).any(glued),
    }
}

/// An address field's bytes with a comma after each `>` that ends a mailbox and that another
/// mailbox follows without one (`Bob <bob@x> Bobby <bobby@x>`); `None` when none is missing. Quoted
/// strings and comments are passed over: a `>` in them ends nothing.
pub(super) fn commas_mended(field: &[u8]) -> Option<Vec<u8>> {
    let (mut quoted, mut escaped, mut comments, mut angle) = (false, false, 0usize, false);
    let mut missing = Vec::new();
    for (i, &b) in field.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' if quoted || comments > 0 => escaped = true,
            b'"' if comments == 0 => quoted = !quoted,
            _ if quoted => {}
            b'(' => comments += 1,
            b')' if comments > 0 => comments -= 1,
            _ if comments > 0 => {}
            b'<' => angle = true,
            b'>' if angle => {
                angle = false;
                let next = field[i + 1..].iter().find(|b| !b.is_ascii_whitespace());
                if next.is_some_and(|n| !matches!(n, b',' | b';' | b'(')) {
                    missing.push(i + 1);
                }
            }
            _ => {}
        }
    }
    if missing.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(field.len() + missing.len());
    let mut from = 0;
    for at in missing {
        out.extend_from_slice(&field[from..at]);
        out.push(b',');
        from = at;
    }
    out.extend_from_slice(&field[from..]);
    Some(out)
}

/// A field of one sender written as Mailman's archives write it, `user at example.com` followed
/// by at most a comment (the name), with its `@` back: `user@example.com (Name)`. `None` for
/// anything else; a field holding an `@` or a `<` is never such a one.
pub(super) fn unhidden(field: &[u8]) -> Option<Vec<u8>> {
    if memchr::memchr2(b'@', b'<', field).is_some() {
        return None;
    }
    let text = std::str::from_utf8(field).ok()?.trim_start();
    let (local, rest) = text.split_once(" at ")?;
    let atext = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~.".contains(&b);
    if local.is_empty() || !local.bytes().all(atext) {
        return None;
    }
    let rest = rest.trim_start();
    let end = rest.find(|c: char| c.is_whitespace() || c == '(').unwrap_or(rest.len());
    let (domain, after) = rest.split_at(end);
    let label = |l: &str| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if domain.split('.').count() < 2 || !domain.split('.').all(label) {
        return None;
    }
    let comment = after.trim();
    let named = comment.starts_with('(') && comment.ends_with(')');
    if !comment.is_empty() && !named {
        return None;
    }
    Some(format!("{local}@{domain}{after}").into_bytes())
}

/// An address field's bytes with each encoded-word (`=?…?=`) made a space: what it writes as
/// plain text.
fn outside_encoded_words(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut rest = field;
    while let Some(start) = memchr::memmem::find(rest, b"=?") {
        out.extend_from_slice(&rest[..start]);
        let Some(end) = memchr::memmem::find(&rest[start + 2..], b"?=") else {
            rest = &rest[start..];
            break;
        };
        out.push(b' ');
        rest = &rest[start + 2 + end + 2..];
    }
    out.extend_from_slice(rest);
    out
}

/// What [`line()`] found in the field's own bytes.
struct Found<'a> {
    /// The field's plain text when an address may have come out of an encoded word, else empty.
    plain: &'a [u8],
    /// Characters split between encoded-words: as mail-parser decoded them, and whole.
    split: &'a [(String, String)],
    /// The field's own bytes.
    field: &'a [u8],
}

impl Found<'_> {
    /// Whether mail-parser made a mailbox of a comment standing alone (a name without an address,
    /// written in the field as `(name)`), which is white space, not a mailbox.
    fn comment_alone(&self, a: &Addr<'_>) -> bool {
        let (Some(name), None) = (a.name.as_deref(), a.address.as_deref()) else { return false };
        let name = name.trim().as_bytes();
        memchr::memmem::find_iter(self.field, name).any(|at| {
            self.field[..at].trim_ascii_end().ends_with(b"(")
                && self.field[at + name.len()..].trim_ascii_start().starts_with(b")")
        })
    }

    /// A display name with the characters mail-parser split made whole.
    fn mended<'n>(&self, name: &'n str) -> Cow<'n, str> {
        let mut name = Cow::Borrowed(name);
        for (alone, joined) in self.split {
            if name.contains(alone.as_str()) {
                name = Cow::Owned(name.replace(alone.as_str(), joined));
            }
        }
        name
    }
}

/// Appends each address as `Name <addr>` (or the address, or the name, alone), comma-separated.
fn push_addresses(out: &mut String, list: &[mail_parser::Addr<'_>], found: &Found<'_>) {
    let encoded = !found.plain.is_empty();
    for (i, addr) in list.iter().filter(|a| !found.comment_alone(a)).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let name = addr.name.as_deref().map(|n| found.mended(n));
        let name = name.as_deref().map(str::trim).filter(|n| !n.is_empty());
        match (name, addr.address.as_deref()) {
            (name, Some(a)) if encoded && !contains_ignoring_case(found.plain, a.as_bytes()) => {
                let shown = match name {
                    Some(n) => format!("{n} <{a}>"),
                    None => a.to_string(),
                };
                quote_name(out, &shown);
            }
            (Some(n), Some(a)) => {
                push_name(out, n);
                out.push_str(" <");
                out.push_str(a);
                out.push('>');
            }
            (None, Some(a)) => out.push_str(a),
            (Some(n), None) => push_name(out, n),
            (None, None) => {}
        }
    }
}

/// A display name as RFC 5322 §3.4 writes it: as it is when it is a phrase of atoms, quoted when
/// it holds a special that would split it (a comma, a colon, an `@`, brackets…; a dot, which the
/// obsolete phrase allows, stays as written: `J. Smith`).
fn push_name(out: &mut String, name: &str) {
    if name
        .bytes()
        .any(|b| matches!(b, b'(' | b')' | b'<' | b'>' | b'[' | b']' | b':' | b';' | b'@' | b'\\' | b',' | b'"'))
    {
        quote_name(out, name);
    } else {
        out.push_str(name);
    }
}

/// `name` as a quoted string, its quotes and backslashes escaped.
fn quote_name(out: &mut String, name: &str) {
    out.push('"');
    for c in name.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

fn contains_ignoring_case(hay: &[u8], needle: &[u8]) -> bool {
    // As written, nearly always: mail-parser keeps an address's case.
    !needle.is_empty()
        && (memchr::memmem::find(hay, needle).is_some()
            || hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle)))
}
