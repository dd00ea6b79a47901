//! Threshold-descending retrograde analysis of one layer (see `docs/values.md`), in memory or
//! out of core.
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
//! The values are copied into the layer file's payload at the end.
//!
//! Parallelism: each threshold's seed scan runs over index chunks in parallel; the positions a
//! thread resolves go on that thread's own stack and are propagated from it in batches. Resolution is an atomic
//! compare-and-swap setting the resolved flag, so each position is resolved exactly once, and within one
//! threshold every resolved position gets the same `±t` whatever the order: the result does not
//! depend on the number of threads or on scheduling.
//!
//! # Out of core
//!
//! With [`OutOfCore`] limits the state lives in a scratch file, split into *parts* (consecutive
//! index ranges); one part's pages are resident at a time and are given back when the solver moves
//! on. An update for a position of another part becomes a message in that part's bucket
//! ([`Inboxes`]); a threshold is done when a round over the parts leaves every bucket empty.
//! The order in which a threshold's updates are applied does not change its result (the sets
//! WIN and LOSS it ends with are the least fixed point of the threshold's rules), so the bytes
//! are those of the in-memory solve. The exits pass reads the lower layers in sorted order:
//! each part's capture lookups are collected, sorted by their place in the lower layers and
//! served in one sweep, whose pages are given back window by window.
//!
//! # Checkpoints
//!
//! The state after a phase (a stretch of the exits pass, a threshold) is a deterministic
//! function of the layer, so it can be saved ([`Checkpoint`]) and a later run resumes from it,
//! in either mode, with identical results.

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::error::{Error, MemoryLimit, Result};
use crate::index::{in_some_layer, layer_size, rank_unchecked, unrank_unchecked, LayerWalker};
use crate::progress::Progress;
use crate::rules::{for_each_predecessor, Board, Outcome, Ruleset};
use crate::spill::{Checkpoint, Inboxes, Progress as Reached, ScratchState, Unusable, STATE_FILE};

pub(super) const RESOLVED: u16 = 0x8000;
const PENDING_SHIFT: u32 = 8;
const PENDING_ONE: u16 = 1 << PENDING_SHIFT;
pub(super) const PENDING: u16 = 0x7 << PENDING_SHIFT;
/// Best-exit marker for "no move leaves the layer" (below every real value, -48).
const NO_EXIT: i8 = i8::MIN;
/// Positions per parallel work item; parts are multiples of it.
pub const CHUNK: u64 = 1 << 15;
/// Bit of a message: "a child was lost" (else: "a child entered WIN").
pub(super) const LOST: u64 = 1 << 63;
/// Bit position of the layer number in a lookup key (the index takes the bits below).
pub(super) const KEY_SHIFT: u32 = 40;

/// Checkpoints are at least this many times as far apart as a save takes.
pub const CHECKPOINT_COST_RATIO: u32 = 10;

/// Work units per position of the exits pass (progress and ETA).
pub(super) const EXIT_UNITS: u64 = 8;
/// Work units per position a threshold resolves (its propagation dominates the threshold).
pub(super) const RESOLVE_UNITS: u64 = 16;
/// Positions per work unit of a scan (a threshold's seed scan, the final pass).
const SCAN_POSITIONS_PER_UNIT: u64 = 8;

/// Work units of scanning `positions` positions.
pub(super) fn scan_units(positions: u64) -> u64 {
    positions / SCAN_POSITIONS_PER_UNIT
}

/// How a layer's solve is divided into work units, so that progress moves at an even speed
/// and an ETA from the average speed holds across phases (the exits pass, thresholds that
/// resolve many positions and thresholds that resolve few).
///
/// Measured on awari layer 24 (2 threads): the exits pass costs about 130 ns per position, a
/// threshold about 1 ns per position scanned plus 250 ns per position it resolves. A threshold's
/// weight therefore comes from how many positions it is expected to resolve: the positions of
/// value `±t` in a layer of the same parity (layer `n − 2`) scaled to this layer's size, or a
/// generic shape when that is unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkModel {
    size: u64,
    /// Units of threshold `t` at index `t - 1`.
    thresholds: Vec<u64>,
}

impl WorkModel {
    /// The model of layer `n`. `expected`, when given, holds at index `t` the number of
    /// positions of value `t` or `-t` expected in the layer (index 0, draws, is not used);
    /// missing entries count as none.
    ///
    /// Cost: O(n).
    pub fn new(n: u32, expected: Option<&[u64]>) -> WorkModel {
        let size = layer_size(n.min(crate::index::MAX_STONES));
        let scan = scan_units(size);
        // Without expectations, a generic shape: four fifths of the layer decided, falling off
        // as e^(-t/4).
        let norm: f64 = (1..=n).map(|u| (-f64::from(u) / 4.0).exp()).sum();
        let thresholds = (1..=n as usize)
            .map(|t| {
                let resolved = match expected {
                    Some(e) => e.get(t).copied().unwrap_or(0).min(size),
                    None => (size as f64 * 0.8 * (-(t as f64) / 4.0).exp() / norm) as u64,
                };
                scan + resolved * RESOLVE_UNITS
            })
            .collect();
        WorkModel { size, thresholds }
    }

