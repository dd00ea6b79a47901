//! Packs (`oware pack`/`unpack`, reading packs in place), the manifest, the published format both
//! ways (`export --format vu [--compress]`, `import --format vu`), on every ruleset; and random
//! damage to a pack or a bounds file, which never gives a wrong answer.

use std::path::Path;
use std::process::{Command, Output};

use oware::index::{layer_size, unrank_unchecked};
use oware::probe::Database;
use oware::storage::{native_path, pack_path, ValuesKind};
use oware::{Error, Position, Ruleset};

use crate::common::{self, SplitMix64};

fn oware(args: &[&str]) -> Output {
    Command::new(crate::common::OWARE).args(args).output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Layers `0..=max` of `rules` in `dir`: a copy of the shared fixture the builder built once.
fn build(dir: &Path, rules: Ruleset, max: u32) {
    crate::common::copy_fixture(rules, max, dir);
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_ruleset_packs_probes_and_unpacks_byte_for_byte() {
    for name in Ruleset::names() {
        let rules: Ruleset = name.parse().unwrap();
        let max = if rules == Ruleset::Awari { 12 } else { 10 };
        let tmp = tempfile::tempdir().unwrap();
        let (db, packs, back) = (tmp.path().join("db"), tmp.path().join("packs"), tmp.path().join("back"));
        build(&db, rules, max);
        // Two block sizes: the default and a small one (many blocks and groups per layer).
        for block in ["256", "64"] {
            let _ = std::fs::remove_dir_all(&packs);
            ok(&oware(&["pack", "--rules", name, "--dir", s(&db), "--out", s(&packs), "--block-values", block, "-q"]));
            let native = Database::open(&db, rules).unwrap();
            let packed = Database::open(&packs, rules).unwrap();
            for n in 0..=max {
                assert!(pack_path::<ValuesKind>(&packs, rules, n).is_file() && !native_path::<ValuesKind>(&packs, rules, n).exists());
                // Every position of the layer, probed in place.
                for i in 0..layer_size(n) {
                    let p = Position::new(unrank_unchecked(n, i)).unwrap();
                    assert_eq!(packed.value(&p).unwrap(), native.value(&p).unwrap(), "{name} layer {n} index {i}");
                }
            }
            // Positions outside every layer and move values go through the same tables.
            let full: Position = "0 0 1 0 0 2 1 1 1 1 1 1".parse().unwrap();
            assert_eq!(packed.move_values(&full).unwrap(), native.move_values(&full).unwrap());
            let _ = std::fs::remove_dir_all(&back);
            ok(&oware(&["unpack", "--rules", name, "--dir", s(&packs), "--out", s(&back), "-q"]));
            for n in 0..=max {
                let a = std::fs::read(native_path::<ValuesKind>(&db, rules, n)).unwrap();
                let b = std::fs::read(native_path::<ValuesKind>(&back, rules, n)).unwrap();
                assert!(a == b, "{name} layer {n}: unpacked file differs");
            }
        }
        // The readers of whole layers read packs too.
        let v = ok(&oware(&["verify", "--rules", name, "--dir", s(&packs), "-q"]));
        assert!(v.contains(&format!("manifest {}", s(&packs.join("SHA256SUMS")))) && v.contains("OK:"), "{v}");
        let a = ok(&oware(&["stats", "--rules", name, "--dir", s(&db), "--json"]));
        let b = ok(&oware(&["stats", "--rules", name, "--dir", s(&packs), "--json"]));
        assert_eq!(a, b, "{name}: stats of the pack differ");
    }
}

#[test]
fn repacking_keeps_identical_packs_and_the_manifest_lists_every_ruleset() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, packs) = (tmp.path().join("db"), tmp.path().join("packs"));
    build(&db, Ruleset::Awari, 8);
    build(&db, "abapa".parse().unwrap(), 6);
    ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "-q"]));
    ok(&oware(&["pack", "--rules", "abapa", "--dir", s(&db), "--out", s(&packs), "-q"]));
    let again = ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "--json"]));
    let doc: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert!(doc["layers"].as_array().unwrap().iter().all(|l| l["written"] == false), "{again}");
    let manifest = std::fs::read_to_string(packs.join("SHA256SUMS")).unwrap();
    assert_eq!(manifest.lines().count(), 9 + 7, "{manifest}");
    // The manifest agrees with sha256sum's format: HEX, two spaces, path.
    for line in manifest.lines() {
        let (hex, path) = line.split_once("  ").unwrap();
        assert_eq!(hex.len(), 64);
        assert_eq!(oware::verify::manifest::sha256_file(&packs.join(path), &oware::progress::NoProgress).unwrap(), hex);
    }
    for rules in ["awari", "abapa"] {
        ok(&oware(&["verify", "--rules", rules, "--dir", s(&packs), "-q"]));
    }
}

