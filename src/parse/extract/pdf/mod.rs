//! PDF: the text of every page in reading order, from its content streams, by pdf-extract (which
//! knows the standard fonts' encodings and metrics, Type 1 and CFF built-in encodings, ToUnicode
//! maps and CID fonts) on a document loaded by lopdf (which decrypts files whose user password is
//! empty, with RC4 or AES). No OCR: a page that is a picture has no text.
//!
//! pdf-extract reads without bounds, may panic on what it does not expect, and recurses into
//! forms, so a document is read like this:
//!
//! 1. [`raw::guard`] defuses the streams lopdf would inflate while loading past the budget;
//! 2. lopdf loads it (a file whose cross-reference table is broken gets one rebuilt by
//!    [`raw::repair`]); one needing a password is unreadable;
//! 3. [`prepare::prepare`] decompresses within the budget what pdf-extract will read, and bounds
//!    how forms draw forms;
//! 4. pdf-extract reads it page by page into [`Collect`], which checks the deadline and the text
//!    budget at every character; a page on which pdf-extract panics is skipped (quietly: see
//!    [`quiet_panics`]) and reading goes on with the next one.
//!
//! Steps 2–4 run on a reading thread with a large stack ([`threads`], kept a moment for the next
//! document). If the deadline passes and the thread has not answered (pdf-extract working through
//! something that calls back nothing), the text of the pages it finished is kept and the thread is
//! left to end the reading by itself. Each reading
//! thread holds a whole document, so their number bounds the memory PDFs take: small files are
//! read [`MAX_SMALL_PDF_READERS`] at once within [`MAX_SMALL_PDF_INFLATED`] of decompression, any
//! other (or a small one that needs more, read again) [`MAX_PDF_READERS`] at once, stragglers
//! included; a PDF finding no place waits for one (within its message's time, the wait not counted
//! in its own).

mod actual;
mod prepare;
mod raw;
mod threads;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, LazyLock, Mutex, Once};
use std::time::{Duration, Instant};

use lopdf::Document;
use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

use super::{unreadable, Halt, Sink, Stop};
use crate::limits::{MAX_PDF_READERS, MAX_SMALL_PDF_BYTES, MAX_SMALL_PDF_INFLATED, MAX_SMALL_PDF_READERS};
use crate::par::{Quota, Share};

/// Larger PDFs are not read: lopdf holds the whole file and its objects in memory.
const MAX_PDF_BYTES: usize = 32 << 20;

/// The reading thread's stack: pdf-extract recurses into forms.
const STACK: usize = 64 << 20;

/// Reading threads alive, those whose caller stopped waiting included, in one of two kinds: a
/// small file read within a small decompression budget (many such documents fit in memory at
/// once), and any other, or a small one that needed more, read alone. A reading thread holds its
/// place ([`Share`]) until it ends.
static SMALL: LazyLock<Arc<Quota>> = LazyLock::new(|| Arc::new(Quota::new(MAX_SMALL_PDF_READERS as u64)));
static LARGE: LazyLock<Arc<Quota>> = LazyLock::new(|| Arc::new(Quota::new(MAX_PDF_READERS as u64)));

thread_local! {
    /// Set on a thread reading a PDF: a panic there is expected and not printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Makes panics on threads that read PDFs quiet (logged at debug level), leaving every other
/// thread's panics as they were.
fn quiet_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                tracing::debug!(panic = %info, "the PDF reader gave up on a page");
            } else {
                previous(info);
            }
        }));
    });
}

/// What the reading thread and its caller share.
struct Shared {
    /// Text of the pages read so far.
    text: Mutex<String>,
    /// Set by the caller when it stops waiting: the reader stops at its next character.
    stop: AtomicBool,
    /// Whether the reader has ended, and if not whether its caller still waits for it (a
    /// reader that ends just as its caller gives up still has its report read).
    state: Mutex<State>,
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Running,
    Abandoned,
    Done,
}

/// What the reading thread reports.
struct Report {
    inflated: u64,
    /// Why it stopped early, if it did.
    stop: Option<Stop>,
    notices: Vec<String>,
    /// The document could not be read at all, and why.
    unreadable: Option<String>,
}

