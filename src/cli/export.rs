//! `oware export`: writes layers in the format of the published 2002 solution: one headerless file
//! `OUT/scores.N` per layer, one signed byte per position in index order — exactly the payload
//! bytes of this tool's layer files, so an exported file is byte-identical to the published one.
//!
//! Only `awari` can be exported this way (the published files hold awari values, and a headerless
//! file cannot say which ruleset it belongs to). Every source layer's header is checked before
//! anything is written, and each payload is checksummed while it is copied: a file whose bytes do
//! not match its header's checksum is never renamed into place.
//!
//! Each file is streamed from the memory-mapped layer into `OUT/scores.N.tmp`, flushed to disk and
//! renamed to `OUT/scores.N`, so an interrupted export never leaves a partial `scores.N`.
//!
//! With `--compress` the files are written as `OUT/scores.N.zst` (zstd, with the content size and
//! a frame checksum) **instead of** `scores.N`. Compressed files are for distribution only: `oware
//! verify` and `oware stats` with `--format vu` read plain `scores.N` files (memory-mapped), so
//! decompress them first (`zstd -d scores.N.zst`). Run the export twice to get both.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oware::index::MAX_STONES;
use oware::storage::{layer_path, ruleset_dir, vu_path, Format, Layer};
use oware::{Error, Result, Ruleset};
use xxhash_rust::xxh3::Xxh3;

use oware::units::group_digits;
use super::{show_progress, DirArg, RulesArg};

/// Arguments of `oware export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Output format: `vu`, the headerless `scores.N` files of the 2002 solution (awari only).
    #[arg(long, value_name = "FORMAT")]
    format: Format,
    #[command(flatten)]
    rules: RulesArg,
    #[command(flatten)]
    dir: DirArg,
    /// Output directory (created if needed); existing `scores.N` files there are replaced.
    #[arg(long, value_name = "OUT")]
    out: PathBuf,
    /// Export layers 0..=N (all must be built). Default: every layer present from 0 up to the
    /// first missing one.
    #[arg(long, value_name = "N")]
    max_stones: Option<u32>,
    /// Write zstd-compressed `scores.N.zst` instead of `scores.N` (for distribution: the `vu`
    /// readers of this tool do not read `.zst`).
    #[arg(long)]
    compress: bool,
    /// zstd compression level with --compress (1..=22; higher is smaller and slower).
    #[arg(long, value_name = "L", default_value_t = 3, requires = "compress",
          value_parser = clap::value_parser!(i32).range(1..=22))]
    level: i32,
    /// No progress bar and no messages besides errors.
    #[arg(long, short)]
    quiet: bool,
}


/// Bytes copied per write.
const BLOCK: usize = 8 << 20;

/// What one exported file holds.
struct Written {
    path: PathBuf,
    /// Payload bytes (positions).
    bytes: u64,
    /// Bytes on disk (differs from `bytes` when compressed).
    on_disk: u64,
}

