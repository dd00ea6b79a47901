//! The coding of one block: contexts from neighbours already decoded, the model (one
//! frequency row per context) and a static entropy coder: rANS (codecs 2 to 5) or a range coder
//! (codecs 6 and 7), behind [`BlockDecoder`].
//!
//! Two kinds of packs share the coder and differ in their [`Contexts`]: the values of a layer
//! ([`ValueContexts`]) and its depths to capture ([`DtcContexts`], whose contexts also read
//! the positions' values).

use crate::index::{layer_size, unrank_unchecked, LayerWalker, MAX_STONES};
use crate::rules::Board;

use super::*;

/// Symbols of layer `n`: values `-n..=n` as `0..=2n`.
pub(super) fn symbols(n: u32) -> usize {
    2 * n as usize + 1
}
/// Neighbour classes: a symbol, or "none" (`2n + 1`).
pub(super) fn classes(n: u32) -> usize {
    2 * n as usize + 2
}
/// Classes of the second neighbour (one stone moved from pit 2 to pit 0): absent, or its
/// difference from the previous value, halved and clamped to `-2..=2`.
pub(super) const SECOND: usize = 6;
/// Classes of the third neighbour (one stone moved from pit 3 to pit 2), like [`SECOND`].
pub(super) const THIRD: usize = 6;
/// Contexts of layer `n`: previous value × second neighbour's class × third neighbour's class ×
/// whether pit 1 holds a stone (when it does, the previous position is the one with a stone
/// moved from pit 1 to pit 0; when it is empty, a farther jump of the index) × whether pit 0
/// does. Measured on awari layers 20..24, each part pays for itself: the third neighbour saves
/// about 2 % of the raw bytes, the two bits about 0.9 %; classes finer than `-2..=2` gain less
/// than 0.2 % while the larger model slows probes down (its rows stop fitting in the cache).
///
/// Cost: rows of 32 bytes per context, about 230 KB for layer 24.
pub(super) fn contexts(n: u32) -> usize {
    classes(n) * SECOND * THIRD * 4
}

/// Size of the window of recent symbols a single probe keeps; a neighbour this far back or
/// farther is treated as absent (by the encoder too), so the window never wraps onto one in use.
pub(super) const RING: usize = 512;

/// How a kind of pack gives each position of a block its context.
pub(super) trait Contexts {
    /// Symbols of the alphabet (at most 128).
    fn symbols(&self) -> usize;
    /// Number of contexts.
    fn contexts(&self) -> usize;
    /// Whether positions `start..start + len` can be walked (inside the layer, and for depths,
    /// their values at hand).
    fn fits(&self, start: u64, len: usize) -> bool;
    /// The contexts of a block's positions `start..start + len` (which must [`fit`](Self::fits);
    /// otherwise nothing is walked). `syms` holds the block's symbols at `i & mask`
    /// (`usize::MAX` for the whole block, `RING - 1` for the window a single probe keeps; only
    /// those before position `i` are read for position `i`); `f` gets each position's context
    /// and must return its symbol (the encoder returns the known one, the decoder the decoded
    /// one).
    fn walk<E>(
        &self,
        start: u64,
        len: usize,
        syms: &mut [u8],
        mask: usize,
        f: impl FnMut(usize, usize) -> std::result::Result<u8, E>,
    ) -> std::result::Result<(), E>;
}

/// The contexts of a layer's values (codec 2).
pub(super) struct ValueContexts(pub(super) u32);

impl Contexts for ValueContexts {
    fn symbols(&self) -> usize {
        symbols(self.0)
    }
    fn contexts(&self) -> usize {
        contexts(self.0)
    }
    fn fits(&self, start: u64, len: usize) -> bool {
        self.0 <= MAX_STONES && start.saturating_add(len as u64) <= layer_size(self.0)
    }
    #[inline]
    fn walk<E>(
        &self,
        start: u64,
        len: usize,
        syms: &mut [u8],
        mask: usize,
        f: impl FnMut(usize, usize) -> std::result::Result<u8, E>,
    ) -> std::result::Result<(), E> {
        walk_contexts(self.0, start, len, syms, mask, f)
    }
}

/// Moves `b` to the next board of its layer in index order: the common step inline (the
/// walker's first case), the rest out of line.
#[inline]
fn step(b: &mut Board) {
    if b[0] > 0 {
        b[0] -= 1;
        b[1] += 1;
    } else {
        LayerWalker::advance(b);
    }
}

