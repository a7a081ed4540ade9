//! The reader against the stores Dovecot itself wrote (`tests/fixtures/dovecot-index/`: what
//! `doveadm fetch` said of them is the expected view), against logs written here for what those
//! stores do not show (two logs, unfinished transactions), and against damaged and hostile files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::log::stored_size;
use super::*;
use crate::ingest::DboxReader;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dovecot-index").join(rel)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn mailbox_dir(layout: &str, mailbox: &str) -> PathBuf {
    fixture(&format!("{layout}/mailboxes/{mailbox}/dbox-Mails"))
}

/// Dovecot's own view of a store, as `doveadm fetch` prints it.
#[path = "../../../tests/common/doveadm.rs"]
// Shared with the integration tests, for which its items are public.
#[allow(unreachable_pub)]
mod doveadm;

/// One message as a store shows it: mailbox, uid, Message-ID, flag letters, keywords (sorted).
type Seen = doveadm::Fetched;

/// What `doveadm fetch 'mailbox uid flags hdr.message-id' all` printed.
fn expected(layout: &str) -> BTreeSet<Seen> {
    let text = String::from_utf8(read(&fixture(&format!("expected-{layout}.txt")))).expect("text");
    doveadm::fetched(&text).into_iter().collect()
}

fn message_id(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .find_map(|l| l.strip_prefix("Message-ID: ").map(|m| m.trim_matches(['<', '>']).to_string()))
        .expect("a Message-ID")
}

/// What the reader says of a store, each message found by its map uid (mdbox: the map's file and
/// offset) or its uid (sdbox: `u.<uid>`).
fn seen(layout: &str) -> BTreeSet<Seen> {
    let map = read_map_index(&fixture(&format!("{layout}/storage"))).expect("reads");
    assert_eq!(map.is_some(), layout == "mdbox");
    let mut all = BTreeSet::new();
    for mailbox in ["INBOX", "Work"] {
        let dir = mailbox_dir(layout, mailbox);
        let index = read_mailbox_index(&dir).expect("reads").expect("index files");
        assert!(index.uid_validity != 0 && index.next_uid > 1, "{layout} {mailbox}");
        for (&uid, message) in &index.messages {
            assert!(uid < index.next_uid);
            let bytes = match &map {
                Some(map) => {
                    let mail = map.mails.get(&message.map_uid.expect("a map uid")).expect("in the map");
                    let file = read(&fixture(&format!("{layout}/storage/m.{}", mail.file_id)));
                    file[mail.offset as usize..(mail.offset + mail.size) as usize].to_vec()
                }
                None => {
                    assert_eq!(message.map_uid, None);
                    read(&dir.join(format!("u.{uid}")))
                }
            };
            let mut keywords = message.keywords.clone();
            keywords.sort();
            all.insert((mailbox.to_string(), uid, message_id(&bytes), message.flags.clone(), keywords));
        }
    }
    all
}

#[test]
fn flags_keywords_and_places_are_what_dovecot_says() {
    for layout in ["mdbox", "sdbox"] {
        let expected = expected(layout);
        assert_eq!(expected.len(), 8, "{layout}: the fixture");
        assert_eq!(seen(layout), expected, "{layout}");
    }
}

