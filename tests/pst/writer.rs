//! Writes Outlook data files to the letter of their documentation, for tests: what the corpus does
//! not hold (ANSI files, the cyclic encoding, the 4 KiB-page `.ost` of Outlook 2013 and later with
//! its compressed blocks, archives made to show one case). Standalone (std and flate2 only), so
//! that the reader's unit tests and the integration tests use the same writer.
//!
//! What is written, by layer:
//! - the node database as MS-PST §2.2 has it: the header with both CRCs, B-tree pages of node and
//!   block entries with their trailers (signature, CRC, back pointer), data blocks with their
//!   trailers, data trees (XBLOCK) for data longer than a block, subnode trees (SLBLOCK); the 4 KiB
//!   layout as libpff's "Personal Folder File (PFF) format" documents it (4096-byte pages with a
//!   40-byte footer, blocks in 512-byte steps with a 24-byte trailer that holds the inflated size,
//!   data blocks zlib-compressed, after they are encoded, when that makes them smaller; internal
//!   blocks stored as they are);
//! - lists and tables (§2.3): heaps on nodes, B-trees on heaps, property contexts, table contexts
//!   (with the row index and the row matrix, in a subnode when large);
//! - the messaging layer (§2.4): the message store, the name-to-id map, the root folder, folders with
//!   their hierarchy, contents and associated contents tables, and messages with their recipient
//!   tables.
//!
//! Not written: the allocation maps (the header says they are invalid, as MS-PST allows, which
//! makes Outlook rebuild them) and the search and template nodes only Outlook itself uses.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write as _;

/// The three layouts of the node database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// 32-bit, 512-byte pages (wVer 14): ANSI `.pst` files of Outlook 97–2002.
    Ansi,
    /// 64-bit, 512-byte pages (wVer 23): Unicode `.pst` and `.ost` files since Outlook 2003.
    Unicode,
    /// 64-bit, 4096-byte pages and compressed blocks (wVer 36): the `.ost` of Outlook 2013 and later.
    Ost2013,
}

// bCryptMethod.
pub const CRYPT_NONE: u8 = 0;
pub const CRYPT_PERMUTE: u8 = 1;
pub const CRYPT_CYCLIC: u8 = 2;

/// A property value; its type follows from the variant (text in the file's own kind of string).
#[derive(Clone, Debug)]
pub enum V {
    Long(u32),
    Bool(bool),
    /// A FILETIME (100 ns since 1601).
    Time(u64),
    /// PT_UNICODE in a Unicode file, PT_STRING8 (its UTF-8 bytes; keep it ASCII) in an ANSI one.
    Text(String),
    /// PT_STRING8 with these bytes, in whatever code page the test means.
    Text8(Vec<u8>),
    /// PT_UNICODE whatever the layout.
    Unicode(String),
    Binary(Vec<u8>),
}

/// A property list: (id, value).
pub type Props = Vec<(u16, V)>;

/// NDB_CRYPT_PERMUTE's encoding table (mpbbR, MS-PST §5.1).
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

/// mpbbS, NDB_CRYPT_CYCLIC's middle table (its own inverse).
const MPBB_S: [u8; 256] = [
    20, 83, 15, 86, 179, 200, 122, 156, 235, 101, 72, 23, 22, 21, 159, 2, 204, 84, 124, 131, 0, 13, 12, 11, 162, 98,
    168, 118, 219, 217, 237, 199, 197, 164, 220, 172, 133, 116, 214, 208, 167, 155, 174, 154, 150, 113, 102, 195, 99,
    153, 184, 221, 115, 146, 142, 132, 125, 165, 94, 209, 93, 147, 177, 87, 81, 80, 128, 137, 82, 148, 79, 78, 10, 107,
    188, 141, 127, 110, 71, 70, 65, 64, 68, 1, 17, 203, 3, 63, 247, 244, 225, 169, 143, 60, 58, 249, 251, 240, 25, 48,
    130, 9, 46, 201, 157, 160, 134, 73, 238, 111, 77, 109, 196, 45, 129, 52, 37, 135, 27, 136, 170, 252, 6, 161, 18,
    56, 253, 76, 66, 114, 100, 19, 55, 36, 106, 117, 119, 67, 255, 230, 180, 75, 54, 92, 228, 216, 53, 61, 69, 185, 44,
    236, 183, 49, 43, 41, 7, 104, 163, 14, 105, 123, 24, 158, 33, 57, 190, 40, 26, 91, 120, 245, 35, 202, 42, 176, 175,
    62, 254, 4, 140, 231, 229, 152, 50, 149, 211, 246, 74, 232, 166, 234, 233, 243, 213, 47, 112, 32, 242, 31, 5, 103,
    173, 85, 16, 206, 205, 227, 39, 59, 218, 186, 215, 194, 38, 212, 145, 29, 210, 28, 34, 51, 248, 250, 241, 90, 239,
    207, 144, 182, 139, 181, 189, 192, 191, 8, 151, 30, 108, 226, 97, 224, 198, 193, 89, 171, 187, 88, 222, 95, 223,
    96, 121, 126, 178, 138,
];

