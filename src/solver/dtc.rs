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
//! level sets are kept as lists of boards (with their values) while they are small, so no
//! position is unranked, and otherwise found again by a sequential scan of the cells that
//! propagates them chunk by chunk.
//!
//! This is a pass of its own after the values rather than part of the values' threshold
//! propagation: it needs no change to the values' solver (whose order of propagation within a
//! threshold is free, which is what makes it fast and distributable), it can be added to a
//! database whose values are already built, and it is the same code whatever mode built the values,
//! so its files are byte-identical across modes by construction.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use rayon::prelude::*;

use super::state::{huge_zeroed, prefetch, split, BATCH, CHUNK};
use crate::error::{Error, MemoryLimit, Result};
use crate::index::{in_some_layer, layer_size, rank_unchecked, unrank_unchecked, LayerWalker};
use crate::progress::Progress;
use crate::rules::{for_each_predecessor, Board, Outcome, Ruleset};
use crate::spill::ScratchState;

// One `u32` cell per position, so that every update touches one cache line and the position's
// value comes with it (the values file is read once, sequentially):
// bits 0..7 the value; bits 8..10 the value-keeping moves whose depth is not yet known (losses);
// bit 15 assigned; bits 16..31 the depth.
const COUNT_SHIFT: u32 = 8;
const COUNT_ONE: u32 = 1 << COUNT_SHIFT;
const COUNT: u32 = 0x7 << COUNT_SHIFT;
const ASSIGNED: u32 = 1 << 15;
const DEPTH_SHIFT: u32 = 16;
/// The greatest depth the solver's cells hold.
pub const DEPTH_LIMIT: u16 = u16::MAX;

#[inline]
fn value_of(cell: u32) -> i8 {
    cell as u8 as i8
}

#[inline]
fn assigned(depth: u16) -> u32 {
    ASSIGNED | (u32::from(depth) << DEPTH_SHIFT)
}

/// Work units of [`solve_dtc`] per position of the forward pass, per position scanned for a
/// level, and per position propagated.
const FORWARD_UNITS: u64 = 8;
const PROPAGATE_UNITS: u64 = 8;
const SCAN_POSITIONS_PER_UNIT: u64 = 64;

