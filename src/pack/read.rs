//! An open pack: header and table checked, blocks decoded on demand, group checksums verified
//! before any value is used.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::Mmap;
use rayon::prelude::*;

use crate::dtc::{byte_of, record, ESCAPE, RECORD_LEN};
use crate::error::{Damage, Error, Result};
use crate::format::{checksum, Header, DTC_U8_ESCAPED, HEADER_LEN, VALUE_EXACT_I8};
use crate::index::MAX_STONES;
use crate::rules::Ruleset;
use crate::sys::FileStamp;

use super::codec::*;
use super::*;

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
    stamp: FileStamp,
    map: Mmap,
    model: Model,
    block_values: u32,
    data_off: usize,
    groups: Vec<(u64, u64)>,
    data_len: u64,
    /// Each block's offset within its group (rANS packs); empty for range-coded packs, whose
    /// blocks are found from their lengths in the mapped table (`lengths`).
    blocks: Vec<u16>,
    /// Range-coded packs (codec 6): where the table's block lengths start in the map (one byte
    /// per block, read in place, so an open pack holds 16 bytes of table per group of 64 blocks
    /// instead of 2 bytes per block).
    lengths: usize,
    /// Blocks in the layer.
    block_count: usize,
    group_blocks: usize,
    verified: Vec<AtomicU64>,
    /// Depths packs: the depths too deep for a symbol, by index (checked increasing at open);
    /// empty for values.
    deep: Vec<(u64, u16)>,
    /// The codec (2 or 4 for values, 3 or 5 for depths).
    codec: u32,
}

impl std::fmt::Debug for PackLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackLayer").field("stones", &self.header.stones).field("path", &self.path).finish()
    }
}

/// The pack header's fields, checked.
struct PackFields {
    codec: u32,
    block_values: u32,
    model: (u64, u64),
    table: (u64, u64),
    data: (u64, u64),
    model_sum: u64,
    table_sum: u64,
    /// Depths packs: the deep depths' table (offset, length) and its checksum.
    deep: (u64, u64),
    deep_sum: u64,
}