/// The contexts of a block's positions. `syms` holds the block's symbols at `i & mask`
/// (`usize::MAX` for the whole block, `RING - 1` for the window a single probe keeps; only those
/// before position `i` are read for position `i`); `f` gets each position's context and must
/// return its symbol (the encoder returns the known one, the decoder the decoded one).
///
/// The neighbours of the board `b` at position `i` of the block, each used when it lies in the
/// block (`d <= i`) and less than [`RING`] back:
/// - the previous position (`d = 1`);
/// - when `b[2] > 0`, the board with one stone moved from pit 2 to pit 0
///   (`d = b[0] + b[1] + 2`);
/// - when `b[3] > 0`, the board with one stone moved from pit 3 to pit 2
///   (`d = (s + 1)(s + 2) / 2` with `s = b[0] + b[1] + b[2]`).
///
/// The range must lie inside the layer (callers check it; outside, nothing is walked).
///
/// Cost: one walker step and a few operations per position.
#[inline]
pub(super) fn walk_contexts<E>(
    n: u32,
    start: u64,
    len: usize,
    syms: &mut [u8],
    mask: usize,
    mut f: impl FnMut(usize, usize) -> std::result::Result<u8, E>,
) -> std::result::Result<(), E> {
    let none = classes(n) - 1;
    if len == 0 || n > MAX_STONES || start.saturating_add(len as u64) > layer_size(n) {
        return Ok(());
    }
    let mut b = unrank_unchecked(n, start);
    for i in 0..len {
        if i > 0 {
            step(&mut b);
        }
        let near = |d: usize| d <= i && d < RING;
        // The previous value is absent only at `i = 0`, where every neighbour is.
        let prev = if i > 0 { syms[(i - 1) & mask] as usize } else { none };
        let d2 = b[0] as usize + b[1] as usize + 2;
        let up = if b[2] > 0 && near(d2) {
            let u = syms[(i - d2) & mask] as i32;
            (((u - prev as i32) / 2).clamp(-2, 2) + 3) as usize
        } else {
            0
        };
        let s = d2 - 2 + b[2] as usize;
        let d3 = (s + 1) * (s + 2) / 2;
        let third = if b[3] > 0 && near(d3) {
            let w = syms[(i - d3) & mask] as i32;
            (((w - prev as i32) / 2).clamp(-2, 2) + 3) as usize
        } else {
            0
        };
        let ctx = ((prev * SECOND + up) * THIRD + third) * 4 + usize::from(b[1] > 0) * 2 + usize::from(b[0] > 0);
        syms[i & mask] = f(i, ctx)?;
    }
    Ok(())
}

/// Symbols of a depths pack: a depth `0..=125` as itself, a deeper one as [`DTC_DEEP`] (its
/// depth in the pack's table of deep depths), no depth (value 0) as [`DTC_NONE`].
pub(super) const DTC_SYMBOLS: usize = 128;
/// The greatest depth coded as itself.
pub(super) const DTC_DIRECT_MAX: u16 = 125;
/// The symbol of a depth above [`DTC_DIRECT_MAX`].
pub(super) const DTC_DEEP: u8 = 126;
/// The symbol of a position of value 0.
pub(super) const DTC_NONE: u8 = 127;
/// Classes of the previous depth: `0..=11` (11 for 11 and more, and for a deep depth), none
/// (value 0), absent (the block's first position).
const DTC_PREV: usize = 14;
/// Classes of the depth one stone moved from pit 2 to pit 0: absent, none, the previous one
/// none, or the difference from the previous depth clamped to `-3..=3`.
const DTC_UP: usize = 10;

/// The contexts of a layer's depths to capture (codec 3): the position's value × the previous
/// depth's class × the class of the depth with one stone moved from pit 2 to pit 0 (as
/// [`walk_contexts`] finds it) × whether pit 0 holds a stone. The value decides most: a
/// position of value 0 has no depth (its row has one symbol, coded in no bits), and the depths'
/// spread differs by value; the previous depth is the next best predictor. Measured
/// (docs/performance.md, "Depths packed"): the value alone leaves 34–41 % of the raw bytes, with
/// the previous depth 31–36 %, with the neighbour and the bit 29–33 %; finer contexts (the pit 3
/// neighbour, pit 1's bit, 32 classes of the previous depth) cost more in the model than they
/// save.
///
/// `values` holds the values of positions `base..`, one byte each (as in a layer file).
pub(super) struct DtcContexts<'a> {
    pub(super) n: u32,
    pub(super) base: u64,
    pub(super) values: &'a [u8],
}

impl DtcContexts<'_> {
    /// The class of a symbol as a previous depth.
    #[inline]
    fn prev_class(s: u8) -> usize {
        match s {
            DTC_NONE => DTC_PREV - 2,
            s => usize::from(s).min(DTC_PREV - 3),
        }
    }
}

