//! Depths to capture in the build: each layer's depths recorded by its values' propagation (in
//! memory, one process) or computed by their own pass from its values and the smaller layers'
//! values after its values (and bounds), by every rank its share under `mpirun`; checked against
//! the values on every position and against the definition on a spread of positions, and
//! published atomically (the depths' [`CompanionPass`]; [`super::companion`] checks or builds
//! them).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

use super::companion::{values_of, CompanionPass, Inputs};
use super::config::SPOT_CHECKS;
use super::plan::{CompanionPlan, Planner, ValuesPlan};
use super::stats::{rank_figures, CompanionStats, DtcStats, RankFigures};
use super::BuildObserver;
use crate::dtc::{byte_of, record, DtcPayload, DIRECT_MAX};
use crate::error::{Error, Result};
use crate::index::{layer_size, rank_unchecked, unrank_unchecked};
use crate::rules::Ruleset;
use crate::solver::cluster::{Cluster, Metered, Ownership};
use crate::solver::{dtc_work_units, share_buffers, solve_dtc_layer, Share, CHUNK, EXCHANGE_STEP};
use crate::storage::{DatabaseDir, DtcKind, DtcWriter, Layer, ShareWriter};
use crate::sys::peak_memory;
use crate::verify::derive_dtc;

/// The statistics of layer `n`'s depths `d` beside its values, checking every entry against
/// its value and the table of escaped depths.
///
/// Cost: one parallel pass over the values and the depths.
///
/// # Errors
/// [`Error::Corrupt`] ([`Damage::DtcContradictsValue`](crate::error::Damage::DtcContradictsValue),
/// [`Damage::BadDtc`](crate::error::Damage::BadDtc)) naming the first fault.
pub fn dtc_stats(rules: Ruleset, n: u32, values: &Layer, d: &Layer<DtcKind>) -> Result<DtcStats> {
    match crate::dtc::tally(values.values(), &d.payload()) {
        Ok(t) => Ok(DtcStats::new(rules, n, t.histogram, t.escaped)),
        Err(e) => Err(crate::verify::dtc_damage(d.path(), e)),
    }
}

/// Layer `n`'s depths are written from those its values' propagation recorded
/// ([`FusedDepths`](crate::solver::FusedDepths)), or computed by their own pass from its values and the smaller layers'
/// (cells in memory, or in a scratch file in the work directory when the plan says so; each
/// rank its share under `mpirun`).
impl CompanionPass for DtcKind {
    type Stats = DtcStats;
    const DISTRIBUTED: bool = true;

    /// They follow the values: rebuilt with them.
    fn plan(planner: &Planner<'_>, n: u32, values: &ValuesPlan<'_>) -> Result<CompanionPlan> {
        planner.dtc(n, values.build, values.mode, values.memory_bytes, values.seconds)
    }

    fn stats(rules: Ruleset, n: u32, values: &Layer, file: &Layer<DtcKind>) -> Result<DtcStats> {
        dtc_stats(rules, n, values, file)
    }

    fn agrees(stored: &DtcStats, counted: &DtcStats) -> bool {
        stored.histogram == counted.histogram
    }

