//! Re-deriving a layer's values: every position's stored value against the best of its moves,
//! read from its children's stored values ([`verify_values`]); one position's
//! derivation ([`derive_value`]) for the builder's spot check.

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use super::{layers_needed, CHUNK, MISMATCHES_KEPT};
use crate::error::{Error, Result};
use crate::index::{chunks, layer_size, rank_unchecked, LayerWalker, MAX_STONES};
use crate::progress::Progress;
use crate::rules::{Board, Outcome as Move, Ruleset, PITS};

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
pub(crate) fn derive_value(rules: Ruleset, n: u32, board: &Board, this_layer: &[i8], lower: &[&[i8]]) -> i8 {
    let moves = rules.moves(board);
    if let Some(ending) = moves.ending() {
        return ending;
    }
    let mut best = i8::MIN;
    for m in moves.as_slice() {
        let v = match m.outcome {
            Move::End { value } => value,
            Move::Child { captured, child } => {
                let layer = if captured == 0 { this_layer } else { lower[(n - u32::from(captured)) as usize] };
                captured as i8 - layer[rank_unchecked(&child) as usize]
            }
        };
        best = best.max(v);
    }
    best
}

/// One position whose stored value is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// Index of the position in its layer.
    pub index: u64,
    /// The board, mover-first.
    pub board: Board,
    /// The value stored in the layer.
    pub stored: i8,
    /// The value derived from the children's stored values (`i16`: children holding garbage can
    /// make it leave the `i8` range).
    pub derived: i16,
}

impl Mismatch {
    /// True when the stored value is outside `-n..=n` for a layer of `n` stones (a value no
    /// position of that layer can have, even if its children happen to agree with it).
    pub fn out_of_range(&self, n: u32) -> bool {
        i64::from(self.stored).unsigned_abs() > u64::from(n)
    }
}

/// The result of re-deriving every position of one layer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayerReport {
    /// Layer number (stones on the board).
    pub layer: u32,
    /// Positions re-derived: always the whole layer, `layer_size(layer)`.
    pub checked: u64,
    /// Positions whose stored value differs from the derived one or lies outside `-n..=n`.
    pub mismatches: u64,
    /// The first [`MISMATCHES_KEPT`] mismatches in index order.
    pub first_mismatches: Vec<Mismatch>,
    /// Wall-clock seconds of the re-derivation.
    pub seconds: f64,
}

impl LayerReport {
    /// True when every value follows from its children.
    pub fn is_ok(&self) -> bool {
        self.mismatches == 0
    }

    /// Positions re-derived per second of wall-clock time.
    pub fn positions_per_second(&self) -> f64 {
        self.checked as f64 / self.seconds.max(1e-9)
    }
}

