//! Only the layers a target needs, through the program (`oware build --for`): a build for a
//! target leaves layer `n - 1` out and writes the same files as a full build, in memory and out
//! of core, every command takes the gap, and a full build fills it. (That no move reaches the
//! layer below, the plan of a target and the solver without that layer are the library's
//! tests: `tests/suite/targets.rs`.)

use std::path::Path;

use oware::index::{layer_size, unrank_unchecked};
use oware::probe::Database;
use oware::rules::layers_needed;
use oware::storage::DatabaseDir;
use oware::{Error, Position, Ruleset};

use crate::common::{fixture, oware, s};

/// A position of 8 stones (the target of the tests below) and one of 7 and 6 stones.
const EIGHT: &str = "2 2 2 2 0 0 0 0 0 0 0 0";
const SEVEN: &str = "2 2 2 1 0 0 0 0 0 0 0 0";
const SIX: &str = "2 2 2 0 0 0 0 0 0 0 0 0";

/// The names of the files in `dir`'s `awari/` with extension `ext`, sorted.
fn files(dir: &Path, ext: &str) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir.join("awari")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.ends_with(ext)).collect();
    v.sort();
    v
}

#[test]
fn build_for_a_position_builds_exactly_its_layers_as_a_full_build_would() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = oware(&["build", "--for", EIGHT, "--dir", s(tmp.path()), "--json"]);
    assert_eq!(code, 0, "{err}");
    let expected: Vec<String> = [0, 1, 2, 3, 4, 5, 6, 8].iter().map(|n| format!("layer-{n:02}.owdb")).collect();
    assert_eq!(files(tmp.path(), ".owdb"), expected);
    let full = fixture(Ruleset::Awari, 8);
    for name in &expected {
        assert!(std::fs::read(tmp.path().join("awari").join(name)).unwrap() == std::fs::read(full.join("awari").join(name)).unwrap(), "{name} differs");
    }
    // The plan (first JSON line) shows layer 7 skipped, not missing; no layer line for it.
    let plan: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(plan["layers"][7]["action"], "skip", "{plan}");
    assert!(plan["layers"][7]["reason"].as_str().unwrap().contains("not needed"));
    let built: Vec<u64> = out
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|d| d["kind"] == "layer")
        .map(|d| d["layer"].as_u64().unwrap())
        .collect();
    assert_eq!(built, vec![0, 1, 2, 3, 4, 5, 6, 8]);
    // A bare stone count and the same target again: nothing to do.
    let (code, out, err) = oware(&["build", "--for", "8", "--dir", s(tmp.path()), "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("0 to build, 1 skipped (not needed)") && out.contains("layer  7:") && out.contains("skipped, not needed"), "{out}");
}

/// A copy of the layers `build --for` an 8-stone position leaves: the fixture's 0..=8 less 7.
fn gapped(to: &Path) {
    crate::common::copy_fixture(Ruleset::Awari, 8, to);
    for f in ["layer-07.owdb", "layer-07.json"] {
        std::fs::remove_file(to.join("awari").join(f)).unwrap();
    }
}

#[test]
fn every_consumer_takes_a_gapped_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    gapped(&db);
    assert_eq!(DatabaseDir::native(&db, Ruleset::Awari).unwrap().gap(), Some(7));
    assert_eq!(DatabaseDir::native(fixture(Ruleset::Awari, 8), Ruleset::Awari).unwrap().gap(), None);

    // verify: layer 7 not needed, layer 8 re-derived, exit 0.
    let (code, out, err) = oware(&["verify", "--dir", s(&db), "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let doc: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let layers = doc["layers"].as_array().unwrap();
    assert_eq!(layers[7]["status"], "not-needed", "{doc}");
    assert_eq!(layers[8]["status"], "ok", "{doc}");
    let (code, out, _) = oware(&["verify", "--dir", s(&db)]);
    assert_eq!(code, 0);
    assert!(out.contains("layer  7: skipped") && out.contains("OK: layers 0..6, 8 of awari (layer 7 not built, not needed)"), "{out}");
    // Asked for explicitly, layer 7 is missing.
    let (code, _, _) = oware(&["verify", "--dir", s(&db), "--layers", "0..7"]);
    assert_eq!(code, 4);

    // stats: every layer present, the gap said to be not needed.
    let (code, out, err) = oware(&["stats", "--dir", s(&db)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("layer  8:") && !out.contains("layer  7:"), "{out}");
    assert!(err.contains("layer 7 is not built: layer 8 does not need it"), "{err}");

    // export: scores.0..6 and scores.8, which verify as the published format.
    let vu = tmp.path().join("vu");
    let (code, _, err) = oware(&["export", "--format", "vu", "--dir", s(&db), "--out", s(&vu), "-q"]);
    assert_eq!(code, 0, "{err}");
    assert!(vu.join("scores.8").is_file() && !vu.join("scores.7").exists());
    let (code, out, _) = oware(&["verify", "--format", "vu", "--dir", s(&vu)]);
    assert_eq!(code, 0, "{out}");

    // pack, verify the packs, query them, unpack byte for byte.
    let packs = tmp.path().join("packs");
    let (code, out, err) = oware(&["pack", "--dir", s(&db), "--out", s(&packs)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("packed awari layers 0..6, 8"), "{out}");
    assert!(packs.join("awari/layer-08.owpk").is_file() && !packs.join("awari/layer-07.owpk").exists());
    let (code, out, _) = oware(&["verify", "--dir", s(&packs)]);
    assert_eq!(code, 0, "{out}");
    let back = tmp.path().join("back");
    let (code, _, err) = oware(&["unpack", "--dir", s(&packs), "--out", s(&back), "-q"]);
    assert_eq!(code, 0, "{err}");
    for n in [0, 6, 8] {
        let name = format!("awari/layer-{n:02}.owdb");
        assert!(std::fs::read(db.join(&name)).unwrap() == std::fs::read(back.join(&name)).unwrap(), "{name}");
    }

    // query: the target and a position below the gap answer as on the full database; a position
    // of the gap is "not built" (exit 4).
    let full = fixture(Ruleset::Awari, 8);
    for dir in [&db, &packs] {
        for pos in [EIGHT, SIX] {
            let (code, out, err) = oware(&["query", "--dir", s(dir), "--json", pos]);
            assert_eq!(code, 0, "{pos}: {err}");
            let (_, expected, _) = oware(&["query", "--dir", s(full), "--json", pos]);
            assert_eq!(out, expected, "{pos}");
        }
        let (code, _, err) = oware(&["query", "--dir", s(dir), SEVEN]);
        assert_eq!(code, 4, "{err}");
        assert!(err.contains("layer 7 of awari is not built"), "{err}");
    }

    // The library: the same, and every position of layer 8 is solved as on the full database.
    let gap = Database::from_dir(DatabaseDir::native(&db, Ruleset::Awari).unwrap());
    let whole = Database::from_dir(DatabaseDir::native(full, Ruleset::Awari).unwrap());
    assert_eq!(gap.layers_present(), vec![0, 1, 2, 3, 4, 5, 6, 8]);
    assert!(matches!(gap.value(&SEVEN.parse().unwrap()), Err(Error::LayerMissing { layer: 7, .. })));
    for i in (0..layer_size(8)).step_by(97) {
        let p = Position::new(unrank_unchecked(8, i)).unwrap();
        assert_eq!(gap.solution(&p, 40).unwrap().line, whole.solution(&p, 40).unwrap().line, "{p}");
        assert_eq!(gap.move_values(&p).unwrap(), whole.move_values(&p).unwrap(), "{p}");
    }
}

#[test]
fn a_full_build_fills_the_gap_and_keeps_the_other_layers() {
    let tmp = tempfile::tempdir().unwrap();
    gapped(tmp.path());
    let layer = |n: u32| tmp.path().join("awari").join(format!("layer-{n:02}.owdb"));
    let before: Vec<_> = [0, 6, 8].iter().map(|&n| (std::fs::read(layer(n)).unwrap(), std::fs::metadata(layer(n)).unwrap().modified().unwrap())).collect();
    // The plan of a plain build builds layer 7 alone.
    let (code, out, _) = oware(&["build", "--max-stones", "8", "--dir", s(tmp.path()), "--dry-run"]);
    assert_eq!(code, 0);
    assert!(out.contains("8 to check, 1 to build") && out.contains("layer  7:"), "{out}");
    let (code, out, err) = oware(&["build", "--max-stones", "8", "--dir", s(tmp.path()), "--json"]);
    assert_eq!(code, 0, "{err}");
    let status: Vec<(u64, String)> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|d| d["kind"] == "layer")
        .map(|d| (d["layer"].as_u64().unwrap(), d["status"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(status[7], (7, "built".to_string()), "{status:?}");
    assert!(status.iter().filter(|(n, _)| *n != 7).all(|(_, s)| s == "skipped"), "{status:?}");
    let full = fixture(Ruleset::Awari, 8);
    assert!(std::fs::read(layer(7)).unwrap() == std::fs::read(full.join("awari/layer-07.owdb")).unwrap());
    for (&n, (bytes, modified)) in [0, 6, 8].iter().zip(&before) {
        assert!(&std::fs::read(layer(n)).unwrap() == bytes, "layer {n} changed");
        assert_eq!(&std::fs::metadata(layer(n)).unwrap().modified().unwrap(), modified, "layer {n} was rewritten");
    }
    assert_eq!(DatabaseDir::native(tmp.path(), Ruleset::Awari).unwrap().gap(), None);
}

#[test]
fn a_target_built_out_of_core_writes_the_same_files() {
    let full = fixture(Ruleset::Awari, 14);
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = oware(&["build", "--for", "14", "--dir", s(tmp.path()), "--max-memory", "4M", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("layer 14") && out.contains("out of core in 3 parts") && out.contains("layer 13:") && out.contains("skipped"), "{out}");
    let (code, _, err) = oware(&["build", "--for", "14", "--dir", s(tmp.path()), "--max-memory", "4M", "-q"]);
    assert_eq!(code, 0, "{err}");
    assert!(!tmp.path().join("awari/layer-13.owdb").exists());
    for n in layers_needed(14) {
        let name = format!("awari/layer-{n:02}.owdb");
        assert!(std::fs::read(tmp.path().join(&name)).unwrap() == std::fs::read(full.join(&name)).unwrap(), "{name} differs");
    }
    assert!(!tmp.path().join("awari/.work").exists(), "the work directory is removed");
}

#[test]
fn verify_takes_the_gap_only_in_a_range_past_it() {
    let tmp = tempfile::tempdir().unwrap();
    gapped(tmp.path());
    for (range, code) in [("0..8", 0), ("0..7", 4), ("7..8", 0), ("8", 0), ("6..7", 4)] {
        let (got, out, err) = oware(&["verify", "--dir", s(tmp.path()), "--layers", range]);
        assert_eq!(got, code, "--layers {range}: {out}\n{err}");
    }
    let (code, out, _) = oware(&["verify", "--dir", s(tmp.path()), "--max-stones", "8"]);
    assert_eq!(code, 0, "{out}");
    // Another layer missing too: no gap, both missing.
    std::fs::remove_file(tmp.path().join("awari/layer-03.owdb")).unwrap();
    assert_eq!(DatabaseDir::native(tmp.path(), Ruleset::Awari).unwrap().gap(), None);
    let (code, out, _) = oware(&["verify", "--dir", s(tmp.path())]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("missing layers 3, 7"), "{out}");
}
