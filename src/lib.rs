//! mailshelf turns saved email and MHTML web archives into pages a browser can show and parts a
//! script can fetch.
//!
//! The way through, one module a stage, dependencies pointing one way:
//! `ingest` (find sources, split mbox) → `parse` (mail-parser → our `model`) → `index` (lookups by
//! Message-ID, Content-ID, hash) → `route` (our URLs, and resolving `cid:`/`mid:`/Content-Location
//! references to them) → `rewrite` (lol_html and CSS rewriting, pure) → the web layer (`app`,
//! `pages`, `api`, `files`, `assets`), the only place that knows HTTP.

pub mod api;
pub mod app;
pub mod archive;
pub mod assets;
pub mod config;
pub mod dates;
pub mod error;
pub mod files;
pub mod ids;
pub mod index;
pub mod ingest;
pub mod model;
pub mod openapi;
pub mod pages;
pub mod par;
pub mod parse;
pub mod query;
pub mod rewrite;
pub mod route;
pub mod search;
pub mod server;
pub mod store;
pub mod text;
pub mod uri;
pub mod watch;

pub use app::{app, AppState};
pub use archive::Archive;
pub use config::Config;
pub use error::Error;
