//! The integration tests of the `oware` program, as one test binary: the program is the one
//! Cargo builds for this crate's tests (`env!("CARGO_BIN_EXE_oware")`, `common::OWARE`), and one
//! binary instead of one per file links once and shares its fixtures (`common::fixture`) and its
//! `oware serve` harness (`common::Server`) across every file. The library's integration tests
//! are `tests/suite/` at the root of the workspace; the helpers both use live in `tests/common/`
//! and are included by `common/mod.rs`.
//!
//! A new test file goes in this directory with a `mod` line below. Run one file's tests with
//! `cargo test --release -p oware-cli --test suite -- FILE::` (e.g. `serve::`). The MPI tests are
//! their own binary (`cli/tests/mpi.rs`), which needs the feature `mpi` and `mpirun`.

#[path = "../common/mod.rs"]
mod common;

mod analyse;
mod bounds_files;
mod build_for;
mod builds;
mod dtc_files;
mod dtc_verify;
mod engine;
mod evaluate;
mod export;
mod fifos;
mod hardening;
mod out_of_core;
mod packs;
mod players;
mod program;
mod query;
mod serve;
mod verify_cli;
