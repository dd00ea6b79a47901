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
//! Under `mpirun` each rank computes its share ([`solve_dtc_share`] with a [`Share`]).
//!
//! Where a layer's values are solved in memory by one process, its depths are not computed
//! here but recorded by the values' own propagation, run level by level ([`FusedDepths`]: the
//! same depths, at a fraction of the cost). This pass serves the other cases: depths added to
//! values built before, layers built out of core or by several ranks, layers resumed from a
//! checkpoint; being the same code whatever built the values, its files are the same bytes
//! across modes.

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use super::cluster::{ask_owners, exchange_outboxes, Ownership};
use super::forward::{forward, Forward};
use super::options::Share;
use super::state::{for_each_ranked_predecessor, huge_zeroed, prefetch, split, Failure, Meter, BATCH, CHUNK, KEY_SHIFT};
use crate::error::{ClusterError, Error, MemoryLimit, Result};
use crate::index::{layer_size, rank_unchecked, unrank_unchecked, LayerWalker};
use crate::progress::Progress;
use crate::rules::{Board, Outcome, Ruleset};
use crate::solver::spill::{Inboxes, ScratchState};

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
pub(crate) const DEPTH_LIMIT: u16 = u16::MAX;

#[inline]
fn value_of(cell: u32) -> i8 {
    cell as u8 as i8
}

#[inline]
fn assigned(depth: u16) -> u32 {
    ASSIGNED | (u32::from(depth) << DEPTH_SHIFT)
}

/// Work units of [`solve_dtc_share`] per position of the forward pass, per position scanned for a
/// level, and per position propagated.
const FORWARD_UNITS: u64 = 8;
const PROPAGATE_UNITS: u64 = 8;
const SCAN_POSITIONS_PER_UNIT: u64 = 64;

/// Bytes of working memory [`solve_dtc_share`] needs for `positions` positions (a layer, or a
/// rank's share) besides its input and output: four per position, and two level lists, the
/// level propagated and the next one gathered (each at most 13 bytes, a board and its value,
/// for one position in 16): 5.6 bytes per position.
pub(crate) fn dtc_working_memory(positions: u64) -> u64 {
    4 * positions + 2 * level_list_cap(positions) * std::mem::size_of::<(Board, i8)>() as u64
}

/// Work units of [`solve_dtc_share`] on `positions` positions (a layer, or a rank's share), for
/// progress: an estimate (the levels' scans and propagations are counted as they happen and the
/// total is topped up at the end).
pub(crate) fn dtc_work_units(positions: u64) -> u64 {
    positions * FORWARD_UNITS + positions * PROPAGATE_UNITS + 8 * positions / SCAN_POSITIONS_PER_UNIT
}

/// Most indices a level list holds before the next level is found by a scan instead.
fn level_list_cap(size: u64) -> u64 {
    (size / 16).max(1 << 16)
}

