//! The fast move generator (`Ruleset::moves`, `Ruleset::play`) against the simple reference
//! generator of `tests/common` on many seeded random positions, for every ruleset.

use crate::common;

use common::{from_fast, random_board, simple_moves, SplitMix64};
use oware::rules::{Board, GrandSlam, Ruleset};

/// Positions checked per ruleset.
const POSITIONS: usize = 400_000;

/// Counters of what the random positions exercised, so that a weak generator is noticed.
#[derive(Default, Debug)]
struct Coverage {
    ended: usize,
    moves: usize,
    captures: usize,
    ending_moves: usize,
    laps: usize,
    empty_opponent_row: usize,
    /// Non-empty pits whose move is a grand slam, legal or not.
    grand_slams: usize,
    /// Grand slams whose chain has two pits or more (where the spare options differ).
    long_slams: usize,
    /// Legal moves that leave the opponent without stones (awari's all-eradicating case).
    eradicating: usize,
    /// Endings with stones in both rows (abapa-forbidden: every allowed move is a grand slam).
    both_rows_endings: usize,
}

fn check_board(rules: Ruleset, board: &Board, cov: &mut Coverage) {
    let fast = rules.moves(board);
    let simple = simple_moves(rules, board);
    assert_eq!(from_fast(&fast), simple, "{rules}: moves of {board:?} differ");
    assert_eq!(fast.len(), simple.moves.len());
    assert_eq!(fast.is_empty(), simple.moves.is_empty());
    // `play` must agree with the full generator on every pit, legal or not (and out of range).
    for pit in 0..7 {
        assert_eq!(rules.play(board, pit), fast.from_pit(pit as u8).copied(), "{rules}: play({board:?}, {pit}) differs from moves().from_pit");
    }
    if simple.ending.is_some() {
        cov.ended += 1;
        if common::own_row(board) > 0 && common::opponent_row(board) > 0 {
            cov.both_rows_endings += 1;
        }
    }
    for pit in 0..6 {
        if board[pit] > 0 {
            let s = common::sowing(board, pit);
            if s.grand_slam {
                cov.grand_slams += 1;
                if s.chain.len() >= 2 {
                    cov.long_slams += 1;
                }
            }
        }
    }
    cov.moves += simple.moves.len();
    for (pit, o) in &simple.moves {
        match o {
            common::SimpleOutcome::Child { captured, child } => {
                if *captured > 0 {
                    cov.captures += 1;
                }
                if common::own_row(child) == 0 {
                    cov.eradicating += 1;
                }
            }
            common::SimpleOutcome::End { .. } => cov.ending_moves += 1,
        }
        if board[*pit] >= 12 {
            cov.laps += 1;
        }
    }
    if common::opponent_row(board) == 0 {
        cov.empty_opponent_row += 1;
    }
}

fn crosscheck(rules: Ruleset) {
    let mut rng = SplitMix64(0x5EED_0000 + u64::from(rules.id()));
    let mut cov = Coverage::default();
    for _ in 0..POSITIONS {
        let b = random_board(&mut rng);
        check_board(rules, &b, &mut cov);
    }
    // The random boards must reach the interesting cases, or this test proves little.
    assert!(cov.ended > 1_000, "{rules}: too few ended positions: {cov:?}");
    assert!(cov.captures > 10_000, "{rules}: too few captures: {cov:?}");
    assert!(cov.laps > 5_000, "{rules}: too few laps: {cov:?}");
    assert!(cov.empty_opponent_row > 10_000, "{rules}: too few empty opponent rows: {cov:?}");
    assert!(cov.grand_slams > 1_000, "{rules}: too few grand slams: {cov:?}");
    assert!(cov.long_slams > 1_000, "{rules}: too few grand slams of 2+ pits: {cov:?}");
    match rules {
        Ruleset::Awari | Ruleset::Abapa(GrandSlam::Capture) => {
            assert!(cov.eradicating > 1_000, "{rules}: too few eradicating moves: {cov:?}")
        }
        Ruleset::Abapa(GrandSlam::RemainderToOpponent) => {
            assert!(cov.ending_moves > 1_000, "{rules}: too few ending moves: {cov:?}")
        }
        Ruleset::Abapa(GrandSlam::Forbidden) => {
            assert!(cov.both_rows_endings > 100, "{rules}: too few all-grand-slam endings: {cov:?}")
        }
        _ => {}
    }
    eprintln!("{rules}: {POSITIONS} positions, {cov:?}");
}

#[test]
fn crosscheck_awari() {
    crosscheck(Ruleset::ALL[0]);
}

#[test]
fn crosscheck_abapa() {
    crosscheck(Ruleset::ALL[1]);
}

#[test]
fn crosscheck_abapa_forbidden() {
    crosscheck(Ruleset::ALL[2]);
}

#[test]
fn crosscheck_abapa_capture() {
    crosscheck(Ruleset::ALL[3]);
}

#[test]
fn crosscheck_abapa_remainder_to_opponent() {
    crosscheck(Ruleset::ALL[4]);
}

#[test]
fn crosscheck_abapa_spare_last() {
    crosscheck(Ruleset::ALL[5]);
}

#[test]
fn crosscheck_abapa_spare_first() {
    crosscheck(Ruleset::ALL[6]);
}

/// Every board of up to 5 stones, exhaustively (6,188 boards of exactly 5), in every ruleset:
/// small boards are where ending rules and feeding decide everything.
#[test]
fn crosscheck_all_small_boards() {
    fn rec(b: &mut Board, pit: usize, left: u8, out: &mut Vec<Board>) {
        if pit == 12 {
            out.push(*b);
            return;
        }
        for c in 0..=left {
            b[pit] = c;
            rec(b, pit + 1, left - c, out);
        }
        b[pit] = 0;
    }
    let mut boards = Vec::new();
    rec(&mut [0; 12], 0, 5, &mut boards);
    // Boards with 0..=5 stones: C(17, 12) = 6188.
    assert_eq!(boards.len(), 6188);
    for rules in Ruleset::ALL {
        let mut cov = Coverage::default();
        for b in &boards {
            check_board(rules, b, &mut cov);
        }
        assert!(cov.ended > 0 && cov.captures > 0, "{rules}: {cov:?}");
    }
}

/// One big pit of 0..=48 stones anywhere, alone or with one stone in every opponent pit (multiple
/// laps, laps ending in the opponent's row, grand slams by a lap), in every ruleset.
#[test]
fn crosscheck_big_single_pits() {
    let mut boards = Vec::new();
    for pit in 0..12 {
        for k in 0..=48u8 {
            let mut b = [0u8; 12];
            b[pit] = k;
            boards.push(b);
            if k <= 42 {
                for x in &mut b[6..12] {
                    *x += 1;
                }
                boards.push(b);
            }
            if k <= 47 {
                let mut c = [0u8; 12];
                c[pit] = k;
                c[(pit + 7) % 12] += 1;
                boards.push(c);
            }
        }
    }
    for rules in Ruleset::ALL {
        let mut cov = Coverage::default();
        for b in &boards {
            check_board(rules, b, &mut cov);
        }
        assert!(cov.laps > 500 && cov.grand_slams > 0, "{rules}: {cov:?}");
    }
}

/// The first ruleset list must be what this file's test names say.
#[test]
fn ruleset_order_matches_test_names() {
    let names: Vec<&str> = Ruleset::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(names, ["awari", "abapa", "abapa-forbidden", "abapa-capture", "abapa-remainder-to-opponent", "abapa-spare-last", "abapa-spare-first"]);
}
