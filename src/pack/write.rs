//! Packing a layer: the model counted, the blocks coded in parallel, the table and header last.

use std::io::{Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::Path;

use rayon::prelude::*;

use crate::dtc::{record, DtcPayload, NONE};
use crate::error::{Damage, Error, Result};
use crate::format::{checksum, Header, DTC_U8_ESCAPED, VALUE_EXACT_I8};
use crate::index::layer_size;

use super::codec::*;
use super::*;

/// How to pack: block size (values per block) and groups; the defaults are the measured choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackOptions {
    /// Values per block (a probe decodes half of one on average): 16..=16384 for a pack over
    /// floors ([`pack_floored`]: range-coded blocks, codec 6, up to
    /// [`RANGE_BLOCK_MAX`](super::RANGE_BLOCK_MAX); rANS, codec 4, above), 64..=16384 for the
    /// others (rANS).
    pub block_values: u32,
}

impl Default for PackOptions {
    fn default() -> PackOptions {
        PackOptions { block_values: BLOCK_VALUES }
    }
}

/// What the writers over floors call behind each of their passes ([`pack_floored`],
/// [`pack_dtc_over`]): gives back the pages of positions `range` of the mapped arrays they read
/// and write (the layer's values and depths, the scratch files of [`PackBuffers`]), so that
/// each pass keeps resident only the few spans of positions it works on, however large the
/// layer. `&|_| {}` where nothing is mapped, or nothing need be given back.
///
/// [`PackBuffers`]: super::PackBuffers
pub type Release<'a> = &'a (dyn Fn(Range<u64>) + Sync);

/// Positions a pass handles before it gives their pages back ([`Release`]): with two spans
/// per thread in flight, each array keeps about 16 MiB resident on two cores.
const SPAN: usize = 1 << 22;

/// The span of a pass over `len` positions in blocks of `bu`: whole blocks, [`SPAN`] or less,
/// and small enough that a small layer still has four spans per thread.
fn span_of(len: usize, bu: usize) -> usize {
    let threads = rayon::current_num_threads();
    (len / (4 * threads)).clamp(bu, SPAN.max(bu)) / bu * bu
}

/// The positions `c * span..` of span `c` of a layer of `len`.
fn span_range(c: usize, span: usize, len: usize) -> Range<u64> {
    (c * span) as u64..((c + 1) * span).min(len) as u64
}

/// The first position `j` where `bad(a[j], b[j])` holds (`a` and `b` one entry per position of
/// a layer), checked span by span in parallel, each span's pages given back (`release`) once it
/// is checked.
fn first_bad<A: Sync, B: Sync>(a: &[A], b: &[B], span: usize, release: Release<'_>, bad: impl Fn(&A, &B) -> bool + Sync) -> Option<usize> {
    a.par_chunks(span).zip(b.par_chunks(span)).enumerate().find_map_first(|(c, (x, y))| {
        let found = x.iter().zip(y).position(|(x, y)| bad(x, y));
        release(span_range(c, span, a.len()));
        found.map(|i| c * span + i)
    })
}

/// What [`pack`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedLayer {
    /// Bytes of the pack file.
    pub bytes: u64,
    /// Bytes of the payload packed (values: one per position; depths: the dtc payload).
    pub raw: u64,
}