/// Computes the depth to capture of positions `own` of layer `n` into `cells` (`cells[k]` is
/// position `own.start + k`'s; their previous contents are ignored), from the layer's `values`
/// and the `lower` layers' values: the whole layer in one process (`share` is `None`), or one
/// rank's share of it in a distributed pass (every rank of `share.cluster` calls it at once, each
/// with its [`Ownership`] range). Read the result with [`depth_of`]: a depth for every position
/// of non-zero value, and a meaningless one for the positions of value 0.
///
/// With `share`: the forward pass asks the owners of the children for their values (so that no
/// rank reads another's slice of a layer at random), in exchanges of at most `share.lookups`
/// lookups; a level's update of a position another rank owns goes to that rank's outbox (memory,
/// then a bucket file in `share.work_dir`) and the outboxes are exchanged at the end of the
/// level, in steps; every decision to go on or stop is agreed by all ranks. The depths do not
/// depend on the number of ranks: within a level every position assigned gets the same depth,
/// whichever update reaches it last.
///
/// Cost: one sequential pass over the values; one move generation per position of non-zero
/// value with lower-layer lookups (wins) or same-layer lookups (losses), prefetched in batches;
/// one predecessor generation per position of non-zero value, its cells prefetched in batches;
/// one sequential scan of the cells per level whose list grew too long (and for levels 0 and 1).
/// Memory: the cells, the current level's list and the next one's (at most
/// [`dtc_working_memory`] minus the cells); with `share`, the lookups of a batch (about 16 bytes
/// each) and up to `share.outbox_bytes` of buffered updates.
///
/// # Errors
/// [`Error::Interrupted`] when `progress` cancels; [`Error::Internal`] when the values are
/// not a solution of the game's equations (a position of non-zero value that no value-keeping
/// move realizes) or a depth exceeds [`DEPTH_LIMIT`] (with `share`: on every rank, agreed);
/// [`Error::Cluster`] when the transport fails; [`Error::Io`] when an outbox bucket cannot be
/// written or read.
///
/// # Panics
/// When `values` or a lower layer is shorter than its layer, `cells` shorter than `own`, or
/// `share` is `None` and `own` is not the whole layer.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_dtc_share(
    rules: Ruleset,
    n: u32,
    values: &[i8],
    lower: &[&[i8]],
    cells: &[AtomicU32],
    own: Range<u64>,
    share: Option<&Share>,
    progress: &dyn Progress,
) -> Result<()> {
    let size = layer_size(n);
    let len = own.end - own.start;
    assert!(values.len() as u64 >= size && cells.len() as u64 >= len && own.end <= size, "layer {n}: values or cells too short");
    assert!(share.is_some() || own == (0..size), "a pass without a share covers the whole layer");
    let meter = Meter { progress, budget: dtc_work_units(len), charged: AtomicU64::new(0) };
    let pass = DtcPass { rules, n, values, lower, cells, own, share, progress, meter: &meter, trace: progress.tracing(), t0: Instant::now() };
    pass.forward()?;
    pass.levels()?;
    pass.check_reached()?;
    meter.finish();
    Ok(())
}

/// What the phases of one dtc pass ([`solve_dtc_share`]) share.
struct DtcPass<'a> {
    rules: Ruleset,
    n: u32,
    values: &'a [i8],
    lower: &'a [&'a [i8]],
    cells: &'a [AtomicU32],
    own: Range<u64>,
    share: Option<&'a Share<'a>>,
    progress: &'a dyn Progress,
    /// The pass's work units, charged as it goes and topped up at the end.
    meter: &'a Meter<'a>,
    trace: bool,
    /// When the pass started.
    t0: Instant,
}

