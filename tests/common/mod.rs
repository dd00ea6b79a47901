//! A deliberately simple reference move generator, written straight from `docs/rules.md`.
//!
//! It shares nothing with `src/rules/` but the plain data types (`Board`, `Ruleset`,
//! `GrandSlam`): sowing drops one stone at a time in an explicit loop, the capture chain is walked
//! pit by pit, and every ruleset's rules are spelled out one after the other. It is slow and
//! allocates freely; it exists only to be obviously correct, so that the fast generator
//! (`Ruleset::moves`) can be compared with it on many positions.
//!
//! The library's integration tests (`tests/suite/`) use it as `mod common;`, and its unit tests as
//! `crate::test_support` (`src/test_support.rs` includes this file by its path), with the helpers of
//! the files beside it: `fixtures.rs` (layers built once per test binary and shared, copies of
//! them, the format's checksum), `boards.rs` (boards and layers by brute force), `probing.rs`
//! (checks on a probed database) and `splitmix.rs` (the seeded generator). The program's test
//! harness (`cli/tests/common/mod.rs`) includes those four files too, by their paths: one
//! implementation for both crates. Nothing here runs the program; its tests are its crate's
//! (`cli/tests/`). Not every test file uses every helper.
#![allow(dead_code)]
// Index loops are kept on purpose: this module is written to be read against docs/rules.md.
#![allow(clippy::needless_range_loop, clippy::manual_memcpy)]

use oware::rules::{Board, GrandSlam, Moves, Outcome, Ruleset};

mod boards;
mod fixtures;
mod probing;
mod splitmix;
pub use boards::*;
pub use fixtures::*;
pub use probing::*;
pub use splitmix::SplitMix64;

/// What a legal move leads to, in the reference generator's own terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimpleOutcome {
    /// The game goes on from `child` (mover-first: the opponent's row is now pits 0..5) after the
    /// mover captured `captured` stones.
    Child { captured: u8, child: Board },
    /// The move ends the game; `value` = the mover's stones minus the opponent's, over every stone
    /// that was on the board before the move.
    End { value: i8 },
}

/// The legal moves of a position (pit, outcome) in increasing pit order, or, when there is
/// none, the position's ending value for the player to move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimpleMoves {
    /// Legal moves, in increasing pit order.
    pub moves: Vec<(usize, SimpleOutcome)>,
    /// `Some(value)` exactly when there is no legal move.
    pub ending: Option<i8>,
}

/// The fast generator's answer in the reference generator's terms, for comparisons.
pub fn from_fast(m: &Moves) -> SimpleMoves {
    let moves = m
        .as_slice()
        .iter()
        .map(|mv| {
            let o = match mv.outcome {
                Outcome::Child { captured, child } => SimpleOutcome::Child { captured, child },
                Outcome::End { value } => SimpleOutcome::End { value },
            };
            (mv.pit as usize, o)
        })
        .collect();
    SimpleMoves { moves, ending: m.ending() }
}

/// True when `p` is one of the opponent's pits (6..11) in mover-first form.
pub fn is_opponent_pit(p: usize) -> bool {
    (6..12).contains(&p)
}

/// Sum of the stones in the mover's row (pits 0..5).
pub fn own_row(b: &Board) -> i32 {
    let mut total = 0;
    for p in 0..6 {
        total += b[p] as i32;
    }
    total
}

/// Sum of the stones in the opponent's row (pits 6..11).
pub fn opponent_row(b: &Board) -> i32 {
    let mut total = 0;
    for p in 6..12 {
        total += b[p] as i32;
    }
    total
}

/// Sum of all stones on the board.
pub fn total(b: &Board) -> i32 {
    own_row(b) + opponent_row(b)
}

/// The board seen by the other player: the two rows swap places.
pub fn swap_rows(b: &Board) -> Board {
    let mut t = [0u8; 12];
    for p in 0..6 {
        t[p] = b[p + 6];
        t[p + 6] = b[p];
    }
    t
}

/// Sows pit `pit` one stone at a time: returns the board after sowing and the pit that got the
/// last stone. The origin pit is skipped on every lap.
pub fn sow_one_by_one(board: &Board, pit: usize) -> (Board, usize) {
    let mut b = *board;
    let mut hand = b[pit];
    assert!(hand > 0, "sowing an empty pit");
    b[pit] = 0;
    let mut p = pit;
    while hand > 0 {
        p = (p + 1) % 12;
        if p == pit {
            continue; // the origin pit never receives a stone
        }
        b[p] += 1;
        hand -= 1;
    }
    (b, p)
}

/// The capture chain on a sown board whose last stone fell into `last`: the pits that would be
/// captured, starting at `last` and walking backwards (`last`, `last-1`, ...) while the pit is
/// an opponent pit holding 2 or 3 stones.
pub fn chain_pits(sown: &Board, last: usize) -> Vec<usize> {
    let mut pits = Vec::new();
    let mut p = last;
    loop {
        if !is_opponent_pit(p) {
            break;
        }
        if sown[p] != 2 && sown[p] != 3 {
            break;
        }
        pits.push(p);
        p -= 1; // p >= 6 here, so this never underflows
    }
    pits
}

