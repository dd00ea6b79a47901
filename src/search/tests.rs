//! The engine's answers checked against the layers: every exact claim must be the true value.

use super::*;
use crate::builder::{self, BuildConfig, Silent};
use crate::index::unrank;
use crate::rules::GrandSlam;
use std::time::Duration;

fn built(rules: Ruleset, max: u32, bounds: bool) -> (tempfile::TempDir, Arc<Database>) {
    let dir = tempfile::tempdir().unwrap();
    let config = BuildConfig {
        rules,
        max_stones: max,
        dir: dir.path().into(),
        max_memory: None,
        companions: crate::error::FileContent::selected([(bounds, crate::error::FileContent::Bounds)]),
        ..Default::default()
    };
    builder::build(&config, &Silent).unwrap();
    let db = Arc::new(Database::open(dir.path(), rules).unwrap());
    (dir, db)
}

/// Deterministic pseudo-random positions of layer `n` with legal moves.
fn sample(db: &Database, n: u32, count: usize, seed: u64) -> Vec<Position> {
    let len = db.layer(n).unwrap().len();
    let mut out = Vec::new();
    let mut x = seed;
    while out.len() < count {
        x = splitmix(x);
        let p = Position::new(unrank(n, x % len).unwrap()).unwrap();
        if !db.rules().moves(p.board()).is_empty() {
            out.push(p);
        }
    }
    out
}

fn run(engine: &Engine, root: &Root, limits: Limits) -> Report {
    engine.search(root, &limits, &Control::new(), &mut |_| {}).unwrap()
}

#[test]
fn inside_the_layers_every_move_is_exact_at_once() {
    let (_d, db) = built(Ruleset::Awari, 10, false);
    let engine = Engine::new(Ruleset::Awari, Some(db.clone()), None).unwrap();
    assert_eq!(engine.tables(), Some(10));
    for p in sample(&db, 10, 200, 1) {
        let r = run(&engine, &Root::new(p), Limits { depth: Some(4), all_moves: true, ..Default::default() });
        assert!(r.exact, "{p}");
        assert_eq!(r.depth, 1, "an exact root ends the search");
        assert_eq!(r.score, i32::from(db.value(&p).unwrap()) * 100, "{p}");
        for mv in db.move_values(&p).unwrap() {
            let got = r.moves.iter().find(|m| m.pit == mv.pit).unwrap();
            assert!(got.exact && got.bound == ScoreBound::Equal);
            assert_eq!(got.score, i32::from(mv.value) * 100, "{p} pit {}", mv.pit);
        }
        assert!(db.best_moves(&p).unwrap().iter().any(|m| Some(m.pit) == r.best_pit));
    }
}

/// Above the tables: whatever the search claims exact is the true value, and most claims at
/// two layers above the tables are made.
#[test]
fn exact_claims_above_the_tables_are_true() {
    for rules in [Ruleset::Awari, Ruleset::Abapa(GrandSlam::NoCapture)] {
        let (_d, db) = built(rules, 12, false);
        for tables in [Some(8), None] {
            let engine = match tables {
                Some(t) => Engine::new(rules, Some(db.clone()), Some(t)),
                None => Engine::new(rules, None, None),
            }
            .unwrap();
            let mut claims = 0;
            // Small layers just above the tables, deep: many lines end in captures into them.
            for n in 9..=12 {
                for p in sample(&db, n, 40, u64::from(n) * 7 + 3) {
                    for all_moves in [false, true] {
                        let r = run(&engine, &Root::new(p), Limits { depth: Some(if n <= 10 { 14 } else { 9 }), all_moves, ..Default::default() });
                        let truth = i32::from(db.value(&p).unwrap()) * 100;
                        if r.exact {
                            claims += 1;
                            assert_eq!(r.score, truth, "{rules} tables {tables:?} {p}");
                        }
                        let values = db.move_values(&p).unwrap();
                        for m in r.moves.iter().filter(|m| m.exact) {
                            claims += 1;
                            let t = i32::from(values.iter().find(|v| v.pit == m.pit).unwrap().value) * 100;
                            match m.bound {
                                ScoreBound::Equal => assert_eq!(m.score, t, "{rules} {p} pit {}", m.pit),
                                ScoreBound::Upper => assert!(t <= m.score, "{rules} {p} pit {}", m.pit),
                                ScoreBound::Lower => assert!(t >= m.score, "{rules} {p} pit {}", m.pit),
                            }
                        }
                    }
                }
            }
            eprintln!("{rules} tables {tables:?}: {claims} exact answers");
            if tables.is_some() {
                assert!(claims >= 100, "{rules}: only {claims} exact answers to check");
            }
        }
    }
}

