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
//! most the layer in progress. With [`BuildConfig::bounds`], each layer's forced-capture bounds
//! ([`crate::bounds`]) follow its values the same way: planned, checked or built in memory,
//! checked against the values and spot-checked, written atomically, resumed. The algorithm itself
//! lives in [`crate::solver`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{ClusterError, Error, MemoryLimit, Result};
use crate::index::{layer_size, rank_unchecked, unrank_unchecked, MAX_STONES};
use crate::progress::Progress;
use crate::rules::Ruleset;
use crate::solver::cluster::{Cluster, Metered, Ownership};
use crate::solver::{
    bounds_work_units, bounds_working_memory, share_buffers, solve_bounds, solve_layer_with, solve_share, working_memory, OutOfCore, Share, SolveOptions,
    WorkModel,
};
use crate::spill::Checkpoint;
use crate::storage::{disk_free, scan_released, write_atomic, BoundsLayer, DatabaseDir, Layer, LayerState, LayerWriter};
use crate::verify::{derive_bounds, derive_value};

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
    /// A layer that does not fit is built out of core within it.
    pub max_memory: Option<u64>,
    /// Where scratch files and checkpoints go (`None`: `.work` inside the ruleset's directory).
    pub work_dir: Option<PathBuf>,
    /// Least time between two checkpoints inside a layer (`None`: [`CHECKPOINT_EVERY`]).
    pub checkpoint_every: Option<std::time::Duration>,
    /// Also build every layer's forced-capture bounds ([`crate::bounds`]), beside its values.
    pub bounds: bool,
}

impl Default for BuildConfig {
    /// `awari`, layers 0..=18 in `databases`, the available memory, default work directory and
    /// checkpoint interval.
    fn default() -> BuildConfig {
        BuildConfig {
            rules: Ruleset::Awari,
            max_stones: 18,
            dir: PathBuf::from("databases"),
            max_memory: None,
            work_dir: None,
            checkpoint_every: None,
            bounds: false,
        }
    }
}

/// Default least time between two checkpoints inside a layer: a crash loses at most this much
/// work (plus the phase in progress). Layers expected to take less are not checkpointed.
pub const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(180);

/// Memory an out-of-core layer needs at least (below it, parts would be smaller than a chunk).
pub const MIN_OUT_OF_CORE_MEMORY: u64 = 4 << 20;

/// Resident memory of the process beyond its data structures (code, thread stacks, buffers),
/// which the out-of-core builder keeps apart from `--max-memory`.
pub const FIXED_OVERHEAD: u64 = 64 << 20;

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
    /// How the build solved it (absent for layers not built by this run, and in files of
    /// earlier versions, which built every layer in memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// A distributed build's ranks: what each spent (absent for single-process builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Vec<RankFigures>>,
    /// Number of positions of each value, keyed by value (`-n..=n`, zero counts omitted).
    pub values: BTreeMap<i32, u64>,
}

/// Statistics of one layer's forced-capture bounds, also stored as `bounds-NN.json` beside them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct BoundsStats {
    /// Ruleset name.
    pub rules: String,
    /// Layer number (stones on the board).
    pub layer: u32,
    /// Positions in the layer.
    pub positions: u64,
    /// Bytes of the bounds file.
    pub file_bytes: u64,
    /// Wall-clock seconds the build took (absent for bounds not built by this run).
    pub seconds: Option<f64>,
    /// Peak resident memory of the building process so far, in bytes.
    #[serde(default)]
    pub peak_memory_bytes: Option<u64>,
    /// Positions whose final split is forced (`gM + gN = n`).
    pub forced: u64,
    /// Positions whose even-split value is strictly inside the bounds.
    pub strictly_inside: u64,
}

impl BoundsStats {
    /// The statistics of layer `n`'s bounds of `rules` from their [`crate::bounds::tally`]
    /// (no time or memory figures).
    fn new(rules: Ruleset, n: u32, t: &crate::bounds::Tally) -> BoundsStats {
        BoundsStats {
            rules: rules.name().into(),
            layer: n,
            positions: layer_size(n),
            file_bytes: crate::format::PAYLOAD_OFFSET + crate::bounds::payload_len(n),
            seconds: None,
            peak_memory_bytes: None,
            forced: t.forced,
            strictly_inside: t.strictly_inside,
        }
    }

    /// The share of positions whose split is forced.
    pub fn forced_share(&self) -> f64 {
        self.forced as f64 / self.positions.max(1) as f64
    }

    /// The share of positions whose value is strictly inside the bounds.
    pub fn inside_share(&self) -> f64 {
        self.strictly_inside as f64 / self.positions.max(1) as f64
    }
}

impl LayerStats {
    /// Counts the values of a layer's payload (in parallel).
    ///
    /// Cost: one sequential pass over `values`.
    pub fn count(rules: Ruleset, n: u32, values: &[i8]) -> LayerStats {
        LayerStats::from_histogram(rules, n, &histogram(values))
    }

