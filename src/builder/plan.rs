//! The plan of a build, made before any work: which layers are complete and which must be
//! built, in memory or out of core, the memory, disk and scratch space each needs, and a time
//! estimate extrapolated from the speed measured on the largest layer already built.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::config::{BuildConfig, CHECKPOINT_EVERY, FIXED_OVERHEAD, MIN_OUT_OF_CORE_MEMORY};
use super::stats::read_stats;
use crate::error::{Error, FileContent, MemoryLimit, Result};
use crate::index::{layer_size, MAX_STONES};
use crate::rules::Ruleset;
use crate::solver::cluster::Ownership;
use crate::solver::spill::{something_at, CHECKPOINT_FILE};
use crate::solver::{bounds_working_memory, share_buffers, working_memory, OutOfCore};
use crate::storage::{BoundsKind, DatabaseDir, DtcKind, LayerState, ValuesKind};
use crate::sys::{disk_free, memory_available, same_file_system};

/// Bytes of anonymous memory building layer `n` in memory with the lower layers resident needs
/// at its peak (the process's fixed overhead, `FIXED_OVERHEAD`, aside): its cells (one byte
/// per position) and, during the exits pass, a copy of the lower layers a capture reaches
/// (`0..=n - 2`; never layer `n - 1`), or, during the thresholds, their seed lists
/// ([`list_bytes`]), whichever is larger. The output and the lower layers' files are mapped:
/// file pages, which the system can write back or drop. Saturates instead of overflowing.
pub(crate) fn memory_needed(n: u32) -> u64 {
    let n = n.min(MAX_STONES);
    working_memory(n).saturating_add(resident_lower(n).max(list_bytes(n)))
}

/// Bytes of the lower layers a capture from layer `n` reaches (`0..=n - 2`).
pub(crate) fn resident_lower(n: u32) -> u64 {
    (0..(n + 1).saturating_sub(crate::rules::MIN_CAPTURE)).map(layer_size).fold(0u64, u64::saturating_add)
}

/// Bytes of the thresholds' seed lists of layer `n` at most: four bytes for an eighth of the
/// positions; none from layer 32 on, whose positions a four-byte offset cannot name (every
/// threshold then scans the cells).
pub(crate) fn list_bytes(n: u32) -> u64 {
    let size = layer_size(n.min(MAX_STONES));
    if size > u64::from(u32::MAX) {
        0
    } else {
        size / 2
    }
}

/// Bytes of anonymous memory building layer `n` in memory with the lower layers streamed needs
/// within `limit` (`FIXED_OVERHEAD` aside), or `None` when its cells do not fit: the cells,
/// and seed lists of what the limit leaves (at most [`list_bytes`]).
pub(crate) fn streamed_memory_needed(n: u32, limit: Option<u64>) -> Option<u64> {
    let cells = working_memory(n);
    match limit {
        None => Some(cells + list_bytes(n)),
        Some(m) if m >= cells => Some(cells + list_bytes(n).min(m - cells)),
        Some(_) => None,
    }
}

/// Bytes of memory building layer `n`'s forced-capture bounds needs: their payload, four bytes
/// of working state per position, and every smaller layer's bounds mapped for reading.
pub(crate) fn bounds_memory_needed(n: u32) -> u64 {
    let n = n.min(MAX_STONES);
    let lower: u64 = (0..n).map(crate::bounds::payload_len).fold(0u64, u64::saturating_add);
    crate::bounds::payload_len(n).saturating_add(bounds_working_memory(n)).saturating_add(lower)
}

/// The limits of an out-of-core layer, derived from the memory limit `m`: half for one part's
/// state (one byte per position), a quarter for capture lookups, a quarter for the window of
/// the lower layers, a sixteenth of the half for buffers of messages and seed lists (during the
/// thresholds, when the exits pass is over, the message buffers also take the lookups' and the
/// window's share).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OutOfCoreLimits {
    /// Positions per part.
    pub part_len: u64,
    /// Parts of the layer.
    pub parts: u64,
    /// Bytes of capture lookups served at a time.
    pub lookup_bytes: u64,
    /// Bytes of lower layers resident at a time.
    pub lower_window: u64,
    /// Bytes of messages buffered in memory.
    pub message_bytes: u64,
}

impl OutOfCoreLimits {
    /// The limits of layer `n` within `m` bytes (at least `MIN_OUT_OF_CORE_MEMORY`).
    pub fn new(n: u32, m: u64) -> OutOfCoreLimits {
        OutOfCoreLimits::for_positions(layer_size(n.min(MAX_STONES)), m)
    }

