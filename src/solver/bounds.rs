//! Forced-capture bounds of one layer ([`crate::bounds`]): the least fixed point of
//!
//! ```text
//! gM(p) = max over moves m of ( captured(m) + gN(child(m)) )
//! gN(p) = min over moves m of gM(child(m))
//! ```
//!
//! by the same counter-driven propagation as the values ([`super::state`]), over descending
//! thresholds. For `t = n, ..., 1` two sets grow: `A` (`gM >= t`) and `B` (`gN >= t`). Within a
//! layer no move captures, so the equations are plain max and min, and the least solution
//! at threshold `t` is the least fixed point of
//!
//! ```text
//! p in A  iff  an exit gives the mover >= t, or a same-layer move leads into B
//! p in B  iff  every exit gives the opponent >= t, and every same-layer move leads into A
//! ```
//!
//! (an exit: a capture into a smaller layer, whose bounds are known, or a move ending the game).
//! A position enters `A` first at threshold `gM(p)` and `B` first at `gN(p)`; one never entered
//! has bound 0. The sets only grow as `t` falls, so one counter per position (same-layer moves
//! whose child is not yet in `A`) serves every threshold, as in the values' solver.
//!
//! State per position: one `u32`:
//! - bits 0..7: the best exit share of the mover (0 when there is none) until the position
//!   enters `A`, then `gM`;
//! - bits 8..15: the opponent's least exit share (`n` when there is none) until it enters `B`,
//!   then `gN`;
//! - bits 16..18: the same-layer moves whose child is not yet in `A`;
//! - bit 30: in `A`; bit 31: in `B`.
//!
//! Each position enters each set once (a compare-and-swap on its flag), and within a threshold
//! every entry gets the same `t` whatever the order, so the result does not depend on the number
//! of threads or on scheduling.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

use rayon::prelude::*;

use super::forward::{forward, Forward};
use super::state::{for_each_ranked_predecessor, huge_zeroed, prefetch, split, BATCH, CHUNK};
use crate::bounds::{self, Bounds, Codec};
use crate::error::{Error, MemoryLimit, Result};
use crate::index::{layer_size, rank_unchecked, unrank_unchecked};
use crate::progress::Progress;
use crate::rules::{Board, Outcome, Ruleset};

const IN_A: u32 = 1 << 30;
const IN_B: u32 = 1 << 31;
const PENDING_SHIFT: u32 = 16;
const PENDING_ONE: u32 = 1 << PENDING_SHIFT;
const PENDING: u32 = 0x7 << PENDING_SHIFT;

/// Work units per position of the exits pass, per position scanned by a threshold, and per set
/// entry propagated.
const EXIT_UNITS: u64 = 8;
const ENTRY_UNITS: u64 = 16;
const SCAN_POSITIONS_PER_UNIT: u64 = 8;

/// Bytes of working memory [`solve_bounds`] allocates besides its output: four per position.
pub(crate) fn bounds_working_memory(n: u32) -> u64 {
    4 * layer_size(n)
}

/// Work units of [`solve_bounds`] on layer `n`, for progress: an estimate (the entries into the
/// two sets are counted as they happen and the total is topped up at the end).
pub(crate) fn bounds_work_units(n: u32) -> u64 {
    let size = layer_size(n.min(crate::index::MAX_STONES));
    size * EXIT_UNITS + u64::from(n) * (size / SCAN_POSITIONS_PER_UNIT) + size * ENTRY_UNITS
}

#[inline]
fn mover_field(s: u32) -> u8 {
    s as u8
}

#[inline]
fn opponent_field(s: u32) -> u8 {
    (s >> 8) as u8
}

