//! `oware game`: a game record annotated ply by ply: each move's value against the best, the
//! error it made, the stones taken, the score, and the result best play gives from there.

use std::path::PathBuf;

use clap::Args;
use oware::game::{annotate, record_moves, AnnotatedGame, Captured, Game, Ply, Probed, Verdict};
use oware::position::{house, Position, Side};
use oware::probe::{Database, MoveResult};
use oware::rules::TOTAL_STONES;
use oware::search::{Control, Root, DEFAULT_HASH_MB};
use oware::{Error, Result};
use serde::Serialize;

use crate::args::{open_engine, reword, DatabaseArgs, JsonArg, SearchArgs, StartArgs};
use crate::input::fill_buf;
use crate::output::{Stdout, SCHEMA_VERSION};
use crate::report::{side_form, signed, winner_words, PlaceDoc};

/// Arguments of `oware game`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("json", "Print one JSON document, for programs")])))]
pub(crate) struct GameArgs {
    /// The moves, as houses (South's A..F, North's a..f; `1. F c 2. B e` and `FcBe` work too)
    /// or mover-first pit numbers 0..5. With none and no --record, the position is analysed.
    #[arg(value_name = "MOVES", num_args = 0..)]
    moves: Vec<String>,
    /// Read the moves from FILE (`-` for standard input) instead; `#` starts a comment line.
    #[arg(long, value_name = "FILE", conflicts_with = "moves")]
    record: Option<PathBuf>,
    #[command(flatten)]
    start: StartArgs,
    #[command(flatten)]
    db: DatabaseArgs,
    /// Annotate the plies above the built layers with the search engine's evaluation, searching
    /// MS milliseconds per position (marked `~`: estimates unless the search proves them).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=600_000))]
    analyse: Option<u64>,
    #[command(flatten)]
    json: JsonArg,
}

/// Annotates the game and prints it.
///
/// # Errors
/// [`Error::Usage`] for unreadable or illegal moves (naming the ply), bad --captured or
/// --to-move; [`Error::InvalidPosition`] for a bad --from; [`Error::Io`] when --record cannot
/// be read; the probing errors of [`oware::game::probe`]; [`Error::Output`].
pub(crate) fn run(a: GameArgs) -> Result<()> {
    let db = a.db.database()?;
    let (start, side, captured) = a.start.resolve()?;
    let mut record = RecordReader::new(Game::from_position(db.rules(), start, side, captured));
    match &a.record {
        Some(path) if path.as_os_str() == "-" => record.read(&mut std::io::stdin().lock()).map_err(|e| Error::io("<stdin>", e))?,
        Some(path) => {
            let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
            record.read(&mut std::io::BufReader::with_capacity(1 << 16, file)).map_err(|e| Error::io(path, e))?;
        }
        None => {
            for m in &a.moves {
                record.feed(m.as_bytes());
                record.feed(b"\n");
            }
        }
    }
    let moves = record.finish()?;
    let game = annotate(&db, start, side, captured, &moves)?;
    let engine_says = match a.analyse {
        Some(ms) => engine_notes(&a.db, &db, &game, ms)?,
        None => vec![None; game.plies.len()],
    };
    let mut out = Stdout::new();
    if a.json.json {
        out.json(&doc(&db, &game, &engine_says))
    } else {
        out.write(&text_report(&db, &game, &engine_says))
    }
}

/// The most plies a record may hold (50 times the longest game the project has seen, a legal
/// game of 2,100 plies; real games have a few hundred): memory is some hundreds of bytes a ply.
const MAX_RECORD_PLIES: usize = 100_000;

/// The longest word of a record that is read whole: a move is one character, a move number
/// (`12.`) a few; a run of house letters (`FcBe...`) is read as moves, whatever its length.
const MAX_RECORD_WORD: usize = 64;

