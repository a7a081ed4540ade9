//! Where messages come from: files, folder trees (Maildir included), mbox files, Outlook data files.
//! [`walk`](mod@walk) finds them, [`sniff`](mod@sniff) tells a message from other files by its first bytes, `mbox`
//! splits mbox files into messages, [`pst`] lists the items of Outlook data files; [`Source`] says
//! where one message's bytes live and reads them back. Sources are opened read-only; nothing here
//! ever writes under a given path.

mod mbox;
pub mod pst;
mod sniff;
mod walk;

pub use mbox::{split_mbox, unescape_from_lines, MboxMessage, MboxReader};
pub use sniff::{
    after_emlx_count, emlx_count_line, kind_of, maildir_message, sniff, sniff_claimed, sniff_file, sniff_found,
    utf16_to_bytes, Claim, Kind, HEAD, OLE_MAGIC,
};
pub use walk::{apple_attachment, maildir_flags, walk, Found, StoredAttachment};

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where one message's bytes live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Source {
    /// A whole file is one message (.eml, .mht, a Maildir entry, an upload).
    File { path: PathBuf },
    /// A byte range of an mbox file, `From ` line excluded.
    Mbox { path: PathBuf, offset: u64, len: u64 },
    /// One item of an Outlook data file (`.pst`, `.ost`), by its node id (stable for the life of
    /// the file), with the folder it is filed in there (Outlook's names, `/`-separated). Node
    /// [`crate::ingest::pst::NOTICE_NODE`] is the file's notices.
    Pst { path: PathBuf, node: u32, folder: String },
    /// An upload kept in the store itself (a shared database: no replica's disk holds it), by
    /// its name there, with the folder it is shown in under Uploads (`""`: Uploads itself).
    Stored { name: String, folder: String },
}

impl Source {
    pub fn path(&self) -> &Path {
        match self {
            Source::File { path } | Source::Mbox { path, .. } | Source::Pst { path, .. } => path,
            Source::Stored { name, .. } => Path::new(name),
        }
    }

    /// Reads the message's bytes. mbox ranges are un-escaped (`>From ` → `From `, mboxrd rules).
    pub fn read(&self) -> std::io::Result<Vec<u8>> {
        match self {
            Source::File { path } => std::fs::read(path),
            Source::Mbox { path, offset, len } => {
                let mut f = File::open(path)?;
                f.seek(SeekFrom::Start(*offset))?;
                let mut buf = Vec::with_capacity(*len as usize);
                f.take(*len).read_to_end(&mut buf)?;
                if buf.len() as u64 != *len {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "mbox file is shorter than indexed",
                    ));
                }
                Ok(unescape_from_lines(buf))
            }
            // The item as the `.msg` Outlook would save it as.
            Source::Pst { path, node, .. } if *node == crate::ingest::pst::NOTICE_NODE => {
                let listing = crate::ingest::pst::list(path).map_err(std::io::Error::other)?;
                Ok(crate::ingest::pst::notice_message(path, &listing.notices))
            }
            Source::Pst { path, node, .. } => crate::ingest::pst::item_msg(path, *node).map_err(std::io::Error::other),
            // Read through the store, which holds it (see `Archive::load`).
            Source::Stored { .. } => Err(std::io::Error::other("an upload kept in the store")),
        }
    }
}
