//! `oware query`: exact value, move values, best moves and best line of positions.
//!
//! With a position argument it answers that position; without one it reads positions from
//! standard input, one per line (12 mover-first counts; blank lines and lines starting with `#`
//! are skipped), and answers each as it arrives, so an engine can use it as a coprocess. In that
//! batch mode a bad line is reported on stderr with its line number and the run goes on; the
//! exit code is then the first error's.

use std::io::{BufRead, BufWriter, Write};

use clap::Args;
use oware::probe::{format_share, Analysis, Database, MoveResult, MoveValue, PvEnd, Split};
use oware::storage::Format;
use oware::{Error, Position, Result};
use serde_json::{json, Value};

use super::{DirArg, FormatArg, PositionArgs, RulesArg};

/// Arguments of `oware query`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    #[command(flatten)]
    position: PositionArgs,
    #[command(flatten)]
    rules: RulesArg,
    #[command(flatten)]
    dir: DirArg,
    #[command(flatten)]
    format: FormatArg,
    /// Print JSON: one object per position (one line each), for programs.
    #[arg(long)]
    json: bool,
    /// Print only the value: one line per position, `<position><TAB><value>` (or a JSON line
    /// `{"position": [...], "value": v}` with --json).
    #[arg(long)]
    values_only: bool,
    /// Longest principal variation printed, in plies.
    #[arg(long, value_name = "K", default_value_t = 60)]
    max_plies: usize,
    /// Do not verify each layer's payload checksum when it is first opened (saves one
    /// sequential read of every layer used; headers and sizes are still checked).
    #[arg(long)]
    no_verify: bool,
}


/// Answers the position given, or every position read from standard input.
///
/// # Errors
/// With a position argument: [`Error::InvalidPosition`] for a malformed position and the
/// probing errors of [`Database::value`] ([`Error::LayerMissing`], [`Error::RulesetMismatch`],
/// [`Error::Corrupt`], [`Error::Io`]). In batch mode, the first error met (after every line has
/// been answered). [`Error::Usage`] for `--format vu` with a ruleset other than awari;
/// [`Error::Io`] when stdout cannot be written or stdin read.
pub fn run(a: QueryArgs) -> Result<()> {
    let db = Database::open_format(a.format.format, &a.dir.dir, a.rules.rules)?.verify_checksums(!a.no_verify);
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match a.position.position()? {
        Some(pos) => {
            let text = answer(&db, &pos, &a)?;
            emit(&mut out, &text)
        }
        None => batch(&db, &a, &mut out),
    }
}

/// Reads positions from stdin and answers each; errors of single lines go to stderr.
fn batch(db: &Database, a: &QueryArgs, out: &mut impl Write) -> Result<()> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut first_error: Option<(usize, Error)> = None;
    let mut failed = 0usize;
    let mut answered = 0usize;
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    loop {
        buf.clear();
        let read = input.read_until(b'\n', &mut buf).map_err(|e| Error::io("<stdin>", e))?;
        if read == 0 {
            break;
        }
        line_no += 1;
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let result = line.parse::<Position>().and_then(|pos| answer(db, &pos, a));
        match result {
            Ok(text) => {
                emit(out, &text)?;
                answered += 1;
            }
            Err(e) => {
                // Keep stdout in step with stderr for readers that interleave them.
                out.flush().map_err(|e| Error::io("<stdout>", e))?;
                eprintln!("oware: line {line_no}: {e}");
                failed += 1;
                if first_error.is_none() {
                    first_error = Some((line_no, e));
                }
            }
        }
    }
    match first_error {
        None => Ok(()),
        Some((line, e)) => {
            eprintln!(
                "oware: {failed} of {} positions failed; the exit code is that of the first error (line {line})",
                failed + answered
            );
            Err(e)
        }
    }
}

/// Writes one answer and flushes it, so a program waiting for it gets it now.
fn emit(out: &mut impl Write, text: &str) -> Result<()> {
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| Error::io("<stdout>", e))
}

/// Everything printed about one position.
struct Report {
    position: Position,
    analysis: Analysis,
}

/// The answer for one position, formatted as asked (ending with a newline).
fn answer(db: &Database, pos: &Position, a: &QueryArgs) -> Result<String> {
    if a.values_only {
        let value = db.value(pos)?;
        return Ok(if a.json {
            json!({ "position": pos.board(), "value": value }).to_string() + "\n"
        } else {
            format!("{pos}\t{value}\n")
        });
    }
    let report = Report { position: *pos, analysis: db.analyse(pos, a.max_plies)? };
    Ok(if a.json { json_report(db, &report).to_string() + "\n" } else { text_report(db, &report) })
}

fn best_pits(a: &Analysis) -> Vec<u8> {
    a.moves.iter().filter(|m| m.value == a.value).map(|m| m.pit).collect()
}

