//! The combinatorial indexer: a perfect rank of the boards of each layer.
//!
//! Layer `n` holds every `n`-stone board (mover-first) whose opponent row, pits 6..11, has at
//! least one empty pit. A board's index is its rank in ascending lexicographic order of the key
//! `(b[11], b[10], ..., b[0])`: the order of the published Romein–Bal files `scores.N`.
//!
//! Ranking walks the key from its most significant pit down, adding for each pit the number of
//! boards of the layer that agree on the pits already placed and hold fewer stones in this one.
//! Those counts come from prefix-summed tables built once (`tables`), so `rank` is two table
//! lookups per pit without a branch, and `unrank` a branch-free count over a short window of one
//! table row per pit. [`LayerWalker`] steps through a layer in index order without ranking at all.

use std::ops::Range;
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::rules::{Board, PITS, ROW};

/// The largest stone count any layer can have.
pub const MAX_STONES: u32 = 48;
const R: usize = MAX_STONES as usize + 2;

/// Binomial coefficient C(n, k) in exact 64-bit arithmetic (enough for every count used here).
pub(crate) const fn binomial(n: u64, k: u64) -> u64 {
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
///
/// Cost: one table lookup for `n <= 48` (probes call it on every lookup), else the formula.
pub const fn layer_size(n: u32) -> u64 {
    if n <= MAX_STONES {
        LAYER_SIZES[n as usize]
    } else {
        layer_size_formula(n)
    }
}

/// [`layer_size`] of every layer, computed at compile time.
const LAYER_SIZES: [u64; MAX_STONES as usize + 1] = {
    let mut t = [0u64; MAX_STONES as usize + 1];
    let mut n = 0;
    while n <= MAX_STONES {
        t[n as usize] = layer_size_formula(n);
        n += 1;
    }
    t
};

const fn layer_size_formula(n: u32) -> u64 {
    let n = n as u64;
    let all = binomial(n + 11, 11);
    // Boards with all six opponent pits >= 1: remove one stone from each of them.
    let full = if n >= 6 { binomial(n - 6 + 11, 11) } else { 0 };
    all - full
}

/// Precomputed counting tables shared by [`rank`], [`unrank`] and friends.
///
/// For the `k` least significant key positions (pits `k-1..0`) and `u` stones, let
/// `cnt[z][k][u]` be the number of ways to fill them so that the whole board is in a layer, given
/// whether an empty opponent pit has already been placed (`z = 1`) or not (`z = 0`), and
/// `cum[z][k][a]` the sum of `cnt[z][k][u]` for `u < a`. When pit `k` is placed with `rem`
/// stones left for pits `k..0`, the boards that hold `v` stones in pit `k` number
/// `cnt[z'][k][rem - v]` (`z'` the state after the pit), so the boards holding fewer than `x`
/// stones there number `S(x) = top[k][z][rem] - low[k][z][PAD + rem + 1 - x]` for `x >= 1`
/// (and `S(0) = 0`), with
/// - `z = 1`: `top = cum[1][k][rem + 1]`, `low[PAD + j] = cum[1][k][j]`;
/// - `z = 0`: `top = cnt[1][k][rem] + cum[0][k][rem]` (the board with `v = 0` places the first
///   empty opponent pit), `low[PAD + j] = cum[0][k][j]`.
///
/// `low` is nondecreasing and starts with `PAD` zeros, so `unrank` can compare a fixed window of
/// entries below any position. Rows are 64 entries long so that `z` selects a row by a shift.
pub(crate) struct Tables {
    top: [[[u64; ROWLEN]; 2]; PITS],
    low: [[[u64; ROWLEN]; 2]; PITS],
}

/// Entries `unrank` compares at once for one pit before falling back to a scan. Each entry costs
/// about a cycle per pit; 6 covers nearly every pit of every layer (measured best for layers 16
/// to 48 among 4..=16).
const WINDOW: usize = 6;
/// Zeros in front of every `low` row (at least `WINDOW`).
const PAD: usize = WINDOW;
/// Length of a table row: room for `PAD + R + 1` entries, a power of two.
const ROWLEN: usize = 64;
const _: () = assert!(PAD >= WINDOW && PAD + R < ROWLEN);

fn ways(k: usize, u: usize) -> u64 {
    // Ways to put u stones into k pits.
    if k == 0 {
        u64::from(u == 0)
    } else {
        binomial((u + k - 1) as u64, (k - 1) as u64)
    }
}

/// The tables, built on first use (a few microseconds) and shared by every thread.
///
/// Cost: one atomic load after the first call; the tables take 24 KiB.
pub(crate) fn tables() -> &'static Tables {
    static T: OnceLock<Box<Tables>> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = Box::new(Tables { top: [[[0; ROWLEN]; 2]; PITS], low: [[[0; ROWLEN]; 2]; PITS] });
        for k in 0..PITS {
            // Without an empty opponent pit yet, the k - 6 opponent pits still to place must
            // include one: all fillings minus those with every such pit >= 1.
            let cnt0 = |u: usize| {
                if k <= ROW {
                    0
                } else {
                    let opp = k - ROW;
                    ways(k, u) - if u >= opp { ways(k, u - opp) } else { 0 }
                }
            };
            let cnt: [[u64; R]; 2] = [std::array::from_fn(cnt0), std::array::from_fn(|u| ways(k, u))];
            let mut cum = [[0u64; R + 1]; 2];
            for z in 0..2 {
                for a in 0..R {
                    cum[z][a + 1] = cum[z][a] + cnt[z][a];
                }
                t.low[k][z][PAD..PAD + R + 1].copy_from_slice(&cum[z]);
            }
            for rem in 0..R {
                t.top[k][1][rem] = cum[1][rem + 1];
                t.top[k][0][rem] = cnt[1][rem] + cum[0][rem];
            }
        }
        t
    })
}

