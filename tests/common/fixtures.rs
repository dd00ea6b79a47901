//! Databases on disk for the integration tests of both crates: the shared fixtures (layers the
//! library's builder builds once per test binary), private copies of them, builds of a test's
//! own, comparisons of their files, the builder's bounds payloads, and the format's checksum for
//! the tests that rewrite a file and its header.
//!
//! One file that three harnesses include (`mod fixtures;` in `tests/common/mod.rs`, `#[path =
//! "../../../tests/common/fixtures.rs"]` in `cli/tests/common/mod.rs`, and the library's unit
//! tests through `src/test_support.rs`), so the library's tests and the program's share one
//! implementation. It uses the library's public API only, and crates every test binary has
//! (`libc`, `rayon`, `tempfile`, `xxhash-rust`). Not every includer uses every item.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, OnceLock};

use oware::bounds::{width, Bounds, Codec};
use oware::builder::{self, BuildConfig, Silent};
use oware::index::layer_size;
use oware::rules::Ruleset;
use oware::storage::{native_path, BoundsKind, ValuesKind, PAYLOAD_OFFSET};

/// The checksum of a layer file's payload as docs/FORMAT.md specifies it (`xxh3-64`: XXH3,
/// 64-bit, seed 0), computed here from the specification (the library's own is internal), for
/// the tests that rewrite a file and its header or compare published values.
pub fn format_checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Builds layers `0..=max` of `rules` into `dir` (test set-up; panics on failure).
pub fn build(rules: Ruleset, max: u32, dir: &Path) {
    let config = BuildConfig { rules, max_stones: max, dir: dir.to_path_buf(), max_memory: None, ..Default::default() };
    builder::build(&config, &Silent).expect("build");
}

/// The shared fixtures of this test binary: (ruleset, top layer, directory holding exactly
/// layers `0..=top` of that ruleset, as `build` leaves them).
static FIXTURES: Mutex<Vec<(Ruleset, u32, PathBuf)>> = Mutex::new(Vec::new());

/// Removes the fixture directories when the test binary exits (the harness ends with `exit`).
extern "C" fn remove_fixtures() {
    if let Ok(all) = FIXTURES.try_lock() {
        for (_, _, dir) in all.iter() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A directory holding layers `0..=max` of `rules` (and nothing else), built once per test
/// binary and shared by every test that asks for the same layers. It is READ-ONLY: a test that
/// changes, damages or adds files copies it first (`copy_fixture`).
///
/// Layers already built for another fixture of the same ruleset are copied, not built again
/// (a layer's file does not depend on how many layers the build went on to).
pub fn fixture(rules: Ruleset, max: u32) -> &'static Path {
    static CLEANUP: Once = Once::new();
    CLEANUP.call_once(|| {
        // SAFETY: registers a plain `extern "C" fn` to run at exit.
        unsafe { libc::atexit(remove_fixtures) };
    });
    let mut all = FIXTURES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, dir)) = all.iter().find(|(r, m, _)| *r == rules && *m == max) {
        return leak_path(dir);
    }
    let dir = tempfile::Builder::new().prefix("oware-fixture-").tempdir().expect("temp dir").keep();
    // Start from the fixture of this ruleset with the most layers (up to `max`) or the first
    // one with more.
    let donor = all.iter().filter(|(r, _, _)| *r == rules).max_by_key(|(_, m, _)| if *m <= max { (1, *m as i64) } else { (0, -(*m as i64)) });
    if let Some((_, m, from)) = donor {
        copy_layers(from, rules, max.min(*m), &dir);
    }
    build(rules, max, &dir);
    all.push((rules, max, dir.clone()));
    leak_path(&dir)
}

/// A `'static` copy of a fixture's path (a few bytes per call, for the life of the test binary).
fn leak_path(p: &Path) -> &'static Path {
    Box::leak(p.to_path_buf().into_boxed_path())
}

/// Copies the files of layers `0..=max` of `rules` (values, statistics, and bounds when there)
/// from the database directory `from` into `to`, which becomes the same database.
pub fn copy_layers(from: &Path, rules: Ruleset, max: u32, to: &Path) {
    let (src, dst) = (from.join(rules.name()), to.join(rules.name()));
    std::fs::create_dir_all(&dst).expect("create ruleset directory");
    // The lock file a build leaves beside its layers (empty; its content is never read).
    if src.join(".lock").exists() {
        std::fs::copy(src.join(".lock"), dst.join(".lock")).expect("copy the lock file");
    }
    for n in 0..=max {
        for name in [format!("layer-{n:02}.owdb"), format!("layer-{n:02}.json"), format!("bounds-{n:02}.owdb"), format!("bounds-{n:02}.json")] {
            match std::fs::copy(src.join(&name), dst.join(&name)) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && name.starts_with("bounds") => {}
                Err(e) => panic!("copy {}: {e}", src.join(&name).display()),
            }
        }
    }
}