/// A game record read a piece at a time, as [`record_moves`] splits it (lines that start with
/// `#` skipped): the moves are kept up to the first one the game does not allow (kept too, so
/// that [`annotate`] names it), and nothing after it is read. Memory is the moves' whatever the
/// input: a stream of garbage, of moves after the game's end or of a word without end stops at
/// its first bad move; a record of more than [`MAX_RECORD_PLIES`] legal plies is refused.
struct RecordReader {
    /// The game the moves make, to find the first move it does not allow.
    game: Game,
    moves: Vec<String>,
    /// The word being read (at most [`MAX_RECORD_WORD`] bytes).
    word: Vec<u8>,
    /// Only blanks so far on this line.
    line_start: bool,
    /// In a `#` comment line.
    comment: bool,
    /// In a run of house letters longer than [`MAX_RECORD_WORD`]: each is a move.
    run: bool,
    /// The moves after the last one kept are not read.
    done: bool,
    error: Option<Error>,
}

impl RecordReader {
    fn new(game: Game) -> RecordReader {
        RecordReader { game, moves: Vec::new(), word: Vec::new(), line_start: true, comment: false, run: false, done: false, error: None }
    }

    /// Reads `input` up to its end or the first move the game does not allow.
    fn read(&mut self, input: &mut impl std::io::BufRead) -> std::io::Result<()> {
        while !self.done {
            let chunk = fill_buf(input)?;
            if chunk.is_empty() {
                break;
            }
            let n = chunk.len();
            self.feed(chunk);
            input.consume(n);
        }
        Ok(())
    }

    /// Reads the next bytes of the record.
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.done {
                return;
            }
            if b == b'\n' {
                self.end_word();
                self.line_start = true;
                self.comment = false;
                continue;
            }
            if self.comment {
                continue;
            }
            let separator = b.is_ascii_whitespace() || b == b',' || b == b';';
            if self.line_start && !b.is_ascii_whitespace() {
                self.line_start = false;
                if b == b'#' {
                    self.comment = true;
                    continue;
                }
            }
            let house = matches!(b, b'A'..=b'F' | b'a'..=b'f');
            if separator {
                self.end_word();
            } else if self.run && house {
                self.take(char::from(b).to_string());
            } else if self.run {
                // The run ends: what follows is a word of its own.
                self.run = false;
                self.word.push(b);
            } else if self.word.len() < MAX_RECORD_WORD {
                self.word.push(b);
            } else if house && self.word.iter().all(|c| matches!(c, b'A'..=b'F' | b'a'..=b'f')) {
                let word = std::mem::take(&mut self.word);
                for &c in &word {
                    self.take(char::from(c).to_string());
                }
                self.take(char::from(b).to_string());
                self.run = true;
            } else {
                // A word longer than any move: the first bad move.
                let word = std::mem::take(&mut self.word);
                let text = String::from_utf8_lossy(&word[..20]);
                match self.game.end() {
                    // `annotate` says that the game was over.
                    Some(_) => self.moves.push(text.into_owned()),
                    None => {
                        let ply = self.moves.len() + 1;
                        self.error = Some(Error::Usage(format!(
                            "ply {ply} ({} to move): {}... is not a move: it is a word of more than {MAX_RECORD_WORD} bytes",
                            self.game.side().title(),
                            oware::position::excerpt(&text)
                        )));
                    }
                }
                self.done = true;
            }
        }
    }

    /// The moves read, up to the first the game does not allow.
    ///
    /// # Errors
    /// [`Error::Usage`] for a word longer than any move or a record of more than
    /// [`MAX_RECORD_PLIES`] plies.
    fn finish(mut self) -> Result<Vec<String>> {
        self.end_word();
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.moves),
        }
    }

    /// The word read is over: its moves are taken.
    fn end_word(&mut self) {
        self.run = false;
        if self.word.is_empty() || self.done {
            self.word.clear();
            return;
        }
        let word = String::from_utf8_lossy(&self.word).into_owned();
        self.word.clear();
        for m in record_moves(&word) {
            self.take(m);
        }
    }

    /// One move of the record: kept; the reading stops after one the game does not allow.
    fn take(&mut self, m: String) {
        if self.done {
            return;
        }
        if self.moves.len() == MAX_RECORD_PLIES {
            self.error = Some(Error::Usage(format!("the record has more than {MAX_RECORD_PLIES} plies: a longer record is refused")));
            self.done = true;
            return;
        }
        let legal = self.game.end().is_none() && oware::position::parse_move(&m, self.game.side()).and_then(|pit| self.game.play(pit)).is_ok();
        self.moves.push(m);
        if !legal {
            self.done = true;
        }
    }
}

