//! Depths to capture (dtc) files checked by `oware verify`: every entry against its value and
//! its moves (`src/dtc.rs`), wrong depths listed like wrong values (exit 8), damaged files
//! (exit 5), missing ones when required (exit 4).

use crate::common::{oware, s};

use std::path::Path;

use oware::index::{in_some_layer, layer_size, LayerWalker};
use oware::rules::{for_each_predecessor, Board, GrandSlam, Ruleset};
use oware::storage::{native_path, DtcKind, ValuesKind};
use oware::storage::{Header, HEADER_LEN, PAYLOAD_OFFSET};

const ABAPA: Ruleset = Ruleset::Abapa(GrandSlam::NoCapture);

fn board_text(b: &Board) -> String {
    b.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")
}

/// Rewrites the header of a dtc file for its (changed) payload, so only the content is wrong.
fn reseal(path: &Path, n: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    let sum = crate::common::format_checksum(&bytes[PAYLOAD_OFFSET as usize..]);
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
    let path = native_path::<DtcKind>(dir, ABAPA, n);
    let original = std::fs::read(&path).unwrap();
    let values = std::fs::read(native_path::<ValuesKind>(dir, ABAPA, n)).unwrap();
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
    assert_eq!(byte(j), oware::storage::DTC_NONE);
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
    let seven = native_path::<DtcKind>(dir, ABAPA, 7);
    let seven_bytes = std::fs::read(&seven).unwrap();
    std::fs::write(&seven, &seven_bytes[..seven_bytes.len() - 100]).unwrap();
    let (code, out, _) = verify(dir, &[]);
    assert_eq!(code, 8, "{out}");
    assert!(out.contains("dtc     7: DAMAGED"), "{out}");
    std::fs::write(&seven, &seven_bytes).unwrap();
    std::fs::write(&path, &original).unwrap();
    assert_eq!(verify(dir, &[]).0, 0);

    // A missing dtc file: skipped unless required; required, exit 4 naming it.
    std::fs::remove_file(native_path::<DtcKind>(dir, ABAPA, 5)).unwrap();
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
    std::fs::remove_file(native_path::<ValuesKind>(dir, ABAPA, 4)).unwrap();
    let (code, doc) = verify_json(dir, &[]);
    assert_eq!(code, 4);
    assert_eq!(doc["dtc"].as_array().unwrap().iter().find(|e| e["layer"] == 6).unwrap()["status"], "not-verified");
    assert_eq!(doc["dtc"].as_array().unwrap().iter().find(|e| e["layer"] == 3).unwrap()["status"], "ok");
}

/// Runs the program, killed (and the test failed) if it does not end within a minute: a FIFO
/// opened for reading would block it forever.
fn oware_within(args: &[&str]) -> (i32, String, String) {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(crate::common::OWARE).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("{args:?} did not end within a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut e = String::new();
    err.read_to_string(&mut e).unwrap();
    (status.code().unwrap_or(-1), reader.join().unwrap(), e)
}

#[test]
fn a_dtc_or_bounds_path_that_is_a_fifo_or_a_directory_is_unreadable_never_absent() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let d = s(dir);
    let (code, _, err) = oware(&["build", "--quiet", "--rules", "abapa", "--dtc", "--bounds", "--max-stones", "6", "--dir", d]);
    assert_eq!(code, 0, "{err}");
    let io = oware::error::ErrorKind::Io.exit_status();
    assert_eq!(io, 7);
    for (kind, path) in [("dtc", native_path::<DtcKind>(dir, ABAPA, 5)), ("bounds", oware::storage::native_path::<oware::storage::BoundsKind>(dir, ABAPA, 5))] {
        let saved = std::fs::read(&path).unwrap();
        for what in ["a FIFO (named pipe)", "a directory"] {
            std::fs::remove_file(&path).unwrap();
            if what == "a directory" {
                std::fs::create_dir(&path).unwrap();
            } else {
                assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
            }
            let said = format!("{} is {what}, not a regular file", path.display());
            // verify: the entry is listed as damaged (unreadable), exit 7, with or without --dtc/--bounds.
            for extra in [&[][..], &["--dtc", "--bounds"][..]] {
                let mut args = vec!["verify", "--rules", "abapa", "--dir", d];
                args.extend_from_slice(extra);
                let (code, out, err) = oware_within(&args);
                assert_eq!(code, io, "{kind} {what} {extra:?}: {out}\n{err}");
                assert!(out.contains(&said) && err.contains(&said), "{out}\n{err}");
                let column = if kind == "dtc" { "dtc     5: DAMAGED" } else { "bounds  5: DAMAGED" };
                assert!(out.contains(column), "{out}");
            }
            args_json(d, kind, io);
            // stats: the layer is reported, not counted, exit 7.
            let (code, out, err) = oware_within(&["stats", "--rules", "abapa", "--dir", d]);
            assert_eq!(code, io, "{kind} {what}: {out}\n{err}");
            assert!(out.contains(&format!("layer  5: DAMAGED, not counted: {said}")), "{out}");
            let (code, out, _) = oware_within(&["stats", "--rules", "abapa", "--dir", d, "--json"]);
            assert_eq!(code, io);
            let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!((doc["damaged"][0]["layer"].as_u64(), doc["damaged"][0]["error"]["kind"].as_str()), (Some(5), Some("io")), "{doc}");
            if kind == "dtc" {
                // pack copies the depths: an unreadable dtc file stops it, never left out.
                let packed = tempfile::tempdir().unwrap();
                let (code, _, err) = oware_within(&["pack", "--rules", "abapa", "--dir", d, "--out", s(packed.path()), "-q"]);
                assert_eq!(code, io, "{err}");
                assert!(err.contains(&said), "{err}");
            }
            if what == "a directory" {
                std::fs::remove_dir(&path).unwrap();
            } else {
                std::fs::remove_file(&path).unwrap();
            }
            std::fs::write(&path, &saved).unwrap();
        }
    }
    assert_eq!(verify(dir, &[]).0, 0);
    assert_eq!(oware(&["stats", "--rules", "abapa", "--dir", d]).0, 0);
}

