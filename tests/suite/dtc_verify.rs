//! Depths to capture (dtc) files checked by `oware verify`: every entry against its value and
//! its moves (`src/dtc.rs`), wrong depths listed like wrong values (exit 8), damaged files
//! (exit 5), missing ones when required (exit 4).

use crate::common::{oware, s};

use std::path::Path;

use oware::format::{checksum, Header, HEADER_LEN, PAYLOAD_OFFSET};
use oware::index::{in_some_layer, layer_size, LayerWalker};
use oware::rules::{for_each_predecessor, Board, GrandSlam, Ruleset};
use oware::storage::{dtc_path, layer_path};

const ABAPA: Ruleset = Ruleset::Abapa(GrandSlam::NoCapture);

fn board_text(b: &Board) -> String {
    b.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")
}

/// Rewrites the header of a dtc file for its (changed) payload, so only the content is wrong.
fn reseal(path: &Path, n: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    let sum = checksum(&bytes[PAYLOAD_OFFSET as usize..]);
    bytes[..HEADER_LEN].copy_from_slice(&Header::dtc(ABAPA, n, sum).encode());
    std::fs::write(path, bytes).unwrap();
}

fn verify(dir: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["verify", "--rules", "abapa", "--dir", s(dir)];
    args.extend_from_slice(extra);
    oware(&args)
}

fn verify_json(dir: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["--json", "--quiet"];
    args.extend_from_slice(extra);
    let (code, out, err) = verify(dir, &args);
    (code, serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}")))
}

