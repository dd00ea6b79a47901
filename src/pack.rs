//! Packs: layers compressed for shipping and probed in place (`docs/FORMAT.md`, "Pack files").
//!
//! A pack file (`layer-NN.owpk`) holds the same values as a native layer in about 40 % of the
//! bytes and keeps random access: a probe decodes one block of [`BLOCK_VALUES`] values, not the
//! layer. The coder is a static range-ANS (rANS) coder whose probabilities depend on neighbours
//! already decoded, so it exploits what a general-purpose compressor cannot see: the value of the
//! previous position in index order, how the values of two positions one stone away differ from
//! it (a stone moved from pit 2 to pit 0, and from pit 3 to pit 2: both a short, computable
//! distance back in the index), and whether pits 0 and 1 hold stones. Each layer's model (one
//! frequency row per context, quantised to 2^12) is stored in the file.
//!
//! Layout: a 256-byte header (the pack fields, then the native layer header verbatim, whose
//! payload checksum covers the decoded values, so `unpack` restores the native file byte for
//! byte), the model (zstd-compressed), the coded blocks, and the block table (last, so a pack is
//! written in one pass with bounded memory). Blocks come in
//! groups of up to [`GROUP_BLOCKS`]; each group has an XXH3-64 checksum of its coded bytes, checked
//! before any of its values is used (all groups at open when checksums are verified, else each
//! group the first time a probe needs it): a damaged block is reported by layer and block and
//! its values are never returned.
//!
//! Cost of a probe: one `unrank` (about 50 ns), then on average `BLOCK_VALUES / 2` decoding steps
//! (a walker step, a context, a short scan of the context's 32-byte row and a renormalisation,
//! about 40 ns each, most of it waiting for the row: see `Model`).

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::Mmap;
use rayon::prelude::*;

use crate::error::{Damage, Error, Result};
use crate::format::{checksum, Header, HEADER_LEN};
use crate::index::{layer_size, unrank_unchecked, LayerWalker, MAX_STONES};
use crate::rules::Ruleset;

/// Magic bytes at the start of every pack file.
pub const PACK_MAGIC: [u8; 8] = *b"OWAREPK\x1a";
/// The pack format version this code writes and reads.
pub const PACK_VERSION: u32 = 1;
/// Bytes of the pack header: 128 bytes of pack fields, then the 128-byte native header.
pub const PACK_HEADER_LEN: usize = 256;
/// Codec 2: static rANS (2^12 precision, states in `2^16..2^24` flushed in 3 bytes, byte
/// renormalisation) restarted at each block, with contexts made of three neighbours already
/// decoded and two bits of the board (see `walk_contexts`). (Codec 1, with two neighbours, was
/// never released.)
pub const CODEC_RANS_NEIGHBOURS: u32 = 2;
/// Values per block: the unit a probe decodes (see the trade-off table in docs/performance.md).
pub const BLOCK_VALUES: u32 = 256;
/// Most blocks per group (the unit of checksums and of the table's 64-bit offsets; blocks within
/// a group have 16-bit offsets, so a group is never more than 64 KiB: see [`group_blocks`]).
pub const GROUP_BLOCKS: u32 = 64;

/// Blocks per group for blocks of `block_values` values: as many as fit in 64 KiB at the
/// coder's worst case (under 14 bits per value plus a state per block), at most
/// [`GROUP_BLOCKS`].
pub fn group_blocks(block_values: u32) -> u32 {
    (65535 / (block_values * 7 / 4 + 5)).clamp(1, GROUP_BLOCKS)
}

const M_BITS: u32 = 12;
const M: u32 = 1 << M_BITS;
const L_BITS: u32 = 16;
const L: u32 = 1 << L_BITS;
/// Bytes of a block's initial state: enough for a state below `L << 8`.
const STATE_BYTES: usize = (L_BITS as usize + 8).div_ceil(8);

// Pack header field offsets.
const OFF_VERSION: usize = 8;
const OFF_HEADER_LEN: usize = 12;
const OFF_CODEC: usize = 16;
const OFF_BLOCK: usize = 20;
const OFF_GROUP: usize = 24;
const OFF_MODEL: usize = 32;
const OFF_MODEL_LEN: usize = 40;
const OFF_TABLE: usize = 48;
const OFF_TABLE_LEN: usize = 56;
const OFF_DATA: usize = 64;
const OFF_DATA_LEN: usize = 72;
const OFF_MODEL_SUM: usize = 80;
const OFF_TABLE_SUM: usize = 88;
const OFF_HEADER_SUM: usize = 120;

fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Symbols of layer `n`: values `-n..=n` as `0..=2n`.
fn symbols(n: u32) -> usize {
    2 * n as usize + 1
}
/// Neighbour classes: a symbol, or "none" (`2n + 1`).
fn classes(n: u32) -> usize {
    2 * n as usize + 2
}
/// Classes of the second neighbour (one stone moved from pit 2 to pit 0): absent, or its
/// difference from the previous value, halved and clamped to `-2..=2`.
const SECOND: usize = 6;
/// Classes of the third neighbour (one stone moved from pit 3 to pit 2), like [`SECOND`].
const THIRD: usize = 6;
/// Contexts of layer `n`: previous value × second neighbour's class × third neighbour's class ×
/// whether pit 1 holds a stone (when it does, the previous position is the one with a stone
/// moved from pit 1 to pit 0; when it is empty, a farther jump of the index) × whether pit 0
/// does. Measured on awari layers 20..24, each part pays for itself: the third neighbour saves
/// about 2 % of the raw bytes, the two bits about 0.9 %; classes finer than `-2..=2` gain less
/// than 0.2 % while the larger model slows probes down (its rows stop fitting in the cache).
///
/// Cost: rows of 32 bytes per context, about 230 KB for layer 24.
fn contexts(n: u32) -> usize {
    classes(n) * SECOND * THIRD * 4
}

/// Size of the window of recent symbols a single probe keeps; a neighbour this far back or
/// farther is treated as absent (by the encoder too), so the window never wraps onto one in use.
const RING: usize = 512;

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
fn walk_contexts<E>(
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
            // The common step inline (the walker's first case), the rest out of line.
            if b[0] > 0 {
                b[0] -= 1;
                b[1] += 1;
            } else {
                LayerWalker::advance(&mut b);
            }
        }
        let near = |d: usize| d <= i && d < RING;
        // The previous value is absent only at `i = 0`, where every neighbour is.
        let prev = if i > 0 { syms[(i - 1) & mask] as usize } else { none };
        let d2 = b[0] as usize + b[1] as usize + 2;
        let up = if b[2] > 0 && near(d2) {
            let u = syms[(i - d2) & mask] as i32;
            ((u - prev as i32) / 2).clamp(-2, 2) as usize + 3
        } else {
            0
        };
        let s = d2 - 2 + b[2] as usize;
        let d3 = (s + 1) * (s + 2) / 2;
        let third = if b[3] > 0 && near(d3) {
            let w = syms[(i - d3) & mask] as i32;
            ((w - prev as i32) / 2).clamp(-2, 2) as usize + 3
        } else {
            0
        };
        let ctx = ((prev * SECOND + up) * THIRD + third) * 4 + usize::from(b[1] > 0) * 2 + usize::from(b[0] > 0);
        syms[i & mask] = f(i, ctx)?;
    }
    Ok(())
}

/// Entries held in a context's row (the rest, rarely used, are in [`Model::rest`]).
const ROW_ENTRIES: usize = 7;

/// A context's row: word 0 holds the index in [`Model::rest`] of its entries past the first
/// [`ROW_ENTRIES`] (bits 0..24) and its number of entries (bits 24..32); words 1.. its first
/// entries, most frequent first (packed, see [`pack_entry`]). 32 bytes, aligned: within one cache
/// line. (Up to layer 48 a model has under 2^21 entries and a context under 2^7.)
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Row([u32; ROW_ENTRIES + 1]);

/// A layer's model for decoding, laid out for few cache misses: one 32-byte row per context
/// holding its most frequent entries, so most decoding steps touch one cache line of the model.
struct Model {
    n: u32,
    rows: Vec<Row>,
    /// The entries past each row's first [`ROW_ENTRIES`], packed.
    rest: Vec<u32>,
}

/// An entry (start, frequency, symbol) in 32 bits: start below `M`, frequency at most `M`,
/// symbol below 128.
#[inline]
fn pack_entry(start: u32, freq: u32, sym: u32) -> u32 {
    start | freq << M_BITS | sym << (2 * M_BITS + 1)
}

#[inline]
fn unpack_entry(e: u32) -> (u32, u32, u8) {
    (e & (M - 1), (e >> M_BITS) & (2 * M - 1), (e >> (2 * M_BITS + 1)) as u8)
}

