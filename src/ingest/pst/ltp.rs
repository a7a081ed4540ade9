//! MS-PST's lists, tables and properties (LTP, §2.3), on the blocks the node database hands out:
//! the heap-on-node (items addressed by HID across a node's blocks), the B-tree-on-heap, and on
//! them the property context (one object's properties) and the table context (rows of
//! properties: a folder's contents, a message's recipients). A value too large for the heap lives
//! in a subnode; an attached message is a subnode with properties of its own.

use std::collections::{HashMap, HashSet};

use super::ndb::{le16, le32, le64, Pst};
use crate::limits::{MAX_MSG_ENTRIES, MAX_PST_DEPTH};
use crate::mapi::{self, INTERNET_CODEPAGE, MESSAGE_CODEPAGE, PT_LONG, PT_OBJECT};

impl Pst {
    /// The property context of a node of the tree.
    pub(super) fn node_props(&mut self, nid: u32) -> Option<Vec<Prop>> {
        let node = self.node(nid)?;
        self.props(node.data, node.sub)
    }

    pub(super) fn props(&mut self, data: u64, sub: u64) -> Option<Vec<Prop>> {
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
    pub(super) fn table(&mut self, data: u64, sub: u64) -> Option<Vec<Vec<Prop>>> {
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

/// Size of a fixed-size property type that a property context keeps in place of a heap reference
/// or in a heap item of its own (PtypGuid, 16 bytes, is kept as variable-size data); `None` for
/// the others.
fn fixed_size(ty: u16) -> Option<usize> {
    mapi::fixed_size(ty).filter(|&n| n <= 8)
}

/// One property of an object.
#[derive(Debug, Clone)]
pub(super) struct Prop {
    pub id: u16,
    pub ty: u16,
    pub value: Val,
}

#[derive(Debug, Clone)]
pub(super) enum Val {
    /// A fixed-size value, little-endian in the low bytes.
    Fixed(u64),
    Bytes(Vec<u8>),
    /// An attached message: its node (data, subnodes), when found.
    Object(Option<(u64, u64)>),
}

pub(super) fn find(props: &[Prop], id: u16) -> Option<&Prop> {
    props.iter().find(|p| p.id == id)
}

/// A PT_LONG property.
pub(super) fn long(props: &[Prop], id: u16) -> Option<u32> {
    match find(props, id)? {
        Prop { ty: PT_LONG, value: Val::Fixed(v), .. } => Some(*v as u32),
        _ => None,
    }
}

/// The code page of an object's 8-bit strings, by the one rule of [`mapi::codepage`]: its own
/// PidTagMessageCodepage, else its PidTagInternetCodepage, else `inherited` (the store's).
pub(super) fn codepage(props: &[Prop], inherited: Option<u32>) -> Option<u32> {
    mapi::codepage(long(props, MESSAGE_CODEPAGE), long(props, INTERNET_CODEPAGE), inherited)
}

/// A string property as text: Unicode, or 8-bit in the object's code page (see [`codepage`]).
pub(super) fn text(props: &[Prop], id: u16, inherited_cp: Option<u32>) -> Option<String> {
    let p = find(props, id)?;
    let Val::Bytes(b) = &p.value else { return None };
    mapi::string(p.ty, b, codepage(props, inherited_cp))
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