/// The exits of `board` (layer `n`): the mover's best share and the opponent's least share over
/// the moves that leave the layer (captures, game ends), the position's ending split when it has
/// no move, and the number of its same-layer moves. `capture(captured, child)` is called for each
/// capture; the caller folds the child's bounds in.
#[inline]
fn exits(rules: Ruleset, n: u32, board: &Board, mut capture: impl FnMut(u8, &Board)) -> (u8, u8, u8) {
    let moves = rules.moves(board);
    let n8 = n as i32;
    if let Some(ending) = moves.ending() {
        let mine = ((n8 + i32::from(ending)) / 2) as u8;
        return (mine, n as u8 - mine, 0);
    }
    let (mut best, mut least, mut pending) = (0u8, n as u8, 0u8);
    for m in moves.as_slice() {
        match m.outcome {
            Outcome::End { value } => {
                let mine = ((n8 + i32::from(value)) / 2) as u8;
                best = best.max(mine);
                least = least.min(n as u8 - mine);
            }
            Outcome::Child { captured: 0, .. } => pending += 1,
            Outcome::Child { captured, ref child } => capture(captured, child),
        }
    }
    (best, least, pending)
}

/// One layer's cells and how entries propagate.
struct State<'a> {
    rules: Ruleset,
    n: u32,
    cells: &'a [AtomicU32],
}

/// Thread-local scratch of a propagation: positions that entered a set (`true`: `B`), and a
/// batch of predecessor updates whose cells are being prefetched.
#[derive(Default)]
struct Scratch {
    stack: Vec<(Board, bool)>,
    batch: Vec<(usize, Board, bool)>,
    entered: u64,
}

impl State<'_> {
    /// Puts cell `k` into set `A` (`into_b` false) or `B` at threshold `t`; false when it was
    /// already in.
    #[inline]
    fn enter(&self, k: usize, into_b: bool, t: u8) -> bool {
        let (flag, shift) = if into_b { (IN_B, 8) } else { (IN_A, 0) };
        let cell = &self.cells[k];
        let mut cur = cell.load(Relaxed);
        loop {
            if cur & flag != 0 {
                return false;
            }
            let new = (cur & !(0xFF << shift)) | flag | (u32::from(t) << shift);
            match cell.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Applies to cell `k` (board `q`) the news that one of its same-layer children entered
    /// `B` (`child_b`: `q` enters `A`) or `A` (one fewer child outside `A`; with none left and
    /// every exit giving the opponent at least `t`, `q` enters `B`).
    #[inline]
    fn update(&self, t: u8, k: usize, q: Board, child_b: bool, stack: &mut Vec<(Board, bool)>) {
        if child_b {
            if self.enter(k, false, t) {
                stack.push((q, false));
            }
        } else {
            let prev = self.cells[k].fetch_sub(PENDING_ONE, Relaxed);
            debug_assert!(prev & PENDING != 0, "pending counter underflow: un-moves and moves disagree");
            if prev & IN_B == 0 && prev & PENDING == PENDING_ONE && opponent_field(prev) >= t && self.enter(k, true, t) {
                stack.push((q, true));
            }
        }
    }

    /// Propagates every entry on the stack to its same-layer predecessors until it is empty,
    /// in batches whose cells are prefetched first.
    fn propagate(&self, t: u8, s: &mut Scratch) {
        while !s.stack.is_empty() {
            s.batch.clear();
            for _ in 0..BATCH {
                let Some((board, in_b)) = s.stack.pop() else { break };
                s.entered += 1;
                for_each_ranked_predecessor(self.rules, &board, |q, k| {
                    let k = k as usize;
                    prefetch(&self.cells[k]);
                    s.batch.push((k, *q, in_b));
                });
            }
            for &(k, q, in_b) in s.batch.iter() {
                self.update(t, k, q, in_b, &mut s.stack);
            }
        }
    }

    /// Threshold `t`: enters the positions whose exits alone put them in `A` or `B`, and
    /// propagates.
    fn threshold(&self, t: u8, progress: &dyn Progress, stop: &AtomicBool) {
        split(0..self.cells.len() as u64, CHUNK).par_iter().for_each_init(Scratch::default, |s, r| {
            if stop.load(Relaxed) || progress.cancelled() {
                stop.store(true, Relaxed);
                return;
            }
            for k in r.start as usize..r.end as usize {
                let c = self.cells[k].load(Relaxed);
                if c & IN_A == 0 && mover_field(c) >= t && self.enter(k, false, t) {
                    s.stack.push((unrank_unchecked(self.n, k as u64), false));
                }
                if c & IN_B == 0 && c & PENDING == 0 && opponent_field(c) >= t && self.enter(k, true, t) {
                    s.stack.push((unrank_unchecked(self.n, k as u64), true));
                }
                if s.stack.len() >= BATCH {
                    self.propagate(t, s);
                }
            }
            self.propagate(t, s);
            progress.advance((r.end - r.start) / SCAN_POSITIONS_PER_UNIT + std::mem::take(&mut s.entered) * ENTRY_UNITS);
        });
    }
}

/// The exits pass over the whole layer: every cell gets its exit shares and its same-layer
/// move count; the capture children's bounds are read from the lower layers with prefetching.
fn exits_pass(rules: Ruleset, n: u32, lower: &[&[u8]], codecs: &[Codec], cells: &[AtomicU32], progress: &dyn Progress, stop: &AtomicBool) {
    forward(n, 0..cells.len() as u64, &ExitsPass { rules, n, lower, codecs, cells, progress, stop });
}

/// The bounds' exits pass as a forward pass: a capture's child's bounds looked up (stones
/// captured, index), folded into the exit shares.
struct ExitsPass<'a> {
    rules: Ruleset,
    n: u32,
    lower: &'a [&'a [u8]],
    codecs: &'a [Codec],
    cells: &'a [AtomicU32],
    progress: &'a dyn Progress,
    stop: &'a AtomicBool,
}

