//! `oware export`: writes layers in the format of the published 2002 solution: one headerless file
//! `OUT/scores.N` per layer, one signed byte per position in index order — exactly the payload
//! bytes of this tool's layer files, so an exported file is byte-identical to the published one.
//!
//! Only `awari` can be exported this way (the published files hold awari values, and a headerless
//! file cannot say which ruleset it belongs to). Every source layer's header is checked before
//! anything is written, and each payload is checksummed while it is copied: a file whose bytes do
//! not match its header's checksum is never renamed into place.
//!
//! Each file is streamed from the memory-mapped layer into a uniquely named temporary beside
//! `OUT/scores.N` (created exclusively, never through a link), flushed to disk and renamed into
//! place, so an interrupted export never leaves a partial `scores.N`; on any failure the
//! temporary is removed.
//!
//! With `--compress` the files are written as `OUT/scores.N.zst` (zstd, with the content size and
//! a frame checksum) **instead of** `scores.N`. Every reader of the published format (`query`,
//! `verify`, `stats` with `--format vu`, `import --format vu`, the libraries) reads a
//! `scores.N.zst` directly when `scores.N` is absent, decompressing the layer into memory; for
//! probing in place, use packs (`oware pack`).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use indicatif::ProgressBar;
use oware::error::Damage;
use oware::progress::Progress;
use oware::storage::{vu_path, AtomicFile, Format, Layer, ValuesKind};
use oware::units::group_digits;
use oware::{Error, Result, Ruleset};
use serde::Serialize;

use crate::args::{reword, CopyArgs, ReportArgs};
use crate::output::{Stdout, SCHEMA_VERSION};
use crate::{progress, signals};

/// Arguments of `oware export`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[
    ("out", "Output directory (created if needed); existing `scores.N` files there are replaced"),
    ("max_stones", "Export layers 0..=N (all must be built). Default: every layer present from 0 up to the first missing one"),
    ("json", "Print one JSON document on stdout instead of a line per file"),
])))]
pub(crate) struct ExportArgs {
    /// Output format: `vu`, the headerless `scores.N` files of the 2002 solution (awari only).
    #[arg(long, value_name = "FORMAT", value_enum)]
    format: Format,
    #[command(flatten)]
    copy: CopyArgs,
    /// Write zstd-compressed `scores.N.zst` instead of `scores.N` (read directly by every `vu`
    /// reader, which decompresses each layer into memory; packs are probed in place).
    #[arg(long)]
    compress: bool,
    /// zstd compression level with --compress (1..=22; higher is smaller and slower).
    #[arg(long, value_name = "L", default_value_t = 3, requires = "compress",
          value_parser = clap::value_parser!(i32).range(1..=22))]
    level: i32,
    #[command(flatten)]
    report: ReportArgs,
}

/// What one exported file holds.
struct Written {
    path: PathBuf,
    /// Payload bytes (positions).
    bytes: u64,
    /// Bytes on disk (differs from `bytes` when compressed).
    on_disk: u64,
}

/// One exported file in `oware export --json`.
#[derive(Serialize)]
struct FileDoc {
    layer: u32,
    positions: u64,
    path: String,
    bytes_on_disk: u64,
}

/// `oware export --json`.
#[derive(Serialize)]
struct ExportDoc {
    schema_version: u32,
    rules: &'static str,
    out: String,
    compressed: bool,
    files: Vec<FileDoc>,
    positions: u64,
    bytes_on_disk: u64,
    seconds: f64,
}

