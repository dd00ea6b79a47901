//! `oware build`: plan, then build layers 0..N with progress bars and a line of statistics per
//! layer.
//!
//! The plan (every layer's action, memory, disk and a rough time) goes to stderr, or to stdout
//! as one JSON object with `--json`; `--dry-run` stops after it. A closed or failing stdout does
//! not stop the build: it goes on without writing there (the statistics are in `layer-NN.json`
//! files) and exits 7 at the end for an output error other than a closed pipe. Ctrl-C stops it
//! cleanly: the layer in progress is discarded, the finished ones stay, exit 130.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use clap::Args;
use indicatif::{MultiProgress, ProgressBar};
use oware::builder::{
    self, BoundsStats, BuildConfig, BuildObserver, BuildPlan, CompanionPlan, CompanionStats, DtcStats, EntryStats, LayerAction, LayerOutcome, LayerStats, Mode,
};
use oware::error::FileContent;
use oware::index::MAX_STONES;
use oware::progress::Progress;
use oware::units::{group_digits, human_bytes};
use oware::{Error, Result};
use serde::Serialize;

use crate::args::{parse_size, reword, thread_pool, DirArg, JsonArg, QuietArg, RulesArg, ThreadsArg};
use crate::output::{human_duration, is_closed_pipe, note, Stdout, SCHEMA_VERSION};
use crate::{progress, signals};

/// Arguments of `oware build`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("quiet", "No progress bars and no messages besides errors (bars are never drawn when stderr is not a terminal)"), ("json", "JSON on stdout: the plan, then one object per layer, then a summary (one per line)")])))]
pub(crate) struct BuildArgs {
    #[command(flatten)]
    rules: RulesArg,
    /// Build layers 0..=N (N stones on the board at most, 0..=48).
    #[arg(long, value_name = "N", default_value_t = 18, value_parser = clap::value_parser!(u32).range(0..=MAX_STONES as i64))]
    max_stones: u32,
    /// Build only the layers TARGET needs: TARGET is a position, in `oware query`'s syntax as
    /// one argument (e.g. "4 4 4 4 4 4 4 4 4 4 4 4"), or its stone count N (0..=48). A position
    /// of N stones needs layers 0..=N-2 and N: a capture takes at least 2 stones, so layer N-1
    /// is never reached and is left out (shown as skipped by --dry-run; a later build without
    /// --for fills it in).
    #[arg(long = "for", value_name = "TARGET", value_parser = parse_target, conflicts_with = "max_stones", allow_negative_numbers = true)]
    target: Option<u32>,
    #[command(flatten)]
    dir: DirArg,
    #[command(flatten)]
    threads: ThreadsArg,
    /// Memory the build may use, e.g. `3G`, `512M`, `22GiB` (K, M, G, T, KiB..TiB: powers of
    /// 1024; KB, MB, GB, TB: of 1000; default: what the system reports available).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_negative_numbers = true)]
    max_memory: Option<u64>,
    /// Directory for scratch files and checkpoints (default: `.work` in the ruleset's
    /// directory); each layer's files are removed when it is done.
    #[arg(long, value_name = "DIR")]
    work_dir: Option<std::path::PathBuf>,
    /// Least seconds between two checkpoints inside a layer (default: 180, and at least ten
    /// times what the last save took); a killed build resumes from the last one. Layers
    /// expected to take less are not checkpointed. 0: at every phase boundary.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(0..=86_400 * 365))]
    checkpoint_every: Option<u64>,
    /// Also build every layer's forced-capture bounds (`bounds-NN.owdb`): what each side can
    /// force itself to capture, the answer under abapa's own-side repetition rule. Built in
    /// memory, after each layer's values; existing bounds are checked and kept.
    #[arg(long)]
    bounds: bool,
    /// Also build every layer's depths to capture (`dtc-NN.owdb`): how many plies best play
    /// takes to the value's first capture, so that probes and play make progress. Computed
    /// after each layer's values, from them (also for layers already built); existing depths
    /// are checked and kept.
    #[arg(long)]
    dtc: bool,
    /// Print the plan and stop.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    quiet: QuietArg,
    #[command(flatten)]
    json: JsonArg,
}