impl Contexts for DtcContexts<'_> {
    fn symbols(&self) -> usize {
        DTC_SYMBOLS
    }
    fn contexts(&self) -> usize {
        symbols(self.n) * DTC_PREV * DTC_UP * 2
    }
    fn fits(&self, start: u64, len: usize) -> bool {
        self.n <= MAX_STONES
            && start.saturating_add(len as u64) <= layer_size(self.n)
            && start >= self.base
            && (start - self.base).saturating_add(len as u64) <= self.values.len() as u64
    }
    #[inline]
    fn walk<E>(
        &self,
        start: u64,
        len: usize,
        syms: &mut [u8],
        mask: usize,
        mut f: impl FnMut(usize, usize) -> std::result::Result<u8, E>,
    ) -> std::result::Result<(), E> {
        if len == 0 || !self.fits(start, len) {
            return Ok(());
        }
        let n = self.n as i32;
        let values = &self.values[(start - self.base) as usize..];
        let mut b = unrank_unchecked(self.n, start);
        for i in 0..len {
            if i > 0 {
                step(&mut b);
            }
            let v = (i32::from(values[i] as i8) + n).clamp(0, 2 * n) as usize;
            let (prev, up) = if i == 0 {
                (DTC_PREV - 1, 0)
            } else {
                let p = syms[(i - 1) & mask];
                let d2 = b[0] as usize + b[1] as usize + 2;
                let up = if b[2] > 0 && d2 <= i && d2 < RING {
                    match (syms[(i - d2) & mask], p) {
                        (DTC_NONE, _) => 1,
                        (_, DTC_NONE) => 2,
                        (u, p) => ((i32::from(u) - i32::from(p)).clamp(-3, 3) + 6) as usize,
                    }
                } else {
                    0
                };
                (Self::prev_class(p), up)
            };
            let eq = i > 0 && values[i - 1] == values[i];
            let _ = eq;
            let ctx = ((v * DTC_PREV + prev) * DTC_UP + up) * 2 + usize::from(b[0] > 0);
            syms[i & mask] = f(i, ctx)?;
        }
        Ok(())
    }
}

/// Entries held in a context's row (the rest, rarely used, are in [`Model::rest`]).
pub(super) const ROW_ENTRIES: usize = 7;

/// A context's row, laid out for a branch-free search: `starts[j]` is the first slot of its
/// `j`-th entry (entries most frequent first, so their ranges follow each other from 0), and
/// `starts[count]` the end of the last entry held (`M`, or the first slot of the entries in
/// [`Model::rest`]); the starts after it are `u16::MAX`. `syms[j]` is entry `j`'s symbol;
/// `rest` the index in [`Model::rest`] of the entries past the first [`ROW_ENTRIES`], `count`
/// the row's number of entries. 32 bytes, aligned: within one cache line. (Up to layer 48 a
/// model has under 2^21 entries and a context under 2^7.)
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub(super) struct Row {
    starts: [u16; ROW_ENTRIES + 1],
    syms: [u8; ROW_ENTRIES + 1],
    rest: u32,
    count: u32,
}

impl Default for Row {
    fn default() -> Row {
        Row { starts: [u16::MAX; ROW_ENTRIES + 1], syms: [0; ROW_ENTRIES + 1], rest: 0, count: 0 }
    }
}

/// A layer's model for decoding, laid out for few cache misses: one 32-byte row per context
/// holding its most frequent entries, so most decoding steps touch one cache line of the model.
pub(super) struct Model {
    /// Symbols of the alphabet.
    symbols: usize,
    rows: Vec<Row>,
    /// The entries past each row's first [`ROW_ENTRIES`], packed.
    rest: Vec<u32>,
}

/// An entry (start, frequency, symbol) in 32 bits: start below `M`, frequency at most `M`,
/// symbol below 128.
#[inline]
pub(super) fn pack_entry(start: u32, freq: u32, sym: u32) -> u32 {
    start | freq << M_BITS | sym << (2 * M_BITS + 1)
}

#[inline]
pub(super) fn unpack_entry(e: u32) -> (u32, u32, u8) {
    (e & (M - 1), (e >> M_BITS) & (2 * M - 1), (e >> (2 * M_BITS + 1)) as u8)
}

impl Model {
    /// The model of normalised frequencies `freq` (`contexts` rows of `k` symbols, each used
    /// row summing to `M`), or `None` when a row does not sum to `M` or is out of shape.
    pub(super) fn new(contexts: usize, k: usize, freq: &[u16]) -> Option<Model> {
        if k == 0 || k > 128 || freq.len() != contexts * k {
            return None;
        }
        let mut rows = Vec::with_capacity(contexts);
        let mut rest = Vec::new();
        let mut order = Vec::with_capacity(k);
        for row in freq.chunks(k) {
            let mut r = Row::default();
            let total: u32 = row.iter().map(|&f| u32::from(f)).sum();
            if total == 0 {
                rows.push(r);
                continue;
            }
            if total != M {
                return None;
            }
            // Starts are assigned in order of decreasing frequency, so a decoder's search of the
            // row usually ends in its first entries.
            order.clear();
            order.extend((0..k).filter(|&s| row[s] > 0));
            order.sort_by_key(|&s| (std::cmp::Reverse(row[s]), s));
            r.rest = rest.len() as u32;
            r.count = order.len() as u32;
            let mut start = 0u32;
            for (j, &s) in order.iter().enumerate() {
                let f = u32::from(row[s]);
                if j < ROW_ENTRIES {
                    r.starts[j] = start as u16;
                    r.syms[j] = s as u8;
                } else {
                    if j == ROW_ENTRIES {
                        r.starts[j] = start as u16;
                    }
                    rest.push(pack_entry(start, f, s as u32));
                }
                start += f;
            }
            if order.len() <= ROW_ENTRIES {
                r.starts[order.len()] = M as u16;
            }
            rows.push(r);
        }
        Some(Model { symbols: k, rows, rest })
    }

