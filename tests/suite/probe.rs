//! The probing library, on databases built by `build::build` in temporary directories. (`oware
//! query` and `oware moves` on the same databases are the program's tests:
//! `cli/tests/suite/query.rs`.)
//!
//! The awari layers 0..16 (needed by the published 16-stone example) are built once per test
//! binary and shared; tests that damage files build their own small databases.

use crate::common;

use common::{check_line, flip_payload_byte, manual_value, random_layer_board, SplitMix64, EXAMPLE};

use std::path::Path;
use std::sync::{Arc, Barrier};

use oware::index::{layer_size, LayerWalker};
use oware::line::{PrincipalVariation, PvEnd};
use oware::probe::{Database, MoveResult, Split};
use oware::rules::GrandSlam;
use oware::storage::{native_path, ValuesKind};
use oware::{Board, Error, Position, Ruleset};

const ABAPA: Ruleset = Ruleset::Abapa(GrandSlam::NoCapture);

// build(rules, max_stones): a private directory holding layers 0..=max_stones, free to change.
use common::private_fixture as build;

/// Awari layers 0..16, built once for the whole test binary (read-only).
fn awari16() -> &'static Path {
    common::fixture(Ruleset::Awari, 16)
}

fn pos(s: &str) -> Position {
    s.parse().expect("test position")
}

/// A random board with `n` stones whose opponent row is full (outside every layer), `n >= 6`.
fn random_full_row_board(rng: &mut SplitMix64, n: u32) -> Board {
    let mut b = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1];
    for _ in 6..n {
        b[rng.below(12) as usize] += 1;
    }
    b
}

// ---------------------------------------------------------------------------------------------
// Published facts

