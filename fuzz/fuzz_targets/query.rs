//! Any string typed into the search box. See `mailshelf_fuzz::query`.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &str| mailshelf_fuzz::query(input));