/// Writes a layer's file of `header` (its native `payload`, already checked against `header`)
/// as a pack to `out`, which must be empty and positioned at its start: the header is written
/// last, over its placeholder. What is packed is what the header's encoding says: values
/// (read from `values`, the layer's values, one byte per position, which are then the payload
/// too), or depths to capture (`payload`; the contexts read `values`, and every depth is checked
/// against its value first). `out_path` names the pack, `src_path` the file packed, in errors.
///
/// Cost: two parallel passes over the payload (count the model, code the blocks), and for
/// depths one pass checking them against the values; memory: the model's counts per thread and
/// the coded bytes of one batch of groups.
///
/// # Errors
/// [`Error::Corrupt`] when a value lies outside `-n..=n` (naming `out_path`), or the depths do
/// not split or one contradicts its value (naming `src_path`); [`Error::Io`] when writing fails;
/// [`Error::Usage`] for a block size outside `64..=16384` or a payload that is never packed
/// (forced-capture bounds).
pub fn pack<W: Write + Seek>(
    header: &Header,
    payload: &[u8],
    values: &[u8],
    options: PackOptions,
    out: &mut W,
    out_path: &Path,
    src_path: &Path,
) -> Result<PackedLayer> {
    let n = header.stones;
    let size = layer_size(n);
    if values.len() as u64 != size || header.entries != size {
        return Err(Error::Internal(format!("layer {n}: {} values, expected {size}", values.len())));
    }
    match header.encoding {
        VALUE_EXACT_I8 => {
            let to_syms = |start: usize, end: usize, syms: &mut Vec<u8>| -> Result<()> {
                syms.clear();
                for (i, &v) in values[start..end].iter().enumerate() {
                    let v = v as i8;
                    if u32::from(v.unsigned_abs()) > n {
                        return Err(Error::corrupt(out_path, Damage::ValueOutOfRange { index: (start + i) as u64, value: v, stones: n }));
                    }
                    syms.push((i32::from(v) + n as i32) as u8);
                }
                Ok(())
            };
            write_pack(header, CODEC_RANS_NEIGHBOURS, &ValueContexts(n), to_syms, &[], size, options, &|_| {}, out, out_path)
        }
        DTC_U8_ESCAPED => {
            let (dtc, deep) = depths_to_pack(n, payload, values, src_path, &|_| {})?;
            let cx = DtcContexts { n, base: 0, values };
            write_pack(header, CODEC_RANS_DTC, &cx, depth_syms(dtc.bytes()), &deep, payload.len() as u64, options, &|_| {}, out, out_path)
        }
        e => Err(Error::Usage(format!("{}: {} are never packed", src_path.display(), Header::kind(e)))),
    }
}

