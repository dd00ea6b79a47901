//! Depth to capture (dtc) of one layer, from the layer's finished values and the lower layers'
//! values ([`crate::dtc`] defines it).
//!
//! The moves that keep the value (`captured - v(child) == v(p)`) link positions of value `t` to
//! positions of value `-t` only, and along them the definition is a breadth-first search from
//! the positions whose game is over (depth 0) and those with a value-keeping capture or ending:
//!
//! - **forward pass** (once): every position whose game is over gets depth 0; a win (`v > 0`)
//!   with a value-keeping exit gets depth 1; a loss (`v < 0`) counts its value-keeping same-layer
//!   moves (at most 6), and with none (so its value comes from an exit) gets depth 1;
//! - **levels** `k = 0, 1, 2, ...`: the positions of depth `k` are propagated to their same-layer
//!   predecessors `q` of the opposite value (the moves that keep `q`'s value): an unassigned win
//!   gets depth `k + 1` (the least depth among its value-keeping moves, since levels come in
//!   increasing order), a loss counts one more child known, and when its last one is known it
//!   gets depth `k + 1` (the greatest).
//!
//! Within one level the order of updates does not matter (every position assigned gets `k + 1`),
//! so the levels run in parallel and the result does not depend on threads or scheduling. The
//! level sets are kept as lists of indices while they are small and otherwise found again by a
//! sequential scan of the cells.
//!
//! This is a pass of its own after the values rather than part of the values' threshold
//! propagation: it needs no change to the values' solver (whose order of propagation within a
//! threshold is free, which is what makes it fast and distributable), it can be added to a
//! database whose values are already built, and it is the same code whatever mode built the values,
//! so its files are byte-identical across modes by construction.

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use rayon::prelude::*;

use super::state::{prefetch, split, Cells, BATCH, CHUNK};
use crate::error::{Error, Result};
use crate::index::{in_some_layer, layer_size, rank_unchecked, unrank_unchecked, LayerWalker};
use crate::progress::Progress;
use crate::rules::{for_each_predecessor, Outcome, Ruleset};

const ASSIGNED: u16 = 0x8000;
const COUNT_SHIFT: u32 = 12;
const COUNT_ONE: u16 = 1 << COUNT_SHIFT;
const COUNT: u16 = 0x7 << COUNT_SHIFT;
const DEPTH: u16 = 0x0fff;
/// The greatest depth the solver's cells hold.
pub const DEPTH_LIMIT: u16 = DEPTH;

/// Work units of [`solve_dtc`] per position of the forward pass, per position scanned for a
/// level, and per position propagated.
const FORWARD_UNITS: u64 = 8;
const PROPAGATE_UNITS: u64 = 8;
const SCAN_POSITIONS_PER_UNIT: u64 = 64;

/// Bytes of working memory [`solve_dtc`] needs for layer `n` besides its input and output: two
/// per position, and the level lists (at most 8 bytes for one position in 16).
pub fn dtc_working_memory(n: u32) -> u64 {
    let size = layer_size(n);
    2 * size + level_list_cap(size) * 8
}

/// Work units of [`solve_dtc`] on layer `n`, for progress: an estimate (the levels' scans and
/// propagations are counted as they happen and the total is topped up at the end).
pub fn dtc_work_units(n: u32) -> u64 {
    let size = layer_size(n.min(crate::index::MAX_STONES));
    size * FORWARD_UNITS + size * PROPAGATE_UNITS + 8 * size / SCAN_POSITIONS_PER_UNIT
}

/// Most indices a level list holds before the next level is found by a scan instead.
fn level_list_cap(size: u64) -> u64 {
    (size / 16).max(1 << 16)
}