/// A stone share as a JSON number: an integer when whole, else `x.5`.
fn share_json(x: f64) -> Value {
    if x.fract() == 0.0 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn split_json(s: Split) -> Value {
    json!({ "mover": share_json(s.mover), "opponent": share_json(s.opponent) })
}

fn move_json(m: &MoveValue) -> Value {
    let (captured, child) = match &m.result {
        MoveResult::Continues { captured, child } => (json!(captured), json!(child.board())),
        MoveResult::EndsGame => (Value::Null, Value::Null),
    };
    json!({
        "pit": m.pit,
        "captured": captured,
        "ends_game": m.result == MoveResult::EndsGame,
        "child": child,
        "value": m.value,
    })
}

/// The JSON report: `{"rules", "format", "position", "stones", "value", "split", "game_over",
/// "moves": [{"pit", "captured", "ends_game", "child", "value"}], "best_moves": [pits],
/// "principal_variation": [{"ply", "position", "value", "pit", "captured", "ends_game",
/// "child"}], "pv_end": {"reason": "game_over" | "repetition" | "cycle" | "ply_limit",
/// "first_ply"}}`. Positions are arrays of 12 mover-first counts; `captured` and `child` are
/// null for a move that ends the game; `first_ply` (1-based) is set for a repetition (endless
/// play, value 0) and for a cycle (a line that returned to an earlier position although its
/// value is not 0: not how the game goes, see [`PvEnd::Cycle`]).
fn json_report(db: &Database, r: &Report) -> Value {
    let a = &r.analysis;
    let pv: Vec<Value> = a
        .line
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut v = move_json(&s.played);
            v["ply"] = json!(i + 1);
            v["position"] = json!(s.position.board());
            v
        })
        .collect();
    let end = match a.line.end {
        PvEnd::Repetition { first_ply } => json!({ "reason": "repetition", "first_ply": first_ply + 1 }),
        PvEnd::Cycle { first_ply } => json!({ "reason": "cycle", "first_ply": first_ply + 1 }),
        PvEnd::GameOver => json!({ "reason": "game_over" }),
        PvEnd::PlyLimit => json!({ "reason": "ply_limit" }),
    };
    json!({
        "rules": db.rules().name(),
        "format": match db.format() { Format::Native => "native", Format::Vu => "vu" },
        "position": r.position.board(),
        "stones": r.position.stones(),
        "value": a.value,
        "split": split_json(Split::of(&r.position, a.value)),
        "game_over": a.moves.is_empty(),
        "moves": a.moves.iter().map(move_json).collect::<Vec<_>>(),
        "best_moves": best_pits(a),
        "principal_variation": pv,
        "pv_end": end,
    })
}

fn text_report(db: &Database, r: &Report) -> String {
    let pos = &r.position;
    let a = &r.analysis;
    let n = pos.stones();
    let split = Split::of(pos, a.value);
    let mut s = pos.drawing();
    s.push('\n');
    let plural = if n == 1 { "" } else { "s" };
    s.push_str(&format!("position {pos} ({n} stone{plural}), rules {}\n", db.rules()));
    s.push_str(&format!(
        "value {:+}: with best play the player to move ends with {} of the {n} stone{plural}, the opponent {}\n",
        a.value,
        format_share(split.mover),
        format_share(split.opponent)
    ));
    if a.moves.is_empty() {
        s.push_str("no legal move: the game is over\n");
        return s;
    }
    s.push_str("moves (value = captured - value of the position after the move):\n");
    for m in &a.moves {
        let what = match m.captured() {
            Some(c) => format!("captures {c:>2}"),
            None => "ends the game".to_string(),
        };
        let best = if m.value == a.value { "  best" } else { "" };
        s.push_str(&format!("  pit {}: {what}, value {:+}{best}\n", m.pit, m.value));
    }
    let best: Vec<String> = best_pits(a).iter().map(|p| p.to_string()).collect();
    s.push_str(&format!(
        "best move{}: pit {}\n",
        if best.len() == 1 { "" } else { "s" },
        best.join(", pit ")
    ));
    s.push_str(
        "principal variation (best moves: a capture or the end of the game when one is best, \
         else the shortest way to one, else the lowest-numbered):\n",
    );
    let steps = &a.line.steps;
    for (i, step) in steps.iter().enumerate() {
        let result = match &step.played.result {
            MoveResult::Continues { captured, child } => format!("captures {captured:>2} -> {child}"),
            MoveResult::EndsGame => "ends the game".to_string(),
        };
        s.push_str(&format!(
            "  ply {:>3}: pit {} {result}   (value {:+} for the player who moves)\n",
            i + 1,
            step.played.pit,
            step.value
        ));
    }
    let end = match a.line.end {
        PvEnd::GameOver => "the game is over".to_string(),
        PvEnd::Repetition { first_ply } => format!(
            "the position after ply {} repeats the one before ply {}: endless play, the stones left are split evenly",
            steps.len(),
            first_ply + 1
        ),
        PvEnd::Cycle { first_ply } => format!(
            "the position after ply {} repeats the one before ply {} although its value is not 0: \
             this database holds values only and cannot always show the forcing line; the value itself is exact",
            steps.len(),
            first_ply + 1
        ),
        PvEnd::PlyLimit => format!("stopped after {} plies (--max-plies)", steps.len()),
    };
    s.push_str(&format!("  {end}\n"));
    s
}