#[test]
fn a_fixed_depth_answer_does_not_depend_on_threads() {
    let (_d, db) = built(Ruleset::Awari, 8, false);
    let mut one = Engine::new(Ruleset::Awari, Some(db.clone()), None).unwrap();
    let mut two = Engine::new(Ruleset::Awari, Some(db), None).unwrap();
    one.set_threads(1);
    two.set_threads(2);
    let limits = Limits { depth: Some(7), ..Default::default() };
    let a = run(&one, &Root::new(Position::start()), limits.clone());
    let b = run(&two, &Root::new(Position::start()), limits);
    assert_eq!((a.best_pit, a.score, a.nodes, &a.pv), (b.best_pit, b.score, b.nodes, &b.pv));
    assert!(!a.exact && a.depth == 7 && a.best_pit.is_some());
}

/// Old: a second search of the same root, its table warm from the first, answered the root's
/// moves from the table one ply down and returned a line of one or two plies (4 of 5 page
/// loads of the start). Now nodes of the line take no unproven entry, and the line goes on
/// where an entry ended it, following the table's moves.
#[test]
fn a_warm_table_does_not_cut_the_line_short() {
    let (_d, db) = built(Ruleset::Awari, 8, false);
    let engine = Engine::new(Ruleset::Awari, Some(db), None).unwrap();
    for root in [Root::new(Position::start()), Root::in_game(Position::start(), Some(MoverCaptured::default()), Vec::new())] {
        for depth in [8, 8, 9, 6] {
            let r = run(&engine, &root, Limits { depth: Some(depth), all_moves: true, ..Default::default() });
            assert!(r.pv.len() >= depth as usize - 1, "depth {depth}: line {:?}", r.pv);
            // The line is legal from the root.
            let mut board = *root.position.board();
            for &pit in &r.pv {
                match engine.rules.play(&board, pit as usize).map(|m| m.outcome) {
                    Some(Outcome::Child { child, .. }) => board = child,
                    Some(Outcome::End { .. }) => break,
                    None => panic!("line {:?}: pit {pit} is not a move", r.pv),
                }
            }
        }
    }
}

#[test]
fn the_25_stone_rule_and_game_ends_settle_the_root() {
    let (_d, db) = built(Ruleset::Awari, 4, false);
    let p: Position = "0 0 0 0 2 1 1 0 0 0 0 0".parse().unwrap();
    let root = Root::in_game(p, Some(MoverCaptured { mover: 25, opponent: 19 }), Vec::new());
    let bare = Engine::new(Ruleset::Awari, None, None).unwrap();
    let r = run(&bare, &root, Limits { depth: Some(5), ..Default::default() });
    assert!(r.exact && r.best_pit.is_none(), "the game is over; the board's stones split evenly by definition");
    assert_eq!(r.score, 600);
    // With the layers too: the 25-stone rule ends the game, whatever the board would be worth.
    let tables = Engine::new(Ruleset::Awari, Some(db.clone()), None).unwrap();
    assert_ne!(db.value(&p).unwrap(), 0);
    let r = run(&tables, &root, Limits { depth: Some(5), ..Default::default() });
    assert!(r.exact && r.best_pit.is_none());
    assert_eq!(r.score, 600);
    // No stones in the mover's row: the game is over, the opponent takes his.
    let p: Position = "0 0 0 0 0 0 0 3 0 0 0 0".parse().unwrap();
    let r = run(&bare, &Root::new(p), Limits { depth: Some(5), ..Default::default() });
    assert!(r.exact && r.best_pit.is_none());
    assert_eq!(r.score, -300);
}

