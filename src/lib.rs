//! # oware: exact-value Oware (Awari) endgame databases
//!
//! The library behind the `oware` program (its own crate, `cli/`, which uses only this public
//! API, as do the Python package and the C library). Data flows one way through its modules:
//! rules, index, solver, storage, builder, probe, then the interfaces. `docs/architecture.md` draws
//! the picture.
//!
//! ## Start here
//!
//! The crate root re-exports what most programs need: open a database and probe it
//! ([`Database`]), build one ([`build()`], [`BuildConfig`]), positions and rulesets ([`Position`],
//! [`Side`], [`Ruleset`], [`Board`]), errors ([`Error`] and its [`ErrorKind`]), and the check of a
//! whole directory ([`verify_directory`]).
//!
//! ```no_run
//! use oware::{Database, Position, Ruleset};
//!
//! let db = Database::open("databases", Ruleset::Awari)?; // layers open lazily; Send + Sync
//! let pos: Position = "1 1 1 1 1 2 4 2 3 0 0 0".parse()?;
//! println!("worth {} for the player to move", db.value(&pos)?);
//! for m in db.best_moves(&pos)? {
//!     println!("best: pit {}", m.pit);
//! }
//! # Ok::<(), oware::Error>(())
//! ```
//!
//! ## Public modules
//!
//! | module | what it is |
//! |---|---|
//! | [`rules`] | rulesets, move generation, un-moves (`docs/rules.md`) |
//! | [`position`] | positions: parsing and printing, sides and houses |
//! | [`index`] | the combinatorial indexer: rank/unrank of each layer's boards |
//! | [`probe`] | queries: value, move values, best moves, bounds ([`Database`]) |
//! | [`search`] | the engine above the layers: alpha-beta with exact layer probes (`docs/engine.md`) |
//! | [`line`](mod@line) | the best line (principal variation) |
//! | [`game`] | results with the captured stones counted, game records annotated ply by ply |
//! | [`builder`] | the build: config, plan and estimates, the pipeline, statistics |
//! | [`verify`] | the independent verifier: a whole directory verified ([`verify_directory`]) into a report, the published facts among it, a pack directory's `SHA256SUMS` ([`verify::manifest`]) |
//! | [`storage`] | database directories, memory-mapped layers, safe writes, the 2002 `scores.N` format; the layer file's [`storage::Header`] and offsets (`docs/FORMAT.md`) |
//! | [`pack`] | packs: layers compressed with random access (rANS blocks), written and probed in place |
//! | [`bounds`] | forced-capture bounds (abapa's repetition rule): definition and payload encoding |
//! | [`error`] | typed errors, their kinds ([`ErrorKind`]) and the one table of exit statuses |
//! | [`progress`] | progress reporting and cancellation of long work |
//! | [`perft`] | move-sequence counts for regression tests of the move generator |
//! | [`units`] | formatting of counts, sizes and layer lists for people, in the library's messages and the program's |
//! | `mpi_cluster` | (feature `mpi`) the cluster of an MPI job, and a build over its ranks |
//!
//! Inside the crate only: `solver` (the parallel retrograde algorithm: one driver for a layer or
//! one rank's share of it, in memory or out of core, over the cluster seam; one process is
//! `Solo`; its scratch files and checkpoints in `solver::spill`), `format` (the layer file's
//! header and checksum; the header and offsets are re-exported by [`storage`]), `dtc` (the
//! depths' payload encoding; [`storage::DTC_NONE`] is its "no depth" byte) and `sys` (what talks
//! to the operating system: `/proc`, `statvfs`, `madvise`, `posix_fallocate`, `flock`). Every
//! `pub` item is reachable from outside (`unreachable_pub` warns otherwise); each public module
//! and re-export is there for a user named in `docs/library.md` ("The public surface").
//!
//! Values are from the point of view of the player to move: stones he will still capture minus
//! stones the opponent will still capture, over the stones on the board, with endless play
//! counting 0.

#![warn(missing_docs)]
// Every `pub` item is reachable from outside; the rest says `pub(crate)`.
#![cfg_attr(not(test), warn(unreachable_pub))]

// The library by the name the integration tests give it, for the test-support files they share
// with its own tests (`tests/common/`, included by `test_support`).
#[cfg(test)]
extern crate self as oware;
#[cfg(test)]
mod test_support;

pub mod bounds;
pub mod builder;
pub(crate) mod dtc;
pub mod error;
pub(crate) mod format;
pub mod game;
pub mod index;
pub mod line;
#[cfg(feature = "mpi")]
pub mod mpi_cluster;
pub mod pack;
pub mod perft;
pub mod position;
pub mod probe;
pub mod progress;
pub mod rules;
pub mod search;
pub(crate) mod solver;
pub mod storage;
pub(crate) mod sys;
pub mod units;
pub mod verify;

// The facade: what most programs need, at the crate root.
pub use builder::{build, BuildConfig};
pub use error::{Error, ErrorKind, Result};
pub use position::{Position, Side};
pub use probe::{Database, MoveValue};
pub use rules::{Board, Ruleset};
pub use verify::verify_directory;

/// The search's static evaluation and its fitting, for `examples/fit_eval.rs` (`scripts/fit-eval`)
/// only, with the feature `eval-fit`: not part of the stable API, may change at any time
/// (`docs/eval.md`).
#[cfg(feature = "eval-fit")]
pub use search::eval::fit as eval_fit;
