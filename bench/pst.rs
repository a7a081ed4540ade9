//! Reading Outlook data files: items per second and peak memory on a generated archive.
//!
//! No tool on this machine writes `.pst` files, so the archive is written here, to the
//! specification (Unicode layout, permutation-encoded as Outlook writes by default): `BENCH_ITEMS`
//! messages (default 50,000) in 20 folders, each with a subject, a sender, a date and a plain-text
//! body of about 1.5 KB, under B-trees of as many levels as they need. It goes to a temporary folder
//! that is removed at the end.
//!
//! Measured, one thread: listing the archive (`mailshelf::ingest::pst::list`: the node index and the folder
//! tree), then reading every item back by its node id and parsing it into the message model
//! (`item_msg` + `parse_message`, what a parse worker does per item). Peak memory is the process's
//! high-water mark (`VmHWM`), read after each phase.
//!
//! Run: `cargo bench --bench pst` (`BENCH_ITEMS=200000 cargo bench --bench pst` for a larger one).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Instant;

/// NDB_CRYPT_PERMUTE's encoding table (MS-PST §5.1).
const MPBB_R: [u8; 256] = [
    65, 54, 19, 98, 168, 33, 110, 187, 244, 22, 204, 4, 127, 100, 232, 93, 30, 242, 203, 42, 116, 197, 94, 53, 210,
    149, 71, 158, 150, 45, 154, 136, 76, 125, 132, 63, 219, 172, 49, 182, 72, 95, 246, 196, 216, 57, 139, 231, 35, 59,
    56, 142, 200, 193, 223, 37, 177, 32, 165, 70, 96, 78, 156, 251, 170, 211, 86, 81, 69, 124, 85, 0, 7, 201, 43, 157,
    133, 155, 9, 160, 143, 173, 179, 15, 99, 171, 137, 75, 215, 167, 21, 90, 113, 102, 66, 191, 38, 74, 107, 152, 250,
    234, 119, 83, 178, 112, 5, 44, 253, 89, 58, 134, 126, 206, 6, 235, 130, 120, 87, 199, 141, 67, 175, 180, 28, 212,
    91, 205, 226, 233, 39, 79, 195, 8, 114, 128, 207, 176, 239, 245, 40, 109, 190, 48, 77, 52, 146, 213, 14, 60, 34,
    50, 229, 228, 249, 159, 194, 209, 10, 129, 18, 225, 238, 145, 131, 118, 227, 151, 230, 97, 138, 23, 121, 164, 183,
    220, 144, 122, 92, 140, 2, 166, 202, 105, 222, 80, 26, 17, 147, 185, 82, 135, 88, 252, 237, 29, 55, 73, 27, 106,
    224, 41, 51, 153, 189, 108, 217, 148, 243, 64, 84, 111, 240, 198, 115, 184, 214, 62, 101, 24, 68, 31, 221, 103, 16,
    241, 12, 25, 236, 174, 3, 161, 20, 123, 169, 11, 255, 248, 163, 192, 162, 1, 247, 46, 188, 36, 104, 117, 13, 254,
    186, 47, 181, 208, 218, 61,
];

/// A Unicode `.pst` being written: data blocks first, the B-tree pages at the end.
struct Writer {
    file: Vec<u8>,
    /// (bid, ib, cb) of every block.
    blocks: Vec<(u64, u64, u16)>,
    /// (nid, data bid, parent nid) of every node.
    nodes: Vec<(u32, u64, u32)>,
}

enum V {
    Long(u32),
    Time(u64),
    Text(String),
    Binary(Vec<u8>),
}

impl Writer {
    fn block(&mut self, data: &[u8]) -> u64 {
        let bid = 4 * (self.blocks.len() as u64 + 1);
        let ib = self.file.len() as u64;
        self.file.extend(data.iter().map(|&b| MPBB_R[usize::from(b)]));
        let padded = (data.len() + 16).div_ceil(64) * 64;
        self.file.resize(ib as usize + padded, 0);
        self.blocks.push((bid, ib, data.len() as u16));
        bid
    }

