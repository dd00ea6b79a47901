//! # oware: exact-value Oware (Awari) endgame databases
//!
//! The library behind the `oware` command. Its modules follow the seams of the problem, and data
//! flows one way through them: rules, index, solver, storage, build, probe, then the interfaces
//! (the program, Python, C). `docs/architecture.md` draws the picture.
//!
//! | module | what it is |
//! |---|---|
//! | [`rules`] | rulesets, move generation, un-moves (`docs/rules.md`) |
//! | [`error`] | typed errors, their kinds ([`ErrorKind`](error::ErrorKind)) and the one table of exit statuses |
//! | [`progress`] | progress reporting and cancellation of long work |
//! | [`position`] | positions: parsing and printing |
//! | [`index`] | the combinatorial indexer: rank/unrank of each layer's boards |
//! | [`bounds`] | forced-capture bounds (abapa's repetition rule): definition and payload encoding |
//! | [`format`](mod@format) | the layer file format: header, checksum (`docs/FORMAT.md`) |
//! | [`pack`] | packs: layers compressed with random access (rANS blocks), written and probed in place |
//! | [`manifest`] | the `SHA256SUMS` of a pack directory |
//! | [`storage`] | database directories, memory-mapped layers, safe writes, the 2002 `scores.N` format |
//! | [`solver`] | the parallel retrograde algorithm: one driver for a layer or one rank's share of it, in memory or out of core, over the cluster seam (`solver::cluster`; one process is `Solo`) |
//! | [`spill`] | the out-of-core builder's scratch files and checkpoints |
//! | [`build`](mod@build) | the build: config, plan and estimates, the one pipeline (one process or the ranks of a cluster), bounds, statistics, lock |
//! | [`sys`] | what talks to the operating system: `/proc`, `statvfs`, `madvise`, `posix_fallocate`, `flock` |
//! | `mpi_cluster` | (feature `mpi`) the cluster of an MPI job |
//! | [`probe`] | queries: value, move values |
//! | [`line`](mod@line) | the best line (principal variation) |
//! | [`game`] | results with the captured stones counted, game records annotated ply by ply |
//! | [`verify`] | the independent verifier, and a whole directory verified ([`verify::verify_directory`]: layers, bounds, facts, manifest, outcome) |
//! | [`facts`] | the published facts checked against the layers |
//! | [`perft`] | move-sequence counts for regression tests of the move generator |
//! | [`units`] | formatting of counts and sizes |
//!
//! Values are from the point of view of the player to move: stones he will still capture minus
//! stones the opponent will still capture, over the stones on the board, with endless play
//! counting 0.

#![warn(missing_docs)]

pub mod bounds;
pub mod build;
pub mod error;
pub mod facts;
pub mod format;
pub mod game;
pub mod index;
pub mod line;
pub mod manifest;
#[cfg(feature = "mpi")]
pub mod mpi_cluster;
pub mod pack;
pub mod perft;
pub mod position;
pub mod probe;
pub mod progress;
pub mod rules;
pub mod solver;
pub mod spill;
pub mod storage;
pub mod sys;
pub mod units;
pub mod verify;

pub use error::{Error, Result};
pub use position::Position;
pub use rules::{Board, Ruleset};