    /// The statistics of a layer whose values have the [`histogram`] `hist`.
    fn from_histogram(rules: Ruleset, n: u32, hist: &[u64]) -> LayerStats {
        let values = hist.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| (i as i32 - 128, c)).collect();
        LayerStats {
            rules: rules.name().into(),
            layer: n,
            positions: layer_size(n),
            seconds: None,
            positions_per_second: None,
            threads: None,
            peak_memory_bytes: None,
            mode: None,
            ranks: None,
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
        .reduce(
            || vec![0u64; 256],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// Receives what a build does, for display; its [`Progress::cancelled`] stops the build.
pub trait BuildObserver: Progress {
    /// The plan of the whole build, before any work.
    fn planned(&self, _plan: &BuildPlan) {}
    /// Layer `n` is about to be solved; it is worth `units` work units ([`WorkModel::total`]).
    fn layer_started(&self, _n: u32, _units: u64) {}
    /// Layer `n` is complete (built or skipped).
    fn layer_done(&self, _stats: &LayerStats, _outcome: &LayerOutcome) {}
    /// Something the user should know (a damaged file replaced, ...).
    fn message(&self, _msg: &str) {}
    /// Layer `n`'s forced-capture bounds are about to be built; worth `units` work units.
    fn bounds_started(&self, _n: u32, _units: u64) {}
    /// Layer `n`'s forced-capture bounds are complete (built or skipped).
    fn bounds_done(&self, _stats: &BoundsStats, _outcome: &LayerOutcome) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl Progress for Silent {}
impl BuildObserver for Silent {}

/// Bytes of memory building layer `n` in memory needs: its payload and working state, plus every
/// smaller layer mapped for reading (the process's fixed overhead, [`FIXED_OVERHEAD`], aside).
/// Saturates instead of overflowing.
pub fn memory_needed(n: u32) -> u64 {
    let n = n.min(MAX_STONES);
    let lower: u64 = (0..n).map(layer_size).fold(0u64, u64::saturating_add);
    layer_size(n).saturating_add(working_memory(n)).saturating_add(lower)
}

/// Bytes of memory building layer `n`'s forced-capture bounds needs: their payload, four bytes
/// of working state per position, and every smaller layer's bounds mapped for reading.
pub fn bounds_memory_needed(n: u32) -> u64 {
    let n = n.min(MAX_STONES);
    let lower: u64 = (0..n).map(crate::bounds::payload_len).fold(0u64, u64::saturating_add);
    crate::bounds::payload_len(n).saturating_add(bounds_working_memory(n)).saturating_add(lower)
}

/// How a layer is solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The whole state in memory ([`memory_needed`]).
    InMemory,
    /// In parts, within the memory limit ([`OutOfCoreLimits`]).
    OutOfCore,
}

/// The limits of an out-of-core layer, derived from the memory limit `m`: half for one part's
/// state (two bytes per position), a quarter for capture lookups, a quarter for the window of
/// the lower layers, a sixteenth of the half for message buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OutOfCoreLimits {
    /// Positions per part.
    pub part_len: u64,
    /// Parts of the layer.
    pub parts: u64,
    /// Bytes of capture lookups sorted at a time.
    pub lookup_bytes: u64,
    /// Bytes of lower layers resident at a time.
    pub lower_window: u64,
    /// Bytes of messages buffered in memory.
    pub message_bytes: u64,
}

impl OutOfCoreLimits {
    /// The limits of layer `n` within `m` bytes (at least [`MIN_OUT_OF_CORE_MEMORY`]).
    pub fn new(n: u32, m: u64) -> OutOfCoreLimits {
        OutOfCoreLimits::for_positions(layer_size(n.min(MAX_STONES)), m)
    }

    /// The limits of solving `positions` positions (a layer, or a rank's share) within `m`
    /// bytes.
    pub fn for_positions(positions: u64, m: u64) -> OutOfCoreLimits {
        let m = m.max(MIN_OUT_OF_CORE_MEMORY);
        let message_bytes = m / 32;
        let state = m / 2 - message_bytes;
        let chunk = crate::solver::CHUNK;
        let part_len = ((state / 2) / chunk).max(1) * chunk;
        OutOfCoreLimits { part_len, parts: positions.div_ceil(part_len).max(1), lookup_bytes: m / 4, lower_window: m / 4, message_bytes }
    }
}

impl OutOfCoreLimits {
    /// The solver's limits: these, with scratch files in `work_dir` and the page releases of
    /// the lower layers and of the output.
    pub fn solve_within<'a>(
        &self,
        work_dir: &'a Path,
        release_lower: &'a (dyn Fn(u32, std::ops::Range<u64>) + Sync),
        release_out: &'a (dyn Fn(std::ops::Range<u64>) + Sync),
    ) -> OutOfCore<'a> {
        OutOfCore {
            part_len: self.part_len,
            lookup_bytes: self.lookup_bytes,
            lower_window: self.lower_window,
            message_bytes: self.message_bytes,
            work_dir,
            release_lower,
            release_out,
        }
    }
}

/// Disk an out-of-core layer `n` in `parts` parts needs besides its file and a checkpoint: none
/// in one part (the state is resident); else the scratch state (two bytes per position) and the
/// message buckets, estimated at two bytes per position (twice what was measured: awari layer 24
/// in 5 parts peaked at 1.0 byte per position of buckets beside its 2-byte state).
pub fn out_of_core_scratch(n: u32, parts: u64) -> u64 {
    if parts <= 1 {
        0
    } else {
        4 * layer_size(n.min(MAX_STONES))
    }
}

/// Bytes of disk layer `n`'s file takes (header and payload; the statistics file is a few
/// hundred bytes more).
pub fn disk_needed(n: u32) -> u64 {
    crate::format::PAYLOAD_OFFSET + layer_size(n.min(MAX_STONES)) + 4096
}

/// Positions per second and thread the in-memory builder sustains on layer 24 (382 M
/// positions; measured on the project's machine: 5.5 M positions/s on 2 threads), for
/// estimates when no layer of the directory has a measured speed.
pub const POSITIONS_PER_SECOND_PER_THREAD: f64 = 2.75e6;

/// How the in-memory builder's speed falls with the layer's size: `rate ∝ size^-RATE_DECAY`
/// (random access to a larger state misses the caches more often; measured on the project's
/// machine from layer 20, 80 M positions at 7.2 M/s, to layer 26, 770 M at 4.3 M/s).
pub const RATE_DECAY: f64 = 0.25;

/// A measured speed to extrapolate estimates from: `rate` in-memory positions per second on a
/// layer of `positions` positions with `threads` threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throughput {
    /// Positions of the layer measured.
    pub positions: u64,
    /// In-memory positions per second measured on it (an out-of-core build's speed is
    /// multiplied by [`OUT_OF_CORE_SLOWDOWN`]).
    pub rate: f64,
    /// Threads it was built with.
    pub threads: usize,
}

impl Throughput {
    /// The reference when nothing was measured: [`POSITIONS_PER_SECOND_PER_THREAD`] on layer 24.
    pub fn reference(threads: usize) -> Throughput {
        let threads = threads.max(1);
        Throughput { positions: layer_size(24), rate: POSITIONS_PER_SECOND_PER_THREAD * threads as f64, threads }
    }

    /// The largest layer of `dir` (`rules`) below `below` whose statistics file records an
    /// in-memory build that took at least a second, or else the largest such out-of-core build
    /// (its speed multiplied by [`OUT_OF_CORE_SLOWDOWN`]), if any.
    ///
    /// Cost: one small file read per layer below `below`.
    pub fn measured(dir: &Path, rules: Ruleset, below: u32) -> Option<Throughput> {
        let all: Vec<(Mode, Throughput)> = (0..below.min(MAX_STONES + 1))
            .rev()
            .filter_map(|n| {
                let s = read_stats(dir, rules, n)?;
                let (seconds, threads) = (s.seconds?, s.threads?);
                if s.rules != rules.name() || s.layer != n || s.positions != layer_size(n) || !(1.0..1e9).contains(&seconds) || threads == 0 {
                    return None;
                }
                let mode = s.mode.unwrap_or(Mode::InMemory);
                let slowdown = if mode == Mode::OutOfCore { OUT_OF_CORE_SLOWDOWN } else { 1.0 };
                Some((mode, Throughput { positions: s.positions, rate: s.positions as f64 / seconds * slowdown, threads }))
            })
            .collect();
        all.iter().find(|(m, _)| *m == Mode::InMemory).or(all.first()).map(|&(_, t)| t)
    }

    /// Estimated seconds to build a layer of `positions` positions in `mode` with `threads`
    /// threads: the measured rate, scaled by the thread count and by [`RATE_DECAY`] for the
    /// size, and slowed down by [`OUT_OF_CORE_SLOWDOWN`] out of core.
    pub fn seconds(&self, positions: u64, mode: Mode, threads: usize) -> f64 {
        let scale = threads.max(1) as f64 / self.threads.max(1) as f64;
        let size = (positions.max(1) as f64 / self.positions.max(1) as f64).powf(-RATE_DECAY);
        let rate = self.rate * scale * size;
        let slowdown = if mode == Mode::OutOfCore { OUT_OF_CORE_SLOWDOWN } else { 1.0 };
        positions as f64 / rate * slowdown
    }
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
    /// How it is solved.
    pub mode: Mode,
    /// Bytes of memory building it needs ([`memory_needed`] in memory; the limit out of core).
    pub memory_bytes: u64,
    /// Out of core: the limits it is solved within.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_core: Option<OutOfCoreLimits>,
    /// Bytes of disk its file takes ([`disk_needed`]).
    pub disk_bytes: u64,
    /// Bytes of scratch disk it needs while it is built (state, checkpoint, buckets).
    pub scratch_bytes: u64,
    /// Rough seconds to build it (0 when it is only checked).
    pub seconds_estimate: f64,
    /// With `--bounds`: what will be done with its forced-capture bounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<BoundsPlan>,
}

