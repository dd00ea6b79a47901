//! `oware pack`, `oware unpack` and `oware import`: moving layers between this tool's native
//! files, packs (compressed, probed in place; `oware::pack`) and the published 2002 files.
//!
//! - `pack --dir D --out P`: every layer of D (from 0 up to the first missing, or `--max-stones`)
//!   becomes `P/RULES/layer-NN.owpk` (its depths to capture, when built, are packed too as
//!   `P/RULES/dtc-NN.owpk`), then `P/SHA256SUMS` lists them. A pack already there with
//!   the same contents (its embedded header equals the layer's) is kept, so an interrupted run
//!   resumes.
//! - `unpack --dir P --out D`: the packs become native layers again, byte for byte (with their
//!   depths to capture).
//! - `import --format vu --from S --dir D`: the published `S/scores.N` (or `scores.N.zst`)
//!   become native layers of `awari` with headers and checksums.
//!
//! Every file is written through a temporary renamed into place once complete; a source layer is
//! checked (header, payload checksum, pack blocks) before anything is written from it.

use std::io::BufWriter;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use indicatif::ProgressBar;
use oware::builder::{floors_mode, layer_floors, least_pack_memory, BuildLock};
use oware::error::Damage;
use oware::index::layer_size;
use oware::pack::{memory_limit, pack_dtc_over, pack_floored, AnonymousPeak, PackBuffers, PackOptions, ScratchPages, BLOCK_VALUES, DTC_BLOCK_VALUES};
use oware::rules::{layers_needed, stones, Board};
use oware::storage::{pack_path, AtomicFile, DatabaseDir, DtcKind, Format, Layer, LayerState, PackedTable, ReadMode, Table, ValuesKind};
use oware::units::group_digits;
use oware::verify::manifest::{self, Entry};
use oware::{Error, Result, Ruleset};
use serde::Serialize;

use crate::args::{parse_size, reword, CopyArgs, DirArg, MaxStonesArg, ReportArgs, RulesArg};
use crate::errors::dir_option;
use crate::output::{note, Stdout, SCHEMA_VERSION};
use crate::{progress, signals};

/// Arguments of `oware pack`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[
    ("out", "Pack directory to write (created if needed): `OUT/RULES/layer-NN.owpk` and `OUT/SHA256SUMS`"),
    ("max_stones", "Pack layers 0..=N (all must be built). Default: every layer from 0 up to the first missing"),
])))]
pub(crate) struct PackArgs {
    #[command(flatten)]
    copy: CopyArgs,
    /// Values per block, 16..=16384: a probe decodes half a block on average; larger blocks are
    /// slightly smaller files and slower probes. Blocks of up to 128 values are range-coded
    /// (codec 6), larger ones rANS-coded (codec 4).
    #[arg(long, value_name = "B", default_value_t = BLOCK_VALUES, value_parser = clap::value_parser!(u32).range(16..=16384))]
    block_values: u32,
    /// Depths per block of the packed depths to capture (`dtc-NN.owpk`), 16..=16384: depths
    /// are probed less often than values (to choose among moves of equal value), so their
    /// blocks are larger by default. Blocks of up to 128 depths are range-coded (codec 7),
    /// larger ones rANS-coded (codec 5).
    #[arg(long, value_name = "B", default_value_t = DTC_BLOCK_VALUES, value_parser = clap::value_parser!(u32).range(16..=16384))]
    dtc_block_values: u32,
    /// Memory packing may use, e.g. `3G`, `512M` (units as `build --max-memory`; default: what
    /// the system reports available). A layer's floors and stored values (two bytes per
    /// position) that do not fit wait in scratch files in `--work-dir` instead, and the floors
    /// are computed by the build's exits pass within what is left (in memory, streamed or out
    /// of core, as the build would).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_negative_numbers = true)]
    max_memory: Option<u64>,
    /// Directory for the scratch files of layers packed out of memory (default: `.work` in the
    /// ruleset's directory of `--out`); they are removed when each layer is done.
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    #[command(flatten)]
    report: ReportArgs,
}

