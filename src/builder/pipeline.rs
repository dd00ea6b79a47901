//! The one build pipeline: layers in order, each checked and kept or solved (in one process or
//! by the ranks of a cluster, in memory or out of core), spot-checked and published atomically,
//! with its bounds after it when asked.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::companion::{values_of, LayerInputs};
use super::config::SPOT_CHECKS;
use super::config::{BuildConfig, CHECKPOINT_EVERY};
use super::lock::BuildLock;
use super::plan::{check_plan, propose_ranks, LayerAction, LayerPlan, Mode};
use super::registered;
use super::runs::RunClock;
use super::stats::{count_released, rank_figures, read_stats, restore_stats, stats_out_of_range, write_json, LayerOutcome, LayerStats, RankFigures};
use super::BuildObserver;
use crate::error::{ClusterError, Error, FileContent, Result};
use crate::index::{layer_size, unrank_unchecked};
use crate::rules::Ruleset;
use crate::solver::cluster::{Cluster, Metered, Ownership, Solo};
use crate::solver::spill::{Checkpoint, CHECKPOINT_FILE};
use crate::solver::{share_buffers, solve_layer_with, solve_share, FusedDepths, Share, SolveOptions, WorkModel};
use crate::storage::{DatabaseDir, Layer, LayerWriter, ValuesKind};
use crate::sys::peak_memory;
use crate::verify::derive_value;

/// Builds (or completes) layers `0..=config.max_stones` but those of `config.skip` (left out:
/// neither read nor written), skipping intact layers, after
/// `plan`ning the whole request (the plan is given to [`BuildObserver::planned`]).
///
/// Runs on the current rayon thread pool. Returns the statistics of every layer and the
/// process's peak memory ([`BuildReport`]). A missing or unreadable `layer-NN.json` beside an
/// intact layer is written again.
///
/// # Errors
/// Those of `plan`, before anything is written; [`Error::Io`] when files cannot be written (a
/// full disk included) or another build holds the directory's lock; [`Error::SpotCheck`] when a
/// freshly built layer fails its spot check (it is then not renamed into place);
/// [`Error::OutOfMemory`] when the system refuses the working memory; [`Error::Interrupted`]
/// when the observer reports cancellation (the layer in progress is discarded, the finished
/// ones stay).
pub fn build(config: &BuildConfig, observer: &dyn BuildObserver) -> Result<BuildReport> {
    build_with(config, observer, &Solo).map(BuildReport::ended)
}

/// What a build returns ([`build`]; `MpiCluster::build` on each rank).
#[derive(Clone, Debug, PartialEq)]
pub struct BuildReport {
    /// The statistics of every layer of the plan but those left out, in order: the layers built
    /// (`seconds` set) and the layers found complete (their `layer-NN.json`). On the ranks of a
    /// cluster but rank 0, none.
    pub layers: Vec<LayerStats>,
    /// Peak resident memory of this process when the build ended (`VmHWM` of
    /// `/proc/self/status`), if known: the build's peak, unless the process used more before it.
    pub peak_memory_bytes: Option<u64>,
}

impl BuildReport {
    /// The report of a build that has just ended with `layers`' statistics.
    pub(crate) fn ended(layers: Vec<LayerStats>) -> BuildReport {
        BuildReport { layers, peak_memory_bytes: peak_memory() }
    }
}

