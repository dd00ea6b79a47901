//! Packed boards. The hot paths work on a board packed into a u128, pit p in byte p (bytes 12..15
//! zero). No pit ever holds more than 48 stones, so bytewise sums never carry into the next pit:
//! a sowing is one masked add of a precomputed increment vector, an un-sowing one subtraction with
//! a bytewise borrow test, and a row test one mask.
//!
//! Also the sowing tables and one move's sowing and capture before any ruleset's legality
//! ([`raw_move`]), which the move generator, the un-moves and the search's shortcuts share.

use super::board::{Board, PITS, ROW};

/// Bytes 0..5 (the mover's row) of a packed board.
pub(super) const OWN_MASK: u128 = (1u128 << 48) - 1;
/// Bytes 6..11 (the opponent's row) of a packed board.
pub(super) const OPP_MASK: u128 = OWN_MASK << 48;
/// 0x80 in each of bytes 0..11: the borrow guards of an un-sowing.
pub(super) const GUARDS: u128 = 0x8080_8080_8080_8080_8080_8080;

#[inline(always)]
pub(super) fn pack(b: &Board) -> u128 {
    let mut a = [0u8; 16];
    a[..PITS].copy_from_slice(b);
    u128::from_le_bytes(a)
}

#[inline(always)]
pub(super) fn unpack(x: u128) -> Board {
    let a = x.to_le_bytes();
    let mut b = [0u8; PITS];
    b.copy_from_slice(&a[..PITS]);
    b
}

#[inline(always)]
pub(super) fn pit_of(x: u128, p: usize) -> u8 {
    (x >> (8 * p)) as u8
}

/// Sum of the six bytes of a row (the row in bytes 0..5 of `x`).
#[inline(always)]
pub(super) fn sum6(x: u128) -> u32 {
    // Multiplying by 0x0101.. adds every byte into the top one; sums stay below 256.
    (((x as u64) & 0xFFFF_FFFF_FFFF).wrapping_mul(0x0101_0101_0101_0101) >> 56) as u32
}

#[inline(always)]
pub(super) fn turned_packed(x: u128) -> u128 {
    ((x & OWN_MASK) << 48) | ((x >> 48) & OWN_MASK)
}

/// `INC[pit][s]`: what sowing `s` stones from `pit` adds to each pit (the origin gets nothing).
/// `LAST[pit][s]`: the pit that receives the last stone.
pub(super) struct SowTables {
    pub(super) inc: [[u128; 49]; ROW],
    pub(super) last: [[u8; 49]; ROW],
}

pub(super) const SOW: SowTables = {
    let mut t = SowTables { inc: [[0; 49]; ROW], last: [[0; 49]; ROW] };
    let mut pit = 0;
    while pit < ROW {
        let mut s = 1;
        while s <= 48 {
            let laps = (s / 11) as u128;
            let rem = s % 11;
            let mut inc = 0u128;
            let mut j = 1;
            while j < PITS {
                let add = laps + if j <= rem { 1 } else { 0 };
                inc += add << (8 * ((pit + j) % PITS));
                j += 1;
            }
            t.inc[pit][s] = inc;
            t.last[pit][s] = ((pit + (s - 1) % 11 + 1) % PITS) as u8;
            s += 1;
        }
        pit += 1;
    }
    t
};

/// What sowing `s` stones (1..=48) from the mover's pit `pit` (0..5) adds to each pit (the
/// origin gets nothing), and the last pit sown: the same for every board.
pub(crate) fn sowing(pit: usize, s: usize) -> ([u8; PITS], usize) {
    (unpack(SOW.inc[pit][s]), usize::from(SOW.last[pit][s]))
}

#[inline(always)]
fn sow_packed(x: u128, pit: usize) -> (u128, usize) {
    let s = pit_of(x, pit) as usize;
    let sown = (x & !(0xFFu128 << (8 * pit))) + SOW.inc[pit][s];
    (sown, SOW.last[pit][s] as usize)
}

/// One move before legality rules are applied.
#[derive(Clone, Copy)]
pub(super) struct RawMove {
    /// The board after sowing, before any capture (not turned).
    pub(super) sown: u128,
    /// The board after sowing and capture (not turned).
    pub(super) after: u128,
    pub(super) captured: u8,
    /// The chain took the whole opponent row.
    pub(super) grand_slam: bool,
    /// The chain (lowest pit, last pit), when there is one: the spare options need it.
    pub(super) chain: Option<(usize, usize)>,
}

#[inline(always)]
pub(super) fn raw_move(x: u128, pit: usize) -> RawMove {
    let (sown, last) = sow_packed(x, pit);
    let plain = RawMove { sown, after: sown, captured: 0, grand_slam: false, chain: None };
    if last < ROW || !matches!(pit_of(sown, last), 2 | 3) {
        return plain;
    }
    let mut low = last;
    let mut taken = u32::from(pit_of(sown, last));
    while low > ROW && matches!(pit_of(sown, low - 1), 2 | 3) {
        low -= 1;
        taken += u32::from(pit_of(sown, low));
    }
    let grand_slam = taken == sum6(sown >> 48);
    let chain_mask = ((1u128 << (8 * (last + 1))) - 1) & !((1u128 << (8 * low)) - 1);
    RawMove { sown, after: sown & !chain_mask, captured: taken as u8, grand_slam, chain: Some((low, last)) }
}

/// The board right after sowing from `pit` (not yet captured, not turned), and the last pit sown.
///
/// Sowing skips the origin pit on every lap, so it receives nothing and ends up empty.
///
/// # Panics
/// When `pit` is not one of the mover's pits (0..5) or holds no stone.
#[cfg(test)]
pub(super) fn sow(board: &Board, pit: usize) -> (Board, usize) {
    assert!(pit < ROW && board[pit] > 0, "sowing needs a non-empty pit of the mover");
    let (x, last) = sow_packed(pack(board), pit);
    (unpack(x), last)
}
