//! `oware query`: exact value, move values, best moves and best line of positions.
//!
//! With a position argument it answers that position; without one it reads positions from
//! standard input, one per line, and answers each as it arrives, so an engine can use it as a
//! coprocess. In that batch mode every non-blank line that does not start with `#` gets exactly
//! one record on stdout, in order: its answer, or an error record (text: one line
//! `error<TAB>LINE<TAB>CODE<TAB>MESSAGE`; JSON: `{"schema_version", "line", "error": {"code",
//! "kind", "message"}}`). Lines longer than [`MAX_LINE`] bytes are not read into memory: they get
//! an error record. The exit code is then the first error's; a summary goes to stderr.
//!
//! The files of the layers already open are checked for changes before the first batch line of
//! each read of stdin (and before every line once a check failed), so a layer truncated under a
//! running query gives error records, not a crash.

use clap::Args;
use oware::bounds::Forced;
use oware::game::Captured;
use oware::position::{PositionError, Side};
use oware::probe::Database;
use oware::search::MoverCaptured;
use oware::{Error, Position, Result};
use serde::Serialize;

use crate::args::{parse_captured, reword, DatabaseArgs, JsonArg, PositionArgs, QuietArg};
use crate::errors::exit_code;
use crate::input::{read_bounded, Line, MAX_LINE};
use crate::output::{note, ErrorDoc, Stdout, SCHEMA_VERSION};
use crate::report::{report, text, ReportDoc, Share};

/// Arguments of `oware query`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("json", "Print JSON: one object per position (one line each), for programs"), ("quiet", "No messages besides errors (no batch summary)")])))]
pub(crate) struct QueryArgs {
    #[command(flatten)]
    position: PositionArgs,
    #[command(flatten)]
    db: DatabaseArgs,
    #[command(flatten)]
    json: JsonArg,
    /// Print only the value: one line per position, `<position><TAB><value>` (or a JSON line
    /// `{"schema_version", "position", "value"}` with --json).
    #[arg(long)]
    values_only: bool,
    /// Also answer what each side can force itself to capture by play that ends by itself
    /// (forced-capture bounds; needs `oware build --bounds`), and whether the final split is
    /// forced under the ruleset's repetition rule. With --values-only: `<position><TAB><value>
    /// <TAB><gM><TAB><gN>` (after the depth with --dtc).
    #[arg(long)]
    bounds: bool,
    /// Also answer the depth to capture: how many plies best play takes to the value's first
    /// capture (needs `oware build --dtc`; the full report shows it whenever it is built). With
    /// --values-only: `<position><TAB><value><TAB><dtc>` (`-` for value 0), or the JSON line
    /// `{"schema_version", "position", "value", "dtc"}` (null for value 0).
    #[arg(long)]
    dtc: bool,
    /// Stones already captured in the game, `MOVER:OPPONENT` (the player to move's first): the
    /// report adds best play's final score and result with every stone counted (25 or more of
    /// the 48 wins); with --bounds, the result each side can force.
    #[arg(long, value_name = "M:O", value_parser = parse_captured)]
    captured: Option<MoverCaptured>,
    /// Longest principal variation printed, in plies.
    #[arg(long, value_name = "K", default_value_t = 60)]
    max_plies: usize,
    /// Do not verify each layer's payload checksum when it is first opened (saves one
    /// sequential read of every layer used; headers and sizes are still checked).
    #[arg(long)]
    no_verify: bool,
    #[command(flatten)]
    quiet: QuietArg,
}

/// Answers the position given, or every position read from standard input.
///
/// # Errors
/// With a position argument: the position's parse error and the probing errors of
/// [`Database::solution`] ([`Error::LayerMissing`], [`Error::RulesetMismatch`],
/// [`Error::Corrupt`] — also for values that contradict each other —, [`Error::Io`]). In batch
/// mode, the first error met (after every line has been answered). [`Error::Usage`] for
/// `--format vu` with a ruleset other than awari; [`Error::Output`] when stdout cannot be
/// written; [`Error::Io`] when stdin cannot be read.
pub(crate) fn run(a: QueryArgs) -> Result<()> {
    let dir = a.db.dir()?;
    let db = Database::from_dir(dir).verify_checksums(!a.no_verify);
    let mut out = Stdout::new();
    match a.position.placed()? {
        Some((pos, side)) => {
            let text = answer(&db, &pos, side, &a)?;
            out.write(&text)
        }
        None => batch(&db, &a, &mut out),
    }
}

