//! The files beside each layer's values in the build, whatever their kind (forced-capture
//! bounds, depths to capture): each is planned, checked or built after the layer's values the
//! same way ([`companion_layer`]), what differs being the kind's [`CompanionPass`] (its plan,
//! its statistics, how its file is computed, checked and spot-checked). The pipeline and the
//! plan reach every kind through the registry (`super::registered`), one [`Companion`]
//! each, and carry a kind's files from layer to layer in its [`Chain`].

use std::marker::PhantomData;
use std::path::Path;
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::plan::{CompanionPlan, LayerAction, Planner, ValuesPlan};
use super::stats::{restore_json, write_json, CompanionStats, LayerOutcome};
use super::BuildObserver;
use crate::error::{Error, Result};
use crate::rules::Ruleset;
use crate::solver::cluster::{Cluster, Solo};
use crate::solver::FusedDepths;
use crate::storage::{DatabaseDir, Kind, Layer};

/// What computing layer `n`'s file of kind `K` reads besides its values.
pub(super) struct Inputs<'a, K: Kind> {
    /// `lower[m]`: layer `m`'s values, `None` for a layer the build leaves out (layer `n - 1`
    /// at most: never read).
    pub(super) lower: &'a [Option<Layer>],
    /// `own[m]`: layer `m`'s file of kind `K` for a [chained](Kind::CHAINED) kind (`None` for a
    /// layer left out); empty for the others.
    pub(super) own: &'a [Option<Layer<K>>],
    /// The layer's work directory, where working state goes when the plan says so.
    pub(super) work: &'a Path,
    /// The file's plan ([`CompanionPlan::scratch`]: working state in a scratch file).
    pub(super) plan: &'a CompanionPlan,
    /// The ranks computing the file together (one, `Solo`, in a build of one process and for a
    /// kind not [distributed](CompanionPass::DISTRIBUTED)).
    pub(super) cluster: &'a dyn Cluster,
    /// The depths to capture the layer's values' propagation recorded, complete (one process).
    pub(super) fused: Option<&'a FusedDepths>,
}

impl<K: Kind> Clone for Inputs<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Kind> Copy for Inputs<'_, K> {}

/// How the build makes one kind of file beside a layer's values ([`crate::storage::BoundsKind`],
/// [`crate::storage::DtcKind`]).
pub(super) trait CompanionPass: Kind {
    /// The statistics of a layer's file, also stored beside it (`bounds-NN.json`,
    /// `dtc-NN.json`).
    type Stats: Serialize + DeserializeOwned;
    /// Whether the ranks of a distributed build compute its files together (each its share);
    /// a kind that is not is refused with several ranks ([`crate::BuildConfig::validate`]).
    const DISTRIBUTED: bool;

    /// The plan of layer `n`'s file, from the planner and the plan of the layer's `values`:
    /// what to do with it (mostly [`companion_action`](super::plan::companion_action)), its
    /// memory, disk and time.
    ///
    /// # Errors
    /// As [`companion_action`](super::plan::companion_action).
    fn plan(planner: &Planner<'_>, n: u32, values: &ValuesPlan<'_>) -> Result<CompanionPlan>;

    /// The statistics of layer `n`'s finished `file` beside its `values`, checking every entry
    /// against its value.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the first entry that is no valid entry or contradicts its
    /// value.
    fn stats(rules: Ruleset, n: u32, values: &Layer, file: &Layer<Self>) -> Result<Self::Stats>;

    /// Whether the statistics stored beside a file (`stored`) agree with those counted from it.
    fn agrees(stored: &Self::Stats, counted: &Self::Stats) -> bool;

    /// The statistics as the observer is told of them.
    fn observed(stats: &Self::Stats) -> CompanionStats<'_>;

