//! One report of a position for `query`, `serve` and `play`: the JSON document (schema
//! [`SCHEMA_VERSION`]) and the text for people, both with the side to move, the absolute board,
//! house names and results.

use oware::game::{Captured, Verdict, Wdl};
use oware::line::{PvEnd, Solution};
use oware::position::{house, Position, Side};
use oware::probe::{Database, MoveResult, MoveValue, Split};
use oware::search::GameValues;
use oware::Ruleset;
use serde::{Serialize, Serializer};

use std::sync::OnceLock;

use crate::output::SCHEMA_VERSION;

/// A stone share: an integer when whole, else `x.5`.
#[derive(Clone, Copy)]
pub(crate) struct Share(pub f64);

impl Serialize for Share {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if self.0.fract() == 0.0 {
            s.serialize_i64(self.0 as i64)
        } else {
            s.serialize_f64(self.0)
        }
    }
}

/// The final split of the board's stones, mover first.
#[derive(Serialize)]
pub(crate) struct SplitDoc {
    mover: Share,
    opponent: Share,
}

impl From<Split> for SplitDoc {
    fn from(s: Split) -> Self {
        SplitDoc { mover: Share(s.mover), opponent: Share(s.opponent) }
    }
}

/// The values under the 25-stone rule of one ruleset, shared by every report of the process
/// (what they solve is kept: a batch or a server solves each layer with quotas once).
pub(crate) fn game_values(rules: Ruleset) -> &'static GameValues {
    static ALL: OnceLock<Vec<GameValues>> = OnceLock::new();
    let all = ALL.get_or_init(|| Ruleset::ALL.into_iter().map(GameValues::new).collect());
    &all[Ruleset::ALL.iter().position(|&r| r == rules).unwrap_or(0)]
}

/// Best play's end with the captured stones counted.
#[derive(Serialize)]
pub(crate) struct FinalDoc {
    /// The final stones, the 25-stone rule counted; null where the rule can change the
    /// layer's value and its value is not solved (more than 10 stones).
    south: Option<Share>,
    north: Option<Share>,
    /// `win`, `draw` or `loss` for the player to move (the rule never changes who wins).
    result: Wdl,
    /// `south`, `north`, or null for a draw.
    winner: Option<&'static str>,
}

impl FinalDoc {
    /// The document of `pos` (`side` to move), whose layer value is `value`, after `c`.
    pub(crate) fn new(rules: Ruleset, c: Captured, pos: &Position, value: i8, side: Side) -> FinalDoc {
        let v = Verdict::in_game(game_values(rules), c, pos, value, side);
        let known = |x: f64| v.score_known.then_some(Share(x));
        FinalDoc { south: known(v.south), north: known(v.north), result: v.result_for(side), winner: v.winner }
    }
}

/// One move of a report.
#[derive(Serialize)]
pub(crate) struct MoveDoc {
    /// 0..5, mover-first.
    pub(crate) pit: u8,
    /// `A`..`F` (South) or `a`..`f` (North).
    pub(crate) house: String,
    /// Null for a move that ends the game.
    pub(crate) captured: Option<u8>,
    pub(crate) ends_game: bool,
    /// Mover-first for the opponent; null for a move that ends the game.
    pub(crate) child: Option<[u8; 12]>,
    pub(crate) value: i8,
    /// `win`, `draw` or `loss` for the mover: with the captured stones when they were given,
    /// else of the stones on the board (the value's sign).
    pub(crate) result: Wdl,
    /// Whether the move keeps the position's value.
    pub(crate) best: bool,
    /// The depth to capture after the move: 0 when it captures or ends the game, else the
    /// child's; null when the child's value is 0 or its depths are not built.
    pub(crate) dtc: Option<u16>,
}

impl MoveDoc {
    fn new(m: &MoveValue, side: Side, value: i8, result: Wdl) -> MoveDoc {
        let (captured, child) = match &m.result {
            MoveResult::Continues { captured, child } => (Some(*captured), Some(*child.board())),
            MoveResult::EndsGame => (None, None),
        };
        MoveDoc {
            pit: m.pit,
            house: house(side, m.pit).to_string(),
            captured,
            ends_game: m.result == MoveResult::EndsGame,
            child,
            value: m.value,
            result,
            best: m.value == value,
            dtc: m.dtc,
        }
    }
}

