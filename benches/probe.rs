//! Speed of probing: random single-position probes per second with `Database::value`, warm
//! (every layer already open and in the page cache), on one thread.
//!
//! The database is the awari one in `$OWARE_BENCH_DIR` (default `databases`): layers 0..N for
//! the largest N such that every layer 0..N is there. When there is none, layers 0..16 are
//! built into a temporary directory first (about half a minute).
//!
//! Positions are drawn uniformly from all positions of layers 0..N (so mostly from the largest
//! layers, as an engine deep in an endgame would see them) before timing starts; each timed
//! iteration probes a batch of them, and criterion reports probes per second
//! (`Throughput::Elements`). Two more groups time positions outside every layer (answered from
//! their children) and `move_values`.
//!
//! Run with `cargo bench --bench probe` (or `OWARE_BENCH_DIR=/path cargo bench --bench probe`).

#[path = "../tests/common/splitmix.rs"]
mod splitmix;
use splitmix::SplitMix64;

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use oware::builder::{self, BuildConfig, Silent};
use oware::index::{layer_size, unrank_unchecked};
use oware::probe::Database;
use oware::{Position, Ruleset};

const BATCH: usize = 1 << 16;
const BUILD_MAX: u32 = 16;

/// The database to probe and its largest layer; the temp dir (if one was built) must outlive it.
fn database() -> (Database, u32, Option<tempfile::TempDir>) {
    let dir = PathBuf::from(std::env::var_os("OWARE_BENCH_DIR").unwrap_or_else(|| "databases".into()));
    if let Ok(db) = Database::open(&dir, Ruleset::Awari) {
        let present = db.layers_present();
        let contiguous = present.iter().enumerate().take_while(|&(i, &n)| i as u32 == n).count();
        if contiguous > 0 {
            let max = contiguous as u32 - 1;
            eprintln!("probe bench: awari layers 0..={max} of {}", dir.display());
            return (db, max, None);
        }
    }
    eprintln!("probe bench: no awari database in {}; building layers 0..={BUILD_MAX} in a temp dir", dir.display());
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let config = BuildConfig { rules: Ruleset::Awari, max_stones: BUILD_MAX, dir: tmp.path().into(), max_memory: None, ..Default::default() };
    builder::build(&config, &Silent).unwrap_or_else(|e| panic!("build: {e}"));
    let db = Database::open(tmp.path(), Ruleset::Awari).unwrap_or_else(|e| panic!("{e}"));
    (db, BUILD_MAX, Some(tmp))
}

/// `count` positions drawn uniformly from every position of layers `0..=max`.
fn random_positions(max: u32, count: usize, seed: u64) -> Vec<Position> {
    let sizes: Vec<u64> = (0..=max).map(layer_size).collect();
    let total: u64 = sizes.iter().sum();
    let mut rng = SplitMix64(seed);
    (0..count)
        .map(|_| {
            let mut i = rng.below(total);
            let mut n = 0;
            while i >= sizes[n as usize] {
                i -= sizes[n as usize];
                n += 1;
            }
            Position::new(unrank_unchecked(n, i)).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

/// `count` positions with a full opponent row (outside every layer) and at most `max` stones.
fn full_row_positions(max: u32, count: usize, seed: u64) -> Vec<Position> {
    let mut rng = SplitMix64(seed);
    (0..count)
        .map(|_| {
            let mut b = [0u8, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1];
            let n = 6 + rng.below(u64::from(max.max(6)) - 5);
            for _ in 6..n {
                b[rng.below(12) as usize] += 1;
            }
            Position::new(b).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

fn bench_probe(c: &mut Criterion) {
    let (db, max, _tmp) = database();
    // Warm: open (and checksum, which reads every page of) every layer before timing.
    db.open_layers(max).unwrap_or_else(|e| panic!("{e}"));
    let positions = random_positions(max, BATCH, 0x9B0B_0001);
    let full = full_row_positions(max, BATCH / 16, 0x9B0B_0002);
    // One untimed pass, so every page touched is mapped in.
    for p in &positions {
        db.value(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    }

    let mut g = c.benchmark_group(format!("probe-awari-0..={max}"));
    g.throughput(Throughput::Elements(positions.len() as u64));
    g.bench_function("value-random-in-layers", |b| {
        b.iter(|| {
            let mut acc = 0i64;
            for p in &positions {
                acc += i64::from(db.value(black_box(p)).unwrap_or(0));
            }
            acc
        })
    });
    g.bench_function("move_values-random-in-layers", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for p in &positions {
                acc += db.move_values(black_box(p)).map(|m| m.len()).unwrap_or(0);
            }
            acc
        })
    });
    if max < 6 {
        // No position outside every layer has fewer than 6 stones.
        g.finish();
        return;
    }
    g.throughput(Throughput::Elements(full.len() as u64));
    g.bench_function("value-full-opponent-row", |b| {
        b.iter(|| {
            let mut acc = 0i64;
            for p in &full {
                acc += i64::from(db.value(black_box(p)).unwrap_or(0));
            }
            acc
        })
    });
    g.finish();
}

criterion_group!(benches, bench_probe);
criterion_main!(benches);
