//! `static/` embedded in the binary, served under content-hashed URLs with long-lived caching, so a
//! page never loads an asset from outside the binary and never sees a stale one.

use std::sync::LazyLock;

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

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
];

/// Short hashes of each asset, computed once.
static HASHES: LazyLock<Vec<String>> =
    LazyLock::new(|| ASSETS.iter().map(|a| blake3::hash(a.bytes).to_hex()[..16].to_string()).collect());

/// The URLs templates link to; the query changes whenever the asset does.
#[derive(Debug, Clone)]
pub struct AssetUrls {
    pub css: String,
    pub icon: String,
}

impl AssetUrls {
    pub fn get() -> Self {
        AssetUrls { css: url("style.css"), icon: url("favicon.svg") }
    }
}

fn url(name: &str) -> String {
    let i = ASSETS.iter().position(|a| a.name == name).unwrap_or(0);
    format!("/static/{}?v={}", ASSETS[i].name, HASHES[i])
}

/// `GET /static/<file>`.
pub async fn get(Path(file): Path<String>, req: HeaderMap) -> Response {
    let Some(i) = ASSETS.iter().position(|a| a.name == file) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    FileResponse::new(Bytes::from_static(ASSETS[i].bytes), ASSETS[i].content_type.to_string())
        .etag(format!("\"{}\"", HASHES[i]))
        .cache(cache::PUBLIC_IMMUTABLE)
        .respond(&req)
}
