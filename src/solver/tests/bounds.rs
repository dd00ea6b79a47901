//! Forced-capture bounds: the builder against a plain reference, and the relation with the
//! values. (The bounds files through the program, built, resumed, damaged, queried, verified,
//! are the program's tests: `cli/tests/suite/bounds_files.rs`.)
//!
//! The reference iterates both equations of `docs/bounds.md` from zero on every position until
//! nothing changes (the least solution), over the move graph of the simple generator in
//! `tests/common`, with brute-force ranking. It shares no code with the builder beyond the plain
//! data types.

use crate::test_support as common;

use std::collections::HashMap;

use crate::rules::{Board, Ruleset};
use common::{brute_force_layer, built, built_on_two, decode, simple_moves, SimpleOutcome};

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

#[test]
fn builder_matches_reference_on_layers_0_to_10_for_every_ruleset() {
    for rules in Ruleset::ALL {
        let payloads = &built_on_two(rules)[..=10];
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
    for rules in [Ruleset::Awari, Ruleset::Abapa(crate::rules::GrandSlam::NoCapture)] {
        assert!(built(rules, 14, 1) == built_on_two(rules), "{rules}");
    }
}

#[test]
fn bounds_agree_with_values_on_layers_0_to_14_for_every_ruleset() {
    for rules in Ruleset::ALL {
        let payloads = built_on_two(rules);
        // The values, solved in memory (shared with the other files of this binary).
        let values = super::memory_layers(rules, 14);
        let mut forced = 0u64;
        for n in 0..=14u32 {
            let v = super::as_i8(&values[n as usize]);
            for (i, b) in decode(n, &payloads[n as usize]).into_iter().enumerate() {
                assert!(b.consistent_with(n, v[i]), "{rules} layer {n} index {i}: value {} bounds {b:?}", v[i]);
                if b.forced(n) {
                    forced += 1;
                    // A forced split leaves no room: the value is the split.
                    assert_eq!(i32::from(v[i]), 2 * i32::from(b.mover) - n as i32);
                }
            }
        }
        assert!(forced > 0, "{rules}: no forced split at all");
    }
}
