//! mdbox's map: `storage/dovecot.map.index` and its logs, of the same formats as a mailbox's index
//! (see [`super::index`] and [`super::log`]), whose messages are keyed by map uid. Each record
//! carries the `map` extension (`struct dbox_map_mail_index_record`: the file id of `m.<file id>`,
//! the offset and the size of the message's frame in it, three `u32`s) and the `ref` extension
//! (a `u16`: how many mailbox messages name this map uid; a copy raises it, an expunge lowers it).
//! A message no mailbox holds any more keeps a count of 0 and its bytes until `doveadm purge`
//! rewrites the files and drops it from the map.

use std::collections::BTreeMap;
use std::path::Path;

use super::{replayed_files, Field, State};

/// mdbox's map: for each map uid, where the message lies and how many mailboxes hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapIndex {
    /// The map's messages by map uid (those purged are absent; those no mailbox holds have a
    /// reference count of 0).
    pub mails: BTreeMap<u32, MapMail>,
    /// Map uids by file id and offset, for [`MapIndex::at`] and [`MapIndex::holding`].
    places: BTreeMap<(u32, u32), u32>,
}

/// Where one message of an mdbox store lies, and how many mailbox messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapMail {
    /// The file: `storage/m.<file_id>`.
    pub file_id: u32,
    /// Where the message's frame starts in the file: its dbox message header (`\x01\x02N`…), not
    /// its bytes. Those start after the message header, whose size the file's first line gives
    /// (`M1e`, 30 bytes, as Dovecot 2.3 writes): `DboxMessage::offset` is this offset plus that
    /// size.
    pub offset: u32,
    /// The size of the whole frame: message header, the message's bytes as stored, and the
    /// metadata after them (up to the next frame's offset).
    pub size: u32,
    /// How many mailbox messages name this map uid (a copy shares it); 0 when none does, and the
    /// bytes wait for `doveadm purge`.
    pub refcount: u16,
}

/// Reads mdbox's map from `storage` (the folder of the `m.*` files): `dovecot.map.index`,
/// `dovecot.map.index.log`, `dovecot.map.index.log.2` — any may be missing. `Ok(None)` when there
/// are no map files at all.
pub fn read_map_index(storage: &Path) -> std::io::Result<Option<MapIndex>> {
    Ok(replayed_files(storage, "dovecot.map.index")?.map(MapIndex::of))
}

impl MapIndex {
    /// The map from the bytes of its files: `dovecot.map.index` if there is one, and its logs in
    /// any order. Messages without a place (file id 0, or never set) are left out.
    pub fn from_bytes(index: Option<&[u8]>, logs: &[&[u8]]) -> std::io::Result<MapIndex> {
        State::replayed(index, logs).map(MapIndex::of)
    }

    fn of(state: State) -> MapIndex {
        let mut mails = BTreeMap::new();
        let mut places = BTreeMap::new();
        for (&map_uid, record) in &state.records {
            let Some([file_id, offset, size]) = state.current(Field::Place, record.place) else { continue };
            if file_id == 0 {
                continue;
            }
            let refcount = state.current(Field::Refcount, record.refcount).unwrap_or(0);
            mails.insert(map_uid, MapMail { file_id, offset, size, refcount });
            places.insert((file_id, offset), map_uid);
        }
        MapIndex { mails, places }
    }

    /// The message whose frame starts at `offset` of `m.<file_id>` (the map's own offset; see
    /// [`MapMail::offset`]), with its map uid.
    pub fn at(&self, file_id: u32, offset: u64) -> Option<(u32, &MapMail)> {
        let offset = u32::try_from(offset).ok()?;
        let map_uid = *self.places.get(&(file_id, offset))?;
        Some((map_uid, self.mails.get(&map_uid)?))
    }

    /// The messages of `m.<file_id>`, in the order of their frames: map uid and place.
    pub fn in_file(&self, file_id: u32) -> impl Iterator<Item = (u32, &MapMail)> {
        self.places.range((file_id, 0)..=(file_id, u32::MAX)).filter_map(|(_, &uid)| Some((uid, self.mails.get(&uid)?)))
    }

    /// The message whose frame holds byte `at` of `m.<file_id>`: given where a message's bytes
    /// start (`DboxMessage::offset`), the map's message it is, with its map uid.
    pub fn holding(&self, file_id: u32, at: u64) -> Option<(u32, &MapMail)> {
        let at32 = u32::try_from(at).unwrap_or(u32::MAX);
        let (&(file, offset), &map_uid) = self.places.range(..=(file_id, at32)).next_back()?;
        let mail = self.mails.get(&map_uid)?;
        (file == file_id && at < u64::from(offset) + u64::from(mail.size)).then_some((map_uid, mail))
    }
}
