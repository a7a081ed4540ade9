//! Folders' numbers. A folder path gets a number once (from a shared store, which every replica
//! asks, or here, saved with the next commit), and paths that are one folder by
//! [`folders::key`] (`INBOX` and `Inbox`, found in two trees) share the first number any of them
//! got: the list counts them together, a folder's page lists them together, and `folder:` finds
//! them together, as the search terms are made from the same key. Stores written before this rule
//! may hold several numbers for one folder, and replicas may give two at once: every number then
//! stands for the lowest, taken in number order, so that every replica reads the same.

use super::{folders, Entry, FolderId, Index, NO_FOLDER};
use crate::error::Error;

impl Index {
    /// The number a folder is counted under: the lowest of the numbers of its paths.
    pub fn canonical(&self, folder: FolderId) -> FolderId {
        match self.folder_canon.get(folder as usize) {
            Some(&c) if c != NO_FOLDER => c,
            _ => folder,
        }
    }

    /// An entry read from the store, filed under the number its folder is counted under.
    pub(super) fn filed_as_counted(&self, mut e: Entry) -> Entry {
        if self.folders_merged && e.folder != NO_FOLDER {
            e.folder = self.canonical(e.folder);
        }
        e
    }

    /// Room for folders numbered below `len`.
    pub(super) fn grow_folders(&mut self, len: usize) {
        if self.folders.len() < len {
            self.folders.resize(len, String::new());
            self.folder_counts.resize(len, 0);
            self.folder_canon.resize(len, NO_FOLDER);
        }
    }

    /// Takes in a folder's number and path, spelled as the folders it lies in first were.
    fn register_folder(&mut self, id: FolderId, path: &str) {
        let slot = id as usize;
        self.grow_folders(slot + 1);
        let spelled = self.spellings.spell(path);
        let canon = *self.folder_ids.entry(folders::key(&spelled)).or_insert(id);
        self.folders_merged |= canon != id;
        self.folder_canon[slot] = canon;
        self.folders[slot] = spelled;
    }

    /// Reads every folder path from the store (a shared store's other replicas may have added
    /// some). Returns whether folders known already are counted under another number now (a
    /// replica gave a lower number to one of them): then what was counted must be counted again.
    pub(super) fn reload_folders(&mut self) -> Result<bool, Error> {
        let mut stored = self.store.folders()?;
        stored.sort_unstable_by_key(|(id, _)| *id);
        let known = |index: &Index, id: FolderId| index.folder_canon.get(id as usize).is_some_and(|&c| c != NO_FOLDER);
        let renumbered = stored.iter().any(|(id, path)| {
            !known(self, *id) && self.folder_ids.get(&folders::key(path)).is_some_and(|&first| first > *id)
        });
        if renumbered {
            self.folder_ids.clear();
            self.folder_paths.clear();
            self.spellings = folders::Spellings::default();
            self.folder_canon.iter_mut().for_each(|c| *c = NO_FOLDER);
            self.folders_merged = false;
        }
        for (id, path) in stored {
            if !known(self, id) {
                self.register_folder(id, &path);
            }
        }
        self.folders_saved = self.folders_saved.max(self.folders.len());
        Ok(renumbered)
    }

    /// The number of the folder at `path`: the one it has (or one spelled otherwise has), else a
    /// new one, handed out by a shared store, which keeps it at once, or else the next here, saved
    /// with the next commit.
    pub(super) fn folder_number(&mut self, path: &str) -> Result<FolderId, Error> {
        // Asked for every message filed: the paths met so far are answered at once.
        if let Some(&f) = self.folder_paths.get(path) {
            return Ok(f);
        }
        let spelled = self.spellings.spell(path);
        let f = match self.folder_ids.get(&folders::key(&spelled)) {
            Some(&f) => f,
            None => self.new_folder(&spelled)?,
        };
        self.folder_paths.insert(path.to_string(), f);
        Ok(f)
    }

    /// A number for a folder met for the first time.
    fn new_folder(&mut self, spelled: &str) -> Result<FolderId, Error> {
        match self.store.folder_id(spelled)? {
            // Numbered by a shared store, which has it already.
            Some(f) => {
                self.register_folder(f, spelled);
                self.folders_saved = self.folders_saved.max(self.folders.len());
                Ok(f)
            }
            None => {
                let f = self.folders.len() as FolderId;
                self.register_folder(f, spelled);
                Ok(f)
            }
        }
    }

    /// The path of a folder (`""` for messages at the top of a PATH and for enclosed ones), as the
    /// first of its spellings.
    pub fn folder_path(&self, folder: FolderId) -> &str {
        self.folders.get(self.canonical(folder) as usize).map_or("", String::as_str)
    }

    /// The number of the folder at `path` (however it is spelled: see [`folders::key`]), if any
    /// message was ever filed there.
    pub fn folder_id(&self, path: &str) -> Option<FolderId> {
        self.folder_ids.get(&folders::key(path)).copied()
    }

    /// Every folder that holds listed messages, with how many.
    pub fn folder_counts(&self) -> impl Iterator<Item = (&str, usize)> {
        self.folders.iter().zip(&self.folder_counts).filter(|(_, &n)| n > 0).map(|(p, &n)| (p.as_str(), n))
    }
}
