//! The distributed solver against the in-memory one, with the ranks as threads of this process
//! ([`ThreadCluster`]): the layers of every ruleset come out byte-identical with 2, 3 and 4
//! ranks, with tiny batches and outboxes that spill to files, and with each rank out of core;
//! an interrupted distributed solve stops on every rank and resumes from the ranks'
//! checkpoints. (The same code runs over MPI in the program's `cli/tests/mpi.rs`, feature `mpi`.)

use std::path::Path;
use std::time::Duration;

use super::{as_i8, memory_layers, Counting};
use crate::error::{ClusterError, ErrorKind};
use crate::index::layer_size;
use crate::progress::Progress;
use crate::rules::Ruleset;
use crate::solver::cluster::{Metered, Ownership, ThreadCluster};
use crate::solver::spill::Checkpoint;
use crate::solver::{solve_share, OutOfCore, Share, SolveOptions, WorkModel, CHUNK};

const TOP: u32 = 14;

/// A whole layer's bytes cut into the shares of `ranks` ranks ([`Ownership`]).
fn shares(whole: &mut [u8], ranks: usize) -> Vec<&mut [u8]> {
    let owners = Ownership::new(whole.len() as u64, ranks);
    let mut shares = Vec::new();
    let mut rest = whole;
    for r in 0..ranks {
        let (a, b) = rest.split_at_mut((owners.range(r).end - owners.range(r).start) as usize);
        shares.push(a);
        rest = b;
    }
    shares
}

/// How each rank solves its share.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// In memory, with tiny lookup batches and outbox buffers (files and many exchange steps).
    Tiny,
    /// Out of core in parts of one chunk.
    OutOfCore,
}

/// Solves layer `n` with `ranks` thread ranks; returns the whole layer and the bytes exchanged.
fn solve_distributed(rules: Ruleset, n: u32, layers: &[Vec<u8>], ranks: usize, mode: Mode, work: &Path) -> (Vec<u8>, u64) {
    let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
    let cluster = ThreadCluster::new(ranks);
    let mut whole = vec![0xAAu8; layer_size(n) as usize];
    let shares = shares(&mut whole, ranks);
    let model = WorkModel::new(n, None);
    let bytes = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for ((c, out), r) in cluster.iter().zip(shares).zip(0..) {
            let lower = &lower;
            let bytes = &bytes;
            let model = &model;
            s.spawn(move || {
                let dir = work.join(format!("rank-{r}"));
                std::fs::create_dir_all(&dir).unwrap();
                let metered = Metered::new(c);
                let share = Share { cluster: &metered, work_dir: &dir, outbox_bytes: 1 << 13, lookups: 1 << 12 };
                let len = out.len() as u64;
                let options = SolveOptions {
                    out_of_core: matches!(mode, Mode::OutOfCore).then(|| OutOfCore {
                        part_len: CHUNK,
                        lookup_bytes: 1 << 16,
                        lower_window: 1 << 16,
                        message_bytes: 1 << 16,
                        work_dir: &dir,
                        release_lower: &|_, _| {},
                        release_out: &|_| {},
                    }),
                    work: Some(model),
                    ..Default::default()
                };
                let counted = Counting::default();
                let result = solve_share(rules, n, lower, out, &counted, &options, &share);
                if result.is_err() {
                    c.leave();
                }
                result.unwrap();
                // Progress of the share ends at its 100 %.
                assert_eq!(counted.0.load(std::sync::atomic::Ordering::Relaxed), model.solve(len), "rank {r}: progress");
                bytes.fetch_add(metered.traffic().bytes_sent, std::sync::atomic::Ordering::Relaxed);
                let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
                assert!(left.is_empty(), "rank {r} left scratch files: {left:?}");
            });
        }
    });
    (whole, bytes.into_inner())
}

#[test]
fn distributed_solves_are_byte_identical_on_every_ruleset() {
    for rules in Ruleset::ALL {
        // Every layer to 14 for awari, to 11 for the others (to keep the test quick).
        let top = if rules == Ruleset::Awari { TOP } else { 11 };
        let layers = memory_layers(rules, top);
        let work = tempfile::tempdir().unwrap();
        for n in 0..=top {
            for (ranks, mode) in [(2, Mode::Tiny), (3, Mode::OutOfCore), (4, Mode::Tiny)] {
                let (got, bytes) = solve_distributed(rules, n, layers, ranks, mode, work.path());
                assert!(got == layers[n as usize], "{} layer {n}, {ranks} ranks {mode:?}: differs from in memory", rules.name());
                if n >= 10 {
                    assert!(bytes > 0, "{} layer {n}: {ranks} ranks exchanged nothing", rules.name());
                }
            }
        }
    }
}

