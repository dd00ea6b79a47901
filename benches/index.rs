//! Speed of the combinatorial indexer on layer 24 boards (382,628,610 boards, the middle of the
//! range the solver works in), through the public API: nanoseconds per `rank`, per
//! `unrank_unchecked`, and per board of a `LayerWalker` walk in index order. (The internal
//! `rank_unchecked` and `unrank_many`, eight unranks in lockstep, are timed by the ignored unit
//! test `index::tests::internal_timings`: `cargo test --release -p oware --lib --
//! --ignored internal_timings --nocapture`.)
//!
//! The pseudo-random indices and boards are made before timing starts; each timed iteration
//! handles a batch of them, and criterion reports time per element (`Throughput::Elements`).
//!
//! Run with `cargo bench --bench index`.

#[path = "../tests/common/splitmix.rs"]
mod splitmix;
use splitmix::SplitMix64;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use oware::index::{layer_size, rank, unrank_unchecked, LayerWalker};
use oware::Board;

const LAYER: u32 = 24;
const BATCH: usize = 4096;
const WALK: u64 = 1 << 20;

/// `count` random indices below `below` (drawn outside the timed loops).
fn random_indices(count: usize, below: u64, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64(seed);
    (0..count).map(|_| rng.below(below)).collect()
}

fn bench_index(c: &mut Criterion) {
    let size = layer_size(LAYER);
    unrank_unchecked(LAYER, 0); // build the indexer's tables before any timing
    let indices = random_indices(BATCH, size, 0xBE7C_0001);
    let boards: Vec<Board> = indices.iter().map(|&i| unrank_unchecked(LAYER, i)).collect();
    let walk_start = random_indices(1, size - WALK, 0xBE7C_0002)[0];

    let mut g = c.benchmark_group("index-layer24");

    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("rank", |bch| {
        bch.iter(|| {
            let mut acc = 0u64;
            for b in &boards {
                acc = acc.wrapping_add(rank(black_box(b)).unwrap_or_default());
            }
            acc
        })
    });
    g.bench_function("unrank_unchecked", |bch| {
        bch.iter(|| {
            let mut acc = 0u64;
            for &i in &indices {
                let b = unrank_unchecked(LAYER, black_box(i));
                acc = acc.wrapping_add(u64::from_le_bytes(b[..8].try_into().unwrap_or_default()));
                acc ^= u64::from(b[11]);
            }
            acc
        })
    });
    g.throughput(Throughput::Elements(WALK));
    g.bench_function("walk", |bch| {
        bch.iter(|| {
            let mut acc = 0u64;
            for (_, b) in LayerWalker::new(LAYER, black_box(walk_start)..walk_start + WALK).unwrap_or_else(|e| panic!("{e}")) {
                let b = black_box(b);
                acc = acc.wrapping_add(u64::from(b[0]) ^ u64::from(b[11]));
            }
            acc
        })
    });
    g.finish();
}

criterion_group!(benches, bench_index);
criterion_main!(benches);
