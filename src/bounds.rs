//! Forced-capture bounds: what each side can force itself to capture by play that ends by
//! itself, whatever the opponent does and whatever repetition brings (`docs/bounds.md`), and
//! their compact encoding in a bounds file's payload (`docs/FORMAT.md`).
//!
//! For a position `p` of `n` stones, `gM(p)` (the player to move) and `gN(p)` (the opponent)
//! are the least solution of
//!
//! ```text
//! gM(p) = max over legal moves m of ( captured(m) + gN(child(m)) )
//! gN(p) = min over legal moves m of gM(child(m))
//! ```
//!
//! where a move that ends the game gives each side its share under the ruleset's ending rule,
//! and a position without a legal move its ending split. Always `gM + gN <= n`; the split is
//! *forced* when `gM + gN = n`. The even-split value `v` satisfies `2 gM - n <= v <= n - 2 gN`.
//!
//! # Encoding
//!
//! A pair is stored as its rank among the `(n + 1)(n + 2) / 2` pairs with `gM + gN <= n`
//! ([`code`]), in [`width`]`(n)` bits: 0 bits for layer 0, at most 8 up to layer 21, 9 up to
//! layer 30, 10 up to 43 and 11 beyond. Entries are packed least significant bit first into a
//! little-endian bit stream, entry `i` at bit `i * width(n)`; the last byte is padded with zero
//! bits. Eight entries always end on a byte boundary, so index ranges that start at multiples
//! of 8 own their bytes (parallel writers never share a byte).

use crate::index::layer_size;

/// The two forced-capture bounds of a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Bounds {
    /// Stones the player to move can force himself to capture (`gM`).
    pub mover: u8,
    /// Stones the opponent can force himself to capture (`gN`).
    pub opponent: u8,
}

impl Bounds {
    /// Whether the final split of the `n` stones is forced (`gM + gN = n`).
    pub fn forced(self, n: u32) -> bool {
        u32::from(self.mover) + u32::from(self.opponent) == n
    }

    /// The range of values, in stones for the player to move, that these bounds leave a
    /// position of `n` stones however repetitions fall: from `2 gM - n` (he captures only what
    /// he can force) to `n - 2 gN` (the opponent captures only what he can).
    pub fn value_range(self, n: u32) -> (i32, i32) {
        let n = n as i32;
        (2 * i32::from(self.mover) - n, n - 2 * i32::from(self.opponent))
    }

    /// Whether these bounds and the even-split value `v` of a position of `n` stones agree:
    /// `gM + gN <= n` and `2 gM - n <= v <= n - 2 gN` ([`value_range`](Self::value_range)).
    pub fn consistent_with(self, n: u32, v: i8) -> bool {
        let (low, high) = self.value_range(n);
        u32::from(self.mover) + u32::from(self.opponent) <= n && (low..=high).contains(&i32::from(v))
    }
}

/// What one side can force in a game, from the bounds and the stones already captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Forced {
    /// It can force a win (more than half of all the game's stones), whatever repetition brings.
    Win,
    /// Both sides can force exactly half: the game is a draw.
    Draw,
    /// The other side can force a win.
    Loss,
    /// It can force at least half of the stones (a draw); whether it wins is decided by repetition.
    DrawOrBetter,
    /// It cannot force a draw, nor can the other side force a win: the result depends on how
    /// repetitions fall.
    DecidedByRepetition,
}

impl serde::Serialize for Forced {
    /// As its [`name`](Forced::name).
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Forced {
    /// A stable name: `win`, `draw`, `loss`, `draw_or_better`, `decided_by_repetition`.
    pub fn name(self) -> &'static str {
        match self {
            Forced::Win => "win",
            Forced::Draw => "draw",
            Forced::Loss => "loss",
            Forced::DrawOrBetter => "draw_or_better",
            Forced::DecidedByRepetition => "decided_by_repetition",
        }
    }