    /// The limits of solving `positions` positions (a layer, or a rank's share) within `m`
    /// bytes.
    pub(crate) fn for_positions(positions: u64, m: u64) -> OutOfCoreLimits {
        let m = m.max(MIN_OUT_OF_CORE_MEMORY);
        let message_bytes = m / 32;
        let state = m / 2 - message_bytes;
        let chunk = crate::solver::CHUNK;
        let part_len = (state / chunk).max(1) * chunk;
        OutOfCoreLimits { part_len, parts: positions.div_ceil(part_len).max(1), lookup_bytes: m / 4, lower_window: m / 4, message_bytes }
    }
}

impl OutOfCoreLimits {
    /// The solver's limits: these, with scratch files in `work_dir` and the page releases of
    /// the lower layers and of the output.
    pub(crate) fn solve_within<'a>(
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

/// How one layer's values are solved: the plan's one choice for the layer, with what it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Mode {
    /// The whole state in memory by one process or by each rank (`memory_needed`), the lower
    /// layers a capture reaches copied and read at random.
    InMemory {
        /// Bytes the thresholds' seed lists may take (the plan's `list_bytes`).
        list_bytes: u64,
    },
    /// In memory by one process, the lower layers read in index order, none resident: they do
    /// not fit beside the cells (`streamed_memory_needed`).
    Streamed {
        /// Bytes the thresholds' seed lists may take: what the limit leaves beside the cells.
        list_bytes: u64,
    },
    /// In parts, within the memory limit.
    OutOfCore {
        /// The limits it is solved within.
        limits: OutOfCoreLimits,
    },
}

impl Mode {
    /// Its name, as the plan's JSON and a layer's statistics (`mode`) record it: `in_memory`,
    /// `streamed` or `out_of_core`.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::InMemory { .. } => "in_memory",
            Mode::Streamed { .. } => "streamed",
            Mode::OutOfCore { .. } => "out_of_core",
        }
    }

    /// The out-of-core limits, when out of core.
    pub fn out_of_core(&self) -> Option<&OutOfCoreLimits> {
        match self {
            Mode::OutOfCore { limits } => Some(limits),
            _ => None,
        }
    }

    /// Bytes the thresholds' seed lists may take, in memory (streamed or not).
    pub fn list_bytes(&self) -> Option<u64> {
        match *self {
            Mode::InMemory { list_bytes } | Mode::Streamed { list_bytes } => Some(list_bytes),
            Mode::OutOfCore { .. } => None,
        }
    }

    /// How many times an in-memory build's time it takes, for estimates
    /// (`OUT_OF_CORE_SLOWDOWN` out of core, else 1).
    pub fn slowdown(&self) -> f64 {
        slowdown(self.name())
    }
}

/// [`Mode::slowdown`] of the mode named `name` (as statistics record it).
fn slowdown(name: &str) -> f64 {
    if name == "out_of_core" {
        OUT_OF_CORE_SLOWDOWN
    } else {
        1.0
    }
}

/// Bytes of disk layer `n`'s file takes (header and payload; the statistics file is a few
/// hundred bytes more).
pub(crate) fn disk_needed(n: u32) -> u64 {
    crate::format::PAYLOAD_OFFSET + layer_size(n.min(MAX_STONES)) + 4096
}

/// Positions per second and thread the in-memory builder sustains on layer 24 (382 M
/// positions; measured on the project's machine: 5.5 M positions/s on 2 threads), for
/// estimates when no layer of the directory has a measured speed.
pub(crate) const POSITIONS_PER_SECOND_PER_THREAD: f64 = 2.75e6;

/// How the in-memory builder's speed falls with the layer's size: `rate ∝ size^-RATE_DECAY`
/// (random access to a larger state misses the caches more often; measured on the project's
/// machine from layer 20, 80 M positions at 7.2 M/s, to layer 26, 770 M at 4.3 M/s).
pub(crate) const RATE_DECAY: f64 = 0.25;

/// A measured speed to extrapolate estimates from: `rate` in-memory positions per second on a
/// layer of `positions` positions with `threads` threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throughput {
    /// Positions of the layer measured.
    pub positions: u64,
    /// In-memory positions per second measured on it (an out-of-core build's speed is
    /// multiplied by `OUT_OF_CORE_SLOWDOWN`).
    pub rate: f64,
    /// Threads it was built with.
    pub threads: usize,
}

impl Throughput {
    /// The reference when nothing was measured: `POSITIONS_PER_SECOND_PER_THREAD` on layer 24.
    pub fn reference(threads: usize) -> Throughput {
        let threads = threads.max(1);
        Throughput { positions: layer_size(24), rate: POSITIONS_PER_SECOND_PER_THREAD * threads as f64, threads }
    }