/// mpbbI, the inverse of mpbbR.
fn mpbb_i() -> [u8; 256] {
    let mut out = [0u8; 256];
    for (i, &r) in MPBB_R.iter().enumerate() {
        out[usize::from(r)] = i as u8;
    }
    out
}

/// Encodes a data block as the file's method says (MS-PST §5.1, §5.2).
fn encode(buf: &mut [u8], crypt: u8, bid: u64) {
    match crypt {
        CRYPT_PERMUTE => buf.iter_mut().for_each(|b| *b = MPBB_R[usize::from(*b)]),
        CRYPT_CYCLIC => {
            let inverse = mpbb_i();
            let key = bid as u32;
            let mut w = (key ^ (key >> 16)) as u16;
            for b in buf {
                let [lo, hi] = w.to_le_bytes();
                let mut x = b.wrapping_add(lo);
                x = MPBB_R[usize::from(x)].wrapping_add(hi);
                x = MPBB_S[usize::from(x)].wrapping_sub(hi);
                *b = inverse[usize::from(x)].wrapping_sub(lo);
                w = w.wrapping_add(1);
            }
        }
        _ => {}
    }
}

/// MS-PST §5.3's CRC: the CRC-32 table, started at 0, with no final inversion.
pub fn crc(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (i, t) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
        }
        *t = c;
    }
    data.iter().fold(0u32, |c, &b| table[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8))
}

/// ComputeSig (MS-PST §5.5).
fn sig(ib: u64, bid: u64) -> u16 {
    let x = ib ^ bid;
    ((x >> 16) as u16) ^ (x as u16)
}

/// Property types.
const PT_LONG: u16 = 0x0003;
const PT_BOOLEAN: u16 = 0x000b;
const PT_STRING8: u16 = 0x001e;
const PT_UNICODE: u16 = 0x001f;
const PT_SYSTIME: u16 = 0x0040;
const PT_BINARY: u16 = 0x0102;

/// The node database being written: blocks as they come, the B-trees and the header at the end.
pub struct Ndb {
    pub layout: Layout,
    pub crypt: u8,
    /// Compress data blocks when that makes them smaller (the 4 KiB layout only). Internal blocks
    /// are stored as they are: libpff does not read a data tree whose XBLOCK is compressed.
    pub compress: bool,
    file: Vec<u8>,
    /// (bid, ib, cb as stored) of every block.
    blocks: Vec<(u64, u64, u16)>,
    /// nid → (data bid, subnode bid, parent nid).
    nodes: BTreeMap<u32, (u64, u64, u32)>,
    next_bid: u64,
    next_page_bid: u64,
}

impl Ndb {
    pub fn new(layout: Layout, crypt: u8) -> Ndb {
        // Data starts after the header and where the first allocation maps would be.
        let start = if layout == Layout::Ost2013 { 0x2_4000 } else { 0x4600 };
        Ndb {
            layout,
            crypt,
            compress: layout == Layout::Ost2013,
            file: vec![0u8; start],
            blocks: Vec::new(),
            nodes: BTreeMap::new(),
            next_bid: 4,
            next_page_bid: 4,
        }
    }

    fn wide(&self) -> bool {
        self.layout != Layout::Ansi
    }

    fn word(&self, v: u64) -> Vec<u8> {
        if self.wide() {
            v.to_le_bytes().to_vec()
        } else {
            (v as u32).to_le_bytes().to_vec()
        }
    }

    /// The most plain data one block holds.
    pub fn max_block(&self) -> usize {
        match self.layout {
            Layout::Ansi => 8192 - 12,
            Layout::Unicode => 8192 - 16,
            Layout::Ost2013 => 16384 - 24,
        }
    }

    /// Writes one block; `internal` blocks (data trees, subnode trees) are never encoded.
    pub fn block(&mut self, data: &[u8], internal: bool) -> u64 {
        assert!(data.len() <= self.max_block(), "a block of {} bytes", data.len());
        let bid = self.next_bid | if internal { 2 } else { 0 };
        self.next_bid += 4;
        let mut plain = data.to_vec();
        if !internal {
            encode(&mut plain, self.crypt, bid);
        }
        let ost = self.layout == Layout::Ost2013;
        // An OST 2013 block is compressed after it is encoded, and inflated before it is decoded.
        let stored = if ost && self.compress && !internal {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(&plain).expect("compress");
            let packed = z.finish().expect("compress");
            if packed.len() < plain.len() {
                packed
            } else {
                plain.clone()
            }
        } else {
            plain.clone()
        };
        let (step, trailer) = match self.layout {
            Layout::Ansi => (64, 12),
            Layout::Unicode => (64, 16),
            Layout::Ost2013 => (512, 24),
        };
        let ib = self.file.len() as u64;
        let total = (stored.len() + trailer).div_ceil(step) * step;
        self.file.extend_from_slice(&stored);
        self.file.resize(ib as usize + total, 0);
        let t = ib as usize + total - trailer;
        let cb = stored.len() as u16;
        let c = crc(&stored);
        let f = &mut self.file[t..t + trailer];
        f[0..2].copy_from_slice(&cb.to_le_bytes());
        f[2..4].copy_from_slice(&sig(ib, bid).to_le_bytes());
        match self.layout {
            Layout::Ansi => {
                f[4..8].copy_from_slice(&(bid as u32).to_le_bytes());
                f[8..12].copy_from_slice(&c.to_le_bytes());
            }
            Layout::Unicode | Layout::Ost2013 => {
                f[4..8].copy_from_slice(&c.to_le_bytes());
                f[8..16].copy_from_slice(&bid.to_le_bytes());
            }
        }
        if ost {
            f[18..20].copy_from_slice(&(plain.len() as u16).to_le_bytes());
        }
        self.blocks.push((bid, ib, cb));
        bid
    }

