//! Checks on a probed database for the integration tests of both crates: values by hand from the
//! children, principal variations made of best moves that make progress, random boards of the
//! layers, a damaged payload byte. One file both harnesses include (`mod probing;` in
//! `tests/common/mod.rs`, `#[path = "../../../tests/common/probing.rs"]` in
//! `cli/tests/common/mod.rs`); it uses the library's public API and the harness's `SplitMix64`.
//! Not every includer uses every item.
#![allow(dead_code)]

use std::path::Path;

use oware::index::{layer_size, unrank_unchecked};
use oware::line::{PrincipalVariation, PvEnd};
use oware::probe::{Database, MoveResult, MoveValue};
use oware::rules::Outcome;
use oware::storage::PAYLOAD_OFFSET;
use oware::{Board, Position, Ruleset};

use super::SplitMix64;

/// The published example position (16 stones, value 0).
pub const EXAMPLE: &str = "1 1 1 1 1 2 4 2 3 0 0 0";

/// A random board of a layer `<= max`.
pub fn random_layer_board(rng: &mut SplitMix64, max: u32) -> Board {
    let n = rng.below(u64::from(max) + 1) as u32;
    unrank_unchecked(n, rng.below(layer_size(n)))
}

/// The value of a board computed by hand from its children: max over legal moves of
/// `captured - v(child)`, or the ending value.
pub fn manual_value(db: &Database, rules: Ruleset, board: &Board) -> i8 {
    let moves = rules.moves(board);
    if let Some(e) = moves.ending() {
        return e;
    }
    moves
        .as_slice()
        .iter()
        .map(|m| match m.outcome {
            Outcome::End { value } => value,
            Outcome::Child { captured, child } => captured as i8 - db.value(&Position::new(child).expect("child")).expect("child value"),
        })
        .max()
        .expect("a position without ending has moves")
}

/// Whether a move cannot lead back to its position: it ends the game, captures, or leaves the
/// opponent without a legal move.
pub fn makes_progress(rules: Ruleset, m: &MoveValue) -> bool {
    match &m.result {
        MoveResult::EndsGame => true,
        MoveResult::Continues { captured, child } => *captured > 0 || rules.moves(child.board()).ending().is_some(),
    }
}

/// Checks a principal variation from `start` cut at `max_plies`: every step plays a best move
/// (a progressing one, the lowest-numbered, whenever there is one), starts where the previous
/// one led, and the line's end is what its last step shows.
pub fn check_line(db: &Database, rules: Ruleset, start: &Position, line: &PrincipalVariation, max_plies: usize) {
    let steps = &line.steps;
    assert!(steps.len() <= max_plies, "{start}");
    if let Some(first) = steps.first() {
        assert_eq!(first.position, *start);
    }
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(step.value, db.value(&step.position).unwrap(), "{start} ply {i}");
        assert_eq!(step.played.value, step.value, "{start} ply {i}");
        let best = db.best_moves(&step.position).unwrap();
        assert!(best.contains(&step.played), "{start} ply {i}: not a best move");
        if let Some(m) = best.iter().find(|m| makes_progress(rules, m)) {
            assert_eq!(*m, step.played, "{start} ply {i}: the lowest progressing best move comes first");
        }
        if let Some(next) = steps.get(i + 1) {
            assert_eq!(step.played.child(), Some(&next.position), "{start} ply {i}");
        }
    }
    match line.end {
        PvEnd::GameOver => match steps.last() {
            Some(last) => {
                if let Some(child) = last.played.child() {
                    assert!(rules.moves(child.board()).ending().is_some(), "{start}");
                }
            }
            None => assert!(rules.moves(start.board()).ending().is_some(), "{start}"),
        },
        PvEnd::Repetition { first_ply } | PvEnd::Cycle { first_ply } => {
            let last = steps.last().expect("a repetition needs a move");
            assert_eq!(last.played.child(), Some(&steps[first_ply].position), "{start}");
            // No stone leaves the board on the way round, so the value's size stays: endless
            // play (a repetition) is claimed exactly when it is 0.
            assert_eq!(last.played.captured(), Some(0), "{start}");
            assert_eq!(last.value.abs(), steps[first_ply].value.abs(), "{start}");
            let endless = matches!(line.end, PvEnd::Repetition { .. });
            assert_eq!(endless, steps[first_ply].value == 0, "{start}: {:?}", line.end);
        }
        PvEnd::PlyLimit => assert_eq!(steps.len(), max_plies, "{start}"),
        PvEnd::EndlessPlay => {
            let from = steps.last().map_or(Some(start), |s| s.played.child()).expect("endless play after a move that ends the game");
            assert_eq!(db.value(from).unwrap(), 0, "{start}");
            assert!(!capture_reachable(db, rules, from), "{start}: a capture can still come");
        }
    }
}

/// Whether some sequence of best moves from `start` reaches a best move that captures or ends the
/// game (an exhaustive search, without a bound: for small layers only).
pub fn capture_reachable(db: &Database, rules: Ruleset, start: &Position) -> bool {
    let mut seen = std::collections::HashSet::from([*start]);
    let mut todo = vec![*start];
    while let Some(p) = todo.pop() {
        for m in db.best_moves(&p).unwrap() {
            if makes_progress(rules, &m) {
                return true;
            }
            let child = *m.child().expect("a move that ends the game makes progress");
            if seen.insert(child) {
                todo.push(child);
            }
        }
    }
    false
}

/// Flips one bit of the payload byte `at` of a layer file (its checksum no longer agrees).
pub fn flip_payload_byte(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[(PAYLOAD_OFFSET + at) as usize] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}