    /// The largest layer of `dir` (`rules`) below `below` whose statistics file records an
    /// in-memory build that took at least a second, or else the largest such out-of-core build
    /// (its speed multiplied by `OUT_OF_CORE_SLOWDOWN`), if any.
    ///
    /// Cost: one small file read per layer below `below`.
    pub fn measured(dir: &Path, rules: Ruleset, below: u32) -> Option<Throughput> {
        let all: Vec<(bool, Throughput)> = (0..below.min(MAX_STONES + 1))
            .rev()
            .filter_map(|n| {
                let s = read_stats(dir, rules, n)?;
                let (seconds, threads) = (s.seconds?, s.threads?);
                if s.rules != rules.name() || s.layer != n || s.positions != layer_size(n) || !(1.0..1e9).contains(&seconds) || threads == 0 {
                    return None;
                }
                let slowdown = slowdown(s.mode.as_deref().unwrap_or("in_memory"));
                Some((slowdown == 1.0, Throughput { positions: s.positions, rate: s.positions as f64 / seconds * slowdown, threads }))
            })
            .collect();
        all.iter().find(|(in_memory, _)| *in_memory).or(all.first()).map(|&(_, t)| t)
    }

    /// Estimated seconds to build a layer of `positions` positions in memory with `threads`
    /// threads: the measured rate, scaled by the thread count and by `RATE_DECAY` for the
    /// size (times [`Mode::slowdown`] for another mode).
    pub fn seconds(&self, positions: u64, threads: usize) -> f64 {
        let scale = threads.max(1) as f64 / self.threads.max(1) as f64;
        let size = (positions.max(1) as f64 / self.positions.max(1) as f64).powf(-RATE_DECAY);
        let rate = self.rate * scale * size;
        positions as f64 / rate
    }
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
    /// The layer is left out ([`BuildConfig::skip`]): no layer of the build needs it. Its file,
    /// if any, is neither read nor checked.
    Skip {
        /// Why it is not needed.
        reason: String,
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
    /// How it is solved (`None` for a layer left out).
    #[serde(flatten)]
    pub mode: Option<Mode>,
    /// Bytes of memory building it needs (`memory_needed` in memory, less the lower layers
    /// the build leaves out, which are not mapped; the limit out of core; 0 for a layer left
    /// out).
    pub memory_bytes: u64,
    /// Bytes of disk its file takes (`disk_needed`).
    pub disk_bytes: u64,
    /// Bytes of scratch disk it needs while it is built (state, checkpoint, buckets, seed lists).
    pub scratch_bytes: u64,
    /// Rough seconds to build it (0 when it is only checked).
    pub seconds_estimate: f64,
    /// What will be done with its files beside the values that the build asks for
    /// ([`BuildConfig::companions`]), in the order of their kinds (bounds, then depths to
    /// capture).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub companions: Vec<CompanionPlan>,
}

impl LayerPlan {
    /// The plan of its file of kind `kind` beside the values, if the build asks for it.
    pub fn companion(&self, kind: FileContent) -> Option<&CompanionPlan> {
        self.companions.iter().find(|c| c.kind == kind)
    }
}

/// The plan of one layer's file beside its values, whatever its kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompanionPlan {
    /// Its kind ([`FileContent::name`] in JSON: `bounds`, `dtc`).
    #[serde(serialize_with = "kind_name")]
    pub kind: FileContent,
    /// What will be done.
    #[serde(flatten)]
    pub action: LayerAction,
    /// Bytes of memory computing it needs (forced-capture bounds: always in memory,
    /// `bounds_memory_needed`; depths to capture: `dtc_memory_needed`, or with `fused` the
    /// values build's memory with the depths recorded).
    pub memory_bytes: u64,
    /// Whether its working state goes to a scratch file (the memory limit is smaller than
    /// `memory_bytes`; depths to capture only: four bytes per position of scratch disk).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub scratch: bool,
    /// Bytes of disk its file takes (depths to capture: with no depth of 254 or more; each
    /// such takes 8 more).
    pub disk_bytes: u64,
    /// Rough seconds to compute it (0 when it is only checked, and for bounds, not estimated).
    pub seconds_estimate: f64,
    /// Whether it is recorded by the values' own propagation (depths to capture of a layer
    /// whose values are built in memory by one process; see docs/dtc.md): `memory_bytes` is
    /// then the values build's memory with the depths recorded, and `seconds_estimate` the time
    /// recording them adds. Otherwise its own pass computes it after the values.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fused: bool,
}

