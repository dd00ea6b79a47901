//! The rules of Oware: rulesets, move generation and un-moves.
//!
//! Everything here follows the rules described in `docs/rules.md`. Boards are kept in
//! **mover-first form**: pits 0..5 belong to the player to move, pits 6..11 to the opponent, and a
//! move's child is turned around so that its mover is first again.
//!
//! The move generator is the inner loop of the solver and the verifier: it allocates nothing and
//! works on fixed-size arrays. A deliberately naive generator lives in the tests and is compared
//! with this one on hundreds of thousands of random positions.
//!
//! | module | what it holds |
//! |---|---|
//! | `board` | the pits and stones, [`Board`], [`turned`], the layers a position needs ([`layers_needed`]) |
//! | `ruleset` | [`GrandSlam`] and [`Ruleset`]: names, ids, what a repetition gives |
//! | `packed` | a board packed into a `u128`, the sowing tables and one move's raw sowing and capture |
//! | `moves` | the move generator: [`Moves`] ([`Ruleset::moves`], [`Ruleset::play`]) and the exits pass's view of them |
//! | `shortcuts` | the search's estimates from the sowings alone (its evaluation and quiescence) |
//! | `unmove` | un-moves: the same-layer predecessors of a position ([`for_each_predecessor`]) |

mod board;
mod moves;
mod packed;
mod ruleset;
mod shortcuts;
#[cfg(test)]
mod tests;
mod unmove;

pub(crate) use board::ROW;
pub use board::{layer_not_needed, layers_needed, stones, turned, Board, MIN_CAPTURE, PITS, TOTAL_STONES};
pub(crate) use moves::Exits;
pub use moves::{Move, Moves, Outcome};
pub(crate) use packed::sowing;
pub use ruleset::{GrandSlam, Ruleset};
pub(crate) use shortcuts::{sowings, Sowings};
pub use unmove::{for_each_predecessor, Unsown};