    /// The entries of context `ctx`, most frequent first.
    pub(super) fn entries(&self, ctx: usize) -> impl Iterator<Item = (u32, u32, u8)> + '_ {
        let r = &self.rows[ctx];
        let count = r.count as usize;
        let held = count.min(ROW_ENTRIES);
        let more = count - held;
        let first = (0..held).map(move |j| {
            let st = u32::from(r.starts[j]);
            (st, u32::from(r.starts[j + 1]) - st, r.syms[j])
        });
        first.chain(self.rest[r.rest as usize..r.rest as usize + more].iter().map(|&e| unpack_entry(e)))
    }

    /// The entry of context `ctx` whose range holds `slot` (below `M`), or `None` (only a
    /// damaged or foreign block reaches a context without one).
    ///
    /// Cost: one row (one cache line) and seven comparisons without a branch; a slot past the
    /// row's entries (rare: the least frequent symbols) scans [`Model::rest`].
    #[inline]
    pub(super) fn find(&self, ctx: usize, slot: u32) -> Option<(u32, u32, u8)> {
        let r = self.rows.get(ctx)?;
        let slot = slot as u16;
        // The entries whose start is at most `slot`: `starts[0]` is 0 in a used row, and the
        // starts increase up to the end of the entries held, then are u16::MAX (above any slot).
        let j = r.starts[1..].iter().map(|&s| usize::from(s <= slot)).sum::<usize>();
        if j < ROW_ENTRIES {
            if r.count == 0 {
                return None;
            }
            let st = u32::from(r.starts[j]);
            return Some((st, u32::from(r.starts[j + 1]) - st, r.syms[j]));
        }
        let more = (r.count as usize).checked_sub(ROW_ENTRIES)?;
        let hit = |&(st, f, _): &(u32, u32, u8)| u32::from(slot) < st + f;
        self.rest.get(r.rest as usize..r.rest as usize + more)?.iter().map(|&e| unpack_entry(e)).find(hit)
    }

    /// Starts loading the row of context `ctx` (nothing for a context out of range).
    #[inline(always)]
    pub(super) fn prefetch(&self, ctx: usize) {
        if let Some(r) = self.rows.get(ctx) {
            crate::sys::prefetch(r);
        }
    }

    /// The encoder's table: (start, freq) of each (context, symbol), `(0, 0)` for unused ones.
    ///
    /// Cost: `contexts × symbols` entries of 4 bytes (about 1.4 MB for layer 24).
    pub(super) fn encoder(&self) -> Vec<(u16, u16)> {
        let k = self.symbols;
        let mut enc = vec![(0u16, 0u16); self.rows.len() * k];
        for ctx in 0..self.rows.len() {
            for (start, freq, sym) in self.entries(ctx) {
                enc[ctx * k + sym as usize] = (start as u16, freq as u16);
            }
        }
        enc
    }

    /// Normalises counts per context (rows of `k` symbols) to rows summing to `M` (every seen
    /// symbol keeps at least 1).
    pub(super) fn normalise(k: usize, counts: &[u64]) -> Vec<u16> {
        let mut freq = vec![0u16; counts.len()];
        for (row, out) in counts.chunks(k).zip(freq.chunks_mut(k)) {
            let total: u64 = row.iter().sum();
            if total == 0 {
                continue;
            }
            let mut sum = 0i64;
            for (c, f) in row.iter().zip(out.iter_mut()) {
                if *c > 0 {
                    let q = ((u128::from(*c) * u128::from(M) + u128::from(total) / 2) / u128::from(total)) as i64;
                    *f = q.max(1) as u16;
                    sum += i64::from(*f);
                }
            }
            // Give the difference to (or take it from) the largest entries, keeping each >= 1.
            let mut diff = i64::from(M) - sum;
            while diff != 0 {
                let i = (0..k).filter(|&i| out[i] > 1 || (diff > 0 && out[i] > 0)).max_by_key(|&i| out[i]).expect("a row has a symbol");
                let step = if diff > 0 { diff } else { diff.max(1 - i64::from(out[i])) };
                out[i] = (i64::from(out[i]) + step) as u16;
                diff -= step;
            }
        }
        freq
    }
}