/// Checks that `board` belongs to layer `n` (n stones, an empty opponent pit).
///
/// # Errors
/// [`Error::NotInLayer`] naming what is wrong.
pub(crate) fn check_in_layer(n: u32, board: &Board) -> Result<()> {
    let total: u32 = board.iter().map(|&c| u32::from(c)).sum();
    if total != n {
        return Err(Error::NotInLayer { layer: n, stones: total });
    }
    if board[ROW..].iter().all(|&c| c > 0) {
        return Err(Error::NotInLayer { layer: n, stones: n });
    }
    Ok(())
}

/// Whether a board belongs to some layer, i.e. its opponent row has an empty pit.
#[inline]
pub fn in_some_layer(board: &Board) -> bool {
    board[ROW..].contains(&0)
}

/// The index of `board` in its layer (the layer is its stone count).
///
/// # Errors
/// [`Error::NotInLayer`] when the opponent row has no empty pit or the stones exceed 48.
pub fn rank(board: &Board) -> Result<u64> {
    let n: u32 = board.iter().map(|&c| u32::from(c)).sum();
    if n > MAX_STONES {
        return Err(Error::NotInLayer { layer: MAX_STONES, stones: n });
    }
    check_in_layer(n, board)?;
    Ok(rank_unchecked(board))
}

/// The index of a board known to be in its layer (at most 48 stones, an empty opponent pit).
///
/// Cost: two table lookups per pit (11 pits), no branch on the board's contents, no allocation
/// (about 10 ns). A board with at most 48 stones but a full opponent row gives a meaningless
/// number (no panic, no undefined behaviour); a board with more than 48 stones may panic.
#[inline]
pub(crate) fn rank_unchecked(board: &Board) -> u64 {
    let t = tables();
    let mut rem: usize = board.iter().map(|&c| c as usize).sum();
    let mut idx = 0u64;
    let mut z = 0usize;
    // Opponent pits: S(x) from the tables of the current state, 0 when x = 0.
    for k in (ROW..PITS).rev() {
        let x = board[k] as usize;
        idx += term(t, k, z, rem, x);
        z |= usize::from(x == 0);
        rem -= x;
    }
    // Own pits 5..1 (pit 0 takes what is left and adds nothing): the state is z = 1 for every
    // board of a layer, and the formula gives S(0) = 0 by itself.
    for k in (1..ROW).rev() {
        let x = board[k] as usize;
        idx += t.top[k][1][rem] - t.low[k][1][PAD + rem + 1 - x];
        rem -= x;
    }
    idx
}

/// One pit's term of a rank: the boards of the layer that agree with the board on the pits
/// above `k` and hold fewer than `x` stones in pit `k`, with `rem` stones left for pits `k..0`
/// and `z` telling whether an empty opponent pit is among the pits above (see [`Tables`]).
#[inline(always)]
fn term(t: &Tables, k: usize, z: usize, rem: usize, x: usize) -> u64 {
    let s = t.top[k][z][rem] - t.low[k][z][PAD + rem + 1 - x];
    // S(0) = 0: the formula gives it in state z = 1 (every own pit), not in state z = 0.
    s & 0u64.wrapping_sub(u64::from(x != 0))
}

