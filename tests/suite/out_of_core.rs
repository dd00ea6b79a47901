//! The out-of-core solver against the in-memory one: with tiny limits (many parts, many
//! message rounds, many lookup sweeps and windows), every layer of every ruleset comes out
//! byte-identical; a checkpoint resumed from, in either mode, changes nothing.

use std::time::Duration;

use oware::index::layer_size;
use oware::progress::{NoProgress, Progress};
use oware::rules::Ruleset;
use oware::solver::{solve_layer_with, OutOfCore, SolveOptions, WorkModel, CHUNK};
use oware::spill::Checkpoint;

use crate::common::{copy_fixture, fixture};
use crate::solved;
use solved::{as_i8, memory_layers};

const TOP: u32 = 14;

/// Counts the work units a solve reports.
#[derive(Default)]
struct Counting(std::sync::atomic::AtomicU64);
impl Progress for Counting {
    fn advance(&self, units: u64) {
        self.0.fetch_add(units, std::sync::atomic::Ordering::Relaxed);
    }
}
impl Counting {
    fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The units a whole solve reports: everything its model counts but the caller's check.
fn solve_units(model: &WorkModel) -> u64 {
    model.total() - model.check()
}

/// Limits far below what the layer needs: `parts` parts (at least one chunk each), lookups
/// and lower-layer windows of 64 KiB.
fn tiny(work: &std::path::Path, n: u32, parts: u64) -> OutOfCore<'_> {
    OutOfCore {
        part_len: (layer_size(n) / parts).max(CHUNK),
        lookup_bytes: 1 << 16,
        lower_window: 1 << 16,
        message_bytes: 1 << 16,
        work_dir: work,
        release_lower: &|_, _| {},
        release_out: &|_| {},
    }
}

