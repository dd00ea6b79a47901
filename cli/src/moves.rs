//! `oware moves`: the legal moves of a position, what each captures and where it leads.

use clap::Args;
use oware::position::{house, Side};
use oware::rules::{stones, Outcome};
use oware::{Position, Result, Ruleset};
use serde::Serialize;

use crate::args::{reword, PositionArgs, PositionCommandArgs};
use crate::output::{Stdout, SCHEMA_VERSION};
use crate::show::draw;

/// Arguments of `oware moves`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("json", "Print one JSON object (and nothing else) on stdout, for programs"), ("quiet", "No messages besides errors (this command prints none)")])))]
pub(crate) struct MovesArgs {
    #[command(flatten)]
    position: PositionArgs,
    #[command(flatten)]
    options: PositionCommandArgs,
}

/// How `value` (mover's stones minus the opponent's, over `n` stones) splits the stones:
/// `(mover's, opponent's)`.
fn split(n: u32, value: i8) -> (i64, i64) {
    let n = i64::from(n);
    let v = i64::from(value);
    ((n + v) / 2, (n - v) / 2)
}

/// Lists the legal moves of the given position (or its ending value when it has none).
///
/// # Errors
/// [`Error::InvalidPosition`] / [`Error::Usage`] for a missing or malformed position;
/// [`Error::Io`] when stdout cannot be written.
pub(crate) fn run(a: MovesArgs) -> Result<()> {
    let (pos, side) = a.position.required_placed()?;
    let rules = a.options.rules.ruleset();
    let mut out = Stdout::new();
    if a.options.json.json {
        out.json(&json_report(rules, &pos, side.unwrap_or(Side::South)))
    } else {
        out.write(&text_report(rules, &pos, side))
    }
}

/// The human-readable listing: the drawing, then one line per legal move.
fn text_report(rules: Ruleset, pos: &Position, side: Option<Side>) -> String {
    let board = pos.board();
    let n = stones(board);
    let moves = rules.moves(board);
    let mut s = draw(pos, side);
    let side = side.unwrap_or(Side::South);
    s.push('\n');
    s.push_str(&format!("position {pos} ({n} stones), rules {rules}\n"));
    if let Some(v) = moves.ending() {
        let (mine, theirs) = split(n, v);
        s.push_str(&format!(
            "no legal move: the game is over, value {v:+} for the player to move \
             (he gets {mine} stones, the opponent {theirs})\n"
        ));
        return s;
    }
    s.push_str(&format!("{} legal move{}:\n", moves.len(), if moves.len() == 1 { "" } else { "s" }));
    for m in moves.as_slice() {
        match m.outcome {
            Outcome::Child { captured, child } => {
                // The child is in mover-first form for the opponent, who moves next.
                let child_pos = Position::new(child).map(|p| p.to_string()).unwrap_or_else(|_| format!("{child:?}"));
                s.push_str(&format!(
                    "  {} (pit {}): captures {captured:>2} -> {child_pos}  ({} to move, {} stones)\n",
                    house(side, m.pit),
                    m.pit,
                    side.other(),
                    stones(&child)
                ));
            }
            Outcome::End { value } => {
                let (mine, theirs) = split(n, value);
                s.push_str(&format!(
                    "  {} (pit {}): ends the game, value {value:+} for {side} (he gets {mine} stones, {} {theirs})\n",
                    house(side, m.pit),
                    m.pit,
                    side.other()
                ));
            }
        }
    }
    s
}

/// One move in `oware moves --json`.
#[derive(Serialize, Debug)]
struct MoveDoc {
    /// 0..5, mover-first.
    pit: u8,
    /// The same move as a house: `A`..`F` when South moves, `a`..`f` when North does (as in
    /// `query --json`).
    house: String,
    ends_game: bool,
    /// Stones captured (null for a move that ends the game).
    captured: Option<u8>,
    /// The position after the move, mover-first for the opponent (null when the game ends).
    child: Option<[u8; 12]>,
    /// For a move that ends the game: the mover's final stones minus the opponent's.
    value: Option<i8>,
    mover_stones: Option<i64>,
    opponent_stones: Option<i64>,
}

/// The ending of a position without legal move.
#[derive(Serialize, Debug)]
struct EndingDoc {
    value: i8,
    mover_stones: i64,
    opponent_stones: i64,
}

