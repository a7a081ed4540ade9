//! Labels: the tags a message carries, from Gmail Takeout (`X-Gmail-Labels`), the `Keywords`,
//! `X-Keywords` and Thunderbird `X-Mozilla-Keys` headers, and Maildir keyword letters named by the
//! folder's `dovecot-keywords` file. Pure functions, no I/O but the keyword file.

use std::path::Path;

/// Labels named by a message's header fields: `X-Gmail-Labels` and `Keywords`/`X-Keywords`
/// (comma-separated, Gmail quotes a label holding a comma), `X-Mozilla-Keys` (space-separated).
pub fn header_labels(name: &str, value: &str, out: &mut Vec<String>) {
    match name.to_ascii_lowercase().as_str() {
        "x-gmail-labels" | "keywords" | "x-keywords" => out.extend(split_commas(value)),
        "x-mozilla-keys" => out.extend(value.split_whitespace().map(mozilla_tag)),
        _ => {}
    }
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

fn split_commas(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' if quoted => cur.extend(chars.next()),
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

/// Tidies a message's labels: control characters out, at most [`crate::limits::MAX_LABELS`] of
/// them, each at most 100 characters, no repeats (ignoring case), in the order given.
pub fn tidy_labels(labels: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    labels.retain_mut(|l| {
        *l = l.chars().filter(|c| !c.is_control()).take(100).collect::<String>().trim().to_string();
        !l.is_empty() && seen.insert(l.to_lowercase())
    });
    labels.truncate(crate::limits::MAX_LABELS);
}

/// The keyword labels of a Maildir message: the lower-case letters of its flags (`:2,Sab`), named
/// by the `dovecot-keywords` file of its Maildir (`0 $Work` names `a`). Letters the file does not
/// name are left out: a bare letter means nothing to a reader.
pub fn maildir_keywords(path: &Path, flags: &str, names: &dyn Fn(&Path) -> Vec<String>) -> Vec<String> {
    let letters: Vec<usize> = flags.bytes().filter(u8::is_ascii_lowercase).map(|b| usize::from(b - b'a')).collect();
    if letters.is_empty() {
        return Vec::new();
    }
    let Some(maildir) = path.parent().and_then(Path::parent) else { return Vec::new() };
    let names = names(maildir);
    letters.into_iter().filter_map(|i| names.get(i).filter(|n| !n.is_empty()).cloned()).collect()
}

/// Reads a Maildir's `dovecot-keywords` (`<number> <name>` per line) into names by number.
pub fn read_keyword_names(maildir: &Path) -> Vec<String> {
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
            ("Keywords", "budget , travel", &["budget", "travel"]),
            ("X-Mozilla-Keys", "$label1 project-x", &["Important", "project-x"]),
            ("Subject", "not labels", &[]),
        ];
        for (name, value, want) in cases {
            let mut out = Vec::new();
            header_labels(name, value, &mut out);
            assert_eq!(out, *want, "{name}: {value}");
        }
        let mut labels = vec!["Work".to_string(), "work".into(), "".into(), "a\u{7}b".into()];
        tidy_labels(&mut labels);
        assert_eq!(labels, ["Work", "ab"]);
    }

    #[test]
    fn maildir_keywords_are_named_by_the_keyword_file() {
        let names = |_: &Path| vec!["$Work".to_string(), "Travel".into()];
        assert_eq!(maildir_keywords(Path::new("/m/.Lists/cur/1:2,Sab"), "Sab", &names), ["$Work", "Travel"]);
        assert_eq!(maildir_keywords(Path::new("/m/cur/1:2,Sc"), "Sc", &names), Vec::<String>::new());
        assert!(maildir_keywords(Path::new("/m/cur/1:2,S"), "S", &names).is_empty());
    }
}