impl DtcPass<'_> {
    /// Every decision to go on or stop, agreed by all ranks.
    fn agree(&self, flag: bool) -> Result<bool> {
        match self.share {
            Some(s) => s.cluster.any(flag),
            None => Ok(flag),
        }
    }

    /// The forward pass (once): the values into the cells, so that same-layer lookups touch the
    /// cells only; then every position whose game is over gets depth 0, a win with a
    /// value-keeping exit depth 1, a loss its count of value-keeping same-layer moves (with
    /// none, depth 1).
    ///
    /// # Errors
    /// [`Error::Interrupted`] when some rank is cancelled; [`Error::Internal`] when a loss has
    /// no move that keeps its value; [`Error::Cluster`] when the transport fails.
    fn forward(&self) -> Result<()> {
        let (rules, n, own, progress) = (self.rules, self.n, &self.own, self.progress);
        progress.phase("dtc: moves");
        let mine = &self.values[own.start as usize..own.end as usize];
        self.cells[..(own.end - own.start) as usize].par_chunks(1 << 16).zip(mine.par_chunks(1 << 16)).for_each(|(c, v)| {
            for (cell, &value) in c.iter().zip(v) {
                cell.store(u32::from(value as u8), Relaxed);
            }
        });
        let broken = AtomicBool::new(false);
        match self.share {
            None => forward(n, 0..layer_size(n), &Local { rules, n, lower: self.lower, cells: self.cells, broken: &broken, progress, meter: self.meter }),
            Some(s) => forward_shared(rules, n, self.values, self.lower, self.cells, own, s, &broken, progress, self.meter)?,
        }
        if self.agree(progress.cancelled())? {
            return Err(Error::Interrupted);
        }
        if self.agree(broken.load(Relaxed))? {
            return Err(Error::Internal(format!("dtc of layer {n}: a lost position has no move that keeps its value")));
        }
        if self.trace {
            progress.trace(&format!("dtc {n}: forward pass {:.2} s", self.t0.elapsed().as_secs_f64()));
        }
        Ok(())
    }

    /// The levels `k = 0, 1, 2, ...`: each level's positions propagated to their predecessors
    /// ([`Level`]), from the lists the level before gathered or found by a scan, then the
    /// updates of other ranks' positions exchanged; until a level (from 1 on) finds none.
    ///
    /// # Errors
    /// [`Error::Internal`] when a depth exceeds [`DEPTH_LIMIT`]; [`Error::Interrupted`] when
    /// some rank is cancelled; [`Error::Cluster`] when the transport fails or another rank
    /// stopped; [`Error::Io`] when an outbox bucket cannot be written or read.
    fn levels(&self) -> Result<()> {
        let (n, progress) = (self.n, self.progress);
        let len = self.own.end - self.own.start;
        let (mut prop_s, mut levels_scanned) = (0.0, 0);
        let ranks = self.share.map_or(1, |s| s.cluster.size());
        let outbox = match self.share {
            Some(s) => Some(Inboxes::named(s.work_dir, "inbox", ranks, s.outbox_bytes)?),
            None => None,
        };
        let owners = Ownership::new(layer_size(n), ranks);
        let cap = level_list_cap(len);
        let failure = Failure::new();
        // The positions of the current level with their values: lists gathered while the previous
        // level was propagated, or `None` when they must be found by a scan (levels 0 and 1, and
        // levels whose list grew beyond the cap). Boards are kept, so no position is unranked (but
        // those another rank's update assigned).
        let mut list: Option<Vec<Vec<(Board, i8)>>> = None;
        let mut k: u16 = 0;
        loop {
            progress.phase(&format!("dtc: depth {k}"));
            if k == DEPTH_LIMIT {
                return Err(Error::Internal(format!("dtc of layer {n}: a depth beyond {DEPTH_LIMIT}")));
            }
            let tp = Instant::now();
            let level = Level {
                rules: self.rules,
                n,
                cells: self.cells,
                own: &self.own,
                owners,
                ranks,
                outbox: outbox.as_ref(),
                failure: &failure,
                progress,
                meter: self.meter,
                deeper: assigned(k + 1),
                cap,
                next: Mutex::new(Vec::new()),
                collected: AtomicU64::new(0),
                overflow: AtomicBool::new(false),
                found: AtomicU64::new(0),
            };
            match list.take() {
                Some(pieces) if k >= 2 => level.propagate_lists(&pieces),
                _ => {
                    levels_scanned += 1;
                    level.scan(k);
                }
            }
            // A rank that failed (an outbox not written) stops every rank before the exchange.
            if self.agree(failure.failed.load(Relaxed))? {
                failure.take()?;
                return Err(Error::Cluster(ClusterError::PeerStopped));
            }
            // The updates of other ranks' positions, exchanged in steps and applied by their owners.
            if let (Some(s), Some(outbox)) = (self.share, &outbox) {
                exchange_outboxes(s.cluster, outbox, &mut |got| {
                    level.apply(&got);
                    Ok(())
                })?;
            }
            prop_s += tp.elapsed().as_secs_f64();
            if self.agree(progress.cancelled())? {
                return Err(Error::Interrupted);
            }
            let found = level.found.load(Relaxed);
            let none_found = match self.share {
                Some(s) => s.cluster.sum(&[found])?[0] == 0,
                None => found == 0,
            };
            if none_found && k >= 1 {
                break;
            }
            list = level.next_list();
            k += 1;
        }
        if self.trace {
            progress
                .trace(&format!("dtc {n}: {k} levels ({levels_scanned} scanned), propagation {prop_s:.2} s, total {:.2} s", self.t0.elapsed().as_secs_f64()));
        }
        Ok(())
    }

    /// Every position of non-zero value must have been reached (on every rank: agreed).
    ///
    /// # Errors
    /// [`Error::Internal`] when one was not; [`Error::Cluster`] when the transport fails.
    fn check_reached(&self) -> Result<()> {
        let (n, base) = (self.n, self.own.start);
        let cells = self.cells;
        let missing = split(self.own.clone(), CHUNK).par_iter().find_map_first(|r| {
            (r.start..r.end).find(|&i| {
                let c = cells[(i - base) as usize].load(Relaxed);
                value_of(c) != 0 && c & ASSIGNED == 0
            })
        });
        let anywhere = self.agree(missing.is_some())?;
        if let Some(i) = missing {
            let board = unrank_unchecked(n, i);
            return Err(Error::Internal(format!(
                "dtc of layer {n}: position {board:?} (index {i}, value {}) is never realized by value-keeping moves",
                self.values[i as usize]
            )));
        }
        if anywhere {
            return Err(Error::Internal(format!("dtc of layer {n}: another rank found a position that no value-keeping move realizes")));
        }
        Ok(())
    }
}

