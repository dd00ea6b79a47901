//! The combinatorial indexer: a perfect rank of the boards of each layer.
//!
//! Layer `n` holds every `n`-stone board (mover-first) whose opponent row, pits 6..11, has at
//! least one empty pit. A board's index is its rank in ascending lexicographic order of the key
//! `(b[11], b[10], ..., b[0])`: the order of the published Romein–Bal files `scores.N`.
//!
//! Ranking walks the key from its most significant pit down, adding for each pit the number of
//! boards of the layer that agree on the pits already placed and hold fewer stones in this one.
//! Those counts come from prefix-summed tables built once ([`tables`]), so `rank` is a dozen table
//! lookups and `unrank` a short linear search per pit. [`LayerWalker`] steps through a layer in
//! index order without ranking at all.

use std::ops::Range;
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::rules::{Board, PITS, ROW};

/// The largest stone count any layer can have.
pub const MAX_STONES: u32 = 48;
const R: usize = MAX_STONES as usize + 2;

/// Binomial coefficient C(n, k) in exact 64-bit arithmetic (enough for every count used here).
pub const fn binomial(n: u64, k: u64) -> u64 {
    if k > n {
        return 0;
    }
    let k = if k > n - k { n - k } else { k };
    let mut r: u64 = 1;
    let mut i = 0;
    while i < k {
        // r * (n - i) is divisible by (i + 1) after multiplying: exact at every step.
        r = r * (n - i) / (i + 1);
        i += 1;
    }
    r
}

/// Number of boards in layer `n`: `C(n+11, 11) - C(n+5, 11)` (all boards minus those whose
/// opponent row has no empty pit). Exact for every `n` in 0..=48.
pub const fn layer_size(n: u32) -> u64 {
    let n = n as u64;
    let all = binomial(n + 11, 11);
    // Boards with all six opponent pits >= 1: remove one stone from each of them.
    let full = if n >= 6 { binomial(n - 6 + 11, 11) } else { 0 };
    all - full
}

/// Precomputed counting tables shared by [`rank`], [`unrank`] and friends.
///
/// `cnt[z][k][u]`: the number of ways to fill the `k` least significant key positions (pits
/// `k-1..0`) with `u` stones so that the whole board is in a layer, given whether an empty
/// opponent pit has already been placed (`z = 1`) or not (`z = 0`).
/// `cum[z][k][a]` = sum of `cnt[z][k][u]` for `u < a`.
pub struct Tables {
    cnt: [[[u64; R]; PITS + 1]; 2],
    cum: [[[u64; R + 1]; PITS + 1]; 2],
}

fn ways(k: usize, u: usize) -> u64 {
    // Ways to put u stones into k pits.
    if k == 0 {
        u64::from(u == 0)
    } else {
        binomial((u + k - 1) as u64, (k - 1) as u64)
    }
}

/// The tables, built on first use (a few microseconds) and shared by every thread.
pub fn tables() -> &'static Tables {
    static T: OnceLock<Box<Tables>> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = Box::new(Tables { cnt: [[[0; R]; PITS + 1]; 2], cum: [[[0; R + 1]; PITS + 1]; 2] });
        for k in 0..=PITS {
            for u in 0..R {
                t.cnt[1][k][u] = ways(k, u);
                // Without an empty opponent pit yet, the k - 6 opponent pits still to place
                // must include one: all fillings minus those with every such pit >= 1.
                t.cnt[0][k][u] = if k <= ROW {
                    0
                } else {
                    let opp = k - ROW;
                    ways(k, u) - if u >= opp { ways(k, u - opp) } else { 0 }
                };
            }
            for z in 0..2 {
                for a in 0..R {
                    t.cum[z][k][a + 1] = t.cum[z][k][a] + t.cnt[z][k][a];
                }
            }
        }
        t
    })
}

/// Checks that `board` belongs to layer `n` (n stones, an empty opponent pit).
///
/// # Errors
/// [`Error::NotInLayer`] naming what is wrong.
pub fn check_in_layer(n: u32, board: &Board) -> Result<()> {
    let total: u32 = board.iter().map(|&c| u32::from(c)).sum();
    if total != n {
        return Err(Error::NotInLayer { layer: n, reason: format!("the board holds {total} stones") });
    }
    if board[ROW..].iter().all(|&c| c > 0) {
        return Err(Error::NotInLayer {
            layer: n,
            reason: "the opponent's row (pits 6..11) has no empty pit".into(),
        });
    }
    Ok(())
}

/// Whether a board belongs to some layer, i.e. its opponent row has an empty pit.
#[inline]
pub fn in_some_layer(board: &Board) -> bool {
    board[ROW..].iter().any(|&c| c == 0)
}

/// The index of `board` in its layer (the layer is its stone count).
///
/// # Errors
/// [`Error::NotInLayer`] when the opponent row has no empty pit or the stones exceed 48.
pub fn rank(board: &Board) -> Result<u64> {
    let n: u32 = board.iter().map(|&c| u32::from(c)).sum();
    if n > MAX_STONES {
        return Err(Error::NotInLayer { layer: n, reason: format!("{n} stones; at most {MAX_STONES}") });
    }
    check_in_layer(n, board)?;
    Ok(rank_unchecked(board))
}