/// Parses `--for`'s TARGET: a stone count (one whole number, 0..=48), or a position in any form
/// [`oware::Position`] parses; its stone count. One number, signed or not, is a stone count,
/// never a position (a position has 12 counts).
///
/// # Errors
/// [`Error::Usage`] for a negative count or one above 48; the position's
/// [`Error::InvalidPosition`] otherwise (the program reports either with its own exit code, 2
/// or 3).
pub(crate) fn parse_target(s: &str) -> Result<u32> {
    let t = s.trim();
    let (negative, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return match digits.parse::<u32>() {
            _ if negative => Err(Error::Usage(format!("--for {t}: a stone count is 0..={MAX_STONES}, not negative"))),
            Ok(n) if n <= MAX_STONES => Ok(n),
            _ => Err(Error::Usage(format!("--for {t}: a layer has 0..={MAX_STONES} stones, not more"))),
        };
    }
    Ok(t.parse::<oware::Position>()?.stones())
}

/// The plan as printed with `--json`.
#[derive(Serialize)]
struct PlanDoc<'a> {
    schema_version: u32,
    kind: &'static str,
    threads: usize,
    #[serde(flatten)]
    plan: &'a BuildPlan,
}

/// One line with `--json` for a layer's values (`kind` `layer`, `stats` a `&LayerStats`) or one
/// of the files beside them (`bounds`, `dtc`; a [`CompanionStatsDoc`]).
#[derive(Serialize)]
struct LayerDoc<'a, S> {
    schema_version: u32,
    kind: &'static str,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    replaced: Option<&'a str>,
    #[serde(flatten)]
    stats: S,
}

/// The statistics of a file beside the values in a [`LayerDoc`]: the bounds' shares come before
/// them.
#[derive(Serialize)]
#[serde(untagged)]
enum CompanionStatsDoc<'a> {
    Bounds {
        forced_share: f64,
        inside_share: f64,
        #[serde(flatten)]
        stats: &'a BoundsStats,
    },
    Dtc(&'a DtcStats),
    Entries(&'a EntryStats),
    /// A kind this program does not know: what every kind's statistics say.
    Plain {
        layer: u32,
        positions: u64,
    },
}

/// The last line with `--json`.
#[derive(Serialize)]
struct SummaryDoc {
    schema_version: u32,
    kind: &'static str,
    layers: usize,
    positions_built: u64,
    /// This run's wall-clock seconds.
    seconds: f64,
    /// `positions_built` over the longer of `seconds` and the built layers' own seconds (which
    /// count a resumed layer's earlier runs).
    positions_per_second: f64,
    peak_memory_bytes: Option<u64>,
}

/// Draws the build's progress and prints a line per finished layer.
struct Display {
    multi: MultiProgress,
    total: ProgressBar,
    layer: Mutex<Option<ProgressBar>>,
    /// The whole build's bar counts estimated milliseconds: each layer's estimate
    /// (`BuildPlan`), and the layer in progress's units scaled to its estimate.
    estimates: Mutex<TotalScale>,
    json: bool,
    quiet: bool,
    threads: usize,
    dry_run: bool,
    out: Mutex<Stdout>,
    /// Set once stdout failed: nothing more is written there.
    stdout_gone: AtomicBool,
    /// The first stdout failure that was not a closed pipe.
    output_error: Mutex<Option<Error>>,
}

impl Display {
    fn new(draw: bool, a: &BuildArgs, threads: usize) -> Display {
        let multi = progress::multi(draw);
        let total = progress::build_total(multi.add(ProgressBar::new(0)));
        total.set_prefix("all");
        Display {
            multi,
            total,
            layer: Mutex::new(None),
            estimates: Mutex::new(TotalScale::default()),
            json: a.json.json,
            quiet: a.quiet.quiet,
            threads,
            dry_run: a.dry_run,
            out: Mutex::new(Stdout::new()),
            stdout_gone: AtomicBool::new(false),
            output_error: Mutex::new(None),
        }
    }

    /// Writes a line to stdout unless it failed before; a failure is remembered, said once on
    /// stderr, and the build goes on.
    fn print(&self, line: &str) {
        if self.stdout_gone.load(Ordering::Relaxed) {
            return;
        }
        let result = self.multi.suspend(|| self.out.lock().map_or(Ok(()), |mut o| o.line(line)));
        if let Err(e) = result {
            self.stdout_gone.store(true, Ordering::Relaxed);
            if !self.dry_run {
                self.message(&format!("{e}; the build goes on (statistics are in the layer-NN.json files)"));
            }
            if !is_closed_pipe(&e) {
                if let Ok(mut slot) = self.output_error.lock() {
                    slot.get_or_insert(e);
                }
            }
        }
    }

    /// A message about the files (a damaged layer replaced, a statistics file restored, a
    /// temporary removed): always said, even with --quiet, as it reports on the user's data.
    fn message(&self, msg: &str) {
        self.multi.suspend(|| note(msg));
    }

    fn json_line<T: Serialize>(&self, value: &T) {
        match serde_json::to_string(value) {
            Ok(s) => self.print(&s),
            Err(e) => self.message(&format!("internal error: JSON output: {e}")),
        }
    }

    /// Shows the bar of the layer (or bounds) in progress, `prefix` before it, in `colour`.
    fn start_bar(&self, prefix: String, units: u64, colour: &str) {
        let bar = progress::build_layer(self.multi.insert_before(&self.total, ProgressBar::new(units)), colour);
        bar.set_prefix(prefix);
        if let Ok(mut slot) = self.layer.lock() {
            *slot = Some(bar);
        }
    }

    /// Shows the bar of a layer's bounds or depths (`what`, e.g. `dtc 12`). The whole build's bar
    /// counts the values' estimates only: it waits while they build.
    fn start_extra_bar(&self, what: &str, units: u64, colour: &str) {
        self.start_bar(format!("{what:>9}"), units, colour);
        if let Ok(mut e) = self.estimates.lock() {
            e.per_unit = 0.0;
        }
    }

    /// Removes the bar of the layer (or bounds) in progress.
    fn end_bar(&self) {
        if let Ok(mut slot) = self.layer.lock() {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
                self.multi.remove(&bar);
            }
        }
    }

    fn clear(&self) {
        self.end_bar();
        self.total.finish_and_clear();
    }
}