/// One ply of the principal variation: the position it starts from, its value, the move and
/// what it captured.
#[derive(Serialize)]
pub(crate) struct PlyDoc {
    ply: usize,
    /// The side that moves.
    side: &'static str,
    /// The position the move is played from, mover-first.
    position: [u8; 12],
    /// The same, South's houses first.
    absolute: [u8; 12],
    /// The value of `position` for the side that moves.
    value: i8,
    pit: u8,
    house: String,
    /// Null for a move that ends the game.
    captured: Option<u8>,
    ends_game: bool,
    /// The position after the move, mover-first for the opponent (null when the game ends);
    /// the next ply's `position`.
    child: Option<[u8; 12]>,
}

/// Why the best line stops.
#[derive(Serialize)]
pub(crate) struct PvEndDoc {
    /// `game_over`, `endless_play`, `repetition`, `cycle` or `ply_limit`.
    reason: &'static str,
    /// 1-based ply whose starting position was reached again (repetition, cycle).
    #[serde(skip_serializing_if = "Option::is_none")]
    first_ply: Option<usize>,
}

/// A position with its side to move, as every JSON document shows one.
#[derive(Serialize)]
pub(crate) struct PlaceDoc {
    /// Mover-first counts.
    pub(crate) position: [u8; 12],
    /// `south` or `north` (South when the input did not name the side).
    pub(crate) to_move: &'static str,
    /// South's houses A..F, then North's a..f.
    pub(crate) absolute: [u8; 12],
    /// The side form, `S: .. N: .. S`, which reads back with the side to move.
    pub(crate) side_form: String,
    pub(crate) stones: u32,
}

impl PlaceDoc {
    /// The document of `p` with `side` to move.
    pub(crate) fn new(p: &Position, side: Side) -> PlaceDoc {
        PlaceDoc { position: *p.board(), to_move: side.name(), absolute: p.absolute(side), side_form: side_form(p, side), stones: p.stones() }
    }
}

