//! The indexing pipeline: one thread walks the sources (and streams mbox files), a worker per core
//! reads and parses messages and makes their search documents, and everything comes back to the
//! collector in [`super`], which adds and commits it, in the order the walker found it
//! ([`super::in_order`]).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use super::doc::search_doc;
use super::in_order::{InOrder, Numbered, BATCHES_OUT};
use super::{Archive, Pending, ToRead};
use crate::crypto::Keyring;
use crate::error::Error;
use crate::index::{Draft, Location};
use crate::ingest::{self, Kind, MboxReader, Source};
use crate::limits::MAX_IN_FLIGHT_BYTES;
use crate::model::Message;
use crate::par::{Quota, Share};
use crate::parse::parse_given;
use crate::search::Doc;
use crate::store::{Batch, SourceState};

/// Messages waiting in each channel (to be parsed, and parsed ones waiting to be indexed), in
/// batches of [`HANDED_AT_ONCE`]: enough to keep every core busy, few enough that memory does not
/// grow with a backlog (with the batch each thread holds, a few hundred messages; batches done
/// while an earlier one is not wait for it, [`BATCHES_OUT`] of them out at most). Their
/// bytes are bounded too: the walker takes a message's size from a [`Quota`] of
/// [`MAX_IN_FLIGHT_BYTES`] before it hands the message on, and the share is given back as the
/// collector drops the indexed message. Counting messages alone let the walker read 32 large
/// messages ahead of workers slowed by their documents (hundreds of MB); a message larger than the
/// whole bound goes alone. (An Outlook item is read by its worker, of a size not known before:
/// those are bounded by their count.)
const IN_FLIGHT: usize = 32;

/// Messages handed from one thread to the next at a time. Handed one by one, every message woke
/// a sleeping thread at each step (the walker when a worker took a job, the collector when a
/// worker finished one): about 3.5 context switches a message, the two busiest threads switched
/// out 80,000 times in 100,000 messages.
const HANDED_AT_ONCE: usize = 16;

/// Bytes of messages handed at a time, at most: large messages go in smaller batches, so that
/// the bytes in flight are spread over several batches (and so over every worker), not held by
/// one worker's batch while the others wait.
const HANDED_BYTES: u64 = MAX_IN_FLIGHT_BYTES / 8;

/// Work for the parse workers, each with its share of the bytes in flight.
enum Job {
    /// A file that is one message: `checked` when the walker read its first bytes to tell, else a
    /// Maildir's message file ([`ingest::maildir_message`]), which the worker tells from its bytes;
    /// with the flags its MH folder's sequences give it.
    File { src: usize, root: Arc<Path>, path: PathBuf, size: u64, held: Share, checked: bool, mh_flags: Option<String> },
    /// One message of a file of many (an mbox, a dbox, MMDF or Babyl file), already read (its
    /// first bytes, when it is longer than the limit), with the flags its header keeps (read by
    /// the walker, which looks at them anyway to leave out what Thunderbird deleted) and the
    /// labels the file gives it (Babyl's).
    Mbox {
        src: usize,
        source: Source,
        rel: u16,
        given: ingest::Given,
        flags: Option<String>,
        labels: Vec<String>,
        held: Share,
    },
    /// One item of an Outlook data file, read by the worker (of a size not known before).
    Pst { src: usize, source: Source, rel: u16 },
    /// An sdbox file (one message, framed), read by the worker as a Maildir's files are; its
    /// mailbox from its path, its flags and keywords from the mailbox's index when it has one.
    Sdbox {
        src: usize,
        root: Arc<Path>,
        path: PathBuf,
        held: Share,
        mailbox: String,
        flags: Option<String>,
        keywords: Vec<String>,
    },
}

/// What comes back to the indexing thread.
pub(super) enum Outcome {
    Parsed {
        src: usize,
        /// What the index keeps of the message (its content hash too), made by the worker, which
        /// drops the message itself.
        draft: Box<Draft>,
        location: Location,
        /// What the search index gets, made by the worker (its id is set once known).
        doc: Option<Box<Doc>>,
        /// Its bytes' share of what may be in flight, given back as the collector drops it.
        held: Option<Share>,
    },
    Failed {
        src: usize,
        held: Option<Share>,
    },
    /// A file that could not be read (gone, or not readable by the server): left for the next
    /// run to read again.
    Unread {
        src: usize,
        held: Option<Share>,
    },
    /// A file of a Maildir folder that turned out not to be a message.
    NotMail {
        src: usize,
        held: Option<Share>,
    },
    /// The walker finished a source: it gave `count` jobs; `whole` unless it could not be read to
    /// its end (then what it gave before stays listed, and the next run reads it again).
    Done {
        src: usize,
        count: usize,
        state: SourceState,
        whole: bool,
    },
}