impl Model {
    /// The model of normalised frequencies `freq` (contexts × symbols, each used row summing to
    /// `M`), or `None` when a row does not sum to `M` or is out of shape.
    fn new(n: u32, freq: &[u16]) -> Option<Model> {
        let k = symbols(n);
        if freq.len() != contexts(n) * k {
            return None;
        }
        let mut rows = Vec::with_capacity(contexts(n));
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
            // Starts are assigned in order of decreasing frequency, so a decoder's scan of the
            // row usually stops at one of its first entries.
            order.clear();
            order.extend((0..k).filter(|&s| row[s] > 0));
            order.sort_by_key(|&s| (std::cmp::Reverse(row[s]), s));
            r.0[0] = rest.len() as u32 | (order.len() as u32) << 24;
            let mut start = 0u32;
            for (j, &s) in order.iter().enumerate() {
                let f = u32::from(row[s]);
                let e = pack_entry(start, f, s as u32);
                if j < ROW_ENTRIES {
                    r.0[j + 1] = e;
                } else {
                    rest.push(e);
                }
                start += f;
            }
            rows.push(r);
        }
        Some(Model { n, rows, rest })
    }

    /// The entries of context `ctx`, most frequent first.
    fn entries(&self, ctx: usize) -> impl Iterator<Item = (u32, u32, u8)> + '_ {
        let r = &self.rows[ctx].0;
        let count = (r[0] >> 24) as usize;
        let at = (r[0] & 0xff_ffff) as usize;
        let more = count.saturating_sub(ROW_ENTRIES);
        r[1..1 + count.min(ROW_ENTRIES)].iter().chain(&self.rest[at..at + more]).map(|&e| unpack_entry(e))
    }

    /// The entry of context `ctx` whose range holds `slot`, or `None` (only a damaged or foreign
    /// block reaches a context without one).
    #[inline]
    fn find(&self, ctx: usize, slot: u32) -> Option<(u32, u32, u8)> {
        let r = &self.rows.get(ctx)?.0;
        let count = (r[0] >> 24) as usize;
        let hit = |&(st, f, _): &(u32, u32, u8)| slot < st + f;
        if let Some(e) = r[1..1 + count.min(ROW_ENTRIES)].iter().map(|&e| unpack_entry(e)).find(hit) {
            return Some(e);
        }
        let at = (r[0] & 0xff_ffff) as usize;
        self.rest.get(at..at + count.checked_sub(ROW_ENTRIES)?)?.iter().map(|&e| unpack_entry(e)).find(hit)
    }

    /// The encoder's table: (start, freq) of each (context, symbol), `(0, 0)` for unused ones.
    ///
    /// Cost: `contexts × symbols` entries of 4 bytes (about 1.4 MB for layer 24).
    fn encoder(&self) -> Vec<(u16, u16)> {
        let k = symbols(self.n);
        let mut enc = vec![(0u16, 0u16); self.rows.len() * k];
        for ctx in 0..self.rows.len() {
            for (start, freq, sym) in self.entries(ctx) {
                enc[ctx * k + sym as usize] = (start as u16, freq as u16);
            }
        }
        enc
    }

    /// Normalises counts per context to rows summing to `M` (every seen symbol keeps at least 1).
    fn normalise(n: u32, counts: &[u64]) -> Vec<u16> {
        let k = symbols(n);
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

/// Codes one block (symbols `syms`, first index `start`) with the encoder table `enc` of layer
/// `n` and appends its bytes to `out`.
fn encode_block(n: u32, enc: &[(u16, u16)], start: u64, syms: &[u8], ctx: &mut Vec<u32>, out: &mut Vec<u8>) {
    let k = symbols(n);
    ctx.clear();
    let mut s = syms.to_vec();
    walk_contexts::<()>(n, start, syms.len(), &mut s, usize::MAX, |i, c| {
        ctx.push(c as u32);
        Ok(syms[i])
    })
    .expect("the encoder's closure never fails");
    let mut x = L;
    let mut rev = Vec::with_capacity(syms.len() / 2 + 8);
    for i in (0..syms.len()).rev() {
        let (st, f) = enc[ctx[i] as usize * k + syms[i] as usize];
        let (st, f) = (u32::from(st), u32::from(f));
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

/// Why a block failed to decode (only a damaged file, or a bug, can cause it: the bytes passed
/// their checksum).
#[derive(Debug)]
struct BadBlock;

/// Decodes the first `len` symbols of a coded block into `syms` at `i & mask` (see
/// [`walk_contexts`]). With `whole`, also checks that the block ends where it must (all its
/// bytes read, the final state the initial).
fn decode_block(model: &Model, start: u64, bytes: &[u8], len: usize, whole: bool, syms: &mut [u8], mask: usize) -> std::result::Result<(), BadBlock> {
    if bytes.len() < STATE_BYTES || model.n > MAX_STONES || start.saturating_add(len as u64) > layer_size(model.n) {
        return Err(BadBlock);
    }
    let mut x = bytes[..STATE_BYTES].iter().fold(0u32, |x, &b| (x << 8) | u32::from(b));
    let mut pos = STATE_BYTES;
    walk_contexts(model.n, start, len, syms, mask, |_, ctx| {
        let slot = x & (M - 1);
        let (low, freq, sym) = model.find(ctx, slot).ok_or(BadBlock)?;
        x = freq * (x >> M_BITS) + slot - low;
        let mut steps = 0;
        while x < L {
            let byte = *bytes.get(pos).unwrap_or(&0);
            x = (x << 8) | u32::from(byte);
            pos += 1;
            steps += 1;
            if steps > 3 {
                return Err(BadBlock);
            }
        }
        Ok(sym)
    })?;
    if pos > bytes.len() || (whole && (pos != bytes.len() || x != L)) {
        return Err(BadBlock);
    }
    Ok(())
}

/// How to pack: block size (values per block) and groups; the defaults are the measured choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackOptions {
    /// Values per block (a probe decodes half of one on average). 64..=16384.
    pub block_values: u32,
}

impl Default for PackOptions {
    fn default() -> PackOptions {
        PackOptions { block_values: BLOCK_VALUES }
    }
}

/// What [`pack_layer`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedLayer {
    /// Bytes of the pack file.
    pub bytes: u64,
    /// Bytes of the layer's values (one per position).
    pub raw: u64,
}

/// Writes layer `header.stones`'s `values` (its native payload, already checked against
/// `header`) as a pack to `out`, which must be empty and positioned at its start: the header is
/// written last, over its placeholder.
///
/// Cost: two parallel passes over the values (count the model, code the blocks); memory: the
/// model's counts per thread and the coded bytes of one batch of groups.
///
/// # Errors
/// [`Error::Corrupt`] when a value lies outside `-n..=n`; [`Error::Io`] when writing fails;
/// [`Error::Usage`] for a block size outside `64..=16384`.
pub fn pack_layer<W: Write + Seek>(header: &Header, values: &[u8], options: PackOptions, out: &mut W, out_path: &Path) -> Result<PackedLayer> {
    let n = header.stones;
    let b = options.block_values;
    if !(64..=16384).contains(&b) {
        return Err(Error::Usage(format!("pack block size {b} is outside 64..=16384")));
    }
    if values.len() as u64 != layer_size(n) || header.entries != values.len() as u64 {
        return Err(Error::Internal(format!("layer {n}: {} values, expected {}", values.len(), layer_size(n))));
    }
    let (k, x) = (symbols(n), contexts(n));
    let bu = b as usize;
    let gb = group_blocks(b) as usize;
    let group_values = bu * gb;
    let to_syms = |start: usize, vals: &[u8], syms: &mut Vec<u8>| -> Result<()> {
        syms.clear();
        for (i, &v) in vals.iter().enumerate() {
            let v = v as i8;
            if u32::from(v.unsigned_abs()) > n {
                return Err(Error::corrupt(out_path, Damage::ValueOutOfRange { index: (start + i) as u64, value: v, stones: n }));
            }
            syms.push((i32::from(v) + n as i32) as u8);
        }
        Ok(())
    };
    // Pass 1: the model (counts of each symbol in each context, per thread, then summed).
    let counts = values
        .par_chunks(group_values)
        .enumerate()
        .try_fold(
            || (vec![0u64; x * k], Vec::new(), Vec::new()),
            |(mut counts, mut syms, mut scratch), (g, chunk)| -> Result<_> {
                for (bi, block) in chunk.chunks(bu).enumerate() {
                    let start = g * group_values + bi * bu;
                    to_syms(start, block, &mut syms)?;
                    scratch.clone_from(&syms);
                    walk_contexts::<()>(n, start as u64, syms.len(), &mut scratch, usize::MAX, |i, ctx| {
                        counts[ctx * k + syms[i] as usize] += 1;
                        Ok(syms[i])
                    })
                    .expect("never fails");
                }
                Ok((counts, syms, scratch))
            },
        )
        .map(|r| r.map(|(counts, _, _)| counts))
        .try_reduce(
            || vec![0u64; x * k],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                Ok(a)
            },
        )?;
    let freq = Model::normalise(n, &counts);
    let model = Model::new(n, &freq).ok_or_else(|| Error::Internal("pack model does not normalise".into()))?;
    let enc = model.encoder();
    let raw_model: Vec<u8> = freq.iter().flat_map(|f| f.to_le_bytes()).collect();
    let model_bytes = zstd::bulk::compress(&raw_model, 19).map_err(|e| Error::io(out_path, e))?;

    let io = |e| Error::io(out_path, e);
    let mut h = [0u8; PACK_HEADER_LEN];
    out.write_all(&h).map_err(io)?;
    out.write_all(&model_bytes).map_err(io)?;

    // Pass 2: code the blocks, batches of groups in parallel, written in order.
    let blocks = values.len().div_ceil(bu);
    let groups = blocks.div_ceil(gb);
    let mut group_table: Vec<(u64, u64)> = Vec::with_capacity(groups);
    let mut block_table: Vec<u16> = Vec::with_capacity(blocks);
    let mut data_len = 0u64;
    const BATCH: usize = 256;
    for batch_start in (0..groups).step_by(BATCH) {
        let batch_end = (batch_start + BATCH).min(groups);
        let batch: Vec<Result<(Vec<u8>, Vec<u16>)>> = (batch_start..batch_end)
            .into_par_iter()
            .map(|g| {
                let from = g * group_values;
                let to = (from + group_values).min(values.len());
                let mut bytes = Vec::with_capacity((to - from) / 2);
                let mut offsets = Vec::with_capacity(gb);
                let (mut ctx, mut syms) = (Vec::with_capacity(bu), Vec::with_capacity(bu));
                for start in (from..to).step_by(bu) {
                    let end = (start + bu).min(to);
                    offsets.push(bytes.len() as u16);
                    to_syms(start, &values[start..end], &mut syms)?;
                    encode_block(n, &enc, start as u64, &syms, &mut ctx, &mut bytes);
                }
                if bytes.len() > 65535 {
                    return Err(Error::Internal(format!("pack group {g} of layer {n} is {} bytes", bytes.len())));
                }
                Ok((bytes, offsets))
            })
            .collect();
        for r in batch {
            let (bytes, offsets) = r?;
            group_table.push((data_len, checksum(&bytes)));
            block_table.extend_from_slice(&offsets);
            data_len += bytes.len() as u64;
            out.write_all(&bytes).map_err(io)?;
        }
    }
    let mut table = Vec::with_capacity(groups * 16 + 8 + blocks * 2);
    for &(off, sum) in &group_table {
        table.extend_from_slice(&off.to_le_bytes());
        table.extend_from_slice(&sum.to_le_bytes());
    }
    table.extend_from_slice(&data_len.to_le_bytes());
    for &o in &block_table {
        table.extend_from_slice(&o.to_le_bytes());
    }
    out.write_all(&table).map_err(io)?;

    let model_off = PACK_HEADER_LEN as u64;
    let data_off = model_off + model_bytes.len() as u64;
    let table_off = data_off + data_len;
    h[..8].copy_from_slice(&PACK_MAGIC);
    let put32 = |h: &mut [u8], at: usize, v: u32| h[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let put64 = |h: &mut [u8], at: usize, v: u64| h[at..at + 8].copy_from_slice(&v.to_le_bytes());
    put32(&mut h, OFF_VERSION, PACK_VERSION);
    put32(&mut h, OFF_HEADER_LEN, PACK_HEADER_LEN as u32);
    put32(&mut h, OFF_CODEC, CODEC_RANS_NEIGHBOURS);
    put32(&mut h, OFF_BLOCK, b);
    put32(&mut h, OFF_GROUP, gb as u32);
    put64(&mut h, OFF_MODEL, model_off);
    put64(&mut h, OFF_MODEL_LEN, model_bytes.len() as u64);
    put64(&mut h, OFF_DATA, data_off);
    put64(&mut h, OFF_DATA_LEN, data_len);
    put64(&mut h, OFF_TABLE, table_off);
    put64(&mut h, OFF_TABLE_LEN, table.len() as u64);
    put64(&mut h, OFF_MODEL_SUM, checksum(&model_bytes));
    put64(&mut h, OFF_TABLE_SUM, checksum(&table));
    let hs = checksum(&h[..OFF_HEADER_SUM]);
    put64(&mut h, OFF_HEADER_SUM, hs);
    h[128..256].copy_from_slice(&header.encode());
    out.seek(SeekFrom::Start(0)).map_err(io)?;
    out.write_all(&h).map_err(io)?;
    out.seek(SeekFrom::End(0)).map_err(io)?;
    Ok(PackedLayer { bytes: table_off + table.len() as u64, raw: values.len() as u64 })
}

/// A pack file opened for probing: its model built, its table checked, its coded blocks
/// memory-mapped.
///
/// Invariants: the table's offsets are increasing and inside the file (checked at open), so
/// decoding never reads outside the map; a group's values are used only after its checksum
/// matched (`verified`).
pub struct PackLayer {
    header: Header,
    path: PathBuf,
    file: File,
    len: u64,
    map: Mmap,
    model: Model,
    block_values: u32,
    data_off: usize,
    groups: Vec<(u64, u64)>,
    data_len: u64,
    blocks: Vec<u16>,
    group_blocks: usize,
    verified: Vec<AtomicU64>,
}

impl std::fmt::Debug for PackLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackLayer").field("stones", &self.header.stones).field("path", &self.path).finish()
    }
}

