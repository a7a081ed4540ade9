//! Outlook data files, `.pst` and `.ost` (MS-PST), Unicode and ANSI, and the 4 KiB-page `.ost` of
//! Outlook 2013 and later (as libpff documents it), read on the specification.
//! The file is opened read-only and read a page or block at a time, so an archive of any size needs
//! the memory of one item (and of the list of its nodes). One file a layer, as the specification
//! has them:
//!
//! - `crypt`: the permutation and cyclic "encryptions" of data blocks;
//! - `ndb`: the node database (the header, the B-trees of pages and blocks, data and subnode
//!   trees);
//! - `ltp`: lists, tables and properties (heap-on-node, B-tree-on-heap, property and table
//!   contexts);
//! - `messaging`: the messaging layer (the store, its folder tree, its items);
//! - `msg`: the `.msg` writer: an item holds the same MAPI properties a `.msg` file does, so it is
//!   written as the `.msg` Outlook would export and read by the parse stage like any `.msg`.
//!
//! Every walk is bounded: B-tree depth, pages visited (each page once), blocks and bytes per node,
//! rows per table and records per heap, so cyclic or absurd structures end in a notice, not a hang.

mod crypt;
mod ltp;
mod messaging;
mod msg;
mod ndb;
#[cfg(test)]
mod tests;

pub use messaging::{list, notice_message};
pub use msg::item_msg;

/// The first bytes of an Outlook data file.
pub const PST_MAGIC: &[u8] = b"!BDN";

/// Whether `head` (a file's first bytes) starts an Outlook data file: `!BDN`, then the client
/// signature `SM` (a `.pst`) or `SO` (an `.ost`, as libpff documents it).
pub fn is_data_file(head: &[u8]) -> bool {
    head.starts_with(PST_MAGIC) && matches!(head.get(8..10), Some(b"SM" | b"SO"))
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