/// Arguments of `oware unpack`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("max_stones", "Unpack layers 0..=N. Default: every pack from 0 up to the first missing")])))]
pub(crate) struct UnpackArgs {
    #[command(flatten)]
    rules: RulesArg,
    /// Pack directory to read.
    #[arg(long = "dir", value_name = "DIR")]
    dir: PathBuf,
    /// Database directory to write native layers into (created if needed).
    #[arg(long, value_name = "OUT")]
    out: PathBuf,
    #[command(flatten)]
    max_stones: MaxStonesArg,
    #[command(flatten)]
    report: ReportArgs,
}

/// Arguments of `oware import`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("max_stones", "Import layers 0..=N. Default: every file from 0 up to the first missing")])))]
pub(crate) struct ImportArgs {
    /// Source format: `vu`, the published 2002 files `scores.N` (or `scores.N.zst`), awari.
    #[arg(long, value_name = "FORMAT", value_enum)]
    format: Format,
    /// Directory holding the published files.
    #[arg(long, value_name = "SRC")]
    from: PathBuf,
    #[command(flatten)]
    dir: DirArg,
    #[command(flatten)]
    max_stones: MaxStonesArg,
    #[command(flatten)]
    report: ReportArgs,
}

/// One layer written, in the `--json` documents.
#[derive(Serialize)]
struct LayerDoc {
    layer: u32,
    positions: u64,
    path: String,
    bytes: u64,
    /// False when an identical file was already there and kept.
    written: bool,
    seconds: f64,
    /// `pack`: the layer's depths to capture packed beside it, when built.
    #[serde(skip_serializing_if = "Option::is_none")]
    dtc: Option<DtcDoc>,
    /// `pack`: where the layer's floors and stored values waited: `"memory"`, `"files"`
    /// (scratch files, `--max-memory`), or `"none"` (every pack of the layer was kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    buffers: Option<&'static str>,
    /// `pack`: how the floors' exits pass read the lower layers, as the build's modes:
    /// `in_memory`, `streamed` or `out_of_core` (absent when every pack was kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    floors: Option<&'static str>,
    /// `pack`: the peak of the process's anonymous memory while the layer was packed (its own
    /// allocations, without the pages of mapped files), when the system reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_anonymous_bytes: Option<u64>,
}

/// A layer's depths to capture packed, in the `--json` documents.
#[derive(Serialize)]
struct DtcDoc {
    path: String,
    bytes: u64,
    /// Bytes of the dtc file's payload packed.
    raw_bytes: u64,
    written: bool,
}

#[derive(Serialize)]
struct Doc {
    schema_version: u32,
    command: &'static str,
    rules: &'static str,
    layers: Vec<LayerDoc>,
    positions: u64,
    bytes: u64,
    raw_bytes: u64,
    manifest: Option<String>,
    seconds: f64,
}

/// Ctrl-C or SIGTERM cancels hashing and waiting for the manifest's lock.
struct Cancel;

impl oware::progress::Progress for Cancel {
    fn cancelled(&self) -> bool {
        signals::interrupted()
    }
    // The floors' exits pass traces its phases as the build's (`OWARE_TRACE=1`).
    fn tracing(&self) -> bool {
        crate::build::tracing()
    }
    fn trace(&self, line: &str) {
        crate::build::trace(line);
    }
}

fn bar(quiet: bool, total: u64) -> ProgressBar {
    progress::count(progress::show(quiet), total, "cyan/blue")
}

/// Prints the per-layer lines as they come, and the summary or JSON at the end.
struct Report {
    command: &'static str,
    rules: Ruleset,
    json: bool,
    out: Stdout,
    layers: Vec<LayerDoc>,
    raw: u64,
    start: Instant,
}

impl Report {
    fn new(command: &'static str, rules: Ruleset, json: bool) -> Report {
        Report { command, rules, json, out: Stdout::new(), layers: Vec::new(), raw: 0, start: Instant::now() }
    }

    fn layer(&mut self, bar: &ProgressBar, doc: LayerDoc) -> Result<()> {
        self.raw += doc.positions;
        if !self.json {
            let pct = 100.0 * doc.bytes as f64 / doc.positions.max(1) as f64;
            let line = format!(
                "layer {:>2}: {:>15} positions -> {} ({} bytes, {pct:.1}%){}",
                doc.layer,
                group_digits(doc.positions),
                doc.path,
                group_digits(doc.bytes),
                if doc.written { "" } else { ", already there" }
            );
            let line = match &doc.dtc {
                Some(d) => format!("{line}; depths {} bytes ({:.1}%)", group_digits(d.bytes), 100.0 * d.bytes as f64 / d.raw_bytes.max(1) as f64),
                None => line,
            };
            bar.suspend(|| self.out.line(&line))?;
        }
        self.layers.push(doc);
        Ok(())
    }

