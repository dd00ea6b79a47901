//! `oware perft`: count the move sequences of each length up to a depth (move-generator
//! regression; see `oware::perft`).

use std::time::Instant;

use clap::Args;
use oware::perft::perft_by_depth;
use oware::{Position, Result};
use serde::Serialize;

use crate::args::{reword, PositionArgs, PositionCommandArgs};
use crate::output::{human_duration, note, Stdout, SCHEMA_VERSION};

/// Arguments of `oware perft`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("json", "Print one JSON object (and nothing else) on stdout, for programs"), ("quiet", "No messages besides errors (no estimate, no timing line)")])))]
#[command(after_help = "Without a position, counts from the start position (4 stones in every pit).\n\
Sequences end early at a position without legal move or at a move that ends the game; such\n\
sequences are counted only at their own length.")]
pub(crate) struct PerftArgs {
    #[command(flatten)]
    position: PositionArgs,
    /// Count sequences of 1..=D moves.
    #[arg(long, short, value_name = "D", value_parser = clap::value_parser!(u32).range(0..=20))]
    depth: u32,
    #[command(flatten)]
    options: PositionCommandArgs,
}

/// `oware perft --json`.
#[derive(Serialize)]
struct PerftDoc<'a> {
    schema_version: u32,
    rules: &'static str,
    position: [u8; 12],
    depth: u32,
    /// `counts[d - 1]` is perft(d).
    counts: &'a [u64],
    perft: u64,
    seconds: f64,
}

/// Move generations per second assumed by the up-front estimate (one core; measured about
/// 60 M/s on the project's machine, kept low on purpose).
const ESTIMATE_RATE: f64 = 30e6;

/// Counts and prints perft(1..=D); the elapsed time goes to stderr. A run that would take more
/// than a few seconds says so first, with an estimate from the counts of the first plies.
///
/// # Errors
/// [`Error::InvalidPosition`] / [`Error::Usage`] for a malformed position; [`Error::Output`]
/// when stdout cannot be written.
pub(crate) fn run(a: PerftArgs) -> Result<()> {
    let pos = a.position.position()?.unwrap_or_else(Position::start);
    let rules = a.options.rules.ruleset();
    if !a.options.quiet.quiet {
        if let Some((moves, secs)) = estimate(rules, &pos, a.depth) {
            if secs > 5.0 {
                note(&format!(
                    "perft to depth {} generates about {moves:.2e} moves: roughly {} with {} threads \
                     (Ctrl-C stops it)",
                    a.depth,
                    human_duration(secs / rayon::current_num_threads() as f64),
                    rayon::current_num_threads()
                ));
            }
        }
    }
    let t0 = Instant::now();
    let counts = perft_by_depth(rules, pos.board(), a.depth);
    let elapsed = t0.elapsed().as_secs_f64();
    // perft(0) = 1: the empty sequence.
    let total = counts.last().copied().unwrap_or(1);
    let mut out = Stdout::new();
    if a.options.json.json {
        out.json(&PerftDoc {
            schema_version: SCHEMA_VERSION,
            rules: rules.name(),
            position: *pos.board(),
            depth: a.depth,
            counts: &counts,
            perft: total,
            seconds: elapsed,
        })?;
    } else {
        let mut s = format!("position {pos}, rules {rules}\n");
        for (d, c) in counts.iter().enumerate() {
            s.push_str(&format!("depth {}: {c}\n", d + 1));
        }
        s.push_str(&format!("perft({}) = {total}\n", a.depth));
        out.write(&s)?;
    }
    if !a.options.quiet.quiet {
        let nodes: u64 = counts.iter().sum();
        let rate = if elapsed > 0.0 { nodes as f64 / elapsed } else { 0.0 };
        note(&format!("perft: depth {} in {elapsed:.3} s ({nodes} moves generated, {:.1} M/s)", a.depth, rate / 1e6));
    }
    Ok(())
}

/// Estimated moves generated and seconds on one core for `perft(depth)`: exact counts to a
/// small depth, then the last branching factor carried on.
fn estimate(rules: oware::Ruleset, pos: &Position, depth: u32) -> Option<(f64, f64)> {
    let probe = depth.min(6);
    let counts = perft_by_depth(rules, pos.board(), probe);
    let mut total: f64 = counts.iter().map(|&c| c as f64).sum();
    let last = *counts.last()? as f64;
    let before = if counts.len() >= 2 { counts[counts.len() - 2] as f64 } else { 1.0 };
    let branching = if before > 0.0 { (last / before).max(1.0) } else { 1.0 };
    let mut level = last;
    for _ in probe..depth {
        level *= branching;
        total += level;
    }
    Some((total, total / ESTIMATE_RATE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_grow_with_depth() {
        let start = Position::start();
        let (m6, _) = estimate(oware::Ruleset::Awari, &start, 6).unwrap();
        let (m20, s20) = estimate(oware::Ruleset::Awari, &start, 20).unwrap();
        assert!(m20 > m6 * 1e6, "{m6} {m20}");
        assert!(s20 > 86_400.0, "depth 20 is days, not {s20} s");
    }
}
