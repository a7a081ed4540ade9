//! Tests of the reader: the corpus's archives item by item, damaged copies of them, and archives
//! written here to the letter of the specification in the layouts and encodings the corpus lacks.

use std::path::Path;

use super::crypt::{crypt_cyclic, CRYPT_CYCLIC, MPBB_I, MPBB_R, MPBB_S};
use super::ndb::le64;
use super::*;

use crate::mapi::{ATTRIBUTE_HIDDEN, BODY, MESSAGE_CLASS, MESSAGE_FLAGS, SUBJECT};

/// The writer of archives the integration tests use too.
#[path = "../../../tests/pst/writer/mod.rs"]
// Shared with the integration tests, for which its items are public.
#[allow(unreachable_pub)]
mod writer;
use writer::{Archive, Layout, V};

#[test]
fn permutation_tables_are_inverse() {
    for b in 0..=255u8 {
        assert_eq!(MPBB_I[usize::from(MPBB_R[usize::from(b)])], b);
    }
}

fn corpus(rel: &str) -> std::path::PathBuf {
    crate::testing::corpus_dir().join(rel)
}

/// Each item read back as the message it stands for.
fn subjects(path: &Path, items: &[PstItem]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|i| {
            let msg = item_msg(path, i.node).unwrap();
            assert_eq!(msg, item_msg(path, i.node).unwrap(), "an item reads back the same bytes");
            let parsed = crate::parse::parse_message(std::sync::Arc::from(msg)).unwrap();
            (i.folder.clone(), parsed.summary.subject.unwrap_or_default())
        })
        .collect()
}

#[test]
fn pst_corpus_items_in_their_folders() {
    if !crate::testing::corpus("pst_corpus_items_in_their_folders") {
        return;
    }
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
    let cases: &[Case] = &[
        (
            "java-libpst/src/test/resources/dist-list.pst",
            &[("Contacts", "test dist list"), ("Contacts", "contact name 1"), ("Calendar", "Test appointment")],
            false,
        ),
        (
            "java-libpst/src/test/resources/passworded.pst",
            &[("Contacts", "test dist list"), ("Contacts", "contact name 1")],
            true,
        ),
        ("ruby-msg/test/pst/200 recipients.pst", &[("", "200 recipients")], false),
        ("ruby-msg/test/pst/attachAndInline.pst", &[("", "Attach and inline")], false),
        ("ruby-msg/test/pst/msgInMsg.pst", &[("", "I have attachments!")], false),
    ];
    for (file, want, password) in cases {
        let path = corpus(file);
        let listing = list(&path).unwrap();
        let got = subjects(&path, &listing.items);
        let want: Vec<(String, String)> = want.iter().map(|(f, s)| (f.to_string(), s.to_string())).collect();
        assert_eq!(got, want, "{file}");
        assert_eq!(listing.notices.iter().any(|n| n.contains("password")), *password, "{file}: {:?}", listing.notices);
    }
}

