//! Keeps the index live: a file-system event anywhere under the given paths (new mail delivered to
//! a Maildir, a file dropped into a folder, an mbox appended to) triggers a re-scan, which reads
//! only what changed.

use std::path::PathBuf;
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};

use crate::archive::Archive;
use crate::error::Error;

/// Events closer together than this are one change (a delivery writes, renames, then syncs).
const QUIET: Duration = Duration::from_millis(250);

/// Watches `roots` until the returned watcher is dropped.
pub fn watch(archive: Arc<Archive>, roots: Vec<PathBuf>) -> Result<notify::RecommendedWatcher, Error> {
    let (tx, rx) = channel::<()>();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(ev) = res {
            if matches!(ev.kind, EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)) {
                let _ = tx.send(());
            }
        }
    })
    .map_err(|e| Error::internal("cannot watch for new mail", e))?;
    for r in &roots {
        if let Err(e) = watcher.watch(r, RecursiveMode::Recursive) {
            tracing::warn!(path = %r.display(), error = %e, "not watched for changes");
        }
    }
    std::thread::Builder::new()
        .name("watch".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                // Wait until events stop for a moment, then re-scan once.
                loop {
                    match rx.recv_timeout(QUIET) {
                        Ok(()) => continue,
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                let before = archive.index().listed_count();
                archive.ingest_paths(&roots);
                let after = archive.index().listed_count();
                if before != after {
                    tracing::info!(messages = after, change = after as i64 - before as i64, "archive changed");
                }
            }
        })
        .map_err(Error::Io)?;
    Ok(watcher)
}
