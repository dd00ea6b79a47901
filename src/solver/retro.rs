//! Threshold-descending retrograde analysis of one layer (see `docs/values.md`).
//!
//! For `t = n, n-1, ..., 1` two sets grow: WIN (`v >= t`) and LOSS (`v <= -t`). A position that
//! first enters WIN at threshold `t` is worth exactly `t`, one that first enters LOSS exactly
//! `-t`; positions that never enter are worth 0 (neither side can force better than endless play).
//!
//! State per position: one `u16`, so that every update of a position touches one cache line:
//! - the low byte: the best exit value (`NO_EXIT` when none) until the position is resolved,
//!   then its value;
//! - bits 8..10: the number of same-layer moves whose child is not yet in WIN (`pending`, at
//!   most 6); bit 15: resolved.
//!
//! The values are copied into the layer file's payload (memory-mapped) at the end.
//!
//! Parallelism: each threshold's seed scan runs over index chunks in parallel; the positions a
//! thread resolves go on that thread's own stack and are propagated from it in batches. Resolution is an atomic
//! compare-and-swap setting the resolved flag, so each position is resolved exactly once, and within one
//! threshold every resolved position gets the same `±t` whatever the order: the result does not
//! depend on the number of threads or on scheduling.

use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

use rayon::prelude::*;

use crate::error::{Error, MemoryLimit, Result};
use crate::progress::Progress;
use crate::index::{chunks, in_some_layer, layer_size, rank_unchecked, unrank_unchecked, LayerWalker};
use crate::rules::{for_each_predecessor, Board, Outcome, Ruleset};

const RESOLVED: u16 = 0x8000;
const PENDING_SHIFT: u32 = 8;
const PENDING_ONE: u16 = 1 << PENDING_SHIFT;
const PENDING: u16 = 0x7 << PENDING_SHIFT;
/// Best-exit marker for "no move leaves the layer" (below every real value, -48).
const NO_EXIT: i8 = i8::MIN;
/// Positions per parallel work item.
const CHUNK: u64 = 1 << 15;

/// Relative cost of the exits pass against one threshold scan, for progress and ETA.
const EXIT_WEIGHT: u64 = 4;

/// Total work units of solving layer `n`: the exits pass, `n` threshold scans and the final pass.
pub fn work_units(n: u32) -> u64 {
    layer_size(n) * (EXIT_WEIGHT + u64::from(n) + 1)
}

/// Bytes of working memory [`solve_layer`] allocates besides its output: two per position.
pub fn working_memory(n: u32) -> u64 {
    2 * layer_size(n)
}

#[inline]
fn value_of(s: u16) -> i8 {
    s as u8 as i8
}

#[inline]
fn pack(value: i8, pending: u8) -> u16 {
    u16::from(value as u8) | (u16::from(pending) << PENDING_SHIFT)
}

struct State<'a> {
    rules: Ruleset,
    cells: &'a [AtomicU16],
}

