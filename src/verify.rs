//! The verifier: re-derives stored values from their children with the forward move generator.
//!
//! This code shares nothing with the builder's propagation: for every position it generates the
//! legal moves, reads each child's stored value (same layer or a smaller one) and checks that the
//! stored value is the best move's value, `max(captured - v(child), ending values)`. Any single
//! altered byte breaks this equation at its own position, so it is always found.
//!
//! What this check cannot see: values that are consistent with their children yet wrong as a
//! whole (a cycle of positions all claiming a win that can never be forced). Only a wrong solver
//! could produce those; the solver is cross-checked against a plain forward fixed-point iteration
//! on every position of layers 0..10 under every ruleset in the test suite.

use crate::index::rank_unchecked;
use crate::rules::{Board, Outcome, Ruleset};

/// The value of `board` (layer `n`) derived from its children's stored values.
///
/// `this_layer` holds layer `n`'s values and `lower[m]` those of every layer `m < n`. Positions
/// with no legal move get their ruleset's ending value.
///
/// Cost: one move generation and one value read per move (random access); no allocation.
///
/// # Panics
/// When a needed layer is absent from `lower` or too short (a programming error).
#[inline]
pub fn derive_value(rules: Ruleset, n: u32, board: &Board, this_layer: &[i8], lower: &[&[i8]]) -> i8 {
    let moves = rules.moves(board);
    if let Some(ending) = moves.ending() {
        return ending;
    }
    let mut best = i8::MIN;
    for m in moves.as_slice() {
        let v = match m.outcome {
            Outcome::End { value } => value,
            Outcome::Child { captured, child } => {
                let layer = if captured == 0 { this_layer } else { lower[(n - u32::from(captured)) as usize] };
                captured as i8 - layer[rank_unchecked(&child) as usize]
            }
        };
        best = best.max(v);
    }
    best
}
