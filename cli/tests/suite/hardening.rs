//! Hostile and careless input, one test per defect of the hardening issue: planted links, foreign
//! files, files changed under a running query, failing and closed outputs, unbounded input,
//! FIFOs and directories in place of layers, absurd arguments, interrupted builds. Each test
//! failed before the fix it covers.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{copy_fixture, oware, s};
use oware::storage::{native_path, ValuesKind};
use oware::storage::{Header, HEADER_LEN};
use oware::Ruleset;

const AWARI: Ruleset = Ruleset::Awari;

fn bin() -> Command {
    Command::new(crate::common::OWARE)
}

/// Runs the program with stdout (or stderr) sent to /dev/full.
fn to_dev_full(args: &[&str], stream: &str) -> (i32, String) {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut cmd = bin();
    cmd.args(args).stdin(Stdio::null());
    let out =
        if stream == "stdout" { cmd.stdout(full).stderr(Stdio::piped()).output().unwrap() } else { cmd.stderr(full).stdout(Stdio::piped()).output().unwrap() };
    let other = if stream == "stdout" { out.stderr } else { out.stdout };
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&other).into_owned())
}

/// Every file under `dir` (recursively; directories are not listed).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}

/// Temporary files left in a directory (any name ending in `.tmp`).
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(".tmp")).collect()).unwrap_or_default()
}