/// Reads and checks a pack's header: a pack of values (`dtc` false: codec 2 or 4) or of depths
/// to capture (codec 3 or 5), whose embedded native header must name the matching encoding.
fn decode_pack_header(bytes: &[u8], path: &Path, file_len: u64, dtc: bool) -> Result<(PackFields, Header)> {
    let codec = if dtc { CODEC_RANS_DTC } else { CODEC_RANS_NEIGHBOURS };
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
    let found_codec = get_u32(bytes, OFF_CODEC);
    if !matches!(found_codec, CODEC_RANS_NEIGHBOURS | CODEC_RANS_DTC | CODEC_RANS_FLOOR | CODEC_RANS_DTC_STORED | CODEC_RANGE_FLOOR | CODEC_RANGE_DTC_STORED) {
        return Err(field("pack codec", codec.into(), found_codec.into()));
    }
    let block_values = get_u32(bytes, OFF_BLOCK);
    if !block_range(found_codec).contains(&block_values) {
        return Err(field("pack block values", BLOCK_VALUES.into(), block_values.into()));
    }
    let group = get_u32(bytes, OFF_GROUP);
    if group != group_blocks(block_values) {
        return Err(field("pack group blocks", group_blocks(block_values).into(), group.into()));
    }
    let reserved = if is_dtc_codec(found_codec) { 96..96 } else { 96..OFF_HEADER_SUM };
    if let Some(i) = reserved.chain(28..32).find(|&i| bytes[i] != 0) {
        return Err(bad(Damage::NonZero { at: i as u64, byte: bytes[i] }));
    }
    let stored = get_u64(bytes, OFF_HEADER_SUM);
    let computed = checksum(&bytes[..OFF_HEADER_SUM]);
    if stored != computed {
        return Err(bad(Damage::HeaderChecksum { stored, computed }));
    }
    let header = Header::decode(&bytes[128..128 + HEADER_LEN], path)?;
    let encoding = |c: u32| if is_dtc_codec(c) { DTC_U8_ESCAPED } else { VALUE_EXACT_I8 };
    // A pack of the other kind reads as what it holds ("the file holds values, not ...").
    header.expect(encoding(codec), path)?;
    if is_dtc_codec(found_codec) != dtc || header.encoding != encoding(found_codec) {
        return Err(field("pack codec", codec.into(), found_codec.into()));
    }
    let f = PackFields {
        codec: found_codec,
        block_values,
        model: (get_u64(bytes, OFF_MODEL), get_u64(bytes, OFF_MODEL_LEN)),
        table: (get_u64(bytes, OFF_TABLE), get_u64(bytes, OFF_TABLE_LEN)),
        data: (get_u64(bytes, OFF_DATA), get_u64(bytes, OFF_DATA_LEN)),
        model_sum: get_u64(bytes, OFF_MODEL_SUM),
        table_sum: get_u64(bytes, OFF_TABLE_SUM),
        deep: (get_u64(bytes, OFF_DEEP), get_u64(bytes, OFF_DEEP_LEN)),
        deep_sum: get_u64(bytes, OFF_DEEP_SUM),
    };
    // The sections follow each other (header, model, data, table, and for depths the deep
    // depths) and end the file.
    let table_end = f.table.0.checked_add(f.table.1);
    let ok = f.model.0 == PACK_HEADER_LEN as u64
        && f.model.0.checked_add(f.model.1) == Some(f.data.0)
        && f.data.0.checked_add(f.data.1) == Some(f.table.0)
        && (!dtc || (table_end == Some(f.deep.0) && f.deep.1 % 8 == 0));
    if !ok {
        return Err(field("pack section offsets", PACK_HEADER_LEN as u64, f.model.0));
    }
    let end = if dtc { f.deep.0.saturating_add(f.deep.1) } else { f.table.0.saturating_add(f.table.1) };
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
        PackLayer::open_kind(path, file, map, rules, n, verify_blocks, false)
    }

    /// [`open`](Self::open) for a pack of values (`dtc` false) or of depths to capture.
    fn open_kind(path: &Path, file: File, map: Mmap, rules: Ruleset, n: u32, verify_blocks: bool, dtc: bool) -> Result<PackLayer> {
        let len = map.len() as u64;
        let (f, header) = decode_pack_header(&map, path, len, dtc)?;
        let codec = f.codec;
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
        let (x, k) = if dtc {
            let cx = DtcContexts { n, base: 0, values: &[] };
            (cx.contexts(), cx.symbols())
        } else {
            (contexts(n), symbols(n))
        };
        let raw = zstd::bulk::decompress(model_bytes, x * k * 2).map_err(|_| damaged(path, "model does not decompress".into()))?;
        let freq: Vec<u16> = raw.chunks_exact(2).map(|p| u16::from_le_bytes([p[0], p[1]])).collect();
        let model = Model::new(x, k, &freq).ok_or_else(|| damaged(path, "model rows do not sum to 2^12".into()))?;
        let mut deep = Vec::new();
        if dtc {
            let bytes = section(f.deep);
            if checksum(bytes) != f.deep_sum {
                return Err(damaged(path, "table of deep depths: checksum mismatch".into()));
            }
            for (k, r) in bytes.chunks_exact(8).enumerate() {
                let (i, d) = crate::dtc::split_record(get_u64(r, 0));
                if i >= header.entries || d <= DTC_DIRECT_MAX || deep.last().is_some_and(|&(j, _)| j >= i) {
                    return Err(damaged(path, format!("table of deep depths: record {k} (position {i}, depth {d}) is out of order or needs no table")));
                }
                deep.push((i, d));
            }
        }
        let table = section(f.table);
        if checksum(table) != f.table_sum {
            return Err(damaged(path, "block table checksum mismatch".into()));
        }
        let bu = u64::from(f.block_values);
        let blocks = header.entries.div_ceil(bu);
        let gb = group_blocks(f.block_values) as usize;
        let groups = blocks.div_ceil(gb as u64);
        // The table's last part: a 2-byte offset within its group per block (rANS, kept in
        // memory), or a 1-byte length (range-coded blocks, read in place).
        let per_block = if coder_of(codec) == Coder::Range { 1 } else { 2 };
        if f.table.1 != groups * 16 + 8 + blocks * per_block {
            return Err(damaged(path, format!("block table is {} bytes, expected {}", f.table.1, groups * 16 + 8 + blocks * per_block)));
        }
        let mut gt = Vec::with_capacity(groups as usize);
        for g in 0..groups as usize {
            gt.push((get_u64(table, g * 16), get_u64(table, g * 16 + 8)));
        }
        let data_len = get_u64(table, groups as usize * 16);
        let bt_off = groups as usize * 16 + 8;
        let lens = &table[bt_off..];
        let bt: Vec<u16> = if per_block == 2 {
            (0..blocks as usize).map(|i| u16::from_le_bytes([table[bt_off + 2 * i], table[bt_off + 2 * i + 1]])).collect()
        } else {
            Vec::new()
        };
        // The offset of block `b` within its group, from the table.
        let offset = |b: usize| -> u64 {
            if per_block == 2 {
                u64::from(bt[b])
            } else {
                lens[b - b % gb..b].iter().map(|&l| u64::from(l)).sum()
            }
        };
        let least = if per_block == 2 { STATE_BYTES as u64 } else { 0 };
        // Offsets: groups increasing from 0, inside the data; blocks increasing from 0 within
        // their group, each at least the bytes of a state (rANS); range-coded blocks' lengths
        // add up to their group's bytes.
        if data_len != f.data.1 {
            return Err(damaged(path, "block table's data length disagrees with the header".into()));
        }
        for g in 0..groups as usize {
            let start = gt[g].0;
            let end = if g + 1 < groups as usize { gt[g + 1].0 } else { data_len };
            let first = g * gb;
            let last = (first + gb).min(blocks as usize);
            let mut ok = start <= end && end - start <= 65535 && (g > 0 || start == 0);
            if per_block == 2 {
                ok &= bt[first] == 0;
                for b in first..last {
                    let bend = if b + 1 < last { offset(b + 1) } else { end - start };
                    ok &= offset(b) + least <= bend;
                }
            } else {
                ok &= offset(last - 1) + u64::from(lens[last - 1]) == end.wrapping_sub(start);
            }
            if !ok {
                return Err(damaged(path, format!("block table entry of group {g} is out of order")));
            }
        }
        let verified = (0..groups.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        let stamp = FileStamp::of(&file, path)?;
        let layer = PackLayer {
            header,
            path: path.into(),
            file,
            stamp,
            map,
            model,
            block_values: f.block_values,
            data_off: f.data.0 as usize,
            groups: gt,
            data_len,
            blocks: bt,
            lengths: f.table.0 as usize + bt_off,
            block_count: blocks as usize,
            group_blocks: gb,
            verified,
            deep,
            codec,
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
    pub(crate) fn into_file(self) -> File {
        self.file
    }

    /// Whether the pack stores values over their floors (codec 4 or 6): a position's value is the
    /// larger of the value stored and its floor ([`floor`](super::floor)), so only a reader
    /// with the smaller layers at hand (a [`Database`](crate::probe::Database)) knows it.
    pub fn over_floors(&self) -> bool {
        is_floor_codec(self.codec)
    }

    /// Values per block.
    pub fn block_values(&self) -> u32 {
        self.block_values
    }

    /// Checks that the file still has the length and modification time it had when it was
    /// mapped.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`] when `fstat` fails.
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        self.stamp.check(&self.file, &self.path)
    }

    /// Whether its path no longer names the file that was opened. Cost: one `stat`.
    pub(crate) fn replaced(&self) -> bool {
        self.stamp.replaced(&self.path)
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
            let last = (first + self.group_blocks).min(self.block_count) - 1;
            return Err(damaged(
                &self.path,
                format!("checksum mismatch in blocks {first}..={last} (group {g}; stored {:016x}, computed {computed:016x})", self.groups[g].1),
            ));
        }
        word.fetch_or(bit, Ordering::Release);
        Ok(())
    }

    /// Where position `index` is coded: its block, the block's first position, the block's
    /// coded bytes (after its group's checksum matched) and how many of its positions to decode
    /// to reach it.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] past the layer's end; those of the group's check.
    #[inline]
    fn locate(&self, index: u64) -> Result<(usize, u64, &[u8], usize)> {
        if index >= self.header.entries {
            return Err(Error::IndexOutOfRange { layer: self.header.stones, index, size: self.header.entries });
        }
        let bu = u64::from(self.block_values);
        let b = (index / bu) as usize;
        let start = b as u64 * bu;
        Ok((b, start, self.block_bytes(b)?, (index - start) as usize + 1))
    }

    /// The coded bytes of block `b`, after its group's checksum matched.
    fn block_bytes(&self, b: usize) -> Result<&[u8]> {
        let g = b / self.group_blocks;
        self.check_group(g)?;
        let group = self.group_bytes(g);
        if self.blocks.is_empty() {
            // Range-coded: the block's offset is the sum of the lengths before it in its group.
            let lens = &self.map[self.lengths + g * self.group_blocks..=self.lengths + b];
            let (before, len) = lens.split_at(lens.len() - 1);
            let start = before.iter().map(|&l| usize::from(l)).sum::<usize>();
            // The lengths were checked at open; a file changed since reads as damaged here.
            return group.get(start..start + usize::from(len[0])).ok_or_else(|| self.bad_block(b));
        }
        let start = self.blocks[b] as usize;
        let last_of_group = (b + 1) % self.group_blocks == 0 || b + 1 == self.block_count;
        let end = if last_of_group { group.len() } else { self.blocks[b + 1] as usize };
        Ok(&group[start..end])
    }

    /// The value stored at position `index`: its value, except in a pack over floors
    /// ([`over_floors`](Self::over_floors)), whose value is the larger of this and the
    /// position's floor ([`floor`](super::floor)).
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
        let (b, start, bytes, upto) = self.locate(index)?;
        let mut ring = [0u8; RING];
        self.decode_values_of(b, start, bytes, upto, false, &mut ring, |_, _| {})?;
        Ok((i32::from(ring[(upto - 1) & (RING - 1)]) - n as i32) as i8)
    }

    /// Decodes the first `len` values of block `b` (first position `start`, coded in `bytes`,
    /// its group checked) with the probes' decoder, prefetching the rows it guesses; gives
    /// `out(i, byte)` each value as a layer file's byte. With `whole`, `len` is the block's
    /// length and its end is checked too.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the block when it does not decode.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn decode_values_of(
        &self,
        b: usize,
        start: u64,
        bytes: &[u8],
        len: usize,
        whole: bool,
        ring: &mut [u8; RING],
        mut out: impl FnMut(usize, u8),
    ) -> Result<()> {
        let n = self.header.stones as i32;
        let value = |s: u8| ((i32::from(s) - n) as i8) as u8;
        let (model, n) = (&self.model, self.header.stones);
        match coder_of(self.codec) {
            Coder::Rans => decode_values::<RansDecoder>(model, n, start, bytes, len, whole, ring, |i, s| out(i, value(s)), |c| model.prefetch(c)),
            Coder::Range => decode_values::<RangeDecoder>(model, n, start, bytes, len, whole, ring, |i, s| out(i, value(s)), |c| model.prefetch(c)),
        }
        .map_err(|_| self.bad_block(b))
    }

    /// The values of positions `start..start + out.len()` into `out` (one byte each, as in a
    /// layer file).
    ///
    /// Cost: each block the range touches decoded from its start to the range's end in it.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] past the layer's end; as [`get`](Self::get).
    pub(crate) fn read_into(&self, start: u64, out: &mut [u8]) -> Result<()> {
        let n = self.header.stones;
        let end = start.saturating_add(out.len() as u64);
        if end > self.header.entries {
            return Err(Error::IndexOutOfRange { layer: n, index: end - 1, size: self.header.entries });
        }
        let bu = u64::from(self.block_values);
        let mut ring = [0u8; RING];
        let mut at = start;
        while at < end {
            let b = (at / bu) as usize;
            let bstart = b as u64 * bu;
            let upto = (end.min(bstart + bu) - bstart) as usize;
            let (skip, dest) = ((at - bstart) as usize, &mut out[(at - start) as usize..]);
            self.decode_values_of(b, bstart, self.block_bytes(b)?, upto, false, &mut ring, |i, v| {
                if i >= skip {
                    dest[i - skip] = v;
                }
            })?;
            at = bstart + upto as u64;
        }
        Ok(())
    }

    /// [`decode_block`] of block `b` with the pack's coder.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the block when it does not decode.
    #[allow(clippy::too_many_arguments)]
    fn decode_generic(&self, b: usize, cx: &impl Contexts, start: u64, bytes: &[u8], len: usize, whole: bool, syms: &mut [u8], mask: usize) -> Result<()> {
        match coder_of(self.codec) {
            Coder::Rans => decode_block::<RansDecoder>(&self.model, cx, start, bytes, len, whole, syms, mask),
            Coder::Range => decode_block::<RangeDecoder>(&self.model, cx, start, bytes, len, whole, syms, mask),
        }
        .map_err(|_| self.bad_block(b))
    }

    #[cold]
    fn bad_block(&self, b: usize) -> Error {
        damaged(&self.path, format!("block {b} does not decode"))
    }

    /// Decodes every value into `out` (one byte per position, the native payload), in parallel,
    /// and checks it against the payload checksum of the native header. A pack over floors
    /// ([`over_floors`](Self::over_floors)) needs the values of the smaller layers: see
    /// [`decode_resolved`](Self::decode_resolved).
    ///
    /// Cost: one parallel pass, about `entries` decoding steps in all.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the first damaged block, or the payload checksum's mismatch;
    /// [`Error::Usage`] for a pack over floors.
    pub fn decode_into(&self, out: &mut [u8]) -> Result<()> {
        if self.over_floors() {
            return Err(Error::Usage(format!("{}: its values rest on the smaller layers' (a pack over floors): decode it with them", self.path.display())));
        }
        self.decode_stored(out)?;
        self.check_payload(out)
    }

    /// Decodes every value into `out` (one byte per position, the native payload), in parallel,
    /// in a pack over floors taking at each position the larger of the stored value and its
    /// floor (the values of its capturing children read with `child_value`), and checks the
    /// result against the payload checksum of the native header.
    ///
    /// Cost: as [`decode_into`](Self::decode_into), and over floors one move generation per
    /// position and one `child_value` per capture.
    ///
    /// # Errors
    /// As [`decode_into`](Self::decode_into); those of `child_value`.
    pub fn decode_resolved(&self, out: &mut [u8], child_value: &(dyn Fn(&crate::rules::Board) -> Result<i8> + Sync)) -> Result<()> {
        self.decode_stored(out)?;
        if self.over_floors() {
            let rules = self.header.rules;
            super::floor::for_each_board(self.header.stones, out, &|_| {}, |_, board, v| {
                *v = (*v as i8).max(super::floor(rules, board, child_value)?) as u8;
                Ok(())
            })?;
        }
        self.check_payload(out)
    }

    /// Checks decoded values against the payload checksum of the native header.
    fn check_payload(&self, out: &[u8]) -> Result<()> {
        let computed = checksum(out);
        if computed != self.header.payload_checksum {
            return Err(Error::corrupt(&self.path, Damage::PayloadChecksum { stored: self.header.payload_checksum, computed }));
        }
        Ok(())
    }

    /// Decodes every stored value into `out` (one byte per position), in parallel, unchecked
    /// (the payload checksum covers the values, not what a pack over floors stores).
    ///
    /// Cost: one parallel pass, about `entries` decoding steps in all.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the first damaged block.
    pub fn decode_stored(&self, out: &mut [u8]) -> Result<()> {
        let bu = self.block_values as usize;
        if out.len() as u64 != self.header.entries {
            return Err(Error::Internal(format!("decode_stored: {} bytes for {} values", out.len(), self.header.entries)));
        }
        let gb = self.group_blocks;
        out.par_chunks_mut(bu * gb).enumerate().try_for_each(|(g, chunk)| {
            for (i, part) in chunk.chunks_mut(bu).enumerate() {
                let b = g * gb + i;
                let mut ring = [0u8; RING];
                self.decode_values_of(b, (b * bu) as u64, self.block_bytes(b)?, part.len(), true, &mut ring, |i, v| part[i] = v)?;
            }
            Ok(())
        })
    }
}

