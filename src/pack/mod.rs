//! Packs: layers compressed for shipping and probed in place (`docs/FORMAT.md`, "Pack files").
//!
//! A pack file (`layer-NN.owpk`) holds the same values as a native layer in about 31 % of the
//! bytes (codec 6, values over their floors: see [`floor`]; 40 % in codec 2) and keeps random
//! access: a probe decodes one block of [`BLOCK_VALUES`] values, not the layer. The coder is a
//! static range coder (codecs 6 and 7; rANS in codecs 2 to 5) whose probabilities depend on
//! neighbours already decoded, so it exploits what a general-purpose compressor cannot see: the
//! value of the previous position in index order, how the values of two positions one stone
//! away differ from it (a stone moved from pit 2 to pit 0, and from pit 3 to pit 2: both a short,
//! computable distance back in the index), and whether pits 0 and 1 hold stones. Each layer's model (one
//! frequency row per context, quantised to 2^12) is stored in the file.
//!
//! Layout: a 256-byte header (the pack fields, then the native layer header verbatim, whose
//! payload checksum covers the decoded values, so `unpack` restores the native file byte for
//! byte), the model (zstd-compressed), the coded blocks, and the block table (last, so a pack is
//! written in one pass with bounded memory). Blocks come in
//! groups of up to `GROUP_BLOCKS`; each group has an XXH3-64 checksum of its coded bytes, checked
//! before any of its values is used (all groups at open when checksums are verified, else each
//! group the first time a probe needs it): a damaged block is reported by layer and block and
//! its values are never returned.
//!
//! Cost of a probe: one `unrank` (about 50 ns), then on average `BLOCK_VALUES / 2` decoding steps
//! (a walker step, a context, a short scan of the context's 32-byte row and a renormalisation,
//! about 15 ns each, most of it waiting for the row: see `Model`).
//!
//! A layer's depths to capture are packed the same way (`dtc-NN.owpk`, [`pack`],
//! `DtcPack`), with their own alphabet and contexts that also read the positions' values
//! (`docs/FORMAT.md`, "Depths packs").
//!
//! | module | what it is |
//! |---|---|
//! | `codec` | the contexts (of values, of depths), the model and the coding of one block (range coder or rANS) |
//! | `write` | packing a layer's values or its depths ([`pack`], told by the header) |
//! | `read` | an open pack, probed in place ([`PackLayer`], `DtcPack`) |
//! | `floor` | the floor of a position ([`floor`], [`floors`]), what a pack over floors (codecs 4 to 7) leaves to its readers |
//! | `buffers` | where a layer's floors and stored values wait while it is packed: memory or scratch files ([`PackBuffers`]) |

mod buffers;
mod codec;
mod floor;
mod read;
mod write;

pub(crate) use read::DtcPack;

pub use crate::sys::AnonymousPeak;
pub use buffers::{memory_limit, PackBuffers, ScratchPages};
pub(crate) use floor::{decided_depth, Exit};
pub use floor::{floor, floors, NO_FLOOR};
pub use read::PackLayer;
pub use write::{pack, pack_dtc_over, pack_floored, PackOptions, PackedLayer, Release};

/// Magic bytes at the start of every pack file.
pub(crate) const PACK_MAGIC: [u8; 8] = *b"OWAREPK\x1a";
/// The pack format version this code writes and reads.
pub(crate) const PACK_VERSION: u32 = 1;
/// Bytes of the pack header: 128 bytes of pack fields, then the 128-byte native header.
pub(crate) const PACK_HEADER_LEN: usize = 256;
/// Codec 2: static rANS (2^12 precision, states in `2^16..2^24` flushed in 3 bytes, byte
/// renormalisation) restarted at each block, with contexts made of three neighbours already
/// decoded and two bits of the board (see `walk_contexts`). (Codec 1, with two neighbours, was
/// never released.)
pub(crate) const CODEC_RANS_NEIGHBOURS: u32 = 2;
/// Codec 3: the same coder for a layer's depths to capture (`dtc-NN.owpk`), with contexts made
/// of the position's value, the previous depth, one neighbour and one bit of the board (see
/// `DtcContexts`), and a table of the depths too deep for a symbol.
pub(crate) const CODEC_RANS_DTC: u32 = 3;
/// Codec 4: codec 2's coder and contexts over *stored* values: at a position whose value its
/// floor reaches (a capture or an ending, [`floor`]) the symbol stored is whatever codes
/// cheapest not above the floor, and a reader takes the larger of the two (docs/FORMAT.md,
/// "Values over their floors").
pub(crate) const CODEC_RANS_FLOOR: u32 = 4;
/// Codec 5: codec 3's coder and contexts for depths to capture, the contexts reading the
/// values a pack of codec 4 or 6 stores rather than the layer's values.
pub(crate) const CODEC_RANS_DTC_STORED: u32 = 5;
/// Codec 6: codec 4's stored values and contexts, each block coded with a range coder instead
/// of rANS (a block ends with about one byte instead of a 3-byte state) and the block table
/// holding one byte per block (its length) instead of two (its offset): blocks of 64 values
/// cost less than codec 4's of 128, and a probe decodes a quarter as many values as with
/// codec 4's default of 256 (docs/FORMAT.md, "Range-coded blocks").
pub(crate) const CODEC_RANGE_FLOOR: u32 = 6;
/// Codec 7: codec 5's symbols, contexts and model (depths over floors, beside a values pack
/// over floors), each block range-coded as in codec 6.
pub(crate) const CODEC_RANGE_DTC_STORED: u32 = 7;

