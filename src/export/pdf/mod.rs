//! A message as a PDF: its print view rendered by headless Chromium over the DevTools protocol,
//! then the original message embedded in the file and the metadata set ([`attach`](mod@attach)).
//!
//! Chromium, not a Rust HTML engine, because what people archive must look like what they read:
//! mail HTML leans on tables, legacy attributes and CSS that only a browser lays out faithfully.
//! It is driven by [`cdp`], a small client of our own over one WebSocket rather than a crate such
//! as `chromiumoxide` or `headless_chrome`: those bring the whole generated protocol (thousands of
//! types, minutes of compiling) to send a dozen commands, and what matters here — answering every
//! request from inside the process and refusing the rest — is a few lines either way.
//!
//! Rendering is bounded: one at a time (a browser takes a few hundred megabytes), a deadline after
//! which the browser is killed, and a cap on the PDF's size.

pub(crate) mod attach;
pub(crate) mod cdp;
mod remote;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use tokio::sync::Semaphore;

pub(crate) use attach::{attach, PdfMeta};
pub(crate) use cdp::{Fetched, Fetcher};

use crate::error::Error;
use crate::limits::MAX_PDF_QUEUE;

/// Longest a render may take, browser start-up included.
pub(crate) const RENDER_TIMEOUT: Duration = Duration::from_secs(60);

/// One browser at a time: a second request waits for the first to finish.
static RENDERS: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(1));

/// Requests for a PDF waiting for the browser, and the one it is rendering.
static WAITING: AtomicUsize = AtomicUsize::new(0);

/// Holds a request's place among [`WAITING`] until it is answered.
struct Place;

impl Drop for Place {
    fn drop(&mut self) {
        WAITING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Prints `path` (a URL path under [`ORIGIN`](cdp::ORIGIN), answered by `fetch`) with Chromium at `chromium`.
/// Returns the PDF and the URLs that were refused.
pub(crate) async fn render(
    chromium: &Path,
    path: &str,
    fetch: Fetcher,
    allow_remote: bool,
) -> Result<(Vec<u8>, Vec<String>), Error> {
    // Each render may take a minute: past a few waiting, another is told to come back rather
    // than kept waiting for minutes (and the browser kept busy for whoever asked most).
    if WAITING.fetch_add(1, Ordering::SeqCst) >= MAX_PDF_QUEUE {
        WAITING.fetch_sub(1, Ordering::SeqCst);
        return Err(Error::RendererBusy);
    }
    let _place = Place;
    let _one_at_a_time = RENDERS.acquire().await.map_err(|e| Error::internal("pdf renderer", e))?;
    cdp::print(chromium, path, fetch, allow_remote, RENDER_TIMEOUT).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past [`MAX_PDF_QUEUE`] requests at once, another is told the renderer is busy at once,
    /// rather than kept waiting for every render before it.
    #[tokio::test]
    async fn requests_past_the_queue_are_told_to_come_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        // A browser that starts slowly and never listens: each render holds the renderer a moment.
        let slow = dir.path().join("slow-chromium");
        std::fs::write(&slow, "#!/bin/sh\nsleep 2\n").expect("write");
        std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let fetch: Fetcher =
            std::sync::Arc::new(|_| Box::pin(async { Fetched { status: 404, headers: Vec::new(), body: Vec::new() } }));
        let renders: Vec<_> = (0..MAX_PDF_QUEUE + 2)
            .map(|_| {
                let (slow, fetch) = (slow.clone(), fetch.clone());
                tokio::spawn(async move { render(&slow, "/x", fetch, false).await })
            })
            .collect();
        let mut busy = 0;
        for r in renders {
            if matches!(r.await.expect("join"), Err(Error::RendererBusy)) {
                busy += 1;
            }
        }
        assert_eq!(busy, 2);
        assert_eq!(WAITING.load(Ordering::SeqCst), 0, "every place given back");
    }
}
