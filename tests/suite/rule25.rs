//! The 25-stone rule: every exact claim the search makes with captured counts, on every position
//! of the small layers with captured counts near 24, against a reference solver of the game with
//! captured stones.
//!
//! The reference shares nothing with the library beyond the plain types: its own move generator
//! (`tests/common`), its states `(board, mover's stones, opponent's stones)` in a hash map, and
//! forward iteration over all of them. A state where a side has more than 24 (or both 24) is
//! over: the board is split evenly, unless the side to move has no legal move (the rules share
//! it out then).
//!
//! - `awari`, where endless play shares the board evenly: the values iterated from 0 (after k
//!   sweeps, the game cut off after k moves with 0 at the cut), as `src/solver/tests/reference.rs` does
//!   for the layers. Every exact claim must equal them.
//! - `abapa`, where a repetition gives each side his row (a value that depends on the path): the
//!   bounds iterated from `-n` and `+n`, which each side can force in finitely many moves. An
//!   exact claim rests on a finite proof, so it must equal both.

use std::collections::HashMap;
use std::sync::Arc;

use crate::common::{brute_force_layer, simple_moves, SimpleOutcome};
use oware::builder::{build, BuildConfig, Silent};
use oware::game::{Captured, Game};
use oware::probe::Database;
use oware::search::{Control, Engine, Limits, MoverCaptured, Root, ScoreBound};
use oware::{Board, Position, Ruleset, Side};

/// The largest layer covered.
const MAX: u32 = 6;

/// A state: the board (mover first), the mover's and the opponent's captured stones (capped at
/// 25: the game is over either way).
type State = (Board, u8, u8);

enum Node {
    /// The game is over here, with this value for the mover.
    Over(i8),
    /// The moves: those that end the game (their values) and those that go on (stones
    /// captured, the next state).
    Moves { ends: Vec<i8>, next: Vec<(i8, usize)> },
}

struct Reference {
    index: HashMap<State, usize>,
    states: Vec<State>,
    nodes: Vec<Node>,
}

fn key(board: Board, m: u32, o: u32) -> State {
    (board, m.min(25) as u8, o.min(25) as u8)
}

fn over(m: u8, o: u8) -> bool {
    m > 24 || o > 24 || (m == 24 && o == 24)
}

impl Reference {
    /// Every board of layers `0..=MAX` with every pair of captured counts that makes 48 with it
    /// (each at most 25), and every state play reaches from them.
    fn new(rules: Ruleset) -> Reference {
        let mut r = Reference { index: HashMap::new(), states: Vec::new(), nodes: Vec::new() };
        for n in 0..=MAX {
            for b in brute_force_layer(n) {
                for m in (48 - n).saturating_sub(25)..=25u32.min(48 - n) {
                    r.add(key(b, m, 48 - n - m));
                }
            }
        }
        let mut next = 0;
        while next < r.states.len() {
            let (b, m, o) = r.states[next];
            let moves = simple_moves(rules, &b);
            let node = if let Some(e) = moves.ending {
                Node::Over(e)
            } else if over(m, o) {
                Node::Over(0)
            } else {
                let (mut ends, mut next) = (Vec::new(), Vec::new());
                for (_, out) in moves.moves {
                    match out {
                        SimpleOutcome::End { value } => ends.push(value),
                        SimpleOutcome::Child { captured, child } => {
                            next.push((captured as i8, r.add(key(child, u32::from(o), u32::from(m) + u32::from(captured)))));
                        }
                    }
                }
                Node::Moves { ends, next }
            };
            r.nodes.push(node);
            next += 1;
        }
        r
    }

    /// The number of state `s`, added when new.
    fn add(&mut self, s: State) -> usize {
        if let Some(&i) = self.index.get(&s) {
            return i;
        }
        self.states.push(s);
        self.index.insert(s, self.states.len() - 1);
        self.states.len() - 1
    }