impl Archive {
    /// Reads `todo` on every core into `batch`, committing a checkpoint every [`super::BATCH`]
    /// messages. A run of the indexer lock's holder (`holding`) is given up when the lock is lost
    /// on the way: it returns false, and what was read since the last checkpoint is taken back out.
    pub(super) fn run_pipeline(&self, todo: Vec<ToRead>, batch: &mut Batch, holding: bool) -> bool {
        if todo.is_empty() {
            return true;
        }
        let workers = crate::par::cores();
        let (job_tx, job_rx) = sync_channel::<Numbered<Job>>(IN_FLIGHT / HANDED_AT_ONCE);
        let (out_tx, out_rx) = sync_channel::<Numbered<Outcome>>(IN_FLIGHT / HANDED_AT_ONCE);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let mut pending: Vec<Option<Pending>> = Vec::with_capacity(todo.len());
        let mut files = Vec::with_capacity(todo.len());
        for t in todo {
            pending.push(Some(Pending {
                failed: false,
                unread: false,
                key: t.key,
                path: t.found.path.clone(),
                ids: t.ids,
                replaced: t.replaced,
                received: 0,
                done: None,
            }));
            files.push((t.found, t.start, t.stat));
        }
        let reading = Reading { limit: self.max_message, within: self.within() };
        std::thread::scope(|scope| {
            let walker_out = out_tx.clone();
            let in_flight = Arc::new(Quota::new(MAX_IN_FLIGHT_BYTES));
            let turns = Arc::new(Quota::new(BATCHES_OUT));
            let reading = &reading;
            scope.spawn(move || walk_sources(files, Jobs::new(job_tx, turns, in_flight), walker_out, reading));
            for _ in 0..workers {
                let rx = Arc::clone(&job_rx);
                let tx = out_tx.clone();
                let search = self.search.is_some().then_some(self.attachment_text);
                let keys = self.index_keys.get().cloned();
                scope.spawn(move || parse_worker(&rx, &tx, search, keys.as_deref(), reading));
            }
            drop(out_tx);
            // Only the workers hold the jobs' receiver now: if collecting stops early, they stop
            // at their next message, and with them gone the walker's next send fails and it stops.
            drop(job_rx);
            // Merges of the search index read whole segments through maps meanwhile.
            let (running, stopped) = std::sync::mpsc::channel::<()>();
            scope.spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(crate::memory::RELEASE_MAPS_EVERY)
                {
                    crate::memory::release_maps();
                }
            });
            let finished = self.collect(InOrder::new(out_rx.into_iter()), &mut pending, batch, holding);
            drop(running);
            finished
        })
    }
}

/// How sources are read: a message within `limit` bytes, and a file only where it really lies
/// `within` the paths served (whatever was swapped for a link since the walk).
struct Reading {
    limit: usize,
    within: ingest::Within,
}

/// The walker: tells files from mbox files, streams mbox files into single-message jobs (each
/// within the limit), and reports each source done with its job count.
fn walk_sources(
    files: Vec<(ingest::Found, u64, (u64, i64))>,
    jobs: Jobs,
    out: SyncSender<Numbered<Outcome>>,
    reading: &Reading,
) {
    let mut walker = Walker { jobs, sidecars: ingest::Sidecars::default() };
    for (src, (found, start, stat)) in files.into_iter().enumerate() {
        // The jobs handed on count even when reading stops part way: their outcomes are on their way.
        let mut count = 0;
        let (state, whole) = match walk_one(&found, src, start, stat, &mut walker, reading, &mut count) {
            Ok(state) => (state, true),
            Err(e) => {
                tracing::warn!(path = %found.path.display(), error = %e, "not read to its end");
                (SourceState::default(), false)
            }
        };
        // Taken as it comes: a source is finished once this and all its messages are in.
        let done = Numbered { place: None, items: vec![Outcome::Done { src, count, state, whole }], turn: None };
        if out.send(done).is_err() {
            return;
        }
    }
    walker.jobs.send();
}