/// Issue 65, item 5: `--max-memory` below what a layer's floors and stored values need puts them
/// in scratch files (in `--work-dir`, removed after each layer), and the floors' exits pass
/// reads the lower layers out of core: the packs are byte for byte those packed in memory, and
/// the report says where the arrays waited and how the floors were read. A rerun keeping every
/// pack needs neither.
#[test]
fn packing_out_of_memory_writes_the_same_packs_and_leaves_no_scratch() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, mem, files, work) = (tmp.path().join("db"), tmp.path().join("mem"), tmp.path().join("files"), tmp.path().join("work"));
    build_dtc(&db, 10);
    let json = |out: &Output| -> serde_json::Value { serde_json::from_str(&ok(out)).unwrap() };
    let a = json(&oware(&["pack", "--dir", s(&db), "--out", s(&mem), "--block-values", "64", "--json"]));
    // 2 bytes per position of layer 10 are about 0.7 MB: 64K leaves layers 8..10 out of memory.
    let limited = oware(&["pack", "--dir", s(&db), "--out", s(&files), "--block-values", "64", "--max-memory", "64K", "--work-dir", s(&work), "--json"]);
    let b = json(&limited);
    // A limit below the least a layer takes is said once, and packing goes on.
    let said = String::from_utf8_lossy(&limited.stderr);
    assert_eq!(said.matches("is below the least packing a layer takes").count(), 1, "{said}");
    for (doc, placed, read) in [(&a, "memory", "in_memory"), (&b, "files", "out_of_core")] {
        let l10 = &doc["layers"][10];
        assert_eq!(l10["buffers"], placed, "{doc}");
        // The floors' exits pass reads the lower layers as the build would within the limit.
        assert_eq!(l10["floors"], read, "{doc}");
        assert!(l10["written"] == true && l10["dtc"]["written"] == true, "{doc}");
    }
    assert_eq!(a["layers"][2]["buffers"], "memory");
    for n in 0..=10 {
        for name in [format!("layer-{n:02}.owpk"), format!("dtc-{n:02}.owpk")] {
            let x = std::fs::read(mem.join("awari").join(&name)).unwrap();
            let y = std::fs::read(files.join("awari").join(&name)).unwrap();
            assert!(x == y, "{name} differs");
        }
    }
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "scratch files left in the work directory");
    // A file in place of the work directory is named, and nothing is packed.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"mine").unwrap();
    let out = oware(&["pack", "--dir", s(&db), "--out", s(&tmp.path().join("none")), "--max-memory", "64K", "--work-dir", s(&file)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("a-file is a regular file, not a directory"), "{err}");
    assert!(!tmp.path().join("none/awari/layer-00.owpk").exists() && std::fs::read(&file).unwrap() == b"mine");
    assert!(!mem.join("awari").join(".work").exists() && !files.join("awari").join(".work").exists());
    // A rerun keeps every pack and computes nothing for them.
    let again = json(&oware(&["pack", "--dir", s(&db), "--out", s(&files), "--block-values", "64", "--max-memory", "64K", "--json"]));
    assert!(again["layers"].as_array().unwrap().iter().all(|l| l["written"] == false && l["buffers"] == "none"), "{again}");
    // A values pack kept but its depths' pack gone: the floors and stored values are computed
    // again (the stored ones decoded from the pack), and the depths' pack comes back the same.
    std::fs::remove_file(files.join("awari/dtc-09.owpk")).unwrap();
    let c = json(&oware(&["pack", "--dir", s(&db), "--out", s(&files), "--block-values", "64", "--json"]));
    assert!(c["layers"][9]["written"] == false && c["layers"][9]["dtc"]["written"] == true && c["layers"][9]["buffers"] == "memory", "{c}");
    assert_eq!(std::fs::read(files.join("awari/dtc-09.owpk")).unwrap(), std::fs::read(mem.join("awari/dtc-09.owpk")).unwrap());
    ok(&oware(&["verify", "--dir", s(&files), "-q"]));
}