/// One level `k` of the propagation: the positions of depth `k` propagated to their
/// same-layer predecessors, which may get depth `k + 1` and go to the next level's list.
struct Level<'a> {
    rules: Ruleset,
    n: u32,
    cells: &'a [AtomicU32],
    own: &'a Range<u64>,
    owners: Ownership,
    ranks: usize,
    /// The outboxes to the other ranks (with a share).
    outbox: Option<&'a Inboxes>,
    failure: &'a Failure,
    progress: &'a dyn Progress,
    meter: &'a Meter<'a>,
    /// The cell bits of depth `k + 1`.
    deeper: u32,
    /// Most positions the next level's list holds.
    cap: u64,
    /// The next level's list, in pieces, and how many positions it was given.
    next: Mutex<Vec<Vec<(Board, i8)>>>,
    collected: AtomicU64,
    /// The list outgrew `cap`: the next level is found by a scan.
    overflow: AtomicBool,
    /// Positions of depth `k` propagated.
    found: AtomicU64,
}

impl Level<'_> {
    /// One update of position `jq` (global index, this rank's) by a child of value `-want`:
    /// whether it assigned the position (depth `k + 1`).
    #[inline]
    fn update(&self, jq: u64, want: i8) -> bool {
        let cell = &self.cells[(jq - self.own.start) as usize];
        let cur = cell.load(Relaxed);
        if value_of(cur) != want {
            return false;
        }
        if want > 0 {
            cur & ASSIGNED == 0 && cell.compare_exchange(cur, cur | self.deeper, Relaxed, Relaxed).is_ok()
        } else {
            let prev = cell.fetch_sub(COUNT_ONE, Relaxed);
            debug_assert!(prev & COUNT != 0 && prev & ASSIGNED == 0, "dtc counter: un-moves and moves disagree");
            if prev & COUNT == COUNT_ONE {
                cell.fetch_or(self.deeper, Relaxed);
                true
            } else {
                false
            }
        }
    }

    /// The positions a block assigned, for the next level's list.
    fn gather(&self, assigned: Vec<(Board, i8)>) {
        if !assigned.is_empty() && !self.overflow.load(Relaxed) {
            if self.collected.fetch_add(assigned.len() as u64, Relaxed) + assigned.len() as u64 > self.cap {
                self.overflow.store(true, Relaxed);
            } else {
                self.next.lock().unwrap_or_else(|p| p.into_inner()).push(assigned);
            }
        }
    }

    /// Propagates a block of the level's positions; newly assigned ones go to the next list,
    /// updates of other ranks' positions to their outboxes.
    fn propagate(&self, block: &[(Board, i8)]) {
        let (own, base, cells) = (self.own, self.own.start, self.cells);
        let mut mine = Vec::new();
        let mut batch: Vec<(u64, Board, i8)> = Vec::with_capacity(BATCH * 8);
        let mut away: Vec<Vec<u64>> = vec![Vec::new(); self.ranks];
        for group in block.chunks(BATCH) {
            batch.clear();
            for (board, v) in group {
                for_each_ranked_predecessor(self.rules, board, |q, jq| {
                    if own.contains(&jq) {
                        prefetch(&cells[(jq - base) as usize]);
                        batch.push((jq, *q, -v));
                    } else {
                        away[self.owners.owner(jq)].push(message(jq, -v));
                    }
                });
            }
            for &(jq, q, want) in &batch {
                if self.update(jq, want) && !self.overflow.load(Relaxed) {
                    mine.push((q, want));
                }
            }
        }
        if let Some(outbox) = self.outbox {
            for (d, m) in away.iter().enumerate().filter(|(_, m)| !m.is_empty()) {
                if let Err(e) = outbox.send(d, m) {
                    self.failure.set(e);
                }
            }
        }
        self.gather(mine);
        self.found.fetch_add(block.len() as u64, Relaxed);
        self.meter.charge(block.len() as u64 * PROPAGATE_UNITS);
    }

    /// The level's positions from the lists the level before gathered, in parallel blocks.
    fn propagate_lists(&self, pieces: &[Vec<(Board, i8)>]) {
        pieces.par_iter().flat_map(|p| p.par_chunks(1 << 12)).for_each(|block| {
            if !self.progress.cancelled() && !self.failure.failed.load(Relaxed) {
                self.propagate(block);
            }
        });
    }

    /// The level's positions found by a scan of the cells: each chunk's positions of depth `k`
    /// (positions assigned meanwhile get `k + 1`, so the scan is not disturbed), propagated
    /// chunk by chunk.
    fn scan(&self, k: u16) {
        let (n, base, cells) = (self.n, self.own.start, self.cells);
        let want = assigned(k);
        let mask = ASSIGNED | (u32::from(u16::MAX) << DEPTH_SHIFT);
        split(self.own.clone(), CHUNK).par_iter().for_each(|r| {
            if self.progress.cancelled() || self.failure.failed.load(Relaxed) {
                return;
            }
            let walker = LayerWalker::new(n, r.clone()).expect("n <= 48 was checked");
            let block: Vec<(Board, i8)> = walker
                .filter_map(|(i, b)| {
                    let c = cells[(i - base) as usize].load(Relaxed);
                    (c & mask == want && value_of(c) != 0).then_some((b, value_of(c)))
                })
                .collect();
            self.propagate(&block);
            self.meter.charge((r.end - r.start) / SCAN_POSITIONS_PER_UNIT);
        });
    }

    /// Applies the updates other ranks sent (messages), in prefetched batches.
    fn apply(&self, got: &[u64]) {
        let (n, base, cells) = (self.n, self.own.start, self.cells);
        got.par_chunks(1 << 12).for_each(|msgs| {
            let mut mine = Vec::new();
            for group in msgs.chunks(BATCH) {
                for &m in group {
                    prefetch(&cells[(m & INDEX_MASK) as usize - base as usize]);
                }
                for &m in group {
                    let (jq, want) = (m & INDEX_MASK, (m >> WANT_SHIFT) as u8 as i8);
                    if self.update(jq, want) && !self.overflow.load(Relaxed) {
                        mine.push((unrank_unchecked(n, jq), want));
                    }
                }
            }
            self.gather(mine);
        });
    }

    /// The next level's list, unless it outgrew its cap.
    fn next_list(self) -> Option<Vec<Vec<(Board, i8)>>> {
        if self.overflow.load(Relaxed) {
            None
        } else {
            Some(self.next.into_inner().unwrap_or_else(|p| p.into_inner()))
        }
    }
}