/// A temporary directory holding a private copy of `fixture(rules, max)` ([`copy_fixture`]),
/// free to change; removed when dropped.
pub fn private_fixture(rules: Ruleset, max: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_fixture(rules, max, dir.path());
    dir
}

/// A private copy of `fixture(rules, max)` in `to` (the database directory; created if needed),
/// for a test that changes or damages its layers: the same files a build of layers `0..=max`
/// into `to` would leave, in a fraction of the time.
pub fn copy_fixture(rules: Ruleset, max: u32, to: &Path) {
    copy_layers(fixture(rules, max), rules, max, to);
}

/// Builds layers `0..=max` of `rules` with their depths into a new directory.
pub fn with_dtc(rules: Ruleset, max: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let config = BuildConfig { rules, max_stones: max, dir: dir.path().into(), companions: vec![oware::error::FileContent::Dtc], ..Default::default() };
    builder::build(&config, &Silent).unwrap();
    dir
}

/// Builds layers `0..=max` of `rules` into `dir` on `threads` threads.
pub fn build_in(dir: &Path, rules: Ruleset, max: u32, threads: usize) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let cfg = BuildConfig { rules, max_stones: max, dir: dir.into(), max_memory: None, ..Default::default() };
    pool.install(|| builder::build(&cfg, &Silent)).unwrap();
}

/// Asserts that the layer files `0..=max` of `rules` in `a` and `b` are byte for byte the same.
pub fn files_equal(a: &Path, b: &Path, rules: Ruleset, max: u32) {
    for n in 0..=max {
        let x = std::fs::read(native_path::<ValuesKind>(a, rules, n)).unwrap();
        let y = std::fs::read(native_path::<ValuesKind>(b, rules, n)).unwrap();
        assert!(x == y, "layer {n} differs between {} and {}", a.display(), b.display());
    }
}

/// Builds the bounds payloads of layers `0..=max` with the builder (values and bounds into a
/// temporary directory on `threads` threads; each bounds file's payload).
pub fn built(rules: Ruleset, max: u32, threads: usize) -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().expect("temp dir");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let cfg = BuildConfig {
        rules,
        max_stones: max,
        dir: dir.path().into(),
        max_memory: None,
        companions: vec![oware::error::FileContent::Bounds],
        ..Default::default()
    };
    pool.install(|| builder::build(&cfg, &Silent)).unwrap();
    (0..=max)
        .map(|n| {
            let file = std::fs::read(native_path::<BoundsKind>(dir.path(), rules, n)).unwrap();
            assert_eq!(file.len() as u64, PAYLOAD_OFFSET + (layer_size(n) * u64::from(width(n))).div_ceil(8), "layer {n}");
            file[PAYLOAD_OFFSET as usize..].to_vec()
        })
        .collect()
}

/// The builder's bounds payloads of layers `0..=14` of `rules` on two threads, built once per
/// test binary and shared (layer `n`'s payload depends on layers `0..n` only, so the first
/// `max + 1` are what `built(rules, max, 2)` gives).
pub fn built_on_two(rules: Ruleset) -> &'static [Vec<u8>] {
    static ALL: OnceLock<Vec<OnceLock<Vec<Vec<u8>>>>> = OnceLock::new();
    let all = ALL.get_or_init(|| Ruleset::ALL.iter().map(|_| OnceLock::new()).collect());
    let i = Ruleset::ALL.iter().position(|&r| r == rules).expect("a listed ruleset");
    all[i].get_or_init(|| built(rules, SHARED_TOP, 2))
}

/// The top layer of the shared payloads.
pub const SHARED_TOP: u32 = 14;

/// The bounds of every position of layer `n` in a bounds payload.
pub fn decode(n: u32, payload: &[u8]) -> Vec<Bounds> {
    let c = Codec::new(n);
    (0..layer_size(n)).map(|i| c.get(payload, i).expect("a valid code")).collect()
}