    /// What computing layer `n`'s file (this rank's share of it) is worth in work units (what
    /// its progress advances by).
    fn work_units(n: u32, inputs: Inputs<'_, Self>) -> u64;

    /// Computes layer `n`'s file from its `values` and `inputs` into a temporary file, checks it
    /// against the values on every position and with [`spot_check`](Self::spot_check), and
    /// renames it into place. Returns its statistics (time and memory included) and the seconds
    /// it took since `start`; `None` on a rank other than 0 of a distributed build (which
    /// computes and writes its share; rank 0 checks and publishes the file).
    ///
    /// # Errors
    /// [`Error::BoundsCheck`] or [`Error::Internal`] when the new file fails a check (nothing is
    /// published); [`Error::Interrupted`]; [`Error::OutOfMemory`]; [`Error::Io`] when a file
    /// cannot be written.
    fn build(
        dir: &DatabaseDir,
        n: u32,
        values: &Layer,
        inputs: Inputs<'_, Self>,
        observer: &dyn BuildObserver,
        start: Instant,
    ) -> Result<Option<(Self::Stats, f64)>>;

    /// Re-derives the entries of a spread of positions of layer `n`'s new `payload` from their
    /// moves with the verifier's independent derivation, before the file is published.
    ///
    /// # Errors
    /// As [`build`](Self::build) for a failed check, naming the first position that fails.
    fn spot_check(rules: Ruleset, n: u32, values: &[i8], payload: &[u8], inputs: Inputs<'_, Self>) -> Result<()>;
}

/// A finished file and its statistics, or why it must be rebuilt.
type Checked<K> = std::result::Result<(Layer<K>, <K as CompanionPass>::Stats), String>;

/// Checks layer `n`'s finished file of kind `K`: header, payload checksum, and every entry
/// against its value; the file and its statistics, or why it must be rebuilt.
///
/// Cost: one sequential pass over the file, one parallel pass over it and the values.
///
/// # Errors
/// Those of [`DatabaseDir::open_layer`] other than damage (a foreign or unreadable file).
fn check<K: CompanionPass>(dir: &DatabaseDir, n: u32, values: &Layer) -> Result<Checked<K>> {
    let file = match dir.open_layer::<K>(n, true) {
        Ok(file) => file,
        Err(e @ Error::Corrupt { .. }) => return Ok(Err(e.to_string())),
        Err(e) => return Err(e),
    };
    match K::stats(dir.rules(), n, values, &file) {
        Ok(stats) => Ok(Ok((file, stats))),
        Err(e) => Ok(Err(e.to_string())),
    }
}

/// Makes layer `n`'s file of kind `K` complete as `action` (its plan) says: checks the file
/// there, or computes it ([`CompanionPass::build`]), then writes its statistics
/// (`bounds-NN.json`, `dtc-NN.json`; restored beside a checked file when missing or wrong). The
/// observer is told of each file started and done. Returns the finished file when the larger
/// layers' builds read it ([`chained`](crate::storage::Kind::CHAINED) kinds) or when the
/// check opened it.
///
/// Every rank of `cluster` calls it at once: rank 0 checks a finished file and the others take
/// its word; every rank takes part in a build (kinds whose build is not distributed are built
/// by one process only).
///
/// # Errors
/// Those of [`CompanionPass::build`]; those of [`DatabaseDir::open_layer`] other than
/// damage (a foreign or unreadable file); [`Error::Io`] when the statistics cannot be written;
/// [`Error::Cluster`].
pub(super) fn companion_layer<K: CompanionPass>(
    dir: &DatabaseDir,
    n: u32,
    action: &LayerAction,
    values: &Layer,
    inputs: Inputs<'_, K>,
    observer: &dyn BuildObserver,
    cluster: &dyn Cluster,
) -> Result<Option<Layer<K>>> {
    let stats_path = dir.stats_path::<K>(n);
    let replaced = match action {
        LayerAction::Build { reason } => reason.clone(),
        LayerAction::Skip { .. } => return Ok(None),
        LayerAction::Check => {
            let checked = if cluster.rank() == 0 { Some(check::<K>(dir, n, values)?) } else { None };
            let intact = cluster.broadcast(&[u8::from(matches!(checked, Some(Ok(_))))])?.first() == Some(&1);
            match checked {
                Some(Ok((file, stats))) => {
                    restore_json(&stats_path, &stats, |s: &K::Stats| K::agrees(s, &stats), observer)?;
                    observer.companion_done(K::observed(&stats), &LayerOutcome::Skipped);
                    return Ok(Some(file));
                }
                _ if intact => return Ok(None),
                Some(Err(why)) => Some(why),
                None => None,
            }
        }
    };
    if let Some(why) = &replaced {
        observer.message(&format!("{why}; rebuilding the {} of layer {n}", K::CONTENT.what()));
    }
    observer.companion_started(K::CONTENT, n, K::work_units(n, inputs));
    let Some((stats, seconds)) = K::build(dir, n, values, inputs, observer, Instant::now())? else { return Ok(None) };
    write_json(&stats_path, &stats)?;
    observer.companion_done(K::observed(&stats), &LayerOutcome::Built { seconds, replaced });
    if K::CHAINED {
        dir.open_layer(n, false).map(Some)
    } else {
        Ok(None)
    }
}

/// The values of the lower layers, an empty slice for a layer left out (which the solver and
/// the spot check never read: no move of the layer built reaches it).
pub(super) fn values_of(lower: &[Option<Layer>]) -> Vec<&[i8]> {
    lower.iter().map(|l| l.as_ref().map_or(&[][..], |l| l.values())).collect()
}

/// A kind beside the values as the build's registry holds it: its [`CompanionPass`] behind a
/// seam the plan and the pipeline call without naming the kind.
pub(super) trait Companion: Sync {
    /// Whether the ranks of a distributed build compute its files together.
    fn distributed(&self) -> bool;
    /// The plan of layer `n`'s file ([`CompanionPass::plan`]).
    ///
    /// # Errors
    /// As [`CompanionPass::plan`].
    fn plan(&self, planner: &Planner<'_>, n: u32, values: &ValuesPlan<'_>) -> Result<CompanionPlan>;
    /// A new chain, to carry the kind's files through a build from layer 0.
    fn chain(&self) -> Box<dyn Chain>;
}

/// The registry's entry of kind `K`.
pub(super) struct Registered<K>(PhantomData<fn() -> K>);

impl<K> Registered<K> {
    /// The entry.
    pub(super) const ENTRY: Registered<K> = Registered(PhantomData);
}

impl<K: CompanionPass> Companion for Registered<K> {
    fn distributed(&self) -> bool {
        K::DISTRIBUTED
    }

    fn plan(&self, planner: &Planner<'_>, n: u32, values: &ValuesPlan<'_>) -> Result<CompanionPlan> {
        K::plan(planner, n, values)
    }

    fn chain(&self) -> Box<dyn Chain> {
        Box::new(Chained::<K> { own: Vec::new() })
    }
}

/// What every kind's file of a layer reads from the pipeline besides its plan.
pub(super) struct LayerInputs<'a> {
    /// The database directory.
    pub(super) dir: &'a DatabaseDir,
    /// The layer.
    pub(super) n: u32,
    /// Its finished values.
    pub(super) values: &'a Layer,
    /// `lower[m]`: layer `m`'s values, `m < n` (`None` for a layer left out).
    pub(super) lower: &'a [Option<Layer>],
    /// The layer's work directory.
    pub(super) work: &'a Path,
    /// The depths to capture the layer's values' propagation recorded, complete.
    pub(super) fused: Option<&'a FusedDepths>,
}

/// One kind's files through a build, layer by layer, in order: each layer's planned, checked or
/// built ([`companion_layer`]), the finished files of a chained kind kept for the larger
/// layers' builds.
pub(super) trait Chain {
    /// The next layer is left out of the build (or the kind is not planned for it).
    fn skip(&mut self);