/// Re-derives every position of layer `n` from its children's stored values and compares.
///
/// Parameters:
/// - `rules`: the ruleset the values were computed under;
/// - `n`: the layer (stones on the board), at most 48;
/// - `this`: layer `n`'s values in index order (`layer_size(n)` of them);
/// - `lower`: `lower[m]` holds layer `m`'s values for every `m` in `layers_needed``(n)`, i.e.
///   `0..=n-2` (entries at `n - 1` and above are ignored and may be absent or empty);
/// - `progress`: told of every position checked, in positions ([`Progress::advance`]).
///
/// Result: positions checked (the whole layer), the number of mismatches (stored value different
/// from the derived one, or outside `-n..=n`) and the first [`MISMATCHES_KEPT`] of them by index.
/// The result does not depend on the number of threads.
///
/// Cost: one move generation and up to six random reads of child values per position, in
/// parallel on the current rayon pool over index chunks of 65,536 positions (each chunk walks its
/// boards with a [`LayerWalker`], no ranking of the position itself, and handles them in batches
/// of 16: moves and child ranks first, then the value reads, so cache misses overlap). No
/// allocation per position.
/// Reads `this` randomly (same-layer children) and the lower layers randomly: they should fit in
/// the page cache for full speed.
///
/// # Errors
/// [`Error::Usage`] when `n > 48`, `this` or a needed lower layer has the wrong length, or a
/// needed lower layer is not given. Nothing in the stored values (any byte is accepted) makes
/// this function fail or panic: bad values are mismatches.
pub(crate) fn verify_values(rules: Ruleset, n: u32, this: &[i8], lower: &[&[i8]], progress: &dyn Progress) -> Result<LayerReport> {
    check_given(n, this, lower)?;
    let size = layer_size(n);
    let start = Instant::now();
    let ranges: Vec<Range<u64>> = chunks(n, CHUNK).collect();
    let total = ranges
        .into_par_iter()
        .map(|r| {
            let len = r.end - r.start;
            let mut acc = Tally::default();
            if progress.cancelled() {
                return acc;
            }
            let mut batch = [(0u64, Plan::EMPTY); BATCH];
            // `n <= 48` was checked, so the walker exists; were it ever to fail, the count of
            // checked positions below would expose it.
            let mut walker = LayerWalker::new(n, r).into_iter().flatten().peekable();
            while walker.peek().is_some() {
                // Plan a batch (moves, child ranks), then read the children's values in a short
                // loop: the batch's cache misses overlap instead of being waited for one by one
                // between move generations (about 1.4x faster on layers that exceed the cache).
                let mut filled = 0;
                for (i, board) in walker.by_ref().take(BATCH) {
                    batch[filled] = (i, plan(rules, n, &board));
                    filled += 1;
                }
                for (i, p) in &batch[..filled] {
                    acc.checked += 1;
                    let stored = this[*i as usize];
                    match p.derive(this, lower) {
                        Ok(derived) => {
                            if derived != i16::from(stored) || i64::from(stored).unsigned_abs() > u64::from(n) {
                                acc.mismatches += 1;
                                if acc.first.len() < MISMATCHES_KEPT {
                                    acc.first.push(Mismatch { index: *i, board: p.board, stored, derived });
                                }
                            }
                        }
                        Err(m) => {
                            acc.unreadable.get_or_insert(m);
                        }
                    }
                }
            }
            progress.advance(len);
            acc
        })
        .reduce(Tally::default, Tally::merge);
    if progress.cancelled() {
        return Err(Error::Interrupted);
    }
    if let Some(m) = total.unreadable {
        return Err(Error::Usage(format!("layer {n} has a move into layer {m}, whose values were not given (a capture of {} stones)", n - m)));
    }
    if total.checked != size {
        return Err(Error::Usage(format!("layer {n}: walked {} of {size} positions", total.checked)));
    }
    Ok(LayerReport { layer: n, checked: total.checked, mismatches: total.mismatches, first_mismatches: total.first, seconds: start.elapsed().as_secs_f64() })
}

/// That layer `n` exists, and `this` and every layer it needs in `lower` have their lengths.
///
/// # Errors
/// [`Error::Usage`] naming the layer that is wrong.
pub(super) fn check_given(n: u32, this: &[i8], lower: &[&[i8]]) -> Result<()> {
    if n > MAX_STONES {
        return Err(Error::Usage(format!("layer {n} does not exist: at most {MAX_STONES} stones")));
    }
    let size = layer_size(n);
    if this.len() as u64 != size {
        return Err(Error::Usage(format!("layer {n}: {} values given, the layer has {size} positions", this.len())));
    }
    for m in layers_needed(n) {
        match lower.get(m as usize) {
            Some(l) if l.len() as u64 == layer_size(m) => {}
            Some(l) => {
                return Err(Error::Usage(format!("layer {m} (needed by layer {n}): {} values given, the layer has {} positions", l.len(), layer_size(m))))
            }
            None => return Err(Error::Usage(format!("layer {m} is needed to re-derive layer {n} but was not given"))),
        }
    }
    Ok(())
}

/// Per-chunk counts of [`verify_values`].
#[derive(Default)]
struct Tally {
    checked: u64,
    mismatches: u64,
    first: Vec<Mismatch>,
    unreadable: Option<u32>,
}

impl Tally {
    fn merge(mut a: Tally, b: Tally) -> Tally {
        a.checked += b.checked;
        a.mismatches += b.mismatches;
        a.first.extend(b.first);
        a.first.sort_by_key(|m| m.index);
        a.first.truncate(MISMATCHES_KEPT);
        a.unreadable = match (a.unreadable, b.unreadable) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        a
    }
}

/// Positions planned ahead in [`verify_values`] before their children's values are read.
pub(super) const BATCH: usize = 16;

