//! The verifier: re-derives stored values from their children with the forward move generator.
//! (The published facts are checked by [`crate::facts`].)
//!
//! This code shares nothing with the builder's propagation: for every position it generates the
//! legal moves, reads each child's stored value (same layer or a smaller one) and checks that the
//! stored value is the best move's value, `max(captured - v(child), ending values)`. Any single
//! altered byte breaks this equation at its own position, so it is always found.
//!
//! What this check cannot see: values that are consistent with their children yet wrong as a
//! whole (a cycle of positions all claiming a win that can never be forced). Only a wrong solver
//! could produce those; the solver is cross-checked against a plain forward fixed-point iteration
//! on every position of layers 0..10 under every ruleset in the test suite. The facts of
//! [`crate::facts::check_facts`] (published values) are an independent check of exactly that kind of error.
//!
//! Entry points:
//! - [`derive_value`]: one position, used by the builder's spot check (trusted inputs);
//! - [`verify_layer`] / [`verify_values`]: every position of a layer, in parallel, on values read
//!   from files (untrusted inputs: nothing here panics on odd bytes);
//! - `verify_bounds` / `verify_dtc`: every forced-capture bounds entry, every depth to capture of
//!   a layer against its children (through [`verify_directory`]);
//! - [`crate::facts::check_facts`]: the published facts against whatever layers are present.

mod directory;
mod report;

pub use directory::{verify_directory, NoObserver, VerifyObserver, VerifyOptions};
pub use report::{BoundsEntry, BoundsStatus, DirectoryReport, DtcEntry, DtcStatus, LayerEntry, LayerStatus, ManifestCheck, Outcome};

use std::ops::Range;
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use crate::bounds::{Bounds, Codec};
use crate::dtc::{BadDtc, DtcPayload};
use crate::error::{Damage, Error, Result};
use crate::index::{chunks, layer_size, rank_unchecked, LayerWalker, MAX_STONES};
use crate::progress::Progress;
use crate::rules::{Board, Outcome as Move, Ruleset, PITS};
use crate::storage::Layer;

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

/// The depth to capture of `board` (of value `value`) derived from its moves by the definition
/// of [`crate::dtc`], evaluated once: `None` for value 0, or when no depth follows (no move
/// keeps the value, or a value-keeping move's child has no depth).
///
/// `value_of(m, child)` returns the stored value of `child`, a board of layer `m` (the
/// position's own layer included); `dtc_of(child)` the stored depth of a child in the position's
/// own layer. Either may return the caller's error.
///
/// Cost: one move generation, one `value_of` per move, one `dtc_of` per value-keeping move
/// that captures nothing.
///
/// # Errors
/// The first error a closure returns.
#[inline]
pub(crate) fn derive_dtc<E>(
    rules: Ruleset,
    board: &Board,
    value: i8,
    mut value_of: impl FnMut(u32, &Board) -> std::result::Result<i8, E>,
    mut dtc_of: impl FnMut(&Board) -> std::result::Result<Option<u16>, E>,
) -> std::result::Result<Option<u16>, E> {
    if value == 0 {
        return Ok(None);
    }
    let n = crate::rules::stones(board);
    let moves = rules.moves(board);
    if moves.ending().is_some() {
        return Ok(Some(0));
    }
    let mut best: Option<u16> = None;
    for m in moves.as_slice() {
        let depth = match m.outcome {
            Move::End { value: e } => (e == value).then_some(0),
            Move::Child { captured, child } => {
                let w = value_of(n - u32::from(captured), &child)?;
                if captured as i8 - w != value {
                    continue;
                }
                if captured > 0 {
                    Some(0)
                } else {
                    match dtc_of(&child)? {
                        Some(d) => Some(d),
                        None => return Ok(None),
                    }
                }
            }
        };
        if let Some(d) = depth {
            best = Some(match best {
                None => d,
                Some(b) if value > 0 => b.min(d),
                Some(b) => b.max(d),
            });
        }
    }
    // A garbage depth of 65535 at a child gives no depth rather than an overflow.
    Ok(best.and_then(|b| b.checked_add(1)))
}