#[test]
fn a_damaged_block_is_named_and_never_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, packs) = (tmp.path().join("db"), tmp.path().join("packs"));
    build(&db, Ruleset::Awari, 10);
    ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "--block-values", "64", "-q"]));
    let file = pack_path::<ValuesKind>(&packs, Ruleset::Awari, 10);
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();

    let native = Database::open(&db, Ruleset::Awari).unwrap();
    // Lazily checked: positions in intact groups still answer, those in the damaged one fail.
    let packed = Database::open(&packs, Ruleset::Awari).unwrap().verify_checksums(false);
    let (mut good, mut bad) = (0, 0);
    for i in 0..layer_size(10) {
        let p = Position::new(unrank_unchecked(10, i)).unwrap();
        match packed.value(&p) {
            Ok(v) => {
                assert_eq!(v, native.value(&p).unwrap());
                good += 1;
            }
            Err(e) => {
                assert!(matches!(e, Error::Corrupt { .. }));
                let text = e.to_string();
                assert!(text.contains("layer-10.owpk") && text.contains("blocks"), "{text}");
                bad += 1;
            }
        }
    }
    assert!(good > 0 && bad > 0, "good {good}, bad {bad}");
    // Checked at open by default: the whole layer is refused.
    let checked = Database::open(&packs, Ruleset::Awari).unwrap();
    assert!(matches!(checked.value(&Position::new(unrank_unchecked(10, 0)).unwrap()), Err(Error::Corrupt { .. })));
    // The CLI: verify names the manifest and the block (exit 5); unpack refuses and writes nothing.
    let v = oware(&["verify", "--dir", s(&packs)]);
    assert_eq!(v.status.code(), Some(5));
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(text.contains("SHA256SUMS: FAILED") && text.contains("checksum mismatch in blocks"), "{text}");
    let back = tmp.path().join("back");
    let u = oware(&["unpack", "--dir", s(&packs), "--out", s(&back), "-q"]);
    assert_eq!(u.status.code(), Some(5));
    assert!(!native_path::<ValuesKind>(&back, Ruleset::Awari, 10).exists());
    assert!(native_path::<ValuesKind>(&back, Ruleset::Awari, 9).exists());
    // A truncated pack and a foreign file are refused by name.
    std::fs::write(&file, &bytes[..bytes.len() - 3]).unwrap();
    let q = oware(&["query", "--dir", s(&packs), "0 0 0 0 0 0 1 2 3 4 0 0"]);
    assert_eq!(q.status.code(), Some(5), "{}", String::from_utf8_lossy(&q.stderr));
    std::fs::write(&file, b"OWAREPK\x1a but not really a pack").unwrap();
    let q = oware(&["query", "--dir", s(&packs), "0 0 0 0 0 0 1 2 3 4 0 0"]);
    assert_eq!(q.status.code(), Some(5));
}

