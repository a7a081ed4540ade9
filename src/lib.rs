//! mailshelf turns saved email and MHTML web archives into pages a browser can show and parts a
//! script can fetch.
//!
//! The data flows one way, one folder a stage:
//!
//! | stage | what it does |
//! |---|---|
//! | [`ingest`] | finds sources (files, folder trees, Maildir), tells messages from other files, splits mbox files, lists the items of Outlook data files |
//! | [`parse`] | each input format (MIME, MHTML, `.emlx`, `.webarchive`, `.msg`, TNEF) → our [`model`]; signed content unwrapped with [`crypto`] |
//! | [`index`] | lookups by Message-ID, Content-ID, Content-Location and hash, list order, threads, folders; kept by [`store`] (redb) and [`search`] (tantivy), or by [`postgres`] for replicas sharing a database; driven by [`archive`] (loading, watching, uploads, replicas) |
//! | [`route`] | our URLs, and resolving `cid:`/`mid:`/Content-Location references to them |
//! | [`rewrite`] | lol_html and CSS rewriting of bodies, pure |
//! | [`view`] | a message, a list, a thread, the overview as a reader sees them, free of HTTP |
//! | [`web`] | the only place that knows HTTP |
//!
//! Beside `web`, [`auth`] (users, passwords, sessions, sign-in limits, OpenID Connect and the audit
//! log, free of HTTP) says who may read what; the view reads within it.
//!
//! Beside `view`, [`export`] takes mail out (mbox, zip, CSV, and PDF through Chromium), free of
//! HTTP too. [`open`] is the `mailshelf open FILE…` command built on the rest.
//!
//! Imports follow the same order: a module uses only the stages before it and the leaf helpers,
//! never one after it. The leaf helpers: [`error`] (the error nouns), [`config`] (flags and their
//! environment variables), [`limits`] (every bound on what input can make us do), [`ids`] (RFC 2392
//! identifiers), [`uri`] (RFC 2557 base URIs), [`dates`] (every date layout), [`mapi`] (the MAPI
//! properties and the code-page rule the Outlook readers of `ingest` and `parse` share), [`par`]
//! (work spread over the cores, and quotas blocking threads share) and [`memory`] (handing freed memory back). [`crypto`] (S/MIME
//! and OpenPGP on bytes) is a leaf too: it knows neither the model nor any stage, so `parse`
//! unwraps signed content with it, `view` checks signatures and decrypts with the user's keys on
//! demand, and the archive only with `--index-decrypted`. Inside `web`, the handlers sit above the
//! plumbing they share and below the router (see [`web`]).
//!
//! One circle is deliberate: formats nest, so `parse`'s MIME reader calls the TNEF reader, which
//! calls the Outlook reader, which builds MIME again (see [`parse`]).

// Whatever is `pub` is reachable from outside the library (the binary, the tests, the
// benchmarks, the fuzz targets); everything else says `pub(crate)`. (Here rather than in
// Cargo.toml's lints: the test crates' own items are `pub` for their modules.)
#![warn(unreachable_pub)]

pub mod archive;
pub mod auth;
pub mod config;
pub mod crypto;
pub mod dates;
pub(crate) mod error;
pub(crate) mod export;
pub mod ids;
pub mod index;
pub mod ingest;
pub mod limits;
pub mod mapi;
pub mod memory;
pub mod model;
pub mod open;
pub(crate) mod par;
pub mod parse;
pub mod postgres;
pub mod rewrite;
pub mod route;
pub mod search;
pub(crate) mod store;
#[cfg(test)]
mod testing;
pub(crate) mod uri;
pub mod view;
pub mod web;

pub use archive::Archive;
pub use config::Config;
pub use error::Error;
pub use web::{app, AppState};
