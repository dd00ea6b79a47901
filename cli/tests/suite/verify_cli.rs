//! The verifier as `oware verify`: it passes on freshly built databases and finds every kind of
//! damage (a changed value behind a valid checksum, a changed payload, a changed header field),
//! naming the layer and the position; explicit ranges and missing layers. (The verifier's
//! library calls are the library's tests: `src/verify/tests.rs`.)

use crate::common;

use common::{copy_fixture, oware, s};
use std::path::PathBuf;

use oware::index::{in_some_layer, layer_size, LayerWalker};
use oware::rules::GrandSlam;
use oware::rules::{for_each_predecessor, Board};
use oware::storage::{native_path, ValuesKind};
use oware::storage::{Header, HEADER_LEN, PAYLOAD_OFFSET};
use oware::Ruleset;

// Header field offsets of docs/FORMAT.md / src/format.rs (ruleset id and stone count, u32 LE).
const OFF_RULESET: usize = 16;
const OFF_STONES: usize = 20;

fn board_text(b: &Board) -> String {
    b.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")
}

#[test]
fn verify_passes_on_built_databases() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_fixture(Ruleset::Awari, 10, dir);
    copy_fixture(Ruleset::Abapa(GrandSlam::NoCapture), 8, dir);

    // CLI, both rulesets, text and JSON.
    let (code, out, err) = oware(&["verify", "--dir", s(dir)]);
    assert_eq!(code, 0, "{out}\n{err}");
    for n in 0..=10 {
        assert!(out.contains(&format!("layer {n:>2}: ")), "layer {n} missing from:\n{out}");
    }
    assert!(out.contains("OK: layers 0..10 of awari"), "{out}");
    assert!(err.contains("layers 0..10"), "{err}");
    let (code, out, err) = oware(&["verify", "--dir", s(dir), "--rules", "abapa", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["positions_checked"], (0..=8).map(layer_size).sum::<u64>());
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["layers_requested"], serde_json::json!([0, 8]));
    assert_eq!(doc["layers"].as_array().unwrap().len(), 9);
    assert!(doc["layers"].as_array().unwrap().iter().all(|l| l["status"] == "ok" && l["mismatches"] == 0));
}

/// An index of layer `n` whose position is the child of no same-layer position: changing its
/// value makes exactly that one position of layer `n` wrong.
fn position_without_parents(n: u32) -> (u64, Board) {
    let size = layer_size(n);
    LayerWalker::new(n, size / 2..size)
        .unwrap()
        .find(|(_, b)| {
            let mut parents = 0;
            for_each_predecessor(Ruleset::Awari, b, |p, _| parents += usize::from(in_some_layer(p)));
            parents == 0
        })
        .expect("some position of the layer has no same-layer parent")
}

#[test]
fn a_changed_value_is_found_with_its_layer_and_position() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_fixture(Ruleset::Awari, 10, dir);
    let n = 9;
    let (i, board) = position_without_parents(n);
    let path = native_path::<ValuesKind>(dir, Ruleset::Awari, n);
    let mut file = std::fs::read(&path).unwrap();
    let at = PAYLOAD_OFFSET as usize + i as usize;
    let old = file[at] as i8;
    let new = if old < n as i8 { old + 1 } else { old - 1 };
    file[at] = new as u8;
    std::fs::write(&path, &file).unwrap();

    // First the payload checksum catches it: the file is damaged (exit 5), named.
    let (code, out, err) = oware(&["verify", "--dir", s(dir)]);
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(out.contains("layer  9: DAMAGED") && out.contains("layer-09.owdb") && out.contains("payload checksum mismatch"), "{out}");
    // Layer 10 does not read layer 9 (no capture takes one stone): still verified.
    assert!(out.contains("layer 10:") && out.contains("351,351 positions checked"), "{out}");
    let (code, out, err) = oware(&["verify", "--dir", s(dir), "--layers", "10"]);
    assert_eq!(code, 0, "layer 10 alone does not need layer 9:\n{out}\n{err}");
    assert!(!out.contains("layer  9"), "{out}");

    // Make the header agree with the altered payload: only the re-derivation can tell now.
    let sum = common::format_checksum(&file[PAYLOAD_OFFSET as usize..]);
    file[..HEADER_LEN].copy_from_slice(&Header::new(Ruleset::Awari, n, sum).encode());
    std::fs::write(&path, &file).unwrap();

    let (code, out, err) = oware(&["verify", "--dir", s(dir)]);
    assert_eq!(code, 8, "{out}\n{err}");
    assert!(out.contains("1 position of layer 9 does not follow from its children"), "{out}");
    let line = out.lines().find(|l| l.contains(&format!("index {i:>12}:"))).unwrap_or_else(|| panic!("index {i} not named:\n{out}"));
    assert!(line.contains(&board_text(&board)), "{line}");
    assert!(line.contains(&format!("stored {new:+}")) && line.contains(&format!("children {old:+}")), "{line}");
    assert!(out.contains("FAILED: 1 wrong value in layer 9"), "{out}");
    assert!(err.contains("verification failed"), "{err}");

    let (code, out, _) = oware(&["verify", "--dir", s(dir), "--json", "--quiet"]);
    assert_eq!(code, 8);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["mismatches"], 1);
    assert_eq!(doc["layers"][9]["status"], "mismatch");
    assert_eq!(doc["layers"][9]["first_mismatches"][0]["index"], i);
    assert_eq!(doc["layers"][8]["status"], "ok");
}

