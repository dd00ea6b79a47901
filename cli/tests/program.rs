//! The program as a user meets it: its version, and its commands against the README's table of
//! commands (a command added or renamed in one place and not the other fails here). Being an
//! integration test of this crate also makes `cargo test --workspace` build the `oware` binary
//! that the library's integration tests (`tests/suite`) run.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn oware(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_oware")).args(args).output().unwrap();
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
/// test -p oware-cli --release --test program` rewrites the committed ones.
#[test]
fn manual_pages_are_generated_and_current() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let out = Command::new(env!("CARGO_BIN_EXE_oware")).args(["man", "--dir"]).arg(&dir).output().unwrap();
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
    let bad = Command::new(env!("CARGO_BIN_EXE_oware")).args(["man", "chess"]).output().unwrap();
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
    assert_eq!(in_repo, written, "docs/man is stale: regenerate it with `OWARE_BLESS=1 cargo test -p oware-cli --release --test program`");
    for name in &written {
        assert!(
            std::fs::read(dir.join(name)).unwrap() == std::fs::read(committed.join(name)).unwrap(),
            "docs/man/{name} is stale: regenerate it with `OWARE_BLESS=1 cargo test -p oware-cli --release --test program`"
        );
    }
}
