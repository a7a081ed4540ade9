//! Keeps the index live: a file-system event anywhere under the given paths (new mail delivered to
//! a Maildir, a file dropped into a folder, an mbox appended to) triggers a re-scan, which reads
//! only what changed. When events cannot be had — the inotify watch limit is lower than the number
//! of folders, a path is not there yet, the file system sends none — watching falls back to a
//! periodic re-scan and says so in the log: mail arrives later, never not at all.

use std::path::PathBuf;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};

use crate::archive::Archive;
use crate::error::Error;

/// Events closer together than this are one change (a delivery writes, renames, then syncs).
const QUIET: Duration = Duration::from_millis(250);

/// How often to re-scan when events cannot be watched.
pub const DEFAULT_RESCAN: Duration = Duration::from_secs(60);

/// How the paths are watched.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Watch file-system events (else only re-scan every `rescan`).
    pub events: bool,
    /// The re-scan period once events fail (or always, without events).
    pub rescan: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { events: true, rescan: DEFAULT_RESCAN }
    }
}

enum Signal {
    Changed,
    /// Events are lost from now on (or were never had): re-scan on a timer.
    Failed(String),
    Stop,
}

/// Watching in progress; dropping it stops the watching.
pub struct Watch {
    _watcher: Option<notify::RecommendedWatcher>,
    signals: Sender<Signal>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.signals.send(Signal::Stop);
    }
}

/// Watches `roots` for changes until the returned [`Watch`] is dropped.
pub fn watch(archive: Arc<Archive>, roots: Vec<PathBuf>) -> Result<Watch, Error> {
    watch_with(archive, roots, Settings::default())
}

/// As [`watch`], with the given settings.
pub fn watch_with(archive: Arc<Archive>, roots: Vec<PathBuf>, settings: Settings) -> Result<Watch, Error> {
    let (tx, rx) = channel::<Signal>();
    let mut watcher = None;
    let mut failed = (!settings.events).then(|| "file-system events are off".to_string());
    if settings.events {
        let events = tx.clone();
        let made = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
            Ok(ev) if matches!(ev.kind, EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)) => {
                let _ = events.send(Signal::Changed);
            }
            Ok(_) => {}
            // A queue overflow or a folder that could not be added: events may be missing.
            Err(e) => {
                let _ = events.send(Signal::Failed(e.to_string()));
            }
        });
        match made {
            Ok(mut w) => {
                for r in &roots {
                    if let Err(e) = w.watch(r, RecursiveMode::Recursive) {
                        failed.get_or_insert_with(|| format!("{}: {e}", r.display()));
                    }
                }
                watcher = Some(w);
            }
            Err(e) => failed = Some(e.to_string()),
        }
    }
    if let Some(why) = failed {
        let _ = tx.send(Signal::Failed(why));
    }
    std::thread::Builder::new()
        .name("watch".into())
        .spawn(move || run(&archive, &roots, &rx, settings.rescan))
        .map_err(Error::Io)?;
    Ok(Watch { _watcher: watcher, signals: tx })
}

fn run(archive: &Archive, roots: &[PathBuf], rx: &std::sync::mpsc::Receiver<Signal>, rescan: Duration) {
    // `None` while events arrive; the re-scan period once they do not.
    let mut period: Option<Duration> = None;
    loop {
        let signal = match period {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(p) => rx.recv_timeout(p),
        };
        match signal {
            Ok(Signal::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            Ok(Signal::Failed(why)) => {
                degrade(&mut period, &why, rescan);
                // Whatever happened while events were lost is found now.
                rescan_now(archive, roots);
            }
            Ok(Signal::Changed) => {
                // Wait until events stop for a moment, then re-scan once.
                loop {
                    match rx.recv_timeout(QUIET) {
                        Ok(Signal::Changed) => continue,
                        Ok(Signal::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                        Ok(Signal::Failed(why)) => {
                            degrade(&mut period, &why, rescan);
                            break;
                        }
                        Err(RecvTimeoutError::Timeout) => break,
                    }
                }
                rescan_now(archive, roots);
            }
            Err(RecvTimeoutError::Timeout) => rescan_now(archive, roots),
        }
    }
}

/// From events to a periodic re-scan, said once in the log.
fn degrade(period: &mut Option<Duration>, why: &str, rescan: Duration) {
    if period.is_none() {
        tracing::warn!(
            reason = %why,
            seconds = rescan.as_secs_f64(),
            "changes cannot all be watched; re-scanning periodically instead"
        );
        *period = Some(rescan);
    }
}

fn rescan_now(archive: &Archive, roots: &[PathBuf]) {
    let before = archive.index().listed_count();
    archive.ingest_paths(roots);
    let after = archive.index().listed_count();
    if before != after {
        tracing::info!(messages = after, change = after as i64 - before as i64, "archive changed");
    }
}
