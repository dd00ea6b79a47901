//! One rank's share of a distributed solve: the same threshold-descending analysis as
//! [`super::retro`], with the layer divided among the ranks of a [`Cluster`] by
//! [`Ownership`] (rank `r` owns the `r`-th of equal consecutive index ranges of every layer).
//!
//! - **Exits pass.** A rank generates the moves of its own positions. A capture's value is
//!   owned by the rank owning the child's index in the lower layer: the lookups are collected in
//!   batches, sent to their owners in one exchange, served there in sorted order (so each rank
//!   reads only its own slice of each lower layer, sequentially) and answered in a second
//!   exchange in the order they came.
//! - **Thresholds.** Each rank seeds and propagates its own positions; an update for a position
//!   another rank owns goes to that rank's outbox (memory, then a bucket file). At the end of a
//!   round the outboxes are exchanged in bounded batches, and what arrives is applied at once
//!   (one part) or queued for the next round (several parts, out of core). A threshold ends
//!   when, after an exchange, no rank has anything left: a global sum, the termination test.
//!   As in one process, a threshold's sets are the least fixed point of its rules whatever the
//!   order of its updates, so the values are those of the single-process solve.
//! - **Checkpoints** are taken by every rank at the same phase boundaries (rank 0's clock
//!   decides), and resumed only when every rank holds one of the same phase.

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;

use super::cluster::{Cluster, Ownership};
use super::retro::{
    exits, load_checkpoint, pack, part_round, split, value_of, write_values, Cells, Failure, Meter, Router, SaveClock, State, EXIT_UNITS, KEY_SHIFT,
};
use super::{SolveOptions, WorkModel, CHUNK};
use crate::error::{Error, Result};
use crate::index::{layer_size, rank_unchecked, LayerWalker};
use crate::progress::Progress;
use crate::rules::Ruleset;
use crate::spill::{Inboxes, Progress as Reached, Unusable, STATE_FILE};

/// What a rank needs besides [`SolveOptions`] for its share of a distributed solve.
pub struct Share<'a> {
    /// The ranks and their transport.
    pub cluster: &'a dyn Cluster,
    /// This rank's own scratch directory (outbox buckets; out of core also the state and the
    /// parts' buckets). Ranks must not share one.
    pub work_dir: &'a Path,
    /// Bytes of messages for other ranks buffered in memory before they go to bucket files.
    pub outbox_bytes: u64,
    /// Capture lookups a rank collects before an exchange of the exits pass.
    pub lookups: u64,
}

/// Messages per destination in one exchange step (also keeps MPI's 32-bit counts far away).
const EXCHANGE_STEP: usize = 1 << 22;