/// Writes a layer's values (`values`, one byte per position, of the layer of `header`) as a pack
/// over floors to `out` (empty, at its start; codec 6, range-coded, for blocks of up to
/// [`RANGE_BLOCK_MAX`](super::RANGE_BLOCK_MAX) values, else codec 4): at every position whose
/// value equals its floor (`floors`, one per position, [`floor`](super::floor);
/// [`NO_FLOOR`](super::NO_FLOOR) where there is none) it stores the symbol its context makes
/// cheapest among those not above the floor, and every reader takes the larger of the stored
/// value and the floor (docs/FORMAT.md, "Values over their floors"). Returns what was written, and leaves in `stored` (one byte per
/// position, as in a layer file; anonymous memory or a scratch file's, [`PackBuffers`]) the
/// values the pack stores: what a pack of the layer's depths reads as contexts
/// ([`pack_dtc_over`]). `out_path` names the pack, `src_path` the layer packed, in errors;
/// `release` gives back the pages of each span of positions every pass is done with.
///
/// The symbols stored are chosen with a first model (the values' own counts), then the model
/// written is that of the stored symbols: every symbol coded has a frequency.
///
/// Cost: one pass checking every value against its floor, four parallel passes over the
/// values (counts of the values, the stored values chosen, their counts, coding); memory:
/// `stored`, the models' counts per thread and the coded bytes of one batch of groups, and of
/// the mapped arrays a few spans of 4 Mi positions per thread ([`Release`]).
///
/// # Errors
/// [`Error::Corrupt`] naming `src_path` when a value lies outside `-n..=n` or below its floor
/// (the layer, or a smaller one, is wrong); [`Error::Io`] when writing fails; [`Error::Usage`]
/// for a block size outside `16..=16384` or a header that is not a values file's.
#[allow(clippy::too_many_arguments)]
pub fn pack_floored<W: Write + Seek>(
    header: &Header,
    values: &[u8],
    floors: &[i8],
    stored: &mut [u8],
    options: PackOptions,
    release: Release<'_>,
    out: &mut W,
    out_path: &Path,
    src_path: &Path,
) -> Result<PackedLayer> {
    let n = header.stones;
    let size = layer_size(n);
    if values.len() as u64 != size || header.entries != size || floors.len() as u64 != size || stored.len() as u64 != size {
        return Err(Error::Internal(format!("layer {n}: {} values, {} floors and {} stored, expected {size}", values.len(), floors.len(), stored.len())));
    }
    if header.encoding != VALUE_EXACT_I8 {
        return Err(Error::Usage(format!("{}: {} are never packed over floors", src_path.display(), Header::kind(header.encoding))));
    }
    let b = options.block_values;
    check_block(b)?;
    // Every value within its range and not below its floor, before anything is written.
    let span = span_of(size as usize, b as usize);
    let bad = first_bad(values, floors, span, release, |&v, &f| u32::from((v as i8).unsigned_abs()) > n || (v as i8) < f);
    if let Some(i) = bad {
        let v = values[i] as i8;
        let damage = if u32::from(v.unsigned_abs()) > n {
            Damage::ValueOutOfRange { index: i as u64, value: v, stones: n }
        } else {
            Damage::Inconsistent { board: crate::index::unrank_unchecked(n, i as u64), stored: v, best_move: floors[i] }
        };
        return Err(Error::corrupt(src_path, damage));
    }
    let cx = ValueContexts(n);
    let (k, x) = (cx.symbols(), cx.contexts());
    let (bu, gb) = (b as usize, group_blocks(b) as usize);
    let len = size as usize;
    let offset = n as i32;
    let truth = |start: usize, end: usize, syms: &mut Vec<u8>| -> Result<()> {
        syms.clear();
        syms.extend(values[start..end].iter().map(|&v| (i32::from(v as i8) + offset) as u8));
        Ok(())
    };
    // The first model: the values' counts. `choice[ctx * k + t]` is the most frequent symbol
    // of context `ctx` not above `t` (the greater on a tie; `t` itself when none was seen).
    let counts = count_model(&cx, &truth, len, bu, gb, release)?;
    let mut choice = vec![0u8; x * k];
    for (row, out) in counts.chunks(k).zip(choice.chunks_mut(k)) {
        let mut best = 0usize;
        for t in 0..k {
            if row[t] >= row[best] {
                best = t;
            }
            out[t] = if row[best] > 0 { best as u8 } else { t as u8 };
        }
    }
    // The stored values, kept for the passes that follow and for the depths' pack.
    choose_stored(
        &cx,
        bu,
        stored,
        release,
        &truth,
        |j, ctx, sym, _| {
            let f = floors[j];
            if f == values[j] as i8 {
                choice[ctx * k + (i32::from(f) + offset) as usize]
            } else {
                sym
            }
        },
        |s| ((i32::from(s) - offset) as i8) as u8,
    );
    let stored: &[u8] = stored;
    let stored_syms = |start: usize, end: usize, syms: &mut Vec<u8>| -> Result<()> {
        syms.clear();
        syms.extend(stored[start..end].iter().map(|&v| (i32::from(v as i8) + offset) as u8));
        Ok(())
    };
    let codec = if b <= RANGE_BLOCK_MAX { CODEC_RANGE_FLOOR } else { CODEC_RANS_FLOOR };
    write_pack(header, codec, &cx, stored_syms, &[], size, options, release, out, out_path)
}