    /// Reports a native layer written at `path`.
    fn written(&mut self, bar: &ProgressBar, n: u32, path: PathBuf, t: Instant) -> Result<()> {
        let bytes = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
        bar.inc(layer_size(n));
        let doc = LayerDoc {
            layer: n,
            positions: layer_size(n),
            path: path.display().to_string(),
            bytes,
            written: true,
            seconds: t.elapsed().as_secs_f64(),
            dtc: None,
            buffers: None,
            floors: None,
            peak_anonymous_bytes: None,
        };
        self.layer(bar, doc)
    }

    fn finish(mut self, manifest: Option<PathBuf>) -> Result<()> {
        let bytes: u64 = self.layers.iter().map(|l| l.bytes).sum();
        let seconds = self.start.elapsed().as_secs_f64();
        if self.json {
            let doc = Doc {
                schema_version: SCHEMA_VERSION,
                command: self.command,
                rules: self.rules.name(),
                positions: self.raw,
                bytes,
                raw_bytes: self.raw,
                manifest: manifest.map(|m| m.display().to_string()),
                seconds,
                layers: std::mem::take(&mut self.layers),
            };
            return self.out.json(&doc);
        }
        let which = oware::units::layers_phrase(self.layers.iter().map(|l| l.layer));
        let (dtc, dtc_raw) = self.layers.iter().filter_map(|l| l.dtc.as_ref()).fold((0, 0), |(a, b), d| (a + d.bytes, b + d.raw_bytes));
        let depths = if dtc_raw > 0 {
            format!("; depths {} bytes ({:.1}% of {})", group_digits(dtc), 100.0 * dtc as f64 / dtc_raw as f64, group_digits(dtc_raw))
        } else {
            String::new()
        };
        self.out.line(&format!(
            "{} {} {which}: {} positions, {} bytes ({:.1}% of {} raw){depths} in {seconds:.1} s{}",
            self.command,
            self.rules,
            group_digits(self.raw),
            group_digits(bytes),
            100.0 * bytes as f64 / self.raw.max(1) as f64,
            group_digits(self.raw),
            manifest.map(|m| format!("; manifest {}", m.display())).unwrap_or_default()
        ))
    }
}

