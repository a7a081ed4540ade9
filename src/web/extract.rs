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
