//! The out-of-core builds of the `oware` program: with a tiny memory limit the files are the
//! same, the memory bound holds, a killed build resumes, the plan refuses what does not fit.
//! (The out-of-core solver itself is compared with the in-memory one in the library's unit
//! tests, `solver::tests::out_of_core`.)

use std::time::Duration;

use oware::rules::Ruleset;

use crate::common::{copy_fixture, fixture};

use std::path::Path;
use std::process::Command;

fn oware(args: &[&str]) -> std::process::Output {
    Command::new(crate::common::OWARE).args(args).output().unwrap()
}

fn layer_bytes(dir: &Path, rules: &str, n: u32) -> Vec<u8> {
    std::fs::read(dir.join(rules).join(format!("layer-{n:02}.owdb"))).unwrap()
}

#[test]
fn build_with_a_tiny_memory_limit_writes_the_same_files() {
    for rules in ["awari", "abapa-capture"] {
        // In memory: the shared fixture, built by the builder (in memory) once per test binary.
        let mem = fixture(rules.parse().unwrap(), 14);
        let ooc = tempfile::tempdir().unwrap();
        let d2 = ooc.path().to_str().unwrap();
        let plan = oware(&["build", "--rules", rules, "--max-stones", "14", "--dir", d2, "--max-memory", "4M", "--dry-run"]);
        let text = String::from_utf8_lossy(&plan.stdout).to_string() + &String::from_utf8_lossy(&plan.stderr);
        assert!(text.contains("layer 14") && text.contains("out of core in 3 parts"), "{text}");
        let b = oware(&["build", "--rules", rules, "--max-stones", "14", "--dir", d2, "--max-memory", "4M", "-q"]);
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
        for n in 0..=14 {
            assert!(layer_bytes(mem, rules, n) == layer_bytes(ooc.path(), rules, n), "{rules} layer {n} differs");
        }
        assert!(!ooc.path().join(rules).join(".work").exists(), "the work directory is removed");
        let v = oware(&["verify", "--rules", rules, "--dir", d2, "--max-stones", "14"]);
        assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    }
}

#[test]
fn the_memory_bound_holds_out_of_core() {
    // Layers 0..17 in memory (a copy of the shared fixture), then layer 18 (33 M positions; 207 MiB in memory mode) within 16 MiB.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    copy_fixture(Ruleset::Awari, 17, dir.path());
    let out = oware(&["build", "--max-stones", "18", "--dir", d, "--max-memory", "16M", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("awari/layer-18.json")).unwrap()).unwrap();
    let peak = stats["peak_memory_bytes"].as_u64().unwrap();
    // The limit plus the fixed overhead the builder keeps apart from it (64 MiB).
    assert!(peak < (16 + 64) << 20, "peak resident memory {peak} bytes");
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("\"out_of_core\""), "{plan}");
}

#[test]
fn a_killed_out_of_core_build_resumes_with_identical_bytes() {
    // The reference: layers 0..15 built in memory (the shared fixture); layers 0..14 as a
    // finished earlier build left them.
    let reference = fixture(Ruleset::Awari, 15);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    copy_fixture(Ruleset::Awari, 14, dir.path());
    let args = ["build", "--max-stones", "15", "--dir", d, "--max-memory", "5M", "-q", "--checkpoint-every", "0"];
    let mut resumed = 0;
    for delay_ms in [300u64, 900, 1500, 2500] {
        let mut child = Command::new(crate::common::OWARE).args(args).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        if dir.path().join("awari/.work/layer-15/checkpoint.bin").exists() {
            resumed += 1;
        }
        if dir.path().join("awari/layer-15.owdb").exists() {
            break;
        }
    }
    assert!(resumed > 0, "no kill left a checkpoint to resume from");
    // A checkpoint left is resumed even when the estimate calls the layer too short to need
    // one (here, shorter than a checkpoint every 11 days).
    let left = dir.path().join("awari/.work/layer-15/checkpoint.bin").exists();
    let mut last = args.to_vec();
    let every = last.len() - 1;
    last[every] = "1000000";
    let out = oware(&last);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!left || err.contains("layer 15: resuming from a checkpoint"), "{err}");
    assert!(layer_bytes(reference, "awari", 15) == layer_bytes(dir.path(), "awari", 15));
    assert!(!dir.path().join("awari/.work").exists(), "the work directory outlived the layer");
    // The layer's statistics count every run that built it: the killed ones too.
    let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("awari/layer-15.json")).unwrap()).unwrap();
    assert!(stats["runs"].as_u64().is_some_and(|r| r >= 2), "{stats}");
}

#[test]
fn the_plan_refuses_a_build_whose_scratch_does_not_fit_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    copy_fixture(Ruleset::Awari, 12, dir.path());
    // Layers 13 and 14 take 6.9 MB; layer 14 out of core needs 17.5 MB of scratch more.
    let out = Command::new(crate::common::OWARE)
        .args(["build", "--max-stones", "14", "--dir", d, "--max-memory", "4M"])
        .env("OWARE_SIMULATE_DISK_FREE", "10000000")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("disk") && err.contains("13..14"), "{err}");
    assert!(!dir.path().join("awari/layer-13.owdb").exists(), "nothing may be written");
    assert!(!dir.path().join("awari/.work").exists());
    // A dry run shows the plan it would refuse, then refuses the same way.
    let dry = Command::new(crate::common::OWARE)
        .args(["build", "--max-stones", "14", "--dir", d, "--max-memory", "4M", "--dry-run"])
        .env("OWARE_SIMULATE_DISK_FREE", "10000000")
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&dry.stdout);
    assert_eq!(dry.status.code(), out.status.code(), "{}", String::from_utf8_lossy(&dry.stderr));
    assert!(plan.contains("layer 14:") && plan.contains("out of core in"), "{plan}");
    assert!(String::from_utf8_lossy(&dry.stderr).contains("not enough for layers 13..14"));
    // With room for the files and the scratch, the same build runs.
    let out = Command::new(crate::common::OWARE)
        .args(["build", "--max-stones", "14", "--dir", d, "--max-memory", "4M", "-q"])
        .env("OWARE_SIMULATE_DISK_FREE", "40000000")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
