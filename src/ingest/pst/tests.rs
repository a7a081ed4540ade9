//! Tests of the reader: the corpus's archives item by item, damaged copies of them, and archives
//! written here to the letter of the specification in the layouts and encodings the corpus lacks.

use std::path::Path;

use super::crypt::{crypt_block, crypt_cyclic, CRYPT_CYCLIC, MPBB_I, MPBB_R, MPBB_S};
use super::ndb::le64;
use super::*;

use crate::mapi::{ATTRIBUTE_HIDDEN, DISPLAY_NAME, IPM_SUBTREE_ENTRYID, SUBJECT};

#[test]
fn permutation_tables_are_inverse() {
    for b in 0..=255u8 {
        assert_eq!(MPBB_I[usize::from(MPBB_R[usize::from(b)])], b);
    }
}

fn corpus(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus").join(rel)
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

struct Builder {
    unicode: bool,
    crypt: u8,
    file: Vec<u8>,
    blocks: Vec<(u64, u64, u16)>,
    nodes: Vec<(u32, u64, u32)>,
}

enum V {
    Long(u32),
    Bool(bool),
    Text(&'static str),
    Binary(Vec<u8>),
}

impl Builder {
    fn new(unicode: bool, crypt: u8) -> Builder {
        Builder { unicode, crypt, file: vec![0u8; 1024], blocks: Vec::new(), nodes: Vec::new() }
    }

    fn block(&mut self, data: &[u8]) -> u64 {
        let bid = 4 * (self.blocks.len() as u64 + 1);
        let ib = self.file.len() as u64;
        let mut encoded = data.to_vec();
        crypt_block(&mut encoded, self.crypt, bid, &MPBB_R);
        self.file.extend_from_slice(&encoded);
        let padded = (encoded.len() + 16).div_ceil(64) * 64;
        self.file.resize(ib as usize + padded, 0);
        self.blocks.push((bid, ib, data.len() as u16));
        bid
    }

    /// A property context holding `props`, as one heap block.
    fn pc(&mut self, props: &[(u16, u16, V)]) -> u64 {
        let hid = |i: usize| (i as u32) << 5;
        let mut items: Vec<Vec<u8>> = vec![Vec::new(), Vec::new()];
        let mut records = Vec::new();
        for (id, ty, v) in props {
            let inline = match v {
                V::Long(n) => *n,
                V::Bool(b) => u32::from(*b),
                V::Text(s) => {
                    items.push(if *ty == 0x001f {
                        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
                    } else {
                        s.as_bytes().to_vec()
                    });
                    hid(items.len())
                }
                V::Binary(b) => {
                    items.push(b.clone());
                    hid(items.len())
                }
            };
            records.extend_from_slice(&id.to_le_bytes());
            records.extend_from_slice(&ty.to_le_bytes());
            records.extend_from_slice(&inline.to_le_bytes());
        }
        items[0] = [vec![0xb5, 2, 6, 0], hid(2).to_le_bytes().to_vec()].concat();
        items[1] = records;
        let mut block = vec![0u8; 12];
        block[2] = 0xec;
        block[3] = 0xbc;
        block[4..8].copy_from_slice(&hid(1).to_le_bytes());
        let mut offsets = vec![12u16];
        for item in &items {
            block.extend_from_slice(item);
            offsets.push(block.len() as u16);
        }
        let map = block.len() as u16;
        block[0..2].copy_from_slice(&map.to_le_bytes());
        block.extend_from_slice(&(items.len() as u16).to_le_bytes());
        block.extend_from_slice(&0u16.to_le_bytes());
        for o in offsets {
            block.extend_from_slice(&o.to_le_bytes());
        }
        self.block(&block)
    }

    fn node(&mut self, nid: u32, parent: u32, props: &[(u16, u16, V)]) {
        let data = self.pc(props);
        self.nodes.push((nid, data, parent));
    }

    fn page(&mut self, ptype: u8, entries: Vec<Vec<u8>>) -> u64 {
        let ib = self.file.len().div_ceil(512) * 512;
        self.file.resize(ib + 512, 0);
        let page = &mut self.file[ib..ib + 512];
        let size = entries.first().map_or(0, Vec::len);
        for (i, e) in entries.iter().enumerate() {
            page[i * size..(i + 1) * size].copy_from_slice(e);
        }
        let (at, trailer) = if self.unicode { (488, 496) } else { (496, 500) };
        page[at] = entries.len() as u8;
        page[at + 1] = entries.len() as u8;
        page[at + 2] = size as u8;
        page[at + 3] = 0;
        page[trailer] = ptype;
        page[trailer + 1] = ptype;
        ib as u64
    }

    fn finish(mut self) -> Vec<u8> {
        let word = |unicode: bool, v: u64| {
            if unicode {
                v.to_le_bytes().to_vec()
            } else {
                (v as u32).to_le_bytes().to_vec()
            }
        };
        let u = self.unicode;
        let mut nodes = self.nodes.clone();
        nodes.sort();
        let nbt: Vec<Vec<u8>> = nodes
            .iter()
            .map(|&(nid, data, parent)| {
                let mut e =
                    [word(u, u64::from(nid)), word(u, data), word(u, 0), parent.to_le_bytes().to_vec()].concat();
                e.resize(if u { 32 } else { 16 }, 0);
                e
            })
            .collect();
        let bbt: Vec<Vec<u8>> = self
            .blocks
            .iter()
            .map(|&(bid, ib, cb)| {
                let mut e =
                    [word(u, bid), word(u, ib), cb.to_le_bytes().to_vec(), 1u16.to_le_bytes().to_vec()].concat();
                e.resize(if u { 24 } else { 12 }, 0);
                e
            })
            .collect();
        let nbt_ib = self.page(0x81, nbt);
        let bbt_ib = self.page(0x80, bbt);
        let h = &mut self.file;
        h[0..4].copy_from_slice(PST_MAGIC);
        h[8..10].copy_from_slice(b"SM");
        if u {
            h[10..12].copy_from_slice(&23u16.to_le_bytes());
            h[224..232].copy_from_slice(&nbt_ib.to_le_bytes());
            h[240..248].copy_from_slice(&bbt_ib.to_le_bytes());
            h[513] = self.crypt;
        } else {
            h[10..12].copy_from_slice(&14u16.to_le_bytes());
            h[188..192].copy_from_slice(&(nbt_ib as u32).to_le_bytes());
            h[196..200].copy_from_slice(&(bbt_ib as u32).to_le_bytes());
            h[461] = self.crypt;
        }
        self.file
    }
}

fn archive(unicode: bool, crypt: u8) -> Vec<u8> {
    archive_with(unicode, crypt, true)
}

/// The archive above; `quirks` adds what mailshelf shows differently from other readers on
/// purpose: a `/` in a folder name, a hidden folder and a system folder with items in them.
fn archive_with(unicode: bool, crypt: u8, quirks: bool) -> Vec<u8> {
    let text = if unicode { 0x001f } else { 0x001e };
    let mut b = Builder::new(unicode, crypt);
    let mut entry = vec![0u8; 24];
    entry[20..24].copy_from_slice(&0x8022u32.to_le_bytes());
    b.node(0x21, 0, &[(DISPLAY_NAME, text, V::Text("Archive")), (IPM_SUBTREE_ENTRYID, 0x0102, V::Binary(entry))]);
    b.node(0x122, 0x122, &[(DISPLAY_NAME, text, V::Text(""))]);
    // A folder's counts (PR_CONTENT_COUNT, PR_CONTENT_UNREAD, PR_SUBFOLDERS), which other
    // readers look for to tell a folder from an item.
    let folder = |name: &'static str, items: u32, subfolders: bool| {
        vec![
            (DISPLAY_NAME, text, V::Text(name)),
            (0x3602, 0x0003, V::Long(items)),
            (0x3603, 0x0003, V::Long(0)),
            (0x360a, 0x000b, V::Bool(subfolders)),
        ]
    };
    b.node(0x8022, 0x122, &folder("Top of Personal Folders", 0, true));
    b.node(0x8042, 0x8022, &folder("Inbox", 1, true));
    b.node(0x8062, 0x8042, &folder(if quirks { "Projects/2019" } else { "Projects" }, 1, false));
    if quirks {
        let mut hidden = folder("Hidden", 1, false);
        hidden.push((ATTRIBUTE_HIDDEN, 0x000b, V::Bool(true)));
        b.node(0x8082, 0x8022, &hidden);
        b.node(0x8102, 0x122, &folder("Search Root", 1, false));
    }
    let message = |subject: &'static str| {
        vec![
            (SUBJECT, text, V::Text(subject)),
            (0x001a, text, V::Text("IPM.Note")),
            (0x1000, text, V::Text("the plain body")),
            (0x0e07, 0x0003, V::Long(1)),
        ]
    };
    b.node(0x200024, 0x8042, &message("\u{1}\u{4}RE: in the inbox"));
    b.node(0x200044, 0x8062, &message("in a subfolder"));
    if quirks {
        b.node(0x200064, 0x8082, &message("in a hidden folder"));
        b.node(0x200084, 0x8102, &message("in a system folder"));
    }
    b.finish()
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
