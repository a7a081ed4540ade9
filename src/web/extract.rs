//! Extractors the handlers share. A malformed id in the path or a malformed query string is a 400
//! in the handler's own voice: problem+json for scripts ([`ApiError`], the default), an HTML page
//! for people (`Ids<T, PageError>`).

use std::marker::PhantomData;

use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use axum::response::IntoResponse;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use crate::error::Error;

/// Ids from the path (`/part/{mid}/{cid}` gives a pair), percent-decoded.
pub(crate) struct Ids<T, E = ApiError>(pub T, pub PhantomData<E>);

/// The message and part ids of a `/part/{mid}/{cid}` path, percent-decoded: read from the path
/// itself rather than from the router's parameters, so that the route can be answered without
/// the router ([`super::hot`]).
pub(crate) struct PartIds(pub String, pub String);

/// The ids of a `/part/{mid}/{cid}` path, as the router matches and decodes them: two segments,
/// the last not empty (the router matches `/part//x`, a message of no id, but not `/part/x/`),
/// each valid UTF-8 once percent-decoded.
pub(crate) fn part_ids(path: &str) -> Option<(String, String)> {
    let (mid, cid) = part_segments(path)?;
    let decoded = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8().ok().map(|d| d.into_owned());
    Some((decoded(mid)?, decoded(cid)?))
}

/// The two segments of a path of the part route's shape, as they are written (see [`part_ids`]).
pub(crate) fn part_segments(path: &str) -> Option<(&str, &str)> {
    let (mid, cid) = path.strip_prefix("/part/")?.split_once('/')?;
    (!cid.is_empty() && !cid.contains('/')).then_some((mid, cid))
}

impl<S: Send + Sync> FromRequestParts<S> for PartIds {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let (mid, cid) = part_ids(parts.uri.path()).ok_or(ApiError(Error::BadId))?;
        Ok(PartIds(mid, cid))
    }
}

/// Parameters from the query string.
pub(crate) struct Params<T, E = ApiError>(pub T, pub PhantomData<E>);

impl<T, E, S> FromRequestParts<S> for Ids<T, E>
where
    T: DeserializeOwned + Send,
    E: From<Error> + IntoResponse,
    S: Send + Sync,
{
    type Rejection = E;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, E> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(t)) => Ok(Ids(t, PhantomData)),
            Err(_) => Err(E::from(Error::BadId)),
        }
    }
}

impl<T, E, S> FromRequestParts<S> for Params<T, E>
where
    T: DeserializeOwned + Send,
    E: From<Error> + IntoResponse,
    S: Send + Sync,
{
    type Rejection = E;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, E> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(t)) => Ok(Params(t, PhantomData)),
            Err(e) => Err(E::from(Error::BadRequest(e.body_text()))),
        }
    }
}

/// A query switch: present and empty, `1`, `true`, `yes` or `on`.
pub(crate) fn flag(v: &Option<String>) -> bool {
    matches!(v.as_deref(), Some("1" | "true" | "yes" | "on" | ""))
}