impl Forward for ExitsPass<'_> {
    /// Index, the mover's best exit share, the opponent's least, same-layer moves.
    type Parent = (u64, u8, u8, u8);
    /// Stones captured, the child's index.
    type Lookup = (u8, u64);

    fn stopped(&self) -> bool {
        let stopped = self.stop.load(Relaxed) || self.progress.cancelled();
        if stopped {
            self.stop.store(true, Relaxed);
        }
        stopped
    }

    #[inline]
    fn moves(&self, i: u64, board: &Board, mut lookup: impl FnMut((u8, u64))) -> Option<Self::Parent> {
        let (best, least, pending) = exits(self.rules, self.n, board, |captured, child| lookup((captured, rank_unchecked(child))));
        Some((i, best, least, pending))
    }

    #[inline]
    fn prefetch(&self, (captured, j): (u8, u64)) {
        let m = (self.n - u32::from(captured)) as usize;
        if let Some(byte) = self.lower[m].get(self.codecs[m].byte_of(j)) {
            prefetch(byte);
        }
    }

    #[inline]
    fn fold(&self, parent: &mut Self::Parent, (captured, j): (u8, u64)) {
        let m = (self.n - u32::from(captured)) as usize;
        // Lower layers were checked (checksums and codes) before they were used.
        let child = self.codecs[m].get(self.lower[m], j).unwrap_or_default();
        parent.1 = parent.1.max(captured + child.opponent);
        parent.2 = parent.2.min(child.mover);
    }

    #[inline]
    fn finish(&self, &(i, best, least, pending): &Self::Parent) {
        let cell = u32::from(best) | u32::from(least) << 8 | u32::from(pending) << PENDING_SHIFT;
        self.cells[i as usize].store(cell, Relaxed);
    }

    fn chunk_done(&self, positions: u64) {
        self.progress.advance(positions * EXIT_UNITS);
    }
}