/// A progress that cancels after a given number of phases.
struct StopAfter {
    phases: std::sync::atomic::AtomicU32,
    stop_at: u32,
}

impl Progress for StopAfter {
    fn phase(&self, _name: &str) {
        self.phases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.phases.load(std::sync::atomic::Ordering::Relaxed) > self.stop_at
    }
}

/// Runs one distributed solve of layer `n` with per-rank checkpoints; rank 0 stops after
/// `stop_at` phases (if given). Returns the layer (when it finished), each rank's result and
/// rank 0's notes.
fn run_with_checkpoints(
    rules: Ruleset,
    n: u32,
    layers: &[Vec<u8>],
    ranks: usize,
    work: &Path,
    stop_at: Option<u32>,
) -> (Vec<u8>, Vec<Result<(), crate::Error>>, Vec<String>) {
    let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
    let cluster = ThreadCluster::new(ranks);
    let mut whole = vec![0u8; layer_size(n) as usize];
    let shares = shares(&mut whole, ranks);
    let notes = std::sync::Mutex::new(Vec::new());
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = cluster
            .iter()
            .zip(shares)
            .enumerate()
            .map(|(r, (c, out))| {
                let lower = &lower;
                let notes = &notes;
                s.spawn(move || {
                    let dir = work.join(format!("rank-{r}"));
                    std::fs::create_dir_all(&dir).unwrap();
                    let len = out.len() as u64;
                    let ckpt = Checkpoint::new(dir.join("checkpoint.bin"), rules.id(), n, len);
                    let note = |s: &str| {
                        if r == 0 {
                            notes.lock().unwrap().push(s.to_string());
                        }
                    };
                    let options = SolveOptions { checkpoint: Some(&ckpt), checkpoint_every: Duration::ZERO, note: Some(&note), ..Default::default() };
                    let share = Share { cluster: c, work_dir: &dir, outbox_bytes: 1 << 13, lookups: 1 << 12 };
                    let stop = StopAfter { phases: 0.into(), stop_at: if r == 0 { stop_at.unwrap_or(u32::MAX) } else { u32::MAX } };
                    solve_share(rules, n, lower, out, &stop, &options, &share)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    (whole, results, notes.into_inner().unwrap())
}

#[test]
fn an_interrupted_distributed_solve_stops_every_rank_and_resumes_from_their_checkpoints() {
    let rules = Ruleset::Awari;
    let n = 12;
    let layers = memory_layers(rules, n);
    let ranks = 3;
    for stop_at in [1u32, 4, 8] {
        let work = tempfile::tempdir().unwrap();
        let (_, results, _) = run_with_checkpoints(rules, n, layers, ranks, work.path(), Some(stop_at));
        // Every rank stops (none waits forever): rank 0 interrupted, the others told.
        assert!(matches!(results[0], Err(crate::Error::Interrupted)), "{results:?}");
        for r in &results[1..] {
            assert!(matches!(r, Err(crate::Error::Cluster(ClusterError::PeerStopped))), "{results:?}");
        }
        let saved = (0..ranks).filter(|r| work.path().join(format!("rank-{r}/checkpoint.bin")).exists()).count();
        assert!(saved == 0 || saved == ranks, "stop at {stop_at}: {saved} of {ranks} ranks saved");
        let (got, results, notes) = run_with_checkpoints(rules, n, layers, ranks, work.path(), None);
        assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
        assert!(got == layers[n as usize], "stop at {stop_at}: resumed distributed solve differs");
        let resumed = notes.iter().any(|s| s.contains("every rank resumes"));
        assert_eq!(resumed, saved == ranks, "stop at {stop_at}: {notes:?}");
        if stop_at >= 4 {
            assert!(resumed, "stop at {stop_at}: no checkpoint was taken");
        }
    }
    // A rank whose checkpoint is gone: every rank starts the layer afresh, with the same result.
    let work = tempfile::tempdir().unwrap();
    run_with_checkpoints(rules, n, layers, ranks, work.path(), Some(8));
    std::fs::remove_file(work.path().join("rank-1/checkpoint.bin")).unwrap();
    let (got, results, notes) = run_with_checkpoints(rules, n, layers, ranks, work.path(), None);
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    assert!(got == layers[n as usize]);
    assert!(notes.iter().any(|s| s.contains("not of one phase")), "{notes:?}");
}

// ---- The build pipeline over thread ranks ----

use crate::builder::{build, build_with, BuildConfig, Silent};

fn config(dir: &Path, rules: Ruleset, top: u32) -> BuildConfig {
    BuildConfig { rules, max_stones: top, dir: dir.to_path_buf(), ..BuildConfig::default() }
}

/// Runs `build_with` on `ranks` thread ranks, rank `r` with `configs(r)`.
fn build_on_threads(ranks: usize, configs: impl Fn(usize) -> BuildConfig + Sync) -> Vec<crate::Result<Vec<crate::builder::LayerStats>>> {
    let cluster = ThreadCluster::new(ranks);
    std::thread::scope(|s| {
        let handles: Vec<_> = cluster
            .iter()
            .enumerate()
            .map(|(r, c)| {
                let configs = &configs;
                s.spawn(move || {
                    let result = build_with(&configs(r), &Silent, c);
                    if result.is_err() {
                        c.leave();
                    }
                    result
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn distributed_builds_write_the_same_files() {
    let top = 13;
    for rules in [Ruleset::Awari, Ruleset::ALL[3]] {
        let single = tempfile::tempdir().unwrap();
        build(&config(single.path(), rules, top), &Silent).unwrap();
        for (ranks, memory) in [(2, None), (3, Some(5u64 << 20))] {
            let multi = tempfile::tempdir().unwrap();
            let results = build_on_threads(ranks, |_| BuildConfig { max_memory: memory, ..config(multi.path(), rules, top) });
            for r in &results {
                assert!(r.is_ok(), "{r:?}");
            }
            // Rank 0 reports every layer, with every rank's figures.
            let stats = results[0].as_ref().unwrap();
            assert_eq!(stats.len(), top as usize + 1);
            let figures = stats[top as usize].ranks.as_ref().expect("per-rank figures");
            assert_eq!(figures.len(), ranks);
            assert_eq!(figures.iter().map(|f| f.positions).sum::<u64>(), layer_size(top));
            assert!(figures.iter().all(|f| f.bytes_sent > 0 && f.peak_memory_bytes > 0), "{figures:?}");
            for n in 0..=top {
                let name = format!("{}/layer-{n:02}.owdb", rules.name());
                let a = std::fs::read(single.path().join(&name)).unwrap();
                let b = std::fs::read(multi.path().join(&name)).unwrap();
                assert!(a == b, "{name}: {ranks} ranks (memory {memory:?}) differ from one process");
            }
            let left: Vec<_> = std::fs::read_dir(multi.path().join(rules.name()))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .filter(|f| f.to_string_lossy().starts_with(".work") || f.to_string_lossy().ends_with(".tmp"))
                .collect();
            assert!(left.is_empty(), "{left:?}");
            // A rerun finds every layer intact and builds nothing.
            let again = build_on_threads(ranks, |_| config(multi.path(), rules, top));
            assert!(again[0].as_ref().unwrap().iter().all(|s| s.seconds.is_none()), "{:?}", again[0]);
        }
    }
}

#[test]
fn ranks_with_other_options_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let results = build_on_threads(3, |r| config(dir.path(), Ruleset::Awari, if r == 2 { 9 } else { 8 }));
    for r in &results {
        match r {
            Err(e @ crate::Error::Cluster(ClusterError::OtherOptions { ranks })) => {
                assert_eq!(ranks, &[2], "{e}");
                assert!(e.to_string().contains("ranks 2 were given other options"), "{e}");
                assert_eq!(e.kind(), ErrorKind::Cluster);
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(!dir.path().join("awari").join("layer-00.owdb").exists());
}

#[test]
fn distributed_builds_of_a_target_write_the_same_files() {
    // Layers 0..=11 and 13 (12 is not needed), by 2 ranks in memory and 3 ranks out of core.
    let (rules, top) = (Ruleset::Awari, 13);
    let single = tempfile::tempdir().unwrap();
    build(&config(single.path(), rules, top), &Silent).unwrap();
    for (ranks, memory) in [(2, None), (3, Some(5u64 << 20))] {
        let multi = tempfile::tempdir().unwrap();
        let results = build_on_threads(ranks, |_| BuildConfig { max_memory: memory, ..config(multi.path(), rules, top) }.for_stones(top));
        for r in &results {
            assert!(r.is_ok(), "{r:?}");
        }
        assert!(!multi.path().join("awari/layer-12.owdb").exists());
        for n in crate::rules::layers_needed(top) {
            let name = format!("awari/layer-{n:02}.owdb");
            assert!(std::fs::read(single.path().join(&name)).unwrap() == std::fs::read(multi.path().join(&name)).unwrap(), "{name}: {ranks} ranks differ");
        }
    }
}