    /// Writes data of any length: one block, or blocks under an XBLOCK (or XXBLOCK).
    pub fn data(&mut self, data: &[u8]) -> u64 {
        if data.len() <= self.max_block() {
            return self.block(data, false);
        }
        let bids: Vec<u64> = data.chunks(self.max_block()).map(|c| self.block(c, false)).collect();
        let per = (self.max_block() - 8) / if self.wide() { 8 } else { 4 };
        let xblock = |w: &mut Ndb, level: u8, bids: &[u64], total: usize| {
            let mut b = vec![1u8, level];
            b.extend_from_slice(&(bids.len() as u16).to_le_bytes());
            b.extend_from_slice(&(total as u32).to_le_bytes());
            for &bid in bids {
                let word = w.word(bid);
                b.extend_from_slice(&word);
            }
            w.block(&b, true)
        };
        if bids.len() <= per {
            return xblock(self, 1, &bids, data.len());
        }
        let chunk = per * self.max_block();
        let xs: Vec<u64> = bids.chunks(per).zip(data.chunks(chunk)).map(|(b, d)| xblock(self, 1, b, d.len())).collect();
        xblock(self, 2, &xs, data.len())
    }

    /// Writes a subnode tree (one SLBLOCK): nid → (data bid, subnode bid).
    pub fn subnodes(&mut self, entries: &BTreeMap<u32, (u64, u64)>) -> u64 {
        if entries.is_empty() {
            return 0;
        }
        let mut b = vec![2u8, 0];
        b.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        if self.wide() {
            b.extend_from_slice(&[0; 4]);
        }
        for (&nid, &(data, sub)) in entries {
            for v in [u64::from(nid), data, sub] {
                let word = self.word(v);
                b.extend_from_slice(&word);
            }
        }
        self.block(&b, true)
    }

    pub fn node(&mut self, nid: u32, parent: u32, data: u64, sub: u64) {
        self.nodes.insert(nid, (data, sub, parent));
    }

    fn page_size(&self) -> usize {
        if self.layout == Layout::Ost2013 {
            4096
        } else {
            512
        }
    }

    /// One B-tree page at `level` holding `entries` (all of one size); its BREF (bid, ib).
    fn page(&mut self, ptype: u8, level: u8, entries: &[Vec<u8>]) -> (u64, u64) {
        let size = self.page_size();
        let ib = self.file.len().div_ceil(size) * size;
        self.file.resize(ib + size, 0);
        let bid = self.next_page_bid;
        self.next_page_bid += 4;
        let layout = self.layout;
        let room = self.room();
        let page = &mut self.file[ib..ib + size];
        let cb = entries.first().map_or(0, Vec::len);
        for (i, e) in entries.iter().enumerate() {
            page[i * cb..(i + 1) * cb].copy_from_slice(e);
        }
        let max = room / cb.max(1);
        match layout {
            Layout::Ansi => {
                page[496] = entries.len() as u8;
                page[497] = max as u8;
                page[498] = cb as u8;
                page[499] = level;
                page[500] = ptype;
                page[501] = ptype;
                page[502..504].copy_from_slice(&sig(ib as u64, bid).to_le_bytes());
                page[504..508].copy_from_slice(&(bid as u32).to_le_bytes());
                let c = crc(&page[..500]);
                page[508..512].copy_from_slice(&c.to_le_bytes());
            }
            Layout::Unicode => {
                page[488] = entries.len() as u8;
                page[489] = max as u8;
                page[490] = cb as u8;
                page[491] = level;
                page[496] = ptype;
                page[497] = ptype;
                page[498..500].copy_from_slice(&sig(ib as u64, bid).to_le_bytes());
                let c = crc(&page[..496]);
                page[500..504].copy_from_slice(&c.to_le_bytes());
                page[504..512].copy_from_slice(&bid.to_le_bytes());
            }
            Layout::Ost2013 => {
                page[4056..4058].copy_from_slice(&(entries.len() as u16).to_le_bytes());
                page[4058..4060].copy_from_slice(&(max as u16).to_le_bytes());
                page[4060] = cb as u8;
                page[4061] = level;
                page[4072] = ptype;
                page[4073] = ptype;
                page[4074..4076].copy_from_slice(&sig(ib as u64, bid).to_le_bytes());
                let c = crc(&page[..4072]);
                page[4076..4080].copy_from_slice(&c.to_le_bytes());
                page[4080..4088].copy_from_slice(&bid.to_le_bytes());
            }
        }
        (bid, ib as u64)
    }