/// The index of a board known to be in its layer (at most 48 stones, an empty opponent pit).
///
/// Cost: 12 steps of two table lookups each; no allocation. Garbage (but no undefined
/// behaviour or panic in release builds) for a board outside every layer.
#[inline]
pub fn rank_unchecked(board: &Board) -> u64 {
    let t = tables();
    let mut rem: usize = board.iter().map(|&c| c as usize).sum();
    let mut idx = 0u64;
    let mut z = 0usize;
    for k in (0..PITS).rev() {
        let x = board[k] as usize;
        if x > 0 {
            let lo = rem + 1 - x;
            if z == 0 && k >= ROW {
                // v = 0 places the first empty opponent pit; v = 1..x-1 do not.
                idx += t.cnt[1][k][rem] + t.cum[0][k][rem] - t.cum[0][k][lo];
            } else {
                idx += t.cum[1][k][rem + 1] - t.cum[1][k][lo];
            }
        } else if k >= ROW {
            z = 1;
        }
        rem -= x;
    }
    idx
}

/// The board at `index` in layer `n`.
///
/// # Errors
/// [`Error::IndexOutOfRange`] when `n > 48` or `index >= layer_size(n)`.
pub fn unrank(n: u32, index: u64) -> Result<Board> {
    let size = if n <= MAX_STONES { layer_size(n) } else { 0 };
    if index >= size {
        return Err(Error::IndexOutOfRange { layer: n, index, size });
    }
    Ok(unrank_unchecked(n, index))
}

/// The board at `index` of layer `n`, for `n <= 48` and `index < layer_size(n)`.
///
/// Cost: one table lookup per stone and per pit (at most 60 steps); no allocation.
#[inline]
pub fn unrank_unchecked(n: u32, mut index: u64) -> Board {
    let t = tables();
    let mut board = [0u8; PITS];
    let mut rem = n as usize;
    let mut z = 0usize;
    for k in (1..PITS).rev() {
        let mut x = 0usize;
        loop {
            let zz = if k >= ROW && x == 0 { 1 } else { z };
            let c = t.cnt[zz][k][rem - x];
            if index < c {
                break;
            }
            index -= c;
            x += 1;
        }
        if k >= ROW && x == 0 {
            z = 1;
        }
        board[k] = x as u8;
        rem -= x;
    }
    board[0] = rem as u8;
    board
}

/// Walks the boards of a layer in index order, one step per board, without ranking.
///
/// Each step is the lexicographic successor of the key `(b[11], ..., b[0])` among boards of the
/// layer: usually two pit updates, occasionally a short scan, and a jump over runs of boards
/// whose opponent row is full.
#[derive(Clone, Debug)]
pub struct LayerWalker {
    board: Board,
    index: u64,
    end: u64,
}

impl LayerWalker {
    /// A walker over `range` of layer `n` (clamped to the layer's size).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] when `n > 48`.
    pub fn new(n: u32, range: Range<u64>) -> Result<LayerWalker> {
        if n > MAX_STONES {
            return Err(Error::IndexOutOfRange { layer: n, index: range.start, size: 0 });
        }
        let size = layer_size(n);
        let end = range.end.min(size);
        let start = range.start.min(end);
        let board = if start < size { unrank_unchecked(n, start) } else { [0; PITS] };
        Ok(LayerWalker { board, index: start, end })
    }

    /// The index of the board [`next`](Iterator::next) will return.
    pub fn position(&self) -> u64 {
        self.index
    }

    /// Moves `board` to the next board of the layer; false when there is none.
    #[inline]
    fn advance(b: &mut Board) -> bool {
        loop {
            let touched_opp;
            if b[0] > 0 {
                b[0] -= 1;
                b[1] += 1;
                touched_opp = false;
            } else {
                let Some(p) = (1..PITS).find(|&p| b[p] > 0) else { return false };
                if p == PITS - 1 {
                    return false;
                }
                let c = b[p];
                b[p] = 0;
                b[p + 1] += 1;
                b[0] = c - 1;
                touched_opp = p + 1 >= ROW;
            }
            if !touched_opp || b[ROW..].iter().any(|&c| c == 0) {
                return true;
            }
            // A full opponent row: every board with this opponent row is outside the layer.
            // Jump to the last of them (all own stones in pit 5) and step on from there.
            let own: u8 = b[..ROW].iter().sum();
            b[..ROW].fill(0);
            b[ROW - 1] = own;
        }
    }
}

impl Iterator for LayerWalker {
    type Item = (u64, Board);

    #[inline]
    fn next(&mut self) -> Option<(u64, Board)> {
        if self.index >= self.end {
            return None;
        }
        let item = (self.index, self.board);
        self.index += 1;
        if self.index < self.end {
            let more = Self::advance(&mut self.board);
            debug_assert!(more);
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.end - self.index) as usize;
        (left, Some(left))
    }
}

/// Splits layer `n` into consecutive index ranges of at most `chunk` boards, for parallel scans.
pub fn chunks(n: u32, chunk: u64) -> impl Iterator<Item = Range<u64>> + Clone {
    let size = layer_size(n.min(MAX_STONES));
    let chunk = chunk.max(1);
    (0..size.div_ceil(chunk)).map(move |i| i * chunk..((i + 1) * chunk).min(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_layers_round_trip() {
        for n in 0..=6 {
            let mut count = 0;
            for (i, b) in LayerWalker::new(n, 0..u64::MAX).unwrap() {
                assert_eq!(rank(&b).unwrap(), i);
                assert_eq!(unrank(n, i).unwrap(), b);
                count += 1;
            }
            assert_eq!(count, layer_size(n));
        }
    }

    #[test]
    fn layer_size_formula() {
        assert_eq!(layer_size(0), 1);
        assert_eq!(layer_size(1), 12);
        assert_eq!(layer_size(48), 203_648_015_935);
    }
}
