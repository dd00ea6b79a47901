//! The one per-layer driver: it solves a layer, or one rank's share of it, by threshold-descending
//! retrograde analysis (see `docs/values.md`), in memory or out of core, in one process or
//! among the ranks of a [`Cluster`]. One process is the one-rank cluster [`Solo`].
//!
//! For `t = n, n-1, ..., 1` two sets grow: WIN (`v >= t`) and LOSS (`v <= -t`). A position that
//! first enters WIN at threshold `t` is worth exactly `t`, one that first enters LOSS exactly
//! `-t`; positions that never enter are worth 0 (neither side can force better than endless
//! play). The driver's phases:
//!
//! 1. **Exits pass** ([`ExitsPass`]): the best exit and the number of same-layer moves of every
//!    position, reading the lower layers at random (in memory), in sweeps (out of core) or
//!    through their owners (distributed).
//! 2. **Thresholds** from `n` down to 1: every part of this process's positions is seeded and
//!    propagated ([`State`]); an update for a position of another part becomes a message in that
//!    part's bucket, one for a position another rank owns goes to that rank's outbox, and the
//!    outboxes are exchanged at the end of each round. A threshold is done when, after a round,
//!    no bucket and no outbox of any rank holds anything (the agreement, a global sum). The order
//!    in which a threshold's updates are applied does not change its result (the sets WIN and
//!    LOSS it ends with are the least fixed point of the threshold's rules), so the bytes are
//!    those of the one-process in-memory solve whatever the mode, the ranks or the threads.
//! 3. **Final pass**: the values into the output; everything unresolved is worth 0.
//!
//! # Checkpoints
//!
//! The state after a phase (a stretch of the exits pass, a threshold) is a deterministic
//! function of the layer, so it can be saved ([`Checkpoint`]) and a later run resumes from it,
//! in either mode, with identical results. Every rank saves at the same phase boundaries (rank
//! 0's clock decides) and resumes only when every rank holds a checkpoint of the same phase.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::cluster::{exchange_outboxes, Cluster, Ownership, Solo};
use super::exits::ExitsPass;
use super::fused::FusedDepths;
use super::lookahead::{Lists, Lookahead, MAX_SPAN};
use super::options::{OutOfCore, Share, SolveOptions};
use super::pass::Pass;
use super::state::{exits_view, split, value_of, BestExit, Cell, Cells, Failure, Frontier, Meter, Router, State, CHUNK, RESOLVED};
use super::work::WorkModel;
use crate::error::{Error, Result};
use crate::index::layer_size;
use crate::progress::Progress;
use crate::rules::Ruleset;
use crate::solver::spill::{exits_hash, Checkpoint, Contents, Inboxes, Progress as Reached, Unusable, STATE_FILE};

/// Checkpoints are at least this many times as far apart as a save takes.
pub(super) const CHECKPOINT_COST_RATIO: u32 = 10;

/// Bytes of buffers [`solve_share`] keeps besides the state for a share of `positions`
/// positions in memory mode: the outbox buffer and the exits pass's lookups (about 48 bytes
/// each in flight: key and parent, the keys received, their order and the answers).
pub(crate) fn share_buffers(positions: u64) -> (u64, u64, u64) {
    let outbox = (positions / 4).clamp(16 << 20, 256 << 20);
    let lookups = (positions / 64).clamp(1 << 16, 1 << 24);
    (outbox, lookups, outbox + 48 * lookups)
}

/// Computes the exact value of every position of layer `n` under `rules`, in memory: as
/// [`solve_layer_with`] with default options.
///
/// # Errors
/// As [`solve_layer_with`].
///
/// # Panics
/// As [`solve_layer_with`].
#[cfg(test)]
pub(crate) fn solve_layer(rules: Ruleset, n: u32, lower: &[&[i8]], out: &mut [u8], progress: &dyn Progress) -> Result<()> {
    solve_layer_with(rules, n, lower, out, progress, &SolveOptions::default())
}

