//! Any bytes as an OpenPGP message, signature or clear-signed text. See `mailshelf_fuzz::openpgp`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::openpgp(data));
