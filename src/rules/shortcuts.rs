//! The search's shortcuts, decided from the sowings without the rulesets' legality: each side's
//! sowings summed up ([`sowings`]) and whether a mover surely has a legal move
//! ([`Ruleset::surely_has_moves`]).

use super::board::{Board, PITS, ROW};
use super::packed::{pack, pit_of, raw_move, turned_packed, OPP_MASK, OWN_MASK};
use super::ruleset::{GrandSlam, Ruleset};

/// Each side's sowings of a board, summed up for the search ([`sowings`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sowings {
    /// The mover's, then the opponent's (were he to move now): the largest capture of any
    /// sowing and the number of non-empty pits.
    pub(crate) sides: [(u8, u8); 2],
    /// The mover's pits whose sowing captures, as bits (pit `p`: bit `p`): every legal move that
    /// captures or ends the game (a grand slam under `abapa-remainder-to-opponent`) is among
    /// them. The search's quiescence plays only those.
    pub(crate) capturing: u8,
}

/// Each side's sowings of `board` (mover-first) summed up for the search's evaluation and its
/// quiescence.
///
/// An estimate of the legal moves' figures, not the rules' answer: every sowing counts as a move
/// and every chain as a capture (the eradication and feeding rules and a grand slam's option,
/// which [`Ruleset::moves`] applies, are ignored; they matter in few positions).
///
/// Cost: per side two bytewise compares of the opponent's row, then one table read per pit (a
/// sowing that laps the board is played); no loop over a chain, no board built. A test compares
/// it with the pit-by-pit [`raw_capture`].
#[inline]
pub(crate) fn sowings(board: &Board) -> Sowings {
    let x = pack(board);
    let (own, capturing) = row_sowings(x);
    let (opp, _) = row_sowings(turned_packed(x));
    Sowings { sides: [own, opp], capturing }
}

/// Bit `i` set where byte `i` (0..5) of `v` equals `b`: a bytewise zero test of `v ^ b…b`
/// without carries between bytes, its flags gathered by one multiplication.
#[inline(always)]
fn bytes_equal(v: u64, b: u8) -> u32 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let t = v ^ (0x0101_0101_0101_0101u64 * u64::from(b));
    let zero = !(((t & LOW7) + LOW7) | t) & !LOW7;
    ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32 & 0x3F
}

/// `CHAIN[m][e]`: the opponent's pits (bits 0..5) taken by a sowing of fewer than 12 stones from
/// the mover's row whose last stone lands `e` pits after the mover's first pit (`e` is 0..16:
/// pit + stones), when `m` marks the opponent's pits that held 1 or 2 before it (they hold 2 or
/// 3 after): the run of marked pits that ends at `e - 6`, empty when `e` is outside 6..11.
const CHAIN: [[u8; 17]; 64] = {
    let mut t = [[0u8; 17]; 64];
    let mut m = 0;
    while m < 64 {
        let mut e = ROW;
        while e < PITS {
            let mut run = 0u8;
            let mut p = e - ROW;
            loop {
                if m & (1 << p) == 0 {
                    break;
                }
                run |= 1 << p;
                if p == 0 {
                    break;
                }
                p -= 1;
            }
            t[m][e] = run;
            e += 1;
        }
        m += 1;
    }
    t
};

/// The number of bits set in each 6-bit mask.
const BITS6: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut m = 0;
    while m < 64 {
        t[m] = (m as u32).count_ones() as u8;
        m += 1;
    }
    t
};

/// The mover's sowings of `x`: (largest capture, non-empty pits) and the capturing pits as bits.
#[inline(always)]
fn row_sowings(x: u128) -> ((u8, u8), u8) {
    let own = x as u64 & 0xFFFF_FFFF_FFFF;
    let opp = (x >> 48) as u64 & 0xFFFF_FFFF_FFFF;
    let twos = bytes_equal(opp, 2);
    let chains = &CHAIN[(bytes_equal(opp, 1) | twos) as usize];
    let live = !bytes_equal(own, 0) & 0x3F;
    let (mut best, mut capturing) = (0u8, 0u8);
    for pit in 0..ROW {
        let s = usize::from(pit_of(x, pit));
        let c = if s < 12 {
            // Each chain pit held 1 or 2 and takes one more: two stones a pit, three for a 2.
            let run = usize::from(chains[pit + s]);
            2 * BITS6[run] + BITS6[run & twos as usize]
        } else {
            raw_move(x, pit).captured
        };
        best = best.max(c);
        capturing |= u8::from(c > 0) << pit;
    }
    ((best, BITS6[live as usize]), capturing)
}

impl Ruleset {
    /// Whether `board`'s mover certainly has a legal move, decided without generating them: both
    /// rows hold stones (no feeding duty, and under awari a mover with stones always has a move),
    /// and the ruleset does not forbid grand slams (under `abapa-forbidden` every move of a
    /// position may be a grand slam). False says nothing: ask [`moves`](Self::moves).
    ///
    /// Cost: two masks of the packed board.
    #[inline]
    pub(crate) fn surely_has_moves(self, board: &Board) -> bool {
        let x = pack(board);
        x & OWN_MASK != 0 && x & OPP_MASK != 0 && self != Ruleset::Abapa(GrandSlam::Forbidden)
    }
}

/// `raw_move(x, pit).captured` (`pit` not empty), pit by pit: a sowing that ends in the mover's
/// row captures nothing, and one of fewer than 12 stones (no lap) drops one stone in each pit it
/// passes, so that its chain is the run of pits holding 1 or 2 that ends where it ends. The
/// simple twin of [`row_sowings`]'s table: a test compares the three.
#[cfg(test)]
pub(super) fn raw_capture(x: u128, pit: usize) -> u8 {
    use super::packed::SOW;
    let s = usize::from(pit_of(x, pit));
    let last = usize::from(SOW.last[pit][s & 63]);
    if last < ROW {
        return 0;
    }
    if s >= 12 {
        return raw_move(x, pit).captured;
    }
    let mut taken = 0u8;
    let mut p = last;
    // Every pit from `pit + 1` to `last` received one stone; the chain stops at the row's edge.
    while p >= ROW && matches!(pit_of(x, p), 1 | 2) {
        taken += pit_of(x, p) + 1;
        p -= 1;
    }
    taken
}
