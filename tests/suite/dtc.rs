//! Depths to capture (`BuildConfig::dtc`): best lines reach the first capture at ply dtc, and
//! positions outside every layer get their depth from their moves. (The depths themselves are
//! compared with a plain forward iteration of the definition in the library's unit tests,
//! `solver::tests::dtc`; the files through the program, `oware build --dtc` in every mode, added,
//! rebuilt, packed and queried, are the program's tests: `cli/tests/suite/dtc_files.rs`.)

use oware::index::{layer_size, unrank};
use oware::line::PvEnd;
use oware::probe::{Database, MoveResult};
use oware::{Position, Ruleset};

use crate::common::with_dtc;

/// The ply (1-based) at which a line first captures, ends the game or leaves the next player
/// without a move; `None` when it never does within the line.
fn first_capture(db: &Database, line: &oware::line::PrincipalVariation) -> Option<usize> {
    line.steps
        .iter()
        .position(|s| match &s.played.result {
            MoveResult::EndsGame => true,
            MoveResult::Continues { captured, child } => *captured > 0 || db.rules().moves(child.board()).ending().is_some(),
        })
        .map(|i| i + 1)
}

#[test]
fn every_best_line_of_a_whole_layer_reaches_its_first_capture_at_ply_dtc() {
    for (rules, top) in Ruleset::ALL.into_iter().map(|r| (r, if r == Ruleset::Awari { 9 } else { 7 })) {
        let dir = with_dtc(rules, top);
        let db = Database::open(dir.path(), rules).unwrap();
        let (mut realized, mut zero) = (0u64, 0u64);
        for i in 0..layer_size(top) {
            let pos = Position::new(unrank(top, i).unwrap()).unwrap();
            let dtc = db.dtc(&pos).unwrap();
            let value = db.value(&pos).unwrap();
            assert_eq!(dtc.is_none(), value == 0, "{rules} {pos}: value {value}, dtc {dtc:?}");
            let Some(d) = dtc else {
                zero += 1;
                continue;
            };
            let line = db.principal_variation(&pos, d as usize + 1).unwrap();
            if d == 0 {
                assert!(line.steps.is_empty() && line.end == PvEnd::GameOver, "{rules} {pos}: {line:?}");
                continue;
            }
            assert_eq!(first_capture(&db, &line), Some(d as usize), "{rules} {pos} (value {value}, dtc {d}): {line:?}");
            // Each step keeps the value and the depth goes down by one.
            for (k, step) in line.steps.iter().take(d as usize).enumerate() {
                assert_eq!(db.dtc(&step.position).unwrap(), Some(d - k as u16), "{rules} {pos}, ply {}", k + 1);
            }
            realized += 1;
        }
        assert!(realized > 0 && zero > 0, "{rules}: {realized} lines realized, {zero} of value 0");
    }
}

#[test]
fn positions_outside_every_layer_get_their_depth_from_their_moves() {
    let dir = with_dtc(Ruleset::Awari, 8);
    let db = Database::open(dir.path(), Ruleset::Awari).unwrap();
    // No empty pit on the opponent's side: outside every layer.
    let pos: Position = "1 0 0 0 0 1 1 1 1 1 1 1".parse().unwrap();
    let moves = db.move_values(&pos).unwrap();
    let value = db.value(&pos).unwrap();
    let keeping: Vec<u16> = moves.iter().filter(|m| m.value == value).map(|m| m.dtc.unwrap()).collect();
    let expected = if value > 0 { keeping.iter().min() } else { keeping.iter().max() }.map(|d| d + 1);
    assert_eq!(db.dtc(&pos).unwrap(), expected);
    let best = db.best_moves(&pos).unwrap();
    assert!(best.iter().all(|m| m.dtc.map(|d| d + 1) == expected), "{best:?}");
}
