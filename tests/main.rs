//! The one integration-test binary: each module is a feature.

mod common;

mod api;
mod archive;
mod browser;
mod cli;
mod connections;
mod corpus;
mod faults;
mod pages;
mod render;
mod search;
