//! Labels: the tags a message carries, from Gmail (`X-Gmail-Labels`), the `Keywords`,
//! `X-Keywords`, mutt's `X-Label` and Thunderbird's `X-Mozilla-Keys` headers, and Maildir keyword letters named by the
//! folder's `dovecot-keywords` file; and what a label is known by ([`key`]), nested labels
//! included. Pure functions, no I/O but the keyword file.
//!
//! Gmail writes `X-Gmail-Labels` as a comma-separated list: a label holding a comma or a quote in
//! double quotes (a backslash escaping a quote inside), and the whole value as RFC 2047
//! encoded-words as soon as one label is not ASCII (`=?UTF-8?Q?Archived,Otev=C5=99en=C3=A9?=`),
//! commas and quotes inside the words, folded across lines with a label split between two words.
//! So the value is decoded first and split after. A nested label is its path, `/` between the
//! names (`Clients/Acme (2019)/Invoices`), as Gmail's IMAP shows it: the label sits below
//! `Clients/Acme (2019)`, which sits below `Clients`.

use std::path::Path;

/// Labels named by a message's header field `name`, whose value is given as it stands in the
/// message (folded, encoded-words undecoded: mail-parser's raw value of a field it does not
/// know). `X-Gmail-Labels`, `Keywords`, `X-Keywords`, `X-Label`: a comma-separated list, quoted
/// labels and encoded-words as Gmail writes them (see above; mutt writes `X-Label` as the user
/// typed it, one label unless it holds commas); `X-Mozilla-Keys`: space-separated. `imap`: the
/// header is one Dovecot or UW-IMAP keeps in an mbox ([`keeps_imap_state`]), whose `X-Keywords`
/// are IMAP keywords, separated by spaces (`X-Keywords: $Forwarded Project`), commas taken too.
pub(crate) fn header_labels(name: &str, value: &str, imap: bool, out: &mut Vec<String>) {
    let mut end = value.len().min(crate::limits::MAX_LABEL_FIELD);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    let value = &value[..end];
    match name.to_ascii_lowercase().as_str() {
        "x-keywords" if imap => {
            let value = super::words::decode_header_text(value);
            out.extend(
                value.split(|c: char| c.is_whitespace() || c == ',').filter(|k| !k.is_empty()).map(str::to_string),
            );
        }
        "x-gmail-labels" | "keywords" | "x-keywords" | "x-label" => {
            out.extend(split_list(&super::words::decode_header_text(value)));
        }
        "x-mozilla-keys" => out.extend(value.split_whitespace().map(mozilla_tag)),
        _ => {}
    }
}

/// Whether labels are read from a header field of this name.
pub(crate) fn is_label_field(name: &str) -> bool {
    ["x-gmail-labels", "keywords", "x-keywords", "x-label", "x-mozilla-keys"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}

/// The labels of a header's fields, given as each field's name and its value's bytes as they stand
/// (see [`header_labels`]), in order; `X-Keywords` read as IMAP keywords in a header
/// [`keeps_imap_state`] marks. Not tidied.
pub(crate) fn fields_labels<'f>(fields: impl Iterator<Item = (&'f str, &'f [u8])> + Clone) -> Vec<String> {
    let mut out = Vec::new();
    let mut labelled = fields.clone().filter(|(name, _)| is_label_field(name)).peekable();
    if labelled.peek().is_none() {
        return out;
    }
    let imap = fields.clone().any(|(name, _)| keeps_imap_state(name));
    for (name, value) in labelled {
        header_labels(name, &String::from_utf8_lossy(value), imap, &mut out);
    }
    out
}

/// Whether a header field of this name marks a header Dovecot or UW-IMAP's c-client keeps an mbox
/// message's IMAP state in (its `X-UID`, or the folder's `X-IMAPbase` on the first message): their
/// `X-Keywords` are space-separated.
pub(crate) fn keeps_imap_state(name: &str) -> bool {
    name.eq_ignore_ascii_case("x-uid") || name.eq_ignore_ascii_case("x-imapbase")
}

