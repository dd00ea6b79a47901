//! The builder: layers 0..N, each solved from the finished smaller ones and written safely.
//!
//! Layers are units of work with explicit dependencies (layer `n` needs every layer below it, as
//! a capture always leads to a smaller layer). A build resumes from the finished layers: each
//! existing layer file is checked (header and payload checksum) before it is trusted, and
//! anything missing or damaged is rebuilt. A layer is written to a temporary file, spot-checked
//! against its children with the verifier's independent re-derivation, then renamed into place,
//! so killing the build loses at most the layer in progress.

pub mod retro;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::index::{layer_size, unrank_unchecked, MAX_STONES};
use crate::rules::Ruleset;
use crate::storage::{stats_path, write_atomic, Layer, LayerWriter};
use crate::units::human_bytes;
use crate::verify::derive_value;

pub use retro::{solve_layer, work_units, NoProgress, Progress};

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildConfig {
    /// Ruleset of the databases.
    pub rules: Ruleset,
    /// Build layers `0..=max_stones`.
    pub max_stones: u32,
    /// Database directory (the ruleset's files go in a subdirectory named after it).
    pub dir: PathBuf,
    /// Memory the build may use, in bytes; `None` for the memory the system reports available.
    pub max_memory: Option<u64>,
}

/// How a layer came to be complete.
#[derive(Clone, Debug, PartialEq)]
pub enum LayerOutcome {
    /// Already built and intact: skipped.
    Skipped,
    /// Built now (`replaced` says why an existing file was not trusted, if there was one).
    Built {
        /// Wall-clock seconds the layer took.
        seconds: f64,
        /// Why an existing file was not trusted, if there was one.
        replaced: Option<String>,
    },
}

/// Statistics of one layer, also stored as `layer-NN.json` beside it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LayerStats {
    /// Ruleset name.
    pub rules: String,
    /// Layer number (stones on the board).
    pub layer: u32,
    /// Positions in the layer.
    pub positions: u64,
    /// Wall-clock seconds the build took (absent for layers not built by this run).
    pub seconds: Option<f64>,
    /// Positions per second of the build.
    pub positions_per_second: Option<f64>,
    /// Threads used.
    pub threads: Option<usize>,
    /// Peak resident memory of the building process so far, in bytes (Linux `VmHWM`), which
    /// includes the mapped pages of the layers it read and wrote.
    #[serde(default)]
    pub peak_memory_bytes: Option<u64>,
    /// Number of positions of each value, keyed by value (`-n..=n`, zero counts omitted).
    pub values: BTreeMap<i32, u64>,
}

impl LayerStats {
    /// Counts the values of a layer's payload (in parallel).
    pub fn count(rules: Ruleset, n: u32, values: &[i8]) -> LayerStats {
        let hist = histogram(values);
        let values = hist
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (i as i32 - 128, c))
            .collect();
        LayerStats {
            rules: rules.name().into(),
            layer: n,
            positions: layer_size(n),
            seconds: None,
            positions_per_second: None,
            threads: None,
            peak_memory_bytes: None,
            values,
        }
    }
}

/// Number of positions of each byte value (index `v + 128`).
pub fn histogram(values: &[i8]) -> Vec<u64> {
    values
        .par_chunks(1 << 20)
        .map(|c| {
            let mut h = vec![0u64; 256];
            for &v in c {
                h[(v as i32 + 128) as usize] += 1;
            }
            h
        })
        .reduce(|| vec![0u64; 256], |mut a, b| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            a
        })
}