    fn observed(stats: &DtcStats) -> CompanionStats<'_> {
        CompanionStats::Dtc(stats)
    }

    fn work_units(n: u32, inputs: Inputs<'_, DtcKind>) -> u64 {
        let own = Ownership::new(layer_size(n), inputs.cluster.size()).range(inputs.cluster.rank());
        dtc_work_units(own.end - own.start)
    }

    /// [`Error::Internal`] when the new depths fail a check: the values and the dtc pass
    /// disagree. With several ranks every rank computes and writes its share ([`write_share`]);
    /// rank 0 checks and publishes the file, the others return `None`.
    fn build(
        dir: &DatabaseDir,
        n: u32,
        values: &Layer,
        inputs: Inputs<'_, DtcKind>,
        observer: &dyn BuildObserver,
        start: Instant,
    ) -> Result<Option<(DtcStats, f64)>> {
        let rules = dir.rules();
        let metered = Metered::new(inputs.cluster);
        let cluster: &dyn Cluster = &metered;
        let (ranks, me) = (cluster.size(), cluster.rank());
        let size = layer_size(n);
        let own = Ownership::new(size, ranks).range(me);
        if let (Some(fused), 1) = (inputs.fused, ranks) {
            // Recorded with the values: written and checked only (the progress of the pass it
            // replaces is given at once).
            observer.phase("dtc: writing");
            observer.advance(dtc_work_units(size));
            let writer = write_whole(dir, n, &|i| fused.depth(i))?;
            return check_and_finish(rules, n, values.values(), writer, None, inputs, start).map(Some);
        }
        let lower_values = values_of(inputs.lower);
        // This rank's scratch directory: the cells' file (when the plan says so) and, with
        // several ranks, the outbox buckets.
        let mut scratch_dir = inputs.work.join(format!("dtc-{n:02}"));
        if ranks > 1 {
            scratch_dir.push(format!("rank-{me:04}-of-{ranks:04}"));
        }
        let scratch_dir = (inputs.plan.scratch || ranks > 1).then_some(scratch_dir);
        if let Some(d) = &scratch_dir {
            std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
        }
        let levels = if ranks > 1 { 4 } else { 3 };
        let scratch_file = scratch_dir.as_ref().filter(|_| inputs.plan.scratch).map(|d| d.join("dtc-state.bin"));
        let (outbox_bytes, lookups, _) = share_buffers(own.end - own.start);
        let share = scratch_dir.as_deref().filter(|_| ranks > 1).map(|work_dir| Share { cluster, work_dir, outbox_bytes, lookups });
        let depths = solve_dtc_layer(rules, n, values.values(), &lower_values, own.clone(), share.as_ref(), scratch_file.as_deref(), observer);
        let depths = match depths {
            Ok(d) => d,
            Err(e) => {
                remove_scratch(scratch_dir.as_deref(), levels);
                return Err(e);
            }
        };
        observer.phase("dtc: writing");
        let v = values.values();
        let depth = |i: u64| depths.depth(i, v[i as usize]);
        if ranks == 1 {
            // The depths' cells and scratch are given back before the file is checked.
            let writer = write_whole(dir, n, &depth);
            drop(depths);
            remove_scratch(scratch_dir.as_deref(), levels);
            return check_and_finish(rules, n, v, writer?, None, inputs, start).map(Some);
        }
        let writer = write_share(dir, n, &depth, &own, cluster)?;
        let figures = rank_figures(cluster, own.end - own.start, metered.traffic())?;
        drop(depths);
        remove_scratch(scratch_dir.as_deref(), levels);
        match writer {
            Some(w) => check_and_finish(rules, n, v, w, Some(figures), inputs, start).map(Some),
            None => Ok(None),
        }
    }

    fn spot_check(rules: Ruleset, n: u32, values: &[i8], payload: &[u8], inputs: Inputs<'_, DtcKind>) -> Result<()> {
        let payload = DtcPayload::new(n, payload).map_err(|e| Error::Internal(format!("dtc of layer {n}: {e}")))?;
        let lower = values_of(inputs.lower);
        let size = layer_size(n);
        let step = (size / SPOT_CHECKS).max(1);
        let bad = (0..size.div_ceil(step)).into_par_iter().find_map_first(|k| {
            let i = k * step;
            let board = unrank_unchecked(n, i);
            let stored = payload.get(i).ok()?;
            let value_of = |m: u32, c: &crate::rules::Board| -> std::result::Result<i8, ()> {
                let layer = if m == n { values } else { lower[m as usize] };
                Ok(layer[rank_unchecked(c) as usize])
            };
            let dtc_of = |c: &crate::rules::Board| payload.get(rank_unchecked(c)).map_err(|_| ());
            match derive_dtc(rules, &board, values[i as usize], value_of, dtc_of) {
                Ok(d) if d == stored => None,
                d => Some(format!("position {board:?} (index {i}): stored depth {stored:?}, its moves give {:?}", d.ok().flatten())),
            }
        });
        match bad {
            Some(detail) => Err(Error::Internal(format!("the depths to capture of layer {n} fail their check: {detail}"))),
            None => Ok(()),
        }
    }
}

/// A position's depth to capture (`None` for value 0), by index.
type DepthOf<'a> = &'a (dyn Fn(u64) -> Option<u16> + Sync);

