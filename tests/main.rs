//! The one integration-test binary: each module is a feature.

mod common;

mod api;
mod archive;
mod browser;
mod cli;
mod corpus;
mod fuzz_regressions;
mod pages;
mod render;
mod search;
