//! `oware verify`: checks built layers: file headers and payload checksums, every value
//! re-derived from its children, and the published facts (`docs/facts.md`) that the layers cover.
//!
//! Exit status (see [`super::exit_code`]):
//! - 0: every file intact, every value follows from its children, no fact contradicted;
//! - 8 (`VerifyFailed`): some value does not follow from its children, or a published fact is
//!   contradicted. Wrong values take precedence over everything else;
//! - 5 (`Corrupt`): otherwise, some layer file is damaged (bad header field, wrong size, payload
//!   checksum mismatch); 6 when a file holds another ruleset or layer, 7 for an I/O error or an
//!   entry that is not a readable regular file (a directory, a FIFO, a link loop);
//! - 4 (`LayerMissing`): otherwise, a layer asked for is absent. By default every layer from 0
//!   to the highest one on disk is asked for, so a gap is reported, and an unreadable entry
//!   never ends the check early;
//! - 130: interrupted by Ctrl-C.
//! - 2: bad arguments (e.g. `--format vu` with a ruleset other than awari).
//!
//! Results go to stdout (or one JSON document with `--json`); messages and the progress bar to
//! stderr.

use std::ops::RangeInclusive;
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oware::facts::{check_facts, FactReport, FactStatus};
use oware::index::{layer_size, MAX_STONES};
use oware::manifest;
use oware::progress::Progress;
use oware::storage::BoundsLayer;
use oware::storage::{Format, Layer};
use oware::units::{group_digits, layers_phrase};
use oware::verify::{layers_needed, verify_bounds, verify_layer, BoundsMismatch, BoundsReport, LayerReport, Mismatch};
use oware::{Error, Result};
use serde::Serialize;

use super::output::{note, Stdout, SCHEMA_VERSION};
use super::query::ErrorDoc;
use super::{database_dir, parse_threads, show_progress, signals, DirArg, FormatArg, RulesArg};

/// Arguments of `oware verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    rules: RulesArg,
    #[command(flatten)]
    dir: DirArg,
    #[command(flatten)]
    format: FormatArg,
    /// Layers to re-derive: `A..B` (inclusive) or `N`. The layers below A that they read are
    /// opened and checked (header, checksum) but not re-derived. Default: every layer present,
    /// from 0 up to the first missing one.
    #[arg(long, value_name = "A..B", value_parser = parse_layers, conflicts_with = "max_stones")]
    layers: Option<RangeInclusive<u32>>,
    /// Re-derive layers 0..=N (all must be present).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=MAX_STONES as i64))]
    max_stones: Option<u32>,
    /// Print one JSON document on stdout instead of the text report.
    #[arg(long)]
    json: bool,
    /// No progress bar and no messages besides errors (the bar is never drawn when stderr is not
    /// a terminal).
    #[arg(long, short)]
    quiet: bool,
    /// Worker threads, 1..=1024 (default: all cores).
    #[arg(long, value_name = "T", value_parser = parse_threads)]
    threads: Option<usize>,
    /// Require every layer's forced-capture bounds (`bounds-NN.owdb`): missing ones are errors.
    /// Without it, the bounds present are checked and absent ones skipped.
    #[arg(long)]
    bounds: bool,
}

/// What the bounds check found for one layer.
enum BoundsOutcome {
    /// Checked: the report.
    Checked(BoundsReport),
    /// Intact but not checked: below the range, or a layer it needs (values or bounds) is
    /// missing or damaged.
    Unchecked,
    /// Damaged, foreign or unreadable.
    Damaged(Error),
    /// Absent while `--bounds` asked for it.
    Missing(Error),
}

/// One layer's bounds in the JSON document.
#[derive(Serialize)]
struct BoundsDoc<'a> {
    layer: u32,
    /// `ok`, `mismatch`, `not-verified`, `damaged`, `missing`.
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    checked: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mismatches: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_mismatches: Option<&'a [BoundsMismatch]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorDoc<'static>>,
}