#[test]
fn published_files_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, vu, vz, back, backz) = (tmp.path().join("db"), tmp.path().join("vu"), tmp.path().join("vz"), tmp.path().join("back"), tmp.path().join("backz"));
    build(&db, Ruleset::Awari, 12);
    ok(&oware(&["export", "--format", "vu", "--dir", s(&db), "--out", s(&vu), "-q"]));
    ok(&oware(&["export", "--format", "vu", "--dir", s(&db), "--out", s(&vz), "--compress", "-q"]));
    assert!(vz.join("scores.12.zst").is_file() && !vz.join("scores.12").exists());
    // The compressed published files are read directly.
    let pos = "1 0 0 0 0 0 0 0 0 0 0 0";
    assert!(ok(&oware(&["query", "--format", "vu", "--dir", s(&vz), "--values-only", pos])).trim().ends_with("\t1"));
    ok(&oware(&["verify", "--format", "vu", "--dir", s(&vz), "-q"]));
    // import turns either into native layers identical to the built ones.
    ok(&oware(&["import", "--format", "vu", "--from", s(&vu), "--dir", s(&back), "-q"]));
    ok(&oware(&["import", "--format", "vu", "--from", s(&vz), "--dir", s(&backz), "-q"]));
    for n in 0..=12 {
        let a = std::fs::read(native_path::<ValuesKind>(&db, Ruleset::Awari, n)).unwrap();
        assert!(a == std::fs::read(native_path::<ValuesKind>(&back, Ruleset::Awari, n)).unwrap(), "layer {n}");
        assert!(a == std::fs::read(native_path::<ValuesKind>(&backz, Ruleset::Awari, n)).unwrap(), "layer {n} from .zst");
    }
    // A damaged published file (a value out of range, a wrong size) is refused, not imported.
    let mut b = std::fs::read(vu.join("scores.5")).unwrap();
    b[3] = 100;
    std::fs::write(vu.join("scores.5"), &b).unwrap();
    let bad = tmp.path().join("bad");
    let out = oware(&["import", "--format", "vu", "--from", s(&vu), "--dir", s(&bad), "-q"]);
    assert_eq!(out.status.code(), Some(5));
    assert!(!native_path::<ValuesKind>(&bad, Ruleset::Awari, 5).exists() && native_path::<ValuesKind>(&bad, Ruleset::Awari, 4).exists());
    std::fs::write(vu.join("scores.5"), &b[..10]).unwrap();
    assert_eq!(oware(&["import", "--format", "vu", "--from", s(&vu), "--dir", s(&bad), "-q"]).status.code(), Some(5));
    assert_eq!(oware(&["import", "--format", "native", "--from", s(&vu), "--dir", s(&bad)]).status.code(), Some(2));
    // Unpacking native layers is a usage error, and writes nothing.
    let none = tmp.path().join("none");
    let out = oware(&["unpack", "--dir", s(&db), "--out", s(&none), "-q"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a pack"));
    assert!(!native_path::<ValuesKind>(&none, Ruleset::Awari, 0).exists());
}

/// Runs `oware ARGS`, killing it after `limit` (an upper bound, never a measure): `None` when it
/// had to be killed.
fn oware_within(args: &[&str], limit: std::time::Duration) -> Option<Output> {
    let mut child = Command::new(crate::common::OWARE).args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Some(child.wait_with_output().unwrap())
}

#[test]
fn verify_refuses_a_fifo_or_a_device_in_place_of_a_pack() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, packs) = (tmp.path().join("db"), tmp.path().join("packs"));
    build(&db, Ruleset::Awari, 6);
    ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "-q"]));
    // A FIFO listed in the manifest: the SHA-256 check opened it and waited for a writer forever.
    let fifo = pack_path::<ValuesKind>(&packs, Ruleset::Awari, 3);
    std::fs::remove_file(&fifo).unwrap();
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let out = oware_within(&["verify", "--dir", s(&packs), "--max-stones", "6"], std::time::Duration::from_secs(120)).expect("verify hung on a FIFO");
    assert_eq!(out.status.code(), Some(7), "{}", String::from_utf8_lossy(&out.stdout));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("SHA256SUMS: FAILED") && text.contains("a FIFO"), "{text}");
    // A symbolic link to /dev/zero: it was hashed forever.
    std::fs::remove_file(&fifo).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &fifo).unwrap();
    let out = oware_within(&["verify", "--dir", s(&packs), "--max-stones", "6"], std::time::Duration::from_secs(120)).expect("verify read /dev/zero forever");
    assert_eq!(out.status.code(), Some(7));
    assert!(String::from_utf8_lossy(&out.stdout).contains("a device"), "{}", String::from_utf8_lossy(&out.stdout));
}

/// Cancels at once.
struct Cancelled;
impl oware::progress::Progress for Cancelled {
    fn cancelled(&self) -> bool {
        true
    }
}

#[test]
fn hashing_a_manifest_stops_when_cancelled() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, packs) = (tmp.path().join("db"), tmp.path().join("packs"));
    build(&db, Ruleset::Awari, 4);
    ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "-q"]));
    assert!(matches!(oware::verify::manifest::check(&packs, Ruleset::Awari, &Cancelled), Err(Error::Interrupted)));
    assert!(matches!(oware::verify::manifest::sha256_file(&pack_path::<ValuesKind>(&packs, Ruleset::Awari, 4), &Cancelled), Err(Error::Interrupted)));
    assert!(oware::verify::manifest::check(&packs, Ruleset::Awari, &oware::progress::NoProgress).unwrap().is_some());
}

#[test]
fn repacking_fewer_layers_keeps_a_manifest_that_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, packs) = (tmp.path().join("db"), tmp.path().join("packs"));
    build(&db, Ruleset::Awari, 9);
    ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "-q"]));
    // Re-packing 0..=5 dropped the lines of 6..=9, and verify then failed ("not listed").
    ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "--max-stones", "5", "-q"]));
    let manifest = std::fs::read_to_string(packs.join("SHA256SUMS")).unwrap();
    assert_eq!(manifest.lines().count(), 10, "{manifest}");
    ok(&oware(&["verify", "--dir", s(&packs), "-q"]));
    // A line whose file went away is dropped, and said so.
    std::fs::remove_file(pack_path::<ValuesKind>(&packs, Ruleset::Awari, 9)).unwrap();
    let out = oware(&["pack", "--dir", s(&db), "--out", s(&packs), "--max-stones", "5"]);
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("dropped the line of awari/layer-09.owpk (missing)"), "{}", String::from_utf8_lossy(&out.stderr));
    ok(&oware(&["verify", "--dir", s(&packs), "--max-stones", "8", "-q"]));
}

