//! What the unit tests need from the machine beyond the crate, asked the way the integration tests
//! ask it (`tests/common/needs.rs`): without the corpus of other projects' files a plain `cargo
//! test` says which test it skipped, and passes; with `MAILSHELF_REQUIRE` set (as `scripts/test`
//! sets it) the absence fails.

use std::path::{Path, PathBuf};

/// `../shared/corpus` beside the package, or `MAILSHELF_CORPUS`.
pub(crate) fn corpus_dir() -> PathBuf {
    std::env::var_os("MAILSHELF_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"))
}

/// Whether the corpus is there for `test`; says so when it is skipped.
pub(crate) fn corpus(test: &str) -> bool {
    if corpus_dir().is_dir() {
        return true;
    }
    assert!(
        std::env::var_os("MAILSHELF_REQUIRE").is_none(),
        "{test}: needs the corpus at {}, which is missing; MAILSHELF_REQUIRE is set",
        corpus_dir().display()
    );
    eprintln!("{test}: skipped, the corpus is missing (put it at ../shared/corpus or set MAILSHELF_CORPUS)");
    false
}
