//! Any bytes as a PDF document: lopdf and pdf-extract through the bounds mailshelf sets (see `mailshelf_fuzz::document`).
#![no_main]

use mailshelf::parse::extract::Format;

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::document(&[Format::Pdf], data));