/// Whether `codec` stores values over their floors (codec 4 or 6).
pub(crate) fn is_floor_codec(codec: u32) -> bool {
    codec == CODEC_RANS_FLOOR || codec == CODEC_RANGE_FLOOR
}

/// The coder of `codec`'s blocks.
fn coder_of(codec: u32) -> codec::Coder {
    if codec == CODEC_RANGE_FLOOR || codec == CODEC_RANGE_DTC_STORED {
        codec::Coder::Range
    } else {
        codec::Coder::Rans
    }
}

/// The values per block a pack of `codec` may have: range-coded blocks (codecs 6 and 7) are at
/// most 128 values (their length, at most 12 bits a value and 5 bytes, fits a byte).
pub(crate) fn block_range(codec: u32) -> std::ops::RangeInclusive<u32> {
    if coder_of(codec) == codec::Coder::Range {
        RANGE_BLOCK_MIN..=RANGE_BLOCK_MAX
    } else {
        64..=16384
    }
}

/// The fewest values (or depths) per block of a range-coded pack (codecs 6 and 7).
pub const RANGE_BLOCK_MIN: u32 = 16;
/// The most values (or depths) per block of a range-coded pack (codecs 6 and 7).
pub const RANGE_BLOCK_MAX: u32 = 128;

/// Whether `codec` is one of depths to capture (with a table of deep depths).
pub(crate) fn is_dtc_codec(codec: u32) -> bool {
    matches!(codec, CODEC_RANS_DTC | CODEC_RANS_DTC_STORED | CODEC_RANGE_DTC_STORED)
}

/// Whether `codec` is one of depths whose contexts read the values a pack over floors stores
/// (codec 5 or 7).
pub(crate) fn is_dtc_stored_codec(codec: u32) -> bool {
    codec == CODEC_RANS_DTC_STORED || codec == CODEC_RANGE_DTC_STORED
}
/// Values per block: the unit a probe decodes (see the trade-off table in docs/performance.md).
/// Blocks of up to [`RANGE_BLOCK_MAX`] values are range-coded (codec 6); at 64 a pack takes
/// 31.1 % of awari 0..20's bytes and a probe decodes 32 values on average, against 30.0 % and
/// 128 with codec 4's rANS blocks of 256.
pub const BLOCK_VALUES: u32 = 64;
/// Depths per block of a depths pack: larger than [`BLOCK_VALUES`] since depths are probed less
/// often than values. Up to [`RANGE_BLOCK_MAX`] the blocks are range-coded (codec 7): on awari's
/// layers 0..20 the packed depths take 31.8 % of the dtc files with blocks of 128 (33.1 % with
/// 64), against 31.5 % in codec 5's rANS blocks of 512, whose probes decode four times as many
/// depths (and the values of four times as many positions).
pub const DTC_BLOCK_VALUES: u32 = 128;
/// Most blocks per group (the unit of checksums and of the table's 64-bit offsets; blocks within
/// a group have 16-bit offsets, so a group is never more than 64 KiB: see [`group_blocks`]).
pub(crate) const GROUP_BLOCKS: u32 = 64;