/// The pack header's fields, checked.
struct PackFields {
    block_values: u32,
    model: (u64, u64),
    table: (u64, u64),
    data: (u64, u64),
    model_sum: u64,
    table_sum: u64,
}

fn decode_pack_header(bytes: &[u8], path: &Path, file_len: u64) -> Result<(PackFields, Header)> {
    let bad = |damage: Damage| Error::corrupt(path, damage);
    let field = |field: &'static str, expected: u64, found: u64| bad(Damage::HeaderField { field, expected, found });
    if bytes.len() < PACK_HEADER_LEN {
        return Err(bad(Damage::ShortHeader { len: bytes.len() as u64 }));
    }
    if bytes[..8] != PACK_MAGIC {
        let mut found = [0u8; 8];
        found.copy_from_slice(&bytes[..8]);
        return Err(bad(Damage::BadMagic { found }));
    }
    let version = get_u32(bytes, OFF_VERSION);
    if version != PACK_VERSION {
        return Err(field("pack version", PACK_VERSION.into(), version.into()));
    }
    let hl = get_u32(bytes, OFF_HEADER_LEN);
    if hl as usize != PACK_HEADER_LEN {
        return Err(field("pack header length", PACK_HEADER_LEN as u64, hl.into()));
    }
    let codec = get_u32(bytes, OFF_CODEC);
    if codec != CODEC_RANS_NEIGHBOURS {
        return Err(field("pack codec", CODEC_RANS_NEIGHBOURS.into(), codec.into()));
    }
    let block_values = get_u32(bytes, OFF_BLOCK);
    if !(64..=16384).contains(&block_values) {
        return Err(field("pack block values", BLOCK_VALUES.into(), block_values.into()));
    }
    let group = get_u32(bytes, OFF_GROUP);
    if group != group_blocks(block_values) {
        return Err(field("pack group blocks", group_blocks(block_values).into(), group.into()));
    }
    if let Some(i) = (96..OFF_HEADER_SUM).chain(28..32).find(|&i| bytes[i] != 0) {
        return Err(bad(Damage::NonZero { at: i as u64, byte: bytes[i] }));
    }
    let stored = get_u64(bytes, OFF_HEADER_SUM);
    let computed = checksum(&bytes[..OFF_HEADER_SUM]);
    if stored != computed {
        return Err(bad(Damage::HeaderChecksum { stored, computed }));
    }
    let header = Header::decode(&bytes[128..128 + HEADER_LEN], path)?;
    header.expect(crate::format::VALUE_EXACT_I8, path)?;
    let f = PackFields {
        block_values,
        model: (get_u64(bytes, OFF_MODEL), get_u64(bytes, OFF_MODEL_LEN)),
        table: (get_u64(bytes, OFF_TABLE), get_u64(bytes, OFF_TABLE_LEN)),
        data: (get_u64(bytes, OFF_DATA), get_u64(bytes, OFF_DATA_LEN)),
        model_sum: get_u64(bytes, OFF_MODEL_SUM),
        table_sum: get_u64(bytes, OFF_TABLE_SUM),
    };
    // The sections follow each other (header, model, data, table) and end the file.
    let ok = f.model.0 == PACK_HEADER_LEN as u64 && f.model.0.checked_add(f.model.1) == Some(f.data.0) && f.data.0.checked_add(f.data.1) == Some(f.table.0);
    if !ok {
        return Err(field("pack section offsets", PACK_HEADER_LEN as u64, f.model.0));
    }
    let end = f.table.0.saturating_add(f.table.1);
    if end != file_len {
        return Err(bad(Damage::Size { expected: end, found: file_len }));
    }
    Ok((f, header))
}

