//! Depths to capture in the build: each layer's dtc checked or computed after its values (and
//! bounds), checked against the values on every position and against the definition on a spread
//! of positions, and published atomically.

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

use super::pipeline::SPOT_CHECKS;
use super::plan::{DtcPlan, LayerAction};
use super::stats::{restore_json, write_json, DtcStats, LayerOutcome};
use super::BuildObserver;
use crate::dtc::{byte_of, record, DtcPayload, DIRECT_MAX};
use crate::error::{Damage, Error, Result};
use crate::index::{layer_size, rank_unchecked, unrank_unchecked};
use crate::rules::Ruleset;
use crate::solver::{dtc_work_units, solve_dtc_layer};
use crate::storage::{DatabaseDir, DtcLayer, DtcWriter, Layer};
use crate::sys::peak_memory;
use crate::verify::derive_dtc;

/// The statistics of layer `n`'s depths `d` beside its values, checking every entry against
/// its value and the table of escaped depths.
///
/// Cost: one parallel pass over the values and the depths.
///
/// # Errors
/// [`Error::Corrupt`] ([`Damage::DtcContradictsValue`], [`Damage::BadDtc`]) naming the first
/// fault.
pub fn dtc_stats(rules: Ruleset, n: u32, values: &Layer, d: &DtcLayer) -> Result<DtcStats> {
    match crate::dtc::tally(values.values(), &d.payload()) {
        Ok(t) => Ok(DtcStats::new(rules, n, t.histogram, t.escaped)),
        Err(crate::dtc::BadDtc::ContradictsValue { index, dtc, value }) => Err(Error::corrupt(d.path(), Damage::DtcContradictsValue { index, dtc, value })),
        Err(e) => Err(Error::corrupt(d.path(), Damage::BadDtc { what: e.to_string() })),
    }
}

/// Checks finished depths of layer `n`: header, payload checksum, every entry against its value;
/// their statistics, or why they must be rebuilt.
fn check_dtc(dir: &DatabaseDir, n: u32, values: &Layer) -> Result<std::result::Result<(DtcLayer, DtcStats), String>> {
    let d = match dir.open_dtc(n, true) {
        Ok(d) => d,
        Err(e @ Error::Corrupt { .. }) => return Ok(Err(e.to_string())),
        Err(e) => return Err(e),
    };
    match dtc_stats(dir.rules(), n, values, &d) {
        Ok(stats) => Ok(Ok((d, stats))),
        Err(e) => Ok(Err(e.to_string())),
    }
}

/// Makes layer `n`'s depths to capture complete: checks the file there (`dp`), or computes them
/// from the layer's `values` and the `lower` layers (cells in memory, or in a scratch file in
/// `work` when `dp` says so), checks them (every position against its value, the definition on
/// a spread of positions) and renames them into place; then writes `dtc-NN.json`.
///
/// # Errors
/// [`Error::Internal`] when the new depths fail a check (nothing is published: the values and
/// the dtc pass disagree); [`Error::Interrupted`]; [`Error::OutOfMemory`]; [`Error::Io`] when a
/// file cannot be written.
///
/// `lower[m]` is `None` for a layer the build leaves out (layer `n - 1` at most: never read).
pub(super) fn dtc_layer(
    dir: &DatabaseDir,
    n: u32,
    dp: &DtcPlan,
    values: &Layer,
    lower: &[Option<Layer>],
    work: &Path,
    observer: &dyn BuildObserver,
) -> Result<()> {
    let rules = dir.rules();
    let replaced = match &dp.action {
        LayerAction::Build { reason } => reason.clone(),
        LayerAction::Skip { .. } => return Ok(()),
        LayerAction::Check => match check_dtc(dir, n, values)? {
            Ok((_, stats)) => {
                restore_json(&dir.companion_stats_path(crate::storage::Companion::Dtc, n), &stats, |s: &DtcStats| s.histogram == stats.histogram, observer)?;
                observer.dtc_done(&stats, &LayerOutcome::Skipped);
                return Ok(());
            }
            Err(why) => Some(why),
        },
    };
    if let Some(why) = &replaced {
        observer.message(&format!("{why}; rebuilding the depths to capture of layer {n}"));
    }
    observer.dtc_started(n, dtc_work_units(n));
    let start = Instant::now();
    let lower_values = super::pipeline::values_of(lower);
    let scratch_dir = dp.scratch.then(|| work.join(format!("dtc-{n:02}")));
    if let Some(d) = &scratch_dir {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    let scratch_file = scratch_dir.as_ref().map(|d| d.join("dtc-state.bin"));
    let depths = solve_dtc_layer(rules, n, values.values(), &lower_values, scratch_file.as_deref(), observer);
    let depths = match depths {
        Ok(d) => d,
        Err(e) => {
            remove_scratch(scratch_dir.as_deref());
            return Err(e);
        }
    };
    observer.phase("dtc: writing");
    let v = values.values();
    let size = layer_size(n);
    // The escaped depths, in index order.
    let escaped: Vec<u64> = crate::index::ranges(0..size, 1 << 20)
        .collect::<Vec<_>>()
        .par_iter()
        .flat_map_iter(|r| {
            let depths = &depths;
            r.clone().filter_map(move |i| depths.depth(i, v[i as usize]).filter(|&d| d > DIRECT_MAX).map(|d| record(i, d)))
        })
        .collect();
    let mut writer = DtcWriter::create(dir, n, escaped.len() as u64)?;
    {
        let (bytes, records) = writer.parts_mut();
        bytes.par_chunks_mut(1 << 20).enumerate().for_each(|(c, chunk)| {
            let base = (c << 20) as u64;
            for (k, b) in chunk.iter_mut().enumerate() {
                let i = base + k as u64;
                *b = byte_of(depths.depth(i, v[i as usize]));
            }
        });
        for (slot, r) in records.chunks_exact_mut(8).zip(&escaped) {
            slot.copy_from_slice(&r.to_le_bytes());
        }
    }
    drop(depths);
    remove_scratch(scratch_dir.as_deref());
    observer.phase("dtc: checking");
    let payload = DtcPayload::new(n, writer.payload()).map_err(|e| Error::Internal(format!("dtc of layer {n}: {e}")))?;
    let t = crate::dtc::tally(v, &payload).map_err(|e| Error::Internal(format!("dtc of layer {n}: {e}")))?;
    spot_check_dtc(rules, n, v, &payload, &lower_values)?;
    let seconds = start.elapsed().as_secs_f64();
    writer.finish()?;
    let stats = DtcStats { seconds: Some(seconds), peak_memory_bytes: peak_memory(), ..DtcStats::new(rules, n, t.histogram, t.escaped) };
    write_json(&dir.companion_stats_path(crate::storage::Companion::Dtc, n), &stats)?;
    observer.dtc_done(&stats, &LayerOutcome::Built { seconds, replaced });
    Ok(())
}

fn remove_scratch(dir: Option<&Path>) {
    if let Some(d) = dir {
        let _ = std::fs::remove_file(d.join("dtc-state.bin"));
        // The directory, the layer's work directory and the shared `.work`, each when empty.
        for dir in d.ancestors().take(3) {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Re-derives the depths of a spread of positions of a new layer from their moves with the
/// verifier's derivation before the layer's depths are published.
fn spot_check_dtc(rules: Ruleset, n: u32, values: &[i8], payload: &DtcPayload, lower: &[&[i8]]) -> Result<()> {
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
