//! Tests of the combinatorial indexer (`crate::index`) against independent references:
//! a brute-force enumeration of the small layers, the layer-size table of `docs/facts.md`, the key
//! order of random boards, and walks in index order over random ranges of every layer.
//!
//! Everything here is deterministic (a small seeded PRNG, no `rand` crate) and runs in a few
//! seconds with `cargo test --release -p oware --lib -- index::tests`.

use crate::test_support as common;

use common::{all_boards, brute_force_layer, SplitMix64};

use crate::index::{check_in_layer, chunks, in_some_layer, layer_size, rank, rank_unchecked, unrank, unrank_unchecked, LayerWalker, MAX_STONES};
use crate::{Board, Error};

const PITS: usize = 12;

/// The key the published order sorts by: `(b[11], b[10], ..., b[0])`.
fn key(b: &Board) -> [u8; PITS] {
    let mut k = *b;
    k.reverse();
    k
}

fn stones(b: &Board) -> u32 {
    b.iter().map(|&c| u32::from(c)).sum()
}

/// Whether the board belongs to its layer, written independently of the library.
fn in_layer(b: &Board) -> bool {
    b[6..].contains(&0)
}

/// A uniformly random composition of `n` stones into 12 pits (stars and bars), which may or
/// may not be in the layer.
fn random_composition(rng: &mut SplitMix64, n: u32) -> Board {
    // Choose 11 distinct bar positions among n + 11 slots.
    let slots = n as usize + 11;
    let mut bar = vec![false; slots];
    let mut placed = 0;
    while placed < 11 {
        let s = rng.below(slots as u64) as usize;
        if !bar[s] {
            bar[s] = true;
            placed += 1;
        }
    }
    let mut b = [0u8; PITS];
    let mut pit = 0;
    for &is_bar in &bar {
        if is_bar {
            pit += 1;
        } else {
            b[pit] += 1;
        }
    }
    b
}

/// A random board of layer `n`. Three shapes, so that both spread-out boards and boards with a
/// few big pits (large digits of the key, long runs of empty pits) are common.
fn random_layer_board(rng: &mut SplitMix64, n: u32) -> Board {
    loop {
        let b = match rng.below(3) {
            0 => random_composition(rng, n),
            1 => {
                // Stones thrown one at a time into a random subset of pits.
                let mask = rng.next_u64() as u16 & 0x0FFF;
                let pits: Vec<usize> = (0..PITS).filter(|&p| mask & (1 << p) != 0).collect();
                if pits.is_empty() {
                    continue;
                }
                let mut b = [0u8; PITS];
                for _ in 0..n {
                    b[pits[rng.below(pits.len() as u64) as usize]] += 1;
                }
                b
            }
            _ => {
                // Stones thrown into all pits but one opponent pit, which stays empty.
                let empty = 6 + rng.below(6) as usize;
                let mut b = [0u8; PITS];
                for _ in 0..n {
                    let mut p = rng.below(11) as usize;
                    if p >= empty {
                        p += 1;
                    }
                    b[p] += 1;
                }
                b
            }
        };
        if in_layer(&b) {
            assert_eq!(stones(&b), n);
            return b;
        }
    }
}

/// Layer sizes from the published table (`docs/facts.md`; layer 47 is absent there and never needed).
const FACTS_LAYER_SIZES: [(u32, u64); 48] = [
    (0, 1),
    (1, 12),
    (2, 78),
    (3, 364),
    (4, 1_365),
    (5, 4_368),
    (6, 12_375),
    (7, 31_812),
    (8, 75_504),
    (9, 167_596),
    (10, 351_351),
    (11, 701_064),
    (12, 1_339_702),
    (13, 2_464_320),
    (14, 4_381_818),
    (15, 7_558_200),
    (16, 12_685_179),
    (17, 20_768_748),
    (18, 33_245_212),
    (19, 52_131_156),
    (20, 80_214_915),
    (21, 121_298_320),
    (22, 180_498_825),
    (23, 264_623_580),
    (24, 382_628_610),
    (25, 546_177_996),
    (26, 770_319_837),
    (27, 1_074_297_808),
    (28, 1_482_519_324),
    (29, 2_025_703_680),
    (30, 2_742_236_068),
    (31, 3_679_756_080),
    (32, 4_897_012_197),
    (33, 6_466_016_844),
    (34, 8_474_539_866),
    (35, 11_028_981_756),
    (36, 14_257_671_649),
    (37, 18_314_638_992),
    (38, 23_383_911_915),
    (39, 29_684_399_668),
    (40, 37_475_421_060),
    (41, 47_062_945_644),
    (42, 58_806_619_443),
    (43, 73_127_652_312),
    (44, 90_517_649_586),
    (45, 111_548_476_480),
    (46, 136_883_249_790),
    (48, 203_648_015_935),
];