    /// Bytes of a B-tree page that hold entries.
    fn room(&self) -> usize {
        match self.layout {
            Layout::Ansi => 496,
            Layout::Unicode => 488,
            Layout::Ost2013 => 4056,
        }
    }

    /// A B-tree over `leaves` (sorted by key): the root's BREF.
    fn btree(&mut self, ptype: u8, leaves: Vec<Vec<u8>>) -> (u64, u64) {
        let mut level = 0u8;
        let mut entries = leaves;
        loop {
            let per_page = self.room() / entries[0].len();
            let mut parents = Vec::new();
            for chunk in entries.chunks(per_page) {
                let (bid, ib) = self.page(ptype, level, chunk);
                let key = if self.wide() {
                    u64::from_le_bytes(chunk[0][..8].try_into().expect("key"))
                } else {
                    u64::from(u32::from_le_bytes(chunk[0][..4].try_into().expect("key")))
                };
                parents.push([self.word(key), self.word(bid), self.word(ib)].concat());
            }
            if parents.len() == 1 {
                let (bid, ib) = if self.wide() {
                    (
                        u64::from_le_bytes(parents[0][8..16].try_into().expect("bid")),
                        u64::from_le_bytes(parents[0][16..24].try_into().expect("ib")),
                    )
                } else {
                    (
                        u64::from(u32::from_le_bytes(parents[0][4..8].try_into().expect("bid"))),
                        u64::from(u32::from_le_bytes(parents[0][8..12].try_into().expect("ib"))),
                    )
                };
                return (bid, ib);
            }
            entries = parents;
            level += 1;
        }
    }

    /// The node and block B-trees, then the header: the file.
    pub fn finish(mut self) -> Vec<u8> {
        let nodes: Vec<(u32, (u64, u64, u32))> = self.nodes.iter().map(|(k, v)| (*k, *v)).collect();
        let nbt: Vec<Vec<u8>> = nodes
            .iter()
            .map(|&(nid, (data, sub, parent))| {
                let mut e = [self.word(u64::from(nid)), self.word(data), self.word(sub)].concat();
                e.extend_from_slice(&parent.to_le_bytes());
                if self.wide() {
                    e.extend_from_slice(&[0; 4]);
                }
                e
            })
            .collect();
        let mut blocks = self.blocks.clone();
        blocks.sort();
        let bbt: Vec<Vec<u8>> = blocks
            .iter()
            .map(|&(bid, ib, cb)| {
                let mut e = [self.word(bid), self.word(ib)].concat();
                e.extend_from_slice(&cb.to_le_bytes());
                e.extend_from_slice(&2u16.to_le_bytes());
                if self.wide() {
                    e.extend_from_slice(&[0; 4]);
                }
                e
            })
            .collect();
        let nbt_root = self.btree(0x81, nbt);
        let bbt_root = self.btree(0x80, bbt);
        let eof = self.file.len() as u64;
        // rgnid: the next free NID of each type.
        let mut rgnid = [0u32; 32];
        for (t, n) in rgnid.iter_mut().enumerate() {
            *n = (0x400 << 5) | t as u32;
        }
        for &(nid, _) in &nodes {
            let t = (nid & 0x1f) as usize;
            rgnid[t] = rgnid[t].max(((nid >> 5) + 1) << 5 | nid & 0x1f);
        }
        let (next_b, next_p) = (self.next_bid, self.next_page_bid);
        let layout = self.layout;
        let crypt = self.crypt;
        let h = &mut self.file;
        h[0..4].copy_from_slice(b"!BDN");
        h[8..10].copy_from_slice(if layout == Layout::Ost2013 { b"SO" } else { b"SM" });
        h[12..14].copy_from_slice(&19u16.to_le_bytes());
        h[14] = 1;
        h[15] = 1;
        if layout == Layout::Ansi {
            h[10..12].copy_from_slice(&14u16.to_le_bytes());
            h[24..28].copy_from_slice(&(next_b as u32).to_le_bytes());
            h[28..32].copy_from_slice(&(next_p as u32).to_le_bytes());
            h[32..36].copy_from_slice(&1u32.to_le_bytes());
            for (i, n) in rgnid.iter().enumerate() {
                h[36 + 4 * i..40 + 4 * i].copy_from_slice(&n.to_le_bytes());
            }
            h[168..172].copy_from_slice(&(eof as u32).to_le_bytes());
            h[184..188].copy_from_slice(&(nbt_root.0 as u32).to_le_bytes());
            h[188..192].copy_from_slice(&(nbt_root.1 as u32).to_le_bytes());
            h[192..196].copy_from_slice(&(bbt_root.0 as u32).to_le_bytes());
            h[196..200].copy_from_slice(&(bbt_root.1 as u32).to_le_bytes());
            h[200] = 0; // fAMapValid: INVALID_AMAP
            h[204..460].fill(0xff);
            h[460] = 0x80;
            h[461] = crypt;
            let partial = crc(&h[8..8 + 471]);
            h[4..8].copy_from_slice(&partial.to_le_bytes());
        } else {
            h[10..12].copy_from_slice(&(if layout == Layout::Ost2013 { 36u16 } else { 23 }).to_le_bytes());
            h[32..40].copy_from_slice(&next_p.to_le_bytes());
            h[40..44].copy_from_slice(&1u32.to_le_bytes());
            for (i, n) in rgnid.iter().enumerate() {
                h[44 + 4 * i..48 + 4 * i].copy_from_slice(&n.to_le_bytes());
            }
            h[184..192].copy_from_slice(&eof.to_le_bytes());
            h[216..224].copy_from_slice(&nbt_root.0.to_le_bytes());
            h[224..232].copy_from_slice(&nbt_root.1.to_le_bytes());
            h[232..240].copy_from_slice(&bbt_root.0.to_le_bytes());
            h[240..248].copy_from_slice(&bbt_root.1.to_le_bytes());
            h[248] = 0; // fAMapValid: INVALID_AMAP
            h[256..512].fill(0xff);
            h[512] = 0x80;
            h[513] = crypt;
            h[516..524].copy_from_slice(&next_b.to_le_bytes());
            let partial = crc(&h[8..8 + 471]);
            h[4..8].copy_from_slice(&partial.to_le_bytes());
            let full = crc(&h[8..8 + 516]);
            h[524..528].copy_from_slice(&full.to_le_bytes());
        }
        self.file
    }
}

