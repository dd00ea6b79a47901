//! Threshold-descending retrograde analysis of one layer (see `ALGORITHM.md` of the shared
//! specification).
//!
//! For `t = n, n-1, ..., 1` two sets grow: WIN (`v >= t`) and LOSS (`v <= -t`). A position that
//! first enters WIN at threshold `t` is worth exactly `t`, one that first enters LOSS exactly
//! `-t`; positions that never enter are worth 0 (neither side can force better than endless play).
//!
//! State per position, two bytes:
//! - the value byte (the layer file's own payload, written in place through the memory map):
//!   the best exit value (`NO_EXIT` when none) until the position is resolved, then its value;
//! - the meta byte: a resolved flag and the number of same-layer moves whose child is not yet in
//!   WIN (`pending`, at most 6).
//!
//! Parallelism: each threshold's seed scan runs over index chunks in parallel; every position a
//! thread resolves is propagated depth-first from that thread's own stack. Resolution is an atomic
//! `fetch_or` of the resolved flag, so each position is resolved exactly once, and within one
//! threshold every resolved position gets the same `±t` whatever the order: the result does not
//! depend on the number of threads or on scheduling.

use std::sync::atomic::{AtomicI8, AtomicU8, Ordering::Relaxed};

use rayon::prelude::*;

use crate::index::{chunks, in_some_layer, layer_size, rank_unchecked, unrank_unchecked, LayerWalker};
use crate::rules::{for_each_predecessor, Board, Outcome, Ruleset};

const RESOLVED: u8 = 0x80;
const PENDING: u8 = 0x07;
/// Best-exit marker for "no move leaves the layer" (below every real value, -48).
const NO_EXIT: i8 = i8::MIN;
/// Positions per parallel work item.
const CHUNK: u64 = 1 << 15;

/// Receives progress of a layer's computation, in work units (see [`work_units`]).
pub trait Progress: Sync {
    /// A new phase starts (for display only).
    fn phase(&self, _name: &str) {}
    /// `units` more work units are done.
    fn advance(&self, _units: u64) {}
}

/// A [`Progress`] that ignores everything.
pub struct NoProgress;
impl Progress for NoProgress {}

/// Relative cost of the exits pass against one threshold scan, for progress and ETA.
const EXIT_WEIGHT: u64 = 4;

/// Total work units of solving layer `n`: the exits pass, `n` threshold scans and the final pass.
pub fn work_units(n: u32) -> u64 {
    layer_size(n) * (EXIT_WEIGHT + u64::from(n) + 1)
}

/// Bytes of working memory [`solve_layer`] allocates besides its output: the meta bytes.
pub fn working_memory(n: u32) -> u64 {
    layer_size(n)
}

/// Views a byte buffer as atomics.
fn as_atomic_i8(b: &mut [u8]) -> &[AtomicI8] {
    // SAFETY: AtomicI8 has the same size, alignment and bit validity as u8/i8, and the exclusive
    // borrow guarantees no non-atomic access happens while the atomic view lives.
    unsafe { &*(b as *mut [u8] as *const [AtomicI8]) }
}
fn as_atomic_u8(b: &mut [u8]) -> &[AtomicU8] {
    // SAFETY: as above, for AtomicU8.
    unsafe { &*(b as *mut [u8] as *const [AtomicU8]) }
}

struct State<'a> {
    rules: Ruleset,
    n: u32,
    values: &'a [AtomicI8],
    meta: &'a [AtomicU8],
}

impl State<'_> {
    /// Marks position `i` resolved with value `v`; false when another thread got there first.
    #[inline]
    fn resolve(&self, i: usize, v: i8) -> bool {
        if self.meta[i].fetch_or(RESOLVED, Relaxed) & RESOLVED != 0 {
            return false;
        }
        self.values[i].store(v, Relaxed);
        true
    }

    /// Propagates every position on `stack` (resolved at threshold `t`) to its same-layer
    /// predecessors, depth-first, until the stack is empty.
    fn propagate(&self, t: i8, stack: &mut Vec<(Board, i8)>) {
        while let Some((board, v)) = stack.pop() {
            for_each_predecessor(self.rules, &board, |q, _pit| {
                if !in_some_layer(q) {
                    return;
                }
                let j = rank_unchecked(q) as usize;
                if v < 0 {
                    // q can move to a position lost by at least t: q wins at least t.
                    if self.resolve(j, t) {
                        stack.push((*q, t));
                    }
                } else {
                    // One more of q's same-layer moves is worth -t or less.
                    let prev = self.meta[j].fetch_sub(1, Relaxed);
                    if prev & RESOLVED == 0
                        && prev & PENDING == 1
                        && self.values[j].load(Relaxed) <= -t
                        && self.resolve(j, -t)
                    {
                        stack.push((*q, -t));
                    }
                }
            });
        }
    }
}