/// Exports the layers as asked; prints one line per file written.
///
/// # Errors
/// [`Error::Usage`] for `--format native` or a ruleset other than awari;
/// [`Error::LayerMissing`] when a layer asked for (or layer 0) is absent — nothing is written then;
/// [`Error::Corrupt`] / [`Error::RulesetMismatch`] for a damaged source layer (bad header: nothing
/// is written; bad payload checksum or a value outside `-n..=n`: the layers before it are
/// written, that one is not); [`Error::Io`] when the output cannot be written (a full disk
/// included: the partial temporary file is removed); [`Error::Interrupted`] after Ctrl-C.
pub(crate) fn run(a: ExportArgs) -> Result<()> {
    signals::cooperative();
    let rules = a.copy.rules.ruleset();
    if a.format != Format::Vu {
        return Err(Error::Usage("export writes the published 2002 format only (--format vu); native layer files are already in this tool's format".into()));
    }
    if rules != Ruleset::Awari {
        return Err(Error::Usage(format!(
            "the published format (--format vu) holds only 'awari' values: cannot export '{rules}' \
             (a headerless scores.N file could not tell which ruleset it belongs to)"
        )));
    }
    let dir = a.copy.source()?;

    // Open every layer first: a missing layer or a bad header stops the export before any write.
    let layers: Vec<Layer> = a
        .copy
        .max_stones
        .layers(&dir, "exporting", a.report.quiet.quiet)?
        .into_iter()
        .map(|n| dir.open_layer::<ValuesKind>(n, false))
        .collect::<Result<_>>()?;
    fs::create_dir_all(&a.copy.out).map_err(|e| Error::io(&a.copy.out, e))?;

    let total: u64 = layers.iter().map(|l| l.bytes().len() as u64).sum();
    let bar = progress::bytes(progress::show(a.report.quiet.quiet), total);
    let mut out = Stdout::new();
    let start = Instant::now();
    let mut files = Vec::new();
    for layer in &layers {
        bar.set_prefix(format!("layer {}", layer.stones()));
        let w = match export_layer(layer, &a.copy.out, a.compress.then_some(a.level), &bar) {
            Ok(w) => w,
            Err(e) => {
                bar.finish_and_clear();
                return Err(e);
            }
        };
        if !a.report.json.json {
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
            let r = bar.suspend(|| out.line(&line));
            if let Err(e) = r {
                bar.finish_and_clear();
                return Err(e);
            }
        }
        files.push(FileDoc { layer: layer.stones(), positions: w.bytes, path: w.path.display().to_string(), bytes_on_disk: w.on_disk });
    }
    bar.finish_and_clear();
    let on_disk: u64 = files.iter().map(|f| f.bytes_on_disk).sum();
    let seconds = start.elapsed().as_secs_f64();
    if a.report.json.json {
        out.json(&ExportDoc {
            schema_version: SCHEMA_VERSION,
            rules: rules.name(),
            out: a.copy.out.display().to_string(),
            compressed: a.compress,
            files,
            positions: total,
            bytes_on_disk: on_disk,
            seconds,
        })
    } else {
        out.line(&format!(
            "exported {rules} {}: {} positions, {} bytes written to {} in {seconds:.1} s",
            oware::units::layers_phrase(layers.iter().map(|l| l.stones())),
            group_digits(total),
            group_digits(on_disk),
            a.copy.out.display(),
        ))
    }
}

/// Streams one layer's payload to `out/scores.N` (or `.zst` with `Some(level)`) through an
/// [`AtomicFile`], checksumming the bytes and checking their range on the way; renames into
/// place only when the checksum matches the header's and every value lies in `-n..=n`.
fn export_layer(layer: &Layer, out: &Path, zstd_level: Option<i32>, bar: &ProgressBar) -> Result<Written> {
    let n = layer.stones();
    let plain = vu_path(out, n);
    let path = match zstd_level {
        Some(_) => plain.with_file_name(format!("scores.{n}.zst")),
        None => plain,
    };
    let file = AtomicFile::create(&path)?;
    let (digest, on_disk) = write_tmp(layer, &file, zstd_level, bar)?;
    if let Some(stored) = layer.header().map(|h| h.payload_checksum) {
        if digest != stored {
            return Err(Error::corrupt(layer.path(), Damage::PayloadChecksum { stored, computed: digest }));
        }
    }
    if let Some((index, value)) = layer.first_out_of_range() {
        return Err(Error::corrupt(layer.path(), Damage::ValueOutOfRange { index, value, stones: n }));
    }
    let path = file.commit()?;
    Ok(Written { path, bytes: layer.bytes().len() as u64, on_disk })
}

/// Writes the payload to the temporary (compressed with `Some(level)`) and returns the
/// checksum of what was copied ([`Layer::copy_payload`]) and the file's size.
fn write_tmp(layer: &Layer, file: &AtomicFile, zstd_level: Option<i32>, bar: &ProgressBar) -> Result<(u64, u64)> {
    let tmp = file.tmp_path();
    let io = |e| Error::io(tmp, e);
    let mut sink = file.file();
    let copying = Copying(bar);
    let digest = match zstd_level {
        None => layer.copy_payload(&mut sink, tmp, &copying)?,
        Some(level) => {
            let mut enc = zstd::stream::write::Encoder::new(sink, level).map_err(io)?;
            enc.include_checksum(true).map_err(io)?;
            enc.include_contentsize(true).map_err(io)?;
            enc.set_pledged_src_size(Some(layer.bytes().len() as u64)).map_err(io)?;
            let digest = layer.copy_payload(&mut enc, tmp, &copying)?;
            enc.finish().map_err(io)?;
            digest
        }
    };
    let size = file.file().metadata().map_err(io)?.len();
    Ok((digest, size))
}

/// The bar of the bytes copied, fed by [`Layer::copy_payload`]; Ctrl-C stops the copy
/// ([`Error::Interrupted`]).
struct Copying<'a>(&'a ProgressBar);

impl Progress for Copying<'_> {
    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }
    fn cancelled(&self) -> bool {
        signals::interrupted()
    }
}