// 1. Temporaries never follow a planted link.
#[test]
fn planted_links_at_temporary_names_are_never_followed() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("s");
    let rdir = db.join("awari");
    std::fs::create_dir_all(&rdir).unwrap();
    let victim = t.path().join("p.txt");
    std::fs::write(&victim, "keep").unwrap();
    for name in ["layer-05.owdb.tmp", "layer-05.json.tmp", ".lock"] {
        std::os::unix::fs::symlink(&victim, rdir.join(name)).unwrap();
    }
    let (code, _, err) = oware(&["build", "--dir", s(&db), "--max-stones", "6", "--quiet"]);
    // The lock is never opened through a link: the build refuses rather than touch the target.
    assert_eq!(code, 7, "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    std::fs::remove_file(rdir.join(".lock")).unwrap();
    let (code, _, err) = oware(&["build", "--dir", s(&db), "--max-stones", "6", "--quiet"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(std::fs::symlink_metadata(rdir.join("layer-05.owdb.tmp")).unwrap().file_type().is_symlink());
    assert!(std::fs::symlink_metadata(rdir.join("layer-05.owdb")).unwrap().file_type().is_file());

    // Export: a link at the old temporary name of scores.3.
    let out = t.path().join("vu");
    std::fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("scores.3.tmp")).unwrap();
    let (code, _, err) = oware(&["export", "--format", "vu", "--dir", s(&db), "--out", s(&out), "--quiet"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(std::fs::symlink_metadata(out.join("scores.3")).unwrap().file_type().is_file());
}

/// Issue 67, item 6: a link at a layer's partial file was "an unknown kind of file", with no
/// word on what to do; it is a symbolic link, left alone, and the hint says to remove it.
#[test]
fn a_link_at_a_partial_file_is_named_and_the_hint_says_what_to_do() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("s");
    let rdir = db.join("awari");
    std::fs::create_dir_all(&rdir).unwrap();
    let victim = t.path().join("p.txt");
    std::fs::write(&victim, "keep").unwrap();
    let partial = rdir.join(".layer-00.owdb.partial");
    std::os::unix::fs::symlink(&victim, &partial).unwrap();
    let (code, _, err) = oware(&["build", "--dir", s(&db), "--max-stones", "2", "--checkpoint-every", "0", "--quiet"]);
    assert_eq!(code, 7, "{err}");
    assert!(err.contains(".layer-00.owdb.partial is a symbolic link, not a regular file"), "{err}");
    assert!(err.contains("remove it (`rm ") && err.contains("and rerun"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    std::fs::remove_file(&partial).unwrap();
    let (code, _, err) = oware(&["build", "--dir", s(&db), "--max-stones", "2", "--checkpoint-every", "0", "--quiet"]);
    assert_eq!(code, 0, "{err}");
}

// 2. A layer of another ruleset or another layer in the way is never replaced.
#[test]
fn build_refuses_to_replace_a_foreign_layer() {
    let t = tempfile::tempdir().unwrap();
    let abapa = Ruleset::Abapa(oware::rules::GrandSlam::NoCapture);
    copy_fixture(abapa, 5, t.path());
    copy_fixture(AWARI, 4, t.path());
    let target = native_path::<ValuesKind>(t.path(), AWARI, 5);
    std::fs::copy(native_path::<ValuesKind>(t.path(), abapa, 5), &target).unwrap();
    let before = std::fs::read(&target).unwrap();
    let (code, _, err) = oware(&["build", "--dir", s(t.path()), "--max-stones", "6"]);
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("holds ruleset 'abapa'"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), before, "the foreign file was changed");
    assert!(!native_path::<ValuesKind>(t.path(), AWARI, 6).exists(), "the build went on");

    // Another layer's file at layer 5's path.
    std::fs::copy(native_path::<ValuesKind>(t.path(), AWARI, 4), &target).unwrap();
    let (code, _, err) = oware(&["build", "--dir", s(t.path()), "--max-stones", "6"]);
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("holds layer 4, expected layer 5"), "{err}");
}

// 3. A layer truncated in place under a running query: an error record, not SIGBUS.
#[test]
fn truncating_a_layer_under_a_running_query_is_an_error_not_a_crash() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 12, t.path());
    let mut child =
        bin().args(["query", "--values-only", "--dir", s(t.path())]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    writeln!(stdin, "1 1 1 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0").ok();
    writeln!(stdin, "3 1 1 1 1 1 1 1 1 1 0 0").unwrap();
    stdin.flush().unwrap();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("error\t1\t3\t"), "{line}");
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("3 1 1 1 1 1 1 1 1 1 0 0\t"), "{line}");
    // Truncate layer 12 in place (what no program may do to a layer in use).
    let f = std::fs::OpenOptions::new().write(true).open(native_path::<ValuesKind>(t.path(), AWARI, 12)).unwrap();
    f.set_len(4096 + 10).unwrap();
    drop(f);
    writeln!(stdin, "1 1 1 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0").ok();
    writeln!(stdin, "0 0 0 0 0 0 3 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0 0 0").ok();
    writeln!(stdin, "1 1 1 3 1 1 1 1 1 1 0 0").unwrap();
    drop(stdin);
    let mut rest = String::new();
    for l in stdout.lines() {
        rest.push_str(&l.unwrap());
        rest.push('\n');
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3), "ended by a signal? {status:?}\n{rest}");
    let last = rest.lines().last().unwrap_or_default();
    assert!(last.starts_with("error\t5\t5\t") && last.contains("changed while it was open"), "{rest}");
}