/// `oware pack`.
///
/// # Errors
/// [`Error::LayerMissing`] when a layer asked for is absent (nothing is written for it);
/// [`Error::Corrupt`] / [`Error::RulesetMismatch`] for a damaged source layer (the layers before
/// it are packed); [`Error::Io`] when the output cannot be written (a partial file is removed);
/// [`Error::Interrupted`] after Ctrl-C (between layers).
pub(crate) fn run_pack(a: PackArgs) -> Result<()> {
    signals::cooperative();
    let rules = a.copy.rules.ruleset();
    let src = a.copy.source()?;
    let dst = DatabaseDir::new(Format::Native, &a.copy.out, rules)?;
    let layers = a.copy.max_stones.layers(&src, "packing", a.report.quiet.quiet)?;
    dst.create()?;
    let total: u64 = layers.iter().map(|&n| layer_size(n)).sum();
    let bar = bar(a.report.quiet.quiet, total);
    let mut report = Report::new("packed", rules, a.report.json.json);
    let mut entries = Vec::new();
    let work_dir = a.work_dir.clone().unwrap_or_else(|| dst.layers_dir().join(".work"));
    let limit = memory_limit(a.max_memory);
    let mut warned = false;
    // The layers below the one packed, opened once: the floors read them (layer n-1 is never
    // reached by a capture, and may be absent).
    let mut lower: Vec<Option<Layer>> = Vec::new();
    for &n in &layers {
        if signals::interrupted() {
            bar.finish_and_clear();
            return Err(Error::Interrupted);
        }
        bar.set_prefix(format!("layer {n}"));
        let t = Instant::now();
        let layer = src.open_layer::<ValuesKind>(n, true).inspect_err(|_| bar.finish_and_clear())?;
        let header = layer.header().cloned().ok_or_else(|| Error::Internal("native layer without header".into()))?;
        let target = pack_path::<ValuesKind>(&a.copy.out, rules, n);
        // Keep a pack already there with the same values (an interrupted run resumes).
        lower.resize_with(lower.len().max(n as usize), || None);
        for m in layers_needed(n).into_iter().filter(|&m| m < n) {
            if lower[m as usize].is_none() {
                lower[m as usize] = Some(src.open_layer::<ValuesKind>(m, false).inspect_err(|_| bar.finish_and_clear())?);
            }
        }
        let existing = match dst.open_table::<ValuesKind>(n, true, ReadMode::Map) {
            Ok(Table::Pack(p)) if p.header() == &header && p.block_values() == a.block_values && p.over_floors() => Some(p),
            _ => None,
        };
        let kept = existing.is_some();
        let dtc_src = if matches!(src.file_state::<DtcKind>(n), LayerState::Absent) {
            None
        } else {
            Some(dtc_source(&src, &dst, n, a.dtc_block_values).inspect_err(|_| bar.finish_and_clear())?)
        };
        let anonymous = AnonymousPeak::start();
        let (mut placed, mut floors_read) = ("none", None);
        // The floors and stored values, unless every pack of the layer is kept.
        if !kept || dtc_src.as_ref().is_some_and(|d| !d.kept) {
            let floor_of_limit = least_pack_memory(n);
            if let Some(l) = limit.filter(|&l| l < floor_of_limit && !a.report.quiet.quiet && !warned) {
                warned = true;
                bar.suspend(|| {
                    note(&format!(
                        "layer {n}: the memory limit ({}) is below the least packing a layer takes ({}: its models' counts, a batch of coded blocks, the floors' smallest out-of-core state), which it takes anyway",
                        oware::units::human_bytes(l),
                        oware::units::human_bytes(floor_of_limit)
                    ))
                });
            }
            let mut buffers = PackBuffers::place(n, limit, &work_dir).inspect_err(|_| bar.finish_and_clear())?;
            placed = if buffers.in_files() { "files" } else { "memory" };
            // The floors by the build's exits pass, within what the buffers leave of the limit.
            let mode = floors_mode(n, limit.map(|l| l.saturating_sub(buffers.anonymous_bytes())));
            floors_read = Some(mode.name());
            let (floors, stored, pages) = buffers.split();
            let lap = Lap::start(n);
            // Out of core, the pass's own scratch files go to a directory of their own.
            let floors_dir = work_dir.join(format!("floors-{n:02}"));
            layer_floors(rules, n, &lower, mode, &floors_dir, floors, &|r| pages.release(r), &Cancel).inspect_err(|_| bar.finish_and_clear())?;
            let _ = std::fs::remove_dir(&floors_dir);
            lap.done("floors");
            // What the values' pack stores: what its depths' pack reads as contexts.
            if let Some(p) = existing {
                p.decode_stored(stored).inspect_err(|_| bar.finish_and_clear())?;
                pages.release(0..layer_size(n));
            } else {
                let file = AtomicFile::create(&target)?;
                let mut w = BufWriter::with_capacity(1 << 20, file.file());
                let release = |r: Range<u64>| {
                    layer.release(r.clone());
                    pages.release(r);
                };
                pack_floored(
                    &header,
                    layer.bytes(),
                    floors,
                    stored,
                    PackOptions { block_values: a.block_values },
                    &release,
                    &mut w,
                    file.tmp_path(),
                    layer.path(),
                )
                .inspect_err(|_| bar.finish_and_clear())?;
                w.into_inner().map_err(|e| Error::io(file.tmp_path(), e.into_error()))?;
                file.commit()?;
            }
            lap.done(if kept { "stored values decoded" } else { "values packed" });
            if let Some(d) = dtc_src.as_ref().filter(|d| !d.kept) {
                write_dtc_pack(d, &layer, stored, floors, &pages).inspect_err(|_| bar.finish_and_clear())?;
                lap.done("depths packed");
            }
        }
        let bytes = std::fs::metadata(&target).map_err(|e| Error::io(&target, e))?.len();
        entries.push(Entry {
            sha256: manifest::sha256_file(&target, &Cancel).inspect_err(|_| bar.finish_and_clear())?,
            path: format!("{}/layer-{n:02}.owpk", rules.name()),
        });
        let mut dtc = None;
        if let Some(d) = dtc_src {
            let (entry, doc) = dtc_report(&d, rules).inspect_err(|_| bar.finish_and_clear())?;
            entries.push(entry);
            dtc = Some(doc);
        }
        bar.inc(layer_size(n));
        let doc = LayerDoc {
            layer: n,
            positions: layer_size(n),
            path: target.display().to_string(),
            bytes,
            written: !kept,
            seconds: t.elapsed().as_secs_f64(),
            dtc,
            buffers: Some(placed),
            floors: floors_read,
            peak_anonymous_bytes: anonymous.map(|a| a.peak()),
        };
        report.layer(&bar, doc)?;
    }
    bar.finish_and_clear();
    // The work directory goes when this run made it and left it empty (a directory of the
    // user's, or with anything in it, stays).
    if a.work_dir.is_none() {
        let _ = std::fs::remove_dir(&work_dir);
    }
    let m = manifest::update(&a.copy.out, &entries, &Cancel)?;
    if !a.report.quiet.quiet {
        for d in &m.dropped {
            note(&format!("{}: dropped the line of {} ({})", m.path.display(), d.path, d.why));
        }
    }
    report.finish(Some(m.path))
}

