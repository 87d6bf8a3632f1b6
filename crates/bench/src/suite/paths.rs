//! Paths written in a suite file (a page workload's `site` directory and
//! `har` file) are relative to the suite file, as a newcomer's suite beside
//! its HAR expects, not to wherever h3lab was started.
//!
//! The workload tables check their paths while they deserialize, so that
//! toml's errors carry the line; serde gives a table no context, so the
//! suite file's directory is set for the duration of one parse.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

thread_local! {
    static SUITE_DIR: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

/// Runs `parse` with relative paths taken from `dir`.
pub(crate) fn relative_to<T>(dir: &Path, parse: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            SUITE_DIR.with(|suite_dir| suite_dir.borrow_mut().take());
        }
    }
    SUITE_DIR.with(|suite_dir| *suite_dir.borrow_mut() = Some(dir.to_path_buf()));
    let _reset = Reset;
    parse()
}

/// `written` as the suite means it: joined to the suite file's directory
/// when it is relative and the suite came from a file.
pub(crate) fn resolve(written: &str) -> PathBuf {
    let path = PathBuf::from(written);
    if path.is_absolute() {
        return path;
    }
    SUITE_DIR.with(|suite_dir| match suite_dir.borrow().as_ref() {
        Some(dir) => dir.join(&path),
        None => path,
    })
}