/// An update of position `j` (another rank's) by a child of value `-want`, as a message: the
/// index in bits 0..56 (layer 48 has fewer than 2^39 positions), `want` above.
const WANT_SHIFT: u32 = 56;
const INDEX_MASK: u64 = (1 << WANT_SHIFT) - 1;

#[inline]
fn message(j: u64, want: i8) -> u64 {
    j | (u64::from(want as u8) << WANT_SHIFT)
}

/// The forward pass in one process as a forward loop's kind: the values a position needs
/// looked up (a loss's same-layer children in the cells, a win's captured children in the
/// lower layers) and folded into its [`Parent`].
struct Local<'a> {
    rules: Ruleset,
    n: u32,
    lower: &'a [&'a [i8]],
    cells: &'a [AtomicU32],
    broken: &'a AtomicBool,
    progress: &'a dyn Progress,
    meter: &'a Meter<'a>,
}

impl Forward for Local<'_> {
    type Parent = Parent;
    /// The child's layer (`n`: this one, in the cells) and index.
    type Lookup = (u32, usize);

    fn stopped(&self) -> bool {
        self.progress.cancelled() || self.broken.load(Relaxed)
    }

    #[inline]
    fn moves(&self, i: u64, board: &Board, mut lookup: impl FnMut((u32, usize))) -> Option<Parent> {
        forward_moves(self.rules, self.n, self.cells, 0, i, board, |m, j| lookup((m, j as usize)))
    }

    #[inline]
    fn prefetch(&self, (m, j): (u32, usize)) {
        if m == self.n {
            prefetch(&self.cells[j]);
        } else {
            prefetch(&self.lower[m as usize][j]);
        }
    }

    #[inline]
    fn fold(&self, g: &mut Parent, (m, j): (u32, usize)) {
        if m == self.n {
            g.count += u32::from(value_of(self.cells[j].load(Relaxed)) == -g.value);
        } else {
            g.exit |= (self.n - m) as i8 - self.lower[m as usize][j] == g.value;
        }
    }

    #[inline]
    fn finish(&self, p: &Parent) {
        finish_forward(self.rules, self.n, self.lower, self.cells, 0, p, self.broken);
    }

    fn chunk_done(&self, positions: u64) {
        self.meter.charge(positions * FORWARD_UNITS);
    }
}