/// The two entropy coders a block can be coded with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Coder {
    /// Static rANS (codecs 2 to 5): states in `L..L << 8`, flushed in [`STATE_BYTES`] bytes at
    /// the block's start.
    Rans,
    /// A 32-bit range coder with carries (codecs 6 and 7): a block ends with the fewest bytes that
    /// identify its final interval, and its trailing zero bytes are dropped (a decoder reads
    /// zeros past a block's end), so a block costs about one byte beyond its symbols.
    Range,
}

/// Codes one block (symbols `syms`, first index `start`, which must fit `cx`) with the encoder
/// table `enc` and `coder`, and appends its bytes to `out`.
pub(super) fn encode_block(coder: Coder, cx: &impl Contexts, enc: &[(u16, u16)], start: u64, syms: &[u8], ctx: &mut Vec<u32>, out: &mut Vec<u8>) {
    let k = cx.symbols();
    ctx.clear();
    let mut s = syms.to_vec();
    cx.walk::<()>(start, syms.len(), &mut s, usize::MAX, |i, c| {
        ctx.push(c as u32);
        Ok(syms[i])
    })
    .expect("the encoder's closure never fails");
    let entry = |i: usize| {
        let (st, f) = enc[ctx[i] as usize * k + syms[i] as usize];
        (u32::from(st), u32::from(f))
    };
    match coder {
        Coder::Rans => {
            let mut x = L;
            let mut rev = Vec::with_capacity(syms.len() / 2 + 8);
            for i in (0..syms.len()).rev() {
                let (st, f) = entry(i);
                let x_max = ((L >> M_BITS) << 8) * f;
                while x >= x_max {
                    rev.push(x as u8);
                    x >>= 8;
                }
                x = ((x / f) << M_BITS) + (x % f) + st;
            }
            rev.extend_from_slice(&x.to_le_bytes()[..STATE_BYTES]);
            rev.reverse();
            out.extend_from_slice(&rev);
        }
        Coder::Range => {
            let base = out.len();
            let mut e = RangeEncoder { low: 0, range: u32::MAX };
            for i in 0..syms.len() {
                let (st, f) = entry(i);
                e.encode(st, f, out, base);
            }
            e.finish(out, base);
        }
    }
}

/// The range coder's encoder: the interval `[low, low + range)` of the code value's last 32
/// bits (a carry past them is added to the bytes already out).
struct RangeEncoder {
    low: u64,
    range: u32,
}

/// A range below this shifts a byte out.
const RANGE_TOP: u32 = 1 << 24;

impl RangeEncoder {
    /// Narrows the interval to the symbol of start `st` and frequency `f` (out of `M`).
    fn encode(&mut self, st: u32, f: u32, out: &mut Vec<u8>, base: usize) {
        let r = self.range >> M_BITS;
        self.low += u64::from(r) * u64::from(st);
        self.range = r * f;
        self.carry(out, base);
        while self.range < RANGE_TOP {
            out.push((self.low >> 24) as u8);
            self.low = (self.low << 8) & u64::from(u32::MAX);
            self.range <<= 8;
        }
    }

    /// Adds a carry out of `low`'s 32 bits to the bytes of the block (from `base`) already out.
    /// (The code value of a block is below 1, so a carry never passes its first byte.)
    fn carry(&mut self, out: &mut [u8], base: usize) {
        if self.low >> 32 != 0 {
            self.low &= u64::from(u32::MAX);
            for b in out[base..].iter_mut().rev() {
                *b = b.wrapping_add(1);
                if *b != 0 {
                    break;
                }
            }
        }
    }

    /// Ends the block: the value in the interval with the most trailing zero bytes, its
    /// leading bytes out, and then the block's trailing zero bytes dropped.
    fn finish(mut self, out: &mut Vec<u8>, base: usize) {
        let end = self.low + u64::from(self.range);
        for k in 0..=4u32 {
            let unit = 1u64 << (32 - 8 * k);
            let v = self.low.div_ceil(unit) * unit;
            if v < end {
                self.low = v;
                self.carry(out, base);
                for j in 0..k {
                    out.push((self.low >> (24 - 8 * j)) as u8);
                }
                break;
            }
        }
        while out.len() > base && out[out.len() - 1] == 0 {
            out.pop();
        }
    }
}

/// A block's decoder: its coder's state and the bytes it has read.
pub(super) trait BlockDecoder: Sized {
    /// The decoder at the start of a block of `bytes`.
    ///
    /// # Errors
    /// [`BadBlock`] when the bytes cannot start a block.
    fn start(bytes: &[u8]) -> std::result::Result<Self, BadBlock>;
    /// Decodes the next symbol with the row of context `ctx`.
    ///
    /// # Errors
    /// [`BadBlock`] when the state leaves the coder's range (a damaged block).
    fn next(&mut self, model: &Model, ctx: usize, bytes: &[u8]) -> std::result::Result<u8, BadBlock>;
    /// Checks the end: no byte read past the block's end; with `whole` (every symbol of the
    /// block decoded), that the block ends exactly there.
    ///
    /// # Errors
    /// [`BadBlock`] otherwise.
    fn finish(&self, bytes: &[u8], whole: bool) -> std::result::Result<(), BadBlock>;
}

