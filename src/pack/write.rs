//! Packing a layer: the model counted, the blocks coded in parallel, the table and header last.

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use rayon::prelude::*;

use crate::error::{Damage, Error, Result};
use crate::format::{checksum, Header};
use crate::index::layer_size;

use super::codec::*;
use super::*;

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