/// The phases of packing a layer, traced with their seconds under `OWARE_TRACE=1`
/// (`pack layer N floors: S s`, ...).
struct Lap {
    n: u32,
    start: std::cell::Cell<Instant>,
}

impl Lap {
    fn start(n: u32) -> Lap {
        Lap { n, start: std::cell::Cell::new(Instant::now()) }
    }

    /// Traces the phase that ends now, and starts the next.
    fn done(&self, what: &str) {
        if crate::build::tracing() {
            crate::build::trace(&format!("pack layer {} {what}: {:.3} s", self.n, self.start.get().elapsed().as_secs_f64()));
        }
        self.start.set(Instant::now());
    }
}

/// A layer's depths to capture to pack: the source file (checked: header and checksum), where
/// its pack goes, and whether a pack of the same depths with the same block size is there
/// already (kept).
struct DtcSource {
    dtc: Layer<DtcKind>,
    target: PathBuf,
    block_values: u32,
    kept: bool,
}

/// The depths to capture of layer `n` in `src`, to pack into `dst` with blocks of
/// `block_values`.
///
/// # Errors
/// [`Error::Corrupt`] / [`Error::RulesetMismatch`] for a damaged or foreign source file.
fn dtc_source(src: &DatabaseDir, dst: &DatabaseDir, n: u32, block_values: u32) -> Result<DtcSource> {
    let dtc = src.open_layer::<DtcKind>(n, true)?;
    let header = dtc.header().ok_or_else(|| Error::Internal("native depths without header".into()))?;
    let target = pack_path::<DtcKind>(dst.base(), dst.rules(), n);
    // Opened beside the values' pack over floors: a depths pack of another codec is refused.
    let kept = matches!(dst.open_table::<DtcKind>(n, true, ReadMode::Map), Ok(Table::Pack(p)) if p.header() == header && p.block_values() == block_values);
    Ok(DtcSource { dtc, target, block_values, kept })
}

/// Packs the depths of `d` (checked first: every depth against its value, `layer`'s, and those
/// its value and floor decide against what they decide). `stored`: what the values' pack
/// stores, which the depths' contexts read; `floors` (overwritten, [`pack_dtc_over`]).
///
/// # Errors
/// [`Error::Corrupt`] for a depth that contradicts its value; [`Error::Io`] when the pack cannot
/// be written.
fn write_dtc_pack(d: &DtcSource, layer: &Layer, stored: &[u8], floors: &mut [i8], pages: &ScratchPages<'_>) -> Result<()> {
    let header = d.dtc.header().ok_or_else(|| Error::Internal("native depths without header".into()))?;
    let file = AtomicFile::create(&d.target)?;
    let mut w = BufWriter::with_capacity(1 << 20, file.file());
    let options = PackOptions { block_values: d.block_values };
    // Every pass gives back the pages behind it: the layer's values and depths, the scratch
    // files.
    let release = |r: Range<u64>| {
        layer.release(r.clone());
        d.dtc.release(r.clone());
        pages.release(r);
    };
    pack_dtc_over(header, d.dtc.bytes(), layer.bytes(), stored, floors, options, &release, &mut w, file.tmp_path(), d.dtc.path())?;
    w.into_inner().map_err(|e| Error::io(file.tmp_path(), e.into_error()))?;
    file.commit().map(drop)
}