/// A heap-on-node being built in one block: its items, addressed by HID.
struct Heap {
    items: Vec<Vec<u8>>,
}

impl Heap {
    fn new() -> Heap {
        Heap { items: Vec::new() }
    }

    /// Adds an item; its HID.
    fn add(&mut self, item: Vec<u8>) -> u32 {
        self.items.push(item);
        (self.items.len() as u32) << 5
    }

    /// The block: HNHDR, the items, the HNPAGEMAP (MS-PST §2.3.1).
    fn bytes(&self, client_sig: u8, root: u32) -> Vec<u8> {
        let mut b = vec![0u8; 12];
        b[2] = 0xec;
        b[3] = client_sig;
        b[4..8].copy_from_slice(&root.to_le_bytes());
        let mut offsets = vec![12u16];
        for item in &self.items {
            b.extend_from_slice(item);
            offsets.push(b.len() as u16);
        }
        if b.len() % 2 == 1 {
            b.push(0);
        }
        let map = b.len() as u16;
        b[0..2].copy_from_slice(&map.to_le_bytes());
        b.extend_from_slice(&(self.items.len() as u16).to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        for o in offsets {
            b.extend_from_slice(&o.to_le_bytes());
        }
        b
    }
}

/// A B-tree-on-heap of one leaf: its header item's HID.
fn bth(heap: &mut Heap, key: usize, ent: usize, mut records: Vec<(Vec<u8>, Vec<u8>)>) -> u32 {
    // Keys are little-endian numbers, ordered as numbers.
    records.sort_by(|a, b| a.0.iter().rev().cmp(b.0.iter().rev()));
    let root = if records.is_empty() {
        0
    } else {
        heap.add(records.iter().flat_map(|(k, v)| k.iter().chain(v.iter()).copied()).collect())
    };
    let mut header = vec![0xb5, key as u8, ent as u8, 0];
    header.extend_from_slice(&root.to_le_bytes());
    heap.add(header)
}

/// Values larger than this go to a subnode rather than the heap (MS-PST §2.3.3.3).
const HEAP_MAX: usize = 3580;

/// Subnode ids for values kept out of a heap (NID_TYPE_LTP).
struct Subs {
    entries: BTreeMap<u32, (u64, u64)>,
    next: u32,
}

impl Subs {
    fn new() -> Subs {
        Subs { entries: BTreeMap::new(), next: 1 }
    }

