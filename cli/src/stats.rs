//! `oware stats`: the number of positions of each value in every built layer, and the shares of
//! wins, draws and losses for the player to move.
//!
//! Where a layer's forced-capture bounds are built (`bounds-NN.owdb`), also the share of its
//! positions whose final split is forced and of those whose even-split value lies strictly
//! inside the bounds; the bounds are checked (header, checksum, codes, relation with the value)
//! like the layers.
//!
//! Where a layer's depths to capture are built (`dtc-NN.owdb`), also their distribution: the
//! greatest and mean depth and, with `--json`, the positions of each depth; the depths are
//! checked (header, checksum, every entry against its value) like the layers.
//!
//! Counted from the layers' payloads (not from the `layer-NN.json` files the build writes), after
//! checking each native file's header and payload checksum. A damaged layer (bad header or
//! checksum, a value outside `-n..=n`, an unreadable entry) is reported and not counted; the
//! command then exits with that layer's error code (5 for a damaged file, 7 for an entry that
//! is not a readable regular file) after printing the others. So are its bounds and depths:
//! anything at their paths is read, and a directory or a FIFO there is unreadable (7), never
//! taken for absent.

use std::collections::BTreeMap;

use clap::Args;
use oware::builder::{bounds_stats, dtc_stats, histogram};
use oware::error::Damage;
use oware::index::MAX_STONES;
use oware::storage::{BoundsKind, DtcKind, LayerState, ValuesKind};
use oware::units::{describe_layers, group_digits};
use oware::{Error, Result};
use serde::Serialize;

use crate::args::{reword, DatabaseArgs, JsonArg, QuietArg};
use crate::output::{note, ErrorDoc, Stdout, SCHEMA_VERSION};

/// Arguments of `oware stats`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("json", "Print one JSON document on stdout instead of the table"), ("quiet", "No messages besides errors")])))]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    db: DatabaseArgs,
    #[command(flatten)]
    json: JsonArg,
    #[command(flatten)]
    quiet: QuietArg,
}

/// The counts of one layer.
struct LayerCounts {
    layer: u32,
    positions: u64,
    /// Positions by value (only values that occur).
    values: BTreeMap<i32, u64>,
    wins: u64,
    draws: u64,
    losses: u64,
    /// Positions whose byte is outside `-n..=n` (a damaged or foreign file).
    out_of_range: u64,
    /// What the layer's forced-capture bounds say, when they are built.
    bounds: Option<BoundsDoc>,
    /// The layer's depths to capture, when they are built.
    dtc: Option<DtcDoc>,
}

/// A layer's depths to capture in `oware stats`.
#[derive(Clone, Serialize)]
struct DtcDoc {
    /// Positions with a depth (those of non-zero value).
    with_dtc: u64,
    /// The greatest depth (null when no position has one).
    max: Option<u16>,
    /// The mean depth.
    mean: Option<f64>,
    /// Entry `d`: positions of depth `d`.
    histogram: Vec<u64>,
}

/// A layer's forced-capture bounds in `oware stats`.
#[derive(Clone, Copy, Serialize)]
struct BoundsDoc {
    /// Positions whose final split is forced (`gM + gN = n`).
    forced: u64,
    forced_share: f64,
    /// Positions whose even-split value lies strictly inside the bounds.
    strictly_inside: u64,
    inside_share: f64,
}

/// Counts a layer's values from its payload (one parallel pass).
fn count(n: u32, values: &[i8]) -> LayerCounts {
    let hist = histogram(values);
    let mut c = LayerCounts {
        layer: n,
        positions: values.len() as u64,
        values: BTreeMap::new(),
        wins: 0,
        draws: 0,
        losses: 0,
        out_of_range: 0,
        bounds: None,
        dtc: None,
    };
    for (i, &k) in hist.iter().enumerate() {
        if k == 0 {
            continue;
        }
        let v = i as i32 - 128;
        c.values.insert(v, k);
        if v.unsigned_abs() > n {
            c.out_of_range += k;
        }
        match v.cmp(&0) {
            std::cmp::Ordering::Greater => c.wins += k,
            std::cmp::Ordering::Equal => c.draws += k,
            std::cmp::Ordering::Less => c.losses += k,
        }
    }
    c
}

fn share(k: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        k as f64 / total as f64
    }
}

