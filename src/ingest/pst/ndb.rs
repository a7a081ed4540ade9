//! MS-PST's node database (NDB, §2.2): the file header, the two B-trees of 512-byte pages (nodes by
//! node id, blocks by block id), data blocks and the data trees (XBLOCK, XXBLOCK) that chain them,
//! and subnode trees (SLBLOCK, SIBLOCK). Everything above works on what this layer hands out: a
//! node's data as a list of decoded blocks, and its subnodes.
//!
//! The file is read a page or a block at a time; every walk is bounded (B-tree depth, each page of
//! the node index read once, bytes per node and per item).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::crypt::{crypt_block, CRYPT_CYCLIC, MPBB_I};
use super::PST_MAGIC;
use crate::error::Error;
use crate::limits::{MAX_MSG_ENTRIES, MAX_MSG_STREAM, MAX_PST_DEPTH, MAX_PST_ITEM, MAX_PST_NODES};

/// One node of the node B-tree: where its data and its subnodes are, and its parent folder.
#[derive(Debug, Clone, Copy)]
pub(super) struct NodeRef {
    pub data: u64,
    pub sub: u64,
    pub parent: u32,
}

/// An open archive: the file and what its header says.
pub(super) struct Pst {
    pub(super) file: File,
    pub(super) len: u64,
    pub(super) unicode: bool,
    pub(super) crypt: u8,
    pub(super) nbt_root: u64,
    pub(super) bbt_root: u64,
    /// The folders and items of the node B-tree, when it was read whole (for a listing); a single
    /// item is found by walking down to it.
    pub(super) nodes: HashMap<u32, NodeRef>,
    /// B-tree pages read lately: every block of an item is found through the same few.
    pub(super) pages: HashMap<u64, [u8; 512]>,
    /// Bytes still allowed to be read from blocks (each block counted as at least a page): blocks
    /// shared by many attachments or messages that reach back to their own subnodes cannot make
    /// one small item read as a huge one.
    pub(super) budget: usize,
    pub(super) notices: Vec<String>,
}

/// B-tree pages kept by one reader (2 MiB).
const PAGE_CACHE: usize = 4096;

pub(super) fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
pub(super) fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
pub(super) fn le64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}
impl Pst {
    pub(super) fn open(path: &Path) -> Result<Pst, Error> {
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
    pub(super) fn node(&mut self, nid: u32) -> Option<NodeRef> {
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
    pub(super) fn read_nodes(&mut self) {
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
    pub(super) fn data(&mut self, bid: u64) -> Option<Vec<Vec<u8>>> {
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
    pub(super) fn subnodes(&mut self, bid: u64) -> HashMap<u32, (u64, u64)> {
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