/// Computes the exact value of every position of layer `n` under `rules`, in one process.
///
/// - `lower[m]` must hold the finished values of layer `m` for every `m < n` (in index order),
///   except layer `n - 1`, which may be empty or not given (no move reaches it: it is never read);
/// - `out` receives one value per position of layer `n`, in index order; its length must be
///   `layer_size(n)`. Its previous contents are ignored;
/// - `options`: in memory or out of core, checkpoints.
///
/// Runs on the current rayon thread pool. Cost: one forward pass (every move of every position,
/// one read of a lower layer per capture), one predecessor pass over the positions that get a
/// non-zero value, `n` sequential scans of two bytes per position. Memory mode: `out` plus
/// [`working_memory`](super::working_memory)`(n)` bytes, and the lower layers read at random.
/// Out of core: resident memory of one part's state (two bytes per position), the lookup
/// buffer, the lower-layer window and the message buffers of [`OutOfCore`], plus a fixed
/// overhead; the scratch file takes two bytes per position of disk and the buckets up to eight
/// bytes per message of a round; the lower layers are read in sweeps, once per lookup
/// buffer.
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
pub(crate) fn solve_layer_with(rules: Ruleset, n: u32, lower: &[&[i8]], out: &mut [u8], progress: &dyn Progress, options: &SolveOptions) -> Result<()> {
    solve(rules, n, lower, out, progress, options, None)
}

/// Computes this rank's share of layer `n`: the values of the positions
/// [`Ownership::new`]`(layer_size(n), ranks).range(rank)`, into `out` (its length must be that
/// range's). Every rank of `share.cluster` must call it for the same layer with the same
/// options (limits may differ).
///
/// - `lower[m]` must give the finished values of every lower layer; this rank reads only the
///   slice it owns of each (the others ask it for theirs);
/// - `options`: out-of-core limits apply to this rank's share; the checkpoint is this rank's
///   own (a file per rank); `options.work` counts the share's work.
///
/// Cost: the share of the single-process solve's work, plus two exchanges per batch of the
/// exits pass (8 bytes per capture each way, one byte back) and, per round of a threshold, 8
/// bytes per update of a position another rank owns. Memory: the share's state (two bytes per
/// position, or a part of it out of core) and [`share_buffers`].
///
/// # Errors
/// As [`solve_layer_with`]; [`Error::Cluster`] when the transport fails;
/// [`Error::Interrupted`] on every rank when one rank's `progress` is cancelled (the ranks agree
/// at the end of every round).
///
/// # Panics
/// When `n > 48`, `out` has the wrong length or a lower layer has the wrong length.
pub(crate) fn solve_share(
    rules: Ruleset,
    n: u32,
    lower: &[&[i8]],
    out: &mut [u8],
    progress: &dyn Progress,
    options: &SolveOptions,
    share: &Share,
) -> Result<()> {
    solve(rules, n, lower, out, progress, options, Some(share))
}

