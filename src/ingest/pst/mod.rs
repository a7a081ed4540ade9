//! Outlook data files, `.pst` and `.ost` (MS-PST), Unicode and ANSI, read on the specification.
//! The file is opened read-only and read a page or block at a time, so an archive of any size needs
//! the memory of one item (and of the list of its nodes). Three layers, as the specification has
//! them: the node database (B-trees of pages, blocks, the permutation and cyclic "encryptions"), the lists and tables
//! (heap-on-node, B-tree-on-heap, property and table contexts), and the messaging layer (the store,
//! its folder tree, its items).
//!
//! An item holds the same MAPI properties a `.msg` file does, so it is written as the `.msg` Outlook
//! would export (the same property streams, recipients, attachments and named-property map, in a
//! compound file built in memory) and read by [`super::outlook`]: every item class is shown as a
//! `.msg` of that class is, and `/raw/` serves the item as a `.msg`.
//!
//! Every walk is bounded: B-tree depth, pages visited (each page once), blocks and bytes per node,
//! rows per table and records per heap, so cyclic or absurd structures end in a notice, not a hang.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::Error;
use crate::limits::{MAX_MSG_ENTRIES, MAX_MSG_NESTING, MAX_MSG_STREAM, MAX_PST_DEPTH, MAX_PST_ITEM, MAX_PST_NODES};

/// The first bytes of an Outlook data file.
pub const PST_MAGIC: &[u8] = b"!BDN";

/// NDB_CRYPT_PERMUTE's encoding table (mpbbR, MS-PST §5.1); decoding uses its inverse.
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

const fn inverse(t: &[u8; 256]) -> [u8; 256] {
    let mut out = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        out[t[i] as usize] = i as u8;
        i += 1;
    }
    out
}

/// mpbbI: what NDB_CRYPT_PERMUTE decodes with.
const MPBB_I: [u8; 256] = inverse(&MPBB_R);

/// mpbbS, the middle third of MS-PST §5.1's table: NDB_CRYPT_CYCLIC's substitution. It is its own
/// inverse, which is what makes the cyclic algorithm decode with the same steps it encodes with.
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

/// NDB_CRYPT_CYCLIC ("high" encoding, MS-PST §5.2): a substitution keyed by the block's id and the
/// byte's position; the same call encodes and decodes.
fn crypt_cyclic(buf: &mut [u8], key: u32) {
    let mut w = (key ^ (key >> 16)) as u16;
    for b in buf {
        let [lo, hi] = w.to_le_bytes();
        let mut x = b.wrapping_add(lo);
        x = MPBB_R[usize::from(x)].wrapping_add(hi);
        x = MPBB_S[usize::from(x)].wrapping_sub(hi);
        *b = MPBB_I[usize::from(x)].wrapping_sub(lo);
        w = w.wrapping_add(1);
    }
}

// bCryptMethod: how data blocks are encoded (MS-PST §2.2.2.6).
const CRYPT_PERMUTE: u8 = 1;
const CRYPT_CYCLIC: u8 = 2;

/// Encodes (`permute` = mpbbR) or decodes (mpbbI) a data block in place by the file's method; the
/// cyclic method's key is the block id's low 32 bits (its high bits are 0 in ANSI files).
fn crypt_block(buf: &mut [u8], crypt: u8, bid: u64, permute: &[u8; 256]) {
    match crypt {
        CRYPT_PERMUTE => buf.iter_mut().for_each(|b| *b = permute[usize::from(*b)]),
        CRYPT_CYCLIC => crypt_cyclic(buf, bid as u32),
        _ => {}
    }
}

// Node types (the low 5 bits of a NID) and the NIDs the specification fixes (MS-PST §2.4.1).
const NID_TYPE_NORMAL_FOLDER: u32 = 0x02;
const NID_TYPE_NORMAL_MESSAGE: u32 = 0x04;
const NID_TYPE_ATTACHMENT: u32 = 0x05;
const NID_MESSAGE_STORE: u32 = 0x21;
const NID_NAME_TO_ID_MAP: u32 = 0x61;
const NID_RECIPIENT_TABLE: u32 = 0x692;

// Properties the messaging layer needs.
const DISPLAY_NAME: u16 = 0x3001;
const ATTRIBUTE_HIDDEN: u16 = 0x10f4;
const IPM_SUBTREE_ENTRYID: u16 = 0x35e0;
const PST_PASSWORD: u16 = 0x67ff;
const ATTACH_DATA_OBJECT: u16 = 0x3701;
const SUBJECT: u16 = 0x0037;
const PT_OBJECT: u16 = 0x000d;

/// One node of the node B-tree: where its data and its subnodes are, and its parent folder.
#[derive(Debug, Clone, Copy)]
struct NodeRef {
    data: u64,
    sub: u64,
    parent: u32,
}