/// The plan of one layer's forced-capture bounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoundsPlan {
    /// What will be done.
    #[serde(flatten)]
    pub action: LayerAction,
    /// Bytes of memory building them needs ([`bounds_memory_needed`]); always in memory.
    pub memory_bytes: u64,
    /// Bytes of disk their file takes.
    pub disk_bytes: u64,
}

/// The plan of a whole build ([`plan`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BuildPlan {
    /// Ruleset.
    pub rules: String,
    /// Ranks building it (1 but for a distributed build); memory and scratch figures are per
    /// rank.
    pub ranks: usize,
    /// The ruleset's layer directory.
    pub dir: PathBuf,
    /// One entry per layer `0..=max_stones`.
    pub layers: Vec<LayerPlan>,
    /// Memory limit in bytes (given, or available), when known.
    pub memory_limit_bytes: Option<u64>,
    /// Whether the limit was given (`--max-memory`) or is what the system has available.
    pub memory_limit_given: bool,
    /// Disk the layers to build need, in bytes: their files, and the largest scratch space
    /// one of them needs while it is built.
    pub disk_needed_bytes: u64,
    /// Where scratch files and checkpoints go.
    pub work_dir: PathBuf,
    /// Free disk where the scratch files go, in bytes, when known.
    pub work_disk_free_bytes: Option<u64>,
    /// Free disk where they go, in bytes, when known.
    pub disk_free_bytes: Option<u64>,
    /// Rough seconds for the whole build, from the speed of the largest layer built before
    /// ([`Throughput`]).
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
    let plan = propose(config, threads)?;
    check_plan(&plan)?;
    Ok(plan)
}

/// The plan of `config` as [`plan`] makes it, without checking that it can be carried out
/// (memory and disk): what `build --dry-run` shows before it says whether it would refuse.
///
/// Cost: as [`plan`].
///
/// # Errors
/// As [`plan`], except [`Error::OutOfMemory`] and [`Error::DiskSpace`].
pub fn propose(config: &BuildConfig, threads: usize) -> Result<BuildPlan> {
    propose_ranks(config, threads, 1)
}

/// Memory one of `ranks` ranks needs to build its share of layer `n` in memory: its share of
/// the state (two bytes per position) and of the output, its slice of every lower layer (the
/// only part of them it reads), and its exchange buffers ([`share_buffers`]). With one rank,
/// [`memory_needed`].
pub fn memory_needed_per_rank(n: u32, ranks: usize) -> u64 {
    if ranks <= 1 {
        return memory_needed(n);
    }
    let n = n.min(MAX_STONES);
    let share = Ownership::new(layer_size(n), ranks).per;
    let lower: u64 = (0..n).map(|m| Ownership::new(layer_size(m), ranks).per).sum();
    3 * share + lower + share_buffers(share).2
}

/// [`propose`] for a build by `ranks` ranks ([`build_with`]): memory and scratch disk are per
/// rank, out-of-core limits apply to a rank's share, and the time estimate counts every rank's
/// threads.
///
/// # Errors
/// As [`propose`].
pub fn propose_ranks(config: &BuildConfig, threads: usize, ranks: usize) -> Result<BuildPlan> {
    let ranks = ranks.max(1);
    if config.max_stones > MAX_STONES {
        return Err(Error::Usage(format!("max_stones is at most {MAX_STONES}, not {}", config.max_stones)));
    }
    let dir = DatabaseDir::native(&config.dir, config.rules)?;
    let (limit, given) = match config.max_memory {
        Some(m) => (Some(m), true),
        None => (memory_available().map(|m| m.saturating_sub(FIXED_OVERHEAD)), false),
    };
    let speed = Throughput::measured(dir.base(), config.rules, config.max_stones + 1).unwrap_or(Throughput::reference(threads));
    let every = config.checkpoint_every.unwrap_or(CHECKPOINT_EVERY).as_secs_f64();
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
        let bounds = if config.bounds { Some(plan_bounds(&dir, n)?) } else { None };
        let needed = memory_needed_per_rank(n, ranks);
        let share = if ranks > 1 { Ownership::new(layer_size(n), ranks).per.min(layer_size(n)) } else { layer_size(n) };
        let fits = limit.map_or(true, |m| needed <= m);
        let (mode, memory_bytes, out_of_core, mut scratch) = if fits {
            (Mode::InMemory, needed, None, 0)
        } else {
            let m = limit.unwrap_or(0);
            let ooc = OutOfCoreLimits::for_positions(share, m);
            let scratch = if ooc.parts > 1 { 4 * share } else { 0 };
            (Mode::OutOfCore, m.max(MIN_OUT_OF_CORE_MEMORY), Some(ooc), scratch)
        };
        // Messages to other ranks that do not fit their buffers (about as many as a part's).
        if ranks > 1 {
            scratch += 2 * share;
        }
        let seconds = speed.seconds(layer_size(n), mode, threads * ranks);
        // A checkpoint when the layer takes long enough to be worth one.
        if seconds > every {
            scratch += 2 * share;
        }
        layers.push(LayerPlan {
            layer: n,
            positions: layer_size(n),
            action,
            mode,
            memory_bytes,
            out_of_core,
            disk_bytes: disk_needed(n),
            scratch_bytes: if build { scratch } else { 0 },
            seconds_estimate: if build { seconds } else { 0.0 },
            bounds,
        });
    }
    let work_dir = work_dir(config, &dir);
    let files: u64 = layers.iter().filter(|l| matches!(l.action, LayerAction::Build { .. })).map(|l| l.disk_bytes).sum::<u64>()
        + layers.iter().filter_map(|l| l.bounds.as_ref()).filter(|b| matches!(b.action, LayerAction::Build { .. })).map(|b| b.disk_bytes).sum::<u64>();
    let scratch = layers.iter().map(|l| l.scratch_bytes).max().unwrap_or(0);
    let same_disk = same_file_system(&dir.layers_dir(), &work_dir);
    let plan = BuildPlan {
        rules: config.rules.name().into(),
        ranks,
        dir: dir.layers_dir(),
        memory_limit_bytes: limit,
        memory_limit_given: given,
        disk_needed_bytes: files + if same_disk { scratch } else { 0 },
        disk_free_bytes: disk_free(&dir.layers_dir()),
        work_disk_free_bytes: disk_free(&work_dir),
        work_dir,
        seconds_estimate: layers.iter().map(|l| l.seconds_estimate).sum(),
        layers,
    };
    Ok(plan)
}