    /// A property context, as one heap block.
    fn node(&mut self, nid: u32, parent: u32, props: Vec<(u16, u16, V)>) {
        let hid = |i: usize| (i as u32) << 5;
        let mut items: Vec<Vec<u8>> = vec![Vec::new(), Vec::new()];
        let mut records = Vec::new();
        for (id, ty, v) in props {
            let inline = match v {
                V::Long(n) => n,
                V::Time(t) => {
                    items.push(t.to_le_bytes().to_vec());
                    hid(items.len())
                }
                V::Text(s) => {
                    items.push(s.encode_utf16().flat_map(u16::to_le_bytes).collect());
                    hid(items.len())
                }
                V::Binary(b) => {
                    items.push(b);
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
        let data = self.block(&block);
        self.nodes.push((nid, data, parent));
    }

    /// One B-tree page of `entries` (all of one size) at `level`; its offset.
    fn page(&mut self, ptype: u8, level: u8, entries: &[Vec<u8>]) -> u64 {
        let ib = self.file.len().div_ceil(512) * 512;
        self.file.resize(ib + 512, 0);
        let page = &mut self.file[ib..ib + 512];
        let size = entries.first().map_or(0, Vec::len);
        for (i, e) in entries.iter().enumerate() {
            page[i * size..(i + 1) * size].copy_from_slice(e);
        }
        page[488] = entries.len() as u8;
        page[489] = (488 / size.max(1)) as u8;
        page[490] = size as u8;
        page[491] = level;
        page[496] = ptype;
        page[497] = ptype;
        ib as u64
    }

    /// A B-tree over `leaves` (sorted by their first 8 bytes): the root page's offset.
    fn btree(&mut self, ptype: u8, leaves: Vec<Vec<u8>>) -> u64 {
        let mut level = 0u8;
        let mut entries = leaves;
        loop {
            let per_page = 488 / entries[0].len();
            let mut parents = Vec::new();
            for chunk in entries.chunks(per_page) {
                let ib = self.page(ptype, level, chunk);
                let key = u64::from_le_bytes(chunk[0][..8].try_into().unwrap());
                parents.push([key.to_le_bytes(), 0u64.to_le_bytes(), ib.to_le_bytes()].concat());
            }
            if parents.len() == 1 {
                return u64::from_le_bytes(parents[0][16..24].try_into().unwrap());
            }
            entries = parents;
            level += 1;
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.nodes.sort();
        let nbt: Vec<Vec<u8>> = self
            .nodes
            .iter()
            .map(|&(nid, data, parent)| {
                [u64::from(nid).to_le_bytes(), data.to_le_bytes(), 0u64.to_le_bytes()]
                    .concat()
                    .into_iter()
                    .chain(parent.to_le_bytes())
                    .chain([0; 4])
                    .collect()
            })
            .collect();
        let bbt: Vec<Vec<u8>> = self
            .blocks
            .iter()
            .map(|&(bid, ib, cb)| {
                [bid.to_le_bytes(), ib.to_le_bytes()]
                    .concat()
                    .into_iter()
                    .chain(cb.to_le_bytes())
                    .chain([1, 0, 0, 0, 0, 0])
                    .collect()
            })
            .collect();
        let nbt_root = self.btree(0x81, nbt);
        let bbt_root = self.btree(0x80, bbt);
        let h = &mut self.file;
        h[0..4].copy_from_slice(b"!BDN");
        h[8..10].copy_from_slice(b"SM");
        h[10..12].copy_from_slice(&23u16.to_le_bytes());
        h[224..232].copy_from_slice(&nbt_root.to_le_bytes());
        h[240..248].copy_from_slice(&bbt_root.to_le_bytes());
        h[513] = 1;
        self.file
    }
}

fn archive(items: usize) -> Vec<u8> {
    let mut w = Writer { file: vec![0u8; 1024], blocks: Vec::new(), nodes: Vec::new() };
    let text = |s: &str| V::Text(s.to_string());
    let mut entry = vec![0u8; 24];
    entry[20..24].copy_from_slice(&0x8022u32.to_le_bytes());
    w.node(0x21, 0, vec![(0x3001, 0x1f, text("Bench")), (0x35e0, 0x102, V::Binary(entry))]);
    w.node(0x122, 0x122, vec![(0x3001, 0x1f, text(""))]);
    w.node(0x8022, 0x122, vec![(0x3001, 0x1f, text("Top of Personal Folders"))]);
    let folders = 20u32;
    for f in 0..folders {
        w.node(0x8042 + 0x20 * f, 0x8022, vec![(0x3001, 0x1f, V::Text(format!("Folder {f}")))]);
    }
    let body: String = (0..30).map(|i| format!("Line {i} of a message body that reads like mail would. ")).collect();
    for i in 0..items as u32 {
        let time = 132_000_000_000_000_000u64 + u64::from(i) * 600_000_000;
        w.node(
            0x20_0024 + 0x20 * i,
            0x8042 + 0x20 * (i % folders),
            vec![
                (0x0037, 0x1f, V::Text(format!("Message {i} about the quarterly figures"))),
                (0x001a, 0x1f, text("IPM.Note")),
                (0x0042, 0x1f, V::Text(format!("Sender {}", i % 97))),
                (0x0039, 0x40, V::Time(time)),
                (0x0e07, 0x03, V::Long(1)),
                (0x1000, 0x1f, V::Text(format!("{body}\r\n{i}"))),
            ],
        );
    }
    w.finish()
}

fn peak_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    // The archive is written by this process and measured by a fresh one, so that the memory the
    // writing took is not in the reader's high-water mark.
    if let Some(path) = std::env::var_os("BENCH_PST_FILE") {
        measure(std::path::Path::new(&path));
        return;
    }
    let items: usize = std::env::var("BENCH_ITEMS").ok().and_then(|v| v.parse().ok()).unwrap_or(50_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.pst");
    let started = Instant::now();
    let bytes = archive(items);
    std::fs::write(&path, &bytes).unwrap();
    println!(
        "archive: {items} items, {:.1} MB, written in {:.1} s",
        bytes.len() as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    drop(bytes);
    let status =
        std::process::Command::new(std::env::current_exe().unwrap()).env("BENCH_PST_FILE", &path).status().unwrap();
    assert!(status.success());
}

fn measure(path: &std::path::Path) {
    let base = peak_kb();
    let started = Instant::now();
    let listing = mailshelf::ingest::pst::list(path).unwrap();
    let items = listing.items.len();
    let listed = started.elapsed().as_secs_f64();
    println!("list: {listed:.2} s ({:.0} items/s), peak RSS {} MB", items as f64 / listed, peak_kb() / 1024);

    let started = Instant::now();
    let mut bytes_read = 0usize;
    for item in &listing.items {
        let msg = mailshelf::ingest::pst::item_msg(path, item.node).unwrap();
        bytes_read += msg.len();
        let parsed = mailshelf::parse::parse_message(Arc::from(msg)).unwrap();
        std::hint::black_box(parsed);
    }
    let read = started.elapsed().as_secs_f64();
    println!(
        "read + parse every item (one thread): {read:.2} s ({:.0} items/s, {:.1} MB of .msg), peak RSS {} MB (at start: {} MB)",
        items as f64 / read,
        bytes_read as f64 / 1e6,
        peak_kb() / 1024,
        base / 1024
    );
}
