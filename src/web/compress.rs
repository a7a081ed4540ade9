//! Compressing answers for the clients that ask for it. tower-http's compression layer does the
//! work; in front of it, a request that names no coding at all (a script, `curl`, a browser
//! fetching an image by itself) goes straight to the routes, since all the layer could do is wrap
//! the answer's body in a pass-through and weigh whether it would have compressed it: a tenth of
//! the work of serving a part. Such an answer still says that a request asking for a coding would
//! get another form (`Vary: accept-encoding`), as the layer would say it.

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Extensions, HeaderMap, HeaderValue, StatusCode, Version};
use axum::response::Response;
use futures_util::future::{Either, Map};
use futures_util::FutureExt;
use tower::{Layer, Service};
use tower_http::compression::predicate::{DefaultPredicate, Predicate};
use tower_http::compression::{Compression, CompressionBody, CompressionLayer};

/// What is compressed: what tower-http compresses by default (text and the like, from 32 bytes,
/// never images or event streams), and never partial content (a 206 must carry the exact bytes
/// asked for). Asked by the layer, by the way past it, and of a kept answer ([`super::served`]).
pub(crate) fn predicate() -> impl Predicate {
    DefaultPredicate::new().and(|_: StatusCode, _: Version, headers: &HeaderMap, _: &Extensions| {
        !headers.contains_key(header::CONTENT_RANGE)
    })
}

/// The compression layer for the routes, with the way past it for requests that name no coding.
pub(crate) fn layer() -> CompressedLayer<impl Predicate> {
    CompressedLayer { layer: CompressionLayer::new().compress_when(predicate()) }
}

/// Wraps the routes in [`Compressed`].
#[derive(Clone)]
pub(crate) struct CompressedLayer<P> {
    layer: CompressionLayer<P>,
}

impl<S: Clone, P: Predicate> Layer<S> for CompressedLayer<P> {
    type Service = Compressed<S, P>;

    fn layer(&self, inner: S) -> Self::Service {
        Compressed { plain: inner.clone(), compressing: self.layer.layer(inner) }
    }
}

/// The routes, and the same routes behind the compression layer.
#[derive(Clone)]
pub(crate) struct Compressed<S, P> {
    plain: S,
    compressing: Compression<S, P>,
}

type Plain<F> = Map<F, fn(Result<Response, Infallible>) -> Result<Response, Infallible>>;
type Compressing<F> = Map<F, fn(Result<Response<CompressionBody<Body>>, Infallible>) -> Result<Response, Infallible>>;

impl<S, P> Service<Request> for Compressed<S, P>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    P: Predicate,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Plain<S::Future>, Compressing<<Compression<S, P> as Service<Request>>::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        match self.plain.poll_ready(cx) {
            Poll::Ready(Ok(())) => self.compressing.poll_ready(cx),
            other => other,
        }
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if req.headers().contains_key(header::ACCEPT_ENCODING) {
            Either::Right(self.compressing.call(req).map(|res| {
                let mut res = res?.map(Body::new);
                if res.headers().contains_key(header::CONTENT_ENCODING) {
                    weaken_etag(res.headers_mut());
                }
                Ok(res)
            }))
        } else {
            Either::Left(self.plain.call(req).map(|res| res.map(vary)))
        }
    }
}

/// A compressed answer's ETag made weak (`W/"…"`), as nginx does: a strong ETag names exactly
/// these bytes (RFC 9110 §8.8.1), and the compressed bytes are others than the plain ones it was
/// made for. `If-None-Match` compares weakly, so the answer is still revalidated; a `Range`
/// (which needs a strong one) is never served compressed.
pub(crate) fn weaken_etag(headers: &mut HeaderMap) {
    let Some(etag) = headers.get(header::ETAG).filter(|e| e.as_bytes().starts_with(b"\"")) else { return };
    let mut weak = Vec::with_capacity(etag.len() + 2);
    weak.extend_from_slice(b"W/");
    weak.extend_from_slice(etag.as_bytes());
    if let Ok(weak) = HeaderValue::from_bytes(&weak) {
        headers.insert(header::ETAG, weak);
    }
}

/// `Vary: accept-encoding` on an answer the compression layer would have compressed for a request
/// that asked (the layer says so then, and nothing otherwise), unless it says so already (a kept
/// answer does). Images, the commonest answers the layer leaves alone, are told apart before its
/// rule is asked.
fn vary(mut res: Response) -> Response {
    let h = res.headers();
    if h.get_all(header::VARY).iter().any(|v| v.as_bytes().eq_ignore_ascii_case(b"accept-encoding")) {
        return res;
    }
    let image = h.get(header::CONTENT_TYPE).is_some_and(|t| {
        let t = t.as_bytes();
        t.starts_with(b"image/") && !t.starts_with(b"image/svg+xml")
    });
    if !image && !h.contains_key(header::CONTENT_ENCODING) && predicate().should_compress(&res) {
        res.headers_mut().append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    res
}
