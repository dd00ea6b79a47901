//! Distributed builds over MPI (feature `mpi`; needs `mpirun` on the PATH): `mpirun -np 1, 2
//! and 4` build layers 0..14 of awari and abapa byte-identical to the single-process build,
//! and a build whose rank is killed ends (no hang) and resumes when rerun; with `--dtc` on 2 and
//! 3 ranks each rank computes its share of the depths to capture, and the files are those of the
//! single-process build (also when a damaged one is rebuilt).
//!
//! Run with `cargo test --release --features mpi --test mpi` (`scripts/test` does).
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn oware() -> &'static str {
    env!("CARGO_BIN_EXE_oware")
}

/// `mpirun -np K oware ARGS`, allowed as root and on more ranks than cores.
fn mpirun(k: usize, args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["--oversubscribe", "-np", &k.to_string(), oware()]).args(args);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

fn check(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {:?}\n{}{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

fn same_layers(a: &Path, b: &Path, rules: &str, top: u32, what: &str) {
    for n in 0..=top {
        let name = format!("{rules}/layer-{n:02}.owdb");
        let x = std::fs::read(a.join(&name)).unwrap();
        let y = std::fs::read(b.join(&name)).unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
        assert!(x == y, "{what}: {name} differs from the single-process build");
    }
}

#[test]
fn mpirun_builds_are_byte_identical_with_1_2_and_4_ranks() {
    let top = 14;
    for rules in ["awari", "abapa"] {
        let single = tempfile::tempdir().unwrap();
        let s = single.path().to_str().unwrap();
        check(&Command::new(oware()).args(["build", "--rules", rules, "--max-stones", &top.to_string(), "--dir", s, "-q"]).output().unwrap(), "single");
        for k in [1usize, 2, 4] {
            let multi = tempfile::tempdir().unwrap();
            let d = multi.path().to_str().unwrap();
            let out = mpirun(k, &["build", "--rules", rules, "--max-stones", &top.to_string(), "--dir", d]).output().unwrap();
            check(&out, &format!("{rules}, {k} ranks"));
            same_layers(single.path(), multi.path(), rules, top, &format!("{rules}, {k} ranks"));
            let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(multi.path().join(format!("{rules}/layer-{top:02}.json"))).unwrap()).unwrap();
            if k > 1 {
                let ranks = stats["ranks"].as_array().expect("per-rank figures");
                assert_eq!(ranks.len(), k);
                assert!(ranks.iter().all(|r| r["bytes_sent"].as_u64().unwrap() > 0));
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(err.contains(&format!("on {k} ranks")), "{err}");
            } else {
                assert!(stats.get("ranks").is_none());
            }
        }
    }
}

/// The processes of `oware` whose command line holds `marker` (the ranks, not `mpirun`).
fn ranks_of(marker: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if comm.trim() == "oware" && String::from_utf8_lossy(&cmd).contains(marker) {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn a_killed_rank_ends_the_job_and_the_rerun_resumes_and_matches() {
    let top = 17;
    let single = tempfile::tempdir().unwrap();
    let s = single.path().to_str().unwrap();
    check(&Command::new(oware()).args(["build", "--max-stones", &top.to_string(), "--dir", s, "-q"]).output().unwrap(), "single");
    let multi = tempfile::tempdir().unwrap();
    let d = multi.path().to_str().unwrap();
    let args = ["build", "--max-stones", "17", "--dir", d, "--checkpoint-every", "0", "--threads", "1"];
    let mut job = mpirun(2, &args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    // Wait until layer 15 is done, then kill a rank in the middle of the next layers.
    let t0 = Instant::now();
    while !multi.path().join("awari/layer-15.owdb").exists() {
        assert!(t0.elapsed() < Duration::from_secs(120), "layer 15 never appeared");
        assert!(job.try_wait().unwrap().is_none(), "the job ended before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pids = ranks_of(d);
    assert_eq!(pids.len(), 2, "{pids:?}");
    // SAFETY: a plain system call.
    assert_eq!(unsafe { libc::kill(*pids.iter().max().unwrap(), libc::SIGKILL) }, 0);
    // The job ends by itself, with an error, instead of hanging.
    let killed = Instant::now();
    let status = loop {
        if let Some(s) = job.try_wait().unwrap() {
            break s;
        }
        assert!(killed.elapsed() < Duration::from_secs(60), "the job hangs after a rank was killed");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success());
    let mut err = String::new();
    std::io::Read::read_to_string(job.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(err.to_lowercase().contains("signal 9") || err.contains("killed") || err.contains("exited"), "{err}");
    assert!(!multi.path().join("awari/layer-17.owdb").exists(), "the build was killed too late to test anything");
    // The rerun keeps the finished layers and completes the rest, with the same bytes.
    let out = mpirun(2, &args).output().unwrap();
    check(&out, "rerun");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("layers 16..17 to build") || text.contains("layer 17 to build"), "{text}");
    same_layers(single.path(), multi.path(), "awari", top, "killed and resumed");
    let verify = Command::new(oware()).args(["verify", "--dir", d, "--max-stones", "17"]).output().unwrap();
    check(&verify, "verify");
}

#[test]
fn mpirun_builds_with_dtc_split_the_depths_and_write_the_single_process_files() {
    let top = 13;
    let single = tempfile::tempdir().unwrap();
    let s = single.path().to_str().unwrap();
    check(&Command::new(oware()).args(["build", "--max-stones", &top.to_string(), "--dir", s, "--dtc", "-q"]).output().unwrap(), "single");
    let same_depths = |dir: &Path, what: &str| {
        for n in 0..=top {
            let name = format!("awari/dtc-{n:02}.owdb");
            let x = std::fs::read(single.path().join(&name)).unwrap();
            let y = std::fs::read(dir.join(&name)).unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
            assert!(x == y, "{what}: {name} differs from the single-process build");
        }
    };
    for k in [2, 3] {
        let multi = tempfile::tempdir().unwrap();
        let d = multi.path().to_str().unwrap();
        let what = format!("{k} ranks with --dtc");
        let out = mpirun(k, &["build", "--max-stones", &top.to_string(), "--dir", d, "--dtc"]).output().unwrap();
        check(&out, &what);
        same_layers(single.path(), multi.path(), "awari", top, &what);
        same_depths(multi.path(), &what);
        // Each rank computed its share of the depths, and they exchanged updates.
        let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(multi.path().join(format!("awari/dtc-{top:02}.json"))).unwrap()).unwrap();
        let ranks = stats["ranks"].as_array().unwrap_or_else(|| panic!("{what}: no ranks in dtc-{top:02}.json: {stats}"));
        assert_eq!(ranks.len(), k, "{what}: {stats}");
        let positions: Vec<u64> = ranks.iter().map(|r| r["positions"].as_u64().unwrap()).collect();
        assert_eq!(positions.iter().sum::<u64>(), stats["positions"].as_u64().unwrap(), "{what}: {positions:?}");
        assert!(positions.iter().all(|&p| p > 0), "{what}: a rank computed nothing: {positions:?}");
        assert!(ranks.iter().all(|r| r["bytes_sent"].as_u64().unwrap() > 0), "{what}: a rank sent nothing: {stats}");
        assert!(!multi.path().join(".work").exists(), "{what}: the work directory was left");
        if k == 2 {
            // A rerun keeps every depth file; one damaged is rebuilt, by the ranks, the same.
            let out = mpirun(k, &["build", "--max-stones", &top.to_string(), "--dir", d, "--dtc"]).output().unwrap();
            check(&out, "rerun");
            let log = String::from_utf8_lossy(&out.stderr);
            assert!(!log.contains("rebuilding"), "the rerun rebuilt something:\n{log}");
            let damaged = multi.path().join("awari/dtc-12.owdb");
            let mut bytes = std::fs::read(&damaged).unwrap();
            let at = bytes.len() / 2;
            bytes[at] ^= 0x55;
            std::fs::write(&damaged, &bytes).unwrap();
            let out = mpirun(k, &["build", "--max-stones", &top.to_string(), "--dir", d, "--dtc"]).output().unwrap();
            check(&out, "rerun after damage");
            let log = String::from_utf8_lossy(&out.stderr);
            assert!(log.contains("rebuilding the depths to capture of layer 12"), "{log}");
            same_depths(multi.path(), "rebuilt by 2 ranks");
            let verify = Command::new(oware()).args(["verify", "--dir", d, "--max-stones", &top.to_string(), "--dtc"]).output().unwrap();
            check(&verify, "verify --dtc");
        }
    }
}