/// The plan of layer `n`'s forced-capture bounds: built when absent or damaged, checked when a
/// file with a valid header is there.
///
/// # Errors
/// As the layers' plan: a foreign or unreadable file at the bounds' path.
fn plan_bounds(dir: &DatabaseDir, n: u32) -> Result<BoundsPlan> {
    let path = dir.bounds_path(n);
    let action = match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => LayerAction::Build { reason: None },
        _ => match dir.open_bounds(n, false) {
            Ok(_) => LayerAction::Check,
            // A complete file of values at the bounds' path is someone's data: never replaced.
            Err(e @ Error::Corrupt { damage: crate::error::Damage::WrongContent { .. }, .. }) => return Err(e),
            Err(e @ Error::Corrupt { .. }) => LayerAction::Build { reason: Some(e.to_string()) },
            Err(e) => return Err(e),
        },
    };
    Ok(BoundsPlan { action, memory_bytes: bounds_memory_needed(n), disk_bytes: crate::format::PAYLOAD_OFFSET + crate::bounds::payload_len(n) + 4096 })
}

/// Checks that `plan` can be carried out: the memory limit holds the smallest out-of-core
/// state, the layers' files and the largest scratch space fit on their disks.
///
/// Cost: none beyond the plan's figures.
///
/// # Errors
/// [`Error::OutOfMemory`] naming the first layer that cannot be built within the limit;
/// [`Error::DiskSpace`] naming the layers whose files, or the layer whose scratch files, do not
/// fit.
pub fn check_plan(plan: &BuildPlan) -> Result<()> {
    let limit = plan.memory_limit_bytes;
    let limit_kind = if plan.memory_limit_given { MemoryLimit::Given } else { MemoryLimit::Available };
    let same_disk = same_file_system(&plan.dir, &plan.work_dir);
    if let Some(m) = limit {
        if let Some(l) = plan.to_build().find(|l| l.mode == Mode::OutOfCore && m < MIN_OUT_OF_CORE_MEMORY) {
            return Err(Error::OutOfMemory { layer: l.layer, needed: MIN_OUT_OF_CORE_MEMORY, available: m, limit: limit_kind });
        }
        // Bounds are built in memory only.
        let bounds_to_build = plan.layers.iter().filter_map(|l| l.bounds.as_ref().map(|b| (l.layer, b)));
        if let Some((n, b)) = bounds_to_build.filter(|(_, b)| matches!(b.action, LayerAction::Build { .. })).find(|(_, b)| b.memory_bytes > m) {
            return Err(Error::OutOfMemory { layer: n, needed: b.memory_bytes, available: m, limit: limit_kind });
        }
    }
    if let Some(free) = plan.disk_free_bytes {
        if plan.disk_needed_bytes > free {
            let ns: Vec<u32> = plan.to_build().map(|l| l.layer).collect();
            return Err(Error::DiskSpace { path: plan.dir.clone(), what: crate::units::layers_phrase(ns), needed: plan.disk_needed_bytes, available: free });
        }
    }
    if let (false, Some(free)) = (same_disk, plan.work_disk_free_bytes) {
        if let Some(l) = plan.to_build().filter(|l| l.scratch_bytes > free).max_by_key(|l| l.scratch_bytes) {
            return Err(Error::DiskSpace {
                path: plan.work_dir.clone(),
                what: format!("the scratch files of layer {}", l.layer),
                needed: l.scratch_bytes,
                available: free,
            });
        }
    }
    Ok(())
}

/// How much slower than in memory the out-of-core builder is expected to be, for estimates.
pub const OUT_OF_CORE_SLOWDOWN: f64 = 2.0;

/// The work directory of a build: `--work-dir`/RULES, or `.work` in the ruleset's directory.
fn work_dir(config: &BuildConfig, dir: &DatabaseDir) -> PathBuf {
    match &config.work_dir {
        Some(w) => w.join(config.rules.name()),
        None => dir.layers_dir().join(".work"),
    }
}

/// Whether two paths (or their nearest existing ancestors) are on one file system.
fn same_file_system(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let dev = |p: &Path| p.ancestors().find_map(|q| std::fs::metadata(q).ok()).map(|m| m.dev());
        dev(a) == dev(b)
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        true
    }
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
        return Err(Error::Usage(format!("max_stones is at most {MAX_STONES}, not {}", config.max_stones)));
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
    let mut lower_bounds: Vec<BoundsLayer> = Vec::new();
    let mut all = Vec::new();
    for lp in &the_plan.layers {
        let n = lp.layer;
        if observer.cancelled() {
            return Err(Error::Interrupted);
        }
        'values: {
            let replaced = match &lp.action {
                LayerAction::Build { reason } => reason.clone(),
                LayerAction::Check => match check_layer(&dir, n)? {
                    Ok((layer, stats)) => {
                        restore_stats(&dir, &stats, observer)?;
                        observer.layer_done(&stats, &LayerOutcome::Skipped);
                        all.push(stats);
                        lower.push(layer);
                        break 'values;
                    }
                    Err(why) => Some(why),
                },
            };
            if let Some(why) = &replaced {
                observer.message(&format!("{why}; rebuilding layer {n}"));
            }
            let work = the_plan.work_dir.join(format!("layer-{n:02}"));
            let every = config.checkpoint_every.unwrap_or(CHECKPOINT_EVERY);
            let stats = build_layer(&dir, lp, &work, every, &lower, replaced, observer)?;
            all.push(stats);
            lower.push(dir.open(n, false)?);
        }
        if let Some(bp) = &lp.bounds {
            if observer.cancelled() {
                return Err(Error::Interrupted);
            }
            let b = bounds_layer(&dir, n, bp, &lower[n as usize], &lower_bounds, observer)?;
            lower_bounds.push(b);
        }
    }
    Ok(all)
}

/// Checks finished bounds of layer `n`: header, payload checksum, codes, and the relation with
/// the layer's values on every position; their statistics, or why they must be rebuilt.
///
/// Cost: one sequential pass over the file, one parallel pass over it and the values.
///
/// # Errors
/// Those of [`DatabaseDir::open_bounds`] other than damage (a foreign or unreadable file).
fn check_bounds(dir: &DatabaseDir, n: u32, values: &Layer) -> Result<std::result::Result<(BoundsLayer, BoundsStats), String>> {
    let b = match dir.open_bounds(n, true) {
        Ok(b) => b,
        Err(e @ Error::Corrupt { .. }) => return Ok(Err(e.to_string())),
        Err(e) => return Err(e),
    };
    match bounds_stats(dir.rules(), n, values, &b) {
        Ok(stats) => Ok(Ok((b, stats))),
        Err(e) => Ok(Err(e.to_string())),
    }
}