/// The engine's view of a ply above the layers.
#[derive(Clone, Debug, Serialize)]
struct EngineNote {
    /// The position's score for the side moving, stones (the board's, as the values).
    score: f64,
    /// The score of the move played.
    move_score: f64,
    /// Score thrown away by the move played (0 for the engine's best).
    error: f64,
    exact: bool,
    depth: u32,
    best_houses: Vec<String>,
}

/// Searches every ply whose position the layers do not cover, `ms` milliseconds each.
fn engine_notes(args: &DatabaseArgs, db: &Database, g: &AnnotatedGame, ms: u64) -> Result<Vec<Option<EngineNote>>> {
    let search = SearchArgs { movetime: Some(ms), depth: None, nodes: None, threads: None, hash: DEFAULT_HASH_MB, max_table: None };
    let engine = open_engine(args, db.rules(), &search, false)?;
    let limits = search.limits(true);
    let mut notes = Vec::with_capacity(g.plies.len());
    // The game replayed: its positions since the last capture go into each search (a move
    // that repeats one is scored as the rules end the game there).
    let mut game = Game::from_position(db.rules(), g.start, g.start_side, g.start_captured);
    for p in &g.plies {
        let history = game.history().to_vec();
        // The record was played through the same rules by `annotate`: this cannot fail, but
        // an error is an error.
        game.play(p.pit)?;
        if p.move_value.is_some() || p.before.game_over() {
            notes.push(None);
            continue;
        }
        engine.clear();
        let root = Root { position: p.before.position, captured: None, history };
        let r = engine.search(&root, &limits, &Control::new(), &mut |_| {})?;
        let Some(best) = r.best_pit else {
            notes.push(None);
            continue;
        };
        let played = r.moves.iter().find(|m| m.pit == p.pit).map_or(r.score, |m| m.score);
        let best_score = r.moves.iter().find(|m| m.pit == best).map_or(r.score, |m| m.score);
        let best_houses = r.moves.iter().filter(|m| m.score == best_score).map(|m| house(p.side, m.pit).to_string()).collect();
        notes.push(Some(EngineNote {
            score: f64::from(r.score) / 100.0,
            move_score: f64::from(played) / 100.0,
            error: f64::from((r.score - played).max(0)) / 100.0,
            exact: r.exact,
            depth: r.depth,
            best_houses,
        }));
    }
    Ok(notes)
}

fn verdict_text(v: &Verdict) -> String {
    if v.score_known {
        format!("{} {}:{}", winner_words(v, "draw"), v.south, v.north)
    } else {
        format!("{} (the final score under the 25-stone rule is not solved here)", winner_words(v, "draw"))
    }
}

fn not_covered(layer: Option<u32>) -> String {
    match layer {
        Some(n) => format!("not covered (layer {n})"),
        None => "not covered".to_string(),
    }
}

fn text_report(db: &Database, g: &AnnotatedGame, notes: &[Option<EngineNote>]) -> String {
    let mut s = String::new();
    let from = if g.start == Position::start() && g.start_side == Side::South { "the start position".to_string() } else { side_form(&g.start, g.start_side) };
    let captured = match g.start_captured {
        Some(c) => format!("captured {}:{} (South:North)", c.south, c.north),
        None => "captured stones unknown (--captured S:N gives the final score)".to_string(),
    };
    s.push_str(&format!("game from {from}, rules {}\n{captured}\n", db.rules()));
    if !g.plies.is_empty() {
        s.push_str("      value: of the position before the move, for the side moving; played: the\n");
        s.push_str("      move's value; error: value thrown away; score and result after the move\n");
        s.push_str("ply  side   move  value  played  error  best       takes  score  from here\n");
    }
    let mut decided = false;
    for (i, p) in g.plies.iter().enumerate() {
        let known = g.start_captured.is_some();
        s.push_str(&ply_row(p, known, notes.get(i).and_then(Option::as_ref)));
        if !decided && known {
            let after = score_after(p);
            for side in [Side::South, Side::North] {
                if after.is_some_and(|c| c.of(side) > TOTAL_STONES / 2) {
                    s.push_str(&format!("      {side} has captured {}: the game is decided (25-stone rule)\n", after.map_or(0, |c| c.of(side))));
                    decided = true;
                }
            }
        }
    }
    if notes.iter().any(Option::is_some) {
        s.push_str("      ~ the search engine's estimate above the built layers (no ~ when it proved it)\n");
    }
    s.push('\n');
    s.push_str(&end_text(g));
    s
}

