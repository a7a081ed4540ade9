//! Who may read what: a reader's [`Access`], the folders of the archive they may read (subfolders
//! included), or everything. The view and the archive take it with every call that reads, so that
//! a reader limited to some folders learns nothing of the others by any route; this file only
//! answers the one question, "may this reader see this folder, this message?", against the index.
//!
//! Folders are compared as parsed paths, by [`folders::key`] (case, quotes, white space and empty
//! segments do not count), one whole segment at a time: `Work` covers `Work` and `Work/Legal`,
//! never `Workshop`. Nothing a request says is compared: the folders come from the users file and
//! the index, and a message's folder is the one the index filed it in. A message enclosed in
//! another is read with the message it is enclosed in — with any of them, when the same bytes are
//! enclosed in several, or also filed on their own in a folder the reader may not read (the index
//! keeps such bytes once; [`Access::way`] says through which message the reader reaches them, so
//! that the answer is the same whether or not the other places exist). One in no folder (a loose
//! file at the top of a PATH) is read only by a reader who may read everything.

use std::borrow::Cow;
use std::sync::Arc;

use super::{folders, Entry, EntryId, FolderId, Index, Location, NO_FOLDER};
use crate::limits::MAX_NESTED_WALK;
use crate::model::PartIdx;

/// The folders a reader may read, or everything. Cheap to clone; compared and hashed by its
/// folders, so that what is kept for one reader (a rewritten body, a count) is kept for all
/// readers with the same folders.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Access(Option<Arc<[String]>>);

impl Access {
    /// Everything: the single-person default, and users without a `folders` list.
    pub const EVERYTHING: Access = Access(None);

    pub fn everything() -> Access {
        Access::EVERYTHING
    }

    /// Nothing at all (a signed-in name the users file does not know, with no default folders).
    pub fn nothing() -> Access {
        Access(Some(Arc::from(Vec::new())))
    }

    /// These folders and those below them, each as `/api/folders` names it. Paths whose
    /// [`folders::key`] is empty (`""`, `"/"`) name no folder and are left out.
    pub fn folders<S: AsRef<str>>(paths: impl IntoIterator<Item = S>) -> Access {
        let mut keys: Vec<String> =
            paths.into_iter().map(|p| folders::key(p.as_ref())).filter(|k| !k.is_empty()).collect();
        keys.sort();
        keys.dedup();
        // A folder below another one given adds nothing.
        let all = keys.clone();
        keys.retain(|k| !all.iter().any(|other| other != k && below(k, other)));
        Access(Some(Arc::from(keys)))
    }

    pub fn is_everything(&self) -> bool {
        self.0.is_none()
    }

    /// The keys of the folders this access covers (`None`: everything).
    pub fn folder_keys(&self) -> Option<&[String]> {
        self.0.as_deref()
    }

    /// Whether a folder path (`""`: in no folder) is covered.
    pub fn covers(&self, path: &str) -> bool {
        match &self.0 {
            None => true,
            Some(keys) => {
                let key = folders::key(path);
                keys.iter().any(|k| covers_key(k, &key))
            }
        }
    }

    /// Which of the index's folders this access covers, worked out once for a request.
    pub fn table(&self, index: &Index) -> FolderTable {
        let Some(keys) = &self.0 else { return FolderTable(None) };
        let mut allowed = vec![false; index.folders.len()];
        for (key, &id) in &index.folder_ids {
            if keys.iter().any(|k| covers_key(k, key)) {
                if let Some(slot) = allowed.get_mut(id as usize) {
                    *slot = true;
                }
            }
        }
        // Other numbers of the same folder (see `numbering`) stand for the first.
        for i in 0..allowed.len() {
            let c = index.canonical(i as FolderId) as usize;
            if c != i {
                allowed[i] = allowed.get(c).copied().unwrap_or(false);
            }
        }
        FolderTable(Some(allowed))
    }

    /// Whether the message with entry `id` may be read: it is filed in a covered folder, or it is
    /// enclosed in a message that may be read (see [`Access::way`]). `false` for an entry that
    /// does not exist.
    pub fn permits(&self, index: &Index, id: EntryId) -> bool {
        self.permits_with(index, &self.table(index), id)
    }

    /// [`Access::permits`] with the table worked out already.
    pub fn permits_with(&self, index: &Index, table: &FolderTable, id: EntryId) -> bool {
        // Everything: only whether it is there (no way to work out).
        if table.is_everything() {
            return self.files_with(index, table, id);
        }
        self.way(index, table, id).is_some()
    }

