//! The build pipeline: layers 0..N, each solved from the finished smaller ones and written safely.
//!
//! Layers are units of work with explicit dependencies (layer `n` needs every layer below it, as
//! a capture always leads to a smaller layer). Before any work, [`plan`] looks at the whole
//! request (which layers are complete, which must be built, the memory each needs, the disk the
//! new files need, a rough time) and refuses at once what cannot be done, naming the first layer
//! that does not fit; a file of another ruleset or layer in the way is never replaced.
//!
//! A build resumes from the finished layers: each existing layer file is checked (header and
//! payload checksum) before it is trusted, and anything missing or damaged is rebuilt. A layer is
//! solved into a preallocated temporary file, spot-checked against its children with the
//! verifier's independent re-derivation, then renamed into place, so killing the build loses at
//! most the layer in progress. The algorithm itself lives in [`crate::solver`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, MemoryLimit, Result};
use crate::index::{layer_size, unrank_unchecked, MAX_STONES};
use crate::progress::Progress;
use crate::rules::Ruleset;
use crate::solver::{solve_layer, work_units, working_memory};
use crate::storage::{disk_free, write_atomic, DatabaseDir, Layer, LayerState, LayerWriter};
use crate::verify::derive_value;

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildConfig {
    /// Ruleset of the databases.
    pub rules: Ruleset,
    /// Build layers `0..=max_stones` (at most 48).
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
    ///
    /// Cost: one sequential pass over `values`.
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
///
/// Cost: one parallel pass over `values`.
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

/// Receives what a build does, for display; its [`Progress::cancelled`] stops the build.
pub trait BuildObserver: Progress {
    /// The plan of the whole build, before any work.
    fn planned(&self, _plan: &BuildPlan) {}
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
/// layer mapped for reading. Saturates instead of overflowing.
pub fn memory_needed(n: u32) -> u64 {
    let n = n.min(MAX_STONES);
    let lower: u64 = (0..n).map(layer_size).fold(0u64, u64::saturating_add);
    layer_size(n).saturating_add(working_memory(n)).saturating_add(lower).saturating_add(64 << 20)
}

/// Bytes of disk layer `n`'s file takes (header and payload; the statistics file is a few
/// hundred bytes more).
pub fn disk_needed(n: u32) -> u64 {
    crate::format::PAYLOAD_OFFSET + layer_size(n.min(MAX_STONES)) + 4096
}

/// Positions per second and thread the in-memory builder sustains on large layers (measured on
/// the project's machine, layers 20..28: 5.6..7.3 M positions/s on 2 threads), for estimates.
pub const POSITIONS_PER_SECOND_PER_THREAD: f64 = 3.0e6;

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

/// What the plan found for one layer.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum LayerAction {
    /// A file with a valid header is there; its payload checksum is checked when the build
    /// reaches it (and the layer rebuilt if it fails).
    Check,
    /// The layer must be built (`reason`: why an existing file is not trusted).
    Build {
        /// Why an existing file will be replaced (`None` when there is none).
        reason: Option<String>,
    },
}

/// The plan of one layer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayerPlan {
    /// Layer number.
    pub layer: u32,
    /// Positions.
    pub positions: u64,
    /// What will be done.
    #[serde(flatten)]
    pub action: LayerAction,
    /// Bytes of memory building it needs ([`memory_needed`]).
    pub memory_bytes: u64,
    /// Bytes of disk its file takes ([`disk_needed`]).
    pub disk_bytes: u64,
    /// Rough seconds to build it (0 when it is only checked).
    pub seconds_estimate: f64,
}

/// The plan of a whole build ([`plan`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BuildPlan {
    /// Ruleset.
    pub rules: String,
    /// The ruleset's layer directory.
    pub dir: PathBuf,
    /// One entry per layer `0..=max_stones`.
    pub layers: Vec<LayerPlan>,
    /// Memory limit in bytes (given, or available), when known.
    pub memory_limit_bytes: Option<u64>,
    /// Whether the limit was given (`--max-memory`) or is what the system has available.
    pub memory_limit_given: bool,
    /// Disk the layers to build need, in bytes.
    pub disk_needed_bytes: u64,
    /// Free disk where they go, in bytes, when known.
    pub disk_free_bytes: Option<u64>,
    /// Rough seconds for the whole build, from [`POSITIONS_PER_SECOND_PER_THREAD`].
    pub seconds_estimate: f64,
}