/// A chunk's positions of the forward pass and their lookups (key, position in the chunk).
type Collected = (Vec<Parent>, Vec<(u64, u32)>);

/// A position of the forward pass waiting for its children's values.
#[derive(Clone, Copy)]
struct Parent {
    /// Its index in the layer.
    index: u64,
    value: i8,
    /// A value-keeping exit (capture or ending) seen.
    exit: bool,
    /// Value-keeping same-layer moves counted (losses).
    count: u32,
}

/// The forward pass's first half for position `i` (`board`): nothing for a position of value 0;
/// depth 0 set at once for a game over; otherwise the position, with `lookup(m, j)` called for
/// each child whose value it needs (layer `m`, index `j`: same-layer children of a loss, captured
/// children of a win).
#[inline]
fn forward_moves(rules: Ruleset, n: u32, cells: &[AtomicU32], base: u64, i: u64, board: &Board, mut lookup: impl FnMut(u32, u64)) -> Option<Parent> {
    let v = value_of(cells[(i - base) as usize].load(Relaxed));
    if v == 0 {
        return None;
    }
    let moves = rules.moves(board);
    if moves.ending().is_some() {
        cells[(i - base) as usize].store(u32::from(v as u8) | assigned(0), Relaxed);
        return None;
    }
    let mut exit = false;
    for m in moves.as_slice() {
        match m.outcome {
            Outcome::End { value } => exit |= value == v,
            // Wins need only their exits, losses their same-layer moves.
            Outcome::Child { captured: 0, child } if v < 0 => lookup(n, rank_unchecked(&child)),
            Outcome::Child { captured, child } if captured > 0 && v > 0 => lookup(n - u32::from(captured), rank_unchecked(&child)),
            Outcome::Child { .. } => {}
        }
    }
    Some(Parent { index: i, value: v, exit, count: 0 })
}