/// One item of an archive: its node id and the folder it is filed in (Outlook's display names below
/// the store's top folder, `/`-separated; empty for the top folder itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PstItem {
    pub node: u32,
    pub folder: String,
}

/// What [`list`] finds in an archive.
#[derive(Debug, Default)]
pub struct PstListing {
    pub items: Vec<PstItem>,
    /// What could not be read, and what the reader should know (a password set), in words.
    pub notices: Vec<String>,
}

/// The node an archive's notices are read back from (no item has node 0).
pub const NOTICE_NODE: u32 = 0;

/// An open archive: the file and what its header says.
struct Pst {
    file: File,
    len: u64,
    unicode: bool,
    crypt: u8,
    nbt_root: u64,
    bbt_root: u64,
    /// The folders and items of the node B-tree, when it was read whole (for a listing); a single
    /// item is found by walking down to it.
    nodes: HashMap<u32, NodeRef>,
    /// B-tree pages read lately: every block of an item is found through the same few.
    pages: HashMap<u64, [u8; 512]>,
    /// Bytes still allowed to be read from blocks (each block counted as at least a page): blocks
    /// shared by many attachments or messages that reach back to their own subnodes cannot make
    /// one small item read as a huge one.
    budget: usize,
    notices: Vec<String>,
}

/// B-tree pages kept by one reader (2 MiB).
const PAGE_CACHE: usize = 4096;

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn le64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl Pst {
    fn open(path: &Path) -> Result<Pst, Error> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let mut header = [0u8; 564];
        let n = read_up_to(&mut file, 0, &mut header)?;
        let header = &header[..n];
        if !header.starts_with(PST_MAGIC) || header.get(8..10) != Some(b"SM") {
            return Err(Error::Unparseable);
        }
        let version = le16(header, 10).ok_or(Error::Unparseable)?;
        // 14 and 15 are ANSI; 23 Unicode; 36 is the 4 KiB-page layout of recent `.ost` files, which
        // this reader does not follow.
        let unicode = match version {
            14 | 15 => false,
            23 => true,
            _ => return Err(Error::Unparseable),
        };
        let (nbt_root, bbt_root, crypt) = if unicode {
            (le64(header, 224), le64(header, 240), header.get(513).copied())
        } else {
            (le32(header, 188).map(u64::from), le32(header, 196).map(u64::from), header.get(461).copied())
        };
        let (Some(nbt_root), Some(bbt_root), Some(crypt)) = (nbt_root, bbt_root, crypt) else {
            return Err(Error::Unparseable);
        };
        let mut pst = Pst {
            file,
            len,
            unicode,
            crypt,
            nbt_root,
            bbt_root,
            nodes: HashMap::new(),
            pages: HashMap::new(),
            budget: MAX_PST_ITEM,
            notices: Vec::new(),
        };
        if crypt > CRYPT_CYCLIC {
            pst.notices.push(format!(
                "the archive uses an encoding this reader does not know ({crypt}); items may read as garbage"
            ));
        }
        Ok(pst)
    }

    /// A page of a B-tree (512 bytes), when its trailer says it is one of `ptype`.
    fn page(&mut self, ib: u64, ptype: u8) -> Option<[u8; 512]> {
        let trailer = if self.unicode { 496 } else { 500 };
        if let Some(page) = self.pages.get(&ib) {
            return (page[trailer] == ptype).then_some(*page);
        }
        if ib.checked_add(512)? > self.len {
            return None;
        }
        let mut page = [0u8; 512];
        (read_up_to(&mut self.file, ib, &mut page).ok()? == 512).then_some(())?;
        if self.pages.len() >= PAGE_CACHE {
            self.pages.clear();
        }
        self.pages.insert(ib, page);
        (page[trailer] == ptype && page[trailer + 1] == ptype).then_some(page)
    }

    /// A node of the node B-tree: from the listing when it was read, else by walking down to it.
    fn node(&mut self, nid: u32) -> Option<NodeRef> {
        if let Some(n) = self.nodes.get(&nid) {
            return Some(*n);
        }
        let e = self.leaf_entry(self.nbt_root, 0x81, u64::from(nid), u64::MAX)?;
        let wide = if self.unicode { 8 } else { 4 };
        let word = |at: usize| if wide == 8 { le64(&e, at) } else { le32(&e, at).map(u64::from) };
        Some(NodeRef { data: word(wide)?, sub: word(2 * wide)?, parent: le32(&e, 3 * wide)? })
    }

    /// The leaf entry of a B-tree whose key (masked) is `key`, walking down from `root`.
    fn leaf_entry(&mut self, root: u64, ptype: u8, key: u64, mask: u64) -> Option<Vec<u8>> {
        let mut ib = root;
        for _ in 0..=MAX_PST_DEPTH {
            let page = self.page(ib, ptype)?;
            let (count, size, level) = self.page_shape(&page);
            let room = if self.unicode { 488 } else { 496 };
            if size == 0 || count * size > room {
                return None;
            }
            let entries = page[..count * size].chunks_exact(size);
            let key_of = |e: &[u8]| if self.unicode { le64(e, 0) } else { le32(e, 0).map(u64::from) };
            if level == 0 {
                for e in entries {
                    if key_of(e)? & mask == key {
                        return Some(e.to_vec());
                    }
                }
                return None;
            }
            let mut next = None;
            for e in entries {
                if key_of(e)? & mask > key {
                    break;
                }
                next = if self.unicode { le64(e, 16) } else { le32(e, 8).map(u64::from) };
            }
            ib = next?;
        }
        None
    }

    /// Count, size and level of a B-tree page's entries.
    fn page_shape(&self, page: &[u8; 512]) -> (usize, usize, u8) {
        let at = if self.unicode { 488 } else { 496 };
        (usize::from(page[at]), usize::from(page[at + 2]), page[at + 3])
    }

    /// Reads the whole node B-tree: every page once, no deeper than the specification allows.
    fn read_nodes(&mut self) {
        let mut seen = HashSet::new();
        let mut todo = vec![(self.nbt_root, 0usize)];
        let mut bad = 0usize;
        while let Some((ib, depth)) = todo.pop() {
            if depth > MAX_PST_DEPTH || !seen.insert(ib) || self.nodes.len() >= MAX_PST_NODES {
                bad += 1;
                continue;
            }
            let Some(page) = self.page(ib, 0x81) else {
                bad += 1;
                continue;
            };
            let (count, size, level) = self.page_shape(&page);
            let room = if self.unicode { 488 } else { 496 };
            let wide = if self.unicode { 8 } else { 4 };
            if size == 0 || count * size > room {
                bad += 1;
                continue;
            }
            for e in page[..count * size].chunks_exact(size) {
                if level > 0 {
                    let child = if self.unicode { le64(e, 16) } else { le32(e, 8).map(u64::from) };
                    todo.extend(child.map(|c| (c, depth + 1)));
                } else {
                    let word = |at: usize| if wide == 8 { le64(e, at) } else { le32(e, at).map(u64::from) };
                    let (Some(nid), Some(data), Some(sub), Some(parent)) =
                        (word(0), word(wide), word(2 * wide), le32(e, 3 * wide))
                    else {
                        continue;
                    };
                    // Only the store's own nodes, folders and items are needed for a listing.
                    if matches!(nid as u32 & 0x1f, 0x01..=0x04) {
                        self.nodes.insert(nid as u32, NodeRef { data, sub, parent });
                    }
                }
            }
        }
        if bad > 0 {
            self.notices
                .push(format!("{bad} page(s) of the node index could not be read; the items they list are missing"));
        }
    }

    /// Where a block is and how long: a walk down the block B-tree.
    fn find_block(&mut self, bid: u64) -> Option<(u64, usize)> {
        let e = self.leaf_entry(self.bbt_root, 0x80, bid & !1, !1)?;
        if self.unicode {
            Some((le64(&e, 8)?, usize::from(le16(&e, 16)?)))
        } else {
            Some((u64::from(le32(&e, 4)?), usize::from(le16(&e, 8)?)))
        }
    }

    /// A block's bytes, decoded when it holds data (internal blocks are never encoded).
    fn block(&mut self, bid: u64) -> Option<Vec<u8>> {
        let (ib, cb) = self.find_block(bid)?;
        if cb > 8192 || ib.checked_add(cb as u64)? > self.len {
            return None;
        }
        self.budget = self.budget.checked_sub(cb.max(512))?;
        let mut buf = vec![0u8; cb];
        (read_up_to(&mut self.file, ib, &mut buf).ok()? == cb).then_some(())?;
        if bid & 2 == 0 {
            crypt_block(&mut buf, self.crypt, bid, &MPBB_I);
        }
        Some(buf)
    }

    /// A node's data, block by block (a heap addresses its blocks by number, so they stay apart):
    /// a data block, or the blocks an XBLOCK or XXBLOCK lists.
    fn data(&mut self, bid: u64) -> Option<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let mut total = 0usize;
        self.data_into(bid, 0, &mut out, &mut total)?;
        Some(out)
    }

    fn data_into(&mut self, bid: u64, depth: usize, out: &mut Vec<Vec<u8>>, total: &mut usize) -> Option<()> {
        let block = self.block(bid)?;
        if bid & 2 == 0 {
            *total += block.len();
            if *total > MAX_MSG_STREAM {
                return None;
            }
            out.push(block);
            return Some(());
        }
        // XBLOCK (level 1) or XXBLOCK (level 2): btype 1, cLevel, cEnt, lcbTotal, then block ids.
        let (btype, level, count) = (*block.first()?, *block.get(1)?, usize::from(le16(&block, 2)?));
        if btype != 1 || !(1..=2).contains(&level) || depth >= 2 {
            return None;
        }
        let wide = if self.unicode { 8 } else { 4 };
        for i in 0..count {
            let at = 8 + i * wide;
            let child = if self.unicode { le64(&block, at)? } else { u64::from(le32(&block, at)?) };
            self.data_into(child, depth + 1, out, total)?;
        }
        Some(())
    }

    /// A node's subnodes (SLBLOCK, or an SIBLOCK of them): nid → (data, subnodes).
    fn subnodes(&mut self, bid: u64) -> HashMap<u32, (u64, u64)> {
        let mut out = HashMap::new();
        if bid != 0 {
            self.subnodes_into(bid, 0, &mut out);
        }
        out
    }

    fn subnodes_into(&mut self, bid: u64, depth: usize, out: &mut HashMap<u32, (u64, u64)>) -> Option<()> {
        let block = self.block(bid)?;
        let (btype, level, count) = (*block.first()?, *block.get(1)?, usize::from(le16(&block, 2)?));
        if btype != 2 || depth > 1 {
            return None;
        }
        let (head, wide) = if self.unicode { (8, 8) } else { (4, 4) };
        let word = |at: usize| if wide == 8 { le64(&block, at) } else { le32(&block, at).map(u64::from) };
        for i in 0..count.min(4 * MAX_MSG_ENTRIES) {
            if level == 0 {
                let at = head + i * 3 * wide;
                out.insert(word(at)? as u32, (word(at + wide)?, word(at + 2 * wide)?));
            } else {
                let child = word(head + i * 2 * wide + wide)?;
                self.subnodes_into(child, depth + 1, out);
            }
        }
        Some(())
    }

    /// The property context of a node of the tree.
    fn node_props(&mut self, nid: u32) -> Option<Vec<Prop>> {
        let node = self.node(nid)?;
        self.props(node.data, node.sub)
    }

    fn props(&mut self, data: u64, sub: u64) -> Option<Vec<Prop>> {
        let heap = Heap { blocks: self.data(data)? };
        let subs = self.subnodes(sub);
        let (sig, root) = heap.root()?;
        if sig != 0xbc {
            return None;
        }
        let records = heap.bth(root)?;
        let mut props = Vec::with_capacity(records.len());
        for (key, value) in records {
            let (Some(id), Some(ty), Some(hnid)) = (le16(&key, 0), le16(&value, 0), le32(&value, 2)) else { continue };
            let value = match fixed_size(ty) {
                Some(n) if n <= 4 => Val::Fixed(u64::from(hnid)),
                _ if ty == PT_OBJECT => Val::Object(self.object_node(&heap, &subs, hnid)),
                _ => match self.hnid(&heap, &subs, hnid) {
                    Some(bytes) if fixed_size(ty).is_some() => Val::Fixed(le64(&bytes, 0).unwrap_or(0)),
                    Some(bytes) => Val::Bytes(bytes),
                    None => continue,
                },
            };
            props.push(Prop { id, ty, value });
        }
        Some(props)
    }

    /// A heap item or a subnode's data.
    fn hnid(&mut self, heap: &Heap, subs: &HashMap<u32, (u64, u64)>, hnid: u32) -> Option<Vec<u8>> {
        if hnid == 0 {
            return Some(Vec::new());
        }
        if hnid & 0x1f == 0 {
            return heap.get(hnid).map(<[u8]>::to_vec);
        }
        let (data, _) = *subs.get(&hnid)?;
        Some(self.data(data)?.concat())
    }

    /// The subnode an object property (an attached message) lives in.
    fn object_node(&mut self, heap: &Heap, subs: &HashMap<u32, (u64, u64)>, hnid: u32) -> Option<(u64, u64)> {
        let nid = if hnid & 0x1f == 0 { le32(heap.get(hnid)?, 0)? } else { hnid };
        subs.get(&nid).copied()
    }

    /// The rows of a table context, each as its properties.
    fn table(&mut self, data: u64, sub: u64) -> Option<Vec<Vec<Prop>>> {
        let heap = Heap { blocks: self.data(data)? };
        let subs = self.subnodes(sub);
        let (sig, root) = heap.root()?;
        if sig != 0x7c {
            return None;
        }
        let info = heap.get(root)?.to_vec();
        let cols = usize::from(*info.get(1)?);
        let row_size = usize::from(le16(&info, 8)?);
        let bitmap = usize::from(le16(&info, 6)?);
        let rows_hnid = le32(&info, 14)?;
        if row_size == 0 {
            return Some(Vec::new());
        }
        let row_blocks: Vec<Vec<u8>> = if rows_hnid == 0 {
            Vec::new()
        } else if rows_hnid & 0x1f == 0 {
            vec![heap.get(rows_hnid)?.to_vec()]
        } else {
            let (d, _) = *subs.get(&rows_hnid)?;
            self.data(d)?
        };
        let mut out = Vec::new();
        for row in row_blocks.iter().flat_map(|b| b.chunks_exact(row_size)).take(MAX_MSG_ENTRIES) {
            let mut props = Vec::new();
            for c in 0..cols {
                let d = info.get(22 + c * 8..30 + c * 8)?;
                let (ty, id) = (le16(d, 0)?, le16(d, 2)?);
                let (at, size, bit) = (usize::from(le16(d, 4)?), usize::from(d[6]), usize::from(d[7]));
                let present = row.get(bitmap + bit / 8).is_some_and(|b| b & (0x80 >> (bit % 8)) != 0);
                let Some(cell) = row.get(at..at + size).filter(|_| present) else { continue };
                let mut raw = [0u8; 8];
                raw[..size.min(8)].copy_from_slice(&cell[..size.min(8)]);
                let value = if fixed_size(ty).is_some() {
                    Val::Fixed(u64::from_le_bytes(raw))
                } else {
                    match self.hnid(&heap, &subs, u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])) {
                        Some(b) => Val::Bytes(b),
                        None => continue,
                    }
                };
                props.push(Prop { id, ty, value });
            }
            out.push(props);
        }
        Some(out)
    }
}