/// A score of the engine's, marked `~` unless proven.
fn engine_score(x: f64, exact: bool) -> String {
    let t = if x.fract() == 0.0 { format!("{x:+}") } else { format!("{x:+.1}") };
    if exact {
        t
    } else {
        format!("~{t}")
    }
}

/// The score after a ply, when known.
fn score_after(p: &Ply) -> Option<Captured> {
    let mut c = p.captured_before;
    match p.result {
        MoveResult::Continues { captured, .. } => c.add(p.side, u32::from(captured)),
        MoveResult::EndsGame => return None,
    }
    Some(c)
}

/// One ply's row; `known`: whether the captured stones are known; `note`: the engine's view
/// where the layers do not cover the ply.
fn ply_row(p: &Ply, known: bool, note: Option<&EngineNote>) -> String {
    let q = |v: Option<i8>| v.map_or("?".to_string(), signed);
    let mut error = match p.error {
        Some(0) => "best".to_string(),
        Some(e) => format!("-{e}"),
        None => "?".to_string(),
    };
    let best: Vec<String> = p.before.best().iter().map(|&b| house(p.side, b).to_string()).collect();
    let mut best = if p.before.value.is_some() { best.join(" ") } else { "?".to_string() };
    let (mut value, mut played) = (q(p.before.value), q(p.move_value));
    if let Some(e) = note {
        value = engine_score(e.score, e.exact);
        played = engine_score(e.move_score, false);
        error = if e.error == 0.0 { "~best".to_string() } else { engine_score(-e.error, false) };
        best = e.best_houses.join(" ");
    }
    let (takes, score) = match (p.result, score_after(p)) {
        (MoveResult::Continues { captured, .. }, Some(c)) if known => (captured.to_string(), format!("{}:{}", c.south, c.north)),
        (MoveResult::Continues { captured, .. }, _) => (captured.to_string(), "?".to_string()),
        _ => ("end".to_string(), String::new()),
    };
    let result = match p.verdict {
        Some(v) => verdict_text(&v),
        None => match p.move_value {
            None => not_covered(p.before.missing),
            // The captured stones are unknown: the board's stones only.
            Some(v) => format!("{} {} on the board", p.side, signed(v)),
        },
    };
    format!(
        "{:>3}  {:<5}  {:<4}  {:>5}  {:>6}  {:>5}  {:<11} {:>3}  {:>5}  {result}\n",
        p.number,
        p.side.title(),
        p.house,
        value,
        played,
        error,
        best,
        takes,
        score
    )
}

fn end_text(g: &AnnotatedGame) -> String {
    let side = g.end_side;
    let mut s = String::new();
    let n = g.plies.len();
    s.push_str(&format!("after {n} pl{}:\n", if n == 1 { "y" } else { "ies" }));
    s.push_str(&g.end.position.drawing_sides(side));
    if let Some(c) = g.end_captured {
        s.push_str(&format!("captured {}:{} (South:North)\n", c.south, c.north));
    }
    if g.over {
        s.push_str("the game is over");
        match (g.verdict, g.end.game_over(), g.end.value) {
            (Some(v), _, _) => s.push_str(&format!(": {}\n", verdict_text(&v))),
            (None, true, Some(v)) => {
                let n = g.end.position.stones();
                let split = oware::probe::Split::new(n, v);
                s.push_str(&format!(": {side} cannot move; of the {n} stones left {side} gets {}, {} {}\n", split.mover, side.other(), split.opponent));
            }
            _ => s.push('\n'),
        }
        return s;
    }
    match g.end.value {
        Some(v) => {
            let best: Vec<String> = g.end.best().iter().map(|&b| house(side, b).to_string()).collect();
            s.push_str(&format!("{side} to move, value {}, best move{} {}", signed(v), if best.len() == 1 { "" } else { "s" }, best.join(" ")));
            match g.verdict {
                Some(vd) => s.push_str(&format!("; best play ends {}\n", verdict_text(&vd))),
                None => s.push_str("; the captured stones are unknown\n"),
            }
        }
        None => s.push_str(&format!("{side} to move: {}\n", not_covered(g.end.missing))),
    }
    s
}