/// Everything about one move before a ruleset decides what to do with it.
#[derive(Clone, Debug)]
pub struct Sowing {
    /// The board after sowing, nothing captured yet (not turned).
    pub sown: Board,
    /// The pit that received the last stone.
    pub last: usize,
    /// The capture chain, from `last` backwards.
    pub chain: Vec<usize>,
    /// The chain would take every stone in the opponent's row.
    pub grand_slam: bool,
}

/// Sows `pit` and finds its capture chain.
pub fn sowing(board: &Board, pit: usize) -> Sowing {
    let (sown, last) = sow_one_by_one(board, pit);
    let chain = chain_pits(&sown, last);
    let mut in_chain = 0;
    for &p in &chain {
        in_chain += sown[p] as i32;
    }
    let grand_slam = !chain.is_empty() && in_chain == opponent_row(&sown);
    Sowing { sown, last, chain, grand_slam }
}

/// Removes the stones of `pits` from `board`; returns the new board and how many were taken.
pub fn take(board: &Board, pits: &[usize]) -> (Board, u8) {
    let mut b = *board;
    let mut taken = 0u8;
    for &p in pits {
        taken += b[p];
        b[p] = 0;
    }
    (b, taken)
}

/// True when the move from `pit` is a grand slam (its chain would take the whole opponent row).
pub fn is_grand_slam(board: &Board, pit: usize) -> bool {
    sowing(board, pit).grand_slam
}

/// The legal moves of `board` (mover-first) under `rules`, straight from `docs/rules.md`.
pub fn simple_moves(rules: Ruleset, board: &Board) -> SimpleMoves {
    let n = total(board);
    // Every ruleset: a player with no stones in his row cannot move; the opponent gets them all.
    if own_row(board) == 0 {
        return SimpleMoves { moves: Vec::new(), ending: Some(-n as i8) };
    }
    match rules {
        Ruleset::Awari => simple_awari(board),
        Ruleset::Abapa(option) => simple_abapa(board, option),
    }
}

/// Awari: eradicating moves (opponent row empty after sowing and capture) are legal only when
/// every move eradicates; all moves capture normally.
fn simple_awari(board: &Board) -> SimpleMoves {
    let mut all: Vec<(usize, Board, u8, bool)> = Vec::new();
    for pit in 0..6 {
        if board[pit] == 0 {
            continue;
        }
        let s = sowing(board, pit);
        let (after, captured) = take(&s.sown, &s.chain);
        let eradicating = opponent_row(&after) == 0;
        all.push((pit, after, captured, eradicating));
    }
    let every_move_eradicates = all.iter().all(|m| m.3);
    let mut moves = Vec::new();
    for (pit, after, captured, eradicating) in all {
        if eradicating && !every_move_eradicates {
            continue;
        }
        moves.push((pit, SimpleOutcome::Child { captured, child: swap_rows(&after) }));
    }
    assert!(!moves.is_empty(), "awari: a player with stones always has a move");
    SimpleMoves { moves, ending: None }
}

/// Abapa with a grand-slam option: feeding obligation, then the option's grand-slam rule.
fn simple_abapa(board: &Board, option: GrandSlam) -> SimpleMoves {
    let n = total(board);
    let own = own_row(board);
    let opponent_was_empty = opponent_row(board) == 0;

    // Feeding: with the opponent's row empty, only moves that put a stone into it are allowed.
    let mut allowed = Vec::new();
    for pit in 0..6 {
        if board[pit] == 0 {
            continue;
        }
        let s = sowing(board, pit);
        if opponent_was_empty && opponent_row(&s.sown) == 0 {
            continue;
        }
        allowed.push((pit, s));
    }
    if allowed.is_empty() {
        // Nobody can feed the opponent: the mover takes the stones in his own row.
        return SimpleMoves { moves: Vec::new(), ending: Some(own as i8) };
    }

    if option == GrandSlam::Forbidden && allowed.iter().all(|(_, s)| s.grand_slam) {
        // Every allowed move is a grand slam: each player takes the stones in his own row.
        return SimpleMoves { moves: Vec::new(), ending: Some((own - (n - own)) as i8) };
    }

    let mut moves = Vec::new();
    for (pit, s) in allowed {
        if !s.grand_slam {
            let (after, captured) = take(&s.sown, &s.chain);
            moves.push((pit, SimpleOutcome::Child { captured, child: swap_rows(&after) }));
            continue;
        }
        match option {
            GrandSlam::NoCapture => {
                moves.push((pit, SimpleOutcome::Child { captured: 0, child: swap_rows(&s.sown) }));
            }
            GrandSlam::Forbidden => {} // illegal
            GrandSlam::Capture => {
                let (after, captured) = take(&s.sown, &s.chain);
                moves.push((pit, SimpleOutcome::Child { captured, child: swap_rows(&after) }));
            }
            GrandSlam::RemainderToOpponent => {
                // The mover keeps his capture; every stone left on the board goes to the opponent.
                let (after, captured) = take(&s.sown, &s.chain);
                let left = total(&after);
                assert_eq!(captured as i32 + left, n);
                moves.push((pit, SimpleOutcome::End { value: (captured as i32 - left) as i8 }));
            }
            GrandSlam::SpareLast => {
                // The chain starts at the pit of the last stone: spare that one.
                let spared = s.last;
                let pits: Vec<usize> = s.chain.iter().copied().filter(|&p| p != spared).collect();
                let (after, captured) = take(&s.sown, &pits);
                moves.push((pit, SimpleOutcome::Child { captured, child: swap_rows(&after) }));
            }
            GrandSlam::SpareFirst => {
                // Spare the pit where the chain ends (the last one walked, the lowest-numbered).
                let spared = *s.chain.last().expect("a grand slam has a chain");
                let pits: Vec<usize> = s.chain.iter().copied().filter(|&p| p != spared).collect();
                let (after, captured) = take(&s.sown, &pits);
                moves.push((pit, SimpleOutcome::Child { captured, child: swap_rows(&after) }));
            }
        }
    }
    SimpleMoves { moves, ending: None }
}