/// Reads what there is at `at`, up to `buf.len()` bytes (less at the end of the file).
fn read_up_to(file: &mut File, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    file.seek(SeekFrom::Start(at))?;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Size of a fixed-size property type; `None` for variable-size ones.
fn fixed_size(ty: u16) -> Option<usize> {
    match ty {
        0x0002 => Some(2),
        0x0003 | 0x0004 | 0x000a | 0x000b => Some(4),
        0x0005 | 0x0006 | 0x0007 | 0x0014 | 0x0040 => Some(8),
        _ => None,
    }
}

/// One property of an object.
#[derive(Debug, Clone)]
struct Prop {
    id: u16,
    ty: u16,
    value: Val,
}

#[derive(Debug, Clone)]
enum Val {
    /// A fixed-size value, little-endian in the low bytes.
    Fixed(u64),
    Bytes(Vec<u8>),
    /// An attached message: its node (data, subnodes), when found.
    Object(Option<(u64, u64)>),
}

fn find(props: &[Prop], id: u16) -> Option<&Prop> {
    props.iter().find(|p| p.id == id)
}

/// A property as text (Unicode or 8-bit; 8-bit strings in the archive's ANSI code page are read as
/// Windows-1252, which is what folder names in Western archives are).
fn text(props: &[Prop], id: u16) -> Option<String> {
    let p = find(props, id)?;
    let Val::Bytes(b) = &p.value else { return None };
    let s = match p.ty {
        0x001f => {
            String::from_utf16_lossy(&b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect::<Vec<_>>())
        }
        0x001e => encoding_rs::WINDOWS_1252.decode(b).0.into_owned(),
        _ => return None,
    };
    Some(s.trim_end_matches('\0').to_string())
}

/// A heap-on-node: its blocks, and items addressed by HID (block number, index).
struct Heap {
    blocks: Vec<Vec<u8>>,
}

impl Heap {
    /// The client signature and the user root of the heap.
    fn root(&self) -> Option<(u8, u32)> {
        let first = self.blocks.first()?;
        (*first.get(2)? == 0xec).then_some((*first.get(3)?, le32(first, 4)?))
    }

    fn get(&self, hid: u32) -> Option<&[u8]> {
        if hid & 0x1f != 0 {
            return None;
        }
        let index = ((hid >> 5) & 0x7ff) as usize;
        let block = self.blocks.get((hid >> 16) as usize)?;
        let map = usize::from(le16(block, 0)?);
        let count = usize::from(le16(block, map)?);
        if index == 0 || index > count {
            return None;
        }
        let start = usize::from(le16(block, map + 4 + (index - 1) * 2)?);
        let end = usize::from(le16(block, map + 4 + index * 2)?);
        block.get(start..end)
    }

    /// Every record of the B-tree-on-heap at `hid`: (key, data).
    fn bth(&self, hid: u32) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
        let header = self.get(hid)?;
        if *header.first()? != 0xb5 {
            return None;
        }
        let (key, ent, levels, root) =
            (usize::from(header[1]), usize::from(*header.get(2)?), usize::from(*header.get(3)?), le32(header, 4)?);
        let mut out = Vec::new();
        if root == 0 || key == 0 || levels > MAX_PST_DEPTH {
            return Some(out);
        }
        let mut todo = vec![(root, levels)];
        let mut seen = HashSet::new();
        while let Some((hid, level)) = todo.pop() {
            if !seen.insert(hid) || out.len() > 4 * MAX_MSG_ENTRIES {
                continue;
            }
            let Some(records) = self.get(hid) else { continue };
            if level == 0 {
                out.extend(records.chunks_exact(key + ent).map(|r| (r[..key].to_vec(), r[key..].to_vec())));
            } else {
                // Pushed in reverse so that records come out in key order.
                let children: Vec<u32> = records.chunks_exact(key + 4).filter_map(|r| le32(r, key)).collect();
                todo.extend(children.into_iter().rev().map(|c| (c, level - 1)));
            }
        }
        Some(out)
    }
}