    fn value(&mut self, ndb: &mut Ndb, data: &[u8]) -> u32 {
        let nid = (self.next << 5) | 0x1f;
        self.next += 1;
        let bid = ndb.data(data);
        self.entries.insert(nid, (bid, 0));
        nid
    }
}

/// The type and bytes of a value in a file of `layout`.
fn typed(layout: Layout, v: &V) -> (u16, Vec<u8>) {
    match v {
        V::Long(n) => (PT_LONG, n.to_le_bytes().to_vec()),
        V::Bool(b) => (PT_BOOLEAN, u32::from(*b).to_le_bytes().to_vec()),
        V::Time(t) => (PT_SYSTIME, t.to_le_bytes().to_vec()),
        V::Text(s) if layout == Layout::Ansi => (PT_STRING8, s.as_bytes().to_vec()),
        V::Text(s) | V::Unicode(s) => (PT_UNICODE, s.encode_utf16().flat_map(u16::to_le_bytes).collect()),
        V::Text8(b) => (PT_STRING8, b.clone()),
        V::Binary(b) => (PT_BINARY, b.clone()),
    }
}

/// A heap reference to `bytes`: a heap item, or a subnode when large.
fn hnid(ndb: &mut Ndb, heap: &mut Heap, subs: &mut Subs, bytes: &[u8]) -> u32 {
    if bytes.is_empty() {
        0
    } else if bytes.len() > HEAP_MAX {
        subs.value(ndb, bytes)
    } else {
        heap.add(bytes.to_vec())
    }
}

/// A property context (MS-PST §2.3.3) holding `props`, with `extra` subnodes besides those its
/// large values need: (data bid, subnode bid).
pub fn pc(ndb: &mut Ndb, props: &Props, extra: &BTreeMap<u32, (u64, u64)>) -> (u64, u64) {
    let mut heap = Heap::new();
    let mut subs = Subs::new();
    let mut records = Vec::new();
    for (id, v) in props {
        let (ty, bytes) = typed(ndb.layout, v);
        let inline = match ty {
            PT_LONG | PT_BOOLEAN => u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")),
            _ => hnid(ndb, &mut heap, &mut subs, &bytes),
        };
        let mut value = ty.to_le_bytes().to_vec();
        value.extend_from_slice(&inline.to_le_bytes());
        records.push((id.to_le_bytes().to_vec(), value));
    }
    let root = bth(&mut heap, 2, 6, records);
    let data = ndb.block(&heap.bytes(0xbc, root), false);
    subs.entries.extend(extra.iter().map(|(k, v)| (*k, *v)));
    let sub = ndb.subnodes(&subs.entries);
    (data, sub)
}

/// A table context (MS-PST §2.3.4): `columns` (id, type) besides the row id and version, and rows
/// of (row id, values by column); (data bid, subnode bid).
pub fn tc(ndb: &mut Ndb, columns: &[(u16, u16)], rows: &[(u32, Props)]) -> (u64, u64) {
    // Column groups: 4- and 8-byte values (strings and binaries are 4-byte heap references) first,
    // then 2-byte, then 1-byte ones, then the cell existence bitmap.
    let size = |ty: u16| match ty {
        PT_BOOLEAN => 1,
        PT_SYSTIME => 8,
        _ => 4,
    };
    let mut cols: Vec<(u32, u16, u8, u8)> = vec![(0x67f2_0003, 0, 4, 0), (0x67f3_0003, 4, 4, 1)];
    let mut at = 8u16;
    let mut bit = 2u8;
    for width in [8, 4, 1] {
        for &(id, ty) in columns.iter().filter(|(_, ty)| size(*ty) == width) {
            cols.push(((u32::from(id) << 16) | u32::from(ty), at, width as u8, bit));
            at += width;
            bit += 1;
        }
    }
    let end_4b = cols.iter().filter(|c| c.2 >= 4).map(|c| c.1 + u16::from(c.2)).max().unwrap_or(8);
    let end_1b = at;
    let ceb = usize::from(bit).div_ceil(8) as u16;
    let row_size = end_1b + ceb;
    cols.sort_by_key(|c| c.0);

    let mut heap = Heap::new();
    let mut subs = Subs::new();
    let mut matrix = Vec::new();
    let per_block = ndb.max_block() / usize::from(row_size);
    for (n, (row_id, values)) in rows.iter().enumerate() {
        let mut row = vec![0u8; usize::from(row_size)];
        row[0..4].copy_from_slice(&row_id.to_le_bytes());
        let mut present = vec![0usize, 1];
        for &(tag, ib, cb, ibit) in &cols {
            let id = (tag >> 16) as u16;
            if id == 0x67f2 || id == 0x67f3 {
                continue;
            }
            let Some((_, v)) = values.iter().find(|(i, _)| *i == id) else { continue };
            let (ty, bytes) = typed(ndb.layout, v);
            let cell = match ty {
                PT_LONG | PT_BOOLEAN | PT_SYSTIME => bytes,
                _ => hnid(ndb, &mut heap, &mut subs, &bytes).to_le_bytes().to_vec(),
            };
            let (ib, cb) = (usize::from(ib), usize::from(cb));
            row[ib..ib + cb].copy_from_slice(&cell[..cb]);
            present.push(usize::from(ibit));
        }
        for b in present {
            row[usize::from(end_1b) + b / 8] |= 0x80 >> (b % 8);
        }
        // Rows never straddle the blocks of a row matrix in a subnode.
        if n > 0 && n % per_block == 0 {
            let pad = ndb.max_block() - per_block * usize::from(row_size);
            matrix.extend(std::iter::repeat_n(0, pad));
        }
        matrix.extend_from_slice(&row);
    }
    let index_ent = if ndb.layout == Layout::Ansi { 2 } else { 4 };
    let index: Vec<(Vec<u8>, Vec<u8>)> = rows
        .iter()
        .enumerate()
        .map(|(i, (row_id, _))| (row_id.to_le_bytes().to_vec(), (i as u32).to_le_bytes()[..index_ent].to_vec()))
        .collect();
    let row_index = bth(&mut heap, 4, index_ent, index);
    let rows_hnid = if matrix.is_empty() {
        0
    } else if matrix.len() > HEAP_MAX {
        subs.value(ndb, &matrix)
    } else {
        heap.add(matrix)
    };
    let mut info = vec![0x7c, cols.len() as u8];
    for v in [end_4b, end_4b, end_1b, row_size] {
        info.extend_from_slice(&v.to_le_bytes());
    }
    info.extend_from_slice(&row_index.to_le_bytes());
    info.extend_from_slice(&rows_hnid.to_le_bytes());
    info.extend_from_slice(&0u32.to_le_bytes());
    for (tag, ib, cb, ibit) in &cols {
        info.extend_from_slice(&tag.to_le_bytes());
        info.extend_from_slice(&ib.to_le_bytes());
        info.push(*cb);
        info.push(*ibit);
    }
    let root = heap.add(info);
    let data = ndb.block(&heap.bytes(0x7c, root), false);
    let sub = ndb.subnodes(&subs.entries);
    (data, sub)
}

/// A folder of an [`Archive`].
struct Folder {
    nid: u32,
    parent: u32,
    props: Props,
}

/// A message of an [`Archive`].
struct Message {
    nid: u32,
    folder: u32,
    props: Props,
    recipients: Vec<Props>,
}

/// An Outlook data file made of a store, folders and messages (MS-PST §2.4).
pub struct Archive {
    pub ndb: Ndb,
    store: Props,
    /// Named properties (property set GUID, LID), the first being property id 0x8000.
    named: Vec<([u8; 16], u32)>,
    folders: Vec<Folder>,
    messages: Vec<Message>,
}

/// PSETID_Address and PSETID_Appointment (MS-OXPROPS §1.3.2), as GUIDs are stored.
pub const PSETID_ADDRESS: [u8; 16] = [4, 0x20, 6, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0x46];
pub const PSETID_APPOINTMENT: [u8; 16] = [2, 0x20, 6, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0x46];

/// The node of the root folder; the top of the personal folders is [`Archive::TOP`].
pub const ROOT: u32 = 0x122;

impl Archive {
    /// The folder Outlook shows as the store itself.
    pub const TOP: u32 = 0x8022;