    /// In words, for people.
    pub fn words(self) -> &'static str {
        match self {
            Forced::Win => "can force a win",
            Forced::Draw => "draw (forced)",
            Forced::Loss => "loses (the other side can force a win)",
            Forced::DrawOrBetter => "can force at least a draw; a win is decided by repetition",
            Forced::DecidedByRepetition => "cannot force a draw; the result is decided by repetition",
        }
    }
}

/// The results the player to move and the opponent can force in a game where they have
/// captured `captured_mover` and `captured_opponent` stones and `b` are the bounds of the
/// position on the board (`n` stones): each side forces at least its captures plus its bound,
/// and wins with more than half of all the stones.
///
/// Cost: a few comparisons.
pub fn forced_results(n: u32, b: Bounds, captured_mover: u32, captured_opponent: u32) -> (Forced, Forced) {
    let total = captured_mover + captured_opponent + n;
    let mover = 2 * (captured_mover + u32::from(b.mover));
    let opponent = 2 * (captured_opponent + u32::from(b.opponent));
    if mover > total {
        (Forced::Win, Forced::Loss)
    } else if opponent > total {
        (Forced::Loss, Forced::Win)
    } else if mover == total && opponent == total {
        (Forced::Draw, Forced::Draw)
    } else {
        let one = |x: u32| if x == total { Forced::DrawOrBetter } else { Forced::DecidedByRepetition };
        (one(mover), one(opponent))
    }
}

/// Number of pairs `(gM, gN)` with `gM + gN <= n`.
pub fn pairs(n: u32) -> u32 {
    (n + 1) * (n + 2) / 2
}

/// Bits per entry in layer `n`: the fewest that hold [`pairs`]`(n)` codes.
pub fn width(n: u32) -> u32 {
    32 - (pairs(n) - 1).leading_zeros()
}

/// Payload bytes of layer `n`'s bounds: `ceil(layer_size(n) * width(n) / 8)`.
pub(crate) fn payload_len(n: u32) -> u64 {
    (layer_size(n) * u64::from(width(n))).div_ceil(8)
}

/// The code of `b` in layer `n`: pairs in order of `gM`, then `gN`.
///
/// # Panics
/// In debug builds, when `gM + gN > n`.
pub fn code(n: u32, b: Bounds) -> u32 {
    let (m, o) = (u32::from(b.mover), u32::from(b.opponent));
    debug_assert!(m + o <= n, "bounds {m} + {o} exceed {n} stones");
    // Pairs with a smaller gM: (n + 1) + n + ... + (n + 2 - m).
    m * (2 * n + 3 - m) / 2 + o
}

/// Decodes the entries of one layer's payload.
///
/// Cost: building it, O(n^2) (a table of every pair); a lookup, one unaligned read and a table
/// read.
#[derive(Clone, Debug)]
pub struct Codec {
    n: u32,
    width: u32,
    table: Vec<Bounds>,
}

impl Codec {
    /// The codec of layer `n`.
    pub fn new(n: u32) -> Codec {
        let mut table = Vec::with_capacity(pairs(n) as usize);
        for m in 0..=n {
            for o in 0..=n - m {
                table.push(Bounds { mover: m as u8, opponent: o as u8 });
            }
        }
        Codec { n, width: width(n), table }
    }

    /// The layer.
    pub fn stones(&self) -> u32 {
        self.n
    }

    /// The raw code of entry `i` of `payload` (any value the bits hold, valid or not).
    ///
    /// # Panics
    /// When entry `i` lies beyond `payload`.
    #[inline]
    pub fn raw(&self, payload: &[u8], i: u64) -> u32 {
        if self.width == 0 {
            return 0;
        }
        let bit = i * u64::from(self.width);
        let at = (bit / 8) as usize;
        let word = if at + 4 <= payload.len() {
            u32::from_le_bytes([payload[at], payload[at + 1], payload[at + 2], payload[at + 3]])
        } else {
            let mut w = [0u8; 4];
            let tail = &payload[at..];
            w[..tail.len()].copy_from_slice(tail);
            u32::from_le_bytes(w)
        };
        (word >> (bit % 8)) & ((1 << self.width) - 1)
    }

