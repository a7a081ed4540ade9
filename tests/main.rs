//! The one integration-test binary: each module is a feature.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod accounts;
mod api;
mod archive;
mod browse;
mod browser;
mod cli;
mod connections;
mod corpus;
mod export;
mod external;
mod faults;
mod formats;
mod fuzz_regressions;
mod oidc;
mod outlook;
mod pages;
mod print;
mod pst;
mod render;
mod replicas;
mod scopes;
mod search;
mod security;
mod thumbs;
mod tls;
mod upload_form;
