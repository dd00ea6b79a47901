//! The distributed solver against the in-memory one, with the ranks as threads of this process
//! ([`ThreadCluster`]): every layer of every ruleset comes out byte-identical with 2, 3 and 4
//! ranks, with tiny batches and outboxes that spill to files, and with each rank out of core;
//! an interrupted distributed solve stops on every rank and resumes from the ranks'
//! checkpoints. (The same code runs over MPI in `tests/mpi.rs`, feature `mpi`.)

use std::path::Path;
use std::time::Duration;

use oware::index::layer_size;
use oware::progress::{NoProgress, Progress};
use oware::rules::Ruleset;
use oware::solver::cluster::{Cluster, Metered, Ownership, ThreadCluster};
use oware::solver::{solve_layer, solve_share, OutOfCore, Share, SolveOptions, WorkModel, CHUNK};
use oware::spill::Checkpoint;

const TOP: u32 = 14;

fn as_i8(b: &[u8]) -> &[i8] {
    // SAFETY: same size and alignment, every bit pattern valid.
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
}

fn memory_layers(rules: Ruleset, top: u32) -> Vec<Vec<u8>> {
    let mut layers: Vec<Vec<u8>> = Vec::new();
    for n in 0..=top {
        let lower: Vec<&[i8]> = layers.iter().map(|l| as_i8(l)).collect();
        let mut out = vec![0u8; layer_size(n) as usize];
        solve_layer(rules, n, &lower, &mut out, &NoProgress).unwrap();
        layers.push(out);
    }
    layers
}

#[derive(Default)]
struct Counting(std::sync::atomic::AtomicU64);
impl Progress for Counting {
    fn advance(&self, units: u64) {
        self.0.fetch_add(units, std::sync::atomic::Ordering::Relaxed);
    }
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
    let owners = Ownership::new(layer_size(n), ranks);
    let cluster = ThreadCluster::new(ranks);
    let mut whole = vec![0xAAu8; layer_size(n) as usize];
    let mut shares: Vec<&mut [u8]> = Vec::new();
    let mut rest = whole.as_mut_slice();
    for r in 0..ranks {
        let (a, b) = rest.split_at_mut((owners.range(r).end - owners.range(r).start) as usize);
        shares.push(a);
        rest = b;
    }
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
        let layers = memory_layers(rules, TOP);
        let work = tempfile::tempdir().unwrap();
        for n in 0..=TOP {
            for (ranks, mode) in [(2, Mode::Tiny), (3, Mode::OutOfCore), (4, Mode::Tiny)] {
                let (got, bytes) = solve_distributed(rules, n, &layers, ranks, mode, work.path());
                assert!(got == layers[n as usize], "{} layer {n}, {ranks} ranks {mode:?}: differs from in memory", rules.name());
                if n >= 10 {
                    assert!(bytes > 0, "{} layer {n}: {ranks} ranks exchanged nothing", rules.name());
                }
            }
        }
    }
}
