//! The harness of the program's integration tests (`cli/tests/suite/`): [`oware`] runs the
//! program Cargo builds for them (`CARGO_BIN_EXE_oware`, never a nested `cargo build`), [`Server`]
//! runs `oware serve` on a free port. The helpers the library's integration tests use as well
//! are included from `tests/common/` by their paths, one implementation for both crates: the
//! shared fixtures (layers the library's builder builds once per test binary, and copies of
//! them), boards by brute force, the checks on a probed database, and `SplitMix64`.
//!
//! Not every test module uses every helper.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};

#[path = "../../../tests/common/boards.rs"]
mod boards;
#[path = "../../../tests/common/fixtures.rs"]
mod fixtures;
#[path = "../../../tests/common/probing.rs"]
mod probing;
mod server;
#[path = "../../../tests/common/splitmix.rs"]
mod splitmix;
pub use boards::*;
pub use fixtures::*;
pub use probing::*;
pub use server::*;
pub use splitmix::SplitMix64;

/// The `oware` program of this crate, built by Cargo before its integration tests.
pub const OWARE: &str = env!("CARGO_BIN_EXE_oware");

/// Runs the `oware` program: (exit code, stdout, stderr).
pub fn oware(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(OWARE).args(args).output().expect("run oware");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Runs the `oware` program with `input` on its standard input: (exit code, stdout, stderr).
/// `input` may be text or bytes (not UTF-8 ones too).
pub fn oware_with_input(args: &[&str], input: impl AsRef<[u8]>) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(OWARE).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run oware");
    // Fed from a thread while the output is read, so neither pipe fills up.
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.as_ref().to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait for oware");
    feeder.join().expect("the feeder thread");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Starts the `oware` program as a coprocess: its stdin and stdout piped, its stderr dropped.
pub fn spawn_oware(args: &[&str]) -> std::process::Child {
    Command::new(OWARE).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("run oware")
}

/// A temporary path as `&str` for command lines.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}