    /// The model of layer `n` from the value counts of layer `n - 2` (positions by value, as in
    /// its statistics), scaled to layer `n`'s size.
    ///
    /// Cost: O(n).
    pub fn from_counts(n: u32, counts: &std::collections::BTreeMap<i32, u64>) -> WorkModel {
        if n < 2 {
            return WorkModel::new(n, None);
        }
        let scale = layer_size(n) as f64 / layer_size(n - 2).max(1) as f64;
        let expected: Vec<u64> = (0..=n as i32)
            .map(|t| {
                let c = counts.get(&t).copied().unwrap_or(0) + if t > 0 { counts.get(&-t).copied().unwrap_or(0) } else { 0 };
                (c as f64 * scale) as u64
            })
            .collect();
        WorkModel::new(n, Some(&expected))
    }

    /// Units of the exits pass over `positions` positions.
    pub(super) fn exits(&self, positions: u64) -> u64 {
        positions * EXIT_UNITS
    }

    /// Units of threshold `t` over `positions` of the layer's positions.
    pub(super) fn threshold(&self, t: u32, positions: u64) -> u64 {
        let w = self.thresholds.get(t as usize - 1).copied().unwrap_or(0);
        (u128::from(w) * u128::from(positions) / u128::from(self.size.max(1))) as u64
    }

    /// Units of the final pass over `positions` positions.
    pub(super) fn draws(&self, positions: u64) -> u64 {
        scan_units(positions)
    }

    /// Units of checking the solved layer before it is published (a spot check and a count of
    /// its values, done by the caller, which advances progress by them): four scans.
    pub fn check(&self) -> u64 {
        4 * scan_units(self.size)
    }

    /// The units a solve of `positions` of the layer's positions reports (a rank's share of a
    /// distributed solve; all of them: [`WorkModel::total`] less [`WorkModel::check`]).
    pub fn solve(&self, positions: u64) -> u64 {
        self.exits(positions) + (1..=self.thresholds.len() as u32).map(|t| self.threshold(t, positions)).sum::<u64>() + self.draws(positions)
    }

    /// All the units of the layer, [`WorkModel::check`] included.
    pub fn total(&self) -> u64 {
        self.exits(self.size) + self.thresholds.iter().sum::<u64>() + self.draws(self.size) + self.check()
    }
}

/// Total work units of solving layer `n` with the generic model ([`WorkModel::new`]).
pub fn work_units(n: u32) -> u64 {
    WorkModel::new(n, None).total()
}

/// Bytes of working memory [`solve_layer`] allocates besides its output in memory mode: two
/// per position.
pub fn working_memory(n: u32) -> u64 {
    2 * layer_size(n)
}

/// Limits of an out-of-core solve: how much of each kind of data may be resident at once.
pub struct OutOfCore<'a> {
    /// Positions per part (rounded to a multiple of [`CHUNK`]); the part's state takes two
    /// bytes per position.
    pub part_len: u64,
    /// Bytes of capture lookups collected before they are sorted and served (16 per lookup).
    pub lookup_bytes: u64,
    /// Bytes of the lower layers read between two releases of their pages.
    pub lower_window: u64,
    /// Bytes of messages buffered in memory in front of the bucket files.
    pub message_bytes: u64,
    /// Directory for the scratch files (state and buckets).
    pub work_dir: &'a Path,
    /// Gives back the pages of bytes `range` of lower layer `m` (a file mapping).
    pub release_lower: &'a (dyn Fn(u32, Range<u64>) + Sync),
    /// Gives back the pages of bytes `range` of the output (a file mapping).
    pub release_out: &'a (dyn Fn(Range<u64>) + Sync),
}

/// Options of [`solve_layer_with`].
#[derive(Default)]
pub struct SolveOptions<'a> {
    /// Solve out of core within these limits (`None`: the whole state in memory).
    pub out_of_core: Option<OutOfCore<'a>>,
    /// Save progress here at phase boundaries, and resume from it when it is valid.
    pub checkpoint: Option<&'a Checkpoint>,
    /// Least time between two checkpoints. When it is not zero, the interval also grows to
    /// [`CHECKPOINT_COST_RATIO`] times what the last save took, so that saving a large state
    /// costs at most about a tenth of the solve. Zero: at every phase boundary (for tests).
    pub checkpoint_every: Duration,
    /// Receives messages for the user (a checkpoint resumed or discarded).
    pub note: Option<&'a (dyn Fn(&str) + Sync)>,
    /// How progress is counted (`None`: [`WorkModel::new`] without expectations).
    pub work: Option<&'a WorkModel>,
}

#[inline]
pub(super) fn value_of(s: u16) -> i8 {
    s as u8 as i8
}

#[inline]
pub(super) fn pack(value: i8, pending: u8) -> u16 {
    u16::from(value as u8) | (u16::from(pending) << PENDING_SHIFT)
}