/// The items of an archive with their folders, and notices for what could not be read. Folders are
/// those below the store's top folder ("Top of Personal Folders", which Outlook shows as the store
/// itself and so is not a folder here); search folders and hidden folders are left out.
pub fn list(path: &Path) -> Result<PstListing, Error> {
    let mut pst = Pst::open(path)?;
    pst.read_nodes();
    let store = pst.node_props(NID_MESSAGE_STORE);
    let top = store.as_deref().and_then(|s| find(s, IPM_SUBTREE_ENTRYID)).and_then(|p| match &p.value {
        Val::Bytes(b) if b.len() >= 24 => le32(b, 20),
        _ => None,
    });
    if store
        .as_deref()
        .and_then(|s| find(s, PST_PASSWORD))
        .is_some_and(|p| matches!(p.value, Val::Fixed(v) if v as u32 != 0))
    {
        pst.notices.push(
            "the archive has a password set; it protects nothing (the data is not encrypted), so it is shown as is"
                .into(),
        );
    }
    let Some(top) = top.filter(|t| pst.nodes.contains_key(t)) else {
        pst.notices.push("the archive's top folder could not be found; no items are shown".into());
        return Ok(PstListing { items: Vec::new(), notices: pst.notices });
    };
    // Folder paths below the top folder; `None` for folders outside it or hidden.
    let folder_ids: Vec<(u32, u32)> = pst
        .nodes
        .iter()
        .filter(|(nid, _)| *nid & 0x1f == NID_TYPE_NORMAL_FOLDER)
        .map(|(nid, n)| (*nid, n.parent))
        .collect();
    let mut names: HashMap<u32, Option<String>> = HashMap::new();
    let mut unreadable = 0usize;
    for (nid, _) in &folder_ids {
        let props = pst.node_props(*nid);
        if props.is_none() {
            unreadable += 1;
        }
        let hidden = props
            .as_deref()
            .and_then(|p| find(p, ATTRIBUTE_HIDDEN))
            .is_some_and(|p| matches!(p.value, Val::Fixed(v) if v & 0xff != 0));
        let name = props.as_deref().and_then(|p| text(p, DISPLAY_NAME)).unwrap_or_else(|| format!("Folder {nid:x}"));
        names.insert(*nid, (!hidden).then(|| name.replace('/', "∕")));
    }
    if unreadable > 0 {
        pst.notices.push(format!("{unreadable} folder(s) could not be read; they are named by number"));
    }
    let parents: HashMap<u32, u32> = folder_ids.into_iter().collect();
    let mut paths: HashMap<u32, Option<String>> = HashMap::new();
    for &nid in parents.keys() {
        let mut chain = Vec::new();
        let mut at = nid;
        let path = loop {
            if at == top {
                chain.reverse();
                break Some(chain.join("/"));
            }
            if chain.len() > MAX_PST_DEPTH * 8 {
                break None;
            }
            match (names.get(&at), parents.get(&at)) {
                (Some(Some(name)), Some(&parent)) if parent != at => {
                    chain.push(name.clone());
                    at = parent;
                }
                _ => break None,
            }
        };
        paths.insert(nid, path);
    }
    let mut items: Vec<PstItem> = pst
        .nodes
        .iter()
        .filter(|(nid, _)| *nid & 0x1f == NID_TYPE_NORMAL_MESSAGE)
        .filter_map(|(nid, n)| Some(PstItem { node: *nid, folder: paths.get(&n.parent)?.clone()? }))
        .collect();
    items.sort_by_key(|i| i.node);
    Ok(PstListing { items, notices: pst.notices })
}

