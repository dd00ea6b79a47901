//! The indexer's tests: its own (here) and against brute force (`layers.rs`).

mod layers;

use super::*;

#[test]
fn ranges_cover_exactly() {
    let r: Vec<_> = ranges(5..17, 5).collect();
    assert_eq!(r, [5..10, 10..15, 15..17]);
    assert_eq!(ranges(3..3, 4).count(), 0);
    assert_eq!(ranges(0..10, u64::MAX).collect::<Vec<_>>(), vec![0..10]);
    assert_eq!(ranges(0..3, 0).count(), 3);
    assert_eq!(chunks(3, 1000).collect::<Vec<_>>(), vec![0..layer_size(3)]);
}

#[test]
fn small_layers_round_trip() {
    for n in 0..=6 {
        let mut count = 0;
        for (i, b) in LayerWalker::new(n, 0..u64::MAX).unwrap() {
            assert_eq!(rank(&b).unwrap(), i);
            assert_eq!(unrank(n, i).unwrap(), b);
            count += 1;
        }
        assert_eq!(count, layer_size(n));
    }
}

#[test]
fn unrank_many_agrees_with_unrank() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut out = Vec::new();
    for n in [0, 1, 2, 7, 13, 24, 31, 40, 47, 48] {
        for count in [0, 1, 7, 8, 9, 64, 203] {
            let indices: Vec<u64> = (0..count)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state % layer_size(n)
                })
                .collect();
            unrank_many(n, &indices, &mut out);
            let one: Vec<Board> = indices.iter().map(|&i| unrank_unchecked(n, i)).collect();
            assert_eq!(out, one, "layer {n}, {count} indices");
        }
    }
    // The first and last boards of a layer, and every board of a small one.
    let all: Vec<u64> = (0..layer_size(5)).collect();
    unrank_many(5, &all, &mut out);
    assert!(out.iter().enumerate().all(|(i, b)| rank(b).unwrap() == i as u64));
    unrank_many(48, &[0, layer_size(48) - 1], &mut out);
    assert_eq!(out, [unrank_unchecked(48, 0), unrank_unchecked(48, layer_size(48) - 1)]);
}

/// [`RankBase::rank_changed`] against [`rank_unchecked`]: random boards of every stone count
/// (in a layer or not) as bases, their stones moved about within random pits `lo..=hi`.
#[test]
fn split_ranks_are_the_ranks() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    let (mut inside, mut outside) = (0, 0);
    for n in 0..=MAX_STONES {
        for _ in 0..300 {
            let mut base = [0u8; PITS];
            for _ in 0..n {
                base[next(PITS as u64) as usize] += 1;
            }
            let ranks = RankBase::new(&base);
            for _ in 0..8 {
                let lo = next(ROW as u64 + 1) as usize;
                let hi = lo + next((PITS - lo) as u64) as usize;
                let mut b = base;
                let stones: u8 = b[lo..=hi].iter().sum();
                b[lo..=hi].fill(0);
                for _ in 0..stones {
                    b[lo + next((hi - lo + 1) as u64) as usize] += 1;
                }
                let want = in_some_layer(&b).then(|| rank_unchecked(&b));
                assert_eq!(ranks.rank_changed(&b, lo, hi), want, "{base:?} -> {b:?}, pits {lo}..={hi}");
                if want.is_some() {
                    inside += 1;
                } else {
                    outside += 1;
                }
            }
        }
    }
    assert!(inside > 50_000 && outside > 10_000, "{inside} boards in a layer, {outside} outside");
}

#[test]
fn layer_size_formula() {
    assert_eq!(layer_size(0), 1);
    assert_eq!(layer_size(1), 12);
    assert_eq!(layer_size(48), 203_648_015_935);
}

/// The internal ranking's speed on layer 24 (the public `rank`, `unrank` and walk are timed by
/// `cargo bench --bench index`): nanoseconds per `rank_unchecked`, per `unrank_unchecked` one by
/// one and per index of `unrank_many` (eight in lockstep). Ignored: a measurement, not a check;
/// `cargo test --release -p oware --lib -- --ignored internal_timings --nocapture`.
#[test]
#[ignore]
fn internal_timings() {
    use std::hint::black_box;
    use std::time::Instant;
    const LAYER: u32 = 24;
    const BATCH: usize = 4096;
    const ROUNDS: usize = 200;
    let size = layer_size(LAYER);
    let mut rng = crate::test_support::SplitMix64(0xBE7C_0001);
    let indices: Vec<u64> = (0..BATCH).map(|_| rng.below(size)).collect();
    let boards: Vec<Board> = indices.iter().map(|&i| unrank_unchecked(LAYER, i)).collect();
    let per = |t: Instant| t.elapsed().as_nanos() as f64 / (ROUNDS * BATCH) as f64;
    let t = Instant::now();
    let mut acc = 0u64;
    for _ in 0..ROUNDS {
        for b in &boards {
            acc = acc.wrapping_add(rank_unchecked(black_box(b)));
        }
    }
    let ranked = per(t);
    let t = Instant::now();
    for _ in 0..ROUNDS {
        for &i in &indices {
            acc = acc.wrapping_add(u64::from(unrank_unchecked(LAYER, black_box(i))[11]));
        }
    }
    let one_by_one = per(t);
    let mut many = Vec::with_capacity(BATCH);
    let t = Instant::now();
    for _ in 0..ROUNDS {
        unrank_many(LAYER, black_box(&indices), &mut many);
        acc = acc.wrapping_add(many.iter().map(|b| u64::from(b[11])).sum::<u64>());
    }
    let lockstep = per(t);
    black_box(acc);
    println!("layer {LAYER}: rank_unchecked {ranked:.1} ns, unrank_unchecked {one_by_one:.1} ns, unrank_many {lockstep:.1} ns per index");
}
