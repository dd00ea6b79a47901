//! Perft: counting move sequences, the classic regression test of a move generator.
//!
//! `perft(d)` is the number of distinct sequences of exactly `d` legal moves from a position. A
//! position without legal move and a move that ends the game ([`Outcome::End`]) are leaves, as
//! checkmates and stalemates are in chess engines: a sequence that reaches one after `k < d` moves
//! cannot be continued, so it is not counted in `perft(d)` (it is counted in `perft(k)`).
//!
//! The numbers depend only on the rules, so a change in them means the move generator changed.

use rayon::prelude::*;

use crate::rules::{Board, Move, Outcome, Ruleset};

/// Below this many remaining plies a subtree is counted on the current thread: splitting small
/// subtrees costs more in scheduling than it gains.
const PARALLEL_MIN_DEPTH: u32 = 5;

/// The number of move sequences of exactly `depth` moves from `board` (mover-first) under `rules`.
///
/// `depth = 0` counts the empty sequence: 1. A position with no legal move, or a move that ends
/// the game, ends its sequences: they count only if they have exactly `depth` moves.
///
/// Cost: one move generation per interior node, so time grows like the answer (at most 6^depth);
/// memory is O(depth). The first two plies are spread over the rayon thread pool when the
/// remaining depth is large enough to be worth it.
pub fn perft(rules: Ruleset, board: &Board, depth: u32) -> u64 {
    perft_by_depth(rules, board, depth).last().copied().unwrap_or(1)
}

/// `perft(d)` for every `d` in `1..=depth`, in one traversal: element `d - 1` is `perft(d)`.
///
/// Empty for `depth = 0`. Cost as [`perft`] with the same `depth` (each node is visited once).
pub fn perft_by_depth(rules: Ruleset, board: &Board, depth: u32) -> Vec<u64> {
    let mut counts = vec![0u64; depth as usize];
    count_into(rules, board, depth, 0, &mut counts);
    counts
}

/// Adds this node's descendants to `counts`: `counts[k]` gets the sequences of `k + 1` moves from
/// the root that pass through here. `ply` is this node's distance from the root; `depth` is the
/// root's requested depth.
fn count_into(rules: Ruleset, board: &Board, depth: u32, ply: u32, counts: &mut [u64]) {
    if ply >= depth {
        return;
    }
    let moves = rules.moves(board);
    let slice = moves.as_slice();
    counts[ply as usize] += slice.len() as u64;
    if ply + 1 == depth {
        return;
    }
    let remaining = depth - ply;
    if ply < 2 && remaining >= PARALLEL_MIN_DEPTH && slice.len() > 1 {
        let partial: Vec<u64> = slice
            .par_iter()
            .map(|m| {
                let mut c = vec![0u64; depth as usize];
                count_child(rules, m, depth, ply, &mut c);
                c
            })
            .reduce(
                || vec![0u64; depth as usize],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            );
        for (x, y) in counts.iter_mut().zip(partial) {
            *x += y;
        }
    } else {
        for m in slice {
            count_child(rules, m, depth, ply, counts);
        }
    }
}

/// Recurses into the child of move `m` played at `ply` (an ending move has no child).
#[inline]
fn count_child(rules: Ruleset, m: &Move, depth: u32, ply: u32, counts: &mut [u64]) {
    if let Outcome::Child { child, .. } = m.outcome {
        count_into(rules, &child, depth, ply + 1, counts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::GrandSlam;

    #[test]
    fn depth_zero_and_one() {
        let start = [4u8; 12];
        assert_eq!(perft(Ruleset::Awari, &start, 0), 1);
        assert_eq!(perft(Ruleset::Awari, &start, 1), 6);
        assert!(perft_by_depth(Ruleset::Awari, &start, 0).is_empty());
    }

    #[test]
    fn ended_positions_are_leaves() {
        // The mover has no stones: no legal move, so no sequence of one move or more.
        let empty_row = [0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0];
        assert_eq!(perft(Ruleset::Awari, &empty_row, 0), 1);
        assert_eq!(perft(Ruleset::Awari, &empty_row, 3), 0);
        // Remainder-to-opponent: the only move is a grand slam that ends the game.
        let slam = [0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0];
        let r = Ruleset::Abapa(GrandSlam::RemainderToOpponent);
        assert_eq!(perft_by_depth(r, &slam, 3), vec![1, 0, 0]);
    }

    #[test]
    fn by_depth_matches_single_depths() {
        let start = [4u8; 12];
        for rules in Ruleset::ALL {
            let all = perft_by_depth(rules, &start, 6);
            for d in 1..=6u32 {
                assert_eq!(perft(rules, &start, d), all[d as usize - 1], "{rules} depth {d}");
            }
        }
    }
}