/// Bytes of working memory [`solve_dtc`] needs for layer `n` besides its input and output: four
/// per position, and two level lists, the level propagated and the next one gathered (each at
/// most 13 bytes, a board and its value, for one position in 16): 5.6 bytes per position.
pub fn dtc_working_memory(n: u32) -> u64 {
    let size = layer_size(n);
    4 * size + 2 * level_list_cap(size) * std::mem::size_of::<(Board, i8)>() as u64
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
/// position; their previous contents are ignored), from the layer's `values` and the `lower`
/// layers' values. Read the result with [`depth_of`]: a depth for every position of non-zero
/// value, and a meaningless one for the positions of value 0.
///
/// Cost: one sequential pass over the values; one move generation per position of non-zero
/// value with lower-layer lookups (wins) or same-layer lookups (losses), prefetched in batches;
/// one predecessor generation per position of non-zero value, its cells prefetched in batches;
/// one sequential scan of the cells per level whose list grew too long (and for levels 0 and 1).
/// Memory: the cells, the current level's list and the next one's (at most
/// [`dtc_working_memory`] minus the cells).
///
/// # Errors
/// [`Error::Interrupted`] when `progress` cancels; [`Error::Internal`] when the values are
/// not a solution of the game's equations (a position of non-zero value that no value-keeping
/// move realizes) or a depth exceeds [`DEPTH_LIMIT`].
///
/// # Panics
/// When `values`, `cells` or a lower layer is shorter than its layer.
pub fn solve_dtc(rules: Ruleset, n: u32, values: &[i8], lower: &[&[i8]], cells: &[AtomicU32], progress: &dyn Progress) -> Result<()> {
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
    let trace = std::env::var_os("OWARE_DTC_TRACE").is_some();
    let t0 = std::time::Instant::now();
    progress.phase("dtc: moves");
    // The values into the cells, so that same-layer lookups touch the cells only.
    cells[..size as usize].par_chunks(1 << 16).zip(values[..size as usize].par_chunks(1 << 16)).for_each(|(c, v)| {
        for (cell, &value) in c.iter().zip(v) {
            cell.store(u32::from(value as u8), Relaxed);
        }
    });
    let broken = AtomicBool::new(false);
    split(0..size, CHUNK).par_iter().for_each(|r| {
        if progress.cancelled() || broken.load(Relaxed) {
            return;
        }
        let mut walker = LayerWalker::new(n, r.clone()).expect("n <= 48 was checked");
        // Per position of the group: index, value, a value-keeping exit seen, moves counted.
        let mut group: Vec<(u64, i8, bool, u32)> = Vec::with_capacity(BATCH);
        // (position in the group, lower layer or `u32::MAX` for this layer, index, captured).
        let mut lookups: Vec<(u8, u32, usize, u8)> = Vec::with_capacity(BATCH * 6);
        loop {
            group.clear();
            lookups.clear();
            let mut took = 0;
            for (i, b) in walker.by_ref().take(BATCH) {
                took += 1;
                let v = value_of(cells[i as usize].load(Relaxed));
                if v == 0 {
                    continue;
                }
                let k = group.len() as u8;
                let moves = rules.moves(&b);
                if moves.ending().is_some() {
                    cells[i as usize].store(u32::from(v as u8) | assigned(0), Relaxed);
                    continue;
                }
                let mut exit = false;
                for m in moves.as_slice() {
                    match m.outcome {
                        Outcome::End { value } => exit |= value == v,
                        // Wins need only their exits, losses their same-layer moves.
                        Outcome::Child { captured: 0, child } if v < 0 => {
                            let j = rank_unchecked(&child) as usize;
                            prefetch(&cells[j]);
                            lookups.push((k, u32::MAX, j, 0));
                        }
                        Outcome::Child { captured, child } if captured > 0 && v > 0 => {
                            let m = n - u32::from(captured);
                            let j = rank_unchecked(&child) as usize;
                            prefetch(&lower[m as usize][j]);
                            lookups.push((k, m, j, captured));
                        }
                        Outcome::Child { .. } => {}
                    }
                }
                group.push((i, v, exit, 0));
            }
            if took == 0 {
                break;
            }
            for &(k, m, j, captured) in &lookups {
                let g = &mut group[k as usize];
                if m == u32::MAX {
                    g.3 += u32::from(value_of(cells[j].load(Relaxed)) == -g.1);
                } else {
                    g.2 |= captured as i8 - lower[m as usize][j] == g.1;
                }
            }
            for &(i, v, exit, count) in &group {
                let cell = if v > 0 {
                    if exit {
                        assigned(1)
                    } else {
                        0
                    }
                } else if count == 0 {
                    // Its value comes from an exit (checked here, off the common path).
                    if !exit && !has_keeping_capture(rules, n, i, v, lower) {
                        broken.store(true, Relaxed);
                    }
                    assigned(1)
                } else {
                    count << COUNT_SHIFT
                };
                cells[i as usize].store(u32::from(v as u8) | cell, Relaxed);
            }
        }
        charge((r.end - r.start) * FORWARD_UNITS);
    });
    if progress.cancelled() {
        return Err(Error::Interrupted);
    }
    if broken.load(Relaxed) {
        return Err(Error::Internal(format!("dtc of layer {n}: a lost position has no move that keeps its value")));
    }
    if trace {
        eprintln!("dtc {n}: forward pass {:.2} s", t0.elapsed().as_secs_f64());
    }
    let (mut prop_s, mut levels_scanned) = (0.0, 0);
    let cap = level_list_cap(size);
    // The positions of the current level with their values: lists gathered while the previous
    // level was propagated, or `None` when they must be found by a scan (levels 0 and 1, and
    // levels whose list grew beyond `cap`). Boards are kept, so no position is unranked.
    let mut list: Option<Vec<Vec<(Board, i8)>>> = None;
    let mut k: u16 = 0;
    loop {
        progress.phase(&format!("dtc: depth {k}"));
        if k == DEPTH_LIMIT {
            return Err(Error::Internal(format!("dtc of layer {n}: a depth beyond {DEPTH_LIMIT}")));
        }
        let tp = std::time::Instant::now();
        let next = Mutex::new(Vec::<Vec<(Board, i8)>>::new());
        let collected = AtomicU64::new(0);
        let overflow = AtomicBool::new(false);
        let found = AtomicU64::new(0);
        let deeper = assigned(k + 1);
        // Propagates a block of the level's positions; newly assigned ones go to `next`.
        let propagate = |block: &[(Board, i8)]| {
            let mut mine = Vec::new();
            let mut batch: Vec<(usize, Board, i8)> = Vec::with_capacity(BATCH * 8);
            for group in block.chunks(BATCH) {
                batch.clear();
                for (board, v) in group {
                    for_each_predecessor(rules, board, |q, _pit| {
                        if in_some_layer(q) {
                            let jq = rank_unchecked(q) as usize;
                            prefetch(&cells[jq]);
                            batch.push((jq, *q, -v));
                        }
                    });
                }
                for &(jq, q, want) in &batch {
                    let cell = &cells[jq];
                    let cur = cell.load(Relaxed);
                    if value_of(cur) != want {
                        continue;
                    }
                    let now_assigned = if want > 0 {
                        cur & ASSIGNED == 0 && cell.compare_exchange(cur, cur | deeper, Relaxed, Relaxed).is_ok()
                    } else {
                        let prev = cell.fetch_sub(COUNT_ONE, Relaxed);
                        debug_assert!(prev & COUNT != 0 && prev & ASSIGNED == 0, "dtc counter: un-moves and moves disagree");
                        if prev & COUNT == COUNT_ONE {
                            cell.fetch_or(deeper, Relaxed);
                            true
                        } else {
                            false
                        }
                    };
                    if now_assigned && !overflow.load(Relaxed) {
                        mine.push((q, want));
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
            found.fetch_add(block.len() as u64, Relaxed);
            charge(block.len() as u64 * PROPAGATE_UNITS);
        };
        match list.take() {
            Some(pieces) if k >= 2 => pieces.par_iter().flat_map(|p| p.par_chunks(1 << 12)).for_each(|block| {
                if !progress.cancelled() {
                    propagate(block);
                }
            }),
            _ => {
                // A scan: each chunk's positions of depth `k` (positions assigned meanwhile get
                // `k + 1`, so the scan is not disturbed), propagated chunk by chunk.
                levels_scanned += 1;
                let want = assigned(k);
                let mask = ASSIGNED | (u32::from(u16::MAX) << DEPTH_SHIFT);
                split(0..size, CHUNK).par_iter().for_each(|r| {
                    if progress.cancelled() {
                        return;
                    }
                    let walker = LayerWalker::new(n, r.clone()).expect("n <= 48 was checked");
                    let block: Vec<(Board, i8)> = walker
                        .filter_map(|(i, b)| {
                            let c = cells[i as usize].load(Relaxed);
                            (c & mask == want && value_of(c) != 0).then_some((b, value_of(c)))
                        })
                        .collect();
                    propagate(&block);
                    charge((r.end - r.start) / SCAN_POSITIONS_PER_UNIT);
                });
            }
        }
        if progress.cancelled() {
            return Err(Error::Interrupted);
        }
        prop_s += tp.elapsed().as_secs_f64();
        if found.load(Relaxed) == 0 && k >= 1 {
            break;
        }
        list = if overflow.load(Relaxed) { None } else { Some(next.into_inner().unwrap_or_else(|p| p.into_inner())) };
        k += 1;
    }
    if trace {
        eprintln!("dtc {n}: {k} levels ({levels_scanned} scanned), propagation {prop_s:.2} s, total {:.2} s", t0.elapsed().as_secs_f64());
    }
    // Every position of non-zero value must have been reached.
    let missing = split(0..size, CHUNK).par_iter().find_map_first(|r| {
        (r.start..r.end).find(|&i| {
            let c = cells[i as usize].load(Relaxed);
            value_of(c) != 0 && c & ASSIGNED == 0
        })
    });
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

/// Whether position `i` of layer `n` (value `v`) has a capture that keeps its value.
fn has_keeping_capture(rules: Ruleset, n: u32, i: u64, v: i8, lower: &[&[i8]]) -> bool {
    rules.moves(&unrank_unchecked(n, i)).as_slice().iter().any(|m| match m.outcome {
        Outcome::Child { captured, child } if captured > 0 => captured as i8 - lower[(n - u32::from(captured)) as usize][rank_unchecked(&child) as usize] == v,
        _ => false,
    })
}

/// Where the cells live: anonymous memory (in huge pages where the system allows), or a
/// scratch file.
enum DtcCells {
    Memory(memmap2::MmapMut),
    File(ScratchState),
}

impl DtcCells {
    fn new(n: u32, file: Option<&std::path::Path>) -> Result<DtcCells> {
        let len = layer_size(n);
        Ok(match file {
            None => DtcCells::Memory(huge_zeroed(4 * len as usize).map_err(|_| Error::OutOfMemory {
                layer: n,
                needed: dtc_working_memory(n),
                available: 0,
                limit: MemoryLimit::Refused,
            })?),
            // Two of the scratch state's 2-byte cells per position.
            Some(path) => DtcCells::File(ScratchState::create(path, 2 * len)?),
        })
    }

    fn all(&self) -> &[AtomicU32] {
        let (ptr, bytes) = match self {
            DtcCells::Memory(m) => (m.as_ptr(), m.len()),
            DtcCells::File(f) => {
                let c = f.cells();
                (c.as_ptr().cast::<u8>(), 2 * c.len())
            }
        };
        // SAFETY: both maps are page-aligned (so 4-aligned), writable, zero-initialised and
        // alive as long as `self`; zero is a valid AtomicU32 and all access goes through this
        // atomic view.
        unsafe { std::slice::from_raw_parts(ptr.cast::<AtomicU32>(), bytes / 4) }
    }
}

/// The depths to capture of a layer, as [`solve_dtc_layer`] computed them.
pub struct DtcDepths {
    cells: DtcCells,
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
/// (four bytes per position, paged by the system) when the memory would not hold them.
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
    let cells = DtcCells::new(n, scratch)?;
    solve_dtc(rules, n, values, lower, cells.all(), progress)?;
    Ok(DtcDepths { cells })
}

/// The depth held by a cell [`solve_dtc`] finished, for a position of non-zero value.
#[inline]
pub fn depth_of(cell: u32) -> u16 {
    (cell >> DEPTH_SHIFT) as u16
}