fn bounds_doc(n: u32, o: &BoundsOutcome) -> BoundsDoc<'_> {
    let mut d = BoundsDoc { layer: n, status: "not-verified", checked: None, mismatches: None, first_mismatches: None, error: None };
    match o {
        BoundsOutcome::Checked(r) => {
            d.status = if r.is_ok() { "ok" } else { "mismatch" };
            d.checked = Some(r.checked);
            d.mismatches = Some(r.mismatches);
            d.first_mismatches = Some(&r.first_mismatches);
        }
        BoundsOutcome::Unchecked => {}
        BoundsOutcome::Damaged(e) => {
            d.status = "damaged";
            d.error = Some(ErrorDoc::of(e));
        }
        BoundsOutcome::Missing(e) => {
            d.status = "missing";
            d.error = Some(ErrorDoc::of(e));
        }
    }
    d
}

fn bounds_text(n: u32, o: &BoundsOutcome) -> String {
    let pair = |p: Option<(u8, u8)>| p.map_or("no valid code".to_string(), |(m, o)| format!("{m}/{o}"));
    match o {
        BoundsOutcome::Checked(r) => {
            let mut s = format!(
                "bounds {n:>2}: {:>14} entries checked, {:>9} mismatch{}, {:>8.2} s; header ok, checksum ok\n",
                group_digits(r.checked),
                group_digits(r.mismatches),
                if r.mismatches == 1 { "  " } else { "es" },
                r.seconds
            );
            for m in &r.first_mismatches {
                s.push_str(&format!(
                    "    index {:>12}: {}  stored {}, its moves give {}{}\n",
                    m.index,
                    board_text(&m.board),
                    pair(m.stored),
                    pair(m.derived),
                    if m.contradicts_value { format!(", contradicts its value {:+}", m.value) } else { String::new() }
                ));
            }
            s
        }
        BoundsOutcome::Unchecked => {
            format!("bounds {n:>2}: header ok, checksum ok; not checked (below the range, or a layer it reads is missing or damaged)\n")
        }
        BoundsOutcome::Damaged(e) => format!("bounds {n:>2}: DAMAGED: {e}\n"),
        BoundsOutcome::Missing(_) => format!("bounds {n:>2}: MISSING: not built (oware build --bounds)\n"),
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

/// What became of one layer.
enum Outcome {
    /// Opened, header and checksum intact; re-derived unless it is only a dependency.
    Intact { report: Option<LayerReport> },
    /// Intact, but not re-derived: a layer it reads is damaged or missing.
    Blocked { needs: Vec<u32> },
    /// The file is damaged (or unreadable, or of another ruleset).
    Damaged(Error),
    /// The file is absent.
    Missing(Error),
}

/// A progress bar fed by the verifier; Ctrl-C cancels.
struct Bar(ProgressBar);

impl Progress for Bar {
    fn advance(&self, units: u64) {
        self.0.inc(units);
    }
    fn cancelled(&self) -> bool {
        signals::interrupted()
    }
}

fn bar(draw: bool, n: u32) -> ProgressBar {
    let target = if draw { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
    let bar = ProgressBar::with_draw_target(Some(layer_size(n)), target);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>9} [{bar:30.green/white}] {percent:>3}%  {human_pos}/{human_len}  ETA {eta}") {
        bar.set_style(style.progress_chars("=> "));
    }
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

/// One layer in the JSON document.
#[derive(Serialize)]
struct LayerDoc<'a> {
    layer: u32,
    /// `ok`, `mismatch`, `dependency` (read by the layers asked for, not re-derived),
    /// `not-verified` (a layer it reads is damaged or missing), `damaged`, `missing`.
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    checked: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mismatches: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    positions_per_second: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_mismatches: Option<&'a [Mismatch]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    needs: Option<&'a [u32]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorDoc<'static>>,
}

/// `oware verify --json`: one document.
#[derive(Serialize)]
struct VerifyDoc<'a> {
    schema_version: u32,
    rules: &'static str,
    dir: String,
    format: &'static str,
    layers_requested: [u32; 2],
    layers: Vec<LayerDoc<'a>>,
    facts: &'a [FactReport],
    positions_checked: u64,
    mismatches: u64,
    seconds: f64,
    positions_per_second: f64,
    /// The forced-capture bounds checked (every layer's present, or all with `--bounds`).
    bounds: Vec<BoundsDoc<'a>>,
    bounds_checked: u64,
    bounds_mismatches: u64,
    /// The pack manifest's check: absent when the directory has no `SHA256SUMS`.
    manifest: Option<ManifestDoc<'a>>,
    ok: bool,
    summary: &'a str,
}