/// The forced-capture bounds of `board` derived from its children's stored bounds: the two
/// equations of [`crate::bounds`] evaluated once.
///
/// `get(m, child)` returns the stored bounds of `child`, a board of layer `m` (the position's
/// own layer included, for moves that capture nothing), or the caller's error. Positions with
/// no legal move get their ruleset's ending split.
///
/// Cost: one move generation and one `get` per move.
///
/// # Errors
/// The first error `get` returns.
#[inline]
pub(crate) fn derive_bounds<E>(
    rules: Ruleset,
    board: &Board,
    mut get: impl FnMut(u32, &Board) -> std::result::Result<Bounds, E>,
) -> std::result::Result<Bounds, E> {
    let n = crate::rules::stones(board) as i32;
    let share = |value: i8| ((n + i32::from(value)) / 2) as u8;
    let moves = rules.moves(board);
    if let Some(ending) = moves.ending() {
        return Ok(Bounds { mover: share(ending), opponent: n as u8 - share(ending) });
    }
    let (mut mover, mut opponent) = (0u8, u8::MAX);
    for m in moves.as_slice() {
        let (a, b) = match m.outcome {
            Move::End { value } => (share(value), n as u8 - share(value)),
            Move::Child { captured, child } => {
                let g = get(n as u32 - u32::from(captured), &child)?;
                (captured.saturating_add(g.opponent), g.mover)
            }
        };
        mover = mover.max(a);
        opponent = opponent.min(b);
    }
    Ok(Bounds { mover, opponent })
}

/// One position whose stored bounds are wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BoundsMismatch {
    /// Index of the position in its layer.
    pub index: u64,
    /// The board, mover-first.
    pub board: Board,
    /// The stored bounds (mover, opponent); `None` when the entry holds no valid code.
    pub stored: Option<(u8, u8)>,
    /// What its moves give from the children's stored bounds; `None` when a child's entry
    /// holds no valid code.
    pub derived: Option<(u8, u8)>,
    /// The position's value.
    pub value: i8,
    /// Whether the stored bounds contradict the value (`2 gM - n <= v <= n - 2 gN`).
    pub contradicts_value: bool,
}

/// The result of checking every bounds entry of one layer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoundsReport {
    /// Layer number.
    pub layer: u32,
    /// Positions checked: the whole layer.
    pub checked: u64,
    /// Positions whose bounds break an equation or contradict the value.
    pub mismatches: u64,
    /// The first [`MISMATCHES_KEPT`] of them in index order.
    pub first_mismatches: Vec<BoundsMismatch>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl BoundsReport {
    /// True when every entry satisfies its equations and agrees with its value.
    pub fn is_ok(&self) -> bool {
        self.mismatches == 0
    }
}

