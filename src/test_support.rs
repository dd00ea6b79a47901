//! The integration tests' helpers (`tests/common/`: the reference move generator, the shared
//! fixtures, boards by brute force, the seeded generator), included by their path for the unit
//! tests that drive the crate's internals: one copy of each helper for both. The files name the
//! library `oware`, as the integration tests see it; `src/lib.rs` gives the crate that name in
//! its own tests. Unit tests use them as `use crate::test_support as common;`.

// Not every unit test uses every helper (the files' `pub use` lists are for the integration tests).
#[allow(unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

pub(crate) use common::*;

/// Makes a FIFO (named pipe) at `path`.
pub(crate) fn mkfifo(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("a path without NUL");
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

/// Runs `f` on a thread and returns what it returns, failing the test (instead of hanging it)
/// when it has not returned within ten seconds: for calls that blocked for ever on a FIFO.
pub(crate) fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap_or_else(|_| panic!("{what} blocked (or failed) instead of returning"))
}