/// A kind as JSON names it.
fn kind_name<S: serde::Serializer>(kind: &FileContent, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(kind.name())
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

    /// The layers left out ([`LayerAction::Skip`]).
    pub fn skipped(&self) -> impl Iterator<Item = &LayerPlan> {
        self.layers.iter().filter(|l| matches!(l.action, LayerAction::Skip { .. }))
    }
}

/// Bytes of the layers below `n` that the build leaves out (`skip`), as `size(m)` counts them:
/// what the memory figures of layer `n` do not map.
fn skipped_below(n: u32, skip: &[u32], size: impl Fn(u32) -> u64) -> u64 {
    skip.iter().filter(|&&m| m < n).map(|&m| size(m)).fold(0u64, u64::saturating_add)
}

/// Plans `config` without building anything: classifies every layer `0..=max_stones` from its
/// file (headers only; the layers of `config.skip` are [`LayerAction::Skip`] whatever is there),
/// and checks that every layer to build fits in memory and that the disk
/// holds the new files.
///
/// Parameters: `config`; `threads`, for the time estimate.
///
/// Cost: one `stat` and one header read per layer present; no payload is read.
///
/// # Errors
/// [`Error::Usage`] for more than 48 stones, or a layer of `config.skip` that is not in
/// `0..=max_stones` or that a layer of the build needs; [`Error::RulesetMismatch`] /
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

/// Memory one of `ranks` ranks needs of its own to build its share of layer `n` in memory: its
/// share of the cells (one byte per position) and its exchange buffers ([`share_buffers`]). Its
/// share of the output and its slices of the lower layers (the only part of them it reads, in
/// sorted order for the other ranks' lookups) are mapped files. With one rank,
/// [`memory_needed`].
pub(crate) fn memory_needed_per_rank(n: u32, ranks: usize) -> u64 {
    if ranks <= 1 {
        return memory_needed(n);
    }
    let share = Ownership::new(layer_size(n.min(MAX_STONES)), ranks).per;
    share + share_buffers(share).2
}

/// [`propose`] for a build by `ranks` ranks (`build_with`): memory and scratch disk are per
/// rank, out-of-core limits apply to a rank's share, and the time estimate counts every rank's
/// threads.
///
/// # Errors
/// As [`propose`].
pub fn propose_ranks(config: &BuildConfig, threads: usize, ranks: usize) -> Result<BuildPlan> {
    let ranks = ranks.max(1);
    config.validate(1)?;
    let dir = DatabaseDir::native(&config.dir, config.rules)?;
    let (limit, given) = match config.max_memory {
        Some(m) => (Some(m), true),
        None => (memory_available().map(|m| m.saturating_sub(FIXED_OVERHEAD)), false),
    };
    let at = Planner {
        config,
        dir: &dir,
        ranks,
        threads: threads * ranks,
        limit,
        speed: Throughput::measured(dir.base(), config.rules, config.max_stones + 1).unwrap_or(Throughput::reference(threads)),
        work_dir: work_dir(config, &dir),
    };
    let layers = (0..=config.max_stones).map(|n| if config.wants(n) { at.layer(n) } else { Ok(skipped_layer(n)) }).collect::<Result<Vec<_>>>()?;
    let scratch = layers.iter().map(|l| l.scratch_bytes.max(companion_scratch(l, ranks))).max().unwrap_or(0);
    let same_disk = same_file_system(&dir.layers_dir(), &at.work_dir);
    Ok(BuildPlan {
        rules: config.rules.name().into(),
        ranks,
        dir: dir.layers_dir(),
        memory_limit_bytes: limit,
        memory_limit_given: given,
        disk_needed_bytes: files_bytes(&layers) + if same_disk { scratch } else { 0 },
        disk_free_bytes: disk_free(&dir.layers_dir(), config.disk_free_cap).map(|f| f + reclaimable(&layers, &dir, &at.work_dir, same_disk, true)),
        work_disk_free_bytes: disk_free(&at.work_dir, config.disk_free_cap).map(|f| f + reclaimable(&layers, &dir, &at.work_dir, same_disk, false)),
        seconds_estimate: layers.iter().map(|l| l.seconds_estimate + l.companions.iter().map(|c| c.seconds_estimate).sum::<f64>()).sum(),
        work_dir: at.work_dir,
        layers,
    })
}

/// The plan of layer `n`, left out of the build ([`BuildConfig::skip`]).
fn skipped_layer(n: u32) -> LayerPlan {
    let reason = format!("not needed: no position of layer {} reaches it (a capture takes at least 2 stones)", n + 1);
    LayerPlan {
        layer: n,
        positions: layer_size(n),
        action: LayerAction::Skip { reason },
        mode: None,
        memory_bytes: 0,
        disk_bytes: 0,
        scratch_bytes: 0,
        seconds_estimate: 0.0,
        companions: Vec::new(),
    }
}

