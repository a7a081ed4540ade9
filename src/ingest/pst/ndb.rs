//! MS-PST's node database (NDB, §2.2): the file header, the two B-trees of pages (nodes by node id,
//! blocks by block id), data blocks and the data trees (XBLOCK, XXBLOCK) that chain them, and
//! subnode trees (SLBLOCK, SIBLOCK). Everything above works on what this layer hands out: a node's
//! data as a list of decoded blocks, and its subnodes.
//!
//! Three layouts: ANSI (32-bit ids and offsets, 512-byte pages), Unicode (64-bit, 512-byte pages),
//! and the 4 KiB-page layout of the `.ost` files of Outlook 2013 and later, which MS-PST does not
//! describe and libpff's "Personal Folder File (PFF) format" does: 4096-byte B-tree pages with a
//! 40-byte footer (two-byte entry counts), and blocks in 512-byte steps whose 24-byte trailer also
//! holds the block's inflated size; a block stored shorter than that is zlib-compressed (RFC 1950),
//! and is inflated before it is decoded.
//!
//! The file is read a page or a block at a time; every walk is bounded (B-tree depth, each page of
//! the node index read once, bytes per node and per item, the inflated size of a block).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use flate2::read::ZlibDecoder;
use std::path::Path;

use super::crypt::{crypt_block, CRYPT_CYCLIC, MPBB_I};
use crate::error::Error;
use crate::limits::{MAX_MSG_ENTRIES, MAX_MSG_STREAM, MAX_PST_DEPTH, MAX_PST_ITEM, MAX_PST_NODES};

/// One node of the node B-tree: where its data and its subnodes are, and its parent folder.
#[derive(Debug, Clone, Copy)]
pub(super) struct NodeRef {
    pub data: u64,
    pub sub: u64,
    pub parent: u32,
}

/// The layout of the node database, from the header's wVer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// wVer 14 or 15: 32-bit ids and offsets.
    Ansi,
    /// wVer 23 (21 from some recovery tools): 64-bit ids and offsets.
    Unicode,
    /// wVer 36: 64-bit, 4 KiB pages, compressed blocks (Outlook 2013 and later `.ost`).
    Ost4k,
}

impl Layout {
    /// Bytes of a B-tree page.
    fn page(self) -> usize {
        if self == Layout::Ost4k {
            4096
        } else {
            512
        }
    }

    /// Bytes of a page that hold entries.
    fn room(self) -> usize {
        match self {
            Layout::Ansi => 496,
            Layout::Unicode => 488,
            Layout::Ost4k => 4056,
        }
    }

    /// Where a page's type (ptype, then ptypeRepeat) is.
    fn ptype_at(self) -> usize {
        match self {
            Layout::Ansi => 500,
            Layout::Unicode => 496,
            Layout::Ost4k => 4072,
        }
    }

    /// Bytes of an id or an offset.
    pub(super) fn wide(self) -> usize {
        if self == Layout::Ansi {
            4
        } else {
            8
        }
    }
}

/// An open archive: the file and what its header says.
pub(super) struct Pst {
    pub(super) file: File,
    pub(super) len: u64,
    pub(super) layout: Layout,
    pub(super) crypt: u8,
    pub(super) nbt_root: u64,
    pub(super) bbt_root: u64,
    /// The folders and items of the node B-tree, when it was read whole (for a listing); a single
    /// item is found by walking down to it.
    pub(super) nodes: HashMap<u32, NodeRef>,
    /// B-tree pages read lately: every block of an item is found through the same few.
    pub(super) pages: HashMap<u64, Box<[u8]>>,
    /// Bytes still allowed to be read from blocks (each block counted as at least a page): blocks
    /// shared by many attachments or messages that reach back to their own subnodes cannot make
    /// one small item read as a huge one.
    pub(super) budget: usize,
    pub(super) notices: Vec<String>,
}

/// Bytes of B-tree pages kept by one reader (2 MiB).
const PAGE_CACHE: usize = 2 << 20;

/// The largest block a 4 KiB-page file may hold, trailer included (its sizes are 16-bit).
const MAX_BLOCK_4K: usize = 65536;

