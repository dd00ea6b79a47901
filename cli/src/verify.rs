//! `oware verify`: checks built layers: file headers and payload checksums, every value
//! re-derived from its children, the forced-capture bounds and depths to capture present (every
//! entry against its children), and the published facts (`docs/facts.md`) that the layers cover.
//!
//! Exit status (see [`crate::errors::exit_code`]):
//! - 0: every file intact, every value follows from its children, no fact contradicted;
//! - 8 (`VerifyFailed`): some value, bounds entry or depth to capture does not follow from its
//!   children, or a published fact is contradicted. Wrong values take precedence over
//!   everything else;
//! - 5 (`Corrupt`): otherwise, some layer file is damaged (bad header field, wrong size, payload
//!   checksum mismatch), then some bounds file, then some dtc file (also: a depth where the
//!   value is 0 or none where it is not); 6 when a file holds another ruleset or layer, 7 for an
//!   I/O error or an entry that is not a readable regular file (a directory, a FIFO, a link loop);
//! - 4 (`LayerMissing`): otherwise, a layer asked for is absent. By default every layer from 0
//!   to the highest one on disk is asked for, so a gap is reported, and an unreadable entry
//!   never ends the check early; then bounds (`--bounds`) or depths to capture (`--dtc`)
//!   required but absent;
//! - 130: interrupted by Ctrl-C.
//! - 2: bad arguments (e.g. `--format vu` with a ruleset other than awari).
//!
//! Results go to stdout (or one JSON document with `--json`); messages and the progress bar to
//! stderr. The policy (which layers, bounds, facts, manifest, the outcome's precedence) is the
//! library's [`oware::verify::verify_directory`]; this file builds its options, prints its
//! report as it comes and maps the outcome to the exit status.

use std::ops::RangeInclusive;

use clap::Args;
use indicatif::ProgressBar;
use oware::error::FileContent;
use oware::index::{layer_size, MAX_STONES};
use oware::progress::Progress;
use oware::storage::{Format, ValuesKind};
use oware::units::{group_digits, layers_phrase};
use oware::verify::Mismatch;
use oware::verify::{
    verify_directory, CompanionEntry, CompanionReport, CompanionStatus, DirectoryReport, Finding, LayerEntry, LayerStatus, ManifestCheck, VerifyObserver,
    VerifyOptions,
};
use oware::{Error, Result};
use serde::Serialize;

use crate::args::{parse_size, reword, thread_pool, DatabaseArgs, JsonArg, MaxStonesArg, QuietArg, ThreadsArg};
use crate::output::{note, Stdout, SCHEMA_VERSION};
use crate::{progress, signals};

/// Arguments of `oware verify`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("max_stones", "Re-derive layers 0..=N (all must be present)"), ("json", "Print one JSON document on stdout instead of the text report"), ("quiet", "No progress bar and no messages besides errors (the bar is never drawn when stderr is not a terminal)")])))]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    db: DatabaseArgs,
    /// Layers to re-derive: `A..B` (inclusive) or `N`. The layers below A that they read are
    /// opened and checked (header, checksum) but not re-derived. Default: every layer present,
    /// from 0 up to the first missing one.
    #[arg(long, value_name = "A..B", value_parser = parse_layers, conflicts_with = "max_stones")]
    layers: Option<RangeInclusive<u32>>,
    #[command(flatten)]
    max_stones: MaxStonesArg,
    #[command(flatten)]
    json: JsonArg,
    #[command(flatten)]
    quiet: QuietArg,
    #[command(flatten)]
    threads: ThreadsArg,
    /// Require every layer's forced-capture bounds (`bounds-NN.owdb`): missing ones are errors.
    /// Without it, the bounds present are checked and absent ones skipped.
    #[arg(long)]
    bounds: bool,
    /// Require the depths to capture (`dtc-NN.owdb`) of every layer asked for: missing ones are
    /// errors. Without it, the dtc files present are checked and absent ones skipped.
    #[arg(long, visible_alias = "require-dtc")]
    dtc: bool,
    /// Memory the re-derivation may keep in the page cache, e.g. `16G` (default: what the
    /// system reports available). A layer whose files do not fit together is re-derived in
    /// several passes, each reading a group of them (docs/cli.md#verify).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_negative_numbers = true)]
    max_memory: Option<u64>,
}