#[test]
fn with_captured_counts_the_score_is_the_games() {
    let (_d, db) = built(Ruleset::Awari, 8, false);
    let engine = Engine::new(Ruleset::Awari, Some(db.clone()), None).unwrap();
    for p in sample(&db, 8, 50, 5) {
        let v = i32::from(db.value(&p).unwrap());
        for (m, o) in [(10, 30), (20, 20), (27, 13)] {
            let root = Root::in_game(p, Some(MoverCaptured { mover: m, opponent: o }), Vec::new());
            let r = run(&engine, &root, Limits { depth: Some(3), ..Default::default() });
            assert!(r.exact, "{p} {m}:{o}");
            // A side past 24 has ended the game: the board's stones split evenly.
            let board = if m > 24 || o > 24 { 0 } else { v };
            assert_eq!(r.score, (m as i32 - o as i32 + board) * 100, "{p} {m}:{o}");
            assert_eq!(r.best_pit.is_none(), m > 24 || o > 24);
        }
    }
}

#[test]
fn repetitions_are_never_exact() {
    // Two lone stones chasing each other: play can cycle.
    let engine = Engine::new(Ruleset::Awari, None, None).unwrap();
    let p: Position = "0 0 0 0 0 1 0 0 0 0 0 1".parse().unwrap();
    let r = run(&engine, &Root::new(p), Limits { depth: Some(12), all_moves: true, ..Default::default() });
    assert!(r.best_pit.is_some());
    let (_d, db) = built(Ruleset::Awari, 2, false);
    let truth = i32::from(db.value(&p).unwrap()) * 100;
    assert!(!r.exact || r.score == truth);
}

#[test]
fn a_stopped_search_still_answers() {
    let engine = Engine::new(Ruleset::Awari, None, None).unwrap();
    let control = Control::new();
    control.stop();
    let r = engine.search(&Root::new(Position::start()), &Limits::default(), &control, &mut |_| {}).unwrap();
    assert!(r.best_pit.is_some() && r.depth == 1 && !r.exact);
    let r = run(&engine, &Root::new(Position::start()), Limits { movetime: Some(Duration::from_millis(50)), ..Default::default() });
    assert!(r.best_pit.is_some() && r.depth >= 1);
}

/// The true score of `board` (mover-first) with the positions `seen` before it since the last
/// capture (oldest first, the last one its parent's), under the rule that a repetition ends the
/// game with the stones split evenly: a plain minimax over every line (captures lead to
/// positions with nothing before them, whose layer value is their true value). `None` past
/// `budget` nodes.
fn truth(db: &Database, board: &Board, seen: &mut Vec<Board>, budget: &mut u64) -> Option<i32> {
    if *budget == 0 || seen.len() > 40 {
        return None;
    }
    *budget -= 1;
    let len = seen.len();
    if (2..=len).step_by(2).any(|back| seen[len - back] == *board) {
        return Some(0);
    }
    let moves = db.rules().moves(board);
    if let Some(e) = moves.ending() {
        return Some(i32::from(e));
    }
    let mut best = i32::MIN;
    for m in moves.as_slice() {
        let v = match m.outcome {
            Outcome::End { value } => i32::from(value),
            Outcome::Child { captured, child } if captured > 0 => i32::from(captured) - i32::from(db.value(&Position::new(child).unwrap()).unwrap()),
            Outcome::Child { child, .. } => {
                seen.push(*board);
                let r = truth(db, &child, seen, budget);
                seen.pop();
                -r?
            }
        };
        best = best.max(v);
    }
    Some(best)
}

/// Games that wander without captures: from a sampled position, up to `plies` random quiet
/// moves that repeat nothing. Returns (history, root).
fn wander(db: &Database, start: Position, plies: usize, seed: u64) -> (Vec<Board>, Position) {
    let mut history = Vec::new();
    let mut board = *start.board();
    let mut x = seed;
    for _ in 0..plies {
        let quiet: Vec<Board> = db
            .rules()
            .moves(&board)
            .as_slice()
            .iter()
            .filter_map(|m| match m.outcome {
                Outcome::Child { captured: 0, child } => Some(child),
                _ => None,
            })
            .filter(|c| {
                let mut all = history.clone();
                all.push(board);
                let len = all.len();
                !(2..=len).step_by(2).any(|back| all[len - back] == *c)
            })
            .collect();
        if quiet.is_empty() {
            break;
        }
        x = splitmix(x);
        history.push(board);
        board = quiet[(x % quiet.len() as u64) as usize];
    }
    (history, Position::new(board).unwrap())
}