/// The manifest's entry and the report of the depths' pack of `d` (written or kept).
///
/// # Errors
/// [`Error::Io`] when the pack cannot be read.
fn dtc_report(d: &DtcSource, rules: Ruleset) -> Result<(Entry, DtcDoc)> {
    let n = d.dtc.stones();
    let bytes = std::fs::metadata(&d.target).map_err(|e| Error::io(&d.target, e))?.len();
    let doc = DtcDoc { path: d.target.display().to_string(), bytes, raw_bytes: d.dtc.bytes().len() as u64, written: !d.kept };
    Ok((Entry { sha256: manifest::sha256_file(&d.target, &Cancel)?, path: format!("{}/dtc-{n:02}.owpk", rules.name()) }, doc))
}

/// The value of `child` (a capture's) in `lower`, the layers below its parent's opened from
/// `dir`.
fn child_value(lower: &[Option<Layer>], dir: &DatabaseDir, child: &Board) -> Result<i8> {
    let m = stones(child);
    lower.get(m as usize).and_then(Option::as_ref).ok_or_else(|| dir.missing::<ValuesKind>(m))?.get(oware::index::rank(child)?)
}

/// `oware unpack`.
///
/// # Errors
/// [`Error::LayerMissing`] when a pack asked for is absent; [`Error::Corrupt`] for a damaged pack
/// (named by layer and block; nothing is written for it); [`Error::Io`] when writing fails;
/// [`Error::Interrupted`] after Ctrl-C.
pub(crate) fn run_unpack(a: UnpackArgs) -> Result<()> {
    signals::cooperative();
    let rules = a.rules.ruleset();
    let src = DatabaseDir::new(Format::Native, &a.dir, rules)?;
    let dst = DatabaseDir::new(Format::Native, &a.out, rules)?;
    // The manifest before the plan: a manifest that refuses the unpack prints no plan first.
    check_listed(&a.dir, rules, a.max_stones.max_stones)?;
    let layers = a.max_stones.layers(&src, "unpacking", a.report.quiet.quiet)?;
    write_native_layers(&dst, &layers, Report::new("unpacked", rules, a.report.json.json), a.report.quiet.quiet, |n| {
        let pack = match src.open_table::<ValuesKind>(n, true, ReadMode::Map)? {
            Table::Pack(p) => p,
            other => return Err(Error::Usage(format!("{} is not a pack: nothing to unpack", other.path().display()))),
        };
        // A pack over floors reads the smaller layers' values, unpacked before it.
        let mut lower: Vec<Option<Layer>> = (0..n).map(|_| None).collect();
        if pack.over_floors() {
            for m in layers_needed(n).into_iter().filter(|&m| m < n) {
                lower[m as usize] = Some(dst.open_layer::<ValuesKind>(m, false)?);
            }
        }
        let child = |c: &Board| child_value(&lower, &dst, c);
        let path = dst.write_layer::<ValuesKind>(n, layer_size(n), |payload| pack.decode_resolved(payload, &child))?;
        // The depths (packed, or a native file beside the pack) are decoded and checked whole.
        if !matches!(src.file_state::<DtcKind>(n), LayerState::Absent) {
            let dtc = src.open_layer::<DtcKind>(n, true)?;
            dst.write_layer::<DtcKind>(n, dtc.bytes().len() as u64, |payload| {
                payload.copy_from_slice(dtc.bytes());
                Ok(())
            })?;
        }
        Ok(path)
    })
}