/// One item of an archive, as the `.msg` file Outlook would save it as.
pub fn item_msg(path: &Path, node: u32) -> Result<Vec<u8>, Error> {
    let mut pst = Pst::open(path)?;
    let n = pst.node(node).ok_or(Error::MessageNotFound)?;
    let named = pst.node_props(NID_NAME_TO_ID_MAP).unwrap_or_default();
    let mut out = MsgWriter::new()?;
    if pst.write_message(&mut out, "/", n.data, n.sub, 0).is_none() {
        // A damaged item is still listed, saying what could not be read.
        let notice = format!("item {node} of this Outlook data file could not be read: its data is damaged or missing");
        return Ok(notice_message(path, &[notice]));
    }
    let dir = "/__nameid_version1.0";
    out.storage(dir)?;
    for (id, stream) in [(0x0002u16, "00020102"), (0x0003, "00030102"), (0x0004, "00040102")] {
        let bytes = match find(&named, id).map(|p| &p.value) {
            Some(Val::Bytes(b)) => b.as_slice(),
            _ => &[],
        };
        out.stream(&format!("{dir}/__substg1.0_{stream}"), bytes)?;
    }
    out.finish()
}

/// The notices of an archive, as a message shown in its top folder.
pub fn notice_message(path: &Path, notices: &[String]) -> Vec<u8> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut body = format!("Reading the Outlook data file {name}:\r\n\r\n");
    for n in notices {
        body.push_str(&format!("- {n}\r\n"));
    }
    format!("Subject: About this Outlook data file: {} notice(s)\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}", notices.len())
        .into_bytes()
}