fn set_u32(path: &PathBuf, at: usize, v: u32) {
    let mut f = std::fs::read(path).unwrap();
    f[at..at + 4].copy_from_slice(&v.to_le_bytes());
    std::fs::write(path, f).unwrap();
}

#[test]
fn damaged_header_fields_are_named_and_dependent_layers_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_fixture(Ruleset::Awari, 9, dir);

    // Ruleset field of layer 3 says abapa.
    set_u32(&native_path::<ValuesKind>(dir, Ruleset::Awari, 3), OFF_RULESET, 1);
    let (code, out, err) = oware(&["verify", "--dir", s(dir)]);
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(out.contains("layer  3: DAMAGED") && out.contains("layer-03.owdb") && out.contains("ruleset id 1"), "{out}");
    // Layer 4 reads layers 0..2 only: verified. Layer 5 captures into layer 3: not re-derivable.
    assert!(out.contains("layer  4:") && out.contains("1,365 positions checked"), "{out}");
    assert!(out.contains("layer  5: header ok, checksum ok, but NOT re-derived: its captures lead to layer 3 (damaged)"), "{out}");
    assert!(out.contains("FAILED: damaged or unreadable layer 3; layers 5..9 not re-derived"), "{out}");
    assert!(err.contains("ruleset id 1"), "{err}");

    // Stone-count field of layer 7 out of range.
    set_u32(&native_path::<ValuesKind>(dir, Ruleset::Awari, 3), OFF_RULESET, 0);
    set_u32(&native_path::<ValuesKind>(dir, Ruleset::Awari, 7), OFF_STONES, 99);
    let (code, out, err) = oware(&["verify", "--dir", s(dir)]);
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(out.contains("layer  7: DAMAGED") && out.contains("layer-07.owdb") && out.contains("stone count field is 99"), "{out}");
    // Layer 8 reads 0..6: fine; layer 9 captures into 7.
    assert!(out.contains("75,504 positions checked"), "{out}");
    assert!(out.contains("layer  9: header ok, checksum ok, but NOT re-derived: its captures lead to layer 7 (damaged)"), "{out}");

    // Stone-count field of layer 7 claims layer 8: the sizes disagree, and it says so.
    set_u32(&native_path::<ValuesKind>(dir, Ruleset::Awari, 7), OFF_STONES, 8);
    let (code, out, _) = oware(&["verify", "--dir", s(dir), "--layers", "7"]);
    assert_eq!(code, 5, "{out}");
    assert!(out.contains("layer-07.owdb") && out.contains("stone count field (8, a layer of 75504 positions) disagree"), "{out}");
}

#[test]
fn explicit_ranges_and_missing_layers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_fixture(Ruleset::Awari, 8, dir);
    // Lower layers are checked but not re-derived.
    let (code, out, err) = oware(&["verify", "--dir", s(dir), "--layers", "7..8"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("layer  6: header ok, checksum ok; read by layers 7.. (not re-derived: below --layers)"), "{out}");
    assert!(out.contains("31,812 positions checked") && out.contains("75,504 positions checked"), "{out}");
    assert!(!out.contains("12,375 positions checked"), "{out}");
    // Layers asked for but absent: exit 4.
    let (code, out, err) = oware(&["verify", "--dir", s(dir), "--max-stones", "10"]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(out.contains("layer  9: MISSING") && out.contains("FAILED: missing layers 9..10"), "{out}");
    // Nothing at all: exit 4 too.
    let empty = tempfile::tempdir().unwrap();
    let (code, _, err) = oware(&["verify", "--dir", s(empty.path())]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("layer-00.owdb"), "{err}");
    // Bad arguments: exit 2.
    assert_eq!(oware(&["verify", "--dir", s(dir), "--layers", "9..3"]).0, 2);
    assert_eq!(oware(&["verify", "--dir", s(dir), "--rules", "abapa", "--format", "vu"]).0, 2);
}
