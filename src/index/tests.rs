//! The index against a plain model of it: adds, removals, commits, sorts and reopenings in a long
//! pseudo-random run, compressed entries across reopenings, threads and enclosed messages.

use std::collections::HashMap;
use std::sync::Arc;

use super::*;
use crate::ingest::Source;
use crate::store::rank;
use crate::store::Batch;

fn message(n: u64, date_minute: u64, parent: Option<u64>, nested: bool) -> Message {
    let reply = parent.map(|p| format!("In-Reply-To: <m{p}@x>\r\n")).unwrap_or_default();
    let head = format!(
        "Message-ID: <m{n}@x>\r\nFrom: a{n}@x\r\nSubject: s{n}\r\n{reply}Date: Mon, 2 Nov 2026 {:02}:{:02}:00 +0000\r\n",
        date_minute / 60 % 24,
        date_minute % 60
    );
    let raw = if nested {
        format!(
            "{head}Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee\r\n\
             --b\r\nContent-Type: message/rfc822\r\n\r\nMessage-ID: <inner{n}@x>\r\nSubject: inner\r\n\r\ninner {n}\r\n--b--\r\n"
        )
    } else {
        format!("{head}\r\nbody {n}\r\n")
    };
    crate::parse::parse_message(Arc::from(raw.into_bytes())).expect("parses")
}

fn top(n: u64) -> Location {
    let path = std::path::PathBuf::from(format!("/mail/f{}/cur/{n}", n % 3));
    Location::Top { source: Source::File { path }, rel: 5, flags: None, uploaded: false }
}

fn commit(store: &Arc<dyn Store>, index: &mut Index) {
    let mut batch = Batch::default();
    index.take_changes(&mut batch);
    store.commit(&batch).expect("commit");
    index.committed(&batch);
}

/// What the list must be: every live message, newest first, then by id.
fn expected(index: &Index, live: &HashMap<u64, EntryId>) -> Vec<EntryId> {
    let mut ids: Vec<EntryId> = live.values().copied().collect();
    ids.sort_by_key(|&id| (rank(index.get(id).and_then(|e| e.summary.timestamp)), id));
    ids
}

/// A long pseudo-random run of adds, removals, commits, sorts and reopenings checked against
/// a plain model after every step: the list order, folder counts, lookups, threads, enclosed
/// messages and what survives a reopening.
#[test]
fn the_stored_index_agrees_with_a_plain_model() {
    let dir = tempfile::tempdir().expect("dir");
    let mut store: Arc<dyn Store> = Arc::new(crate::store::RedbStore::open(dir.path()).expect("store"));
    let mut index = Index::open(Arc::clone(&store)).expect("index");
    let mut live: HashMap<u64, EntryId> = HashMap::new();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    for step in 0..600u64 {
        match next(10) {
            0..=5 => {
                let n = step;
                let parent = live.keys().next().copied().filter(|_| next(2) == 0);
                let added = index.add(&message(n, next(1440), parent, next(5) == 0), top(n)).expect("added");
                assert!(matches!(added, Added::New(_)), "step {step}");
                live.insert(n, added.id());
            }
            6 => {
                if let Some(&n) = live.keys().nth(next(live.len().max(1) as u64) as usize) {
                    let id = live.remove(&n).expect("live");
                    index.remove(id);
                    assert!(index.get(id).is_none() && index.by_key(&format!("m{n}@x")).is_none());
                }
            }
            7 => commit(&store, &mut index),
            8 => index.sort(),
            _ => {
                commit(&store, &mut index);
                drop(index);
                // Closed (which copies the list order for the next start) or just dropped.
                if next(2) == 0 {
                    store.close();
                }
                drop(store);
                store = Arc::new(crate::store::RedbStore::open(dir.path()).expect("reopen"));
                index = Index::open(Arc::clone(&store)).expect("index");
            }
        }
        // Same bytes again are the same message.
        if let Some((&n, &id)) = live.iter().next() {
            let again = index.add(&message(n, 0, None, false), top(n)).expect("added");
            if again != Added::Duplicate(id) {
                // Different date, so different bytes: take it back out.
                index.remove(again.id());
            }
        }
    }
    index.sort();
    assert_eq!(index.listed(), expected(&index, &live).as_slice());
    assert_eq!(index.listed_count(), live.len());
    let total: usize = index.folder_counts().map(|(_, n)| n).sum();
    assert_eq!(total, live.len(), "folder counts add up");
    for (&n, &id) in &live {
        assert_eq!(index.by_key(&format!("m{n}@x")), Some(id));
        assert_eq!(index.by_message_id(&format!("m{n}@x")), vec![id]);
        let e = index.get(id).expect("entry");
        let (page, count) = index.folder_page(e.folder, 0, usize::MAX);
        assert!(
            page.contains(&id)
                && count == index.folder_counts().find(|(p, _)| *p == index.folder_path(e.folder)).expect("folder").1
        );
        assert!(index.thread(id).iter().any(|&(_, t)| t == id));
    }
    // Reopened, everything reads the same.
    commit(&store, &mut index);
    let before: Vec<EntryId> = index.listed().to_vec();
    let counts: Vec<(String, usize)> = index.folder_counts().map(|(p, n)| (p.to_string(), n)).collect();
    drop(index);
    store.close();
    drop(store);
    let store: Arc<dyn Store> = Arc::new(crate::store::RedbStore::open(dir.path()).expect("reopen"));
    let index = Index::open(store).expect("index");
    assert_eq!(index.listed(), before.as_slice());
    let reopened: Vec<(String, usize)> = index.folder_counts().map(|(p, n)| (p.to_string(), n)).collect();
    assert_eq!(reopened, counts);
    for (&n, &id) in &live {
        assert_eq!(index.by_key(&format!("m{n}@x")), Some(id));
    }
}