/// Checks every forced-capture bounds entry of layer `n`: that it equals what the two equations
/// give from its children's stored bounds, and that it agrees with the position's value.
///
/// Parameters: `values`, layer `n`'s values; `this`, its bounds payload; `lower[m]`, the bounds
/// payload of layer `m` for every `m` in [`layers_needed`]`(n)`; `progress`, told of every
/// position checked.
///
/// The equations hold for every fixed point, not only the least one the builder computes; the
/// builder's result is the least by construction (and compared with a plain iteration in the
/// tests). Bad codes anywhere are mismatches, never a panic.
///
/// Cost: one move generation and up to six random reads of child bounds per position, in
/// parallel over index chunks.
///
/// # Errors
/// [`Error::Usage`] when `n > 48` or a payload or the values have the wrong length, or a needed
/// lower layer is not given; [`Error::Interrupted`].
pub(crate) fn verify_bounds(rules: Ruleset, n: u32, values: &[i8], this: &[u8], lower: &[&[u8]], progress: &dyn Progress) -> Result<BoundsReport> {
    if n > MAX_STONES {
        return Err(Error::Usage(format!("layer {n} does not exist: at most {MAX_STONES} stones")));
    }
    let size = layer_size(n);
    if values.len() as u64 != size || this.len() as u64 != crate::bounds::payload_len(n) {
        return Err(Error::Usage(format!("layer {n}: values or bounds of the wrong length")));
    }
    for m in layers_needed(n) {
        if lower.get(m as usize).map(|l| l.len() as u64) != Some(crate::bounds::payload_len(m)) {
            return Err(Error::Usage(format!("the bounds of layer {m} are needed to check layer {n}'s but were not given")));
        }
    }
    let codecs: Vec<Codec> = (0..=n).map(Codec::new).collect();
    let get = |m: u32, child: &Board| -> std::result::Result<Bounds, ()> {
        let payload = if m == n { this } else { lower.get(m as usize).copied().ok_or(())? };
        let j = rank_unchecked(child);
        if j >= layer_size(m) {
            return Err(());
        }
        codecs[m as usize].get(payload, j).ok_or(())
    };
    let start = Instant::now();
    let ranges: Vec<Range<u64>> = chunks(n, CHUNK).collect();
    let (checked, mismatches, first) = ranges
        .into_par_iter()
        .map(|r| {
            let len = r.end - r.start;
            let mut acc = (0u64, 0u64, Vec::new());
            if progress.cancelled() {
                return acc;
            }
            for (i, board) in LayerWalker::new(n, r).into_iter().flatten() {
                acc.0 += 1;
                let stored = codecs[n as usize].get(this, i);
                let derived = derive_bounds(rules, &board, get).ok();
                let value = values[i as usize];
                let contradicts_value = stored.is_some_and(|b| !b.consistent_with(n, value));
                if stored.is_none() || stored != derived || contradicts_value {
                    acc.1 += 1;
                    if acc.2.len() < MISMATCHES_KEPT {
                        let pair = |b: Bounds| (b.mover, b.opponent);
                        acc.2.push(BoundsMismatch { index: i, board, stored: stored.map(pair), derived: derived.map(pair), value, contradicts_value });
                    }
                }
            }
            progress.advance(len);
            acc
        })
        .reduce(|| (0, 0, Vec::new()), |a, b| merge_tallies(a, b, |m: &BoundsMismatch| m.index));
    if progress.cancelled() {
        return Err(Error::Interrupted);
    }
    if checked != size {
        return Err(Error::Usage(format!("layer {n}: walked {checked} of {size} positions")));
    }
    Ok(BoundsReport { layer: n, checked, mismatches, first_mismatches: first, seconds: start.elapsed().as_secs_f64() })
}

/// Merges two chunks' tallies of a check (positions checked, mismatches, the first mismatches
/// found): the counts add up and the [`MISMATCHES_KEPT`] mismatches of least index are kept.
fn merge_tallies<M>(mut a: (u64, u64, Vec<M>), b: (u64, u64, Vec<M>), index: impl Fn(&M) -> u64) -> (u64, u64, Vec<M>) {
    a.0 += b.0;
    a.1 += b.1;
    a.2.extend(b.2);
    a.2.sort_by_key(|m| index(m));
    a.2.truncate(MISMATCHES_KEPT);
    a
}

/// One position whose stored depth to capture is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DtcMismatch {
    /// Index of the position in its layer.
    pub index: u64,
    /// The board, mover-first.
    pub board: Board,
    /// The stored depth (`None`: none, for a position of value 0).
    pub stored: Option<u16>,
    /// What the definition gives from its moves (the children's stored values, and the stored
    /// depths of its same-layer children); `None`: no depth follows.
    pub derived: Option<u16>,
    /// The position's value.
    pub value: i8,
}

/// The result of checking every depth to capture of one layer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DtcReport {
    /// Layer number.
    pub layer: u32,
    /// Positions checked: the whole layer.
    pub checked: u64,
    /// Positions whose stored depth differs from what the definition gives over their moves.
    pub mismatches: u64,
    /// The first [`MISMATCHES_KEPT`] of them in index order.
    pub first_mismatches: Vec<DtcMismatch>,
    /// The greatest depth stored (`None`: every position of the layer has value 0).
    pub greatest_depth: Option<u16>,
    /// Depths of 254 or more (stored in the table of escaped depths).
    pub escaped: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl DtcReport {
    /// True when every depth follows from the position's moves.
    pub fn is_ok(&self) -> bool {
        self.mismatches == 0
    }
}

