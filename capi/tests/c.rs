//! The C interface: the committed header matches what cbindgen generates from `src/lib.rs`, and
//! the C example (`examples/c/probe.c`) compiles against it, links `liboware.so` and probes the
//! published example position; plus bad input, threads and a pack directory from C.

use std::path::{Path, PathBuf};
use std::process::Command;

use oware_core::build::{self, BuildConfig, Silent};
use oware_core::Ruleset;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `target/<profile>` of this test run, with `liboware.so` built there (cargo does not build a
/// cdylib for integration tests, so the first call runs `cargo build -p oware-capi`).
fn lib_dir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
            let mut cargo = Command::new(env!("CARGO"));
            cargo.args(["build", "-q", "-p", "oware-capi"]).current_dir(root());
            if dir.file_name().is_some_and(|n| n == "release") {
                cargo.arg("--release");
            }
            assert!(cargo.status().unwrap().success(), "cargo build -p oware-capi");
            assert!(dir.join("liboware.so").is_file(), "liboware.so not built in {}", dir.display());
            dir
        })
        .clone()
}

#[test]
fn header_is_current() {
    let crate_dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(Path::new(crate_dir).join("cbindgen.toml")).unwrap();
    let mut generated = Vec::new();
    cbindgen::Builder::new().with_crate(crate_dir).with_config(config).generate().unwrap().write(&mut generated);
    let path = root().join("include/oware.h");
    if std::env::var_os("OWARE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(committed == generated, "include/oware.h is stale: regenerate it with `OWARE_BLESS=1 cargo test -p oware-capi --release` and commit it");
}

fn compile(source: &Path, out: &Path) {
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-pthread", "-I"])
        .arg(root().join("include"))
        .arg(source)
        .arg("-L")
        .arg(lib_dir())
        .args(["-loware", "-o"])
        .arg(out)
        .status()
        .expect("a C compiler (cc)");
    assert!(status.success(), "compiling {}", source.display());
}

fn run(exe: &Path, args: &[&str]) -> std::process::Output {
    Command::new(exe).args(args).env("LD_LIBRARY_PATH", lib_dir()).output().unwrap()
}

#[test]
fn the_c_example_probes_the_published_position() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let config = BuildConfig { rules: Ruleset::Awari, max_stones: 16, dir: db.clone(), max_memory: None, ..Default::default() };
    build::build(&config, &Silent).unwrap();
    let exe = tmp.path().join("probe");
    compile(&root().join("examples/c/probe.c"), &exe);
    let out = run(&exe, &[db.to_str().unwrap(), "awari"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    // The published facts: value 0, moves worth -1 -1 -2 -2 -2 0.
    assert!(text.contains("value 0\nmoves 0:-1 1:-1 2:-2 3:-2 4:-2 5:+0\n"), "{text}");
    assert!(text.contains("49 stones: error 3: "), "{text}");
    // A missing layer, an unknown ruleset, a file for a directory: error codes and messages.
    let out = run(&exe, &[tmp.path().join("nothing").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("layer 16 of awari is not built"));
    let out = run(&exe, &[db.to_str().unwrap(), "chess"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("chess"));
    let out = run(&exe, &[exe.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn null_pointers_bad_utf8_and_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let config = BuildConfig { rules: Ruleset::Awari, max_stones: 8, dir: db.clone(), max_memory: None, ..Default::default() };
    build::build(&config, &Silent).unwrap();
    let source = tmp.path().join("t.c");
    std::fs::write(
        &source,
        r#"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "oware.h"
static oware_db *db;
static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        uint8_t pits[12] = {0};
        pits[i % 12] = 1 + i % 4; pits[(i / 12) % 6] += 1 + i % 3;
        int8_t v; int8_t vals[6]; uint8_t legal[6];
        if (oware_value(db, pits, &v) != 0) return (void *)1;
        if (oware_move_values(db, pits, vals, legal) != 0) return (void *)1;
        int8_t best = -100; int any = 0;
        for (int k = 0; k < 6; k++) if (legal[k]) { any = 1; if (vals[k] > best) best = vals[k]; }
        if (any && best != v) return (void *)2;
    }
    return NULL;
}
int main(int argc, char **argv) {
    char err[8];
    /* NULL and invalid UTF-8 arguments, a tiny error buffer (truncated, NUL-terminated). */
    if (oware_open(NULL, NULL, err, sizeof err) != NULL || strlen(err) != 7) return 10;
    if (oware_open("\xff\xfe", "awari", err, sizeof err) != NULL) return 11;
    if (oware_open(argv[1], "\xff", NULL, 0) != NULL) return 12;
    db = oware_open(argv[1], NULL, err, sizeof err);
    if (db == NULL) return 13;
    uint8_t pits[12] = {1};
    int8_t v;
    if (oware_value(NULL, pits, &v) != 2 || oware_value(db, NULL, &v) != 2 || oware_value(db, pits, NULL) != 2) return 14;
    if (oware_move_values(db, pits, NULL, NULL) != 2) return 15;
    char msg[256];
    if (oware_last_error(msg, sizeof msg) == 0 || strstr(msg, "NULL") == NULL) return 16;
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++) { void *r; pthread_join(t[i], &r); if (r != NULL) return 20 + (int)(long)r; }
    oware_close(db);
    oware_close(NULL);
    (void)argc;
    printf("ok\n");
    return 0;
}
"#,
    )
    .unwrap();
    let exe = tmp.path().join("t");
    compile(&source, &exe);
    let out = run(&exe, &[db.to_str().unwrap()]);
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
}
