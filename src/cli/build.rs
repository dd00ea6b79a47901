//! `oware build`: build layers 0..N with progress bars and a line of statistics per layer.

use std::sync::Mutex;

use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use oware::index::layer_size;
use oware::solver::{self, work_units, BuildConfig, BuildObserver, LayerOutcome, LayerStats, Progress};
use oware::units::{group_digits, human_bytes};
use oware::Result;

use super::{show_progress, thread_pool, DirArg, RulesArg};

#[derive(Args, Debug)]
pub struct BuildArgs {
    #[command(flatten)]
    rules: RulesArg,
    /// Build layers 0..=N (N stones on the board at most).
    #[arg(long, value_name = "N", default_value_t = 18)]
    max_stones: u32,
    #[command(flatten)]
    dir: DirArg,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "T")]
    threads: Option<usize>,
    /// Memory the build may use, e.g. `3G`, `512M` (default: what the system reports available).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_memory: Option<u64>,
    /// No progress bars (they are never drawn when stderr is not a terminal).
    #[arg(long, short)]
    quiet: bool,
    /// Print each layer's statistics as one JSON object per line.
    #[arg(long)]
    json: bool,
}

/// Parses `123`, `64K`, `512M`, `3G`, `1.5GB` (powers of 1024).
fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim().to_ascii_uppercase();
    let t = t.strip_suffix('B').unwrap_or(&t);
    let (num, mult) = match t.chars().last() {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        Some('T') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("'{s}' is not a size like 512M or 3G"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("'{s}' is not a size like 512M or 3G"));
    }
    Ok((v * mult as f64) as u64)
}

/// Draws the build's progress and prints a line per finished layer.
struct Display {
    multi: MultiProgress,
    total: ProgressBar,
    layer: Mutex<Option<ProgressBar>>,
    json: bool,
}

impl Display {
    fn new(draw: bool, total_units: u64, json: bool) -> Display {
        let multi = MultiProgress::with_draw_target(if draw {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let total = multi.add(ProgressBar::new(total_units));
        total.set_style(
            ProgressStyle::with_template("{prefix:>9} [{bar:40.cyan/blue}] {percent:>3}%  elapsed {elapsed_precise}  ETA {eta_precise}")
                .expect("static template")
                .progress_chars("=> "),
        );
        total.set_prefix("all");
        Display { multi, total, layer: Mutex::new(None), json }
    }

    fn print(&self, line: &str) {
        self.multi.suspend(|| println!("{line}"));
    }
}

impl Progress for Display {
    fn phase(&self, name: &str) {
        if let Some(bar) = self.layer.lock().expect("no panics while locked").as_ref() {
            bar.set_message(name.to_string());
        }
    }
    fn advance(&self, units: u64) {
        if let Some(bar) = self.layer.lock().expect("no panics while locked").as_ref() {
            bar.inc(units);
        }
        self.total.inc(units);
    }
}

impl BuildObserver for Display {
    fn layer_started(&self, n: u32, units: u64) {
        let bar = self.multi.insert_before(&self.total, ProgressBar::new(units));
        bar.set_style(
            ProgressStyle::with_template("{prefix:>9} [{bar:40.green/white}] {percent:>3}%  {msg:<14} ETA {eta_precise}")
                .expect("static template")
                .progress_chars("=> "),
        );
        bar.set_prefix(format!("layer {n}"));
        *self.layer.lock().expect("no panics while locked") = Some(bar);
    }

    fn layer_done(&self, stats: &LayerStats, outcome: &LayerOutcome) {
        if let Some(bar) = self.layer.lock().expect("no panics while locked").take() {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
        if matches!(outcome, LayerOutcome::Skipped) {
            self.total.inc(work_units(stats.layer));
        }
        if self.json {
            let mut v = serde_json::to_value(stats).unwrap_or_default();
            v["status"] = match outcome {
                LayerOutcome::Skipped => "skipped".into(),
                LayerOutcome::Built { .. } => "built".into(),
            };
            self.print(&v.to_string());
            return;
        }
        let values: Vec<String> = stats.values.iter().map(|(v, c)| format!("{v}:{c}")).collect();
        let line = match outcome {
            LayerOutcome::Skipped => {
                format!("layer {:>2}: {:>13} positions, complete (skipped); values {}", stats.layer, group_digits(stats.positions), values.join(" "))
            }
            LayerOutcome::Built { seconds, .. } => format!(
                "layer {:>2}: {:>13} positions, {:>8.2} s, {:>6.2} M positions/s, peak memory {}; values {}",
                stats.layer,
                group_digits(stats.positions),
                seconds,
                stats.positions as f64 / seconds.max(1e-9) / 1e6,
                stats.peak_memory_bytes.map_or("?".into(), human_bytes),
                values.join(" ")
            ),
        };
        self.print(&line);
    }

    fn message(&self, msg: &str) {
        self.multi.suspend(|| eprintln!("oware: {msg}"));
    }
}

pub fn run(a: BuildArgs) -> Result<()> {
    let config = BuildConfig {
        rules: a.rules.rules,
        max_stones: a.max_stones,
        dir: a.dir.dir.clone(),
        max_memory: a.max_memory,
    };
    let pool = thread_pool(a.threads)?;
    let total_units: u64 = (0..=a.max_stones).map(work_units).sum();
    let display = Display::new(show_progress(a.quiet), total_units, a.json);
    let positions: u64 = (0..=a.max_stones).map(layer_size).sum();
    if !a.quiet {
        eprintln!(
            "oware: building {} layers 0..={} ({} positions) in {} with {} threads",
            config.rules,
            a.max_stones,
            group_digits(positions),
            oware::storage::ruleset_dir(&config.dir, config.rules).display(),
            pool.current_num_threads()
        );
    }
    let start = std::time::Instant::now();
    let result = pool.install(|| solver::build(&config, &display));
    display.total.finish_and_clear();
    let stats = result?;
    if !a.quiet {
        let secs = start.elapsed().as_secs_f64();
        let built: u64 = stats.iter().filter(|s| s.seconds.is_some()).map(|s| s.positions).sum();
        eprintln!(
            "oware: done in {secs:.1} s ({} positions built, {:.2} M positions/s), peak memory {}",
            group_digits(built),
            built as f64 / secs.max(1e-9) / 1e6,
            solver::peak_memory().map_or("?".into(), human_bytes)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("3G").unwrap(), 3 << 30);
        assert_eq!(parse_size("1.5GB").unwrap(), 3 << 29);
        assert_eq!(parse_size("100").unwrap(), 100);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1G").is_err());
    }
}
