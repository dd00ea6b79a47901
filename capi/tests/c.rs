//! The C interface: the committed header matches what cbindgen generates from `src/lib.rs`, and
//! the C example (`examples/c/probe.c`) compiles against it, links `liboware.so` and probes the
//! published example position; plus bad input, threads and a pack directory from C, and
//! `oware_verify` on a good, a damaged and an empty directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use oware_core::builder::{self, BuildConfig, Silent};
use oware_core::Ruleset;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `target/<profile>` of this test run, with `liboware.so` built there (cargo does not build a
/// cdylib for integration tests, so the first call runs `cargo build -p oware-capi`) and the link
/// of its SONAME beside it.
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
            // Programs linked against it need its SONAME (capi/build.rs) at run time, as an
            // installed library has it (scripts/install-c): the link beside it.
            let abi = if env!("CARGO_PKG_VERSION_MAJOR") == "0" {
                format!("0.{}", env!("CARGO_PKG_VERSION_MINOR"))
            } else {
                env!("CARGO_PKG_VERSION_MAJOR").to_string()
            };
            let link = dir.join(format!("liboware.so.{abi}"));
            if std::fs::read_link(&link).is_err() {
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink("liboware.so", &link).unwrap();
            }
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

/// Copies the directory `from` to `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn run(exe: &Path, args: &[&str]) -> std::process::Output {
    Command::new(exe).args(args).env("LD_LIBRARY_PATH", lib_dir()).output().unwrap()
}

#[test]
fn the_c_example_probes_the_published_position() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let config = BuildConfig { rules: Ruleset::Awari, max_stones: 16, dir: db.clone(), max_memory: None, ..Default::default() };
    builder::build(&config, &Silent).unwrap();
    let exe = tmp.path().join("probe");
    compile(&root().join("examples/c/probe.c"), &exe);
    let out = run(&exe, &[db.to_str().unwrap(), "awari"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    // The published facts: value 0, moves worth -1 -1 -2 -2 -2 0.
    assert!(text.contains("value 0\nmoves 0:-1 1:-1 2:-2 3:-2 4:-2 5:+0\n"), "{text}");
    assert!(text.contains("49 stones: error 3: "), "{text}");
    // A missing directory (refused at open), a missing layer, an unknown ruleset, a file for a
    // directory: error codes and messages.
    let nothing = tmp.path().join("nothing");
    let out = run(&exe, &[nothing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("oware_open: {}: No such file or directory", nothing.display())));
    std::fs::create_dir(&nothing).unwrap();
    let out = run(&exe, &[nothing.to_str().unwrap()]);
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
    builder::build(&config, &Silent).unwrap();
    let source = tmp.path().join("t.c");
    std::fs::write(
        &source,
        r#"
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
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
    /* A directory that does not exist, or no path at all, is refused at open with its message;
       a directory whose name is not UTF-8 opens (paths are bytes). */
    if (oware_open("/nonexistent/oware", NULL, msg, sizeof msg) != NULL || strstr(msg, "/nonexistent/oware") == NULL) return 17;
    if (oware_open("", NULL, msg, sizeof msg) != NULL || strlen(msg) == 0) return 18;
    oware_db *raw = oware_open(argv[2], NULL, msg, sizeof msg);
    if (raw == NULL || oware_value(raw, pits, &v) != 0) return 19;
    /* Read with pread: unknown flags refused; a truncated layer never ends the process. */
    if (oware_open_with(argv[1], NULL, 0x80, msg, sizeof msg) != NULL || strstr(msg, "unknown flags") == NULL) return 40;
    oware_db *safe = oware_open_with(argv[2], NULL, OWARE_OPEN_PREAD, msg, sizeof msg);
    /* Layer 8's index 75000: its value lies in the file's 19th page. */
    uint8_t far[12] = {0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 4};
    int8_t before, mapped;
    if (safe == NULL || oware_value(safe, far, &before) != 0 || oware_value(raw, far, &mapped) != 0 || mapped != before) return 41;
    /* Layer 8 truncated to one page under both handles: the mapped one, not read after, has it
       named by oware_check_open_files; the pread one reads it again without SIGBUS (a mapped
       read of that page would end this process). */
    if (oware_check_open_files(raw) != 0 || oware_check_open_files(NULL) != 2) return 30;
    if (truncate(argv[3], 4096) != 0) return 31;
    if (oware_check_open_files(raw) != 5) return 32;
    int8_t after;
    int rc_after = oware_value(safe, far, &after);
    if ((rc_after != 0 && rc_after != 5) || (rc_after == 0 && after != before)) return 42;
    if (oware_check_open_files(safe) != 5) return 43;
    oware_close(safe);
    if (oware_last_error(msg, sizeof msg) == 0 || strstr(msg, "layer-08.owdb") == NULL) return 33;
    oware_close(raw);
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
    // The same layers under a name that is not UTF-8.
    let raw = tmp.path().join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"db-\xff\xfe"));
    copy_tree(&db, &raw);
    // The file the program truncates after probing it.
    let out = Command::new(&exe).arg(&db).arg(&raw).arg(raw.join("awari/layer-08.owdb")).env("LD_LIBRARY_PATH", lib_dir()).output().unwrap();
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
}