// 4. Output errors: exit 7 with a message, never a panic.
#[test]
fn full_stdout_and_stderr_are_errors_not_panics() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 6, t.path());
    let d = s(t.path());
    let out = t.path().join("vu");
    let o = s(&out);
    for args in [
        vec!["stats", "--dir", d],
        vec!["verify", "--dir", d],
        vec!["export", "--format", "vu", "--dir", d, "--out", o],
        vec!["build", "--dir", d, "--max-stones", "7"],
        vec!["query", "--dir", d, "1", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"],
        vec!["moves", "1", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"],
        vec!["index", "1", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"],
        vec!["perft", "--depth", "2"],
        vec!["game", "--dir", d, "--from", "1 0 0 0 0 0 0 0 0 0 0 0"],
        vec!["play", "--dir", d, "--from", "1 0 0 0 0 0 0 0 0 0 0 0"],
        vec!["--help"],
        vec!["completions", "bash"],
    ] {
        let (code, err) = to_dev_full(&args, "stdout");
        assert_eq!(code, 7, "{args:?}: {err}");
        assert!(err.contains("cannot write to stdout"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // stderr on /dev/full: messages are dropped, the command's own result stands.
    for (args, want) in [
        (vec!["stats", "--dir", d], 0),
        (vec!["verify", "--dir", d], 0),
        (vec!["build", "--dir", d, "--max-stones", "8"], 0),
        (vec!["query", "--dir", d, "x"], 3),
        (vec!["moves", "1"], 3),
        (vec!["no-such-command"], 2),
    ] {
        let (code, _) = to_dev_full(&args, "stderr");
        assert_eq!(code, want, "{args:?}");
    }
}

// 5. A huge batch line is neither stored nor echoed; control bytes never reach the terminal.
#[test]
fn huge_and_hostile_batch_lines_are_bounded_and_escaped() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 4, t.path());
    let mut cmd = bin();
    cmd.args(["query", "--values-only", "--dir", s(t.path())]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // The child may not use more than 1 GiB of address space: a 200 MB line held in memory (and
    // copied while tokenised) would not fit.
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe and touches only the child.
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit { rlim_cur: 1 << 30, rlim_max: 1 << 30 };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'7'; 1 << 20];
        for _ in 0..200 {
            stdin.write_all(&chunk)?;
        }
        stdin.write_all(b"\n\x1b[31mred\x07 1 2\n1 0 0 0 0 0 0 0 0 0 0 0\n")
    });
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(lines[0].starts_with("error\t1\t3\t") && lines[0].contains("209715200 bytes"), "{}", lines[0]);
    assert!(lines[1].starts_with("error\t2\t3\t"), "{}", lines[1]);
    assert_eq!(lines[2], "1 0 0 0 0 0 0 0 0 0 0 0\t1");
    assert!(out.stdout.len() < 2000 && out.stderr.len() < 2000, "output echoes the input");
    for b in [0x1b, 0x07] {
        assert!(!out.stdout.contains(&b) && !out.stderr.contains(&b), "raw control byte {b:#x}: {stdout:?} {stderr:?}");
    }
}

// 6. A FIFO or a directory in place of a layer: a named error at once, no hang.
#[test]
fn fifos_and_directories_in_place_of_layers_are_named() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 4, t.path());
    let fifo = native_path::<ValuesKind>(t.path(), AWARI, 3);
    std::fs::remove_file(&fifo).unwrap();
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let d = s(t.path());
    for args in [
        vec!["query", "--dir", d, "3", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"],
        vec!["verify", "--dir", d],
        vec!["stats", "--dir", d],
        vec!["build", "--dir", d, "--max-stones", "4"],
        vec!["export", "--format", "vu", "--dir", d, "--out", "/nonexistent-dir/x"],
    ] {
        let start = Instant::now();
        let mut child = bin().args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        while child.try_wait().unwrap().is_none() {
            // A FIFO blocks an open forever: the watchdog only has to end a hang, however slow
            // the machine, so it is generous (not a speed requirement).
            if start.elapsed() > Duration::from_secs(300) {
                child.kill().unwrap();
                panic!("{args:?} hangs on a FIFO");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let all = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(out.status.code(), Some(7), "{args:?}: {all}");
        assert!(all.contains("FIFO"), "{args:?}: {all}");
    }
    std::fs::remove_file(&fifo).unwrap();
    std::fs::create_dir(&fifo).unwrap();
    let (code, _, err) = oware(&["query", "--dir", d, "3", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"]);
    assert_eq!(code, 7, "{err}");
    assert!(err.contains("is a directory"), "{err}");
}

// 7 and 8. Absurd arguments are refused before any work.
#[test]
fn absurd_thread_counts_and_stone_counts_are_refused_at_once() {
    let t = tempfile::tempdir().unwrap();
    let d = s(t.path());
    for (args, named) in [
        (vec!["build", "--dir", d, "--threads", "100000"], "100000"),
        (vec!["verify", "--dir", d, "--threads", "0"], "--threads"),
        (vec!["build", "--dir", d, "--max-stones", "4294967295"], "4294967295"),
        (vec!["build", "--dir", d, "--max-stones", "49"], "49"),
        (vec!["verify", "--dir", d, "--max-stones", "4294967295"], "4294967295"),
        (vec!["export", "--format", "vu", "--dir", d, "--out", d, "--max-stones", "99"], "99"),
        (vec!["build", "--dir", d, "--max-memory", "1e30"], "1e30"),
    ] {
        // Refused as a usage error (exit 2) naming the argument, before any work: no progress
        // or result on stdout, nothing written (checked after the loop), and the verify runs
        // (on an empty directory, exit 4 if they went on) stop at the argument too.
        let (code, out, err) = oware(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(named), "{args:?}: the refusal does not name {named}: {err}");
        assert!(out.is_empty(), "{args:?} worked before refusing: {out}");
    }
    assert!(std::fs::read_dir(t.path()).unwrap().next().is_none(), "something was written");
}

// 9. A closed stdout does not kill a build.
#[test]
fn a_closed_stdout_does_not_stop_the_build() {
    let t = tempfile::tempdir().unwrap();
    let mut child = bin().args(["build", "--dir", s(t.path()), "--max-stones", "12"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    drop(out); // `| head -1`
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(native_path::<ValuesKind>(t.path(), AWARI, 12).exists(), "the build stopped with its reader");
}

// 10. An unreadable entry is not "absent": verify and stats report it and go on.
#[test]
fn a_link_loop_in_place_of_a_layer_is_unreadable_not_absent() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 12, t.path());
    let ten = native_path::<ValuesKind>(t.path(), AWARI, 10);
    std::fs::remove_file(&ten).unwrap();
    std::os::unix::fs::symlink(&ten, &ten).unwrap();
    let d = s(t.path());
    let (code, out, err) = oware(&["verify", "--dir", d]);
    assert_eq!(code, 7, "{out}\n{err}");
    assert!(out.contains("layer 10: DAMAGED") && out.contains("layer 11:") && out.contains("layer 12:"), "{out}");
    let (code, out, err) = oware(&["stats", "--dir", d]);
    assert_eq!(code, 7, "{out}\n{err}");
    assert!(out.contains("layer 12:"), "{out}");
    let (code, _, err) = oware(&["export", "--format", "vu", "--dir", d, "--out", s(&t.path().join("vu"))]);
    assert_eq!(code, 7, "{err}");
}

// 11. Batch records stay aligned with the input, in JSON too.
#[test]
fn every_batch_line_gets_one_record() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 4, t.path());
    let mut child = crate::common::spawn_oware(&["query", "--json", "--max-plies", "3", "--dir", s(t.path())]);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // A coprocess: write a line, read its record, and so on; a bad line must not stall it.
    for (input, want) in [("1 0 0 0 0 0 0 0 0 0 0 0", "value"), ("bad", "error"), ("9 9 9 9 9 9 0 0 0 0 0 0", "error"), ("0 0 0 0 0 1 0 0 0 0 0 0", "value")] {
        writeln!(stdin, "{input}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["schema_version"], 1, "{line}");
        assert!(v.get(want).is_some(), "{input}: {line}");
        if want == "error" {
            assert_eq!(v["error"]["code"], 3);
            assert_eq!(v["error"]["kind"], "invalid_position");
        }
    }
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(3));
}

// 12. The whole request is planned before any work.
#[test]
fn an_infeasible_build_is_refused_before_any_work() {
    let t = tempfile::tempdir().unwrap();
    // Layer 12's cells (1.3 MB) do not fit in 1 MiB, and out of core needs 4 MiB at least
    // (layers up to 11 fit, their lower layers streamed).
    let (code, out, err) = oware(&["build", "--dir", s(t.path()), "--max-stones", "30", "--max-memory", "1M"]);
    assert_eq!(code, 9, "{err}");
    assert!(err.contains("layer 12 needs"), "{err}");
    // Refused before any work: not even layer 0 was built or reported, and the directory holds
    // no file but the build's lock (no layer, statistics or temporary).
    assert!(!native_path::<ValuesKind>(t.path(), AWARI, 0).exists(), "layers were built before refusing");
    assert!(!out.contains("layer  0"), "layer 0 was built before refusing: {out}");
    let written: Vec<_> = walk(t.path()).into_iter().filter(|p| !p.ends_with(".lock")).collect();
    assert!(written.is_empty(), "written before refusing: {written:?}");
    // --dry-run prints the plan and builds nothing.
    let (code, out, err) = oware(&["build", "--dir", s(t.path()), "--max-stones", "20", "--dry-run", "--json"]);
    assert_eq!(code, 0, "{err}");
    let plan: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(plan["kind"], "plan");
    assert_eq!(plan["layers"].as_array().unwrap().len(), 21);
    assert_eq!(plan["layers"][20]["action"], "build");
    assert!(!native_path::<ValuesKind>(t.path(), AWARI, 0).exists());
}

// 13. Statistics files lost to a crash or a full disk are restored.
#[test]
fn missing_statistics_files_are_restored_and_stale_temporaries_removed() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 6, t.path());
    let rdir = t.path().join("awari");
    std::fs::remove_file(rdir.join("layer-03.json")).unwrap();
    std::fs::write(rdir.join("layer-04.json"), "{ truncated").unwrap();
    std::fs::write(rdir.join(".layer-05.json.Ab12Cd.tmp"), "left by a crash").unwrap();
    let (code, _, err) = oware(&["build", "--dir", s(t.path()), "--max-stones", "6", "--quiet"]);
    assert_eq!(code, 0, "{err}");
    for n in [3, 4] {
        let stats = oware::builder::read_stats(t.path(), AWARI, n).expect("restored");
        assert_eq!(stats.positions, oware::index::layer_size(n));
    }
    assert!(temporaries(&rdir).is_empty(), "{:?}", temporaries(&rdir));
    assert!(err.contains("restored") && err.contains("removed"), "{err}");
}

