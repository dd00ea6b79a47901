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
//! Run with `cargo bench --bench memory` (about 1 minute; 1.6 GiB of memory at its largest, 2 GiB
//! with 1 GiB pages).

use std::hint::black_box;

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

/// An array of `mib` MiB holding a single random cycle through all its lines (Sattolo's
/// shuffle), in `pages`; `None` when 1 GiB pages are asked for and none are reserved.
fn chain(mib: usize, pages: Pages) -> Option<memmap2::MmapMut> {
    let bytes = mib << 20;
    let mut map = match pages {
        Pages::Giant => memmap2::MmapOptions::new().len(bytes).huge(Some(30)).map_anon().ok()?,
        _ => memmap2::MmapMut::map_anon(bytes).expect("anonymous memory for the chase"),
    };
    #[cfg(target_os = "linux")]
    if pages != Pages::Giant {
        let _ = map.advise(if pages == Pages::Huge { memmap2::Advice::HugePage } else { memmap2::Advice::NoHugePage });
    }
    let lines = bytes / 64;
    let mut order: Vec<u32> = (0..lines as u32).collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ mib as u64;
    for i in (1..lines).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % i as u64) as usize);
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

criterion_group!(benches, bench_memory);
criterion_main!(benches);
