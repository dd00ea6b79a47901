//! `oware query` and `oware moves`, on databases built by `builder::build` in temporary
//! directories: the published example in every form, lines that make progress, missing,
//! foreign and damaged layers, malformed positions, batches, published files. (The probing
//! library itself is the library's tests: `tests/suite/probe.rs`.)
//!
//! The awari layers 0..16 (needed by the published 16-stone example) are built once per test
//! binary and shared; tests that damage files build their own small databases.

use crate::common;

use common::{check_line, flip_payload_byte, manual_value, random_layer_board, SplitMix64, EXAMPLE};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use oware::builder::{self, BuildConfig, Silent};
use oware::line::PvEnd;
use oware::probe::Database;
use oware::rules::GrandSlam;
use oware::storage::PAYLOAD_OFFSET;
use oware::storage::{native_path, vu_path, ValuesKind};
use oware::{Error, Position, Ruleset};
use serde_json::Value;

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

fn oware(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(crate::common::OWARE);
    cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run oware");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).expect("write stdin");
    }
    drop(input);
    child.wait_with_output().expect("wait for oware")
}

fn query(dir: &Path, extra: &[&str], position: Option<&str>, stdin: Option<&str>) -> Output {
    let dir = dir.to_str().expect("utf-8 temp path");
    let mut args = vec!["query", "--dir", dir];
    args.extend_from_slice(extra);
    let words: Vec<&str> = position.map(|p| p.split_whitespace().collect()).unwrap_or_default();
    args.extend(words);
    oware(&args, stdin)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The review's example: value +7 (layer 7), where a waiting move of pit 1 at ply 17 is worth
/// +7 as well as pit 5's capture; the line must reach the captures, not go round in a circle
/// and claim endless play.
#[test]
fn winning_line_makes_progress() {
    let db = Database::open(awari16(), Ruleset::Awari).unwrap();
    let p = pos("0 0 0 0 0 1 0 0 0 0 1 5");
    assert_eq!(db.value(&p).unwrap(), 7);
    let line = db.principal_variation(&p, 200).unwrap();
    check_line(&db, Ruleset::Awari, &p, &line, 200);
    assert_eq!(line.end, PvEnd::GameOver, "{line:?}");
    let captured: u32 = line.steps.iter().filter_map(|s| s.played.captured()).map(u32::from).sum();
    assert!(captured > 0);

    let o = query(awari16(), &["--json"], Some("0 0 0 0 0 1 0 0 0 0 1 5"), None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["value"], 7);
    assert_eq!(v["pv_end"], serde_json::json!({"reason": "game_over"}));
    assert_eq!(v["principal_variation"].as_array().unwrap().len(), line.steps.len());
    let o = query(awari16(), &[], Some("0 0 0 0 0 1 0 0 0 0 1 5"), None);
    let text = stdout(&o);
    assert!(text.contains("value +7"), "{text}");
    assert!(text.ends_with("  the game is over\n"), "{text}");
    assert!(!text.contains("endless play"), "{text}");
}

#[test]
fn published_example_cli_json() {
    let o = query(awari16(), &["--json"], Some(EXAMPLE), None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["value"], 0);
    assert_eq!(v["stones"], 16);
    assert_eq!(v["rules"], "awari");
    let values: Vec<i64> = v["moves"].as_array().unwrap().iter().map(|m| m["value"].as_i64().unwrap()).collect();
    assert_eq!(values, vec![-1, -1, -2, -2, -2, 0]);
    let pits: Vec<i64> = v["moves"].as_array().unwrap().iter().map(|m| m["pit"].as_i64().unwrap()).collect();
    assert_eq!(pits, vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(v["moves"][5]["captured"], 3);
    assert_eq!(v["best_moves"], serde_json::json!([5]));
    assert_eq!(v["split"], serde_json::json!({"mover": 8, "opponent": 8}));
    let pv = v["principal_variation"].as_array().unwrap();
    assert_eq!(pv[0]["pit"], 5);
    assert_eq!(pv[0]["position"], serde_json::json!([1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0]));
    assert_eq!(pv[0]["child"], pv[1]["position"]);

    // Options may also follow the position, as in `oware query POSITION --json`.
    let dir = awari16().to_str().expect("utf-8 temp path");
    let mut args = vec!["query"];
    args.extend(EXAMPLE.split_whitespace());
    args.extend(["--dir", dir, "--json"]);
    let o = oware(&args, None);
    assert!(o.status.success(), "{}", stderr(&o));
    let w: Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(w, v);

    // The text form says the same.
    let o = query(awari16(), &[], Some(EXAMPLE), None);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("value 0: with best play South ends with 8 of the 16"), "{text}");
    assert!(text.contains("F (pit 5): takes  3, value   0  draw  best"), "{text}");
    assert!(text.contains("C (pit 2): takes  0, value  -2  loss"), "{text}");
    assert!(text.contains("best move: F"), "{text}");
    // Each step of the line: the position it starts from, its value, the move, the capture.
    assert!(text.contains("   1. S: 1 1 1 1 1 2  N: 4 2 3 0 0 0  S  value   0  plays F, takes 3\n"), "{text}");
    assert!(text.contains("   2. S: 1 1 1 1 1 0  N: 5 0 3 0 0 0  N  value  +3  plays c\n"), "{text}");
    assert!(text.contains("  North   0   0   0   3   2   4\n  South   1   1   1   1   1   2   (to move)"), "{text}");
    assert_eq!(v["to_move"], "south");
    assert_eq!(v["absolute"], serde_json::json!([1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0]));
    assert_eq!(v["moves"][5]["house"], "F");
    assert_eq!(v["best_houses"], serde_json::json!(["F"]));
    assert_eq!(pv[1]["house"], "c");
    assert_eq!(pv[1]["side"], "north");

    // --values-only.
    let o = query(awari16(), &["--values-only"], Some(EXAMPLE), None);
    assert_eq!(stdout(&o), format!("{EXAMPLE}\t0\n"));
}

#[test]
fn moves_cli_json_names_houses() {
    // The published example in every form: South to move (mover-first counts, the side form),
    // then North to move (the side form, and mover-first counts with --to-move north). Each move
    // carries its house beside its pit, the same one `query --json` gives.
    let counts: Vec<&str> = EXAMPLE.split_whitespace().collect();
    let with = |first: &[&str], last: &[&str]| -> Vec<String> { first.iter().chain(last).map(|s| s.to_string()).collect() };
    let cases: [(Vec<String>, Vec<String>, &str); 4] = [
        (with(&["moves", "--json"], &counts), with(&["--json"], &counts), "south"),
        (with(&["moves", "--json", "S: 1 1 1 1 1 2  N: 4 2 3 0 0 0  S"], &[]), with(&["--json", "S: 1 1 1 1 1 2  N: 4 2 3 0 0 0  S"], &[]), "south"),
        (with(&["moves", "--json", "S: 4 2 3 0 0 0  N: 1 1 1 1 1 2  N"], &[]), with(&["--json", "S: 4 2 3 0 0 0  N: 1 1 1 1 1 2  N"], &[]), "north"),
        (with(&["moves", "--json", "--to-move", "north"], &counts), with(&["--json", "--to-move", "north"], &counts), "north"),
    ];
    for (moves_args, query_args, side) in cases {
        let args: Vec<&str> = moves_args.iter().map(String::as_str).collect();
        let o = oware(&args, None);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
        assert_eq!(v["position"], serde_json::json!([1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0]), "{args:?}");
        let moves = v["moves"].as_array().unwrap();
        assert_eq!(moves.len(), 6, "{args:?}");
        let base = if side == "south" { b'A' } else { b'a' };
        for m in moves {
            let pit = m["pit"].as_u64().unwrap() as u8;
            assert_eq!(m["house"], char::from(base + pit).to_string(), "{args:?}: {m}");
        }
        assert_eq!((v["moves"][5]["house"].clone(), v["moves"][5]["captured"].clone()), (Value::from(if side == "south" { "F" } else { "f" }), Value::from(3)));

        // The same houses as the report of `query --json` on the same input.
        let extra: Vec<&str> = query_args.iter().map(String::as_str).collect();
        let q = query(awari16(), &extra, None, None);
        assert!(q.status.success(), "{extra:?}: {}", stderr(&q));
        let r: Value = serde_json::from_str(&stdout(&q)).expect("one JSON object");
        assert_eq!(r["to_move"], side, "{extra:?}");
        let houses = |d: &Value| -> Vec<Value> { d["moves"].as_array().unwrap().iter().map(|m| m["house"].clone()).collect() };
        assert_eq!(houses(&v), houses(&r), "{args:?}");
    }
}

#[test]
fn start_position_needs_layer_48() {
    let db = Database::open(awari16(), Ruleset::Awari).unwrap();
    let err = db.value(&Position::start()).unwrap_err();
    assert!(matches!(err, Error::LayerMissing { layer: 48, .. }), "{err}");
    let o = query(awari16(), &[], Some("4 4 4 4 4 4 4 4 4 4 4 4"), None);
    assert_eq!(o.status.code(), Some(4));
    assert!(stderr(&o).contains("layer 48 of awari is not built"), "{}", stderr(&o));
    // Only the layers the start needs: 0..46 and 48.
    assert!(stderr(&o).contains("oware build --rules awari --for 48") && stderr(&o).contains("0..=46 and 48"), "{}", stderr(&o));
    // Layer 48 is huge: the hint names the published 2002 files as the other way.
    assert!(stderr(&o).contains("published 2002"), "{}", stderr(&o));
}

#[test]
fn missing_layer() {
    let dir = build(Ruleset::Awari, 6);
    let db = Database::open(dir.path(), Ruleset::Awari).unwrap();
    let seven = pos("1 1 1 1 1 1 1 0 0 0 0 0");
    let err = db.value(&seven).unwrap_err();
    assert!(matches!(err, Error::LayerMissing { layer: 7, .. }), "{err}");

    let o = query(dir.path(), &[], Some("1 1 1 1 1 1 1 0 0 0 0 0"), None);
    assert_eq!(o.status.code(), Some(4));
    let e = stderr(&o);
    assert!(e.contains("layer 7 of awari is not built"), "{e}");
    // The hint keeps the directory the query used.
    let hint = format!("run `oware build --rules awari --max-stones 7 --dir {}`", dir.path().display());
    assert!(e.contains(&hint), "{e}");
    assert!(stdout(&o).is_empty());

    // Six-stone positions (children in layers 0..6) still answer.
    assert!(db.value(&pos("1 1 1 1 1 1 0 0 0 0 0 0")).is_ok());

    // The failure is not remembered: once the layer exists, the same database answers.
    builder::build(&BuildConfig { rules: Ruleset::Awari, max_stones: 7, dir: dir.path().into(), max_memory: None, ..Default::default() }, &Silent).unwrap();
    let v = db.value(&seven).unwrap();
    assert_eq!(v, manual_value(&db, Ruleset::Awari, seven.board()));
}

#[test]
fn ruleset_mismatch() {
    let dir = build(Ruleset::Awari, 6);
    let target = native_path::<ValuesKind>(dir.path(), ABAPA, 3);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::copy(native_path::<ValuesKind>(dir.path(), Ruleset::Awari, 3), &target).unwrap();
    let db = Database::open(dir.path(), ABAPA).unwrap();
    let err = db.value(&pos("1 1 1 0 0 0 0 0 0 0 0 0")).unwrap_err();
    assert!(matches!(err, Error::RulesetMismatch { .. }), "{err}");

    let o = query(dir.path(), &["--rules", "abapa"], Some("1 1 1 0 0 0 0 0 0 0 0 0"), None);
    assert_eq!(o.status.code(), Some(6), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds ruleset 'awari', expected 'abapa'"), "{}", stderr(&o));
}

#[test]
fn damaged_layer() {
    let dir = build(Ruleset::Awari, 6);
    let path = native_path::<ValuesKind>(dir.path(), Ruleset::Awari, 5);
    let original = std::fs::read(&path).unwrap();
    flip_payload_byte(&path, 1000);
    let five = pos("1 1 1 1 1 0 0 0 0 0 0 0");

    let db = Database::open(dir.path(), Ruleset::Awari).unwrap();
    let err = db.value(&five).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("checksum"), "{err}");
    // Layers that are intact still answer.
    assert!(db.value(&pos("1 1 1 1 0 0 0 0 0 0 0 0")).is_ok());

    let o = query(dir.path(), &[], Some("1 1 1 1 1 0 0 0 0 0 0 0"), None);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).contains("damaged layer file"), "{}", stderr(&o));

    // Without checksum verification the layer opens; a value outside -5..=5 is still caught.
    let index = oware::index::rank(five.board()).unwrap();
    let mut bytes = original.clone();
    bytes[(PAYLOAD_OFFSET + index) as usize] = 100;
    std::fs::write(&path, &bytes).unwrap();
    let lax = Database::open(dir.path(), Ruleset::Awari).unwrap().verify_checksums(false);
    let err = lax.value(&five).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("outside"), "{err}");
    let o = query(dir.path(), &["--no-verify"], Some("1 1 1 1 1 0 0 0 0 0 0 0"), None);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));

    // The failure was not remembered: once repaired, the first database opens the layer.
    std::fs::write(&path, &original).unwrap();
    let v = db.value(&five).unwrap();
    assert_eq!(v, manual_value(&db, Ruleset::Awari, five.board()));

    // A truncated file.
    std::fs::write(&path, &original[..original.len() - 1]).unwrap();
    let fresh = Database::open(dir.path(), Ruleset::Awari).unwrap();
    assert!(matches!(fresh.value(&five), Err(Error::Corrupt { .. })));
}