#[test]
fn concurrent_packs_into_one_directory_keep_every_manifest_line() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let names = ["awari", "abapa", "abapa-capture", "abapa-forbidden"];
    for name in names {
        build(&db, name.parse().unwrap(), 5);
    }
    // Through the program: four rulesets at once, a few times.
    for trial in 0..3 {
        let packs = tmp.path().join(format!("packs{trial}"));
        let children: Vec<_> = names
            .iter()
            .map(|name| {
                Command::new(crate::common::OWARE)
                    .args(["pack", "--rules", name, "--dir", s(&db), "--out", s(&packs), "-q"])
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let manifest = std::fs::read_to_string(packs.join("SHA256SUMS")).unwrap();
        assert_eq!(manifest.lines().count(), 4 * 6, "trial {trial}: {manifest}");
        for name in names {
            ok(&oware(&["verify", "--rules", name, "--dir", s(&packs), "-q"]));
        }
    }
    // Through the library, with many more writers racing: every line survives.
    let dir = tmp.path().join("lib");
    for trial in 0..10 {
        let _ = std::fs::remove_dir_all(&dir);
        let writers: Vec<_> = (0..8u32)
            .map(|w| {
                let dir = dir.clone();
                std::thread::spawn(move || {
                    let rules = Ruleset::ALL[(w % 4) as usize];
                    let rel = format!("{}/layer-{:02}.owpk", rules.name(), w);
                    std::fs::create_dir_all(dir.join(rules.name())).unwrap();
                    std::fs::write(dir.join(&rel), format!("pack {w}")).unwrap();
                    let sha256 = oware::verify::manifest::sha256_file(&dir.join(&rel), &oware::progress::NoProgress).unwrap();
                    oware::verify::manifest::update(&dir, &[oware::verify::manifest::Entry { sha256, path: rel }], &oware::progress::NoProgress).unwrap();
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let entries = oware::verify::manifest::read(&dir).unwrap().unwrap();
        assert_eq!(entries.len(), 8, "trial {trial}: {entries:?}");
    }
}

#[test]
fn verify_says_when_a_pack_directory_has_no_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, packs) = (tmp.path().join("db"), tmp.path().join("packs"));
    build(&db, Ruleset::Awari, 4);
    ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "-q"]));
    std::fs::remove_file(packs.join("SHA256SUMS")).unwrap();
    // It was not mentioned at all (text), and `manifest: null` (JSON).
    let text = ok(&oware(&["verify", "--dir", s(&packs)]));
    assert!(text.contains("SHA256SUMS: none: the pack files' SHA-256 digests are not checked"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&ok(&oware(&["verify", "--dir", s(&packs), "--json"]))).unwrap();
    assert_eq!(json["manifest"]["present"], false, "{json}");
    assert_eq!(json["ok"], true);
    // Native layers without packs expect no manifest.
    let json: serde_json::Value = serde_json::from_str(&ok(&oware(&["verify", "--dir", s(&db), "--json"]))).unwrap();
    assert!(json["manifest"].is_null(), "{json}");
}

#[test]
fn pack_and_published_errors_are_named_and_hinted_rightly() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, packs, vz) = (tmp.path().join("db"), tmp.path().join("packs"), tmp.path().join("vz"));
    build(&db, Ruleset::Awari, 6);
    ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "-q"]));
    // A damaged pack: the hint named `verify --format vu` and `build` into the pack directory.
    let file = pack_path::<ValuesKind>(&packs, Ruleset::Awari, 6);
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();
    let q = oware(&["query", "--dir", s(&packs), "0 0 0 0 0 0 1 2 0 3 0 0"]);
    assert_eq!(q.status.code(), Some(5));
    let err = String::from_utf8_lossy(&q.stderr);
    assert!(err.contains(&format!("oware verify --rules awari --dir {}", s(&packs))), "{err}");
    assert!(err.contains(&format!("oware pack --rules awari --dir DB --out {}", s(&packs))), "{err}");
    assert!(!err.contains("--format vu") && !err.contains("oware build"), "{err}");
    // A bad scores.N.zst was "damaged pack".
    ok(&oware(&["export", "--format", "vu", "--dir", s(&db), "--out", s(&vz), "--compress", "-q"]));
    std::fs::write(vz.join("scores.3.zst"), b"not zstd at all").unwrap();
    let v = oware(&["query", "--format", "vu", "--dir", s(&vz), "0 0 0 0 0 0 1 1 0 1 0 0"]);
    assert_eq!(v.status.code(), Some(5));
    let err = String::from_utf8_lossy(&v.stderr);
    assert!(err.contains("damaged zstd-compressed file") && !err.contains("pack"), "{err}");
    assert!(err.contains("--format vu"), "{err}");
    // import copies the published values: it says they were not re-derived, and how to.
    ok(&oware(&["export", "--format", "vu", "--dir", s(&db), "--out", s(&tmp.path().join("vu")), "-q"]));
    let back = tmp.path().join("back");
    let out = oware(&["import", "--format", "vu", "--from", s(&tmp.path().join("vu")), "--dir", s(&back)]);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not re-derived") && err.contains(&format!("oware verify --rules awari --dir {} --max-stones 6", s(&back))), "{err}");
}