    /// One sweep of `best` over every state: a state's best over its moves, a move to a state
    /// worth `w` (from `from`) scoring `captured - w`.
    fn sweep(&self, from: &[i8], best: impl Fn(i8, i8) -> i8 + Sync) -> Vec<i8> {
        self.nodes
            .iter()
            .map(|node| match node {
                Node::Over(v) => *v,
                Node::Moves { ends, next } => {
                    let mut v = i8::MIN;
                    for &e in ends {
                        v = best(v, e);
                    }
                    for &(c, s) in next {
                        v = best(v, c - from[s]);
                    }
                    v
                }
            })
            .collect()
    }

    /// Awari: the values, iterated from 0 to their fixed point.
    fn values(&self) -> Vec<i8> {
        let mut v = vec![0i8; self.states.len()];
        loop {
            let next = self.sweep(&v, i8::max);
            if next == v {
                return v;
            }
            v = next;
        }
    }

    /// Abapa: what the mover can force in finitely many moves, at least and at most: the
    /// bounds iterated from `-n` and `+n` to their fixed points.
    fn forced(&self) -> (Vec<i8>, Vec<i8>) {
        let n = |i: usize| self.states[i].0.iter().map(|&x| x as i8).sum::<i8>();
        let mut lo: Vec<i8> = (0..self.states.len()).map(|i| -n(i)).collect();
        let mut hi: Vec<i8> = (0..self.states.len()).map(n).collect();
        loop {
            let (l, h) = (self.sweep(&hi, i8::max), self.sweep(&lo, i8::max));
            if l == lo && h == hi {
                return (lo, hi);
            }
            (lo, hi) = (l, h);
        }
    }
}

/// Searches every position of layers `2..=MAX` with captured counts near 24 (each side 18..24,
/// making 48 with the board) and checks each exact claim, of the root and of each root move,
/// with `truth(state) = (low, high)` (proven bounds) of the reference. Returns (roots searched,
/// exact roots).
fn check_claims(rules: Ruleset, depth: u32, reference: &Reference, truth: impl Fn(usize) -> (i8, i8)) -> (usize, usize) {
    // Under abapa with the forced-capture bounds, which the search uses in a game.
    let dir = tempfile::tempdir().unwrap();
    let bounds = rules.own_side_repetition();
    let config = BuildConfig {
        rules,
        max_stones: MAX,
        dir: dir.path().into(),
        companions: oware::error::FileContent::selected([(bounds, oware::error::FileContent::Bounds)]),
        ..Default::default()
    };
    build(&config, &Silent).unwrap();
    let db = Database::open(dir.path(), rules).unwrap();
    let mut engine = Engine::new(rules, Some(Arc::new(db)), None).unwrap();
    // A small table: it is cleared before every root.
    engine.set_hash_mb(1);
    let (mut roots, mut exact) = (0, 0);
    for n in 2..=MAX {
        for board in brute_force_layer(n) {
            for m in 18..=24u32 {
                let Some(o) = (48 - n).checked_sub(m).filter(|o| (18..=24).contains(o)) else { continue };
                if m == 24 && o == 24 {
                    continue;
                }
                let position = Position::new(board).unwrap();
                let root = Root::in_game(position, Some(MoverCaptured { mover: m, opponent: o }), Vec::new());
                let limits = Limits { depth: Some(depth), all_moves: true, ..Limits::default() };
                engine.clear();
                let r = engine.search(&root, &limits, &Control::new(), &mut |_| {}).unwrap();
                let base = (m as i32 - o as i32) * 100;
                let at = |s: State| reference.index[&s];
                let (lo, hi) = truth(at(key(board, m, o)));
                let ctx = format!("{rules} {board:?} {m}:{o}: {r:?}");
                roots += 1;
                if r.exact {
                    exact += 1;
                    assert_eq!((r.score, r.score), (base + i32::from(lo) * 100, base + i32::from(hi) * 100), "{ctx}");
                }
                for rm in r.moves.iter().filter(|rm| rm.exact) {
                    let mv = simple_moves(rules, &board).moves.into_iter().find(|(p, _)| *p == rm.pit as usize).unwrap().1;
                    let (mlo, mhi) = match mv {
                        SimpleOutcome::End { value } => (value, value),
                        SimpleOutcome::Child { captured, child } => {
                            let (l, h) = truth(at(key(child, o, m + u32::from(captured))));
                            (captured as i8 - h, captured as i8 - l)
                        }
                    };
                    let (mlo, mhi) = (base + i32::from(mlo) * 100, base + i32::from(mhi) * 100);
                    match rm.bound {
                        ScoreBound::Equal => assert_eq!((rm.score, rm.score), (mlo, mhi), "move {}: {ctx}", rm.pit),
                        ScoreBound::Upper => assert!(mhi <= rm.score, "move {} at most {}: {ctx}", rm.pit, rm.score),
                        ScoreBound::Lower => assert!(mlo >= rm.score, "move {} at least {}: {ctx}", rm.pit, rm.score),
                    }
                }
            }
        }
    }
    (roots, exact)
}