/// Hashes of what must be the same on every rank: the running program
/// ([`BuildConfig::program_id`]), and the build's options (ruleset, layers, directories,
/// limits).
fn identity(config: &BuildConfig) -> (u64, u64) {
    let binary = config.program_id;
    let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let options = format!(
        "{} {} {:?} {:?} {:?} {:?} {:?} {}",
        config.rules.name(),
        config.max_stones,
        config.skip,
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
pub(crate) fn check_identity(config: &BuildConfig, cluster: &dyn Cluster) -> Result<()> {
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
pub(crate) fn build_with(config: &BuildConfig, observer: &dyn BuildObserver, cluster: &dyn Cluster) -> Result<Vec<LayerStats>> {
    let (ranks, me) = (cluster.size(), cluster.rank());
    if ranks > 1 {
        check_identity(config, cluster)?;
    }
    config.validate(ranks)?;
    let dir = DatabaseDir::native(&config.dir, config.rules)?;
    // Lock, then clean up, then plan: temporaries a killed build left take disk space the plan
    // counts, and no other build can change the files between the plan and the work.
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
    // `lower[m]`: layer m, `None` for a layer left out (`config.skip`; no layer built reads it).
    let mut lower: Vec<Option<Layer>> = Vec::new();
    // Each kind beside the values the build wants, in the order of their kinds, carried from
    // layer to layer.
    let mut chains = Vec::new();
    for &kind in FileContent::COMPANIONS.iter().filter(|&&k| config.wants_companion(k)) {
        chains.push((kind, registered(kind)?.chain()));
    }
    let mut all = Vec::new();
    for lp in &the_plan.layers {
        let n = lp.layer;
        if cluster.any(observer.cancelled())? {
            return Err(Error::Interrupted);
        }
        if let LayerAction::Skip { .. } = &lp.action {
            // The plan given to the observer shows it.
            lower.push(None);
            chains.iter_mut().for_each(|(_, c)| c.skip());
            continue;
        }
        // Depths to capture built with the layer's values in memory are recorded by the values'
        // own propagation (`FusedDepths`); otherwise (out of core, several ranks, values kept,
        // a resumed layer) by their own pass below.
        let mut fused = None;
        'values: {
            let mut replaced = None;
            if agreed.get(n as usize) == Some(&0) {
                // Rank 0 checks the layer; the others trust its word.
                let mut intact = None;
                if me == 0 {
                    match check_layer(&dir, n)? {
                        Ok(checked) => intact = Some(checked),
                        Err(why) => replaced = Some(why),
                    }
                }
                if cluster.broadcast(&[u8::from(intact.is_some())])?.first() == Some(&1) {
                    match intact {
                        Some((layer, stats)) => {
                            restore_stats(&dir, &stats, observer)?;
                            observer.layer_done(&stats, &LayerOutcome::Skipped);
                            all.push(stats);
                            lower.push(Some(layer));
                        }
                        None => lower.push(Some(dir.open_layer::<ValuesKind>(n, false)?)),
                    }
                    break 'values;
                }
            } else if let LayerAction::Build { reason } = &lp.action {
                replaced = reason.clone();
            }
            if let Some(why) = &replaced {
                observer.message(&format!("{why}; rebuilding layer {n}"));
            }
            let work = the_plan.work_dir.join(format!("layer-{n:02}"));
            let every = config.checkpoint_every.unwrap_or(CHECKPOINT_EVERY);
            fused = lp.companion(FileContent::Dtc).filter(|d| d.fused).and_then(|_| FusedDepths::new(n).ok());
            if let Some(stats) = build_layer(&dir, lp, &work, every, config.levels, &lower, replaced, observer, cluster, fused.as_ref())? {
                all.push(stats);
            }
            lower.push(Some(dir.open_layer::<ValuesKind>(n, false)?));
        }
        let Some(this) = lower[n as usize].as_ref() else { return Err(Error::Internal(format!("layer {n} is neither built nor left out"))) };
        // The files beside the values are computed from the finished values (the same bytes
        // whatever mode built them): each kind's plan says how, each rank its share of a kind
        // built by several.
        let work = the_plan.work_dir.join(format!("layer-{n:02}"));
        let fused = fused.as_ref().filter(|f| f.complete());
        let inputs = LayerInputs { dir: &dir, n, values: this, lower: &lower[..n as usize], work: &work, fused };
        for (kind, chain) in &mut chains {
            match lp.companion(*kind) {
                Some(plan) => chain.layer(&inputs, plan, observer, cluster)?,
                None => chain.skip(),
            }
        }
    }
    Ok(all)
}

/// Builds layer `lp.layer`, or this rank's share of it, in the mode the plan chose, with
/// checkpoints in `work` (created for the layer, removed when it is done) when it is expected
/// to outlast `every`, level by level with `levels` ([`BuildConfig::levels`]); rank 0 then
/// publishes it ([`publish`]) and returns its statistics.
///
/// One process works in `work` itself, and only when it needs scratch files; each rank of a
/// cluster has its own `work/rank-RRRR-of-KKKK`.
///
/// # Errors
/// Those of the solver and of [`publish`]; [`Error::Io`] when the work directory or the
/// temporary file cannot be created.
#[allow(clippy::too_many_arguments)]
fn build_layer(
    dir: &DatabaseDir,
    lp: &LayerPlan,
    work: &Path,
    every: std::time::Duration,
    levels: bool,
    lower: &[Option<Layer>],
    replaced: Option<String>,
    observer: &dyn BuildObserver,
    cluster: &dyn Cluster,
    depths: Option<&FusedDepths>,
) -> Result<Option<LayerStats>> {
    let rules = dir.rules();
    let n = lp.layer;
    let Some(mode) = lp.mode else { return Err(Error::Internal(format!("layer {n} is to be built but has no mode"))) };
    let (ranks, me) = (cluster.size(), cluster.rank());
    let own = Ownership::new(layer_size(n), ranks).range(me);
    let len = own.end - own.start;
    // Progress is weighted by what layer n - 2 (same parity of values) resolved at each value.
    let model = match n.checked_sub(2).and_then(|m| read_stats(dir.base(), rules, m)) {
        Some(s) => WorkModel::from_counts(n, &s.values),
        None => WorkModel::new(n, None),
    };
    observer.layer_started(n, model.solve(len) + if me == 0 { model.check() } else { 0 });
    crate::sys::trim_heap();
    let anonymous = crate::sys::AnonymousPeak::start();
    let mine = if ranks > 1 { work.join(format!("rank-{me:04}-of-{ranks:04}")) } else { work.to_path_buf() };
    // A layer an earlier run left a checkpoint of is resumed from it whatever the estimate says
    // (it follows the layers below, whose recorded speed may be off); every rank decides alike.
    // Anything but a directory at the checkpoint's name counts: what is not a checkpoint is
    // then discarded with a word (a FIFO too: "not a regular file"), never passed over in
    // silence.
    let left = crate::solver::spill::something_at(&mine.join(CHECKPOINT_FILE));
    let checkpointed = lp.seconds_estimate > every.as_secs_f64() || cluster.any(left)?;
    let scratch = ranks > 1 || mode.out_of_core().is_some() || checkpointed;
    if scratch {
        crate::sys::create_work_dir(&mine)?;
        for stale in crate::solver::spill::remove_stale(&mine)? {
            observer.message(&format!("removed {}, left by an interrupted build", stale.display()));
        }
        let _ = std::fs::remove_dir_all(mine.join("outbox"));
    }
    // The layer's time over every run that works on it, kept beside its checkpoint.
    let clock = RunClock::start(scratch.then_some(mine.as_path()))?;
    // Rank 0 creates the temporary; with several ranks every rank maps its share of it.
    // One process whose layer is checkpointed writes into the layer's partial file, which
    // outlives it: its checkpoints then hold the cells, not the best exits parked in the output.
    let exits_kept = checkpointed && ranks == 1;
    let mut writer = match (me, exits_kept) {
        (0, true) => Some(LayerWriter::create_partial(dir, n)?.0),
        (0, false) => Some(LayerWriter::create::<ValuesKind>(dir, n, layer_size(n))?),
        _ => None,
    };
    let mut share_file = if ranks > 1 {
        use std::os::unix::ffi::OsStrExt;
        let name = writer.as_ref().map(|w| w.tmp_path().as_os_str().as_bytes().to_vec()).unwrap_or_default();
        let tmp = PathBuf::from(std::ffi::OsStr::from_bytes(&cluster.broadcast(&name)?));
        Some(crate::storage::ShareWriter::open(&tmp, n, layer_size(n), own.clone())?)
    } else {
        None
    };
    let checkpoint = Checkpoint::new(mine.join(CHECKPOINT_FILE), rules.id(), n, len);
    let lower_values = values_of(lower);
    let note = |s: &str| observer.message(s);
    let release_lower = |m: u32, r: std::ops::Range<u64>| {
        if let Some(Some(layer)) = lower.get(m as usize) {
            layer.release(r);
        }
    };
    let metered = Metered::new(cluster);
    {
        let (payload, pages) = match (&mut share_file, &mut writer) {
            (Some(share), _) => share.bytes_and_pages(),
            (None, Some(whole)) => whole.payload_and_pages(),
            (None, None) => return Err(Error::Internal("a layer with neither a file nor a share to write".into())),
        };
        let release_out = |r: std::ops::Range<u64>| pages.release(r);
        let options = SolveOptions {
            out_of_core: mode.out_of_core().map(|l| l.solve_within(&mine, &release_lower, &release_out)),
            checkpoint: checkpointed.then_some(&checkpoint),
            checkpoint_every: every,
            saved: Some(&|| clock.record_now()),
            note: Some(&note),
            work: Some(&model),
            release_lower: Some(&release_lower),
            // The best exits parked in the output are read again by the propagation.
            release_out: None,
            stream_lower: matches!(mode, Mode::Streamed { .. }),
            list_bytes: mode.list_bytes(),
            levels,
            exits_kept,
            depths,
            exits_only: false,
        };
        let solved = if ranks > 1 {
            let (outbox_bytes, lookups, _) = share_buffers(len);
            let lookups = mode.out_of_core().map_or(lookups, |l| l.lookup_bytes / 48);
            let share = Share { cluster: &metered, work_dir: &mine, outbox_bytes, lookups };
            solve_share(rules, n, &lower_values, payload, observer, &options, &share)
        } else {
            solve_layer_with(rules, n, &lower_values, payload, observer, &options)
        };
        if solved.is_err() {
            // Interrupted (its checkpoint kept) or failed: the run that resumes counts this one.
            clock.record_now();
        }
        solved?;
    }
    if let Some(share) = share_file {
        share.finish()?;
    }
    // Every rank's figures, for rank 0's statistics (also: every share is written).
    let figures = if ranks > 1 { Some(rank_figures(cluster, len, metered.traffic())?) } else { None };
    let mut result = None;
    if let Some(writer) = writer {
        result = Some(publish(dir, lp, writer, lower, &model, &clock, anonymous.as_ref(), figures, replaced, observer)?);
    }
    // The layer is in place before any rank reads it.
    cluster.barrier()?;
    clock.finished();
    if scratch {
        if ranks > 1 {
            let _ = std::fs::remove_dir(mine.join("outbox"));
            let _ = std::fs::remove_dir(&mine);
        }
        remove_work_dir(work);
    }
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
    match dir.open_layer::<ValuesKind>(n, true) {
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

/// Publishes a solved layer: spot-checks it against its children (window by window out of
/// core), counts its values, writes its header and renames it into place
/// ([`LayerWriter::finish`]), then writes its statistics (with the ranks' figures of a
/// distributed build) and tells the observer. `clock`: the layer's time over the runs that
/// built it; `anonymous`: the peak of its anonymous memory in this run.
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
    lower: &[Option<Layer>],
    model: &WorkModel,
    clock: &RunClock,
    anonymous: Option<&crate::sys::AnonymousPeak>,
    ranks: Option<Vec<RankFigures>>,
    replaced: Option<String>,
    observer: &dyn BuildObserver,
) -> Result<LayerStats> {
    let (rules, n) = (dir.rules(), lp.layer);
    let lower_values = values_of(lower);
    observer.phase("checking");
    match lp.mode.as_ref().and_then(Mode::out_of_core) {
        None => spot_check(rules, n, writer.values(), &lower_values, usize::MAX, &|| {})?,
        Some(l) => {
            // A group's random reads touch at most seven pages of fault-around (64 KiB) each.
            let group = (l.lower_window / (7 << 16)).max(16) as usize;
            let release_all = || {
                writer.release(0..u64::MAX);
                for layer in lower.iter().flatten() {
                    layer.release(0..u64::MAX);
                }
            };
            spot_check(rules, n, writer.values(), &lower_values, group, &release_all)?;
        }
    }
    observer.advance(model.check() / 2);
    let seconds = clock.seconds();
    let mut stats = count_released(rules, n, writer.values(), &|r| writer.release(r));
    observer.advance(model.check() - model.check() / 2);
    writer.finish()?;
    stats.seconds = Some(seconds);
    stats.positions_per_second = Some(layer_size(n) as f64 / seconds.max(1e-9));
    stats.runs = (clock.runs() > 1).then(|| clock.runs());
    stats.threads = Some(rayon::current_num_threads());
    stats.peak_memory_bytes = peak_memory();
    stats.peak_anonymous_bytes = anonymous.map(|a| a.peak());
    stats.mode = lp.mode.map(|m| m.name().to_string());
    stats.ranks = ranks;
    write_json(&dir.stats_path::<ValuesKind>(n), &stats)?;
    observer.layer_done(&stats, &LayerOutcome::Built { seconds, replaced });
    Ok(stats)
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
