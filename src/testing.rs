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

/// `here`, or, when it is not: a failure if everything is required, else a line saying what was
/// skipped and how to get it.
fn present(test: &str, what: &str, here: bool, how: &str) -> bool {
    if here {
        return true;
    }
    assert!(
        std::env::var_os("MAILSHELF_REQUIRE").is_none(),
        "{test}: needs {what}, which is missing ({how}); MAILSHELF_REQUIRE is set"
    );
    eprintln!("{test}: skipped, {what} is missing ({how})");
    false
}

/// Whether the corpus is there for `test`; says so when it is skipped.
pub(crate) fn corpus(test: &str) -> bool {
    let how = "put it at ../shared/corpus or set MAILSHELF_CORPUS";
    present(test, &format!("the corpus at {}", corpus_dir().display()), corpus_dir().is_dir(), how)
}

/// Chromium for `test` (`MAILSHELF_CHROMIUM`, else the system's), when it is there.
pub(crate) fn chromium(test: &str) -> Option<PathBuf> {
    let named = std::env::var_os("MAILSHELF_CHROMIUM").map(PathBuf::from);
    let found = crate::config::find_chromium(named.as_deref()).filter(|p| p.is_file());
    present(test, "Chromium", found.is_some(), "apt-get install chromium, or set MAILSHELF_CHROMIUM");
    found
}
