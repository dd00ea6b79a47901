//! FIFOs at the paths the program opens (issue 67, items 1 and 2), and signals where a command
//! could still wait: every command ends at once with a message naming the path (exit 7), or, at
//! a checkpoint, discards it with a word; none outlives SIGTERM by more than a second.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::s;

/// Makes a FIFO (named pipe) at `path`.
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

fn spawn(args: &[&str]) -> Child {
    Command::new(common::OWARE).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// What a run ended with: exit code, stdout, stderr, and whether SIGTERM had to be sent.
struct Ended {
    code: i32,
    out: String,
    err: String,
    termed: bool,
}

/// Waits for `child` for at most `before`; then sends it SIGTERM and waits for at most one
/// second more. A process still alive then is killed and the test fails: SIGTERM must end every
/// command at every point within a second.
fn wait_or_term(mut child: Child, before: Duration, what: &str) -> Ended {
    use std::io::Read;
    // Read the pipes on threads, so a full pipe never stalls the program.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let mut termed = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if !termed && start.elapsed() > before {
            // SAFETY: kill(2) of our own child, which has not been waited for.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            termed = true;
        }
        if termed && start.elapsed() > before + Duration::from_secs(1) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{what}: still running a second after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ended { code: status.code().unwrap_or(-1), out: out.join().unwrap(), err: err.join().unwrap(), termed }
}

/// Layers 0..=4 of awari built by the program into `dir` (with their `layer-NN.json`).
fn built(dir: &Path) {
    let (code, _, err) = common::oware(&["build", "--max-stones", "4", "--dir", s(dir), "-q"]);
    assert_eq!(code, 0, "{err}");
}

/// `build` blocked for ever, deaf to SIGTERM, on a FIFO at the lock, at a finished layer's
/// statistics or at a layer's run record: now it names the path at once (exit 7) with what to
/// do, and leaves the FIFO alone.
#[test]
fn build_names_a_fifo_at_its_lock_statistics_or_run_record() {
    for rel in [".lock", "layer-03.json", ".work/layer-05/runs.txt"] {
        let t = tempfile::tempdir().unwrap();
        built(t.path());
        let fifo = t.path().join("awari").join(rel);
        let _ = std::fs::remove_file(&fifo);
        std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
        mkfifo(&fifo);
        // Every layer built checkpointed, so that layer 5 has its work directory.
        let args = ["build", "--max-stones", "5", "--dir", s(t.path()), "--checkpoint-every", "0", "-q"];
        let start = Instant::now();
        let e = wait_or_term(spawn(&args), Duration::from_secs(60), rel);
        assert!(!e.termed, "{rel}: hung ({:.1} s) until SIGTERM: {}", start.elapsed().as_secs_f64(), e.err);
        assert_eq!(e.code, 7, "{rel}: {}{}", e.out, e.err);
        assert!(e.err.contains(&format!("error: {} is a FIFO (named pipe), not a regular file", fifo.display())), "{rel}: {}", e.err);
        assert!(e.err.contains("hint: oware opens only regular files there") && e.err.contains("move it away or remove it"), "{rel}: {}", e.err);
        assert!(std::fs::symlink_metadata(&fifo).is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type())), "{rel}: replaced");
        // Removed, the build goes on.
        std::fs::remove_file(&fifo).unwrap();
        let (code, _, err) = common::oware(&args);
        assert_eq!(code, 0, "{rel}: {err}");
        assert!(t.path().join("awari/layer-05.owdb").is_file());
    }
}