/// What the walker holds as it goes: the jobs not handed on yet, and Dovecot's indexes of the
/// dbox store it is in.
struct Walker {
    jobs: Jobs,
    sidecars: ingest::Sidecars,
}

/// The jobs the walker has not handed on yet: sent [`HANDED_AT_ONCE`] (or [`HANDED_BYTES`]) at a
/// time, and whenever the walker would wait for bytes in flight to be given back (the jobs it
/// holds must reach a worker for that to happen), is about to read a large source, or is done.
/// Each batch is numbered, and takes a turn of the [`BATCHES_OUT`] that may be out of order.
struct Jobs {
    to: SyncSender<Numbered<Job>>,
    held: Vec<Job>,
    /// The bytes of the jobs held.
    bytes: u64,
    turns: Arc<Quota>,
    /// The next batch's place in the order.
    place: u64,
    /// The bytes of messages read and not yet indexed (the jobs' [`Share`]s).
    in_flight: Arc<Quota>,
}

impl Jobs {
    fn new(to: SyncSender<Numbered<Job>>, turns: Arc<Quota>, in_flight: Arc<Quota>) -> Jobs {
        Jobs { to, held: Vec::with_capacity(HANDED_AT_ONCE), bytes: 0, turns, place: 0, in_flight }
    }

    /// A share of `amount` bytes in flight for the next job, once it fits.
    fn share(&mut self, amount: u64) -> Share {
        let in_flight = Arc::clone(&self.in_flight);
        let share = in_flight.try_take(amount).unwrap_or_else(|| {
            self.send();
            in_flight.take(amount)
        });
        self.bytes += amount;
        share
    }

    /// Adds a job; false once no worker takes jobs any more.
    fn push(&mut self, job: Job) -> bool {
        self.held.push(job);
        (self.held.len() < HANDED_AT_ONCE && self.bytes < HANDED_BYTES) || self.send()
    }

    /// Hands on the jobs held; false once no worker takes jobs any more.
    fn send(&mut self) -> bool {
        if self.held.is_empty() {
            return true;
        }
        self.bytes = 0;
        let items = std::mem::replace(&mut self.held, Vec::with_capacity(HANDED_AT_ONCE));
        // Every batch out before this one has been handed on already, so the collector waits
        // for none that is not on its way.
        let turn = self.turns.take(1);
        let place = self.place;
        self.place += 1;
        self.to.send(Numbered { place: Some(place), items, turn: Some(turn) }).is_ok()
    }
}

