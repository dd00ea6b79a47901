//! What to build, and the build's defaults.

use std::path::PathBuf;

use crate::error::{Error, FileContent, Result};
use crate::index::MAX_STONES;
use crate::rules::Ruleset;

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
    /// Least time between two checkpoints inside a layer (`None`: `CHECKPOINT_EVERY`).
    pub checkpoint_every: Option<std::time::Duration>,
    /// The kinds of file to build beside every layer's values, in any order (the build takes
    /// them in the order of their kinds): [`FileContent::Bounds`], the forced-capture bounds
    /// ([`crate::bounds`]); [`FileContent::Dtc`], the depths to capture (`docs/dtc.md`).
    /// Empty: values only. [`FileContent::Values`] here means nothing more.
    pub companions: Vec<FileContent>,
    /// Compute the depths to capture by their own pass after each layer's values, also where
    /// the values' propagation would record them (layers built in memory by one process; see
    /// [`CompanionPlan::fused`](super::CompanionPlan::fused)): the files are the same bytes, the build
    /// about twice as long. For comparisons (the program sets it from `OWARE_DTC_PASS=1`).
    pub dtc_pass: bool,
    /// Propagate every layer built in memory by one process level by level (the same bytes):
    /// the level census of `scripts/bench-levels`, whose figures the observer's
    /// [`trace`](crate::progress::Progress::trace) receives (the program sets it from
    /// `OWARE_LEVELS=1`).
    pub levels: bool,
    /// Take the free disk space as at most this many bytes (`None`: as the system reports it),
    /// for tests of the plan's disk checks (the program sets it from
    /// `OWARE_SIMULATE_DISK_FREE`).
    pub disk_free_cap: Option<u64>,
    /// The running program's identity, which every rank of a distributed build must share (the
    /// program passes a hash of its executable under `mpirun`); 0: none, not compared.
    pub program_id: u64,
    /// Layers of `0..=max_stones` left out because no layer built needs them (empty: build them
    /// all). A layer `m` may be left out only when no layer built is `m + 2` or more (a layer
    /// needs `0..=n-2` and itself, [`crate::rules::layers_needed`]), so in practice only
    /// `max_stones - 1`: see [`for_stones`](Self::for_stones). The plan shows them as skipped
    /// ([`LayerAction::Skip`](super::LayerAction::Skip)), the build neither reads nor writes
    /// them, and a later build without them fills the gap.
    pub skip: Vec<u32>,
}

impl BuildConfig {
    /// This configuration narrowed to the layers a position of `stones` stones needs
    /// ([`crate::rules::layers_needed`]): `max_stones` becomes `stones` and `skip` the layer
    /// below it (none for 0 or 1 stones). For `stones` above 48 the plan refuses it.
    ///
    /// Cost: none.
    pub fn for_stones(self, stones: u32) -> BuildConfig {
        BuildConfig { max_stones: stones, skip: crate::rules::layer_not_needed(stones).into_iter().collect(), ..self }
    }

    /// Whether layer `n` is one this configuration builds (or checks): in `0..=max_stones` and
    /// not in `skip`.
    pub fn wants(&self, n: u32) -> bool {
        n <= self.max_stones && !self.skip.contains(&n)
    }

    /// Whether every layer's file of kind `kind` is built beside its values.
    pub fn wants_companion(&self, kind: FileContent) -> bool {
        kind != FileContent::Values && self.companions.contains(&kind)
    }

    /// Checks the configuration, once, before any plan or work: at most 48 stones; every layer
    /// left out (`skip`) one of `0..=max_stones` that no layer of the build needs (layer `n`
    /// needs `0..=n-2`); and, for a build by `ranks` ranks, no forced-capture bounds (built by
    /// one process only).
    ///
    /// Cost: none.
    ///
    /// # Errors
    /// [`Error::Usage`] naming what cannot be done and why.
    pub fn validate(&self, ranks: usize) -> Result<()> {
        if self.max_stones > MAX_STONES {
            return Err(Error::Usage(format!("max_stones is at most {MAX_STONES}, not {}", self.max_stones)));
        }
        for &m in &self.skip {
            if m > self.max_stones {
                return Err(Error::Usage(format!("layer {m} cannot be left out of a build of layers 0..={}: it is not one of them", self.max_stones)));
            }
            if let Some(n) = (m + crate::rules::MIN_CAPTURE..=self.max_stones).find(|&n| self.wants(n)) {
                return Err(Error::Usage(format!("layer {m} cannot be left out: layer {n} needs it (a layer needs every layer at least 2 stones smaller)")));
            }
        }
        if ranks > 1 {
            for &kind in &self.companions {
                if !super::registered(kind)?.distributed() {
                    return Err(Error::Usage(format!("{} are built by one process, not by {ranks} ranks", kind.not_built())));
                }
            }
        }
        Ok(())
    }
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
            companions: Vec::new(),
            dtc_pass: false,
            levels: false,
            disk_free_cap: None,
            program_id: 0,
            skip: Vec::new(),
        }
    }
}

/// Default least time between two checkpoints inside a layer: a crash loses at most this much
/// work (plus the phase in progress). Layers expected to take less are not checkpointed.
pub(crate) const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(180);

/// Memory an out-of-core layer needs at least (below it, parts would be smaller than a chunk).
pub(crate) const MIN_OUT_OF_CORE_MEMORY: u64 = 4 << 20;

pub(crate) use crate::sys::FIXED_OVERHEAD;

/// Positions spot-checked against their children before a new layer is renamed into place.
pub(super) const SPOT_CHECKS: u64 = 20_000;