impl Progress for Display {
    fn phase(&self, name: &str) {
        if let Ok(slot) = self.layer.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.set_message(name.to_string());
            }
        }
    }
    fn advance(&self, units: u64) {
        if let Ok(slot) = self.layer.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.inc(units);
            }
        }
        if let Ok(mut e) = self.estimates.lock() {
            e.units += units;
            self.total.set_position(e.base + (e.units as f64 * e.per_unit) as u64);
        }
    }
    fn cancelled(&self) -> bool {
        signals::interrupted()
    }
    fn tracing(&self) -> bool {
        tracing()
    }
    fn trace(&self, line: &str) {
        trace(line);
    }
}

impl BuildObserver for Display {
    fn planned(&self, plan: &BuildPlan) {
        let ms: std::collections::BTreeMap<u32, u64> = plan.to_build().map(|l| (l.layer, (l.seconds_estimate * 1000.0).ceil() as u64 + 1)).collect();
        self.total.set_length(ms.values().sum());
        if let Ok(mut e) = self.estimates.lock() {
            e.ms = ms;
        }
        if self.json {
            self.json_line(&PlanDoc { schema_version: SCHEMA_VERSION, kind: "plan", threads: self.threads, plan });
        } else if !self.quiet || self.dry_run {
            let text = if self.dry_run { plan_text(plan, self.threads) } else { plan_summary(plan, self.threads) };
            if self.dry_run {
                self.print(text.trim_end());
            } else {
                self.multi.suspend(|| {
                    for l in text.lines() {
                        note(l);
                    }
                });
            }
        }
    }

    fn layer_started(&self, n: u32, units: u64) {
        self.start_bar(format!("{:>8}", format!("layer {n}")), units, "green");
        if let Ok(mut e) = self.estimates.lock() {
            let ms = e.ms.get(&n).copied().unwrap_or(0);
            e.per_unit = ms as f64 / units.max(1) as f64;
            e.base = self.total.position();
            e.units = 0;
        }
    }

    fn layer_done(&self, stats: &LayerStats, outcome: &LayerOutcome) {
        self.end_bar();
        if let (LayerOutcome::Built { .. }, Ok(mut e)) = (outcome, self.estimates.lock()) {
            // Rounding aside, the bar stands at the sum of the estimates of the layers done.
            let ms = e.ms.get(&stats.layer).copied().unwrap_or(0);
            e.base += ms;
            e.per_unit = 0.0;
            self.total.set_position(e.base);
        }
        if self.json {
            let (status, replaced) = status_of(outcome);
            self.json_line(&LayerDoc { schema_version: SCHEMA_VERSION, kind: "layer", status, replaced, stats });
            return;
        }
        let values: Vec<String> = stats.values.iter().map(|(v, c)| format!("{v}:{c}")).collect();
        let line = match outcome {
            LayerOutcome::Skipped => {
                format!("layer {:>2}: {:>13} positions, complete (skipped); values {}", stats.layer, group_digits(stats.positions), values.join(" "))
            }
            LayerOutcome::Built { seconds, .. } => format!(
                "layer {:>2}: {:>13} positions, {:>8.2} s{}, {:>6.2} M positions/s, peak memory {}; values {}",
                stats.layer,
                group_digits(stats.positions),
                seconds,
                stats.runs.map_or(String::new(), |r| format!(" over {r} runs")),
                stats.positions as f64 / seconds.max(1e-9) / 1e6,
                stats.peak_memory_bytes.map_or("?".into(), human_bytes),
                values.join(" ")
            ),
        };
        self.print(&line);
    }