/// Reads the source `found` from `start`; `(size, mtime_ns)` is what the scan found it to be (a
/// source that changes after that is read again at the next run, since its state will differ),
/// to which what the files beside it say of its messages is added as this reading finds it.
fn walk_one(
    found: &ingest::Found,
    src: usize,
    start: u64,
    (size, mtime_ns): (u64, i64),
    walker: &mut Walker,
    reading: &Reading,
    count: &mut usize,
) -> std::io::Result<SourceState> {
    let Walker { jobs, sidecars } = walker;
    let limit = reading.limit;
    // What the files beside it say of its messages, as this reading of them gives its messages.
    let mtime_ns = ingest::version(mtime_ns, sidecars.digest(&found.path));
    let mut state = SourceState { size, mtime_ns, ..SourceState::default() };
    // An sdbox store's files, one message each, are opened once, by the worker; the flags and
    // keywords its mailbox's index gives them go with them.
    if let Some(mailbox) = ingest::sdbox_file(&found.path) {
        let (flags, keywords) =
            sidecars.dovecot().sdbox(&found.path).map(|(flags, keywords)| (Some(flags), keywords)).unwrap_or_default();
        let held = jobs.share(size.min(limit as u64));
        let job =
            Job::Sdbox { src, root: found.root.clone(), path: found.path.clone(), held, mailbox, flags, keywords };
        if jobs.push(job) {
            *count += 1;
        }
        return Ok(state);
    }
    // A Maildir's message files, most of a Maildir archive, are opened once, by the worker.
    let checked = !ingest::maildir_message(found);
    match if checked { ingest::sniff_found(found)? } else { Kind::Message } {
        Kind::Other => {
            // Given by itself (a PATH that is this file): say why nothing of it is listed.
            if *found.path == *found.root {
                tracing::warn!(path = %found.path.display(), "not mail mailshelf reads (a compressed file must be uncompressed first): nothing listed from it");
            }
            Ok(state)
        }
        Kind::Message => {
            let held = jobs.share(size.min(limit as u64));
            let (root, path) = (found.root.clone(), found.path.clone());
            let mh_flags = sidecars.mh_flags(&found.path);
            if jobs.push(Job::File { src, root, path, size, held, checked, mh_flags }) {
                *count += 1;
            }
            Ok(state)
        }
        Kind::Pst => {
            // What the walker holds goes first: listing (or, below, reading) a large source takes a while.
            jobs.send();
            // Listed like an mbox, an item a job; the worker reads each item.
            reading.within.refuse_outside(&found.path)?;
            let listing = crate::ingest::pst::list(&found.path).map_err(std::io::Error::other)?;
            for notice in &listing.notices {
                tracing::warn!(path = %found.path.display(), "{notice}");
            }
            let rel = relative_start(&found.root, &found.path);
            let notices = (!listing.notices.is_empty())
                .then(|| crate::ingest::pst::PstItem { node: crate::ingest::pst::NOTICE_NODE, folder: String::new() });
            for item in listing.items.into_iter().chain(notices) {
                let source = Source::Pst { path: found.path.clone(), node: item.node, folder: item.folder };
                if !jobs.push(Job::Pst { src, source, rel }) {
                    break;
                }
                *count += 1;
            }
            Ok(state)
        }
        Kind::Dbox => {
            jobs.send();
            let f = reading.within.open(&found.path)?;
            let rel = relative_start(&found.root, &found.path);
            // mdbox notes each message's mailbox; an sdbox file named otherwise has it in its path.
            let in_path = found.path.parent().and_then(ingest::sdbox_mailbox);
            let store = sidecars.dovecot().mdbox(&found.path);
            for m in ingest::DboxReader::new(std::io::BufReader::with_capacity(256 * 1024, f), limit) {
                let m = match m {
                    Ok(m) => m,
                    Err(e) => {
                        tracing::warn!(path = %found.path.display(), error = %e, "a damaged dbox file: read as far as the damage");
                        break;
                    }
                };
                // Where Dovecot's indexes put it now: in each mailbox holding it (a copy in two,
                // a moved one where it went), none once expunged; else where its file says.
                let noted = |m: &ingest::DboxMessage| {
                    let mailbox = m.mailbox.clone().or_else(|| in_path.clone()).unwrap_or_default();
                    vec![ingest::Held { mailbox, flags: String::new(), keywords: Vec::new() }]
                };
                let (places, known) = match store.as_ref().map(|(s, file_id)| s.place(*file_id, m.offset)) {
                    Some(ingest::Placed::In(held)) => (held, true),
                    Some(ingest::Placed::Expunged) => continue,
                    Some(ingest::Placed::Unknown) | None => (noted(&m), false),
                };
                let last = places.len().saturating_sub(1);
                let whole = ingest::put_back_dbox_attachments(
                    &found.path,
                    m.offset,
                    m.given,
                    &m.external_refs,
                    &reading.within,
                    limit,
                );
                let mut given = Some(whole);
                for (i, place) in places.into_iter().enumerate() {
                    let source =
                        Source::Dbox { path: found.path.clone(), offset: m.offset, len: m.len, mailbox: place.mailbox };
                    let Some(given) = (if i < last { given.clone() } else { given.take() }) else { break };
                    let held = jobs.share(given.bytes.len() as u64);
                    let flags = known.then_some(place.flags);
                    if !jobs.push(Job::Mbox { src, source, rel, given, flags, labels: place.keywords, held }) {
                        return Ok(state);
                    }
                    *count += 1;
                }
            }
            Ok(state)
        }
        Kind::Framed(framing) => {
            jobs.send();
            let mut f = reading.within.open(&found.path)?;
            let packing = ingest::packing_of(&mut f)?;
            let rel = relative_start(&found.root, &found.path);
            let input: Box<dyn Read> = match packing {
                Some(p) => Box::new(ingest::unpacked_mbox(f, p, size)?),
                None => Box::new(f),
            };
            let messages =
                ingest::SpansReader::new(std::io::BufReader::with_capacity(256 * 1024, input), framing, limit);
            let end = hand_on_spans(messages, found, src, rel, jobs, count);
            if packing.is_some() && end >= ingest::mbox_bound(size) {
                tracing::warn!(path = %found.path.display(), "a compressed file inflates beyond 64 times its size: read as far as that");
            }
            Ok(state)
        }
        Kind::Mbox => {
            jobs.send();
            let mut f = reading.within.open(&found.path)?;
            let packing = ingest::packing_of(&mut f)?;
            // A compressed mbox is read whole each time (its state keeps no tail to append to).
            let start = if packing.is_some() { 0 } else { start };
            f.seek(SeekFrom::Start(start))?;
            let rel = relative_start(&found.root, &found.path);
            let end = match packing {
                Some(p) => {
                    let mbox = MboxReader::with_capacity(256 * 1024, ingest::unpacked_mbox(f, p, size)?, 0);
                    hand_on_mbox(mbox.limit(limit), found, src, rel, jobs, count)?
                }
                None => hand_on_mbox(
                    MboxReader::with_capacity(256 * 1024, f, start).limit(limit),
                    found,
                    src,
                    rel,
                    jobs,
                    count,
                )?,
            }
            .unwrap_or(start);
            state.mbox_end = end;
            state.mbox_tail = if packing.is_some() {
                if end >= ingest::mbox_bound(size) {
                    tracing::warn!(path = %found.path.display(), "a compressed mbox inflates beyond 64 times its size: read as far as that");
                }
                None
            } else {
                tail_hash(&found.path, end).ok()
            };
            Ok(state)
        }
    }
}