#[test]
fn moved_copied_and_expunged_messages_are_where_dovecot_put_them() {
    for layout in ["mdbox", "sdbox"] {
        let seen = seen(layout);
        let holding = |id: &str| -> Vec<String> {
            seen.iter().filter(|s| s.2 == format!("{id}@example.org")).map(|s| s.0.clone()).collect()
        };
        assert_eq!(holding("index-6"), Vec::<String>::new(), "{layout}: expunged");
        assert_eq!(holding("index-5"), ["Work"], "{layout}: moved");
        assert_eq!(holding("index-2"), ["INBOX", "Work"], "{layout}: copied");
    }
    // In mdbox a copy shares the message, a move changes no count, an expunge leaves it at 0.
    let map = read_map_index(&fixture("mdbox/storage")).expect("reads").expect("a map");
    let inbox = read_mailbox_index(&mailbox_dir("mdbox", "INBOX")).expect("reads").expect("an index");
    let work = read_mailbox_index(&mailbox_dir("mdbox", "Work")).expect("reads").expect("an index");
    let refcount = |map_uid: u32| map.mails.get(&map_uid).map(|m| m.refcount);
    assert_eq!(inbox.messages[&2].map_uid, work.messages[&4].map_uid, "the copy names the same map uid");
    assert_eq!(refcount(inbox.messages[&2].map_uid.expect("map uid")), Some(2));
    assert_eq!(refcount(work.messages[&3].map_uid.expect("map uid")), Some(1), "moved");
    let held: BTreeSet<u32> = inbox.messages.values().chain(work.messages.values()).filter_map(|m| m.map_uid).collect();
    let orphans: Vec<(u32, u16)> =
        map.mails.iter().filter(|(uid, _)| !held.contains(uid)).map(|(&uid, m)| (uid, m.refcount)).collect();
    assert_eq!(orphans, [(6, 0)], "the expunged message stays in the map, held by none");
}

#[test]
fn the_map_offset_is_where_the_frame_starts() {
    let map = read_map_index(&fixture("mdbox/storage")).expect("reads").expect("a map");
    let file = read(&fixture("mdbox/storage/m.1"));
    let framed: Vec<_> = DboxReader::new(&file[..], 1 << 20).map(|m| m.expect("reads")).collect();
    assert_eq!(framed.len(), map.mails.len());
    for message in &framed {
        let (map_uid, mail) = map.holding(1, message.offset).expect("the map has it");
        // The message header Dovecot 2.3 writes (`M1e`) lies between the two.
        assert_eq!(message.offset, u64::from(mail.offset) + 0x1e);
        assert!(file[mail.offset as usize..].starts_with(b"\x01\x02N"));
        assert_eq!(map.at(1, u64::from(mail.offset)), Some((map_uid, mail)));
        assert!(message.offset + message.len < u64::from(mail.offset + mail.size), "metadata follows");
        assert_eq!(map.holding(1, u64::from(mail.offset + mail.size) - 1).map(|(uid, _)| uid), Some(map_uid));
    }
    assert_eq!(map.at(1, 17), None);
    assert_eq!(map.holding(2, 100), None);
    assert_eq!(map.holding(1, 3), None, "the file header is no message's");
}

/// The index files of one mailbox, or of the map: its folder, `dovecot.index` if any, its logs.
type IndexSet = (String, Option<Vec<u8>>, Vec<Vec<u8>>);

/// The fixtures' index files, of each mailbox and of the map.
fn index_sets() -> Vec<IndexSet> {
    let mut sets = Vec::new();
    for (dir, base) in [
        ("mdbox/mailboxes/INBOX/dbox-Mails", "dovecot.index"),
        ("mdbox/mailboxes/Work/dbox-Mails", "dovecot.index"),
        ("mdbox/storage", "dovecot.map.index"),
        ("sdbox/mailboxes/INBOX/dbox-Mails", "dovecot.index"),
        ("sdbox/mailboxes/Work/dbox-Mails", "dovecot.index"),
    ] {
        let (index, logs) = read_files(&fixture(dir), base).expect("reads").expect("index files");
        sets.push((dir.to_string(), index, logs));
    }
    sets
}

