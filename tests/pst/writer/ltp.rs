//! Lists, tables and properties of a written archive (MS-PST §2.3): heaps on nodes, B-trees on
//! heaps, property contexts and table contexts.

use std::collections::BTreeMap;

use super::ndb::Ndb;
use super::{Layout, Props, PT_BINARY, PT_BOOLEAN, PT_LONG, PT_STRING8, PT_SYSTIME, PT_UNICODE, V};

/// A heap-on-node being built: its items, addressed by HID, in as many blocks as they need
/// (MS-PST §2.3.1: the first block starts with the HNHDR, the others with an HNPAGEHDR, or an
/// HNBITMAPHDR at the 8th and every 128th after it).
struct Heap {
    /// The items of each block.
    blocks: Vec<Vec<Vec<u8>>>,
    /// Bytes of the items of the last block.
    last_bytes: usize,
    /// The most bytes one block of the node's data holds.
    max_block: usize,
}

/// Most items in one heap block: the HID's index has 11 bits.
const ITEMS_PER_BLOCK: usize = 2047;

impl Heap {
    fn new(ndb: &Ndb) -> Heap {
        Heap { blocks: vec![Vec::new()], last_bytes: 0, max_block: ndb.max_block() }
    }

    /// Bytes of a block's header: HNHDR, HNBITMAPHDR or HNPAGEHDR.
    fn header_len(block: usize) -> usize {
        match block {
            0 => 12,
            b if b % 128 == 8 => 66,
            _ => 2,
        }
    }

    /// Bytes a block would take with `count` items of `bytes` in all: its header, the items,
    /// padding to an even offset and the HNPAGEMAP.
    fn block_len(block: usize, count: usize, bytes: usize) -> usize {
        let data = Self::header_len(block) + bytes;
        data + data % 2 + 4 + 2 * (count + 1)
    }

    /// Adds an item, in a new block when the last one has no room for it; its HID.
    fn add(&mut self, item: Vec<u8>) -> u32 {
        let last = self.blocks.len() - 1;
        let count = self.blocks[last].len() + 1;
        if count > ITEMS_PER_BLOCK || Self::block_len(last, count, self.last_bytes + item.len()) > self.max_block {
            self.blocks.push(Vec::new());
            self.last_bytes = 0;
        }
        let block = self.blocks.len() - 1;
        self.last_bytes += item.len();
        self.blocks[block].push(item);
        ((block as u32) << 16) | ((self.blocks[block].len() as u32) << 5)
    }

    /// The node's data: every block but the last filled out to a whole block of the node's data
    /// tree, so that each heap block is one data block.
    fn bytes(&self, client_sig: u8, root: u32) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, items) in self.blocks.iter().enumerate() {
            let mut b = vec![0u8; Self::header_len(i)];
            if i == 0 {
                b[2] = 0xec;
                b[3] = client_sig;
                b[4..8].copy_from_slice(&root.to_le_bytes());
            }
            let mut offsets = vec![b.len() as u16];
            for item in items {
                b.extend_from_slice(item);
                offsets.push(b.len() as u16);
            }
            if b.len() % 2 == 1 {
                b.push(0);
            }
            let map = b.len() as u16;
            b[0..2].copy_from_slice(&map.to_le_bytes());
            b.extend_from_slice(&(items.len() as u16).to_le_bytes());
            b.extend_from_slice(&0u16.to_le_bytes());
            for o in offsets {
                b.extend_from_slice(&o.to_le_bytes());
            }
            if i + 1 < self.blocks.len() {
                b.resize(self.max_block, 0);
            }
            out.extend_from_slice(&b);
        }
        out
    }
}

/// Most bytes of records in one node of a B-tree-on-heap.
const BTH_NODE: usize = 3580;

/// A B-tree-on-heap of as many levels as its records need: its header item's HID.
fn bth(heap: &mut Heap, key: usize, ent: usize, mut records: Vec<(Vec<u8>, Vec<u8>)>) -> u32 {
    // Keys are little-endian numbers, ordered as numbers.
    records.sort_by(|a, b| a.0.iter().rev().cmp(b.0.iter().rev()));
    let mut levels = 0u8;
    let mut root = 0;
    let mut nodes: Vec<(Vec<u8>, Vec<u8>)> = records;
    let mut width = key + ent;
    while !nodes.is_empty() {
        let mut parents = Vec::new();
        for chunk in nodes.chunks(BTH_NODE / width) {
            let hid = heap.add(chunk.iter().flat_map(|(k, v)| k.iter().chain(v.iter()).copied()).collect());
            parents.push((chunk[0].0.clone(), hid.to_le_bytes().to_vec()));
        }
        if parents.len() == 1 {
            root = u32::from_le_bytes(parents[0].1[..4].try_into().expect("4 bytes"));
            break;
        }
        nodes = parents;
        width = key + 4;
        levels += 1;
    }
    let mut header = vec![0xb5, key as u8, ent as u8, levels];
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
    let mut heap = Heap::new(ndb);
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
    let data = ndb.data(&heap.bytes(0xbc, root));
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

    let mut heap = Heap::new(ndb);
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
    let data = ndb.data(&heap.bytes(0x7c, root));
    let sub = ndb.subnodes(&subs.entries);
    (data, sub)
}
