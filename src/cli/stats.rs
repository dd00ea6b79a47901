//! `oware stats`: the number of positions of each value in every built layer, and the shares of
//! wins, draws and losses for the player to move.
//!
//! Counted from the layers' payloads (not from the `layer-NN.json` files the build writes), after
//! checking each native file's header and payload checksum. A damaged layer is reported and
//! skipped; the command then exits with that layer's error code (5 for a damaged file) after
//! printing the others.

use std::collections::BTreeMap;

use clap::Args;
use oware::index::MAX_STONES;
use oware::solver::histogram;
use oware::storage::{ruleset_dir, Format, Layer};
use oware::verify::describe_layers;
use oware::{Error, Result};
use serde_json::json;

use oware::units::group_digits;
use super::{DirArg, FormatArg, RulesArg};

/// Arguments of `oware stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    rules: RulesArg,
    #[command(flatten)]
    dir: DirArg,
    #[command(flatten)]
    format: FormatArg,
    /// Print one JSON document on stdout instead of the table.
    #[arg(long)]
    json: bool,
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

/// Prints the value counts of every layer present (0..=48, gaps allowed).
///
/// # Errors
/// [`Error::Usage`] for `--format vu` with a ruleset other than awari; [`Error::LayerMissing`]
/// when no layer is present; the error of the first damaged layer (exit code 5 for a bad header
/// or checksum, 6 for another ruleset's file, 7 for an I/O error) after the others are printed.
pub fn run(a: StatsArgs) -> Result<()> {
    let rules = a.rules.rules;
    let dir = a.dir.dir;
    oware::storage::check_format_rules(a.format.format, rules)?;
    let path_of = |n| oware::storage::layer_file(a.format.format, &dir, rules, n);
    let present: Vec<u32> = (0..=MAX_STONES).filter(|&n| path_of(n).exists()).collect();
    if present.is_empty() {
        let where_ = if a.format.format == Format::Native { ruleset_dir(&dir, rules) } else { dir.clone() };
        return Err(Error::LayerMissing { layer: 0, dir: where_, rules: rules.name().into() });
    }
    let prefix_end = (0..=MAX_STONES).take_while(|n| present.contains(n)).count() as u32;
    if prefix_end as usize != present.len() {
        eprintln!(
            "oware: layers present: {} (layer {prefix_end} is missing)",
            describe_layers(present.iter().copied())
        );
    }

    let mut counts = Vec::new();
    let mut first_error: Option<Error> = None;
    for &n in &present {
        match Layer::open(a.format.format, &dir, rules, n, true) {
            Ok(layer) => {
                let c = count(n, layer.values());
                if !a.json {
                    print_layer(&c);
                }
                counts.push(c);
            }
            Err(e) => {
                eprintln!("oware: layer {n} skipped: {e}");
                if !a.json {
                    println!("layer {n:>2}: DAMAGED, not counted: {e}");
                }
                first_error.get_or_insert(e);
            }
        }
    }

    let total: u64 = counts.iter().map(|c| c.positions).sum();
    let wins: u64 = counts.iter().map(|c| c.wins).sum();
    let draws: u64 = counts.iter().map(|c| c.draws).sum();
    let losses: u64 = counts.iter().map(|c| c.losses).sum();
    if a.json {
        let layers: Vec<_> = counts
            .iter()
            .map(|c| {
                json!({
                    "layer": c.layer,
                    "positions": c.positions,
                    "wins": c.wins,
                    "draws": c.draws,
                    "losses": c.losses,
                    "win_share": share(c.wins, c.positions),
                    "draw_share": share(c.draws, c.positions),
                    "loss_share": share(c.losses, c.positions),
                    "out_of_range": c.out_of_range,
                    "values": c.values.iter().map(|(v, k)| (v.to_string(), *k)).collect::<BTreeMap<String, u64>>(),
                })
            })
            .collect();
        let doc = json!({
            "rules": rules.name(),
            "format": if a.format.format == Format::Native { "native" } else { "vu" },
            "layers": layers,
            "total": {
                "positions": total,
                "wins": wins,
                "draws": draws,
                "losses": losses,
                "win_share": share(wins, total),
                "draw_share": share(draws, total),
                "loss_share": share(losses, total),
            },
        });
        println!("{doc}");
    } else {
        println!(
            "all   : {:>15} positions  wins {:>6.2}%  draws {:>6.2}%  losses {:>6.2}%  (layers {}, player to move)",
            group_digits(total),
            100.0 * share(wins, total),
            100.0 * share(draws, total),
            100.0 * share(losses, total),
            describe_layers(counts.iter().map(|c| c.layer))
        );
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn print_layer(c: &LayerCounts) {
    println!(
        "layer {:>2}: {:>15} positions  wins {:>6.2}%  draws {:>6.2}%  losses {:>6.2}%",
        c.layer,
        group_digits(c.positions),
        100.0 * share(c.wins, c.positions),
        100.0 * share(c.draws, c.positions),
        100.0 * share(c.losses, c.positions)
    );
    let list: Vec<String> = c.values.iter().map(|(v, k)| format!("{v:+}:{k}")).collect();
    println!("    values {}", list.join(" "));
    if c.out_of_range > 0 {
        println!(
            "    WARNING: {} position{} hold a value outside -{n}..{n}",
            group_digits(c.out_of_range),
            if c.out_of_range == 1 { "" } else { "s" },
            n = c.layer
        );
    }
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
