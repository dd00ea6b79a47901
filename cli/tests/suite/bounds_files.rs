//! The forced-capture bounds files through the program: `oware build --bounds` writes the
//! builder's payloads and resumes after damage and a kill, `query`, `verify` and `stats` report
//! the bounds, and bounds that do not fit the memory limit are refused before any work. (The
//! builder against a plain reference, and the bounds against the values, are the library's
//! unit tests: `src/solver/tests/bounds.rs`.)

use crate::common;

use common::{brute_force_layer, built_on_two, decode, oware, s};
use oware::bounds::{Bounds, Codec};
use oware::index::layer_size;
use oware::rules::{GrandSlam, Ruleset};
use oware::storage::{native_path, BoundsKind, ValuesKind};
use oware::storage::{Header, HEADER_LEN, PAYLOAD_OFFSET};
use std::path::Path;
use std::process::Command;

const ABAPA: Ruleset = Ruleset::Abapa(GrandSlam::NoCapture);

fn build_bounds(dir: &Path, max: u32) -> (i32, String, String) {
    oware(&["build", "--rules", "abapa", "--bounds", "--max-stones", &max.to_string(), "--dir", s(dir)])
}

/// Rewrites the header of a bounds file for its (changed) payload, so only the content is wrong.
fn reseal(path: &Path, n: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    let sum = common::format_checksum(&bytes[PAYLOAD_OFFSET as usize..]);
    bytes[..HEADER_LEN].copy_from_slice(&Header::bounds(ABAPA, n, sum).encode());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn built_files_equal_the_solver_and_resume_after_damage_and_a_kill() {
    let max = 14;
    let clean = tempfile::tempdir().unwrap();
    let (code, out, err) = build_bounds(clean.path(), max);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("bounds 14:") && out.contains("split forced"), "{out}");
    // The files hold the solver's payloads, behind a header naming the bounds encoding.
    let payloads = &built_on_two(ABAPA)[..=max as usize];
    for n in 0..=max {
        let file = std::fs::read(native_path::<BoundsKind>(clean.path(), ABAPA, n)).unwrap();
        assert_eq!(&file[PAYLOAD_OFFSET as usize..], &payloads[n as usize][..], "layer {n}");
        let b = oware::storage::DatabaseDir::native(clean.path(), ABAPA).unwrap().open_layer::<BoundsKind>(n, true).unwrap();
        assert_eq!(b.header().map(|h| h.encoding), Some(oware::storage::BOUNDS_TRIANGULAR));
    }

    // Kill a build while it works, then damage, truncate and remove finished bounds: the next
    // build rebuilds exactly those and the files come out identical.
    let resumed = tempfile::tempdir().unwrap();
    let mut child = Command::new(crate::common::OWARE)
        .args(["build", "--quiet", "--rules", "abapa", "--bounds", "--max-stones", &max.to_string(), "--dir", s(resumed.path())])
        .spawn()
        .unwrap();
    // Wait for the bounds of layer 12; the build must still be running then (layers 13 and 14
    // are left), and it must be the kill that ends it.
    let marker = native_path::<BoundsKind>(resumed.path(), ABAPA, 12);
    let start = std::time::Instant::now();
    while !marker.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the build ended before it could be killed");
        // A watchdog against a build that hangs, not a speed requirement.
        assert!(start.elapsed().as_secs() < 600, "the bounds of layer 12 never appeared");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL), "the build was not running when it was killed: {status:?}");
    }
    assert!(!native_path::<BoundsKind>(resumed.path(), ABAPA, max).exists(), "the build was killed too late to test anything");
    let unfinished: Vec<u32> = (13..=max).filter(|&n| !native_path::<BoundsKind>(resumed.path(), ABAPA, n).exists()).collect();
    for n in 0..=12 {
        oware::storage::DatabaseDir::native(resumed.path(), ABAPA).unwrap().open_layer::<BoundsKind>(n, true).unwrap();
    }
    let flip = native_path::<BoundsKind>(resumed.path(), ABAPA, 9);
    let mut bytes = std::fs::read(&flip).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&flip, bytes).unwrap();
    let cut = native_path::<BoundsKind>(resumed.path(), ABAPA, 10);
    let len = std::fs::metadata(&cut).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&cut).unwrap().set_len(len - 100).unwrap();
    std::fs::remove_file(native_path::<BoundsKind>(resumed.path(), ABAPA, 11)).unwrap();
    let (code, out, err) = build_bounds(resumed.path(), max);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("bounds-09.owdb") && err.contains("checksum") && err.contains("rebuilding the bounds of layer 9"), "{err}");
    assert!(err.contains("bounds-10.owdb") && err.contains("rebuilding the bounds of layer 10"), "{err}");
    assert!(out.contains("bounds  8: complete (skipped)"), "{out}");
    // The rerun resumed the killed build: what it had finished is kept, what it had not is built.
    assert!(out.contains("bounds 12: complete (skipped)"), "{out}");
    for n in unfinished {
        assert!(out.contains(&format!("bounds {n:>2}:")) && !out.contains(&format!("bounds {n:>2}: complete (skipped)")), "bounds {n}:\n{out}");
    }
    for n in 0..=max {
        let a = std::fs::read(native_path::<BoundsKind>(clean.path(), ABAPA, n)).unwrap();
        let b = std::fs::read(native_path::<BoundsKind>(resumed.path(), ABAPA, n)).unwrap();
        assert!(a == b, "bounds of layer {n} differ after the resume");
        assert_eq!(
            std::fs::read(native_path::<ValuesKind>(clean.path(), ABAPA, n)).unwrap(),
            std::fs::read(native_path::<ValuesKind>(resumed.path(), ABAPA, n)).unwrap()
        );
    }
    // No temporaries are left behind.
    let dir = clean.path().join("abapa");
    assert!(std::fs::read_dir(&dir).unwrap().flatten().all(|e| !e.file_name().to_string_lossy().ends_with(".tmp")));

    // A file of values at a bounds path is someone's data: refused, not replaced.
    std::fs::copy(native_path::<ValuesKind>(resumed.path(), ABAPA, 5), native_path::<BoundsKind>(resumed.path(), ABAPA, 5)).unwrap();
    let (code, _, err) = build_bounds(resumed.path(), max);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("bounds-05.owdb") && err.contains("holds values, not forced-capture bounds"), "{err}");
}

