//! Worked examples: the board diagrams of published rules texts ("the Catalan text" below: a
//! Catalan statement of the international rules, "Regles del Owaré"; "the English description":
//! an encyclopedia-style English description of oware) under abapa, each grand-slam option and
//! awari's eradication rule on hand-made positions whose results were computed by hand (rules as
//! in `docs/rules.md`), and `Ruleset::play` against `Ruleset::moves`. (The un-move generator
//! against the forward moves is the library's unit test `src/rules/tests/unmove.rs`: it ranks
//! parents with the indexer's internal `RankBase`.)
//!
//! Boards are written as those texts draw them: `diagram(top, bottom)` takes the opponent's row
//! as seen across the table (pit 11 on the left, down to pit 6) and the mover's row (pits 0..5).

use crate::common;

use common::{from_fast, random_board, simple_moves, SplitMix64};
use oware::rules::{turned, Board, GrandSlam, Outcome, Ruleset};

const AWARI: Ruleset = Ruleset::Awari;
const ABAPA: Ruleset = Ruleset::Abapa(GrandSlam::NoCapture);
const FORBIDDEN: Ruleset = Ruleset::Abapa(GrandSlam::Forbidden);
const CAPTURE: Ruleset = Ruleset::Abapa(GrandSlam::Capture);
const REMAINDER: Ruleset = Ruleset::Abapa(GrandSlam::RemainderToOpponent);
const SPARE_LAST: Ruleset = Ruleset::Abapa(GrandSlam::SpareLast);
const SPARE_FIRST: Ruleset = Ruleset::Abapa(GrandSlam::SpareFirst);

/// A board from a rules-text diagram: `top` is the opponent's row left to right (pits 11, 10,
/// ..., 6), `bottom` the mover's row left to right (pits 0..5).
fn diagram(top: [u8; 6], bottom: [u8; 6]) -> Board {
    let mut b = [0u8; 12];
    for i in 0..6 {
        b[i] = bottom[i];
        b[11 - i] = top[i];
    }
    b
}

/// The legal pits of `board`.
fn legal(rules: Ruleset, board: &Board) -> Vec<u8> {
    rules.moves(board).as_slice().iter().map(|m| m.pit).collect()
}

/// Asserts the move from `pit` gives `expected`, via `moves`, `play` and the simple generator.
fn expect_move(rules: Ruleset, board: &Board, pit: u8, expected: Outcome) {
    let moves = rules.moves(board);
    let m = moves.from_pit(pit).unwrap_or_else(|| panic!("{rules}: pit {pit} of {board:?} should be legal"));
    assert_eq!(m.outcome, expected, "{rules}: move {pit} of {board:?}");
    assert_eq!(rules.play(board, pit as usize), Some(*m), "{rules}: play vs moves");
    assert_eq!(from_fast(&moves), simple_moves(rules, board), "{rules}: fast vs simple on {board:?}");
}

/// Asserts a continuing move: captures `captured`, and the board after sowing and capture, as
/// the mover sees it (not yet turned), is `after`.
fn expect_child(rules: Ruleset, board: &Board, pit: u8, captured: u8, after: Board) {
    expect_move(rules, board, pit, Outcome::Child { captured, child: turned(&after) });
}

/// Asserts the position has no legal move and this ending value.
fn expect_ending(rules: Ruleset, board: &Board, value: i8) {
    let moves = rules.moves(board);
    assert!(moves.is_empty(), "{rules}: {board:?} should have no legal move, has {:?}", moves.as_slice());
    assert_eq!(moves.ending(), Some(value), "{rules}: ending value of {board:?}");
    for pit in 0..6 {
        assert_eq!(rules.play(board, pit), None, "{rules}: play({pit}) on an ended position");
    }
    assert_eq!(simple_moves(rules, board).ending, Some(value));
}