/// The rANS decoder (codecs 2 to 5).
pub(super) struct RansDecoder {
    x: u32,
    pos: usize,
}

impl BlockDecoder for RansDecoder {
    #[inline(always)]
    fn start(bytes: &[u8]) -> std::result::Result<Self, BadBlock> {
        if bytes.len() < STATE_BYTES {
            return Err(BadBlock);
        }
        let x = bytes[..STATE_BYTES].iter().fold(0u32, |x, &b| (x << 8) | u32::from(b));
        if x < L {
            return Err(BadBlock);
        }
        Ok(RansDecoder { x, pos: STATE_BYTES })
    }

    #[inline(always)]
    fn next(&mut self, model: &Model, ctx: usize, bytes: &[u8]) -> std::result::Result<u8, BadBlock> {
        let slot = self.x & (M - 1);
        let (low, freq, sym) = model.find(ctx, slot).ok_or(BadBlock)?;
        let x = freq * (self.x >> M_BITS) + slot - low;
        // Renormalise without a branch: a state at least `L` before the step is at least 16
        // after it (`x >> M_BITS >= 16`), so at most two bytes bring it back to `L`. Bytes past
        // the block's end read as 0 (the end check refuses the block).
        let pos = self.pos;
        let b0 = u32::from(bytes.get(pos).copied().unwrap_or(0));
        let b1 = u32::from(bytes.get(pos + 1).copied().unwrap_or(0));
        let (one, two) = (x < L, x < L >> 8);
        let x1 = (x << 8) | b0;
        self.x = if two {
            (x1 << 8) | b1
        } else if one {
            x1
        } else {
            x
        };
        self.pos = pos + usize::from(one) + usize::from(two);
        if self.x < L {
            return Err(BadBlock);
        }
        Ok(sym)
    }

    fn finish(&self, bytes: &[u8], whole: bool) -> std::result::Result<(), BadBlock> {
        if self.pos > bytes.len() || (whole && (self.pos != bytes.len() || self.x != L)) {
            return Err(BadBlock);
        }
        Ok(())
    }
}

/// The range coder's decoder (codecs 6 and 7): `code` is the code value less the interval's low end,
/// below `range`.
pub(super) struct RangeDecoder {
    code: u32,
    range: u32,
    pos: usize,
}

impl BlockDecoder for RangeDecoder {
    #[inline(always)]
    fn start(bytes: &[u8]) -> std::result::Result<Self, BadBlock> {
        let byte = |i: usize| u32::from(bytes.get(i).copied().unwrap_or(0));
        Ok(RangeDecoder { code: byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3), range: u32::MAX, pos: 4 })
    }

    #[inline(always)]
    fn next(&mut self, model: &Model, ctx: usize, bytes: &[u8]) -> std::result::Result<u8, BadBlock> {
        let r = self.range >> M_BITS;
        let slot = self.code / r;
        if slot >= M {
            return Err(BadBlock);
        }
        let (low, freq, sym) = model.find(ctx, slot).ok_or(BadBlock)?;
        let code = self.code - r * low;
        let range = r * freq;
        if code >= range {
            return Err(BadBlock);
        }
        // Renormalise without a branch: a range of at least `RANGE_TOP` before the step is at
        // least `2^12` after it, so at most two bytes bring it back.
        let pos = self.pos;
        let b0 = u32::from(bytes.get(pos).copied().unwrap_or(0));
        let b1 = u32::from(bytes.get(pos + 1).copied().unwrap_or(0));
        let (one, two) = (range < RANGE_TOP, range < RANGE_TOP >> 8);
        let (c1, r1) = (code << 8 | b0, range << 8);
        (self.code, self.range) = if two {
            (c1 << 8 | b1, r1 << 8)
        } else if one {
            (c1, r1)
        } else {
            (code, range)
        };
        self.pos = pos + usize::from(one) + usize::from(two);
        Ok(sym)
    }

    fn finish(&self, bytes: &[u8], whole: bool) -> std::result::Result<(), BadBlock> {
        // Every byte of a block is read by the time its last symbol is (the encoder ends it
        // with at most the four bytes a decoder reads ahead), and its last byte is not 0.
        if whole && (bytes.len() > self.pos || bytes.last() == Some(&0)) {
            return Err(BadBlock);
        }
        Ok(())
    }
}

