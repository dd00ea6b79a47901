//! The builder against a plain reference, thread-count independence, and safe resumption.
//!
//! The reference solver is forward fixed-point iteration from 0 (`docs/values.md`: after k sweeps a
//! value is that of the game cut off after k moves with 0 at the cut; the first sweep that changes
//! nothing gives the exact values), over the move graph of the simple generator in
//! `tests/common`, with brute-force ranking (a sorted list of the layer's boards). It shares no
//! code with the builder beyond the plain data types.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::{brute_force_layer, simple_moves, SimpleOutcome};
use oware::build::solve_layer;
use oware::build::{build, BuildConfig, Silent};
use oware::index::layer_size;
use oware::progress::NoProgress;
use oware::rules::{Board, Ruleset};
use oware::storage::{native_path, ValuesKind};

/// Exact values of layer `n` by forward iteration; `lower[m]` are the reference values of layer m.
fn reference_layer(rules: Ruleset, n: u32, lower: &[(HashMap<Board, usize>, Vec<i8>)]) -> (HashMap<Board, usize>, Vec<i8>) {
    let boards = brute_force_layer(n);
    let index: HashMap<Board, usize> = boards.iter().enumerate().map(|(i, b)| (*b, i)).collect();
    // The move graph once: for each position, its exits and its same-layer children.
    let mut exits: Vec<Option<i8>> = Vec::with_capacity(boards.len());
    let mut children: Vec<Vec<usize>> = Vec::with_capacity(boards.len());
    for b in &boards {
        let m = simple_moves(rules, b);
        let mut best: Option<i8> = m.ending;
        let mut same = Vec::new();
        for (_, o) in &m.moves {
            let e = match *o {
                SimpleOutcome::End { value } => value,
                SimpleOutcome::Child { captured: 0, child } => {
                    same.push(index[&child]);
                    continue;
                }
                SimpleOutcome::Child { captured, child } => {
                    let (idx, vals) = &lower[(n - captured as u32) as usize];
                    captured as i8 - vals[idx[&child]]
                }
            };
            best = Some(best.map_or(e, |b| b.max(e)));
        }
        exits.push(best);
        children.push(same);
    }
    let mut v = vec![0i8; boards.len()];
    loop {
        let next: Vec<i8> = (0..boards.len())
            .map(|i| {
                let via_children = children[i].iter().map(|&c| -v[c]).max();
                match (exits[i], via_children) {
                    (Some(a), Some(b)) => a.max(b),
                    (Some(a), None) => a,
                    (None, Some(b)) => b,
                    (None, None) => unreachable!("a position has a move or an ending"),
                }
            })
            .collect();
        if next == v {
            return (index, v);
        }
        v = next;
    }
}

#[test]
fn builder_matches_reference_on_layers_0_to_10_for_every_ruleset() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for rules in Ruleset::ALL {
        let mut reference = Vec::new();
        let mut built: Vec<Vec<i8>> = Vec::new();
        for n in 0..=10 {
            let r = reference_layer(rules, n, &reference);
            let mut out = vec![0u8; layer_size(n) as usize];
            let lower: Vec<&[i8]> = built.iter().map(|v| v.as_slice()).collect();
            pool.install(|| solve_layer(rules, n, &lower, &mut out, &NoProgress)).unwrap();
            let got: Vec<i8> = out.iter().map(|&b| b as i8).collect();
            let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != r.1[i]).collect();
            assert!(
                bad.is_empty(),
                "{rules} layer {n}: {} positions differ, first {:?}: built {} reference {}",
                bad.len(),
                brute_force_layer(n)[bad[0]],
                got[bad[0]],
                r.1[bad[0]]
            );
            built.push(got);
            reference.push(r);
        }
    }
}

fn build_in(dir: &Path, rules: Ruleset, max: u32, threads: usize) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let cfg = BuildConfig { rules, max_stones: max, dir: dir.into(), max_memory: None, ..Default::default() };
    pool.install(|| build(&cfg, &Silent)).unwrap();
}

fn files_equal(a: &Path, b: &Path, rules: Ruleset, max: u32) {
    for n in 0..=max {
        let x = std::fs::read(native_path::<ValuesKind>(a, rules, n)).unwrap();
        let y = std::fs::read(native_path::<ValuesKind>(b, rules, n)).unwrap();
        assert!(x == y, "layer {n} differs between {} and {}", a.display(), b.display());
    }
}

#[test]
fn one_and_two_threads_give_identical_files() {
    for rules in [Ruleset::Awari, Ruleset::Abapa(oware::rules::GrandSlam::NoCapture)] {
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        build_in(one.path(), rules, 13, 1);
        build_in(two.path(), rules, 13, 2);
        files_equal(one.path(), two.path(), rules, 13);
    }
}

#[test]
fn interrupted_and_damaged_builds_resume_to_identical_files() {
    let rules = Ruleset::Awari;
    let max = 15;
    // The reference: the shared fixture, built by the library once per test binary.
    let clean = crate::common::fixture(rules, max);

    // Kill a real build process while it works on a layer, then resume.
    let resumed = tempfile::tempdir().unwrap();
    let mut child =
        Command::new(crate::common::oware_exe()).args(["build", "--quiet", "--max-stones", &max.to_string(), "--dir"]).arg(resumed.path()).spawn().unwrap();
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
        oware::storage::Layer::open_native(resumed.path(), rules, n, true).unwrap();
    }
    // Damage a finished layer's payload and remove another: both must be rebuilt.
    let victim = native_path::<ValuesKind>(resumed.path(), rules, 9);
    let mut bytes = std::fs::read(&victim).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&victim, bytes).unwrap();
    std::fs::remove_file(native_path::<ValuesKind>(resumed.path(), rules, 11)).unwrap();

    let out =
        Command::new(crate::common::oware_exe()).args(["build", "--quiet", "--max-stones", &max.to_string(), "--dir"]).arg(resumed.path()).output().unwrap();
    assert!(out.status.success(), "resume failed: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("layer-09.owdb") && stderr.contains("checksum"), "damage not reported: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("complete (skipped)"), "nothing was skipped: {stdout}");
    files_equal(clean, resumed.path(), rules, max);
}

#[test]
fn memory_limit_stops_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(crate::common::oware_exe())
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
        let out = Command::new(common::oware_exe())
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
