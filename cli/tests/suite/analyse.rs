//! The search engine through the program: `oware analyse`, `oware play` and `oware game` above
//! the built layers, and `GET /api/v1/analyse`. Exact answers are checked against the layers.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{oware, s, Server};
use oware::probe::Database;
use oware::{Position, Ruleset};
use serde_json::Value;

#[test]
fn analyse_inside_the_layers_is_exact_and_agrees_with_query() {
    let dir = common::fixture(Ruleset::Awari, 12);
    let db = Database::open(dir, Ruleset::Awari).unwrap();
    for text in ["1 1 1 1 1 2 0 2 3 0 0 0", "0 3 0 2 1 0 1 0 2 0 1 1", "2 0 0 1 0 3 0 1 1 2 0 0"] {
        let p: Position = text.parse().unwrap();
        let (code, out, err) = oware(&["analyse", "--dir", s(dir), "--depth", "6", "--json", text]);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["exact"], true, "{out}");
        assert_eq!(v["score"].as_f64().unwrap(), f64::from(db.value(&p).unwrap()), "{out}");
        let best: Vec<u8> = db.best_moves(&p).unwrap().iter().map(|m| m.pit).collect();
        assert!(best.contains(&(v["best_pit"].as_u64().unwrap() as u8)), "{out}");
        for key in ["schema_version", "best_house", "depth", "nodes", "nps", "seconds", "pv", "moves"] {
            assert!(v.get(key).is_some(), "{key} missing: {out}");
        }
        // Every move's score is its exact value.
        for m in v["moves"].as_array().unwrap() {
            let pit = m["pit"].as_u64().unwrap() as u8;
            let truth = db.move_values(&p).unwrap().into_iter().find(|x| x.pit == pit).unwrap().value;
            assert_eq!(m["score"].as_f64().unwrap(), f64::from(truth), "{out}");
        }
    }
}