/// The damage of a dtc file (at `path`) whose payload fails [`crate::dtc::tally`].
pub(crate) fn dtc_damage(path: &Path, fault: BadDtc) -> Error {
    match fault {
        BadDtc::ContradictsValue { index, dtc, value } => Error::corrupt(path, Damage::DtcContradictsValue { index, dtc, value }),
        e => Error::corrupt(path, Damage::BadDtc { what: e.to_string() }),
    }
}

/// Checks every depth to capture of layer `n`: first the payload against the values
/// ([`crate::dtc::tally`]: a depth exactly where the value is not 0, a well-formed table of
/// escaped depths), then every position's stored depth against the definition of [`crate::dtc`]
/// evaluated over its moves ([`derive_dtc`]) from its children's stored values and its
/// same-layer children's stored depths.
///
/// Parameters: `values`, layer `n`'s values; `this`, its dtc payload; `lower[m]`, the values of
/// layer `m` for every `m` in [`layers_needed`]`(n)` (the depths of smaller layers are not read:
/// a capture ends the count); `path`, the dtc file's (named in a damage); `progress`, told of
/// every position checked.
///
/// The equations have only one solution in finite numbers, so a table that satisfies them at
/// every position is the right one (given the values). Odd bytes anywhere are mismatches or
/// damage, never a panic.
///
/// Cost: one pass over the values and the payload, then one move generation, up to six random
/// reads of child values and up to six of same-layer child depths per position, in parallel
/// over index chunks.
///
/// # Errors
/// [`Error::Corrupt`] ([`Damage::DtcContradictsValue`], [`Damage::BadDtc`]) naming `path` when
/// the payload fails the tally; [`Error::Usage`] when `n > 48`, the values or the payload have
/// the wrong length, or a needed lower layer is not given; [`Error::Interrupted`].
pub(crate) fn verify_dtc(rules: Ruleset, n: u32, values: &[i8], this: &DtcPayload, lower: &[&[i8]], path: &Path, progress: &dyn Progress) -> Result<DtcReport> {
    if n > MAX_STONES {
        return Err(Error::Usage(format!("layer {n} does not exist: at most {MAX_STONES} stones")));
    }
    let size = layer_size(n);
    if values.len() as u64 != size || this.bytes().len() as u64 != size {
        return Err(Error::Usage(format!("layer {n}: values or depths to capture of the wrong length")));
    }
    for m in layers_needed(n) {
        if lower.get(m as usize).map(|l| l.len() as u64) != Some(layer_size(m)) {
            return Err(Error::Usage(format!("the values of layer {m} are needed to check layer {n}'s depths to capture but were not given")));
        }
    }
    let start = Instant::now();
    let tally = crate::dtc::tally(values, this).map_err(|e| dtc_damage(path, e))?;
    let greatest_depth = tally.histogram.iter().rposition(|&c| c > 0).map(|d| d as u16);
    let value_of = |m: u32, child: &Board| -> std::result::Result<i8, ()> {
        let layer = if m == n { values } else { lower.get(m as usize).copied().ok_or(())? };
        layer.get(rank_unchecked(child) as usize).copied().ok_or(())
    };
    let dtc_of = |child: &Board| -> std::result::Result<Option<u16>, ()> {
        let j = rank_unchecked(child);
        if j >= size {
            return Err(());
        }
        this.get(j).map_err(|_| ())
    };
    let ranges: Vec<Range<u64>> = chunks(n, CHUNK).collect();
    let (checked, mismatches, first) = ranges
        .into_par_iter()
        .map(|r| {
            let len = r.end - r.start;
            let mut acc = (0u64, 0u64, Vec::new());
            if progress.cancelled() {
                return acc;
            }
            for (i, board) in LayerWalker::new(n, r).into_iter().flatten() {
                acc.0 += 1;
                let value = values[i as usize];
                let stored = this.get(i);
                let derived = derive_dtc(rules, &board, value, value_of, dtc_of);
                let (stored, derived) = match (stored, derived) {
                    (Ok(s), Ok(d)) if s == d => continue,
                    (s, d) => (s.ok().flatten(), d.ok().flatten()),
                };
                acc.1 += 1;
                if acc.2.len() < MISMATCHES_KEPT {
                    acc.2.push(DtcMismatch { index: i, board, stored, derived, value });
                }
            }
            progress.advance(len);
            acc
        })
        .reduce(|| (0, 0, Vec::new()), |a, b| merge_tallies(a, b, |m: &DtcMismatch| m.index));
    if progress.cancelled() {
        return Err(Error::Interrupted);
    }
    if checked != size {
        return Err(Error::Usage(format!("layer {n}: walked {checked} of {size} positions")));
    }
    Ok(DtcReport { layer: n, checked, mismatches, first_mismatches: first, greatest_depth, escaped: tally.escaped, seconds: start.elapsed().as_secs_f64() })
}