/// Rewrites a layer's header so its checksum matches its (altered) payload.
fn reseal(path: &Path, rules: Ruleset, n: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    let sum = common::format_checksum(&bytes[4096..]);
    bytes[..HEADER_LEN].copy_from_slice(&Header::new(rules, n, sum).encode());
    std::fs::write(path, bytes).unwrap();
}

// 14. Right codes and messages.
#[test]
fn out_of_range_values_invisible_bytes_and_hints() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 6, t.path());
    let d = s(t.path());
    // A value outside -n..n behind a valid checksum: stats and export refuse it.
    let five = native_path::<ValuesKind>(t.path(), AWARI, 5);
    let pristine = std::fs::read(&five).unwrap();
    let mut bytes = pristine.clone();
    bytes[4096 + 7] = 100;
    std::fs::write(&five, &bytes).unwrap();
    reseal(&five, AWARI, 5);
    let (code, out, err) = oware(&["stats", "--dir", d]);
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(err.contains("value 100, outside -5..=5"), "{err}");
    let (code, _, err) = oware(&["export", "--format", "vu", "--dir", d, "--out", s(&t.path().join("vu"))]);
    assert_eq!(code, 5, "{err}");
    assert!(!t.path().join("vu").join("scores.5").exists());
    std::fs::write(&five, &pristine).unwrap();

    // An invisible byte in a header text field is shown escaped.
    let mut bytes = pristine.clone();
    bytes[55] = 1;
    std::fs::write(&five, &bytes).unwrap();
    let out = bin().args(["verify", "--dir", d]).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(!out.stdout.contains(&1u8) && !out.stderr.contains(&1u8), "raw \\x01 printed");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\\x01"), "{}", String::from_utf8_lossy(&out.stdout));
    std::fs::write(&five, &pristine).unwrap();

    // Published files: a missing scores.N does not suggest `build`.
    let vu = t.path().join("vu2");
    std::fs::create_dir(&vu).unwrap();
    std::fs::write(vu.join("scores.0"), [0u8]).unwrap();
    let (code, _, err) = oware(&["verify", "--format", "vu", "--dir", s(&vu), "--max-stones", "2"]);
    assert_eq!(code, 4, "{err}");
    assert!(!err.contains("oware build"), "{err}");

    // perft that would run for days says so first.
    let mut child = bin().args(["perft", "--depth", "20"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(line.contains("roughly") && (line.contains("days") || line.contains("years")), "{line}");
}

// 15. Values that contradict each other: a damaged layer, not a report.
#[test]
fn contradictory_values_are_reported_as_damage() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 8, t.path());
    let db = oware::probe::Database::open(t.path(), AWARI).unwrap();
    // Find a position whose value is not +8 and store +8 there, checksum made valid again.
    let p: oware::Position = "2 1 1 1 1 0 0 0 0 1 1 0".parse().unwrap();
    let v = db.value(&p).unwrap();
    drop(db);
    let path = native_path::<ValuesKind>(t.path(), AWARI, 8);
    let mut bytes = std::fs::read(&path).unwrap();
    let i = oware::index::rank(p.board()).unwrap() as usize;
    let fake = if v == 8 { 6 } else { 8 };
    bytes[4096 + i] = fake as u8;
    std::fs::write(&path, bytes).unwrap();
    reseal(&path, AWARI, 8);
    let (code, out, err) = oware(&["query", "--dir", s(t.path()), "2", "1", "1", "1", "1", "0", "0", "0", "0", "1", "1", "0"]);
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(out.is_empty(), "a report was printed: {out}");
    assert!(err.contains("contradict") && err.contains("oware verify"), "{err}");
}