/// With a game's history the search scores repetitions as the game ends them, and every exact
/// claim (the root's, each move's, each proven bound) is the true score with that history,
/// checked against a plain minimax of the game. One engine serves every search, histories and
/// none, so that nothing proven with one history serves another.
#[test]
fn exact_claims_with_a_history_are_true() {
    for rules in [Ruleset::Awari, Ruleset::Abapa(GrandSlam::NoCapture)] {
        let (_d, db) = built(rules, 6, false);
        let (mut claims, mut checked, mut repetitions, mut changed, mut changed_moves) = (0, 0, 0, 0, 0);
        for tables in [Some(6), Some(3)] {
            let engine = Engine::new(rules, Some(db.clone()), tables).unwrap();
            for n in 3..=6 {
                for (k, p) in sample(&db, n, 3000, u64::from(n) * 31 + 7).into_iter().enumerate() {
                    let (history, root) = wander(&db, p, 1 + k % 14, k as u64);
                    let mut budget = 100_000;
                    let Some(true_root) = truth(&db, root.board(), &mut history.clone(), &mut budget) else { continue };
                    checked += 1;
                    changed += usize::from(true_root != i32::from(db.value(&root).unwrap()));
                    for depth in [2, 6, 14] {
                        // The same position without its history first: its proven entries
                        // must not answer for the search with the history.
                        run(&engine, &Root::new(root), Limits { depth: Some(depth), ..Default::default() });
                        let r = run(
                            &engine,
                            &Root::in_game(root, None, history.clone()),
                            Limits { depth: Some(depth), all_moves: depth == 6, ..Default::default() },
                        );
                        if r.exact {
                            claims += 1;
                            assert_eq!(r.score, true_root * 100, "{rules} tables {tables:?} {root} after {history:?}");
                        }
                        for m in r.moves.iter().filter(|m| m.exact) {
                            let mv = *rules.moves(root.board()).from_pit(m.pit).unwrap();
                            let t = match mv.outcome {
                                Outcome::End { value } => i32::from(value),
                                Outcome::Child { captured, child } if captured > 0 => {
                                    i32::from(captured) - i32::from(db.value(&Position::new(child).unwrap()).unwrap())
                                }
                                Outcome::Child { child, .. } => {
                                    let mut seen = history.clone();
                                    seen.push(*root.board());
                                    let len = seen.len();
                                    if (2..=len).step_by(2).any(|back| seen[len - back] == child) {
                                        repetitions += 1;
                                    }
                                    let mut budget = 100_000;
                                    let Some(t) = truth(&db, &child, &mut seen, &mut budget) else { continue };
                                    -t
                                }
                            } * 100;
                            claims += 1;
                            let free = db.move_values(&root).unwrap().iter().find(|v| v.pit == m.pit).map(|v| i32::from(v.value) * 100);
                            changed_moves += usize::from(free != Some(t));
                            match m.bound {
                                ScoreBound::Equal => assert_eq!(m.score, t, "{rules} tables {tables:?} {root} pit {} after {history:?}", m.pit),
                                ScoreBound::Upper => assert!(t <= m.score, "{rules} {root} pit {}", m.pit),
                                ScoreBound::Lower => assert!(t >= m.score, "{rules} {root} pit {}", m.pit),
                            }
                        }
                    }
                }
            }
        }
        eprintln!(
            "{rules}: {checked} roots with histories ({changed} worth another value than without), {claims} exact claims checked \
             ({changed_moves} on moves worth another value than without, {repetitions} on moves repeating a position)"
        );
        assert!(
            checked >= 5000 && changed >= 20 && claims >= 20000 && changed_moves >= 100 && repetitions >= 100,
            "{rules}: too few cases ({checked}, {changed}, {claims}, {changed_moves}, {repetitions})"
        );
    }
}

#[test]
fn a_table_larger_than_three_quarters_of_the_memory_available_is_refused() {
    let Some(available) = crate::sys::memory_available() else { return };
    let mb = available >> 20;
    assert!(check_hash_mb(1).is_ok() || mb < 2, "{mb} MiB available");
    // Twice what is available now (the figure may move a little between the reads).
    let err = check_hash_mb(2 * mb).unwrap_err();
    assert!(matches!(err, Error::Usage(_)));
    let text = err.to_string();
    assert!(text.starts_with(&format!("{} MiB is more than three quarters of the ", 2 * mb)) && text.ends_with(" MiB of memory available"), "{text}");
    assert!(check_hash_mb(u64::MAX).is_err(), "no overflow");
}