/// Entries written before the store's dictionary exists, with it, and after reopening all
/// read back; removals find the rows of compressed entries.
#[test]
fn compressed_entries_read_back_across_reopenings() {
    let dir = tempfile::tempdir().expect("dir");
    let open = || -> (Arc<dyn Store>, Index) {
        let store: Arc<dyn Store> = Arc::new(crate::store::RedbStore::open(dir.path()).expect("store"));
        let index = Index::open(Arc::clone(&store)).expect("index");
        (store, index)
    };
    let (store, mut index) = open();
    let mut ids = HashMap::new();
    // A small first commit (stored as is), then one large enough to train the dictionary.
    for range in [0..5u64, 5..1_600] {
        for n in range {
            ids.insert(n, index.add(&message(n, n % 1440, n.checked_sub(1), n % 50 == 0), top(n)).expect("added").id());
        }
        commit(&store, &mut index);
    }
    drop(index);
    drop(store);
    let (store, mut index) = open();
    for n in 1_600..1_610 {
        ids.insert(n, index.add(&message(n, 7, Some(3), false), top(n)).expect("added").id());
    }
    for n in [2u64, 700, 1_605] {
        index.remove(ids.remove(&n).expect("id"));
    }
    commit(&store, &mut index);
    drop(index);
    drop(store);
    let (_store, mut index) = open();
    index.sort();
    assert_eq!(index.listed_count(), ids.len());
    for (&n, &id) in &ids {
        let e = index.get(id).expect("entry");
        assert_eq!(e.summary.subject.as_deref(), Some(format!("s{n}").as_str()));
        assert_eq!(index.by_key(&format!("m{n}@x")), Some(id));
    }
    assert!(index.by_key("m700@x").is_none());
    assert!(index.first_by_message_id("inner50@x").is_some(), "enclosed messages too");
}

#[test]
fn replies_and_enclosed_messages_are_found_through_the_store() {
    let dir = tempfile::tempdir().expect("dir");
    let store: Arc<dyn Store> = Arc::new(crate::store::RedbStore::open(dir.path()).expect("store"));
    let mut index = Index::open(Arc::clone(&store)).expect("index");
    let root = index.add(&message(1, 10, None, false), top(1)).expect("added").id();
    let reply = index.add(&message(2, 20, Some(1), true), top(2)).expect("added").id();
    let late = index.add(&message(3, 30, Some(2), false), top(3)).expect("added").id();
    commit(&store, &mut index);
    index.sort();
    drop(index);
    let index = Index::open(store).expect("index");
    let ids: Vec<EntryId> = index.thread(late).into_iter().map(|(_, id)| id).collect();
    assert_eq!(ids, vec![root, reply, late]);
    let inner = index.first_by_message_id("inner2@x").expect("enclosed message indexed");
    assert!(
        matches!(index.get(inner).map(|e| e.location.clone()), Some(Location::Nested { parent, .. }) if parent == reply)
    );
    assert_eq!(index.listed(), &[late, reply, root]);
}

/// A store written before folders differing only by case were one (or by two replicas at once)
/// may number one folder twice: both numbers are counted, listed and read as the first.
#[test]
fn a_folder_numbered_twice_is_counted_once() {
    let dir = tempfile::tempdir().expect("dir");
    let store: Arc<dyn Store> = Arc::new(crate::store::RedbStore::open(dir.path()).expect("store"));
    let mut index = Index::open(Arc::clone(&store)).expect("index");
    let maildir = |n: u64| Location::Top {
        source: Source::File { path: format!("/a/cur/{n}").into() },
        rel: 3,
        flags: None,
        uploaded: false,
    };
    let ids: Vec<EntryId> =
        (1..=3).map(|n| index.add(&message(n, n, None, false), maildir(n)).expect("added").id()).collect();
    let mut batch = Batch::default();
    index.take_changes(&mut batch);
    // The third message as an earlier version filed it: in a folder of its own named `Inbox`.
    batch.folders.push((1, "Inbox".to_string()));
    for (id, e) in &mut batch.entries {
        if *id == ids[2] {
            let mut moved = (**e).clone();
            moved.folder = 1;
            *e = Arc::new(moved);
        }
    }
    store.commit(&batch).expect("commit");
    drop(index);

    let index = Index::open(Arc::clone(&store)).expect("reopened");
    assert_eq!(index.folder_counts().collect::<Vec<_>>(), [("INBOX", 3)]);
    assert_eq!(index.folder_id("Inbox"), index.folder_id("INBOX"));
    let inbox = index.folder_id("inbox").expect("one folder");
    assert_eq!(index.folder_page(inbox, 0, 10).1, 3);
    assert_eq!(index.get(ids[2]).expect("entry").folder, inbox);
    let mut passed = Vec::new();
    index.each_listed_entry(|_, e| passed.push(e.folder));
    assert_eq!(passed, [inbox; 3]);
    assert_eq!(index.folder_path(1), "INBOX");
}