/// Layers `0..=max` of awari with their depths to capture and bounds, built here.
fn build_dtc(dir: &Path, max: u32) {
    let config = oware::builder::BuildConfig {
        rules: Ruleset::Awari,
        max_stones: max,
        dir: dir.into(),
        companions: vec![oware::error::FileContent::Bounds, oware::error::FileContent::Dtc],
        ..Default::default()
    };
    oware::builder::build(&config, &oware::builder::Silent).unwrap();
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Issue 52, item 5 (and item 12's message). Old: with `dtc-08.owpk` removed, unpack restored
/// the rest and exited 0; with `layer-06.owpk` removed, it said "unpacked layers 0..5" and exited
/// 0 although the manifest lists 6..8. New: every file the manifest lists is unpacked or named,
/// with exit 5 and nothing written; the message is a manifest problem, not a damaged layer.
#[test]
fn unpack_names_every_listed_file_that_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, packs) = (tmp.path().join("db"), tmp.path().join("packs"));
    build_dtc(&db, 8);
    ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "-q"]));
    let dtc8 = packs.join("awari/dtc-08.owpk");
    let layer6 = pack_path::<ValuesKind>(&packs, Ruleset::Awari, 6);
    for (gone, named) in [(&dtc8, "awari/dtc-08.owpk"), (&layer6, "awari/layer-06.owpk")] {
        let kept = tmp.path().join("kept");
        std::fs::rename(gone, &kept).unwrap();
        let back = tmp.path().join("back");
        let out = oware(&["unpack", "--dir", s(&packs), "--out", s(&back)]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(5), "{named}: {said}");
        assert!(said.contains(named) && said.contains("listed but missing"), "{said}");
        assert!(said.contains("manifest check failed") && !said.contains("damaged layer file"), "{said}");
        assert!(!native_path::<ValuesKind>(&back, Ruleset::Awari, 0).exists(), "{named}: layers were unpacked anyway");
        std::fs::rename(&kept, gone).unwrap();
        ok(&oware(&["unpack", "--dir", s(&packs), "--out", s(&back), "-q"]));
        assert!(native_path::<ValuesKind>(&back, Ruleset::Awari, 8).is_file() && back.join("awari/dtc-08.owdb").is_file());
        std::fs::remove_dir_all(&back).unwrap();
    }
    // Below a missing layer, --max-stones unpacks what was asked for.
    std::fs::remove_file(&layer6).unwrap();
    let back = tmp.path().join("back");
    ok(&oware(&["unpack", "--dir", s(&packs), "--out", s(&back), "--max-stones", "5", "-q"]));
    let out = oware(&["unpack", "--dir", s(&packs), "--out", s(&back), "--max-stones", "7", "-q"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    assert!(text(&out).contains("awari/layer-06.owpk listed but missing"), "{}", text(&out));
    // Issue 67, item 6: a manifest that refuses the unpack (here a directory in its place) is
    // the one message; no plan of the layers to unpack is printed before it.
    std::fs::remove_file(packs.join("SHA256SUMS")).unwrap();
    std::fs::create_dir(packs.join("SHA256SUMS")).unwrap();
    let out = oware(&["unpack", "--dir", s(&packs), "--out", s(&tmp.path().join("other"))]);
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    assert!(text(&out).contains("SHA256SUMS is a directory"), "{}", text(&out));
    assert!(!text(&out).contains("unpacking"), "{}", text(&out));
}

/// Issue 52, item 8. Old: a dangling symbolic link at a dtc pack's path read as absent (`query
/// --dtc`: "not built", exit 4; `stats`, `unpack`: exit 0) or as "entity not found" (`verify`).
/// New: unreadable, never absent: every command names the file and the link, with exit 7; the
/// same for a dangling link in place of a native layer, bounds or dtc file.
#[test]
fn a_dangling_link_is_unreadable_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, packs) = (tmp.path().join("db"), tmp.path().join("packs"));
    build_dtc(&db, 8);
    ok(&oware(&["pack", "--dir", s(&db), "--out", s(&packs), "-q"]));
    let eight = "1 1 1 1 1 1 1 1 0 0 0 0";
    let check = |dir: &Path, link: &Path, commands: &[&[&str]]| {
        let saved = tmp.path().join("saved");
        std::fs::rename(link, &saved).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("not-there"), link).unwrap();
        for args in commands {
            let out_dir = tmp.path().join("out");
            let mut full: Vec<&str> = args.to_vec();
            full.extend(["--dir", s(dir)]);
            if args[0] == "unpack" {
                full.extend(["--out", s(&out_dir)]);
            }
            if args[0] == "query" {
                full.push(eight);
            }
            let out = oware(&full);
            let said = text(&out);
            assert_eq!(out.status.code(), Some(7), "{full:?} with {}: {said}", link.display());
            assert!(said.contains(s(link)) && said.contains("symbolic link") && said.contains("not-there"), "{full:?}: {said}");
            let _ = std::fs::remove_dir_all(&out_dir);
        }
        std::fs::remove_file(link).unwrap();
        std::fs::rename(&saved, link).unwrap();
    };
    let all: &[&[&str]] = &[&["query", "--dtc"], &["stats"], &["unpack", "-q"], &["verify"]];
    check(&packs, &packs.join("awari/dtc-08.owpk"), all);
    check(&packs, &pack_path::<ValuesKind>(&packs, Ruleset::Awari, 8), all);
    let native: &[&[&str]] = &[&["query", "--dtc", "--bounds"], &["stats"], &["verify"]];
    for name in ["dtc-08.owdb", "bounds-08.owdb", "layer-08.owdb"] {
        check(&db, &db.join("awari").join(name), native);
    }
}