#[test]
fn a_made_up_history_is_refused() {
    // Issue 52, item 11: a position no quiet move leads from to the next could fake a repetition.
    let engine = Engine::new(Ruleset::Awari, None, None).unwrap();
    let start = Position::start();
    let limits = Limits { depth: Some(1), ..Limits::default() };
    let bad = Root::in_game(start, None, vec![*start.board()]);
    let err = engine.search(&bad, &limits, &Control::new(), &mut |_| {}).unwrap_err();
    assert!(matches!(err, Error::Usage(ref m) if m.contains("position 1 of 1")), "{err}");
    // A real one: the start, South plays F; the root is North to move.
    let after = match Ruleset::Awari.play(start.board(), 5).unwrap().outcome {
        Outcome::Child { child, .. } => child,
        Outcome::End { .. } => unreachable!(),
    };
    let good = Root::in_game(Position::new(after).unwrap(), None, vec![*start.board()]);
    engine.search(&good, &limits, &Control::new(), &mut |_| {}).unwrap();
    // Positions with more stones, before the last capture, are not the game's recent past.
    let older = Root::in_game(Position::new(after).unwrap(), None, vec![[4; 12], [0; 12]]);
    assert!(engine.search(&older, &limits, &Control::new(), &mut |_| {}).is_ok());
}

/// How a line from `root` ends, with the root's captured counts: the game's final score (the
/// root mover's view, in stones) when the line reaches the game's end (the 25-stone rule, a
/// position without moves, a move that ends the game, or a repetition, which shares the
/// board evenly under awari), `None` when the line stops before.
fn line_outcome(rules: Ruleset, root: &Root, pv: &[u8]) -> Option<i32> {
    let c = root.captured.unwrap();
    let (mut m, mut o, mut sign) = (c.mover as i32, c.opponent as i32, 1);
    let mut board = *root.position.board();
    let mut seen = vec![(board, 0usize)];
    for (i, &pit) in pv.iter().enumerate() {
        match rules.play(&board, pit as usize).map(|mv| mv.outcome) {
            Some(Outcome::End { value }) => return Some(sign * (m - o + i32::from(value))),
            Some(Outcome::Child { captured, child }) => {
                if captured > 0 {
                    seen.clear();
                }
                (m, o, sign, board) = (o, m + i32::from(captured), -sign, child);
                let ending = rules.moves(&board).ending().map_or(0, i32::from);
                if m > 24 || o > 24 || (m == 24 && o == 24) || rules.moves(&board).is_empty() {
                    return Some(sign * (m - o + ending));
                }
                if seen.iter().any(|&(b, p)| b == board && p % 2 == (i + 1) % 2) {
                    return Some(sign * (m - o));
                }
                seen.push((board, i + 1));
            }
            None => panic!("line {pv:?}: pit {pit} is not a move"),
        }
    }
    None
}