/// The statistics of layer `n`'s bounds `b` beside its values, checking every entry's code and
/// its relation with the value.
///
/// Cost: one parallel pass over the values and the bounds.
///
/// # Errors
/// [`Error::Corrupt`] naming the first entry that is no valid code
/// ([`Damage::BadBoundsCode`](crate::error::Damage::BadBoundsCode)) or contradicts its value.
pub fn bounds_stats(rules: Ruleset, n: u32, values: &Layer, b: &BoundsLayer) -> Result<BoundsStats> {
    use crate::error::Damage;
    let t = crate::bounds::tally(n, values.values(), b.payload());
    if let Some((index, code, value)) = t.first_bad {
        let damage = match b.codec().decode(code) {
            None => Damage::BadBoundsCode { index, code },
            Some(g) => Damage::BoundsContradictValue { board: unrank_unchecked(n, index), bounds: (g.mover, g.opponent), value },
        };
        return Err(Error::corrupt(b.path(), damage));
    }
    Ok(BoundsStats::new(rules, n, &t))
}

/// Makes layer `n`'s forced-capture bounds complete: checks the file there (`bp`), or builds
/// them from the lower layers' bounds into a temporary file, checks them (the relation with
/// `values` on every position, the equations on a spread of positions) and renames them into
/// place; then writes `bounds-NN.json`. Returns the finished bounds.
///
/// # Errors
/// [`Error::BoundsCheck`] when the new bounds fail a check (nothing is published);
/// [`Error::Interrupted`]; [`Error::OutOfMemory`]; [`Error::Io`] when a file cannot be written.
fn bounds_layer(dir: &DatabaseDir, n: u32, bp: &BoundsPlan, values: &Layer, lower: &[BoundsLayer], observer: &dyn BuildObserver) -> Result<BoundsLayer> {
    let rules = dir.rules();
    let replaced = match &bp.action {
        LayerAction::Build { reason } => reason.clone(),
        LayerAction::Check => match check_bounds(dir, n, values)? {
            Ok((b, stats)) => {
                restore_json(
                    &dir.bounds_stats_path(n),
                    &stats,
                    |s: &BoundsStats| s.forced == stats.forced && s.strictly_inside == stats.strictly_inside,
                    observer,
                )?;
                observer.bounds_done(&stats, &LayerOutcome::Skipped);
                return Ok(b);
            }
            Err(why) => Some(why),
        },
    };
    if let Some(why) = &replaced {
        observer.message(&format!("{why}; rebuilding the bounds of layer {n}"));
    }
    observer.bounds_started(n, bounds_work_units(n));
    let start = Instant::now();
    let mut writer = LayerWriter::create_bounds(dir, n)?;
    let lower_payloads: Vec<&[u8]> = lower.iter().map(|b| b.payload()).collect();
    solve_bounds(rules, n, &lower_payloads, writer.payload_mut(), observer)?;
    observer.phase("bounds: checking");
    let t = crate::bounds::tally(n, values.values(), writer.payload());
    if let Some((index, code, value)) = t.first_bad {
        let detail = format!("bounds entry {index} (code {code}) contradicts value {value} of position {:?}", unrank_unchecked(n, index));
        return Err(Error::BoundsCheck { layer: n, detail });
    }
    spot_check_bounds(rules, n, writer.payload(), lower)?;
    let seconds = start.elapsed().as_secs_f64();
    writer.finish()?;
    let stats = BoundsStats { seconds: Some(seconds), peak_memory_bytes: peak_memory(), ..BoundsStats::new(rules, n, &t) };
    write_json(&dir.bounds_stats_path(n), &stats)?;
    observer.bounds_done(&stats, &LayerOutcome::Built { seconds, replaced });
    dir.open_bounds(n, false)
}

/// Re-derives the bounds of a spread of positions of a new layer from their moves with the
/// verifier's independent derivation before the layer is published.
fn spot_check_bounds(rules: Ruleset, n: u32, payload: &[u8], lower: &[BoundsLayer]) -> Result<()> {
    let size = layer_size(n);
    let step = (size / SPOT_CHECKS).max(1);
    let codec = crate::bounds::Codec::new(n);
    let bad = (0..size.div_ceil(step)).into_par_iter().find_map_first(|k| {
        let i = k * step;
        let board = unrank_unchecked(n, i);
        let stored = codec.get(payload, i);
        let derived = derive_bounds(rules, &board, |m, child| {
            let j = rank_unchecked(child);
            let got = if m == n { codec.get(payload, j) } else { lower[m as usize].codec().get(lower[m as usize].payload(), j) };
            got.ok_or(m)
        });
        match (stored, derived) {
            (Some(s), Ok(d)) if s == d => None,
            (s, d) => Some(format!("position {board:?} (index {i}): stored bounds {s:?}, its moves give {d:?}")),
        }
    });
    match bad {
        Some(detail) => Err(Error::BoundsCheck { layer: n, detail }),
        None => Ok(()),
    }
}

/// What one rank of a distributed build spent on a layer (in its `layer-NN.json`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RankFigures {
    /// The rank.
    pub rank: usize,
    /// Positions of its share.
    pub positions: u64,
    /// Bytes it sent to other ranks.
    pub bytes_sent: u64,
    /// Bytes it received from other ranks.
    pub bytes_received: u64,
    /// Seconds it spent in collective operations (waiting for slower ranks included).
    pub communication_seconds: f64,
    /// Peak resident memory of its process so far, in bytes.
    pub peak_memory_bytes: u64,
}

/// Hashes of what must be the same on every rank: the running binary, and the build's
/// options (ruleset, layers, directories, limits).
fn identity(config: &BuildConfig) -> (u64, u64) {
    let binary = std::env::current_exe().ok().and_then(|p| std::fs::read(p).ok()).map_or(0, |b| xxhash_rust::xxh3::xxh3_64(&b));
    let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let options = format!(
        "{} {} {:?} {:?} {:?} {:?} {}",
        config.rules.name(),
        config.max_stones,
        absolute(&config.dir),
        config.max_memory,
        config.work_dir.as_deref().map(absolute),
        config.checkpoint_every,
        env!("CARGO_PKG_VERSION")
    );
    (binary, xxhash_rust::xxh3::xxh3_64(options.as_bytes()))
}

/// Checks that every rank runs the same binary with the same options.
///
/// # Errors
/// [`Error::Cluster`] naming the ranks that differ from rank 0, on every rank.
pub fn check_identity(config: &BuildConfig, cluster: &dyn Cluster) -> Result<()> {
    let (binary, options) = identity(config);
    let binaries = cluster.all_gather(binary)?;
    let optionses = cluster.all_gather(options)?;
    let differ = |all: &[u64]| -> Vec<usize> { all.iter().enumerate().filter(|(_, &x)| x != all[0]).map(|(r, _)| r).collect() };
    let (b, o) = (differ(&binaries), differ(&optionses));
    if !b.is_empty() {
        return Err(Error::Cluster(ClusterError::ForeignBinary { ranks: b }));
    }
    if !o.is_empty() {
        return Err(Error::Cluster(ClusterError::OtherOptions { ranks: o }));
    }
    Ok(())
}