/// Cumulative column of the same table ("boards in layers 0..n").
const FACTS_CUMULATIVE: [(u32, u64); 8] = [
    (10, 644_826),
    (20, 216_135_140),
    (24, 1_165_184_475),
    (30, 9_806_439_188),
    (36, 58_610_417_580),
    (40, 167_468_789_215),
    (46, 685_415_382_470),
    (48, 889_063_398_405),
];

#[test]
fn layer_sizes_match_the_published_table() {
    for &(n, size) in &FACTS_LAYER_SIZES {
        assert_eq!(layer_size(n), size, "layer {n}");
    }
    for &(upto, cum) in &FACTS_CUMULATIVE {
        let sum: u64 = (0..=upto).filter(|&n| n != 47).map(layer_size).sum();
        assert_eq!(sum, cum, "layers 0..={upto}");
    }
    // The whole solution: layers 0..=46, layer 48 and the start position.
    let total: u64 = (0..=46).map(layer_size).sum::<u64>() + layer_size(48) + 1;
    assert_eq!(total, 889_063_398_406);
    // Every layer, 47 included (it exists as a set of boards though the game never needs it),
    // against C(n+11, 11) - C(n+5, 11) from a Pascal triangle in 128-bit arithmetic.
    let mut pascal = vec![vec![0u128; 12]; 60];
    for r in 0..60 {
        pascal[r][0] = 1;
        for k in 1..12.min(r + 1) {
            pascal[r][k] = pascal[r - 1][k - 1] + if k < r { pascal[r - 1][k] } else { 0 };
        }
    }
    for n in 0..=MAX_STONES as usize {
        let want = pascal[n + 11][11] - if n + 5 >= 11 { pascal[n + 5][11] } else { 0 };
        assert_eq!(u128::from(layer_size(n as u32)), want, "layer {n}");
    }
}

#[test]
fn small_layers_match_brute_force_exactly() {
    for n in 0..=10 {
        let expected = brute_force_layer(n);
        assert_eq!(expected.len() as u64, layer_size(n), "layer {n} size");
        // The whole layer in index order, from the walker.
        let walked: Vec<(u64, Board)> = LayerWalker::new(n, 0..u64::MAX).unwrap().collect();
        assert_eq!(walked.len(), expected.len(), "layer {n} walk length");
        for (i, b) in expected.iter().enumerate() {
            let i = i as u64;
            assert_eq!(walked[i as usize], (i, *b), "layer {n} walker at {i}");
            assert_eq!(rank(b).unwrap(), i, "rank of {b:?}");
            assert_eq!(rank_unchecked(b), i, "rank_unchecked of {b:?}");
            assert_eq!(unrank(n, i).unwrap(), *b, "unrank({n}, {i})");
            assert_eq!(unrank_unchecked(n, i), *b, "unrank_unchecked({n}, {i})");
        }
        // Every board left out by the filter is refused.
        for b in all_boards(n).iter().filter(|b| !in_layer(b)) {
            assert!(matches!(rank(b), Err(Error::NotInLayer { .. })), "{b:?} accepted");
            assert!(!in_some_layer(b));
        }
    }
}

#[test]
fn middle_layers_walk_is_strictly_increasing_and_complete() {
    // For layers too big to sort by brute force: a walk that yields only boards of the layer,
    // in strictly increasing key order, exactly layer_size (= the published count) of them, is
    // the layer in sorted order. Every board is ranked and unranked on the way.
    let layers: Vec<u32> = (11..=15).collect();
    std::thread::scope(|s| {
        for &n in &layers {
            s.spawn(move || {
                let mut prev: Option<Board> = None;
                let mut count = 0u64;
                for (i, b) in LayerWalker::new(n, 0..u64::MAX).unwrap() {
                    assert_eq!(i, count);
                    assert!(in_layer(&b) && stones(&b) == n, "layer {n}: {b:?} at {i}");
                    if let Some(p) = prev {
                        assert!(key(&p) < key(&b), "layer {n}: order broken at {i}");
                    }
                    assert_eq!(rank_unchecked(&b), i, "layer {n}: rank of {b:?}");
                    assert_eq!(unrank_unchecked(n, i), b, "layer {n}: unrank {i}");
                    prev = Some(b);
                    count += 1;
                }
                let published = FACTS_LAYER_SIZES.iter().find(|&&(m, _)| m == n).unwrap().1;
                assert_eq!(count, published, "layer {n} walk length");
            });
        }
    });
}

