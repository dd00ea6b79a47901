//! `oware analyse`: the search engine's answer for one position, above the layers or inside them.
//!
//! Prints the best move, its score (exact or an estimate), the depth, nodes and speed, the best
//! line and every move's score. While it thinks on a terminal, each finished iteration is
//! shown on stderr.

use std::io::IsTerminal;

use clap::Args;
use oware::position::{house, Side};
use oware::search::{Control, Engine, MoverCaptured, Report, Root, ScoreBound};
use oware::{Error, Position, Result};
use serde::Serialize;

use crate::args::{open_engine, parse_captured, reword, DatabaseArgs, JsonArg, PositionArgs, QuietArg, SearchArgs};
use crate::output::{Stdout, SCHEMA_VERSION};
use crate::show::{bound_name, draw, line_houses, stones};

/// Arguments of `oware analyse`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("json", "Print one JSON object: best move, score, exactness, depth, nodes, speed, line, every move's score"), ("quiet", "No progress lines while searching")])))]
pub(crate) struct AnalyseArgs {
    #[command(flatten)]
    position: PositionArgs,
    #[command(flatten)]
    db: DatabaseArgs,
    #[command(flatten)]
    search: SearchArgs,
    /// Stones already captured in the game, `MOVER:OPPONENT`: the score is then the game's final
    /// score (captured difference plus the board's), and the 25-stone rule ends the game.
    #[arg(long, value_name = "M:O", value_parser = parse_captured)]
    captured: Option<MoverCaptured>,
    #[command(flatten)]
    json: JsonArg,
    #[command(flatten)]
    quiet: QuietArg,
}

#[derive(Serialize)]
struct MoveDoc {
    pit: u8,
    house: String,
    score: f64,
    bound: &'static str,
    exact: bool,
}

#[derive(Serialize)]
struct AnalyseDoc {
    schema_version: u32,
    position: [u8; 12],
    to_move: &'static str,
    best_pit: Option<u8>,
    best_house: Option<String>,
    score: f64,
    exact: bool,
    depth: u32,
    seldepth: u32,
    nodes: u64,
    nps: u64,
    seconds: f64,
    pv: Vec<String>,
    moves: Vec<MoveDoc>,
    tables: Option<u32>,
    captured: Option<[u32; 2]>,
}

/// One progress line for an iteration (fits 80 columns).
pub(crate) fn info_line(r: &Report, side: Side) -> String {
    let pv = line_houses(&r.pv, side).join(" ");
    let mut line = format!(
        "depth {:>2}  {:>7} {}  {:>6} nodes/s  {}",
        r.depth,
        stones(r.score),
        if r.exact { "exact   " } else { "estimate" },
        oware::units::group_digits(r.nps()),
        pv
    );
    if line.chars().count() > 79 {
        line = line.chars().take(78).collect::<String>() + "…";
    }
    line
}

/// Runs `oware analyse`.
///
/// # Errors
/// The position's parse error ([`Error::InvalidPosition`]); [`Error::Usage`] for captured
/// counts that do not add up with the board; as [`open_engine`] and [`Engine::search`];
/// [`Error::Output`] when stdout cannot be written.
pub(crate) fn run(a: AnalyseArgs) -> Result<()> {
    let (pos, side) = a.position.required_placed()?;
    if let Some(MoverCaptured { mover: m, opponent: o }) = a.captured {
        if m + o + pos.stones() != oware::rules::TOTAL_STONES {
            return Err(Error::Usage(format!(
                "{m} + {o} captured and {} on the board make {}: a game has {} stones",
                pos.stones(),
                m + o + pos.stones(),
                oware::rules::TOTAL_STONES
            )));
        }
    }
    let engine = open_engine(&a.db, a.db.rules.ruleset(), &a.search, a.quiet.quiet)?;
    let mover = side.unwrap_or(Side::South);
    let root = Root::in_game(pos, a.captured, Vec::new());
    let control = Control::new();
    let progress = !a.quiet.quiet && std::io::stderr().is_terminal();
    let report = engine.search(&root, &a.search.limits(true), &control, &mut |r| {
        if progress {
            eprintln!("{}", info_line(r, mover));
        }
    })?;
    let mut out = Stdout::new();
    if a.json.json {
        out.json(&doc(&pos, mover, &report, &engine, a.captured))
    } else {
        out.write(&text(&pos, side, mover, &report, &engine))
    }
}

fn doc(pos: &Position, mover: Side, r: &Report, engine: &Engine, captured: Option<MoverCaptured>) -> AnalyseDoc {
    AnalyseDoc {
        schema_version: SCHEMA_VERSION,
        position: *pos.board(),
        to_move: mover.name(),
        best_pit: r.best_pit,
        best_house: r.best_pit.map(|p| house(mover, p).to_string()),
        score: f64::from(r.score) / 100.0,
        exact: r.exact,
        depth: r.depth,
        seldepth: r.seldepth,
        nodes: r.nodes,
        nps: r.nps(),
        seconds: r.seconds,
        pv: line_houses(&r.pv, mover),
        moves: r
            .moves
            .iter()
            .map(|m| MoveDoc {
                pit: m.pit,
                house: house(mover, m.pit).to_string(),
                score: f64::from(m.score) / 100.0,
                bound: bound_name(m.bound),
                exact: m.exact,
            })
            .collect(),
        tables: engine.tables(),
        captured: captured.map(|c| [c.mover, c.opponent]),
    }
}

fn text(pos: &Position, side: Option<Side>, mover: Side, r: &Report, engine: &Engine) -> String {
    let mut s = draw(pos, side);
    if !s.ends_with('\n') {
        s.push('\n');
    }
    let tables = engine.tables().map_or("none".to_string(), |t| format!("layers 0..{t}"));
    match r.best_pit {
        None => s.push_str(&format!("game over: {} ({})\n", stones(r.score), if r.exact { "exact" } else { "estimate" })),
        Some(best) => {
            s.push_str(&format!(
                "best      {} (pit {best})\nscore     {} stones, {}\n",
                house(mover, best),
                stones(r.score),
                if r.exact { "exact" } else { "estimate" }
            ));
            s.push_str(&format!(
                "search    depth {} (sel {}), {} nodes in {:.2} s, {} nodes/s, tables {tables}\n",
                r.depth,
                r.seldepth,
                oware::units::group_digits(r.nodes),
                r.seconds,
                oware::units::group_digits(r.nps())
            ));
            s.push_str(&format!("line      {}\n", line_houses(&r.pv, mover).join(" ")));
            s.push_str("moves    ");
            for m in &r.moves {
                let bound = match m.bound {
                    ScoreBound::Equal => "",
                    ScoreBound::Upper => "<=",
                    ScoreBound::Lower => ">=",
                };
                s.push_str(&format!(" {} {bound}{}{}", house(mover, m.pit), stones(m.score), if m.exact { "" } else { "?" }));
            }
            s.push_str("\n          (? an estimate; <= a bound: the move was refuted)\n");
        }
    }
    s
}
