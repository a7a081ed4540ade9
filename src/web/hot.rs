//! The route asked for most, answered without the router. Every image of a message page, every
//! body a page frames and every part a script fetches is a `GET /part/{mid}/{cid}`; the router's
//! match, its two path parameters decoded into shared strings and the boxed route around the
//! handler were a tenth of the work of answering a kept part. A read of a part whose path has the
//! route's shape goes straight to [`super::parts::part`], which reads its ids from the path itself
//! ([`super::extract::PartIds`]); anything else (another method, a path of another shape) meets the
//! router as before. What the router does to every answer is done here too: no body for `HEAD`,
//! and the length of a body whose size is known.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, HttpBody as _};
use axum::extract::Request;
use axum::handler::Handler;
use axum::http::{header, HeaderValue, Method};
use axum::response::Response;
use axum::Router;
use futures_util::future::Either;
use tower::Service;

use super::extract::part_segments;
use super::parts;
use super::state::AppState;

/// The router, with the part route's reads answered ahead of it.
#[derive(Clone)]
pub(crate) struct PartsFirst {
    pub(crate) routes: Router,
    pub(crate) state: AppState,
}

/// The part handler's answer, made as the router sends it.
pub(crate) struct Answering {
    answer: Pin<Box<dyn Future<Output = Response> + Send>>,
    head: bool,
}

impl Future for Answering {
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let head = self.head;
        self.answer.as_mut().poll(cx).map(|res| Ok(as_the_router_sends(res, head)))
    }
}

impl Service<Request> for PartsFirst {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<<Router as Service<Request>>::Future, Answering>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Service::<Request>::poll_ready(&mut self.routes, cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let head = req.method() == Method::HEAD;
        if !(head || req.method() == Method::GET) || part_segments(req.uri().path()).is_none() {
            return Either::Left(self.routes.call(req));
        }
        Either::Right(Answering { answer: Handler::call(parts::part, req, self.state.clone()), head })
    }
}

/// What the router does to every answer: the length of a body whose size is known (unless the
/// answer says it already), and no body for `HEAD`.
fn as_the_router_sends(mut res: Response, head: bool) -> Response {
    if !res.headers().contains_key(header::CONTENT_LENGTH) {
        if let Some(size) = res.body().size_hint().exact() {
            res.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from(size));
        }
    }
    if head {
        *res.body_mut() = Body::empty();
    }
    res
}
