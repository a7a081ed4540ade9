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

mod ltp;
mod messaging;
mod ndb;

// Each including crate uses part of it (the root folder only the reader's unit tests).
#[allow(unused_imports)]
pub use messaging::{Archive, ROOT};

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

/// Property types.
const PT_LONG: u16 = 0x0003;
const PT_BOOLEAN: u16 = 0x000b;
const PT_STRING8: u16 = 0x001e;
const PT_UNICODE: u16 = 0x001f;
const PT_SYSTIME: u16 = 0x0040;
const PT_BINARY: u16 = 0x0102;
