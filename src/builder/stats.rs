//! Statistics of built layers and of the files beside them (bounds, depths to capture), also
//! stored as JSON beside them, and the JSON files' safe writing and restoring.

use std::collections::BTreeMap;
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::BuildObserver;
use crate::error::FileContent;
use crate::error::{Error, Result};
use crate::index::layer_size;
use crate::rules::Ruleset;
use crate::solver::cluster::{Cluster, Traffic};
use crate::storage::{open_regular, scan_released, write_atomic, DatabaseDir, ValuesKind};
use crate::sys::peak_memory;

/// How a layer came to be complete.
#[derive(Clone, Debug, PartialEq)]
pub enum LayerOutcome {
    /// Already built and intact: skipped.
    Skipped,
    /// Built now (`replaced` says why an existing file was not trusted, if there was one).
    Built {
        /// Wall-clock seconds it took (a layer's values: over every run that built them,
        /// [`LayerStats::runs`]).
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
    /// Wall-clock seconds the build took, over every run that worked on the layer when it was
    /// stopped and resumed from its checkpoint (a run killed outright is counted in `runs`, with
    /// its time up to its last checkpoint); absent for layers not built by this run.
    pub seconds: Option<f64>,
    /// Positions per second of the build (over `seconds`).
    pub positions_per_second: Option<f64>,
    /// How many runs of the program built the layer, when more than one (stopped and resumed);
    /// absent when one did, and in files of earlier versions, which counted only the last run's
    /// time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<u32>,
    /// Threads used.
    pub threads: Option<usize>,
    /// Peak resident memory of the building process so far, in bytes (Linux `VmHWM`), which
    /// includes the mapped pages of the layers it read and wrote.
    #[serde(default)]
    pub peak_memory_bytes: Option<u64>,
    /// Peak anonymous memory of the building process while it built the layer (Linux
    /// `RssAnon`, sampled every 20 ms): its own memory, without the pages of mapped files; what
    /// the plan's memory figure predicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_anonymous_bytes: Option<u64>,
    /// How the build solved it ([`Mode::name`](super::Mode::name): `in_memory`, `streamed`,
    /// `out_of_core`; absent for layers not built by this run, and in files of earlier
    /// versions, which built every layer in memory; versions before `streamed` called it
    /// `in_memory`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
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
    pub(super) fn new(rules: Ruleset, n: u32, t: &crate::bounds::Tally) -> BoundsStats {
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

/// Statistics of one layer's depths to capture, also stored as `dtc-NN.json` beside them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DtcStats {
    /// Ruleset name.
    pub rules: String,
    /// Layer number (stones on the board).
    pub layer: u32,
    /// Positions in the layer.
    pub positions: u64,
    /// Positions with a depth (those of non-zero value).
    pub with_dtc: u64,
    /// Bytes of the dtc file.
    pub file_bytes: u64,
    /// Depths of 254 or more (stored in the file's table of escaped depths).
    pub escaped: u64,
    /// The greatest depth (absent when no position has one).
    pub max: Option<u16>,
    /// The mean depth over the positions that have one.
    pub mean: Option<f64>,
    /// Positions of each depth: entry `d` counts depth `d` (up to the greatest).
    pub histogram: Vec<u64>,
    /// Wall-clock seconds the build took (absent for depths not built by this run).
    pub seconds: Option<f64>,
    /// Peak resident memory of the building process so far, in bytes.
    #[serde(default)]
    pub peak_memory_bytes: Option<u64>,
    /// A distributed build's ranks: what each computed and spent (absent for single-process
    /// builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Vec<RankFigures>>,
}

impl DtcStats {
    /// The statistics of layer `n`'s depths of `rules` from their histogram (no time or memory
    /// figures).
    pub(crate) fn new(rules: Ruleset, n: u32, histogram: Vec<u64>, escaped: u64) -> DtcStats {
        let with_dtc: u64 = histogram.iter().sum();
        let total: f64 = histogram.iter().enumerate().map(|(d, &c)| d as f64 * c as f64).sum();
        let max = histogram.iter().rposition(|&c| c > 0).map(|d| d as u16);
        let mut histogram = histogram;
        histogram.truncate(max.map_or(0, |m| m as usize + 1));
        DtcStats {
            rules: rules.name().into(),
            layer: n,
            positions: layer_size(n),
            with_dtc,
            file_bytes: crate::format::PAYLOAD_OFFSET + crate::dtc::payload_len(n, escaped),
            escaped,
            max,
            mean: (with_dtc > 0).then(|| total / with_dtc as f64),
            histogram,
            seconds: None,
            peak_memory_bytes: None,
            ranks: None,
        }
    }
}

/// The statistics of one layer's file beside its values, of its kind, as
/// [`BuildObserver::companion_done`] is told of them.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum CompanionStats<'a> {
    /// Its forced-capture bounds'.
    Bounds(&'a BoundsStats),
    /// Its depths to capture's.
    Dtc(&'a DtcStats),
    /// Those of a kind with no statistics of its own.
    Entries(FileContent, &'a EntryStats),
}

impl CompanionStats<'_> {
    /// The kind of file.
    pub fn kind(&self) -> FileContent {
        match self {
            CompanionStats::Bounds(_) => FileContent::Bounds,
            CompanionStats::Dtc(_) => FileContent::Dtc,
            CompanionStats::Entries(kind, _) => *kind,
        }
    }

    /// The layer (stones on the board).
    pub fn layer(&self) -> u32 {
        match self {
            CompanionStats::Bounds(s) => s.layer,
            CompanionStats::Dtc(s) => s.layer,
            CompanionStats::Entries(_, s) => s.layer,
        }
    }

    /// Positions in the layer.
    pub fn positions(&self) -> u64 {
        match self {
            CompanionStats::Bounds(s) => s.positions,
            CompanionStats::Dtc(s) => s.positions,
            CompanionStats::Entries(_, s) => s.positions,
        }
    }
}

/// The statistics of one layer's file of a kind with none of its own, also stored as
/// `NAME-NN.json` beside it: what every kind's say.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct EntryStats {
    /// Ruleset name.
    pub rules: String,
    /// Layer number (stones on the board).
    pub layer: u32,
    /// Positions in the layer.
    pub positions: u64,
    /// Wall-clock seconds the build took (absent for a file not built by this run).
    pub seconds: Option<f64>,
    /// Peak resident memory of the building process so far, in bytes.
    #[serde(default)]
    pub peak_memory_bytes: Option<u64>,
}

impl LayerStats {
    /// Counts the values of a layer's payload (in parallel).
    ///
    /// Cost: one sequential pass over `values`.
    pub fn count(rules: Ruleset, n: u32, values: &[i8]) -> LayerStats {
        LayerStats::from_histogram(rules, n, &histogram(values))
    }

    /// The statistics of a layer whose values have the [`histogram`] `hist`.
    pub(super) fn from_histogram(rules: Ruleset, n: u32, hist: &[u64]) -> LayerStats {
        let values = hist.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| (i as i32 - 128, c)).collect();
        LayerStats {
            rules: rules.name().into(),
            layer: n,
            positions: layer_size(n),
            seconds: None,
            positions_per_second: None,
            runs: None,
            threads: None,
            peak_memory_bytes: None,
            peak_anonymous_bytes: None,
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

/// Whether a layer's counts hold a value outside `-n..=n` (a checksum-valid but wrong file,
/// which must not be trusted as a lower layer).
pub(super) fn stats_out_of_range(s: &LayerStats) -> bool {
    s.values.keys().any(|&v| v.unsigned_abs() > s.layer)
}

/// Writes `value` as pretty JSON at `path`, atomically.
pub(super) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let json = serde_json::to_vec_pretty(value).map_err(|e| Error::Internal(e.to_string()))?;
    write_atomic(path, &json)
}

/// Writes `counted` as JSON at `path` when the file there is missing, unreadable or fails
/// `same`.
///
/// # Errors
/// [`Error::NotAFile`] when something other than a regular file has the name (a FIFO, a
/// device: never opened, never replaced); [`Error::Io`] when the file cannot be written.
pub(super) fn restore_json<T: Serialize + serde::de::DeserializeOwned>(
    path: &Path,
    counted: &T,
    same: impl Fn(&T) -> bool,
    observer: &dyn BuildObserver,
) -> Result<()> {
    let ok = read_small(path)?.and_then(|b| serde_json::from_slice::<T>(&b).ok()).is_some_and(|s| same(&s));
    if !ok {
        write_json(path, counted)?;
        observer.message(&format!("restored {}", path.display()));
    }
    Ok(())
}

/// Writes `layer-NN.json` for an intact layer when it is missing, unreadable or disagrees with
/// the layer's counts.
pub(super) fn restore_stats(dir: &DatabaseDir, counted: &LayerStats, observer: &dyn BuildObserver) -> Result<()> {
    restore_json(
        &dir.stats_path::<ValuesKind>(counted.layer),
        counted,
        |s: &LayerStats| s.values == counted.values && s.positions == counted.positions,
        observer,
    )
}

/// Counts a layer's values with [`scan_released`], giving each window's pages back.
pub(super) fn count_released(rules: Ruleset, n: u32, values: &[i8], release: &dyn Fn(std::ops::Range<u64>)) -> LayerStats {
    let mut total = vec![0u64; 256];
    scan_released(values, release, |w| {
        for (t, h) in total.iter_mut().zip(histogram(w)) {
            *t += h;
        }
    });
    LayerStats::from_histogram(rules, n, &total)
}

/// The largest statistics file read (they are a few KiB): a larger one is not a statistics file
/// this crate wrote, and is read as unreadable, not into memory.
pub(super) const MAX_STATS_BYTES: u64 = 1 << 20;

/// The bytes of `path` when it is a regular file at most [`MAX_STATS_BYTES`] long and
/// readable; `None` when nothing is there, or it is longer or cannot be read.
///
/// Cost: one `stat`, one `open`, one read of at most [`MAX_STATS_BYTES`].
///
/// # Errors
/// [`Error::NotAFile`] when something other than a regular file is there (a directory, a FIFO,
/// a device: never opened, see [`open_regular`]).
pub(super) fn read_small(path: &Path) -> Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = match open_regular(path, || Error::Internal(String::new())) {
        Ok(f) => f,
        Err(e @ Error::NotAFile { .. }) => return Err(e),
        Err(_) => return Ok(None),
    };
    let mut bytes = Vec::new();
    if file.take(MAX_STATS_BYTES + 1).read_to_end(&mut bytes).is_err() {
        return Ok(None);
    }
    Ok((bytes.len() as u64 <= MAX_STATS_BYTES).then_some(bytes))
}

/// Reads the statistics file of a layer, if present, a regular file (nothing else is opened),
/// readable and at most `MAX_STATS_BYTES` (1 MiB) long.
pub fn read_stats(dir: &Path, rules: Ruleset, n: u32) -> Option<LayerStats> {
    let path = crate::storage::stats_path(dir, rules, n);
    serde_json::from_slice(&read_small(&path).ok()??).ok()
}

/// Every rank's figures of a distributed pass (this rank solved `positions` positions and
/// communicated `traffic`), in rank order; every rank calls it at once.
///
/// # Errors
/// [`Error::Cluster`].
pub(super) fn rank_figures(cluster: &dyn Cluster, positions: u64, traffic: Traffic) -> Result<Vec<RankFigures>> {
    let (ranks, me) = (cluster.size(), cluster.rank());
    let mut slots = vec![0u64; 5 * ranks];
    slots[5 * me..5 * me + 5].copy_from_slice(&[
        positions,
        traffic.bytes_sent,
        traffic.bytes_received,
        (traffic.seconds * 1e6) as u64,
        peak_memory().unwrap_or(0),
    ]);
    let figures = cluster.sum(&slots)?;
    Ok(figures
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
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::Silent;
    use crate::error::FileKind;

    /// A FIFO at a finished layer's `layer-NN.json` is named, never opened (the open blocked a
    /// build for ever, deaf to SIGTERM) nor replaced; a damaged file is restored as before.
    #[test]
    fn a_fifo_at_a_statistics_file_is_refused_and_damage_restored() {
        let dir = tempfile::tempdir().unwrap();
        let counted = LayerStats::from_histogram(Ruleset::Awari, 2, &histogram(&[0i8, 2, -2]));
        let path = crate::storage::stats_path(dir.path(), Ruleset::Awari, 2);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        crate::test_support::mkfifo(&path);
        let (p, c) = (path.clone(), counted.clone());
        let got = crate::test_support::within("restoring a FIFO", move || restore_json(&p, &c, |s: &LayerStats| s.values == c.values, &Silent));
        assert!(matches!(got, Err(Error::NotAFile { found: FileKind::Fifo, .. })), "{got:?}");
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&std::fs::symlink_metadata(&path).unwrap().file_type()), "never replaced");
        let base = dir.path().to_path_buf();
        assert!(crate::test_support::within("reading a FIFO's statistics", move || read_stats(&base, Ruleset::Awari, 2)).is_none());
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"{ damaged").unwrap();
        restore_json(&path, &counted, |s: &LayerStats| s.values == counted.values, &Silent).unwrap();
        assert_eq!(read_stats(dir.path(), Ruleset::Awari, 2).map(|s| s.values), Some(counted.values));
    }
}