/// Computes the exact value of every position of layer `n` under `rules`.
///
/// - `lower[m]` must hold the finished values of layer `m` for every `m < n` (in index order);
/// - `out` receives one value per position of layer `n`, in index order; its length must be
///   `layer_size(n)`. Its previous contents are ignored.
///
/// Runs on the current rayon thread pool. Cost: one forward pass (every move of every position,
/// one random read of a lower layer per capture), one predecessor pass over the positions that get
/// a non-zero value, `n` sequential scans of two bytes per position; memory: `out` plus
/// [`working_memory`]`(n)` bytes.
///
/// # Panics
/// When `n > 48`, `out` has the wrong length or a lower layer is missing or has the wrong length
/// (programming errors: callers validate files before calling).
pub fn solve_layer(rules: Ruleset, n: u32, lower: &[&[i8]], out: &mut [u8], progress: &dyn Progress) {
    let size = layer_size(n);
    assert!(n <= crate::index::MAX_STONES, "layer {n} does not exist");
    assert_eq!(out.len() as u64, size, "output buffer of layer {n} has the wrong length");
    for m in 0..n {
        assert_eq!(lower[m as usize].len() as u64, layer_size(m), "lower layer {m} has the wrong length");
    }
    let mut meta_buf = vec![0u8; size as usize];
    let state = State { rules, n, values: as_atomic_i8(out), meta: as_atomic_u8(&mut meta_buf) };
    let ranges: Vec<_> = chunks(n, CHUNK).collect();

    // 1. Exits pass: best exit and number of same-layer moves of every position.
    progress.phase("exits");
    ranges.par_iter().for_each(|r| {
        let walker = LayerWalker::new(n, r.clone()).expect("n <= 48 was checked");
        for (i, b) in walker {
            let (best, pending) = exits(&state, lower, &b);
            state.values[i as usize].store(best, Relaxed);
            state.meta[i as usize].store(pending, Relaxed);
        }
        progress.advance((r.end - r.start) * EXIT_WEIGHT);
    });

    // 2. Thresholds from n down to 1: seed, then propagate.
    for t in (1..=n as i8).rev() {
        progress.phase(&format!("threshold {t}"));
        ranges.par_iter().for_each(|r| {
            let mut stack: Vec<(Board, i8)> = Vec::new();
            for i in r.start as usize..r.end as usize {
                let m = state.meta[i].load(Relaxed);
                if m & RESOLVED != 0 {
                    continue;
                }
                let best = state.values[i].load(Relaxed);
                let v = if best >= t {
                    t
                } else if m & PENDING == 0 && best <= -t {
                    -t
                } else {
                    continue;
                };
                if state.resolve(i, v) {
                    stack.push((unrank_unchecked(n, i as u64), v));
                    state.propagate(t, &mut stack);
                }
            }
            progress.advance(r.end - r.start);
        });
    }

    // 3. Everything still unresolved is worth 0 (endless play).
    progress.phase("draws");
    ranges.par_iter().for_each(|r| {
        for i in r.start as usize..r.end as usize {
            if state.meta[i].load(Relaxed) & RESOLVED == 0 {
                state.values[i].store(0, Relaxed);
            }
        }
        progress.advance(r.end - r.start);
    });
}

/// The best exit value (captures into smaller layers and game ends) of `board` and the number of
/// its moves that stay in the layer.
#[inline]
fn exits(state: &State<'_>, lower: &[&[i8]], board: &Board) -> (i8, u8) {
    let moves = state.rules.moves(board);
    if let Some(ending) = moves.ending() {
        return (ending, 0);
    }
    let mut best = NO_EXIT;
    let mut pending = 0u8;
    for m in moves.as_slice() {
        match m.outcome {
            Outcome::End { value } => best = best.max(value),
            Outcome::Child { captured: 0, .. } => pending += 1,
            Outcome::Child { captured, child } => {
                let layer = lower[(state.n - u32::from(captured)) as usize];
                let v = layer[rank_unchecked(&child) as usize];
                best = best.max(captured as i8 - v);
            }
        }
    }
    (best, pending)
}