    /// Whether the message with entry `id` is where the index keeps it within this access: filed
    /// in a covered folder, or enclosed in one that is, by the locations alone. What decides
    /// where bytes given again are filed (an upload), where being readable through another
    /// message must not count: the answer would differ as a copy out of reach exists or not.
    pub fn files(&self, index: &Index, id: EntryId) -> bool {
        self.files_with(index, &self.table(index), id)
    }

    /// [`Access::files`] with the table worked out already.
    pub fn files_with(&self, index: &Index, table: &FolderTable, id: EntryId) -> bool {
        let mut at = id;
        for _ in 0..=MAX_NESTED_WALK {
            let Some(entry) = index.get(at) else { return false };
            match entry.location {
                Location::Nested { parent, .. } => at = parent,
                Location::Top { .. } => return table.allows(index.canonical(entry.folder)),
            }
        }
        false
    }

    /// How this reader reaches the message with entry `id`, if they may read it: by its own
    /// location (filed in a covered folder, or enclosed in a message they reach), else through
    /// another message it is enclosed in ([`crate::index::Entry::enclosed_in`]) that they reach.
    /// The same bytes found in several places are one entry, filed where they were found first;
    /// whoever may read a message reads what it encloses, whether or not those bytes are also
    /// filed, on their own, in a folder they may not read.
    pub fn way(&self, index: &Index, table: &FolderTable, id: EntryId) -> Option<Way> {
        let mut budget = MAX_WAY_STEPS;
        way(index, table, id, 0, &mut budget)
    }

    /// The entry a URL id names for this reader: the one keyed so, else the first one answering
    /// to it ([`Entry::answers_to`]: carrying it as its Message-ID, or a copy of the bytes it is
    /// derived from), that they may read.
    pub fn find_with(&self, index: &Index, table: &FolderTable, key: &str) -> Option<EntryId> {
        let by_key = index.by_key(key);
        by_key.into_iter().chain(index.answering_to(key)).find(|&id| self.permits_with(index, table, id))
    }

    /// The message a reply naming `message_id` answers, for this reader: the first carrying it
    /// that they may read, else the first of all. Several messages may carry one Message-ID; the
    /// first of all may be out of reach, and the one they read must then take its place in
    /// their conversations as it would were the other not there. (A conversation still runs
    /// through a message out of reach that no message of theirs stands for.)
    pub fn parent_among(&self, index: &Index, table: &FolderTable, message_id: &str) -> Option<EntryId> {
        let all = index.by_message_id(message_id);
        all.iter().copied().find(|&id| self.permits_with(index, table, id)).or_else(|| all.first().copied())
    }

    /// The id this reader knows `entry` by, in every URL and answer. A message whose Message-ID
    /// another message carries too is keyed by it only when found first; the others get ids
    /// derived from their bytes (see "URLs and ids" in the README). Found first among all, it
    /// may be one this reader cannot read: the message they can read is then shown by its
    /// Message-ID when that names it for them ([`Access::find_with`]), so that its id is the one
    /// it would have were the messages out of their reach not there, and tells nothing of them.
    /// So too a copy without a Message-ID, filed in another folder than the same bytes found
    /// first: it is shown by the id derived from its bytes, as it would be keyed alone.
    pub fn shown_key<'e>(&self, index: &Index, entry: &'e Entry) -> Cow<'e, str> {
        let key = Cow::Borrowed(entry.key.as_str());
        if self.is_everything() {
            return key;
        }
        let Some(name) = entry.answers_to().filter(|name| *name != entry.key) else { return key };
        let named = self.find_with(index, &self.table(index), &name).and_then(|id| index.get(id));
        match named {
            Some(found) if found.key == entry.key => Cow::Owned(name.into_owned()),
            _ => key,
        }
    }
}

/// Entries looked at, at most, to find the way to one ([`Access::way`]).
const MAX_WAY_STEPS: usize = 256;

/// How a reader reaches a message (see [`Access::way`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Way {
    /// The top-level message it is read from.
    pub top: EntryId,
    /// The parts leading down from there to it (empty: it is the top).
    pub path: Vec<PartIdx>,
    /// The message it is read as enclosed in (`None`: it is the top).
    pub above: Option<EntryId>,
    /// Whether the way passes through a message that encloses one on it other than where the
    /// index keeps it: the message is then shown as enclosed there, with nothing of where it,
    /// or the message above it, is filed.
    pub borrowed: bool,
}

impl Way {
    /// The way one step further down: into part `part` of `parent`, this way's end.
    fn down(mut self, parent: EntryId, part: PartIdx, borrowed: bool) -> Way {
        self.path.push(part);
        self.above = Some(parent);
        self.borrowed |= borrowed;
        self
    }
}

