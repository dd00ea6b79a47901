//! The solver's state and its hot loop: one byte per position ([`Cells`]), the threshold
//! rules applied to a part of the cells ([`State::seed`], [`State::apply`], propagation to
//! predecessors in prefetched batches) and the routing of updates for positions outside the
//! part ([`Router`]): to another part's bucket out of core, or to the rank that owns them.
//!
//! State per position: one byte ([`Cells`]), and the position's best exit parked in its byte
//! of the output until the final pass writes the values over it ([`BestExit`]):
//! - resolved (bit 7): the value in bits 0..6 (seven-bit two's complement, -48..=48);
//! - open: bits 0..2 the number of same-layer moves whose child is not yet in WIN (`pending`,
//!   at most 6); bit 3 ([`LOSES`]) whether the best exit is at most `-t` at the threshold `t`
//!   being solved (set by the threshold's seeding, never cleared: `-t` only grows); bit 4
//!   ([`ENDED`]) the game is over.
//!
//! A threshold needs no more of the best exit than those two facts: an open position enters WIN
//! at `t` by an exit of `t` or more (read from the output when it is seeded) or by a lost child,
//! and LOSS when its last same-layer move is refuted while its exit is `-t` or less (the bit).
//!
//! Every change of a cell is a compare-and-swap that checks the resolved bit, so each position
//! is resolved exactly once, a late decrement never touches a resolved value, and within one
//! threshold every resolved position gets the same `±t` whatever the order: the result does
//! not depend on the number of threads or on scheduling.

pub(super) use crate::sys::{huge_zeroed, prefetch};
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI8, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Mutex;

use rayon::prelude::*;

use super::work::{scan_units, RESOLVE_UNITS};
use crate::error::{Error, MemoryLimit, Result};
use crate::index::{unrank_many, unrank_unchecked, LayerWalker, RankBase};
use crate::progress::Progress;
use crate::rules::{for_each_predecessor, turned, Board, Ruleset};
use crate::solver::spill::{Inboxes, ScratchState};

pub(super) use super::fused::FusedDepths;

/// Bit of a resolved cell.
pub(super) const RESOLVED: u8 = 0x80;
/// Bits of an open cell: the number of same-layer moves not yet refuted.
pub(super) const PENDING: u8 = 0x07;
const PENDING_ONE: u8 = 1;
/// Bit of an open cell: its best exit is `-t` or less at the threshold `t` being solved.
pub(super) const LOSES: u8 = 0x08;
/// Bit of an open cell: the game is over (no legal move; set by the in-memory exits pass, read
/// when the position is seeded, dropped when it is resolved).
pub(super) const ENDED: u8 = 0x10;
/// Best-exit marker for "no move leaves the layer" (below every real value, -48).
pub(super) const NO_EXIT: i8 = i8::MIN;
/// Positions per parallel work item; parts are multiples of it.
pub(crate) const CHUNK: u64 = 1 << 15;
/// Bit of a message: "a child was lost" (else: "a child entered WIN").
pub(super) const LOST: u64 = 1 << 63;
/// Bit position of the layer number in a lookup key (the index takes the bits below).
pub(super) const KEY_SHIFT: u32 = 40;

/// The cells of a layer (or of a part of it), one byte per position.
pub(super) type Cell = AtomicU8;
/// The best exits parked in the output, one byte per position (the same positions as the
/// cells they go with).
pub(super) type BestExit = AtomicI8;

/// The cell of a position resolved with value `v` (-48..=48).
#[inline(always)]
pub(super) fn resolved(v: i8) -> u8 {
    RESOLVED | (v as u8 & 0x7F)
}

/// The value of a resolved cell `c`.
#[inline(always)]
pub(super) fn value_of(c: u8) -> i8 {
    ((c << 1) as i8) >> 1
}

/// The open cell of a position with `pending` same-layer moves whose game is over or not.
#[inline(always)]
pub(super) fn open(pending: u8, ended: bool) -> u8 {
    debug_assert!(pending <= PENDING);
    pending | if ended { ENDED } else { 0 }
}