#[test]
fn published_example_library() {
    let db = Database::open(awari16(), Ruleset::Awari).unwrap();
    let p = pos(EXAMPLE);
    assert_eq!(p.stones(), 16);
    assert_eq!(db.value(&p).unwrap(), 0);
    let moves = db.move_values(&p).unwrap();
    assert_eq!(moves.iter().map(|m| m.pit).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(moves.iter().map(|m| m.value).collect::<Vec<_>>(), vec![-1, -1, -2, -2, -2, 0]);
    assert_eq!(moves[5].captured(), Some(3));
    for m in &moves[..5] {
        assert_eq!(m.captured(), Some(0));
    }
    // Each move value is captured - v(child).
    for m in &moves {
        let MoveResult::Continues { captured, child } = m.result else { panic!("no ending move here") };
        assert_eq!(m.value, captured as i8 - db.value(&child).unwrap());
    }
    let best = db.best_moves(&p).unwrap();
    assert_eq!(best.iter().map(|m| m.pit).collect::<Vec<_>>(), vec![5]);
    assert_eq!(Split::of(&p, 0), Split { mover: 8.0, opponent: 8.0 });

    // The principal variation: each step starts where the previous one led, plays a best move
    // of its position, and the values follow v(p) = captured - v(child).
    let line = db.principal_variation(&p, 200).unwrap();
    check_line(&db, Ruleset::Awari, &p, &line, 200);
    assert_eq!(line.steps[0].played.pit, 5);
    assert!(matches!(line.end, PvEnd::GameOver | PvEnd::EndlessPlay), "{:?}", line.end);
    // A shorter limit cuts the same line.
    let short = db.principal_variation(&p, 3).unwrap();
    assert_eq!(short.steps.len(), 3);
    assert_eq!(short.end, PvEnd::PlyLimit);
    assert_eq!(short.steps[..], line.steps[..3]);
    let none = db.principal_variation(&p, 0).unwrap();
    assert_eq!(none, PrincipalVariation { steps: Vec::new(), end: PvEnd::PlyLimit });
    // `solution` gives the same, probing the root's moves once.
    let a = db.solution(&p, 200).unwrap();
    assert_eq!((a.value, &a.moves, &a.line), (0, &moves, &line));
}

/// Stones the root's mover captures along a line minus those his opponent captures.
fn net_captures(line: &PrincipalVariation) -> i32 {
    let mut net = 0;
    for (i, step) in line.steps.iter().enumerate() {
        let c = i32::from(step.played.captured().expect("no ending move before a repetition"));
        net += if i % 2 == 0 { c } else { -c };
    }
    net
}

/// Every position of layers 1..=8: its line (at most 200 plies) is made of best moves and
/// claims endless play only at value 0. A line from a non-zero value may end in endless play
/// only after its captures have realised the whole value (e.g. `1 0 0 3 0 0 0 0 0 0 0 0`, +2:
/// two stones captured, then the last two chase each other round the board); none goes round
/// in a circle at a non-zero value.
#[test]
fn lines_of_small_layers() {
    let db = Database::open(awari16(), Ruleset::Awari).unwrap();
    let (mut nonzero, mut cycles, mut repetitions, mut realised_then_endless, mut game_over, mut longest) = (0u64, 0u64, 0u64, 0u64, 0u64, 0usize);
    let mut endless = 0u64;
    for n in 1..=8 {
        for (_, board) in LayerWalker::new(n, 0..layer_size(n)).unwrap() {
            let p = Position::new(board).unwrap();
            let value = db.value(&p).unwrap();
            let line = db.principal_variation(&p, 200).unwrap();
            check_line(&db, Ruleset::Awari, &p, &line, 200);
            longest = longest.max(line.steps.len());
            nonzero += u64::from(value != 0);
            match line.end {
                PvEnd::GameOver => game_over += 1,
                PvEnd::Repetition { .. } => {
                    repetitions += 1;
                    if value != 0 {
                        assert_eq!(net_captures(&line), i32::from(value), "{p}");
                        realised_then_endless += 1;
                    }
                }
                PvEnd::Cycle { .. } => cycles += 1,
                PvEnd::EndlessPlay => {
                    endless += 1;
                    if value != 0 {
                        assert_eq!(net_captures(&line), i32::from(value), "{p}");
                        realised_then_endless += 1;
                    }
                }
                PvEnd::PlyLimit => {}
            }
        }
    }
    eprintln!(
        "layers 1..=8: {nonzero} non-zero values; line ends: {game_over} game over, {endless} endless play \
         ({realised_then_endless} of them from non-zero values, after captures realising the value), \
         {repetitions} repetitions, {cycles} cycles; longest line {longest} plies"
    );
    assert!(nonzero > 10_000);
    assert!(endless > 1_000 && realised_then_endless > 0);
    // Endless play is told by the search, never by going round.
    assert_eq!((cycles, repetitions), (0, 0));
}

fn lone_stone_values(db: &Database) -> Vec<i8> {
    (0..12)
        .map(|p| {
            let mut b = [0u8; 12];
            b[p] = 1;
            db.value(&Position::new(b).unwrap()).unwrap()
        })
        .collect()
}

#[test]
fn layer_one_facts_awari_and_abapa() {
    let expected = vec![1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1];
    let awari = Database::open(awari16(), Ruleset::Awari).unwrap();
    assert_eq!(lone_stone_values(&awari), expected);
    let dir = build(ABAPA, 2);
    let abapa = Database::open(dir.path(), ABAPA).unwrap();
    assert_eq!(lone_stone_values(&abapa), expected);
}

// ---------------------------------------------------------------------------------------------
// Positions outside every layer

#[test]
fn full_opponent_row_answered_from_children() {
    let db = Database::open(awari16(), Ruleset::Awari).unwrap();
    let mut rng = SplitMix64(7);
    let mut seen_moves = 0;
    for _ in 0..3000 {
        let n = 6 + rng.below(11) as u32; // 6..=16
        let b = random_full_row_board(&mut rng, n);
        let p = Position::new(b).unwrap();
        let v = db.value(&p).unwrap();
        assert_eq!(v, manual_value(&db, Ruleset::Awari, &b), "{p}");
        let moves = db.move_values(&p).unwrap();
        if let Some(best) = moves.iter().map(|m| m.value).max() {
            assert_eq!(best, v, "{p}");
            seen_moves += 1;
        }
    }
    assert!(seen_moves > 1000);
    // The mover cannot move: the opponent takes all six.
    assert_eq!(db.value(&pos("0 0 0 0 0 0 1 1 1 1 1 1")).unwrap(), -6);

    // Same under abapa, with its feeding and grand-slam rules.
    let dir = build(ABAPA, 12);
    let abapa = Database::open(dir.path(), ABAPA).unwrap();
    for _ in 0..2000 {
        let n = 6 + rng.below(7) as u32; // 6..=12
        let b = random_full_row_board(&mut rng, n);
        assert_eq!(abapa.value(&Position::new(b).unwrap()).unwrap(), manual_value(&abapa, ABAPA, &b), "{b:?}");
    }

    // Stored values obey the same recursion: looking up a position in its layer agrees with
    // deriving it from its children (a wrong rank would break this).
    for _ in 0..3000 {
        let b = random_layer_board(&mut rng, 16);
        assert_eq!(db.value(&Position::new(b).unwrap()).unwrap(), manual_value(&db, Ruleset::Awari, &b), "{b:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Threads

#[test]
fn many_threads_agree_with_one() {
    let mut rng = SplitMix64(12345);
    let positions: Vec<Position> = (0..6000)
        .map(|i| {
            let b = if i % 10 == 0 {
                let n = 6 + rng.below(7) as u32;
                random_full_row_board(&mut rng, n)
            } else {
                random_layer_board(&mut rng, 12)
            };
            Position::new(b).unwrap()
        })
        .collect();
    let reference: Vec<(i8, usize)> = {
        let db = Database::open(awari16(), Ruleset::Awari).unwrap();
        positions.iter().map(|p| (db.value(p).unwrap(), db.move_values(p).unwrap().len())).collect()
    };
    // A fresh database: the threads race to open every layer.
    let db = Arc::new(Database::open(awari16(), Ruleset::Awari).unwrap());
    let positions = Arc::new(positions);
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (db, positions, barrier) = (db.clone(), positions.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                // Each thread walks the list from its own starting point.
                let len = positions.len();
                let mut out = vec![(0i8, 0usize); len];
                for k in 0..len {
                    let i = (k + t * len / 8) % len;
                    let p = &positions[i];
                    out[i] = (db.value(p).unwrap(), db.move_values(p).unwrap().len());
                }
                out
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().expect("thread"), reference);
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

#[test]
fn layers_open_lazily() {
    let dir = build(Ruleset::Awari, 4);
    let db = Database::open(dir.path(), Ruleset::Awari).unwrap();
    assert_eq!(db.layers_present(), vec![0, 1, 2, 3, 4]);
    // Damage layer 4 after opening the database: probes of other layers never read it.
    flip_payload_byte(&native_path::<ValuesKind>(dir.path(), Ruleset::Awari, 4), 0);
    assert_eq!(db.value(&pos("0 0 0 0 1 0 0 0 0 0 0 0")).unwrap(), 1);
    assert!(db.value(&pos("1 1 1 0 0 0 0 0 0 0 0 0")).is_ok());
    assert!(matches!(db.value(&pos("1 1 1 1 0 0 0 0 0 0 0 0")), Err(Error::Corrupt { .. })));
    assert!(matches!(db.open_layers(4), Err(Error::Corrupt { .. })));
    assert!(db.open_layers(3).is_ok());
}
