//! The un-move generator ([`for_each_predecessor`]) against the forward moves of the simple
//! generator (`tests/common`): every reported parent really moves to the child without capture,
//! every such parent is reported, once, and ranks from its changed pits alone
//! (`index::RankBase::rank_changed`). Moved here from the integration tests' worked examples
//! because the ranking is internal.

use crate::test_support as common;

use std::collections::{BTreeSet, HashMap};

use crate::index::{in_some_layer, rank_unchecked, RankBase};
use crate::rules::{for_each_predecessor, turned, Board, Ruleset};
use common::{random_board, simple_moves, SplitMix64};

/// True when the board's opponent row (pits 6..11) has an empty pit: the board is in a layer.
fn in_layer(b: &Board) -> bool {
    b[6..].contains(&0)
}

/// The reported predecessors of `child`, checked one by one: each really moves to `child`
/// (confirmed with the simple generator) without capture, and none is reported twice.
fn checked_predecessors(rules: Ruleset, child: &Board) -> BTreeSet<(Board, usize)> {
    let mut found = BTreeSet::new();
    let base = turned(child);
    let ranks = RankBase::new(&base);
    for_each_predecessor(rules, child, |parent, how| {
        let pit = how.pit;
        // The parent is the turned child outside the changed pits, with as many stones in them,
        // so it is ranked from them alone.
        let (lo, hi) = how.changed();
        assert!(lo <= 6 && lo <= hi && hi < 12, "{rules}: changed pits {lo}..={hi} of {how:?}");
        assert!((0..12).filter(|k| !(lo..=hi).contains(k)).all(|k| parent[k] == base[k]), "{rules}: {parent:?} differs from {base:?} outside {lo}..={hi}");
        let sum = |b: &Board| b[lo..=hi].iter().map(|&c| u32::from(c)).sum::<u32>();
        assert_eq!(sum(parent), sum(&base), "{rules}: {parent:?} {how:?}");
        assert_eq!(ranks.rank_changed(parent, lo, hi), in_some_layer(parent).then(|| rank_unchecked(parent)), "{rules}: {parent:?} {how:?}");
        let fresh = found.insert((*parent, pit));
        assert!(fresh, "{rules}: predecessor {parent:?} pit {pit} of {child:?} reported twice");
        let m = simple_moves(rules, parent);
        let outcome = m.moves.iter().find(|(p, _)| *p == pit).map(|(_, o)| *o);
        assert_eq!(
            outcome,
            Some(common::SimpleOutcome::Child { captured: 0, child: *child }),
            "{rules}: reported predecessor {parent:?} (pit {pit}) does not move to {child:?} without capture"
        );
    });
    found
}

#[test]
fn predecessors_of_random_children_are_real_parents() {
    let mut rng = SplitMix64(0x0BAC_00FF);
    let mut reported = 0usize;
    for _ in 0..20_000 {
        let child = random_board(&mut rng);
        for rules in Ruleset::ALL {
            reported += checked_predecessors(rules, &child).len();
        }
    }
    assert!(reported > 50_000, "too few predecessors exercised: {reported}");
}

#[test]
fn every_parent_is_found_among_its_childs_predecessors() {
    let mut rng = SplitMix64(0x00FA_07E5);
    let (mut in_layers, mut others) = (0usize, 0usize);
    for _ in 0..20_000 {
        let parent = random_board(&mut rng);
        for rules in Ruleset::ALL {
            for (pit, o) in simple_moves(rules, &parent).moves {
                let common::SimpleOutcome::Child { captured: 0, child } = o else { continue };
                let preds = checked_predecessors(rules, &child);
                assert!(
                    preds.contains(&(parent, pit)),
                    "{rules}: {parent:?} moves (pit {pit}) to {child:?} without capture but is not among its predecessors {preds:?}"
                );
                if in_layer(&parent) {
                    in_layers += 1;
                } else {
                    others += 1;
                }
            }
        }
    }
    assert!(in_layers > 100_000 && others > 1_000, "{in_layers} parents in layers, {others} outside");
}

/// On every board of up to 6 stones, the predecessors of each board are exactly the boards of the
/// same stone count that move to it without capture (no-capture moves keep the count, so this
/// finite set holds every possible parent).
#[test]
fn predecessors_are_exactly_the_parents_on_small_boards() {
    fn rec(b: &mut Board, pit: usize, left: u8, out: &mut Vec<Board>) {
        if pit == 11 {
            b[11] = left;
            out.push(*b);
            return;
        }
        for c in 0..=left {
            b[pit] = c;
            rec(b, pit + 1, left - c, out);
        }
    }
    for n in 0..=6u8 {
        let mut boards = Vec::new();
        rec(&mut [0; 12], 0, n, &mut boards);
        for rules in Ruleset::ALL {
            let mut parents: HashMap<Board, BTreeSet<(Board, usize)>> = HashMap::new();
            for b in &boards {
                for (pit, o) in simple_moves(rules, b).moves {
                    if let common::SimpleOutcome::Child { captured: 0, child } = o {
                        parents.entry(child).or_default().insert((*b, pit));
                    }
                }
            }
            for child in &boards {
                let expected = parents.remove(child).unwrap_or_default();
                assert_eq!(checked_predecessors(rules, child), expected, "{rules}: predecessors of {child:?}");
            }
            assert!(parents.is_empty(), "{rules}: children outside the {n}-stone boards");
        }
    }
}
