//! The integration tests of the library, as one test binary: every binary links the whole
//! library (and, in release builds, runs its link-time optimisation), so one binary instead of
//! one per file saves most of the suite's build time, and fixtures built once
//! (`common::fixture`) are shared by every file. They use the library's public API and never run
//! the `oware` program: the tests that do are the program's, in its crate (`cli/tests/suite/`,
//! where Cargo builds the program for them).
//!
//! A new test file goes in this directory with a `mod` line below. Run one file's tests with
//! `cargo test --release -p oware --test suite -- FILE::` (e.g. `probe::`). The MPI tests are the
//! program's (`cli/tests/mpi.rs`, feature `mpi`); the distributed solver's tests with the ranks as
//! threads are the library's unit tests (`src/solver/tests/`).

#[path = "../common/mod.rs"]
mod common;

mod dtc;
mod format_fuzz;
mod golden;
mod module_graph;
mod parser_fuzz;
mod perft;
mod probe;
mod rule25;
mod rules_crosscheck;
mod rules_examples;
mod rules_vectors;
mod targets;