/// A board's rank split at every pit, so that a board differing from it in a few consecutive
/// pits is ranked from those pits alone: a predecessor of a position is its turned board with
/// the origin pit and the pits the move sowed changed ([`crate::rules::Unsown::changed`]), two
/// to four pits of the twelve in most moves.
///
/// The base board need not belong to a layer (a turned child's opponent row may be full): the
/// rank is a sum of per-pit terms, and the terms of the pits a board shares with the base, in
/// the same state, are the base's.
#[derive(Clone, Debug)]
pub(crate) struct RankBase {
    /// `above[k]`: the terms of pits `11..k + 1`, summed.
    above: [u64; PITS],
    /// `rem[k]`: the stones the base leaves for pits `k..0`.
    rem: [u8; PITS],
    /// `zero[k]`: whether an opponent pit above `k` is empty (1) or not (0).
    zero: [u8; PITS],
}

impl RankBase {
    /// The split rank of `base`, a board of at most 48 stones.
    ///
    /// Cost: one rank ([`rank_unchecked`]).
    #[inline]
    pub(crate) fn new(base: &Board) -> RankBase {
        let t = tables();
        let mut r = RankBase { above: [0; PITS], rem: [0; PITS], zero: [0; PITS] };
        let mut rem: usize = base.iter().map(|&c| c as usize).sum();
        let mut idx = 0u64;
        let mut z = 0usize;
        // Two loops of fixed length, as in `rank_unchecked`, so that both unroll.
        for k in (ROW..PITS).rev() {
            r.above[k] = idx;
            r.rem[k] = rem as u8;
            r.zero[k] = z as u8;
            let x = base[k] as usize;
            idx += term(t, k, z, rem, x);
            z |= usize::from(x == 0);
            rem -= x;
        }
        for k in (0..ROW).rev() {
            r.above[k] = idx;
            r.rem[k] = rem as u8;
            r.zero[k] = z as u8;
            let x = base[k] as usize;
            idx += t.top[k][1][rem] - t.low[k][1][PAD + rem + 1 - x];
            rem -= x;
        }
        r
    }

