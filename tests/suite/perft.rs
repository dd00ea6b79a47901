//! Perft regression: `oware::perft` (the fast generator) against counts stored in
//! `tests/data/perft.json`, which were computed with the simple reference generator of
//! `tests/common` (`simple_perft`), never typed in by hand.
//!
//! To regenerate the data file (only after a deliberate change of the rules or of the list of
//! cases below):
//!
//! ```text
//! cargo test --release --test suite -- --ignored perft::regenerate_perft_data
//! ```
//!
//! The default run also recomputes the cheap part of the stored numbers with the simple
//! generator, so a hand-edited file is caught.

use crate::common;

use std::path::PathBuf;

use oware::perft::{perft, perft_by_depth};
use oware::rules::{Board, Ruleset};
use oware::Position;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct PerftFile {
    about: String,
    regenerate: String,
    cases: Vec<Case>,
}

#[derive(Serialize, Deserialize)]
struct Case {
    /// Ruleset name (`Ruleset::name`).
    rules: String,
    /// Mover-first board, as `Position` prints it.
    position: String,
    /// `counts[d - 1]` = perft(d).
    counts: Vec<u64>,
}

fn data_path() -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "tests", "data", "perft.json"].iter().collect()
}

fn board_of(s: &str) -> Board {
    *s.parse::<Position>().unwrap().board()
}

/// The cases stored in the data file: (position, rulesets, depth).
fn case_list() -> Vec<(Board, Vec<Ruleset>, u32)> {
    let start = [4u8; 12];
    // The Catalan rules text's 14-stone lap (South to move, 46 stones; tests/rules_examples.rs).
    let lap = [6, 1, 7, 0, 14, 8, 0, 2, 8, 0, 0, 0];
    // The Catalan rules text's grand slam (12 stones): short games, many grand slams and endings.
    let slam = [1, 1, 2, 0, 4, 0, 1, 1, 1, 0, 0, 0];
    // The Catalan rules text's forced feeding (7 stones, the opponent's row empty).
    let feed = [0, 1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0];
    let all = Ruleset::ALL.to_vec();
    vec![
        (start, vec![Ruleset::ALL[0], Ruleset::ALL[1]], 8),
        (start, Ruleset::ALL[2..].to_vec(), 6),
        (lap, all.clone(), 6),
        (slam, all.clone(), 10),
        (feed, all, 12),
    ]
}

fn simple_counts(rules: Ruleset, board: &Board, depth: u32) -> Vec<u64> {
    (1..=depth).map(|d| common::simple_perft(rules, board, d)).collect()
}

fn load() -> PerftFile {
    let path = data_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e} (regenerate it, see tests/suite/perft.rs)", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: bad JSON: {e}", path.display()))
}

/// Writes `tests/data/perft.json` from the simple generator.
#[test]
#[ignore = "regenerates tests/data/perft.json; run by hand after a deliberate rules change"]
fn regenerate_perft_data() {
    let mut cases = Vec::new();
    for (board, rulesets, depth) in case_list() {
        for rules in rulesets {
            let counts = simple_counts(rules, &board, depth);
            eprintln!("{rules} {board:?}: {counts:?}");
            cases.push(Case { rules: rules.name().to_string(), position: Position::new(board).unwrap().to_string(), counts });
        }
    }
    let file = PerftFile {
        about: "perft(d) for d = 1..len(counts), computed with the simple reference generator of tests/common \
                (simple_perft); sequences of exactly d moves, ended positions and ending moves are leaves"
            .to_string(),
        regenerate: "cargo test --release --test suite -- --ignored perft::regenerate_perft_data".to_string(),
        cases,
    };
    let json = serde_json::to_string_pretty(&file).unwrap();
    std::fs::write(data_path(), json + "\n").unwrap();
}

/// The fast perft must reproduce every stored count.
#[test]
fn fast_perft_matches_stored_counts() {
    let file = load();
    let mut checked = 0;
    for case in &file.cases {
        let rules: Ruleset = case.rules.parse().unwrap();
        let board = board_of(&case.position);
        let depth = case.counts.len() as u32;
        assert_eq!(perft_by_depth(rules, &board, depth), case.counts, "{rules} from {}", case.position);
        assert_eq!(perft(rules, &board, depth), case.counts[depth as usize - 1], "{rules} from {}", case.position);
        checked += case.counts.len();
    }
    assert!(checked >= 100, "only {checked} counts in the data file");
}

/// The data file holds exactly the cases of [`case_list`], and the start position is there for
/// awari and abapa to depth 6 at least.
#[test]
fn stored_cases_are_the_listed_ones() {
    let file = load();
    let mut expected = Vec::new();
    for (board, rulesets, depth) in case_list() {
        for rules in rulesets {
            expected.push((rules.name().to_string(), Position::new(board).unwrap().to_string(), depth as usize));
        }
    }
    let stored: Vec<(String, String, usize)> = file.cases.iter().map(|c| (c.rules.clone(), c.position.clone(), c.counts.len())).collect();
    assert_eq!(stored, expected, "regenerate the data file (see tests/suite/perft.rs)");
    let start = Position::start().to_string();
    for name in ["awari", "abapa"] {
        let c = file.cases.iter().find(|c| c.rules == name && c.position == start).unwrap();
        assert!(c.counts.len() >= 6);
        assert_eq!(c.counts[0], 6, "six moves from the start");
    }
}

/// The stored numbers really come from the simple generator: recompute the cheap ones.
#[test]
fn stored_counts_come_from_the_simple_generator() {
    let file = load();
    let mut rechecked = 0;
    for case in &file.cases {
        let rules: Ruleset = case.rules.parse().unwrap();
        let board = board_of(&case.position);
        for (i, &count) in case.counts.iter().enumerate() {
            if count > 200_000 {
                break;
            }
            assert_eq!(common::simple_perft(rules, &board, i as u32 + 1), count, "{rules} from {} depth {}", case.position, i + 1);
            rechecked += 1;
        }
    }
    assert!(rechecked >= 100, "{rechecked}");
}