/// The text lines of one layer's file beside its values (its bounds, its depths to capture).
fn companion_text(e: &CompanionEntry) -> String {
    let (n, label) = (e.layer, format!("{:<6}", e.kind.name()));
    let pair = |p: Option<(u8, u8)>| p.map_or("no valid code".to_string(), |(m, o)| format!("{m}/{o}"));
    let depth = |d: Option<u16>| d.map_or("none".to_string(), |d| d.to_string());
    match &e.status {
        CompanionStatus::Checked(r) => {
            let (checked, mismatches) = r.tally();
            // What each kind checks, adds after the time, and shows of each mismatch.
            let (what, extra, lines): (&str, String, Vec<String>) = match r {
                CompanionReport::Bounds(r) => {
                    let line = |m: &oware::verify::BoundsMismatch| {
                        let contradicts = if m.contradicts_value { format!(", contradicts its value {:+}", m.value) } else { String::new() };
                        format!(
                            "    index {:>12}: {}  stored {}, its moves give {}{contradicts}\n",
                            m.index,
                            board_text(&m.board),
                            pair(m.stored),
                            pair(m.derived)
                        )
                    };
                    ("entries checked, ", String::new(), r.first_mismatches.iter().map(line).collect())
                }
                CompanionReport::Dtc(r) => {
                    let line = |m: &oware::verify::DtcMismatch| {
                        format!(
                            "    index {:>12}: {}  value {:+}, stored depth {}, its moves give {}\n",
                            m.index,
                            board_text(&m.board),
                            m.value,
                            depth(m.stored),
                            depth(m.derived)
                        )
                    };
                    ("depths checked,  ", format!("; greatest depth {}", depth(r.greatest_depth)), r.first_mismatches.iter().map(line).collect())
                }
                CompanionReport::Entries(r) => {
                    let line = |m: &oware::verify::EntryMismatch| {
                        format!("    index {:>12}: {}  stored {}, its moves give {}\n", m.index, board_text(&m.board), m.stored, m.derived)
                    };
                    ("entries checked, ", String::new(), r.first_mismatches.iter().map(line).collect())
                }
                _ => ("entries checked, ", String::new(), Vec::new()),
            };
            let mut s = format!(
                "{label} {n:>2}: {:>14} {what}{:>9} mismatch{}, {:>8.2} s{extra}; header ok, checksum ok\n",
                group_digits(checked),
                group_digits(mismatches),
                if mismatches == 1 { "  " } else { "es" },
                r.seconds()
            );
            s.extend(lines);
            s
        }
        CompanionStatus::Unchecked => {
            let why = match e.kind {
                FileContent::Dtc => "a layer of values it reads is missing or damaged",
                _ => "below the range, or a layer it reads is missing or damaged",
            };
            format!("{label} {n:>2}: header ok, checksum ok; not checked ({why})\n")
        }
        CompanionStatus::Damaged(err) => format!("{label} {n:>2}: DAMAGED: {err}\n"),
        CompanionStatus::Missing(_) => format!("{label} {n:>2}: MISSING: not built (oware build --{})\n", e.kind.name()),
    }
}

/// Parses `A..B`, `A..=B` (both inclusive) or `N`.
fn parse_layers(s: &str) -> std::result::Result<RangeInclusive<u32>, String> {
    let num = |t: &str| -> std::result::Result<u32, String> {
        let v: u32 = t.trim().parse().map_err(|_| format!("'{s}' is not a layer range like 0..20 or 12"))?;
        if v > MAX_STONES {
            return Err(format!("layer {v} does not exist: at most {MAX_STONES} stones"));
        }
        Ok(v)
    };
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (num(a)?, num(b.strip_prefix('=').unwrap_or(b))?),
        None => {
            let v = num(s)?;
            (v, v)
        }
    };
    if a > b {
        return Err(format!("empty layer range '{s}': {a} is above {b}"));
    }
    Ok(a..=b)
}

/// A progress bar fed by the verifier, cleared when dropped; Ctrl-C cancels.
struct Bar(ProgressBar);

impl Progress for Bar {
    fn advance(&self, units: u64) {
        self.0.inc(units);
    }
    fn cancelled(&self) -> bool {
        signals::interrupted()
    }
}

/// Ctrl-C or SIGTERM cancels; nothing is drawn (hashing the packs is quick next to re-deriving).
struct Cancel;

