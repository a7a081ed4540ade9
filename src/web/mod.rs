//! The web layer, the only place that knows HTTP. Its floors, each importing only from those
//! below it:
//!
//! 1. plumbing every handler shares, from the bottom: [`csp`] (the content policies), [`file`](mod@file)
//!    (bytes answered with file semantics), [`encoding`] (content-codings: the one a request takes,
//!    and compressing once), [`compress`] (what is compressed, and the compression layer for the
//!    requests that ask for a coding), [`served`] (answers of parts kept whole, by reader),
//!    [`assets`] (static files embedded in the binary),
//!    [`error`] (errors as problem+json or pages), [`extract`] (ids and switches), [`state`],
//!    and [`guard`] (who may address the server and write to it, and the headers every answer
//!    carries); [`gate`] (who reads: the reader of each request, signed in or not, and the view
//!    made for them), [`record`] (the audit log's lines);
//! 2. handlers, one room for each thing served: [`pages`] for people, [`api`] for scripts (with
//!    [`seals`], the JSON of signatures and encryption),
//!    [`parts`] for a message's parts and source, [`thumbs`] for pictures of image attachments;
//!    [`export`] for searches taken out as mbox, zip or CSV; [`print`](mod@print) for a message laid out for paper;
//!    [`signin`] for signing in and out;
//! 3. [`openapi`], the document that describes the handlers;
//! 4. [`app`](mod@app), the router (with [`hot`], the part route answered ahead of it), and [`server`], the accept loop that serves it (header deadlines,
//!    a cap on open connections, graceful shutdown, HTTPS with [`tls`]).
//!
//! What a message looks like when viewed (rewritten bodies, search results, threads) is not HTTP
//! and lives one stage down, in [`crate::view`].

pub(crate) mod api;
pub mod app;
pub(crate) mod assets;
pub(crate) mod compress;
pub(crate) mod csp;
pub(crate) mod encoding;
pub(crate) mod error;
pub(crate) mod export;
pub(crate) mod extract;
pub(crate) mod file;
pub(crate) mod gate;
pub(crate) mod guard;
pub(crate) mod hot;
pub(crate) mod openapi;
pub(crate) mod pages;
pub(crate) mod parts;
pub(crate) mod print;
pub(crate) mod record;
pub(crate) mod seals;
pub(crate) mod served;
pub mod server;
pub(crate) mod signin;
pub mod state;
pub(crate) mod thumbs;
pub mod tls;

pub use app::{app, service};
pub use state::AppState;
