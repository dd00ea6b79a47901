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

//!
//! | module | what it is |
//! |---|---|
//! | `config` | what to build ([`BuildConfig`]) and the defaults |
//! | `plan` | the plan of a build and its estimates: modes, memory, disk, time ([`plan`]) |
//! | `pipeline` | the one build pipeline, one process or the ranks of a cluster ([`build`], [`build_with`]) |
//! | `bounds` | the forced-capture bounds of each layer, checked or built after its values |
//! | `stats` | statistics of built layers (`layer-NN.json`, `bounds-NN.json`) |
//! | `lock` | the directory's lock for the length of a build |

mod bounds;
mod config;
mod lock;
mod pipeline;
mod plan;
mod stats;

pub use crate::sys::{memory_available, peak_memory};
pub use bounds::bounds_stats;
pub use config::{BuildConfig, CHECKPOINT_EVERY, FIXED_OVERHEAD, MIN_OUT_OF_CORE_MEMORY};
pub use lock::BuildLock;
pub use pipeline::{build, build_with, check_identity};
pub use plan::{
    bounds_memory_needed, check_plan, disk_needed, memory_needed, memory_needed_per_rank, out_of_core_scratch, plan, propose, propose_ranks, BoundsPlan,
    BuildPlan, LayerAction, LayerPlan, Mode, OutOfCoreLimits, Throughput, OUT_OF_CORE_SLOWDOWN, POSITIONS_PER_SECOND_PER_THREAD, RATE_DECAY,
};
pub use stats::{histogram, read_stats, BoundsStats, LayerOutcome, LayerStats, RankFigures};

use crate::progress::Progress;

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