/// Writes a layer's depths to capture (`payload`, a dtc file's, of `header`) as a pack of codec
/// 5 to `out`, beside the layer's pack over floors: as [`pack`] packs them (codec 3), except
/// that the contexts read `stored`, the values that pack stores ([`pack_floored`]), which a
/// reader decodes cheaply, and that where the value and the floor (`floors`) decide the depth
/// (value 0: none; a game over: 0; a value above 0 that a capture or an ending reaches: 1) the
/// symbol stored is whatever its context codes cheapest (docs/FORMAT.md, "Depths over floors").
/// Every depth is first checked against `values`, the layer's values, and those the value and
/// floor decide against what they decide. `floors` is overwritten: the depths they decide, then
/// the symbols stored, are computed in its place (a byte per position spared; the caller is
/// done with the floors). `release` gives back the pages of each span of positions every pass
/// is done with (of `payload`, `values`, `stored` and `floors` where mapped).
///
/// Cost: a pass deciding depths, four parallel passes over the depths (counts of the depths,
/// the symbols stored chosen, their counts, coding) and the checks of [`pack`]; memory: as
/// [`pack`], and of the mapped arrays a few spans per thread ([`Release`]).
///
/// # Errors
/// As [`pack`] for depths; [`Error::Corrupt`] ([`Damage::DtcInconsistent`]) naming `src_path`
/// for a depth that disagrees with the one its value and floor decide.
#[allow(clippy::too_many_arguments)]
pub fn pack_dtc_over<W: Write + Seek>(
    header: &Header,
    payload: &[u8],
    values: &[u8],
    stored: &[u8],
    floors: &mut [i8],
    options: PackOptions,
    release: Release<'_>,
    out: &mut W,
    out_path: &Path,
    src_path: &Path,
) -> Result<PackedLayer> {
    let n = header.stones;
    let size = layer_size(n);
    if values.len() as u64 != size || stored.len() as u64 != size || floors.len() as u64 != size || header.entries != size {
        return Err(Error::Internal(format!("layer {n}: {} values, {} stored and {} floors, expected {size}", values.len(), stored.len(), floors.len())));
    }
    if header.encoding != DTC_U8_ESCAPED {
        return Err(Error::Usage(format!("{}: {} are not depths to capture", src_path.display(), Header::kind(header.encoding))));
    }
    let b = options.block_values;
    check_block(b)?;
    let (dtc, deep) = depths_to_pack(n, payload, values, src_path, release)?;
    let bytes = dtc.bytes();
    // The depth the value and floor decide, where they do (as a reader decides it:
    // `decided_depth`), as a dtc byte; `OPEN` where the pack holds the depth.
    const OPEN: u8 = 254;
    let rules = header.rules;
    // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid.
    let decided: &mut [u8] = unsafe { std::slice::from_raw_parts_mut(floors.as_mut_ptr().cast(), floors.len()) };
    super::floor::for_each_board(n, decided, release, |j, board, d| {
        let v = values[j] as i8;
        let floor = *d as i8;
        *d = if v == 0 {
            NONE
        } else if super::Exit::of(rules, board).ended.is_some() {
            0
        } else if v > 0 && floor == v {
            1
        } else {
            OPEN
        };
        Ok(())
    })?;
    if let Some(j) = first_bad(decided, bytes, span_of(size as usize, b as usize), release, |&d, &t| d != OPEN && d != t) {
        let board = crate::index::unrank_unchecked(n, j as u64);
        let derived = (decided[j] != NONE).then_some(u16::from(decided[j]));
        return Err(Error::corrupt(src_path, Damage::DtcInconsistent { board, stored: dtc.get(j as u64).ok().flatten(), derived }));
    }
    let cx = DtcContexts { n, base: 0, values: stored };
    let k = cx.symbols();
    let (bu, gb) = (b as usize, group_blocks(b) as usize);
    let truth = depth_syms(bytes);
    // The first model: the depths' own counts; `choice[ctx]` is the most frequent symbol of the
    // context other than the deep one (whose positions need records).
    let counts = count_model(&cx, &truth, size as usize, bu, gb, release)?;
    let choice: Vec<u8> = counts.chunks(k).map(|row| (0..k).filter(|&s| s != usize::from(DTC_DEEP)).max_by_key(|&s| (row[s], s)).unwrap_or(0) as u8).collect();
    // The symbols stored, in place of the decided depths: the two passes that follow read them
    // there.
    choose_stored(&cx, bu, decided, release, &truth, |_, ctx, sym, was| if was != OPEN { choice[ctx] } else { sym }, |s| s);
    let symbols: &[u8] = decided;
    let stored_syms = |start: usize, end: usize, syms: &mut Vec<u8>| -> Result<()> {
        syms.clear();
        syms.extend_from_slice(&symbols[start..end]);
        Ok(())
    };
    let codec = if b <= RANGE_BLOCK_MAX { CODEC_RANGE_DTC_STORED } else { CODEC_RANS_DTC_STORED };
    write_pack(header, codec, &cx, stored_syms, &deep, payload.len() as u64, options, release, out, out_path)
}

