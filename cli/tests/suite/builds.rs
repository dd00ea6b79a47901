//! The builder through the program: a build killed while it works resumes to identical files
//! (a damaged and a removed layer rebuilt), a memory limit too small stops it with a clear
//! message, and the level-synchronous propagation (`OWARE_LEVELS=1`) writes the same files.
//! (The builder against a plain reference and across thread counts is the library's unit
//! tests: `src/solver/tests/reference.rs`.)

use crate::common;

use std::process::Command;

use common::{build_in, files_equal};
use oware::rules::Ruleset;
use oware::storage::{native_path, ValuesKind};

#[test]
fn interrupted_and_damaged_builds_resume_to_identical_files() {
    let rules = Ruleset::Awari;
    let max = 15;
    // The reference: the shared fixture, built by the library once per test binary.
    let clean = crate::common::fixture(rules, max);

    // Kill a real build process while it works on a layer, then resume.
    let resumed = tempfile::tempdir().unwrap();
    let mut child =
        Command::new(crate::common::OWARE).args(["build", "--quiet", "--max-stones", &max.to_string(), "--dir"]).arg(resumed.path()).spawn().unwrap();
    let marker = native_path::<ValuesKind>(resumed.path(), rules, 13);
    let start = std::time::Instant::now();
    while !marker.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the build ended before it could be killed");
        // A watchdog against a hanging build, not a speed requirement.
        assert!(start.elapsed().as_secs() < 600, "layer 13 never appeared");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL), "the build was not running when it was killed: {status:?}");
    }
    assert!(!native_path::<ValuesKind>(resumed.path(), rules, max).exists(), "the build finished before it was killed");
    // What was complete is intact; the layer in progress was never published.
    for n in 0..=13 {
        oware::storage::DatabaseDir::native(resumed.path(), rules).unwrap().open_layer::<oware::storage::ValuesKind>(n, true).unwrap();
    }
    // Damage a finished layer's payload and remove another: both must be rebuilt.
    let victim = native_path::<ValuesKind>(resumed.path(), rules, 9);
    let mut bytes = std::fs::read(&victim).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&victim, bytes).unwrap();
    std::fs::remove_file(native_path::<ValuesKind>(resumed.path(), rules, 11)).unwrap();

    let out = Command::new(crate::common::OWARE).args(["build", "--quiet", "--max-stones", &max.to_string(), "--dir"]).arg(resumed.path()).output().unwrap();
    assert!(out.status.success(), "resume failed: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("layer-09.owdb") && stderr.contains("checksum"), "damage not reported: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("complete (skipped)"), "nothing was skipped: {stdout}");
    files_equal(clean, resumed.path(), rules, max);
}

/// Issue 67, item 5: a run killed outright must count its time up to its last checkpoint (it
/// used to count none, and the layer's recorded speed came out impossibly high).
#[test]
fn a_killed_run_counts_its_time_up_to_its_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (code, _, err) = crate::common::oware(&["build", "--quiet", "--max-stones", "14", "--dir", d]);
    assert_eq!(code, 0, "{err}");
    let mut child = crate::common::spawn_oware(&["build", "--quiet", "--max-stones", "15", "--dir", d, "--checkpoint-every", "0", "--threads", "1"]);
    let runs = dir.path().join("awari/.work/layer-15/runs.txt");
    let read = || std::fs::read_to_string(&runs).ok().and_then(|t| t.split_whitespace().nth(1)?.parse::<f64>().ok());
    // Wait until a checkpoint has recorded some of this run's time (the record is removed when
    // the layer is done: a build that never records it fails here).
    let counted = loop {
        if let Some(seconds) = read().filter(|&s| s > 0.0) {
            break seconds;
        }
        assert!(child.try_wait().unwrap().is_none(), "layer 15 was built without its checkpoints recording the run's time");
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let (code, _, err) = crate::common::oware(&["build", "--quiet", "--max-stones", "15", "--dir", d, "--checkpoint-every", "0", "--threads", "1"]);
    assert_eq!(code, 0, "{err}");
    let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("awari/layer-15.json")).unwrap()).unwrap();
    assert_eq!(stats["runs"], 2, "{stats}");
    let seconds = stats["seconds"].as_f64().unwrap();
    assert!(seconds >= counted, "the layer's {seconds} s leave out the killed run's {counted} s: {stats}");
}

#[test]
fn memory_limit_stops_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(crate::common::OWARE)
        // Layer 13's cells (2.5 MB) do not fit in 2 MiB; out of core needs 4 MiB at least.
        .args(["build", "--quiet", "--max-stones", "13", "--max-memory", "2M", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(9));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs") && stderr.contains("--max-memory"), "{stderr}");
}

/// The level-synchronous propagation of the level census (`OWARE_LEVELS=1`, `scripts/bench-levels`)
/// resolves the same positions with the same values: the same files as the ordinary build.
#[test]
fn level_synchronous_propagation_gives_identical_files() {
    for rules in [Ruleset::Awari, Ruleset::Abapa(oware::rules::GrandSlam::SpareLast)] {
        let plain = tempfile::tempdir().unwrap();
        let levels = tempfile::tempdir().unwrap();
        build_in(plain.path(), rules, 13, 2);
        let out = Command::new(common::OWARE)
            .args(["build", "--rules", rules.name(), "--max-stones", "13", "--quiet", "--dir"])
            .arg(levels.path())
            .env("OWARE_LEVELS", "1")
            .env("OWARE_TRACE", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let trace = String::from_utf8_lossy(&out.stderr);
        assert!(trace.contains("layer 13 threshold 1 levels (positions/updates): "), "no census in the trace: {trace}");
        files_equal(plain.path(), levels.path(), rules, 13);
    }
}