/// Issue 66: with the captured stones known, the line stopped at its first capture into the
/// tables wherever the 25-stone rule could change the layers' values there (the position of
/// the issue, 16:16 captured over layers 0..14, had a line of one ply). It now goes on to the
/// game's end, and an exact score is the end the line reaches.
#[test]
fn with_captured_counts_the_line_goes_on_to_the_games_end() {
    // Layers 0..12 built (for the sample), 0..10 probed: the roots are above the tables.
    let (_d, db) = built(Ruleset::Awari, 12, false);
    let engine = Engine::new(Ruleset::Awari, Some(db.clone()), Some(10)).unwrap();
    let (mut exact, mut long, mut ended) = (0, 0, 0);
    for p in sample(&db, 12, 25, 66) {
        for (m, o) in [(18, 18), (20, 16), (15, 21)] {
            let root = Root::in_game(p, Some(MoverCaptured { mover: m, opponent: o }), Vec::new());
            let r = run(&engine, &root, Limits { depth: Some(8), ..Default::default() });
            let end = line_outcome(Ruleset::Awari, &root, &r.pv);
            // A line that reaches the tables goes on to the game's end (the rule's values are
            // solved to 10 stones); one whose search ends above them (at the horizon) cannot.
            let mut board = *p.board();
            let reaches = r.pv.iter().any(|&pit| match engine.rules.play(&board, pit as usize).map(|mv| mv.outcome) {
                Some(Outcome::Child { child, .. }) => {
                    board = child;
                    stones(&child) <= 10
                }
                _ => true,
            });
            // (Or it is as long as a line goes: 60 plies of play that keeps the value.)
            assert!(end.is_some() || !reaches || r.pv.len() >= 60, "{p} {m}:{o}: line {:?} stops before the game's end", r.pv);
            ended += usize::from(end.is_some());
            if let (true, Some(end)) = (r.exact, end) {
                exact += 1;
                assert_eq!(end * 100, r.score, "{p} {m}:{o}: line {:?}", r.pv);
            }
            let first = r.pv.iter().scan(*p.board(), |b, &pit| {
                let taken = match engine.rules.play(b, pit as usize).map(|mv| mv.outcome) {
                    Some(Outcome::Child { captured, child }) => {
                        *b = child;
                        captured > 0
                    }
                    _ => true,
                };
                Some(taken)
            });
            if first.take_while(|&t| !t).count() + 1 < r.pv.len() {
                long += 1;
            }
        }
    }
    eprintln!("{exact} exact answers ended by their line, {ended} lines to the game's end, {long} lines past their first capture, of 75");
    assert!(exact >= 3, "{exact} exact answers of 75 ended by their line");
    assert!(ended >= 25, "{ended} lines of 75 go on to the game's end");
    assert!(long >= 35, "{long} lines of 75 go past their first capture");
}

/// Above the solved values under the rule (more than 10 stones), the line follows the layers'
/// best moves, as the search's estimate does, until the game ends.
#[test]
fn with_captured_counts_the_line_goes_on_above_the_rules_values() {
    let (_d, db) = built(Ruleset::Awari, 12, false);
    let engine = Engine::new(Ruleset::Awari, Some(db.clone()), None).unwrap();
    let mut past = 0;
    for p in sample(&db, 12, 12, 7).into_iter().chain(sample(&db, 11, 12, 8)) {
        // Inside the layers, the rule in play (quotas 7 and 8) and not solved (11, 12 stones).
        let n = p.stones();
        let (m, o) = (18, 48 - n - 18);
        let root = Root::in_game(p, Some(MoverCaptured { mover: m, opponent: o }), Vec::new());
        let r = run(&engine, &root, Limits { depth: Some(6), ..Default::default() });
        let end = line_outcome(Ruleset::Awari, &root, &r.pv);
        assert!(end.is_some() || r.pv.len() == 60, "{p} {m}:{o}: line {:?}", r.pv);
        if r.pv.len() > 4 {
            past += 1;
        }
    }
    assert!(past >= 16, "{past} lines of 24 longer than 4 plies");
}

/// Issue 67, item 7: `oware play --from "S: 0 1 0 2 1 0  N: 5 0 0 1 0 0  N" --captured 20:18
/// --computer south`, North playing a: the computer's first move inside the tables was an
/// estimate, its clocked search ending early while the 25-stone rule's values it met were
/// solved on another thread. It now waits for them within its time: the answer is exact (and
/// the rule's value), or the whole time went by.
#[test]
fn a_clocked_search_uses_its_time_for_the_rules_values() {
    let (_d, db) = built(Ruleset::Awari, 12, false);
    let board: Board = [0, 1, 0, 2, 1, 0, 0, 1, 1, 2, 1, 1];
    let rule = GameValues::new(Ruleset::Awari).value(&board, 20, 18).unwrap();
    let GameValue::Exact(v) = rule else { panic!("{rule:?}") };
    let movetime = Duration::from_secs(3);
    let engine = Engine::new(Ruleset::Awari, Some(db), None).unwrap();
    let root = Root::in_game(Position::new(board).unwrap(), Some(MoverCaptured { mover: 20, opponent: 18 }), Vec::new());
    let t = std::time::Instant::now();
    let r = run(&engine, &root, Limits { movetime: Some(movetime), ..Default::default() });
    let took = t.elapsed();
    assert!(r.exact || took + Duration::from_millis(50) >= movetime, "an estimate ({}) after {took:?} of {movetime:?}", r.score);
    if r.exact {
        assert_eq!(r.score, (i32::from(v) + 2) * 100, "{r:?}");
    }
}