/// Refuses to unpack a pack directory whose manifest (`SHA256SUMS`, when there is one) lists a
/// file of `rules` that is not there, among the layers `0..=max_stones` (every listed layer
/// without `--max-stones`): unpacking the rest would leave it out silently (issue 52, item 5).
/// A listed file present is unpacked (its layer is among those taken, the layers from 0 up to
/// the first absent one); its digest is `verify`'s to check.
///
/// # Errors
/// [`Error::Corrupt`] with [`Damage::Manifest`] naming every listed file missing; as
/// [`manifest::read`] for a malformed manifest.
fn check_listed(dir: &std::path::Path, rules: Ruleset, max_stones: Option<u32>) -> Result<()> {
    let Some(entries) = manifest::read(dir)? else { return Ok(()) };
    let prefix = format!("{}/", rules.name());
    let layer_of = |path: &str| -> Option<u32> {
        let name = path.strip_prefix(&prefix)?;
        let nn = name.strip_prefix("layer-").or_else(|| name.strip_prefix("dtc-"))?.get(..2)?;
        nn.parse().ok()
    };
    let missing: Vec<&str> = entries
        .iter()
        .filter(|e| layer_of(&e.path).is_some_and(|n| max_stones.map_or(true, |m| n <= m)))
        .filter(|e| std::fs::symlink_metadata(dir.join(&e.path)).is_err())
        .map(|e| e.path.as_str())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let first = missing.iter().filter_map(|p| layer_of(p)).min().unwrap_or(0);
    let below = if first > 0 { format!(", or unpack layers 0..{} with --max-stones {}", first - 1, first - 1) } else { String::new() };
    let what = format!("{} listed but missing: nothing was unpacked (restore {}{below})", missing.join(", "), if missing.len() == 1 { "it" } else { "them" });
    Err(Error::corrupt(dir.join("SHA256SUMS"), Damage::Manifest { what }))
}

/// Writes native layers `layers` into `dst` under its build lock, with a progress bar, Ctrl-C
/// and `report`: `make(n)` reads layer `n`'s source and writes it into `dst`
/// ([`DatabaseDir::write_layer`]: on an error nothing is left behind), returning its path.
///
/// # Errors
/// Those of `make` ([`Error::Io`] when a layer cannot be written), [`Error::Interrupted`].
fn write_native_layers(dst: &DatabaseDir, layers: &[u32], mut report: Report, quiet: bool, mut make: impl FnMut(u32) -> Result<PathBuf>) -> Result<()> {
    let _lock = BuildLock::acquire(dst)?;
    let total: u64 = layers.iter().map(|&n| layer_size(n)).sum();
    let bar = bar(quiet, total);
    for &n in layers {
        if signals::interrupted() {
            bar.finish_and_clear();
            return Err(Error::Interrupted);
        }
        bar.set_prefix(format!("layer {n}"));
        let t = Instant::now();
        let path = make(n).inspect_err(|_| bar.finish_and_clear())?;
        report.written(&bar, n, path, t)?;
    }
    bar.finish_and_clear();
    report.finish(None)
}

/// `oware import`.
///
/// # Errors
/// [`Error::Usage`] for a format other than `vu`; [`Error::PublishedLayerMissing`] when a file
/// asked for is absent; [`Error::Corrupt`] for a file of the wrong size, one that does not
/// decompress, or a value outside `-n..=n` (nothing is written for it); [`Error::Io`];
/// [`Error::Interrupted`].
pub(crate) fn run_import(a: ImportArgs) -> Result<()> {
    signals::cooperative();
    if a.format != Format::Vu {
        return Err(Error::Usage("import reads the published 2002 format only (--format vu)".into()));
    }
    let rules = Ruleset::Awari;
    let src = DatabaseDir::new(Format::Vu, &a.from, rules)?;
    let dst = DatabaseDir::new(Format::Native, &a.dir.dir, rules)?;
    let layers = a.max_stones.layers(&src, "importing", a.report.quiet.quiet)?;
    let last = layers.last().copied().unwrap_or(0);
    write_native_layers(&dst, &layers, Report::new("imported", rules, a.report.json.json), a.report.quiet.quiet, |n| {
        let layer = src.open_layer::<ValuesKind>(n, false)?;
        if let Some((index, value)) = layer.first_out_of_range() {
            return Err(Error::corrupt(layer.path(), Damage::ValueOutOfRange { index, value, stones: n }));
        }
        dst.write_layer::<ValuesKind>(n, layer_size(n), |payload| {
            payload.copy_from_slice(layer.bytes());
            Ok(())
        })
    })?;
    if !a.report.quiet.quiet {
        // The published files have no checksum: a value within range but wrong is copied as is.
        note(&format!(
            "the imported values were checked for range only, not re-derived: `oware verify --rules awari{} --max-stones {last}` re-derives them",
            dir_option(&dst.layers_dir())
        ));
    }
    Ok(())
}