/// What every layer's plan is made from: the build, its directory and ranks, the memory limit
/// and the speed to extrapolate from.
pub(super) struct Planner<'a> {
    pub(super) config: &'a BuildConfig,
    pub(super) dir: &'a DatabaseDir,
    pub(super) ranks: usize,
    /// Threads of every rank.
    pub(super) threads: usize,
    /// The memory limit of every rank, if any.
    pub(super) limit: Option<u64>,
    /// The speed estimates come from.
    pub(super) speed: Throughput,
    work_dir: PathBuf,
}

/// The plan of a layer's values, as the plans of the files beside them read it.
pub(super) struct ValuesPlan<'a> {
    /// Whether the values are built (else checked).
    pub(super) build: bool,
    /// How they are built.
    pub(super) mode: &'a Mode,
    /// Bytes of memory building them needs.
    pub(super) memory_bytes: u64,
    /// Rough seconds building them takes.
    pub(super) seconds: f64,
}

impl Planner<'_> {
    /// The plan of layer `n`, one the build wants: what to do with its file, how to solve it
    /// within the limit, its scratch disk and time, and its companions'.
    fn layer(&self, n: u32) -> Result<LayerPlan> {
        let config = self.config;
        let action = values_action(self.dir, n)?;
        let build = matches!(action, LayerAction::Build { .. });
        let (mode, memory_bytes) = self.mode(n);
        let seconds = self.speed.seconds(layer_size(n), self.threads) * mode.slowdown();
        let values = ValuesPlan { build, mode: &mode, memory_bytes, seconds };
        let companions = FileContent::COMPANIONS
            .iter()
            .copied()
            .filter(|&kind| config.wants_companion(kind))
            .map(|kind| super::registered(kind)?.plan(self, n, &values))
            .collect::<Result<Vec<_>>>()?;
        Ok(LayerPlan {
            layer: n,
            positions: layer_size(n),
            action,
            mode: Some(mode),
            memory_bytes,
            disk_bytes: disk_needed(n),
            scratch_bytes: if build { self.scratch(n, &mode, seconds) } else { 0 },
            seconds_estimate: if build { seconds } else { 0.0 },
            companions,
        })
    }

    /// Positions of layer `n` one rank solves.
    fn share(&self, n: u32) -> u64 {
        if self.ranks > 1 {
            Ownership::new(layer_size(n), self.ranks).per.min(layer_size(n))
        } else {
            layer_size(n)
        }
    }

    /// How layer `n` is solved within the limit, and the memory it needs: in memory when it
    /// fits, else (one process) streamed when its cells fit, else out of core.
    fn mode(&self, n: u32) -> (Mode, u64) {
        let skip = &self.config.skip;
        let needed = if self.ranks > 1 {
            memory_needed_per_rank(n, self.ranks)
        } else {
            // The copy leaves out the layers the build leaves out (below n - 1: a capture's reach).
            let copied = resident_lower(n).saturating_sub(skipped_below(n.saturating_sub(1), skip, layer_size));
            working_memory(n).saturating_add(copied.max(list_bytes(n)))
        };
        if self.limit.map_or(true, |m| needed <= m) {
            return (Mode::InMemory { list_bytes: list_bytes(n) }, needed);
        }
        if self.ranks == 1 {
            if let Some(m) = streamed_memory_needed(n, self.limit) {
                return (Mode::Streamed { list_bytes: m - working_memory(n) }, m);
            }
        }
        let m = self.limit.unwrap_or(0);
        (Mode::OutOfCore { limits: OutOfCoreLimits::for_positions(self.share(n), m) }, m.max(MIN_OUT_OF_CORE_MEMORY))
    }

    /// Bytes of scratch disk building layer `n` in `mode` needs, taking `seconds`.
    fn scratch(&self, n: u32, mode: &Mode, seconds: f64) -> u64 {
        let share = self.share(n);
        // Out of core in parts: a byte per position of state, up to half a byte of a round's
        // buckets (a quarter of a message per position, measured 0.1 at layer 22, one or two
        // bytes a message in sorted blocks) and up to a quarter of the thresholds' seed lists
        // (at most an eighth of the positions, one or two bytes each): 1.17 measured at layer 22.
        let mut scratch = match mode.out_of_core() {
            Some(l) if l.parts > 1 => share + share / 2 + share / 4,
            _ => 0,
        };
        // Messages to other ranks that do not fit their buffers (about as many as a part's).
        if self.ranks > 1 {
            scratch += share / 2;
        }
        // A checkpoint when the layer takes long enough to be worth one: one process keeps the
        // best exits in the layer's partial file, and its checkpoints hold the cells, compressed
        // (two copies while one replaces the other, each about half a byte per position; one
        // uncompressed when the disk is short); a rank's hold its cells and exits. A layer an
        // earlier run left a checkpoint of is resumed from it, whatever its estimate.
        let every = self.config.checkpoint_every.unwrap_or(CHECKPOINT_EVERY).as_secs_f64();
        if seconds > every || checkpoint_left(&self.work_dir.join(format!("layer-{n:02}"))) {
            scratch += if self.ranks > 1 { 2 * share } else { share };
        }
        scratch
    }

    /// The plan of layer `n`'s depths to capture ([`plan_dtc`]), its values rebuilt or not
    /// (`build`) in `mode` within `memory_bytes` and `seconds`. Depths of a layer built in
    /// memory by one process come from its values' propagation: about a quarter of the values'
    /// time more (level by level, and the depths written), and a byte per position and the level
    /// lists (up to about two bytes per position) more than the values' memory.
    pub(super) fn dtc(&self, n: u32, build: bool, mode: &Mode, memory_bytes: u64, seconds: f64) -> Result<CompanionPlan> {
        let (config, ranks) = (self.config, self.ranks);
        // The dtc pass takes 1.0 (layer 19) to 1.5 (layer 24) times an in-memory solve of the
        // layer (measured: docs/performance.md), split between the ranks as the values are.
        let pass_seconds = 1.3 * self.speed.seconds(layer_size(n), self.threads);
        // The layers left out are not mapped.
        let unmapped = skipped_below(n, &config.skip, |m| if ranks > 1 { Ownership::new(layer_size(m), ranks).per } else { layer_size(m) });
        let mut d = plan_dtc(self.dir, n, build, self.limit, pass_seconds, unmapped, ranks)?;
        if build && ranks == 1 && matches!(mode, Mode::InMemory { .. } | Mode::Streamed { .. }) && !config.dtc_pass && !d.scratch {
            d.fused = true;
            d.memory_bytes = memory_bytes.saturating_add(FUSED_DTC_BYTES_PER_POSITION * layer_size(n));
            d.seconds_estimate = FUSED_DTC_TIME * seconds;
        }
        Ok(d)
    }
}

