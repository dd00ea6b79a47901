//! Depths to capture through the program (`oware build --dtc`): the files are the same whatever
//! the mode and the threads and the values do not change, builds add depths to existing
//! databases and rebuild missing or damaged ones, packs carry them, and what is missing or
//! foreign is named with a hint that works. (Best lines against the depths are the library's
//! tests, `tests/suite/dtc.rs`; the depths against a plain forward iteration of the definition
//! its unit tests, `solver::tests::dtc`.)

use std::path::Path;

use oware::index::{layer_size, unrank};
use oware::probe::Database;
use oware::{Position, Ruleset};

use crate::common::{copy_fixture, fixture, oware, with_dtc};

fn bytes(dir: &Path, rules: &str, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(rules).join(name)).unwrap_or_else(|e| panic!("{rules}/{name}: {e}"))
}

#[test]
fn dtc_files_are_the_same_in_memory_out_of_core_and_with_one_thread_and_values_do_not_change() {
    for rules in ["awari", "abapa-capture"] {
        let r: Ruleset = rules.parse().unwrap();
        let plain = fixture(r, 12);
        let mut dirs = Vec::new();
        for extra in [&[][..], &["--threads", "1"][..], &["--max-memory", "4M"][..]] {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path().to_str().unwrap();
            let mut args = vec!["build", "--rules", rules, "--max-stones", "12", "--dir", d, "--dtc", "-q"];
            args.extend_from_slice(extra);
            let (code, _, err) = oware(&args);
            assert_eq!(code, 0, "{args:?}: {err}");
            dirs.push(dir);
        }
        // The plan with a tiny memory limit: layer 14's values out of core (its cells alone do
        // not fit), the depths' cells in a file.
        let d = dirs[2].path().to_str().unwrap();
        let (_, plan, _) = oware(&["build", "--rules", rules, "--max-stones", "14", "--dir", d, "--dtc", "--max-memory", "4M", "--dry-run"]);
        assert!(plan.contains("layer 14") && plan.contains("out of core"), "{plan}");
        assert!(plan.contains("dtc: 13 to check, 2 to build (13..14)") && plan.contains("scratch file for 13..14"), "{plan}");
        for n in 0..=12 {
            let name = format!("dtc-{n:02}.owdb");
            let first = bytes(dirs[0].path(), rules, &name);
            for other in &dirs[1..] {
                assert!(first == bytes(other.path(), rules, &name), "{rules} {name} differs");
            }
            let layer = format!("layer-{n:02}.owdb");
            for dir in &dirs {
                assert!(bytes(plain, rules, &layer) == bytes(dir.path(), rules, &layer), "{rules} {layer} changed with --dtc");
            }
        }
        assert!(!dirs[2].path().join(rules).join(".work").exists(), "the work directory is removed");
    }
}

#[test]
fn depths_are_added_to_a_built_database_and_rebuilt_when_missing_or_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    copy_fixture(Ruleset::Awari, 10, dir.path());
    // Not built yet: asked for, the depth is an error naming the command that builds it; the
    // report has none.
    let pos = "0 0 0 0 2 1 1 0 0 0 0 3";
    let (code, _, err) = oware(&["query", "--dir", d, "--values-only", "--dtc", pos]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("depths to capture (dtc) of layer") && err.contains("--dtc"), "{err}");
    // (A report derives the depth from the moves': known without tables when every value-keeping
    // move captures, as here; not for the position after E, lost by 5, whose moves do not.)
    let (code, out, _) = oware(&["query", "--dir", d, "--json", pos]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap()["dtc"], 1, "{out}");
    let (code, out, _) = oware(&["query", "--dir", d, "--json", "0 0 0 0 0 3 0 0 0 0 0 2"]);
    assert_eq!(code, 0);
    assert!(serde_json::from_str::<serde_json::Value>(&out).unwrap()["dtc"].is_null(), "{out}");
    let (code, out, err) = oware(&["build", "--max-stones", "10", "--dir", d, "--dtc", "--json"]);
    assert_eq!(code, 0, "{err}");
    let docs: Vec<serde_json::Value> = out.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let kinds = |kind: &str, status: &str| docs.iter().filter(|v| v["kind"] == kind && v["status"] == status).count();
    assert_eq!((kinds("layer", "skipped"), kinds("dtc", "built")), (11, 11), "{out}");
    let dtc10: serde_json::Value = serde_json::from_slice(&bytes(dir.path(), "awari", "dtc-10.json")).unwrap();
    assert_eq!(dtc10["max"], 69, "{dtc10}");
    // Built: one record per input line, null for value 0.
    let (code, out, err) =
        crate::common::oware_with_input(&["query", "--dir", d, "--values-only", "--dtc", "--json"], format!("{pos}\n0 0 0 0 0 0 0 0 0 0 0 0\n"));
    assert_eq!(code, 0, "{err}");
    let records: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!((records[0]["value"].as_i64(), records[0]["dtc"].as_i64()), (Some(7), Some(1)), "{out}");
    assert!(records[1]["dtc"].is_null() && records[1]["value"] == 0, "{out}");
    // `oware stats` counts the depths from the files: the same distribution.
    let (code, out, err) = oware(&["stats", "--dir", d, "--json"]);
    assert_eq!(code, 0, "{err}");
    let stats: serde_json::Value = serde_json::from_str(&out).unwrap();
    let layer10 = &stats["layers"][10]["dtc"];
    assert_eq!((&layer10["max"], &layer10["histogram"]), (&dtc10["max"], &dtc10["histogram"]), "{layer10}");
    let (_, text, _) = oware(&["stats", "--dir", d]);
    assert!(text.contains("dtc: max 69, mean 10.39"), "{text}");
    let reference = bytes(dir.path(), "awari", "dtc-09.owdb");
    // One missing, one damaged: both rebuilt; the others checked and kept.
    std::fs::remove_file(dir.path().join("awari/dtc-08.owdb")).unwrap();
    let path = dir.path().join("awari/dtc-09.owdb");
    let mut damaged = reference.clone();
    damaged[4096 + 100] ^= 0x01;
    std::fs::write(&path, &damaged).unwrap();
    let (code, out, err) = oware(&["build", "--max-stones", "10", "--dir", d, "--dtc"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("rebuilding the depths to capture of layer 9"), "{err}");
    assert!(out.contains("dtc  8:") && !out.contains("dtc  8: complete") && out.contains("dtc 10: complete (skipped)"), "{out}");
    assert!(bytes(dir.path(), "awari", "dtc-09.owdb") == reference);
    // A file of values in the depths' place is someone's data: refused, never replaced.
    std::fs::copy(dir.path().join("awari/layer-07.owdb"), dir.path().join("awari/dtc-07.owdb")).unwrap();
    let (code, _, err) = oware(&["build", "--max-stones", "10", "--dir", d, "--dtc"]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("holds values"), "{err}");
}