    /// Makes the next layer's file complete as `plan` says; every rank of `cluster` calls it
    /// at once, and none goes on before the file is in place.
    ///
    /// # Errors
    /// Those of [`companion_layer`]; [`Error::Interrupted`] when the observer cancels.
    fn layer(&mut self, inputs: &LayerInputs<'_>, plan: &CompanionPlan, observer: &dyn BuildObserver, cluster: &dyn Cluster) -> Result<()>;
}

/// The chain of kind `K`: the files of the layers so far (kept for a chained kind only).
struct Chained<K: Kind> {
    own: Vec<Option<Layer<K>>>,
}

impl<K: CompanionPass> Chain for Chained<K> {
    fn skip(&mut self) {
        if K::CHAINED {
            self.own.push(None);
        }
    }

    fn layer(&mut self, l: &LayerInputs<'_>, plan: &CompanionPlan, observer: &dyn BuildObserver, cluster: &dyn Cluster) -> Result<()> {
        // A kind not distributed is built by one process (refused with several ranks).
        let cluster: &dyn Cluster = if K::DISTRIBUTED { cluster } else { &Solo };
        if cluster.any(observer.cancelled())? {
            return Err(Error::Interrupted);
        }
        let inputs = Inputs { lower: l.lower, own: &self.own, work: l.work, plan, cluster, fused: l.fused };
        let file = companion_layer::<K>(l.dir, l.n, &plan.action, l.values, inputs, observer, cluster)?;
        if K::CHAINED {
            self.own.push(file);
        }
        // The file is in place before any rank goes on.
        cluster.barrier()
    }
}