/// Perft with the reference generator: the number of move sequences of exactly `depth` moves.
/// A position without legal move, or a move that ends the game, is a leaf: it contributes 1 if it
/// is reached at exactly `depth` moves and 0 if it is reached earlier (as in chess engines).
pub fn simple_perft(rules: Ruleset, board: &Board, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let m = simple_moves(rules, board);
    let mut count = 0;
    for (_, outcome) in &m.moves {
        match outcome {
            SimpleOutcome::Child { child, .. } => count += simple_perft(rules, child, depth - 1),
            SimpleOutcome::End { .. } => {
                if depth == 1 {
                    count += 1;
                }
            }
        }
    }
    count
}

/// A random board with at most 48 stones, drawn from a mix of shapes so that unusual cases come
/// up often: uniform spreads, few stones, an empty row on either side, one or two big pits (laps),
/// stones concentrated near the row boundary (chains and grand slams), and pits of 1 and 2.
pub fn random_board(rng: &mut SplitMix64) -> Board {
    let mut b = [0u8; 12];
    let kind = rng.below(10);
    // Drops `k` stones one at a time into random pits of `pits`, staying at or under 48.
    fn drop(b: &mut Board, rng: &mut SplitMix64, k: u64, pits: &[usize]) {
        for _ in 0..k {
            if total(b) >= 48 {
                return;
            }
            let p = pits[rng.below(pits.len() as u64) as usize];
            b[p] += 1;
        }
    }
    let all: Vec<usize> = (0..12).collect();
    match kind {
        0 => {
            // Uniform spread of 0..48 stones.
            let k = rng.range(0, 48);
            drop(&mut b, rng, k, &all);
        }
        1 => {
            // Few stones.
            let k = rng.range(0, 8);
            drop(&mut b, rng, k, &all);
        }
        2 => {
            // The opponent's row is empty (feeding).
            let k = rng.range(1, 30);
            drop(&mut b, rng, k, &[0, 1, 2, 3, 4, 5]);
        }
        3 => {
            // The mover's row is empty.
            let k = rng.range(0, 30);
            drop(&mut b, rng, k, &[6, 7, 8, 9, 10, 11]);
        }
        4 => {
            // One or two big pits (laps), the rest sparse.
            let big = rng.range(11, 48);
            let p = rng.below(6) as usize;
            b[p] = big as u8;
            if rng.below(2) == 0 {
                let q = rng.below(12) as usize;
                let room = 48 - total(&b) as u64;
                b[q] += rng.range(0, room.min(20)) as u8;
            }
            let room = 48 - total(&b) as u64;
            let k = rng.range(0, room.min(12));
            drop(&mut b, rng, k, &all);
        }
        5 => {
            // Opponent pits of 1 and 2 (chains, grand slams), mover pits small.
            for p in 6..12 {
                b[p] = rng.below(3) as u8;
            }
            for p in 0..6 {
                b[p] = rng.below(7) as u8;
            }
        }
        6 => {
            // Pits of 0..3 everywhere.
            for p in 0..12 {
                b[p] = rng.below(4) as u8;
            }
        }
        7 => {
            // A big pit of the mover and an opponent row of 0s and 1s (lap grand slams).
            b[rng.below(6) as usize] = rng.range(11, 26) as u8;
            for p in 6..12 {
                b[p] = rng.below(2) as u8;
            }
            for p in 0..6 {
                if b[p] == 0 && rng.below(3) == 0 {
                    b[p] = rng.range(1, 3) as u8;
                }
            }
        }
        8 => {
            // Only a few opponent pits used, possibly none (feeding with laps).
            let k = rng.range(0, 40);
            let mine: Vec<usize> = (0..6).collect();
            drop(&mut b, rng, k, &mine);
            let extra = rng.range(0, 3);
            drop(&mut b, rng, extra, &all);
        }
        _ => {
            // Heavy boards: 40..48 stones.
            let k = rng.range(40, 48);
            drop(&mut b, rng, k, &all);
        }
    }
    assert!(total(&b) <= 48);
    b
}