#[test]
fn packs_carry_the_depths_and_unpack_gives_them_back() {
    for (rules, max) in [(Ruleset::Awari, 10), (Ruleset::ALL[5], 9)] {
        let name = rules.name();
        let dir = with_dtc(rules, max);
        let d = dir.path().to_str().unwrap();
        let packed = tempfile::tempdir().unwrap();
        let p = packed.path().to_str().unwrap();
        let (code, _, err) = oware(&["pack", "--rules", name, "--dir", d, "--out", p, "-q"]);
        assert_eq!(code, 0, "{err}");
        let sums = std::fs::read_to_string(packed.path().join("SHA256SUMS")).unwrap();
        assert!((0..=max).all(|n| sums.contains(&format!("{name}/dtc-{n:02}.owpk"))), "{sums}");
        // The depths are packed too: smaller than the files (from the layers where the model is
        // small beside the depths), never copied.
        for n in 0..=max {
            assert!(!packed.path().join(format!("{name}/dtc-{n:02}.owdb")).exists());
        }
        let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
        let (raw, pk) = (size(&dir.path().join(format!("{name}/dtc-{max:02}.owdb"))), size(&packed.path().join(format!("{name}/dtc-{max:02}.owpk"))));
        assert!(pk * 2 < raw, "layer {max}: {pk} bytes packed of {raw}");
        // Probed in place, the pack directory answers the same depths, at every position.
        let (a, b) = (Database::open(dir.path(), rules).unwrap(), Database::open(packed.path(), rules).unwrap());
        for n in [max - 1, max] {
            for i in 0..layer_size(n) {
                let pos = Position::new(unrank(n, i).unwrap()).unwrap();
                assert_eq!(a.dtc(&pos).unwrap(), b.dtc(&pos).unwrap(), "{name} layer {n} index {i}");
            }
        }
        let (code, _, err) = oware(&["verify", "--rules", name, "--dir", p, "--dtc"]);
        assert_eq!(code, 0, "{err}");
        let (code, stats, err) = oware(&["stats", "--rules", name, "--dir", p, "--json"]);
        let (code0, stats0, _) = oware(&["stats", "--rules", name, "--dir", d, "--json"]);
        assert_eq!((code, code0), (0, 0), "{err}");
        let dtc_of = |text: &str| {
            serde_json::from_str::<serde_json::Value>(text).unwrap()["layers"].as_array().unwrap().iter().map(|l| l["dtc"].clone()).collect::<Vec<_>>()
        };
        assert_eq!(dtc_of(&stats), dtc_of(&stats0));
        // A depth file the manifest does not list is reported.
        std::fs::copy(packed.path().join(format!("{name}/dtc-{max:02}.owpk")), packed.path().join(format!("{name}/dtc-{:02}.owpk", max + 1))).unwrap();
        let (code, _, err) = oware(&["verify", "--rules", name, "--dir", p]);
        assert_eq!(code, 5, "{err}");
        assert!(err.contains(&format!("dtc-{:02}.owpk is not listed", max + 1)), "{err}");
        std::fs::remove_file(packed.path().join(format!("{name}/dtc-{:02}.owpk", max + 1))).unwrap();
        let unpacked = tempfile::tempdir().unwrap();
        let (code, _, err) = oware(&["unpack", "--rules", name, "--dir", p, "--out", unpacked.path().to_str().unwrap(), "-q"]);
        assert_eq!(code, 0, "{err}");
        for n in 0..=max {
            for file in [format!("dtc-{n:02}.owdb"), format!("layer-{n:02}.owdb")] {
                assert!(bytes(dir.path(), name, &file) == bytes(unpacked.path(), name, &file), "{file}");
            }
        }
        // Packing again keeps the packs; a damaged depths pack is named, and nothing wrong is read.
        let (code, out, err) = oware(&["pack", "--rules", name, "--dir", d, "--out", p, "--json"]);
        assert_eq!(code, 0, "{err}");
        assert!(!out.contains("\"written\":true"), "{out}");
        let target = packed.path().join(format!("{name}/dtc-{max:02}.owpk"));
        let mut bad = std::fs::read(&target).unwrap();
        let at = bad.len() / 2;
        bad[at] ^= 0x40;
        std::fs::write(&target, &bad).unwrap();
        let (code, _, err) = oware(&["verify", "--rules", name, "--dir", p, "--dtc", "--max-stones", &max.to_string()]);
        assert_eq!(code, 5, "{err}");
        assert!(err.contains(&format!("dtc-{max:02}.owpk")), "{err}");
    }
}

