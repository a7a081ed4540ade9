//! MS-PST's messaging layer (§2.4) as far as a listing needs it: the message store (its top
//! folder, a password set on it), the folder tree with Outlook's display names, and the items of
//! each folder.

use std::collections::HashMap;
use std::path::Path;

use super::ltp::{codepage, find, text, Val};
use super::ndb::{le32, Pst};
use super::{PstItem, PstListing};
use crate::error::Error;
use crate::limits::MAX_PST_DEPTH;
use crate::mapi::{ATTRIBUTE_HIDDEN, DISPLAY_NAME, IPM_SUBTREE_ENTRYID, PST_PASSWORD};

// Node types (the low 5 bits of a NID) and the NIDs the specification fixes (MS-PST §2.4.1).
const NID_TYPE_NORMAL_FOLDER: u32 = 0x02;
const NID_TYPE_NORMAL_MESSAGE: u32 = 0x04;
pub(super) const NID_TYPE_ATTACHMENT: u32 = 0x05;
pub(super) const NID_MESSAGE_STORE: u32 = 0x21;
pub(super) const NID_NAME_TO_ID_MAP: u32 = 0x61;
pub(super) const NID_RECIPIENT_TABLE: u32 = 0x692;

/// The items of an archive with their folders, and notices for what could not be read. Folders are
/// those below the store's top folder ("Top of Personal Folders", which Outlook shows as the store
/// itself and so is not a folder here); search folders and hidden folders are left out.
pub fn list(path: &Path) -> Result<PstListing, Error> {
    let mut pst = Pst::open(path)?;
    pst.read_nodes();
    let store = pst.node_props(NID_MESSAGE_STORE);
    // 8-bit folder names are in the folder's code page, else the store's.
    let store_cp = store.as_deref().and_then(|s| codepage(s, None));
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
        let name =
            props.as_deref().and_then(|p| text(p, DISPLAY_NAME, store_cp)).unwrap_or_else(|| format!("Folder {nid:x}"));
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
