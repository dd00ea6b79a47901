//! `GET /api/v1/evaluate`, the page's one request per position (issue 53, item 11): the
//! tables' report where they hold the position, else the engine's answer with the rules' moves
//! and its line played out; never a 404 for a position above the tables. The routes it is made
//! of keep answering as before. Against awari layers 0..10 with depths to capture, built here.

use std::process::Command;

use serde_json::Value;

use crate::common::{Server, OWARE};

/// Awari layers 0..=10 with their depths to capture, in a temporary directory.
fn built() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(OWARE).args(["build", "--max-stones", "10", "--dtc", "--quiet", "--dir"]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    dir
}

fn kind(v: &Value) -> &str {
    v["error"]["kind"].as_str().unwrap_or_default()
}

#[test]
fn evaluate_answers_from_the_tables_or_the_engine_and_asks_once() {
    let dir = built();
    let server = Server::start(dir.path(), &[]);

    // Inside the tables (7 stones): the report of /position, the same document, with its depths.
    let ten = "south=0,0,1,0,2,1&north=1,0,0,2,0,0&to_move=south&captured=20:21";
    let (st, v) = server.get(&format!("/api/v1/evaluate?{ten}&max_plies=20&movetime=50"));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["source"], "tables", "{v}");
    assert!(v["moves"].is_null() && v["engine"].is_null() && v["line"].is_null(), "{v}");
    let (st, report) = server.get(&format!("/api/v1/position?{ten}&max_plies=20"));
    assert_eq!(st, 200, "{report}");
    assert_eq!(v["report"], report);
    assert!(report["moves"].as_array().unwrap().iter().any(|m| m["dtc"].is_u64()), "{report}");

    // Above the tables: /position is a 404 (unchanged); /evaluate answers with the engine, the
    // rules' moves (as /moves has them) and the engine's line played out.
    let start = "pits=4,4,4,4,4,4,4,4,4,4,4,4&captured=0:0";
    let (st, e) = server.get(&format!("/api/v1/position?{start}"));
    assert_eq!((st, kind(&e)), (404, "layer_missing"), "{e}");
    let (st, v) = server.get(&format!("/api/v1/evaluate?{start}&movetime=200"));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["source"], "engine", "{v}");
    assert!(v["report"].is_null(), "{v}");
    let (st, moves) = server.get(&format!("/api/v1/moves?{start}"));
    assert_eq!(st, 200);
    assert_eq!(v["moves"], moves);
    let engine = &v["engine"];
    assert_eq!(engine["tables"], 10);
    for key in ["best_pit", "best_house", "score", "exact", "depth", "pv", "moves"] {
        assert!(!engine[key].is_null(), "{key}: {engine}");
    }
    let pv: Vec<&str> = engine["pv"].as_array().unwrap().iter().map(|h| h.as_str().unwrap()).collect();
    let line = v["line"].as_array().unwrap();
    assert_eq!(line.iter().map(|p| p["house"].as_str().unwrap()).collect::<Vec<_>>(), pv);
    assert!(pv.len() >= 4, "a line of {} plies: {pv:?}", pv.len());
    assert_eq!(line[0]["absolute"], serde_json::json!([4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]));
    let first = moves["moves"].as_array().unwrap().iter().find(|m| m["house"] == line[0]["house"]).unwrap();
    assert_eq!(line[0]["child"], first["child"]);
    for (i, ply) in line.iter().enumerate() {
        assert_eq!(ply["ply"], i + 1);
        assert_eq!(ply["side"], if i % 2 == 0 { "south" } else { "north" });
    }

    // What /analyse refuses, /evaluate refuses too: captured counts that do not make 48 with the
    // board, a bad movetime or history, an unknown parameter; and a bad max_plies, as /position.
    for (path, why) in [
        (format!("/api/v1/evaluate?{ten}&captured=0:0"), "given more than once"),
        ("/api/v1/evaluate?south=1,0,2,1,0,0&north=1,1,0,2,0,2&to_move=north&captured=0:0".to_string(), "a game has 48 stones"),
        (format!("/api/v1/evaluate?{start}&movetime=-5"), "movetime"),
        (format!("/api/v1/evaluate?{start}&max_plies=9999"), "max_plies"),
        (format!("/api/v1/evaluate?{start}&history=1,2,3"), "history"),
        (format!("/api/v1/evaluate?{start}&colour=red"), "unknown parameter"),
        ("/api/v1/evaluate".to_string(), "give the position"),
    ] {
        let (st, e) = server.get(&path);
        assert_eq!(st, 400, "{path}: {e}");
        assert!(e["error"]["message"].as_str().unwrap().contains(why), "{path}: {e}");
    }

    // A game's history since its last capture goes to the search (a repetition ends the game).
    let root = "south=1,0,2,1,0,1&north=1,1,0,2,0,2&to_move=north";
    let (st, v) = server.get(&format!("/api/v1/evaluate?{root}&history=1,0,2,1,1,0,1,1,0,2,0,2&movetime=50"));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["source"], "engine", "{v}");

    // The page (GET /, and the script's modules it loads) asks /evaluate, not /position then a
    // fallback.
    let page: String = ["/", "/game.js", "/board.js", "/analysis.js"]
        .iter()
        .map(|path| {
            let (st, text) = server.text("GET", path, "");
            assert_eq!(st, 200, "{path}");
            text
        })
        .collect();
    // (It posts its parameters: a long game's history does not fit a request line.)
    assert!(page.contains("fetch(\"/api/v1/evaluate\"") && !page.contains("/api/v1/position?"), "the page's requests");
}

