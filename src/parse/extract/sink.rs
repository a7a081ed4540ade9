//! Where a reader puts a document's text, and the bounds it checks as it goes: the text it may
//! add, its deadline, what it may decompress ([`Meter`], charged by every [`Metered`] reader) and
//! how deep documents inside documents are followed.

use std::cell::Cell;
use std::io::Read;
use std::rc::Rc;
use std::time::Instant;

use super::recognise::recognise_bytes;
use super::{read_format, Extracted, Format, HtmlText, Input, Outcome, Recognised};
use crate::limits::MAX_DOCUMENT_NESTING;

/// Why a reader stopped before the end of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// Its time ran out.
    Time,
    /// The text the index keeps is full.
    Text,
    /// It decompressed all it may.
    Inflated,
}

impl Stop {
    fn notice(self) -> &'static str {
        match self {
            Stop::Time => "cut: reading it took all the time allowed for one document",
            Stop::Text => "cut: its text fills what the index keeps",
            Stop::Inflated => "cut: it decompresses to more than is read of one document",
        }
    }
}

/// Why a reader gave up.
#[derive(Debug)]
pub(super) enum Halt {
    /// A bound ran out.
    Stop(Stop),
    /// The document cannot be read (further), and why.
    Unreadable(String),
}

impl From<Stop> for Halt {
    fn from(s: Stop) -> Halt {
        Halt::Stop(s)
    }
}

pub(super) fn unreadable(why: impl Into<String>) -> Halt {
    Halt::Unreadable(why.into())
}

/// Bytes decompressed for one document, against what it may decompress. Shared (by reference
/// count) between the readers of its members.
pub(super) struct Meter {
    used: Cell<u64>,
    cap: u64,
    over: Cell<bool>,
}

impl Meter {
    pub(super) fn new(cap: u64) -> Meter {
        Meter { used: Cell::new(0), cap, over: Cell::new(false) }
    }

    /// Counts `n` more bytes; false (and from then on [`Meter::is_over`]) when that is too many.
    pub(super) fn charge(&self, n: u64) -> bool {
        let used = self.used.get().saturating_add(n);
        self.used.set(used);
        if used > self.cap {
            self.over.set(true);
        }
        !self.over.get()
    }

    pub(super) fn left(&self) -> u64 {
        self.cap.saturating_sub(self.used.get())
    }

    pub(super) fn used(&self) -> u64 {
        self.used.get()
    }

    pub(super) fn is_over(&self) -> bool {
        self.over.get()
    }
}

/// A reader whose every byte is charged to a [`Meter`]: past its budget, reads fail.
pub(super) struct Metered<R> {
    inner: R,
    meter: Rc<Meter>,
}

impl<R> Metered<R> {
    pub(super) fn new(inner: R, meter: Rc<Meter>) -> Metered<R> {
        Metered { inner, meter }
    }
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.meter.is_over() {
            return Err(std::io::Error::other("decompression budget spent"));
        }
        let n = self.inner.read(buf)?;
        if !self.meter.charge(n as u64) {
            return Err(std::io::Error::other("decompression budget spent"));
        }
        Ok(n)
    }
}

/// Where a document's text goes, with the bounds it must keep: the text it may still add, its
/// deadline, what it may decompress, how deep documents inside it are followed.
pub(super) struct Sink {
    pub(super) text: String,
    cap: usize,
    deadline: Instant,
    /// The message's deadline, which no document of it passes, however long it waited.
    latest: Instant,
    ticks: u32,
    pub(super) meter: Rc<Meter>,
    pub(super) html: HtmlText,
    depth: usize,
    /// Inside a zip archive: a zip found there is named, never opened.
    in_zip: bool,
    pub(super) notices: Vec<String>,
}

impl Sink {
    /// A sink for a document due by `deadline`, of a message due by `latest`.
    pub(super) fn new(html: HtmlText, cap: usize, deadline: Instant, latest: Instant, meter: Rc<Meter>) -> Sink {
        Sink {
            text: String::new(),
            cap,
            deadline,
            latest,
            ticks: 0,
            meter,
            html,
            depth: 0,
            in_zip: false,
            notices: Vec::new(),
        }
    }