/// `manifest` in `oware verify --json`.
#[derive(Serialize)]
struct ManifestDoc<'a> {
    path: String,
    files_matched: usize,
    error: Option<ErrorDoc<'a>>,
}

/// Verifies the layers as asked; see the module documentation for the exit status.
///
/// # Errors
/// [`Error::Usage`] for bad arguments; [`Error::Interrupted`] after Ctrl-C; otherwise as
/// described in the module documentation.
pub fn run(a: VerifyArgs) -> Result<()> {
    signals::cooperative();
    let rules = a.rules.ruleset();
    let dir = database_dir(&a.dir, a.format.format(), rules)?;
    let format = dir.format();
    let pool = super::thread_pool(a.threads)?;
    let where_ = dir.layers_dir();
    let mut out = Stdout::new();

    // Which layers to re-derive (by default every layer on disk, unreadable ones included).
    let range = match (&a.layers, a.max_stones) {
        (Some(r), _) => r.clone(),
        (None, Some(m)) => 0..=m,
        (None, None) => match dir.layers_on_disk().last() {
            None => {
                if !a.quiet {
                    note(&format!("no layers to verify: {} does not exist", dir.layer_path(0).display()));
                }
                return Err(dir.missing(0));
            }
            Some(&last) => 0..=last,
        },
    };
    let (first, last) = (*range.start(), *range.end());
    if !a.quiet {
        note(&format!(
            "verifying {rules} {} in {} ({} format) with {} threads",
            layers_phrase(first..=last),
            where_.display(),
            if format == Format::Native { "native" } else { "published 2002" },
            pool.current_num_threads()
        ));
    }

    // A pack directory's manifest: every listed file of this ruleset has its SHA-256.
    let manifest_path = dir.base().join(manifest::MANIFEST);
    let manifest = match format {
        Format::Native => match manifest::check(dir.base(), rules) {
            Ok(None) => None,
            Ok(Some(c)) => Some((c.matched.len(), None)),
            Err(e) => Some((0, Some(e))),
        },
        Format::Vu => None,
    };
    if let (Some((k, err)), false) = (&manifest, a.json) {
        let line = match err {
            None => format!("manifest {}: {k} pack file{} match\n", manifest_path.display(), plural(*k as u64)),
            Some(e) => format!("manifest {}: FAILED: {e}\n", manifest_path.display()),
        };
        out.write(&line)?;
    }

    let draw = show_progress(a.quiet);
    let start = Instant::now();
    let mut layers: Vec<Option<Layer>> = Vec::new();
    let mut outcomes: Vec<(u32, Outcome)> = Vec::new();
    for n in 0..=last {
        if n < first && n + 2 > last {
            // Below the range and read by none of its layers (layer B reads 0..=B-2): skipped.
            layers.push(None);
            continue;
        }
        let outcome = match dir.open(n, true) {
            Err(e @ (Error::LayerMissing { .. } | Error::PublishedLayerMissing { .. })) => {
                layers.push(None);
                Outcome::Missing(e)
            }
            Err(e) => {
                layers.push(None);
                Outcome::Damaged(e)
            }
            Ok(layer) => {
                let needs: Vec<u32> = layers_needed(n).filter(|&m| layers[m as usize].is_none()).collect();
                let outcome = if n < first {
                    Outcome::Intact { report: None }
                } else if !needs.is_empty() {
                    Outcome::Blocked { needs }
                } else {
                    let lower: Vec<&[i8]> = layers.iter().map(|l| l.as_ref().map(|l| l.values()).unwrap_or(&[])).collect();
                    let pb = bar(draw, n);
                    let result = pool.install(|| verify_layer(rules, n, &layer, &lower, &Bar(pb.clone())));
                    pb.finish_and_clear();
                    Outcome::Intact { report: Some(result?) }
                };
                layers.push(Some(layer));
                outcome
            }
        };
        if !a.json {
            out.write(&layer_text(n, first, format, &outcome, &outcomes))?;
        }
        outcomes.push((n, outcome));
    }

    // Forced-capture bounds: those present (all, with --bounds), each entry against its
    // children's bounds and its value.
    let mut bounds_layers: Vec<Option<BoundsLayer>> = Vec::new();
    let mut bounds_outcomes: Vec<(u32, BoundsOutcome)> = Vec::new();
    for n in 0..=last {
        if format != Format::Native || (!a.bounds && !dir.has_bounds(n)) || (n < first && n + 2 > last) {
            bounds_layers.push(None);
            continue;
        }
        let outcome = match dir.open_bounds(n, true) {
            Err(e @ Error::BoundsMissing { .. }) => {
                bounds_layers.push(None);
                BoundsOutcome::Missing(e)
            }
            Err(e) => {
                bounds_layers.push(None);
                BoundsOutcome::Damaged(e)
            }
            Ok(b) => {
                let lower_ok = layers_needed(n).all(|m| bounds_layers[m as usize].is_some());
                let outcome = match (&layers[n as usize], n >= first && lower_ok) {
                    (Some(values), true) => {
                        let lower: Vec<&[u8]> = bounds_layers.iter().map(|l| l.as_ref().map(|l| l.payload()).unwrap_or(&[])).collect();
                        let pb = bar(draw, n);
                        let result = pool.install(|| verify_bounds(rules, n, values.values(), b.payload(), &lower, &Bar(pb.clone())));
                        pb.finish_and_clear();
                        BoundsOutcome::Checked(result?)
                    }
                    _ => BoundsOutcome::Unchecked,
                };
                bounds_layers.push(Some(b));
                outcome
            }
        };
        if !a.json {
            out.write(&bounds_text(n, &outcome))?;
        }
        bounds_outcomes.push((n, outcome));
    }
    let bounds_reports: Vec<&BoundsReport> = bounds_outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            BoundsOutcome::Checked(r) => Some(r),
            _ => None,
        })
        .collect();
    let bounds_checked: u64 = bounds_reports.iter().map(|r| r.checked).sum();
    let bounds_mismatches: u64 = bounds_reports.iter().map(|r| r.mismatches).sum();
    let bad_bounds: Vec<u32> = bounds_reports.iter().filter(|r| !r.is_ok()).map(|r| r.layer).collect();
    let damaged_bounds: Vec<u32> = bounds_outcomes.iter().filter(|(_, o)| matches!(o, BoundsOutcome::Damaged(_))).map(|(n, _)| *n).collect();
    let missing_bounds: Vec<u32> = bounds_outcomes.iter().filter(|(_, o)| matches!(o, BoundsOutcome::Missing(_))).map(|(n, _)| *n).collect();
    let seconds = start.elapsed().as_secs_f64();

    let values: Vec<Option<&[i8]>> = layers.iter().map(|l| l.as_ref().map(|l| l.values())).collect();
    let facts = check_facts(rules, &values);

    // Summary.
    let reports: Vec<&LayerReport> = outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Intact { report: Some(r) } => Some(r),
            _ => None,
        })
        .collect();
    let checked: u64 = reports.iter().map(|r| r.checked).sum();
    let derive_seconds: f64 = reports.iter().fold(0.0, |s, r| s + r.seconds);
    let mismatches: u64 = reports.iter().map(|r| r.mismatches).sum();
    let bad_layers: Vec<u32> = reports.iter().filter(|r| !r.is_ok()).map(|r| r.layer).collect();
    let failed_facts: Vec<&FactReport> = facts.iter().filter(|f| f.status == FactStatus::Failed).collect();
    let damaged: Vec<u32> = outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Damaged(_))).map(|(n, _)| *n).collect();
    let missing: Vec<u32> = outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Missing(_))).map(|(n, _)| *n).collect();
    let blocked: Vec<u32> = outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Blocked { .. })).map(|(n, _)| *n).collect();
    let manifest_failed = matches!(manifest, Some((_, Some(_))));
    let ok = mismatches == 0
        && bounds_mismatches == 0
        && damaged_bounds.is_empty()
        && missing_bounds.is_empty()
        && failed_facts.is_empty()
        && damaged.is_empty()
        && missing.is_empty()
        && blocked.is_empty()
        && !manifest_failed;

    let mut problems = Vec::new();
    if mismatches > 0 {
        problems.push(format!("{} wrong value{} in {}", group_digits(mismatches), plural(mismatches), layers_phrase(bad_layers.iter().copied())));
    }
    if bounds_mismatches > 0 {
        problems.push(format!(
            "{} wrong bounds entr{} in {}",
            group_digits(bounds_mismatches),
            if bounds_mismatches == 1 { "y" } else { "ies" },
            layers_phrase(bad_bounds.iter().copied())
        ));
    }
    if !damaged_bounds.is_empty() {
        problems.push(format!("damaged or unreadable bounds of {}", layers_phrase(damaged_bounds.iter().copied())));
    }
    if !missing_bounds.is_empty() {
        problems.push(format!("missing bounds of {}", layers_phrase(missing_bounds.iter().copied())));
    }
    if !failed_facts.is_empty() {
        let ids: Vec<&str> = failed_facts.iter().map(|f| f.id).collect();
        problems.push(format!("fact{} contradicted: {}", plural(ids.len() as u64), ids.join(", ")));
    }
    if !damaged.is_empty() {
        problems.push(format!("damaged or unreadable {}", layers_phrase(damaged.iter().copied())));
    }
    if !missing.is_empty() {
        problems.push(format!("missing {}", layers_phrase(missing.iter().copied())));
    }
    if !blocked.is_empty() {
        problems.push(format!("{} not re-derived", layers_phrase(blocked.iter().copied())));
    }
    if manifest_failed {
        problems.push(format!("{} does not match the files", manifest::MANIFEST));
    }
    let summary = if ok {
        let bounds = if bounds_checked > 0 {
            format!("; {} bounds entries checked, every one satisfies its equations and agrees with its value", group_digits(bounds_checked))
        } else {
            String::new()
        };
        format!(
            "OK: {} of {rules}: {} positions re-derived, every value follows from its children{bounds}; no fact contradicted",
            layers_phrase(first..=last),
            group_digits(checked)
        )
    } else {
        format!("FAILED: {}", problems.join("; "))
    };

    if a.json {
        let doc = VerifyDoc {
            schema_version: SCHEMA_VERSION,
            rules: rules.name(),
            dir: where_.display().to_string(),
            format: format.name(),
            layers_requested: [first, last],
            layers: outcomes.iter().map(|(n, o)| layer_doc(*n, o)).collect(),
            facts: &facts,
            positions_checked: checked,
            mismatches,
            seconds,
            positions_per_second: checked as f64 / derive_seconds.max(1e-9),
            bounds: bounds_outcomes.iter().map(|(n, o)| bounds_doc(*n, o)).collect(),
            bounds_checked,
            bounds_mismatches,
            manifest: manifest.as_ref().map(|(k, e)| ManifestDoc {
                path: manifest_path.display().to_string(),
                files_matched: *k,
                error: e.as_ref().map(ErrorDoc::of),
            }),
            ok,
            summary: &summary,
        };
        out.json(&doc)?;
    } else {
        let mut s = String::from("published facts (docs/facts.md):\n");
        for f in &facts {
            s.push_str(&format!("  {:<13} {}: {}\n", f.status.label(), f.id, f.statement));
            s.push_str(&format!("  {:<13}   {}\n", "", f.detail));
        }
        s.push_str(&format!(
            "total: {} positions re-derived in {:.2} s ({:.2} M positions/s); {:.2} s in all\n",
            group_digits(checked),
            derive_seconds,
            checked as f64 / derive_seconds.max(1e-9) / 1e6,
            seconds
        ));
        s.push_str(&summary);
        s.push('\n');
        out.write(&s)?;
    }

    // Exit status: wrong values first, then damaged files, then missing layers.
    if mismatches > 0 || bounds_mismatches > 0 || !failed_facts.is_empty() {
        return Err(Error::VerifyFailed { wrong_values: mismatches + bounds_mismatches, failed_facts: failed_facts.len() as u64 });
    }

    if let Some((_, Outcome::Damaged(e))) = outcomes.into_iter().find(|(_, o)| matches!(o, Outcome::Damaged(_))) {
        if (damaged.len() > 1 || !blocked.is_empty()) && !a.quiet {
            note(&summary);
        }
        return Err(e);
    }
    if let Some((_, BoundsOutcome::Damaged(e))) = bounds_outcomes.into_iter().find(|(_, o)| matches!(o, BoundsOutcome::Damaged(_))) {
        if damaged_bounds.len() > 1 && !a.quiet {
            note(&summary);
        }
        return Err(e);
    }
    if let Some((_, Some(e))) = manifest {
        return Err(e);
    }
    if let Some(&n) = missing.first() {
        return Err(dir.missing(n));
    }
    if let Some(&n) = missing_bounds.first() {
        return Err(Error::BoundsMissing { layer: n, dir: dir.layers_dir(), rules });
    }
    Ok(())
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The text lines of one layer.
fn layer_text(n: u32, first: u32, format: Format, o: &Outcome, before: &[(u32, Outcome)]) -> String {
    let file_state = if format == Format::Native { "header ok, checksum ok" } else { "size ok (no header or checksum)" };
    let mut s = String::new();
    match o {
        Outcome::Intact { report: None } => {
            s.push_str(&format!("layer {n:>2}: {file_state}; read by layers {first}.. (not re-derived: below --layers)\n"));
        }
        Outcome::Intact { report: Some(r) } => {
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
        Outcome::Blocked { needs } => {
            let why: Vec<String> = needs
                .iter()
                .map(|m| {
                    let state = match before.iter().find(|(k, _)| k == m) {
                        Some((_, Outcome::Missing(_))) => "missing",
                        _ => "damaged",
                    };
                    format!("layer {m} ({state})")
                })
                .collect();
            s.push_str(&format!("layer {n:>2}: {file_state}, but NOT re-derived: its captures lead to {}\n", why.join(", ")));
        }
        Outcome::Damaged(e) => s.push_str(&format!("layer {n:>2}: DAMAGED: {e}\n")),
        Outcome::Missing(_) => s.push_str(&format!("layer {n:>2}: MISSING: not built\n")),
    }
    s
}

fn layer_doc(n: u32, o: &Outcome) -> LayerDoc<'_> {
    let mut d = LayerDoc {
        layer: n,
        status: "",
        checked: None,
        mismatches: None,
        seconds: None,
        positions_per_second: None,
        first_mismatches: None,
        needs: None,
        error: None,
    };
    match o {
        Outcome::Intact { report: None } => d.status = "dependency",
        Outcome::Intact { report: Some(r) } => {
            d.status = if r.is_ok() { "ok" } else { "mismatch" };
            d.checked = Some(r.checked);
            d.mismatches = Some(r.mismatches);
            d.seconds = Some(r.seconds);
            d.positions_per_second = Some(r.positions_per_second());
            d.first_mismatches = Some(&r.first_mismatches);
        }
        Outcome::Blocked { needs } => {
            d.status = "not-verified";
            d.needs = Some(needs);
        }
        Outcome::Damaged(e) => {
            d.status = "damaged";
            d.error = Some(ErrorDoc::of(e));
        }
        Outcome::Missing(e) => {
            d.status = "missing";
            d.error = Some(ErrorDoc::of(e));
        }
    }
    d
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