#[test]
fn random_boards_round_trip_and_keep_key_order() {
    const BOARDS: usize = 1_000_000;
    let mut rng = SplitMix64(0x5EED_0001);
    let mut prev_by_layer: Vec<Option<(Board, u64)>> = vec![None; MAX_STONES as usize + 1];
    let mut pairs_checked = 0u64;
    for _ in 0..BOARDS {
        let n = rng.below(u64::from(MAX_STONES) + 1) as u32;
        let b = random_layer_board(&mut rng, n);
        let i = rank(&b).unwrap();
        assert!(i < layer_size(n), "{b:?}: index {i} past layer {n}");
        assert_eq!(rank_unchecked(&b), i);
        assert_eq!(unrank(n, i).unwrap(), b, "round trip of {b:?}");

        // Order: against the previous random board of the same layer ...
        if let Some((p, j)) = prev_by_layer[n as usize] {
            assert_eq!(key(&p).cmp(&key(&b)), j.cmp(&i), "{p:?} ({j}) vs {b:?} ({i})");
            pairs_checked += 1;
        }
        prev_by_layer[n as usize] = Some((b, i));

        // ... and against a near neighbour: one stone moved between two pits.
        let from = rng.below(PITS as u64) as usize;
        let to = rng.below(PITS as u64) as usize;
        if b[from] > 0 && from != to {
            let mut c = b;
            c[from] -= 1;
            c[to] += 1;
            if in_layer(&c) {
                let k = rank(&c).unwrap();
                assert_eq!(key(&b).cmp(&key(&c)), i.cmp(&k), "{b:?} ({i}) vs {c:?} ({k})");
                assert_eq!(unrank(n, k).unwrap(), c);
                pairs_checked += 1;
            } else {
                assert!(rank(&c).is_err(), "{c:?} accepted");
            }
        }
    }
    assert!(pairs_checked > BOARDS as u64, "only {pairs_checked} pairs compared");
}

#[test]
fn random_indices_round_trip() {
    // The other direction, uniform over indices (so uniform over each layer's boards).
    let mut rng = SplitMix64(0x5EED_0002);
    for _ in 0..300_000 {
        let n = rng.below(u64::from(MAX_STONES) + 1) as u32;
        let i = rng.below(layer_size(n));
        let b = unrank(n, i).unwrap();
        assert!(in_layer(&b) && stones(&b) == n, "unrank({n}, {i}) = {b:?}");
        assert_eq!(rank(&b).unwrap(), i, "{b:?}");
    }
}

#[test]
fn layer_ends_are_the_extreme_keys() {
    for n in 0..=MAX_STONES {
        let size = layer_size(n);
        let mut first = [0u8; PITS];
        first[0] = n as u8;
        let mut last = [0u8; PITS];
        last[PITS - 1] = n as u8;
        assert_eq!(unrank(n, 0).unwrap(), first, "layer {n}");
        assert_eq!(unrank(n, size - 1).unwrap(), last, "layer {n}");
        assert_eq!(rank(&first).unwrap(), 0);
        assert_eq!(rank(&last).unwrap(), size - 1);
    }
}