/// A damaged pack: `what` names the part (model, table, block).
fn damaged(path: &Path, what: String) -> Error {
    Error::corrupt(path, Damage::Pack { what })
}

impl PackLayer {
    /// Opens `path` as a pack of layer `n` of `rules`: checks the header, the model's and the
    /// table's checksums and the table's offsets, builds the decoding model and, with
    /// `verify_blocks`, checks every group's checksum now (else each group is checked the first
    /// time a probe needs it).
    ///
    /// Cost: one `mmap`, the model's decompression (at most a few MB), one pass over the table;
    /// with `verify_blocks`, one sequential read of the file.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the first damaged part; [`Error::RulesetMismatch`] /
    /// [`Error::LayerMismatch`] when the pack holds another ruleset or layer; [`Error::Io`].
    pub fn open(path: &Path, file: File, map: Mmap, rules: Ruleset, n: u32, verify_blocks: bool) -> Result<PackLayer> {
        let len = map.len() as u64;
        let (f, header) = decode_pack_header(&map, path, len)?;
        if header.rules != rules {
            return Err(Error::RulesetMismatch { path: path.into(), found: header.rules, expected: rules });
        }
        if header.stones != n || n > MAX_STONES {
            return Err(Error::LayerMismatch { path: path.into(), found: header.stones, expected: n });
        }
        let section = |(off, len): (u64, u64)| &map[off as usize..(off + len) as usize];
        let model_bytes = section(f.model);
        if checksum(model_bytes) != f.model_sum {
            return Err(damaged(path, "model checksum mismatch".into()));
        }
        let raw = zstd::bulk::decompress(model_bytes, contexts(n) * symbols(n) * 2).map_err(|_| damaged(path, "model does not decompress".into()))?;
        let freq: Vec<u16> = raw.chunks_exact(2).map(|p| u16::from_le_bytes([p[0], p[1]])).collect();
        let model = Model::new(n, &freq).ok_or_else(|| damaged(path, "model rows do not sum to 2^12".into()))?;
        let table = section(f.table);
        if checksum(table) != f.table_sum {
            return Err(damaged(path, "block table checksum mismatch".into()));
        }
        let bu = u64::from(f.block_values);
        let blocks = header.entries.div_ceil(bu);
        let gb = group_blocks(f.block_values) as usize;
        let groups = blocks.div_ceil(gb as u64);
        if f.table.1 != groups * 16 + 8 + blocks * 2 {
            return Err(damaged(path, format!("block table is {} bytes, expected {}", f.table.1, groups * 16 + 8 + blocks * 2)));
        }
        let mut gt = Vec::with_capacity(groups as usize);
        for g in 0..groups as usize {
            gt.push((get_u64(table, g * 16), get_u64(table, g * 16 + 8)));
        }
        let data_len = get_u64(table, groups as usize * 16);
        let bt_off = groups as usize * 16 + 8;
        let bt: Vec<u16> = (0..blocks as usize).map(|i| u16::from_le_bytes([table[bt_off + 2 * i], table[bt_off + 2 * i + 1]])).collect();
        // Offsets: groups increasing from 0, inside the data; blocks increasing from 0 within
        // their group, each at least the bytes of a state.
        if data_len != f.data.1 {
            return Err(damaged(path, "block table's data length disagrees with the header".into()));
        }
        for g in 0..groups as usize {
            let start = gt[g].0;
            let end = if g + 1 < groups as usize { gt[g + 1].0 } else { data_len };
            let first = g * gb;
            let last = (first + gb).min(blocks as usize);
            let mut ok = start <= end && end - start <= 65535 && (g > 0 || start == 0) && bt[first] == 0;
            for b in first..last {
                let bend = if b + 1 < last { u64::from(bt[b + 1]) } else { end - start };
                ok &= u64::from(bt[b]) + STATE_BYTES as u64 <= bend;
            }
            if !ok {
                return Err(damaged(path, format!("block table entry of group {g} is out of order")));
            }
        }
        let verified = (0..groups.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        let layer = PackLayer {
            header,
            path: path.into(),
            file,
            len,
            map,
            model,
            block_values: f.block_values,
            data_off: f.data.0 as usize,
            groups: gt,
            data_len,
            blocks: bt,
            group_blocks: gb,
            verified,
        };
        if verify_blocks {
            (0..layer.groups.len()).into_par_iter().try_for_each(|g| layer.check_group(g))?;
        }
        Ok(layer)
    }

    /// The native header the pack carries (its payload checksum covers the decoded values).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The layer number.
    pub fn stones(&self) -> u32 {
        self.header.stones
    }

    /// The pack file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Gives back the open file (the map is dropped).
    pub fn into_file(self) -> File {
        self.file
    }

    /// Values per block.
    pub fn block_values(&self) -> u32 {
        self.block_values
    }

    /// Bytes of the pack file.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// Checks that the file still has the length it had when it was mapped.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`] when `fstat` fails.
    pub fn check_unchanged(&self) -> Result<()> {
        let now = self.file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
        if now != self.len {
            return Err(Error::corrupt(&self.path, Damage::ChangedWhileOpen { opened: self.len, now }));
        }
        Ok(())
    }

    fn group_bytes(&self, g: usize) -> &[u8] {
        let start = self.groups[g].0;
        let end = self.groups.get(g + 1).map_or(self.data_len, |x| x.0);
        &self.map[self.data_off + start as usize..self.data_off + end as usize]
    }

    /// Checks group `g`'s checksum once (remembered).
    fn check_group(&self, g: usize) -> Result<()> {
        let word = &self.verified[g / 64];
        let bit = 1u64 << (g % 64);
        if word.load(Ordering::Acquire) & bit != 0 {
            return Ok(());
        }
        let computed = checksum(self.group_bytes(g));
        if computed != self.groups[g].1 {
            let first = g * self.group_blocks;
            let last = (first + self.group_blocks).min(self.blocks.len()) - 1;
            return Err(damaged(
                &self.path,
                format!("checksum mismatch in blocks {first}..={last} (group {g}; stored {:016x}, computed {computed:016x})", self.groups[g].1),
            ));
        }
        word.fetch_or(bit, Ordering::Release);
        Ok(())
    }

    /// The coded bytes of block `b`, after its group's checksum matched.
    fn block_bytes(&self, b: usize) -> Result<&[u8]> {
        let g = b / self.group_blocks;
        self.check_group(g)?;
        let group = self.group_bytes(g);
        let start = self.blocks[b] as usize;
        let last_of_group = (b + 1) % self.group_blocks == 0 || b + 1 == self.blocks.len();
        let end = if last_of_group { group.len() } else { self.blocks[b + 1] as usize };
        Ok(&group[start..end])
    }

    /// The value of position `index`.
    ///
    /// Cost: on average `block_values / 2` decoding steps (about 1-2 µs), plus the group's
    /// checksum the first time one of its values is read (unless checked at open).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] past the layer's end; [`Error::Corrupt`] naming the block
    /// when its checksum does not match or it does not decode.
    #[inline]
    pub fn get(&self, index: u64) -> Result<i8> {
        let n = self.header.stones;
        if index >= self.header.entries {
            return Err(Error::IndexOutOfRange { layer: n, index, size: self.header.entries });
        }
        let bu = u64::from(self.block_values);
        let b = (index / bu) as usize;
        let start = b as u64 * bu;
        let bytes = self.block_bytes(b)?;
        let mut ring = [0u8; RING];
        let upto = (index - start) as usize + 1;
        decode_block(&self.model, start, bytes, upto, false, &mut ring, RING - 1).map_err(|_| self.bad_block(b))?;
        Ok((i32::from(ring[(upto - 1) & (RING - 1)]) - n as i32) as i8)
    }

    #[cold]
    fn bad_block(&self, b: usize) -> Error {
        damaged(&self.path, format!("block {b} does not decode"))
    }

    /// Decodes every value into `out` (one byte per position, the native payload), in parallel,
    /// and checks it against the payload checksum of the native header.
    ///
    /// Cost: one parallel pass, about `entries` decoding steps in all.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the first damaged block, or the payload checksum's mismatch.
    pub fn decode_into(&self, out: &mut [u8]) -> Result<()> {
        let n = self.header.stones;
        let bu = self.block_values as usize;
        if out.len() as u64 != self.header.entries {
            return Err(Error::Internal(format!("decode_into: {} bytes for {} values", out.len(), self.header.entries)));
        }
        let gb = self.group_blocks;
        out.par_chunks_mut(bu * gb).enumerate().try_for_each(|(g, chunk)| {
            for (i, part) in chunk.chunks_mut(bu).enumerate() {
                let b = g * gb + i;
                let bytes = self.block_bytes(b)?;
                let len = part.len();
                decode_block(&self.model, (b * bu) as u64, bytes, len, true, part, usize::MAX).map_err(|_| self.bad_block(b))?;
                for s in part.iter_mut() {
                    *s = ((i32::from(*s) - n as i32) as i8) as u8;
                }
            }
            Ok(())
        })?;
        let computed = checksum(out);
        if computed != self.header.payload_checksum {
            return Err(Error::corrupt(&self.path, Damage::PayloadChecksum { stored: self.header.payload_checksum, computed }));
        }
        Ok(())
    }
}

/// Whether `bytes` (a file's first bytes) start like a pack file.
pub fn is_pack(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..8] == PACK_MAGIC
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer_values(n: u32, seed: u64) -> Vec<u8> {
        // Values with structure (runs, a skew) in -n..=n.
        let mut x = seed | 1;
        (0..layer_size(n))
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = if x % 4 == 0 { (x >> 8) % (2 * u64::from(n) + 1) } else { (i / 7) % (u64::from(n) + 1) };
                ((v as i32 - n as i32) as i8) as u8
            })
            .collect()
    }

    fn pack_and_open(n: u32, values: &[u8], block: u32) -> (tempfile::TempDir, PathBuf) {
        let header = Header::new(Ruleset::Awari, n, checksum(values));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p");
        let mut out = std::io::Cursor::new(Vec::new());
        let r = pack_layer(&header, values, PackOptions { block_values: block }, &mut out, &path).unwrap();
        let out = out.into_inner();
        assert_eq!(r.bytes, out.len() as u64);
        std::fs::write(&path, &out).unwrap();
        (dir, path)
    }

    fn open(path: &Path, n: u32, verify: bool) -> Result<PackLayer> {
        let file = File::open(path).unwrap();
        let map = unsafe { Mmap::map(&file) }.unwrap();
        PackLayer::open(path, file, map, Ruleset::Awari, n, verify)
    }

    #[test]
    fn round_trip_every_value() {
        for (n, block) in [(0, 64), (1, 64), (5, 64), (9, 512), (10, 100), (11, 16384)] {
            let values = layer_values(n, 7 + u64::from(n));
            let (_d, path) = pack_and_open(n, &values, block);
            let p = open(&path, n, true).unwrap();
            let mut out = vec![0u8; values.len()];
            p.decode_into(&mut out).unwrap();
            assert_eq!(out, values, "layer {n} block {block}");
            // Every value of small blocks; a sample (and every block's ends) of large ones.
            let step = if block > 1024 { 97 } else { 1 };
            let bu = block as usize;
            let ends = (0..values.len()).filter(|i| i % bu == 0 || i % bu == bu - 1);
            for i in (0..values.len()).step_by(step).chain(ends) {
                assert_eq!(p.get(i as u64).unwrap(), values[i] as i8, "layer {n} index {i}");
            }
            assert!(p.get(values.len() as u64).is_err());
        }
    }

    #[test]
    fn every_damaged_byte_is_caught_or_harmless() {
        let n = 6;
        let values = layer_values(n, 99);
        let (_d, path) = pack_and_open(n, &values, 64);
        let good = std::fs::read(&path).unwrap();
        for at in (0..good.len()).step_by(53).chain(0..PACK_HEADER_LEN + 8) {
            let mut bad = good.clone();
            bad[at] ^= 0x21;
            std::fs::write(&path, &bad).unwrap();
            // Either the open or a read fails, or every value read is still right; never a panic.
            let Ok(p) = open(&path, n, false) else { continue };
            let mut wrong = false;
            for i in (0..values.len()).step_by(5) {
                match p.get(i as u64) {
                    Ok(v) => wrong |= v != values[i] as i8,
                    Err(e) => assert!(matches!(e, Error::Corrupt { .. }), "{e}"),
                }
            }
            assert!(!wrong, "flip at byte {at} gave a wrong value");
            let mut out = vec![0u8; values.len()];
            if at >= PACK_HEADER_LEN {
                // Anything in the model, table or data: the full decode refuses or is exact.
                if p.decode_into(&mut out).is_ok() {
                    assert_eq!(out, values);
                }
            }
        }
    }

    #[test]
    fn decoder_survives_garbage() {
        let n = 8;
        let values = layer_values(n, 3);
        let freq = {
            let mut counts = vec![0u64; contexts(n) * symbols(n)];
            for (i, x) in counts.iter_mut().enumerate() {
                *x = (i as u64 * 2654435761) % 5;
            }
            Model::normalise(n, &counts)
        };
        let model = Model::new(n, &freq).unwrap();
        let mut x = 1u64;
        for len in [0usize, 1, 3, 4, 5, 50, 400] {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (x >> 33) as u8
                })
                .collect();
            let mut syms = vec![0u8; 512];
            let _ = decode_block(&model, 0, &bytes, 512.min(values.len()), true, &mut syms, usize::MAX);
            let mut ring = [0u8; RING];
            let _ = decode_block(&model, 0, &bytes, 300, false, &mut ring, RING - 1);
        }
    }
}
