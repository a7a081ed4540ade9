//! Any bytes as an OpenDocument file, zipped or flat (see `mailshelf_fuzz::document`).
#![no_main]

use mailshelf::parse::extract::Format;

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::document(&[Format::OpenText], data));