/// The bytes of positions `base..base + bytes.len()`: their depths, escaped above
/// [`DIRECT_MAX`].
fn fill(bytes: &mut [u8], base: u64, depth: DepthOf<'_>) {
    bytes.par_chunks_mut(1 << 20).enumerate().for_each(|(c, chunk)| {
        let first = base + (c << 20) as u64;
        for (k, b) in chunk.iter_mut().enumerate() {
            *b = byte_of(depth(first + k as u64));
        }
    });
}

/// The records of the escaped depths (deeper than [`DIRECT_MAX`]) of positions `own`, in index
/// order.
fn escaped(own: &std::ops::Range<u64>, depth: DepthOf<'_>) -> Vec<u64> {
    crate::index::ranges(own.clone(), 1 << 20)
        .collect::<Vec<_>>()
        .par_iter()
        .flat_map_iter(|r| r.clone().filter_map(|i| depth(i).filter(|&d| d > DIRECT_MAX).map(|d| record(i, d))))
        .collect()
}

/// Writes layer `n`'s whole new dtc file from `depth` (one process), to be checked and published
/// by [`check_and_finish`].
///
/// # Errors
/// [`Error::Io`] when the file cannot be created.
fn write_whole(dir: &DatabaseDir, n: u32, depth: DepthOf<'_>) -> Result<DtcWriter> {
    let escaped = escaped(&(0..layer_size(n)), depth);
    let mut writer = DtcWriter::create(dir, n, escaped.len() as u64)?;
    let (bytes, records) = writer.parts_mut();
    fill(bytes, 0, depth);
    for (slot, r) in records.chunks_exact_mut(8).zip(&escaped) {
        slot.copy_from_slice(&r.to_le_bytes());
    }
    Ok(writer)
}

/// Checks a written dtc file (every depth against its value, a spread of positions against
/// their moves) and renames it into place; its statistics and the seconds since `start`.
///
/// # Errors
/// [`Error::Internal`] when the depths fail a check (nothing is published); [`Error::Io`] when
/// the file cannot be flushed or renamed.
fn check_and_finish(
    rules: Ruleset,
    n: u32,
    values: &[i8],
    writer: DtcWriter,
    figures: Option<Vec<RankFigures>>,
    inputs: Inputs<'_, DtcKind>,
    start: Instant,
) -> Result<(DtcStats, f64)> {
    let payload = DtcPayload::new(n, writer.payload()).map_err(|e| Error::Internal(format!("dtc of layer {n}: {e}")))?;
    let t = crate::dtc::tally(values, &payload).map_err(|e| Error::Internal(format!("dtc of layer {n}: {e}")))?;
    DtcKind::spot_check(rules, n, values, writer.payload(), inputs)?;
    let seconds = start.elapsed().as_secs_f64();
    writer.finish()?;
    let stats = DtcStats { seconds: Some(seconds), peak_memory_bytes: peak_memory(), ranks: figures, ..DtcStats::new(rules, n, t.histogram, t.escaped) };
    Ok((stats, seconds))
}

/// Writes this rank's share of layer `n`'s new dtc file, every rank of `cluster` at once: rank 0
/// creates the temporary file for all the escaped depths (gathered to it, in rank order, which is
/// index order) and broadcasts its path; each rank maps its share's position bytes and writes
/// them, except the layer's last bytes past a multiple of [`CHUNK`] (the page they share with
/// the records), which their owner sends to rank 0 with its records, so that no two ranks
/// write one page. Returns rank 0's writer once every share is written; `None` on the others.
///
/// # Errors
/// [`Error::Cluster`]; [`Error::Io`] when the file cannot be created, mapped or written back.
fn write_share(dir: &DatabaseDir, n: u32, depth: DepthOf<'_>, own: &std::ops::Range<u64>, cluster: &dyn Cluster) -> Result<Option<DtcWriter>> {
    write_share_in_steps(dir, n, depth, own, cluster, EXCHANGE_STEP)
}