impl BuildPlan {
    /// The layers to build.
    pub fn to_build(&self) -> impl Iterator<Item = &LayerPlan> {
        self.layers.iter().filter(|l| matches!(l.action, LayerAction::Build { .. }))
    }
}

/// Plans `config` without building anything: classifies every layer `0..=max_stones` from its
/// file (headers only), and checks that every layer to build fits in memory and that the disk
/// holds the new files.
///
/// Parameters: `config`; `threads`, for the time estimate.
///
/// Cost: one `stat` and one header read per layer present; no payload is read.
///
/// # Errors
/// [`Error::Usage`] for more than 48 stones; [`Error::RulesetMismatch`] /
/// [`Error::LayerMismatch`] when a layer's path holds another ruleset's or layer's file (it is
/// never replaced: move it away); [`Error::NotAFile`] / [`Error::Io`] when a layer's path holds
/// something unreadable; [`Error::OutOfMemory`] for the first layer to build that does not fit;
/// [`Error::DiskSpace`] when the new files do not fit on the disk.
pub fn plan(config: &BuildConfig, threads: usize) -> Result<BuildPlan> {
    if config.max_stones > MAX_STONES {
        return Err(Error::Usage(format!("--max-stones is at most {MAX_STONES}, not {}", config.max_stones)));
    }
    let dir = DatabaseDir::native(&config.dir, config.rules)?;
    let (limit, given) = match config.max_memory {
        Some(m) => (Some(m), true),
        None => (memory_available(), false),
    };
    let rate = POSITIONS_PER_SECOND_PER_THREAD * threads.max(1) as f64;
    let mut layers = Vec::new();
    for n in 0..=config.max_stones {
        let action = match dir.state(n) {
            LayerState::Absent => LayerAction::Build { reason: None },
            LayerState::Unreadable(e) => return Err(e),
            LayerState::Present => match dir.open(n, false) {
                Ok(_) => LayerAction::Check,
                Err(e @ (Error::RulesetMismatch { .. } | Error::LayerMismatch { .. })) => return Err(e),
                Err(e @ Error::Corrupt { .. }) => LayerAction::Build { reason: Some(e.to_string()) },
                Err(e) => return Err(e),
            },
        };
        let build = matches!(action, LayerAction::Build { .. });
        layers.push(LayerPlan {
            layer: n,
            positions: layer_size(n),
            action,
            memory_bytes: memory_needed(n),
            disk_bytes: disk_needed(n),
            seconds_estimate: if build { layer_size(n) as f64 / rate } else { 0.0 },
        });
    }
    let disk_needed_bytes = layers.iter().filter(|l| matches!(l.action, LayerAction::Build { .. })).map(|l| l.disk_bytes).sum();
    let plan = BuildPlan {
        rules: config.rules.name().into(),
        dir: dir.layers_dir(),
        memory_limit_bytes: limit,
        memory_limit_given: given,
        disk_needed_bytes,
        disk_free_bytes: disk_free(&dir.layers_dir()),
        seconds_estimate: layers.iter().map(|l| l.seconds_estimate).sum(),
        layers,
    };
    if let Some(limit) = limit {
        if let Some(l) = plan.to_build().find(|l| l.memory_bytes > limit) {
            return Err(Error::OutOfMemory {
                layer: l.layer,
                needed: l.memory_bytes,
                available: limit,
                limit: if given { MemoryLimit::Given } else { MemoryLimit::Available },
            });
        }
    }
    if let Some(free) = plan.disk_free_bytes {
        if plan.disk_needed_bytes > free {
            let ns: Vec<u32> = plan.to_build().map(|l| l.layer).collect();
            return Err(Error::DiskSpace {
                path: plan.dir.clone(),
                what: crate::units::layers_phrase(ns),
                needed: plan.disk_needed_bytes,
                available: free,
            });
        }
    }
    Ok(plan)
}

