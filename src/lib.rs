//! mailshelf turns saved email and MHTML web archives into pages a browser can show and parts a
//! script can fetch.
//!
//! The data flows one way, one module a stage:
//! `ingest` (find sources, split mbox, list the items of Outlook data files with `pst`) → `parse` (each input format → our `model`) → `index`
//! (lookups by Message-ID, Content-ID, hash; kept by `store` and `search`, or by `postgres` for
//! replicas sharing a database; driven by `archive`) →
//! `route` (our URLs, and resolving `cid:`/`mid:`/Content-Location references to them) →
//! `rewrite` (lol_html and CSS rewriting, pure) → `view` (a message as a reader sees it, HTTP-free)
//! → `web` (the only place that knows HTTP). Beside `view`, `export` (mbox, zip and CSV writers)
//! and `pdf` (Chromium over the DevTools protocol, and the embedding of the original) take mail
//! out, free of HTTP too.
//!
//! Beside `web`, `auth` (users, passwords, sessions, sign-in limits, OpenID Connect and the audit
//! log, HTTP-free) says who may read what; the view reads within it.
//!
//! Imports follow the same order: a module uses only the stages before it and the leaf helpers
//! (`error`, `config`, `ids`, `uri`, `dates`, `text`, `query`, `par`), never one after it. Inside
//! `web`, the handlers sit above the plumbing they share and below the router (see [`web`]).

pub mod archive;
pub mod auth;
pub mod config;
pub mod dates;
pub mod error;
pub mod export;
pub mod ids;
pub mod index;
pub mod ingest;
pub mod limits;
pub mod memory;
pub mod model;
pub mod open;
pub mod par;
pub mod parse;
pub mod postgres;
pub mod rewrite;
pub mod route;
pub mod search;
pub mod store;
pub mod uri;
pub mod view;
pub mod web;

pub use archive::Archive;
pub use config::Config;
pub use error::Error;
pub use web::{app, AppState};