/// Receives what a build does, for display.
pub trait BuildObserver: Progress {
    /// Layer `n` is about to be solved; it is worth `units` work units ([`work_units`]).
    fn layer_started(&self, _n: u32, _units: u64) {}
    /// Layer `n` is complete (built or skipped).
    fn layer_done(&self, _stats: &LayerStats, _outcome: &LayerOutcome) {}
    /// Something the user should know (a damaged file replaced, ...).
    fn message(&self, _msg: &str) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl Progress for Silent {}
impl BuildObserver for Silent {}

/// Bytes of memory building layer `n` needs: its payload and working state, plus every smaller
/// layer mapped for reading.
pub fn memory_needed(n: u32) -> u64 {
    let lower: u64 = (0..n).map(layer_size).sum();
    layer_size(n) + retro::working_memory(n) + lower + (64 << 20)
}

/// Memory the system reports available (`MemAvailable` of `/proc/meminfo`), if known.
pub fn memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Peak resident memory of this process so far (`VmHWM` of `/proc/self/status`), if known.
pub fn peak_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Positions spot-checked against their children before a new layer is renamed into place.
const SPOT_CHECKS: u64 = 20_000;

/// Builds (or completes) layers `0..=config.max_stones`, skipping intact layers.
///
/// Runs on the current rayon thread pool. Returns the statistics of every layer.
///
/// # Errors
/// [`Error::Usage`] for more than 48 stones; [`Error::OutOfMemory`] before a layer that would not
/// fit; [`Error::Io`] when files cannot be written (a full disk included);
/// [`Error::VerifyFailed`] when a freshly built layer fails its spot check (the file is then not
/// renamed into place).
pub fn build(config: &BuildConfig, observer: &dyn BuildObserver) -> Result<Vec<LayerStats>> {
    if config.max_stones > MAX_STONES {
        return Err(Error::Usage(format!("--max-stones is at most {MAX_STONES}")));
    }
    let _lock = BuildLock::acquire(&config.dir, config.rules)?;
    let mut lower: Vec<Layer> = Vec::new();
    let mut all = Vec::new();
    for n in 0..=config.max_stones {
        let replaced = match Layer::open_native(&config.dir, config.rules, n, true) {
            Ok(layer) => {
                // Counted from the (just verified) payload: the JSON beside it is informational.
                let stats = LayerStats::count(config.rules, n, layer.values());
                observer.layer_done(&stats, &LayerOutcome::Skipped);
                all.push(stats);
                lower.push(layer);
                continue;
            }
            Err(Error::LayerMissing { .. }) => None,
            Err(e @ (Error::Corrupt { .. } | Error::RulesetMismatch { .. })) => {
                let msg = format!("{e}; rebuilding layer {n}");
                observer.message(&msg);
                Some(e.to_string())
            }
            Err(e) => return Err(e),
        };
        let needed = memory_needed(n);
        let (available, source) = match config.max_memory {
            Some(m) => (Some(m), "--max-memory"),
            None => (memory_available(), "available memory"),
        };
        if let Some(avail) = available {
            if needed > avail {
                return Err(Error::OutOfMemory {
                    layer: n,
                    needed: human_bytes(needed),
                    available: human_bytes(avail),
                    hint: match n {
                        0 => format!(" ({source})"),
                        _ => format!(" ({source}); layers 0..={} are complete", n - 1),
                    },
                });
            }
        }
        let stats = build_layer(config, n, &lower, replaced, observer)?;
        all.push(stats);
        lower.push(Layer::open_native(&config.dir, config.rules, n, false)?);
    }
    Ok(all)
}

fn build_layer(
    config: &BuildConfig,
    n: u32,
    lower: &[Layer],
    replaced: Option<String>,
    observer: &dyn BuildObserver,
) -> Result<LayerStats> {
    let rules = config.rules;
    observer.layer_started(n, work_units(n));
    let start = Instant::now();
    let mut writer = LayerWriter::create(&config.dir, rules, n)?;
    let lower_values: Vec<&[i8]> = lower.iter().map(|l| l.values()).collect();
    solve_layer(rules, n, &lower_values, writer.payload_mut(), observer)?;
    let payload = writer.payload_mut();
    // SAFETY: i8 and u8 have the same layout and every bit pattern is valid for both.
    let values: &[i8] = unsafe { std::slice::from_raw_parts(payload.as_ptr().cast(), payload.len()) };
    spot_check(rules, n, values, &lower_values)?;
    let seconds = start.elapsed().as_secs_f64();
    let mut stats = LayerStats::count(rules, n, values);
    writer.finish()?;
    stats.seconds = Some(seconds);
    stats.positions_per_second = Some(layer_size(n) as f64 / seconds.max(1e-9));
    stats.threads = Some(rayon::current_num_threads());
    stats.peak_memory_bytes = peak_memory();
    let json = serde_json::to_vec_pretty(&stats).map_err(|e| Error::Internal(e.to_string()))?;
    write_atomic(&stats_path(&config.dir, rules, n), &json)?;
    observer.layer_done(&stats, &LayerOutcome::Built { seconds, replaced });
    Ok(stats)
}

/// Re-derives a spread of positions of a new layer from their children before it is published.
fn spot_check(rules: Ruleset, n: u32, values: &[i8], lower: &[&[i8]]) -> Result<()> {
    let size = layer_size(n);
    let step = (size / SPOT_CHECKS).max(1);
    let bad = (0..size.div_ceil(step)).into_par_iter().map(|k| k * step).find_any(|&i| {
        let b = unrank_unchecked(n, i);
        derive_value(rules, n, &b, values, lower) != values[i as usize]
    });
    match bad {
        None => Ok(()),
        Some(i) => Err(Error::VerifyFailed(format!(
            "layer {n} position {i} ({:?}) does not follow from its children; the layer was not written",
            unrank_unchecked(n, i)
        ))),
    }
}

/// An exclusive lock on a ruleset's database directory for the length of a build, so two builds
/// never write the same files (released when dropped, or when the process dies).
struct BuildLock {
    _file: std::fs::File,
}

impl BuildLock {
    fn acquire(dir: &Path, rules: Ruleset) -> Result<BuildLock> {
        let rdir = crate::storage::ruleset_dir(dir, rules);
        std::fs::create_dir_all(&rdir).map_err(|e| Error::io(&rdir, e))?;
        let path = rdir.join(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::io::AsRawFd;
            // SAFETY: a plain system call on a file descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                return Err(Error::io(
                    &path,
                    std::io::Error::new(
                        std::io::ErrorKind::WouldBlock,
                        "another build is working on this directory; wait for it or use another --dir",
                    ),
                ));
            }
        }
        Ok(BuildLock { _file: file })
    }
}

/// Reads the statistics file of a layer, if present and readable.
pub fn read_stats(dir: &Path, rules: Ruleset, n: u32) -> Option<LayerStats> {
    let text = std::fs::read(stats_path(dir, rules, n)).ok()?;
    serde_json::from_slice(&text).ok()
}