/// Random damage to a pack (bytes changed anywhere, in runs or alone; truncated; extended): read
/// without the whole-file check at open, every probe of the layer either answers the true value
/// or fails with a typed error, never a wrong value and never a panic; with the check (the
/// default), the damaged pack is refused. And damaged bounds files are refused at open.
#[test]
fn damaged_packs_and_bounds_never_give_a_wrong_answer() {
    use oware::index::{layer_size, unrank_unchecked};
    use oware::storage::{native_path, pack_path, BoundsKind, ValuesKind};
    use oware::{Database, Position};
    const N: u32 = 9;
    let tmp = tempfile::tempdir().unwrap();
    let (db, packs) = (tmp.path().join("db"), tmp.path().join("packs"));
    common::copy_fixture(Ruleset::Awari, N, &db);
    let (code, _, err) = common::oware(&["pack", "--dir", common::s(&db), "--out", common::s(&packs), "--block-values", "64", "-q"]);
    assert_eq!(code, 0, "{err}");
    let native = Database::open(&db, Ruleset::Awari).unwrap();
    let positions: Vec<Position> = (0..layer_size(N)).map(|i| Position::new(unrank_unchecked(N, i)).unwrap()).collect();
    let truth: Vec<i8> = positions.iter().map(|p| native.value(p).unwrap()).collect();
    let file = pack_path::<ValuesKind>(&packs, Ruleset::Awari, N);
    let original = std::fs::read(&file).unwrap();
    let mut rng = SplitMix64(2024);
    let (mut answered, mut refused) = (0u64, 0u64);
    for round in 0..60 {
        let mut d = original.clone();
        match round % 4 {
            0 => {
                let at = rng.below(d.len() as u64) as usize;
                d[at] ^= (1 + rng.below(255)) as u8;
            }
            1 => {
                let at = rng.below(d.len() as u64) as usize;
                let len = (1 + rng.below(64) as usize).min(d.len() - at);
                for b in &mut d[at..at + len] {
                    *b = rng.below(256) as u8;
                }
            }
            2 => d.truncate(rng.below(d.len() as u64) as usize),
            _ => d.extend((0..1 + rng.below(100)).map(|_| rng.below(256) as u8)),
        }
        if d == original {
            continue;
        }
        std::fs::write(&file, &d).unwrap();
        let lazy = Database::open(&packs, Ruleset::Awari).unwrap().verify_checksums(false);
        for (p, &want) in positions.iter().zip(&truth).step_by(7) {
            match lazy.value(p) {
                Ok(v) => {
                    assert_eq!(v, want, "round {round}: a damaged pack gave a wrong value for {p}");
                    answered += 1;
                }
                Err(e) => {
                    assert!(matches!(e, Error::Corrupt { .. } | Error::RulesetMismatch { .. } | Error::LayerMismatch { .. }), "round {round}: {e}");
                    refused += 1;
                }
            }
        }
        let checked = Database::open(&packs, Ruleset::Awari).unwrap();
        assert!(checked.value(&positions[0]).is_err(), "round {round}: the damaged pack was accepted by the checked open");
    }
    assert!(answered > 0 && refused > 0, "answered {answered}, refused {refused}");

    // Bounds files: any damage is refused when the file is opened with its checksum checked.
    let bounds_dir = tmp.path().join("bounds");
    let (code, _, err) = common::oware(&["build", "--rules", "abapa", "--bounds", "--max-stones", "8", "--dir", common::s(&bounds_dir), "-q"]);
    assert_eq!(code, 0, "{err}");
    let abapa: Ruleset = "abapa".parse().unwrap();
    let path = native_path::<BoundsKind>(&bounds_dir, abapa, 8);
    let original = std::fs::read(&path).unwrap();
    for round in 0..60 {
        let mut d = original.clone();
        match round % 3 {
            0 => {
                let at = rng.below(d.len() as u64) as usize;
                d[at] ^= (1 + rng.below(255)) as u8;
            }
            1 => d.truncate(rng.below(d.len() as u64) as usize),
            _ => d.extend((0..1 + rng.below(100)).map(|_| rng.below(256) as u8)),
        }
        std::fs::write(&path, &d).unwrap();
        match oware::storage::DatabaseDir::native(&bounds_dir, abapa).unwrap().open_layer::<BoundsKind>(8, true) {
            Err(Error::Corrupt { .. } | Error::RulesetMismatch { .. } | Error::LayerMismatch { .. }) => {}
            Err(e) => panic!("round {round}: unexpected error kind {e}"),
            Ok(_) => panic!("round {round}: damaged bounds file accepted"),
        }
    }
    std::fs::write(&path, &original).unwrap();
    oware::storage::DatabaseDir::native(&bounds_dir, abapa).unwrap().open_layer::<BoundsKind>(8, true).unwrap();
}