/// Positions spot-checked against their children before a new layer is renamed into place.
const SPOT_CHECKS: u64 = 20_000;

/// Builds (or completes) layers `0..=config.max_stones`, skipping intact layers, after
/// [`plan`]ning the whole request (the plan is given to [`BuildObserver::planned`]).
///
/// Runs on the current rayon thread pool. Returns the statistics of every layer. A missing or
/// unreadable `layer-NN.json` beside an intact layer is written again.
///
/// # Errors
/// Those of [`plan`], before anything is written; [`Error::Io`] when files cannot be written (a
/// full disk included) or another build holds the directory's lock; [`Error::SpotCheck`] when a
/// freshly built layer fails its spot check (it is then not renamed into place);
/// [`Error::OutOfMemory`] when the system refuses the working memory; [`Error::Interrupted`]
/// when the observer reports cancellation (the layer in progress is discarded, the finished
/// ones stay).
pub fn build(config: &BuildConfig, observer: &dyn BuildObserver) -> Result<Vec<LayerStats>> {
    if config.max_stones > MAX_STONES {
        return Err(Error::Usage(format!("--max-stones is at most {MAX_STONES}, not {}", config.max_stones)));
    }
    let dir = DatabaseDir::native(&config.dir, config.rules)?;
    // Lock, then clean up, then plan: temporaries a killed build left take disk space the plan
    // counts, and no other build can change the files between the plan and the work.
    let _lock = BuildLock::acquire(&dir)?;
    for path in dir.remove_stale_temporaries()? {
        observer.message(&format!("removed {}, left by an interrupted build", path.display()));
    }
    let the_plan = plan(config, rayon::current_num_threads())?;
    observer.planned(&the_plan);
    let mut lower: Vec<Layer> = Vec::new();
    let mut all = Vec::new();
    for lp in &the_plan.layers {
        let n = lp.layer;
        if observer.cancelled() {
            return Err(Error::Interrupted);
        }
        let replaced = match &lp.action {
            LayerAction::Build { reason } => reason.clone(),
            LayerAction::Check => match dir.open(n, true) {
                Ok(layer) => {
                    // Counted from the (just verified) payload: the JSON beside it is informational.
                    let stats = LayerStats::count(config.rules, n, layer.values());
                    match stats_out_of_range(&stats).then(|| layer.first_out_of_range()).flatten() {
                        Some((index, value)) => {
                            let damage = crate::error::Damage::ValueOutOfRange { index, value, stones: n };
                            Some(Error::corrupt(layer.path(), damage).to_string())
                        }
                        None => {
                            restore_stats(&dir, &stats, observer)?;
                            observer.layer_done(&stats, &LayerOutcome::Skipped);
                            all.push(stats);
                            lower.push(layer);
                            continue;
                        }
                    }
                }
                Err(e @ Error::Corrupt { .. }) => {
                    // Planned as a check, found damaged: it must fit like any layer to build.
                    if let Some(limit) = the_plan.memory_limit_bytes.filter(|&m| lp.memory_bytes > m) {
                        let limit_kind = if the_plan.memory_limit_given { MemoryLimit::Given } else { MemoryLimit::Available };
                        observer.message(&format!("{e}; it cannot be rebuilt within the memory limit"));
                        return Err(Error::OutOfMemory { layer: n, needed: lp.memory_bytes, available: limit, limit: limit_kind });
                    }
                    Some(e.to_string())
                }
                Err(e) => return Err(e),
            },
        };
        if let Some(why) = &replaced {
            observer.message(&format!("{why}; rebuilding layer {n}"));
        }
        let stats = build_layer(&dir, n, &lower, replaced, observer)?;
        all.push(stats);
        lower.push(dir.open(n, false)?);
    }
    Ok(all)
}