/// A FIFO, or a link to one, at a layer's checkpoint was dropped without a word (or, when the
/// layer was checkpointed, hung the build): it is discarded as every damaged checkpoint is,
/// "discarded (not a regular file)", and the layer built afresh.
#[test]
fn a_fifo_at_a_checkpoint_is_discarded_with_a_word() {
    for (link, every) in [(false, None), (true, None), (false, Some("0")), (true, Some("0"))] {
        let t = tempfile::tempdir().unwrap();
        built(t.path());
        let work = t.path().join("awari/.work/layer-05");
        std::fs::create_dir_all(&work).unwrap();
        let at = work.join("checkpoint.bin");
        if link {
            let fifo = t.path().join("elsewhere");
            mkfifo(&fifo);
            std::os::unix::fs::symlink(&fifo, &at).unwrap();
        } else {
            mkfifo(&at);
        }
        let mut args = vec!["build", "--max-stones", "5", "--dir", s(t.path()), "-q"];
        if let Some(every) = every {
            args.extend(["--checkpoint-every", every]);
        }
        let what = format!("link {link}, checkpoint every {every:?}");
        let e = wait_or_term(spawn(&args), Duration::from_secs(60), &what);
        assert!(!e.termed && e.code == 0, "{what}: {}", e.err);
        let said = format!("layer 5: checkpoint {} discarded (not a regular file); starting the layer afresh", at.display());
        assert!(e.err.contains(&said), "{what}: {}", e.err);
        assert!(t.path().join("awari/layer-05.owdb").is_file() && !at.exists(), "{what}");
    }
    // A directory there is passed over as before (no checkpoint is taken for so short a layer).
    let t = tempfile::tempdir().unwrap();
    built(t.path());
    std::fs::create_dir_all(t.path().join("awari/.work/layer-05/checkpoint.bin")).unwrap();
    let (code, _, err) = common::oware(&["build", "--max-stones", "5", "--dir", s(t.path()), "-q"]);
    assert!(code == 0 && !err.contains("discarded"), "{err}");
}

/// `game --record` reads the file it is given as given: a FIFO is legitimate there (`--record
/// <(...)`), and one that nobody writes to leaves it waiting, where SIGTERM still ends it at
/// once with its message.
#[test]
fn sigterm_ends_a_command_waiting_on_a_fifo_it_was_given() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("record");
    mkfifo(&fifo);
    let d = common::fixture(oware::Ruleset::Awari, 4);
    let args = ["game", "--dir", s(d), "--record", s(&fifo)];
    // With a writer, the record is read through the FIFO.
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, "F\n").unwrap())
    };
    let e = wait_or_term(spawn(&args), Duration::from_secs(60), "game --record FIFO");
    writer.join().unwrap();
    assert!(!e.termed && e.code == 0 && e.out.contains("after 1 ply"), "{}{}", e.out, e.err);
    // Without one, it waits until SIGTERM, which ends it within the second.
    let e = wait_or_term(spawn(&args), Duration::from_millis(500), "game --record FIFO without a writer");
    assert!(e.termed && e.code == 130 && e.err.contains("interrupted"), "{}: {}", e.code, e.err);
}

/// `pack` waits for the manifest's lock while another process holds it: SIGTERM ends the wait
/// within the second, cleanly ("stopped", exit 130).
#[test]
fn sigterm_ends_a_pack_waiting_for_the_manifests_lock() {
    let t = tempfile::tempdir().unwrap();
    let out: PathBuf = t.path().join("packs");
    std::fs::create_dir_all(&out).unwrap();
    let lock = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(out.join(".SHA256SUMS.lock")).unwrap();
    // SAFETY: flock(2) on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(std::os::unix::io::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) }, 0);
    let d = common::fixture(oware::Ruleset::Awari, 4);
    // Layers 0..=2 (`pack --max-stones 4` panics on an arithmetic overflow in the pack codec
    // when the program is built with overflow checks, as tests build it: another defect).
    let child = spawn(&["pack", "--dir", s(d), "--out", s(&out), "--max-stones", "2", "-q"]);
    // Once its last pack is written, it waits for the lock.
    let last = out.join("awari/layer-02.owpk");
    let start = Instant::now();
    while !last.exists() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let e = wait_or_term(child, Duration::from_millis(300), "pack waiting for the manifest's lock");
    assert!(e.termed && e.code == 130 && e.err.contains("interrupted: stopped"), "{}: {}", e.code, e.err);
    assert!(!out.join("SHA256SUMS").exists());
    drop(lock);
}