/// A layer's depths to capture packed (`dtc-NN.owpk`, codec 3 or 5), probed in place. Its
/// contexts read the layer's values (codec 3) or the values its pack over floors stores (codec
/// 5, [`reads_stored`](Self::reads_stored)), so every read is given them.
#[derive(Debug)]
pub(crate) struct DtcPack(PackLayer);

impl DtcPack {
    /// Opens `path` as the packed depths of layer `n` of `rules`, checked as
    /// [`PackLayer::open`] checks a pack, and its table of deep depths (checksum, order).
    ///
    /// # Errors
    /// As [`PackLayer::open`]; [`Error::Corrupt`] ([`Damage::WrongContent`]) for a pack of
    /// values.
    pub(crate) fn open(path: &Path, file: File, map: Mmap, rules: Ruleset, n: u32, verify_blocks: bool) -> Result<DtcPack> {
        PackLayer::open_kind(path, file, map, rules, n, verify_blocks, true).map(DtcPack)
    }

    /// The native header the pack carries (a dtc file's; its payload checksum covers the
    /// decoded payload).
    pub(crate) fn header(&self) -> &Header {
        &self.0.header
    }

    /// The layer number.
    pub(crate) fn stones(&self) -> u32 {
        self.0.header.stones
    }

    /// Whether its contexts read the values the layer's pack over floors stores (codec 5 or 7),
    /// not the layer's values (codec 3).
    pub(crate) fn reads_stored(&self) -> bool {
        is_dtc_stored_codec(self.0.codec)
    }