/// The driver behind [`solve_layer_with`] (`share` absent: the one-rank cluster [`Solo`], the
/// whole layer) and [`solve_share`]: the setup ([`Solve`]), then the phases of the module's
/// documentation, one method each: a checkpoint resumed ([`Solve::resume`]), the exits pass
/// ([`Solve::exits_pass`]), the thresholds ([`Solve::thresholds`]) and the final pass
/// ([`Solve::final_pass`]).
fn solve(rules: Ruleset, n: u32, lower: &[&[i8]], out: &mut [u8], progress: &dyn Progress, options: &SolveOptions, share: Option<&Share>) -> Result<()> {
    assert!(n <= crate::index::MAX_STONES, "layer {n} does not exist");
    let cluster: &dyn Cluster = share.map_or(&Solo, |s| s.cluster);
    let (ranks, me) = (cluster.size(), cluster.rank());
    let owners = Ownership::new(layer_size(n), ranks);
    let own = owners.range(me);
    let len = own.end - own.start;
    assert_eq!(out.len() as u64, len, "output of layer {n} has the wrong length");
    for m in 0..n {
        // Layer n - 1 may be left out (empty or not given): no move reaches it (`MIN_CAPTURE`).
        let len = lower.get(m as usize).map_or(0, |l| l.len()) as u64;
        assert!(len == layer_size(m) || (m + 1 == n && len == 0), "lower layer {m} has the wrong length");
    }
    let ooc = options.out_of_core.as_ref();
    // This process's scratch directory: its rank's own, or the out-of-core limits'.
    let scratch = share.map(|s| s.work_dir).or(ooc.map(|o| o.work_dir));
    let part_len = ooc.map_or(len.max(1), |o| (o.part_len / CHUNK).max(1) * CHUNK);
    // Parts of this process's positions, relative to `own.start`.
    #[allow(clippy::single_range_in_vec_init)] // one empty part for a rank owning nothing
    let parts: Vec<Range<u64>> = if len == 0 { vec![0..0] } else { split(0..len, part_len) };
    let state_file = scratch.filter(|_| parts.len() > 1).map(|w| w.join(STATE_FILE));
    let storage = Cells::new(n, len, state_file.as_deref(), len)?;
    let generic;
    let work = match options.work {
        Some(w) => w,
        None => {
            generic = WorkModel::new(n, None);
            &generic
        }
    };
    let s = Solve {
        rules,
        n,
        lower,
        progress,
        options,
        share,
        cluster,
        ranks,
        me,
        owners,
        own,
        len,
        ooc,
        scratch,
        part_len,
        parts,
        storage: &storage,
        cells: storage.all(),
        // Every position's best exit waits in its byte of the output until the final pass.
        exits: exits_view(out),
        work,
        failure: Failure::new(),
        trace: progress.tracing(),
        lap_start: Mutex::new(Instant::now()),
    };

    let (mut reached, resumed) = s.resume()?;
    let mut clock = SaveClock::new(options.checkpoint_every);
    *s.lap_start.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    s.exits_pass(&mut reached, resumed, &mut clock)?;
    if options.exits_only {
        drop(s);
        drop(storage);
        if let Some(f) = &state_file {
            let _ = std::fs::remove_file(f);
        }
        return Ok(());
    }
    let routes = s.routes()?;
    s.thresholds(&mut reached, resumed, &routes, &mut clock)?;
    s.final_pass()?;
    drop(s);
    drop(storage);
    if let Some(f) = &state_file {
        let _ = std::fs::remove_file(f);
    }
    if let Some(d) = &routes.outbox_dir {
        let _ = std::fs::remove_dir(d);
    }
    Ok(())
}

/// What the phases of one solve share: the layer, this process's positions, their state and
/// parts, the seam to the other ranks and the first failure of a parallel phase.
struct Solve<'a> {
    rules: Ruleset,
    n: u32,
    lower: &'a [&'a [i8]],
    progress: &'a dyn Progress,
    options: &'a SolveOptions<'a>,
    share: Option<&'a Share<'a>>,
    cluster: &'a dyn Cluster,
    ranks: usize,
    me: usize,
    owners: Ownership,
    /// This process's positions, and their number.
    own: Range<u64>,
    len: u64,
    ooc: Option<&'a OutOfCore<'a>>,
    /// This process's scratch directory: its rank's own, or the out-of-core limits'.
    scratch: Option<&'a Path>,
    part_len: u64,
    /// Parts of this process's positions, relative to `own.start`.
    parts: Vec<Range<u64>>,
    storage: &'a Cells,
    cells: &'a [Cell],
    /// Every position's best exit, in its byte of the output until the final pass.
    exits: &'a [BestExit],
    work: &'a WorkModel,
    failure: Failure,
    trace: bool,
    /// When the phase being traced started.
    lap_start: Mutex<Instant>,
}

/// The message buckets of the thresholds: the outbox to the other ranks (in its own
/// directory) and the buckets of this process's parts (out of core).
struct Routes {
    outbox_dir: Option<PathBuf>,
    outbox: Option<Inboxes>,
    inboxes: Option<Inboxes>,
}