impl Pst {
    /// Writes a message object (properties, recipients, attachments) under `dir` of the `.msg`.
    fn write_message(&mut self, out: &mut MsgWriter, dir: &str, data: u64, sub: u64, depth: usize) -> Option<()> {
        let props = self.props(data, sub)?;
        let subs = self.subnodes(sub);
        let recipients = match subs.get(&NID_RECIPIENT_TABLE) {
            Some(&(d, s)) => self.table(d, s).unwrap_or_default(),
            None => Vec::new(),
        };
        let mut attachments: Vec<(u32, (u64, u64))> =
            subs.iter().filter(|(nid, _)| *nid & 0x1f == NID_TYPE_ATTACHMENT).map(|(n, v)| (*n, *v)).collect();
        attachments.sort_by_key(|a| a.0);
        attachments.truncate(MAX_MSG_ENTRIES);
        let header = if depth == 0 {
            let mut h = vec![0u8; 32];
            for (at, v) in
                [(8, recipients.len()), (12, attachments.len()), (16, recipients.len()), (20, attachments.len())]
            {
                h[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
            }
            h
        } else {
            vec![0u8; 24]
        };
        out.object(dir, &props, header).ok()?;
        for (i, row) in recipients.iter().enumerate() {
            let r = format!("{}__recip_version1.0_#{i:08X}", slash(dir));
            out.storage(&r).ok()?;
            out.object(&r, row, vec![0u8; 8]).ok()?;
        }
        for (i, (_, (d, s))) in attachments.iter().enumerate() {
            let a = format!("{}__attach_version1.0_#{i:08X}", slash(dir));
            out.storage(&a).ok()?;
            let Some(props) = self.props(*d, *s) else {
                // Said where the attachment would be, rather than left out without a word.
                let utf16 = |s: &str| s.encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>();
                let said = [
                    Prop { id: 0x3707, ty: 0x001f, value: Val::Bytes(utf16(&format!("attachment {} (unreadable).txt", i + 1))) },
                    Prop { id: 0x3701, ty: 0x0102, value: Val::Bytes(b"This attachment could not be read from the Outlook data file: its data is damaged, missing or larger than mailshelf reads.\r\n".to_vec()) },
                ];
                out.object(&a, &said, vec![0u8; 8]).ok()?;
                continue;
            };
            out.object(&a, &props, vec![0u8; 8]).ok()?;
            let inner = find(&props, ATTACH_DATA_OBJECT).and_then(|p| match p.value {
                Val::Object(node) => node,
                _ => None,
            });
            if let Some((d, s)) = inner.filter(|_| depth < MAX_MSG_NESTING) {
                let m = format!("{a}/__substg1.0_3701000D");
                out.storage(&m).ok()?;
                self.write_message(out, &m, d, s, depth + 1);
            }
        }
        Some(())
    }
}

fn slash(dir: &str) -> String {
    if dir.ends_with('/') {
        dir.to_string()
    } else {
        format!("{dir}/")
    }
}

/// A `.msg` compound file being built in memory. Every storage gets the same fixed time stamps, so
/// one item always gives the same bytes (its derived id stays the same across re-reads).
struct MsgWriter {
    cf: cfb::CompoundFile<Cursor<Vec<u8>>>,
}

impl MsgWriter {
    fn new() -> Result<MsgWriter, Error> {
        let cf = cfb::CompoundFile::create(Cursor::new(Vec::new()))?;
        let mut w = MsgWriter { cf };
        w.stamp("/")?;
        Ok(w)
    }