/// What to do with layer `n`'s values: build them when their file is absent or damaged, check
/// them when a file with a valid header is there.
///
/// # Errors
/// A foreign file (another ruleset's or layer's) or an unreadable one at the layer's path.
fn values_action(dir: &DatabaseDir, n: u32) -> Result<LayerAction> {
    Ok(match dir.file_state::<ValuesKind>(n) {
        LayerState::Absent => LayerAction::Build { reason: None },
        LayerState::Unreadable(e) => return Err(e),
        LayerState::Present => match dir.open_layer::<ValuesKind>(n, false) {
            Ok(_) => LayerAction::Check,
            Err(e @ (Error::RulesetMismatch { .. } | Error::LayerMismatch { .. })) => return Err(e),
            Err(e @ Error::Corrupt { .. }) => LayerAction::Build { reason: Some(e.to_string()) },
            Err(e) => return Err(e),
        },
    })
}

/// Bytes of the files the plan writes: the layers, bounds and depths it builds.
fn files_bytes(layers: &[LayerPlan]) -> u64 {
    let builds = |a: &LayerAction| matches!(a, LayerAction::Build { .. });
    layers
        .iter()
        .flat_map(|l| {
            let values = builds(&l.action).then_some(l.disk_bytes);
            values.into_iter().chain(l.companions.iter().filter(|c| builds(&c.action)).map(|c| c.disk_bytes))
        })
        .sum()
}

/// Bytes of scratch disk layer `l`'s files beside the values take when their working state
/// goes to a file (four bytes per position of a rank's share), the largest of them.
fn companion_scratch(l: &LayerPlan, ranks: usize) -> u64 {
    let scratched = l.companions.iter().any(|c| c.scratch && matches!(c.action, LayerAction::Build { .. }));
    if scratched {
        4 * Ownership::new(l.positions, ranks).per.min(l.positions)
    } else {
        0
    }
}

