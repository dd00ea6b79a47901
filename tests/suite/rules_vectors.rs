//! The move generator against OpenSpiel's oware: every record of
//! `tests/data/openspiel-oware.jsonl` under `abapa` (grand slams capture nothing).
//!
//! For each position: the set of legal moves must be the same; for each child that OpenSpiel
//! continues, the sown and captured board and the stones captured (difference of the scores) must
//! be identical. OpenSpiel ends a game as soon as a score passes 24 and then gives each side the
//! stones in its own row (its board is then all zeros), so for a terminal child we compare that
//! bookkeeping instead: each side's final score must equal its score after our move plus the
//! stones our child board leaves in its row, and the game must have had a reason to end: a score
//! over 24 after our capture, or a child without legal move whose ending value matches. Children
//! that end only because a position repeated (`repetition`) depend on the game's history and are
//! skipped, as `tests/data/README.md` says; their move must still be legal.

use crate::common;

use std::path::PathBuf;

use oware::rules::{turned, Board, GrandSlam, Outcome, Ruleset};
use serde::Deserialize;

const RULES: Ruleset = Ruleset::Abapa(GrandSlam::NoCapture);
/// Records in the vector file (its README says 2,846).
const EXPECTED_RECORDS: usize = 2_846;

#[derive(Deserialize)]
struct Record {
    board: [u8; 12],
    to_move: usize,
    scores: [u32; 2],
    rel: [u8; 12],
    moves: Vec<u8>,
    children: Vec<ChildRecord>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChildRecord {
    #[serde(rename = "move")]
    pit: u8,
    board: [u8; 12],
    scores: [u32; 2],
    to_move: usize,
    terminal: bool,
    returns: Option<[f64; 2]>,
    #[serde(default)]
    grand_slam: bool,
    #[serde(default)]
    repetition: bool,
}

/// A board of player `mover` in mover-first form, written South first (OpenSpiel's order).
fn south_first(mover_first: &Board, mover: usize) -> Board {
    if mover == 0 {
        *mover_first
    } else {
        turned(mover_first)
    }
}

fn row_sum(b: &Board, first: usize) -> u32 {
    b[first..first + 6].iter().map(|&c| u32::from(c)).sum()
}

#[derive(Default, Debug)]
struct Tally {
    records: usize,
    children: usize,
    continued: usize,
    captures: usize,
    grand_slams: usize,
    ended_by_score: usize,
    ended_without_move: usize,
    repetitions_skipped: usize,
    feeding_positions: usize,
}

fn check_record(line_no: usize, r: &Record, t: &mut Tally) {
    let ctx = format!("line {line_no}: board {:?}, to_move {}", r.board, r.to_move);
    assert!(r.to_move < 2, "{ctx}: bad to_move");
    let mover = r.to_move;
    let other = 1 - mover;
    let rel: Board = if mover == 0 { r.board } else { turned(&r.board) };
    assert_eq!(rel, r.rel, "{ctx}: `rel` is not the mover-first board");
    if row_sum(&rel, 6) == 0 {
        t.feeding_positions += 1;
    }

    let moves = RULES.moves(&rel);
    // The reference generator must say the same (it is checked on random boards elsewhere; here
    // it is checked on OpenSpiel's positions too).
    assert_eq!(common::from_fast(&moves), common::simple_moves(RULES, &rel), "{ctx}: fast and simple generators differ");

    // The legal-move set.
    let ours: Vec<u8> = moves.as_slice().iter().map(|m| m.pit).collect();
    let mut theirs = r.moves.clone();
    theirs.sort_unstable();
    assert_eq!(ours, theirs, "{ctx}: legal moves differ (ours vs OpenSpiel's)");
    assert_eq!(moves.ending(), None, "{ctx}: OpenSpiel has moves, we say the game is over");
    let mut child_pits: Vec<u8> = r.children.iter().map(|c| c.pit).collect();
    child_pits.sort_unstable();
    assert_eq!(child_pits, theirs, "{ctx}: the record's children are not its moves");

    for c in &r.children {
        t.children += 1;
        let ctx = format!("{ctx}, move {}", c.pit);
        let m = moves.from_pit(c.pit).unwrap_or_else(|| panic!("{ctx}: not legal for us"));
        let Outcome::Child { captured, child } = m.outcome else { panic!("{ctx}: abapa moves never end the game by themselves, got {:?}", m.outcome) };
        assert_eq!(c.to_move, other, "{ctx}: OpenSpiel's child has the wrong side to move");
        // Grand slams: OpenSpiel flags them; ours must be the same moves, capturing nothing.
        assert_eq!(common::is_grand_slam(&rel, c.pit as usize), c.grand_slam, "{ctx}: grand-slam flag differs");
        if c.grand_slam {
            t.grand_slams += 1;
            assert_eq!(captured, 0, "{ctx}: a grand slam captures nothing in abapa");
        }
        if c.repetition {
            // Ends only because a position repeated: history-dependent, not a rule of the board.
            t.repetitions_skipped += 1;
            continue;
        }

        // Scores right after our move, before any end-of-game collection.
        let mut after = r.scores;
        after[mover] += u32::from(captured);
        let child_moves = RULES.moves(&child);
        let board_sf = south_first(&child, other);

        if !c.terminal {
            t.continued += 1;
            if captured > 0 {
                t.captures += 1;
            }
            assert_eq!(c.board, board_sf, "{ctx}: child boards differ (OpenSpiel's vs ours, South first)");
            assert_eq!(c.scores, after, "{ctx}: captures differ (scores after the move)");
            assert!(c.returns.is_none(), "{ctx}: returns on a non-terminal child");
            // OpenSpiel would have ended the game if a score passed 24 or the child had no move.
            assert!(after[0] <= 24 && after[1] <= 24, "{ctx}: OpenSpiel should have ended at {after:?}");
            assert!(child_moves.ending().is_none(), "{ctx}: our child has no move, OpenSpiel goes on");
            continue;
        }

        // Terminal: OpenSpiel collected each side's row into its score and emptied the board.
        assert_eq!(c.board, [0; 12], "{ctx}: a terminal child's board should be emptied");
        // `child` is in the opponent's mover-first form: pits 0..5 are `other`'s row.
        let mut expected = after;
        expected[other] += row_sum(&child, 0);
        expected[mover] += row_sum(&child, 6);
        assert_eq!(c.scores, expected, "{ctx}: final scores differ (OpenSpiel's vs our board's rows collected)");
        let returns = c.returns.unwrap_or_else(|| panic!("{ctx}: terminal child without returns"));
        let diff = i64::from(c.scores[0]) - i64::from(c.scores[1]);
        assert_eq!(returns[0], diff.signum() as f64, "{ctx}: returns {returns:?} vs scores {:?}", c.scores);
        assert_eq!(returns[1], -returns[0], "{ctx}: returns {returns:?}");

        match child_moves.ending() {
            Some(v) => {
                // The game ended because the child has no legal move: our ending value must be
                // the split OpenSpiel made (v = child mover's share minus the other's).
                t.ended_without_move += 1;
                let n = i64::from(oware::rules::stones(&child));
                let child_mover_gets = i64::from(expected[other] - after[other]);
                assert_eq!(i64::from(v), 2 * child_mover_gets - n, "{ctx}: ending value {v} vs OpenSpiel's split");
            }
            None => {
                // Otherwise the only reason OpenSpiel stops is a score over 24.
                t.ended_by_score += 1;
                assert!(after[0] > 24 || after[1] > 24, "{ctx}: OpenSpiel ended at {after:?} but our child has moves");
            }
        }
    }
    t.records += 1;
}

#[test]
fn openspiel_vectors_abapa() {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "data", "openspiel-oware.jsonl"].iter().collect();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read the OpenSpiel test vectors at {}: {e} (see tests/data/README.md)", path.display()));
    let mut t = Tally::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: Record = serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: bad record: {e}", i + 1));
        check_record(i + 1, &r, &mut t);
    }
    eprintln!("{t:?}");
    assert_eq!(t.records, EXPECTED_RECORDS, "records checked: {t:?}");
    // The comparison must stay strong: almost every child compared board-for-board, only the
    // README's few repetition children skipped, and every special case present.
    assert!(t.repetitions_skipped <= 3, "{t:?}");
    assert!(t.continued + t.ended_by_score + t.ended_without_move + t.repetitions_skipped == t.children);
    assert!(t.continued >= 10_000, "{t:?}");
    assert!(t.captures >= 500, "{t:?}");
    assert!(t.grand_slams >= 50, "{t:?}");
    assert!(t.feeding_positions >= 50, "{t:?}");
    assert!(t.ended_by_score > 0 && t.ended_without_move > 0, "{t:?}");
}
