//! `GET /api/export`: every message a search matches, as one mbox, zip or CSV download, streamed.
//!
//! The writer runs on a blocking thread (reading and parsing messages is blocking work) and hands
//! the body over through a small bounded channel, a chunk at a time: a slow client slows the
//! writer down instead of letting the export pile up in memory, and a client that goes away ends
//! the writer at its next chunk.

use std::io::Write;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::mpsc;

use super::csp::content_csp;
use super::error::{ApiError, Problem};
use super::extract::Params;
use super::file::content_disposition;
use super::gate::Viewer;
use crate::error::Error;
use crate::export::{self, Format};
use crate::view::blocking;
use crate::view::browse::Scope;

/// Bytes gathered before a chunk is handed to the response.
const CHUNK: usize = 64 * 1024;

/// Chunks in flight between the writer and the response: with [`CHUNK`], what an export holds.
const IN_FLIGHT: usize = 8;

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ExportQuery {
    /// A search in the API's query language; empty or absent: every listed message. A query
    /// that holds no word (`---`) is refused, not taken for every message.
    #[serde(default)]
    pub q: Option<String>,
    /// `mbox` (mboxrd), `zip` (one `.eml` per message, in its folder's directories) or `csv`.
    #[serde(default)]
    pub format: Option<String>,
    /// Only the messages filed in this folder itself (as `/folder/<path>` lists them).
    #[serde(default)]
    pub folder: Option<String>,
    /// Only the messages carrying this label.
    #[serde(default)]
    pub label: Option<String>,
}

/// Every message a search matches (not a page of them), as an mboxrd file, a zip of `.eml` files
/// with their exact bytes, or a CSV of one row each (date, from, to, cc, subject, Message-ID,
/// folder, labels, attachment count and names, size). Streamed; newest first. With search turned
/// off, only an empty query (every message) can be exported.
#[utoipa::path(get, path = "/api/export", tag = "messages",
    params(ExportQuery),
    responses(
        (status = 200, description = "The export, as a download named after the query",
            content(
                (Vec<u8> = "application/mbox"),
                (Vec<u8> = "application/zip"),
                (String = "text/csv"),
            ),
            headers(
                ("content-disposition" = String, description = "`attachment; filename=\"mailshelf-<folder, label and query>.<ext>\"`"),
                ("x-mailshelf-messages" = u64, description = "How many messages the export holds"),
            )),
        (status = 400, description = "Unknown format, a query that does not parse or holds no word, or a query while search is turned off", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn export(Viewer(view, _): Viewer, Params(q, _): Params<ExportQuery>) -> Result<Response, ApiError> {
    let format_name = q.format.as_deref().unwrap_or("mbox");
    let format = Format::parse(format_name)
        .ok_or_else(|| Error::BadRequest(format!("unknown export format {format_name:?}; use mbox, zip or csv")))?;
    let query = q.q.unwrap_or_default();
    // Named for what it holds: `folder:Work label:todo report`.
    let scoped = [q.folder.as_ref().map(|f| format!("folder:{f}")), q.label.as_ref().map(|l| format!("label:{l}"))];
    let described = scoped.into_iter().flatten().chain([query.clone()]).collect::<Vec<_>>().join(" ");
    let archive = view.archive().clone();
    let qs = query.clone();
    // Run the search before answering, so a bad query is a 400 and not a broken download.
    let scope = Scope::named(q.folder, q.label);
    let access = view.access().clone();
    let ids = blocking(move || export::matching_ids(&archive, &access, &scope, &qs)).await?;
    let count = ids.len();
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(IN_FLIGHT);
    let archive = view.archive().clone();
    tokio::task::spawn_blocking(move || {
        let out = ChannelWriter { tx: tx.clone(), buf: Vec::with_capacity(CHUNK) };
        let written =
            export::write_all(format, &ids, |id| export::read(&archive, id, format), out).and_then(|mut w| {
                w.flush()?;
                Ok(())
            });
        if let Err(e) = written {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                tracing::error!(error = %e, "export failed");
                // The status is long sent; failing the body makes the client see a broken download
                // rather than a short one that looks whole.
                let _ = tx.blocking_send(Err(e));
            }
        }
    });
    tracing::info!(messages = count, format = format.extension(), "export started");
    // Asked again after its end (the compression layer does), a closed channel says so again.
    let mut rx = rx;
    let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    let mut res = Body::from_stream(stream).into_response();
    let headers = res.headers_mut();
    let set = |v: &str| HeaderValue::from_str(v).ok();
    if let Some(v) = set(format.content_type()) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    if let Some(v) = set(&content_disposition("attachment", &export::download_name(&described, format))) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    if let Some(v) = set(&content_csp(false, false)) {
        headers.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    if let Ok(v) = HeaderValue::from_str(&count.to_string()) {
        headers.insert("x-mailshelf-messages", v);
    }
    Ok(res)
}

/// A `Write` that hands full chunks to the response body, waiting while the channel is full.
struct ChannelWriter {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}