/// `verify --json` lists the unreadable entry of `kind` (layer 5) with its error (kind `io`).
fn args_json(d: &str, kind: &str, io: i32) {
    let (code, out, err) = oware_within(&["verify", "--rules", "abapa", "--dir", d, "--json", "--quiet"]);
    assert_eq!(code, io, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let entries = doc[kind].as_array().unwrap();
    assert_eq!(entries.len(), 7, "every layer's {kind} is listed: {out}");
    let five = entries.iter().find(|e| e["layer"] == 5).unwrap();
    assert_eq!(
        (five["status"].as_str(), five["error"]["kind"].as_str(), five["error"]["code"].as_i64()),
        (Some("damaged"), Some("io"), Some(i64::from(io))),
        "{five}"
    );
    assert_eq!(doc["ok"], false);
}

#[test]
fn damaged_dtc_and_bounds_files_are_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let d = s(dir);
    let (code, _, err) = oware(&["build", "--quiet", "--rules", "abapa", "--dtc", "--bounds", "--max-stones", "6", "--dir", d]);
    assert_eq!(code, 0, "{err}");
    // A flipped byte in each: verify names the kind of file and what was altered.
    for (path, file, altered) in [
        (native_path::<DtcKind>(dir, ABAPA, 6), "damaged dtc file", "depths to capture were altered"),
        (oware::storage::native_path::<oware::storage::BoundsKind>(dir, ABAPA, 6), "damaged bounds file", "bounds were altered"),
    ] {
        let saved = std::fs::read(&path).unwrap();
        let mut bytes = saved.clone();
        // A byte of a depth below 200 stays a depth (never the escape or "none").
        let at = PAYLOAD_OFFSET as usize + (0..).find(|&k| (1..200).contains(&saved[PAYLOAD_OFFSET as usize + k])).unwrap();
        bytes[at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let (code, out, err) = verify(dir, &[]);
        assert_eq!(code, 5, "{out}\n{err}");
        let line = out.lines().find(|l| l.contains("DAMAGED")).unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains(file) && line.contains(altered) && !line.contains("layer file") && !line.contains("values"), "{line}");
        assert!(err.contains(file), "{err}");
        std::fs::write(&path, &saved).unwrap();
    }
    // A depth that contradicts its value (checksum resealed): a damaged dtc file.
    let path = native_path::<DtcKind>(dir, ABAPA, 6);
    let saved = std::fs::read(&path).unwrap();
    let values = std::fs::read(native_path::<ValuesKind>(dir, ABAPA, 6)).unwrap();
    let j = (0..layer_size(6)).find(|&j| values[PAYLOAD_OFFSET as usize + j as usize] == 0).unwrap();
    let mut bytes = saved.clone();
    bytes[PAYLOAD_OFFSET as usize + j as usize] = 3;
    std::fs::write(&path, &bytes).unwrap();
    reseal(&path, 6);
    let (code, out, _) = verify(dir, &[]);
    assert_eq!(code, 5);
    assert!(out.contains(&format!("dtc-06.owdb: damaged dtc file: position {j} has depth to capture 3 but value 0")), "{out}");
    // A wrong depth behind a valid checksum: the error speaks of depths, not values.
    std::fs::write(&path, &saved).unwrap();
    let size = layer_size(6);
    let i = LayerWalker::new(6, 0..size)
        .unwrap()
        .find(|(i, b)| {
            let mut parents = 0;
            for_each_predecessor(ABAPA, b, |p, _| parents += usize::from(in_some_layer(p)));
            parents == 0 && values[PAYLOAD_OFFSET as usize + *i as usize] != 0 && (1..200).contains(&saved[PAYLOAD_OFFSET as usize + *i as usize])
        })
        .map(|(i, _)| i)
        .unwrap();
    let mut bytes = saved.clone();
    bytes[PAYLOAD_OFFSET as usize + i as usize] += 1;
    std::fs::write(&path, &bytes).unwrap();
    reseal(&path, 6);
    let (code, _, err) = verify(dir, &[]);
    assert_eq!(code, 8, "{err}");
    assert!(err.contains("verification failed: 1 depth to capture does not follow from its moves") && !err.contains("values do not"), "{err}");
}
