//! What the audit log gets of each request (see [`crate::auth::audit`]): after the handler has
//! answered, one line for a read of a message, a conversation, a part, a thumbnail, a raw message,
//! a print view or a PDF, for a search, an export, an upload or a delete, with the reader, the
//! message id (or the query) and the status answered. Sign-ins are recorded where they happen.
//!
//! A line that cannot be written turns the answer into a 500, so nothing is read unrecorded; the
//! answer's body has not been sent then (an export streams only after this).

use std::net::IpAddr;

use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::gate::{client_address, peer_of};
use super::state::AppState;
use crate::auth::audit::Event;
use crate::auth::Reader;
use crate::error::Error;
use crate::ids::decode_percent;

/// Records the request in the audit log, when one is kept (run by [`super::gate::gate`] for the
/// requests it lets through).
pub(crate) async fn record(state: &AppState, req: Request, next: Next) -> Response {
    let Some(audit) = state.audit.clone() else { return next.run(req).await };
    let action = action_of(req.method(), req.uri().path(), req.uri().query());
    let Some((action, id)) = action else { return next.run(req).await };
    let user = req.extensions().get::<Reader>().map_or_else(String::new, |r| r.name.clone());
    let address = client_address(req.headers(), peer_of(&req), state.accounts.as_deref());
    let res = next.run(req).await;
    let status = res.status().as_u16();
    // The PDF is asked for at a message's own address.
    let action = if action == "read" && is_pdf(&res) { "pdf" } else { action };
    let user = if user.is_empty() { "-" } else { user.as_str() };
    match audit.record(&Event::now(user, action, id.as_deref(), address, status)) {
        Ok(()) => res,
        Err(e) => ApiError(Error::internal("audit log", e)).into_response(),
    }
}

/// A sign-in, recorded at once. An error when the log could not take it: the sign-in is then
/// undone, as a read the log could not take is refused.
pub(crate) fn signed_in(state: &AppState, name: &str, address: Option<IpAddr>) -> Result<(), Error> {
    match &state.audit {
        Some(audit) => {
            audit.record(&Event::now(name, "sign-in", None, address, 303)).map_err(|e| Error::internal("audit log", e))
        }
        None => Ok(()),
    }
}

/// A failed sign-in, recorded at once; a failure to write is in the server's log (the answer is
/// a refusal either way).
pub(crate) fn failed_sign_in(state: &AppState, name: &str, address: Option<IpAddr>) {
    event(state, name, "sign-in-failed", address, 401);
}

/// A sign-out or another event without a request of its own, recorded at once.
pub(crate) fn event(state: &AppState, name: &str, action: &str, address: Option<IpAddr>, status: u16) {
    if let Some(audit) = &state.audit {
        let _ = audit.record(&Event::now(if name.is_empty() { "-" } else { name }, action, None, address, status));
    }
}

fn is_pdf(res: &Response) -> bool {
    res.headers().get(axum::http::header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/pdf"))
}

/// What a request does, for the log, and the id it is about: `None` for what is not recorded
/// (static files, lists without a search, the API's own document, status).
pub(crate) fn action_of(method: &Method, path: &str, query: Option<&str>) -> Option<(&'static str, Option<String>)> {
    let segments: Vec<String> = path.trim_start_matches('/').split('/').map(decode_percent).collect();
    let seg = |i: usize| segments.get(i).map(String::as_str);
    let q = query.and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "q").map(|(_, v)| v.trim().to_string())
    });
    let searched = || q.clone().filter(|q| !q.is_empty()).map(|q| ("search", Some(q)));
    match (method, seg(0), seg(1), seg(2)) {
        (&Method::POST, Some("api"), Some("messages"), None) => Some(("upload", None)),
        (&Method::DELETE, Some("api"), Some("messages"), Some(id)) => Some(("delete", Some(id.to_string()))),
        (_, Some("api"), Some("messages"), Some(id)) => Some(("read", Some(id.to_string()))),
        (_, Some("api"), Some("export"), _) => Some(("export", Some(q.unwrap_or_default()))),
        (_, Some("api"), Some("messages" | "stats"), None) => searched(),
        (_, Some("message"), Some(id), Some("print")) => Some(("print", Some(id.to_string()))),
        (_, Some("message"), Some(id), None) => Some(("read", Some(id.to_string()))),
        (_, Some("thread"), Some(id), _) => Some(("conversation", Some(id.to_string()))),
        (_, Some("raw"), Some(id), _) => Some(("raw", Some(id.to_string()))),
        (_, Some(kind @ ("part" | "thumb")), Some(id), Some(part)) => {
            Some((if kind == "part" { "part" } else { "thumb" }, Some(format!("{id}/{part}"))))
        }
        (_, Some("" | "folder" | "label" | "overview"), _, _) => searched(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_read_is_recorded_with_what_it_reads() {
        let get = Method::GET;
        // Method, path, query, and the action and id recorded (none: not a read).
        type Case<'a> = (&'a Method, &'a str, Option<&'a str>, Option<(&'a str, Option<&'a str>)>);
        let cases: &[Case] = &[
            (&get, "/message/a%40x", None, Some(("read", Some("a@x")))),
            (&get, "/message/a@x/print", Some("remote=1"), Some(("print", Some("a@x")))),
            (&get, "/part/a@x/~1.2", None, Some(("part", Some("a@x/~1.2")))),
            (&get, "/thumb/a@x/logo", None, Some(("thumb", Some("a@x/logo")))),
            (&get, "/raw/a@x", Some("download=1"), Some(("raw", Some("a@x")))),
            (&get, "/thread/a@x", None, Some(("conversation", Some("a@x")))),
            (&get, "/api/messages/a@x", None, Some(("read", Some("a@x")))),
            (&Method::DELETE, "/api/messages/a@x", None, Some(("delete", Some("a@x")))),
            (&Method::POST, "/api/messages", None, Some(("upload", None))),
            (&get, "/api/export", Some("q=from%3Aann&format=zip"), Some(("export", Some("from:ann")))),
            (&get, "/api/export", Some("format=zip"), Some(("export", Some("")))),
            (&get, "/", Some("q=budget+2024"), Some(("search", Some("budget 2024")))),
            (&get, "/api/messages", Some("q=x&limit=5"), Some(("search", Some("x")))),
            (&get, "/", None, None),
            (&get, "/folder/Work", Some("page=2"), None),
            (&get, "/static/style.css", None, None),
            (&get, "/api/status", None, None),
        ];
        for (method, path, query, want) in cases {
            let got = action_of(method, path, *query);
            let got = got.as_ref().map(|(a, id)| (*a, id.as_deref()));
            assert_eq!(got, *want, "{method} {path}");
        }
    }
}
