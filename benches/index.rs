//! Speed of the combinatorial indexer on layer 24 boards (382,628,610 boards, the middle of the
//! range the solver works in): nanoseconds per `rank_unchecked`, per `unrank_unchecked`, per
//! index of `unrank_many` (eight in lockstep), and per board of a `LayerWalker` walk in index order.
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
use oware::index::{layer_size, rank_unchecked, tables, unrank_many, unrank_unchecked, LayerWalker};
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
    tables(); // build the tables before any timing
    let indices = random_indices(BATCH, size, 0xBE7C_0001);
    let boards: Vec<Board> = indices.iter().map(|&i| unrank_unchecked(LAYER, i)).collect();
    let walk_start = random_indices(1, size - WALK, 0xBE7C_0002)[0];

    let mut g = c.benchmark_group("index-layer24");

    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("rank_unchecked", |bch| {
        bch.iter(|| {
            let mut acc = 0u64;
            for b in &boards {
                acc = acc.wrapping_add(rank_unchecked(black_box(b)));
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
    let mut many = Vec::with_capacity(BATCH);
    g.bench_function("unrank_many", |bch| {
        bch.iter(|| {
            unrank_many(LAYER, black_box(&indices), &mut many);
            many.iter().fold(0u64, |acc, b| acc.wrapping_add(u64::from_le_bytes(b[..8].try_into().unwrap_or_default())) ^ u64::from(b[11]))
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
