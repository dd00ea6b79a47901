//! The program as a user meets it: its version, and its commands against the README's table of
//! commands (a command added or renamed in one place and not the other fails here), its manual
//! pages, and what its command lines refuse.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common::{self, OWARE};

fn oware(args: &[&str]) -> (i32, String) {
    let out = Command::new(OWARE).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn version_names_the_package() {
    let (code, text) = oware(&["--version"]);
    assert_eq!(code, 0);
    assert_eq!(text.trim(), format!("oware {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn every_command_is_in_the_readme_table_and_back() {
    let (code, help) = oware(&["--help"]);
    assert_eq!(code, 0);
    // clap's "Commands:" section: two spaces, the name, spaces, the summary.
    let commands: BTreeSet<String> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 10, "{help}");
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let table = readme.split("## Commands").nth(1).unwrap().split("\n## ").next().unwrap();
    let documented: BTreeSet<String> =
        table.lines().filter_map(|l| l.strip_prefix("| `oware ")).filter_map(|l| l.split([' ', '`']).next()).map(str::to_string).collect();
    assert_eq!(commands, documented, "the commands of `oware --help` and README.md's table differ");
}

/// The manual pages `oware man --dir` writes are the ones committed in `docs/man/` (generated
/// from the command-line definitions: a changed option changes its page). `OWARE_BLESS=1 cargo
/// test -p oware-cli --release --test suite -- program::manual_pages` rewrites the committed ones.
#[test]
fn manual_pages_are_generated_and_current() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let out = Command::new(OWARE).args(["man", "--dir"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut written: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    written.sort();
    // oware.1 and one page per command of `oware --help`.
    let (_, help) = oware(&["--help"]);
    let commands = help.split("Commands:").nth(1).unwrap().lines().skip(1).take_while(|l| !l.trim().is_empty()).count() - 1;
    assert_eq!(written.len(), 1 + commands, "{written:?}");
    for name in &written {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(text.starts_with(".ie \\n(.g .ds Aq") || text.contains(".TH "), "{name} is not a manual page");
    }
    let build = std::fs::read_to_string(dir.join("oware-build.1")).unwrap();
    assert!(build.contains("max\\-stones") && build.contains(".TH oware-build 1 "), "{build}");
    // One page on stdout, and a refusal naming the commands for an unknown one.
    assert_eq!(oware(&["man", "build"]).1, build);
    let bad = Command::new(OWARE).args(["man", "chess"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("the commands are moves, perft"));
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/man");
    if std::env::var_os("OWARE_BLESS").is_some() {
        let _ = std::fs::remove_dir_all(&committed);
        std::fs::create_dir_all(&committed).unwrap();
        for name in &written {
            std::fs::copy(dir.join(name), committed.join(name)).unwrap();
        }
    }
    let mut in_repo: Vec<String> =
        std::fs::read_dir(&committed).map(|d| d.map(|e| e.unwrap().file_name().into_string().unwrap()).collect()).unwrap_or_default();
    in_repo.sort();
    assert_eq!(
        in_repo, written,
        "docs/man is stale: regenerate it with `OWARE_BLESS=1 cargo test -p oware-cli --release --test suite -- program::manual_pages`"
    );
    for name in &written {
        assert!(
            std::fs::read(dir.join(name)).unwrap() == std::fs::read(committed.join(name)).unwrap(),
            "docs/man/{name} is stale: regenerate it with `OWARE_BLESS=1 cargo test -p oware-cli --release --test suite -- program::manual_pages`"
        );
    }
}

/// `build --for TARGET`: a malformed position is an invalid position (3, as for `query`), a
/// stone count past 48 or `--for` with `--max-stones` a bad command line (2); nothing is
/// written.
#[test]
fn build_for_refuses_a_bad_target() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    for (target, code, says) in [
        ("1 2 3", 3, "needs 12 pit counts"),
        ("4 4 4 4 4 4 4 4 4 4 4 x", 3, "invalid position"),
        ("9 9 9 9 9 9 9 9 9 9 9 9", 3, "invalid position"),
        ("", 3, "invalid position"),
        ("49", 2, "--for 49: a layer has 0..=48 stones"),
        ("99999999999999999999", 2, "a layer has 0..=48 stones"),
        ("-1", 2, "--for -1: a stone count is 0..=48, not negative"),
    ] {
        let (got, _, err) = common::oware(&["build", "--for", target, "--dir", dir, "--dry-run"]);
        assert_eq!(got, code, "--for {target:?}: {err}");
        assert!(err.contains(says), "--for {target:?}: {err}");
    }
    let (got, _, err) = common::oware(&["build", "--for", "8", "--max-stones", "8", "--dir", dir]);
    assert_eq!(got, 2, "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing is written");
}

/// `build --for N`: one number, signed or not, is a stone count, never a position: 0..=48 plans
/// those layers, a negative number or one past 48 is a bad command line (2) saying so; only
/// what parses as a position is read as one.
#[test]
fn build_for_reads_one_number_as_a_stone_count() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    for target in ["-1", "-48", " -7 ", "--1"] {
        let (got, _, err) = common::oware(&["build", &format!("--for={target}"), "--dir", dir, "--dry-run"]);
        let (code, says) = if target == "--1" { (3, "invalid position") } else { (2, "a stone count is 0..=48, not negative") };
        assert_eq!(got, code, "--for {target:?}: {err}");
        assert!(err.contains(says) && (code == 3 || !err.contains("position")), "--for {target:?}: {err}");
    }
    for target in ["49", "+49", "4294967296", "00049"] {
        let (got, _, err) = common::oware(&["build", "--for", target, "--dir", dir, "--dry-run"]);
        assert_eq!(got, 2, "--for {target:?}: {err}");
        assert!(err.contains("a layer has 0..=48 stones, not more") && !err.contains("position"), "--for {target:?}: {err}");
    }
    for (target, layers) in [("+8", "layers 0..=8"), ("048", "layers 0..=48"), ("0", "layers 0..=0")] {
        let (got, out, err) = common::oware(&["build", "--for", target, "--dir", dir, "--dry-run", "--max-memory", "1024T"]);
        assert!(got == 0 || err.contains("free, not enough"), "--for {target:?}: {err}");
        assert!(out.contains(layers), "--for {target:?}: {out}");
    }
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing is written");
}

/// The dry-run plan of a target: every form of the same target gives the same plan, with layer
/// N-1 skipped (not needed) in the text and `"action": "skip"` in the JSON.
#[test]
fn build_for_plans_the_layers_a_target_needs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let mut plans = Vec::new();
    for target in ["10", "4 4 2 0 0 0 0 0 0 0 0 0", "[4,4,2,0,0,0,0,0,0,0,0,0]", "S: 4 4 2 0 0 0  N: 0 0 0 0 0 0  S"] {
        let (code, out, err) = common::oware(&["build", "--for", target, "--dir", dir, "--dry-run"]);
        assert_eq!(code, 0, "{target}: {err}");
        assert!(out.contains("layers 0..=10") && out.contains("10 to build, 1 skipped (not needed)"), "{out}");
        assert!(out.contains("layer  9:") && out.contains("skipped, not needed: no position of layer 10 reaches it"), "{out}");
        assert!(!out.contains("MISSING") && !out.contains("missing"), "{out}");
        plans.push(out.replace(|c: char| c.is_ascii_digit(), ""));
    }
    assert!(plans.windows(2).all(|w| w[0] == w[1]), "{plans:?}");
    let (code, out, err) = common::oware(&["build", "--for", "10", "--dir", dir, "--dry-run", "--json"]);
    assert_eq!(code, 0, "{err}");
    let plan: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    let actions: Vec<&str> = plan["layers"].as_array().unwrap().iter().map(|l| l["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["build", "build", "build", "build", "build", "build", "build", "build", "build", "skip", "build"]);
    assert_eq!(plan["layers"][9]["disk_bytes"], 0);
    // 0 and 1 stones: nothing to leave out.
    for n in ["0", "1"] {
        let (code, out, _) = common::oware(&["build", "--for", n, "--dir", dir, "--dry-run"]);
        assert_eq!(code, 0);
        assert!(!out.contains("skipped"), "{out}");
    }
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "a dry run writes nothing");
}

/// Runs `sh -c script` with the program's path as `$0`: (exit code, stdout, stderr).
fn shell(script: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new("sh").arg("-c").arg(script).arg(OWARE).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Item 2. `game --record` reads a record as it comes and stops at its first bad move: an
/// endless record is refused at once, in little memory (here under a 1 GiB address-space
/// limit). It was read whole first: `--record /dev/zero` grew to 5 GB in 6 s, `yes "A a" |
/// game --record -` to 1.1 GB in 3 s (under the limit: killed by the failed allocation).
#[test]
fn game_records_are_read_as_a_stream() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let limited = "ulimit -v 1048576; exec timeout 60 \"$0\" \"$@\"";
    let (code, _, err) = shell(limited, &["game", "--dir", dir, "--record", "/dev/zero"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ply 1 (South to move): '") && err.contains("is not a move: it is a word of more than 64 bytes"), "{err}");
    let (code, _, err) = shell(&format!("yes 'A a' | ( {limited} )"), &["game", "--dir", dir, "--record", "-"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ply 3 (South to move)") && err.contains("empty"), "{err}");
    // Moves after the game's end: the first is named.
    let (code, _, err) = shell(
        &format!("yes 'F' | ( {limited} )"),
        &["game", "--dir", dir, "--from", "S: 0 0 0 0 0 1  N: 1 0 0 0 0 0  S", "--captured", "23:23", "--record", "-"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ply 2 ('F'): the game is already over"), "{err}");
    // A record as before: comment lines, move numbers, concatenated houses, commas; a run of
    // house letters longer than any word is read as moves.
    let record = tmp.path().join("game.txt");
    std::fs::write(&record, "# a game\n  # indented comment F F F\n1. F b, 2. D;e\nAf\n").unwrap();
    let (code, out, err) = common::oware(&["game", "--dir", dir, "--record", record.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let houses: Vec<&str> = doc["plies"].as_array().unwrap().iter().map(|p| p["house"].as_str().unwrap()).collect();
    assert_eq!(houses, ["F", "b", "D", "e", "A", "f"]);
    let (code, _, err) = common::oware(&["game", "--dir", dir, "--from", "S: 1 0 0 0 0 0  N: 1 0 0 0 0 0  S", &"Aa".repeat(40)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ply 2") || err.contains("ply 3"), "{err}");
}

/// Item 6. In `oware play`, `b` is North's house b (and South's B), not a command: it played a
/// best move instead. The commands are in `--help`.
#[test]
fn play_takes_house_b() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(OWARE)
        .args(["play", "--computer", "nobody", "--depth", "1", "--dir", tmp.path().to_str().unwrap()])
        .args(["--from", "S: 1 1 1 1 1 1  N: 1 1 1 1 1 1  N"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"b\nq\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!text.contains("North plays "), "b played the best move: {text}");
    let after_b = text.split("North to move> b\n").nth(1).unwrap_or_else(|| panic!("{text}"));
    // House b sown: one stone into c.
    assert!(after_b.contains("  North   1   1   1   2   0   1\n") && after_b.contains("South to move> "), "{text}");
    let (code, help) = oware(&["play", "--help"]);
    assert_eq!(code, 0);
    for words in ["h, hint", "*, best", "u, undo", "n, new", "?, help", "q, quit, exit", "A..F, a..f"] {
        assert!(help.contains(words), "{words}: {help}");
    }
}

/// Item 12. `--client-timeout 0` and `--shutdown-timeout 0` are refused with a range that is
/// true: "'0' is not a number of seconds in 0..86400" named a range holding 0.
#[test]
fn serve_timeouts_name_their_true_range() {
    for option in ["--client-timeout", "--shutdown-timeout"] {
        for bad in ["0", "-1", "86401", "x"] {
            let (code, _, err) = common::oware(&["serve", &format!("{option}={bad}")]);
            assert_eq!(code, 2, "{err}");
            assert!(err.contains(&format!("'{bad}' is not a number of seconds more than 0 and at most 86400")), "{option} {bad}: {err}");
        }
    }
}