impl Progress for Cancel {
    fn cancelled(&self) -> bool {
        signals::interrupted()
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

fn bar(draw: bool, n: u32) -> ProgressBar {
    let bar = progress::count(draw, layer_size(n), "green/white");
    bar.set_prefix(format!("layer {n}"));
    bar
}

fn board_text(b: &[u8]) -> String {
    b.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")
}

fn mismatch_line(n: u32, m: &Mismatch) -> String {
    let range = if m.out_of_range(n) { format!(" (outside -{n}..{n})") } else { String::new() };
    format!("    index {:>12}: {}  stored {:+}{range}, derived from its children {:+}", m.index, board_text(&m.board), m.stored, m.derived)
}

/// `oware verify --json`: the library's report with the schema version first.
#[derive(Serialize)]
struct VerifyDoc<'a> {
    schema_version: u32,
    #[serde(flatten)]
    report: &'a DirectoryReport,
}

/// Shows the verification as it goes: the first note, progress bars and (without `--json`) each
/// layer's lines as soon as it is done.
struct Printer {
    out: Stdout,
    json: bool,
    quiet: bool,
    draw: bool,
    format: Format,
    threads: usize,
    /// The layers asked for, once [`VerifyObserver::start`] is called.
    started: Option<(u32, u32)>,
    /// What the first note names: ruleset and directory.
    rules: oware::Ruleset,
    where_: std::path::PathBuf,
}

impl VerifyObserver for Printer {
    fn start(&mut self, first: u32, last: u32) {
        self.started = Some((first, last));
        if !self.quiet {
            note(&format!(
                "verifying {} {} in {} ({} format) with {} threads",
                self.rules,
                layers_phrase(first..=last),
                self.where_.display(),
                if self.format == Format::Native { "native" } else { "published 2002" },
                self.threads
            ));
        }
    }

    fn manifest(&mut self, m: &ManifestCheck) -> Result<()> {
        if self.json {
            return Ok(());
        }
        let line = match &m.error {
            None if !m.present => format!("manifest {}: none: the pack files' SHA-256 digests are not checked (`oware pack` writes it)\n", m.path.display()),
            None => format!("manifest {}: {} pack file{} match\n", m.path.display(), m.files_matched, plural(m.files_matched as u64)),
            Some(e) => format!("manifest {}: FAILED: {e}\n", m.path.display()),
        };
        self.out.write(&line)
    }

    fn progress(&mut self, n: u32) -> Box<dyn Progress> {
        Box::new(Bar(bar(self.draw, n)))
    }

    fn manifest_progress(&mut self) -> Box<dyn Progress> {
        Box::new(Cancel)
    }

    fn layer(&mut self, entry: &LayerEntry, earlier: &[LayerEntry]) -> Result<()> {
        if self.json {
            return Ok(());
        }
        let first = self.started.map_or(0, |(f, _)| f);
        self.out.write(&layer_text(first, self.format, entry, earlier))
    }