/// Who wins at best play's end: `South wins`, `North wins`, or `draw` (the caller's word).
pub(crate) fn winner_words(v: &Verdict, draw: &'static str) -> &'static str {
    match v.winner {
        Some("south") => "South wins",
        Some(_) => "North wins",
        None => draw,
    }
}

/// The JSON report of one position (see `query --json` in docs/cli.md, and docs/server.md).
#[derive(Serialize)]
pub(crate) struct ReportDoc {
    pub(crate) schema_version: u32,
    pub(crate) rules: &'static str,
    pub(crate) format: &'static str,
    #[serde(flatten)]
    pub(crate) place: PlaceDoc,
    pub(crate) value: i8,
    /// `win`, `draw` or `loss` for the player to move (see `MoveDoc::result`).
    pub(crate) result: Wdl,
    pub(crate) split: SplitDoc,
    /// Stones captured so far (`{"south", "north"}`), when given.
    #[serde(rename = "score", skip_serializing_if = "Option::is_none")]
    pub(crate) captured: Option<Captured>,
    /// With `captured`: best play's end, every stone counted (25 or more wins).
    #[serde(rename = "final", skip_serializing_if = "Option::is_none")]
    pub(crate) final_score: Option<FinalDoc>,
    pub(crate) game_over: bool,
    /// Plies best play takes to the value's first capture (or the game's end); null when the
    /// value is 0 or the depths are not built (`oware build --dtc`).
    pub(crate) dtc: Option<u16>,
    pub(crate) moves: Vec<MoveDoc>,
    pub(crate) best_moves: Vec<u8>,
    pub(crate) best_houses: Vec<String>,
    pub(crate) principal_variation: Vec<PlyDoc>,
    pub(crate) pv_end: PvEndDoc,
}

/// The side form of a position: `S: A..F  N: a..f  S|N`.
pub(crate) fn side_form(pos: &Position, side: Side) -> String {
    let a = pos.absolute(side);
    let row = |r: &[u8]| r.iter().map(u8::to_string).collect::<Vec<_>>().join(" ");
    let mark = match side {
        Side::South => "S",
        Side::North => "N",
    };
    format!("S: {}  N: {}  {mark}", row(&a[..6]), row(&a[6..]))
}

/// The result of value `value` for the mover of `pos`: with `captured`, the final score's,
/// else the value's sign. The 25-stone rule can change the final score, never who wins: a side
/// sure of 25 stones or more when the board is played out reaches 25 first.
fn result_of(pos: &Position, side: Side, value: i8, captured: Option<Captured>) -> Wdl {
    match captured {
        Some(c) => Verdict::new(c, pos.stones(), value, side).result_for(side),
        None => Wdl::of_value(value),
    }
}

/// Best pits of an analysis: the moves that keep the value and, when the depths to capture are
/// built, realize it soonest (the winner's least depth, the loser's greatest), as
/// [`Database::best_moves`].
pub(crate) fn best_pits(a: &Solution) -> Vec<u8> {
    let keeping: Vec<MoveValue> = a.moves.iter().filter(|m| m.value == a.value).copied().collect();
    let depth = a.dtc.and_then(|d| d.checked_sub(1));
    keeping.iter().filter(|m| depth.is_none() || m.dtc == depth).map(|m| m.pit).collect()
}

/// The JSON report of `pos` (mover-first, `side` to move) from its analysis.
pub(crate) fn report(db: &Database, pos: &Position, side: Side, a: &Solution, captured: Option<Captured>) -> ReportDoc {
    let mut ply_side = side;
    let pv = a
        .line
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let doc = PlyDoc {
                ply: i + 1,
                side: ply_side.name(),
                position: *s.position.board(),
                absolute: s.position.absolute(ply_side),
                value: s.value,
                pit: s.played.pit,
                house: house(ply_side, s.played.pit).to_string(),
                captured: s.played.captured(),
                ends_game: s.played.result == MoveResult::EndsGame,
                child: s.played.child().map(|c| *c.board()),
            };
            ply_side = ply_side.other();
            doc
        })
        .collect();
    let pv_end = match a.line.end {
        PvEnd::Repetition { first_ply } => PvEndDoc { reason: "repetition", first_ply: Some(first_ply + 1) },
        PvEnd::Cycle { first_ply } => PvEndDoc { reason: "cycle", first_ply: Some(first_ply + 1) },
        PvEnd::GameOver => PvEndDoc { reason: "game_over", first_ply: None },
        PvEnd::EndlessPlay => PvEndDoc { reason: "endless_play", first_ply: None },
        PvEnd::PlyLimit => PvEndDoc { reason: "ply_limit", first_ply: None },
    };
    let best = best_pits(a);
    ReportDoc {
        schema_version: SCHEMA_VERSION,
        rules: db.rules().name(),
        format: db.format().name(),
        place: PlaceDoc::new(pos, side),
        value: a.value,
        result: result_of(pos, side, a.value, captured),
        split: Split::of(pos, a.value).into(),
        captured,
        final_score: captured.map(|c| FinalDoc::new(db.rules(), c, pos, a.value, side)),
        game_over: a.moves.is_empty(),
        dtc: a.dtc,
        moves: a.moves.iter().map(|m| MoveDoc::new(m, side, a.value, result_of(pos, side, m.value, captured))).collect(),
        best_houses: best.iter().map(|&p| house(side, p).to_string()).collect(),
        best_moves: best,
        principal_variation: pv,
        pv_end,
    }
}

/// `+3`, `0`, `-2`.
pub(crate) fn signed(v: i8) -> String {
    if v > 0 {
        format!("+{v}")
    } else {
        v.to_string()
    }
}