/// The codec (bytes 16..20 of a pack) of `path`.
fn codec_of(path: &Path) -> u32 {
    let b = std::fs::read(path).unwrap();
    u32::from_le_bytes([b[16], b[17], b[18], b[19]])
}

/// Issue 65: `oware pack` writes range-coded blocks by default (values in codec 6, blocks of 64;
/// depths in codec 7, blocks of 128) and rANS for blocks above 128 (codec 4 and 5), the same
/// values and depths either way; blocks outside 16..16384 are a usage error.
#[test]
fn the_default_packs_are_range_coded_and_larger_blocks_rans() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    build_dtc(&db, 8);
    let native = Database::open(&db, Ruleset::Awari).unwrap();
    for (args, values, depths) in [
        (vec![], (6, 64), (7, 128)),
        (vec!["--block-values", "256", "--dtc-block-values", "512"], (4, 256), (5, 512)),
        (vec!["--block-values", "16", "--dtc-block-values", "129"], (6, 16), (5, 129)),
    ] {
        let packs = tmp.path().join(format!("packs-{}", values.1));
        let mut all = vec!["pack", "--dir", s(&db), "--out", s(&packs), "-q"];
        all.extend(args);
        ok(&oware(&all));
        let v = pack_path::<ValuesKind>(&packs, Ruleset::Awari, 8);
        let d = v.with_file_name("dtc-08.owpk");
        assert_eq!(codec_of(&v), values.0, "{all:?}");
        assert_eq!(codec_of(&d), depths.0, "{all:?}");
        let block = |p: &Path| {
            let b = std::fs::read(p).unwrap();
            u32::from_le_bytes([b[20], b[21], b[22], b[23]])
        };
        assert_eq!((block(&v), block(&d)), (values.1, depths.1), "{all:?}");
        let packed = Database::open(&packs, Ruleset::Awari).unwrap();
        for i in 0..layer_size(8) {
            let p = Position::new(unrank_unchecked(8, i)).unwrap();
            assert_eq!(packed.value(&p).unwrap(), native.value(&p).unwrap(), "{all:?}: position {i}");
            assert_eq!(packed.dtc(&p).unwrap(), native.dtc(&p).unwrap(), "{all:?}: depth of position {i}");
        }
    }
    for bad in ["15", "16385"] {
        let out = oware(&["pack", "--dir", s(&db), "--out", s(&tmp.path().join("bad")), "--block-values", bad, "-q"]);
        assert_eq!(out.status.code(), Some(2), "--block-values {bad}");
    }
}