#[test]
fn query_verify_and_stats_report_the_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let d = s(dir.path());
    // Without bounds: query --bounds names what is missing (exit 4); verify --bounds too.
    common::copy_fixture(ABAPA, 10, dir.path());
    let pos = "0 0 0 0 2 1 1 0 0 0 0 0";
    let (code, _, err) = oware(&["query", "--rules", "abapa", "--dir", d, "--bounds", pos]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("forced-capture bounds of layer 4") && err.contains("--bounds"), "{err}");
    let (code, _, _) = oware(&["verify", "--rules", "abapa", "--dir", d, "--bounds"]);
    assert_eq!(code, 4);
    let (code, _, err) = build_bounds(dir.path(), 10);
    assert_eq!(code, 0, "{err}");

    // Every position of layer 6 answers the solver's bounds, in all three forms.
    let payloads = &built_on_two(ABAPA)[..=10];
    let boards = brute_force_layer(6);
    let input: String = boards.iter().map(|b| b.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ") + "\n").collect();
    let mut child = Command::new(crate::common::OWARE)
        .args(["query", "--rules", "abapa", "--dir", d, "--bounds", "--values-only"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Feed stdin from a thread while stdout is read, so neither pipe fills up.
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(input.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let want = decode(6, &payloads[6]);
    assert_eq!(text.lines().count(), boards.len());
    for (line, b) in text.lines().zip(&want) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 4, "{line}");
        assert_eq!((f[2].parse::<u8>().unwrap(), f[3].parse::<u8>().unwrap()), (b.mover, b.opponent), "{line}");
    }
    let (code, out, _) = oware(&["query", "--rules", "abapa", "--dir", d, "--bounds", "--captured", "20:18", "--json", pos]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let b = decode(4, &payloads[4])[oware::index::rank(&pos.parse::<oware::Position>().unwrap().board().clone()).unwrap() as usize];
    assert_eq!(doc["forced_mover"], u64::from(b.mover));
    assert_eq!(doc["forced_opponent"], u64::from(b.opponent));
    assert_eq!(doc["repetition_rule"], "own_side");
    assert!(doc["result"]["mover"].is_string() && doc["captured"]["mover"] == 20);
    let (code, out, _) = oware(&["query", "--rules", "abapa", "--dir", d, "--bounds", pos]);
    assert_eq!(code, 0);
    assert!(out.contains("forced captures") && out.contains("repetition rule (each player takes the stones on his side)"), "{out}");
    let (code, _, err) = oware(&["query", "--rules", "abapa", "--dir", d, "--bounds", "--captured", "30:15", pos]);
    assert_eq!(code, 2, "{err}");

    // Verify and stats pass and report the bounds.
    let (code, out, err) = oware(&["verify", "--rules", "abapa", "--dir", d, "--bounds"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("bounds 10:") && out.contains("bounds entries checked"), "{out}");
    let (code, out, _) = oware(&["stats", "--rules", "abapa", "--dir", d, "--json"]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(doc["layers"][10]["bounds"]["forced_share"].as_f64().unwrap() > 0.0);

    // An entry changed to another valid pair (header resealed): verify names it, exit 8.
    let path = native_path::<BoundsKind>(dir.path(), ABAPA, 8);
    let codec = Codec::new(8);
    let mut bytes = std::fs::read(&path).unwrap();
    let payload = &bytes[PAYLOAD_OFFSET as usize..];
    let i = (0..layer_size(8)).find(|&i| codec.get(payload, i).unwrap().mover == 0).unwrap();
    let old = codec.get(payload, i).unwrap();
    let new = Bounds { mover: 1, opponent: old.opponent.min(7) };
    // Entries are 6 bits wide in layer 8: rewrite the bits of entry i.
    let w = oware::bounds::width(8) as u64;
    let code_new = oware::bounds::code(8, new) as u64;
    for k in 0..w {
        let bit = i * w + k;
        let byte = &mut bytes[PAYLOAD_OFFSET as usize + (bit / 8) as usize];
        *byte = (*byte & !(1 << (bit % 8))) | ((((code_new >> k) & 1) as u8) << (bit % 8));
    }
    std::fs::write(&path, &bytes).unwrap();
    reseal(&path, 8);
    let (code, out, _) = oware(&["verify", "--rules", "abapa", "--dir", d]);
    assert_eq!(code, 8, "{out}");
    assert!(out.contains(&format!("index {i:>12}")) && out.contains("wrong bounds entr"), "{out}");
    // A flipped byte without resealing: damaged, exit 5, in verify and stats.
    bytes[PAYLOAD_OFFSET as usize] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let (code, out, _) = oware(&["verify", "--rules", "abapa", "--dir", d]);
    assert_eq!(code, 5, "{out}");
    assert!(out.contains("bounds  8: DAMAGED"), "{out}");
    let (code, _, _) = oware(&["stats", "--rules", "abapa", "--dir", d]);
    assert_eq!(code, 5);
}

#[test]
fn bounds_that_do_not_fit_the_memory_limit_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    // The values of layer 14 fit out of core in 8 MiB; its bounds need 4 bytes per position
    // in memory (17.5 MB): the plan refuses, naming the layer, and writes nothing.
    let (code, _, err) = oware(&["build", "--rules", "abapa", "--bounds", "--max-stones", "14", "--max-memory", "8M", "--dir", s(dir.path())]);
    assert_eq!(code, 9, "{err}");
    assert!(err.contains("layer 1"), "{err}");
    assert!(!native_path::<ValuesKind>(dir.path(), ABAPA, 0).exists());
}