impl Solve<'_> {
    /// A message for the user.
    fn note(&self, text: &str) {
        if let Some(f) = self.options.note {
            f(text);
        }
    }

    /// Whether this process must stop: cancelled, or a parallel phase failed.
    fn stopped(&self) -> bool {
        self.progress.cancelled() || self.failure.failed.load(Relaxed)
    }

    /// Collective: whether some rank has `pending` work, after making sure no rank has to stop
    /// (this rank's own error comes first; the others learn that a rank stopped).
    fn agree(&self, pending: bool) -> Result<bool> {
        let stop = self.stopped();
        let [more, stops] = self.cluster.sum(&[u64::from(pending), u64::from(stop)])?[..] else {
            return Err(Error::Internal("a sum of two values gave another length".into()));
        };
        if stops > 0 {
            self.failure.take()?;
            return Err(if stop { Error::Interrupted } else { Error::Cluster(crate::error::ClusterError::PeerStopped) });
        }
        Ok(more > 0)
    }

    /// Traces the time since the last lap (with `what` done), and starts the next.
    fn lap(&self, what: &str) {
        let mut start = self.lap_start.lock().unwrap_or_else(|p| p.into_inner());
        if self.trace {
            self.progress.trace(&format!("  layer {} {what}: {:.3} s", self.n, start.elapsed().as_secs_f64()));
        }
        *start = Instant::now();
    }

    /// Collective: rank 0's clock decides whether every rank saves now. `last`: the last save
    /// of the thresholds, taken whenever the exits are kept and some checkpoint was (see
    /// [`Solve::thresholds`]).
    fn save(&self, clock: &mut SaveClock, at: Reached, last: bool) -> Result<()> {
        let options = self.options;
        let Some(c) = options.checkpoint else { return Ok(()) };
        let due = if last { options.exits_kept && clock.saved() } else { clock.due() };
        if self.cluster.any(self.me == 0 && due)? {
            clock.save(c, at, self.storage, self.exits, options.exits_kept, &|text| self.note(text))?;
            if let Some(saved) = options.saved {
                saved();
            }
        }
        Ok(())
    }

    /// Gives back the pages of a part's cells and, out of core, of its bytes of the output.
    fn release_both(&self) -> impl Fn(&Range<u64>) + Sync + '_ {
        let (storage, release_out) = (self.storage, self.ooc.map(|o| o.release_out));
        move |r: &Range<u64>| {
            storage.release(r.clone());
            if let Some(release) = release_out {
                release(r.clone());
            }
        }
    }

    /// Resumes from a checkpoint when every rank holds a valid one of the same phase: where
    /// the solve stands, and whether it resumed. Otherwise a checkpoint loaded by this rank
    /// alone is undone (its cells cleared) and removed.
    ///
    /// # Errors
    /// [`Error::Cluster`] when the transport fails; [`Error::Io`] when the checkpoint cannot be
    /// removed.
    fn resume(&self) -> Result<(Reached, bool)> {
        let (n, len, ranks, me) = (self.n, self.len, self.ranks, self.me);
        let afresh = Reached { exits_done: 0, next_threshold: n };
        let Some(c) = self.options.checkpoint else { return Ok((afresh, false)) };
        let mine = match load_checkpoint(c, self.storage, self.exits, self.options.exits_kept) {
            // The exits pass of a distributed solve takes no checkpoints: only complete ones count.
            Ok(at) if ranks == 1 || at.exits_done == len => Some(at),
            Ok(_) | Err(Unusable::Absent) => None,
            Err(Unusable::Discarded(why)) => {
                let afresh = if ranks == 1 { "; starting the layer afresh" } else { "" };
                self.note(&format!("layer {n}: checkpoint {} discarded ({why}){afresh}", c.path().display()));
                None
            }
        };
        let code = mine.map_or(0, |at| 1 + u64::from(at.next_threshold));
        let all = self.cluster.all_gather(code)?;
        if all.iter().all(|&x| x == code && x > 0) {
            let at = mine.expect("code > 0");
            if ranks == 1 {
                let phase = if at.exits_done < len {
                    format!("{:.0} % of the exits pass", 100.0 * at.exits_done as f64 / len.max(1) as f64)
                } else if at.next_threshold == n {
                    "the exits pass".to_string()
                } else {
                    format!("thresholds {n}..{}", at.next_threshold + 1)
                };
                self.note(&format!("layer {n}: resuming from a checkpoint after {phase}"));
            } else if me == 0 {
                self.note(&format!("layer {n}: every rank resumes from its checkpoint after thresholds {n}..{}", at.next_threshold + 1));
            }
            return Ok((at, true));
        }
        if ranks > 1 && me == 0 && all.iter().any(|&x| x > 0) {
            self.note(&format!("layer {n}: the ranks' checkpoints are not of one phase; starting the layer afresh"));
        }
        if mine.is_some() {
            let cells = self.cells;
            self.parts.par_iter().for_each(|p| cells[p.start as usize..p.end as usize].iter().for_each(|c| c.store(0, Relaxed)));
            // (The exits pass writes every best exit anew.)
        }
        c.remove()?;
        Ok((afresh, false))
    }

    /// Phase 1, the exits pass: the best exit and the number of same-layer moves of every position,
    /// from `reached.exits_done` on (none when a checkpoint resumed past it). Every rank of a
    /// distributed solve takes part, one owning nothing included; a resumed distributed
    /// checkpoint is always past the exits pass.
    ///
    /// # Errors
    /// As [`ExitsPass::run`], a save and the agreement after the pass.
    fn exits_pass(&self, reached: &mut Reached, resumed: bool, clock: &mut SaveClock) -> Result<()> {
        let (n, len, options) = (self.n, self.len, self.options);
        self.progress.phase("exits");
        self.progress.advance(self.work.exits(reached.exits_done));
        if !resumed || reached.exits_done < len {
            let pass = match (self.share, self.ooc) {
                (Some(share), _) if self.ranks > 1 => ExitsPass::Exchanged { share, release_lower: self.ooc.map(|o| o.release_lower) },
                (_, Some(o)) => ExitsPass::Swept(o),
                _ if options.stream_lower => ExitsPass::Streamed { release_lower: options.release_lower, release_out: options.release_out },
                _ => ExitsPass::Direct { release_lower: options.release_lower },
            };
            let release_both = self.release_both();
            let p = Pass {
                rules: self.rules,
                n,
                lower: self.lower,
                cells: self.cells,
                exits: self.exits,
                own: self.own.clone(),
                parts: &self.parts,
                progress: self.progress,
                failure: &self.failure,
                release_part: &release_both,
            };
            pass.run(&p, reached.exits_done, &mut |done| {
                reached.exits_done = done;
                self.save(clock, *reached, false)
            })?;
            self.agree(false)?;
            reached.exits_done = len;
            if reached.next_threshold == n {
                self.save(clock, *reached, false)?;
            }
        }
        self.lap("exits");
        Ok(())
    }

    /// The message buckets of the thresholds ([`Routes`]).
    ///
    /// # Errors
    /// [`Error::Io`] when the outbox directory cannot be created or old bucket files removed.
    fn routes(&self) -> Result<Routes> {
        let outbox_dir = self.share.filter(|_| self.ranks > 1).map(|s| s.work_dir.join("outbox"));
        let outbox = match (&outbox_dir, self.share) {
            (Some(d), Some(s)) => {
                std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
                Some(Inboxes::new(d, self.ranks, self.ooc.map_or(s.outbox_bytes, |o| o.message_bytes))?)
            }
            _ => None,
        };
        let inboxes = match (self.ooc, self.scratch) {
            // The thresholds also buffer messages in the memory of the exits pass's lookups and
            // lower-layer window, idle from now on: fewer of them go through the bucket files. Half
            // the message buffers' own share goes to the seed lists (see `Solve::lookahead`).
            (Some(o), Some(w)) if self.parts.len() > 1 => Some(Inboxes::new(w, self.parts.len(), o.message_bytes / 2 + o.lookup_bytes + o.lower_window)?),
            _ => None,
        };
        Ok(Routes { outbox_dir, outbox, inboxes })
    }

    /// Thresholds are seeded from lists gathered by earlier scans: in memory where one part is
    /// resident, else in files of the scratch directory. Out of core they take half the message
    /// buffers' share: a quarter to buffer them, a quarter to read them back (two copies of
    /// eight bytes an entry); a chunk's lists are handed on as soon as they are gathered.
    ///
    /// # Errors
    /// [`Error::Io`] when old list files cannot be removed.
    fn lookahead(&self, reached: Reached) -> Result<Option<Lookahead>> {
        Ok(match (self.ooc, self.scratch) {
            _ if reached.next_threshold == 0 => None,
            (None, _) if self.parts.len() == 1 => {
                let budget = self.options.list_bytes.map_or(u64::MAX, |b| b / 4);
                let storage = self.storage;
                let release_part = |r: &Range<u64>| storage.release(r.clone());
                Lookahead::new(self.cells, self.exits, &self.parts, &release_part, Lists::Memory(Vec::new()), budget)
            }
            (Some(o), Some(w)) => {
                let quarter = o.message_bytes / 4;
                let buckets = Inboxes::named(w, "lists", self.parts.len() * MAX_SPAN, quarter)?;
                let lists = Lists::Disk { buckets, block: (quarter / 16).max(1 << 12) as usize };
                Lookahead::new(self.cells, self.exits, &self.parts, &self.release_both(), lists, u64::MAX)
            }
            _ => None,
        })
    }

    /// Phase 2, the thresholds from `reached.next_threshold` down to 1, each with a save after it
    /// (after the last, only when the exits are kept in the output: the final pass writes the
    /// values over them, and a stop during it resumes from there, which needs none of them).
    ///
    /// # Errors
    /// As [`Solve::threshold`] and a save.
    fn thresholds(&self, reached: &mut Reached, resumed: bool, routes: &Routes, clock: &mut SaveClock) -> Result<()> {
        let (n, len, work) = (self.n, self.len, self.work);
        let router = (routes.inboxes.is_some() || routes.outbox.is_some()).then(|| Router {
            own: self.own.clone(),
            part_len: self.part_len,
            parts: routes.inboxes.as_ref(),
            ranks: routes.outbox.as_ref().map(|o| (self.owners, o)),
        });
        self.progress.advance((reached.next_threshold + 1..=n).map(|t| work.threshold(t, len)).sum());
        let mut lookahead = self.lookahead(*reached)?;
        // The level-synchronous propagation (in memory, one part): see `State::propagate_levels`.
        // With depths it records them, when every threshold runs here from the exits pass on (the
        // exits pass marked the games that are over); else it is the level census's measuring tool
        // (`SolveOptions::levels`: `OWARE_LEVELS=1` to the program, `scripts/bench-levels`).
        let one_part = self.parts.len() == 1 && router.is_none();
        let depths = self.options.depths.filter(|_| !resumed && self.ooc.is_none() && one_part);
        let levels = (depths.is_some() || (self.options.levels && one_part)).then(Frontier::default);
        for t in (1..=reached.next_threshold as i8).rev() {
            self.threshold(t, routes, router.as_ref(), lookahead.as_mut(), levels.as_ref(), depths)?;
            reached.next_threshold = t as u32 - 1;
            self.save(clock, *reached, t == 1)?;
        }
        if let Some(d) = depths {
            d.finish();
        }
        Ok(())
    }

    /// Threshold `t`: seed, then propagate, round after round, every part of this process's
    /// positions (from `lookahead`'s lists where it has them), the outboxes exchanged after
    /// each round, until no part and no rank has messages left.
    ///
    /// # Errors
    /// [`Error::Io`] when a bucket cannot be read or written; [`Error::Cluster`] when the
    /// transport fails; [`Error::Interrupted`] (or the failure) when some rank stops.
    fn threshold(
        &self,
        t: i8,
        routes: &Routes,
        router: Option<&Router>,
        mut lookahead: Option<&mut Lookahead>,
        levels: Option<&Frontier>,
        depths: Option<&FusedDepths>,
    ) -> Result<()> {
        let (n, parts, progress) = (self.n, &self.parts, self.progress);
        progress.phase(&format!("threshold {t}"));
        let meter = Meter { progress, budget: self.work.threshold(t as u32, self.len), charged: AtomicU64::new(0) };
        let state_of = |p: &Range<u64>| State {
            rules: self.rules,
            n,
            cells: &self.cells[p.start as usize..p.end as usize],
            exits: &self.exits[p.start as usize..p.end as usize],
            base: self.own.start + p.start,
            remote: router,
            failure: &self.failure,
            meter: &meter,
            frontier: levels,
            depths,
        };
        if let Some(ahead) = lookahead.as_deref_mut() {
            ahead.begin(t);
        }
        let release_both = self.release_both();
        let mut round = 0;
        loop {
            // A process told to stop goes on to the agreement below.
            part_round(t, round, parts, routes.inboxes.as_ref(), lookahead.as_deref_mut(), &state_of, progress, &release_both, &|| self.stopped())?;
            if levels.is_some() {
                let census = state_of(&parts[0]).propagate_levels(t);
                if self.trace {
                    let sizes: Vec<String> = census.iter().map(|(p, u)| format!("{p}/{u}")).collect();
                    progress.trace(&format!("  layer {n} threshold {t} levels (positions/updates): {}", sizes.join(" ")));
                }
            }
            if let (Some(outbox), Some(router)) = (&routes.outbox, router) {
                // What arrives is applied at once (one part) or, with several parts, queued in
                // their buckets for the next round.
                let parted = routes.inboxes.is_some();
                exchange_outboxes(self.cluster, outbox, &mut |mut m| {
                    if parted {
                        router.send_all(&mut m)
                    } else {
                        state_of(&parts[0]).apply(t, &m);
                        Ok(())
                    }
                })?;
            }
            let pending = routes.outbox.as_ref().is_some_and(|o| o.any_pending()) || routes.inboxes.as_ref().is_some_and(|i| i.any_pending());
            if !self.agree(pending)? {
                break;
            }
            round += 1;
        }
        meter.finish();
        self.lap(&format!("threshold {t} ({} rounds)", round + 1));
        Ok(())
    }

    /// Phase 3, the final pass: the values into the output, everything still unresolved worth 0
    /// (endless play); then the checkpoint, no longer needed, is removed.
    ///
    /// # Errors
    /// [`Error::Io`] when the checkpoint cannot be removed.
    fn final_pass(&self) -> Result<()> {
        let storage = self.storage;
        let release_part = |r: &Range<u64>| storage.release(r.clone());
        write_values(&self.parts, self.cells, self.exits, self.work, self.progress, &release_part, self.ooc.map(|o| o.release_out));
        if let Some(c) = self.options.checkpoint {
            c.remove()?;
        }
        Ok(())
    }
}