/// Positions by outcome for the player to move, and their shares.
#[derive(Serialize)]
struct Outcomes {
    positions: u64,
    wins: u64,
    draws: u64,
    losses: u64,
    win_share: f64,
    draw_share: f64,
    loss_share: f64,
}

impl Outcomes {
    fn new(positions: u64, wins: u64, draws: u64, losses: u64) -> Outcomes {
        Outcomes {
            positions,
            wins,
            draws,
            losses,
            win_share: share(wins, positions),
            draw_share: share(draws, positions),
            loss_share: share(losses, positions),
        }
    }
}

/// One layer of `oware stats --json`.
#[derive(Serialize)]
struct LayerDoc {
    layer: u32,
    #[serde(flatten)]
    outcomes: Outcomes,
    /// Positions holding a value outside `-n..=n` (a damaged file; the command then fails).
    out_of_range: u64,
    /// The forced-capture bounds, when built: forced splits, values strictly inside.
    #[serde(skip_serializing_if = "Option::is_none")]
    bounds: Option<BoundsDoc>,
    /// The depths to capture, when built: greatest, mean, positions per depth.
    #[serde(skip_serializing_if = "Option::is_none")]
    dtc: Option<DtcDoc>,
    /// Positions by value (keys are the values as strings).
    values: BTreeMap<String, u64>,
}

/// `oware stats --json`.
#[derive(Serialize)]
struct StatsDoc {
    schema_version: u32,
    rules: &'static str,
    format: &'static str,
    layers: Vec<LayerDoc>,
    /// Layers on disk that could not be counted, with their errors.
    damaged: Vec<DamagedDoc>,
    total: Outcomes,
}

#[derive(Serialize)]
struct DamagedDoc {
    layer: u32,
    error: ErrorDoc<'static>,
}