/// Thunderbird's five built-in tags are stored by number.
fn mozilla_tag(key: &str) -> String {
    match key {
        "$label1" => "Important".into(),
        "$label2" => "Work".into(),
        "$label3" => "Personal".into(),
        "$label4" => "To Do".into(),
        "$label5" => "Later".into(),
        other => other.to_string(),
    }
}

/// A comma-separated list, an item in double quotes holding commas, and a quote inside written
/// either `\"` or, as a CSV writer doubles it, `""`.
fn split_list(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            '"' => quoted = !quoted,
            '\\' if quoted => cur.extend(chars.next()),
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

/// What a label is known by, in the label tree, on its page, in its counts and in `label:`
/// alike: its path in lower case, without quotes, white space around its names or empty names
/// (`Clients / Acme` and `clients/acme` are one label), as a folder's path is known.
pub(crate) fn key(label: &str) -> String {
    let names: Vec<String> =
        label.split('/').map(|s| s.replace('"', "").trim().to_lowercase()).filter(|s| !s.is_empty()).collect();
    names.join("/")
}

/// The keys a label is found by: its own and those of the labels above it (`clients`,
/// `clients/acme` and `clients/acme/invoices` for `Clients/Acme/Invoices`), so that `label:clients`
/// finds every message filed below `Clients`.
pub(crate) fn terms(label: &str) -> Vec<String> {
    let key = key(label);
    let mut out: Vec<String> = key.match_indices('/').map(|(i, _)| key[..i].to_string()).collect();
    if !key.is_empty() {
        out.push(key);
    }
    out
}

/// Adds `more` to a message's `labels` (those its file or folder gives it), tidied as any are.
pub(crate) fn add_labels(labels: &mut Vec<String>, more: Vec<String>) {
    if !more.is_empty() {
        labels.extend(more);
        tidy_labels(labels);
    }
}

/// Tidies a message's labels: control characters out, at most [`crate::limits::MAX_LABELS`] of
/// them, each at most 100 characters, no two with one [`key`], none whose key is empty (`/`), in
/// the order given.
pub(crate) fn tidy_labels(labels: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    labels.retain_mut(|l| {
        *l = l.chars().filter(|c| !c.is_control()).take(100).collect::<String>().trim().to_string();
        let k = key(l);
        !k.is_empty() && seen.insert(k)
    });
    labels.truncate(crate::limits::MAX_LABELS);
}

/// The keyword labels of a Maildir message: the lower-case letters of its flags (`:2,Sab`), named
/// by the `dovecot-keywords` file of its Maildir (`0 $Work` names `a`). Letters the file does not
/// name are left out: a bare letter means nothing to a reader.
pub(crate) fn maildir_keywords(path: &Path, flags: &str, names: &dyn Fn(&Path) -> Vec<String>) -> Vec<String> {
    let letters: Vec<usize> = flags.bytes().filter(u8::is_ascii_lowercase).map(|b| usize::from(b - b'a')).collect();
    if letters.is_empty() {
        return Vec::new();
    }
    let Some(maildir) = path.parent().and_then(Path::parent) else { return Vec::new() };
    let names = names(maildir);
    letters.into_iter().filter_map(|i| names.get(i).filter(|n| !n.is_empty()).cloned()).collect()
}

/// Reads a Maildir's `dovecot-keywords` (`<number> <name>` per line) into names by number.
pub(crate) fn read_keyword_names(maildir: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(maildir.join("dovecot-keywords")) else { return Vec::new() };
    let mut names = Vec::new();
    for line in text.lines().take(26) {
        let Some((n, name)) = line.split_once(' ') else { continue };
        let Ok(n) = n.parse::<usize>() else { continue };
        if n < 26 {
            if names.len() <= n {
                names.resize(n + 1, String::new());
            }
            names[n] = name.trim().to_string();
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_come_from_each_clients_header() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("X-Gmail-Labels", "Archived,Category Updates,Opened", &["Archived", "Category Updates", "Opened"]),
            ("X-Gmail-Labels", r#"Inbox,"Work, 2017",Important"#, &["Inbox", "Work, 2017", "Important"]),
            ("X-Gmail-Labels", r#""Say \"hi\"",x"#, &[r#"Say "hi""#, "x"]),
            ("X-Gmail-Labels", r#""Quote ""inside"" label",x"#, &[r#"Quote "inside" label"#, "x"]),
            ("X-Gmail-Labels", r#""",x,"a""""#, &["x", r#"a""#]),
            ("Keywords", "budget , travel", &["budget", "travel"]),
            ("X-Label", "to do, Queensrÿche", &["to do", "Queensrÿche"]),
            ("X-Mozilla-Keys", "$label1 project-x", &["Important", "project-x"]),
            ("Subject", "not labels", &[]),
        ];
        for (name, value, want) in cases {
            let mut out = Vec::new();
            header_labels(name, value, false, &mut out);
            assert_eq!(out, *want, "{name}: {value}");
        }
        // As Dovecot writes them in an mbox (padded with spaces, to be rewritten in place).
        let mut out = Vec::new();
        header_labels("X-Keywords", "$Forwarded Project      ", true, &mut out);
        assert_eq!(out, ["$Forwarded", "Project"]);
        let mut labels = vec!["Work".to_string(), "work".into(), "".into(), "a\u{7}b".into(), " / ".into()];
        tidy_labels(&mut labels);
        assert_eq!(labels, ["Work", "ab"]);
    }

    /// `X-Gmail-Labels` as Gmail writes it once a label is not ASCII: the whole list as
    /// encoded-words, commas and quotes inside them, folded with a label split across two words;
    /// given as mail-parser hands back a field it does not know (folding kept, nothing decoded).
    #[test]
    fn gmail_labels_are_read_as_gmail_writes_them() {
        let cases: &[(&str, &[&str])] = &[
            (
                "=?UTF-8?Q?Archived,Category_Updates,Otev=C5=99en=C3=A9,=E2=98=AF,takeout?=",
                &["Archived", "Category Updates", "Otevřené", "☯", "takeout"],
            ),
            (
                "=?UTF-8?Q?Archived,Clients/Acme_(2019)/Inv?=\r\n =?UTF-8?Q?oices,\"Lists/dev@example.org,_old\",=C5=A0kola?=",
                &["Archived", "Clients/Acme (2019)/Invoices", "Lists/dev@example.org, old", "Škola"],
            ),
            ("=?UTF-8?B?SW5ib3gsQ2Fmw6ksV29yay9LdW5kZW4=?=", &["Inbox", "Café", "Work/Kunden"]),
            ("Inbox,\r\n Parent/Child/Grandchild", &["Inbox", "Parent/Child/Grandchild"]),
        ];
        for (value, want) in cases {
            let mut out = Vec::new();
            header_labels("X-Gmail-Labels", value, false, &mut out);
            assert_eq!(out, *want, "{value}");
        }
    }

    #[test]
    fn a_nested_label_is_found_by_itself_and_the_labels_above_it() {
        assert_eq!(key(" Clients / Acme (2019)/ "), "clients/acme (2019)");
        assert_eq!(key("\"Work, 2017\""), "work, 2017");
        assert_eq!(terms("Clients/Acme/Invoices"), ["clients", "clients/acme", "clients/acme/invoices"]);
        assert_eq!(terms("Inbox"), ["inbox"]);
        assert!(terms("/").is_empty());
    }

    #[test]
    fn maildir_keywords_are_named_by_the_keyword_file() {
        let names = |_: &Path| vec!["$Work".to_string(), "Travel".into()];
        assert_eq!(maildir_keywords(Path::new("/m/.Lists/cur/1:2,Sab"), "Sab", &names), ["$Work", "Travel"]);
        assert_eq!(maildir_keywords(Path::new("/m/cur/1:2,Sc"), "Sc", &names), Vec::<String>::new());
        assert!(maildir_keywords(Path::new("/m/cur/1:2,S"), "S", &names).is_empty());
    }
}
