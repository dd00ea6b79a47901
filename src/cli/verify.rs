//! `oware verify`: checks built layers: file headers and payload checksums, every value
//! re-derived from its children, and the published facts of `FACTS.md` that the layers cover.
//!
//! Exit status (see [`oware::Error::exit_code`]):
//! - 0: every file intact, every value follows from its children, no fact contradicted;
//! - 8 (`VerifyFailed`): some value does not follow from its children, or a published fact is
//!   contradicted. Wrong values take precedence over everything else;
//! - 5 (`Corrupt`): otherwise, some layer file is damaged (bad header field, wrong size, payload
//!   checksum mismatch); 6 when a file holds another ruleset, 7 for an I/O error;
//! - 4 (`LayerMissing`): otherwise, a layer asked for with `--layers`/`--max-stones` is absent
//!   (or, by default, not even layer 0 is present);
//! - 2: bad arguments (e.g. `--format vu` with a ruleset other than awari).
//!
//! Results go to stdout (or one JSON document with `--json`); messages and the progress bar to
//! stderr.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oware::index::{layer_size, MAX_STONES};
use oware::solver::Progress;
use oware::storage::{ruleset_dir, vu_path, Format, Layer};
use oware::verify::{check_facts, layers_needed, layers_phrase, verify_layer, FactReport, FactStatus, LayerReport, Mismatch};
use oware::{Error, Result, Ruleset};
use serde_json::{json, Value};

use oware::units::group_digits;
use super::{show_progress, DirArg, FormatArg, RulesArg};

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
    #[arg(long, value_name = "N")]
    max_stones: Option<u32>,
    /// Print one JSON document on stdout instead of the text report.
    #[arg(long)]
    json: bool,
    /// No progress bar and no messages besides errors (the bar is never drawn when stderr is not
    /// a terminal).
    #[arg(long, short)]
    quiet: bool,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "T")]
    threads: Option<usize>,
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

/// The directory the layers of `rules` live in, for messages.
fn layers_dir(format: Format, dir: &Path, rules: Ruleset) -> PathBuf {
    match format {
        Format::Native => ruleset_dir(dir, rules),
        Format::Vu => dir.to_path_buf(),
    }
}

