//! Any bytes as an mbox file (see `mailshelf_fuzz::mbox`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::mbox(data));