    fn message(&self, msg: &str) {
        Display::message(self, msg);
    }

    fn companion_started(&self, kind: FileContent, n: u32, units: u64) {
        let colour = match kind {
            FileContent::Dtc => "magenta",
            _ => "yellow",
        };
        self.start_extra_bar(&format!("{kind} {n}"), units, colour);
    }

    fn companion_done(&self, stats: CompanionStats<'_>, outcome: &LayerOutcome) {
        self.end_bar();
        if self.json {
            let (status, replaced) = status_of(outcome);
            let doc = match stats {
                CompanionStats::Bounds(s) => CompanionStatsDoc::Bounds { forced_share: s.forced_share(), inside_share: s.inside_share(), stats: s },
                CompanionStats::Dtc(s) => CompanionStatsDoc::Dtc(s),
                CompanionStats::Entries(_, s) => CompanionStatsDoc::Entries(s),
                other => CompanionStatsDoc::Plain { layer: other.layer(), positions: other.positions() },
            };
            self.json_line(&LayerDoc { schema_version: SCHEMA_VERSION, kind: stats.kind().name(), status, replaced, stats: doc });
            return;
        }
        self.print(&companion_line(stats, outcome));
    }
}

/// The line of a layer's file beside its values, built or found complete.
fn companion_line(stats: CompanionStats<'_>, outcome: &LayerOutcome) -> String {
    let how = match outcome {
        LayerOutcome::Skipped => "complete (skipped)".to_string(),
        LayerOutcome::Built { seconds, .. } => {
            // The bounds' file size; the depths' peak memory.
            let size = match stats {
                CompanionStats::Bounds(s) => human_bytes(s.file_bytes),
                CompanionStats::Dtc(s) => format!("peak memory {}", s.peak_memory_bytes.map_or("?".into(), human_bytes)),
                CompanionStats::Entries(_, s) => format!("peak memory {}", s.peak_memory_bytes.map_or("?".into(), human_bytes)),
                _ => String::new(),
            };
            format!("{:.2} s, {:.2} M positions/s, {size}", seconds, stats.positions() as f64 / seconds.max(1e-9) / 1e6)
        }
    };
    match stats {
        CompanionStats::Bounds(s) => {
            format!("bounds {:>2}: {how}; split forced {:.2} %, value strictly inside {:.2} %", s.layer, 100.0 * s.forced_share(), 100.0 * s.inside_share())
        }
        CompanionStats::Dtc(s) => {
            let max = s.max.map_or("none".into(), |m| m.to_string());
            let mean = s.mean.map_or("none".into(), |m| format!("{m:.2}"));
            format!("   dtc {:>2}: {how}; max {max}, mean {mean}", s.layer)
        }
        other => format!("{:>6} {:>2}: {how}", other.kind().name(), other.layer()),
    }
}

/// A layer's outcome in a `--json` line: `skipped` or `built`, and what a rebuilt file replaced.
fn status_of(outcome: &LayerOutcome) -> (&'static str, Option<&str>) {
    match outcome {
        LayerOutcome::Skipped => ("skipped", None),
        LayerOutcome::Built { replaced, .. } => ("built", replaced.as_deref()),
    }
}

/// How the whole build's bar turns a layer's work units into estimated milliseconds.
#[derive(Default)]
struct TotalScale {
    /// Estimated milliseconds of each layer to build.
    ms: std::collections::BTreeMap<u32, u64>,
    /// Milliseconds per unit of the layer in progress.
    per_unit: f64,
    /// The bar's position when the layer in progress started.
    base: u64,
    /// Units of the layer in progress counted so far.
    units: u64,
}

/// What a plan does with one kind of file beside the layers (bounds, depths to capture).
struct Summary<'a, P> {
    /// The layers whose file is built, and its plan.
    to_build: Vec<(u32, &'a P)>,
    /// `C to check, B to build (LAYERS)`.
    phrase: String,
    /// The most memory building one of them needs.
    memory: u64,
    /// The disk the files built take.
    disk: u64,
}