#[test]
fn verify_reports_good_and_damaged_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good");
    let config = BuildConfig { rules: Ruleset::Awari, max_stones: 8, dir: good.clone(), max_memory: None, ..Default::default() };
    builder::build(&config, &Silent).unwrap();
    // A copy with one payload byte of layer 8 flipped.
    let bad = tmp.path().join("bad");
    std::fs::create_dir_all(bad.join("awari")).unwrap();
    for entry in std::fs::read_dir(good.join("awari")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), bad.join("awari").join(entry.file_name())).unwrap();
    }
    let layer = bad.join("awari/layer-08.owdb");
    let mut bytes = std::fs::read(&layer).unwrap();
    let k = bytes.len() - 100;
    bytes[k] ^= 1;
    std::fs::write(&layer, bytes).unwrap();

    let source = tmp.path().join("v.c");
    std::fs::write(
        &source,
        r#"
#include <stdio.h>
#include <string.h>
#include "oware.h"
static char report[1 << 16];
int main(int argc, char **argv) {
    size_t n = 0;
    (void)argc;
    /* A good directory: 0 and a report saying ok. */
    int rc = oware_verify(argv[1], NULL, -1, -1, 0, 0, report, sizeof report, &n);
    if (rc != OWARE_OK) return 10;
    if (n != strlen(report) || strstr(report, "\"ok\":true") == NULL || strstr(report, "\"outcome\":\"ok\"") == NULL) return 11;
    /* A range, and a tiny buffer: truncated, NUL-terminated, the full length told. */
    char tiny[16];
    if (oware_verify(argv[1], "awari", 7, 8, 0, 0, tiny, sizeof tiny, &n) != OWARE_OK) return 12;
    if (strlen(tiny) != 15 || n <= 15) return 13;
    if (oware_verify(argv[1], "awari", 0, 5, 0, 0, NULL, 0, NULL) != OWARE_OK) return 14;
    /* The damaged copy: its code and report. */
    rc = oware_verify(argv[2], "awari", -1, -1, 0, 0, report, sizeof report, &n);
    if (rc != OWARE_DAMAGED) return 20;
    if (strstr(report, "\"outcome\":\"damaged_layer\"") == NULL || strstr(report, "\"status\":\"damaged\"") == NULL) return 21;
    char msg[512];
    if (oware_last_error(msg, sizeof msg) == 0 || strstr(msg, "layer-08.owdb") == NULL) return 22;
    /* No report: bad arguments, nothing on disk. */
    if (oware_verify(NULL, NULL, -1, -1, 0, 0, report, sizeof report, &n) != OWARE_BAD_ARGUMENT || n != 0 || report[0] != 0) return 30;
    if (oware_verify(argv[1], "chess", -1, -1, 0, 0, NULL, 0, &n) != OWARE_BAD_ARGUMENT) return 31;
    if (oware_verify(argv[1], NULL, 5, 3, 0, 0, NULL, 0, &n) != OWARE_BAD_ARGUMENT) return 32;
    if (oware_verify(argv[1], NULL, 0, 49, 0, 0, NULL, 0, &n) != OWARE_BAD_ARGUMENT) return 33;
    if (oware_verify(argv[3], NULL, -1, -1, 0, 0, report, sizeof report, &n) != OWARE_IO || n != 0) return 34;
    if (oware_verify(argv[4], NULL, -1, -1, 0, 0, report, sizeof report, &n) != OWARE_MISSING_LAYER || n != 0) return 36;
    /* Bounds required but never built: missing. */
    rc = oware_verify(argv[1], NULL, -1, -1, 1, 0, report, sizeof report, &n);
    if (rc != OWARE_MISSING_LAYER || strstr(report, "\"outcome\":\"missing_bounds\"") == NULL) return 35;
    /* Depths to capture required but never built: missing; not required, none checked. */
    rc = oware_verify(argv[1], NULL, -1, -1, 0, 1, report, sizeof report, &n);
    if (rc != OWARE_MISSING_LAYER || strstr(report, "\"outcome\":\"missing_dtc\"") == NULL) return 37;
    if (oware_verify(argv[1], NULL, -1, -1, 0, 0, report, sizeof report, &n) != OWARE_OK || strstr(report, "\"dtc\":[]") == NULL) return 38;
    printf("ok\n");
    return 0;
}
"#,
    )
    .unwrap();
    let exe = tmp.path().join("v");
    compile(&source, &exe);
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run(&exe, &[good.to_str().unwrap(), bad.to_str().unwrap(), tmp.path().join("nothing").to_str().unwrap(), empty.to_str().unwrap()]);
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
}