    fn companion(&mut self, entry: &CompanionEntry) -> Result<()> {
        if self.json {
            return Ok(());
        }
        self.out.write(&companion_text(entry))
    }
}

/// Verifies the layers as asked; see the module documentation for the exit status.
///
/// # Errors
/// [`Error::Usage`] for bad arguments; [`Error::Interrupted`] after Ctrl-C; otherwise as
/// described in the module documentation.
pub(crate) fn run(a: VerifyArgs) -> Result<()> {
    signals::cooperative();
    let rules = a.db.rules.ruleset();
    let dir = a.db.dir()?;
    let pool = thread_pool(a.threads.threads)?;
    let options = VerifyOptions {
        layers: a.layers.clone().or(a.max_stones.max_stones.map(|m| 0..=m)),
        require: FileContent::selected([(a.bounds, FileContent::Bounds), (a.dtc, FileContent::Dtc)]),
        max_memory: a.max_memory,
    };
    let mut printer = Printer {
        out: Stdout::new(),
        json: a.json.json,
        quiet: a.quiet.quiet,
        draw: progress::show(a.quiet.quiet),
        format: dir.format(),
        threads: pool.current_num_threads(),
        started: None,
        rules,
        where_: dir.layers_dir(),
    };
    let report = match pool.install(|| verify_directory(&dir, &options, &mut printer)) {
        Ok(r) => r,
        Err(e) => {
            if printer.started.is_none() && matches!(e, Error::LayerMissing { .. } | Error::PublishedLayerMissing { .. }) && !a.quiet.quiet {
                note(&format!("no layers to verify: {} does not exist", dir.path::<ValuesKind>(0).display()));
            }
            return Err(e);
        }
    };
    let mut out = printer.out;

    if a.json.json {
        out.json(&VerifyDoc { schema_version: SCHEMA_VERSION, report: &report })?;
    } else {
        let mut s = String::from("published facts (docs/facts.md):\n");
        for f in &report.facts {
            s.push_str(&format!("  {:<13} {}: {}\n", f.status.label(), f.id, f.statement));
            s.push_str(&format!("  {:<13}   {}\n", "", f.detail));
        }
        s.push_str(&format!(
            "total: {} positions re-derived in {:.2} s ({:.2} M positions/s); {:.2} s in all\n",
            group_digits(report.positions_checked),
            report.derive_seconds,
            report.positions_per_second() / 1e6,
            report.seconds
        ));
        s.push_str(&report.summary);
        s.push('\n');
        out.write(&s)?;
    }

    // Exit status: wrong values first, then damaged files, then missing layers. With several
    // damaged files, the summary names them all (the error names the first).
    let several = match report.outcome {
        Finding::Damaged(FileContent::Values) => {
            report.layers_in(FileContent::Values, "damaged").len() > 1 || !report.layers_in(FileContent::Values, "not-verified").is_empty()
        }
        Finding::Damaged(kind) => report.layers_in(kind, "damaged").len() > 1,
        _ => false,
    };
    if several && !a.quiet.quiet {
        note(&report.summary);
    }
    match report.into_error() {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The text lines of one layer; `earlier` holds the layers before it.
fn layer_text(first: u32, format: Format, e: &LayerEntry, earlier: &[LayerEntry]) -> String {
    let n = e.layer;
    let file_state = if format == Format::Native { "header ok, checksum ok" } else { "size ok (no header or checksum)" };
    let mut s = String::new();
    match &e.status {
        LayerStatus::Dependency => {
            s.push_str(&format!("layer {n:>2}: {file_state}; read by layers {first}.. (not re-derived: below --layers)\n"));
        }
        LayerStatus::Checked(r) => {
            s.push_str(&format!(
                "layer {n:>2}: {:>15} positions checked, {:>9} mismatch{}, {:>8.2} s, {:>7.2} M positions/s; {file_state}\n",
                group_digits(r.checked),
                group_digits(r.mismatches),
                if r.mismatches == 1 { "  " } else { "es" },
                r.seconds,
                r.positions_per_second() / 1e6
            ));
            if !r.is_ok() {
                let shown = r.first_mismatches.len() as u64;
                s.push_str(&format!(
                    "  {} position{} of layer {n} do{} not follow from {} children{}:\n",
                    group_digits(r.mismatches),
                    plural(r.mismatches),
                    if r.mismatches == 1 { "es" } else { "" },
                    if r.mismatches == 1 { "its" } else { "their" },
                    if shown < r.mismatches { format!(" (first {shown} shown)") } else { String::new() }
                ));
                for m in &r.first_mismatches {
                    s.push_str(&mismatch_line(n, m));
                    s.push('\n');
                }
            }
        }
        LayerStatus::Blocked { needs } => {
            let why: Vec<String> = needs
                .iter()
                .map(|m| {
                    let state = match earlier.iter().find(|k| k.layer == *m) {
                        Some(LayerEntry { status: LayerStatus::Missing(_), .. }) => "missing",
                        _ => "damaged",
                    };
                    format!("layer {m} ({state})")
                })
                .collect();
            s.push_str(&format!("layer {n:>2}: {file_state}, but NOT re-derived: its captures lead to {}\n", why.join(", ")));
        }
        LayerStatus::Damaged(e) => s.push_str(&format!("layer {n:>2}: DAMAGED: {e}\n")),
        LayerStatus::Missing(_) => s.push_str(&format!("layer {n:>2}: MISSING: not built\n")),
        LayerStatus::NotNeeded => s.push_str(&format!("layer {n:>2}: skipped: not built and not needed (no position of layer {} reaches it)\n", n + 1)),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_ranges_parse() {
        assert_eq!(parse_layers("0..20").unwrap(), 0..=20);
        assert_eq!(parse_layers("3..=7").unwrap(), 3..=7);
        assert_eq!(parse_layers("12").unwrap(), 12..=12);
        assert!(parse_layers("7..3").is_err());
        assert!(parse_layers("0..49").is_err());
        assert!(parse_layers("x").is_err());
    }
}