/// Walks `range` of layer `n` and checks every step against `unrank` (and `rank`), the length,
/// the key order and the walker's `position`/`size_hint`.
fn check_walk(n: u32, start: u64, end: u64) {
    let size = layer_size(n);
    let (s, e) = (start.min(size), end.min(size));
    let s = s.min(e);
    let mut w = LayerWalker::new(n, start..end).unwrap();
    assert_eq!(w.position(), s);
    assert_eq!(w.size_hint(), ((e - s) as usize, Some((e - s) as usize)));
    let mut expect = s;
    let mut prev: Option<Board> = None;
    while let Some((i, b)) = w.next() {
        assert_eq!(i, expect, "layer {n} range {start}..{end}");
        assert_eq!(b, unrank(n, i).unwrap(), "layer {n} index {i}");
        assert_eq!(rank(&b).unwrap(), i);
        if let Some(p) = prev {
            assert!(key(&p) < key(&b));
        }
        prev = Some(b);
        expect += 1;
        assert_eq!(w.position(), expect);
    }
    assert_eq!(expect, e, "layer {n} range {start}..{end} ended early");
    assert!(w.next().is_none());
}

#[test]
fn walker_agrees_with_unrank_on_random_ranges() {
    let mut rng = SplitMix64(0x5EED_0003);
    // Random ranges of every layer, and extra ones of layers 40..=48.
    for round in 0..600 {
        let n = if round % 2 == 0 { rng.below(u64::from(MAX_STONES) + 1) as u32 } else { 40 + rng.below(9) as u32 };
        let size = layer_size(n);
        let start = rng.below(size);
        let len = 1 + rng.below(5_000);
        check_walk(n, start, start.saturating_add(len));
    }
    // The ends of big layers, ranges past the end, empty ranges.
    for n in [24, 40, 46, 47, 48] {
        let size = layer_size(n);
        check_walk(n, 0, 20_000);
        check_walk(n, size - 20_000, size);
        check_walk(n, size - 100, size + 100);
        check_walk(n, size + 5, size + 10);
        check_walk(n, 1000, 1000);
        check_walk(n, 1000, 10);
    }
    // One long stretch of layer 48 from a random place (many jumps over full opponent rows).
    let size = layer_size(48);
    let start = rng.below(size - 2_000_000);
    check_walk(48, start, start + 2_000_000);
}

#[test]
fn chunks_tile_the_layer() {
    for (n, chunk) in [(0, 1), (5, 7), (10, 1000), (20, 1 << 20), (48, 1 << 30)] {
        let mut next = 0;
        for r in chunks(n, chunk) {
            assert_eq!(r.start, next);
            assert!(r.end > r.start && r.end - r.start <= chunk);
            next = r.end;
        }
        assert_eq!(next, layer_size(n), "layer {n} chunk {chunk}");
    }
}

#[test]
fn rank_rejects_boards_outside_every_layer() {
    // Full opponent row: the start position and friends.
    for b in [[4u8; PITS], [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8], [42, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]] {
        match rank(&b) {
            Err(e @ Error::NotInLayer { layer, stones: s }) => {
                assert_eq!(layer, stones(&b));
                assert_eq!(s, layer);
                assert!(e.to_string().contains("no empty pit"), "{e}");
            }
            other => panic!("{b:?}: {other:?}"),
        }
        assert!(!in_some_layer(&b));
        assert!(check_in_layer(stones(&b), &b).is_err());
    }
    // More than 48 stones, with and without an empty opponent pit.
    for b in [[49u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 49], [5u8; PITS], [255; PITS], [40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]] {
        match rank(&b) {
            Err(Error::NotInLayer { layer, stones: s }) => assert_eq!((layer, s), (48, stones(&b))),
            other => panic!("{b:?}: {other:?}"),
        }
    }
    // check_in_layer: wrong stone count for the layer asked.
    let b = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert!(check_in_layer(1, &b).is_ok());
    assert!(matches!(check_in_layer(2, &b), Err(Error::NotInLayer { layer: 2, .. })));
}

#[test]
fn unrank_rejects_indices_past_the_end() {
    for n in [0, 1, 10, 24, 47, 48] {
        let size = layer_size(n);
        assert!(unrank(n, size - 1).is_ok());
        for i in [size, size + 1, u64::MAX] {
            match unrank(n, i) {
                Err(Error::IndexOutOfRange { layer, index, size: s }) => {
                    assert_eq!((layer, index, s), (n, i, size));
                }
                other => panic!("unrank({n}, {i}): {other:?}"),
            }
        }
    }
    // Layers that do not exist.
    for n in [49, 100, u32::MAX] {
        assert!(matches!(unrank(n, 0), Err(Error::IndexOutOfRange { .. })), "layer {n}");
        assert!(LayerWalker::new(n, 0..10).is_err(), "walker on layer {n}");
    }
}