#[test]
fn verify_checks_every_dtc_file_and_lists_wrong_depths() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let max = 8;
    let (code, _, err) = oware(&["build", "--quiet", "--rules", "abapa", "--dtc", "--max-stones", &max.to_string(), "--dir", s(dir)]);
    assert_eq!(code, 0, "{err}");

    // Intact: every dtc file checked, every position of every layer, with or without --dtc.
    for extra in [&[][..], &["--dtc"][..], &["--require-dtc"][..]] {
        let (code, out, err) = verify(dir, extra);
        assert_eq!(code, 0, "{out}\n{err}");
        for n in 0..=max {
            assert!(out.contains(&format!("dtc    {n:>2}:")), "dtc {n}:\n{out}");
        }
        assert!(out.contains("dtc     8:         75,504 depths checked,          0 mismatches"), "{out}");
        let total: u64 = (0..=max).map(layer_size).sum();
        assert!(out.contains(&format!("{} depths to capture checked, every one follows from its moves", oware::units::group_digits(total))), "{out}");
    }
    let (code, doc) = verify_json(dir, &[]);
    assert_eq!(code, 0);
    assert_eq!(doc["dtc"].as_array().unwrap().len(), max as usize + 1);
    assert!(doc["dtc"].as_array().unwrap().iter().all(|e| e["status"] == "ok" && e["mismatches"] == 0));
    assert_eq!(doc["dtc"][8]["checked"], layer_size(8));
    assert_eq!(doc["dtc_checked"], (0..=max).map(layer_size).sum::<u64>());
    assert_eq!(doc["dtc_mismatches"], 0);
    assert!(doc["dtc"][8]["greatest_depth"].as_u64().unwrap() > 0);

    let n = 8;
    let path = dtc_path(dir, ABAPA, n);
    let original = std::fs::read(&path).unwrap();
    let values = std::fs::read(layer_path(dir, ABAPA, n)).unwrap();
    let value = |i: u64| values[PAYLOAD_OFFSET as usize + i as usize] as i8;
    let byte = |i: u64| original[PAYLOAD_OFFSET as usize + i as usize];

    // One depth changed behind a valid checksum, at a position no same-layer position moves to
    // (so exactly its own equation breaks): wrong depth, exit 8, listed with index, stored,
    // derived.
    let size = layer_size(n);
    let (i, board) = LayerWalker::new(n, 0..size)
        .unwrap()
        .find(|(i, b)| {
            let mut parents = 0;
            for_each_predecessor(ABAPA, b, |p, _| parents += usize::from(in_some_layer(p)));
            parents == 0 && value(*i) != 0 && (1..200).contains(&byte(*i))
        })
        .expect("a position with a depth and no same-layer parent");
    let old = byte(i);
    let mut bytes = original.clone();
    bytes[PAYLOAD_OFFSET as usize + i as usize] = old + 1;
    std::fs::write(&path, &bytes).unwrap();
    reseal(&path, n);
    let (code, out, err) = verify(dir, &[]);
    assert_eq!(code, 8, "{out}\n{err}");
    let line = out.lines().find(|l| l.contains(&format!("index {i:>12}:"))).unwrap_or_else(|| panic!("index {i} not named:\n{out}"));
    assert!(line.contains(&board_text(&board)), "{line}");
    assert!(line.contains(&format!("stored depth {}, its moves give {old}", old + 1)), "{line}");
    assert!(out.contains("dtc     8:         75,504 depths checked,          1 mismatch  "), "{out}");
    assert!(out.contains("FAILED: 1 wrong depth to capture in layer 8"), "{out}");
    assert!(err.contains("verification failed"), "{err}");
    let (code, doc) = verify_json(dir, &[]);
    assert_eq!(code, 8);
    assert_eq!((doc["ok"].clone(), doc["dtc_mismatches"].clone(), doc["mismatches"].clone()), (false.into(), 1.into(), 0.into()));
    let e = &doc["dtc"][8];
    assert_eq!(e["status"], "mismatch");
    assert_eq!(e["mismatches"], 1);
    let m = &e["first_mismatches"][0];
    assert_eq!((m["index"].as_u64(), m["stored"].as_u64(), m["derived"].as_u64()), (Some(i), Some(u64::from(old) + 1), Some(u64::from(old))));
    assert_eq!(m["value"].as_i64(), Some(i64::from(value(i))));
    assert_eq!(doc["dtc"][7]["status"], "ok");

    // A depth on a position of value 0 (checksum valid): the file is damaged, exit 5.
    let j = (0..size).find(|&j| value(j) == 0).expect("a drawn position");
    assert_eq!(byte(j), oware::dtc::NONE);
    let mut bytes = original.clone();
    bytes[PAYLOAD_OFFSET as usize + j as usize] = 3;
    std::fs::write(&path, &bytes).unwrap();
    reseal(&path, n);
    let (code, out, err) = verify(dir, &[]);
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(out.contains("dtc     8: DAMAGED") && out.contains(&format!("position {j} has depth to capture 3 but value 0")), "{out}");
    assert!(out.contains("FAILED: damaged or unreadable depths to capture of layer 8"), "{out}");
    let (_, doc) = verify_json(dir, &[]);
    assert_eq!(doc["dtc"][8]["status"], "damaged");

    // A flipped byte without a new checksum: damaged, exit 5.
    let mut bytes = original.clone();
    bytes[PAYLOAD_OFFSET as usize + i as usize] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let (code, out, err) = verify(dir, &[]);
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(out.contains("dtc     8: DAMAGED") && out.contains("dtc-08.owdb") && out.contains("checksum"), "{out}");

    // Wrong values take precedence over a damaged dtc file: the wrong depth of layer 8 and a
    // damaged (truncated) dtc file of layer 7 give exit 8.
    std::fs::write(&path, &original).unwrap();
    let mut bytes = original.clone();
    bytes[PAYLOAD_OFFSET as usize + i as usize] = old + 1;
    std::fs::write(&path, &bytes).unwrap();
    reseal(&path, n);
    let seven = dtc_path(dir, ABAPA, 7);
    let seven_bytes = std::fs::read(&seven).unwrap();
    std::fs::write(&seven, &seven_bytes[..seven_bytes.len() - 100]).unwrap();
    let (code, out, _) = verify(dir, &[]);
    assert_eq!(code, 8, "{out}");
    assert!(out.contains("dtc     7: DAMAGED"), "{out}");
    std::fs::write(&seven, &seven_bytes).unwrap();
    std::fs::write(&path, &original).unwrap();
    assert_eq!(verify(dir, &[]).0, 0);

    // A missing dtc file: skipped unless required; required, exit 4 naming it.
    std::fs::remove_file(dtc_path(dir, ABAPA, 5)).unwrap();
    let (code, out, err) = verify(dir, &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("dtc     5") && out.contains("dtc     6:"), "{out}");
    for flag in ["--dtc", "--require-dtc"] {
        let (code, out, err) = verify(dir, &[flag]);
        assert_eq!(code, 4, "{out}\n{err}");
        assert!(out.contains("dtc     5: MISSING") && out.contains("FAILED: missing depths to capture of layer 5"), "{out}");
        assert!(err.contains("depths to capture (dtc) of layer 5") && err.contains("--dtc"), "{err}");
    }
    let (code, doc) = verify_json(dir, &["--dtc"]);
    assert_eq!(code, 4);
    assert_eq!(doc["dtc"][5]["status"], "missing");
    assert_eq!(doc["dtc"][5]["error"]["kind"], "dtc_missing");

    // A missing layer of values it reads: the dtc file is intact but not checked.
    std::fs::remove_file(layer_path(dir, ABAPA, 4)).unwrap();
    let (code, doc) = verify_json(dir, &[]);
    assert_eq!(code, 4);
    assert_eq!(doc["dtc"].as_array().unwrap().iter().find(|e| e["layer"] == 6).unwrap()["status"], "not-verified");
    assert_eq!(doc["dtc"].as_array().unwrap().iter().find(|e| e["layer"] == 3).unwrap()["status"], "ok");
}