/// Hands on each message `mbox` reads as a job (Thunderbird's deleted ones left out), counting
/// them in `count`; where the last message read ends, if any was.
fn hand_on_mbox<R: Read + Seek>(
    mbox: MboxReader<R>,
    found: &ingest::Found,
    src: usize,
    rel: u16,
    jobs: &mut Jobs,
    count: &mut usize,
) -> std::io::Result<Option<u64>> {
    let mut end = None;
    for m in mbox {
        let m = m?;
        end = Some(m.offset + m.len);
        if m.len == 0 {
            continue;
        }
        let status = ingest::mbox_status(&m.raw);
        // Deleted in Thunderbird, left in the file until the folder is compacted.
        if status.expunged {
            continue;
        }
        let source = Source::Mbox { path: found.path.clone(), offset: m.offset, len: m.len };
        let held = jobs.share(m.raw.len() as u64);
        let cut_from = m.is_cut().then_some(m.len);
        let given = ingest::Given { bytes: ingest::unescape_from_lines(m.raw), cut_from, notices: Vec::new() };
        if !jobs.push(Job::Mbox { src, source, rel, given, flags: status.flags, labels: Vec::new(), held }) {
            break;
        }
        *count += 1;
    }
    Ok(end)
}

/// Hands on each message an MMDF or Babyl file holds as a job, counting them in `count` (empty
/// ones left out); a file that cannot be read on is read as far as that, with a warning. Where
/// the last message read ends.
fn hand_on_spans<R: std::io::BufRead>(
    messages: ingest::SpansReader<R>,
    found: &ingest::Found,
    src: usize,
    rel: u16,
    jobs: &mut Jobs,
    count: &mut usize,
) -> u64 {
    let mut end = 0;
    for m in messages {
        let m = match m {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(path = %found.path.display(), error = %e, "read as far as an error");
                break;
            }
        };
        end = m.offset + m.len;
        let Some(flags) = m.listed_flags() else { continue };
        let source = Source::Framed { path: found.path.clone(), offset: m.offset, len: m.len, skip: m.skip };
        let held = jobs.share(m.given.bytes.len() as u64);
        if !jobs.push(Job::Mbox { src, source, rel, given: m.given, flags, labels: m.labels, held }) {
            break;
        }
        *count += 1;
    }
    end
}