/// The first error of a parallel phase, which also stops the phase.
pub(super) struct Failure {
    pub(super) failed: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl Failure {
    pub(super) fn new() -> Failure {
        Failure { failed: AtomicBool::new(false), error: Mutex::new(None) }
    }
    fn set(&self, e: Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(e);
        }
        self.failed.store(true, Relaxed);
    }
    pub(super) fn take(&self) -> Result<()> {
        match self.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Where a message goes: a bucket of this process's parts, or another rank.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// Part `k` of this process's positions.
    Part(usize),
    /// Rank `r` of a distributed solve.
    Rank(usize),
}

/// Routes messages for positions outside the part being solved: to the buckets of this
/// process's other parts (positions `own`, in parts of `part_len`), or, in a distributed solve,
/// to the outbox of the rank that owns them.
pub(super) struct Router<'a> {
    pub(super) own: Range<u64>,
    pub(super) part_len: u64,
    pub(super) parts: Option<&'a Inboxes>,
    pub(super) ranks: Option<(crate::solver::cluster::Ownership, &'a Inboxes)>,
}

impl Router<'_> {
    #[inline]
    pub(super) fn route(&self, j: u64) -> Route {
        match self.ranks {
            Some((owners, _)) if !self.own.contains(&j) => Route::Rank(owners.owner(j)),
            _ => Route::Part(((j - self.own.start) / self.part_len) as usize),
        }
    }

    /// Sends `messages` to their buckets, grouped by destination (sorted on the way), and
    /// empties it.
    ///
    /// # Errors
    /// [`Error::Io`] when a bucket file cannot be written.
    pub(super) fn send_all(&self, messages: &mut Vec<u64>) -> Result<()> {
        messages.sort_unstable_by_key(|m| m & !LOST);
        for group in messages.chunk_by(|a, b| self.route(a & !LOST) == self.route(b & !LOST)) {
            self.send(self.route(group[0] & !LOST), group)?;
        }
        messages.clear();
        Ok(())
    }

    fn send(&self, to: Route, messages: &[u64]) -> Result<()> {
        match (to, self.parts, self.ranks) {
            (Route::Part(k), Some(inboxes), _) => inboxes.send(k, messages),
            (Route::Rank(r), _, Some((_, outbox))) => outbox.send(r, messages),
            _ => Err(Error::Internal("a message for a position no bucket receives".into())),
        }
    }
}

/// The cells of one part (the whole layer in memory mode) and where messages for the others go.
pub(super) struct State<'a> {
    pub(super) rules: Ruleset,
    pub(super) n: u32,
    /// Cells of positions `base..base + cells.len()`.
    pub(super) cells: &'a [AtomicU16],
    pub(super) base: u64,
    /// Where messages for positions outside `cells` go (none in memory).
    pub(super) remote: Option<&'a Router<'a>>,
    pub(super) failure: &'a Failure,
    /// Counts the threshold's work for progress.
    pub(super) meter: &'a Meter<'a>,
}

/// The work units one threshold may advance progress by ([`WorkModel`]'s estimate), charged
/// as the threshold scans and propagates (in any part, in any round) and never beyond the
/// estimate; [`Meter::finish`] gives what is left when the threshold is done.
pub(super) struct Meter<'a> {
    pub(super) progress: &'a dyn Progress,
    pub(super) budget: u64,
    pub(super) charged: AtomicU64,
}

impl Meter<'_> {
    pub(super) fn charge(&self, units: u64) {
        let before = self.charged.fetch_add(units, Relaxed);
        let give = units.min(self.budget.saturating_sub(before));
        if give > 0 {
            self.progress.advance(give);
        }
    }

    pub(super) fn finish(&self) {
        let before = self.charged.swap(u64::MAX / 2, Relaxed);
        if before < self.budget {
            self.progress.advance(self.budget - before);
        }
    }
}

/// Thread-local scratch of a propagation.
#[derive(Default)]
pub(super) struct Scratch {
    stack: Vec<(Board, i8)>,
    batch: Vec<(usize, Board, bool)>,
    sends: Vec<u64>,
    /// Positions propagated since the last charge to the meter.
    propagated: u64,
}

/// Messages buffered per thread before they are handed to the buckets.
const SENDS: usize = 1 << 13;