/// Bytes of buffers [`solve_share`] keeps besides the state for a share of `positions`
/// positions in memory mode: the outbox buffer and the exits pass's lookups (about 48 bytes
/// each in flight: key and parent, the keys received, their order and the answers).
pub fn share_buffers(positions: u64) -> (u64, u64, u64) {
    let outbox = (positions / 4).clamp(16 << 20, 256 << 20);
    let lookups = (positions / 64).clamp(1 << 16, 1 << 24);
    (outbox, lookups, outbox + 48 * lookups)
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
/// As [`super::solve_layer_with`]; [`Error::Cluster`] when the transport fails;
/// [`Error::Interrupted`] on every rank when one rank's `progress` is cancelled (the ranks agree
/// at the end of every round).
///
/// # Panics
/// When `n > 48`, `out` has the wrong length or a lower layer has the wrong length.
pub fn solve_share(rules: Ruleset, n: u32, lower: &[&[i8]], out: &mut [u8], progress: &dyn Progress, options: &SolveOptions, share: &Share) -> Result<()> {
    assert!(n <= crate::index::MAX_STONES, "layer {n} does not exist");
    let cluster = share.cluster;
    let (ranks, me) = (cluster.size(), cluster.rank());
    let size = layer_size(n);
    let owners = Ownership::new(size, ranks);
    let own = owners.range(me);
    let len = own.end - own.start;
    assert_eq!(out.len() as u64, len, "output share of layer {n} has the wrong length");
    for m in 0..n {
        assert_eq!(lower[m as usize].len() as u64, layer_size(m), "lower layer {m} has the wrong length");
    }
    let ooc = options.out_of_core.as_ref();
    let part_len = ooc.map_or(len.max(1), |o| (o.part_len / CHUNK).max(1) * CHUNK);
    // Parts of this rank's share, in share-relative positions.
    #[allow(clippy::single_range_in_vec_init)] // one empty part for a rank owning nothing
    let parts: Vec<Range<u64>> = if len == 0 { vec![0..0] } else { split(0..len, part_len) };
    let state_file = (parts.len() > 1).then(|| share.work_dir.join(STATE_FILE));
    let storage = Cells::new(n, len, state_file.as_deref(), 2 * len)?;
    let cells = storage.all();
    let release_part = |r: &Range<u64>| storage.release(r.clone());
    let note = |text: &str| {
        if let Some(f) = options.note {
            f(text);
        }
    };
    let generic;
    let work = match options.work {
        Some(w) => w,
        None => {
            generic = WorkModel::new(n, None);
            &generic
        }
    };

    // Resume only when every rank holds a checkpoint of the same phase.
    let mut reached = Reached { exits_done: 0, next_threshold: n };
    let mut resumed = false;
    if let Some(c) = options.checkpoint {
        let mine = match load_checkpoint(c, &storage) {
            Ok(at) if at.exits_done == len => Some(at),
            Ok(_) => None,
            Err(Unusable::Absent) => None,
            Err(Unusable::Discarded(why)) => {
                note(&format!("layer {n}: checkpoint {} discarded ({why})", c.path().display()));
                None
            }
        };
        let code = mine.map_or(0, |at| 1 + u64::from(at.next_threshold));
        let all = cluster.all_gather(code)?;
        if all.iter().all(|&x| x == code && x > 0) {
            reached = mine.expect("code > 0");
            resumed = true;
            if me == 0 {
                note(&format!("layer {n}: every rank resumes from its checkpoint after thresholds {n}..{}", reached.next_threshold + 1));
            }
        } else {
            if all.iter().any(|&x| x > 0) && me == 0 {
                note(&format!("layer {n}: the ranks' checkpoints are not of one phase; starting the layer afresh"));
            }
            if mine.is_some() {
                parts.par_iter().for_each(|p| cells[p.start as usize..p.end as usize].iter().for_each(|c| c.store(0, Relaxed)));
            }
            c.remove()?;
        }
    }
    let mut clock = SaveClock::new(options.checkpoint_every);
    // Collective: rank 0's clock decides whether every rank saves now.
    let mut save = |at: Reached| -> Result<()> {
        match options.checkpoint {
            Some(c) if cluster.any(me == 0 && clock.due())? => clock.save(c, at, &storage),
            _ => Ok(()),
        }
    };
    let failure = Failure::new();
    let stopped = || progress.cancelled() || failure.failed.load(Relaxed);
    // Collective: whether some rank has `pending` work, after making sure no rank has to stop
    // (this rank's own error comes first; the others learn that a rank stopped).
    let agree = |pending: bool| -> Result<bool> {
        let stop = stopped();
        let [more, stops] = cluster.sum(&[u64::from(pending), u64::from(stop)])?[..] else {
            return Err(Error::Internal("a sum of two values gave another length".into()));
        };
        if stops > 0 {
            failure.take()?;
            return Err(if stop { Error::Interrupted } else { Error::Cluster(crate::error::ClusterError::PeerStopped) });
        }
        Ok(more > 0)
    };

    // 1. Exits pass.
    progress.phase("exits");
    // (Every rank agrees: a resumed checkpoint is always past the exits pass.)
    if !resumed {
        exits_shared(rules, n, lower, cells, &own, &parts, share, ooc.map(|o| o.release_lower), progress, &failure, &release_part)?;
        agree(false)?;
        reached.exits_done = len;
        save(reached)?;
    } else {
        progress.advance(work.exits(len));
    }

    // 2. Thresholds.
    let outbox_dir = share.work_dir.join("outbox");
    std::fs::create_dir_all(&outbox_dir).map_err(|e| Error::io(&outbox_dir, e))?;
    let outbox = Inboxes::new(&outbox_dir, ranks, ooc.map_or(share.outbox_bytes, |o| o.message_bytes))?;
    let inboxes = match ooc.filter(|_| parts.len() > 1) {
        Some(o) => Some(Inboxes::new(share.work_dir, parts.len(), o.message_bytes)?),
        None => None,
    };
    let router = Router { own: own.clone(), part_len, parts: inboxes.as_ref(), ranks: Some((owners, &outbox)) };
    progress.advance((reached.next_threshold + 1..=n).map(|t| work.threshold(t, len)).sum());
    for t in (1..=reached.next_threshold as i8).rev() {
        progress.phase(&format!("threshold {t}"));
        let meter = Meter { progress, budget: work.threshold(t as u32, len), charged: AtomicU64::new(0) };
        let state_of = |p: &Range<u64>| State {
            rules,
            n,
            cells: &cells[p.start as usize..p.end as usize],
            base: own.start + p.start,
            remote: Some(&router),
            failure: &failure,
            meter: &meter,
        };
        let mut round = 0;
        loop {
            // A rank told to stop goes on to the agreement below.
            part_round(t, round, &parts, inboxes.as_ref(), &state_of, progress, &release_part, &stopped)?;
            // Exchange the outboxes; what arrives is applied now (one part) or queued.
            let mut buckets = (0..ranks).map(|d| outbox.take(d)).collect::<Result<Vec<_>>>()?;
            let mut send: Vec<Vec<u64>> = vec![Vec::new(); ranks];
            loop {
                for (b, s) in buckets.iter_mut().zip(send.iter_mut()) {
                    b.next(EXCHANGE_STEP, s)?;
                }
                let got = cluster.exchange_u64(&send)?;
                // Every message received is for one of this rank's parts.
                match &inboxes {
                    None => state_of(&parts[0]).apply(t, &got.data),
                    Some(_) => router.send_all(&mut { got.data })?,
                }
                if !cluster.any(buckets.iter().any(|b| !b.is_empty()))? {
                    break;
                }
            }
            drop(buckets);
            if !agree(outbox.any_pending() || inboxes.as_ref().is_some_and(|i| i.any_pending()))? {
                break;
            }
            round += 1;
        }
        meter.finish();
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
    if parts.len() > 1 {
        let _ = std::fs::remove_file(share.work_dir.join(STATE_FILE));
    }
    let _ = std::fs::remove_dir(&outbox_dir);
    Ok(())
}

/// The exits pass of a rank's share: in batches of at most `share.lookups` capture lookups,
/// collected in index order, sent to the owners of the children, answered and folded in. Every
/// rank takes part in every exchange until no rank has positions left. Out of core
/// (`release_lower` given), each served slice's pages and each finished batch's cells are
/// given back.
#[allow(clippy::too_many_arguments)]
fn exits_shared(
    rules: Ruleset,
    n: u32,
    lower: &[&[i8]],
    cells: &[AtomicU16],
    own: &Range<u64>,
    parts: &[Range<u64>],
    share: &Share,
    release_lower: Option<&(dyn Fn(u32, Range<u64>) + Sync)>,
    progress: &dyn Progress,
    failure: &Failure,
    release_part: &dyn Fn(&Range<u64>),
) -> Result<()> {
    let cluster = share.cluster;
    let ranks = cluster.size();
    let owners: Vec<Ownership> = (0..n).map(|m| Ownership::new(layer_size(m), ranks)).collect();
    let mask = (1u64 << KEY_SHIFT) - 1;
    let dest = |key: u64| owners[(key >> KEY_SHIFT) as usize].owner(key & mask);
    let cap = share.lookups.max(1 << 12) as usize;
    // Share-relative chunks, in order; the batch boundaries fall between them.
    let ranges: Vec<Range<u64>> = parts.iter().flat_map(|p| split(p.clone(), CHUNK)).collect();
    let group = rayon::current_num_threads().max(1);
    let mut next = 0;
    let mut lookups: Vec<(u64, u64)> = Vec::new();
    loop {
        // Collect a batch.
        let first = next;
        while next < ranges.len() && lookups.len() < cap && !(progress.cancelled() || failure.failed.load(Relaxed)) {
            let rs = &ranges[next..(next + group).min(ranges.len())];
            let pieces: Vec<Vec<(u64, u64)>> = rs
                .par_iter()
                .map(|r| {
                    let mut mine = Vec::new();
                    let global = own.start + r.start..own.start + r.end;
                    let walker = LayerWalker::new(n, global).expect("n <= 48 was checked");
                    for (i, b) in walker {
                        let k = i - own.start;
                        let (best, pending) = exits(rules, &b, |captured, child| {
                            let key = (u64::from(n - u32::from(captured)) << KEY_SHIFT) | rank_unchecked(child);
                            mine.push((key, k));
                        });
                        cells[k as usize].store(pack(best, pending), Relaxed);
                    }
                    progress.advance((r.end - r.start) * EXIT_UNITS);
                    mine
                })
                .collect();
            for p in pieces {
                lookups.extend_from_slice(&p);
            }
            next += rs.len();
        }
        // Ask the owners, in destination order.
        lookups.par_sort_unstable_by_key(|&(key, _)| (dest(key), key));
        let mut send: Vec<Vec<u64>> = vec![Vec::new(); ranks];
        for &(key, _) in &lookups {
            send[dest(key)].push(key);
        }
        let asked = cluster.exchange_u64(&send)?;
        drop(send);
        // Serve: read this rank's slices in sorted order, answer in the order asked.
        let mut order: Vec<(u64, u32)> = asked.data.iter().enumerate().map(|(i, &k)| (k, i as u32)).collect();
        order.par_sort_unstable();
        let values: Vec<i8> = order.par_iter().map(|&(key, _)| lower[(key >> KEY_SHIFT) as usize][(key & mask) as usize]).collect();
        let mut answers = vec![0u8; order.len()];
        for (&(_, i), &v) in order.iter().zip(&values) {
            answers[i as usize] = v as u8;
        }
        if let (Some(release), Some(lo), Some(hi)) = (release_lower, order.first(), order.last()) {
            for m in (lo.0 >> KEY_SHIFT) as u32..=(hi.0 >> KEY_SHIFT) as u32 {
                release(m, owners[m as usize].range(cluster.rank()));
            }
        }
        drop((order, values));
        let mut reply: Vec<Vec<u8>> = Vec::with_capacity(ranks);
        let mut at = 0;
        for &c in &asked.counts {
            reply.push(answers[at..at + c].to_vec());
            at += c;
        }
        drop((asked, answers));
        let back = cluster.exchange_u8(&reply)?;
        drop(reply);
        // Fold the answers into the parents' best exits.
        lookups.par_iter().zip(back.data.par_iter()).for_each(|(&(key, parent), &v)| {
            let e = (n - (key >> KEY_SHIFT) as u32) as i8 - v as i8;
            let _ = cells[parent as usize].fetch_update(Relaxed, Relaxed, |s| (e > value_of(s)).then_some((s & !0xff) | u16::from(e as u8)));
        });
        lookups.clear();
        if next > first {
            release_part(&(ranges[first].start..ranges[next - 1].end));
        }
        let more = next < ranges.len() && !(progress.cancelled() || failure.failed.load(Relaxed));
        if !cluster.any(more)? {
            break;
        }
    }
    Ok(())
}
