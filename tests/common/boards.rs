//! Boards by brute force: every board of a stone count, and a layer in index order, for the
//! integration tests of both crates (`mod boards;` in `tests/common/mod.rs`, `#[path =
//! "../../../tests/common/boards.rs"]` in `cli/tests/common/mod.rs`). Not every includer uses
//! every item.
#![allow(dead_code)]

use oware::rules::Board;

/// Every 12-pit board with exactly `n` stones (not filtered), by plain recursion.
pub fn all_boards(n: u32) -> Vec<Board> {
    fn fill(pit: usize, left: u8, b: &mut Board, out: &mut Vec<Board>) {
        if pit == 11 {
            b[pit] = left;
            out.push(*b);
            return;
        }
        for c in 0..=left {
            b[pit] = c;
            fill(pit + 1, left - c, b, out);
        }
    }
    let mut out = Vec::new();
    fill(0, n as u8, &mut [0; 12], &mut out);
    out
}

/// Layer `n` in index order by brute force: every `n`-stone board with an empty opponent pit
/// (pits 6..11), sorted by the key `(b[11], ..., b[0])`.
pub fn brute_force_layer(n: u32) -> Vec<Board> {
    let mut v: Vec<Board> = all_boards(n).into_iter().filter(|b| b[6..].contains(&0)).collect();
    v.sort_by_key(|b| {
        let mut k = *b;
        k.reverse();
        k
    });
    v
}