/// `oware game --json`.
#[derive(Serialize)]
struct GameDoc {
    schema_version: u32,
    rules: &'static str,
    start: PlaceDoc,
    /// Stones captured before the record, `{"south", "north"}`, or null when unknown.
    captured: Option<Captured>,
    plies: Vec<PlyDoc>,
    end: EndDoc,
}

/// Best play's end, every stone counted: the final stones are null where the 25-stone rule can
/// end the game before the board is played out and its value is not solved; the winner is
/// always given.
#[derive(Serialize)]
struct FinalDoc {
    south: Option<f64>,
    north: Option<f64>,
    winner: Option<&'static str>,
}

impl From<Verdict> for FinalDoc {
    fn from(v: Verdict) -> Self {
        FinalDoc { south: v.score_known.then_some(v.south), north: v.score_known.then_some(v.north), winner: v.winner }
    }
}

#[derive(Serialize)]
struct PlyDoc {
    ply: usize,
    side: &'static str,
    house: String,
    pit: u8,
    before: PlaceDoc,
    /// The value of the position before the move, for the side moving (null: not covered).
    value: Option<i8>,
    /// The move's value (null: not covered).
    move_value: Option<i8>,
    /// Value thrown away by the move (0 for a best move; null: not covered).
    error: Option<i8>,
    best_houses: Vec<String>,
    /// Stones the move captured (null for a move that ends the game).
    captured: Option<u8>,
    /// Captured stones after the move (null when unknown or the move ended the game).
    score: Option<Captured>,
    /// Best play's end from the position after the move (null: not covered or score unknown).
    #[serde(rename = "final")]
    final_score: Option<FinalDoc>,
    /// The lowest layer needed and not built, when some value is unknown.
    missing_layer: Option<u32>,
    /// With --analyse, above the layers: the engine's score, move score, error, exactness,
    /// depth and best houses.
    #[serde(skip_serializing_if = "Option::is_none")]
    engine: Option<EngineNote>,
}

#[derive(Serialize)]
struct EndDoc {
    #[serde(flatten)]
    place: PlaceDoc,
    game_over: bool,
    value: Option<i8>,
    best_houses: Vec<String>,
    score: Option<Captured>,
    #[serde(rename = "final")]
    final_score: Option<FinalDoc>,
    missing_layer: Option<u32>,
}

fn best_houses(a: &Probed, side: Side) -> Vec<String> {
    a.best().iter().map(|&b| house(side, b).to_string()).collect()
}

fn doc(db: &Database, g: &AnnotatedGame, notes: &[Option<EngineNote>]) -> GameDoc {
    let plies = g
        .plies
        .iter()
        .enumerate()
        .map(|(i, p)| PlyDoc {
            engine: notes.get(i).cloned().flatten(),
            ply: p.number,
            side: p.side.name(),
            house: p.house.to_string(),
            pit: p.pit,
            before: PlaceDoc::new(&p.before.position, p.side),
            value: p.before.value,
            move_value: p.move_value,
            error: p.error,
            best_houses: best_houses(&p.before, p.side),
            captured: match p.result {
                MoveResult::Continues { captured, .. } => Some(captured),
                MoveResult::EndsGame => None,
            },
            score: if g.start_captured.is_some() { score_after(p) } else { None },
            final_score: p.verdict.map(FinalDoc::from),
            missing_layer: p.before.missing,
        })
        .collect();
    GameDoc {
        schema_version: SCHEMA_VERSION,
        rules: db.rules().name(),
        start: PlaceDoc::new(&g.start, g.start_side),
        captured: g.start_captured,
        plies,
        end: EndDoc {
            place: PlaceDoc::new(&g.end.position, g.end_side),
            game_over: g.over,
            value: g.end.value,
            best_houses: best_houses(&g.end, g.end_side),
            score: g.end_captured,
            final_score: g.verdict.map(FinalDoc::from),
            missing_layer: g.end.missing,
        },
    }
}