/// Copies `buf.len()` checkpoint bytes from offset `off` (cells first, then best exits) out of
/// the state, or into it when `load`.
fn copy_state(cells: &[Cell], exits: &[BestExit], off: u64, buf: &mut [u8], load: bool) {
    let len = cells.len() as u64;
    for (i, b) in buf.iter_mut().enumerate() {
        let at = off + i as u64;
        if at < len {
            let c = &cells[at as usize];
            if load {
                c.store(*b, Relaxed);
            } else {
                *b = c.load(Relaxed);
            }
        } else {
            let e = &exits[(at - len) as usize];
            if load {
                e.store(*b as i8, Relaxed);
            } else {
                *b = e.load(Relaxed) as u8;
            }
        }
    }
}

/// The best exits as bytes (for hashing between phases, when no thread writes them).
fn exits_bytes(exits: &[BestExit]) -> &[u8] {
    // SAFETY: AtomicI8 has the layout of u8; callers read between phases, when nothing writes.
    unsafe { std::slice::from_raw_parts(exits.as_ptr().cast::<u8>(), exits.len()) }
}

/// How many best exits a solve that reached `at` has written (all of them after the exits
/// pass, none needed once every threshold is done).
fn exits_written(at: Reached, len: u64) -> u64 {
    if at.next_threshold == 0 && at.exits_done == len {
        0
    } else {
        at.exits_done.min(len)
    }
}

