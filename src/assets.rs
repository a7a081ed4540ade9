//! `static/` embedded in the binary, served under content-hashed URLs with long-lived caching, so a
//! page never loads an asset from outside the binary and never sees a stale one.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset { name: "style.css", content_type: "text/css; charset=utf-8", bytes: include_bytes!("../static/style.css") },
    Asset { name: "favicon.svg", content_type: "image/svg+xml", bytes: include_bytes!("../static/favicon.svg") },
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
    let etag = format!("\"{}\"", HASHES[i]);
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ASSETS[i].content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    let fresh = req
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    if fresh {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    (headers, ASSETS[i].bytes).into_response()
}