#[test]
fn out_of_core_solves_are_byte_identical_on_every_ruleset() {
    for rules in Ruleset::ALL {
        let layers = memory_layers(rules, TOP);
        let work = tempfile::tempdir().unwrap();
        for n in 0..=TOP {
            let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
            let mut out = vec![0xAAu8; layer_size(n) as usize];
            // Awari in as many parts as chunks, the others in 5 parts (to keep the test quick).
            let parts = if rules == Ruleset::Awari && n <= 12 { u64::MAX } else { 5 };
            // Progress is weighted by layer n - 2's values, as the builder does.
            let model = match n.checked_sub(2) {
                Some(m) => WorkModel::from_counts(n, &oware::build::LayerStats::count(rules, m, as_i8(&layers[m as usize])).values),
                None => WorkModel::new(n, None),
            };
            let options = SolveOptions { out_of_core: Some(tiny(work.path(), n, parts)), work: Some(&model), ..Default::default() };
            let counted = Counting::default();
            solve_layer_with(rules, n, &lower, &mut out, &counted, &options).unwrap();
            assert!(out == layers[n as usize], "{} layer {n}: out of core differs from in memory", rules.name());
            assert_eq!(counted.get(), solve_units(&model), "{} layer {n}: progress ends at 100%", rules.name());
        }
        // Scratch files are gone.
        let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// A progress that cancels after a given number of phases, to stop a solve mid-layer.
struct StopAfter {
    phases: std::sync::atomic::AtomicU32,
    stop_at: u32,
}

impl oware::progress::Progress for StopAfter {
    fn phase(&self, _name: &str) {
        self.phases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.phases.load(std::sync::atomic::Ordering::Relaxed) > self.stop_at
    }
}

#[test]
fn interrupted_solves_resume_from_checkpoints_in_either_mode() {
    let rules = Ruleset::Awari;
    let n = 12;
    let layers = memory_layers(rules, n);
    let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
    let work = tempfile::tempdir().unwrap();
    let ckpt = Checkpoint::new(work.path().join("checkpoint"), rules.id(), n, layer_size(n));
    let mut resumed = 0;
    for (stop_at, first_ooc) in [(1u32, true), (3, false), (40, true), (9, false), (300, true), (5, true)] {
        let mut out = vec![0u8; layer_size(n) as usize];
        let first = SolveOptions {
            out_of_core: first_ooc.then(|| tiny(work.path(), n, u64::MAX)),
            checkpoint: Some(&ckpt),
            checkpoint_every: Duration::ZERO,
            ..Default::default()
        };
        let stop = StopAfter { phases: 0.into(), stop_at };
        let r = solve_layer_with(rules, n, &lower, &mut out, &stop, &first);
        assert!(matches!(r, Err(oware::Error::Interrupted)), "stop at {stop_at}: {r:?}");
        let had = ckpt.path().exists();
        resumed += usize::from(had);
        // Resume in the other mode.
        let notes = std::sync::Mutex::new(Vec::new());
        let note = |s: &str| notes.lock().unwrap().push(s.to_string());
        let second = SolveOptions {
            out_of_core: (!first_ooc).then(|| tiny(work.path(), n, u64::MAX)),
            checkpoint: Some(&ckpt),
            checkpoint_every: Duration::from_secs(3600),
            note: Some(&note),
            work: None,
        };
        let mut out = vec![0u8; layer_size(n) as usize];
        let counted = Counting::default();
        solve_layer_with(rules, n, &lower, &mut out, &counted, &second).unwrap();
        assert!(out == layers[n as usize], "stop at {stop_at}: resumed solve differs");
        // A resumed solve counts what the checkpoint saved as done: the bar still ends at 100%.
        assert_eq!(counted.get(), solve_units(&WorkModel::new(n, None)), "stop at {stop_at}: progress");
        let resumed_note = notes.lock().unwrap().iter().any(|s| s.contains("resuming"));
        assert_eq!(resumed_note, had, "stop at {stop_at}: {:?}", notes.lock().unwrap());
        assert!(!ckpt.path().exists(), "the checkpoint is removed when the layer is done");
    }
    assert!(resumed >= 4, "only {resumed} runs left a checkpoint");
}

#[test]
fn a_damaged_checkpoint_is_discarded_and_the_layer_solved_afresh() {
    let rules = Ruleset::ALL[1];
    let n = 11;
    let layers = memory_layers(rules, n);
    let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
    let work = tempfile::tempdir().unwrap();
    let ckpt = Checkpoint::new(work.path().join("checkpoint"), rules.id(), n, layer_size(n));
    let stop = StopAfter { phases: 0.into(), stop_at: 4 };
    let first = SolveOptions { checkpoint: Some(&ckpt), checkpoint_every: Duration::ZERO, ..Default::default() };
    let mut out = vec![0u8; layer_size(n) as usize];
    assert!(solve_layer_with(rules, n, &lower, &mut out, &stop, &first).is_err());
    let mut bytes = std::fs::read(ckpt.path()).unwrap();
    let k = bytes.len() - 1000;
    bytes[k] ^= 0x40;
    std::fs::write(ckpt.path(), &bytes).unwrap();
    let notes = std::sync::Mutex::new(Vec::new());
    let note = |s: &str| notes.lock().unwrap().push(s.to_string());
    let second = SolveOptions { checkpoint: Some(&ckpt), note: Some(&note), ..Default::default() };
    solve_layer_with(rules, n, &lower, &mut out, &NoProgress, &second).unwrap();
    assert!(out == layers[n as usize]);
    let notes = notes.lock().unwrap();
    assert!(notes.iter().any(|s| s.contains("discarded") && s.contains("checksum")), "{notes:?}");
}

// ---- The build command, forced out of core ----

use std::path::Path;
use std::process::Command;

fn oware(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_oware")).args(args).output().unwrap()
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
        let plan = oware(&["build", "--rules", rules, "--max-stones", "14", "--dir", d2, "--max-memory", "6M", "--dry-run"]);
        let text = String::from_utf8_lossy(&plan.stdout).to_string() + &String::from_utf8_lossy(&plan.stderr);
        assert!(text.contains("layer 14") && text.contains("out of core in 3 parts"), "{text}");
        let b = oware(&["build", "--rules", rules, "--max-stones", "14", "--dir", d2, "--max-memory", "6M", "-q"]);
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
    let args = ["build", "--max-stones", "15", "--dir", d, "--max-memory", "5M", "--checkpoint-every", "0", "-q"];
    let mut resumed = 0;
    for delay_ms in [300u64, 900, 1500, 2500] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_oware")).args(args).spawn().unwrap();
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
    let out = oware(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(layer_bytes(reference, "awari", 15) == layer_bytes(dir.path(), "awari", 15));
    assert!(resumed > 0, "no kill left a checkpoint to resume from");
}

#[test]
fn the_plan_refuses_a_build_whose_scratch_does_not_fit_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    copy_fixture(Ruleset::Awari, 12, dir.path());
    // Layers 13 and 14 take 6.9 MB; layer 14 out of core needs 17.5 MB of scratch more.
    let out = Command::new(env!("CARGO_BIN_EXE_oware"))
        .args(["build", "--max-stones", "14", "--dir", d, "--max-memory", "5M"])
        .env("OWARE_SIMULATE_DISK_FREE", "10000000")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("disk") && err.contains("13..14"), "{err}");
    assert!(!dir.path().join("awari/layer-13.owdb").exists(), "nothing may be written");
    assert!(!dir.path().join("awari/.work").exists());
    // A dry run shows the plan it would refuse, then refuses the same way.
    let dry = Command::new(env!("CARGO_BIN_EXE_oware"))
        .args(["build", "--max-stones", "14", "--dir", d, "--max-memory", "5M", "--dry-run"])
        .env("OWARE_SIMULATE_DISK_FREE", "10000000")
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&dry.stdout);
    assert_eq!(dry.status.code(), out.status.code(), "{}", String::from_utf8_lossy(&dry.stderr));
    assert!(plan.contains("layer 14:") && plan.contains("out of core in"), "{plan}");
    assert!(String::from_utf8_lossy(&dry.stderr).contains("not enough for layers 13..14"));
    // With room for the files and the scratch, the same build runs.
    let out = Command::new(env!("CARGO_BIN_EXE_oware"))
        .args(["build", "--max-stones", "14", "--dir", d, "--max-memory", "5M", "-q"])
        .env("OWARE_SIMULATE_DISK_FREE", "40000000")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