impl State<'_> {
    /// Marks cell `k` resolved with value `v`; false when it already was (another thread may
    /// have got there first).
    #[inline]
    fn resolve(&self, k: usize, v: i8) -> bool {
        let cell = &self.cells[k];
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

    /// Applies to cell `k` (board `q`) the news that one of its children entered LOSS
    /// (`child_lost`) or WIN at threshold `t`; a newly resolved position goes on `stack`.
    #[inline]
    fn update(&self, t: i8, k: usize, q: impl FnOnce() -> Board, child_lost: bool, stack: &mut Vec<(Board, i8)>) {
        if child_lost {
            // q can move to a position lost by at least t: q wins at least t.
            if self.resolve(k, t) {
                stack.push((q(), t));
            }
        } else {
            // One more of q's same-layer moves is worth -t or less. (Resolved positions
            // are decremented too: harmless, as each same-layer move is counted once.)
            let prev = self.cells[k].fetch_sub(PENDING_ONE, Relaxed);
            debug_assert!(prev & PENDING != 0, "pending counter underflow: un-moves and moves disagree");
            if prev & RESOLVED == 0 && prev & PENDING == PENDING_ONE && value_of(prev) <= -t && self.resolve(k, -t) {
                stack.push((q(), -t));
            }
        }
    }

    /// Propagates every position on the stack (resolved at threshold `t`) to its same-layer
    /// predecessors until the stack is empty; predecessors in other parts get messages.
    ///
    /// Works in batches: the predecessors of up to [`BATCH`] positions are generated and their
    /// cells prefetched first, then updated, so that many cache misses are in flight at once
    /// instead of one after the other.
    fn propagate(&self, t: i8, s: &mut Scratch) {
        let len = self.cells.len() as u64;
        while !s.stack.is_empty() {
            s.batch.clear();
            for _ in 0..BATCH {
                let Some((board, v)) = s.stack.pop() else { break };
                s.propagated += 1;
                for_each_predecessor(self.rules, &board, |q, _pit| {
                    if in_some_layer(q) {
                        let j = rank_unchecked(q);
                        let k = j.wrapping_sub(self.base);
                        if k < len {
                            prefetch(&self.cells[k as usize]);
                            s.batch.push((k as usize, *q, v < 0));
                        } else {
                            s.sends.push(j | if v < 0 { LOST } else { 0 });
                        }
                    }
                });
            }
            for &(k, q, child_lost) in s.batch.iter() {
                self.update(t, k, || q, child_lost, &mut s.stack);
            }
            if s.sends.len() >= SENDS {
                self.flush(&mut s.sends);
            }
        }
    }

    /// Hands the buffered messages to the buckets of their parts.
    fn flush(&self, sends: &mut Vec<u64>) {
        let Some(router) = self.remote else { return };
        if let Err(e) = router.send_all(sends) {
            self.failure.set(e);
        }
    }

    /// Applies a block of messages to this part and propagates what they resolve.
    pub(super) fn apply(&self, t: i8, messages: &[u64]) {
        messages.par_chunks(1 << 12).for_each_init(Scratch::default, |s, block| {
            for &m in block {
                let j = m & !LOST;
                let k = (j - self.base) as usize;
                self.update(t, k, || unrank_unchecked(self.n, j), m & LOST != 0, &mut s.stack);
                if s.stack.len() >= BATCH {
                    self.propagate(t, s);
                }
            }
            self.propagate(t, s);
            self.flush(&mut s.sends);
            self.meter.charge(std::mem::take(&mut s.propagated) * RESOLVE_UNITS);
        });
    }

    /// Seeds threshold `t` from the cells of `range` (part-relative) and propagates.
    pub(super) fn seed(&self, t: i8, range: Range<u64>, progress: &dyn Progress) {
        let ranges: Vec<Range<u64>> = split(range, CHUNK);
        ranges.par_iter().for_each_init(Scratch::default, |s, r| {
            if progress.cancelled() || self.failure.failed.load(Relaxed) {
                return;
            }
            for k in r.start as usize..r.end as usize {
                let m = self.cells[k].load(Relaxed);
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
                if self.resolve(k, v) {
                    s.stack.push((unrank_unchecked(self.n, self.base + k as u64), v));
                    // Seeds are gathered into full batches before propagating (order within a
                    // threshold does not matter), so that many cache misses overlap.
                    if s.stack.len() >= BATCH {
                        self.propagate(t, s);
                    }
                }
            }
            self.propagate(t, s);
            self.flush(&mut s.sends);
            self.meter.charge(scan_units(r.end - r.start) + std::mem::take(&mut s.propagated) * RESOLVE_UNITS);
        });
    }
}

/// [`crate::index::ranges`], collected for parallel iteration.
pub(super) fn split(range: Range<u64>, chunk: u64) -> Vec<Range<u64>> {
    crate::index::ranges(range, chunk).collect()
}

/// Zeroed anonymous memory, in transparent huge pages where the system allows: the cells are
/// accessed at random, and 2 MB pages cut the TLB misses that would otherwise dominate.
pub(super) fn huge_zeroed(len: usize) -> std::io::Result<memmap2::MmapMut> {
    let map = memmap2::MmapMut::map_anon(len.max(1))?;
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Ok(map)
}

/// Positions whose predecessors (or whose moves' lower-layer values) are fetched together.
pub(super) const BATCH: usize = 32;

