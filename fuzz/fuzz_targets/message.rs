//! Any bytes as a message (or an MHTML file): parse, build the model, and rewrite and render every
//! part of it and of every message it encloses. See `mailshelf_fuzz::message`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::message(data));