#[test]
fn malformed_positions() {
    let dir = build(Ruleset::Awari, 2);
    for bad in ["1 2 3", "a b c d e f g h i j k l", "49 0 0 0 0 0 0 0 0 0 0 0", "9 9 9 9 9 9 0 0 0 0 0 0"] {
        let o = query(dir.path(), &[], Some(bad), None);
        assert_eq!(o.status.code(), Some(3), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("invalid position"), "{}", stderr(&o));
    }
    // A bad option value is a usage error.
    let o = query(dir.path(), &["--format", "zip"], Some("1 0 0 0 0 0 0 0 0 0 0 0"), None);
    assert_eq!(o.status.code(), Some(2));
    let o = query(dir.path(), &["--format", "vu", "--rules", "abapa"], Some("1 0 0 0 0 0 0 0 0 0 0 0"), None);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn batch_mode() {
    let dir = build(Ruleset::Awari, 6);
    let input = "# comment\n\n1 0 0 0 0 0 0 0 0 0 0 0\nnot a position\n0 0 0 0 0 1 0 0 0 0 0 0\n  \n1,1,1,1,1,1,1,0,0,0,0,0\n0 0 0 0 0 0 0 0 1 0 0 0\n";
    let o = query(dir.path(), &["--values-only"], None, Some(input));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    // One record per non-blank, non-comment line, in order: failed lines get an error record.
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(lines[0], "1 0 0 0 0 0 0 0 0 0 0 0\t1");
    assert!(lines[1].starts_with("error\t4\t3\tinvalid position"), "{out}");
    assert_eq!(lines[2], "0 0 0 0 0 1 0 0 0 0 0 0\t-1");
    assert!(lines[3].starts_with("error\t7\t4\tlayer 7 of awari is not built"), "{out}");
    assert_eq!(lines[4], "0 0 0 0 0 0 0 0 1 0 0 0\t-1");
    let e = stderr(&o);
    assert!(e.contains("2 of 5 positions failed"), "{e}");

    // The first error decides the exit code: here the missing layer (4) comes first.
    let o = query(dir.path(), &["--values-only"], None, Some("1 1 1 1 1 1 1 0 0 0 0 0\nxyz\n"));
    assert_eq!(o.status.code(), Some(4));

    // All good: exit 0; JSON lines.
    let o = query(dir.path(), &["--values-only", "--json"], None, Some("1 0 0 0 0 0 0 0 0 0 0 0\n0 0 0 0 0 0 0 0 1 0 0 0\n"));
    assert!(o.status.success());
    let lines: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["value"], 1);
    assert_eq!(lines[1]["value"], -1);
    assert_eq!(lines[1]["position"], serde_json::json!([0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]));

    // Full reports in batch mode: one JSON object per line.
    let o = query(dir.path(), &["--json"], None, Some("0 0 0 0 2 1 1 0 0 0 0 0\n0 0 0 0 0 0 1 1 1 1 1 1\n"));
    assert!(o.status.success(), "{}", stderr(&o));
    let reports: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[1]["value"], -6);
    assert_eq!(reports[1]["game_over"], true);
    assert_eq!(reports[1]["pv_end"]["reason"], "game_over");
}