/// The index of a line's first capture (houses, from the position `pits`, mover-first, whose
/// mover is South); `None` without one.
pub(crate) fn first_capture(rules: oware::Ruleset, pits: [u8; 12], houses: &[String]) -> Option<usize> {
    let mut board = pits;
    for (i, h) in houses.iter().enumerate() {
        let c = h.chars().next()?;
        let pit = "ABCDEFabcdef".find(c)? % 6;
        match rules.play(&board, pit).map(|m| m.outcome) {
            Some(oware::rules::Outcome::Child { captured, child }) => {
                if captured > 0 {
                    return Some(i);
                }
                board = child;
            }
            _ => return None,
        }
    }
    None
}

/// Issue 66, item 2: with the captured stones known, the engine's line stopped at its first
/// capture into the tables wherever the 25-stone rule could change their values there (a line
/// of one ply, "D", for this position over layers 0..10; 42 plies now). It goes on, in every
/// surface: `/evaluate`'s line, `/analyse`'s pv, `oware analyse` (and the UCI `pv`: engine.rs).
#[test]
fn with_captured_counts_the_line_goes_on_past_its_first_capture_everywhere() {
    let dir = built();
    let server = Server::start(dir.path(), &[]);
    let pits = [2, 1, 0, 3, 1, 1, 1, 2, 0, 1, 0, 0];
    let query = "south=2,1,0,3,1,1&north=1,2,0,1,0,0&to_move=south&captured=16:20";
    let rules = oware::Ruleset::Awari;
    let houses = |v: &Value| -> Vec<String> { v.as_array().unwrap().iter().map(|h| h.as_str().unwrap().to_string()).collect() };
    let goes_on = |line: &[String], what: &str| {
        let first = first_capture(rules, pits, line).unwrap_or_else(|| panic!("{what}: no capture in {line:?}"));
        assert!(line.len() >= first + 4, "{what}: the line {line:?} stops {} plies after its first capture", line.len() - first - 1);
    };
    let (st, v) = server.get(&format!("/api/v1/evaluate?{query}&movetime=300"));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["source"], "engine");
    let line: Vec<String> = v["line"].as_array().unwrap().iter().map(|p| p["house"].as_str().unwrap().to_string()).collect();
    assert_eq!(line, houses(&v["engine"]["pv"]));
    goes_on(&line, "/evaluate");
    let (st, a) = server.get(&format!("/api/v1/analyse?{query}&movetime=300"));
    assert_eq!(st, 200, "{a}");
    goes_on(&houses(&a["pv"]), "/analyse");
    // `oware analyse` (mover first: South has 16) and the engine's protocol, at a fixed depth.
    let (code, out, err) =
        crate::common::oware(&["analyse", "--dir", crate::common::s(dir.path()), "--depth", "8", "--captured", "16:20", "--json", "2 1 0 3 1 1 1 2 0 1 0 0"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    goes_on(&houses(&v["pv"]), "oware analyse");
    // The engine's protocol: cli/tests/suite/engine.rs, with_captured_counts_the_pv_goes_on.
}