/// What to do with layer `n`'s file of kind `K` beside its values: build it when absent or
/// damaged, or when it follows the values and they are rebuilt (`rebuilt`: why); check it when
/// a file with a valid header is there.
///
/// # Errors
/// As the layers' plan: a foreign or unreadable file at its path; a complete file of another
/// kind there is someone's data, never replaced.
pub(super) fn companion_action<K: crate::storage::Kind>(dir: &DatabaseDir, n: u32, rebuilt: Option<String>) -> Result<LayerAction> {
    if let Err(e) = std::fs::symlink_metadata(dir.path::<K>(n)) {
        if e.kind() == std::io::ErrorKind::NotFound {
            return Ok(LayerAction::Build { reason: None });
        }
    }
    Ok(match dir.open_layer::<K>(n, false) {
        Ok(_) => rebuilt.map_or(LayerAction::Check, |why| LayerAction::Build { reason: Some(why) }),
        Err(e @ Error::Corrupt { damage: crate::error::Damage::WrongContent { .. }, .. }) => return Err(e),
        Err(e @ Error::Corrupt { .. }) => LayerAction::Build { reason: Some(e.to_string()) },
        Err(e) => return Err(e),
    })
}

/// The plan of layer `n`'s forced-capture bounds ([`companion_action`]; they do not follow the
/// values), the bounds of the layers left out (`skip`) not mapped.
///
/// # Errors
/// As [`companion_action`].
pub(super) fn plan_bounds(dir: &DatabaseDir, n: u32, skip: &[u32]) -> Result<CompanionPlan> {
    Ok(CompanionPlan {
        kind: FileContent::Bounds,
        action: companion_action::<BoundsKind>(dir, n, None)?,
        memory_bytes: bounds_memory_needed(n).saturating_sub(skipped_below(n, skip, crate::bounds::payload_len)),
        scratch: false,
        disk_bytes: crate::format::PAYLOAD_OFFSET + crate::bounds::payload_len(n) + 4096,
        seconds_estimate: 0.0,
        fused: false,
    })
}

/// Bytes of memory computing layer `n`'s depths to capture needs: its values and its new dtc
/// file (mapped, one byte per position each), four bytes of working state per position and
/// two level lists (`dtc_working_memory`: 7.6 bytes per position in all), and every smaller
/// layer's values mapped for reading. The peaks measured (awari, layers 16..24) are within
/// 10 % of it; at layer 48 (built `--for 48`, layers 0..=46 below it) it is 11 bytes per
/// position.
///
/// With `ranks` ranks, what one rank needs: the same per position of its share, its
/// slices of the smaller layers (it serves the lookups of its slices only), and its exchange
/// buffers (`share_buffers`). Rank 0 also reads the whole new file and the layer's values once
/// to check them, window by window.
pub(crate) fn dtc_memory_needed(n: u32, ranks: usize) -> u64 {
    let n = n.min(MAX_STONES);
    let (share, lower, buffers) = if ranks <= 1 {
        (layer_size(n), (0..n).map(layer_size).fold(0u64, u64::saturating_add), 0)
    } else {
        let per = |m: u32| Ownership::new(layer_size(m), ranks).per.min(layer_size(m));
        (per(n), (0..n).map(per).fold(0u64, u64::saturating_add), crate::solver::share_buffers(per(n)).2)
    };
    (2 * share).saturating_add(crate::solver::dtc_working_memory(share)).saturating_add(lower).saturating_add(buffers)
}

/// The plan of layer `n`'s depths to capture: computed when absent or damaged, or when the
/// layer's values are rebuilt; checked when a file with a valid header is there.
///
/// # Errors
/// As the layers' plan: a foreign or unreadable file at the dtc path.
/// `unmapped`: bytes of the lower layers the build leaves out (not mapped), per rank of `ranks`.
fn plan_dtc(dir: &DatabaseDir, n: u32, values_rebuilt: bool, limit: Option<u64>, seconds: f64, unmapped: u64, ranks: usize) -> Result<CompanionPlan> {
    let action = companion_action::<DtcKind>(dir, n, values_rebuilt.then(|| format!("layer {n}'s values are rebuilt")))?;
    let memory = dtc_memory_needed(n, ranks).saturating_sub(unmapped);
    let build = matches!(action, LayerAction::Build { .. });
    Ok(CompanionPlan {
        kind: FileContent::Dtc,
        action,
        memory_bytes: memory,
        scratch: limit.is_some_and(|m| memory > m),
        disk_bytes: crate::format::PAYLOAD_OFFSET + crate::dtc::payload_len(n, 0) + 4096,
        seconds_estimate: if build { seconds } else { 0.0 },
        fused: false,
    })
}

/// What recording the depths in the values' propagation adds to a layer's in-memory values
/// build: bytes per position (the depths, one byte, and the level lists), and a share of the
/// values' seconds (measured: docs/performance.md, "Depth to capture").
const FUSED_DTC_BYTES_PER_POSITION: u64 = 3;
const FUSED_DTC_TIME: f64 = 0.25;

