//! This machine's memory latency as the solver meets it: nanoseconds per dependent random load
//! (a pointer chase, one load per 64-byte line, in a random cycle through the whole array) over
//! arrays from 2 MiB (the caches) to 1.5 GiB (the cells of layer 26), in anonymous memory with
//! transparent huge pages as the solver's cells are, and 1.5 GiB also without them and in 1 GiB
//! pages (`hugetlbfs`; skipped with a note unless two are reserved: as root,
//! `echo 2 > /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages`).
//!
//! A retrograde update of a random cell costs at most one such latency: the solver overlaps many
//! of them (prefetched batches), so the figure bounds what memory can add per update, and the
//! ratio of a small layer's cost to a large one's (`scripts/bench-cost`) says how much of it is
//! paid.
//!
//! A second group, `update`, measures what gathering updates by range of cells would buy (the
//! idea behind bucketed propagation): nanoseconds per read-modify-write of a random `u16` cell
//! among layer 26's 770 M (1.5 GiB, huge pages), with the cell of the update 16 ahead prefetched
//! as the solver does, for 16 M updates in random order, and the same updates in batches
//! of 64 Ki, 1 Mi and 16 Mi, each batch grouped by 1 MiB range of cells (a counting sort, timed
//! with the updates) before it is applied.
//!
//! `update-dense` asks the same with batches large enough for grouping to reuse cache lines: 256 Mi
//! updates over the same 770 M cells in random order, then in batches of 64 Mi (2.7 updates a
//! 64-byte line) and one of 256 Mi (10.9 a line), each grouped by 1 MiB range of cells.
//!
//! `update-threads` gives the throughput the solver's two threads can have: 64 Mi random atomic
//! decrements of the same cells (the solver's update), prefetched 16 ahead, by one thread and by
//! two at once.
//!
//! `overlap` asks whether memory waits add to computing or hide behind it, with the figures of
//! layer 26's thresholds: for each of 4 Mi "positions", about 110 ns of arithmetic (a dependent
//! chain, calibrated at start) and 3.6 random updates of the 770 M cells. `compute` is the
//! arithmetic alone, `updates` the updates alone (prefetched 16 ahead, as `update/random`);
//! `batches` does the arithmetic of 512 positions, then their updates (what the solver does);
//! `ring` issues each position's updates as soon as it is computed (a prefetch each) and applies
//! them 32 updates later, so the lines arrive while the next positions are computed. A sum
//! near `compute + updates` is serial; near the larger of the two, overlapped.
//!
//! Run with `cargo bench --bench memory` (about 7 minutes; 3.6 GiB of memory at its largest).

use std::hint::black_box;
use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// Pointers per cache line (each line holds one, at its start).
const STRIDE: usize = 8;
/// Loads per timed iteration.
const HOPS: u64 = 1 << 16;

/// Pages the chase's memory comes in.
#[derive(Clone, Copy, PartialEq)]
enum Pages {
    /// Transparent huge pages (2 MiB), as the solver's cells.
    Huge,
    /// 4 KiB pages.
    Small,
    /// 1 GiB pages from the reserved pool.
    Giant,
}

/// `bytes` of zeroed anonymous memory in `pages`; `None` when 1 GiB pages are asked for and
/// none are reserved.
fn anonymous(bytes: usize, pages: Pages) -> Option<memmap2::MmapMut> {
    let map = match pages {
        Pages::Giant => memmap2::MmapOptions::new().len(bytes).huge(Some(30)).map_anon().ok()?,
        _ => memmap2::MmapMut::map_anon(bytes).expect("anonymous memory for the bench"),
    };
    #[cfg(target_os = "linux")]
    if pages != Pages::Giant {
        let _ = map.advise(if pages == Pages::Huge { memmap2::Advice::HugePage } else { memmap2::Advice::NoHugePage });
    }
    Some(map)
}

