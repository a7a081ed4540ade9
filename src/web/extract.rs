//! Extractors the handlers share: ids from the path, whose rejection is the 400 "malformed id"
//! (problem+json for scripts, a page for people), and the `?flag=1` switches.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::{ApiError, PageError};
use crate::error::Error;

/// Ids from the path (`/part/{mid}/{cid}` gives a pair), percent-decoded. A segment that does
/// not decode answers the 400 problem.
pub struct Ids<T>(pub T);

/// The same for pages: a malformed id is an HTML page.
pub struct PageIds<T>(pub T);

async fn ids<T: DeserializeOwned + Send, S: Send + Sync>(parts: &mut Parts, state: &S) -> Result<T, Error> {
    Path::<T>::from_request_parts(parts, state).await.map(|Path(t)| t).map_err(|_| Error::BadId)
}

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Ids<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Ok(Ids(ids(parts, state).await?))
    }
}

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for PageIds<T> {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Ok(PageIds(ids(parts, state).await?))
    }
}

/// A query switch: present and empty, `1`, `true`, `yes` or `on`.
pub fn flag(v: &Option<String>) -> bool {
    matches!(v.as_deref(), Some("1" | "true" | "yes" | "on" | ""))
}
