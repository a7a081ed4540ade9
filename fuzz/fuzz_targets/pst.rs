//! Any bytes as an Outlook data file: listed, its items written out as `.msg` files and taken
//! through the message path. See `mailshelf_fuzz::pst`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::pst(data));
