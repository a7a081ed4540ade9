//! The one integration-test binary: each module is a feature.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod accessibility;
mod accounts;
mod api;
mod archive;
mod browse;
mod browser;
mod cli;
mod connections;
mod corpus;
mod crypto;
mod crypto_corpus;
mod crypto_damaged;
mod crypto_live;
mod crypto_pages;
mod crypto_pst;
mod crypto_web;
mod decoding;
mod export;
mod external;
mod extract;
mod faults;
mod formats;
mod fuzz_regressions;
mod labels;
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
mod served;
mod thumbs;
mod tls;
mod upload_form;