    pub fn new(layout: Layout, crypt: u8) -> Archive {
        let mut a = Archive {
            ndb: Ndb::new(layout, crypt),
            store: Vec::new(),
            named: Vec::new(),
            folders: Vec::new(),
            messages: Vec::new(),
        };
        // PidLidFileUnder, which Outlook's own files always name.
        a.named(PSETID_ADDRESS, 0x8005);
        a.folders.push(Folder {
            nid: Self::TOP,
            parent: ROOT,
            props: vec![(0x3001, V::Text("Top of Personal Folders".into()))],
        });
        a
    }

    /// Properties of the message store besides its name, record key and the entry ids of its
    /// special folders.
    pub fn store_props(&mut self, props: Props) {
        self.store.extend(props);
    }

    /// A folder named `name` (and `props`) below `parent`; its node id.
    pub fn folder(&mut self, parent: u32, name: V, props: Props) -> u32 {
        let nid = ((0x402 + self.folders.len() as u32) << 5) | 0x02;
        let mut all = vec![(0x3001, name)];
        all.extend(props);
        self.folders.push(Folder { nid, parent, props: all });
        nid
    }

    /// A message in `folder` with `props` and recipients; its node id.
    pub fn message(&mut self, folder: u32, props: Props, recipients: Vec<Props>) -> u32 {
        let nid = ((0x10001 + self.messages.len() as u32) << 5) | 0x04;
        self.messages.push(Message { nid, folder, props, recipients });
        nid
    }

    const UID: [u8; 16] = *b"mailshelf-tests!";

    /// The property id of the named property `lid` of the set `guid` in this archive.
    pub fn named(&mut self, guid: [u8; 16], lid: u32) -> u16 {
        let at = match self.named.iter().position(|n| *n == (guid, lid)) {
            Some(at) => at,
            None => {
                self.named.push((guid, lid));
                self.named.len() - 1
            }
        };
        0x8000 + at as u16
    }

    /// An EntryID of a node in this store (MS-PST §2.4.3.2).
    pub fn entry_id(nid: u32) -> Vec<u8> {
        let mut e = vec![0u8; 4];
        e.extend_from_slice(&Self::UID);
        e.extend_from_slice(&nid.to_le_bytes());
        e
    }

