//! Depth to capture (dtc): how many plies best play takes to realize a position's value.
//!
//! # Definition
//!
//! A move of position `p` *keeps the value* when `captured - v(child) == v(p)` (for a capture,
//! `child` is in a smaller layer; a move that ends the game is worth its ending value). Then:
//!
//! - a position whose game is over (no legal move) has `dtc = 0`;
//! - for `v(p) > 0`, `dtc(p) = 1 + min` over the value-keeping moves of `0` for a capture or a
//!   move that ends the game, else `dtc(child)`;
//! - for `v(p) < 0` the same with `max`;
//! - positions of value 0 have no dtc (`None`), the empty board included.
//!
//! It is the least solution of these equations: the winner realizes the value as fast as
//! possible, the loser delays as long as he can, both keeping the value. Following the winner's
//! least-dtc and the loser's greatest-dtc value-keeping moves reaches the first capture (by either
//! side) or the end of the game at exactly ply `dtc`. The equations have only one solution in
//! finite numbers, so a table that satisfies them at every position is the right one; this is
//! what the verifier checks ([`crate::verify`]).
//!
//! # Encoding (value encoding 3 of the layer format, `docs/FORMAT.md`)
//!
//! The payload of `dtc-NN.owdb` is:
//!
//! 1. one byte per position, in index order: the depth `0..=253`, [`ESCAPE`] (254) for a depth
//!    of 254 or more, or [`NONE`] (255) for a position of value 0;
//! 2. the escaped depths, sorted by index: one little-endian `u64` each, the index in bits
//!    0..47 and the depth in bits 48..63;
//! 3. their number, as a little-endian `u64`.
//!
//! Depths found so far stay below 254 in every layer built (the greatest up to layer 16 of awari
//! is 130, `docs/performance.md` lists them), so the table of escaped depths is empty or tiny and
//! one byte per position serves: the dtc file is as large as the values.

use rayon::prelude::*;

use crate::index::layer_size;

/// The byte of a position of value 0 (no dtc).
pub const NONE: u8 = 255;
/// The byte of a depth of 254 or more: the depth is in the table of escaped depths.
pub(crate) const ESCAPE: u8 = 254;
/// The greatest depth stored in the byte itself.
pub(crate) const DIRECT_MAX: u16 = 253;
/// Bytes of one escaped depth's record.
pub(crate) const RECORD_LEN: u64 = 8;
const INDEX_BITS: u32 = 48;

/// The byte that stores `depth` (`None`: the position's value is 0).
#[inline]
pub(crate) fn byte_of(depth: Option<u16>) -> u8 {
    match depth {
        None => NONE,
        Some(d) if d <= DIRECT_MAX => d as u8,
        Some(_) => ESCAPE,
    }
}

/// The record of an escaped depth.
#[inline]
pub(crate) fn record(index: u64, depth: u16) -> u64 {
    index | (u64::from(depth) << INDEX_BITS)
}

/// The index and depth a record holds (the inverse of [`record`]).
#[inline]
pub(crate) fn split_record(r: u64) -> (u64, u16) {
    (r & ((1 << INDEX_BITS) - 1), (r >> INDEX_BITS) as u16)
}

/// Payload bytes of layer `n`'s dtc with `escaped` escaped depths.
pub(crate) fn payload_len(n: u32, escaped: u64) -> u64 {
    layer_size(n) + RECORD_LEN * escaped + 8
}

/// A dtc payload split into its parts, with the lookup of one position's depth.
///
/// Invariant: `bytes` holds one byte per position of the layer; `records` a multiple of
/// [`RECORD_LEN`] bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DtcPayload<'a> {
    bytes: &'a [u8],
    records: &'a [u8],
}

/// What is wrong with a dtc payload or one of its entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BadDtc {
    /// The payload's length disagrees with its count of escaped depths.
    Length {
        /// Its length.
        len: u64,
        /// The count of escaped depths its last 8 bytes give.
        escaped: u64,
    },
    /// Position `index`'s byte is [`ESCAPE`] but the table has no record for it.
    NoRecord {
        /// The position's index.
        index: u64,
    },
    /// Record `k` of the escaped depths is out of order, names no escaped position, or holds a
    /// depth that needs no escape.
    BadRecord {
        /// The record's number.
        k: u64,
        /// The index it names.
        index: u64,
        /// The depth it holds.
        depth: u16,
    },
    /// Position `index`'s depth contradicts its value (a depth for value 0, or none for
    /// another value).
    ContradictsValue {
        /// The position's index.
        index: u64,
        /// The stored depth.
        dtc: Option<u16>,
        /// Its value.
        value: i8,
    },
}

