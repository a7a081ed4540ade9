//! The archive as one reader may read it: finding a message by its URL id, loading it the way they
//! reach it, and searching, within the folders an [`Access`] covers. A message out of reach is not
//! found, exactly as one that does not exist; a search gets the reader's folders added to what
//! they typed, in the engine itself (both engines), so that its total counts only what the reader
//! may see.

use std::collections::HashSet;

use super::{Archive, Loaded};
use crate::error::Error;
use crate::index::{Access, EntryId, Way};
use crate::search::query::{self, Query};
use crate::search::Hits;

impl Archive {
    /// [`Archive::find`] within `access`: the entry with this key, else the first with this
    /// Message-ID that the reader may read. `None` for one out of reach.
    pub fn find_within(&self, key: &str, access: &Access) -> Option<EntryId> {
        if access.is_everything() {
            return self.find(key);
        }
        let index = self.index();
        access.find_with(&index, &access.table(&index), key)
    }

    /// [`Archive::load`] of the entry `id` as a reader with `access` reads it: the way they reach
    /// it ([`Access::way`]), which for a message they read only through another message that
    /// encloses it is through that message (see [`Archive::load_along`]). A message out of their
    /// reach is [`Error::MessageNotFound`], as one that does not exist.
    pub fn load_within(&self, id: EntryId, access: &Access) -> Result<Loaded, Error> {
        let loaded = match self.way_within(id, access)? {
            Some(way) => self.load_along(id, &way)?,
            None => self.load(id)?,
        };
        Ok(self.keyed_for(loaded, access))
    }

    /// [`Archive::load_within`] from the cache only: `None` when it would have to be read.
    pub fn load_cached_within(&self, id: EntryId, access: &Access) -> Option<Loaded> {
        let loaded = match self.way_within(id, access).ok()? {
            Some(way) => self.load_cached_along(id, &way)?,
            None => self.load_cached(id)?,
        };
        Some(self.keyed_for(loaded, access))
    }

    /// A loaded message with the key its reader knows it by ([`Access::shown_key`]), which every
    /// URL of its page and parts is made of.
    fn keyed_for(&self, mut loaded: Loaded, access: &Access) -> Loaded {
        if access.is_everything() {
            return loaded;
        }
        let shown = access.shown_key(&self.index(), &loaded.entry).into_owned();
        if shown == loaded.entry.key {
            return loaded;
        }
        let mut entry = (*loaded.entry).clone();
        entry.key = shown;
        loaded.entry = std::sync::Arc::new(entry);
        loaded
    }

    /// The way a reader with `access` reaches entry `id` when it is not the one the index keeps
    /// (`None`: the index's own, as for a reader who may read everything); an error when they may
    /// not read it.
    fn way_within(&self, id: EntryId, access: &Access) -> Result<Option<Way>, Error> {
        if access.is_everything() {
            return Ok(None);
        }
        let index = self.index();
        let way = access.way(&index, &access.table(&index), id).ok_or(Error::MessageNotFound)?;
        Ok(way.borrowed.then_some(way))
    }

    /// [`Archive::search`] within `access`. The query the reader typed is checked as any (its
    /// length and depth are theirs); the folders come on top of it, uncounted.
    pub fn search_within(&self, access: &Access, q: &str, offset: usize, limit: usize) -> Result<Hits, Error> {
        let Some(keys) = access.folder_keys() else { return self.search(q, offset, limit) };
        let Some(search) = &self.search else { return self.search(q, offset, limit) };
        let Some(within) = within(keys, query::parse(q)?) else { return Ok(Hits::default()) };
        search.search_parsed(&within, offset, limit, &|m| self.index().by_message_id(m))
    }

    /// [`Archive::search_ids`] within `access`.
    pub fn search_ids_within(&self, access: &Access, q: &str) -> Result<HashSet<EntryId>, Error> {
        let Some(keys) = access.folder_keys() else { return self.search_ids(q) };
        let Some(search) = &self.search else { return self.search_ids(q) };
        let Some(within) = within(keys, query::parse(q)?) else { return Ok(HashSet::new()) };
        search.matching_parsed(&within, &|m| self.index().by_message_id(m))
    }
}

/// `typed`, and in one of these folders (or below): `None` when there are no folders, which
/// nothing matches.
fn within(keys: &[String], typed: Query) -> Option<Query> {
    let mut folders: Vec<Query> = keys.iter().map(|k| Query::Folder(k.clone())).collect();
    let folders = match folders.len() {
        0 => return None,
        1 => folders.pop()?,
        _ => Query::Or(folders),
    };
    Some(match typed {
        Query::All => folders,
        Query::And(mut all) => {
            all.insert(0, folders);
            Query::And(all)
        }
        other => Query::And(vec![folders, other]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readers_folders_come_on_top_of_what_they_typed() {
        let keys = ["legal".to_string(), "work".to_string()];
        let folders = Query::Or(vec![Query::Folder("legal".into()), Query::Folder("work".into())]);
        let typed = query::parse("a OR b").unwrap();
        assert_eq!(within(&keys, typed.clone()), Some(Query::And(vec![folders.clone(), typed])));
        assert_eq!(within(&keys, Query::All), Some(folders));
        assert_eq!(within(&keys[..1], Query::All), Some(Query::Folder("legal".into())));
        assert_eq!(within(&[], Query::All), None);
    }
}