/// A word of an entry: 32 bits in ANSI files, 64 bits otherwise.
fn word(layout: Layout, b: &[u8], at: usize) -> Option<u64> {
    if layout == Layout::Ansi {
        le32(b, at).map(u64::from)
    } else {
        le64(b, at)
    }
}

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
        if !super::is_data_file(header) {
            return Err(Error::Unparseable);
        }
        let layout = match le16(header, 10).ok_or(Error::Unparseable)? {
            14 | 15 => Layout::Ansi,
            21 | 23 => Layout::Unicode,
            36 => Layout::Ost4k,
            _ => return Err(Error::Unparseable),
        };
        let (nbt_root, bbt_root, crypt) = if layout == Layout::Ansi {
            (le32(header, 188).map(u64::from), le32(header, 196).map(u64::from), header.get(461).copied())
        } else {
            (le64(header, 224), le64(header, 240), header.get(513).copied())
        };
        let (Some(nbt_root), Some(bbt_root), Some(crypt)) = (nbt_root, bbt_root, crypt) else {
            return Err(Error::Unparseable);
        };
        let mut pst = Pst {
            file,
            len,
            layout,
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

    /// A page of a B-tree, when its trailer says it is one of `ptype`.
    fn page(&mut self, ib: u64, ptype: u8) -> Option<Box<[u8]>> {
        let (size, at) = (self.layout.page(), self.layout.ptype_at());
        if let Some(page) = self.pages.get(&ib) {
            return (page[at] == ptype).then(|| page.clone());
        }
        if ib.checked_add(size as u64)? > self.len {
            return None;
        }
        let mut page = vec![0u8; size].into_boxed_slice();
        (read_up_to(&mut self.file, ib, &mut page).ok()? == size).then_some(())?;
        if self.pages.len() * size >= PAGE_CACHE {
            self.pages.clear();
        }
        self.pages.insert(ib, page.clone());
        (page[at] == ptype && page[at + 1] == ptype).then_some(page)
    }

    /// A node of the node B-tree: from the listing when it was read, else by walking down to it.
    pub(super) fn node(&mut self, nid: u32) -> Option<NodeRef> {
        if let Some(n) = self.nodes.get(&nid) {
            return Some(*n);
        }
        let e = self.leaf_entry(self.nbt_root, 0x81, u64::from(nid), u64::MAX)?;
        let (layout, wide) = (self.layout, self.layout.wide());
        Some(NodeRef { data: word(layout, &e, wide)?, sub: word(layout, &e, 2 * wide)?, parent: le32(&e, 3 * wide)? })
    }

    /// The leaf entry of a B-tree whose key (masked) is `key`, walking down from `root`.
    fn leaf_entry(&mut self, root: u64, ptype: u8, key: u64, mask: u64) -> Option<Vec<u8>> {
        let mut ib = root;
        let layout = self.layout;
        for _ in 0..=MAX_PST_DEPTH {
            let page = self.page(ib, ptype)?;
            let (count, size, level) = self.page_shape(&page);
            if size == 0 || count * size > layout.room() {
                return None;
            }
            let entries = page[..count * size].chunks_exact(size);
            if level == 0 {
                for e in entries {
                    if word(layout, e, 0)? & mask == key {
                        return Some(e.to_vec());
                    }
                }
                return None;
            }
            let mut next = None;
            for e in entries {
                if word(layout, e, 0)? & mask > key {
                    break;
                }
                next = word(layout, e, 2 * layout.wide());
            }
            ib = next?;
        }
        None
    }

    /// Count, size and level of a B-tree page's entries.
    fn page_shape(&self, page: &[u8]) -> (usize, usize, u8) {
        match self.layout {
            Layout::Ansi => (usize::from(page[496]), usize::from(page[498]), page[499]),
            Layout::Unicode => (usize::from(page[488]), usize::from(page[490]), page[491]),
            Layout::Ost4k => (usize::from(le16(page, 4056).unwrap_or(0)), usize::from(page[4060]), page[4061]),
        }
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
            let (layout, wide) = (self.layout, self.layout.wide());
            if size == 0 || count * size > layout.room() {
                bad += 1;
                continue;
            }
            for e in page[..count * size].chunks_exact(size) {
                if level > 0 {
                    todo.extend(word(layout, e, 2 * wide).map(|c| (c, depth + 1)));
                } else {
                    let (Some(nid), Some(data), Some(sub), Some(parent)) =
                        (word(layout, e, 0), word(layout, e, wide), word(layout, e, 2 * wide), le32(e, 3 * wide))
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

    /// Where a block is and how many bytes it takes in the file: a walk down the block B-tree.
    fn find_block(&mut self, bid: u64) -> Option<(u64, usize)> {
        let e = self.leaf_entry(self.bbt_root, 0x80, bid & !1, !1)?;
        let wide = self.layout.wide();
        Some((word(self.layout, &e, wide)?, usize::from(le16(&e, 2 * wide)?)))
    }

    /// A block's bytes: inflated when the file compressed it, decoded when it holds data (internal
    /// blocks are never encoded).
    fn block(&mut self, bid: u64) -> Option<Vec<u8>> {
        let (ib, cb) = self.find_block(bid)?;
        let mut buf = if self.layout == Layout::Ost4k {
            // The trailer ends the block's 512-byte steps: cb, wSig, dwCRC, bid, 2 bytes, then the
            // inflated size.
            let total = (cb + 24).div_ceil(512) * 512;
            if total > MAX_BLOCK_4K || ib.checked_add(total as u64)? > self.len {
                return None;
            }
            self.budget = self.budget.checked_sub(total)?;
            let mut stored = vec![0u8; total];
            (read_up_to(&mut self.file, ib, &mut stored).ok()? == total).then_some(())?;
            let inflated = usize::from(le16(&stored, total - 24 + 18)?);
            stored.truncate(cb);
            if inflated == 0 || inflated == cb {
                stored
            } else {
                self.budget = self.budget.checked_sub(inflated)?;
                inflate(&stored, inflated)?
            }
        } else {
            if cb > 8192 || ib.checked_add(cb as u64)? > self.len {
                return None;
            }
            self.budget = self.budget.checked_sub(cb.max(512))?;
            let mut buf = vec![0u8; cb];
            (read_up_to(&mut self.file, ib, &mut buf).ok()? == cb).then_some(())?;
            buf
        };
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
        let (layout, wide) = (self.layout, self.layout.wide());
        for i in 0..count {
            let child = word(layout, &block, 8 + i * wide)?;
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
        let (layout, wide) = (self.layout, self.layout.wide());
        // The header is btype, cLevel, cEnt, and four bytes of padding in the 64-bit layouts.
        let head = wide;
        let word = |at: usize| word(layout, &block, at);
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

/// A compressed block's data (zlib, RFC 1950), when it inflates to exactly `size` bytes; nothing
/// more than `size` + 1 bytes is ever inflated.
pub(super) fn inflate(stored: &[u8], size: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(size);
    ZlibDecoder::new(stored).take(size as u64 + 1).read_to_end(&mut out).ok()?;
    (out.len() == size).then_some(out)
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