/// Builds as [`build`] with the ranks of `cluster`: every rank calls it with the same `config`
/// (checked first: [`check_identity`]) and builds its share ([`Ownership`]) of every layer to
/// build, and the files come out byte-identical to [`build`]'s. With one rank it is [`build`].
///
/// Rank 0 takes the directory's lock, plans (its plan decides which layers are built), checks
/// the finished layers, creates each new layer's temporary file, and after every rank has
/// written its share into it, spot-checks, counts and publishes it. Every rank needs `--dir` at
/// the same place in one shared file system (it reads its slice of each lower layer there and
/// writes its share of the new one), and its own scratch space under the work directory
/// (`layer-NN/rank-RRRR-of-KKKK`). `config.max_memory` is per rank: a rank whose share does
/// not fit builds it out of core. The observer of rank 0 sees the build; the other ranks'
/// observers see only their shares' progress. The statistics of each layer record every rank's
/// traffic and peak memory ([`RankFigures`]).
///
/// # Errors
/// Those of [`build`], on the rank where they happen ([`Error::Cluster`] or
/// [`Error::Interrupted`] on the others when they learn of it at an agreement point); a rank
/// that fails elsewhere leaves the others waiting in a collective operation, so the caller must
/// end the whole job (`MPI_Abort`) on any error.
pub fn build_with(config: &BuildConfig, observer: &dyn BuildObserver, cluster: &dyn Cluster) -> Result<Vec<LayerStats>> {
    if cluster.size() <= 1 {
        return build(config, observer);
    }
    check_identity(config, cluster)?;
    if config.bounds {
        return Err(Error::Usage(format!("forced-capture bounds are built by one process, not by {} ranks", cluster.size())));
    }
    if config.max_stones > MAX_STONES {
        return Err(Error::Usage(format!("max_stones is at most {MAX_STONES}, not {}", config.max_stones)));
    }
    let (ranks, me) = (cluster.size(), cluster.rank());
    let dir = DatabaseDir::native(&config.dir, config.rules)?;
    let _lock = if me == 0 {
        let lock = BuildLock::acquire(&dir)?;
        for path in dir.remove_stale_temporaries()? {
            observer.message(&format!("removed {}, left by an interrupted build", path.display()));
        }
        Some(lock)
    } else {
        None
    };
    cluster.barrier()?;
    let the_plan = propose_ranks(config, rayon::current_num_threads(), ranks)?;
    check_plan(&the_plan)?;
    if me == 0 {
        observer.planned(&the_plan);
    }
    // Rank 0's view of the files decides for every rank.
    let mine: Vec<u8> = the_plan.layers.iter().map(|l| u8::from(matches!(l.action, LayerAction::Build { .. }))).collect();
    let agreed = cluster.broadcast(&mine)?;
    let mut lower: Vec<Layer> = Vec::new();
    let mut all = Vec::new();
    for lp in &the_plan.layers {
        let n = lp.layer;
        if cluster.any(observer.cancelled())? {
            return Err(Error::Interrupted);
        }
        let mut replaced = None;
        if agreed.get(n as usize) == Some(&0) {
            // Rank 0 checks the layer; the others trust its word.
            let mut intact = None;
            if me == 0 {
                match check_layer(&dir, n)? {
                    Ok((_, stats)) => intact = Some(stats),
                    Err(why) => replaced = Some(why),
                }
            }
            if cluster.broadcast(&[u8::from(intact.is_some())])?.first() == Some(&1) {
                if let Some(stats) = intact {
                    restore_stats(&dir, &stats, observer)?;
                    observer.layer_done(&stats, &LayerOutcome::Skipped);
                    all.push(stats);
                }
                lower.push(dir.open(n, false)?);
                continue;
            }
        } else if let LayerAction::Build { reason } = &lp.action {
            replaced = reason.clone();
        }
        if let Some(why) = &replaced {
            observer.message(&format!("{why}; rebuilding layer {n}"));
        }
        let work = the_plan.work_dir.join(format!("layer-{n:02}"));
        let every = config.checkpoint_every.unwrap_or(CHECKPOINT_EVERY);
        if let Some(stats) = build_share(&dir, lp, &work, every, &lower, replaced, observer, cluster)? {
            all.push(stats);
        }
        lower.push(dir.open(n, false)?);
    }
    Ok(all)
}

/// One rank's part of building layer `lp.layer` ([`build_with`]); rank 0 returns the layer's
/// statistics.
#[allow(clippy::too_many_arguments)]
fn build_share(
    dir: &DatabaseDir,
    lp: &LayerPlan,
    work: &Path,
    every: std::time::Duration,
    lower: &[Layer],
    replaced: Option<String>,
    observer: &dyn BuildObserver,
    cluster: &dyn Cluster,
) -> Result<Option<LayerStats>> {
    let rules = dir.rules();
    let n = lp.layer;
    let (ranks, me) = (cluster.size(), cluster.rank());
    let own = Ownership::new(layer_size(n), ranks).range(me);
    let len = own.end - own.start;
    let model = match n.checked_sub(2).and_then(|m| read_stats(dir.base(), rules, m)) {
        Some(s) => WorkModel::from_counts(n, &s.values),
        None => WorkModel::new(n, None),
    };
    observer.layer_started(n, model.solve(len) + if me == 0 { model.check() } else { 0 });
    let start = Instant::now();
    let mine = work.join(format!("rank-{me:04}-of-{ranks:04}"));
    create_work_dir(&mine)?;
    for stale in crate::spill::remove_stale(&mine)? {
        observer.message(&format!("removed {}, left by an interrupted build", stale.display()));
    }
    let _ = std::fs::remove_dir_all(mine.join("outbox"));
    // Rank 0 creates the temporary; every rank maps its share of it.
    let writer = if me == 0 { Some(LayerWriter::create(dir, n)?) } else { None };
    use std::os::unix::ffi::OsStrExt;
    let name = writer.as_ref().map(|w| w.tmp_path().as_os_str().as_bytes().to_vec()).unwrap_or_default();
    let tmp = PathBuf::from(std::ffi::OsStr::from_bytes(&cluster.broadcast(&name)?));
    let mut share_file = crate::storage::ShareWriter::open(&tmp, n, own.clone())?;
    let checkpoint = Checkpoint::new(mine.join("checkpoint.bin"), rules.id(), n, len);
    let checkpointed = lp.seconds_estimate > every.as_secs_f64();
    let lower_values: Vec<&[i8]> = lower.iter().map(|l| l.values()).collect();
    let note = |s: &str| observer.message(s);
    let release_lower = |m: u32, r: std::ops::Range<u64>| lower[m as usize].release(r);
    let metered = Metered::new(cluster);
    {
        let (payload, pages) = share_file.bytes_and_pages();
        let release_out = |r: std::ops::Range<u64>| pages.release(r);
        let options = SolveOptions {
            out_of_core: lp.out_of_core.map(|l| l.solve_within(&mine, &release_lower, &release_out)),
            checkpoint: checkpointed.then_some(&checkpoint),
            checkpoint_every: every,
            note: Some(&note),
            work: Some(&model),
        };
        let (outbox_bytes, lookups, _) = share_buffers(len);
        let share = Share { cluster: &metered, work_dir: &mine, outbox_bytes, lookups: lp.out_of_core.map_or(lookups, |l| l.lookup_bytes / 48) };
        solve_share(rules, n, &lower_values, payload, observer, &options, &share)?;
    }
    share_file.finish()?;
    // Every rank's figures, for rank 0's statistics (also: every share is written).
    let traffic = metered.traffic();
    let mut slots = vec![0u64; 5 * ranks];
    slots[5 * me..5 * me + 5].copy_from_slice(&[len, traffic.bytes_sent, traffic.bytes_received, (traffic.seconds * 1e6) as u64, peak_memory().unwrap_or(0)]);
    let figures = cluster.sum(&slots)?;
    let mut result = None;
    if let Some(writer) = writer {
        let ranks = figures
            .chunks(5)
            .enumerate()
            .map(|(rank, f)| RankFigures {
                rank,
                positions: f[0],
                bytes_sent: f[1],
                bytes_received: f[2],
                communication_seconds: f[3] as f64 * 1e-6,
                peak_memory_bytes: f[4],
            })
            .collect();
        result = Some(publish(dir, lp, writer, lower, &model, start, Some(ranks), replaced, observer)?);
    }
    // The layer is in place before any rank reads it.
    cluster.barrier()?;
    let _ = std::fs::remove_dir(mine.join("outbox"));
    let _ = std::fs::remove_dir(&mine);
    remove_work_dir(work);
    Ok(result)
}