#[test]
fn depths_asked_of_a_layer_without_values_report_the_missing_values() {
    // Layers 0..=8 with neither bounds nor depths: a position of 9 stones has no value, so its
    // value is what is missing (and what to build first), whatever else is asked.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    copy_fixture(Ruleset::Awari, 8, dir.path());
    let nine = "0 0 0 0 2 1 1 0 0 0 0 5";
    for extra in [&["--dtc"][..], &["--bounds"][..], &["--dtc", "--bounds"][..], &["--dtc", "--json"][..]] {
        for values_only in [true, false] {
            let mut args = vec!["query", "--dir", d];
            if values_only {
                args.push("--values-only");
            }
            args.extend_from_slice(extra);
            args.push(nine);
            let (code, _, err) = oware(&args);
            assert_eq!(code, 4, "{args:?}: {err}");
            assert!(err.contains("layer 9 of awari is not built") && err.contains("oware build --rules awari --max-stones 9"), "{args:?}: {err}");
        }
    }
    // A batch names the kind in its error records.
    let (code, out, _) = crate::common::oware_with_input(&["query", "--dir", d, "--values-only", "--dtc", "--json"], format!("{nine}\n"));
    assert_eq!(code, 4);
    let record: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(record["error"]["kind"], "layer_missing", "{out}");
    // With the values there, the depths are what is missing.
    let (code, _, err) = oware(&["query", "--dir", d, "--values-only", "--dtc", "0 0 0 0 2 1 1 0 0 0 0 3"]);
    assert_eq!(code, 4);
    assert!(err.contains("depths to capture (dtc) of layer 7"), "{err}");
}

#[test]
fn a_file_of_values_in_the_place_of_depths_or_bounds_gets_a_hint_that_works() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    copy_fixture(Ruleset::Awari, 8, dir.path());
    for (option, name) in [("--dtc", "dtc-07.owdb"), ("--bounds", "bounds-07.owdb")] {
        let foreign = dir.path().join("awari").join(name);
        std::fs::copy(dir.path().join("awari/layer-07.owdb"), &foreign).unwrap();
        let (code, _, err) = oware(&["build", "--max-stones", "8", "--dir", d, option, "-q"]);
        assert_eq!(code, 5, "{err}");
        let kind = if option == "--dtc" { "dtc file" } else { "bounds file" };
        assert!(err.contains(&format!("{name}: damaged {kind}: the file holds values")), "{err}");
        // The hint does not send the user back to the build that refused: the file must go first.
        let hint = err.lines().find(|l| l.starts_with("oware: hint:")).unwrap_or_else(|| panic!("no hint: {err}"));
        assert!(
            hint.contains("never replaces it") && hint.contains("move it away or remove it") && hint.contains(&format!("rm {}", foreign.display())),
            "{hint}"
        );
        assert!(hint.contains(&format!("--max-stones N {option}`")), "{hint}");
        // Followed, it works.
        std::fs::remove_file(&foreign).unwrap();
        let (code, _, err) = oware(&["build", "--max-stones", "8", "--dir", d, option, "-q"]);
        assert_eq!(code, 0, "{err}");
        assert!(foreign.is_file());
    }
    // A damaged (not foreign) dtc file: the hint names the build that replaces it, with --dtc.
    let path = dir.path().join("awari/dtc-06.owdb");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[4096] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let (code, _, err) = oware(&["query", "--dir", d, "--values-only", "--dtc", "2 2 2 0 0 0 0 0 0 0 0 0"]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("damaged dtc file") && err.contains("depths to capture were altered"), "{err}");
    assert!(err.contains("--max-stones N --dtc` replaces damaged depths to capture"), "{err}");
}
