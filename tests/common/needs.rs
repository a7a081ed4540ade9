//! What a test needs from the machine beyond the crate: the corpus of other projects' files,
//! Chromium, PostgreSQL, and the independent programs some tests compare with (`pdftotext`,
//! `readpst`, Python's `email`, …).
//!
//! A plain `cargo test` on a machine without one of them says which test it skipped and why, and
//! passes: a contributor without Chromium can still run the rest. `scripts/test`, which installs
//! everything, sets `MAILSHELF_REQUIRE`; then an absence fails the test instead, so CI never passes
//! by skipping. Each test asks at its top: `if !needs::corpus("test_name") { return; }`.

/// Whether `scripts/test` (or anyone) asked that nothing be skipped.
pub fn required() -> bool {
    std::env::var_os("MAILSHELF_REQUIRE").is_some()
}

/// `here`, or, when it is not: a failure if everything is required, else a line saying what was
/// skipped and how to get it.
pub fn present(test: &str, what: &str, here: bool, how: &str) -> bool {
    if here {
        return true;
    }
    assert!(!required(), "{test}: needs {what}, which is missing ({how}); MAILSHELF_REQUIRE is set");
    eprintln!("{test}: skipped, {what} is missing ({how}; scripts/test installs it)");
    false
}

/// The corpus of real files from other projects (`../shared/corpus`, or `MAILSHELF_CORPUS`).
pub fn corpus(test: &str) -> bool {
    present(
        test,
        "the corpus",
        super::corpus_dir().is_dir(),
        "put it at ../shared/corpus beside the checkout, or set MAILSHELF_CORPUS",
    )
}

/// Chromium, for the browser, print and PDF tests (`MAILSHELF_CHROMIUM`, else Debian's).
pub fn chromium(test: &str) -> bool {
    present(
        test,
        "Chromium",
        super::cdp::chromium_path().is_file(),
        "apt-get install chromium, or set MAILSHELF_CHROMIUM",
    )
}

/// A program on `PATH`, from the Debian package (or other source) named in `how`.
pub fn program(test: &str, name: &str, how: &str) -> bool {
    present(test, name, on_path(name), how)
}

/// A Python module `python3` can import (an independent reader some tests compare with).
pub fn python_module(test: &str, module: &str, how: &str) -> bool {
    let here = std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    present(test, &format!("Python's {module}"), here, how)
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
}
