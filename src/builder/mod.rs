//! The build pipeline: layers 0..N, each solved from the finished smaller ones and written safely.
//!
//! Layers are units of work with explicit dependencies (layer `n` needs itself and every layer
//! `0..=n-2`, as a capture always leads to a layer at least 2 stones smaller:
//! [`crate::rules::layers_needed`]; [`BuildConfig::for_stones`] builds only those). Before any work, [`plan`] looks at the whole
//! request (which layers are complete, which must be built, the memory each needs, the disk the
//! new files need, a rough time) and refuses at once what cannot be done, naming the first layer
//! that does not fit; a file of another ruleset or layer in the way is never replaced.
//!
//! A build resumes from the finished layers: each existing layer file is checked (header and
//! payload checksum) before it is trusted, and anything missing or damaged is rebuilt. A layer is
//! solved into a preallocated temporary file, spot-checked against its children with the
//! verifier's independent re-derivation, then renamed into place, so killing the build loses at
//! most the layer in progress. With [`BuildConfig::companions`], each layer's files of those kinds
//! (forced-capture bounds, [`crate::bounds`]; depths to capture) follow its values the same way: planned, checked or built in memory,
//! checked against the values and spot-checked, written atomically, resumed. The algorithm itself
//! lives in `crate::solver`.

//!
//! | module | what it is |
//! |---|---|
//! | `config` | what to build ([`BuildConfig`]) and the defaults |
//! | `plan` | the plan of a build and its estimates: modes, memory, disk, time ([`plan`]) |
//! | `pipeline` | the one build pipeline, one process or the ranks of a cluster ([`build`] and its [`BuildReport`], `build_with`) |
//! | `companion` | the files beside each layer's values, planned, checked or built after them the same way whatever their kind (the registry, `registered`, is here in `mod.rs`) |
//! | `bounds` | the forced-capture bounds of each layer: how they are computed and checked |
//! | `dtc` | the depths to capture of each layer: how they are computed and checked |
//! | `moves` | the tests' own kind (each position's number of moves): how it is built, in its one file |
//! | `runs` | a layer's time over the runs that built it (stopped and resumed), kept beside its checkpoint |
//! | `stats` | statistics of built layers (`layer-NN.json`, `bounds-NN.json`, `dtc-NN.json`) |
//! | `lock` | the directory's lock for the length of a build |
//! | `floors` | a layer's floors by the exits pass alone, in the mode the memory limit allows ([`layer_floors`], [`floors_mode`]), for `oware pack` |

mod bounds;
mod companion;
mod config;
mod dtc;
mod floors;
mod lock;
#[cfg(test)]
mod moves;
mod pipeline;
mod plan;
mod runs;
mod stats;

pub use bounds::bounds_stats;
pub use config::BuildConfig;
pub use dtc::dtc_stats;
pub use floors::{floors_mode, layer_floors, least_pack_memory};
pub use lock::BuildLock;
#[cfg(any(test, feature = "mpi"))]
pub(crate) use pipeline::build_with;
pub use pipeline::{build, BuildReport};
pub use plan::{check_plan, plan, propose, propose_ranks, BuildPlan, CompanionPlan, LayerAction, LayerPlan, Mode, OutOfCoreLimits, Throughput};
pub use stats::{histogram, read_stats, BoundsStats, CompanionStats, DtcStats, EntryStats, LayerOutcome, LayerStats, RankFigures};

use crate::error::FileContent;
use crate::progress::Progress;

/// The builder's registry of the kinds beside the values: each kind's pass, the one place that
/// names the kinds' builds (a kind added is its module above and its line here); the plan, the
/// configuration's check and the pipeline reach every kind through it. [`Error::Internal`](crate::Error::Internal)
/// for a kind it does not hold.
fn registered(kind: FileContent) -> crate::error::Result<&'static dyn companion::Companion> {
    use crate::storage::{BoundsKind, DtcKind};
    use companion::Registered;
    Ok(match kind {
        FileContent::Bounds => &Registered::<BoundsKind>::ENTRY,
        FileContent::Dtc => &Registered::<DtcKind>::ENTRY,
        #[cfg(test)]
        FileContent::Moves => &Registered::<crate::verify::moves::MovesKind>::ENTRY,
        _ => return Err(crate::Error::Internal(format!("no build of the {} is registered", kind.what()))),
    })
}

/// Receives what a build does, for display; its [`Progress::cancelled`] stops the build.
pub trait BuildObserver: Progress {
    /// The plan of the whole build, before any work.
    fn planned(&self, _plan: &BuildPlan) {}
    /// Layer `n` is about to be solved; it is worth `units` work units (what its progress will advance by).
    fn layer_started(&self, _n: u32, _units: u64) {}
    /// Layer `n` is complete (built or skipped).
    fn layer_done(&self, _stats: &LayerStats, _outcome: &LayerOutcome) {}
    /// Something the user should know (a damaged file replaced, ...).
    fn message(&self, _msg: &str) {}
    /// Layer `n`'s file of kind `kind` (its forced-capture bounds, its depths to capture) is
    /// about to be built; worth `units` work units.
    fn companion_started(&self, _kind: FileContent, _n: u32, _units: u64) {}
    /// A layer's file beside its values is complete (built or skipped): its statistics, which
    /// say its kind and layer.
    fn companion_done(&self, _stats: CompanionStats<'_>, _outcome: &LayerOutcome) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl Progress for Silent {}
impl BuildObserver for Silent {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Ruleset;
    use std::sync::Mutex;

    /// An observer that asks for the figures of [`Progress::trace`] and keeps them.
    #[derive(Default)]
    struct Tracing(Mutex<Vec<String>>);
    impl Progress for Tracing {
        fn tracing(&self) -> bool {
            true
        }
        fn trace(&self, line: &str) {
            self.0.lock().unwrap().push(line.to_string());
        }
    }
    impl BuildObserver for Tracing {}

    /// Issue 67, item 11: the level census and the phases' figures are options of the build and
    /// of its observer, not environment variables the library reads (`OWARE_LEVELS`,
    /// `OWARE_TRACE` are the program's); the levels give the same bytes.
    #[test]
    fn the_level_census_and_the_trace_are_options() {
        let (plain, census) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let config = |dir: &std::path::Path, levels: bool| BuildConfig { rules: Ruleset::Awari, max_stones: 9, dir: dir.into(), levels, ..Default::default() };
        build(&config(plain.path(), false), &Silent).unwrap();
        let traced = Tracing::default();
        build(&config(census.path(), true), &traced).unwrap();
        let lines = traced.0.into_inner().unwrap();
        assert!(lines.iter().any(|l| l.contains("layer 9 threshold 1 levels (positions/updates): ")), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("layer 9 exits: ")), "{lines:?}");
        for n in 0..=9 {
            let name = format!("awari/layer-{n:02}.owdb");
            assert_eq!(std::fs::read(plain.path().join(&name)).unwrap(), std::fs::read(census.path().join(&name)).unwrap(), "{name}");
        }
        // The free disk space the plan sees, capped.
        let empty = tempfile::tempdir().unwrap();
        let capped = BuildConfig { disk_free_cap: Some(1_000), ..config(empty.path(), false) };
        let plan = propose(&capped, 1).unwrap();
        assert_eq!((plan.disk_free_bytes, plan.work_disk_free_bytes), (Some(1_000), Some(1_000)));
    }
}