/// Checks finished layer `n` (header, payload checksum, values in range) and counts its values
/// from the payload (the JSON beside it is informational): the layer and its statistics, or
/// why it must be rebuilt.
///
/// Cost: two sequential passes over the layer, its pages given back window by window.
///
/// # Errors
/// Those of [`DatabaseDir::open`] other than damage (a foreign or unreadable file).
fn check_layer(dir: &DatabaseDir, n: u32) -> Result<std::result::Result<(Layer, LayerStats), String>> {
    match dir.open(n, true) {
        Ok(layer) => {
            let stats = count_released(dir.rules(), n, layer.values(), &|r| layer.release(r));
            match stats_out_of_range(&stats).then(|| layer.first_out_of_range()).flatten() {
                Some((index, value)) => {
                    let damage = crate::error::Damage::ValueOutOfRange { index, value, stones: n };
                    Ok(Err(Error::corrupt(layer.path(), damage).to_string()))
                }
                None => Ok(Ok((layer, stats))),
            }
        }
        Err(e @ Error::Corrupt { .. }) => Ok(Err(e.to_string())),
        Err(e) => Err(e),
    }
}

/// Whether a layer's counts hold a value outside `-n..=n` (a checksum-valid but wrong file,
/// which must not be trusted as a lower layer).
fn stats_out_of_range(s: &LayerStats) -> bool {
    s.values.keys().any(|&v| v.unsigned_abs() > s.layer)
}

/// Writes `value` as pretty JSON at `path`, atomically.
fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let json = serde_json::to_vec_pretty(value).map_err(|e| Error::Internal(e.to_string()))?;
    write_atomic(path, &json)
}

/// Writes `counted` as JSON at `path` when the file there is missing, unreadable or fails
/// `same`.
fn restore_json<T: Serialize + serde::de::DeserializeOwned>(path: &Path, counted: &T, same: impl Fn(&T) -> bool, observer: &dyn BuildObserver) -> Result<()> {
    let ok = std::fs::read(path).ok().and_then(|b| serde_json::from_slice::<T>(&b).ok()).is_some_and(|s| same(&s));
    if !ok {
        write_json(path, counted)?;
        observer.message(&format!("restored {}", path.display()));
    }
    Ok(())
}

/// Writes `layer-NN.json` for an intact layer when it is missing, unreadable or disagrees with
/// the layer's counts.
fn restore_stats(dir: &DatabaseDir, counted: &LayerStats, observer: &dyn BuildObserver) -> Result<()> {
    restore_json(&dir.stats_path(counted.layer), counted, |s: &LayerStats| s.values == counted.values && s.positions == counted.positions, observer)
}

/// Counts a layer's values with [`scan_released`], giving each window's pages back.
fn count_released(rules: Ruleset, n: u32, values: &[i8], release: &dyn Fn(std::ops::Range<u64>)) -> LayerStats {
    let mut total = vec![0u64; 256];
    scan_released(values, release, |w| {
        for (t, h) in total.iter_mut().zip(histogram(w)) {
            *t += h;
        }
    });
    LayerStats::from_histogram(rules, n, &total)
}

/// Builds layer `lp.layer` in the mode the plan chose, with checkpoints in `work` (created for
/// the layer, removed when it is done) when it is expected to outlast `every`.
fn build_layer(
    dir: &DatabaseDir,
    lp: &LayerPlan,
    work: &Path,
    every: std::time::Duration,
    lower: &[Layer],
    replaced: Option<String>,
    observer: &dyn BuildObserver,
) -> Result<LayerStats> {
    let rules = dir.rules();
    let n = lp.layer;
    // Progress is weighted by what layer n - 2 (same parity of values) resolved at each value.
    let model = match n.checked_sub(2).and_then(|m| read_stats(dir.base(), rules, m)) {
        Some(s) => WorkModel::from_counts(n, &s.values),
        None => WorkModel::new(n, None),
    };
    observer.layer_started(n, model.total());
    let start = Instant::now();
    let checkpointed = lp.seconds_estimate > every.as_secs_f64();
    let scratch = lp.out_of_core.is_some() || checkpointed;
    if scratch {
        create_work_dir(work)?;
        for stale in crate::spill::remove_stale(work)? {
            observer.message(&format!("removed {}, left by an interrupted build", stale.display()));
        }
    }
    let checkpoint = Checkpoint::new(work.join("checkpoint.bin"), rules.id(), n, layer_size(n));
    let mut writer = LayerWriter::create(dir, n)?;
    let lower_values: Vec<&[i8]> = lower.iter().map(|l| l.values()).collect();
    let note = |s: &str| observer.message(s);
    let release_lower = |m: u32, r: std::ops::Range<u64>| lower[m as usize].release(r);
    {
        let (payload, pages) = writer.payload_and_pages();
        let release_out = |r: std::ops::Range<u64>| pages.release(r);
        let options = SolveOptions {
            out_of_core: lp.out_of_core.map(|l| l.solve_within(work, &release_lower, &release_out)),
            checkpoint: checkpointed.then_some(&checkpoint),
            checkpoint_every: every,
            note: Some(&note),
            work: Some(&model),
        };
        solve_layer_with(rules, n, &lower_values, payload, observer, &options)?;
    }
    let stats = publish(dir, lp, writer, lower, &model, start, None, replaced, observer)?;
    if scratch {
        remove_work_dir(work);
    }
    Ok(stats)
}

