//! `oware perft`: count the move sequences of each length up to a depth (move-generator
//! regression; see `oware::perft`).

use std::time::Instant;

use clap::Args;
use oware::perft::perft_by_depth;
use oware::{Error, Position, Result};
use serde_json::json;

use super::{PositionArgs, RulesArg};

/// Arguments of `oware perft`.
#[derive(Args, Debug)]
#[command(after_help = "Without a position, counts from the start position (4 stones in every pit).\n\
Sequences end early at a position without legal move or at a move that ends the game; such\n\
sequences are counted only at their own length.")]
pub struct PerftArgs {
    #[command(flatten)]
    position: PositionArgs,
    /// Count sequences of 1..=D moves.
    #[arg(long, short, value_name = "D", value_parser = clap::value_parser!(u32).range(0..=20))]
    depth: u32,
    #[command(flatten)]
    rules: RulesArg,
    /// Print one JSON object (and nothing else) on stdout, for programs.
    #[arg(long)]
    json: bool,
}

/// Counts and prints perft(1..=D); the elapsed time goes to stderr.
///
/// # Errors
/// [`Error::InvalidPosition`] / [`Error::Usage`] for a malformed position; [`Error::Io`] when
/// stdout cannot be written.
pub fn run(a: PerftArgs) -> Result<()> {
    let pos = a.position.position()?.unwrap_or_else(Position::start);
    let rules = a.rules.rules;
    let t0 = Instant::now();
    let counts = perft_by_depth(rules, pos.board(), a.depth);
    let elapsed = t0.elapsed().as_secs_f64();
    // perft(0) = 1: the empty sequence.
    let total = counts.last().copied().unwrap_or(1);

    let text = if a.json {
        json!({
            "rules": rules.name(),
            "position": pos.board(),
            "depth": a.depth,
            "counts": counts,
            "perft": total,
            "seconds": elapsed,
        })
        .to_string()
            + "\n"
    } else {
        let mut s = format!("position {pos}, rules {rules}\n");
        for (d, c) in counts.iter().enumerate() {
            s.push_str(&format!("depth {}: {c}\n", d + 1));
        }
        s.push_str(&format!("perft({}) = {total}\n", a.depth));
        s
    };
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| Error::io("<stdout>", e))?;
    }
    let nodes: u64 = counts.iter().sum();
    let rate = if elapsed > 0.0 { nodes as f64 / elapsed } else { 0.0 };
    eprintln!("perft: depth {} in {elapsed:.3} s ({nodes} moves generated, {:.1} M/s)", a.depth, rate / 1e6);
    Ok(())
}