/// Computes the depth to capture of every position of layer `n` into `cells` (one per
/// position, zeroed by the caller), from the layer's `values` and the `lower` layers' values.
/// Read the result with [`depth_of`]: a depth for every position of non-zero value, and
/// a meaningless cell for the positions of value 0.
///
/// Cost: one move generation per position with lower-layer and same-layer lookups, one
/// predecessor generation per position of non-zero value, one sequential scan of the cells per
/// level whose list grew too long (and for levels 0 and 1).
///
/// # Errors
/// [`Error::Interrupted`] when `progress` cancels; [`Error::Internal`] when the values are
/// not a solution of the game's equations (a position of non-zero value that no value-keeping
/// move realizes) or a depth exceeds [`DEPTH_LIMIT`].
///
/// # Panics
/// When `values`, `cells` or a lower layer is shorter than its layer.
pub fn solve_dtc(rules: Ruleset, n: u32, values: &[i8], lower: &[&[i8]], cells: &[AtomicU16], progress: &dyn Progress) -> Result<()> {
    let size = layer_size(n);
    assert!(values.len() as u64 >= size && cells.len() as u64 >= size, "layer {n}: values or cells too short");
    let budget = dtc_work_units(n);
    let charged = AtomicU64::new(0);
    let charge = |units: u64| {
        let before = charged.fetch_add(units, Relaxed);
        let give = units.min(budget.saturating_sub(before));
        if give > 0 {
            progress.advance(give);
        }
    };
    progress.phase("dtc: moves");
    let broken = AtomicBool::new(false);
    split(0..size, CHUNK).par_iter().for_each(|r| {
        if progress.cancelled() || broken.load(Relaxed) {
            return;
        }
        let walker = LayerWalker::new(n, r.clone()).expect("n <= 48 was checked");
        for (i, b) in walker {
            let v = values[i as usize];
            if v == 0 {
                continue;
            }
            let moves = rules.moves(&b);
            let cell = if moves.ending().is_some() {
                ASSIGNED
            } else {
                let (mut exit, mut count) = (false, 0u16);
                for m in moves.as_slice() {
                    match m.outcome {
                        Outcome::End { value } => exit |= value == v,
                        Outcome::Child { captured: 0, child } => count += u16::from(values[rank_unchecked(&child) as usize] == -v),
                        Outcome::Child { captured, child } => {
                            let w = lower[(n - u32::from(captured)) as usize][rank_unchecked(&child) as usize];
                            exit |= captured as i8 - w == v;
                        }
                    }
                }
                if v > 0 {
                    if exit {
                        ASSIGNED | 1
                    } else {
                        0
                    }
                } else if count == 0 {
                    if !exit {
                        broken.store(true, Relaxed);
                    }
                    ASSIGNED | 1
                } else {
                    count << COUNT_SHIFT
                }
            };
            cells[i as usize].store(cell, Relaxed);
        }
        charge((r.end - r.start) * FORWARD_UNITS);
    });
    if progress.cancelled() {
        return Err(Error::Interrupted);
    }
    if broken.load(Relaxed) {
        return Err(Error::Internal(format!("dtc of layer {n}: a lost position has no move that keeps its value")));
    }
    let cap = level_list_cap(size);
    // The positions of the current level: a list, or `None` when they must be found by a scan.
    let mut list: Option<Vec<u64>> = None;
    let mut k: u16 = 0;
    loop {
        progress.phase(&format!("dtc: depth {k}"));
        let level: Vec<u64> = match list.take() {
            Some(l) if k >= 2 => l,
            _ => {
                let found = scan_level(values, cells, size, k);
                charge(size / SCAN_POSITIONS_PER_UNIT);
                found
            }
        };
        if level.is_empty() && k >= 1 {
            break;
        }
        if k == DEPTH_LIMIT {
            return Err(Error::Internal(format!("dtc of layer {n}: a depth beyond {DEPTH_LIMIT}")));
        }
        let next = Mutex::new(Vec::<Vec<u64>>::new());
        let collected = AtomicU64::new(0);
        let overflow = AtomicBool::new(false);
        level.par_chunks(1 << 12).for_each(|block| {
            if progress.cancelled() {
                return;
            }
            let mut mine = Vec::new();
            let mut batch: Vec<(usize, i8)> = Vec::with_capacity(BATCH * 8);
            for group in block.chunks(BATCH) {
                batch.clear();
                for &j in group {
                    let v = values[j as usize];
                    let board = unrank_unchecked(n, j);
                    for_each_predecessor(rules, &board, |q, _pit| {
                        if in_some_layer(q) {
                            let jq = rank_unchecked(q) as usize;
                            prefetch(&values[jq]);
                            prefetch(&cells[jq]);
                            batch.push((jq, -v));
                        }
                    });
                }
                for &(jq, want) in &batch {
                    let vq = values[jq];
                    if vq != want {
                        continue;
                    }
                    let cell = &cells[jq];
                    let assigned = if vq > 0 {
                        let cur = cell.load(Relaxed);
                        cur & ASSIGNED == 0 && cell.compare_exchange(cur, ASSIGNED | (k + 1), Relaxed, Relaxed).is_ok()
                    } else {
                        let prev = cell.fetch_sub(COUNT_ONE, Relaxed);
                        debug_assert!(prev & COUNT != 0 && prev & ASSIGNED == 0, "dtc counter: un-moves and moves disagree");
                        if prev & COUNT == COUNT_ONE {
                            cell.store(ASSIGNED | (k + 1), Relaxed);
                            true
                        } else {
                            false
                        }
                    };
                    if assigned && !overflow.load(Relaxed) {
                        mine.push(jq as u64);
                    }
                }
            }
            if !mine.is_empty() && !overflow.load(Relaxed) {
                if collected.fetch_add(mine.len() as u64, Relaxed) + mine.len() as u64 > cap {
                    overflow.store(true, Relaxed);
                } else {
                    next.lock().unwrap_or_else(|p| p.into_inner()).push(mine);
                }
            }
            charge(block.len() as u64 * PROPAGATE_UNITS);
        });
        if progress.cancelled() {
            return Err(Error::Interrupted);
        }
        list = if overflow.load(Relaxed) { None } else { Some(next.into_inner().unwrap_or_else(|p| p.into_inner()).concat()) };
        k += 1;
    }
    // Every position of non-zero value must have been reached.
    let missing = split(0..size, CHUNK)
        .par_iter()
        .find_map_first(|r| (r.start..r.end).find(|&i| values[i as usize] != 0 && cells[i as usize].load(Relaxed) & ASSIGNED == 0));
    if let Some(i) = missing {
        let board = unrank_unchecked(n, i);
        return Err(Error::Internal(format!(
            "dtc of layer {n}: position {board:?} (index {i}, value {}) is never realized by value-keeping moves",
            values[i as usize]
        )));
    }
    charge(budget);
    Ok(())
}

