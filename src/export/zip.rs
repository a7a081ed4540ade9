//! A zip of one `.eml` (or `.msg`, `.mht`, …) file per message, each in its folder, streamed, with
//! names that are safe file names and unique within the zip.

use std::collections::HashSet;
use std::io::Write;

use super::Exported;
use crate::dates::zip_time;
use crate::index::Entry;
use crate::model::Message;
use crate::view::hidden_in_file_name;

/// A zip of one file per message, stored (not compressed: the bytes are the message's exactly and
/// cost no CPU to write), streamed with data descriptors so nothing is seeked or held. The zip's
/// central directory, written last, needs each file's name and offsets: the zip writer keeps 200–300
/// bytes a message until then (by the length of its name), and the names' hashes (to make them
/// unique) eight more.
pub(crate) struct ZipExport<W: Write> {
    zip: zip::ZipWriter<zip::write::StreamWriter<W>>,
    /// A keyed hash of each name given, in lower case: eight bytes a file where the names
    /// themselves would take a hundred and more (the zip writer keeps its own copy anyway). Two
    /// names of one hash make the second `… (2)`, which is all a collision can do.
    names: HashSet<u64>,
    hasher: std::collections::hash_map::RandomState,
}

impl<W: Write> ZipExport<W> {
    pub(crate) fn new(out: W) -> Self {
        ZipExport { zip: zip::ZipWriter::new_stream(out), names: HashSet::new(), hasher: Default::default() }
    }

    pub(super) fn add(&mut self, m: &Exported) -> std::io::Result<()> {
        let name = self.unique(&format!("{}{}", folder_dirs(&m.folder), zip_name(&m.entry, m.message.as_ref())));
        let mut options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(m.given().len() as u64 >= u64::from(u32::MAX));
        if let Some(t) = m.entry.summary.timestamp.and_then(|ts| zip_time(ts, m.entry.summary.zone.unwrap_or(0))) {
            options = options.last_modified_time(t);
        }
        self.zip.start_file(name, options).map_err(std::io::Error::other)?;
        self.zip.write_all(m.given())
    }

    /// `name`, or `name (2)`, `name (3)`… when a file of that name (compared without case, as
    /// Windows and macOS do) is already in the zip.
    fn unique(&mut self, name: &str) -> String {
        let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
        let mut candidate = name.to_string();
        let mut n = 1;
        while !self.names.insert(std::hash::BuildHasher::hash_one(&self.hasher, candidate.to_lowercase())) {
            n += 1;
            candidate = format!("{stem} ({n}).{ext}");
        }
        candidate
    }

    pub(super) fn finish(self) -> std::io::Result<W> {
        let w = self.zip.finish().map_err(std::io::Error::other)?;
        Ok(w.into_inner())
    }
}

/// `<date>-<subject>.<ext>`: the date the message was written (its own zone), the subject made
/// safe as a file name on every common system, and the extension of what `/raw/` gives.
pub(crate) fn zip_name(entry: &Entry, msg: Option<&Message>) -> String {
    let date = entry.summary.date().and_then(|d| d.get(..10).map(str::to_string)).unwrap_or_else(|| "undated".into());
    let subject = safe_file_stem(entry.summary.subject.as_deref().unwrap_or(""));
    let subject = if subject.is_empty() { "no subject".to_string() } else { subject };
    let ext = msg.map_or_else(|| "eml".to_string(), |m| super::GivenFile::of(entry, m).ext);
    format!("{date}-{subject}.{ext}")
}

/// A folder's path (`Lists/rust`) as the directories of a zip entry's name (`Lists/rust/`), each
/// name made safe as [`safe_file_stem`] makes a subject (so none is `..`, empty or a path of its
/// own), one that Windows reserves for a device (`CON`, `LPT1`) given a `_`; empty for a message at
/// the top, in no folder.
pub(crate) fn folder_dirs(folder: &str) -> String {
    let mut out = String::new();
    for name in folder.split('/').map(safe_file_stem).filter(|n| !n.is_empty()) {
        // Windows takes the name before the first dot for the device (`NUL.txt` is `NUL`).
        let stem = name.split('.').next().unwrap_or("");
        let device = stem.to_ascii_uppercase();
        let numbered = |prefix: &str| {
            device.strip_prefix(prefix).is_some_and(|n| n.len() == 1 && n.bytes().all(|b| b.is_ascii_digit()))
        };
        out.push_str(stem);
        if ["CON", "PRN", "AUX", "NUL"].contains(&device.as_str()) || numbered("COM") || numbered("LPT") {
            out.push('_');
        }
        out.push_str(&name[stem.len()..]);
        out.push('/');
    }
    out
}

/// A subject as a file name that Windows, macOS and Linux all accept: no path separators, no
/// characters Windows reserves (`<>:"|?*`), no control characters nor characters that hide what the name
/// shows ([`hidden_in_file_name`]), no trailing dot or space, runs
/// of white space as one space; at most 80 characters; composed (Unicode NFC), so that two names
/// that differ only in how an accent is written are one name, as macOS takes them. (The date
/// before it means it is never a name Windows reserves, such as `CON`.)
pub(crate) fn safe_file_stem(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let mut out = String::new();
    for c in s.nfc() {
        let c = if hidden_in_file_name(c) || matches!(c, '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*') {
            '_'
        } else if c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        out.push(c);
        if out.chars().count() >= 80 {
            break;
        }
    }
    out.trim_end_matches(['.', ' ']).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(safe_file_stem("Re: a/b\\c  <d>?. "), "Re_ a_b_c _d__");
        assert_eq!(safe_file_stem("..."), "");
        assert_eq!(safe_file_stem("invoice\u{202E}gpj.exe\u{200B}"), "invoice_gpj.exe_");
        assert_eq!(safe_file_stem(&"x".repeat(200)).len(), 80);
        assert_eq!(safe_file_stem("cafe\u{301} norm"), "caf\u{e9} norm", "composed");
    }

    /// Names differing only in case are one name, as Windows and macOS take them.
    #[test]
    fn names_are_unique_ignoring_case() {
        let mut zip = ZipExport::new(Vec::new());
        let got: Vec<String> = ["a/Report.eml", "A/report.EML", "a/report (2).eml", "b/Report.eml"]
            .iter()
            .map(|n| zip.unique(n))
            .collect();
        assert_eq!(got, ["a/Report.eml", "A/report (2).EML", "a/report (2) (2).eml", "b/Report.eml"]);
    }

    #[test]
    fn folders_become_safe_directories() {
        for (folder, want) in [
            ("", ""),
            ("Lists/rust", "Lists/rust/"),
            ("Takeout/Mail/All mail Including Spam and Trash", "Takeout/Mail/All mail Including Spam and Trash/"),
            ("../../etc", "etc/"),
            ("a/./b//c.", "a/b/c/"),
            ("Work\\2019: Q1", "Work_2019_ Q1/"),
            ("con/Lpt1.old/COM10/nul.", "con_/Lpt1_.old/COM10/nul_/"),
            ("Entwürfe/日本語", "Entwürfe/日本語/"),
        ] {
            assert_eq!(folder_dirs(folder), want, "{folder}");
        }
    }
}