    /// The rank of `board`, which equals the base outside pits `lo..=hi` and holds as many
    /// stones as the base in them, with `lo <= 6`; `None` when `board` is in no layer (its
    /// opponent row is full). The same as `in_some_layer(board).then(|| rank_unchecked(board))`.
    ///
    /// Cost: one term per pit of `lo..=hi` (a full rank is eleven). Outside its contract it
    /// may panic or return a meaningless number (never undefined behaviour).
    #[inline]
    pub(crate) fn rank_changed(&self, board: &Board, lo: usize, hi: usize) -> Option<u64> {
        debug_assert!(lo <= ROW && lo <= hi && hi < PITS, "changed pits {lo}..={hi}");
        let t = tables();
        let mut idx = self.above[hi];
        let mut rem = self.rem[hi] as usize;
        let mut z = self.zero[hi] as usize;
        for k in (lo.max(1)..=hi).rev() {
            let x = board[k] as usize;
            if k >= ROW {
                idx += term(t, k, z, rem, x);
                z |= usize::from(x == 0);
            } else {
                idx += term(t, k, 1, rem, x);
            }
            rem -= x;
        }
        // The own pits below lo are the base's: their terms are the base's rank (`above[0]`, as
        // pit 0 adds nothing) less its terms down to pit lo. Every opponent pit is above hi
        // (the base's, in `zero`) or was just read (lo <= 6).
        let below = if lo > 0 { self.above[0] - self.above[lo - 1] } else { 0 };
        let got = (z != 0).then(|| idx + below);
        debug_assert_eq!(got, in_some_layer(board).then(|| rank_unchecked(board)), "{board:?} {lo}..={hi}");
        got
    }
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

/// One pit of an unrank: the stones `x` of pit `k` (its rows `low` and `top`, `rem` stones
/// left for pits `k..0`), and `index` reduced to the boards that agree on it.
///
/// Pit k takes the largest x with S(x) <= index (see [`Tables`]). With tt = top - index
/// (>= 1), S(x) <= index exactly when low[rem + 1 - x] >= tt for x >= 1; low is
/// nondecreasing, so x is the number of v >= 1 with low[rem + 1 - v] >= tt. That count runs
/// over a fixed window without branches (the PAD zeros in front of each row never count);
/// only a window full of hits needs a scan further down. Then index -= S(x).
#[inline(always)]
fn unrank_pit(low: &[u64; ROWLEN], top: &[u64; ROWLEN], rem: usize, index: &mut u64) -> usize {
    let tt = top[rem] - *index;
    let base = PAD + rem + 1;
    let mut x = 0usize;
    for v in 1..=WINDOW {
        x += usize::from(low[base - v] >= tt);
    }
    if x == WINDOW {
        while low[base - x - 1] >= tt {
            x += 1;
        }
    }
    // S(x) = top - low[base - x], so index - S(x) = low[base - x] - tt, for x >= 1; S(0) = 0
    // (in state z = 1 the formula gives that too, in state z = 0 it does not, and may wrap:
    // that value is thrown away).
    let next = low[base - x].wrapping_sub(tt);
    let keep = 0u64.wrapping_sub(u64::from(x == 0));
    *index = (next & !keep) | (*index & keep);
    x
}

/// The board at `index` of layer `n`, for `n <= 48` and `index < layer_size(n)`.
///
/// Cost: per pit, a branch-free comparison of `index` with a window of `WINDOW` (6) entries of
/// one table row, and a short scan only when the pit holds more stones than that; no allocation
/// (about 50 ns). Outside its domain it may panic or return a meaningless board (never undefined
/// behaviour).
#[inline]
pub fn unrank_unchecked(n: u32, index: u64) -> Board {
    let [board] = unrank_lanes(n, [index]);
    board
}

/// Unranks this many indices in lockstep in [`unrank_many`].
const LANES: usize = 8;

/// The boards at `indices` of layer `n`, in order, into `out` (its contents replaced), for
/// `n <= 48` and every index `< layer_size(n)`; the same boards as [`unrank_unchecked`] of each.
///
/// Cost: the same work per index as [`unrank_unchecked`], done for eight indices in lockstep.
/// One unrank is a chain of dependent table reads (each pit needs the index the pit before
/// leaves), so it waits on its own latency; eight independent chains overlap, and on this
/// project's machine an index took about a third of the time (`cargo bench --bench index`).
/// Outside its domain it may panic or return meaningless boards (never undefined behaviour).
pub(crate) fn unrank_many(n: u32, indices: &[u64], out: &mut Vec<Board>) {
    out.clear();
    out.reserve(indices.len());
    let mut groups = indices.chunks_exact(LANES);
    for group in &mut groups {
        out.extend_from_slice(&unrank_lanes::<LANES>(n, std::array::from_fn(|l| group[l])));
    }
    out.extend(groups.remainder().iter().map(|&i| unrank_unchecked(n, i)));
}

/// The boards at `index` of layer `n`, pit by pit for all `N` indices at once (see
/// [`unrank_pit`]): [`unrank_unchecked`] with `N = 1`, [`unrank_many`] with `N = LANES`.
#[inline(always)]
fn unrank_lanes<const N: usize>(n: u32, mut index: [u64; N]) -> [Board; N] {
    let t = tables();
    let mut boards = [[0u8; PITS]; N];
    let mut rem = [n as usize; N];
    let mut z = [0usize; N];
    // Opponent pits: the first empty one switches to state z = 1.
    for k in (ROW..PITS).rev() {
        for l in 0..N {
            let x = unrank_pit(&t.low[k][z[l]], &t.top[k][z[l]], rem[l], &mut index[l]);
            z[l] |= usize::from(x == 0);
            boards[l][k] = x as u8;
            rem[l] -= x;
        }
    }
    // Own pits 5..1 (every board of a layer is in state z = 1 by now); pit 0 takes the rest.
    for k in (1..ROW).rev() {
        for l in 0..N {
            let x = unrank_pit(&t.low[k][1], &t.top[k][1], rem[l], &mut index[l]);
            boards[l][k] = x as u8;
            rem[l] -= x;
        }
    }
    for l in 0..N {
        boards[l][0] = rem[l] as u8;
    }
    boards
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

    /// Moves `b` to the next board of the layer (the one after it in index order); false when
    /// there is none.
    ///
    /// Cost: usually two pit updates.
    #[inline]
    pub(crate) fn advance(b: &mut Board) -> bool {
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
            if !touched_opp || b[ROW..].contains(&0) {
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
    ranges(0..layer_size(n.min(MAX_STONES)), chunk)
}

/// Splits `range` into consecutive ranges of at most `chunk` (at least 1) indices.
pub fn ranges(range: Range<u64>, chunk: u64) -> impl Iterator<Item = Range<u64>> + Clone {
    let chunk = chunk.max(1);
    let (start, end) = (range.start, range.end.max(range.start));
    (0..(end - start).div_ceil(chunk)).map(move |i| start + i * chunk..start.saturating_add((i + 1).saturating_mul(chunk)).min(end))
}

#[cfg(test)]
mod tests;
