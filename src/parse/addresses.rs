//! Address header fields written back as one line each, as RFC 5322 writes them, so that what
//! the pages, the API and the exports show can be split into addresses again: names with specials
//! quoted, groups closed and followed by a comma, and an address that only an encoded word's
//! decoded text holds shown as the name it is, never as a sender.

use std::borrow::Cow;

use mail_parser::Address;

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
    let field = if with_address > memchr::memchr_iter(b'@', &plain).count() { &plain[..] } else { &[][..] };
    let found = Found { plain: field, split: &split };
    match a {
        Address::List(list) => push_addresses(&mut out, list, &found),
        Address::Group(groups) => {
            for (i, g) in groups.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
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
}

impl Found<'_> {
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
    for (i, addr) in list.iter().enumerate() {
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