/// The forward pass's second half: the cell of a position whose children's values are in.
#[inline]
fn finish_forward(rules: Ruleset, n: u32, lower: &[&[i8]], cells: &[AtomicU32], base: u64, p: &Parent, broken: &AtomicBool) {
    let cell = if p.value > 0 {
        if p.exit {
            assigned(1)
        } else {
            0
        }
    } else if p.count == 0 {
        // Its value comes from an exit (checked here, off the common path).
        if !p.exit && !has_keeping_capture(rules, n, p.index, p.value, lower) {
            broken.store(true, Relaxed);
        }
        assigned(1)
    } else {
        p.count << COUNT_SHIFT
    };
    cells[(p.index - base) as usize].store(u32::from(p.value as u8) | cell, Relaxed);
}

/// The forward pass of a rank's share: positions in index order, in batches of at most
/// `share.lookups` lookups sent to the owners of the children, answered from the owners' slices
/// (read in sorted order) and folded in. Every rank takes part in every exchange until no rank
/// has positions left.
#[allow(clippy::too_many_arguments)]
fn forward_shared(
    rules: Ruleset,
    n: u32,
    values: &[i8],
    lower: &[&[i8]],
    cells: &[AtomicU32],
    own: &Range<u64>,
    share: &Share,
    broken: &AtomicBool,
    progress: &dyn Progress,
    meter: &Meter,
) -> Result<()> {
    let cluster = share.cluster;
    let ranks = cluster.size();
    let owners: Vec<Ownership> = (0..=n).map(|m| Ownership::new(layer_size(m), ranks)).collect();
    let mask = (1u64 << KEY_SHIFT) - 1;
    let dest = |key: u64| owners[(key >> KEY_SHIFT) as usize].owner(key & mask);
    let layer = |m: u32| if m == n { values } else { lower[m as usize] };
    let cap = share.lookups.max(1 << 12) as usize;
    let ranges = split(own.clone(), CHUNK);
    let group = rayon::current_num_threads().max(1);
    let mut next = 0;
    loop {
        // Collect a batch: its positions and their lookups (key, position in the batch).
        let mut parents: Vec<Parent> = Vec::new();
        let mut lookups: Vec<(u64, u32)> = Vec::new();
        while next < ranges.len() && lookups.len() < cap && !(progress.cancelled() || broken.load(Relaxed)) {
            let rs = &ranges[next..(next + group).min(ranges.len())];
            let got: Vec<Collected> = rs
                .par_iter()
                .map(|r| {
                    let mut ps = Vec::new();
                    let mut ls = Vec::new();
                    for (i, b) in LayerWalker::new(n, r.clone()).expect("n <= 48 was checked") {
                        let k = ps.len() as u32;
                        if let Some(p) = forward_moves(rules, n, cells, own.start, i, &b, |m, j| ls.push(((u64::from(m) << KEY_SHIFT) | j, k))) {
                            ps.push(p);
                        }
                    }
                    meter.charge((r.end - r.start) * FORWARD_UNITS);
                    (ps, ls)
                })
                .collect();
            for (ps, ls) in got {
                let at = parents.len() as u32;
                lookups.extend(ls.into_iter().map(|(key, k)| (key, k + at)));
                parents.extend(ps);
            }
            next += rs.len();
        }
        // Ask the owners, in destination order; each reads its slices in sorted order.
        lookups.par_sort_unstable_by_key(|&(key, _)| (dest(key), key));
        let answer = |key: u64| layer((key >> KEY_SHIFT) as u32)[(key & mask) as usize] as u8;
        let back = ask_owners(cluster, &lookups, &dest, &answer, &mut |_, _| {})?;
        // Fold the answers in: counts of a loss's value-keeping moves, a win's value-keeping
        // captures.
        for (&(key, k), &w) in lookups.iter().zip(&back) {
            let (m, w) = ((key >> KEY_SHIFT) as u32, w as i8);
            let p = &mut parents[k as usize];
            if m == n {
                p.count += u32::from(w == -p.value);
            } else {
                p.exit |= (n - m) as i8 - w == p.value;
            }
        }
        parents.par_iter().for_each(|p| finish_forward(rules, n, lower, cells, own.start, p, broken));
        let more = next < ranges.len() && !(progress.cancelled() || broken.load(Relaxed));
        if !cluster.any(more)? {
            break;
        }
    }
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
    /// Cells for `len` positions of layer `n`.
    fn new(n: u32, len: u64, file: Option<&Path>) -> Result<DtcCells> {
        // A share of no positions still maps one page.
        let len = len.max(1);
        Ok(match file {
            None => DtcCells::Memory(huge_zeroed(4 * len as usize).map_err(|_| Error::OutOfMemory {
                layer: n,
                needed: dtc_working_memory(len),
                available: 0,
                limit: MemoryLimit::Refused,
            })?),
            // Four of the scratch state's one-byte cells per position.
            Some(path) => DtcCells::File(ScratchState::create(path, 4 * len)?),
        })
    }

    fn all(&self) -> &[AtomicU32] {
        let (ptr, bytes) = match self {
            DtcCells::Memory(m) => (m.as_ptr(), m.len()),
            DtcCells::File(f) => {
                let c = f.cells();
                (c.as_ptr().cast::<u8>(), c.len())
            }
        };
        // SAFETY: both maps are page-aligned (so 4-aligned), writable, zero-initialised and
        // alive as long as `self`; zero is a valid AtomicU32 and all access goes through this
        // atomic view.
        unsafe { std::slice::from_raw_parts(ptr.cast::<AtomicU32>(), bytes / 4) }
    }
}