/// Prints the value counts of every layer on disk (0..=48, gaps allowed).
///
/// # Errors
/// [`Error::Usage`] for `--format vu` with a ruleset other than awari; [`Error::LayerMissing`]
/// when no layer is present; the error of the first layer that cannot be counted (5 for a bad
/// header or checksum or a value outside `-n..=n`, 6 for another ruleset's file, 7 for an
/// unreadable entry) after the others are printed; [`Error::Output`] when stdout fails.
pub(crate) fn run(a: StatsArgs) -> Result<()> {
    let rules = a.db.rules.ruleset();
    let dir = a.db.dir()?;
    let on_disk = dir.layers_on_disk();
    if on_disk.is_empty() {
        return Err(dir.missing::<ValuesKind>(0));
    }
    let prefix_end = (0..=MAX_STONES).take_while(|n| on_disk.contains(n)).count() as u32;
    if prefix_end as usize != on_disk.len() && !a.quiet.quiet {
        // The layer right below the highest one (and only it) absent: as `build --for` leaves it.
        let top = on_disk.last().copied().unwrap_or(0);
        let why = if oware::rules::layer_not_needed(top) == Some(prefix_end) && on_disk.len() as u32 == top {
            format!("layer {prefix_end} is not built: layer {top} does not need it")
        } else {
            format!("layer {prefix_end} is missing")
        };
        note(&format!("layers on disk: {} ({why})", describe_layers(on_disk.iter().copied())));
    }
    let mut out = Stdout::new();
    let mut counts = Vec::new();
    let mut damaged = Vec::new();
    let mut first_error: Option<Error> = None;
    for &n in &on_disk {
        let counted = dir.open_layer::<ValuesKind>(n, true).and_then(|layer| {
            let mut c = count(n, layer.values());
            if let Some((index, value)) = (c.out_of_range > 0).then(|| layer.first_out_of_range()).flatten() {
                return Err(Error::corrupt(layer.path(), Damage::ValueOutOfRange { index, value, stones: n }));
            }
            // Anything at the path is read (a directory or a FIFO there is an error, not absent).
            if !matches!(dir.file_state::<BoundsKind>(n), LayerState::Absent) {
                let b = bounds_stats(rules, n, &layer, &dir.open_layer::<BoundsKind>(n, true)?)?;
                c.bounds =
                    Some(BoundsDoc { forced: b.forced, forced_share: b.forced_share(), strictly_inside: b.strictly_inside, inside_share: b.inside_share() });
            }
            if !matches!(dir.file_state::<DtcKind>(n), LayerState::Absent) {
                let d = dtc_stats(rules, n, &layer, &dir.open_layer::<DtcKind>(n, true)?)?;
                c.dtc = Some(DtcDoc { with_dtc: d.with_dtc, max: d.max, mean: d.mean, histogram: d.histogram });
            }
            Ok(c)
        });
        match counted {
            Ok(c) => {
                if !a.json.json {
                    out.write(&layer_text(&c))?;
                }
                counts.push(c);
            }
            Err(e) => {
                if !a.json.json {
                    out.line(&format!("layer {n:>2}: DAMAGED, not counted: {e}"))?;
                }
                damaged.push(DamagedDoc { layer: n, error: ErrorDoc::of(&e) });
                first_error.get_or_insert(e);
            }
        }
    }

    let total: u64 = counts.iter().map(|c| c.positions).sum();
    let wins: u64 = counts.iter().map(|c| c.wins).sum();
    let draws: u64 = counts.iter().map(|c| c.draws).sum();
    let losses: u64 = counts.iter().map(|c| c.losses).sum();
    if a.json.json {
        let layers = counts
            .iter()
            .map(|c| LayerDoc {
                layer: c.layer,
                outcomes: Outcomes::new(c.positions, c.wins, c.draws, c.losses),
                out_of_range: c.out_of_range,
                bounds: c.bounds,
                dtc: c.dtc.clone(),
                values: c.values.iter().map(|(v, k)| (v.to_string(), *k)).collect(),
            })
            .collect();
        out.json(&StatsDoc {
            schema_version: SCHEMA_VERSION,
            rules: rules.name(),
            format: dir.format().name(),
            layers,
            damaged,
            total: Outcomes::new(total, wins, draws, losses),
        })?;
    } else {
        out.line(&format!(
            "all   : {:>15} positions  wins {:>6.2}%  draws {:>6.2}%  losses {:>6.2}%  (layers {}, player to move)",
            group_digits(total),
            100.0 * share(wins, total),
            100.0 * share(draws, total),
            100.0 * share(losses, total),
            describe_layers(counts.iter().map(|c| c.layer))
        ))?;
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn layer_text(c: &LayerCounts) -> String {
    let list: Vec<String> = c.values.iter().map(|(v, k)| format!("{v:+}:{k}")).collect();
    let mut s = format!(
        "layer {:>2}: {:>15} positions  wins {:>6.2}%  draws {:>6.2}%  losses {:>6.2}%\n    values {}\n",
        c.layer,
        group_digits(c.positions),
        100.0 * share(c.wins, c.positions),
        100.0 * share(c.draws, c.positions),
        100.0 * share(c.losses, c.positions),
        list.join(" ")
    );
    if let Some(b) = c.bounds {
        s.push_str(&format!(
            "    bounds: split forced {:.2}% ({}), value strictly inside the bounds {:.2}% ({})\n",
            100.0 * b.forced_share,
            group_digits(b.forced),
            100.0 * b.inside_share,
            group_digits(b.strictly_inside)
        ));
    }
    if let Some(d) = &c.dtc {
        let max = d.max.map_or("none".to_string(), |m| m.to_string());
        let mean = d.mean.map_or("none".to_string(), |m| format!("{m:.2}"));
        // The depths below which half and 99 % of the positions with one lie.
        let quantile = |q: f64| {
            let want = (q * d.with_dtc as f64).ceil() as u64;
            let mut seen = 0;
            d.histogram.iter().position(|&k| {
                seen += k;
                seen >= want.max(1)
            })
        };
        let (median, p99) = (quantile(0.5), quantile(0.99));
        let q = |x: Option<usize>| x.map_or("none".to_string(), |x| x.to_string());
        s.push_str(&format!("    dtc: max {max}, mean {mean}, median {}, 99% within {}\n", q(median), q(p99)));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_split_by_sign() {
        let c = count(2, &[2, 0, -2, 1, 0, 5, -128]);
        assert_eq!((c.wins, c.draws, c.losses), (3, 2, 2));
        assert_eq!(c.out_of_range, 2);
        assert_eq!(c.values.get(&0), Some(&2));
        assert_eq!(c.values.get(&-128), Some(&1));
        assert_eq!(c.positions, 7);
    }
}