    fn stamp(&mut self, path: &str) -> Result<(), Error> {
        self.cf.set_created_time(path, std::time::UNIX_EPOCH)?;
        self.cf.set_modified_time(path, std::time::UNIX_EPOCH)?;
        Ok(())
    }

    fn storage(&mut self, path: &str) -> Result<(), Error> {
        self.cf.create_storage(path)?;
        self.stamp(path)
    }

    fn stream(&mut self, path: &str, bytes: &[u8]) -> Result<(), Error> {
        let mut s = self.cf.create_stream(path)?;
        s.write_all(bytes)?;
        Ok(())
    }

    /// An object's properties: fixed ones in the property stream, the others a stream each.
    fn object(&mut self, dir: &str, props: &[Prop], mut table: Vec<u8>) -> Result<(), Error> {
        for p in props {
            let mut entry = [0u8; 16];
            entry[0..2].copy_from_slice(&p.ty.to_le_bytes());
            entry[2..4].copy_from_slice(&p.id.to_le_bytes());
            entry[4..8].copy_from_slice(&6u32.to_le_bytes());
            match &p.value {
                Val::Fixed(v) => entry[8..16].copy_from_slice(&v.to_le_bytes()),
                Val::Bytes(b) if p.ty & 0x1000 == 0 && matches!(p.ty, 0x001e | 0x001f | 0x0102 | 0x0048) => {
                    let mut b = b.as_slice();
                    // The archive keeps a subject's prefix length before it (`\u{1}\u{4}RE: …`); a
                    // `.msg` does not.
                    if p.id == SUBJECT {
                        b = strip_subject_marker(b, p.ty);
                    }
                    if b.len() > MAX_MSG_STREAM {
                        continue;
                    }
                    entry[8..12].copy_from_slice(&(b.len() as u32).to_le_bytes());
                    self.stream(&format!("{}__substg1.0_{:04X}{:04X}", slash(dir), p.id, p.ty), b)?;
                }
                // Multi-valued binaries (a distribution list's members): the archive keeps a count,
                // offsets and the values in one blob (MS-PST §2.3.3.4.2); a `.msg` keeps a stream
                // of lengths and a stream per value (MS-OXMSG §2.1.4.2.2).
                Val::Bytes(b) if p.ty == 0x1102 => {
                    let Some(values) = multi_values(b) else { continue };
                    let name = format!("{}__substg1.0_{:04X}{:04X}", slash(dir), p.id, p.ty);
                    let mut lengths = Vec::with_capacity(values.len() * 8);
                    for (i, v) in values.iter().enumerate() {
                        lengths.extend_from_slice(&(v.len() as u32).to_le_bytes());
                        lengths.extend_from_slice(&[0; 4]);
                        self.stream(&format!("{name}-{i:08X}"), v)?;
                    }
                    entry[8..12].copy_from_slice(&(lengths.len() as u32).to_le_bytes());
                    self.stream(&name, &lengths)?;
                }
                _ => continue,
            }
            table.extend_from_slice(&entry);
        }
        self.stream(&format!("{}__properties_version1.0", slash(dir)), &table)
    }