#[test]
fn awari_exact_claims_with_captured_counts_near_24_match_the_reference() {
    let reference = Reference::new(Ruleset::Awari);
    let values = reference.values();
    let (roots, exact) = check_claims(Ruleset::Awari, 4, &reference, |s| (values[s], values[s]));
    // Inside these layers every value under the rule is solved: every root is exact.
    assert_eq!(exact, roots, "{exact} of {roots} roots exact");
    assert!(roots > 30_000, "{roots}");
}

#[test]
fn abapa_exact_claims_with_captured_counts_near_24_rest_on_forced_play() {
    let rules = Ruleset::ALL[1];
    let reference = Reference::new(rules);
    let (lo, hi) = reference.forced();
    let (roots, exact) = check_claims(rules, 6, &reference, |s| (lo[s], hi[s]));
    // Where each side can force the end, the search proves it (64 % of these roots); elsewhere
    // it claims nothing.
    assert!(exact * 2 > roots, "{exact} of {roots} roots exact");
}

#[test]
fn the_layer_value_is_not_the_game_value_near_24() {
    // The position: S: 0 1 0 0 0 0  N: 1 1 0 0 0 2, South to move, 20:23 captured. The
    // layers say -8 (-3 and the board's -5, played out); the game ends when North passes 24: -5.
    let r = Reference::new(Ruleset::Awari);
    let values = r.values();
    let board = [0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 2];
    // South ends with 21.5, North with 26.5: the board's share is -2.
    assert_eq!(values[r.index[&key(board, 20, 23)]], -2);
}

#[test]
fn abapa_self_play_keeps_what_the_bounds_force() {
    // Issue 52, item 7: from S: 0 1 1 1 1 1  N: 0 1 0 3 1 2, South to move with 18:18, South
    // can force 5 of the 12 stones (23 in all). Among moves of equal score the engine once took
    // the fastest capture (the depth to capture), which gave up the 23rd stone; ties now go to
    // the higher floor (what the mover is sure of) first.
    let rules = Ruleset::ALL[1];
    let dir = tempfile::tempdir().unwrap();
    let config = BuildConfig {
        rules,
        max_stones: 12,
        dir: dir.path().into(),
        companions: vec![oware::error::FileContent::Bounds, oware::error::FileContent::Dtc],
        ..Default::default()
    };
    build(&config, &Silent).unwrap();
    let db = Arc::new(Database::open(dir.path(), rules).unwrap());
    let start = Position::new([0, 1, 1, 1, 1, 1, 0, 1, 0, 3, 1, 2]).unwrap();
    let forced = db.bounds(&start).unwrap().mover;
    assert_eq!(forced, 5);
    let engine = Engine::new(rules, Some(db), None).unwrap();
    for depth in [4, 8] {
        let mut game = Game::from_position(rules, start, Side::South, Some(Captured { south: 18, north: 18 }));
        while game.end().is_none() {
            let r = engine.search(&game.root(), &Limits { depth: Some(depth), ..Limits::default() }, &Control::new(), &mut |_| {}).unwrap();
            game.play(r.best_pit.unwrap()).unwrap();
        }
        let v = game.verdict().unwrap();
        assert!(v.south >= 23.0, "depth {depth}: South ends with {} ({:?})", v.south, game.end());
    }
}
