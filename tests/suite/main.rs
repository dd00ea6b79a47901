//! The integration tests of the library and the `oware` program, as one test binary: every
//! binary links the whole library (and, in release builds, runs its link-time optimisation), so
//! one binary instead of one per file saves most of the suite's build time, and fixtures built
//! once (`common::fixture`) are shared by every file.
//!
//! A new test file goes in this directory with a `mod` line below. Run one file's tests with
//! `cargo test --release --test suite -- FILE::` (e.g. `hardening::`); the `oware` program these
//! tests run is built first (`common::oware_exe`). The MPI tests are the program's
//! (`cli/tests/mpi.rs`, feature `mpi`); the distributed solver's tests with the ranks as threads
//! are the library's unit tests (`src/solver/tests/`).

#[path = "../common/mod.rs"]
mod common;
#[path = "../../src/solver/tests/solved.rs"]
mod solved;

mod bounds;
mod dtc;
mod dtc_verify;
mod engine;
mod export;
mod format_fuzz;
mod golden;
mod hardening;
mod index;
mod module_graph;
mod out_of_core;
mod packs;
mod parser_fuzz;
mod perft;
mod players;
mod probe;
mod rule25;
mod rules_crosscheck;
mod rules_examples;
mod rules_vectors;
mod serve;
mod solver;
mod targets;
mod verify;