/// The [`Summary`] of `plans` (each with its layer), `figures` giving each plan's action,
/// memory and disk; `None` when there is none.
fn summarize<'a, P: 'a>(plans: impl Iterator<Item = (u32, &'a P)>, figures: impl Fn(&P) -> (&LayerAction, u64, u64)) -> Option<Summary<'a, P>> {
    let plans: Vec<(u32, &P)> = plans.collect();
    if plans.is_empty() {
        return None;
    }
    let to_build: Vec<(u32, &P)> = plans.iter().copied().filter(|(_, p)| matches!(figures(p).0, LayerAction::Build { .. })).collect();
    let phrase =
        format!("{} to check, {} to build ({})", plans.len() - to_build.len(), to_build.len(), oware::units::describe_layers(to_build.iter().map(|(n, _)| *n)));
    let memory = to_build.iter().map(|(_, p)| figures(p).1).max().unwrap_or(0);
    let disk = to_build.iter().map(|(_, p)| figures(p).2).sum();
    Some(Summary { to_build, phrase, memory, disk })
}

/// The plan for people: one line per layer to build, and totals.
fn plan_text(plan: &BuildPlan, threads: usize) -> String {
    let build: Vec<_> = plan.to_build().collect();
    let skipped: Vec<_> = plan.skipped().collect();
    let checked = plan.layers.len() - build.len() - skipped.len();
    let mut s = format!(
        "plan: {} layers 0..={} in {}: {checked} to check, {} to build{} with {threads} threads\n",
        plan.rules,
        plan.layers.len().saturating_sub(1),
        plan.dir.display(),
        build.len(),
        if skipped.is_empty() { String::new() } else { format!(", {} skipped (not needed)", skipped.len()) }
    );
    for l in plan.layers.iter().filter(|l| !matches!(l.action, LayerAction::Check)) {
        let why = match &l.action {
            LayerAction::Build { reason: Some(r) } => format!(" (replaces a damaged file: {r})"),
            LayerAction::Skip { reason } => {
                s.push_str(&format!("  layer {:>2}: {:>15} positions, skipped, {reason}\n", l.layer, group_digits(l.positions)));
                continue;
            }
            _ => String::new(),
        };
        let mode = match &l.mode {
            Some(Mode::Streamed { .. }) => "in memory, lower layers streamed".to_string(),
            Some(Mode::InMemory { .. }) | None => "in memory".to_string(),
            Some(Mode::OutOfCore { limits }) if limits.parts == 1 => "out of core in 1 part".to_string(),
            Some(Mode::OutOfCore { limits }) => format!("out of core in {} parts", limits.parts),
        };
        let scratch = if l.scratch_bytes > 0 { format!(" + {} scratch", human_bytes(l.scratch_bytes)) } else { String::new() };
        s.push_str(&format!(
            "  layer {:>2}: {:>15} positions, {mode}, memory {}, disk {}{scratch}, about {}{why}\n",
            l.layer,
            group_digits(l.positions),
            human_bytes(l.memory_bytes),
            human_bytes(l.disk_bytes),
            human_duration(l.seconds_estimate)
        ));
    }
    for &kind in FileContent::COMPANIONS {
        let plans = plan.layers.iter().filter_map(|l| l.companion(kind).map(|c| (l.layer, c)));
        let Some(sum) = summarize(plans, |c| (&c.action, c.memory_bytes, c.disk_bytes)) else { continue };
        let layers_where = |keep: fn(&CompanionPlan) -> bool, words: &str| {
            let layers: Vec<u32> = sum.to_build.iter().filter(|(_, c)| keep(c)).map(|(n, _)| *n).collect();
            if layers.is_empty() {
                String::new()
            } else {
                format!(", {words} for {}", oware::units::describe_layers(layers))
            }
        };
        let scratch = layers_where(|c| c.scratch, "working cells in a scratch file");
        let fused = layers_where(|c| c.fused, "recorded by the values' propagation");
        let seconds: f64 = sum.to_build.iter().map(|(_, c)| c.seconds_estimate).sum();
        let about = if seconds > 0.0 { format!(", about {}", human_duration(seconds)) } else { String::new() };
        s.push_str(&format!(
            "  {}: {}{fused}, memory up to {}{scratch}, disk {}{about}\n",
            kind.name(),
            sum.phrase,
            human_bytes(sum.memory),
            human_bytes(sum.disk)
        ));
    }
    let limit = match (plan.memory_limit_bytes, plan.memory_limit_given) {
        (Some(m), true) => format!("{} (--max-memory)", human_bytes(m)),
        (Some(m), false) => format!("{} (available)", human_bytes(m)),
        (None, _) => "unknown".into(),
    };
    s.push_str(&format!(
        "  total: disk {} of {} free, memory limit {limit}, about {}\n",
        human_bytes(plan.disk_needed_bytes),
        plan.disk_free_bytes.map_or("?".into(), human_bytes),
        human_duration(plan.seconds_estimate)
    ));
    s
}

/// The plan in one line (the full table is `--dry-run`'s).
fn plan_summary(plan: &BuildPlan, threads: usize) -> String {
    let build: Vec<u32> = plan.to_build().map(|l| l.layer).collect();
    let skipped: Vec<u32> = plan.skipped().map(|l| l.layer).collect();
    let skipped = if skipped.is_empty() { String::new() } else { format!("; {} skipped (not needed)", oware::units::layers_phrase(skipped)) };
    if build.is_empty() {
        return format!(
            "plan: {} layers 0..={} in {}: every layer is built; checking them{skipped}",
            plan.rules,
            plan.layers.len().saturating_sub(1),
            plan.dir.display()
        );
    }
    let peak = plan.to_build().map(|l| l.memory_bytes).max().unwrap_or(0);
    format!(
        "plan: {} {} to build in {} with {}{threads} threads: memory up to {}{}, disk {}, about {} \
         (--dry-run shows every layer){skipped}",
        plan.rules,
        oware::units::layers_phrase(build),
        plan.dir.display(),
        if plan.ranks > 1 { format!("{} ranks of ", plan.ranks) } else { String::new() },
        human_bytes(peak),
        if plan.ranks > 1 { " per rank" } else { "" },
        human_bytes(plan.disk_needed_bytes),
        human_duration(plan.seconds_estimate)
    )
}

/// Runs `oware build`.
///
/// # Errors
/// Those of [`builder::plan`] before any work (nothing written); those of [`builder::build`];
/// [`Error::Output`] at the end when stdout could not be written (the build itself completed);
/// [`Error::Interrupted`] after Ctrl-C.
pub(crate) fn run(a: BuildArgs) -> Result<()> {
    signals::cooperative();
    let config = BuildConfig {
        rules: a.rules.ruleset(),
        max_stones: a.max_stones,
        dir: a.dir.dir.clone(),
        max_memory: a.max_memory,
        work_dir: a.work_dir.clone(),
        checkpoint_every: a.checkpoint_every.map(std::time::Duration::from_secs),
        companions: FileContent::selected([(a.bounds, FileContent::Bounds), (a.dtc, FileContent::Dtc)]),
        // Depths by their own pass even where the values' propagation records them (for
        // comparisons: `scripts/bench-dtc`).
        dtc_pass: std::env::var_os("OWARE_DTC_PASS").is_some(),
        // The level census of `scripts/bench-levels` (the same bytes).
        levels: std::env::var_os("OWARE_LEVELS").is_some(),
        // For tests of the plan's disk checks: the free space taken as at most these bytes.
        disk_free_cap: std::env::var("OWARE_SIMULATE_DISK_FREE").ok().and_then(|v| v.parse().ok()),
        program_id: program_id(),
        skip: Vec::new(),
    };
    let config = match a.target {
        Some(stones) => config.for_stones(stones),
        None => config,
    };
    #[cfg(feature = "mpi")]
    let _mpi = if launched_by_mpirun() {
        let cluster = oware::mpi_cluster::MpiCluster::init()?;
        if cluster.size() > 1 {
            return run_ranks(&a, &config, cluster);
        }
        // One rank: the ordinary build (MPI is finalised when this returns).
        Some(cluster)
    } else {
        None
    };
    let pool = thread_pool(a.threads.threads)?;
    let threads = pool.current_num_threads();
    let display = Display::new(progress::show(a.quiet.quiet) && !a.dry_run, &a, threads);
    if a.dry_run {
        // The plan is shown even when it cannot be carried out, then the refusal is reported.
        let plan = builder::propose(&config, threads)?;
        display.planned(&plan);
        builder::check_plan(&plan)?;
        return take_output_error(&display);
    }
    let start = std::time::Instant::now();
    let result = pool.install(|| builder::build(&config, &display));
    display.clear();
    let report = result?;
    summary(a.json.json, a.quiet.quiet, &display, &report.layers, start.elapsed().as_secs_f64(), report.peak_memory_bytes, "", "peak memory");
    take_output_error(&display)
}

/// The build's summary: a JSON document, or a line on stderr unless `quiet`. `on` and
/// `peak_what` word the line (a distributed build's ranks and traffic).
#[allow(clippy::too_many_arguments)]
fn summary(json: bool, quiet: bool, display: &Display, stats: &[LayerStats], secs: f64, peak: Option<u64>, on: &str, peak_what: &str) {
    let (built, speed) = built_and_speed(stats, secs);
    if json {
        display.json_line(&SummaryDoc {
            schema_version: SCHEMA_VERSION,
            kind: "summary",
            layers: stats.len(),
            positions_built: built,
            seconds: secs,
            positions_per_second: speed,
            peak_memory_bytes: peak,
        });
    } else if !quiet && built == 0 {
        note(&format!("done in {secs:.1} s{on} (every layer's values were complete), {peak_what} {}", peak.map_or("?".into(), human_bytes)));
    } else if !quiet {
        note(&format!(
            "done in {secs:.1} s{on} ({} positions built, {:.2} M positions/s), {peak_what} {}",
            group_digits(built),
            speed / 1e6,
            peak.map_or("?".into(), human_bytes)
        ));
    }
}

/// The positions this run built (the layers with `seconds`) and their speed in positions per
/// second. A layer resumed from its checkpoint was partly built by earlier runs, which its
/// `seconds` count: the speed is over the longer of this run's `secs` and the layers' summed
/// seconds, so that a layer finished in minutes after hours of earlier runs does not inflate it.
fn built_and_speed(stats: &[LayerStats], secs: f64) -> (u64, f64) {
    let built: u64 = stats.iter().filter(|s| s.seconds.is_some()).map(|s| s.positions).sum();
    let layer_secs: f64 = stats.iter().filter_map(|s| s.seconds).sum();
    (built, built as f64 / secs.max(layer_secs).max(1e-9))
}

/// The observer of a rank other than 0 of a distributed build: no bars, its messages
/// prefixed with its rank, Ctrl-C honoured.
#[cfg(feature = "mpi")]
struct RankObserver(usize);

#[cfg(feature = "mpi")]
impl Progress for RankObserver {
    fn cancelled(&self) -> bool {
        signals::interrupted()
    }
    fn tracing(&self) -> bool {
        tracing()
    }
    fn trace(&self, line: &str) {
        trace(&format!("rank {}: {line}", self.0));
    }
}

/// Whether the build prints its phases' figures for benchmarks (`OWARE_TRACE=1`, or the older
/// `OWARE_DTC_TRACE=1`): each layer's passes and seconds, the levels of a level-synchronous
/// propagation, the depths' passes (and `pack`'s phases). The program's switch; the library
/// reads no environment.
pub(crate) fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("OWARE_TRACE").is_some() || std::env::var_os("OWARE_DTC_TRACE").is_some())
}