#[test]
fn published_format_directory() {
    let dir = build(Ruleset::Awari, 8);
    let vu: PathBuf = dir.path().join("vu");
    std::fs::create_dir(&vu).unwrap();
    for n in 0..=8 {
        let bytes = std::fs::read(native_path::<ValuesKind>(dir.path(), Ruleset::Awari, n)).unwrap();
        std::fs::write(vu_path(&vu, n), &bytes[PAYLOAD_OFFSET as usize..]).unwrap();
    }
    let native = Database::open(dir.path(), Ruleset::Awari).unwrap();
    let published = Database::from_dir(oware::storage::DatabaseDir::new(oware::storage::Format::Vu, &vu, Ruleset::Awari).unwrap());
    assert_eq!(published.layers_present(), (0..=8).collect::<Vec<_>>());
    let mut rng = SplitMix64(99);
    for _ in 0..2000 {
        let p = Position::new(random_layer_board(&mut rng, 8)).unwrap();
        assert_eq!(published.value(&p).unwrap(), native.value(&p).unwrap());
        assert_eq!(published.move_values(&p).unwrap(), native.move_values(&p).unwrap());
    }
    let o =
        oware(&["query", "--format", "vu", "--dir", vu.to_str().unwrap(), "--values-only", "0", "2", "1", "0", "0", "1", "0", "1", "0", "0", "1", "0"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let want = native.value(&pos("0 2 1 0 0 1 0 1 0 0 1 0")).unwrap();
    assert_eq!(stdout(&o), format!("0 2 1 0 0 1 0 1 0 0 1 0\t{want}\n"));

    // A published file of the wrong size is damaged.
    std::fs::write(vu_path(&vu, 8), [0u8; 10]).unwrap();
    let fresh = Database::from_dir(oware::storage::DatabaseDir::new(oware::storage::Format::Vu, &vu, Ruleset::Awari).unwrap());
    assert!(matches!(fresh.value(&pos("8 0 0 0 0 0 0 0 0 0 0 0")), Err(Error::Corrupt { .. })));
    let o = oware(&["query", "--format", "vu", "--dir", vu.to_str().unwrap(), "8", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"], None);
    assert_eq!(o.status.code(), Some(5));
    // Missing published layer.
    let o = oware(&["query", "--format", "vu", "--dir", vu.to_str().unwrap(), "9", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"], None);
    assert_eq!(o.status.code(), Some(4));
}
