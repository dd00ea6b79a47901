//! What players use: the side form and houses, `oware game` (annotated records), `oware serve`
//! (the HTTP API, over real sockets) and `oware play` (scripted through stdin). Values are
//! cross-checked against the library's probes and a plain replay of the moves by the rules.

use crate::common;

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

use common::{oware, oware_with_input, s, Server, SplitMix64};
use oware::index::{layer_size, unrank_unchecked, LayerWalker};
use oware::line::PvEnd;
use oware::position::{house, Position, Side};
use oware::probe::Database;
use oware::rules::Outcome;
use oware::Ruleset;
use serde_json::Value;

/// Awari layers 0..=12, built once for every test of this binary (read-only).
fn awari12() -> &'static Path {
    common::fixture(Ruleset::Awari, 12)
}

/// Plays `houses` from `start` (South to move) by the rules alone: the positions before each
/// move and the stones each side captured.
fn replay(start: Position, houses: &[char]) -> (Vec<Position>, [u32; 2]) {
    let (mut pos, mut side, mut caps) = (start, 0usize, [0u32; 2]);
    let mut seen = Vec::new();
    for &h in houses {
        seen.push(pos);
        let pit = h.to_ascii_uppercase() as u8 - b'A';
        let m = Ruleset::Awari.moves(pos.board()).as_slice().iter().find(|m| m.pit == pit).copied().expect("legal");
        let Outcome::Child { captured, child } = m.outcome else { panic!("an ending move") };
        caps[side] += u32::from(captured);
        pos = Position::new(child).unwrap();
        side ^= 1;
    }
    (seen, caps)
}