/// Reads a PDF's text into `sink` (see the module's notes).
pub(super) fn read(bytes: &[u8], sink: &mut Sink) -> Result<(), Halt> {
    if bytes.len() > MAX_PDF_BYTES {
        return Err(unreadable("not read: PDF files over 32 MiB are not read"));
    }
    quiet_panics();
    // A small file is read beside others, within a small budget; if that is not enough, alone
    // with the whole budget, from the start.
    let budget = sink.meter.left();
    if bytes.len() <= MAX_SMALL_PDF_BYTES && budget > MAX_SMALL_PDF_INFLATED {
        let place = wait_for(&SMALL, sink)?;
        match attempt(bytes, sink, place, MAX_SMALL_PDF_INFLATED) {
            Some(result) => return result,
            None => tracing::debug!("a small PDF needs more than a small one's decompression; read alone"),
        }
    }
    let place = wait_for(&LARGE, sink)?;
    attempt(bytes, sink, place, budget).unwrap_or(Err(Halt::Stop(Stop::Inflated)))
}

/// A place among `readers`, waited for within the message's time (the wait is not counted in the
/// document's own).
fn wait_for(readers: &Arc<Quota>, sink: &mut Sink) -> Result<Share, Halt> {
    let asked = Instant::now();
    let place = readers
        .take_by(1, sink.latest())
        .ok_or_else(|| unreadable("not read: other PDF files were being read for all of its time"))?;
    sink.postpone(asked.elapsed());
    Ok(place)
}

/// Reads the document on a thread holding `place`, decompressing at most `budget` bytes; `None`
/// when that was too little and the budget was smaller than the document's own (nothing is kept
/// of such a reading: the document is read again).
fn attempt(bytes: &[u8], sink: &mut Sink, place: Share, budget: u64) -> Option<Result<(), Halt>> {
    let retry = budget < sink.meter.left();
    let shared = Arc::new(Shared {
        text: Mutex::new(String::new()),
        stop: AtomicBool::new(false),
        state: Mutex::new(State::Running),
    });
    let job = Job { bytes: bytes.to_vec(), budget, room: sink.room(), deadline: sink.deadline() };
    let (tx, rx) = mpsc::channel();
    let worker = Arc::clone(&shared);
    let spawned = threads::run(Box::new(move || {
        let _place = place;
        QUIET.with(|q| q.set(true));
        let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(job, &worker)));
        let report = report.unwrap_or_else(|_| Report {
            inflated: 0,
            stop: None,
            notices: Vec::new(),
            unreadable: Some("damaged: the PDF reader gave up on it".into()),
        });
        *worker.state.lock().unwrap_or_else(|e| e.into_inner()) = State::Done;
        let _ = tx.send(report);
    }));
    if spawned.is_err() {
        return Some(Err(unreadable("not read: no thread to read it on")));
    }
    // A little past the deadline: the reader stops itself at it whenever it can.
    let wait = sink.deadline().saturating_duration_since(Instant::now()) + Duration::from_millis(250);
    let report = match rx.recv_timeout(wait) {
        Ok(report) => Some(report),
        Err(_) => {
            shared.stop.store(true, Ordering::Release);
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            if *state == State::Running {
                *state = State::Abandoned;
                tracing::warn!("a PDF took longer than its time to read; its thread is left to finish");
                None
            } else {
                drop(state);
                rx.recv().ok()
            }
        }
    };
    if retry && report.as_ref().is_some_and(|r| r.stop == Some(Stop::Inflated) && r.unreadable.is_none()) {
        return None;
    }
    let text = std::mem::take(&mut *shared.text.lock().unwrap_or_else(|e| e.into_inner()));
    let pushed = sink.push(text.trim_start());
    let Some(mut report) = report else {
        return Some(pushed.map_err(Halt::Stop).and(Err(Halt::Stop(Stop::Time))));
    };
    sink.meter.charge(report.inflated);
    sink.notices.extend(std::mem::take(&mut report.notices));
    Some(finish(pushed, report))
}

