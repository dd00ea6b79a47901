//! Forced-capture bounds in the build: each layer's bounds checked or built after its values,
//! checked against them, spot-checked with the verifier's derivation and published atomically.

use std::time::Instant;

use rayon::prelude::*;

use super::pipeline::SPOT_CHECKS;
use super::plan::{BoundsPlan, LayerAction};
use super::stats::{restore_json, write_json, BoundsStats, LayerOutcome};
use super::BuildObserver;
use crate::error::{Error, Result};
use crate::index::{layer_size, rank_unchecked, unrank_unchecked};
use crate::rules::Ruleset;
use crate::solver::{bounds_work_units, solve_bounds};
use crate::storage::{BoundsLayer, DatabaseDir, Layer, LayerWriter};
use crate::sys::peak_memory;
use crate::verify::derive_bounds;

/// Checks finished bounds of layer `n`: header, payload checksum, codes, and the relation with
/// the layer's values on every position; their statistics, or why they must be rebuilt.
///
/// Cost: one sequential pass over the file, one parallel pass over it and the values.
///
/// # Errors
/// Those of [`DatabaseDir::open_bounds`] other than damage (a foreign or unreadable file).
fn check_bounds(dir: &DatabaseDir, n: u32, values: &Layer) -> Result<std::result::Result<(BoundsLayer, BoundsStats), String>> {
    let b = match dir.open_bounds(n, true) {
        Ok(b) => b,
        Err(e @ Error::Corrupt { .. }) => return Ok(Err(e.to_string())),
        Err(e) => return Err(e),
    };
    match bounds_stats(dir.rules(), n, values, &b) {
        Ok(stats) => Ok(Ok((b, stats))),
        Err(e) => Ok(Err(e.to_string())),
    }
}

/// The statistics of layer `n`'s bounds `b` beside its values, checking every entry's code and
/// its relation with the value.
///
/// Cost: one parallel pass over the values and the bounds.
///
/// # Errors
/// [`Error::Corrupt`] naming the first entry that is no valid code
/// ([`Damage::BadBoundsCode`](crate::error::Damage::BadBoundsCode)) or contradicts its value.
pub fn bounds_stats(rules: Ruleset, n: u32, values: &Layer, b: &BoundsLayer) -> Result<BoundsStats> {
    use crate::error::Damage;
    let t = crate::bounds::tally(n, values.values(), b.payload());
    if let Some((index, code, value)) = t.first_bad {
        let damage = match b.codec().decode(code) {
            None => Damage::BadBoundsCode { index, code },
            Some(g) => Damage::BoundsContradictValue { board: unrank_unchecked(n, index), bounds: (g.mover, g.opponent), value },
        };
        return Err(Error::corrupt(b.path(), damage));
    }
    Ok(BoundsStats::new(rules, n, &t))
}

/// Makes layer `n`'s forced-capture bounds complete: checks the file there (`bp`), or builds
/// them from the lower layers' bounds into a temporary file, checks them (the relation with
/// `values` on every position, the equations on a spread of positions) and renames them into
/// place; then writes `bounds-NN.json`. Returns the finished bounds. `lower[m]` is `None` for
/// a layer the build leaves out (layer `n - 1` at most: never read).
///
/// # Errors
/// [`Error::BoundsCheck`] when the new bounds fail a check (nothing is published);
/// [`Error::Interrupted`]; [`Error::OutOfMemory`]; [`Error::Io`] when a file cannot be written.
pub(super) fn bounds_layer(
    dir: &DatabaseDir,
    n: u32,
    bp: &BoundsPlan,
    values: &Layer,
    lower: &[Option<BoundsLayer>],
    observer: &dyn BuildObserver,
) -> Result<BoundsLayer> {
    let rules = dir.rules();
    let replaced = match &bp.action {
        LayerAction::Build { reason } => reason.clone(),
        LayerAction::Skip { .. } => None,
        LayerAction::Check => match check_bounds(dir, n, values)? {
            Ok((b, stats)) => {
                restore_json(
                    &dir.companion_stats_path(crate::storage::Companion::Bounds, n),
                    &stats,
                    |s: &BoundsStats| s.forced == stats.forced && s.strictly_inside == stats.strictly_inside,
                    observer,
                )?;
                observer.bounds_done(&stats, &LayerOutcome::Skipped);
                return Ok(b);
            }
            Err(why) => Some(why),
        },
    };
    if let Some(why) = &replaced {
        observer.message(&format!("{why}; rebuilding the bounds of layer {n}"));
    }
    observer.bounds_started(n, bounds_work_units(n));
    let start = Instant::now();
    let mut writer = LayerWriter::create_bounds(dir, n)?;
    let lower_payloads: Vec<&[u8]> = lower.iter().map(|b| b.as_ref().map_or(&[][..], |b| b.payload())).collect();
    solve_bounds(rules, n, &lower_payloads, writer.payload_mut(), observer)?;
    observer.phase("bounds: checking");
    let t = crate::bounds::tally(n, values.values(), writer.payload());
    if let Some((index, code, value)) = t.first_bad {
        let detail = format!("bounds entry {index} (code {code}) contradicts value {value} of position {:?}", unrank_unchecked(n, index));
        return Err(Error::BoundsCheck { layer: n, detail });
    }
    spot_check_bounds(rules, n, writer.payload(), lower)?;
    let seconds = start.elapsed().as_secs_f64();
    writer.finish()?;
    let stats = BoundsStats { seconds: Some(seconds), peak_memory_bytes: peak_memory(), ..BoundsStats::new(rules, n, &t) };
    write_json(&dir.companion_stats_path(crate::storage::Companion::Bounds, n), &stats)?;
    observer.bounds_done(&stats, &LayerOutcome::Built { seconds, replaced });
    dir.open_bounds(n, false)
}

/// Re-derives the bounds of a spread of positions of a new layer from their moves with the
/// verifier's independent derivation before the layer is published.
fn spot_check_bounds(rules: Ruleset, n: u32, payload: &[u8], lower: &[Option<BoundsLayer>]) -> Result<()> {
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
                Some(Some(l)) => l.codec().get(l.payload(), j),
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