/// Asks the CPU to start loading the cache line of `r`.
#[inline(always)]
pub(super) fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint with no effect on memory; any address is allowed.
    unsafe {
        core::arch::x86_64::_mm_prefetch(r as *const T as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// Computes the exact value of every position of layer `n` under `rules`, in memory: as
/// [`solve_layer_with`] with default options.
///
/// # Errors
/// As [`solve_layer_with`].
///
/// # Panics
/// As [`solve_layer_with`].
pub fn solve_layer(rules: Ruleset, n: u32, lower: &[&[i8]], out: &mut [u8], progress: &dyn Progress) -> Result<()> {
    solve_layer_with(rules, n, lower, out, progress, &SolveOptions::default())
}

/// Where the solver's cells live: anonymous memory, or a scratch file.
pub(super) enum Cells {
    Memory(memmap2::MmapMut),
    File(ScratchState),
}

impl Cells {
    /// The zeroed cells of `len` positions of layer `n`: in anonymous memory when `file` is
    /// `None` (a single part is resident anyway, so no write-back), else in the scratch file
    /// `file`.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] (reporting `needed` bytes) when the memory cannot be mapped;
    /// [`Error::Io`] when the scratch file cannot be created.
    pub(super) fn new(n: u32, len: u64, file: Option<&Path>, needed: u64) -> Result<Cells> {
        Ok(match file {
            None => {
                Cells::Memory(huge_zeroed(2 * len as usize).map_err(|_| Error::OutOfMemory { layer: n, needed, available: 0, limit: MemoryLimit::Refused })?)
            }
            Some(path) => Cells::File(ScratchState::create(path, len)?),
        })
    }

    pub(super) fn all(&self) -> &[AtomicU16] {
        match self {
            Cells::Memory(m) => {
                // SAFETY: the map is writable, page-aligned (so 2-aligned) and zero-initialised;
                // zero is a valid AtomicU16 and all access goes through this atomic view.
                unsafe { std::slice::from_raw_parts(m.as_ptr().cast::<AtomicU16>(), m.len() / 2) }
            }
            Cells::File(f) => f.cells(),
        }
    }

    /// Gives back the scratch pages of cells `range` (in memory: nothing to give back).
    pub(super) fn release(&self, range: Range<u64>) {
        if let Cells::File(f) = self {
            f.release(range);
        }
    }

    /// Gives back the scratch pages of the cells behind state bytes `off..off + len`.
    pub(super) fn release_bytes(&self, off: u64, len: usize) {
        self.release(off / 2..(off + len as u64).div_ceil(2));
    }
}

/// Computes the exact value of every position of layer `n` under `rules`.
///
/// - `lower[m]` must hold the finished values of layer `m` for every `m < n` (in index order);
/// - `out` receives one value per position of layer `n`, in index order; its length must be
///   `layer_size(n)`. Its previous contents are ignored;
/// - `options`: in memory or out of core, checkpoints.
///
/// Runs on the current rayon thread pool. Cost: one forward pass (every move of every position,
/// one read of a lower layer per capture), one predecessor pass over the positions that get a
/// non-zero value, `n` sequential scans of two bytes per position. Memory mode: `out` plus
/// [`working_memory`]`(n)` bytes, and the lower layers read at random. Out of core: resident
/// memory of one part's state (two bytes per position), the lookup buffer, the lower-layer
/// window and the message buffers of [`OutOfCore`], plus a fixed overhead; the scratch file takes two bytes per
/// position of disk and the buckets up to eight bytes per message of a round; the lower layers
/// are read in sorted sweeps, once per lookup buffer.
///
/// The result does not depend on the mode, the limits, the number of threads or a checkpoint
/// resumed from.
///
/// # Errors
/// [`Error::OutOfMemory`] when the working memory cannot be allocated; [`Error::Io`] when a
/// scratch file cannot be written (a full disk included); [`Error::Interrupted`] when `progress`
/// reports cancellation (checked once per chunk; `out` is then incomplete, and the last
/// checkpoint is kept).
///
/// # Panics
/// When `n > 48`, `out` has the wrong length or a lower layer is missing or has the wrong length
/// (programming errors: callers validate files before calling).
pub fn solve_layer_with(rules: Ruleset, n: u32, lower: &[&[i8]], out: &mut [u8], progress: &dyn Progress, options: &SolveOptions) -> Result<()> {
    let size = layer_size(n);
    assert!(n <= crate::index::MAX_STONES, "layer {n} does not exist");
    assert_eq!(out.len() as u64, size, "output buffer of layer {n} has the wrong length");
    for m in 0..n {
        assert_eq!(lower[m as usize].len() as u64, layer_size(m), "lower layer {m} has the wrong length");
    }
    let ooc = options.out_of_core.as_ref();
    let part_len = ooc.map_or(size.max(1), |o| (o.part_len / CHUNK).max(1) * CHUNK);
    let parts: Vec<Range<u64>> = split(0..size, part_len);
    let state_file = ooc.filter(|_| parts.len() > 1).map(|o| o.work_dir.join(STATE_FILE));
    let storage = Cells::new(n, size, state_file.as_deref(), working_memory(n))?;
    let cells = storage.all();
    let release_part = |r: &Range<u64>| storage.release(r.clone());
    let note = |text: &str| {
        if let Some(f) = options.note {
            f(text);
        }
    };

    // Resume from a checkpoint, if there is a valid one.
    let mut reached = Reached { exits_done: 0, next_threshold: n };
    if let Some(c) = options.checkpoint {
        match load_checkpoint(c, &storage) {
            Ok(at) => {
                reached = at;
                let phase = if at.exits_done < size {
                    format!("{:.0} % of the exits pass", 100.0 * at.exits_done as f64 / size.max(1) as f64)
                } else if at.next_threshold == n {
                    "the exits pass".to_string()
                } else {
                    format!("thresholds {n}..{}", at.next_threshold + 1)
                };
                note(&format!("layer {n}: resuming from a checkpoint after {phase}"));
            }
            Err(Unusable::Absent) => {}
            Err(Unusable::Discarded(why)) => {
                note(&format!("layer {n}: checkpoint {} discarded ({why}); starting the layer afresh", c.path().display()));
                c.remove()?;
            }
        }
    }
    let mut clock = SaveClock::new(options.checkpoint_every);
    let mut save = |at: Reached| -> Result<()> {
        match options.checkpoint {
            Some(c) if clock.due() => clock.save(c, at, &storage),
            _ => Ok(()),
        }
    };

    let trace = std::env::var_os("OWARE_TRACE").is_some();
    let mut lap_start = Instant::now();
    let mut lap = |what: &str| {
        if trace {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "  layer {n} {what}: {:.3} s", lap_start.elapsed().as_secs_f64());
        }
        lap_start = Instant::now();
    };
    let failure = Failure::new();
    let stopped = || progress.cancelled() || failure.failed.load(Relaxed);
    let generic;
    let work = match options.work {
        Some(w) => w,
        None => {
            generic = WorkModel::new(n, None);
            &generic
        }
    };

    // 1. Exits pass: best exit and number of same-layer moves of every position.
    progress.phase("exits");
    progress.advance(work.exits(reached.exits_done));
    match ooc {
        None => {
            // In memory, in segments so that a checkpoint can be taken between them.
            let segment = (size / 16).max(CHUNK).div_ceil(CHUNK) * CHUNK;
            for seg in split(reached.exits_done..size, segment) {
                exits_in_memory(rules, n, lower, cells, seg.clone(), progress);
                if stopped() {
                    return Err(Error::Interrupted);
                }
                reached.exits_done = seg.end;
                if seg.end < size {
                    save(reached)?;
                }
            }
        }
        Some(o) => {
            for (pi, part) in parts.iter().enumerate() {
                if part.end <= reached.exits_done {
                    continue;
                }
                progress.phase(&format!("exits {}/{}", pi + 1, parts.len()));
                let start = part.start.max(reached.exits_done);
                let mut on_flush = |done: u64| -> Result<()> {
                    reached.exits_done = done;
                    if done < size {
                        save(reached)?;
                    }
                    Ok(())
                };
                exits_out_of_core(rules, n, lower, cells, start..part.end, o, progress, &failure, &mut on_flush)?;
                release_part(part);
                if stopped() {
                    failure.take()?;
                    return Err(Error::Interrupted);
                }
            }
            reached.exits_done = size;
        }
    }
    lap("exits");
    if reached.next_threshold == n {
        save(reached)?;
    }

    // 2. Thresholds from n down to 1: seed, then propagate.
    let inboxes = match ooc.filter(|_| parts.len() > 1) {
        Some(o) => Some(Inboxes::new(o.work_dir, parts.len(), o.message_bytes)?),
        None => None,
    };
    let router = inboxes.as_ref().map(|i| Router { own: 0..size, part_len, parts: Some(i), ranks: None });
    progress.advance((reached.next_threshold + 1..=n).map(|t| work.threshold(t, size)).sum());
    for t in (1..=reached.next_threshold as i8).rev() {
        progress.phase(&format!("threshold {t}"));
        let meter = Meter { progress, budget: work.threshold(t as u32, size), charged: AtomicU64::new(0) };
        let state_of = |p: &Range<u64>| State {
            rules,
            n,
            cells: &cells[p.start as usize..p.end as usize],
            base: p.start,
            remote: router.as_ref(),
            failure: &failure,
            meter: &meter,
        };
        let mut round = 0;
        loop {
            if !part_round(t, round, &parts, inboxes.as_ref(), &state_of, progress, &release_part, &stopped)? {
                failure.take()?;
                return Err(Error::Interrupted);
            }
            if !inboxes.as_ref().is_some_and(|i| i.any_pending()) {
                break;
            }
            round += 1;
        }
        meter.finish();
        lap(&format!("threshold {t} ({} rounds)", round + 1));
        reached.next_threshold = t as u32 - 1;
        if t > 1 {
            save(reached)?;
        }
    }

    // 3. Write the values; everything still unresolved is worth 0 (endless play).
    write_values(&parts, cells, out, work, progress, &release_part, ooc.map(|o| o.release_out));
    if let Some(c) = options.checkpoint {
        c.remove()?;
    }
    drop(storage);
    if let Some(o) = ooc.filter(|_| parts.len() > 1) {
        let _ = std::fs::remove_file(o.work_dir.join(STATE_FILE));
    }
    Ok(())
}

/// The cells as raw bytes (for checkpoints).
#[derive(Clone, Copy)]
pub(super) struct RawBytes(pub(super) *mut u8);
// SAFETY: used only between phases, when no other thread touches the cells.
unsafe impl Sync for RawBytes {}
unsafe impl Send for RawBytes {}

pub(super) fn cells_bytes(cells: &[AtomicU16]) -> RawBytes {
    RawBytes(cells.as_ptr() as *mut u8)
}

/// Loads checkpoint `c` into the cells of `storage` (giving scratch pages back as it goes).
///
/// # Errors
/// As [`Checkpoint::load`]: the cells are untouched unless it succeeds.
pub(super) fn load_checkpoint(c: &Checkpoint, storage: &Cells) -> std::result::Result<Reached, Unusable> {
    let bytes = cells_bytes(storage.all());
    c.load(&mut |off: u64, b: &[u8]| {
        // SAFETY: nothing else touches the cells while the checkpoint is loaded.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), bytes.0.add(off as usize), b.len()) };
        storage.release_bytes(off, b.len());
    })
}

/// When checkpoints are due: at least `every` apart and, unless `every` is zero,
/// [`CHECKPOINT_COST_RATIO`] times as far apart as the last save took.
pub(super) struct SaveClock {
    every: Duration,
    last: Instant,
    cost: Duration,
}

impl SaveClock {
    pub(super) fn new(every: Duration) -> SaveClock {
        SaveClock { every, last: Instant::now(), cost: Duration::ZERO }
    }

    /// Whether a checkpoint is due now.
    pub(super) fn due(&self) -> bool {
        let interval = if self.every.is_zero() { self.every } else { self.every.max(self.cost * CHECKPOINT_COST_RATIO) };
        self.last.elapsed() >= interval
    }

    /// Saves the cells of `storage` (quiescent: between phases) as checkpoint `c` at `at`.
    ///
    /// # Errors
    /// As [`Checkpoint::save`].
    pub(super) fn save(&mut self, c: &Checkpoint, at: Reached, storage: &Cells) -> Result<()> {
        let started = Instant::now();
        let bytes = cells_bytes(storage.all());
        c.save(at, &|off, buf| {
            // SAFETY: the cells are quiescent between phases.
            unsafe { std::ptr::copy_nonoverlapping(bytes.0.add(off as usize), buf.as_mut_ptr(), buf.len()) };
            storage.release_bytes(off, buf.len());
        })?;
        self.last = Instant::now();
        self.cost = started.elapsed();
        Ok(())
    }
}

/// One round of threshold `t` over `parts` (cells `parts[k]` solved by `state_of(&parts[k])`):
/// round 0 seeds every part, and every round applies what a part's bucket holds (later rounds
/// skip parts with nothing waiting); each part's pages are given back when it is done. Returns
/// false when `stopped` says so after a part.
///
/// # Errors
/// [`Error::Io`] when a bucket cannot be read.
#[allow(clippy::too_many_arguments)]
pub(super) fn part_round<'s>(
    t: i8,
    round: u32,
    parts: &[Range<u64>],
    inboxes: Option<&Inboxes>,
    state_of: &dyn Fn(&Range<u64>) -> State<'s>,
    progress: &dyn Progress,
    release_part: &dyn Fn(&Range<u64>),
    stopped: &dyn Fn() -> bool,
) -> Result<bool> {
    for (pi, part) in parts.iter().enumerate() {
        if round > 0 && !inboxes.is_some_and(|i| i.pending(pi)) {
            continue;
        }
        if parts.len() > 1 {
            let r = if round > 0 { format!(" r{}", round + 1) } else { String::new() };
            progress.phase(&format!("t={t} {}/{}{r}", pi + 1, parts.len()));
        }
        let state = state_of(part);
        if round == 0 {
            state.seed(t, 0..part.end - part.start, progress);
        }
        if let Some(inboxes) = inboxes {
            inboxes.drain(pi, 1 << 20, |messages| {
                state.apply(t, messages);
                Ok(())
            })?;
        }
        release_part(part);
        if stopped() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The final pass: writes every cell's value into `out` (same positions as the cells),
/// unresolved cells as 0 (endless play), part by part, giving back each part's pages of the
/// cells (`release_part`) and of the output (`release_out`, out of core).
pub(super) fn write_values(
    parts: &[Range<u64>],
    cells: &[AtomicU16],
    out: &mut [u8],
    work: &WorkModel,
    progress: &dyn Progress,
    release_part: &dyn Fn(&Range<u64>),
    release_out: Option<&(dyn Fn(Range<u64>) + Sync)>,
) {
    progress.phase("draws");
    for part in parts {
        let (a, b) = (part.start as usize, part.end as usize);
        out[a..b].par_chunks_mut(CHUNK as usize).zip(cells[a..b].par_chunks(CHUNK as usize)).for_each(|(o, c)| {
            for (byte, cell) in o.iter_mut().zip(c) {
                let s = cell.load(Relaxed);
                *byte = if s & RESOLVED != 0 { s as u8 } else { 0 };
            }
            progress.advance(work.draws(o.len() as u64));
        });
        release_part(part);
        if let Some(release) = release_out {
            release(part.clone());
        }
    }
}

/// The exits pass over `range` in memory: the lower layers read at random, with prefetching.
fn exits_in_memory(rules: Ruleset, n: u32, lower: &[&[i8]], cells: &[AtomicU16], range: Range<u64>, progress: &dyn Progress) {
    split(range, CHUNK).par_iter().for_each(|r| {
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
                cells[i as usize].store(pack(best, pending), Relaxed);
            }
        }
        progress.advance((r.end - r.start) * EXIT_UNITS);
    });
}