/// One move of a [`Plan`]: a child to read (`layer`, `rank`, stones captured) or an ending value.
#[derive(Clone, Copy)]
pub(super) enum Step {
    Child { layer: u32, rank: u64, captured: u8 },
    End(i16),
}

/// A position's moves, resolved down to the child values to read.
#[derive(Clone, Copy)]
pub(super) struct Plan {
    board: Board,
    /// The ending value when the position has no legal move.
    pub(super) ending: Option<i16>,
    len: u8,
    steps: [Step; 6],
}

impl Plan {
    pub(super) const EMPTY: Plan = Plan { board: [0; PITS], ending: None, len: 0, steps: [Step::End(0); 6] };

    /// The moves (none when the position has no legal move).
    #[inline]
    pub(super) fn steps(&self) -> &[Step] {
        &self.steps[..self.len as usize]
    }

    /// A plan of `board` with no move yet.
    #[inline]
    pub(super) fn of(board: &Board) -> Plan {
        Plan { board: *board, ..Plan::EMPTY }
    }

    /// Adds a move (at most six).
    #[inline]
    pub(super) fn push(&mut self, step: Step) {
        self.steps[self.len as usize] = step;
        self.len += 1;
    }

    /// The derived value: the best move's `captured - v(child)` (or ending value), in `i16` so
    /// garbage child values cannot overflow. `Err(m)` when a child lies in layer `m` and no value
    /// of it was given.
    #[inline]
    pub(super) fn derive(&self, this: &[i8], lower: &[&[i8]]) -> std::result::Result<i16, u32> {
        if let Some(e) = self.ending {
            return Ok(e);
        }
        let mut best = i16::MIN;
        for step in &self.steps[..self.len as usize] {
            let v = match *step {
                Step::End(v) => v,
                Step::Child { layer, rank, captured } => {
                    let values = if captured == 0 { this } else { lower.get(layer as usize).copied().unwrap_or(&[]) };
                    match values.get(rank as usize) {
                        Some(&v) => i16::from(captured) - i16::from(v),
                        None => return Err(layer),
                    }
                }
            };
            best = best.max(v);
        }
        Ok(best)
    }
}

/// Generates the moves of `board` (layer `n`) and ranks the children.
#[inline]
pub(super) fn plan(rules: Ruleset, n: u32, board: &Board) -> Plan {
    plan_into(rules, n, board, |_| true)
}

/// Like [`plan`], keeping only the moves into the layers `keep` accepts (layer `n` standing for
/// the same-layer children and for the values the game's end fixes); the others are not ranked.
/// The ending value of a position with no legal move is always kept.
#[inline]
pub(super) fn plan_into(rules: Ruleset, n: u32, board: &Board, keep: impl Fn(u32) -> bool) -> Plan {
    let moves = rules.moves(board);
    let mut p = Plan::of(board);
    if let Some(e) = moves.ending() {
        p.ending = Some(i16::from(e));
        return p;
    }
    for m in moves.as_slice() {
        match m.outcome {
            Move::End { value } if keep(n) => p.push(Step::End(i16::from(value))),
            Move::Child { captured, child } if keep(n - u32::from(captured)) => {
                p.push(Step::Child { layer: n - u32::from(captured), rank: rank_unchecked(&child), captured });
            }
            _ => {}
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_values_do_not_panic() {
        // Layer 2 full of -128: every derived value is far from every stored one.
        let l0 = vec![0i8; 1];
        let this = vec![i8::MIN; layer_size(2) as usize];
        let r = verify_values(Ruleset::Awari, 2, &this, &[&l0], &crate::progress::NoProgress).unwrap();
        assert_eq!(r.checked, layer_size(2));
        assert_eq!(r.mismatches, layer_size(2));
        assert_eq!(r.first_mismatches.len(), MISMATCHES_KEPT);
        assert!(r.first_mismatches.windows(2).all(|w| w[0].index < w[1].index));
        assert_eq!(r.first_mismatches[0].index, 0);
        // A missing needed layer is an error, not a panic.
        assert!(verify_values(Ruleset::Awari, 3, &vec![0; layer_size(3) as usize], &[], &crate::progress::NoProgress).is_err());
    }
}
