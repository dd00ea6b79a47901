//! Forced-capture bounds: the builder against a plain reference, the relation with the values,
//! and the bounds files (build, resume, damage, query, verify, stats).
//!
//! The reference iterates both equations of `docs/bounds.md` from zero on every position until
//! nothing changes (the least solution), over the move graph of the simple generator in
//! `tests/common`, with brute-force ranking. It shares no code with the builder beyond the plain
//! data types.

mod common;

use std::collections::HashMap;

use common::{brute_force_layer, simple_moves, SimpleOutcome};
use oware::bounds::{payload_len, Bounds, Codec};
use oware::index::layer_size;
use oware::progress::NoProgress;
use oware::rules::{Board, Ruleset};
use oware::solver::{solve_bounds, solve_layer};

type RefLayer = (HashMap<Board, usize>, Vec<(u8, u8)>);

/// The least solution of the two equations on layer `n`, by iteration from zero.
fn reference_layer(rules: Ruleset, n: u32, lower: &[RefLayer]) -> RefLayer {
    let boards = brute_force_layer(n);
    let index: HashMap<Board, usize> = boards.iter().enumerate().map(|(i, b)| (*b, i)).collect();
    let share = |value: i8| ((n as i32 + i32::from(value)) / 2) as u8;
    // The move graph once: per position, what its exits give (mover, opponent) and its
    // same-layer children.
    let mut exits: Vec<Vec<(u8, u8)>> = Vec::with_capacity(boards.len());
    let mut children: Vec<Vec<usize>> = Vec::with_capacity(boards.len());
    for b in &boards {
        let m = simple_moves(rules, b);
        let (mut e, mut c) = (Vec::new(), Vec::new());
        if let Some(end) = m.ending {
            e.push((share(end), n as u8 - share(end)));
        }
        for (_, o) in &m.moves {
            match *o {
                SimpleOutcome::End { value } => e.push((share(value), n as u8 - share(value))),
                SimpleOutcome::Child { captured: 0, child } => c.push(index[&child]),
                SimpleOutcome::Child { captured, child } => {
                    let (idx, vals) = &lower[(n - u32::from(captured)) as usize];
                    let (cm, cn) = vals[idx[&child]];
                    e.push((captured + cn, cm));
                }
            }
        }
        exits.push(e);
        children.push(c);
    }
    let mut g = vec![(0u8, 0u8); boards.len()];
    loop {
        let next: Vec<(u8, u8)> = (0..boards.len())
            .map(|i| {
                // After a same-layer move the mover gets the child's opponent bound, and the
                // opponent the child's mover bound.
                let all = exits[i].iter().copied().chain(children[i].iter().map(|&c| (g[c].1, g[c].0)));
                all.fold((0u8, u8::MAX), |(m, o), (a, b)| (m.max(a), o.min(b)))
            })
            .collect();
        if next == g {
            return (index, g);
        }
        g = next;
    }
}

/// Builds the bounds payloads of layers `0..=max` with the builder.
fn built(rules: Ruleset, max: u32, threads: usize) -> Vec<Vec<u8>> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let mut all: Vec<Vec<u8>> = Vec::new();
    for n in 0..=max {
        let mut out = vec![0u8; payload_len(n) as usize];
        let lower: Vec<&[u8]> = all.iter().map(|v| v.as_slice()).collect();
        pool.install(|| solve_bounds(rules, n, &lower, &mut out, &NoProgress)).unwrap();
        all.push(out);
    }
    all
}

fn decode(n: u32, payload: &[u8]) -> Vec<Bounds> {
    let c = Codec::new(n);
    (0..layer_size(n)).map(|i| c.get(payload, i).expect("a valid code")).collect()
}

#[test]
fn builder_matches_reference_on_layers_0_to_10_for_every_ruleset() {
    for rules in Ruleset::ALL {
        let payloads = built(rules, 10, 2);
        let mut reference: Vec<RefLayer> = Vec::new();
        for n in 0..=10 {
            let r = reference_layer(rules, n, &reference);
            let got = decode(n, &payloads[n as usize]);
            let bad: Vec<usize> = (0..got.len()).filter(|&i| (got[i].mover, got[i].opponent) != r.1[i]).collect();
            assert!(
                bad.is_empty(),
                "{rules} layer {n}: {} positions differ, first {:?}: built {:?} reference {:?}",
                bad.len(),
                brute_force_layer(n)[bad[0]],
                got[bad[0]],
                r.1[bad[0]]
            );
            reference.push(r);
        }
    }
}

#[test]
fn one_and_two_threads_give_identical_bounds() {
    for rules in [Ruleset::Awari, Ruleset::Abapa(oware::rules::GrandSlam::NoCapture)] {
        assert_eq!(built(rules, 14, 1), built(rules, 14, 2), "{rules}");
    }
}

#[test]
fn bounds_agree_with_values_on_layers_0_to_14_for_every_ruleset() {
    for rules in Ruleset::ALL {
        let payloads = built(rules, 14, 2);
        let mut values: Vec<Vec<i8>> = Vec::new();
        let mut forced = 0u64;
        for n in 0..=14u32 {
            let mut out = vec![0u8; layer_size(n) as usize];
            let lower: Vec<&[i8]> = values.iter().map(|v| v.as_slice()).collect();
            solve_layer(rules, n, &lower, &mut out, &NoProgress).unwrap();
            let v: Vec<i8> = out.iter().map(|&b| b as i8).collect();
            for (i, b) in decode(n, &payloads[n as usize]).into_iter().enumerate() {
                assert!(b.consistent_with(n, v[i]), "{rules} layer {n} index {i}: value {} bounds {b:?}", v[i]);
                if b.forced(n) {
                    forced += 1;
                    // A forced split leaves no room: the value is the split.
                    assert_eq!(i32::from(v[i]), 2 * i32::from(b.mover) - n as i32);
                }
            }
            values.push(v);
        }
        assert!(forced > 0, "{rules}: no forced split at all");
    }
}