/// `search`: `None` when search is off, else whether documents' text goes into it. With
/// `--index-decrypted` (`keys`), what encrypted layers hide is read (and indexed) too. Files are
/// read as `reading` says.
fn parse_worker(
    jobs: &Mutex<Receiver<Numbered<Job>>>,
    out: &SyncSender<Numbered<Outcome>>,
    search: Option<bool>,
    keys: Option<&Keyring>,
    reading: &Reading,
) {
    let limit = reading.limit;
    // The folder of the last file opened stays open: the next file is mostly in it.
    let opener = std::cell::RefCell::new(reading.within.opener());
    let read = |parsed: Result<Message, Error>| parsed.map(|m| Archive::as_indexed(keys, m));
    // Search documents are made here, on every core, rather than on the indexing thread.
    let doc = |msg: &Message| search.map(|documents| Box::new(search_doc(0, msg, documents)));
    let draft = |msg: &Message| Box::new(Draft::of(msg));
    // The keyword names of each Maildir met, read once per worker.
    let keyword_names = std::cell::RefCell::new(std::collections::HashMap::<PathBuf, Vec<String>>::new());
    let names = |maildir: &Path| {
        keyword_names
            .borrow_mut()
            .entry(maildir.to_path_buf())
            .or_insert_with(|| crate::parse::labels::read_keyword_names(maildir))
            .clone()
    };
    // A message read already (of an mbox, a dbox file), parsed at `source`, with the labels its
    // file gives it.
    let read_at =
        |src, source: Source, rel, given, flags, labels: Vec<String>, held| match read(parse_given(given, None)) {
            Ok(mut msg) => {
                crate::parse::labels::add_labels(&mut msg.summary.labels, labels);
                Outcome::Parsed {
                    src,
                    doc: doc(&msg),
                    draft: draft(&msg),
                    location: Location::Top { source, rel, flags, uploaded: false },
                    held: Some(held),
                }
            }
            Err(e) => {
                tracing::warn!(path = %source.path().display(), error = %e, "skipped");
                Outcome::Failed { src, held: Some(held) }
            }
        };
    let one = |job: Job| match job {
        Job::File { src, root, path, size, held, checked, mh_flags } => {
            let held = Some(held);
            let rel = relative_start(&root, &path);
            let flags = ingest::maildir_flags(&path).or(mh_flags);
            let found = ingest::Found { root, path };
            let given = match read_message_file(&found, size, checked, limit, &mut opener.borrow_mut()) {
                Ok(Some(given)) => given,
                Ok(None) => return Outcome::NotMail { src, held },
                Err(e) => {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        // Moved since the scan (`new/` to `cur/`, a flag changed): the next run finds it.
                        tracing::debug!(path = %found.path.display(), "gone before it was read");
                    } else {
                        tracing::warn!(path = %found.path.display(), error = %e, "not read");
                    }
                    return Outcome::Unread { src, held };
                }
            };
            let source = Source::File { path: found.path };
            let parsed = read(parse_given(given, source.own_file()));
            match parsed {
                Ok(mut msg) => {
                    if let Some(f) = &flags {
                        let keywords = crate::parse::labels::maildir_keywords(source.path(), f, &names);
                        crate::parse::labels::add_labels(&mut msg.summary.labels, keywords);
                    }
                    Outcome::Parsed {
                        src,
                        doc: doc(&msg),
                        draft: draft(&msg),
                        // A file may keep its own flags (Apple Mail's `.emlx`) where a Maildir name has none.
                        location: Location::Top {
                            source,
                            rel,
                            flags: flags.map(ingest::standard_flags).or_else(|| msg.origin.flags.clone()),
                            uploaded: false,
                        },
                        held,
                    }
                }
                Err(e) => {
                    tracing::warn!(path = %source.path().display(), error = %e, "skipped");
                    Outcome::Failed { src, held }
                }
            }
        }
        Job::Pst { src, source, rel } => {
            match read(
                source.read(limit, &reading.within).map_err(Error::from).and_then(|given| parse_given(given, None)),
            ) {
                Ok(msg) => Outcome::Parsed {
                    src,
                    doc: doc(&msg),
                    draft: draft(&msg),
                    location: Location::Top { source, rel, flags: None, uploaded: false },
                    held: None,
                },
                Err(e) => {
                    tracing::warn!(path = %source.path().display(), error = %e, "skipped an item");
                    Outcome::Failed { src, held: None }
                }
            }
        }
        Job::Mbox { src, source, rel, given, flags, labels, held } => {
            read_at(src, source, rel, given, flags, labels, held)
        }
        Job::Sdbox { src, root, path, held, mailbox, flags, keywords } => {
            let rel = relative_start(&root, &path);
            let first = opener
                .borrow_mut()
                .open(&path)
                .and_then(|f| ingest::DboxReader::new(std::io::BufReader::new(f), limit).next().transpose());
            match first {
                Ok(Some(m)) => {
                    let mailbox = m.mailbox.unwrap_or(mailbox);
                    let given = ingest::put_back_dbox_attachments(
                        &path,
                        m.offset,
                        m.given,
                        &m.external_refs,
                        &reading.within,
                        limit,
                    );
                    let source = Source::Dbox { path, offset: m.offset, len: m.len, mailbox };
                    read_at(src, source, rel, given, flags, keywords, held)
                }
                // Named as sdbox names its files, but not one (or empty): as a Maildir's stray file.
                Ok(None) => Outcome::NotMail { src, held: Some(held) },
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    tracing::warn!(path = %path.display(), error = %e, "not read");
                    Outcome::NotMail { src, held: Some(held) }
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "not read");
                    Outcome::Unread { src, held: Some(held) }
                }
            }
        }
    };
    loop {
        let handed = {
            let rx = jobs.lock().unwrap_or_else(|e| e.into_inner());
            rx.recv()
        };
        let Ok(handed) = handed else { return };
        let done =
            Numbered { place: handed.place, items: handed.items.into_iter().map(one).collect(), turn: handed.turn };
        if out.send(done).is_err() {
            return;
        }
    }
}