/// The next number of a xorshift generator (the bench's random cycles and cell numbers).
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// An array of `mib` MiB holding a single random cycle through all its lines (Sattolo's
/// shuffle), in `pages`; `None` when 1 GiB pages are asked for and none are reserved.
fn chain(mib: usize, pages: Pages) -> Option<memmap2::MmapMut> {
    let bytes = mib << 20;
    let mut map = anonymous(bytes, pages)?;
    let lines = bytes / 64;
    let mut order: Vec<u32> = (0..lines as u32).collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ mib as u64;
    for i in (1..lines).rev() {
        order.swap(i, (xorshift(&mut state) % i as u64) as usize);
    }
    // SAFETY: the map is `bytes` long, writable and page-aligned, so 8-aligned.
    let words = unsafe { std::slice::from_raw_parts_mut(map.as_mut_ptr().cast::<u64>(), bytes / 8) };
    for w in 0..lines {
        let (from, to) = (order[w] as usize, order[(w + 1) % lines] as usize);
        words[from * STRIDE] = (to * STRIDE) as u64;
    }
    Some(map)
}

fn bench_memory(c: &mut Criterion) {
    let mut g = c.benchmark_group("dependent-load");
    g.sample_size(10);
    g.throughput(Throughput::Elements(HOPS));
    let sizes = [(2, Pages::Huge), (8, Pages::Huge), (64, Pages::Huge), (256, Pages::Huge), (1536, Pages::Huge), (1536, Pages::Small), (1536, Pages::Giant)];
    for (mib, pages) in sizes {
        let Some(map) = chain(mib, pages) else {
            eprintln!("dependent-load/{mib}MiB-1g-pages: skipped, no 1 GiB pages reserved");
            continue;
        };
        // SAFETY: as in `chain`; only read from now on.
        let words = unsafe { std::slice::from_raw_parts(map.as_ptr().cast::<u64>(), map.len() / 8) };
        let name = format!(
            "{mib}MiB{}",
            match pages {
                Pages::Huge => "",
                Pages::Small => "-4k-pages",
                Pages::Giant => "-1g-pages",
            }
        );
        let mut at = 0usize;
        g.bench_function(name, |b| {
            b.iter(|| {
                for _ in 0..HOPS {
                    at = words[black_box(at)] as usize;
                }
                at
            })
        });
    }
    g.finish();
}

/// Cells of the `update` group: awari layer 26's positions.
const CELLS: usize = 770_319_837;
/// Updates per timed iteration of the `update` group.
const UPDATES: usize = 1 << 24;
/// The cells of one group of a batch: 1 MiB of `u16` cells.
const RANGE_SHIFT: u32 = 19;
/// How far ahead the cell of an update is prefetched (as the solver's message application).
const AHEAD: usize = 16;

/// Adds one to each cell of `targets`, in order, prefetching the cell `AHEAD` updates on.
fn apply(cells: &mut [u16], targets: &[u32]) {
    for (i, &k) in targets.iter().enumerate() {
        if let Some(&a) = targets.get(i + AHEAD) {
            prefetch(&cells[a as usize]);
        }
        let c = &mut cells[k as usize];
        *c = c.wrapping_add(1);
    }
}

