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

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use tokio::sync::Semaphore;

pub(crate) use attach::{attach, PdfMeta};
pub(crate) use cdp::{Fetched, Fetcher};

use crate::error::Error;

/// Longest a render may take, browser start-up included.
pub(crate) const RENDER_TIMEOUT: Duration = Duration::from_secs(60);

/// One browser at a time: a second request waits for the first to finish.
static RENDERS: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(1));

/// Prints `path` (a URL path under [`ORIGIN`](cdp::ORIGIN), answered by `fetch`) with Chromium at `chromium`.
/// Returns the PDF and the URLs that were refused.
pub(crate) async fn render(
    chromium: &Path,
    path: &str,
    fetch: Fetcher,
    allow_remote: bool,
) -> Result<(Vec<u8>, Vec<String>), Error> {
    let _one_at_a_time = RENDERS.acquire().await.map_err(|e| Error::internal("pdf renderer", e))?;
    cdp::print(chromium, path, fetch, allow_remote, RENDER_TIMEOUT).await
}