#[test]
fn an_index_and_its_log_tail_agree_with_the_whole_log() {
    let mut with_index = 0;
    for (dir, index, logs) in index_sets() {
        let logs: Vec<&[u8]> = logs.iter().map(Vec::as_slice).collect();
        let whole = MailboxIndex::from_bytes(None, &logs).expect("reads");
        let Some(index) = index else { continue };
        with_index += 1;
        // Each of these logs starts from nothing (a first file), so it alone says everything.
        assert_eq!(MailboxIndex::from_bytes(Some(&index), &logs).expect("reads"), whole, "{dir}");
        assert_eq!(
            MapIndex::from_bytes(Some(&index), &logs).expect("reads"),
            MapIndex::from_bytes(None, &logs).expect("reads"),
            "{dir}"
        );
        // And the index alone is behind: the log's tail changes what it says.
        let alone = MailboxIndex::from_bytes(Some(&index), &[]).expect("reads");
        assert_ne!(alone, whole, "{dir}: the log has a tail");
    }
    assert_eq!(with_index, 3, "INBOX of each store, and mdbox's map, have dovecot.index");
    // Before the tail: uid 6 was still there, and uid 5 not yet moved.
    let index = read(&mailbox_dir("sdbox", "INBOX").join("dovecot.index"));
    let alone = MailboxIndex::from_bytes(Some(&index), &[]).expect("reads");
    assert_eq!(alone.messages.keys().copied().collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
}

#[test]
fn no_index_files_is_none() {
    assert_eq!(read_mailbox_index(&fixture("no-such-folder")).expect("reads"), None);
    assert_eq!(read_map_index(&fixture("sdbox/storage")).expect("reads"), None);
}

#[test]
fn damaged_files_give_an_error_or_what_came_before() {
    for (dir, index, logs) in index_sets() {
        let total: usize = index.iter().chain(&logs).map(Vec::len).sum();
        // Each file in turn cut at every 7th byte, then with every 7th byte changed.
        let files: Vec<&Vec<u8>> = index.iter().chain(&logs).collect();
        for which in 0..files.len() {
            let bytes = files[which];
            let mut variants: Vec<Vec<u8>> = (0..bytes.len()).step_by(7).map(|cut| bytes[..cut].to_vec()).collect();
            for at in (0..bytes.len()).step_by(7) {
                let mut changed = bytes.clone();
                changed[at] ^= 0xa5;
                variants.push(changed);
            }
            for variant in &variants {
                let mut given: Vec<&[u8]> = files.iter().map(|f| f.as_slice()).collect();
                given[which] = variant;
                let (index, logs) = match index {
                    Some(_) => (Some(given[0]), &given[1..]),
                    None => (None, &given[..]),
                };
                if let Ok(read) = MailboxIndex::from_bytes(index, logs) {
                    assert!(read.messages.len() <= total / 8, "{dir}");
                    assert!(read.messages.values().all(|m| m.flags.chars().all(|c| "DFRST".contains(c))));
                }
                if let Ok(map) = MapIndex::from_bytes(index, logs) {
                    assert!(map.mails.len() <= total / 8, "{dir}");
                }
            }
        }
    }
}

#[test]
fn big_endian_files_are_refused() {
    let dir = mailbox_dir("mdbox", "INBOX");
    let mut index = read(&dir.join("dovecot.index"));
    index[12] = 0;
    assert!(MailboxIndex::from_bytes(Some(&index), &[]).is_err());
    let mut log = read(&dir.join("dovecot.index.log"));
    log[32] = 0;
    assert!(MailboxIndex::from_bytes(None, &[&log]).is_err());
}

/// A log header: index id 7, its sequence number and the one before it.
fn log_header(file_seq: u32, prev_file_seq: u32) -> Vec<u8> {
    let mut out = vec![1, 3, 40, 0];
    for word in [7, file_seq, prev_file_seq, 0, 0, 0, 0] {
        out.extend_from_slice(&u32::to_le_bytes(word));
    }
    out.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
    out
}

/// A log record of `kind` holding `words` (`u32`s) and then `bytes`, padded to 4.
fn record(kind: u32, words: &[u32], bytes: &[u8]) -> Vec<u8> {
    let mut data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    data.extend_from_slice(bytes);
    while !data.len().is_multiple_of(4) {
        data.push(0);
    }
    let mut out = stored_size(8 + data.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&data);
    out
}

const EXPUNGE: u32 = 0x1 | 0xcd90;

fn keyword(add: bool, name: &str, first: u32, last: u32) -> Vec<u8> {
    let mut data = vec![u8::from(!add), 0];
    data.extend_from_slice(&(name.len() as u16).to_le_bytes());
    data.extend_from_slice(name.as_bytes());
    while !data.len().is_multiple_of(4) {
        data.push(0);
    }
    data.extend_from_slice(&first.to_le_bytes());
    data.extend_from_slice(&last.to_le_bytes());
    record(0x400, &[], &data)
}

#[test]
fn log_records_are_replayed_in_order_across_two_logs() {
    let mut older = log_header(1, 0);
    older.extend(record(0x20, &[24 | (4 << 16), 1234], &[])); // uid validity
    older.extend(record(0x2, &[1, 0x08, 2, 0, 3, 0x02, 4, 0], &[])); // appends, 1 seen, 3 flagged
    older.extend(keyword(true, "Work", 1, 3));
    let mut newer = log_header(2, 1);
    newer.extend(record(EXPUNGE, &[2, 2], &[]));
    newer.extend(record(0x1, &[4, 4], &[])); // no protection: damage, not acted on
    newer.extend(record(0x4, &[3, 3, 0x01 | (0x02 << 8)], &[])); // 3: answered, not flagged
    newer.extend(keyword(false, "Work", 3, 3));
    newer.extend(keyword(true, "$Forwarded", 1, 4));
    newer.extend(record(0x800, &[4, 4], &[])); // 4: keywords cleared
    newer.extend(record(0x2, &[9, 0x10], &[]));
    for logs in [[&older[..], &newer[..]], [&newer[..], &older[..]]] {
        let index = MailboxIndex::from_bytes(None, &logs).expect("reads");
        assert_eq!((index.uid_validity, index.next_uid), (1234, 10));
        let view: Vec<(u32, &str, Vec<&str>)> = index
            .messages
            .iter()
            .map(|(&uid, m)| (uid, m.flags.as_str(), m.keywords.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            view,
            [(1, "S", vec!["Work", "$Forwarded"]), (3, "R", vec!["$Forwarded"]), (4, "", vec![]), (9, "D", vec![])]
        );
    }
    // A transaction whose boundary reaches past the end is not yet written: it is left out.
    let mut unfinished = log_header(1, 0);
    unfinished.extend(record(0x2, &[1, 0], &[]));
    unfinished.extend(record(0x80000, &[100], &[]));
    unfinished.extend(record(0x4, &[1, 1, 0x08], &[]));
    let index = MailboxIndex::from_bytes(None, &[&unfinished]).expect("reads");
    assert_eq!(index.messages[&1].flags, "");
}

/// An mdbox map log: intros by name, record updates, reference counts, a reset.
#[test]
fn map_extensions_are_replayed() {
    let intro = |name: &str, record_size: u32| {
        record(0x40, &[u32::MAX, 0, 0, record_size, 1 | ((name.len() as u32) << 16)], name.as_bytes())
    };
    let mut log = log_header(1, 0);
    log.extend(record(0x2, &[1, 0, 2, 0], &[]));
    log.extend(intro("map", 12));
    log.extend(record(0x200, &[1, 1, 16, 200, 2, 1, 216, 100], &[]));
    log.extend(intro("ref", 2));
    log.extend(record(0x200, &[1, 1, 2, 1], &[]));
    log.extend(intro("ref", 2));
    log.extend(record(0x1000, &[1, 1, 2, u32::MAX, 2, (-5i32) as u32], &[])); // the last would go below 0
    let map = MapIndex::from_bytes(None, &[&log]).expect("reads");
    let mail = |file_id, offset, size, refcount| MapMail { file_id, offset, size, refcount };
    assert_eq!(map.mails.get(&1), Some(&mail(1, 16, 200, 2)));
    assert_eq!(map.mails.get(&2), Some(&mail(1, 216, 100, 0)));
    // A reset that drops the data voids every message's.
    log.extend(intro("map", 12));
    log.extend(record(0x80, &[5, 0], &[]));
    assert!(MapIndex::from_bytes(None, &[&log]).expect("reads").mails.is_empty());
}

#[test]
fn hostile_logs_stay_bounded() {
    // Many messages, and changes over every uid again and again: refused once past the work allowed.
    let mut log = log_header(1, 0);
    let appends: Vec<u32> = (1..=2000).flat_map(|uid| [uid, 0]).collect();
    log.extend(record(0x2, &appends, &[]));
    for _ in 0..200 {
        log.extend(record(0x4, &[1, u32::MAX, 0x08], &[]));
    }
    assert!(State::replayed_within(None, &[&log], 100_000).is_err());
    assert_eq!(State::replayed_within(None, &[&log], 1_000_000).expect("within").records.len(), 2000);
    // Sizes that are no sizes, a record past the end, an intro of an unknown id: what came before.
    let mut log = log_header(1, 0);
    log.extend(record(0x2, &[1, 0], &[]));
    let mut bad = record(0x2, &[2, 0], &[]);
    bad[0] = 0x7f;
    let mut past = log.clone();
    past.extend(record(0x2, &[3, 0], &[]));
    past.truncate(past.len() - 1);
    log.extend(record(0x40, &[99, 0, 0, 4, 0], &[]));
    log.extend(record(0x200, &[1, 5], &[]));
    for variant in [[log.clone(), bad].concat(), past] {
        let index = MailboxIndex::from_bytes(None, &[&variant]).expect("reads");
        assert_eq!(index.messages.keys().copied().collect::<Vec<_>>(), [1]);
    }
    // A message count no file could hold.
    let mut index = read(&mailbox_dir("sdbox", "INBOX").join("dovecot.index"));
    index[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(MailboxIndex::from_bytes(Some(&index), &[]).is_err());
}

/// A store's digests (an mdbox store's files', an sdbox mailbox's messages') are kept from one
/// scan to the next while its index files stay as they were, and made again from a new reading
/// once one of them changes: the same digests as indexes read afresh give.
#[test]
fn dbox_digests_are_kept_until_an_index_file_changes() {
    for (layout, file, other) in [
        ("mdbox", "storage/m.1", "storage/m.9"),
        ("sdbox", "mailboxes/INBOX/dbox-Mails/u.1", "mailboxes/INBOX/dbox-Mails/u.3"),
    ] {
        let dir = tempfile::tempdir().expect("dir");
        let store = dir.path().join(layout);
        let from = fixture(layout);
        let mut stack = vec![from.clone()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let to = store.join(entry.path().strip_prefix(&from).expect("inside"));
                if entry.file_type().expect("type").is_dir() {
                    std::fs::create_dir_all(&to).expect("mkdir");
                    stack.push(entry.path());
                } else {
                    std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
                    std::fs::copy(entry.path(), &to).expect("copy");
                }
            }
        }
        let (file, other) = (store.join(file), store.join(other));
        let fresh = |file: &Path| Indexes::default().digest(file);
        let mut kept = Indexes::default();
        let first = kept.digest(&file).expect("a digest");
        assert_eq!(kept.digest(&other), fresh(&other), "{layout}: the folder's other file");
        kept.forget_read();
        assert_eq!(kept.digest(&file), Some(first), "{layout}: nothing changed");
        assert_eq!(fresh(&file), Some(first), "{layout}");
        // Without INBOX's log, INBOX is as its index has it: no flags, nothing moved or copied.
        std::fs::remove_file(store.join("mailboxes/INBOX/dbox-Mails/dovecot.index.log")).expect("rm");
        kept.forget_read();
        let after = kept.digest(&file).expect("a digest");
        assert_ne!(after, first, "{layout}: INBOX's log gone");
        assert_eq!(fresh(&file), Some(after), "{layout}: as a new reading gives");
        assert_eq!(kept.digest(&other), fresh(&other), "{layout}: the folder's other file");
    }
}
