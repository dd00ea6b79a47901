//! The builder against a plain reference, thread-count independence, and the layer below never read. (Safe resumption of a
//! killed build, through the program, is the program's tests: `cli/tests/suite/builds.rs`.)
//!
//! The reference solver is forward fixed-point iteration from 0 (`docs/values.md`: after k sweeps a
//! value is that of the game cut off after k moves with 0 at the cut; the first sweep that changes
//! nothing gives the exact values), over the move graph of the simple generator in
//! `tests/common`, with brute-force ranking (a sorted list of the layer's boards). It shares no
//! code with the builder beyond the plain data types.

use crate::test_support as common;

use std::collections::HashMap;

use crate::index::layer_size;
use crate::progress::NoProgress;
use crate::rules::{Board, Ruleset};
use crate::solver::solve_layer;
use crate::storage::DatabaseDir;
use common::{brute_force_layer, build_in, files_equal, fixture, simple_moves, SimpleOutcome};

/// Exact values of layer `n` by forward iteration; `lower[m]` are the reference values of layer m.
fn reference_layer(rules: Ruleset, n: u32, lower: &[(HashMap<Board, usize>, Vec<i8>)]) -> (HashMap<Board, usize>, Vec<i8>) {
    let boards = brute_force_layer(n);
    let index: HashMap<Board, usize> = boards.iter().enumerate().map(|(i, b)| (*b, i)).collect();
    // The move graph once: for each position, its exits and its same-layer children.
    let mut exits: Vec<Option<i8>> = Vec::with_capacity(boards.len());
    let mut children: Vec<Vec<usize>> = Vec::with_capacity(boards.len());
    for b in &boards {
        let m = simple_moves(rules, b);
        let mut best: Option<i8> = m.ending;
        let mut same = Vec::new();
        for (_, o) in &m.moves {
            let e = match *o {
                SimpleOutcome::End { value } => value,
                SimpleOutcome::Child { captured: 0, child } => {
                    same.push(index[&child]);
                    continue;
                }
                SimpleOutcome::Child { captured, child } => {
                    let (idx, vals) = &lower[(n - captured as u32) as usize];
                    captured as i8 - vals[idx[&child]]
                }
            };
            best = Some(best.map_or(e, |b| b.max(e)));
        }
        exits.push(best);
        children.push(same);
    }
    let mut v = vec![0i8; boards.len()];
    loop {
        let next: Vec<i8> = (0..boards.len())
            .map(|i| {
                let via_children = children[i].iter().map(|&c| -v[c]).max();
                match (exits[i], via_children) {
                    (Some(a), Some(b)) => a.max(b),
                    (Some(a), None) => a,
                    (None, Some(b)) => b,
                    (None, None) => unreachable!("a position has a move or an ending"),
                }
            })
            .collect();
        if next == v {
            return (index, v);
        }
        v = next;
    }
}

#[test]
fn builder_matches_reference_on_layers_0_to_10_for_every_ruleset() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for rules in Ruleset::ALL {
        let mut reference = Vec::new();
        let mut built: Vec<Vec<i8>> = Vec::new();
        for n in 0..=10 {
            let r = reference_layer(rules, n, &reference);
            let mut out = vec![0u8; layer_size(n) as usize];
            let lower: Vec<&[i8]> = built.iter().map(|v| v.as_slice()).collect();
            pool.install(|| solve_layer(rules, n, &lower, &mut out, &NoProgress)).unwrap();
            let got: Vec<i8> = out.iter().map(|&b| b as i8).collect();
            let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != r.1[i]).collect();
            assert!(
                bad.is_empty(),
                "{rules} layer {n}: {} positions differ, first {:?}: built {} reference {}",
                bad.len(),
                brute_force_layer(n)[bad[0]],
                got[bad[0]],
                r.1[bad[0]]
            );
            built.push(got);
            reference.push(r);
        }
    }
}

#[test]
fn one_and_two_threads_give_identical_files() {
    for rules in [Ruleset::Awari, Ruleset::Abapa(crate::rules::GrandSlam::NoCapture)] {
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        build_in(one.path(), rules, 13, 1);
        build_in(two.path(), rules, 13, 2);
        files_equal(one.path(), two.path(), rules, 13);
    }
}

#[test]
fn the_solver_never_reads_the_layer_below() {
    for rules in [Ruleset::Awari, "abapa-spare-last".parse().unwrap(), "abapa-capture".parse().unwrap()] {
        let full = fixture(rules, 8);
        let dir = DatabaseDir::native(full, rules).unwrap();
        let layers: Vec<_> = (0..=8).map(|n| dir.open_layer::<crate::storage::ValuesKind>(n, true).unwrap()).collect();
        let mut lower: Vec<&[i8]> = layers[..8].iter().map(|l| l.values()).collect();
        lower[7] = &[];
        let mut out = vec![0u8; layer_size(8) as usize];
        solve_layer(rules, 8, &lower, &mut out, &NoProgress).unwrap();
        assert_eq!(out, layers[8].bytes(), "{rules}: layer 8 without layer 7");
        // Not given at all works the same.
        solve_layer(rules, 8, &lower[..7], &mut out, &NoProgress).unwrap();
        assert_eq!(out, layers[8].bytes(), "{rules}: layer 8 with layers 0..6 given");
    }
}