/// The class of a neighbour's symbol `u` against the previous symbol `p`, at
/// `CLASS[u + 128 - p]`: `clamp(trunc((u - p) / 2), -2, 2) + 3`, as [`walk_contexts`] computes
/// it (symbols are below 128, so the index stays in `1..384`).
const CLASS: [u8; 512] = {
    let mut t = [0u8; 512];
    let mut k = 0;
    while k < 512 {
        let c = (k as i32 - 128) / 2;
        t[k] = (if c < -2 {
            -2
        } else if c > 2 {
            2
        } else {
            c
        } + 3) as u8;
        k += 1;
    }
    t
};

/// What the context of a position of values takes from its board (see [`walk_contexts`]): the
/// distances back to its neighbours with one stone moved from pit 2 to pit 0 (`d2`, when
/// `b[2] > 0`, else 0) and from pit 3 to pit 2 (`d3`, when `b[3] > 0` and `d3 < RING`, else
/// 0), and its two bits. The walker's common step (a stone from pit 0 to pit 1) keeps both
/// distances, so a decoder recomputes them only on the walker's other steps.
#[derive(Clone, Copy)]
struct Shape {
    d2: usize,
    d3: usize,
    bits: usize,
}

impl Shape {
    #[inline(always)]
    fn of(b: &Board) -> Shape {
        let d2 = b[0] as usize + b[1] as usize + 2;
        let s = d2 - 2 + b[2] as usize;
        let d3 = (s + 1) * (s + 2) / 2;
        Shape { d2: if b[2] > 0 { d2 } else { 0 }, d3: if b[3] > 0 && d3 < RING { d3 } else { 0 }, bits: usize::from(b[1] > 0) * 2 + usize::from(b[0] > 0) }
    }

    /// The context at position `i` whose previous symbol is `prev`, the earlier ones in `ring`
    /// at `j % RING`: what [`walk_contexts`] computes. A neighbour at distance 1 is `prev`
    /// itself, so that a guess of `prev` for a position not yet decoded gives the context the
    /// guess implies.
    #[inline(always)]
    fn context(self, i: usize, prev: usize, ring: &[u8; RING]) -> usize {
        let class = |d: usize| {
            let u = if d == 1 { prev } else { usize::from(ring[i.wrapping_sub(d) & (RING - 1)]) };
            if d != 0 && d <= i {
                usize::from(CLASS[(u + 128 - prev) & 511])
            } else {
                0
            }
        };
        ((prev * SECOND + class(self.d2)) * THIRD + class(self.d3)) * 4 + self.bits
    }
}

/// Decodes the first `len` values of a coded block of layer `n` whose first position is
/// `start`: [`decode_block`] with [`ValueContexts`], specialised (the probes' hot loop). The
/// symbols go to `ring` at `i % RING` and to `out(i, symbol)`. Before decoding position `i`
/// (from the second on) it gives `ahead` the context of position `i + 1` as it would be if
/// position `i` repeated position `i - 1`'s symbol (the likeliest guess): readers prefetch that
/// row ([`Model::prefetch`]), so the load the next step waits on is often already on its way
/// (without it, `perf` put 41 % of the decoder's time on the load of its row).
///
/// Cost: `len` steps of about 230 instructions and one model row each.
///
/// # Errors
/// [`BadBlock`] as [`decode_block`].
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn decode_values<D: BlockDecoder>(
    model: &Model,
    n: u32,
    start: u64,
    bytes: &[u8],
    len: usize,
    whole: bool,
    ring: &mut [u8; RING],
    mut out: impl FnMut(usize, u8),
    mut ahead: impl FnMut(usize),
) -> std::result::Result<(), BadBlock> {
    if !ValueContexts(n).fits(start, len) || model.symbols != symbols(n) || model.rows.len() != contexts(n) {
        return Err(BadBlock);
    }
    let mut d = D::start(bytes)?;
    let mut prev = classes(n) - 1;
    let mut b = if len > 0 { unrank_unchecked(n, start) } else { [0; crate::rules::PITS] };
    let mut shape = Shape::of(&b);
    for i in 0..len {
        let ctx = shape.context(i, prev, ring);
        if i + 1 < len {
            if b[0] > 0 {
                // The common step keeps both distances; only the bits change.
                b[0] -= 1;
                b[1] += 1;
                shape.bits = 2 + usize::from(b[0] > 0);
            } else {
                LayerWalker::advance(&mut b);
                shape = Shape::of(&b);
            }
            if i > 0 {
                ahead(shape.context(i + 1, prev, ring));
            }
        }
        let sym = d.next(model, ctx, bytes)?;
        ring[i & (RING - 1)] = sym;
        out(i, sym);
        prev = usize::from(sym);
    }
    d.finish(bytes, whole)
}

/// Why a block failed to decode (only a damaged file, or a bug, can cause it: the bytes passed
/// their checksum).
#[derive(Debug)]
pub(super) struct BadBlock;

