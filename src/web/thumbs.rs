//! `/thumb/<mid>/<cid>`: a small picture of an image part for the message page, made by
//! [`crate::view::thumb`]. A part that is not an image mailshelf can shrink (an unknown format, a broken
//! or truncated file, a decompression bomb) answers with the file icon, never an error: the page
//! shows an `<img>` either way. Only a message or part that does not exist is a 404.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};

use super::assets::FILE_ICON;
use super::error::{ApiError, Problem};
use super::extract::Ids;
use super::file::FileResponse;
use super::gate::Viewer;
use super::state::AppState;
use crate::error::Error;
use crate::model::Body as PartBody;
use crate::route;

/// Tells a script whether it got a thumbnail or the icon, without decoding it.
const THUMBNAIL_HEADER: &str = "x-thumbnail";

/// A thumbnail of an image part: at most 240 pixels on its longer side and never larger than the
/// image itself (a small image is answered as it is), as PNG or JPEG (or the original's own
/// type). Anything that does not decode as PNG, JPEG, GIF, WebP or BMP within bounds answers the
/// file icon (SVG), with `X-Thumbnail: none`.
#[utoipa::path(get, path = "/thumb/{mid}/{cid}", tag = "parts",
    params(
        ("mid" = String, Path, description = "The message id"),
        ("cid" = String, Path, description = "The part's Content-ID, or `~` and its MIME section number, as in `/part/`"),
        ("if-none-match" = Option<String>, Header, description = "An ETag from an earlier answer"),
    ),
    responses(
        (status = 200, description = "The thumbnail (`X-Thumbnail: made` or `original`), or the file icon (`X-Thumbnail: none`)",
            content((Vec<u8> = "image/*"), (Vec<u8> = "image/svg+xml")),
            headers(("x-thumbnail" = String, description = "`made`, `original` or `none`"))),
        (status = 304, description = "Unchanged since the given ETag"),
        (status = 412, description = "An If-Match of other bytes"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such message or part", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn thumb(
    State(state): State<AppState>,
    Viewer(view, _): Viewer,
    Ids((mid, cid), _): Ids<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let loaded = view.load(&mid).await?;
    let msg = loaded.message();
    let idx = route::find_part(msg, &cid).ok_or(Error::PartNotFound)?;
    let part = &msg.parts[idx];
    let made = match &part.body {
        PartBody::Binary(_) if part.external.is_none() && !loaded.changed => {
            state.thumbs.get(loaded.entry.hash, &part.section, part.shared_bytes()).await?
        }
        _ => None,
    };
    let etag = format!("\"{}-{}-thumb\"", view.bytes_hash(&loaded), part.section);
    let (res, kind) = match made {
        Some(t) => {
            let kind = if t.original { "original" } else { "made" };
            // The bytes came from a message: they keep the sandboxing policy wherever they are opened.
            let res = FileResponse::new(t.bytes, t.content_type.to_string())
                .etag(etag)
                .cache(super::parts::lasting(&loaded))
                .content_policy(false)
                .respond(&headers);
            (res, kind)
        }
        None => {
            let res = FileResponse::new(Bytes::from_static(FILE_ICON), "image/svg+xml".into())
                .etag(etag)
                .cache(super::parts::lasting(&loaded))
                .content_policy(false)
                .respond(&headers);
            (res, "none")
        }
    };
    let mut res = res.into_response();
    res.headers_mut().insert(THUMBNAIL_HEADER, HeaderValue::from_static(kind));
    Ok(res)
}
