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
