//! What every way of running the exits pass shares: the work of one pass ([`Pass`]) and one
//! position's exits ([`exits`]).

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;

use super::state::{BestExit, Cell, Failure, NO_EXIT};
use crate::progress::Progress;
use crate::rules::{Board, Exits, Ruleset};

/// What every way of running the exits pass works on.
pub(super) struct Pass<'a> {
    pub(super) rules: Ruleset,
    pub(super) n: u32,
    /// The finished values of every lower layer.
    pub(super) lower: &'a [&'a [i8]],
    /// The cells of this process's positions `own`.
    pub(super) cells: &'a [Cell],
    /// Their best exits (in the output).
    pub(super) exits: &'a [BestExit],
    /// The positions this process solves (the whole layer in one process).
    pub(super) own: Range<u64>,
    /// The parts of `own`, relative to `own.start`.
    pub(super) parts: &'a [Range<u64>],
    pub(super) progress: &'a dyn Progress,
    pub(super) failure: &'a Failure,
    /// Gives back the pages of a range of cells (out of core).
    pub(super) release_part: &'a (dyn Fn(&Range<u64>) + Sync),
}

impl Pass<'_> {
    pub(super) fn stopped(&self) -> bool {
        self.progress.cancelled() || self.failure.failed.load(Relaxed)
    }
}

/// The best exit value of `board` among its game-ending moves, the number of its moves that
/// stay in the layer, and whether its game is over; `capture(captured, child)` is called for
/// each move into a smaller layer, whose value the caller folds into the best exit.
#[inline]
pub(super) fn exits(rules: Ruleset, board: &Board, capture: impl FnMut(u8, &Board)) -> (i8, u8, bool) {
    match rules.exits(board, capture) {
        Exits::Ended(value) => (value, 0, true),
        Exits::Moves { best_end, same_layer } => (best_end.unwrap_or(NO_EXIT), same_layer, false),
    }
}
