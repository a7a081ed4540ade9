//! The one integration-test binary: each module is a feature.

mod common;

mod api;
mod corpus;
mod pages;
mod render;