#[test]
fn analyse_above_the_layers_estimates_and_checks_its_input() {
    let dir = common::fixture(Ruleset::Awari, 12);
    let (code, out, err) = oware(&["analyse", "--dir", s(dir), "--depth", "5", "--json", "4 4 4 4 4 4 4 4 4 4 4 4"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["exact"], false);
    assert_eq!(v["depth"], 5);
    assert_eq!(v["tables"], 12);
    assert_eq!(v["moves"].as_array().unwrap().len(), 6);
    assert_eq!(v["pv"].as_array().unwrap()[0], v["best_house"]);
    // Fixed depth: the same answer on 1 and 2 threads.
    let (_, again, _) = oware(&["analyse", "--dir", s(dir), "--depth", "5", "--threads", "2", "--json", "4 4 4 4 4 4 4 4 4 4 4 4"]);
    let w: Value = serde_json::from_str(&again).unwrap();
    assert_eq!((&v["best_pit"], &v["score"], &v["nodes"]), (&w["best_pit"], &w["score"], &w["nodes"]));
    // Text: best move, score marked as an estimate.
    let (code, out, _) = oware(&["analyse", "--dir", s(dir), "--movetime", "100", "4 4 4 4 4 4 4 4 4 4 4 4"]);
    assert_eq!(code, 0);
    assert!(out.contains("best ") && out.contains("estimate"), "{out}");
    // With captured counts that do not add up: a usage error.
    let (code, _, err) = oware(&["analyse", "--dir", s(dir), "--depth", "3", "--captured", "3:3", "4 4 4 4 4 4 4 4 4 4 4 4"]);
    assert_eq!(code, 2, "{err}");
    // A bad position: exit 3.
    let (code, _, err) = oware(&["analyse", "--dir", s(dir), "--depth", "3", "4 4 4"]);
    assert_eq!(code, 3, "{err}");
    // No layers at all: the evaluation alone, said on stderr.
    let empty = tempfile::tempdir().unwrap();
    let (code, out, err) = oware(&["analyse", "--dir", s(empty.path()), "--depth", "4", "--json", "4 4 4 4 4 4 4 4 4 4 4 4"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("evaluation alone"), "{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["tables"], Value::Null);
}

#[test]
fn play_and_game_go_on_above_the_layers() {
    let dir = common::fixture(Ruleset::Awari, 12);
    let mut child = Command::new(common::OWARE)
        .args(["play", "--dir", s(dir), "--computer", "north", "--movetime", "50"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"F\n*\nq\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("North plays ") && text.contains("(engine: final score "), "{text}");
    assert!(text.contains("South plays ") && text.contains("estimate"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    // Inside the layers the computer's moves are perfect play, said exact.
    let mut child = Command::new(common::OWARE)
        .args(["play", "--dir", s(dir), "--computer", "north", "--from", "S: 0 0 0 1 2 1  N: 1 0 1 0 0 0  S", "--captured", "20:22"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"F\nq\n").unwrap();
    let text = String::from_utf8_lossy(&child.wait_with_output().unwrap().stdout).into_owned();
    assert!(text.contains("(perfect play: exact)"), "{text}");

    let (code, out, err) = oware(&["game", "--dir", s(dir), "--analyse", "30", "F", "c", "B"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("~ the search engine's estimate"), "{out}");
    assert!(out.lines().filter(|l| l.contains('~')).count() >= 3, "{out}");
    let (_, json, _) = oware(&["game", "--dir", s(dir), "--analyse", "30", "--json", "F", "c"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(v["plies"][0]["engine"]["best_houses"].as_array().is_some_and(|a| !a.is_empty()), "{json}");
    assert_eq!(v["plies"][0]["engine"]["exact"], false);
}

#[test]
fn the_http_analyse_endpoint_answers_within_its_bound() {
    let dir = common::fixture(Ruleset::Awari, 12);
    let server = Server::start(dir, &["--max-movetime", "200"]);
    let get = |path: &str| server.get(path);
    let started = std::time::Instant::now();
    // Asks for 60 s: capped at --max-movetime.
    let (status, v) = get("/api/v1/analyse?pits=4,4,4,4,4,4,4,4,4,4,4,4&movetime=60000");
    assert_eq!(status, 200, "{v}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(v["seconds"].as_f64().unwrap() <= 1.0, "{v}");
    assert_eq!(v["exact"], false);
    assert!(v["best_house"].is_string());
    let (status, v) = get("/api/v1/analyse?pits=0,3,0,2,1,0,1,0,2,0,1,1&movetime=100");
    assert_eq!(status, 200);
    assert_eq!(v["exact"], true, "{v}");
    let (status, v) = get("/api/v1/analyse?pits=4,4&movetime=100");
    assert_eq!(status, 400, "{v}");
    let (status, v) = get("/api/v1/analyse?pits=4,4,4,4,4,4,4,4,4,4,4,4&movetime=-1");
    assert_eq!(status, 400, "{v}");
}

/// `analyse --hash` larger than three quarters of the memory available is refused (exit 2), as
/// the engine's `Hash` option is: it was accepted and grew without bound.
#[test]
fn analyse_refuses_a_hash_larger_than_the_memory() {
    let dir = common::fixture(Ruleset::Awari, 12);
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let Some(kb) = text.lines().find(|l| l.starts_with("MemAvailable:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()) else {
        return; // no /proc/meminfo: nothing to compare with (the guard then lets it be)
    };
    let too_much = (kb / 1024).min(65_536 * 4 / 3) * 4 / 5 + 1;
    if too_much > 65_536 {
        return; // more memory than --hash can ask for
    }
    let (code, _, err) = oware(&["analyse", "--dir", s(dir), "--depth", "2", "--hash", &too_much.to_string(), "4 4 4 4 4 4 4 4 4 4 4 4"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--hash") && err.contains("three quarters"), "{err}");
}

/// A foreign depths-to-capture file (abapa's in an awari directory) is said on stderr, naming
/// it, and the layers below it are still probed: `analyse` cut its line silently.
#[test]
fn analyse_names_a_foreign_dtc_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for rules in [Ruleset::Awari, Ruleset::Abapa(oware::rules::GrandSlam::NoCapture)] {
        let (code, _, err) = oware(&["build", "--max-stones", "8", "--dtc", "--quiet", "--rules", &rules.to_string(), "--dir", s(dir)]);
        assert_eq!(code, 0, "{err}");
    }
    std::fs::copy(dir.join("abapa").join("dtc-06.owdb"), dir.join("awari").join("dtc-06.owdb")).unwrap();
    let (code, out, err) = oware(&["analyse", "--dir", s(dir), "--depth", "4", "0 0 0 1 2 0 1 0 1 0 1 0"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("dtc-06.owdb") && err.contains("not used"), "{err}");
    assert!(err.contains("probing layers 0..=8, depths to capture of 0..=5"), "{err}");
    assert!(out.contains("best "), "{out}");
}

/// Issue 66, item 6: strength levels 1 (a beginner's) to 5 (full), the same in `oware play
/// --level`, `/api/v1/analyse?level=` and the engine's `setoption name Level` (engine.rs). A
/// level below the top plays a move within its margin of the best its search sees; the top
/// plays the best.
#[test]
fn strength_levels_in_play_and_the_server() {
    let dir = common::fixture(Ruleset::Awari, 12);
    // `oware play --level 1`: the computer says its level and plays legal moves.
    let mut child = Command::new(common::OWARE)
        .args(["play", "--dir", s(dir), "--computer", "north", "--level", "1", "--movetime", "50"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"F\nA\nq\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("at level 1 of 5") && text.contains("(level 1: depth 1)"), "{text}");
    let (code, _, err) = oware(&["play", "--dir", s(dir), "--level", "6"]);
    assert_eq!(code, 2, "{err}");
    // The server: level_move, a legal move within the level's margin of the best (3 stones at
    // level 1, half a stone at 4); null without a level; a bad level refused.
    let server = Server::start(dir, &[]);
    let start = "pits=4,4,4,4,4,4,4,4,4,4,4,4&captured=0:0&movetime=200";
    for (level, margin) in [(1, 3.0), (1, 3.0), (1, 3.0), (1, 3.0), (4, 0.5), (5, 0.0)] {
        let (st, v) = server.get(&format!("/api/v1/analyse?{start}&level={level}"));
        assert_eq!(st, 200, "{v}");
        let m = &v["level_move"];
        assert_eq!(m["level"], level, "{v}");
        let best = v["moves"].as_array().unwrap().iter().map(|m| m["score"].as_f64().unwrap()).fold(f64::MIN, f64::max);
        let chosen = v["moves"].as_array().unwrap().iter().find(|x| x["pit"] == m["pit"]).unwrap();
        assert!(chosen["score"].as_f64().unwrap() >= best - margin - 1e-9, "level {level}: {v}");
        assert_eq!(chosen["house"], m["house"]);
        if level == 5 {
            assert_eq!(m["house"], v["best_house"], "{v}");
        } else {
            assert!(v["depth"].as_u64().unwrap() <= 6, "{v}");
        }
    }
    let (st, v) = server.get(&format!("/api/v1/analyse?{start}"));
    assert_eq!(st, 200);
    assert!(v["level_move"].is_null(), "{v}");
    for bad in ["0", "6", "x"] {
        let (st, v) = server.get(&format!("/api/v1/analyse?{start}&level={bad}"));
        assert_eq!(st, 400, "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("level must be 1"), "{v}");
    }
}
