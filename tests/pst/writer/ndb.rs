//! The node database of a written archive (MS-PST §2.2; libpff's description of the 4 KiB layout):
//! the encodings, data blocks with their trailers, data and subnode trees, the two B-trees of
//! pages and the header.

use std::collections::BTreeMap;
use std::io::Write as _;

use super::{Layout, CRYPT_CYCLIC, CRYPT_PERMUTE};

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
