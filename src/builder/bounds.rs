//! Forced-capture bounds in the build: each layer's bounds computed from the smaller layers'
//! bounds after its values, checked against them, spot-checked with the verifier's derivation
//! and published atomically (the bounds' [`CompanionPass`]; [`super::companion`] checks or
//! builds them).

use std::time::Instant;

use rayon::prelude::*;

use super::companion::{CompanionPass, Inputs};
use super::config::SPOT_CHECKS;
use super::plan::{plan_bounds, CompanionPlan, Planner, ValuesPlan};
use super::stats::{BoundsStats, CompanionStats};
use super::BuildObserver;
use crate::error::{Damage, Error, Result};
use crate::index::{layer_size, rank_unchecked, unrank_unchecked};
use crate::rules::Ruleset;
use crate::solver::{bounds_work_units, solve_bounds};
use crate::storage::{BoundsKind, DatabaseDir, Layer, LayerWriter};
use crate::sys::peak_memory;
use crate::verify::derive_bounds;

/// The statistics of layer `n`'s bounds `b` beside its values, checking every entry's code and
/// its relation with the value.
///
/// Cost: one parallel pass over the values and the bounds.
///
/// # Errors
/// [`Error::Corrupt`] naming the first entry that is no valid code
/// ([`Damage::BadBoundsCode`]) or contradicts its value.
pub fn bounds_stats(rules: Ruleset, n: u32, values: &Layer, b: &Layer<BoundsKind>) -> Result<BoundsStats> {
    let t = crate::bounds::tally(n, values.values(), b.bytes());
    if let Some((index, code, value)) = t.first_bad {
        let damage = match b.codec().decode(code) {
            None => Damage::BadBoundsCode { index, code },
            Some(g) => Damage::BoundsContradictValue { board: unrank_unchecked(n, index), bounds: (g.mover, g.opponent), value },
        };
        return Err(Error::corrupt(b.path(), damage));
    }
    Ok(BoundsStats::new(rules, n, &t))
}

/// Layer `n`'s bounds are computed from the bounds of the smaller layers (`lower[m]`, `None` for
/// a layer the build leaves out: layer `n - 1` at most, never read), in memory.
impl CompanionPass for BoundsKind {
    type Stats = BoundsStats;
    const DISTRIBUTED: bool = false;

    /// They do not follow the values: built when absent or damaged.
    fn plan(planner: &Planner<'_>, n: u32, _values: &ValuesPlan<'_>) -> Result<CompanionPlan> {
        plan_bounds(planner.dir, n, &planner.config.skip)
    }

    fn stats(rules: Ruleset, n: u32, values: &Layer, file: &Layer<BoundsKind>) -> Result<BoundsStats> {
        bounds_stats(rules, n, values, file)
    }

    fn agrees(stored: &BoundsStats, counted: &BoundsStats) -> bool {
        stored.forced == counted.forced && stored.strictly_inside == counted.strictly_inside
    }

    fn observed(stats: &BoundsStats) -> CompanionStats<'_> {
        CompanionStats::Bounds(stats)
    }

    fn work_units(n: u32, _: Inputs<'_, BoundsKind>) -> u64 {
        bounds_work_units(n)
    }

    fn build(
        dir: &DatabaseDir,
        n: u32,
        values: &Layer,
        inputs: Inputs<'_, BoundsKind>,
        observer: &dyn BuildObserver,
        start: Instant,
    ) -> Result<Option<(BoundsStats, f64)>> {
        let rules = dir.rules();
        let mut writer = LayerWriter::create::<BoundsKind>(dir, n, crate::bounds::payload_len(n))?;
        let lower_payloads: Vec<&[u8]> = inputs.own.iter().map(|b| b.as_ref().map_or(&[][..], |b| b.bytes())).collect();
        solve_bounds(rules, n, &lower_payloads, writer.payload_mut(), observer)?;
        observer.phase("bounds: checking");
        let t = crate::bounds::tally(n, values.values(), writer.payload());
        if let Some((index, code, value)) = t.first_bad {
            let detail = format!("bounds entry {index} (code {code}) contradicts value {value} of position {:?}", unrank_unchecked(n, index));
            return Err(Error::BoundsCheck { layer: n, detail });
        }
        BoundsKind::spot_check(rules, n, values.values(), writer.payload(), inputs)?;
        let seconds = start.elapsed().as_secs_f64();
        writer.finish()?;
        Ok(Some((BoundsStats { seconds: Some(seconds), peak_memory_bytes: peak_memory(), ..BoundsStats::new(rules, n, &t) }, seconds)))
    }

    fn spot_check(rules: Ruleset, n: u32, _values: &[i8], payload: &[u8], inputs: Inputs<'_, BoundsKind>) -> Result<()> {
        let lower = inputs.own;
        let size = layer_size(n);
        let step = (size / SPOT_CHECKS).max(1);
        let codec = crate::bounds::Codec::new(n);
        let bad = (0..size.div_ceil(step)).into_par_iter().find_map_first(|k| {
            let i = k * step;
            let board = unrank_unchecked(n, i);
            let stored = codec.get(payload, i);
            let derived = derive_bounds(rules, &board, |m, child| {
                let j = rank_unchecked(child);
                let got = match lower.get(m as usize) {
                    _ if m == n => codec.get(payload, j),
                    Some(Some(l)) => l.codec().get(l.bytes(), j),
                    // A layer left out is never a child (a capture takes at least 2 stones).
                    _ => None,
                };
                got.ok_or(m)
            });
            match (stored, derived) {
                (Some(s), Ok(d)) if s == d => None,
                (s, d) => Some(format!("position {board:?} (index {i}): stored bounds {s:?}, its moves give {d:?}")),
            }
        });
        match bad {
            Some(detail) => Err(Error::BoundsCheck { layer: n, detail }),
            None => Ok(()),
        }
    }
}