impl State<'_> {
    /// Marks position `i` resolved with value `v`; false when it already was (another thread may
    /// have got there first).
    #[inline]
    fn resolve(&self, i: usize, v: i8) -> bool {
        let cell = &self.cells[i];
        let mut cur = cell.load(Relaxed);
        loop {
            if cur & RESOLVED != 0 {
                return false;
            }
            let new = RESOLVED | (cur & PENDING) | u16::from(v as u8);
            match cell.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Propagates every position on `stack` (resolved at threshold `t`) to its same-layer
    /// predecessors until the stack is empty.
    ///
    /// Works in batches: the predecessors of up to [`BATCH`] positions are generated and their
    /// cells prefetched first, then updated, so that many cache misses are in flight at once
    /// instead of one after the other. `batch` is scratch space.
    fn propagate(&self, t: i8, stack: &mut Vec<(Board, i8)>, batch: &mut Vec<(usize, Board, bool)>) {
        while !stack.is_empty() {
            batch.clear();
            for _ in 0..BATCH {
                let Some((board, v)) = stack.pop() else { break };
                for_each_predecessor(self.rules, &board, |q, _pit| {
                    if in_some_layer(q) {
                        let j = rank_unchecked(q) as usize;
                        prefetch(&self.cells[j]);
                        batch.push((j, *q, v < 0));
                    }
                });
            }
            for &(j, q, child_lost) in batch.iter() {
                if child_lost {
                    // q can move to a position lost by at least t: q wins at least t.
                    if self.resolve(j, t) {
                        stack.push((q, t));
                    }
                } else {
                    // One more of q's same-layer moves is worth -t or less. (Resolved positions
                    // are decremented too: harmless, as each same-layer move is counted once.)
                    let prev = self.cells[j].fetch_sub(PENDING_ONE, Relaxed);
                    debug_assert!(prev & PENDING != 0, "pending counter underflow: un-moves and moves disagree");
                    if prev & RESOLVED == 0
                        && prev & PENDING == PENDING_ONE
                        && value_of(prev) <= -t
                        && self.resolve(j, -t)
                    {
                        stack.push((q, -t));
                    }
                }
            }
        }
    }
}

/// Zeroed anonymous memory, in transparent huge pages where the system allows: the cells are
/// accessed at random, and 2 MB pages cut the TLB misses that would otherwise dominate.
fn huge_zeroed(len: usize) -> std::io::Result<memmap2::MmapMut> {
    let map = memmap2::MmapMut::map_anon(len.max(1))?;
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Ok(map)
}

/// Views zeroed memory as cells.
fn as_cells(map: &mut memmap2::MmapMut) -> &[AtomicU16] {
    let len = map.len() / 2;
    // SAFETY: the map is page-aligned (so 2-aligned), zero is a valid AtomicU16, and the
    // exclusive borrow ensures all access goes through the atomic view while it lives.
    unsafe { std::slice::from_raw_parts(map.as_mut_ptr().cast::<AtomicU16>(), len) }
}

/// Positions whose predecessors (or whose moves' lower-layer values) are fetched together.
const BATCH: usize = 32;

/// Asks the CPU to start loading the cache line of `r`.
#[inline(always)]
fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint with no effect on memory; any address is allowed.
    unsafe {
        core::arch::x86_64::_mm_prefetch(r as *const T as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
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
/// # Errors
/// [`Error::OutOfMemory`] when the working memory cannot be allocated; [`Error::Interrupted`]
/// when `progress` reports cancellation (checked once per chunk; `out` is then incomplete).
///
/// # Panics
/// When `n > 48`, `out` has the wrong length or a lower layer is missing or has the wrong length
/// (programming errors: callers validate files before calling).
pub fn solve_layer(rules: Ruleset, n: u32, lower: &[&[i8]], out: &mut [u8], progress: &dyn Progress) -> Result<()> {
    let size = layer_size(n);
    assert!(n <= crate::index::MAX_STONES, "layer {n} does not exist");
    assert_eq!(out.len() as u64, size, "output buffer of layer {n} has the wrong length");
    for m in 0..n {
        assert_eq!(lower[m as usize].len() as u64, layer_size(m), "lower layer {m} has the wrong length");
    }
    let mut cell_map = huge_zeroed(2 * size as usize).map_err(|_| Error::OutOfMemory {
        layer: n,
        needed: working_memory(n),
        available: 0,
        limit: MemoryLimit::Refused,
    })?;
    let cells = as_cells(&mut cell_map);
    let state = State { rules, cells };
    let ranges: Vec<_> = chunks(n, CHUNK).collect();

    // 1. Exits pass: best exit and number of same-layer moves of every position.
    let trace = std::env::var_os("OWARE_TRACE").is_some();
    let mut clock = std::time::Instant::now();
    let mut lap = |what: &str| {
        if trace {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "  layer {n} {what}: {:.3} s", clock.elapsed().as_secs_f64());
        }
        clock = std::time::Instant::now();
    };
    progress.phase("exits");
    ranges.par_iter().for_each(|r| {
        if progress.cancelled() {
            return;
        }
        let mut walker = LayerWalker::new(n, r.clone()).expect("n <= 48 was checked");
        let mut group: Vec<(u64, i8, u8)> = Vec::with_capacity(BATCH);
        let mut lookups: Vec<(u8, u8, usize)> = Vec::with_capacity(BATCH * 6);
        loop {
            // Moves of a group of positions; the lower-layer values they need are prefetched...
            group.clear();
            lookups.clear();
            for (i, b) in walker.by_ref().take(BATCH) {
                let k = group.len() as u8;
                let (best, pending) = exits(rules, &b, |captured, child| {
                    let layer = lower[(n - u32::from(captured)) as usize];
                    let j = rank_unchecked(child) as usize;
                    prefetch(&layer[j]);
                    lookups.push((k, captured, j));
                });
                group.push((i, best, pending));
            }
            if group.is_empty() {
                break;
            }
            // ...then read once they are on their way.
            for &(k, captured, j) in &lookups {
                let v = lower[(n - u32::from(captured)) as usize][j];
                let g = &mut group[k as usize];
                g.1 = g.1.max(captured as i8 - v);
            }
            for &(i, best, pending) in &group {
                state.cells[i as usize].store(pack(best, pending), Relaxed);
            }
        }
        progress.advance((r.end - r.start) * EXIT_WEIGHT);
    });

    lap("exits");
    if progress.cancelled() {
        return Err(Error::Interrupted);
    }
    // 2. Thresholds from n down to 1: seed, then propagate.
    for t in (1..=n as i8).rev() {
        progress.phase(&format!("threshold {t}"));
        ranges.par_iter().for_each(|r| {
            if progress.cancelled() {
                return;
            }
            let mut stack: Vec<(Board, i8)> = Vec::new();
            let mut batch = Vec::new();
            for i in r.start as usize..r.end as usize {
                let m = state.cells[i].load(Relaxed);
                if m & RESOLVED != 0 {
                    continue;
                }
                let best = value_of(m);
                let v = if best >= t {
                    t
                } else if m & PENDING == 0 && best <= -t {
                    -t
                } else {
                    continue;
                };
                if state.resolve(i, v) {
                    stack.push((unrank_unchecked(n, i as u64), v));
                    // Seeds are gathered into full batches before propagating (order within a
                    // threshold does not matter), so that many cache misses overlap.
                    if stack.len() >= BATCH {
                        state.propagate(t, &mut stack, &mut batch);
                    }
                }
            }
            state.propagate(t, &mut stack, &mut batch);
            progress.advance(r.end - r.start);
        });
        if progress.cancelled() {
            return Err(Error::Interrupted);
        }
    }

    lap("thresholds");
    // 3. Write the values; everything still unresolved is worth 0 (endless play).
    progress.phase("draws");
    out.par_chunks_mut(CHUNK as usize).zip(cells.par_chunks(CHUNK as usize)).for_each(|(o, c)| {
        for (byte, cell) in o.iter_mut().zip(c) {
            let s = cell.load(Relaxed);
            *byte = if s & RESOLVED != 0 { s as u8 } else { 0 };
        }
        progress.advance(o.len() as u64);
    });
    Ok(())
}

/// The best exit value of `board` among its game-ending moves, and the number of its moves that
/// stay in the layer; `capture(captured, child)` is called for each move into a smaller layer,
/// whose value the caller folds into the best exit.
#[inline]
fn exits(rules: Ruleset, board: &Board, mut capture: impl FnMut(u8, &Board)) -> (i8, u8) {
    let moves = rules.moves(board);
    if let Some(ending) = moves.ending() {
        return (ending, 0);
    }
    let mut best = NO_EXIT;
    let mut pending = 0u8;
    for m in moves.as_slice() {
        match m.outcome {
            Outcome::End { value } => best = best.max(value),
            Outcome::Child { captured: 0, .. } => pending += 1,
            Outcome::Child { captured, ref child } => capture(captured, child),
        }
    }
    (best, pending)
}