/// A hint when only the compressed distribution file of a published layer is present.
fn zst_hint(format: Format, dir: &Path, n: u32) -> String {
    let path = vu_path(dir, n);
    let zst = path.with_file_name(format!("scores.{n}.zst"));
    if format == Format::Vu && zst.exists() {
        format!(
            " ({} is present: compressed files are for distribution; decompress with `zstd -d` to verify)",
            zst.display()
        )
    } else {
        String::new()
    }
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

/// A progress bar fed by the verifier.
struct Bar(ProgressBar);

impl Progress for Bar {
    fn advance(&self, units: u64) {
        self.0.inc(units);
    }
}

fn bar(draw: bool, n: u32) -> ProgressBar {
    let target = if draw { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
    let bar = ProgressBar::with_draw_target(Some(layer_size(n)), target);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>9} [{bar:30.green/white}] {percent:>3}%  {human_pos}/{human_len}  ETA {eta}",
    ) {
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
    format!(
        "    index {:>12}: {}  stored {:+}{range}, derived from its children {:+}",
        m.index,
        board_text(&m.board),
        m.stored,
        m.derived
    )
}

/// Verifies the layers as asked; see the module documentation for the exit status.
///
/// # Errors
/// [`Error::Usage`] for bad arguments; otherwise as described in the module documentation.
pub fn run(a: VerifyArgs) -> Result<()> {
    let rules = a.rules.rules;
    let dir = a.dir.dir.clone();
    let format = a.format.format;
    oware::storage::check_format_rules(format, rules)?;
    let pool = super::thread_pool(a.threads)?;
    let where_ = layers_dir(format, &dir, rules);

    // Which layers to re-derive (by default up to the first missing one, remembered here).
    let mut stopped_at = None;
    let range = match (&a.layers, a.max_stones) {
        (Some(r), _) => r.clone(),
        (None, Some(m)) if m > MAX_STONES => {
            return Err(Error::Usage(format!("--max-stones is at most {MAX_STONES}")));
        }
        (None, Some(m)) => 0..=m,
        (None, None) => {
            let first_missing = (0..=MAX_STONES).find(|&n| !oware::storage::layer_file(format, &dir, rules, n).exists());
            match first_missing {
                Some(0) => {
                    eprintln!(
                        "oware: no layers to verify: {} does not exist{}",
                        oware::storage::layer_file(format, &dir, rules, 0).display(),
                        zst_hint(format, &dir, 0)
                    );
                    return Err(Error::LayerMissing { layer: 0, dir: where_, rules: rules.name().into() });
                }
                Some(k) => {
                    stopped_at = Some(k);
                    if !a.quiet {
                        eprintln!(
                            "oware: layer {k} is not present ({}){}: verifying layers 0..{}",
                            oware::storage::layer_file(format, &dir, rules, k).display(),
                            zst_hint(format, &dir, k),
                            k - 1
                        );
                    }
                    0..=k - 1
                }
                None => 0..=MAX_STONES,
            }
        }
    };
    let (first, last) = (*range.start(), *range.end());
    if !a.quiet {
        eprintln!(
            "oware: verifying {rules} {} in {} ({} format) with {} threads",
            layers_phrase(first..=last),
            where_.display(),
            if format == Format::Native { "native" } else { "published 2002" },
            pool.current_num_threads()
        );
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
        let outcome = match Layer::open(format, &dir, rules, n, true) {
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
                    let lower: Vec<&[i8]> =
                        layers.iter().map(|l| l.as_ref().map(|l| l.values()).unwrap_or(&[])).collect();
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
            print_layer(n, first, format, &outcome, &outcomes);
        }
        outcomes.push((n, outcome));
    }
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
    let derive_seconds: f64 = reports.iter().map(|r| r.seconds).sum();
    let mismatches: u64 = reports.iter().map(|r| r.mismatches).sum();
    let bad_layers: Vec<u32> = reports.iter().filter(|r| !r.is_ok()).map(|r| r.layer).collect();
    let failed_facts: Vec<&FactReport> = facts.iter().filter(|f| f.status == FactStatus::Failed).collect();
    let damaged: Vec<u32> = outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Damaged(_))).map(|(n, _)| *n).collect();
    let missing: Vec<u32> = outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Missing(_))).map(|(n, _)| *n).collect();
    let blocked: Vec<u32> = outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Blocked { .. })).map(|(n, _)| *n).collect();
    let ok = mismatches == 0 && failed_facts.is_empty() && damaged.is_empty() && missing.is_empty() && blocked.is_empty();

    let mut problems = Vec::new();
    if mismatches > 0 {
        problems.push(format!("{} wrong value{} in {}", group_digits(mismatches), plural(mismatches), layers_phrase(bad_layers.iter().copied())));
    }
    if !failed_facts.is_empty() {
        let ids: Vec<&str> = failed_facts.iter().map(|f| f.id).collect();
        problems.push(format!("fact{} contradicted: {}", plural(ids.len() as u64), ids.join(", ")));
    }
    if !damaged.is_empty() {
        problems.push(format!("damaged {}", layers_phrase(damaged.iter().copied())));
    }
    if !missing.is_empty() {
        problems.push(format!("missing {}", layers_phrase(missing.iter().copied())));
    }
    if !blocked.is_empty() {
        problems.push(format!("{} not re-derived", layers_phrase(blocked.iter().copied())));
    }
    let not_present = match stopped_at {
        Some(k) => format!(" (layer {k} is not present)"),
        None => String::new(),
    };
    let summary = if ok {
        format!(
            "OK: {} of {rules}{not_present}: {} positions re-derived, every value follows from its children; no fact contradicted",
            layers_phrase(first..=last),
            group_digits(checked)
        )
    } else {
        format!("FAILED: {}", problems.join("; "))
    };

    if a.json {
        let doc = json!({
            "rules": rules.name(),
            "dir": where_.display().to_string(),
            "format": if format == Format::Native { "native" } else { "vu" },
            "layers_requested": [first, last],
            "first_missing_layer": stopped_at,
            "layers": outcomes.iter().map(|(n, o)| layer_json(*n, first, o)).collect::<Vec<_>>(),
            "facts": facts,
            "positions_checked": checked,
            "mismatches": mismatches,
            "seconds": seconds,
            "positions_per_second": checked as f64 / derive_seconds.max(1e-9),
            "ok": ok,
            "summary": summary,
        });
        println!("{doc}");
    } else {
        println!("facts of FACTS.md:");
        for f in &facts {
            println!("  {:<13} {}: {}", f.status.label(), f.id, f.statement);
            println!("  {:<13}   {}", "", f.detail);
        }
        println!(
            "total: {} positions re-derived in {:.2} s ({:.2} M positions/s); {:.2} s in all",
            group_digits(checked),
            derive_seconds,
            checked as f64 / derive_seconds.max(1e-9) / 1e6,
            seconds
        );
        println!("{summary}");
    }

    // Exit status: wrong values first, then damaged files, then missing layers.
    if mismatches > 0 || !failed_facts.is_empty() {
        return Err(Error::VerifyFailed(summary));
    }
    if let Some((_, Outcome::Damaged(e))) = outcomes.into_iter().find(|(_, o)| matches!(o, Outcome::Damaged(_))) {
        if damaged.len() > 1 || !blocked.is_empty() {
            eprintln!("oware: {summary}");
        }
        return Err(e);
    }
    if !missing.is_empty() {
        let n = missing[0];
        return Err(Error::LayerMissing { layer: n, dir: where_, rules: rules.name().into() });
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
fn print_layer(n: u32, first: u32, format: Format, o: &Outcome, before: &[(u32, Outcome)]) {
    let file_state = if format == Format::Native { "header ok, checksum ok" } else { "size ok (no header or checksum)" };
    match o {
        Outcome::Intact { report: None } => {
            println!("layer {n:>2}: {file_state}; read by layers {first}.. (not re-derived: below --layers)");
        }
        Outcome::Intact { report: Some(r) } => {
            println!(
                "layer {n:>2}: {:>15} positions checked, {:>9} mismatch{}, {:>8.2} s, {:>7.2} M positions/s; {file_state}",
                group_digits(r.checked),
                group_digits(r.mismatches),
                if r.mismatches == 1 { "  " } else { "es" },
                r.seconds,
                r.positions_per_second() / 1e6
            );
            if !r.is_ok() {
                let shown = r.first_mismatches.len() as u64;
                println!(
                    "  {} position{} of layer {n} do{} not follow from {} children{}:",
                    group_digits(r.mismatches),
                    plural(r.mismatches),
                    if r.mismatches == 1 { "es" } else { "" },
                    if r.mismatches == 1 { "its" } else { "their" },
                    if shown < r.mismatches { format!(" (first {shown} shown)") } else { String::new() }
                );
                for m in &r.first_mismatches {
                    println!("{}", mismatch_line(n, m));
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
            println!(
                "layer {n:>2}: {file_state}, but NOT re-derived: its captures lead to {}",
                why.join(", ")
            );
        }
        Outcome::Damaged(e) => println!("layer {n:>2}: DAMAGED: {e}"),
        Outcome::Missing(_) => println!("layer {n:>2}: MISSING: not built"),
    }
}

fn layer_json(n: u32, first: u32, o: &Outcome) -> Value {
    match o {
        Outcome::Intact { report: None } => json!({"layer": n, "status": "dependency", "file": "ok",
            "note": format!("read by layers {first}.. but not re-derived")}),
        Outcome::Intact { report: Some(r) } => json!({
            "layer": n,
            "status": if r.is_ok() { "ok" } else { "mismatch" },
            "file": "ok",
            "checked": r.checked,
            "mismatches": r.mismatches,
            "seconds": r.seconds,
            "positions_per_second": r.positions_per_second(),
            "first_mismatches": r.first_mismatches,
        }),
        Outcome::Blocked { needs } => json!({"layer": n, "status": "not-verified", "file": "ok", "needs": needs}),
        Outcome::Damaged(e) => json!({"layer": n, "status": "damaged", "error": e.to_string(), "exit_code": e.exit_code()}),
        Outcome::Missing(e) => json!({"layer": n, "status": "missing", "error": e.to_string()}),
    }
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