/// The outcome of a reading that answered: what the sink said, then what the reader said.
fn finish(pushed: Result<(), Stop>, report: Report) -> Result<(), Halt> {
    pushed?;
    if let Some(why) = report.unreadable {
        return Err(Halt::Unreadable(why));
    }
    match report.stop {
        Some(stop) => Err(Halt::Stop(stop)),
        None => Ok(()),
    }
}

/// What the reading thread is given.
struct Job {
    bytes: Vec<u8>,
    /// Bytes it may decompress.
    budget: u64,
    /// Bytes of text it may give.
    room: usize,
    deadline: Instant,
}

/// Loads, prepares and reads a document on the reading thread.
fn work(job: Job, shared: &Shared) -> Report {
    let Job { mut bytes, budget, room, deadline } = job;
    let mut report = Report { inflated: 0, stop: None, notices: Vec::new(), unreadable: None };
    let guarded = raw::guard(&mut bytes, budget);
    report.inflated += guarded.inflated;
    let mut doc = match load(&bytes) {
        Ok(doc) => doc,
        Err(why) => {
            report.unreadable = Some(why);
            return report;
        }
    };
    drop(bytes);
    let prepared = prepare::prepare(&mut doc, budget.saturating_sub(guarded.inflated), deadline);
    report.inflated += prepared.inflated;
    if guarded.cut || prepared.cut {
        report.stop = Some(Stop::Inflated);
    }
    if prepared.late {
        report.stop = Some(Stop::Time);
        return report;
    }
    let mut out = Collect::new(shared, room, deadline);
    let pages: Vec<u32> = doc.get_pages().into_keys().collect();
    let mut failed = 0usize;
    // The whole document in one pass; after a page that pdf-extract cannot read, page by page
    // from the next one.
    let mut from = 0usize;
    loop {
        let rest = &pages[from..];
        let Some(&first) = rest.first() else { break };
        let whole = first == pages[0];
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if whole {
                pdf_extract::output_doc(&doc, &mut out)
            } else {
                rest.iter().try_for_each(|&page| pdf_extract::output_doc_page(&doc, &mut out, page))
            }
        }));
        match result {
            Ok(Ok(())) => break,
            Ok(Err(_)) if out.stopped.is_some() => break,
            // An error or a panic on one page: that page again without the operations
            // pdf-extract cannot take, then the rest.
            Ok(Err(_)) | Err(_) => {
                let at = out.page.and_then(|p| pages.iter().position(|&x| x == p)).unwrap_or(from).max(from);
                let partial = std::mem::take(&mut out.buf);
                if let Some(&number) = pages.get(at) {
                    if let Some(&id) = doc.get_pages().get(&number) {
                        prepare::sanitize(&mut doc, id);
                    }
                    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        pdf_extract::output_doc_page(&doc, &mut out, number)
                    }));
                    if out.stopped.is_some() {
                        break;
                    }
                    if !matches!(again, Ok(Ok(()))) {
                        failed += 1;
                        if out.buf.len() < partial.len() {
                            out.buf = partial;
                        }
                    }
                }
                out.end_page_text();
                from = at + 1;
            }
        }
    }
    out.end_page_text();
    if failed > 0 {
        report.notices.push(format!("{failed} page{} could not be read", if failed == 1 { "" } else { "s" }));
    }
    if let Some(stop) = out.stopped {
        report.stop = Some(stop);
    }
    report
}

/// Loads a document with lopdf, rebuilding a broken cross-reference table; an error says why it
/// cannot be read.
fn load(bytes: &[u8]) -> Result<Document, String> {
    let doc = match Document::load_mem(bytes) {
        Ok(doc) => doc,
        Err(lopdf::Error::Decryption(_)) | Err(lopdf::Error::InvalidPassword) => {
            return Err("encrypted with a password".into())
        }
        Err(_) => {
            let repaired = raw::repair(bytes).ok_or_else(|| "damaged: not a readable PDF file".to_string())?;
            Document::load_mem(&repaired).map_err(|_| "damaged: not a readable PDF file".to_string())?
        }
    };
    // lopdf keeps the encryption dictionary of a file it could not decrypt.
    if doc.trailer.get(b"Encrypt").is_ok() {
        return Err("encrypted with a password".into());
    }
    if doc.get_pages().is_empty() {
        return Err("damaged: no page of it can be read".into());
    }
    Ok(doc)
}