#[inline(always)]
fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint with no effect on memory; any address is allowed.
    unsafe {
        core::arch::x86_64::_mm_prefetch(r as *const T as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// `batch` grouped by range of cells into `out` (a counting sort by `k >> RANGE_SHIFT`).
fn group(batch: &[u32], out: &mut Vec<u32>, counts: &mut Vec<u32>) {
    counts.clear();
    counts.resize((CELLS >> RANGE_SHIFT) + 2, 0);
    for &k in batch {
        counts[(k >> RANGE_SHIFT) as usize + 1] += 1;
    }
    for b in 1..counts.len() {
        counts[b] += counts[b - 1];
    }
    out.clear();
    out.resize(batch.len(), 0);
    for &k in batch {
        let b = (k >> RANGE_SHIFT) as usize;
        out[counts[b] as usize] = k;
        counts[b] += 1;
    }
}

/// Layer 26's cells: `CELLS` `u16`s of anonymous memory in huge pages, each 1.
fn layer_26_cells() -> memmap2::MmapMut {
    let mut map = anonymous(2 * CELLS, Pages::Huge).expect("anonymous memory for the cells");
    map.fill(1);
    map
}

/// The cells of a map made by [`layer_26_cells`].
fn cells_of(map: &mut memmap2::MmapMut) -> &mut [u16] {
    // SAFETY: the map is 2 * CELLS bytes, writable and page-aligned, so 2-aligned.
    unsafe { std::slice::from_raw_parts_mut(map.as_mut_ptr().cast::<u16>(), CELLS) }
}

/// `count` random cells, from the xorshift generator seeded with `seed`.
fn random_targets(count: usize, mut seed: u64) -> Vec<u32> {
    (0..count).map(|_| (xorshift(&mut seed) % CELLS as u64) as u32).collect()
}

/// The group `name`: `updates` random updates of layer 26's cells in random order, then in each
/// of `batches` (size, name), every batch grouped by range of cells before it is applied.
fn bench_grouped(c: &mut Criterion, name: &str, updates: usize, seed: u64, batches: &[(usize, &str)]) {
    let mut map = layer_26_cells();
    let cells = cells_of(&mut map);
    let targets = random_targets(updates, seed);
    let mut g = c.benchmark_group(name);
    g.sample_size(10);
    g.throughput(Throughput::Elements(updates as u64));
    g.bench_function("random", |b| b.iter(|| apply(cells, black_box(&targets))));
    let (mut out, mut counts) = (Vec::new(), Vec::new());
    for &(batch, name) in batches {
        g.bench_function(name, |b| {
            b.iter(|| {
                for piece in black_box(&targets).chunks(batch) {
                    group(piece, &mut out, &mut counts);
                    apply(cells, &out);
                }
            })
        });
    }
    g.finish();
}

fn bench_updates(c: &mut Criterion) {
    bench_grouped(c, "update", UPDATES, 0x2545_F491_4F6C_DD1D, &[(1 << 16, "grouped-64Ki"), (1 << 20, "grouped-1Mi"), (1 << 24, "grouped-16Mi")]);
}

/// Updates per timed iteration of the `update-dense` group.
const DENSE_UPDATES: usize = 1 << 28;

fn bench_dense_updates(c: &mut Criterion) {
    bench_grouped(c, "update-dense", DENSE_UPDATES, 0x6A09_E667_F3BC_C908, &[(1 << 26, "grouped-64Mi"), (1 << 28, "grouped-256Mi")]);
}

/// Updates per timed iteration of the `update-threads` group.
const THREAD_UPDATES: usize = 1 << 26;

/// Subtracts one from each cell of `targets`, in order, as the solver's atomic decrement of a
/// counter, prefetching the cell `AHEAD` updates on.
fn apply_atomic(cells: &[AtomicU16], targets: &[u32]) {
    for (i, &k) in targets.iter().enumerate() {
        if let Some(&a) = targets.get(i + AHEAD) {
            prefetch(&cells[a as usize]);
        }
        cells[k as usize].fetch_sub(1, Relaxed);
    }
}

/// `update-threads`: random updates of layer 26's cells as the solver makes them (atomic
/// read-modify-writes, prefetched 16 ahead) by one thread, then by two threads at once (each
/// half of the updates): the machine's random-update throughput for the solver's two threads.
fn bench_thread_updates(c: &mut Criterion) {
    let mut map = layer_26_cells();
    let cells = cells_of(&mut map);
    // SAFETY: `AtomicU16` has the size, alignment and bit validity of `u16`, and the map is not
    // used through `cells` while `atomics` lives.
    let atomics: &[AtomicU16] = unsafe { std::slice::from_raw_parts(cells.as_mut_ptr().cast::<AtomicU16>(), cells.len()) };
    let targets = random_targets(THREAD_UPDATES, 0x3C6E_F372_FE94_F82B);
    let mut g = c.benchmark_group("update-threads");
    g.sample_size(10);
    g.throughput(Throughput::Elements(THREAD_UPDATES as u64));
    for threads in [1usize, 2] {
        g.bench_function(format!("atomic-{threads}"), |b| {
            b.iter(|| {
                std::thread::scope(|scope| {
                    for part in black_box(&targets).chunks(THREAD_UPDATES.div_ceil(threads)) {
                        scope.spawn(move || apply_atomic(atomics, part));
                    }
                })
            })
        });
    }
    g.finish();
}

/// Positions per timed iteration of the `overlap` group.
const POSITIONS: usize = 1 << 22;
/// Nanoseconds of arithmetic per position (layer 26's thresholds: 224 ns a resolved position,
/// about half of it computing).
const WORK_NS: f64 = 110.0;
/// Positions computed before their updates are applied, in `overlap/batches`.
const BATCH_POSITIONS: usize = 512;
/// Updates in flight in `overlap/ring`.
const RING: usize = 32;

/// A dependent chain of `rounds` multiply-rotate-xor steps from `x`: arithmetic the out-of-order
/// core cannot shorten.
#[inline(always)]
fn work(mut x: u64, rounds: u32) -> u64 {
    for _ in 0..rounds {
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(23) ^ (x >> 7);
    }
    x
}

/// Rounds of [`work`] that take about [`WORK_NS`] on this machine (measured once).
fn calibrate() -> u32 {
    let probe = 1u32 << 10;
    let calls = 20_000u32;
    let start = std::time::Instant::now();
    let mut x = 1u64;
    for _ in 0..calls {
        x = work(black_box(x), probe);
    }
    black_box(x);
    let per_round = start.elapsed().as_secs_f64() * 1e9 / f64::from(calls) / f64::from(probe);
    ((WORK_NS / per_round).round() as u32).max(1)
}

/// Updates of position `i`: 4 for three positions of five, else 3 (3.6 on average).
#[inline(always)]
fn updates_of(i: usize) -> usize {
    if i % 5 < 3 {
        4
    } else {
        3
    }
}

fn bench_overlap(c: &mut Criterion) {
    let mut map = layer_26_cells();
    let cells = cells_of(&mut map);
    let rounds = calibrate();
    let total: usize = (0..POSITIONS).map(updates_of).sum();
    let targets = random_targets(total, 0xBB67_AE85_84CA_A73B);
    eprintln!("overlap: {rounds} rounds of arithmetic a position (about {WORK_NS} ns), {total} updates for {POSITIONS} positions");
    let mut g = c.benchmark_group("overlap");
    g.sample_size(10);
    g.throughput(Throughput::Elements(POSITIONS as u64));
    g.bench_function("compute", |b| {
        b.iter(|| {
            let mut x = 1u64;
            for i in 0..POSITIONS {
                x = work(x ^ i as u64, rounds);
            }
            x
        })
    });
    g.bench_function("updates", |b| b.iter(|| apply(cells, black_box(&targets))));
    g.bench_function("batches", |b| {
        b.iter(|| {
            let (mut x, mut at) = (1u64, 0usize);
            for first in (0..POSITIONS).step_by(BATCH_POSITIONS) {
                let from = at;
                for i in first..(first + BATCH_POSITIONS).min(POSITIONS) {
                    x = work(x ^ i as u64, rounds);
                    at += updates_of(i);
                }
                apply(cells, black_box(&targets[from..at]));
            }
            x
        })
    });
    g.bench_function("ring", |b| {
        b.iter(|| {
            let (mut x, mut at) = (1u64, 0usize);
            let mut ring = [0u32; RING];
            let mut issued = 0usize;
            for i in 0..POSITIONS {
                x = work(x ^ i as u64, rounds);
                for &k in &targets[at..at + updates_of(i)] {
                    prefetch(&cells[k as usize]);
                    let slot = &mut ring[issued % RING];
                    if issued >= RING {
                        let c = &mut cells[*slot as usize];
                        *c = c.wrapping_add(1);
                    }
                    *slot = k;
                    issued += 1;
                }
                at += updates_of(i);
            }
            for j in issued.saturating_sub(RING)..issued {
                let c = &mut cells[ring[j % RING] as usize];
                *c = c.wrapping_add(1);
            }
            x
        })
    });
    g.finish();
}

criterion_group!(benches, bench_memory, bench_updates, bench_dense_updates, bench_thread_updates, bench_overlap);
criterion_main!(benches);