/// Chooses the symbols a pack stores, block by block, into `out` (one per position of the
/// layer): `pick(j, ctx, sym, was)` gives position `j`'s from its context `ctx` (which reads the
/// symbols chosen before it in its block), its true symbol `sym` (`truth`'s) and `was`, what
/// `out[j]` held before; `out[j]` then holds `to_byte` of it. `release` gets each span of
/// positions done.
///
/// Cost: one parallel pass walking the contexts.
fn choose_stored<C: Contexts + Sync>(
    cx: &C,
    bu: usize,
    out: &mut [u8],
    release: Release<'_>,
    truth: &(impl Fn(usize, usize, &mut Vec<u8>) -> Result<()> + Sync),
    pick: impl Fn(usize, usize, u8, u8) -> u8 + Sync,
    to_byte: impl Fn(u8) -> u8 + Sync,
) {
    let len = out.len();
    let span = span_of(len, bu);
    out.par_chunks_mut(span).enumerate().for_each_init(Vec::new, |syms, (c, part)| {
        for (blk, chunk) in part.chunks_mut(bu).enumerate() {
            let start = c * span + blk * bu;
            truth(start, start + chunk.len(), syms).expect("the true symbols of a layer never fail");
            let mut filled = syms.clone();
            cx.walk::<()>(start as u64, chunk.len(), &mut filled, usize::MAX, |i, ctx| Ok(pick(start + i, ctx, syms[i], chunk[i]))).expect("never fails");
            for (o, &s) in chunk.iter_mut().zip(&filled) {
                *o = to_byte(s);
            }
        }
        release(span_range(c, span, len));
    });
}

/// [`Error::Usage`] for a block size of a pack over floors outside `16..=16384` (range-coded
/// up to [`RANGE_BLOCK_MAX`], rANS above).
fn check_block(b: u32) -> Result<()> {
    if !(RANGE_BLOCK_MIN..=16384).contains(&b) {
        return Err(Error::Usage(format!("pack block size {b} is outside {RANGE_BLOCK_MIN}..=16384")));
    }
    Ok(())
}

/// Groups coded in parallel before they are written, in order.
const BATCH: usize = 256;

/// Bytes one batch of coded groups takes at most (a group is at most 65,535 bytes).
pub(super) const BATCH_BYTES: u64 = BATCH as u64 * 65_536;

/// Bytes of the larger table of counts of layer `n`'s two models (values and depths): eight
/// per context and symbol.
pub(super) fn count_table_bytes(n: u32) -> u64 {
    let values = ValueContexts(n);
    let depths = DtcContexts { n, base: 0, values: &[] };
    8 * (values.contexts() * values.symbols()).max(depths.contexts() * depths.symbols()) as u64
}

/// The symbols of a dtc payload's bytes (`bytes`, one per position) block by block.
fn depth_syms(bytes: &[u8]) -> impl Fn(usize, usize, &mut Vec<u8>) -> Result<()> + Sync + '_ {
    move |start: usize, end: usize, syms: &mut Vec<u8>| -> Result<()> {
        syms.clear();
        syms.extend(bytes[start..end].iter().map(|&b| match b {
            NONE => DTC_NONE,
            b if u16::from(b) <= DTC_DIRECT_MAX => b,
            _ => DTC_DEEP,
        }));
        Ok(())
    }
}

/// Layer `n`'s depths to capture (`payload`, a dtc file's at `dtc_path`) checked against its
/// `values`: the payload split, and the table of the depths too deep for a symbol, in index
/// order (the pack's table of deep depths).
///
/// # Errors
/// [`Error::Corrupt`] naming `dtc_path` when the payload does not split or a depth contradicts
/// its value.
fn depths_to_pack<'a>(n: u32, payload: &'a [u8], values: &[u8], dtc_path: &Path, release: Release<'_>) -> Result<(DtcPayload<'a>, Vec<u8>)> {
    let bad = |e: crate::dtc::BadDtc| Error::corrupt(dtc_path, Damage::BadDtc { what: e.to_string() });
    let dtc = DtcPayload::new(n, payload).map_err(bad)?;
    // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid.
    let signed: &[i8] = unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), values.len()) };
    crate::dtc::tally_released(signed, &dtc, release).map_err(bad)?;
    let bytes = dtc.bytes();
    let span = span_of(bytes.len(), 1);
    let deep_at: Vec<u64> = bytes
        .par_chunks(span)
        .enumerate()
        .flat_map_iter(|(c, part)| {
            let deep: Vec<u64> =
                part.iter().enumerate().filter(|&(_, &b)| b != NONE && u16::from(b) > DTC_DIRECT_MAX).map(|(i, _)| (c * span + i) as u64).collect();
            release(span_range(c, span, bytes.len()));
            deep
        })
        .collect();
    let mut deep = Vec::with_capacity(deep_at.len() * 8);
    for &i in &deep_at {
        let d = dtc.get(i).map_err(bad)?.expect("a deep position has a depth");
        deep.extend_from_slice(&record(i, d).to_le_bytes());
    }
    Ok((dtc, deep))
}