/// pdf-extract's output: characters placed on the page, made into lines and words the way its
/// plain-text output does (a gap wider than a tenth of the font size is a space, a move down a
/// new line; a move back along the line is a space too), flushed to the shared text at the end of each page; it stops at the deadline, at
/// its caller's word, and when the text is full.
struct Collect<'a> {
    shared: &'a Shared,
    /// Text of the page being read.
    buf: String,
    /// Bytes given so far (in `shared.text`).
    written: usize,
    room: usize,
    deadline: Instant,
    chars: u32,
    page: Option<u32>,
    height: f64,
    last_end: f64,
    last_y: f64,
    first_char: bool,
    stopped: Option<Stop>,
}

impl<'a> Collect<'a> {
    fn new(shared: &'a Shared, room: usize, deadline: Instant) -> Collect<'a> {
        Collect {
            shared,
            buf: String::new(),
            written: 0,
            room,
            deadline,
            chars: 0,
            page: None,
            height: 0.0,
            last_end: 100_000.0,
            last_y: 0.0,
            first_char: false,
            stopped: None,
        }
    }

    fn stop(&mut self, why: Stop) -> Result<(), OutputError> {
        self.stopped.get_or_insert(why);
        Err(OutputError::FormatError(std::fmt::Error))
    }

    /// Whether to go on: the deadline, the caller, the text.
    fn check(&mut self) -> Result<(), OutputError> {
        if self.stopped.is_some() {
            return Err(OutputError::FormatError(std::fmt::Error));
        }
        if self.written + self.buf.len() >= self.room {
            return self.stop(Stop::Text);
        }
        self.chars = self.chars.wrapping_add(1);
        if self.chars.is_multiple_of(256)
            && (Instant::now() >= self.deadline || self.shared.stop.load(Ordering::Acquire))
        {
            return self.stop(Stop::Time);
        }
        Ok(())
    }

    /// Moves the page's text to the shared text, within the room left.
    fn end_page_text(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let mut shared = self.shared.text.lock().unwrap_or_else(|e| e.into_inner());
        let room = self.room.saturating_sub(shared.len());
        let mut cut = self.buf.len().min(room);
        while !self.buf.is_char_boundary(cut) {
            cut -= 1;
        }
        shared.push_str(&self.buf[..cut]);
        if !shared.ends_with('\n') && shared.len() < self.room {
            shared.push('\n');
        }
        self.written = shared.len();
        self.buf.clear();
    }
}

impl OutputDev for Collect<'_> {
    fn begin_page(
        &mut self,
        page: u32,
        media_box: &MediaBox,
        _: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        self.end_page_text();
        if Instant::now() >= self.deadline || self.shared.stop.load(Ordering::Acquire) {
            return self.stop(Stop::Time);
        }
        self.page = Some(page);
        self.height = media_box.ury - media_box.lly;
        self.last_end = 100_000.0;
        self.last_y = 0.0;
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        self.end_page_text();
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _: f64,
        font_size: f64,
        c: &str,
    ) -> Result<(), OutputError> {
        self.check()?;
        let (x, y) = (trm.m31, self.height - trm.m32);
        // The font size as drawn: the glyph square scaled by the text matrix.
        let size = font_size * (trm.m11 * trm.m22 - trm.m12 * trm.m21).abs().sqrt();
        if self.first_char && !self.buf.is_empty() {
            let moved = (y - self.last_y).abs();
            if moved > size * 1.5 || (x < self.last_end && moved > size * 0.5) {
                self.buf.push('\n');
            } else if x > self.last_end + size * 0.1 || x + size < self.last_end {
                // A gap, or a move back along the line (text drawn over text): a new word.
                self.buf.push(' ');
            }
        }
        self.buf.push_str(c);
        self.first_char = false;
        self.last_y = y;
        self.last_end = x + width * size;
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.first_char = true;
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
