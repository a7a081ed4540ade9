//! Any bytes as an attached text file, HTML page and message (see `mailshelf_fuzz::document`).
#![no_main]

use mailshelf::parse::extract::Format;

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::document(&[Format::Text, Format::Html, Format::Message], data));