/// Writes a pack of `header.entries` symbols (`to_syms(start, end, out)` gives those of
/// positions `start..end`) coded in contexts `cx`, then `extra` (the depths packs' table of deep
/// depths; empty for values), to `out`. `raw`: the bytes of the payload packed; `release` gets
/// the positions of each span of both passes done.
#[allow(clippy::too_many_arguments)]
fn write_pack<W: Write + Seek, C: Contexts + Sync>(
    header: &Header,
    codec: u32,
    cx: &C,
    to_syms: impl Fn(usize, usize, &mut Vec<u8>) -> Result<()> + Sync,
    extra: &[u8],
    raw: u64,
    options: PackOptions,
    release: Release<'_>,
    out: &mut W,
    out_path: &Path,
) -> Result<PackedLayer> {
    let n = header.stones;
    let b = options.block_values;
    if !block_range(codec).contains(&b) {
        return Err(Error::Usage(format!("pack block size {b} is outside {:?} for codec {codec}", block_range(codec))));
    }
    let coder = coder_of(codec);
    let len = header.entries as usize;
    let (k, x) = (cx.symbols(), cx.contexts());
    let bu = b as usize;
    let gb = group_blocks(b) as usize;
    let group_values = bu * gb;
    // Pass 1: the model (counts of each symbol in each context, per thread, then summed).
    let counts = count_model(cx, &to_syms, len, bu, gb, release)?;
    let freq = Model::normalise(k, &counts);
    let model = Model::new(x, k, &freq).ok_or_else(|| Error::Internal("pack model does not normalise".into()))?;
    let enc = model.encoder();
    let raw_model: Vec<u8> = freq.iter().flat_map(|f| f.to_le_bytes()).collect();
    let model_bytes = zstd::bulk::compress(&raw_model, 19).map_err(|e| Error::io(out_path, e))?;

    let io = |e| Error::io(out_path, e);
    let mut h = [0u8; PACK_HEADER_LEN];
    out.write_all(&h).map_err(io)?;
    out.write_all(&model_bytes).map_err(io)?;

    // Pass 2: code the blocks, batches of groups in parallel, written in order.
    let blocks = len.div_ceil(bu);
    let groups = blocks.div_ceil(gb);
    let mut group_table: Vec<(u64, u64)> = Vec::with_capacity(groups);
    let mut block_table: Vec<u16> = Vec::with_capacity(blocks);
    let mut data_len = 0u64;
    for batch_start in (0..groups).step_by(BATCH) {
        let batch_end = (batch_start + BATCH).min(groups);
        let batch: Vec<Result<(Vec<u8>, Vec<u16>)>> = (batch_start..batch_end)
            .into_par_iter()
            .map(|g| {
                let from = g * group_values;
                let to = (from + group_values).min(len);
                let mut bytes = Vec::with_capacity((to - from) / 2);
                let mut offsets = Vec::with_capacity(gb);
                let (mut ctx, mut syms) = (Vec::with_capacity(bu), Vec::with_capacity(bu));
                for start in (from..to).step_by(bu) {
                    let end = (start + bu).min(to);
                    offsets.push(bytes.len() as u16);
                    to_syms(start, end, &mut syms)?;
                    encode_block(coder, cx, &enc, start as u64, &syms, &mut ctx, &mut bytes);
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
        release((batch_start * group_values) as u64..(batch_end * group_values).min(len) as u64);
    }
    let mut table = Vec::with_capacity(groups * 16 + 8 + blocks * 2);
    for &(off, sum) in &group_table {
        table.extend_from_slice(&off.to_le_bytes());
        table.extend_from_slice(&sum.to_le_bytes());
    }
    table.extend_from_slice(&data_len.to_le_bytes());
    match coder {
        // Each block's offset within its group.
        Coder::Rans => table.extend(block_table.iter().flat_map(|o| o.to_le_bytes())),
        // Each block's length: the next block's offset (or the group's end) less its own.
        Coder::Range => {
            for (g, offsets) in block_table.chunks(gb).enumerate() {
                let group_len = group_table.get(g + 1).map_or(data_len, |x| x.0) - group_table[g].0;
                for (i, &o) in offsets.iter().enumerate() {
                    let next = offsets.get(i + 1).map_or(group_len, |&e| u64::from(e));
                    let len = next - u64::from(o);
                    table.push(u8::try_from(len).map_err(|_| Error::Internal(format!("range-coded block of {len} bytes in group {g} of layer {n}")))?);
                }
            }
        }
    }
    out.write_all(&table).map_err(io)?;
    out.write_all(extra).map_err(io)?;

    let model_off = PACK_HEADER_LEN as u64;
    let data_off = model_off + model_bytes.len() as u64;
    let table_off = data_off + data_len;
    let extra_off = table_off + table.len() as u64;
    h[..8].copy_from_slice(&PACK_MAGIC);
    let put32 = |h: &mut [u8], at: usize, v: u32| h[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let put64 = |h: &mut [u8], at: usize, v: u64| h[at..at + 8].copy_from_slice(&v.to_le_bytes());
    put32(&mut h, OFF_VERSION, PACK_VERSION);
    put32(&mut h, OFF_HEADER_LEN, PACK_HEADER_LEN as u32);
    put32(&mut h, OFF_CODEC, codec);
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
    if is_dtc_codec(codec) {
        put64(&mut h, OFF_DEEP, extra_off);
        put64(&mut h, OFF_DEEP_LEN, extra.len() as u64);
        put64(&mut h, OFF_DEEP_SUM, checksum(extra));
    }
    let hs = checksum(&h[..OFF_HEADER_SUM]);
    put64(&mut h, OFF_HEADER_SUM, hs);
    h[128..256].copy_from_slice(&header.encode());
    out.seek(SeekFrom::Start(0)).map_err(io)?;
    out.write_all(&h).map_err(io)?;
    out.seek(SeekFrom::End(0)).map_err(io)?;
    Ok(PackedLayer { bytes: extra_off + extra.len() as u64, raw })
}

/// The counts of each symbol in each context of `cx` over the layer's `len` positions, as
/// `to_syms` gives them block by block (blocks of `bu`, in groups of `gb` blocks). `release`
/// gets the positions of each span done (a piece walks its groups in order).
///
/// Cost: one parallel pass over the symbols, in two contiguous pieces per thread, each
/// counting into its own table of `contexts * symbols` counts (8 bytes each: 14 MB for the
/// depths of layer 24), so that a few tables are alive at once, however large the layer.
///
/// # Errors
/// Those of `to_syms`.
fn count_model<C: Contexts + Sync>(
    cx: &C,
    to_syms: &(impl Fn(usize, usize, &mut Vec<u8>) -> Result<()> + Sync),
    len: usize,
    bu: usize,
    gb: usize,
    release: Release<'_>,
) -> Result<Vec<u64>> {
    let (k, x) = (cx.symbols(), cx.contexts());
    let group_values = bu * gb;
    let groups_of_layer = len.div_ceil(group_values);
    let pieces = (2 * rayon::current_num_threads()).clamp(1, groups_of_layer.max(1));
    (0..pieces)
        .into_par_iter()
        .map(|p| -> Result<Vec<u64>> {
            let (mut counts, mut syms, mut scratch) = (vec![0u64; x * k], Vec::new(), Vec::new());
            let groups = groups_of_layer * p / pieces..groups_of_layer * (p + 1) / pieces;
            let (mut done, end) = (groups.start * group_values, (groups.end * group_values).min(len));
            for g in groups {
                let to = ((g + 1) * group_values).min(len);
                for start in (g * group_values..to).step_by(bu) {
                    to_syms(start, (start + bu).min(to), &mut syms)?;
                    scratch.clone_from(&syms);
                    cx.walk::<()>(start as u64, syms.len(), &mut scratch, usize::MAX, |i, ctx| {
                        counts[ctx * k + syms[i] as usize] += 1;
                        Ok(syms[i])
                    })
                    .expect("never fails");
                }
                if to - done >= SPAN {
                    release(done as u64..to as u64);
                    done = to;
                }
            }
            if done < end {
                release(done as u64..end as u64);
            }
            Ok(counts)
        })
        .try_reduce(
            || vec![0u64; x * k],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                Ok(a)
            },
        )
}