// ---------------------------------------------------------------------------------------------
// Whole-layer verification
// ---------------------------------------------------------------------------------------------

/// How many mismatches a [`LayerReport`] keeps (the ones with the smallest indices).
pub const MISMATCHES_KEPT: usize = 10;

/// Positions per parallel work item of [`verify_values`].
const CHUNK: u64 = 1 << 16;

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

/// The layers whose values re-deriving layer `n` reads besides its own: `0..=n-2`.
///
/// A capture takes whole pits holding 2 or 3 stones (the spare options leave out a whole pit), so
/// a move captures either nothing or at least 2 stones under every ruleset: layer `n - 1` is never
/// reached from layer `n`. A damaged or missing layer `n - 1` therefore does not prevent
/// verifying layer `n`.
pub(crate) fn layers_needed(n: u32) -> Range<u32> {
    0..n.saturating_sub(1)
}

/// Re-derives every position of `this` (layer `n`) from its children: see [`verify_values`].
///
/// # Errors
/// [`Error::Usage`] when `this` is not layer `n`, and as [`verify_values`].
pub fn verify_layer(rules: Ruleset, n: u32, this: &Layer, lower: &[&[i8]], progress: &dyn Progress) -> Result<LayerReport> {
    if this.stones() != n {
        return Err(Error::Usage(format!("{} holds layer {}, not layer {n}", this.path().display(), this.stones())));
    }
    verify_values(rules, n, this.values(), lower, progress)
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
pub fn verify_values(rules: Ruleset, n: u32, this: &[i8], lower: &[&[i8]], progress: &dyn Progress) -> Result<LayerReport> {
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
const BATCH: usize = 16;

/// One move of a [`Plan`]: a child to read (`layer`, `rank`, stones captured) or an ending value.
#[derive(Clone, Copy)]
enum Step {
    Child { layer: u32, rank: u64, captured: u8 },
    End(i16),
}

/// A position's moves, resolved down to the child values to read.
#[derive(Clone, Copy)]
struct Plan {
    board: Board,
    /// The ending value when the position has no legal move.
    ending: Option<i16>,
    len: u8,
    steps: [Step; 6],
}

impl Plan {
    const EMPTY: Plan = Plan { board: [0; PITS], ending: None, len: 0, steps: [Step::End(0); 6] };

    /// The derived value: the best move's `captured - v(child)` (or ending value), in `i16` so
    /// garbage child values cannot overflow. `Err(m)` when a child lies in layer `m` and no value
    /// of it was given.
    #[inline]
    fn derive(&self, this: &[i8], lower: &[&[i8]]) -> std::result::Result<i16, u32> {
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
fn plan(rules: Ruleset, n: u32, board: &Board) -> Plan {
    let moves = rules.moves(board);
    let mut p = Plan { board: *board, ..Plan::EMPTY };
    if let Some(e) = moves.ending() {
        p.ending = Some(i16::from(e));
        return p;
    }
    for m in moves.as_slice() {
        p.steps[p.len as usize] = match m.outcome {
            Move::End { value } => Step::End(i16::from(value)),
            Move::Child { captured, child } => {
                let layer = n - u32::from(captured);
                let rank = rank_unchecked(&child);
                Step::Child { layer, rank, captured }
            }
        };
        p.len += 1;
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