/// The depths to capture of a layer's positions (or of a rank's share of them), as
/// [`solve_dtc_layer`] computed them.
pub(crate) struct DtcDepths {
    cells: DtcCells,
    own: Range<u64>,
}

impl DtcDepths {
    /// The depth of position `i`, whose value is `value` (`None` for value 0).
    ///
    /// # Panics
    /// When `i` is not one of the positions computed.
    #[inline]
    pub(crate) fn depth(&self, i: u64, value: i8) -> Option<u16> {
        assert!(self.own.contains(&i), "position {i} is not in the share {:?}", self.own);
        (value != 0).then(|| depth_of(self.cells.all()[(i - self.own.start) as usize].load(Relaxed)))
    }
}

/// [`solve_dtc_share`] with cells of its own: in anonymous memory, or in the scratch file
/// `scratch` (four bytes per position, paged by the system) when the memory would not hold them.
///
/// # Errors
/// As [`solve_dtc_share`]; [`Error::OutOfMemory`] / [`Error::Io`] when the cells cannot be had.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_dtc_layer(
    rules: Ruleset,
    n: u32,
    values: &[i8],
    lower: &[&[i8]],
    own: Range<u64>,
    share: Option<&Share>,
    scratch: Option<&Path>,
    progress: &dyn Progress,
) -> Result<DtcDepths> {
    let cells = DtcCells::new(n, own.end - own.start, scratch)?;
    solve_dtc_share(rules, n, values, lower, cells.all(), own.clone(), share, progress)?;
    Ok(DtcDepths { cells, own })
}

/// The depth held by a cell [`solve_dtc_share`] finished, for a position of non-zero value.
#[inline]
pub(crate) fn depth_of(cell: u32) -> u16 {
    (cell >> DEPTH_SHIFT) as u16
}