/// What a checkpoint at `at` holds: the cells and the best exits, or, when the exits are kept
/// in the output (`kept`), the cells and the hash of the exits written so far.
fn contents(at: Reached, exits: &[BestExit], kept: bool) -> Contents {
    let len = exits.len() as u64;
    if kept {
        Contents { payload: len, exits_hash: exits_hash(&exits_bytes(exits)[..exits_written(at, len) as usize]) }
    } else {
        Contents { payload: 2 * len, exits_hash: 0 }
    }
}

/// Loads checkpoint `c` into the cells of `storage` and, unless they are kept in the output
/// (`kept`: the checkpoint then holds their hash, checked here), the best exits `exits`
/// (giving scratch pages back as it goes).
///
/// # Errors
/// As [`Checkpoint::load`]: the state is untouched unless it succeeds.
pub(super) fn load_checkpoint(c: &Checkpoint, storage: &Cells, exits: &[BestExit], kept: bool) -> std::result::Result<Reached, Unusable> {
    let cells = storage.all();
    let len = cells.len() as u64;
    let accept = |at: Reached, found: Contents| {
        if found == contents(at, exits, kept) {
            Ok(())
        } else if kept != (found.exits_hash != 0) {
            Err(if kept { "it holds the exits, which this solve keeps in its output" } else { "its exits were kept in another output" }.to_string())
        } else {
            Err("the exits kept in the output changed since it was saved".to_string())
        }
    };
    c.load(&accept, &mut |off: u64, b: &[u8]| {
        let mut b = b.to_vec();
        copy_state(cells, exits, off, &mut b, true);
        if off < len {
            storage.release(off..(off + b.len() as u64).min(len));
        }
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

    /// Whether a checkpoint was saved since the clock started.
    pub(super) fn saved(&self) -> bool {
        self.cost > Duration::ZERO
    }

    /// Saves the cells of `storage` and the best exits `exits` (their hash only when they are
    /// `kept` in the output), quiescent (between phases), as checkpoint `c` at `at`; `note`
    /// tells the user when the disk cannot hold two checkpoints.
    ///
    /// # Errors
    /// As [`Checkpoint::save`].
    pub(super) fn save(&mut self, c: &Checkpoint, at: Reached, storage: &Cells, exits: &[BestExit], kept: bool, note: &dyn Fn(&str)) -> Result<()> {
        let started = Instant::now();
        let cells = storage.all();
        let len = cells.len() as u64;
        c.save(
            at,
            contents(at, exits, kept),
            &|off, buf| {
                copy_state(cells, exits, off, buf, false);
                if off < len {
                    storage.release(off..(off + buf.len() as u64).min(len));
                }
            },
            note,
        )?;
        self.last = Instant::now();
        self.cost = started.elapsed().max(Duration::from_nanos(1));
        Ok(())
    }
}

/// One round of threshold `t` over `parts` (cells `parts[k]` solved by `state_of(&parts[k])`):
/// round 0 seeds every part (from `lookahead`'s lists where it has them), and every round
/// applies what a part's bucket holds (later rounds skip parts with nothing waiting); each
/// part's pages are given back when it is done. Returns false when `stopped` says so after a
/// part.
///
/// # Errors
/// [`Error::Io`] when a bucket cannot be read.
#[allow(clippy::too_many_arguments)]
pub(super) fn part_round<'s>(
    t: i8,
    round: u32,
    parts: &[Range<u64>],
    inboxes: Option<&Inboxes>,
    mut lookahead: Option<&mut Lookahead>,
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
            match lookahead.as_deref_mut() {
                Some(ahead) => ahead.seed(&state, pi, t, part.end - part.start, progress)?,
                None => {
                    state.seed(t, 0..part.end - part.start, t..t, None, progress);
                }
            }
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
    cells: &[Cell],
    out: &[BestExit],
    work: &WorkModel,
    progress: &dyn Progress,
    release_part: &dyn Fn(&Range<u64>),
    release_out: Option<&(dyn Fn(Range<u64>) + Sync)>,
) {
    progress.phase("draws");
    for part in parts {
        let (a, b) = (part.start as usize, part.end as usize);
        out[a..b].par_chunks(CHUNK as usize).zip(cells[a..b].par_chunks(CHUNK as usize)).for_each(|(o, c)| {
            for (byte, cell) in o.iter().zip(c) {
                let s = cell.load(Relaxed);
                byte.store(if s & RESOLVED != 0 { value_of(s) } else { 0 }, Relaxed);
            }
            progress.advance(work.draws(o.len() as u64));
        });
        release_part(part);
        if let Some(release) = release_out {
            release(part.clone());
        }
    }
}