/// The exits pass over `range` (inside one part) out of core: moves are generated in index
/// order and the capture lookups collected; each full buffer is sorted by place in the lower
/// layers and served in one sweep, window by window, and the windows' pages given back.
/// `on_flush(done)` is called when every position below `done` is complete.
#[allow(clippy::too_many_arguments)]
fn exits_out_of_core(
    rules: Ruleset,
    n: u32,
    lower: &[&[i8]],
    cells: &[AtomicU16],
    range: Range<u64>,
    o: &OutOfCore,
    progress: &dyn Progress,
    failure: &Failure,
    on_flush: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<()> {
    let offsets: Vec<u64> = (0..=n)
        .scan(0u64, |acc, m| {
            let at = *acc;
            *acc += layer_size(m);
            Some(at)
        })
        .collect();
    let cap = (o.lookup_bytes / 16).max(1 << 12) as usize;
    let mut lookups: Vec<(u64, u64)> = Vec::new();
    let ranges = split(range, CHUNK);
    let group = rayon::current_num_threads().max(1);
    for rs in ranges.chunks(group) {
        if progress.cancelled() || failure.failed.load(Relaxed) {
            return Ok(());
        }
        let pieces: Vec<Vec<(u64, u64)>> = rs
            .par_iter()
            .map(|r| {
                let mut mine = Vec::new();
                let walker = LayerWalker::new(n, r.clone()).expect("n <= 48 was checked");
                for (i, b) in walker {
                    let (best, pending) = exits(rules, &b, |captured, child| {
                        let key = (u64::from(n - u32::from(captured)) << KEY_SHIFT) | rank_unchecked(child);
                        mine.push((key, i));
                    });
                    cells[i as usize].store(pack(best, pending), Relaxed);
                }
                progress.advance((r.end - r.start) * EXIT_UNITS);
                mine
            })
            .collect();
        for p in pieces {
            lookups.extend_from_slice(&p);
        }
        if lookups.len() >= cap {
            serve(n, lower, cells, &mut lookups, &offsets, o);
            on_flush(rs.last().map_or(0, |r| r.end))?;
        }
    }
    serve(n, lower, cells, &mut lookups, &offsets, o);
    Ok(())
}

/// Sorts `lookups` (key: layer and index of a child; parent index) and folds each child's value
/// into its parent's best exit, sweeping the lower layers in order; the pages of each window of
/// `o.lower_window` bytes are given back once it is served.
fn serve(n: u32, lower: &[&[i8]], cells: &[AtomicU16], lookups: &mut Vec<(u64, u64)>, offsets: &[u64], o: &OutOfCore) {
    if lookups.is_empty() {
        return;
    }
    lookups.par_sort_unstable_by_key(|l| l.0);
    let mask = (1u64 << KEY_SHIFT) - 1;
    let place = |key: u64| offsets[(key >> KEY_SHIFT) as usize] + (key & mask);
    let window = o.lower_window.max(1 << 16);
    let mut start = 0;
    while start < lookups.len() {
        let first = place(lookups[start].0);
        let end = start + lookups[start..].partition_point(|l| place(l.0) < first + window);
        let seg = &lookups[start..end];
        seg.par_chunks(1 << 14).for_each(|c| {
            for &(key, parent) in c {
                let m = (key >> KEY_SHIFT) as u32;
                let v = lower[m as usize][(key & mask) as usize];
                let e = (n - m) as i8 - v;
                let _ = cells[parent as usize].fetch_update(Relaxed, Relaxed, |s| (e > value_of(s)).then_some((s & !0xff) | u16::from(e as u8)));
            }
        });
        // Give back the window's pages, layer by layer.
        let (lo, hi) = (seg[0].0, seg[seg.len() - 1].0);
        for m in (lo >> KEY_SHIFT) as u32..=(hi >> KEY_SHIFT) as u32 {
            let a = if m == (lo >> KEY_SHIFT) as u32 { lo & mask } else { 0 };
            let b = if m == (hi >> KEY_SHIFT) as u32 { (hi & mask) + 1 } else { layer_size(m) };
            (o.release_lower)(m, a..b);
        }
        start = end;
    }
    lookups.clear();
}

/// The best exit value of `board` among its game-ending moves, and the number of its moves that
/// stay in the layer; `capture(captured, child)` is called for each move into a smaller layer,
/// whose value the caller folds into the best exit.
#[inline]
pub(super) fn exits(rules: Ruleset, board: &Board, mut capture: impl FnMut(u8, &Board)) -> (i8, u8) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_model_weights_thresholds_by_what_they_resolve() {
        let n = 20;
        let size = layer_size(n);
        let generic = WorkModel::new(n, None);
        assert_eq!(generic.total(), work_units(n));
        // Low thresholds resolve more than high ones in the generic shape.
        assert!(generic.threshold(1, size) > generic.threshold(n, size));
        // A threshold expected to resolve nothing costs one scan; one that resolves every
        // position costs RESOLVE_UNITS more per position.
        let mut expected = vec![0u64; n as usize + 1];
        expected[3] = size;
        let m = WorkModel::new(n, Some(&expected));
        assert_eq!(m.threshold(4, size), size / SCAN_POSITIONS_PER_UNIT);
        assert_eq!(m.threshold(3, size), size / SCAN_POSITIONS_PER_UNIT + size * RESOLVE_UNITS);
        let half = m.threshold(3, size / 2);
        assert!(half <= m.threshold(3, size) / 2 && half + 2 * RESOLVE_UNITS >= m.threshold(3, size) / 2, "{half}");
        let scans = u64::from(n) * (size / SCAN_POSITIONS_PER_UNIT);
        assert_eq!(m.total(), size * EXIT_UNITS + scans + size * RESOLVE_UNITS + 5 * (size / SCAN_POSITIONS_PER_UNIT));
        // Counts of layer n - 2 are scaled to layer n's size and both signs counted.
        let counts = std::collections::BTreeMap::from([(0, 7), (2, 10), (-2, 30), (5, 1000)]);
        let c = WorkModel::from_counts(n, &counts);
        let scale = size as f64 / layer_size(n - 2) as f64;
        let scan = size / SCAN_POSITIONS_PER_UNIT;
        assert_eq!(c.threshold(2, size), scan + (40.0 * scale) as u64 * RESOLVE_UNITS);
        assert_eq!(c.threshold(5, size), scan + (1000.0 * scale) as u64 * RESOLVE_UNITS);
        assert_eq!(c.threshold(1, size), scan);
        assert_eq!(WorkModel::from_counts(1, &counts), WorkModel::new(1, None));
    }
}
