//! Answers of `/part/` kept whole, so that asking again for a part costs lookups: the bytes as
//! shared buffers (never copied), the headers made once, and the compressed forms of a document
//! made once per coding. Both are bounded by bytes ([`crate::limits`]).
//!
//! An answer is kept under everything that may make it differ from one request to another
//! ([`Key`]): the message and part asked for and the URL's switches, the index's generation (a
//! change anywhere may change where a reference in a rewritten document leads, or which message
//! an id names), the folders the reader may read (a `cid:`, `mid:` or `Content-Location`
//! reference resolves only within them), and the sandbox of the server's content policy. Only
//! answers made in full are kept; before a kept answer goes out the handler still asks whether the
//! reader may read the message it was made from (the check that finding the message by its id
//! makes), and `If-None-Match` and `Range` are answered per request from the kept bytes. Compressed forms are kept by the bytes' ETag (a strong validator), so an answer made
//! again after a change, with the same bytes, finds them still there.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use quick_cache::sync::Cache;
use tower_http::compression::predicate::Predicate;

use super::compress;
use super::csp::add_security_headers;
use super::encoding::{self, Coding};
use super::file::{answer, response, whole_answer, FileResponse};
use crate::index::{Access, EntryId};
use crate::limits::{MAX_SERVED_ANSWER, MAX_SERVED_CACHE};

/// A compressed form larger than this is made on the blocking pool, not on an async thread.
const COMPRESS_INLINE: usize = 64 * 1024;

/// What a `/part/` answer depends on besides the request's conditional and range headers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// The index generation the answer was made at.
    pub(crate) generation: u64,
    /// The message and the part, as the URL names them.
    pub(crate) mid: String,
    pub(crate) cid: String,
    /// The URL's switches and the sandbox kind, a bit each ([`Key::switches`]).
    pub(crate) switches: u8,
    /// The folders the reader may read.
    pub(crate) access: Access,
}

impl Key {
    /// The bits of `remote`, `download`, `raw`, `fold`, and of a content policy whose sandbox
    /// keeps the origin (a server people sign in to).
    pub(crate) fn switches(remote: bool, download: bool, raw: bool, fold: bool, same_origin: bool) -> u8 {
        [remote, download, raw, fold, same_origin]
            .iter()
            .enumerate()
            .fold(0, |bits, (i, &on)| bits | (u8::from(on) << i))
    }

    fn weight(&self) -> u64 {
        let folders: usize = self.access.folder_keys().map_or(0, |keys| keys.iter().map(|k| k.len() + 16).sum());
        (self.mid.len() + self.cid.len() + folders) as u64 + 64
    }
}

/// Headers that may still be added to a kept answer's copy (a coding, CORS's headers), at most.
const ROOM_FOR_LAYERS: usize = 12;

/// A part's answer: its headers (ETag, type, disposition, policy…) and its bytes.
pub(crate) struct Answer {
    /// The message it was made from (as the reader's id found it).
    entry: EntryId,
    headers: HeaderMap,
    etag: String,
    bytes: Bytes,
    /// Whether the compression layer would compress it (then a compressed form is kept instead).
    compressible: bool,
}

impl Answer {
    /// The answer for `file`, made from message `entry`, with `extra` headers added to every
    /// response of it.
    pub(crate) fn new(file: FileResponse, extra: &[(header::HeaderName, HeaderValue)], entry: EntryId) -> Answer {
        let (mut headers, etag) = file.head();
        for (name, value) in extra {
            headers.insert(name.clone(), value.clone());
        }
        let bytes = file.into_bytes();
        let compressible = {
            let mut probe = Response::new(Body::from(bytes.clone()));
            *probe.headers_mut() = headers.clone();
            compress::predicate().should_compress(&probe)
        };
        // The length of a whole answer, written once here rather than for each request (where
        // the router formats and checks it); [`answer`] takes it out of the others.
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
        // And what the layers would add to every response of it, so that each copy of the map
        // only has values replaced, never a header added (the copy's list would grow).
        add_security_headers(&mut headers);
        if compressible {
            headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
        }
        // Room for what may still be added to a copy (a coding, CORS's headers): a copy keeps its
        // map's table, so none of them has to grow it and place every header again.
        headers.reserve(ROOM_FOR_LAYERS);
        Answer { entry, headers, etag, bytes, compressible }
    }

    /// The message it was made from.
    pub(crate) fn entry(&self) -> EntryId {
        self.entry
    }

    fn weight(&self) -> u64 {
        self.bytes.len() as u64 + 512
    }
}

#[derive(Clone)]
struct Weight;

impl quick_cache::Weighter<Key, Arc<Answer>> for Weight {
    fn weight(&self, key: &Key, val: &Arc<Answer>) -> u64 {
        key.weight() + val.weight()
    }
}

impl quick_cache::Weighter<(String, Coding), Bytes> for Weight {
    fn weight(&self, key: &(String, Coding), val: &Bytes) -> u64 {
        (key.0.len() + val.len()) as u64 + 64
    }
}

/// The answers kept, and the compressed forms of the compressible ones.
pub(crate) struct Served {
    answers: Cache<Key, Arc<Answer>, Weight>,
    /// By ETag and coding.
    compressed: Cache<(String, Coding), Bytes, Weight>,
}

impl Default for Served {
    fn default() -> Self {
        // Half of the budget each; estimated item counts only size the tables.
        let half = MAX_SERVED_CACHE / 2;
        Served {
            answers: Cache::with_weighter(4096, half, Weight),
            compressed: Cache::with_weighter(4096, half, Weight),
        }
    }
}