/// The depths to capture of a layer, as [`solve_dtc_layer`] computed them.
pub struct DtcDepths {
    cells: Cells,
}

impl DtcDepths {
    /// The depth of position `i`, whose value is `value` (`None` for value 0).
    ///
    /// # Panics
    /// When `i` is not an index of the layer.
    #[inline]
    pub fn depth(&self, i: u64, value: i8) -> Option<u16> {
        (value != 0).then(|| depth_of(self.cells.all()[i as usize].load(Relaxed)))
    }
}

/// [`solve_dtc`] with cells of its own: in anonymous memory, or in the scratch file `scratch`
/// (two bytes per position, paged by the system) when the memory would not hold them.
///
/// # Errors
/// As [`solve_dtc`]; [`Error::OutOfMemory`] / [`Error::Io`] when the cells cannot be had.
pub fn solve_dtc_layer(
    rules: Ruleset,
    n: u32,
    values: &[i8],
    lower: &[&[i8]],
    scratch: Option<&std::path::Path>,
    progress: &dyn Progress,
) -> Result<DtcDepths> {
    let cells = Cells::new(n, layer_size(n), scratch, dtc_working_memory(n))?;
    solve_dtc(rules, n, values, lower, cells.all(), progress)?;
    Ok(DtcDepths { cells })
}

/// The positions of non-zero value and depth `k`, in index order.
fn scan_level(values: &[i8], cells: &[AtomicU16], size: u64, k: u16) -> Vec<u64> {
    let want = ASSIGNED | k;
    let parts: Vec<Vec<u64>> = split(0..size, CHUNK)
        .par_iter()
        .map(|r| (r.start..r.end).filter(|&i| cells[i as usize].load(Relaxed) & (ASSIGNED | DEPTH) == want && values[i as usize] != 0).collect())
        .collect();
    parts.concat()
}

/// The depth held by a cell [`solve_dtc`] finished, for a position of non-zero value.
#[inline]
pub fn depth_of(cell: u16) -> u16 {
    cell & DEPTH
}