/// [`Access::way`], `depth` messages down from where the walk began, looking at no more than
/// `budget` entries in all: its own location first, then the other messages it is enclosed in.
fn way(index: &Index, table: &FolderTable, id: EntryId, depth: usize, budget: &mut usize) -> Option<Way> {
    if depth > MAX_NESTED_WALK || *budget == 0 {
        return None;
    }
    *budget -= 1;
    let entry = index.get(id)?;
    let own = match entry.location {
        Location::Top { .. } => table.allows(index.canonical(entry.folder)).then_some(Way {
            top: id,
            path: Vec::new(),
            above: None,
            borrowed: false,
        }),
        Location::Nested { parent, part } => {
            way(index, table, parent, depth + 1, budget).map(|w| w.down(parent, part, false))
        }
    };
    if own.is_some() || table.is_everything() {
        return own;
    }
    entry
        .enclosed_in
        .iter()
        .find_map(|&(parent, part)| way(index, table, parent, depth + 1, budget).map(|w| w.down(parent, part, true)))
}

/// Whether folder key `key` is `over` or a folder below it.
fn covers_key(over: &str, key: &str) -> bool {
    key == over || below(key, over)
}

/// Whether `key` is strictly below `over`, by whole segments.
fn below(key: &str, over: &str) -> bool {
    key.len() > over.len() && key.starts_with(over) && key.as_bytes().get(over.len()) == Some(&b'/')
}

/// The folders of the index an [`Access`] covers, by folder number.
#[derive(Debug, Clone)]
pub struct FolderTable(Option<Vec<bool>>);

impl FolderTable {
    /// Whether messages filed in `folder` may be read ([`NO_FOLDER`]: only with everything).
    pub fn allows(&self, folder: FolderId) -> bool {
        match &self.0 {
            None => true,
            Some(_) if folder == NO_FOLDER => false,
            Some(allowed) => allowed.get(folder as usize).copied().unwrap_or(false),
        }
    }

    /// Whether every folder is allowed (no test needed).
    pub fn is_everything(&self) -> bool {
        self.0.is_none()
    }
}

impl Index {
    /// The listed messages in folders `table` allows, in list order: the `limit` from `offset`,
    /// and how many there are (one pass over the list in memory, as a folder's page is).
    pub fn page_within(&self, table: &FolderTable, offset: usize, limit: usize) -> (Vec<EntryId>, usize) {
        let mut total = 0;
        let mut page = Vec::new();
        for &id in &self.listed {
            // A message taken out of the list has no folder until the next sort.
            if table.allows(self.folder_of(id)) && self.folder_of(id) != NO_FOLDER {
                if total >= offset && page.len() < limit {
                    page.push(id);
                }
                total += 1;
            }
        }
        (page, total)
    }

    /// How many listed messages are in folders `table` allows.
    pub fn count_within(&self, table: &FolderTable) -> usize {
        if table.is_everything() {
            return self.listed_count();
        }
        self.folder_counts.iter().enumerate().filter(|&(f, _)| table.allows(f as FolderId)).map(|(_, &n)| n).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_cover_themselves_and_what_is_below_by_whole_segments() {
        let access = Access::folders(["Work", "Private/Taxes/"]);
        let cases = [
            ("Work", true),
            ("work", true),
            ("WORK/Legal", true),
            (" Work / Legal ", true),
            ("Workshop", false),
            ("Work2", false),
            ("Private", false),
            ("Private/Taxes", true),
            ("Private/Taxes/2024", true),
            ("Private/Taxesx", false),
            ("", false),
            ("Legal/Work", false),
        ];
        for (path, want) in cases {
            assert_eq!(access.covers(path), want, "{path}");
        }
        assert!(Access::everything().covers("") && Access::everything().covers("anything"));
        assert!(!Access::nothing().covers("Work"));
    }

    #[test]
    fn directory_style_folder_names_are_folders_like_any_other() {
        // `..` and `.` are no way up or across: they are segments, compared whole, and no folder
        // the index files mail in is named so (names come from path components and Outlook's
        // folder names); empty paths name nothing.
        let access = Access::folders(["Work/../Legal", "./Work", "/", "", "//"]);
        assert_eq!(access.folder_keys().map(<[String]>::to_vec), Some(vec!["./work".into(), "work/../legal".into()]));
        for path in ["Legal", "Work", "Work/Legal", "", "work/.."] {
            assert!(!access.covers(path), "{path}");
        }
        assert!(access.covers("Work/../Legal/sub"));
    }

    #[test]
    fn a_folder_below_another_given_adds_nothing() {
        let access = Access::folders(["Work/Legal", "work", "Work"]);
        assert_eq!(access.folder_keys().map(<[String]>::to_vec), Some(vec!["work".into()]));
        assert_eq!(access, Access::folders(["WORK"]));
    }
}