impl Served {
    pub(crate) fn get(&self, key: &Key) -> Option<Arc<Answer>> {
        self.answers.get(key)
    }

    /// Keeps an answer (unless it is too large to be worth a place) and gives it back shared.
    pub(crate) fn keep(&self, key: Key, answer: Answer) -> Arc<Answer> {
        let answer = Arc::new(answer);
        if answer.bytes.len() <= MAX_SERVED_ANSWER {
            self.answers.insert(key, Arc::clone(&answer));
        }
        answer
    }

    /// What a request gets of a kept answer: as [`answer`] does for its bytes, but a whole answer
    /// the compression layer would compress is sent in the coding it would have chosen, from the
    /// form kept (made now if it is not kept yet).
    pub(crate) async fn respond(&self, kept: &Answer, req: &HeaderMap) -> Response {
        // Most requests (scripts, and every one a browser makes of an image) have no choice to
        // make: no coding asked for, or bytes not compressed.
        if !kept.compressible || !req.contains_key(header::ACCEPT_ENCODING) {
            return answer(kept.headers.clone(), &kept.etag, kept.bytes.clone(), req);
        }
        let coding = match encoding::preferred(req) {
            Some(c) if c != Coding::Identity => c,
            // Identity, or nothing acceptable (the layer answers 406 then): the bytes as they are.
            _ => return answer(kept.headers.clone(), &kept.etag, kept.bytes.clone(), req),
        };
        if !whole_answer(req, &kept.etag, kept.bytes.len()) {
            return answer(kept.headers.clone(), &kept.etag, kept.bytes.clone(), req);
        }
        let Some(body) = self.compressed_form(kept, coding).await else {
            // Left to the compression layer, as before.
            return answer(kept.headers.clone(), &kept.etag, kept.bytes.clone(), req);
        };
        let mut headers = kept.headers.clone();
        // As the compression layer does: a compressed answer is not offered in ranges.
        headers.remove(header::ACCEPT_RANGES);
        headers.insert(header::CONTENT_ENCODING, coding.header());
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
        super::compress::weaken_etag(&mut headers);
        response(StatusCode::OK, headers, Body::from(body))
    }

    async fn compressed_form(&self, kept: &Answer, coding: Coding) -> Option<Bytes> {
        let key = (kept.etag.clone(), coding);
        if let Some(hit) = self.compressed.get(&key) {
            return Some(hit);
        }
        let made = if kept.bytes.len() <= COMPRESS_INLINE {
            encoding::compressed(coding, &kept.bytes)
        } else {
            let bytes = kept.bytes.clone();
            tokio::task::spawn_blocking(move || encoding::compressed(coding, &bytes)).await.ok().flatten()
        }?;
        if made.len() <= MAX_SERVED_ANSWER {
            self.compressed.insert(key, made.clone());
        }
        Some(made)
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::Arc;

    use axum::extract::ConnectInfo;
    use axum::http::Request;
    use tower::ServiceExt;

    use crate::archive::Archive;
    use crate::config::Config;
    use crate::web::app::app;
    use crate::web::state::AppState;

    /// The content policy of `uri`, asked by `ann` from a trusted proxy.
    async fn policy(state: &AppState, uri: &str) -> String {
        let mut req = Request::get(uri).header("x-user", "ann").body(axum::body::Body::empty()).unwrap();
        req.extensions_mut().insert(ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 9))));
        let res = app(state.clone()).oneshot(req).await.unwrap();
        assert_eq!(res.status(), 200, "{uri}");
        res.headers()[axum::http::header::CONTENT_SECURITY_POLICY].to_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn kept_answers_are_kept_apart_by_the_sandbox_they_were_made_with() {
        // One cache of answers under two servers over the same mail, one that people sign in to
        // (sandboxed with its origin) and one without accounts: each keeps its own policy.
        let dir = tempfile::tempdir().unwrap();
        let mail = dir.path().join("mail");
        std::fs::create_dir_all(&mail).unwrap();
        std::fs::write(
            mail.join("a.eml"),
            "From: a@example.org\r\nMessage-ID: <a@example.org>\r\nMIME-Version: 1.0\r\n\
             Content-Type: text/html; charset=utf-8\r\n\r\n<p>Hello</p>\r\n",
        )
        .unwrap();
        let archive = Arc::new(Archive::open_with(&dir.path().join("data"), false).unwrap());
        archive.ingest_paths(&archive.roots(std::slice::from_ref(&mail)));
        let mut config = Config {
            paths: vec![mail],
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: dir.path().join("data"),
            max_upload: 1 << 20,
            max_message: crate::limits::DEFAULT_MAX_MESSAGE,
            cors_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            search: false,
            attachment_text: false,
            max_connections: 16,
            header_timeout: std::time::Duration::from_secs(10),
            chromium: None,
            database_url: None,
            keys: Arc::default(),
            index_decrypted: false,
            accounts: Default::default(),
            tls: None,
        };
        let plain = AppState::new(Arc::clone(&archive), Arc::new(config.clone()));
        config.accounts.trusted_header = Some("x-user".into());
        config.accounts.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
        config.accounts.default_folders = Some(vec!["*".into()]);
        let mut signed = AppState::open(archive, Arc::new(config)).unwrap();
        signed.served = Arc::clone(&plain.served);
        assert!(signed.signs_in() && !plain.signs_in());
        for uri in ["/part/a@example.org/~1", "/part/a@example.org/~1?raw=1"] {
            for (first, second) in [(&plain, &signed), (&signed, &plain)] {
                for state in [first, second] {
                    let same_origin = policy(state, uri).await.contains("allow-same-origin");
                    assert_eq!(same_origin, state.signs_in(), "{uri}");
                }
            }
        }
    }
}