/// Whether a layer's counts hold a value outside `-n..=n` (a checksum-valid but wrong file,
/// which must not be trusted as a lower layer).
fn stats_out_of_range(s: &LayerStats) -> bool {
    s.values.keys().any(|&v| v.unsigned_abs() > s.layer)
}

/// Writes `layer-NN.json` for an intact layer when it is missing, unreadable or disagrees with
/// the layer's counts.
fn restore_stats(dir: &DatabaseDir, counted: &LayerStats, observer: &dyn BuildObserver) -> Result<()> {
    let n = counted.layer;
    let ok = read_stats(dir.base(), dir.rules(), n).is_some_and(|s| s.values == counted.values && s.positions == counted.positions);
    if !ok {
        let json = serde_json::to_vec_pretty(counted).map_err(|e| Error::Internal(e.to_string()))?;
        let path = dir.stats_path(n);
        write_atomic(&path, &json)?;
        observer.message(&format!("restored {}", path.display()));
    }
    Ok(())
}

fn build_layer(
    dir: &DatabaseDir,
    n: u32,
    lower: &[Layer],
    replaced: Option<String>,
    observer: &dyn BuildObserver,
) -> Result<LayerStats> {
    let rules = dir.rules();
    observer.layer_started(n, work_units(n));
    let start = Instant::now();
    let mut writer = LayerWriter::create(dir, n)?;
    let lower_values: Vec<&[i8]> = lower.iter().map(|l| l.values()).collect();
    solve_layer(rules, n, &lower_values, writer.payload_mut(), observer)?;
    spot_check(rules, n, writer.values(), &lower_values)?;
    let seconds = start.elapsed().as_secs_f64();
    let mut stats = LayerStats::count(rules, n, writer.values());
    writer.finish()?;
    stats.seconds = Some(seconds);
    stats.positions_per_second = Some(layer_size(n) as f64 / seconds.max(1e-9));
    stats.threads = Some(rayon::current_num_threads());
    stats.peak_memory_bytes = peak_memory();
    let json = serde_json::to_vec_pretty(&stats).map_err(|e| Error::Internal(e.to_string()))?;
    write_atomic(&dir.stats_path(n), &json)?;
    observer.layer_done(&stats, &LayerOutcome::Built { seconds, replaced });
    Ok(stats)
}

/// Re-derives a spread of positions of a new layer from their children before it is published.
fn spot_check(rules: Ruleset, n: u32, values: &[i8], lower: &[&[i8]]) -> Result<()> {
    let size = layer_size(n);
    let step = (size / SPOT_CHECKS).max(1);
    let bad = (0..size.div_ceil(step)).into_par_iter().map(|k| k * step).find_map_any(|i| {
        let b = unrank_unchecked(n, i);
        let derived = derive_value(rules, n, &b, values, lower);
        (derived != values[i as usize]).then_some((i, b, derived))
    });
    match bad {
        None => Ok(()),
        Some((index, board, derived)) => {
            Err(Error::SpotCheck { layer: n, index, board, stored: values[index as usize], derived })
        }
    }
}

/// An exclusive lock on a ruleset's database directory for the length of a build, so two builds
/// never write the same files (released when dropped, or when the process dies).
struct BuildLock {
    _file: std::fs::File,
}

impl BuildLock {
    fn acquire(dir: &DatabaseDir) -> Result<BuildLock> {
        dir.create()?;
        let path = dir.layers_dir().join(".lock");
        let mut options = std::fs::OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // Never follow a link planted at the lock's name.
            options.custom_flags(libc::O_NOFOLLOW);
        }
        let file = options.open(&path).map_err(|e| Error::io(&path, e))?;
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

/// Reads the statistics file of a layer, if present, a regular file and readable.
pub fn read_stats(dir: &Path, rules: Ruleset, n: u32) -> Option<LayerStats> {
    let path = crate::storage::stats_path(dir, rules, n);
    if !std::fs::metadata(&path).ok()?.is_file() {
        return None;
    }
    let text = std::fs::read(path).ok()?;
    serde_json::from_slice(&text).ok()
}