/// Exports the layers as asked; prints one line per file written.
///
/// # Errors
/// [`Error::Usage`] for `--format native`, a ruleset other than awari or `--max-stones` above 48;
/// [`Error::LayerMissing`] when a layer asked for (or layer 0) is absent — nothing is written then;
/// [`Error::Corrupt`] / [`Error::RulesetMismatch`] for a damaged source layer (bad header: nothing
/// is written; bad payload checksum: the layers before it are written, that one is not);
/// [`Error::Io`] when the output cannot be written (a full disk included: the partial temporary
/// file is removed).
pub fn run(a: ExportArgs) -> Result<()> {
    let rules = a.rules.rules;
    let dir = a.dir.dir;
    if a.format != Format::Vu {
        return Err(Error::Usage(
            "export writes the published 2002 format only (--format vu); native layer files are already in this tool's format".into(),
        ));
    }
    if rules != Ruleset::Awari {
        return Err(Error::Usage(format!(
            "the published format (--format vu) holds only 'awari' values: cannot export '{rules}' \
             (a headerless scores.N file could not tell which ruleset it belongs to)"
        )));
    }
    let last = match a.max_stones {
        Some(m) if m > MAX_STONES => return Err(Error::Usage(format!("--max-stones is at most {MAX_STONES}"))),
        Some(m) => m,
        None => match (0..=MAX_STONES).find(|&n| !layer_path(&dir, rules, n).exists()) {
            Some(0) => {
                return Err(Error::LayerMissing { layer: 0, dir: ruleset_dir(&dir, rules), rules: rules.name().into() })
            }
            Some(k) => {
                if !a.quiet {
                    eprintln!("oware: layer {k} is not built: exporting layers 0..{}", k - 1);
                }
                k - 1
            }
            None => MAX_STONES,
        },
    };

    // Open every layer first: a missing layer or a bad header stops the export before any write.
    let layers: Vec<Layer> =
        (0..=last).map(|n| Layer::open_native(&dir, rules, n, false)).collect::<Result<_>>()?;
    fs::create_dir_all(&a.out).map_err(|e| Error::io(&a.out, e))?;

    let total: u64 = layers.iter().map(|l| l.bytes().len() as u64).sum();
    let draw = show_progress(a.quiet);
    let bar = ProgressBar::with_draw_target(
        Some(total),
        if draw { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() },
    );
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>9} [{bar:30.cyan/blue}] {percent:>3}%  {binary_bytes}/{binary_total_bytes}  ETA {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    let start = Instant::now();
    let mut on_disk = 0u64;
    for layer in &layers {
        bar.set_prefix(format!("layer {}", layer.stones()));
        let w = export_layer(layer, &a.out, a.compress.then_some(a.level), &bar);
        let w = match w {
            Ok(w) => w,
            Err(e) => {
                bar.finish_and_clear();
                return Err(e);
            }
        };
        on_disk += w.on_disk;
        let line = if a.compress {
            format!(
                "layer {:>2}: {:>15} positions -> {} ({} bytes, {:.1}%), checksum ok",
                layer.stones(),
                group_digits(w.bytes),
                w.path.display(),
                group_digits(w.on_disk),
                100.0 * w.on_disk as f64 / (w.bytes.max(1)) as f64
            )
        } else {
            format!("layer {:>2}: {:>15} positions -> {}, checksum ok", layer.stones(), group_digits(w.bytes), w.path.display())
        };
        bar.suspend(|| println!("{line}"));
    }
    bar.finish_and_clear();
    println!(
        "exported {rules} layers 0..{last}: {} positions, {} bytes written to {} in {:.1} s",
        group_digits(total),
        group_digits(on_disk),
        a.out.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Streams one layer's payload to `out/scores.N` (or `.zst` with `Some(level)`), checksumming the
/// bytes on the way; renames into place only when the checksum matches the header's.
fn export_layer(layer: &Layer, out: &Path, zstd_level: Option<i32>, bar: &ProgressBar) -> Result<Written> {
    let n = layer.stones();
    let plain = vu_path(out, n);
    let path = match zstd_level {
        Some(_) => plain.with_file_name(format!("scores.{n}.zst")),
        None => plain,
    };
    let tmp = path.with_file_name(format!(
        "{}.tmp",
        path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    let result = write_tmp(layer, &tmp, zstd_level, bar).and_then(|(digest, on_disk)| {
        let expected = layer.header().map(|h| h.payload_checksum);
        if let Some(expected) = expected {
            if digest != expected {
                return Err(Error::Corrupt {
                    path: layer.path().to_path_buf(),
                    reason: format!(
                        "payload checksum mismatch (header {expected:016x}, payload {digest:016x}): values were altered; not exported"
                    ),
                });
            }
        }
        fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        oware::storage::sync_dir(&path);
        Ok(on_disk)
    });
    match result {
        Ok(on_disk) => Ok(Written { path, bytes: layer.bytes().len() as u64, on_disk }),
        Err(e) => {
            // Best effort: a failed export leaves no temporary file behind.
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Writes the payload to `tmp` (compressed with `Some(level)`), fsyncs it and returns the payload's
/// checksum and the file's size.
fn write_tmp(layer: &Layer, tmp: &Path, zstd_level: Option<i32>, bar: &ProgressBar) -> Result<(u64, u64)> {
    let io = |e| Error::io(tmp, e);
    let file = File::create(tmp).map_err(io)?;
    let bytes = layer.bytes();
    let (digest, file) = match zstd_level {
        None => {
            let mut file = file;
            let digest = copy_hashed(bytes, &mut file, bar).map_err(io)?;
            (digest, file)
        }
        Some(level) => {
            let mut enc = zstd::stream::write::Encoder::new(file, level).map_err(io)?;
            enc.include_checksum(true).map_err(io)?;
            enc.include_contentsize(true).map_err(io)?;
            enc.set_pledged_src_size(Some(bytes.len() as u64)).map_err(io)?;
            let digest = copy_hashed(bytes, &mut enc, bar).map_err(io)?;
            (digest, enc.finish().map_err(io)?)
        }
    };
    file.sync_all().map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    Ok((digest, size))
}

/// Copies `bytes` to `w` in blocks, returning their checksum ([`oware::format::checksum`]'s
/// algorithm, computed incrementally).
fn copy_hashed(bytes: &[u8], w: &mut impl Write, bar: &ProgressBar) -> std::io::Result<u64> {
    let mut h = Xxh3::new();
    for block in bytes.chunks(BLOCK) {
        h.update(block);
        w.write_all(block)?;
        bar.inc(block.len() as u64);
    }
    w.flush()?;
    Ok(h.digest())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_checksum_is_the_format_checksum() {
        // Lengths around the block size and xxh3's internal buffer sizes.
        for len in [0usize, 1, 240, 241, 1 << 10, 3 * BLOCK + 17] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let mut sink = std::io::sink();
            let got = copy_hashed(&data, &mut sink, &ProgressBar::hidden()).unwrap();
            assert_eq!(got, oware::format::checksum(&data), "length {len}");
        }
    }
}