impl std::fmt::Display for BadDtc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadDtc::Length { len, escaped } => write!(f, "a dtc payload of {len} bytes cannot hold {escaped} escaped depths"),
            BadDtc::NoRecord { index } => write!(f, "position {index} has an escaped depth but no record in the table"),
            BadDtc::BadRecord { k, index, depth } => {
                write!(f, "escaped depth {k} (position {index}, depth {depth}) is out of order, names no escaped position or needs no escape")
            }
            BadDtc::ContradictsValue { index, dtc, value } => match dtc {
                Some(d) => write!(f, "position {index} has depth to capture {d} but value {value}"),
                None => write!(f, "position {index} has no depth to capture but value {value}"),
            },
        }
    }
}

impl<'a> DtcPayload<'a> {
    /// Splits the payload of layer `n`'s dtc.
    ///
    /// Cost: constant.
    ///
    /// # Errors
    /// [`BadDtc::Length`] when its length disagrees with its last 8 bytes.
    pub(crate) fn new(n: u32, payload: &'a [u8]) -> Result<DtcPayload<'a>, BadDtc> {
        let size = layer_size(n);
        let len = payload.len() as u64;
        let escaped = match payload.len().checked_sub(8) {
            Some(at) => u64::from_le_bytes(payload[at..].try_into().expect("8 bytes")),
            None => u64::MAX,
        };
        if escaped > len || payload_len(n, escaped) != len {
            return Err(BadDtc::Length { len, escaped });
        }
        Ok(DtcPayload { bytes: &payload[..size as usize], records: &payload[size as usize..payload.len() - 8] })
    }

    /// One byte per position ([`byte_of`]).
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The number of escaped depths.
    pub(crate) fn escaped(&self) -> u64 {
        self.records.len() as u64 / RECORD_LEN
    }

    /// Escaped record `k`: (index, depth).
    pub(crate) fn escaped_record(&self, k: u64) -> (u64, u16) {
        let at = (k * RECORD_LEN) as usize;
        split_record(u64::from_le_bytes(self.records[at..at + 8].try_into().expect("8 bytes")))
    }

    /// The depth of position `i` (`None`: value 0).
    ///
    /// Cost: one byte read; for an escaped depth, a binary search of the table.
    ///
    /// # Errors
    /// [`BadDtc::NoRecord`] for an escaped depth without its record.
    ///
    /// # Panics
    /// When `i` is not an index of the layer.
    #[inline]
    pub(crate) fn get(&self, i: u64) -> Result<Option<u16>, BadDtc> {
        match self.bytes[i as usize] {
            NONE => Ok(None),
            ESCAPE => self.escaped_depth(i).map(Some).ok_or(BadDtc::NoRecord { index: i }),
            d => Ok(Some(u16::from(d))),
        }
    }

    fn escaped_depth(&self, i: u64) -> Option<u16> {
        let (mut lo, mut hi) = (0, self.escaped());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (j, d) = self.escaped_record(mid);
            match j.cmp(&i) {
                std::cmp::Ordering::Equal => return Some(d),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        None
    }
}

/// The depths of a layer counted: positions per depth, and the escaped ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Entry `d`: positions of depth `d`.
    pub(crate) histogram: Vec<u64>,
    /// Depths of 254 or more.
    pub(crate) escaped: u64,
}

/// Counts the depths of a layer's dtc payload and checks every entry against the layer's
/// `values`: a depth exactly where the value is not 0, and a table of escaped depths that holds
/// exactly the escaped positions, in order, each with a depth that needs the escape.
///
/// Cost: one parallel pass over the values and the position bytes, one over the table.
///
/// # Errors
/// The first fault found ([`BadDtc::ContradictsValue`], [`BadDtc::BadRecord`],
/// [`BadDtc::NoRecord`]).
pub(crate) fn tally(values: &[i8], payload: &DtcPayload) -> Result<Tally, BadDtc> {
    tally_released(values, payload, &|_| {})
}

/// As [`tally`], calling `done(range)` after each chunk of the pass over the positions with the
/// positions it covered (to give their pages back: `oware pack` within a memory limit).
///
/// # Errors
/// As [`tally`].
pub(crate) fn tally_released(values: &[i8], payload: &DtcPayload, done: &(dyn Fn(std::ops::Range<u64>) + Sync)) -> Result<Tally, BadDtc> {
    const CHUNK: usize = 1 << 20;
    let bytes = payload.bytes();
    let parts: Vec<Result<(Vec<u64>, u64), BadDtc>> = bytes
        .par_chunks(CHUNK)
        .zip(values.par_chunks(CHUNK))
        .enumerate()
        .map(|(c, (b, v))| {
            let mut hist = vec![0u64; DIRECT_MAX as usize + 1];
            let mut escaped = 0;
            for (k, (&byte, &value)) in b.iter().zip(v).enumerate() {
                match (byte, value) {
                    (NONE, 0) => {}
                    (NONE, _) => return Err(BadDtc::ContradictsValue { index: (c * CHUNK + k) as u64, dtc: None, value }),
                    (d, 0) => {
                        let dtc = if d == ESCAPE { payload.escaped_depth((c * CHUNK + k) as u64) } else { Some(u16::from(d)) };
                        return Err(BadDtc::ContradictsValue { index: (c * CHUNK + k) as u64, dtc, value: 0 });
                    }
                    (ESCAPE, _) => escaped += 1,
                    (d, _) => hist[d as usize] += 1,
                }
            }
            done((c * CHUNK) as u64..(c * CHUNK + b.len()) as u64);
            Ok((hist, escaped))
        })
        .collect();
    let mut histogram = vec![0u64; DIRECT_MAX as usize + 1];
    let mut escaped = 0;
    for part in parts {
        let (h, e) = part?;
        for (a, b) in histogram.iter_mut().zip(h) {
            *a += b;
        }
        escaped += e;
    }
    let mut previous = None;
    for k in 0..payload.escaped() {
        let (index, depth) = payload.escaped_record(k);
        let in_order = previous.map_or(true, |p| p < index);
        if !in_order || index >= bytes.len() as u64 || bytes[index as usize] != ESCAPE || depth <= DIRECT_MAX {
            return Err(BadDtc::BadRecord { k, index, depth });
        }
        previous = Some(index);
        if histogram.len() <= depth as usize {
            histogram.resize(depth as usize + 1, 0);
        }
        histogram[depth as usize] += 1;
    }
    if payload.escaped() != escaped {
        // More escaped positions than records: name the first without one.
        let index = (0..bytes.len() as u64).find(|&i| bytes[i as usize] == ESCAPE && payload.escaped_depth(i).is_none()).unwrap_or(0);
        return Err(BadDtc::NoRecord { index });
    }
    Ok(Tally { histogram, escaped })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_escaped_depths_round_trip() {
        let n = 3;
        let size = layer_size(n) as usize;
        let depths: Vec<Option<u16>> = (0..size)
            .map(|i| match i % 5 {
                0 => None,
                1 => Some(0),
                2 => Some(253),
                3 => Some(254 + i as u16),
                _ => Some(7),
            })
            .collect();
        let mut payload: Vec<u8> = depths.iter().map(|&d| byte_of(d)).collect();
        let escaped: Vec<(usize, u16)> = depths.iter().enumerate().filter_map(|(i, d)| d.filter(|&d| d > DIRECT_MAX).map(|d| (i, d))).collect();
        for &(i, d) in &escaped {
            payload.extend_from_slice(&record(i as u64, d).to_le_bytes());
        }
        payload.extend_from_slice(&(escaped.len() as u64).to_le_bytes());
        let p = DtcPayload::new(n, &payload).unwrap();
        assert_eq!(p.escaped(), escaped.len() as u64);
        for (i, &d) in depths.iter().enumerate() {
            assert_eq!(p.get(i as u64), Ok(d));
        }
        // A wrong count, a short payload, a missing record.
        let mut bad = payload.clone();
        let end = bad.len();
        bad[end - 8] ^= 1;
        assert!(matches!(DtcPayload::new(n, &bad), Err(BadDtc::Length { .. })));
        assert!(matches!(DtcPayload::new(n, &payload[..5]), Err(BadDtc::Length { .. })));
        let mut missing = payload.clone();
        missing[0] = ESCAPE;
        assert_eq!(DtcPayload::new(n, &missing).unwrap().get(0), Err(BadDtc::NoRecord { index: 0 }));
    }
}
