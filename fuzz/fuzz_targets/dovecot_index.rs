//! Any bytes as Dovecot's index files, an index and its logs split at `--8<--` (see
//! `mailshelf_fuzz::dovecot_index`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::dovecot_index(data));