/// The text of a best line: one row per ply with the position it starts from (side form), its
/// value, the move and its capture, then why it stops.
pub(crate) fn line_text(a: &Solution, side: Side) -> String {
    let mut s = String::new();
    let steps = &a.line.steps;
    let mut ply_side = side;
    for (i, step) in steps.iter().enumerate() {
        let what = match step.played.captured() {
            Some(0) => String::new(),
            Some(c) => format!(", takes {c}"),
            None => ", ends the game".to_string(),
        };
        s.push_str(&format!(
            "{:>4}. {}  value {:>3}  plays {}{what}\n",
            i + 1,
            side_form(&step.position, ply_side),
            signed(step.value),
            house(ply_side, step.played.pit),
        ));
        ply_side = ply_side.other();
    }
    let end = match a.line.end {
        PvEnd::GameOver => "the game is over".to_string(),
        PvEnd::EndlessPlay => {
            let from = if steps.is_empty() { "endless play from here" } else { "then endless play" };
            format!("{from}, value 0: neither side can force a capture; the stones left are split evenly")
        }
        PvEnd::Repetition { first_ply } => {
            format!("the position after ply {} repeats the one before ply {}: endless play, the stones left are split evenly", steps.len(), first_ply + 1)
        }
        PvEnd::Cycle { first_ply } => format!(
            "the position after ply {} repeats the one before ply {} although its value is not 0: \
             this database holds values only and cannot always show the forcing line; the value itself is exact",
            steps.len(),
            first_ply + 1
        ),
        PvEnd::PlyLimit => format!("stopped after {} plies (--max-plies)", steps.len()),
    };
    s.push_str(&format!("      {end}\n"));
    s
}

/// The text report: the board with its side labels, the value and result, every move by house,
/// the best moves and the best line; `extra` (the bounds' lines) goes right after the value.
pub(crate) fn text(db: &Database, pos: &Position, side: Side, a: &Solution, captured: Option<Captured>, extra: Option<&str>) -> String {
    let n = pos.stones();
    let split = Split::of(pos, a.value);
    let mut s = pos.drawing_sides(side);
    s.push('\n');
    let plural = if n == 1 { "" } else { "s" };
    s.push_str(&format!("position {} ({n} stone{plural}), rules {}, {side} to move\n", side_form(pos, side), db.rules()));
    s.push_str(&format!(
        "value {}: with best play {side} ends with {} of the {n} stone{plural} on the board, {} {}\n",
        signed(a.value),
        split.mover,
        side.other(),
        split.opponent
    ));
    if let Some(c) = captured {
        let v = Verdict::in_game(game_values(db.rules()), c, pos, a.value, side);
        let winner = winner_words(&v, "a draw");
        if v.score_known {
            s.push_str(&format!("with {}:{} captured (South:North), best play ends {}:{}: {winner}\n", c.south, c.north, v.south, v.north));
        } else {
            s.push_str(&format!(
                "with {}:{} captured (South:North), best play gives {winner}; the final score under the 25-stone rule is not solved here (above {} stones)\n",
                c.south,
                c.north,
                GameValues::MAX_STONES
            ));
        }
    }
    if let Some(d) = a.dtc {
        let plural = if d == 1 { "" } else { "s" };
        s.push_str(&format!("depth to capture {d}: best play takes {d} ply{plural} to the value's first capture or the game's end\n"));
    }
    s.push_str(extra.unwrap_or(""));
    if a.moves.is_empty() {
        s.push_str("no legal move: the game is over\n");
        return s;
    }
    s.push_str("moves (value = captured - value of the position after the move):\n");
    for m in &a.moves {
        let what = match m.captured() {
            Some(c) => format!("takes {c:>2}"),
            None => "ends the game".to_string(),
        };
        let result = result_of(pos, side, m.value, captured).name();
        let best = if m.value == a.value { "  best" } else { "" };
        let dtc = match (a.dtc, m.dtc) {
            (Some(_), Some(d)) => format!(", then {d} to capture"),
            _ => String::new(),
        };
        s.push_str(&format!("  {} (pit {}): {what}, value {:>3}  {result}{best}{dtc}\n", house(side, m.pit), m.pit, signed(m.value)));
    }
    let best: Vec<String> = best_pits(a).iter().map(|&p| house(side, p).to_string()).collect();
    s.push_str(&format!("best move{}: {}\n", if best.len() == 1 { "" } else { "s" }, best.join(", ")));
    if a.dtc.is_some() {
        s.push_str("best line (following the depths to capture: the winner hurries, the loser delays):\n");
    } else {
        s.push_str("best line (a capture or the end of the game when one is best, else the shortest way to one):\n");
    }
    s.push_str(&line_text(a, side));
    s
}