/// `oware moves --json`: `{"schema_version", "rules", "position", "stones", "moves", "ending"}`.
#[derive(Serialize, Debug)]
struct MovesDoc {
    schema_version: u32,
    rules: &'static str,
    /// Mover-first counts.
    position: [u8; 12],
    stones: u32,
    moves: Vec<MoveDoc>,
    /// Null, or the ending when the position has no legal move.
    ending: Option<EndingDoc>,
}

/// The machine-readable report, with `side` to move (South when the input did not name it).
fn json_report(rules: Ruleset, pos: &Position, side: Side) -> MovesDoc {
    let board = pos.board();
    let n = stones(board);
    let moves = rules.moves(board);
    let list = moves
        .as_slice()
        .iter()
        .map(|m| match m.outcome {
            Outcome::Child { captured, child } => MoveDoc {
                pit: m.pit,
                house: house(side, m.pit).to_string(),
                ends_game: false,
                captured: Some(captured),
                child: Some(child),
                value: None,
                mover_stones: None,
                opponent_stones: None,
            },
            Outcome::End { value } => {
                let (mine, theirs) = split(n, value);
                MoveDoc {
                    pit: m.pit,
                    house: house(side, m.pit).to_string(),
                    ends_game: true,
                    captured: None,
                    child: None,
                    value: Some(value),
                    mover_stones: Some(mine),
                    opponent_stones: Some(theirs),
                }
            }
        })
        .collect();
    let ending = moves.ending().map(|v| {
        let (mine, theirs) = split(n, v);
        EndingDoc { value: v, mover_stones: mine, opponent_stones: theirs }
    });
    MovesDoc { schema_version: SCHEMA_VERSION, rules: rules.name(), position: *board, stones: n, moves: list, ending }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oware::rules::GrandSlam;
    use serde_json::{json, Value};

    #[test]
    fn split_adds_up() {
        assert_eq!(split(12, 2), (7, 5));
        assert_eq!(split(7, -7), (0, 7));
        assert_eq!(split(0, 0), (0, 0));
    }

    fn doc(rules: Ruleset, pos: &Position) -> Value {
        serde_json::to_value(json_report(rules, pos, Side::South)).unwrap()
    }

    #[test]
    fn json_lists_moves_and_endings() {
        let start = Position::start();
        let v = doc(Ruleset::Awari, &start);
        assert_eq!(v["schema_version"], SCHEMA_VERSION);
        assert_eq!(v["stones"], 48);
        assert_eq!(v["moves"].as_array().map(Vec::len), Some(6));
        assert_eq!(v["moves"][0]["child"], json!([4, 4, 4, 4, 4, 4, 0, 5, 5, 5, 5, 4]));
        assert_eq!(v["ending"], Value::Null);
        let houses: Vec<&str> = v["moves"].as_array().unwrap().iter().map(|m| m["house"].as_str().unwrap()).collect();
        assert_eq!(houses, ["A", "B", "C", "D", "E", "F"]);
        // North to move: the same moves, named by North's houses.
        let north = serde_json::to_value(json_report(Ruleset::Awari, &start, Side::North)).unwrap();
        assert_eq!(north["moves"][0]["house"], "a");
        assert_eq!(north["moves"][5]["house"], "f");

        // Remainder-to-opponent grand slam: 7 captured of 12, the 5 left go to the opponent.
        let slam = Position::new([1, 1, 2, 0, 4, 0, 2, 1, 1, 0, 0, 0]).unwrap();
        let v = doc(Ruleset::Abapa(GrandSlam::RemainderToOpponent), &slam);
        let last = &v["moves"][3];
        assert_eq!(last["pit"], 4);
        assert_eq!(last["house"], "E");
        assert_eq!(last["ends_game"], true);
        assert_eq!(last["value"], 2);
        assert_eq!((last["mover_stones"].as_i64(), last["opponent_stones"].as_i64()), (Some(7), Some(5)));

        // No legal move: abapa, the opponent cannot be fed, the mover takes his 4.
        let end = Position::new([0, 1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        let v = doc(Ruleset::Abapa(GrandSlam::NoCapture), &end);
        assert_eq!(v["moves"], json!([]));
        assert_eq!(v["ending"], json!({"value": 4, "mover_stones": 4, "opponent_stones": 0}));
        let t = text_report(Ruleset::Abapa(GrandSlam::NoCapture), &end, None);
        assert!(t.contains("no legal move") && t.contains("+4"), "{t}");
    }
}