    fn finish(mut self) -> Result<Vec<u8>, Error> {
        self.cf.flush()?;
        Ok(self.cf.into_inner().into_inner())
    }
}

/// The values of a variable-size multi-valued property: a count, the offset of each value, the
/// values (each up to the next offset). `None` when the offsets do not fit the blob.
fn multi_values(b: &[u8]) -> Option<Vec<&[u8]>> {
    let count = usize::try_from(le32(b, 0)?).ok().filter(|&n| n <= MAX_MSG_ENTRIES)?;
    let offsets: Vec<usize> = (0..count).map(|i| le32(b, 4 + 4 * i).map(|o| o as usize)).collect::<Option<_>>()?;
    (0..count)
        .map(|i| {
            let end = offsets.get(i + 1).copied().unwrap_or(b.len());
            b.get(offsets[i]..end)
        })
        .collect()
}

fn strip_subject_marker(b: &[u8], ty: u16) -> &[u8] {
    match ty {
        0x001f if b.len() >= 4 && b[0] == 1 && b[1] == 0 => &b[4..],
        0x001e if b.len() >= 2 && b[0] == 1 => &b[2..],
        _ => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_tables_are_inverse() {
        for b in 0..=255u8 {
            assert_eq!(MPBB_I[usize::from(MPBB_R[usize::from(b)])], b);
        }
    }
}

#[cfg(test)]
mod corpus_tests {
    use super::*;

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
            assert_eq!(
                listing.notices.iter().any(|n| n.contains("password")),
                *password,
                "{file}: {:?}",
                listing.notices
            );
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
}

/// Archives written here, small and to the letter of the specification, in both layouts: what the
/// corpus (all Unicode, all permutation-encoded) does not cover.
#[cfg(test)]
mod layout_tests {
    use super::*;

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
}
