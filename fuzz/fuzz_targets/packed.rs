//! Any bytes as a message or mbox file kept compressed (see `mailshelf_fuzz::packed`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::packed(data));