    /// Appends text, as much as fits; `Stop::Text` once it is full.
    pub(super) fn push(&mut self, s: &str) -> Result<(), Stop> {
        let room = self.cap.saturating_sub(self.text.len());
        if s.len() <= room {
            self.text.push_str(s);
            return if self.text.len() >= self.cap { Err(Stop::Text) } else { Ok(()) };
        }
        let mut cut = room;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        self.text.push_str(&s[..cut]);
        Err(Stop::Text)
    }

    /// Ends the line, unless the text already ends one (or is empty).
    pub(super) fn newline(&mut self) -> Result<(), Stop> {
        if self.text.is_empty() || self.text.ends_with('\n') {
            return Ok(());
        }
        self.push("\n")
    }

    /// Separates what comes next from what came before by at least a space.
    pub(super) fn space(&mut self) -> Result<(), Stop> {
        if self.text.is_empty() || self.text.ends_with(char::is_whitespace) {
            return Ok(());
        }
        self.push(" ")
    }

    /// `Stop::Time` once the deadline has passed (looked at every few calls: the clock costs).
    pub(super) fn tick(&mut self) -> Result<(), Stop> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(64) && Instant::now() >= self.deadline {
            return Err(Stop::Time);
        }
        Ok(())
    }

    pub(super) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The message's deadline: how long a document may wait for a reader shared by the process.
    pub(super) fn latest(&self) -> Instant {
        self.latest
    }

    /// Moves the deadline on by `waited` (time spent waiting, not reading), never past the
    /// message's.
    pub(super) fn postpone(&mut self, waited: std::time::Duration) {
        self.deadline = (self.deadline + waited).min(self.latest);
    }

    /// The text this document may still add.
    pub(super) fn room(&self) -> usize {
        self.cap.saturating_sub(self.text.len())
    }

    /// What a failed read of decompressed data means: the budget, or damage.
    pub(super) fn read_error(&self, what: &str) -> Halt {
        if self.meter.is_over() {
            Halt::Stop(Stop::Inflated)
        } else {
            unreadable(format!("damaged: {what} could not be read"))
        }
    }

    /// Reads a document found inside this one (a zip's member, an embedded file, an attached
    /// message's attachment) into the same text, under `name`: true when it was one. A member
    /// that cannot be read is noted and skipped; a bound that runs out stops the whole document.
    pub(super) fn nested(&mut self, bytes: &[u8], name: &str, declared: &str) -> Result<bool, Stop> {
        self.tick()?;
        if self.depth >= MAX_DOCUMENT_NESTING {
            self.notices.push(format!("{name}: not read, nested too deep"));
            return Ok(false);
        }
        let recognised = recognise_bytes(bytes, declared, Some(name), false);
        let format = match recognised {
            None => return Ok(false),
            Some(Recognised::NotRead(why)) => {
                self.notices.push(format!("{name}: {why}"));
                return Ok(false);
            }
            Some(Recognised::Readable(Format::Zip)) if self.in_zip => {
                self.notices.push(format!("{name}: a zip archive inside a zip archive is not opened"));
                return Ok(false);
            }
            Some(Recognised::Readable(f)) => f,
        };
        self.newline()?;
        self.push(name)?;
        self.push("\n")?;
        self.depth += 1;
        let result = read_format(format, &Input::Bytes(bytes), Some(name), self);
        self.depth -= 1;
        match result {
            Ok(()) => Ok(true),
            Err(Halt::Stop(stop)) => Err(stop),
            Err(Halt::Unreadable(why)) => {
                self.notices.push(format!("{name}: {why}"));
                Ok(true)
            }
        }
    }

    /// Marks what is read from now on as inside a zip archive (or not); what it was before.
    pub(super) fn inside_zip(&mut self, inside: bool) -> bool {
        std::mem::replace(&mut self.in_zip, inside)
    }

    /// The outcome of reading a document of `format` into this sink.
    pub(super) fn finish(self, format: Format, result: Result<(), Halt>) -> Extracted {
        let mut notices = Vec::new();
        let outcome = match result {
            Ok(()) => Outcome::Whole,
            Err(Halt::Stop(stop)) => {
                notices.push(stop.notice().to_string());
                Outcome::Cut
            }
            Err(Halt::Unreadable(why)) => {
                let outcome = if self.text.trim().is_empty() { Outcome::Unreadable } else { Outcome::Cut };
                notices.push(why);
                outcome
            }
        };
        notices.extend(self.notices);
        Extracted { format: Some(format), text: self.text, outcome, notices }
    }
}
