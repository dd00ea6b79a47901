//! Depths to capture in the build: each layer's depths computed from its values and the smaller
//! layers' values after its values (and bounds), checked against the values on every position
//! and against the definition on a spread of positions, and published atomically (the depths'
//! [`CompanionPass`]; [`super::companion`] checks or builds them).

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

use super::companion::CompanionPass;
use super::pipeline::{values_of, SPOT_CHECKS};
use super::stats::{CompanionStats, DtcStats};
use super::BuildObserver;
use crate::dtc::{byte_of, record, DtcPayload, DIRECT_MAX};
use crate::error::{Error, Result};
use crate::index::{layer_size, rank_unchecked, unrank_unchecked};
use crate::rules::Ruleset;
use crate::solver::{dtc_work_units, solve_dtc_layer};
use crate::storage::{DatabaseDir, DtcKind, DtcLayer, DtcWriter, Layer};
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
pub fn dtc_stats(rules: Ruleset, n: u32, values: &Layer, d: &DtcLayer) -> Result<DtcStats> {
    match crate::dtc::tally(values.values(), &d.payload()) {
        Ok(t) => Ok(DtcStats::new(rules, n, t.histogram, t.escaped)),
        Err(e) => Err(crate::verify::dtc_damage(d.path(), e)),
    }
}

/// What computing a layer's depths to capture reads besides its values.
#[derive(Clone, Copy)]
pub(super) struct DtcInputs<'a> {
    /// `lower[m]`: layer `m`'s values, `None` for a layer the build leaves out (layer `n - 1`
    /// at most: never read).
    pub(super) lower: &'a [Option<Layer>],
    /// The layer's work directory, where the working cells go when `scratch` says so.
    pub(super) work: &'a Path,
    /// Whether the working cells go to a scratch file (the plan's `DtcPlan::scratch`).
    pub(super) scratch: bool,
}

/// Layer `n`'s depths are computed from its values and the smaller layers' (cells in memory, or
/// in a scratch file in the work directory when the plan says so).
impl CompanionPass for DtcKind {
    type Stats = DtcStats;
    type Inputs<'a> = DtcInputs<'a>;

    fn stats(rules: Ruleset, n: u32, values: &Layer, file: &DtcLayer) -> Result<DtcStats> {
        dtc_stats(rules, n, values, file)
    }

    fn agrees(stored: &DtcStats, counted: &DtcStats) -> bool {
        stored.histogram == counted.histogram
    }

    fn observed(stats: &DtcStats) -> CompanionStats<'_> {
        CompanionStats::Dtc(stats)
    }

    fn work_units(n: u32) -> u64 {
        dtc_work_units(n)
    }

    /// [`Error::Internal`] when the new depths fail a check: the values and the dtc pass
    /// disagree.
    fn build(dir: &DatabaseDir, n: u32, values: &Layer, inputs: DtcInputs<'_>, observer: &dyn BuildObserver, start: Instant) -> Result<(DtcStats, f64)> {
        let rules = dir.rules();
        let lower_values = values_of(inputs.lower);
        let scratch_dir = inputs.scratch.then(|| inputs.work.join(format!("dtc-{n:02}")));
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
        DtcKind::spot_check(rules, n, v, writer.payload(), inputs)?;
        let seconds = start.elapsed().as_secs_f64();
        writer.finish()?;
        Ok((DtcStats { seconds: Some(seconds), peak_memory_bytes: peak_memory(), ..DtcStats::new(rules, n, t.histogram, t.escaped) }, seconds))
    }

    fn spot_check(rules: Ruleset, n: u32, values: &[i8], payload: &[u8], inputs: DtcInputs<'_>) -> Result<()> {
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

fn remove_scratch(dir: Option<&Path>) {
    if let Some(d) = dir {
        let _ = std::fs::remove_file(d.join("dtc-state.bin"));
        // The directory, the layer's work directory and the shared `.work`, each when empty.
        for dir in d.ancestors().take(3) {
            let _ = std::fs::remove_dir(dir);
        }
    }
}