#[test]
fn pst_damage_stays_bounded() {
    if !crate::testing::corpus("pst_damage_stays_bounded") {
        return;
    }
    let path = corpus("java-libpst/src/test/resources/dist-list.pst");
    let bytes = std::fs::read(&path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut variants: Vec<Vec<u8>> = Vec::new();
    for cut in (0..bytes.len()).step_by(bytes.len() / 16) {
        variants.push(bytes[..cut].to_vec());
    }
    for at in (0..bytes.len()).step_by(3001) {
        let mut v = bytes.clone();
        v[at..(at + 48).min(bytes.len())].fill(0xff);
        variants.push(v);
    }
    // A node B-tree whose root page lists itself as its only child, again and again.
    let mut cyclic = bytes.clone();
    let root = usize::try_from(le64(&bytes, 224).unwrap()).unwrap();
    let page = &mut cyclic[root..root + 512];
    for e in 0..20 {
        page[e * 24..e * 24 + 8].copy_from_slice(&(e as u64).to_le_bytes());
        page[e * 24 + 16..e * 24 + 24].copy_from_slice(&(root as u64).to_le_bytes());
    }
    page[488] = 20;
    page[490] = 24;
    page[491] = 1;
    variants.push(cyclic);
    for (i, v) in variants.iter().enumerate() {
        let file = dir.path().join(format!("{i}.pst"));
        std::fs::write(&file, v).unwrap();
        if let Ok(listing) = list(&file) {
            for item in &listing.items {
                let _ = item_msg(&file, item.node).map(|m| crate::parse::parse_message(std::sync::Arc::from(m)));
            }
        }
    }
    let listing = list(&dir.path().join(format!("{}.pst", variants.len() - 1))).unwrap();
    assert!(listing.notices.iter().any(|n| n.contains("node index")), "{:?}", listing.notices);
}

// Archives written here, small and to the letter of the specification, in both layouts: what the
// corpus (all Unicode, all permutation-encoded) does not cover.

fn archive(unicode: bool, crypt: u8) -> Vec<u8> {
    archive_with(unicode, crypt, true)
}

/// The archive above; `quirks` adds what mailshelf shows differently from other readers on
/// purpose: a `/` in a folder name, a hidden folder and a system folder with items in them.
fn archive_with(unicode: bool, crypt: u8, quirks: bool) -> Vec<u8> {
    let mut a = Archive::new(if unicode { Layout::Unicode } else { Layout::Ansi }, crypt);
    let inbox = a.folder(Archive::TOP, V::Text("Inbox".into()), vec![]);
    let projects = a.folder(inbox, V::Text(if quirks { "Projects/2019" } else { "Projects" }.into()), vec![]);
    let message = |subject: &str| {
        vec![
            (SUBJECT, V::Text(subject.into())),
            (MESSAGE_CLASS, V::Text("IPM.Note".into())),
            (BODY, V::Text("the plain body".into())),
            (MESSAGE_FLAGS, V::Long(1)),
        ]
    };
    a.message(inbox, message("\u{1}\u{4}RE: in the inbox"), Vec::new());
    a.message(projects, message("in a subfolder"), Vec::new());
    if quirks {
        let hidden = a.folder(Archive::TOP, V::Text("Hidden".into()), vec![(ATTRIBUTE_HIDDEN, V::Bool(true))]);
        let system = a.folder(writer::ROOT, V::Text("Search Root".into()), vec![]);
        a.message(hidden, message("in a hidden folder"), Vec::new());
        a.message(system, message("in a system folder"), Vec::new());
    }
    a.finish()
}

#[test]
fn cyclic_encoding_decodes_with_its_own_steps() {
    // mpbbS is a permutation and its own inverse; otherwise one function could not do both.
    let mut seen = [false; 256];
    for (i, &s) in MPBB_S.iter().enumerate() {
        seen[usize::from(s)] = true;
        assert_eq!(usize::from(MPBB_S[usize::from(s)]), i);
    }
    assert!(seen.iter().all(|&b| b));
    for key in [0u32, 4, 0x1234_5678, u32::MAX] {
        let plain: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let mut data = plain.clone();
        crypt_cyclic(&mut data, key);
        assert_ne!(data, plain);
        crypt_cyclic(&mut data, key);
        assert_eq!(data, plain, "key {key:#x}");
    }
}

/// Writes the archives above as fixtures for the comparison with an independent reader in
/// `tests/pst.rs` (the corpus has neither ANSI nor cyclic-encoded files):
/// `cargo test --lib write_pst_fixtures -- --ignored`.
#[test]
#[ignore = "writes tests/fixtures/pst"]
fn write_pst_fixtures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pst");
    std::fs::create_dir_all(&dir).unwrap();
    for (unicode, crypt, name) in [(false, CRYPT_CYCLIC, "ansi-cyclic"), (true, CRYPT_CYCLIC, "unicode-cyclic")] {
        std::fs::write(dir.join(format!("{name}.pst")), archive_with(unicode, crypt, false)).unwrap();
    }
}

#[test]
fn pst_layouts_ansi_unicode_and_encodings() {
    let dir = tempfile::tempdir().unwrap();
    for (unicode, crypt) in [(false, 0), (false, 1), (false, 2), (true, 0), (true, 1), (true, 2)] {
        let path = dir.path().join(format!("{unicode}-{crypt}.pst"));
        std::fs::write(&path, archive(unicode, crypt)).unwrap();
        let listing = list(&path).unwrap();
        let folders: Vec<(u32, &str)> = listing.items.iter().map(|i| (i.node, i.folder.as_str())).collect();
        assert_eq!(folders, [(0x200024, "Inbox"), (0x200044, "Inbox/Projects∕2019")], "{unicode} {crypt}");
        assert!(listing.notices.is_empty(), "{:?}", listing.notices);
        let msg = item_msg(&path, 0x200024).unwrap();
        let parsed = crate::parse::parse_message(std::sync::Arc::from(msg)).unwrap();
        assert_eq!(parsed.summary.subject.as_deref(), Some("RE: in the inbox"), "{unicode} {crypt}");
        assert!(String::from_utf8_lossy(&parsed.raw).contains("Content-Type: text/plain"), "{unicode} {crypt}");
    }
}

#[test]
fn compressed_blocks_inflate_to_their_size_and_no_further() {
    use std::io::Write as _;
    let zlib = |data: &[u8]| {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    };
    let text = b"a block of text ".repeat(100);
    assert_eq!(super::ndb::inflate(&zlib(&text), text.len()).as_deref(), Some(&text[..]));
    // Longer or shorter than the trailer says, cut, or no zlib at all: not read.
    assert_eq!(super::ndb::inflate(&zlib(&text), text.len() - 1), None);
    assert_eq!(super::ndb::inflate(&zlib(&text), text.len() + 1), None);
    assert_eq!(super::ndb::inflate(&zlib(&text)[..20], text.len()), None);
    assert_eq!(super::ndb::inflate(&text, text.len()), None);
    // A bomb (64 MiB of zeros in a few kilobytes) stops at the size the block claims.
    let bomb = zlib(&vec![0u8; 64 << 20]);
    assert!(bomb.len() < 100_000);
    assert_eq!(super::ndb::inflate(&bomb, 60_000), None);
}