/// Publishes a solved layer: spot-checks it against its children (window by window out of
/// core), counts its values, writes its header and renames it into place
/// ([`LayerWriter::finish`]), then writes its statistics (with the ranks' figures of a
/// distributed build) and tells the observer. `start`: when the layer's build began.
///
/// Cost: the spot check's random reads, two sequential passes over the layer.
///
/// # Errors
/// [`Error::SpotCheck`] (the layer is then not published); [`Error::Io`] when it cannot be
/// written or renamed.
#[allow(clippy::too_many_arguments)]
fn publish(
    dir: &DatabaseDir,
    lp: &LayerPlan,
    writer: LayerWriter,
    lower: &[Layer],
    model: &WorkModel,
    start: Instant,
    ranks: Option<Vec<RankFigures>>,
    replaced: Option<String>,
    observer: &dyn BuildObserver,
) -> Result<LayerStats> {
    let (rules, n) = (dir.rules(), lp.layer);
    let lower_values: Vec<&[i8]> = lower.iter().map(|l| l.values()).collect();
    observer.phase("checking");
    match lp.out_of_core {
        None => spot_check(rules, n, writer.values(), &lower_values, usize::MAX, &|| {})?,
        Some(l) => {
            // A group's random reads touch at most seven pages of fault-around (64 KiB) each.
            let group = (l.lower_window / (7 << 16)).max(16) as usize;
            let release_all = || {
                writer.release(0..u64::MAX);
                for layer in lower {
                    layer.release(0..u64::MAX);
                }
            };
            spot_check(rules, n, writer.values(), &lower_values, group, &release_all)?;
        }
    }
    observer.advance(model.check() / 2);
    let seconds = start.elapsed().as_secs_f64();
    let mut stats = count_released(rules, n, writer.values(), &|r| writer.release(r));
    observer.advance(model.check() - model.check() / 2);
    writer.finish()?;
    stats.seconds = Some(seconds);
    stats.positions_per_second = Some(layer_size(n) as f64 / seconds.max(1e-9));
    stats.threads = Some(rayon::current_num_threads());
    stats.peak_memory_bytes = peak_memory();
    stats.mode = Some(lp.mode);
    stats.ranks = ranks;
    write_json(&dir.stats_path(n), &stats)?;
    observer.layer_done(&stats, &LayerOutcome::Built { seconds, replaced });
    Ok(stats)
}

/// Creates a layer's work directory (and its parents), refusing anything but a directory there.
fn create_work_dir(work: &Path) -> Result<()> {
    std::fs::create_dir_all(work).map_err(|e| Error::io(work, e))?;
    let meta = std::fs::symlink_metadata(work).map_err(|e| Error::io(work, e))?;
    if !meta.is_dir() {
        let found = crate::error::FileKind::of(meta.file_type());
        return Err(Error::NotAFile { path: work.into(), found, expected: crate::error::FileKind::Directory });
    }
    Ok(())
}

/// Removes a finished layer's work directory (the solver has removed its files), and the shared
/// `.work` (or `--work-dir`/RULES) directory when nothing else is left in it.
fn remove_work_dir(work: &Path) {
    let _ = std::fs::remove_dir(work);
    if let Some(parent) = work.parent() {
        let _ = std::fs::remove_dir(parent);
    }
}

/// Re-derives a spread of positions of a new layer from their children before it is published,
/// `group` positions at a time, calling `between` after each group.
fn spot_check(rules: Ruleset, n: u32, values: &[i8], lower: &[&[i8]], group: usize, between: &dyn Fn()) -> Result<()> {
    let size = layer_size(n);
    let step = (size / SPOT_CHECKS).max(1);
    let count = size.div_ceil(step);
    let group = group.max(1) as u64;
    let mut k0 = 0;
    while k0 < count {
        let k1 = count.min(k0.saturating_add(group));
        let bad = (k0..k1).into_par_iter().map(|k| k * step).find_map_any(|i| {
            let b = unrank_unchecked(n, i);
            let derived = derive_value(rules, n, &b, values, lower);
            (derived != values[i as usize]).then_some((i, b, derived))
        });
        between();
        if let Some((index, board, derived)) = bad {
            return Err(Error::SpotCheck { layer: n, index, board, stored: values[index as usize], derived });
        }
        k0 = k1;
    }
    Ok(())
}

/// An exclusive lock on a ruleset's database directory for the length of a build, so two builds
/// never write the same files (released when dropped, or when the process dies).
pub struct BuildLock {
    _file: std::fs::File,
}

impl BuildLock {
    /// Takes the lock of `dir` (creating its directory).
    ///
    /// # Errors
    /// [`Error::Io`] when another process holds it or it cannot be created.
    pub fn acquire(dir: &DatabaseDir) -> Result<BuildLock> {
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
                return Err(Error::io(&path, std::io::Error::new(std::io::ErrorKind::WouldBlock, "another build is working on this directory")));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn write_stats(base: &Path, rules: Ruleset, n: u32, seconds: f64, mode: Option<Mode>) {
        let mut s = LayerStats::from_histogram(rules, n, &[0; 256]);
        s.seconds = Some(seconds);
        s.threads = Some(2);
        s.mode = mode;
        let path = crate::storage::stats_path(base, rules, n);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_vec(&s).unwrap()).unwrap();
    }

    #[test]
    fn estimates_come_from_the_largest_measured_layer() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        let rules = Ruleset::Awari;
        assert_eq!(Throughput::measured(base, rules, 49), None);
        // Too quick to measure anything: ignored.
        write_stats(base, rules, 10, 0.01, None);
        assert_eq!(Throughput::measured(base, rules, 49), None);
        write_stats(base, rules, 20, 10.0, None);
        write_stats(base, rules, 22, 20.0, Some(Mode::OutOfCore));
        std::fs::write(crate::storage::stats_path(base, rules, 23), b"{ not json").unwrap();
        // Another ruleset's measurement is not used.
        write_stats(base, Ruleset::Abapa(crate::rules::GrandSlam::NoCapture), 24, 1.0, None);
        // An in-memory measurement is preferred to a larger out-of-core one.
        assert_eq!(Throughput::measured(base, rules, 49).unwrap().positions, layer_size(20));
        std::fs::remove_file(crate::storage::stats_path(base, rules, 20)).unwrap();
        let t = Throughput::measured(base, rules, 49).unwrap();
        assert_eq!((t.positions, t.threads), (layer_size(22), 2));
        assert!((t.rate - layer_size(22) as f64 / 20.0 * OUT_OF_CORE_SLOWDOWN).abs() < 1.0);
        write_stats(base, rules, 20, 10.0, None);
        assert_eq!(Throughput::measured(base, rules, 22).unwrap().positions, layer_size(20));
        // The same layer, threads and mode give back the measured time.
        let same = t.seconds(layer_size(22), Mode::OutOfCore, 2);
        assert!((same - 20.0).abs() < 1e-6, "{same}");
        assert!((t.seconds(layer_size(22), Mode::InMemory, 2) - 10.0).abs() < 1e-6);
        assert!((t.seconds(layer_size(22), Mode::InMemory, 4) - 5.0).abs() < 1e-6);
        // Larger layers take more than proportionally longer.
        let ratio = t.seconds(layer_size(30), Mode::InMemory, 2) / 10.0;
        assert!(ratio > layer_size(30) as f64 / layer_size(22) as f64, "{ratio}");
        // The reference: layer 24 at 5.5 M positions/s on two threads.
        let r = Throughput::reference(2).seconds(layer_size(24), Mode::InMemory, 2);
        assert!((r - layer_size(24) as f64 / 5.5e6).abs() < 1e-6, "{r}");
    }
}