/// Blocks per group for blocks of `block_values` values: as many as fit in 64 KiB at the
/// coder's worst case (under 14 bits per value plus a state per block), at most
/// [`GROUP_BLOCKS`].
pub(crate) fn group_blocks(block_values: u32) -> u32 {
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
/// Depths packs only (zero in values packs): the table of deep depths' offset, length and
/// XXH3-64.
const OFF_DEEP: usize = 96;
const OFF_DEEP_LEN: usize = 104;
const OFF_DEEP_SUM: usize = 112;
const OFF_HEADER_SUM: usize = 120;

fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Whether `bytes` (a file's first bytes) start like a pack file.
pub(crate) fn is_pack(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..8] == PACK_MAGIC
}

#[cfg(test)]
mod tests {
    use super::codec::*;
    use super::*;
    use std::fs::File;
    use std::path::{Path, PathBuf};

    use memmap2::Mmap;

    use crate::error::{Error, Result};
    use crate::format::{checksum, Header};
    use crate::index::layer_size;
    use crate::rules::Ruleset;

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
        let r = pack(&header, values, values, PackOptions { block_values: block }, &mut out, &path, &path).unwrap();
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
        garbage::<codec::RansDecoder>();
        garbage::<codec::RangeDecoder>();
    }

    /// Random bytes through one coder's decoders: an error or some symbols, never a panic; the
    /// probes' decoder and the generic one agree on what decodes.
    fn garbage<D: codec::BlockDecoder>() {
        let n = 8;
        let values = layer_values(n, 3);
        let freq = {
            let mut counts = vec![0u64; contexts(n) * symbols(n)];
            for (i, x) in counts.iter_mut().enumerate() {
                *x = (i as u64 * 2654435761) % 5;
            }
            Model::normalise(symbols(n), &counts)
        };
        let model = Model::new(contexts(n), symbols(n), &freq).unwrap();
        let cx = ValueContexts(n);
        let mut x = 1u64;
        for len in [0usize, 1, 3, 4, 5, 50, 400] {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (x >> 33) as u8
                })
                .collect();
            let mut syms = vec![0u8; 512];
            let _ = decode_block::<D>(&model, &cx, 0, &bytes, 512.min(values.len()), true, &mut syms, usize::MAX);
            let mut ring = [0u8; RING];
            let _ = decode_block::<D>(&model, &cx, 0, &bytes, 300, false, &mut ring, RING - 1);
            // The probes' decoder: garbage is an error or some symbols, never a panic; it and the
            // generic decoder agree on what decodes.
            let mut fast = vec![0u8; 512];
            let whole = codec::decode_values::<D>(&model, n, 0, &bytes, 512, true, &mut ring, |i, s| fast[i] = s, |c| model.prefetch(c));
            let generic = decode_block::<D>(&model, &cx, 0, &bytes, 512, true, &mut syms, usize::MAX);
            assert_eq!(whole.is_ok(), generic.is_ok(), "{len} bytes");
            if whole.is_ok() {
                assert_eq!(fast, syms);
            }
            let _ = codec::decode_values::<D>(&model, n, 5, &bytes, 300, false, &mut ring, |_, _| {}, |_| {});
            // A model of the other kind never decodes: its shape is refused.
            let dcx = DtcContexts { n, base: 0, values: &values };
            assert!(decode_block::<D>(&model, &dcx, 0, &bytes, 300, false, &mut ring, RING - 1).is_err());
        }
    }

    /// A dtc payload for `values`: no depth at value 0, else depths with runs and a skew, some
    /// of them deep (above the symbols' 125) and some escaped (254 and more, with records).
    fn dtc_payload(values: &[u8], seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut bytes = Vec::with_capacity(values.len());
        let mut records = Vec::new();
        for (i, &v) in values.iter().enumerate() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let depth = match x % 64 {
                0 => 126 + (x >> 8) % 128,
                1 => 254 + (x >> 8) % 300,
                _ => (i as u64 / 5) % 9 + (x >> 8) % 3,
            } as u16;
            let b = if v == 0 { crate::dtc::byte_of(None) } else { crate::dtc::byte_of(Some(depth)) };
            if b == crate::dtc::ESCAPE {
                records.extend_from_slice(&crate::dtc::record(i as u64, depth).to_le_bytes());
            }
            bytes.push(b);
        }
        let escaped = records.len() as u64 / 8;
        bytes.extend_from_slice(&records);
        bytes.extend_from_slice(&escaped.to_le_bytes());
        bytes
    }

    fn pack_dtc_and_open(n: u32, values: &[u8], payload: &[u8], block: u32) -> (tempfile::TempDir, PathBuf, Result<DtcPack>) {
        let header = Header::dtc(Ruleset::Awari, n, checksum(payload));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d");
        let mut out = std::io::Cursor::new(Vec::new());
        let r = pack(&header, payload, values, PackOptions { block_values: block }, &mut out, &path, &path).unwrap();
        let out = out.into_inner();
        assert_eq!((r.bytes, r.raw), (out.len() as u64, payload.len() as u64));
        std::fs::write(&path, &out).unwrap();
        let p = open_dtc(&path, n, true);
        (dir, path, p)
    }

    fn open_dtc(path: &Path, n: u32, verify: bool) -> Result<DtcPack> {
        let file = File::open(path).unwrap();
        let map = unsafe { Mmap::map(&file) }.unwrap();
        DtcPack::open(path, file, map, Ruleset::Awari, n, verify)
    }

    fn depth_of(p: &DtcPack, values: &[u8], i: u64) -> Result<Option<u16>> {
        p.depth(i, |start, out| {
            out.copy_from_slice(&values[start as usize..start as usize + out.len()]);
            Ok(())
        })
    }

    #[test]
    fn depths_round_trip_deep_and_escaped_ones_included() {
        for (n, block) in [(0, 64), (2, 64), (6, 64), (9, 256), (10, 100), (11, 4096)] {
            let values = layer_values(n, 11 + u64::from(n));
            let payload = dtc_payload(&values, 5 + u64::from(n));
            let (_d, _path, p) = pack_dtc_and_open(n, &values, &payload, block);
            let p = p.unwrap();
            assert_eq!(p.decode_payload(&values).unwrap(), payload, "layer {n} block {block}");
            let split = crate::dtc::DtcPayload::new(n, &payload).unwrap();
            let step = if values.len() > 100_000 { 13 } else { 1 };
            for i in (0..values.len() as u64).step_by(step) {
                assert_eq!(depth_of(&p, &values, i).unwrap(), split.get(i).unwrap(), "layer {n} index {i}");
            }
            assert!(depth_of(&p, &values, values.len() as u64).is_err());
        }
    }

    #[test]
    fn a_depth_that_contradicts_its_value_is_never_packed() {
        let n = 7;
        let values = layer_values(n, 3);
        let mut payload = dtc_payload(&values, 4);
        let at = values.iter().position(|&v| v == 0).unwrap();
        payload[at] = 3;
        let header = Header::dtc(Ruleset::Awari, n, checksum(&payload));
        let mut out = std::io::Cursor::new(Vec::new());
        let e = pack(&header, &payload, &values, PackOptions::default(), &mut out, Path::new("p"), Path::new("dtc-07.owdb")).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }) && e.to_string().contains("dtc-07.owdb"), "{e}");
    }

    #[test]
    fn every_damaged_byte_of_a_depths_pack_is_caught_or_harmless() {
        let n = 6;
        let values = layer_values(n, 8);
        let payload = dtc_payload(&values, 9);
        let split = crate::dtc::DtcPayload::new(n, &payload).unwrap();
        let (_d, path, p) = pack_dtc_and_open(n, &values, &payload, 64);
        drop(p.unwrap());
        let good = std::fs::read(&path).unwrap();
        for at in (0..good.len()).step_by(37).chain(0..PACK_HEADER_LEN + 8).chain(good.len() - 24..good.len()) {
            let mut bad = good.clone();
            bad[at] ^= 0x21;
            std::fs::write(&path, &bad).unwrap();
            let Ok(p) = open_dtc(&path, n, false) else { continue };
            for i in (0..values.len() as u64).step_by(5) {
                match depth_of(&p, &values, i) {
                    Ok(d) => assert_eq!(d, split.get(i).unwrap(), "flip at byte {at} gave a wrong depth at {i}"),
                    Err(e) => assert!(matches!(e, Error::Corrupt { .. }), "{e}"),
                }
            }
            if let Ok(back) = p.decode_payload(&values) {
                assert_eq!(back, payload, "flip at byte {at}");
            }
        }
    }

    #[test]
    fn a_pack_of_one_kind_is_never_read_as_the_other() {
        let n = 5;
        let values = layer_values(n, 1);
        let (_d, vpath) = pack_and_open(n, &values, 64);
        let e = open_dtc(&vpath, n, true).unwrap_err();
        assert!(e.to_string().contains("holds values, not depths to capture"), "{e}");
        let (_e, dpath, p) = pack_dtc_and_open(n, &values, &dtc_payload(&values, 2), 64);
        drop(p.unwrap());
        let e = open(&dpath, n, true).unwrap_err();
        assert!(e.to_string().contains("holds depths to capture, not values"), "{e}");
    }
}
