//! `oware analyse`: the search engine's answer for one position, above the layers or inside them.
//!
//! Prints the best move, its score (exact or an estimate), the depth, nodes and speed, the best
//! line and every move's score. While it thinks on a terminal, each finished iteration is
//! shown on stderr.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use oware::position::{house, Side};
use oware::search::{Control, Engine, Limits, MoverCaptured, Report, Root, ScoreBound, DEFAULT_HASH_MB, MAX_DEPTH};
use oware::{Error, Position, Result, Ruleset};
use serde::Serialize;

use super::output::{note, Stdout, SCHEMA_VERSION};
use super::query::parse_captured;
use super::{draw, reword, DatabaseArgs, JsonArg, PositionArgs, QuietArg};

/// Arguments of `oware analyse`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("json", "Print one JSON object: best move, score, exactness, depth, nodes, speed, line, every move's score"), ("quiet", "No progress lines while searching")])))]
pub struct AnalyseArgs {
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

/// How long and with what the engine searches (shared by `analyse`, `play`, `game`).
#[derive(Args, Debug, Clone)]
pub struct SearchArgs {
    /// Time to search, in milliseconds (the default when neither --depth nor --nodes is given:
    /// 1000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub movetime: Option<u64>,
    /// Search to this depth in plies (1..=100); the answer does not depend on --threads.
    #[arg(long, value_name = "D", value_parser = clap::value_parser!(u32).range(1..=MAX_DEPTH as i64))]
    pub depth: Option<u32>,
    /// Search at most about this many nodes; the answer does not depend on --threads.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub nodes: Option<u64>,
    /// Search threads for a timed search (default: all cores).
    #[arg(long, value_name = "T", value_parser = super::parse_threads)]
    pub threads: Option<usize>,
    /// Size of the transposition table, MiB (1..=65536).
    #[arg(long, value_name = "MB", default_value_t = DEFAULT_HASH_MB, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536))]
    pub hash: usize,
    /// Probe layers 0..=N only, even where more are built (the engine searches above them).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=48))]
    pub max_table: Option<u32>,
}

impl SearchArgs {
    /// The limits asked for: `--movetime` (default 1 s unless a depth or node limit is set).
    pub fn limits(&self, all_moves: bool) -> Limits {
        let movetime = match (self.movetime, self.depth, self.nodes) {
            (Some(ms), _, _) => Some(Duration::from_millis(ms)),
            (None, None, None) => Some(Duration::from_millis(1000)),
            _ => None,
        };
        Limits { depth: self.depth, movetime, nodes: self.nodes, all_moves }
    }
}

/// The engine for `rules` over the layers of the database chosen (every layer built from 0 up,
/// or up to `--max-table`), or over none (the evaluation alone, said on stderr unless `quiet`).
///
/// # Errors
/// As [`Engine::new`]: a present layer that is damaged or foreign.
pub fn open_engine(db: &DatabaseArgs, rules: Ruleset, search: &SearchArgs, quiet: bool) -> Result<Engine> {
    hash_fits(search.hash as u64).map_err(|msg| Error::Usage(format!("--hash: {msg}")))?;
    let mut engine = Engine::new(rules, Some(Arc::new(db.database_for(rules)?)), search.max_table)?;
    if let Some(e) = engine.unusable() {
        // Said whatever `quiet` asks: the answers lose the layers above the damaged file.
        let below = match (engine.tables(), engine.dtc_tables()) {
            (None, _) => "searching with the evaluation alone".to_string(),
            (Some(t), None) => format!("probing layers 0..={t}, without depths to capture"),
            (Some(t), Some(d)) => format!("probing layers 0..={t}, depths to capture of 0..={d}"),
        };
        note(&format!("{e}: not used, nor the files of its kind above it; {below}"));
    }
    if engine.tables().is_none() && !quiet {
        note(&format!("no layers of {rules} in {}: searching with the evaluation alone", db.dir.dir.display()));
    }
    engine.set_hash_mb(search.hash);
    engine.set_threads(search.threads.unwrap_or_else(super::cores));
    Ok(engine)
}

/// Refuses a transposition table larger than three quarters of the memory the system reports
/// available (allocating it would end the process, or push the machine into swap; the library's
/// `search::check_hash_mb`): the one guard of `--hash` and the engine's `Hash` option, which
/// put their own words before the message.
pub fn hash_fits(mb: u64) -> std::result::Result<u64, String> {
    oware::search::check_hash_mb(mb).map(|()| mb).map_err(|e| e.to_string())
}

/// A score in stones, signed, as people read it: `+3`, `-1.25`.
pub fn stones(centi: i32) -> String {
    if centi % 100 == 0 {
        format!("{:+}", centi / 100)
    } else {
        format!("{:+.2}", f64::from(centi) / 100.0)
    }
}

/// The line as house letters, each ply in the letters of the side that plays it.
pub fn line_houses(pv: &[u8], side: Side) -> Vec<String> {
    let mut s = side;
    pv.iter()
        .map(|&p| {
            let h = house(s, p).to_string();
            s = s.other();
            h
        })
        .collect()
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

/// A bound's name in the JSON documents.
pub fn bound_name(b: ScoreBound) -> &'static str {
    match b {
        ScoreBound::Equal => "exact",
        ScoreBound::Upper => "upper",
        ScoreBound::Lower => "lower",
    }
}

/// One progress line for an iteration (fits 80 columns).
pub fn info_line(r: &Report, side: Side) -> String {
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
pub fn run(a: AnalyseArgs) -> Result<()> {
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
