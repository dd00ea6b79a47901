//! Golden checksums: the payload checksum of every layer 0..=12 of every ruleset, built from
//! scratch, must equal the one recorded in `tests/data/golden-checksums.json`.
//!
//! The file pins the builder's output bit for bit: a change in the rules, the solver, the index
//! order or the value encoding shows up here as the ruleset and layer whose bytes moved. When such
//! a change is intended (and checked by the other tests), regenerate the file with
//!
//! ```sh
//! OWARE_REGENERATE_GOLDEN=1 cargo test --release --test suite -- --ignored golden::regenerate
//! ```
//!
//! and review the diff.

use std::path::{Path, PathBuf};

use crate::common::format_checksum as checksum;
use oware::Ruleset;

/// Layers `0..=MAX_LAYER` are pinned.
const MAX_LAYER: u32 = 12;

fn golden_path() -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "tests", "data", "golden-checksums.json"].iter().collect()
}

/// The payload checksum stored in the header of each layer `0..=MAX_LAYER` of `rules` as the
/// builder writes them (the payload is checked against it on opening). The layers are this test
/// binary's shared fixture (`common::fixture`): built from scratch by the builder once, for
/// every test that reads them.
///
/// The only place in this file that calls the builder and the storage layer.
fn build_and_collect(rules: Ruleset, dir: &Path) -> Vec<u64> {
    use oware::storage::{DatabaseDir, ValuesKind};

    (0..=MAX_LAYER)
        .map(|n| {
            let layer =
                DatabaseDir::native(dir, rules).unwrap().open_layer::<ValuesKind>(n, true).unwrap_or_else(|e| panic!("{rules}: cannot open layer {n}: {e}"));
            layer.header().expect("a native layer has a header").payload_checksum
        })
        .collect()
}

/// Every ruleset in id order (`Ruleset::names()`), with its checksums.
fn compute_all() -> Vec<(Ruleset, Vec<u64>)> {
    Ruleset::names()
        .into_iter()
        .map(|name| {
            let rules: Ruleset = name.parse().expect("a listed ruleset name parses");
            (rules, build_and_collect(rules, crate::common::fixture(rules, MAX_LAYER)))
        })
        .collect()
}

fn hex(x: u64) -> String {
    format!("{x:016x}")
}

/// The file's text: one ruleset per line, rulesets in id order, so diffs stay readable.
fn render(all: &[(Ruleset, Vec<u64>)]) -> String {
    let mut out = String::new();
    out.push_str("{\n  \"schema_version\": 1,\n  \"algorithm\": \"xxh3-64\",\n");
    out.push_str(&format!("  \"max_layer\": {MAX_LAYER},\n  \"layers\": {{\n"));
    for (i, (rules, sums)) in all.iter().enumerate() {
        let list: Vec<String> = sums.iter().map(|&c| format!("\"{}\"", hex(c))).collect();
        let comma = if i + 1 < all.len() { "," } else { "" };
        out.push_str(&format!("    \"{}\": [{}]{comma}\n", rules.name(), list.join(", ")));
    }
    out.push_str("  }\n}\n");
    out
}

/// Reads the golden file: ruleset name -> checksums of layers 0..=max_layer.
fn read_golden() -> Vec<(String, Vec<u64>)> {
    let path = golden_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_str(&text).expect("golden file is JSON");
    assert_eq!(json["schema_version"], 1, "unknown schema_version");
    assert_eq!(json["algorithm"], "xxh3-64", "unexpected checksum algorithm (docs/FORMAT.md)");
    assert_eq!(json["max_layer"], MAX_LAYER, "unexpected max_layer");
    let layers = json["layers"].as_object().expect("\"layers\" is an object");
    layers
        .iter()
        .map(|(name, list)| {
            let sums = list
                .as_array()
                .unwrap_or_else(|| panic!("{name}: not a list"))
                .iter()
                .map(|v| {
                    let s = v.as_str().unwrap_or_else(|| panic!("{name}: checksum is not a string"));
                    assert_eq!(s.len(), 16, "{name}: checksum {s} is not 16 hex digits");
                    u64::from_str_radix(s, 16).unwrap_or_else(|e| panic!("{name}: bad checksum {s}: {e}"))
                })
                .collect::<Vec<u64>>();
            assert_eq!(sums.len(), MAX_LAYER as usize + 1, "{name}: expected {} checksums", MAX_LAYER + 1);
            (name.clone(), sums)
        })
        .collect()
}

#[test]
fn golden_file_is_sane() {
    let golden = read_golden();
    let mut names: Vec<&str> = golden.iter().map(|(n, _)| n.as_str()).collect();
    let mut expected = Ruleset::names();
    names.sort_unstable();
    expected.sort_unstable();
    assert_eq!(names, expected, "the golden file must list exactly the rulesets of Ruleset::names()");
    // Layer 0 is one position (the empty board) worth 0: its payload is the single byte 0.
    let awari = &golden.iter().find(|(n, _)| n == "awari").expect("awari listed").1;
    assert_eq!(hex(awari[0]), hex(checksum(&[0u8])), "awari layer 0 must be the checksum of one zero byte");
    // Layer 1 is known independently of the builder (docs/facts.md, `layer-1-values`): the board
    // at index p has its one stone in pit p (docs/indexing.md), worth +1 in the mover's pits 0..4
    // and -1 in pit 5 and in the opponent's pits. One stone never captures, so no grand-slam
    // option can change it: every ruleset's layer 1 is this payload.
    let layer_1: Vec<u8> = (0..12).map(|p| if p < 5 { 1i8 } else { -1i8 } as u8).collect();
    for (name, sums) in &golden {
        assert_eq!(hex(sums[1]), hex(checksum(&layer_1)), "{name}: layer 1 is not the published layer-1 values");
    }
}

#[test]
fn builds_match_golden_checksums() {
    let golden = read_golden();
    let mut mismatches = Vec::new();
    for (rules, sums) in compute_all() {
        let want = &golden.iter().find(|(n, _)| n == rules.name()).unwrap_or_else(|| panic!("{rules} missing")).1;
        for (n, (&got, &want)) in sums.iter().zip(want).enumerate() {
            if got != want {
                mismatches.push(format!("{rules} layer {n}: built {}, golden file says {}", hex(got), hex(want)));
            }
        }
        if rules == Ruleset::Awari {
            // Layer 0 is one position (the empty board) worth 0: its payload is one zero byte.
            assert_eq!(hex(want[0]), hex(checksum(&[0u8])), "golden file: awari layer 0 is not one position worth 0");
            assert_eq!(hex(sums[0]), hex(checksum(&[0u8])), "build: awari layer 0 is not one position worth 0");
        }
    }
    assert!(mismatches.is_empty(), "checksums differ from tests/data/golden-checksums.json:\n{}", mismatches.join("\n"));
}

/// Rewrites the golden file from the current build. Ignored; runs only with
/// `OWARE_REGENERATE_GOLDEN=1` (see the module documentation).
#[test]
#[ignore]
fn regenerate() {
    if std::env::var("OWARE_REGENERATE_GOLDEN").as_deref() != Ok("1") {
        eprintln!("set OWARE_REGENERATE_GOLDEN=1 to rewrite {}", golden_path().display());
        return;
    }
    let all = compute_all();
    std::fs::write(golden_path(), render(&all)).expect("write the golden file");
    eprintln!("wrote {}", golden_path().display());
}