    /// The raw code of entry `i` from `bytes`, the payload from entry `i`'s first byte
    /// ([`byte_of`](Self::byte_of)) on: as many of its next 4 bytes as the payload has (a reader
    /// that fetches the entry alone, with `pread`).
    pub(crate) fn raw_from(&self, bytes: &[u8], i: u64) -> u32 {
        if self.width == 0 {
            return 0;
        }
        let bit = i * u64::from(self.width);
        let mut w = [0u8; 4];
        let k = bytes.len().min(4);
        w[..k].copy_from_slice(&bytes[..k]);
        (u32::from_le_bytes(w) >> (bit % 8)) & ((1 << self.width) - 1)
    }

    /// The pair with code `c`, if `c` is a valid code of the layer.
    #[inline]
    pub fn decode(&self, c: u32) -> Option<Bounds> {
        self.table.get(c as usize).copied()
    }

    /// Entry `i` of `payload`; an invalid code (only in a damaged file, which the checksum
    /// catches first) reads as `None`.
    ///
    /// # Panics
    /// When entry `i` lies beyond `payload`.
    #[inline]
    pub fn get(&self, payload: &[u8], i: u64) -> Option<Bounds> {
        self.decode(self.raw(payload, i))
    }

    /// The address of the byte holding the start of entry `i` (for prefetching).
    #[inline]
    pub(crate) fn byte_of(&self, i: u64) -> usize {
        (i * u64::from(self.width) / 8) as usize
    }
}

/// Writes entries `first..` of a layer's payload into `out`, the payload bytes of those entries:
/// `first` must be a multiple of 8, `out` must start at entry `first`'s byte and hold exactly the
/// bytes of the entries given (the payload's tail for the last range).
///
/// Cost: one sequential pass.
///
/// # Panics
/// When `first` is not a multiple of 8 or `out` has the wrong length.
pub(crate) fn pack_into(n: u32, first: u64, entries: impl ExactSizeIterator<Item = Bounds>, out: &mut [u8]) {
    assert_eq!(first % 8, 0, "bounds ranges start at multiples of 8");
    let w = width(n);
    let count = entries.len() as u64;
    assert_eq!(out.len() as u64, (count * u64::from(w)).div_ceil(8), "wrong payload slice for {count} entries");
    let (mut acc, mut bits, mut at) = (0u64, 0u32, 0usize);
    for b in entries {
        acc |= u64::from(code(n, b)) << bits;
        bits += w;
        while bits >= 8 {
            out[at] = acc as u8;
            at += 1;
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out[at] = acc as u8;
    }
}

/// The payload byte range of entries `range` (`range.start` a multiple of 8, or the range
/// reaching the layer's end).
pub(crate) fn byte_range(n: u32, range: std::ops::Range<u64>) -> std::ops::Range<usize> {
    let w = u64::from(width(n));
    ((range.start * w / 8) as usize)..((range.end * w).div_ceil(8) as usize)
}

/// What a layer's bounds say beside its values (`tally`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Positions whose final split is forced (`gM + gN = n`).
    pub forced: u64,
    /// Positions whose even-split value lies strictly inside the bounds
    /// (`2 gM - n < v < n - 2 gN`): the repetition rule can change their result.
    pub strictly_inside: u64,
    /// The first position whose entry is no valid code, or whose bounds contradict its value:
    /// its index, the raw code and the value.
    pub first_bad: Option<(u64, u32, i8)>,
}