/// A file that is one message, read whole (up to `limit` bytes); `None` when it was not `checked`
/// by the walker and its first bytes say it is not mail (the rest is then never read: a large
/// file that is not mail costs no more than its first bytes).
fn read_message_file(
    found: &ingest::Found,
    size: u64,
    checked: bool,
    limit: usize,
    opener: &mut ingest::Opener,
) -> std::io::Result<Option<ingest::Given>> {
    let mut file = opener.open(&found.path)?;
    if checked {
        // The scan has looked at its first bytes already (and through a compression).
        return ingest::read_message(file, size, limit).map(Some);
    }
    let mut bytes = Vec::new();
    let head = ingest::HEAD.min(limit);
    ingest::reserve(&mut bytes, head)?;
    (&mut file).take(head as u64).read_to_end(&mut bytes)?;
    // A Maildir file kept compressed (Dovecot's `zlib` plugin) is told by what it holds.
    let inflated = match ingest::packing(&bytes) {
        Some(p) => {
            Some(ingest::read_unpacked(std::io::Cursor::new(std::mem::take(&mut bytes)).chain(&mut file), p, limit)?)
        }
        None => None,
    };
    let first = inflated.as_ref().map_or(&bytes[..], |g| &g.bytes[..g.bytes.len().min(ingest::HEAD)]);
    match ingest::kind_of(found, first) {
        Kind::Message => {}
        Kind::Pst => {
            tracing::warn!(path = %found.path.display(), "an Outlook data file in a Maildir folder is not read: name it .pst");
            return Ok(None);
        }
        Kind::Mbox | Kind::Dbox | Kind::Framed(_) | Kind::Other => {
            tracing::debug!(path = %found.path.display(), "not a message: left out");
            return Ok(None);
        }
    }
    match inflated {
        Some(given) => Ok(Some(given)),
        None => ingest::read_message_on(bytes, file, size, limit).map(Some),
    }
}

pub(super) fn stat(path: &Path) -> std::io::Result<(u64, i64)> {
    let meta = std::fs::metadata(path)?;
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64);
    Ok((meta.len(), mtime_ns))
}

/// Where the part of `path` relative to `root` begins (the file name, when `root` is the file).
pub(super) fn relative_start(root: &Path, path: &Path) -> u16 {
    let full = path.to_string_lossy();
    let start = match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => full.len() - rel.to_string_lossy().len(),
        _ => full.len() - path.file_name().map_or(0, |n| n.to_string_lossy().len()),
    };
    u16::try_from(start).unwrap_or(0)
}

/// A hash of the (up to) 4 KiB before `end`: if they are unchanged, so (in practice) is everything
/// before them, and an mbox that grew was only appended to.
pub(super) fn tail_hash(path: &Path, end: u64) -> std::io::Result<[u8; 16]> {
    let from = end.saturating_sub(4096);
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::with_capacity((end - from) as usize);
    f.take(end - from).read_to_end(&mut buf)?;
    let mut out = [0u8; 16];
    out.copy_from_slice(&blake3::hash(&buf).as_bytes()[..16]);
    Ok(out)
}