#[test]
fn game_records_are_annotated_ply_by_ply() {
    let dir = awari12();
    let db = Database::open(dir, Ruleset::Awari).unwrap();
    // A record from a 10-stone position, North has 20 and South 18 captured already; the moves
    // include mistakes. The best line gives legal moves to follow.
    let start: Position = "S: 2 0 1 0 3 0  N: 0 1 0 2 1 0  S".parse().unwrap();
    let mut houses = Vec::new();
    let mut pos = start;
    let mut side = Side::South;
    for k in 0..6 {
        let moves = db.move_values(&pos).unwrap();
        if moves.is_empty() {
            break;
        }
        // Even plies play the worst move, odd plies the best.
        let m = if k % 2 == 0 { *moves.iter().min_by_key(|m| m.value).unwrap() } else { *moves.iter().max_by_key(|m| m.value).unwrap() };
        houses.push(house(side, m.pit));
        match m.child() {
            Some(c) => pos = *c,
            None => break,
        }
        side = side.other();
    }
    let record: Vec<String> = houses.iter().map(char::to_string).collect();
    let (code, out, err) = oware(
        &[
            &["game", "--dir", s(dir), "--json", "--captured", "18:20", "--from", "S: 2 0 1 0 3 0  N: 0 1 0 2 1 0  S"][..],
            &record.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let plies = v["plies"].as_array().unwrap();
    assert_eq!(plies.len(), houses.len());
    let (positions, caps) = replay(start, &houses);
    let mut score = [18u32, 20u32];
    for (i, p) in plies.iter().enumerate() {
        let before = positions[i];
        assert_eq!(p["before"]["position"], serde_json::json!(before.board()), "ply {i}");
        assert_eq!(p["house"], houses[i].to_string());
        let value = db.value(&before).unwrap();
        let moves = db.move_values(&before).unwrap();
        let played = moves.iter().find(|m| house(if i % 2 == 0 { Side::South } else { Side::North }, m.pit) == houses[i]).unwrap();
        assert_eq!(p["value"], value);
        assert_eq!(p["move_value"], played.value);
        assert_eq!(p["error"], value - played.value, "ply {i}");
        let best: Vec<Value> = moves
            .iter()
            .filter(|m| m.value == value)
            .map(|m| Value::from(house(if i % 2 == 0 { Side::South } else { Side::North }, m.pit).to_string()))
            .collect();
        assert_eq!(p["best_houses"], Value::from(best));
        score[i % 2] += u32::from(played.captured().unwrap());
        assert_eq!(p["score"], serde_json::json!({"south": score[0], "north": score[1]}), "ply {i}");
        // Best play's end from after the move: the mover's captured stones plus his share.
        let n = f64::from(before.stones());
        let mover_end = f64::from(score[i % 2] - u32::from(played.captured().unwrap())) + (n + f64::from(played.value)) / 2.0;
        let key = if i % 2 == 0 { "south" } else { "north" };
        assert_eq!(p["final"][key].as_f64().unwrap(), mover_end, "ply {i}");
        assert_eq!(p["final"]["south"].as_f64().unwrap() + p["final"]["north"].as_f64().unwrap(), 48.0);
    }
    assert_eq!(score, [18 + caps[0], 20 + caps[1]]);
    assert!(plies.iter().any(|p| p["error"].as_i64().unwrap() > 0), "the record has mistakes");

    // The text form: a row per ply, fitting 80 columns.
    let (code, text, err) = oware(
        &[
            &["game", "--dir", s(dir), "--captured", "18:20", "--from", "S: 2 0 1 0 3 0  N: 0 1 0 2 1 0  S"][..],
            &record.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(text.contains("ply  side   move  value  played  error"), "{text}");
    assert!(text.contains("\n  1  South  "), "{text}");
}

#[test]
fn game_records_beyond_the_layers_are_not_covered_and_bad_moves_are_named() {
    let dir = awari12();
    // From the start: 48 stones, nothing covered, never guessed.
    let (code, out, err) = oware(&["game", "--dir", s(dir), "1.", "F", "c", "2.", "B"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("not covered (layer 48)"), "{out}");
    assert!(!out.contains("wins"), "{out}");
    let (code, out, _) = oware(&["game", "--dir", s(dir), "--json", "FcB"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["plies"].as_array().unwrap().len(), 3);
    assert_eq!(v["plies"][0]["value"], Value::Null);
    assert_eq!(v["plies"][0]["missing_layer"], 48);
    assert_eq!(v["end"]["score"], serde_json::json!({"south": 0, "north": 0}));
    assert_eq!(v["end"]["to_move"], "north");
    // Errors name the ply and the problem; the exit code is the usage error's.
    for (args, needle) in
        [(vec!["F", "F"], "ply 2 (North to move)"), (vec!["F", "x"], "ply 2"), (vec!["F", "c", "F"], "the house is empty"), (vec!["9"], "pit number is 0..5")]
    {
        let mut a = vec!["game", "--dir", s(dir)];
        a.extend(args.iter().copied());
        let (code, _, err) = oware(&a);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let (code, _, err) = oware(&["game", "--dir", s(dir), "--captured", "40:9", "F"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = oware(&["game", "--dir", s(dir), "--from", "S: 1 2 3 N: 1 S", "A"]);
    assert_eq!(code, 3, "{err}");
}

/// `oware game` keeps the game's state in `oware::game::Game`: a record ends where the rules end
/// the game (here a repetition, with its sharing of the board as the result), and a move after
/// that is refused, naming the ply.
#[test]
fn game_records_end_on_repetition() {
    use oware::game::{annotate, Captured, End, Game};
    let db = Database::open(awari12(), Ruleset::Awari).unwrap();
    let start: Position = "0 0 0 0 1 0 0 0 0 0 1 0".parse().unwrap();
    let captured = Captured { south: 23, north: 23 };
    // The first legal move at each turn until the rules end the game.
    let mut g = Game::from_position(Ruleset::Awari, start, Side::South, Some(captured));
    let mut moves = Vec::new();
    while g.end().is_none() {
        let pit = Ruleset::Awari.moves(g.position().board()).as_slice()[0].pit;
        moves.push(house(g.side(), pit).to_string());
        g.play(pit).unwrap();
    }
    assert!(matches!(g.end(), Some(End::Repetition { .. })), "{:?}", g.end());
    let a = annotate(&db, start, Side::South, Some(captured), &moves).unwrap();
    assert!(a.over);
    assert_eq!(a.verdict, g.verdict());
    assert_eq!((a.verdict.unwrap().south, a.verdict.unwrap().north), (24.0, 24.0));
    let mut more = moves.clone();
    more.push(house(g.side(), 0).to_string());
    let e = annotate(&db, start, Side::South, Some(captured), &more).unwrap_err().to_string();
    assert!(e.contains(&format!("ply {}", more.len())) && e.contains("repeated a position"), "{e}");
}

#[test]
fn lines_stop_at_endless_play() {
    let dir = awari12();
    let db = Database::open(dir, Ruleset::Awari).unwrap();
    // A value-0 position where no capture can come: the line is empty and says so.
    let quiet = (1..=6)
        .flat_map(|n| LayerWalker::new(n, 0..layer_size(n)).unwrap().map(|(_, b)| Position::new(b).unwrap()))
        .find(|p| {
            let line = db.principal_variation(p, 100).unwrap();
            line.end == PvEnd::EndlessPlay && line.steps.is_empty() && p.stones() >= 3
        })
        .expect("a quiet position");
    let (code, out, err) = oware(&["query", "--dir", s(dir), &quiet.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("endless play from here, value 0: neither side can force a capture"), "{out}");
    let (_, out, _) = oware(&["query", "--dir", s(dir), "--json", &quiet.to_string()]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["pv_end"]["reason"], "endless_play");
    assert_eq!(v["principal_variation"], serde_json::json!([]));
    // Every position of layer 6 with value 0: the line ends in a capture-free endgame, a game
    // over or the ply limit, never in a repetition.
    for (_, b) in LayerWalker::new(6, 0..layer_size(6)).unwrap() {
        let p = Position::new(b).unwrap();
        if db.value(&p).unwrap() == 0 {
            let end = db.principal_variation(&p, 300).unwrap().end;
            assert!(matches!(end, PvEnd::EndlessPlay | PvEnd::GameOver), "{p}: {end:?}");
        }
    }
}

#[test]
fn the_server_answers_the_api() {
    let dir = awari12();
    let db = Database::open(dir, Ruleset::Awari).unwrap();
    let server = Server::start(dir, &[]);
    // The example form, on a layer-12 board.
    let (st, v) = server.get("/api/v1/position?pits=1,1,1,1,1,2,4,1,0,0,0,0&rules=awari");
    assert_eq!(st, 200, "{v}");
    let p: Position = "1 1 1 1 1 2 4 1 0 0 0 0".parse().unwrap();
    assert_eq!(v["value"], db.value(&p).unwrap());
    let moves = db.move_values(&p).unwrap();
    let got = v["moves"].as_array().unwrap();
    assert_eq!(got.len(), moves.len());
    for (g, m) in got.iter().zip(&moves) {
        assert_eq!(g["pit"], m.pit);
        assert_eq!(g["house"], house(Side::South, m.pit).to_string());
        assert_eq!(g["captured"], m.captured().unwrap());
        assert_eq!(g["value"], m.value);
    }
    assert!(v["principal_variation"].as_array().is_some());
    // The same position in the other notations, North to move.
    let (_, w) = server.get("/api/v1/position?south=4,1,0,0,0,0&north=1,1,1,1,1,2&to_move=north");
    assert_eq!((w["value"].clone(), w["to_move"].clone()), (v["value"].clone(), Value::from("north")));
    assert_eq!(w["moves"][0]["house"], "a");
    let (_, x) = server.get("/api/v1/position?position=S:%204%201%200%200%200%200%20N:%201%201%201%201%201%202%20N&captured=20:16");
    assert_eq!(x["value"], v["value"]);
    assert_eq!(x["score"], serde_json::json!({"south": 20, "north": 16}));
    // 12 stones, and a capture can take a side past 24: the final stones under the 25-stone
    // rule are solved up to 10 stones only, so they are null; who wins is given.
    assert!(x["final"]["south"].is_null() && x["final"]["north"].is_null(), "{x}");
    assert!(x["final"]["result"].is_string(), "{x}");
    // 5 stones with 20:23: North passes 24 before the board is played out (the layer's value,
    // -5, would make 20:28).
    let (_, y) = server.get("/api/v1/position?position=S:%200%201%200%200%200%200%20N:%201%201%200%200%200%202%20S&captured=20:23");
    assert_eq!((y["value"].clone(), y["final"]["south"].clone(), y["final"]["north"].clone()), (Value::from(-5), Value::from(21.5), Value::from(26.5)), "{y}");
    // Bad requests: 400 with a JSON error naming the problem.
    for (path, needle) in [
        ("/api/v1/position?pits=1,2,3", "12 pit counts"),
        ("/api/v1/position?pits=1,1,1,1,1,1,1,1,1,1,1,-1", "negative"),
        ("/api/v1/position?pits=1,1,1,1,1,2,4,1,0,0,0,0&rules=chess", "rules"),
        ("/api/v1/position?pits=1,1,1,1,1,2,4,1,0,0,0,0&max_plies=9999", "max_plies"),
        ("/api/v1/position?pits=1,1,1,1,1,2,4,1,0,0,0,0&bogus=1", "unknown parameter"),
        ("/api/v1/position", "give the position"),
        ("/api/v1/position?south=1,1,1,1,1,1&north=1,1,1,1,1,1", "to_move"),
    ] {
        let (st, e) = server.get(path);
        assert_eq!(st, 400, "{path}: {e}");
        assert!(e["error"]["message"].as_str().unwrap().contains(needle), "{path}: {e}");
    }
    // A layer that is not built: 404 naming it.
    let (st, e) = server.get("/api/v1/position?pits=4,4,4,4,4,4,4,4,4,4,4,4");
    assert_eq!(st, 404);
    assert_eq!(e["error"]["kind"], "layer_missing");
    assert!(e["error"]["message"].as_str().unwrap().contains("layer 48"), "{e}");
    // ... but the rules still list its moves.
    let (st, m) = server.get("/api/v1/moves?pits=4,4,4,4,4,4,4,4,4,4,4,4");
    assert_eq!(st, 200);
    assert_eq!(m["moves"].as_array().unwrap().len(), 6);
    let (st, _) = server.get("/nowhere");
    assert_eq!(st, 404);

    // A batch of 1,000 random positions of layers 0..12, and two bad ones, in order.
    let mut rng = SplitMix64(11);
    let mut positions = Vec::new();
    for _ in 0..1000 {
        let n = rng.below(13) as u32;
        let b = unrank_unchecked(n, rng.below(layer_size(n)));
        positions.push(Position::new(b).unwrap());
    }
    let mut items: Vec<Value> = positions.iter().map(|p| Value::from(p.board().to_vec())).collect();
    items.push(Value::from("1 2 3"));
    items.push(Value::from(7));
    let body = serde_json::json!({ "rules": "awari", "positions": items }).to_string();
    let (st, text) = server.text("POST", "/api/v1/positions", &body);
    assert_eq!(st, 200, "{text}");
    let r: Value = serde_json::from_str(&text).unwrap();
    let results = r["results"].as_array().unwrap();
    assert_eq!(results.len(), 1002);
    for (p, got) in positions.iter().zip(results) {
        assert_eq!(got["value"], db.value(p).unwrap(), "{p}");
    }
    assert_eq!(results[1000]["error"]["kind"], "invalid_position");
    assert!(results[1001]["error"]["message"].as_str().unwrap().contains("a string or an array"));
    // values_only: the value of each, nothing else.
    let body = serde_json::json!({ "positions": items[..20], "values_only": true, "to_move": "north" }).to_string();
    let (st, text) = server.text("POST", "/api/v1/positions", &body);
    assert_eq!(st, 200, "{text}");
    let r: Value = serde_json::from_str(&text).unwrap();
    for (p, got) in positions.iter().zip(r["results"].as_array().unwrap()) {
        assert_eq!(got, &serde_json::json!({"position": p.board(), "to_move": "north", "value": db.value(p).unwrap()}));
    }
    let (st, e) = server.text("POST", "/api/v1/positions", "{\"positions\": [");
    assert_eq!(st, 400, "{e}");
    let (st, e) = server.text("POST", "/api/v1/positions", "{\"positions\": [], \"colour\": 1}");
    assert_eq!(st, 400, "{e}");

    // Garbage on the socket does not stop the server; concurrent clients are served.
    let mut g = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    g.write_all(b"\x00\x01GARBAGE\r\n\r\n").unwrap();
    drop(g);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let port = server.port;
            std::thread::spawn(move || {
                let s = Server { child: Command::new("true").spawn().unwrap(), port };
                for k in 0..25 {
                    let b = unrank_unchecked(10, (t * 1000 + k) as u64);
                    let q = b.iter().map(u8::to_string).collect::<Vec<_>>().join(",");
                    let (st, _) = s.get(&format!("/api/v1/position?pits={q}&max_plies=10"));
                    assert_eq!(st, 200);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let (st, info) = server.get("/api/v1/info");
    assert_eq!(st, 200);
    assert_eq!(info["api"], "v1");
    assert_eq!(info["rules"][0]["layers"].as_array().unwrap().len(), 13);
    let (st, page) = server.text("GET", "/", "");
    assert_eq!(st, 200);
    assert!(page.contains("<title>Oware analysis</title>"));
}

#[test]
fn terminal_play_against_perfect_play() {
    let dir = awari12();
    let run = |input: &str, extra: &[&str]| {
        let (code, out, _) = oware_with_input(&[&["play", "--dir", s(dir)][..], extra].concat(), input);
        (code, out)
    };
    let from = ["--from", "S: 0 0 0 1 2 1  N: 1 0 1 0 0 0  S", "--captured", "20:22"];
    let (code, out) = run("h\nE\nu\nzz\nbest\nq\n", &from);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("the computer plays North, you play South"), "{out}");
    assert!(out.contains("moves: D* -2, E* -2, F* -2  (* best)"), "{out}");
    assert!(out.contains("North plays "), "{out}");
    assert!(out.contains("'zz' is not a command"), "{out}");
    assert!(out.contains("South plays "), "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    // Two players with advice; end of input quits.
    let (code, out) = run("f\n", &[&from[..], &["--computer", "nobody"]].concat());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("two players"), "{out}");
    assert!(out.contains("moves: D* -2"), "{out}");
    assert!(out.contains("(to move)"), "{out}");
}

/// Runs `oware play ARGS` on the awari fixture with `input` on stdin: exit code and stdout.
fn play(input: Vec<u8>, args: &[&str]) -> (i32, String) {
    let (code, out, err) = oware_with_input(&[&["play", "--dir", s(awari12())][..], args].concat(), input);
    (code, format!("{out}{err}"))
}

#[test]
fn play_skips_unreadable_and_overlong_lines() {
    let from = ["--from", "S: 0 0 0 1 2 1  N: 1 0 1 0 0 0  S", "--captured", "20:22", "--computer", "nobody"];
    // Invalid UTF-8 was "error: <stdin>: stream did not contain valid UTF-8" and exit 7.
    let (code, out) = play(b"\xff\xfe bad\nh\nq\n".to_vec(), &from);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("the line is not UTF-8 text: ignored"), "{out}");
    assert!(out.contains("moves: D* -2"), "{out}");
    // A line of 8 MB was held in memory and echoed twice (16 MB of output).
    let mut input = vec![b'x'; 8 << 20];
    input.extend_from_slice(b"\nh\nq\n");
    let (code, out) = play(input, &from);
    assert_eq!(code, 0, "{}", &out[..out.len().min(2000)]);
    assert!(out.len() < 64 << 10, "{} bytes of output", out.len());
    assert!(out.contains(&format!("the line of {} bytes is longer than 4096: ignored", 8 << 20)), "{out}");
    assert!(out.contains("moves: D* -2"), "{out}");
}

#[test]
fn play_ends_the_game_with_the_reason_and_the_final_score() {
    // South's only move captures North's last two stones, and South has 25.
    let (code, out) = play(b"F\nA\nB\nq\n".to_vec(), &["--from", "S: 0 0 0 0 0 1  N: 1 0 0 0 0 0  S", "--captured", "23:23"]);
    assert_eq!(code, 0, "{out}");
    // South's capture made 25: the 25-stone rule ended the game (issue 67, item 6: an empty
    // board after the quota is that rule's end, not "no stone to move").
    assert!(out.contains("the game is over: a side has captured more than 24 stones (or both 24): the 0 left on the board count as split evenly"), "{out}");
    assert!(out.contains("final score: South 25, North 23: South wins"), "{out}");
    // The session ends there: no prompt after the game ended, the rest of the input unread.
    assert_eq!(out.matches("to move> ").count(), 1, "{out}");
    // A start position where the mover has no stone: the opponent takes what is left.
    let (code, out) = play(b"A\n".to_vec(), &["--from", "S: 0 0 0 0 0 0  N: 0 0 1 0 0 1  S", "--captured", "23:23"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("the game is over: South has no stone to move: North takes the 2 left on the board"), "{out}");
    assert!(out.contains("final score: South 23, North 25: North wins"), "{out}");
    assert!(!out.contains("to move> "), "{out}");
    // Without known captures: how the stones left are shared, and no invented score.
    let (_, out) = play(Vec::new(), &["--from", "S: 0 0 0 0 0 0  N: 0 0 1 0 0 1  S"]);
    assert!(out.contains("of the 2 stones left on the board South takes 0, North 2"), "{out}");
}

#[test]
fn server_errors_never_show_the_servers_paths() {
    // A copy, so its path is known and distinctive.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("secret-server-dir");
    crate::common::copy_fixture(Ruleset::Awari, 6, &dir);
    let server = Server::start(&dir, &[]);
    // A 7-stone position: layer 7 is not built; the message named ".../secret-server-dir/awari".
    let body = serde_json::json!({ "positions": ["S: 1 1 1 1 1 1  N: 1 0 0 0 0 0  S"], "values_only": true }).to_string();
    let (st, text) = server.text("POST", "/api/v1/positions", &body);
    assert!(text.contains("layer 7 of awari is not built in the server's awari database"), "{st} {text}");
    // A damaged layer is named by its file name only.
    let layer = oware::storage::native_path::<oware::storage::ValuesKind>(&dir, Ruleset::Awari, 5);
    let mut bytes = std::fs::read(&layer).unwrap();
    let at = bytes.len() - 1;
    bytes[at] ^= 1;
    std::fs::write(&layer, &bytes).unwrap();
    let server = Server::start(&dir, &[]);
    let (st, text) = server.text("GET", "/api/v1/position?pits=1,1,1,1,1,0,0,0,0,0,0,0&rules=awari", "");
    assert_eq!(st, 500, "{text}");
    assert!(text.contains("layer-05.owdb"), "{text}");
    for (st, text) in [(st, text), server.text("POST", "/api/v1/positions", &body)] {
        assert!(!text.contains("secret-server-dir") && !text.contains(s(tmp.path())), "{st} {text}");
    }
}

/// `oware play` ends the game when a position repeats: from a won position after the win the
/// last two stones were shuffled for 400 plies and more.
#[test]
fn play_ends_the_game_on_repetition() {
    let (code, out) =
        play(b"best\n".repeat(600), &["--from", "S: 3 0 0 0 0 0  N: 0 2 2 0 0 1  S", "--captured", "20:20", "--computer", "nobody", "--movetime", "20"]);
    assert_eq!(code, 0, "{}", &out[out.len().saturating_sub(3000)..]);
    assert!(out.contains("the game is over: the position repeats"), "{}", &out[out.len().saturating_sub(3000)..]);
    assert!(out.matches(" plays ").count() < 200, "{} plies", out.matches(" plays ").count());
    assert!(out.contains("final score: South"), "{}", &out[out.len().saturating_sub(2000)..]);
}

/// `h` above the layers gives the engine's score of every move, marked `~` when estimated (it
/// printed `moves: B ?, C ?`), and no longer reprints the commands.
#[test]
fn play_hints_with_the_engines_scores_above_the_layers() {
    let (code, out) =
        play(b"h\nq\n".to_vec(), &["--from", "S: 3 1 0 2 0 1  N: 0 2 2 2 2 3  S", "--captured", "14:16", "--computer", "nobody", "--movetime", "100"]);
    assert_eq!(code, 0, "{out}");
    let hint = out.lines().find(|l| l.starts_with("moves: ") && l.contains('~')).unwrap_or_else(|| panic!("{out}"));
    assert!(hint.contains("(* best)") && !hint.contains('?'), "{hint}");
    assert!(out.contains("(the engine's final scores, ~ estimated, depth "), "{out}");
    assert_eq!(out.matches("commands: ").count(), 1, "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
}
