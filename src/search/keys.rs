//! Zobrist keys: one random word per (pit, count) and per captured count, fixed at compile
//! time; the key of a board alone serves repetitions, the table key adds the captured counts and
//! the game's salt ([`super::shared`]).

use crate::rules::{Board, PITS};

/// The golden gamma: what each step of splitmix64 adds to its state.
pub(crate) const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// One step of splitmix64: `x` advanced by the golden gamma, then mixed.
pub(crate) const fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(GOLDEN_GAMMA);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

const fn zobrist() -> [[u64; 49]; PITS + 2] {
    let mut z = [[0u64; 49]; PITS + 2];
    let mut p = 0;
    while p < PITS + 2 {
        let mut c = 0;
        while c < 49 {
            z[p][c] = splitmix((p * 49 + c) as u64 + 0x0A7A_2002);
            c += 1;
        }
        p += 1;
    }
    z
}

pub(super) static ZOBRIST: [[u64; 49]; PITS + 2] = zobrist();

/// The key of a board alone (repetitions compare boards with the same side to move).
#[inline]
pub(super) fn board_key(board: &Board) -> u64 {
    let mut k = 0u64;
    for (p, &c) in board.iter().enumerate() {
        k ^= ZOBRIST[p][c as usize];
    }
    k
}