    pub fn finish(mut self) -> Vec<u8> {
        let ndb = &mut self.ndb;
        // The message store.
        let mut store = vec![
            (0x0ff9, V::Binary(Self::UID.to_vec())),
            (0x3001, V::Text("Personal Folders".into())),
            (0x35e0, V::Binary(Self::entry_id(Self::TOP))),
        ];
        store.extend(self.store.iter().cloned());
        let (d, s) = pc(ndb, &store, &BTreeMap::new());
        ndb.node(0x21, 0, d, s);
        // The name-to-id map (MS-PST §2.4.7): 251 buckets, and the named properties given, each
        // an entry (LID, GUID index << 1, property index) with its GUID in the GUID stream.
        let mut guids: Vec<[u8; 16]> = Vec::new();
        let mut entries = Vec::new();
        for (i, (guid, lid)) in self.named.iter().enumerate() {
            let g = match guids.iter().position(|g| g == guid) {
                Some(g) => g,
                None => {
                    guids.push(*guid);
                    guids.len() - 1
                }
            };
            entries.extend_from_slice(&lid.to_le_bytes());
            entries.extend_from_slice(&(((g as u32 + 3) << 1) | ((i as u32) << 16)).to_le_bytes());
        }
        let names = vec![
            (0x0001, V::Long(251)),
            (0x0002, V::Binary(guids.concat())),
            (0x0003, V::Binary(entries)),
            (0x0004, V::Binary(Vec::new())),
        ];
        let (d, s) = pc(ndb, &names, &BTreeMap::new());
        ndb.node(0x61, 0, d, s);
        // Folders, the root first.
        let mut all: Vec<(u32, u32, Props)> = vec![(ROOT, ROOT, vec![(0x3001, V::Text(String::new()))])];
        all.extend(self.folders.iter().map(|f| (f.nid, f.parent, f.props.clone())));
        let folder_columns = [
            (0x3001, if ndb.layout == Layout::Ansi { PT_STRING8 } else { PT_UNICODE }),
            (0x3602, PT_LONG),
            (0x3603, PT_LONG),
            (0x360a, PT_BOOLEAN),
        ];
        let message_columns = [
            (0x001a, if ndb.layout == Layout::Ansi { PT_STRING8 } else { PT_UNICODE }),
            (0x0037, if ndb.layout == Layout::Ansi { PT_STRING8 } else { PT_UNICODE }),
            (0x0e07, PT_LONG),
        ];
        for (nid, parent, props) in &all {
            let children: Vec<&(u32, u32, Props)> = all.iter().filter(|c| c.1 == *nid && c.0 != *nid).collect();
            let messages: Vec<&Message> = self.messages.iter().filter(|m| m.folder == *nid).collect();
            let mut props = props.clone();
            props.push((0x3602, V::Long(messages.len() as u32)));
            props.push((0x3603, V::Long(0)));
            props.push((0x360a, V::Bool(!children.is_empty())));
            let (d, s) = pc(ndb, &props, &BTreeMap::new());
            ndb.node(*nid, *parent, d, s);
            let rows: Vec<(u32, Props)> = children
                .iter()
                .map(|c| {
                    let mut row = c.2.clone();
                    let count = self.messages.iter().filter(|m| m.folder == c.0).count() as u32;
                    row.push((0x3602, V::Long(count)));
                    row.push((0x3603, V::Long(0)));
                    row.push((0x360a, V::Bool(all.iter().any(|g| g.1 == c.0 && g.0 != c.0))));
                    (c.0, row)
                })
                .collect();
            let (d, s) = tc(ndb, &folder_columns, &rows);
            ndb.node((nid & !0x1f) | 0x0d, 0, d, s);
            let rows: Vec<(u32, Props)> = messages.iter().map(|m| (m.nid, m.props.clone())).collect();
            let (d, s) = tc(ndb, &message_columns, &rows);
            ndb.node((nid & !0x1f) | 0x0e, 0, d, s);
            let (d, s) = tc(ndb, &message_columns, &[]);
            ndb.node((nid & !0x1f) | 0x0f, 0, d, s);
        }
        // Messages, each with its recipient table.
        let text = if ndb.layout == Layout::Ansi { PT_STRING8 } else { PT_UNICODE };
        let recipient_columns = [(0x0c15, PT_LONG), (0x3001, text), (0x3002, text), (0x3003, text), (0x39fe, text)];
        for m in &self.messages {
            let rows: Vec<(u32, Props)> = m.recipients.iter().enumerate().map(|(i, r)| (i as u32, r.clone())).collect();
            let mut extra = BTreeMap::new();
            extra.insert(0x692, tc(ndb, &recipient_columns, &rows));
            let (d, s) = pc(ndb, &m.props, &extra);
            ndb.node(m.nid, m.folder, d, s);
        }
        self.ndb.finish()
    }
}