/// [`write_share`] sending at most `step` records per rank in an exchange.
fn write_share_in_steps(
    dir: &DatabaseDir,
    n: u32,
    depth: DepthOf<'_>,
    own: &std::ops::Range<u64>,
    cluster: &dyn Cluster,
    step: usize,
) -> Result<Option<DtcWriter>> {
    let (ranks, me) = (cluster.size(), cluster.rank());
    let escaped = escaped(own, depth);
    let size = layer_size(n);
    let mapped_end = size / CHUNK * CHUNK;
    let total = cluster.sum(&[escaped.len() as u64])?[0];
    let mut writer = if me == 0 { Some(DtcWriter::create(dir, n, total)?) } else { None };
    let name = writer.as_ref().map(|w| w.tmp_path().as_os_str().as_bytes().to_vec()).unwrap_or_default();
    let tmp = PathBuf::from(std::ffi::OsStr::from_bytes(&cluster.broadcast(&name)?));
    // The position bytes up to `mapped_end` through this rank's map.
    let mapped = own.start.min(mapped_end)..own.end.min(mapped_end);
    let mut share = ShareWriter::open(&tmp, n, crate::dtc::payload_len(n, total), mapped.clone())?;
    fill(share.bytes_and_pages().0, mapped.start, depth);
    share.finish()?;
    // The last bytes and the records, to rank 0 (the records in steps).
    let mut tail = vec![0u8; (own.end.max(mapped_end) - own.start.max(mapped_end)) as usize];
    fill(&mut tail, own.start.max(mapped_end), depth);
    let mut send = vec![Vec::new(); ranks];
    send[0] = tail;
    let tails = cluster.exchange_u8(&send)?;
    let mut records: Vec<u64> = Vec::new();
    let mut left = &escaped[..];
    loop {
        let k = left.len().min(step);
        let mut send = vec![Vec::new(); ranks];
        send[0] = left[..k].to_vec();
        left = &left[k..];
        records.extend(cluster.exchange_u64(&send)?.data);
        if !cluster.any(!left.is_empty())? {
            break;
        }
    }
    if let Some(w) = writer.as_mut() {
        // Each step brings every rank's next records: in index order once sorted.
        records.sort_unstable_by_key(|&r| crate::dtc::split_record(r).0);
        let (bytes, slots) = w.parts_mut();
        bytes[mapped_end as usize..].copy_from_slice(&tails.data);
        for (slot, r) in slots.chunks_exact_mut(8).zip(&records) {
            slot.copy_from_slice(&r.to_le_bytes());
        }
    }
    // Every share is written before rank 0 reads the file.
    cluster.barrier()?;
    Ok(writer)
}

/// Removes the cells' scratch file and the outbox directory, then the directories above it (up
/// to `levels` of them: the layer's work directory and the shared `.work` among them), each when
/// empty.
fn remove_scratch(dir: Option<&Path>, levels: usize) {
    if let Some(d) = dir {
        let _ = std::fs::remove_file(d.join("dtc-state.bin"));
        for dir in d.ancestors().take(levels) {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::cluster::ThreadCluster;

    /// The ranks' shares, the layer's last bytes and the escaped depths (in exchanges of at most
    /// 1,000 records from each rank) land where one process puts them: the same payload.
    #[test]
    fn shares_and_escaped_depths_make_the_one_process_payload() {
        let n = 9; // 167,596 positions: five chunks and a tail
        let size = layer_size(n);
        let depth = |i: u64| match i % 7 {
            0 => None,
            1 => Some(254 + (i % 1000) as u16),
            _ => Some((i % 200) as u16),
        };
        let one = tempfile::tempdir().unwrap();
        let dir = DatabaseDir::native(one.path(), Ruleset::Awari).unwrap();
        let expected = write_whole(&dir, n, &depth).unwrap().payload().to_vec();
        for ranks in [2, 3, 6] {
            let many = tempfile::tempdir().unwrap();
            let dir = DatabaseDir::native(many.path(), Ruleset::Awari).unwrap();
            let cluster = ThreadCluster::new(ranks);
            let got = std::thread::scope(|s| {
                let handles: Vec<_> = cluster
                    .iter()
                    .enumerate()
                    .map(|(r, c)| {
                        let dir = &dir;
                        let depth = &depth;
                        s.spawn(move || {
                            let own = Ownership::new(size, ranks).range(r);
                            write_share_in_steps(dir, n, depth, &own, c, 1000).unwrap().map(|w| w.payload().to_vec())
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
            });
            assert!(got[1..].iter().all(Option::is_none), "{ranks} ranks: only rank 0 keeps the file");
            assert!(got[0].as_deref() == Some(&expected[..]), "{ranks} ranks: the payload differs from one process's");
        }
    }
}
