//! Any bytes as an S/MIME (CMS) object or a PKCS #12 file. See `mailshelf_fuzz::cms`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::cms(data));