/// Counts forced splits and values strictly inside the bounds over layer `n`, and finds the
/// first entry that is no valid code or contradicts its value `values[i]`.
///
/// Parameters: `values`, the layer's values in index order; `payload`, its bounds payload.
///
/// Cost: one parallel pass over both.
///
/// # Panics
/// When `values` does not hold `layer_size(n)` values or `payload` is too short.
pub(crate) fn tally(n: u32, values: &[i8], payload: &[u8]) -> Tally {
    use rayon::prelude::*;
    assert_eq!(values.len() as u64, layer_size(n), "values of layer {n} have the wrong length");
    let codec = Codec::new(n);
    let chunk = 1u64 << 16;
    crate::index::ranges(0..layer_size(n), chunk)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|r| {
            let mut t = Tally::default();
            for i in r {
                let v = values[i as usize];
                match codec.get(payload, i) {
                    Some(b) if b.consistent_with(n, v) => {
                        t.forced += u64::from(b.forced(n));
                        let (m, o, n, v) = (i32::from(b.mover), i32::from(b.opponent), n as i32, i32::from(v));
                        t.strictly_inside += u64::from(2 * m - n < v && v < n - 2 * o);
                    }
                    _ => {
                        t.first_bad = Some((i, codec.raw(payload, i), v));
                        break;
                    }
                }
            }
            t
        })
        .reduce(Tally::default, |a, b| Tally {
            forced: a.forced + b.forced,
            strictly_inside: a.strictly_inside + b.strictly_inside,
            first_bad: a.first_bad.or(b.first_bad),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_results_follow_the_guaranteed_totals() {
        let b = |m, o| Bounds { mover: m, opponent: o };
        // 48-stone game, 12 on the board, 18 : 18 captured.
        assert_eq!(forced_results(12, b(7, 3), 18, 18), (Forced::Win, Forced::Loss));
        assert_eq!(forced_results(12, b(3, 7), 18, 18), (Forced::Loss, Forced::Win));
        assert_eq!(forced_results(12, b(6, 6), 18, 18), (Forced::Draw, Forced::Draw));
        assert_eq!(forced_results(12, b(6, 2), 18, 18), (Forced::DrawOrBetter, Forced::DecidedByRepetition));
        assert_eq!(forced_results(12, b(2, 2), 18, 18), (Forced::DecidedByRepetition, Forced::DecidedByRepetition));
        // Captures decide: 25 already is a win whatever the board.
        assert_eq!(forced_results(4, b(0, 0), 25, 19), (Forced::Win, Forced::Loss));
    }

    #[test]
    fn widths_hold_every_pair() {
        assert_eq!(width(0), 0);
        assert_eq!(width(1), 2);
        assert_eq!(width(21), 8);
        assert_eq!(width(22), 9);
        assert_eq!(width(30), 9);
        assert_eq!(width(31), 10);
        assert_eq!(width(44), 11);
        assert_eq!(width(48), 11);
        for n in 0..=48 {
            assert!(pairs(n) <= 1 << width(n));
            assert!(n == 0 || pairs(n) > 1 << (width(n) - 1));
        }
    }

    #[test]
    fn codes_are_a_bijection() {
        for n in 0..=48 {
            let c = Codec::new(n);
            for m in 0..=n {
                for o in 0..=n - m {
                    let b = Bounds { mover: m as u8, opponent: o as u8 };
                    assert_eq!(c.decode(code(n, b)), Some(b), "n={n} {b:?}");
                }
            }
            assert_eq!(c.decode(pairs(n)), None);
        }
    }

    #[test]
    fn packing_round_trips_in_pieces() {
        for n in [0u32, 1, 3, 7, 21, 22, 31, 48] {
            let count = 1000u64;
            let all: Vec<Bounds> = (0..count)
                .map(|i| {
                    let m = (i * 7 % (u64::from(n) + 1)) as u8;
                    Bounds { mover: m, opponent: ((i * 13) % (u64::from(n) - u64::from(m) + 1)) as u8 }
                })
                .collect();
            let len = (count * u64::from(width(n))).div_ceil(8) as usize;
            let mut out = vec![0u8; len];
            for r in crate::index::ranges(0..count, 64) {
                let bytes = byte_range(n, r.clone());
                pack_into(n, r.start, all[r.start as usize..r.end as usize].iter().copied(), &mut out[bytes]);
            }
            let c = Codec::new(n);
            for (i, b) in all.iter().enumerate() {
                assert_eq!(c.get(&out, i as u64), Some(*b), "n={n} i={i}");
            }
        }
    }
}