/// Decodes the first `len` symbols of a coded block into `syms` at `i & mask` (see
/// [`Contexts::walk`]). With `whole`, also checks that the block ends where it must (all its
/// bytes read, the final state the initial).
#[allow(clippy::too_many_arguments)]
pub(super) fn decode_block<D: BlockDecoder>(
    model: &Model,
    cx: &impl Contexts,
    start: u64,
    bytes: &[u8],
    len: usize,
    whole: bool,
    syms: &mut [u8],
    mask: usize,
) -> std::result::Result<(), BadBlock> {
    if !cx.fits(start, len) || model.symbols != cx.symbols() || model.rows.len() != cx.contexts() {
        return Err(BadBlock);
    }
    let mut d = D::start(bytes)?;
    cx.walk(start, len, syms, mask, |_, ctx| d.next(model, ctx, bytes))?;
    d.finish(bytes, whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast decoder of values against the generic walk: every symbol, and every guess of
    /// the next context whose premise holds (the symbol repeats) is that context.
    #[test]
    fn the_values_decoder_matches_the_walk_and_its_guesses_hold() {
        for (n, start, len, seed) in [(9u32, 0u64, 4000usize, 1u64), (12, 777, 512, 2), (14, 100_000, 3000, 3), (20, 5_000_000, 16384, 4)] {
            let k = symbols(n);
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut syms = Vec::with_capacity(len);
            for i in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Runs and jumps, so that both repeats and changes occur.
                let s = if x % 3 == 0 { (x >> 8) as usize % k } else { syms.last().copied().map_or(0, usize::from) };
                syms.push(if i % 50 == 0 { (i / 50) % k } else { s } as u8);
            }
            let mut reference = Vec::new();
            let mut scratch = syms.clone();
            walk_contexts::<()>(n, start, len, &mut scratch, usize::MAX, |i, c| {
                reference.push(c);
                Ok(syms[i])
            })
            .unwrap();
            let mut counts = vec![0u64; contexts(n) * k];
            for (c, &s) in reference.iter().zip(&syms) {
                counts[c * k + usize::from(s)] += 1;
            }
            let model = Model::new(contexts(n), k, &Model::normalise(k, &counts)).unwrap();
            check_coder::<RansDecoder>(Coder::Rans, &model, n, start, &syms, &reference);
            check_coder::<RangeDecoder>(Coder::Range, &model, n, start, &syms, &reference);
        }
    }

    /// One coder's round trip of a block (`syms` from `start`, contexts `reference`): the fast
    /// decoder gives every symbol and its guesses hold; a prefix decodes alike; a block cut
    /// short or extended by a zero byte is refused (or, cut short under the range coder, whose
    /// blocks carry no end mark, decodes to other symbols).
    fn check_coder<D: BlockDecoder>(coder: Coder, model: &Model, n: u32, start: u64, syms: &[u8], reference: &[usize]) {
        let len = syms.len();
        let (mut ctx, mut bytes) = (Vec::new(), Vec::new());
        encode_block(coder, &ValueContexts(n), &model.encoder(), start, syms, &mut ctx, &mut bytes);
        let (mut decoded, mut guesses) = (vec![0u8; len], Vec::new());
        let mut ring = [0u8; RING];
        decode_values::<D>(model, n, start, &bytes, len, true, &mut ring, |i, s| decoded[i] = s, |c| guesses.push(c)).unwrap();
        assert_eq!(decoded, syms, "{coder:?}, layer {n}");
        let mut generic = vec![0u8; len];
        decode_block::<D>(model, &ValueContexts(n), start, &bytes, len, true, &mut generic, usize::MAX).unwrap();
        assert_eq!(generic, syms, "{coder:?}, layer {n}");
        assert_eq!(guesses.len(), len - 2, "one guess per position from the third");
        let mut held = 0;
        for i in 1..len - 1 {
            if syms[i] == syms[i - 1] {
                assert_eq!(guesses[i - 1], reference[i + 1], "layer {n}, position {}", start + i as u64 + 1);
                held += 1;
            }
        }
        assert!(held > len / 4, "layer {n}: {held} repeats");
        let mut prefix = vec![0u8; 300.min(len)];
        decode_values::<D>(model, n, start, &bytes, prefix.len(), false, &mut ring, |i, s| prefix[i] = s, |_| {}).unwrap();
        assert_eq!(prefix[..], syms[..prefix.len()]);
        let cut = decode_values::<D>(model, n, start, &bytes[..bytes.len() - 1], len, true, &mut ring, |i, s| decoded[i] = s, |_| {});
        assert!(cut.is_err() || (coder == Coder::Range && decoded != syms), "{coder:?}, layer {n}: a block cut short");
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_values::<D>(model, n, start, &longer, len, true, &mut ring, |_, _| {}, |_| {}).is_err(), "{coder:?}, layer {n}: a block extended");
    }
}
