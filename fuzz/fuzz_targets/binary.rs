//! Any bytes as a message in one of the binary formats the parser recognises by their bytes
//! (Outlook `.msg`, TNEF `winmail.dat`, Safari `.webarchive`), seeded with such files: the same
//! path as the `message` target (`mailshelf_fuzz::message`), with room for larger inputs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mailshelf_fuzz::message(data));