/// One line of those figures, to stderr as it is (`scripts/bench-levels` and `bench-cost` read
/// them).
pub(crate) fn trace(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Environment variables a launcher sets in the processes it starts (OpenMPI's `mpirun`, MPICH's
/// Hydra, PMIx-based launchers such as Slurm's `srun --mpi=pmix`).
#[cfg(feature = "mpi")]
const LAUNCHER_VARIABLES: [&str; 4] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"];

/// Whether this process was started by an MPI launcher.
#[cfg(feature = "mpi")]
fn launched_by_mpirun() -> bool {
    LAUNCHER_VARIABLES.iter().any(|v| std::env::var_os(v).is_some())
}

/// A hash of this program's executable, which every rank of a distributed build must share
/// (`BuildConfig::program_id`); 0 outside `mpirun` (nothing to compare) or when it cannot be
/// read.
fn program_id() -> u64 {
    #[cfg(feature = "mpi")]
    if launched_by_mpirun() {
        return std::env::current_exe().ok().and_then(|p| std::fs::read(p).ok()).map_or(0, |b| xxhash_rust::xxh3::xxh3_64(&b));
    }
    0
}

#[cfg(feature = "mpi")]
impl BuildObserver for RankObserver {
    fn message(&self, msg: &str) {
        note(&format!("rank {}: {msg}", self.0));
    }
}

/// `oware build` as one rank of a distributed build (`mpirun -np K`, K > 1): rank 0 shows the
/// plan, the bars and the layers; every rank builds its share. An error that the ranks did not
/// agree on ends the whole job (`MPI_Abort`) after it is reported, so no rank waits forever.
#[cfg(feature = "mpi")]
fn run_ranks(a: &BuildArgs, config: &BuildConfig, cluster: oware::mpi_cluster::MpiCluster) -> Result<()> {
    let (rank, ranks) = (cluster.rank(), cluster.size());
    // MPI is called from this thread only (it initialised MPI): the solver runs here, on the
    // global pool. By default the ranks of one node share its cores.
    let local = ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"].iter().find_map(|v| std::env::var(v).ok()?.parse::<usize>().ok()).unwrap_or(1).max(1);
    let threads = a.threads.threads.unwrap_or_else(|| (crate::args::cores() / local).max(1));
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().map_err(|e| Error::Threads { threads, reason: e.to_string() })?;
    let display = Display::new(rank == 0 && progress::show(a.quiet.quiet) && !a.dry_run, a, threads);
    let others = RankObserver(rank);
    let observer: &dyn BuildObserver = if rank == 0 { &display } else { &others };
    if a.dry_run {
        let plan = builder::propose_ranks(config, threads, ranks)?;
        if rank == 0 {
            display.planned(&plan);
        }
        builder::check_plan(&plan)?;
        return take_output_error(&display);
    }
    if a.bounds {
        // The library refuses too (a usage error); refused here, the message can name the options.
        note(&format!(
            "rank {rank} of {ranks}: error: --bounds is built by one process: build the values with mpirun, then run `oware build --bounds` without it; ending the job"
        ));
        cluster.abort(crate::errors::exit_code(oware::error::ErrorKind::Usage));
    }
    let start = std::time::Instant::now();
    let result = cluster.build(config, observer);
    display.clear();
    let report = match result {
        Ok(r) => r,
        // Every rank stopped at the same point: a clean end.
        Err(e @ Error::Interrupted) => return Err(e),
        Err(Error::Cluster(oware::error::ClusterError::PeerStopped)) => {
            drop(cluster);
            std::process::exit(crate::errors::exit_code(oware::error::ErrorKind::Interrupted));
        }
        Err(e) => {
            note(&format!("rank {rank} of {ranks}: error: {e}; ending the job"));
            if let Some(h) = crate::errors::hint(&e) {
                note(&format!("rank {rank} of {ranks}: hint: {h}"));
            }
            cluster.abort(crate::errors::exit_code(e.kind()));
        }
    };
    if rank == 0 {
        let figures: Vec<&builder::RankFigures> = report.layers.iter().filter_map(|s| s.ranks.as_ref()).flatten().collect();
        let sent: u64 = figures.iter().map(|f| f.bytes_sent).sum();
        let peak = figures.iter().map(|f| f.peak_memory_bytes).max().or(report.peak_memory_bytes);
        let secs = start.elapsed().as_secs_f64();
        summary(
            a.json.json,
            a.quiet.quiet,
            &display,
            &report.layers,
            secs,
            peak,
            &format!(" on {ranks} ranks"),
            &format!("{} exchanged, peak memory of a rank", human_bytes(sent)),
        );
    }
    take_output_error(&display)
}

fn take_output_error(display: &Display) -> Result<()> {
    match display.output_error.lock().ok().and_then(|mut e| e.take()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(positions: u64, seconds: Option<f64>, runs: Option<u32>) -> LayerStats {
        let doc = serde_json::json!({
            "rules": "awari", "layer": 30, "positions": positions, "seconds": seconds,
            "positions_per_second": null, "runs": runs, "threads": 2, "values": {},
        });
        serde_json::from_value(doc).unwrap()
    }

    /// Old: a layer resumed for its last 311 s after an hour of earlier runs made the summary
    /// say 27 M positions/s. New: the speed is over its whole time.
    #[test]
    fn a_resumed_layer_does_not_inflate_the_speed() {
        let stats = [layer(1_000, None, None), layer(8_000_000_000, Some(3_700.0), Some(2))];
        let (built, speed) = built_and_speed(&stats, 311.0);
        assert_eq!(built, 8_000_000_000);
        assert!((speed - 8e9 / 3_700.0).abs() < 1.0, "{speed}");
    }

    /// Without a resumed layer, the speed is over this run's time (which includes the checks of
    /// the layers skipped).
    #[test]
    fn a_fresh_build_is_timed_by_the_run() {
        let stats = [layer(500, None, None), layer(1_000, Some(4.0), None), layer(3_000, Some(5.0), None)];
        let (built, speed) = built_and_speed(&stats, 10.0);
        assert_eq!(built, 4_000);
        assert!((speed - 400.0).abs() < 1e-9, "{speed}");
        assert_eq!(built_and_speed(&[], 0.0), (0, 0.0));
    }
}