/// A batch error record.
#[derive(Serialize)]
struct ErrorRecord<'a> {
    schema_version: u32,
    line: usize,
    error: ErrorDoc<'a>,
}

/// Reads positions from stdin and answers each with exactly one record.
fn batch(db: &Database, a: &QueryArgs, out: &mut Stdout) -> Result<()> {
    // A buffer of its own, whose emptiness tells when the next line waits for a read.
    let mut input = std::io::BufReader::new(std::io::stdin().lock());
    let mut first_error: Option<(usize, Error)> = None;
    let (mut failed, mut answered) = (0usize, 0usize);
    let mut buf = Vec::with_capacity(MAX_LINE + 1);
    let mut line_no = 0usize;
    // The open files are checked for changes before the first line of each read of stdin (a
    // line that waited for input, or every 8 KiB of a file), and before every line once a check
    // failed: a check costs a `stat` per open file (21 for layers 0..20 opened by packs over
    // floors), more than answering a line from native files, and a file changed while a read's
    // lines are answered is caught by the bus-error handler all the same.
    let mut check = true;
    loop {
        check |= input.buffer().is_empty();
        let Some(line) = read_bounded(&mut input, &mut buf).map_err(|e| Error::io("<stdin>", e))? else {
            break;
        };
        line_no += 1;
        let result = match line {
            Line::TooLong { first: None | Some(b'#'), .. } => continue,
            Line::TooLong { bytes, .. } => Err(Error::InvalidPosition(PositionError::LineTooLong { bytes, max: MAX_LINE })),
            Line::Text(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let text = text.trim();
                if text.is_empty() || text.starts_with('#') {
                    continue;
                }
                let checked = if check { db.check_open_files() } else { Ok(()) };
                check = checked.is_err();
                checked.and_then(|()| Position::parse_with_side(text)).and_then(|(pos, side)| answer(db, &pos, side, a))
            }
        };
        match result {
            Ok(text) => {
                out.write(&text)?;
                answered += 1;
            }
            Err(e) => {
                if a.json.json {
                    out.json(&ErrorRecord { schema_version: SCHEMA_VERSION, line: line_no, error: ErrorDoc::of(&e) })?;
                } else {
                    let msg = e.to_string().replace(['\t', '\n', '\r'], " ");
                    out.line(&format!("error\t{line_no}\t{}\t{msg}", exit_code(e.kind())))?;
                }
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
            if !a.quiet.quiet {
                note(&format!("{failed} of {} positions failed; the exit code is that of the first error (line {line})", failed + answered));
            }
            Err(e)
        }
    }
}

/// The answer for one position, formatted as asked (ending with a newline).
fn answer(db: &Database, pos: &Position, side: Option<Side>, a: &QueryArgs) -> Result<String> {
    if let Some(MoverCaptured { mover: m, opponent: o }) = a.captured {
        if m + o + pos.stones() > oware::rules::TOTAL_STONES {
            return Err(Error::Usage(format!(
                "{m} + {o} captured stones and {} on the board make more than the game's {}",
                pos.stones(),
                oware::rules::TOTAL_STONES
            )));
        }
    }
    // The value first: where the layer's values are not built, that is the error (not the
    // bounds or depths built from them).
    let value = db.value(pos)?;
    let bounds = if a.bounds { Some(db.bounds(pos)?) } else { None };
    let dtc = if a.dtc { Some(db.dtc(pos)?) } else { None };
    if a.values_only {
        return Ok(if a.json.json {
            let (forced_mover, forced_opponent) = (bounds.map(|b| b.mover), bounds.map(|b| b.opponent));
            let doc = ValueDoc { schema_version: SCHEMA_VERSION, position: *pos.board(), value, dtc, forced_mover, forced_opponent };
            serde_json::to_string(&doc).map_err(|e| Error::Internal(e.to_string()))? + "\n"
        } else {
            let mut line = format!("{pos}\t{value}");
            if let Some(d) = dtc {
                line.push_str(&format!("\t{}", d.map_or("-".to_string(), |d| d.to_string())));
            }
            if let Some(b) = bounds {
                line.push_str(&format!("\t{}\t{}", b.mover, b.opponent));
            }
            line + "\n"
        });
    }
    let analysis = db.solution(pos, a.max_plies)?;
    let forced = bounds.map(|b| ForcedDoc::new(db.rules(), pos.stones(), b, a.captured));
    // Mover-first counts name no side: South is to move.
    let side = side.unwrap_or(Side::South);
    let captured = a.captured.map(|c| Captured::from_mover_first(c, side));
    Ok(if a.json.json {
        let doc = QueryDoc { report: report(db, pos, side, &analysis, captured), forced };
        serde_json::to_string(&doc).map_err(|e| Error::Internal(e.to_string()))? + "\n"
    } else {
        let extra = forced.as_ref().map(|f| forced_text(db.rules(), pos.stones(), f));
        text(db, pos, side, &analysis, captured, extra.as_deref())
    })
}

/// What the bounds say about a position, under the ruleset's repetition rule (in a report).
#[derive(Serialize)]
struct ForcedDoc {
    /// Stones the player to move can force himself to capture (gM).
    forced_mover: u8,
    /// Stones the opponent can force himself to capture (gN).
    forced_opponent: u8,
    /// Whether the final split is forced whatever the repetition rule (gM + gN = n).
    split_forced: bool,
    /// `own_side` (abapa: each player takes the stones on his side) or `even_split` (awari).
    repetition_rule: &'static str,
    /// Under the ruleset's repetition rule, the player to move's final share of the stones on
    /// the board: `[gM, n - gN]` (own side), or the value's split (even split).
    mover_share: [Share; 2],
    /// `{"mover", "opponent"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    captured: Option<MoverCaptured>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<ResultDoc>,
}

#[derive(Serialize)]
struct ResultDoc {
    mover: Forced,
    opponent: Forced,
}

impl ForcedDoc {
    fn new(rules: oware::Ruleset, n: u32, b: oware::bounds::Bounds, captured: Option<MoverCaptured>) -> ForcedDoc {
        let own_side = rules.own_side_repetition();
        let result = captured.map(|c| {
            let (mover, opponent) = oware::bounds::forced_results(n, b, c.mover, c.opponent);
            ResultDoc { mover, opponent }
        });
        ForcedDoc {
            forced_mover: b.mover,
            forced_opponent: b.opponent,
            split_forced: b.forced(n),
            repetition_rule: if own_side { "own_side" } else { "even_split" },
            mover_share: [Share(f64::from(b.mover)), Share(f64::from(n - u32::from(b.opponent)))],
            captured,
            result,
        }
    }
}

/// The bounds' lines of a text report.
fn forced_text(rules: oware::Ruleset, n: u32, f: &ForcedDoc) -> String {
    let mut s = format!(
        "forced captures (by play that ends by itself, whatever repetition brings): player to move {}, opponent {} of the {n}\n",
        f.forced_mover, f.forced_opponent
    );
    if rules.own_side_repetition() {
        if f.split_forced {
            s.push_str(&format!(
                "under {rules}'s repetition rule (each player takes the stones on his side) the split is forced: the player to move ends with {} of the {n}\n",
                f.forced_mover
            ));
        } else {
            s.push_str(&format!(
                "under {rules}'s repetition rule (each player takes the stones on his side) the player to move ends with {} to {} of the {n}: the split is not forced\n",
                f.forced_mover,
                n - u32::from(f.forced_opponent)
            ));
        }
    } else {
        s.push_str(&format!("under {rules}'s repetition rule endless play splits the stones evenly: the value above is exact\n"));
    }
    if let (Some(c), Some(r)) = (&f.captured, &f.result) {
        s.push_str(&format!(
            "with {}:{} captured, by forced captures alone: the player to move {}; the opponent {}\n",
            c.mover,
            c.opponent,
            r.mover.words(),
            r.opponent.words()
        ));
    }
    s
}

/// `query --values-only --json`.
#[derive(Serialize)]
struct ValueDoc {
    schema_version: u32,
    position: [u8; 12],
    value: i8,
    /// With --dtc: the depth (null for value 0); absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    dtc: Option<Option<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    forced_mover: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    forced_opponent: Option<u8>,
}

/// `query --json`: the position's report and, with --bounds, the forced captures.
#[derive(Serialize)]
struct QueryDoc {
    #[serde(flatten)]
    report: ReportDoc,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    forced: Option<ForcedDoc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_serialise_as_numbers() {
        assert_eq!(serde_json::to_string(&Share(8.0)).unwrap(), "8");
        assert_eq!(serde_json::to_string(&Share(7.5)).unwrap(), "7.5");
    }
}