/// Lets a running child work for `after`, checks that it is still running (`what` names it in
/// the failure), sends it SIGINT and returns its exit code and standard error.
fn interrupt_after(mut child: Child, after: Duration, what: &str) -> (Option<i32>, String) {
    std::thread::sleep(after);
    assert!(child.try_wait().unwrap().is_none(), "the {what} ended before it could be interrupted");
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

// 17. Ctrl-C: a message, no temporary left, exit 130, and the rerun resumes.
#[test]
fn ctrl_c_stops_a_build_cleanly() {
    let t = tempfile::tempdir().unwrap();
    // Layers 0..16 as a finished earlier run left them: the build goes on with layer 17.
    copy_fixture(AWARI, 16, t.path());
    let mut child = bin().args(["build", "--dir", s(t.path()), "--max-stones", "20", "--quiet"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let marker = native_path::<ValuesKind>(t.path(), AWARI, 17);
    let start = Instant::now();
    while !marker.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the build ended before layer 17 was done");
        // A watchdog against a hanging build, not a speed requirement.
        assert!(start.elapsed() < Duration::from_secs(600), "layer 17 never appeared");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (code, err) = interrupt_after(child, Duration::from_millis(200), "build");
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted: rerun the same command to resume"), "{err}");
    let rdir = t.path().join("awari");
    assert!(temporaries(&rdir).is_empty(), "{:?}", temporaries(&rdir));
    assert!(!native_path::<ValuesKind>(t.path(), AWARI, 20).exists());
    for n in 0..=17 {
        oware::storage::DatabaseDir::native(t.path(), AWARI).unwrap().open_layer::<oware::storage::ValuesKind>(n, true).unwrap();
    }
}

// 17b. Old: Ctrl-C during `verify` said "interrupted: rerun the same command to resume (a build
// keeps its finished layers)", wording meant for a build; a verification does not resume. New:
// commands other than build say that they stopped and left nothing half-written (exit 130 alike).
#[test]
fn ctrl_c_stops_a_verification_without_promising_a_resume() {
    let dir = common::fixture(AWARI, 16);
    // Layers 0..16 to re-derive: seconds of work, interrupted after 300 ms.
    let child = bin().args(["verify", "--dir", s(dir), "--max-stones", "16", "--quiet"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let (code, err) = interrupt_after(child, Duration::from_millis(300), "verification");
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted: stopped (nothing half-written is left"), "{err}");
    assert!(!err.contains("resume"), "{err}");
}

// 16. A board typed as drawn, or as the JSON `--json` prints, is the same position.
#[test]
fn boards_type_back_as_drawn_and_as_json() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 6, t.path());
    let d = s(t.path());
    let (code, drawn, err) = oware(&["query", "--dir", d, "--values-only", "0 0 0 3 0 1 / 1 0 0 0 0 1"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(drawn, "1 0 0 0 0 1 1 0 3 0 0 0\t".to_string() + drawn.split('\t').nth(1).unwrap());
    let (code, json, err) = oware(&["query", "--dir", d, "--values-only", "[1,0,0,0,0,1,1,0,3,0,0,0]"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json, drawn);
    // Named sides: the drawing says South and North, and what it shows types back.
    let (code, out, err) = oware(&["query", "--dir", d, "--south", "1,0,0,0,0,1", "--north", "1,0,3,0,0,0", "--to-move", "south"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("North") && out.contains("South") && out.contains("(to move)"), "{out}");
    let rows: Vec<String> = out.lines().skip(1).take(2).map(|l| l.replace("North", "").replace("South", "").replace("(to move)", "")).collect();
    let typed = format!("{} / {}", rows[0], rows[1]);
    let (code, again, err) = oware(&["query", "--dir", d, &typed, "--to-move", "south"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(again, out);
    let (_, j, _) = oware(&["query", "--dir", d, "--json", "--south", "1,0,0,0,0,1", "--north", "1,0,3,0,0,0", "--to-move", "north"]);
    let v: serde_json::Value = serde_json::from_str(j.trim()).unwrap();
    assert_eq!(v["to_move"], "north");
    assert_eq!(v["absolute"], serde_json::json!([1, 0, 0, 0, 0, 1, 1, 0, 3, 0, 0, 0]));
    assert_eq!(v["position"], serde_json::json!([1, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 1]));
}

// Review findings: a checksum-valid layer with impossible values is rebuilt, not trusted; only
// this tool's temporaries are removed, never a user's dotfile.
#[test]
fn impossible_values_are_rebuilt_and_user_files_kept() {
    let t = tempfile::tempdir().unwrap();
    copy_fixture(AWARI, 5, t.path());
    let pristine = std::fs::read(native_path::<ValuesKind>(t.path(), AWARI, 2)).unwrap();
    let mut bytes = pristine.clone();
    bytes[4096..].fill(0x80);
    std::fs::write(native_path::<ValuesKind>(t.path(), AWARI, 2), &bytes).unwrap();
    reseal(&native_path::<ValuesKind>(t.path(), AWARI, 2), AWARI, 2);
    std::fs::remove_file(native_path::<ValuesKind>(t.path(), AWARI, 4)).unwrap();
    let notes = t.path().join("awari").join(".my-own-notes-file.tmp");
    std::fs::write(&notes, "mine").unwrap();
    let (code, _, err) = oware(&["build", "--dir", s(t.path()), "--max-stones", "5"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("outside -2..=2") && err.contains("rebuilding layer 2"), "{err}");
    assert_eq!(std::fs::read(native_path::<ValuesKind>(t.path(), AWARI, 2)).unwrap(), pristine);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
}
