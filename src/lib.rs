//! # oware: exact-value Oware (Awari) endgame databases
//!
//! The library behind the `oware` command. Its modules follow the seams of the problem:
//!
//! | module | what it is |
//! |---|---|
//! | [`rules`] | rulesets, move generation, un-moves (`RULES.md`) |
//! | [`position`] | positions: parsing and printing |
//! | [`index`] | the combinatorial indexer: rank/unrank of each layer's boards |
//! | [`format`] | the layer file format: header, checksum (`FORMAT.md`) |
//! | [`storage`] | database directories: memory-mapped layers, safe writes, the 2002 `scores.N` format |
//! | [`solver`] | the parallel retrograde builder |
//! | [`probe`] | queries: value, move values, best line |
//! | [`verify`] | the independent verifier |
//!
//! Values are from the point of view of the player to move: stones he will still capture minus
//! stones the opponent will still capture, over the stones on the board, with endless play
//! counting 0.

pub mod error;
pub mod format;
pub mod index;
pub mod perft;
pub mod position;
pub mod probe;
pub mod rules;
pub mod solver;
pub mod storage;
pub mod units;
pub mod verify;

pub use error::{Error, Result};
pub use position::Position;
pub use rules::{Board, Ruleset};