/// Bytes that the files a stopped build of the layers `layers` plans to build left behind take
/// (their partial files in `dir`, their work directories in `work`): the build reuses or
/// replaces them, so they count as free. `layers_disk`: for the layers' file system (else the
/// work directory's).
fn reclaimable(layers: &[LayerPlan], dir: &DatabaseDir, work: &Path, same_disk: bool, layers_disk: bool) -> u64 {
    let size = |p: &Path| std::fs::symlink_metadata(p).ok().filter(|m| m.is_file()).map_or(0, |m| m.len());
    let mut total = 0;
    for l in layers.iter().filter(|l| matches!(l.action, LayerAction::Build { .. })) {
        if layers_disk {
            total += size(&crate::storage::partial_path(dir, l.layer));
        }
        if same_disk || !layers_disk {
            let w = work.join(format!("layer-{:02}", l.layer));
            if let Ok(entries) = std::fs::read_dir(&w) {
                total += entries.flatten().map(|e| size(&e.path())).sum::<u64>();
            }
        }
    }
    total
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
        if let Some(l) = plan.to_build().find(|l| l.mode.is_some_and(|mode| mode.out_of_core().is_some()) && m < MIN_OUT_OF_CORE_MEMORY) {
            return Err(Error::OutOfMemory { layer: l.layer, needed: MIN_OUT_OF_CORE_MEMORY, available: m, limit: limit_kind });
        }
        // A file beside the values whose working state cannot go to a scratch file (bounds)
        // is built in memory only.
        let to_build =
            plan.layers.iter().flat_map(|l| l.companions.iter().map(|c| (l.layer, c))).filter(|(_, c)| matches!(c.action, LayerAction::Build { .. }));
        if let Some((n, c)) = to_build.filter(|(_, c)| !c.scratch && !c.fused).find(|(_, c)| c.memory_bytes > m) {
            return Err(Error::OutOfMemory { layer: n, needed: c.memory_bytes, available: m, limit: limit_kind });
        }
    }
    if let Some(free) = plan.disk_free_bytes {
        if plan.disk_needed_bytes > free {
            return Err(Error::DiskSpace { path: plan.dir.clone(), what: files_written(plan), needed: plan.disk_needed_bytes, available: free });
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

/// The files a plan writes, for a message: `layers 13..16, the bounds of layers 0..16 and the
/// depths to capture of layers 0..16` (a plan that writes only depths to capture said "layers
/// none").
fn files_written(plan: &BuildPlan) -> String {
    use crate::units::layers_phrase;
    let builds = |a: &LayerAction| matches!(a, LayerAction::Build { .. });
    let values: Vec<u32> = plan.to_build().map(|l| l.layer).collect();
    let mut parts = Vec::new();
    if !values.is_empty() {
        parts.push(layers_phrase(values));
    }
    for &kind in FileContent::COMPANIONS {
        let built: Vec<u32> = plan.layers.iter().filter(|l| l.companion(kind).is_some_and(|c| builds(&c.action))).map(|l| l.layer).collect();
        if !built.is_empty() {
            parts.push(format!("the {} of {}", kind.what(), layers_phrase(built)));
        }
    }
    match parts.len() {
        0 => "the build's scratch files".to_string(),
        1 => parts.remove(0),
        n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

/// How much slower than in memory the out-of-core builder is expected to be, for estimates.
pub(crate) const OUT_OF_CORE_SLOWDOWN: f64 = 2.0;

/// The work directory of a build: `--work-dir`/RULES, or `.work` in the ruleset's directory.
fn work_dir(config: &BuildConfig, dir: &DatabaseDir) -> PathBuf {
    match &config.work_dir {
        Some(w) => w.join(config.rules.name()),
        None => dir.layers_dir().join(".work"),
    }
}

/// Whether layer work directory `work` holds a checkpoint of one process's build, or of some
/// rank's (`rank-RRRR-of-KKKK/`): anything but a directory at its name (the build discards
/// what is not a checkpoint with a word, as the pipeline does).
///
/// Cost: one directory listing.
pub(super) fn checkpoint_left(work: &Path) -> bool {
    let at = |w: &Path| something_at(&w.join(CHECKPOINT_FILE));
    at(work)
        || std::fs::read_dir(work)
            .is_ok_and(|entries| entries.flatten().any(|e| e.file_name().to_str().is_some_and(|s| s.starts_with("rank-")) && at(&e.path())))
}

#[cfg(test)]
mod tests;