#[test]
fn seed_first_move_sows_counter_clockwise() {
    // The Catalan text, first diagram: from the start, sowing house E (pit 4) fills pits 5..8.
    let start = [4u8; 12];
    let after = diagram([4, 4, 4, 5, 5, 5], [4, 4, 4, 4, 0, 5]);
    for rules in Ruleset::ALL {
        assert_eq!(legal(rules, &start), vec![0, 1, 2, 3, 4, 5]);
        expect_child(rules, &start, 4, 0, after);
    }
}

#[test]
fn seed_fourteen_stone_lap_skips_origin() {
    // The Catalan text: 14 stones from pit 4 go once round the board (skipping pit 4) and three
    // more reach pits 5, 6, 7; the last lands on 4 stones, so nothing is captured.
    let before = diagram([0, 0, 0, 8, 2, 0], [6, 1, 7, 0, 14, 8]);
    let after = diagram([1, 1, 1, 9, 4, 2], [7, 2, 8, 1, 0, 10]);
    for rules in Ruleset::ALL {
        expect_child(rules, &before, 4, 0, after);
    }
}

#[test]
fn twelve_stones_leave_the_origin_empty() {
    // "If it contained 12 seeds, it is skipped, and the twelfth seed is placed in the next house."
    let mut before = [0u8; 12];
    before[0] = 12;
    let after = [0, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
    for rules in Ruleset::ALL {
        expect_child(rules, &before, 0, 0, after);
    }
    // Eleven stones from pit 5: exactly one round, the last in pit 4 (the pit before the
    // origin). Pit 6 reaches 2, but the last stone is in the mover's row: no capture.
    let mut eleven = [0u8; 12];
    eleven[5] = 11;
    eleven[6] = 1;
    let after = [1, 1, 1, 1, 1, 0, 2, 1, 1, 1, 1, 1];
    for rules in Ruleset::ALL {
        expect_child(rules, &eleven, 5, 0, after);
    }
}

#[test]
fn seed_capture_chain() {
    // The Catalan text: 3 stones from pit 4 make pit 7 = 2 and pit 6 = 3: both captured (5
    // stones); the chain stops at pit 5, the mover's own. Pit 8's 2 stones lie beyond the last
    // stone.
    let before = diagram([6, 0, 0, 2, 1, 2], [4, 0, 0, 1, 3, 1]);
    let after = diagram([6, 0, 0, 2, 0, 0], [4, 0, 0, 1, 0, 2]);
    for rules in Ruleset::ALL {
        expect_child(rules, &before, 4, 5, after);
    }
}

#[test]
fn capture_chain_stops_at_a_pit_with_another_count() {
    // The English description's example: 6 stones from E (pit 4) end in pit 10 (3): pits 10, 9,
    // 8 hold 3, 2, 3 and are captured (8); pit 7 now holds 4, which stops the chain, so pit 6 (2)
    // is spared.
    let before = [1, 0, 0, 0, 6, 1, 1, 3, 2, 1, 2, 0];
    let after = [1, 0, 0, 0, 0, 2, 2, 4, 0, 0, 0, 0];
    for rules in Ruleset::ALL {
        expect_child(rules, &before, 4, 8, after);
    }
    // A pit brought to 1 (from empty) stops it too: pit 8 had 0, gets 1.
    let before = [0, 0, 0, 0, 0, 4, 1, 1, 0, 2, 0, 0];
    // Pits 6..9 get one each: 2, 2, 1, 3. Last = pit 9 (3): captured; pit 8 = 1 stops.
    let after = [0, 0, 0, 0, 0, 0, 2, 2, 1, 0, 0, 0];
    for rules in Ruleset::ALL {
        expect_child(rules, &before, 5, 3, after);
    }
    // The last stone in the mover's own row captures nothing even on 2 or 3.
    let before = [1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0];
    for rules in Ruleset::ALL {
        expect_child(rules, &before, 0, 0, [0, 2, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0]);
    }
}

#[test]
fn seed_grand_slam_captures_nothing_in_abapa() {
    // The Catalan text: pit 4's 4 stones make pits 6, 7, 8 hold 2 each: the chain would take the
    // whole opponent row, so in abapa nothing is captured and the sown stones stay.
    let before = diagram([0, 0, 0, 1, 1, 1], [1, 1, 2, 0, 4, 0]);
    let after = diagram([0, 0, 0, 2, 2, 2], [1, 1, 2, 0, 0, 1]);
    assert_eq!(legal(ABAPA, &before), vec![0, 1, 2, 4]);
    expect_child(ABAPA, &before, 4, 0, after);
    assert!(common::is_grand_slam(&before, 4));
}

/// A grand slam whose chain holds 3, 2, 2 (pits 6, 7, 8) and three ordinary moves.
/// Board: mover 1 1 2 0 4 0, opponent (pits 6..11) 2 1 1 0 0 0; 12 stones.
const SLAM: Board = [1, 1, 2, 0, 4, 0, 2, 1, 1, 0, 0, 0];

#[test]
fn grand_slam_options() {
    // Pit 4 sows pits 5..8: opponent row 3 2 2 0 0 0, the last stone in pit 8. The chain takes
    // pits 8, 7, 6 = 7 stones = the whole opponent row: a grand slam.
    let sown = [1, 1, 2, 0, 0, 1, 3, 2, 2, 0, 0, 0];
    assert!(common::is_grand_slam(&SLAM, 4));
    // The ordinary moves are the same in every ruleset.
    for rules in Ruleset::ALL {
        expect_child(rules, &SLAM, 0, 0, [0, 2, 2, 0, 4, 0, 2, 1, 1, 0, 0, 0]);
        expect_child(rules, &SLAM, 1, 0, [1, 0, 3, 0, 4, 0, 2, 1, 1, 0, 0, 0]);
        expect_child(rules, &SLAM, 2, 0, [1, 1, 0, 1, 5, 0, 2, 1, 1, 0, 0, 0]);
    }
    // no-capture (abapa): legal, nothing captured.
    assert_eq!(legal(ABAPA, &SLAM), vec![0, 1, 2, 4]);
    expect_child(ABAPA, &SLAM, 4, 0, sown);
    // forbidden: illegal while other moves exist.
    assert_eq!(legal(FORBIDDEN, &SLAM), vec![0, 1, 2]);
    assert_eq!(FORBIDDEN.play(&SLAM, 4), None);
    // capture: all 7 taken; the opponent is left without stones.
    expect_child(CAPTURE, &SLAM, 4, 7, [1, 1, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    // The child: its mover has no stone, so the game is over at -5 (we keep our 5).
    let child = [0, 0, 0, 0, 0, 0, 1, 1, 2, 0, 0, 1];
    expect_ending(CAPTURE, &child, -5);
    // remainder-to-opponent: the mover keeps 7, the 5 left on the board go to the opponent.
    assert_eq!(legal(REMAINDER, &SLAM), vec![0, 1, 2, 4]);
    expect_move(REMAINDER, &SLAM, 4, Outcome::End { value: 7 - 5 });
    // spare-last: pit 8 (where the last stone fell, 2) is spared: 3 + 2 = 5 captured.
    expect_child(SPARE_LAST, &SLAM, 4, 5, [1, 1, 2, 0, 0, 1, 0, 0, 2, 0, 0, 0]);
    // spare-first: pit 6 (where the chain ends, 3) is spared: 2 + 2 = 4 captured.
    expect_child(SPARE_FIRST, &SLAM, 4, 4, [1, 1, 2, 0, 0, 1, 3, 0, 0, 0, 0, 0]);
    // awari: an eradicating move is illegal while another move keeps the opponent alive.
    assert_eq!(legal(AWARI, &SLAM), vec![0, 1, 2]);
    assert_eq!(AWARI.play(&SLAM, 4), None);
}

#[test]
fn only_move_is_a_grand_slam() {
    // Mover: 3 stones in pit 5 only; opponent 1 1 2 (pits 6, 7, 8). Pit 5 sows pits 6, 7, 8,
    // which become 2, 2, 3, and the chain 8, 7, 6 takes all 7. n = 7, own row 3.
    let b = [0, 0, 0, 0, 0, 3, 1, 1, 2, 0, 0, 0];
    let sown = [0, 0, 0, 0, 0, 0, 2, 2, 3, 0, 0, 0];
    assert!(common::is_grand_slam(&b, 5));
    expect_child(ABAPA, &b, 5, 0, sown);
    // forbidden: every allowed move is a grand slam, so the game ends; each side takes his row:
    // 3 for the mover, 4 for the opponent.
    expect_ending(FORBIDDEN, &b, 3 - 4);
    // capture: takes 7, the board is then empty.
    expect_child(CAPTURE, &b, 5, 7, [0; 12]);
    expect_ending(CAPTURE, &[0; 12], 0);
    // remainder-to-opponent: 7 captured, nothing left for the opponent.
    expect_move(REMAINDER, &b, 5, Outcome::End { value: 7 });
    // spare-last spares pit 8 (3): captures 4; spare-first spares pit 6 (2): captures 5.
    expect_child(SPARE_LAST, &b, 5, 4, [0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0]);
    expect_child(SPARE_FIRST, &b, 5, 5, [0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0]);
    // awari: every move eradicates, so every move is legal and captures normally.
    expect_child(AWARI, &b, 5, 7, [0; 12]);
    assert_eq!(legal(AWARI, &b), vec![5]);
}

#[test]
fn feeding_grand_slam_by_a_lap() {
    // The opponent's row is empty. Pit 0's single stone cannot feed; pit 5's 17 stones go once
    // round (each pit but 5 gets one) and six more land in pits 6..11: every opponent pit holds
    // 2, the last in pit 11, and the chain takes all 12: the only feeding move is a grand slam.
    let b = [1, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0];
    let sown = [2, 1, 1, 1, 1, 0, 2, 2, 2, 2, 2, 2];
    assert!(common::is_grand_slam(&b, 5));
    // abapa: feeding forces pit 5; nothing captured.
    assert_eq!(legal(ABAPA, &b), vec![5]);
    expect_child(ABAPA, &b, 5, 0, sown);
    // forbidden: the only move feeding allows is a grand slam: each side takes his row (18 - 0).
    expect_ending(FORBIDDEN, &b, 18);
    // capture: 12 captured.
    expect_child(CAPTURE, &b, 5, 12, [2, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
    // remainder-to-opponent: 12 captured, the 6 left go to the opponent: 12 - 6.
    expect_move(REMAINDER, &b, 5, Outcome::End { value: 6 });
    assert_eq!(legal(REMAINDER, &b), vec![5]);
    // spare-last spares pit 11, spare-first pit 6: 10 captured either way.
    expect_child(SPARE_LAST, &b, 5, 10, [2, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 2]);
    expect_child(SPARE_FIRST, &b, 5, 10, [2, 1, 1, 1, 1, 0, 2, 0, 0, 0, 0, 0]);
    // awari: both moves eradicate (pit 0 leaves the opponent empty, pit 5 captures everything),
    // so both are legal and pit 5 captures its 12.
    assert_eq!(legal(AWARI, &b), vec![0, 5]);
    expect_child(AWARI, &b, 0, 0, [0, 1, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0]);
    expect_child(AWARI, &b, 5, 12, [2, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn seed_forced_feeding() {
    // The Catalan text: the opponent has no stones; pits 1 and 2 would not reach him, so only pit
    // 4 is legal, and it sows pits 5..8.
    let before = diagram([0, 0, 0, 0, 0, 0], [0, 1, 2, 0, 4, 0]);
    let after = diagram([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 0, 1]);
    for rules in Ruleset::ALL {
        // (In awari pits 1 and 2 are eradicating moves while pit 4 is not: the same result.)
        assert_eq!(legal(rules, &before), vec![4], "{rules}");
        expect_child(rules, &before, 4, 0, after);
    }
}

#[test]
fn seed_end_when_feeding_is_impossible() {
    // The Catalan text: the opponent has no stones and no move reaches him: in abapa the game ends
    // and the mover takes the 4 stones in his row (+4).
    let b = diagram([0, 0, 0, 0, 0, 0], [0, 1, 2, 0, 1, 0]);
    for rules in Ruleset::ALL {
        if rules != AWARI {
            expect_ending(rules, &b, 4);
        }
    }
    // awari: every move eradicates (none reaches the opponent), so all are legal; afterwards the
    // opponent cannot move, and a player who cannot move loses all remaining stones.
    assert_eq!(legal(AWARI, &b), vec![1, 2, 4]);
    expect_child(AWARI, &b, 1, 0, [0, 0, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
    expect_child(AWARI, &b, 2, 0, [0, 1, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0]);
    expect_child(AWARI, &b, 4, 0, [0, 1, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    // The opponent to move then has no stone: the game is over, he loses all 4 (-4).
    expect_ending(AWARI, &[0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 1, 0], -4);
}

#[test]
fn player_without_stones_cannot_move() {
    // Every ruleset: no stone in the mover's row ends the game; the opponent has all n (-n).
    let b = [0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 4];
    for rules in Ruleset::ALL {
        expect_ending(rules, &b, -7);
    }
    for rules in Ruleset::ALL {
        expect_ending(rules, &[0; 12], 0);
    }
}

#[test]
fn awari_eradication_rule() {
    // Opponent: a single stone in pit 11. Mover: pit 5 with 6 stones (sows 6..11: pit 11 gets
    // 2, pits 6..10 get 1, the chain takes pit 11 only: 2 of 7, not eradicating) and pit 4 with 7
    // stones (sows 5..11: pit 11 = 2 captured; pits 6..10 = 1 remain). Both leave stones, so
    // both are legal and capture 2.
    let b = [0, 0, 0, 0, 7, 6, 0, 0, 0, 0, 0, 1];
    expect_child(AWARI, &b, 5, 2, [0, 0, 0, 0, 7, 0, 1, 1, 1, 1, 1, 0]);
    expect_child(AWARI, &b, 4, 2, [0, 0, 0, 0, 0, 7, 1, 1, 1, 1, 1, 0]);

    // A move that captures the whole opponent row is illegal while another move does not.
    // Opponent: 1 stone in pit 6. Pit 5 (1 stone) makes it 2 and captures it: eradicating.
    // Pit 0 (1 stone) sows into pit 1: the opponent keeps his stone.
    let b = [1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0];
    assert_eq!(legal(AWARI, &b), vec![0]);
    expect_child(AWARI, &b, 0, 0, [0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]);
    // abapa: pit 5 is a grand slam, legal and capturing nothing.
    assert_eq!(legal(ABAPA, &b), vec![0, 5]);
    expect_child(ABAPA, &b, 5, 0, [1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0]);

    // When the only move eradicates it is legal and captures: the opponent then cannot move and
    // loses the remaining stones.
    let b = [0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0];
    assert_eq!(legal(AWARI, &b), vec![5]);
    expect_child(AWARI, &b, 5, 2, [0; 12]);
    let b = [3, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0];
    // Pit 0 (3 stones) sows 1, 2, 3: the opponent keeps his stone, so pit 5 is illegal.
    assert_eq!(legal(AWARI, &b), vec![0]);

    // Not feeding an empty opponent is eradicating as well: with a feeding move available,
    // non-feeding moves are illegal; without one, every move is legal (unlike abapa, which ends).
    let b = [2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(legal(AWARI, &b), vec![4]);
    assert_eq!(legal(ABAPA, &b), vec![4]);
    let b = [2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(legal(AWARI, &b), vec![0, 4]);
    expect_child(AWARI, &b, 0, 0, [0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
    expect_ending(ABAPA, &b, 3);
}

#[test]
fn play_equals_moves_from_pit() {
    let mut rng = SplitMix64(0x000A_11CE);
    for _ in 0..50_000 {
        let b = random_board(&mut rng);
        for rules in Ruleset::ALL {
            let moves = rules.moves(&b);
            for pit in 0..8usize {
                assert_eq!(rules.play(&b, pit), moves.from_pit(pit as u8).copied(), "{rules}: {b:?} pit {pit}");
            }
        }
    }
}
