//! `static/` embedded in the binary, served under content-hashed URLs with long-lived caching, so a
//! page never loads an asset from outside the binary and never sees a stale one.

use std::sync::LazyLock;

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::csp::{KEYS_JS, KEYS_JS_INTEGRITY};
use super::file::{cache, FileResponse};

struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../static/style.css"),
    },
    Asset { name: "favicon.svg", content_type: "image/svg+xml", bytes: include_bytes!("../../static/favicon.svg") },
    Asset { name: "file.svg", content_type: "image/svg+xml", bytes: FILE_ICON },
    Asset { name: "keys.js", content_type: "text/javascript; charset=utf-8", bytes: KEYS_JS },
];

/// The icon an attachment shows when it has no thumbnail.
pub(crate) const FILE_ICON: &[u8] = include_bytes!("../../static/file.svg");

/// Short hashes of each asset, computed once.
static HASHES: LazyLock<Vec<String>> =
    LazyLock::new(|| ASSETS.iter().map(|a| blake3::hash(a.bytes).to_hex()[..16].to_string()).collect());

/// The URLs templates link to; the query changes whenever the asset does.
#[derive(Debug, Clone)]
pub(crate) struct AssetUrls {
    pub css: String,
    pub icon: String,
    pub file_icon: String,
    /// The keyboard script, and its `integrity` (the hash the pages' policy allows).
    pub keys: String,
    pub keys_integrity: String,
}

impl AssetUrls {
    pub(crate) fn get() -> Self {
        AssetUrls {
            css: url("style.css"),
            icon: url("favicon.svg"),
            file_icon: url("file.svg"),
            keys: url("keys.js"),
            keys_integrity: KEYS_JS_INTEGRITY.clone(),
        }
    }
}

fn url(name: &str) -> String {
    let i = ASSETS.iter().position(|a| a.name == name).unwrap_or(0);
    format!("/static/{}?v={}", ASSETS[i].name, HASHES[i])
}

/// `GET /static/<file>`.
pub(crate) async fn get(Path(file): Path<String>, req: HeaderMap) -> Response {
    let Some(i) = ASSETS.iter().position(|a| a.name == file) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    FileResponse::new(Bytes::from_static(ASSETS[i].bytes), ASSETS[i].content_type.to_string())
        .etag(format!("\"{}\"", HASHES[i]))
        .cache(cache::PUBLIC_IMMUTABLE)
        .respond(&req)
}