/// Computes the forced-capture bounds of every position of layer `n` under `rules`.
///
/// - `lower[m]` must hold the finished bounds payload of layer `m` for every `m < n`
///   ([`bounds::payload_len`] bytes each, every code valid), except layer `n - 1`, which may be
///   empty or not given (never read);
/// - `out` receives layer `n`'s payload; its length must be [`bounds::payload_len`]`(n)`. Its
///   previous contents are ignored.
///
/// Runs on the current rayon thread pool. Cost: one forward pass (every move of every position,
/// one random read of a lower layer per capture), one predecessor pass per set entry (at most two
/// per position), `n` sequential scans of four bytes per position. Memory: `out` plus
/// [`bounds_working_memory`]`(n)` bytes, and the lower layers read at random. Progress advances by
/// at most [`bounds_work_units`]`(n)` units.
///
/// The result does not depend on the number of threads.
///
/// # Errors
/// [`Error::OutOfMemory`] when the working memory cannot be allocated; [`Error::Interrupted`]
/// when `progress` reports cancellation (checked once per chunk; `out` is then incomplete).
///
/// # Panics
/// When `n > 48`, `out` has the wrong length or a lower layer is missing or has the wrong length
/// (programming errors: callers validate files before calling).
pub(crate) fn solve_bounds(rules: Ruleset, n: u32, lower: &[&[u8]], out: &mut [u8], progress: &dyn Progress) -> Result<()> {
    assert!(n <= crate::index::MAX_STONES, "layer {n} does not exist");
    assert_eq!(out.len() as u64, bounds::payload_len(n), "bounds output of layer {n} has the wrong length");
    for m in 0..n {
        // Layer n - 1 may be left out (empty or not given): no move reaches it (`MIN_CAPTURE`).
        let len = lower.get(m as usize).map_or(0, |l| l.len()) as u64;
        assert!(len == bounds::payload_len(m) || (m + 1 == n && len == 0), "lower bounds layer {m} has the wrong length");
    }
    let size = layer_size(n);
    let memory = huge_zeroed(4 * size as usize).map_err(|_| Error::OutOfMemory {
        layer: n,
        needed: bounds_working_memory(n),
        available: 0,
        limit: MemoryLimit::Refused,
    })?;
    // SAFETY: the map is writable, page-aligned (so 4-aligned) and zero-initialised; zero is a
    // valid AtomicU32 and all access goes through this atomic view.
    let cells = unsafe { std::slice::from_raw_parts(memory.as_ptr().cast::<AtomicU32>(), memory.len() / 4) };
    let cells = &cells[..size as usize];
    let codecs: Vec<Codec> = (0..n).map(Codec::new).collect();
    let stop = AtomicBool::new(false);
    let check = || if stop.load(Relaxed) || progress.cancelled() { Err(Error::Interrupted) } else { Ok(()) };

    progress.phase("bounds: exits");
    exits_pass(rules, n, lower, &codecs, cells, progress, &stop);
    check()?;
    let state = State { rules, n, cells };
    progress.phase("bounds: thresholds");
    for t in (1..=n).rev() {
        state.threshold(t as u8, progress, &stop);
        check()?;
    }
    progress.phase("bounds: writing");
    let chunk = CHUNK as usize;
    let ranges: Vec<Range<u64>> = split(0..size, CHUNK);
    let mut slices: Vec<&mut [u8]> = Vec::with_capacity(ranges.len());
    let mut rest = out;
    for r in &ranges {
        let len = bounds::byte_range(n, r.clone()).len();
        let (head, tail) = rest.split_at_mut(len);
        slices.push(head);
        rest = tail;
    }
    slices.into_par_iter().zip(ranges.par_iter()).for_each(|(bytes, r)| {
        let a = r.start as usize;
        let entries = cells[a..(a + chunk).min(r.end as usize)].iter().map(|c| {
            let s = c.load(Relaxed);
            Bounds { mover: if s & IN_A != 0 { mover_field(s) } else { 0 }, opponent: if s & IN_B != 0 { opponent_field(s) } else { 0 } }
        });
        bounds::pack_into(n, r.start, entries, bytes);
    });
    Ok(())
}