/// `scripts/install-c PREFIX` installs the header, the shared library (SONAME and versioned
/// links) and the static one with `oware.pc`; `examples/c/probe.c` compiles with `cc $(pkg-config
/// --cflags --libs oware)` against the prefix and needs `liboware.so.0.MINOR`, and links
/// statically with `pkg-config --static` too; both probe the published position.
#[test]
fn the_c_library_installs_and_links_through_pkg_config() {
    for tool in ["pkg-config", "readelf"] {
        if Command::new(tool).arg("--version").output().is_err() {
            // .ci/run installs both (apt-get install pkg-config binutils).
            eprintln!("the_c_library_installs_and_links_through_pkg_config: {tool} not found: skipped (apt-get install pkg-config binutils)");
            return;
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let config = BuildConfig { rules: Ruleset::Awari, max_stones: 16, dir: db.clone(), max_memory: None, ..Default::default() };
    builder::build(&config, &Silent).unwrap();
    let prefix = tmp.path().join("prefix");
    let status =
        Command::new("bash").arg(root().join("scripts/install-c")).arg(&prefix).env("OWARE_NO_BUILD", "1").env("OWARE_LIB_DIR", lib_dir()).status().unwrap();
    assert!(status.success(), "scripts/install-c");
    let version = env!("CARGO_PKG_VERSION");
    let abi =
        if env!("CARGO_PKG_VERSION_MAJOR") == "0" { format!("0.{}", env!("CARGO_PKG_VERSION_MINOR")) } else { env!("CARGO_PKG_VERSION_MAJOR").to_string() };
    let lib = prefix.join("lib");
    assert_eq!(std::fs::read_link(lib.join("liboware.so")).unwrap(), Path::new(&format!("liboware.so.{abi}")));
    assert_eq!(std::fs::read_link(lib.join(format!("liboware.so.{abi}"))).unwrap(), Path::new(&format!("liboware.so.{version}")));
    assert!(lib.join("liboware.a").is_file() && prefix.join("include/oware.h").is_file());
    let pkg_config = |args: &[&str]| -> Vec<String> {
        let out = Command::new("pkg-config")
            .args(args)
            .arg("oware")
            .env("PKG_CONFIG_PATH", lib.join("pkgconfig"))
            .output()
            .expect("pkg-config (apt-get install pkg-config)");
        assert!(out.status.success(), "pkg-config {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().split_whitespace().map(str::to_string).collect()
    };
    assert_eq!(pkg_config(&["--modversion"]), [version]);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let example = root().join("examples/c/probe.c");
    // Shared: the program needs the SONAME, found through the prefix.
    let shared = tmp.path().join("probe-shared");
    let status = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2"])
        .arg(&example)
        .args(pkg_config(&["--cflags", "--libs"]))
        .arg("-o")
        .arg(&shared)
        .status()
        .unwrap();
    assert!(status.success(), "cc $(pkg-config --cflags --libs oware)");
    let needed = Command::new("readelf").arg("-d").arg(&shared).output().expect("readelf");
    assert!(String::from_utf8_lossy(&needed.stdout).contains(&format!("[liboware.so.{abi}]")), "{}", String::from_utf8_lossy(&needed.stdout));
    // Static: liboware.a and the system libraries of Libs.private.
    let fixed = tmp.path().join("probe-static");
    let private: Vec<String> = pkg_config(&["--static", "--libs"]).into_iter().filter(|f| f != "-loware").collect();
    let status = Command::new(&cc)
        .args(["-std=c99", "-O2"])
        .arg(&example)
        .args(pkg_config(&["--cflags"]))
        .arg("-o")
        .arg(&fixed)
        .args(["-Wl,-Bstatic", "-loware", "-Wl,-Bdynamic"])
        .args(private)
        .status()
        .unwrap();
    assert!(status.success(), "static link with pkg-config --static");
    for (exe, env) in [(&shared, Some(lib.as_path())), (&fixed, None)] {
        let mut cmd = Command::new(exe);
        cmd.arg(&db).arg("awari").env_remove("LD_LIBRARY_PATH");
        if let Some(dir) = env {
            cmd.env("LD_LIBRARY_PATH", dir);
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("value 0\nmoves 0:-1 1:-1 2:-2 3:-2 4:-2 5:+0\n"),
            "{}: {text}{}",
            exe.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The root probe and the largest layer, as an engine uses them: on every position of layers
/// 0..8 the root probe's value and moves equal `oware_value` and `oware_move_values`, and its best
/// pit is the lowest of the largest value; `oware_largest` follows the layers present.
#[test]
fn root_probe_and_largest_layer() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let config = BuildConfig { rules: Ruleset::Awari, max_stones: 8, dir: db.clone(), max_memory: None, ..Default::default() };
    builder::build(&config, &Silent).unwrap();
    let source = tmp.path().join("r.c");
    std::fs::write(
        &source,
        r#"
#include <stdio.h>
#include "oware.h"
int main(int argc, char **argv) {
    (void)argc;
    oware_db *db = oware_open(argv[1], NULL, NULL, 0);
    if (db == NULL) return 10;
    if (oware_largest(db) != 8 || oware_largest(NULL) != -1) return 11;
    long checked = 0;
    for (unsigned long code = 0; code < 2000000UL; code += 7) {
        /* A spread of boards of at most 8 stones. */
        uint8_t pits[12] = {0};
        unsigned long c = code;
        int stones = 0;
        for (int i = 0; i < 12 && stones < 8; i++) { int k = (int)(c % 3); c /= 3; if (stones + k > 8) k = 8 - stones; pits[i] = (uint8_t)k; stones += k; }
        int8_t value, root, vals[6], rvals[6];
        uint8_t legal[6], rlegal[6];
        int best;
        if (oware_value(db, pits, &value) != 0 || oware_move_values(db, pits, vals, legal) != 0) return 12;
        if (oware_probe_root(db, pits, &root, rvals, rlegal, &best) != 0) return 13;
        if (root != value) return 14;
        int any = 0, want = -1; int8_t top = -100;
        for (int k = 0; k < 6; k++) {
            if (rvals[k] != vals[k] || rlegal[k] != legal[k]) return 15;
            if (legal[k]) { any = 1; if (vals[k] > top) { top = vals[k]; want = k; } }
        }
        if (best != want || (any && top != root)) return 16;
        checked++;
    }
    int8_t v, vs[6]; uint8_t l[6]; int b;
    uint8_t pits[12] = {0};
    if (oware_probe_root(NULL, pits, &v, vs, l, &b) != 2 || oware_probe_root(db, pits, &v, vs, l, NULL) != 2) return 17;
    oware_close(db);
    printf("%ld\n", checked);
    return 0;
}
"#,
    )
    .unwrap();
    let exe = tmp.path().join("r");
    compile(&source, &exe);
    let out = run(&exe, &[db.to_str().unwrap()]);
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).trim().parse::<u64>().unwrap() > 200_000);
    // A gap: layer 5 removed, the largest probe-able layer is 4.
    std::fs::remove_file(db.join("awari/layer-05.owdb")).unwrap();
    let source2 = tmp.path().join("l.c");
    std::fs::write(
        &source2,
        "#include \"oware.h\"\nint main(int c, char **v) { (void)c; oware_db *db = oware_open(v[1], NULL, NULL, 0); return db ? oware_largest(db) : 100; }\n",
    )
    .unwrap();
    let exe2 = tmp.path().join("l");
    compile(&source2, &exe2);
    assert_eq!(run(&exe2, &[db.to_str().unwrap()]).status.code(), Some(4));
}

/// The depths to capture from C: on a spread of positions of layers 0..8, `oware_dtc` is -1
/// exactly where `oware_value` is 0, and otherwise follows its definition from `oware_move_dtcs`
/// and `oware_move_values` (1 + the least depth of the value-keeping moves for the winner, the
/// greatest for the loser, 0 with no legal move); a capture in one is 1; NULL pointers, an
/// invalid board, a layer without values and a directory without dtc files give their codes,
/// the last naming `oware build --dtc`.
#[test]
fn depths_to_capture() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let config = BuildConfig {
        rules: Ruleset::Awari,
        max_stones: 8,
        dir: db.clone(),
        max_memory: None,
        companions: vec![oware_core::error::FileContent::Dtc],
        ..Default::default()
    };
    builder::build(&config, &Silent).unwrap();
    // The same values without the depths.
    let plain = tmp.path().join("plain");
    std::fs::create_dir_all(plain.join("awari")).unwrap();
    for entry in std::fs::read_dir(db.join("awari")).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("layer-") {
            std::fs::copy(entry.path(), plain.join("awari").join(entry.file_name())).unwrap();
        }
    }
    let source = tmp.path().join("d.c");
    std::fs::write(
        &source,
        r#"
#include <stdio.h>
#include <string.h>
#include "oware.h"
int main(int argc, char **argv) {
    (void)argc;
    oware_db *db = oware_open(argv[1], NULL, NULL, 0);
    oware_db *plain = oware_open(argv[2], NULL, NULL, 0);
    if (db == NULL || plain == NULL) return 10;
    /* Pit 5 sows one stone onto the opponent's 1 and captures 2: depth 1, that move 0. */
    uint8_t one[12] = {0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0, 0};
    int32_t d = 99, ds[6];
    uint8_t legal[6];
    if (oware_dtc(db, one, &d) != OWARE_OK || d != 1) return 11;
    if (oware_move_dtcs(db, one, ds, legal) != OWARE_OK || !legal[5] || ds[5] != 0 || legal[0] || ds[0] != -1) return 12;
    /* The empty board: value 0, no depth. */
    uint8_t empty[12] = {0};
    if (oware_dtc(db, empty, &d) != OWARE_OK || d != -1) return 13;
    long checked = 0, zero = 0;
    for (unsigned long code = 0; code < 2000000UL; code += 7) {
        uint8_t pits[12] = {0};
        unsigned long c = code;
        int stones = 0;
        for (int i = 0; i < 12 && stones < 8; i++) { int k = (int)(c % 3); c /= 3; if (stones + k > 8) k = 8 - stones; pits[i] = (uint8_t)k; stones += k; }
        int8_t value, vals[6];
        uint8_t vlegal[6];
        if (oware_value(db, pits, &value) != 0 || oware_move_values(db, pits, vals, vlegal) != 0) return 14;
        if (oware_dtc(db, pits, &d) != 0 || oware_move_dtcs(db, pits, ds, legal) != 0) return 15;
        if (value == 0) { if (d != -1) return 16; zero++; checked++; continue; }
        int any = 0; int32_t want = -1;
        for (int k = 0; k < 6; k++) {
            if (legal[k] != vlegal[k]) return 17;
            if (!legal[k] && ds[k] != -1) return 18;
            if (!legal[k] || vals[k] != value) continue;
            if (ds[k] < 0) return 19;
            if (!any || (value > 0 ? ds[k] < want : ds[k] > want)) want = ds[k];
            any = 1;
        }
        if (d != (any ? want + 1 : 0)) return 20;
        checked++;
    }
    /* Bad arguments, an invalid board, a layer not built, depths not built. */
    if (oware_dtc(NULL, one, &d) != 2 || oware_dtc(db, NULL, &d) != 2 || oware_dtc(db, one, NULL) != 2) return 30;
    if (oware_move_dtcs(NULL, one, ds, legal) != 2 || oware_move_dtcs(db, one, NULL, legal) != 2 || oware_move_dtcs(db, one, ds, NULL) != 2) return 31;
    uint8_t full[12] = {48, 1};
    d = 99;
    if (oware_dtc(db, full, &d) != OWARE_INVALID_POSITION || d != 99) return 32;
    uint8_t nine[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    if (oware_dtc(db, nine, &d) != OWARE_MISSING_LAYER || oware_move_dtcs(db, nine, ds, legal) != OWARE_MISSING_LAYER) return 33;
    char msg[512];
    if (oware_dtc(plain, one, &d) != OWARE_MISSING_LAYER || d != 99) return 34;
    if (oware_last_error(msg, sizeof msg) == 0 || strstr(msg, "oware build --dtc") == NULL || strstr(msg, "layer 4") == NULL) return 35;
    /* Moves that capture need no depth file; a quiet move needs its child's. */
    if (oware_move_dtcs(plain, one, ds, legal) != OWARE_OK || ds[4] != 0 || ds[5] != 0) return 36;
    uint8_t quiet[12] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (oware_move_dtcs(plain, quiet, ds, legal) != OWARE_MISSING_LAYER || oware_move_dtcs(db, quiet, ds, legal) != OWARE_OK) return 37;
    /* The values are still there. */
    int8_t v, w;
    if (oware_value(plain, one, &v) != 0 || oware_value(db, one, &w) != 0 || v != w || v <= 0) return 38;
    oware_close(db);
    oware_close(plain);
    printf("%ld %ld\n", checked, zero);
    return 0;
}
"#,
    )
    .unwrap();
    let exe = tmp.path().join("d");
    compile(&source, &exe);
    let out = run(&exe, &[db.to_str().unwrap(), plain.to_str().unwrap()]);
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let counts: Vec<u64> = text.split_whitespace().map(|w| w.parse().unwrap()).collect();
    // Positions of both kinds were checked.
    assert!(counts[0] > 200_000 && counts[1] > 0 && counts[1] < counts[0], "{text}");
}

/// The search engine from C: inside layers 0..8 its answer is exact and equals the root probe's
/// value with a best move; above them (the start position) it is an estimate with a legal move;
/// a fixed depth gives the same answer twice; bad arguments give their codes.
#[test]
fn the_engine_answers_from_any_position() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let config = BuildConfig { rules: Ruleset::Awari, max_stones: 8, dir: db.clone(), max_memory: None, ..Default::default() };
    builder::build(&config, &Silent).unwrap();
    let source = tmp.path().join("a.c");
    std::fs::write(
        &source,
        r#"
#include <stdio.h>
#include "oware.h"
int main(int argc, char **argv) {
    (void)argc;
    oware_db *db = oware_open(argv[1], NULL, NULL, 0);
    if (db == NULL) return 10;
    int best, score, exact, depth;
    uint8_t inside[12] = {0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0, 0};
    int8_t value, vals[6]; uint8_t legal[6]; int root_best;
    if (oware_probe_root(db, inside, &value, vals, legal, &root_best) != 0) return 11;
    if (oware_analyse(db, inside, 0, 4, &best, &score, &exact, &depth) != 0) return 12;
    if (!exact || score != 100 * value || best < 0 || !legal[best] || vals[best] != value) return 13;
    uint8_t start[12] = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};
    int b2, s2, e2, d2;
    if (oware_analyse(db, start, 0, 6, &best, &score, &exact, &depth) != 0) return 14;
    if (exact || depth != 6 || best < 0 || best > 5) return 15;
    /* The same search from a cold table (a handle of its own) gives the same answer; the first
       handle's table is warm now, and nodes of the line take no unproven entry of it. */
    oware_db *cold = oware_open(argv[1], NULL, NULL, 0);
    if (cold == NULL) return 10;
    if (oware_analyse(cold, start, 0, 6, &b2, &s2, &e2, &d2) != 0 || b2 != best || s2 != score) return 16;
    oware_close(cold);
    if (oware_analyse(db, start, 50, 0, &best, &score, &exact, &depth) != 0 || best < 0 || depth < 1) return 17;
    if (oware_analyse(db, start, 0, 0, &best, &score, &exact, &depth) != 2) return 18;
    if (oware_analyse(NULL, start, 50, 0, &best, &score, &exact, &depth) != 2) return 19;
    uint8_t bad[12] = {40, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    if (oware_analyse(db, bad, 50, 0, &best, &score, &exact, &depth) != 3) return 20;
    /* A game's history, the 11 positions since its last capture (oldest first, mover-first,
       each leading to the next by a move that captures nothing): E leads back to the first,
       with the same side to move, so the game ends there, the stones split evenly (0), where
       the layers say -3. */
    uint8_t root[12] = {0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1};
    uint8_t before[12 * 11] = {
        0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1,
        1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0,
        0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1,
        0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0,
        0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1,
        0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0,
        0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1,
        0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0,
        0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1,
        0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1,
        1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
    if (oware_analyse(db, root, 0, 4, &best, &score, &exact, &depth) != 0 || score != -300) return 21;
    if (oware_analyse_game(db, root, before, 11, 0, 4, &best, &score, &exact, &depth) != 0) return 22;
    if (score != 0 || !exact || best != 4) return 23;
    if (oware_analyse_game(db, root, NULL, 1, 0, 4, &best, &score, &exact, &depth) != 2) return 24;
    if (oware_analyse_game(db, root, bad, 1, 0, 4, &best, &score, &exact, &depth) != 3) return 25;
    /* A made-up history (no move leads from it to the root): refused. */
    if (oware_analyse_game(db, root, before, 1, 0, 4, &best, &score, &exact, &depth) != 2) return 26;
    oware_close(db);
    printf("ok\n");
    return 0;
}
"#,
    )
    .unwrap();
    let exe = tmp.path().join("a");
    compile(&source, &exe);
    let out = run(&exe, &[db.to_str().unwrap()]);
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
}