    /// The pack file.
    pub(crate) fn path(&self) -> &Path {
        &self.0.path
    }

    /// Values (here depths) per block.
    pub(crate) fn block_values(&self) -> u32 {
        self.0.block_values
    }

    /// Gives back the open file (the map is dropped).
    pub(crate) fn into_file(self) -> File {
        self.0.file
    }

    /// See [`PackLayer::check_unchanged`].
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        self.0.check_unchanged()
    }

    /// Whether its path no longer names the file that was opened. Cost: one `stat`.
    pub(crate) fn replaced(&self) -> bool {
        self.0.replaced()
    }

    /// The depth recorded for a position coded [`DTC_DEEP`].
    fn deep(&self, index: u64) -> Result<u16> {
        match self.0.deep.binary_search_by_key(&index, |&(i, _)| i) {
            Ok(k) => Ok(self.0.deep[k].1),
            Err(_) => Err(damaged(&self.0.path, format!("position {index} is coded deep but the table of deep depths has no record of it"))),
        }
    }

    /// The depth to capture of position `index` (`None`: its value is 0). `values(start, out)`
    /// must fill `out` with the values of positions `start..start + out.len()` (one byte each,
    /// as in a layer file): those of the block up to `index`.
    ///
    /// Cost: the values of up to a block, then on average `block_values / 2` decoding steps.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] past the layer's end; [`Error::Corrupt`] naming the block when
    /// its checksum does not match or it does not decode; those of `values`.
    pub(crate) fn depth(&self, index: u64, values: impl FnOnce(u64, &mut [u8]) -> Result<()>) -> Result<Option<u16>> {
        let p = &self.0;
        let n = p.header.stones;
        let (b, start, bytes, upto) = p.locate(index)?;
        let mut vals = vec![0u8; upto];
        values(start, &mut vals)?;
        let mut ring = [0u8; RING];
        let cx = DtcContexts { n, base: start, values: &vals };
        p.decode_generic(b, &cx, start, bytes, upto, false, &mut ring, RING - 1)?;
        match ring[(upto - 1) & (RING - 1)] {
            DTC_NONE => Ok(None),
            DTC_DEEP => self.deep(index).map(Some),
            d => Ok(Some(u16::from(d))),
        }
    }

    /// Decodes every depth into the native dtc payload (one byte per position, the escaped
    /// depths' records, their count), given the layer's `values`, in parallel, and checks it
    /// against the payload checksum of the native header.
    ///
    /// Cost: one parallel pass, about `entries` decoding steps in all; memory: the payload.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the first damaged block, a position coded deep without its
    /// record (or the reverse), or the payload checksum's mismatch.
    pub(crate) fn decode_payload(&self, values: &[u8]) -> Result<Vec<u8>> {
        self.decode_payload_with(values, &|_, b| Ok(b))
    }

    /// [`decode_payload`](Self::decode_payload), each position's byte (index, byte as decoded)
    /// passed through `fix` before the payload is checked: a pack of codec 5 stores arbitrary
    /// symbols where the value and the floor decide the depth, and `fix` puts the depth back.
    ///
    /// # Errors
    /// As [`decode_payload`](Self::decode_payload); those of `fix`.
    pub(crate) fn decode_payload_with(&self, values: &[u8], fix: &(dyn Fn(usize, u8) -> Result<u8> + Sync)) -> Result<Vec<u8>> {
        let p = &self.0;
        let n = p.header.stones;
        let entries = p.header.entries as usize;
        if values.len() != entries {
            return Err(Error::Internal(format!("decode_payload: {} values for {entries} depths", values.len())));
        }
        let bu = p.block_values as usize;
        let gb = p.group_blocks;
        let mut bytes = vec![0u8; entries];
        let cx = DtcContexts { n, base: 0, values };
        let deep = bytes.par_chunks_mut(bu * gb).enumerate().try_fold(
            || 0usize,
            |mut deep, (g, chunk)| -> Result<usize> {
                for (i, part) in chunk.chunks_mut(bu).enumerate() {
                    let b = g * gb + i;
                    let start = b * bu;
                    p.decode_generic(b, &cx, start as u64, p.block_bytes(b)?, part.len(), true, part, usize::MAX)?;
                    for (j, s) in part.iter_mut().enumerate() {
                        let b = match *s {
                            DTC_NONE => crate::dtc::NONE,
                            DTC_DEEP => {
                                deep += 1;
                                byte_of(Some(self.deep((start + j) as u64)?))
                            }
                            d => d,
                        };
                        *s = fix(start + j, b)?;
                    }
                }
                Ok(deep)
            },
        );
        let deep: usize = deep.try_reduce(|| 0, |a, b| Ok(a + b))?;
        if deep != p.deep.len() {
            return Err(damaged(&p.path, format!("{} records of deep depths for {deep} positions coded deep", p.deep.len())));
        }
        let escaped: Vec<(u64, u16)> = p.deep.iter().copied().filter(|&(i, _)| bytes[i as usize] == ESCAPE).collect();
        bytes.reserve(escaped.len() * RECORD_LEN as usize + 8);
        for &(i, d) in &escaped {
            bytes.extend_from_slice(&record(i, d).to_le_bytes());
        }
        bytes.extend_from_slice(&(escaped.len() as u64).to_le_bytes());
        let computed = checksum(&bytes);
        if computed != p.header.payload_checksum {
            return Err(Error::corrupt(&p.path, Damage::PayloadChecksum { stored: p.header.payload_checksum, computed }));
        }
        Ok(bytes)
    }
}