/// The output bytes `out` as best exits that threads may update at once.
pub(super) fn exits_view(out: &mut [u8]) -> &[BestExit] {
    // SAFETY: AtomicI8 has the size, alignment and valid bit patterns of u8; the exclusive
    // borrow of `out` makes the atomic view the only access for its lifetime.
    unsafe { std::slice::from_raw_parts(out.as_mut_ptr().cast::<BestExit>(), out.len()) }
}

/// Calls `visit(parent, index)` for every same-layer predecessor of `board` (see
/// [`for_each_predecessor`]) that belongs to a layer, with its index in that layer: the turned
/// board is ranked once, and each parent from the pits its un-move changed ([`RankBase`]).
///
/// Cost: one rank, then one term per changed pit of each candidate (two to four in most moves).
#[inline(always)]
pub(super) fn for_each_ranked_predecessor(rules: Ruleset, board: &Board, mut visit: impl FnMut(&Board, u64)) {
    let ranks = RankBase::new(&turned(board));
    for_each_predecessor(rules, board, |q, how| {
        let (lo, hi) = how.changed();
        if let Some(j) = ranks.rank_changed(q, lo, hi) {
            visit(q, j);
        }
    });
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
    pub(super) fn set(&self, e: Error) {
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

    /// Sends `messages` to their buckets, grouped by destination, and empties it.
    ///
    /// # Errors
    /// [`Error::Io`] when a bucket file cannot be written.
    pub(super) fn send_all(&self, messages: &mut Vec<u64>) -> Result<()> {
        // A counting sort by destination: one pass to count, one to place. A comparison sort
        // would find a message's destination (a division) at every comparison; the order
        // within a group buys nothing (its positions lie far apart).
        let slot = |m: u64| match self.route(m & !LOST) {
            Route::Part(k) => 2 * k,
            Route::Rank(r) => 2 * r + 1,
        };
        let slots: Vec<usize> = messages.iter().map(|&m| slot(m)).collect();
        let mut start = vec![0usize; slots.iter().max().map_or(0, |&s| s + 1) + 1];
        for &s in &slots {
            start[s + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut at = start.clone();
        let mut grouped = vec![0u64; messages.len()];
        for (&m, &s) in messages.iter().zip(&slots) {
            grouped[at[s]] = m;
            at[s] += 1;
        }
        for (s, w) in start.windows(2).enumerate() {
            if w[0] < w[1] {
                let to = if s % 2 == 0 { Route::Part(s / 2) } else { Route::Rank(s / 2) };
                self.send(to, &grouped[w[0]..w[1]])?;
            }
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
    pub(super) cells: &'a [Cell],
    /// Their best exits, parked in the output (read when a threshold seeds).
    pub(super) exits: &'a [BestExit],
    pub(super) base: u64,
    /// Where messages for positions outside `cells` go (none in memory).
    pub(super) remote: Option<&'a Router<'a>>,
    pub(super) failure: &'a Failure,
    /// Counts the threshold's work for progress.
    pub(super) meter: &'a Meter<'a>,
    /// Level-synchronous propagation (in memory, one part; with depths, or `OWARE_LEVELS=1`):
    /// the seeds of a threshold are gathered here instead of propagated at once, and
    /// [`State::propagate_levels`] propagates them one level at a time.
    pub(super) frontier: Option<&'a Frontier>,
    /// Where the level of every position resolved is recorded: its depth to capture (with a
    /// frontier only).
    pub(super) depths: Option<&'a FusedDepths>,
}

/// The seeds of a threshold gathered for its level-synchronous propagation: the positions whose
/// game is over (depth 0, with depths) and the others.
#[derive(Default)]
pub(super) struct Frontier {
    ended: Mutex<Vec<(Board, i8)>>,
    seeds: Mutex<Vec<(Board, i8)>>,
}

/// The work units one threshold (or one dtc pass) may advance progress by ([`WorkModel`]'s
/// estimate), charged as the threshold scans and propagates (in any part, in any round) and
/// never beyond the estimate; [`Meter::finish`] gives what is left when the threshold is done.
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
    /// The previous batch's updates, applied after the next batch is generated.
    ready: Vec<(usize, Board, bool)>,
    sends: Vec<u64>,
    /// Positions resolved by messages, by index, with their values, before they are unranked
    /// ([`State::apply`]); the indices and boards of an unranked batch.
    found: Vec<(u64, i8)>,
    indices: Vec<u64>,
    boards: Vec<Board>,
    /// Positions propagated since the last charge to the meter.
    propagated: u64,
    /// Level-synchronous: what the updates resolve goes to `next` (the next level), not back
    /// on the stack.
    levels: bool,
    next: Vec<(Board, i8)>,
    /// Level-synchronous: the depth of the positions the updates resolve.
    depth: u16,
    /// Seeds whose game is over (gathered apart when depths are recorded).
    ended: Vec<(Board, i8)>,
    /// Cell updates applied (the level census).
    updates: u64,
}

/// How many messages ahead [`State::apply`] prefetches the cell of.
const APPLY_AHEAD: usize = 16;

/// Messages buffered per thread before they are handed to the buckets.
const SENDS: usize = 1 << 13;

impl State<'_> {
    /// Marks cell `k` resolved with value `v`; false when it already was (another thread may
    /// have got there first).
    #[inline]
    fn resolve(&self, k: usize, v: i8) -> bool {
        resolve(&self.cells[k], v)
    }

    /// Applies to cell `k` the news that one of its children entered LOSS (`child_lost`) or
    /// WIN at threshold `t`; returns the value the position is resolved with when this news
    /// resolves it.
    #[inline]
    fn update(&self, t: i8, k: usize, child_lost: bool) -> Option<i8> {
        if child_lost {
            // q can move to a position lost by at least t: q wins at least t.
            self.resolve(k, t).then_some(t)
        } else {
            // One more of q's same-layer moves is worth -t or less.
            decrement(&self.cells[k], t)
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
        // Software-pipelined: the updates of one batch are applied after the next batch's
        // predecessors have been generated and prefetched, so that each prefetch has a whole
        // batch's work to arrive in.
        while !s.stack.is_empty() || !s.ready.is_empty() {
            s.batch.clear();
            for _ in 0..BATCH {
                let Some((board, v)) = s.stack.pop() else { break };
                s.propagated += 1;
                for_each_ranked_predecessor(self.rules, &board, |q, j| {
                    let k = j.wrapping_sub(self.base);
                    if k < len {
                        prefetch(&self.cells[k as usize]);
                        s.batch.push((k as usize, *q, v < 0));
                    } else {
                        s.sends.push(j | if v < 0 { LOST } else { 0 });
                    }
                });
            }
            s.updates += s.ready.len() as u64;
            for &(k, q, child_lost) in s.ready.iter() {
                if let Some(v) = self.update(t, k, child_lost) {
                    if s.levels {
                        if let Some(d) = self.depths {
                            d.set(self.base + k as u64, s.depth);
                        }
                        s.next.push((q, v));
                    } else {
                        s.stack.push((q, v));
                    }
                }
            }
            std::mem::swap(&mut s.ready, &mut s.batch);
            if s.sends.len() >= SENDS {
                self.flush(&mut s.sends);
            }
        }
    }

    /// Puts the positions messages resolved (`s.found`, by index) on the stack with their
    /// boards: a message carries only an index, and unranking a batch at once lets the
    /// unranks overlap ([`unrank_many`]).
    fn unrank_found(&self, s: &mut Scratch) {
        s.indices.clear();
        s.indices.extend(s.found.iter().map(|&(j, _)| j));
        unrank_many(self.n, &s.indices, &mut s.boards);
        s.stack.extend(s.boards.iter().zip(&s.found).map(|(&b, &(_, v))| (b, v)));
        s.found.clear();
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
            for (i, &m) in block.iter().enumerate() {
                // The cells of the messages a few ahead are fetched while this one is applied.
                if let Some(&ahead) = block.get(i + APPLY_AHEAD) {
                    prefetch(&self.cells[((ahead & !LOST) - self.base) as usize]);
                }
                let j = m & !LOST;
                if let Some(v) = self.update(t, (j - self.base) as usize, m & LOST != 0) {
                    s.found.push((j, v));
                    if s.found.len() >= BATCH {
                        self.unrank_found(s);
                        self.propagate(t, s);
                    }
                }
            }
            self.unrank_found(s);
            self.propagate(t, s);
            self.flush(&mut s.sends);
            self.meter.charge(std::mem::take(&mut s.propagated) * RESOLVE_UNITS);
        });
    }

    /// Seeds threshold `t` from the cells of `range` (part-relative) and propagates. Also
    /// gathers, for every threshold `u` of `ahead` (below `t`), the open positions whose best
    /// exit is `u` or `-u`: the only ones that can be seeds of threshold `u` (see
    /// [`Lookahead`](super::lookahead::Lookahead)).
    /// Returns them by threshold (`ahead.start` first), each list in pieces in ascending order
    /// (the pieces of the chunks, in the chunks' order); or, when
    /// `sink` is given, hands each chunk's lists to it as soon as they are gathered (in no
    /// particular order of the chunks; a failure of the sink stops the phase) and returns
    /// empty lists.
    pub(super) fn seed(
        &self,
        t: i8,
        range: Range<u64>,
        ahead: Range<i8>,
        sink: Option<&(dyn Fn(Vec<Vec<u32>>) -> Result<()> + Sync)>,
        progress: &dyn Progress,
    ) -> Vec<Vec<Vec<u32>>> {
        let ranges: Vec<Range<u64>> = split(range, CHUNK);
        let span = ahead.len();
        let mut gathered: Vec<Vec<Vec<u32>>> = ranges
            .par_iter()
            .map_init(Scratch::default, |s, r| {
                let mut lists: Vec<Vec<u32>> = vec![Vec::new(); span];
                if progress.cancelled() || self.failure.failed.load(Relaxed) {
                    return lists;
                }
                // The board of the last seed: a seed a few positions after it is reached by
                // stepping through the index order, cheaper than unranking it.
                let mut last: Option<(usize, Board)> = None;
                for k in r.start as usize..r.end as usize {
                    let m = self.cells[k].load(Relaxed);
                    if m & RESOLVED != 0 {
                        continue;
                    }
                    let e = self.exits[k].load(Relaxed);
                    match self.seed_cell(k, m, e, t) {
                        Some(v) => self.seed_one(k, v, m & ENDED != 0, &mut last, s, t),
                        None if span > 0 => {
                            // `NO_EXIT` (-128) is no threshold's seed here: its absolute value is
                            // above every threshold.
                            let u = e.unsigned_abs() as i8;
                            if ahead.contains(&u) {
                                lists[(u - ahead.start) as usize].push(k as u32);
                            }
                        }
                        None => {}
                    }
                }
                self.seeded(t, s);
                self.flush(&mut s.sends);
                self.meter.charge(scan_units(r.end - r.start) + std::mem::take(&mut s.propagated) * RESOLVE_UNITS);
                match sink {
                    Some(sink) if span > 0 => {
                        if let Err(e) = sink(lists) {
                            self.failure.set(e);
                        }
                        vec![Vec::new(); span]
                    }
                    _ => lists,
                }
            })
            .collect();
        // Kept in the chunks' pieces, threshold by threshold, each piece trimmed to its length:
        // joining them would hold the lists twice for a moment, and a piece's spare capacity
        // (up to as much again) would stay.
        (0..span)
            .map(|u| {
                gathered
                    .iter_mut()
                    .map(|lists| {
                        let mut piece = std::mem::take(&mut lists[u]);
                        piece.shrink_to_fit();
                        piece
                    })
                    .filter(|p| !p.is_empty())
                    .collect()
            })
            .collect()
    }

    /// Seeds threshold `t` from the positions of `blocks` (part-relative; each block ascending,
    /// where nearby seeds are found by stepping) gathered for it by an earlier [`State::seed`],
    /// and propagates, a block per parallel task; `scanned` is the number of cells the blocks
    /// stand for (charged to progress as a scan of them).
    pub(super) fn seed_listed<K: Copy + Into<u64> + Sync>(&self, t: i8, blocks: &[&[K]], scanned: u64, progress: &dyn Progress) {
        let count = blocks.len().max(1) as u64;
        blocks.par_iter().for_each_init(Scratch::default, |s, block| {
            if progress.cancelled() || self.failure.failed.load(Relaxed) {
                return;
            }
            let mut last: Option<(usize, Board)> = None;
            for &k in block.iter() {
                let k = k.into() as usize;
                let m = self.cells[k].load(Relaxed);
                if m & RESOLVED != 0 {
                    continue;
                }
                if let Some(v) = self.seed_cell(k, m, self.exits[k].load(Relaxed), t) {
                    self.seed_one(k, v, m & ENDED != 0, &mut last, s, t);
                }
            }
            self.seeded(t, s);
            self.flush(&mut s.sends);
            self.meter.charge(scan_units(scanned) / count + std::mem::take(&mut s.propagated) * RESOLVE_UNITS);
        });
    }

    /// The end of a block of seeds: propagates them, or gathers them into the frontier.
    fn seeded(&self, t: i8, s: &mut Scratch) {
        match self.frontier {
            Some(f) => {
                f.ended.lock().unwrap_or_else(|p| p.into_inner()).append(&mut s.ended);
                f.seeds.lock().unwrap_or_else(|p| p.into_inner()).append(&mut s.stack);
            }
            None => self.propagate(t, s),
        }
    }

    /// Propagates the frontier's seeds (resolved at threshold `t`) level by level: level 0 the
    /// seeds whose game is over (only with depths; else none), level 1 the other seeds and
    /// what level 0 resolves, level `i + 1` what the updates from level `i` resolve. The same
    /// positions are resolved with the same values as by [`State::propagate`] (the order
    /// within a threshold does not matter). With depths, every position resolved gets its
    /// level as its depth to capture ([`FusedDepths`]). Returns each level's size and the cell
    /// updates it made: the census that says how dense each level's updates are.
    pub(super) fn propagate_levels(&self, t: i8) -> Vec<(u64, u64)> {
        let Some(frontier) = self.frontier else { return Vec::new() };
        let mut level = std::mem::take(&mut *frontier.ended.lock().unwrap_or_else(|p| p.into_inner()));
        let mut seeds = Some(std::mem::take(&mut *frontier.seeds.lock().unwrap_or_else(|p| p.into_inner())));
        let mut census = Vec::new();
        // The depth of what the level propagated resolves.
        let mut depth: u16 = 1;
        loop {
            let pieces: Vec<(Vec<(Board, i8)>, u64)> = level
                .par_chunks(1 << 12)
                .map_init(Scratch::default, |s, block| {
                    s.levels = true;
                    s.depth = depth;
                    s.stack.extend_from_slice(block);
                    self.propagate(t, s);
                    self.flush(&mut s.sends);
                    self.meter.charge(std::mem::take(&mut s.propagated) * RESOLVE_UNITS);
                    (std::mem::take(&mut s.next), std::mem::take(&mut s.updates))
                })
                .collect();
            if !level.is_empty() {
                census.push((level.len() as u64, pieces.iter().map(|p| p.1).sum()));
            }
            level = pieces.into_iter().flat_map(|(next, _)| next).collect();
            if let Some(mut s) = seeds.take() {
                level.append(&mut s);
            }
            if level.is_empty() {
                break;
            }
            depth = depth.saturating_add(1);
        }
        census
    }

    /// Threshold `t`'s rules for open cell `k` (last read as `m`) with best exit `e`: resolves
    /// it with `t` when `e` is `t` or more; when `e` is `-t` or less, marks it [`LOSES`], and
    /// resolves it with `-t` when no same-layer move is left. Returns the value when this call
    /// resolved it (not when another thread got there first).
    #[inline]
    fn seed_cell(&self, k: usize, m: u8, e: i8, t: i8) -> Option<i8> {
        if e >= t {
            return self.resolve(k, t).then_some(t);
        }
        if e > -t || m & LOSES != 0 {
            // Marked at an earlier threshold with same-layer moves left: a decrement to none
            // resolves it.
            return None;
        }
        let cell = &self.cells[k];
        let mut cur = m;
        loop {
            if cur & RESOLVED != 0 {
                return None;
            }
            let new = if cur & PENDING == 0 { resolved(-t) } else { cur | LOSES };
            match cell.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                Ok(_) => return (new & RESOLVED != 0).then_some(-t),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Queues seed `k`, resolved with `v` at threshold `t` by this thread, propagating when a
    /// batch is full. `last` is the board of the previous seed.
    #[inline]
    fn seed_one(&self, k: usize, v: i8, ended: bool, last: &mut Option<(usize, Board)>, s: &mut Scratch, t: i8) {
        let board = match *last {
            Some((at, mut b)) if k >= at && k - at <= WALK => {
                for _ in at..k {
                    LayerWalker::advance(&mut b);
                }
                b
            }
            _ => unrank_unchecked(self.n, self.base + k as u64),
        };
        *last = Some((k, board));
        match self.depths {
            Some(d) => {
                d.set(self.base + k as u64, u16::from(!ended));
                if ended {
                    s.ended.push((board, v));
                } else {
                    s.stack.push((board, v));
                }
            }
            None => s.stack.push((board, v)),
        }
        // Seeds are gathered into full batches before propagating (order within a threshold
        // does not matter), so that many cache misses overlap.
        if s.stack.len() >= BATCH && self.frontier.is_none() {
            self.propagate(t, s);
        }
    }
}

/// Marks `cell` resolved with value `v`; false when it already was (another thread may have got
/// there first).
#[inline(always)]
pub(super) fn resolve(cell: &Cell, v: i8) -> bool {
    let mut cur = cell.load(Relaxed);
    loop {
        if cur & RESOLVED != 0 {
            return false;
        }
        match cell.compare_exchange_weak(cur, resolved(v), Relaxed, Relaxed) {
            Ok(_) => return true,
            Err(actual) => cur = actual,
        }
    }
}

/// Applies to `cell` the refutation at threshold `t` of one of its same-layer moves (its child
/// entered WIN): one fewer pending move, and the position lost with `-t` when none is left and
/// it is marked [`LOSES`]. Returns `-t` when this call resolved it. A resolved cell is left
/// untouched (a compare-and-swap on the resolved bit: a decrement never reaches a value), and
/// its cache line clean (no write).
#[inline(always)]
pub(super) fn decrement(cell: &Cell, t: i8) -> Option<i8> {
    let mut cur = cell.load(Relaxed);
    loop {
        if cur & RESOLVED != 0 {
            return None;
        }
        debug_assert!(cur & PENDING != 0, "pending counter underflow: un-moves and moves disagree");
        let new = if cur & PENDING == PENDING_ONE && cur & LOSES != 0 { resolved(-t) } else { cur.wrapping_sub(PENDING_ONE) };
        match cell.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
            Ok(_) => return (new & RESOLVED != 0).then_some(-t),
            Err(actual) => cur = actual,
        }
    }
}

/// Seeds at most this many positions after the last one are reached by stepping through the
/// index order ([`LayerWalker::advance`], a few pit updates a step) rather than by unranking
/// (about 50 ns).
const WALK: usize = 12;

/// [`crate::index::ranges`], collected for parallel iteration.
pub(super) fn split(range: Range<u64>, chunk: u64) -> Vec<Range<u64>> {
    crate::index::ranges(range, chunk).collect()
}

/// Positions whose predecessors (or whose moves' lower-layer values) are fetched together.
pub(super) const BATCH: usize = 32;

/// Where the solver's cells live: anonymous memory, or a scratch file.
pub(super) enum Cells {
    Memory(memmap2::MmapMut),
    File(ScratchState),
}

impl Cells {
    /// The zeroed cells of `len` positions of layer `n`, one byte each: in anonymous memory
    /// when `file` is `None` (a single part is resident anyway, so no write-back), else in the
    /// scratch file `file`.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] (reporting `needed` bytes) when the memory cannot be mapped;
    /// [`Error::Io`] when the scratch file cannot be created.
    pub(super) fn new(n: u32, len: u64, file: Option<&Path>, needed: u64) -> Result<Cells> {
        Ok(match file {
            None => Cells::Memory(huge_zeroed(len as usize).map_err(|_| Error::OutOfMemory { layer: n, needed, available: 0, limit: MemoryLimit::Refused })?),
            Some(path) => Cells::File(ScratchState::create(path, len)?),
        })
    }

    pub(super) fn all(&self) -> &[Cell] {
        match self {
            Cells::Memory(m) => {
                // SAFETY: the map is writable and zero-initialised; any byte is a valid AtomicU8
                // and all access goes through this atomic view.
                unsafe { std::slice::from_raw_parts(m.as_ptr().cast::<Cell>(), m.len()) }
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
}

#[cfg(test)]
mod tests;
