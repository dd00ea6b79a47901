//! `oware export --format vu`: the published 2002 files, byte-identical to the payloads; and
//! `verify` / `stats` reading them agree with the native files.

use crate::common;

use common::{copy_fixture, oware, s};
use std::path::Path;

use oware::builder::read_stats;
use oware::index::layer_size;
use oware::rules::GrandSlam;
use oware::storage::PAYLOAD_OFFSET;
use oware::storage::{native_path, vu_path, ValuesKind};
use oware::Ruleset;
use serde_json::Value;

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{out}"))
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn exported_files_are_the_payloads_and_read_like_native_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let vu = tmp.path().join("vu");
    copy_fixture(Ruleset::Awari, 10, &db);

    let (code, out, err) = oware(&["export", "--format", "vu", "--dir", s(&db), "--out", s(&vu)]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.contains("layer 11 is not built"), "{err}");
    assert!(out.contains("exported awari layers 0..10: 644,826 positions"), "{out}");
    let mut expected: Vec<String> = (0..=10).map(|n| format!("scores.{n}")).collect();
    expected.sort();
    assert_eq!(files(&vu), expected, "exactly the scores files, no temporaries");
    for n in 0..=10 {
        let exported = std::fs::read(vu_path(&vu, n)).unwrap();
        let native = std::fs::read(native_path::<ValuesKind>(&db, Ruleset::Awari, n)).unwrap();
        assert_eq!(exported.len() as u64, layer_size(n));
        assert!(exported == native[PAYLOAD_OFFSET as usize..], "scores.{n} differs from the payload");
        assert!(out.contains(&format!("-> {}", vu_path(&vu, n).display())), "{out}");
        // And the library reads it back as the same values.
        let a = oware::storage::DatabaseDir::new(oware::storage::Format::Vu, &vu, Ruleset::Awari).unwrap().open_layer(n, false).unwrap();
        let b = oware::storage::DatabaseDir::native(&db, Ruleset::Awari).unwrap().open_layer(n, true).unwrap();
        assert_eq!(a.values(), b.values());
    }

    // verify: same positions, same per-layer results, same facts.
    let (c1, native, e1) = oware(&["verify", "--dir", s(&db), "--json"]);
    let (c2, published, e2) = oware(&["verify", "--dir", s(&vu), "--format", "vu", "--json"]);
    assert_eq!((c1, c2), (0, 0), "{e1}\n{e2}");
    let (native, published) = (json(&native), json(&published));
    assert_eq!(published["format"], "vu");
    assert_eq!(native["positions_checked"], published["positions_checked"]);
    assert_eq!(native["positions_checked"], 644_826);
    assert_eq!(native["facts"], published["facts"]);
    let strip = |v: &Value| -> Vec<(Value, Value, Value)> {
        v["layers"].as_array().unwrap().iter().map(|l| (l["layer"].clone(), l["checked"].clone(), l["mismatches"].clone())).collect()
    };
    assert_eq!(strip(&native), strip(&published));
    assert_eq!(strip(&native).len(), 11);

    // stats: identical, and equal to a direct count of the bytes and to the build's statistics.
    let (c1, sn, e1) = oware(&["stats", "--dir", s(&db), "--json"]);
    let (c2, sv, e2) = oware(&["stats", "--dir", s(&vu), "--format", "vu", "--json"]);
    assert_eq!((c1, c2), (0, 0), "{e1}\n{e2}");
    let (sn, sv) = (json(&sn), json(&sv));
    assert_eq!(sn["layers"], sv["layers"]);
    assert_eq!(sn["total"], sv["total"]);
    assert_eq!(sn["total"]["positions"], 644_826);
    for n in 0..=10u32 {
        let bytes = std::fs::read(vu_path(&vu, n)).unwrap();
        let l = &sn["layers"][n as usize];
        assert_eq!(l["layer"], n);
        let count = |f: fn(i8) -> bool| bytes.iter().filter(|&&b| f(b as i8)).count() as u64;
        assert_eq!(l["wins"], count(|v| v > 0));
        assert_eq!(l["draws"], count(|v| v == 0));
        assert_eq!(l["losses"], count(|v| v < 0));
        assert_eq!(l["out_of_range"], 0);
        let built = read_stats(&db, Ruleset::Awari, n).expect("build wrote statistics");
        for (v, c) in &built.values {
            assert_eq!(l["values"][v.to_string()], *c, "layer {n} value {v}");
        }
        assert_eq!(l["values"].as_object().unwrap().len(), built.values.len());
    }
    let (code, text, _) = oware(&["stats", "--dir", s(&db)]);
    assert_eq!(code, 0);
    assert!(text.contains("layer 10:         351,351 positions") && text.contains("all   :         644,826 positions"), "{text}");

    // A changed byte of a published file (no checksum there) is found by re-derivation.
    let p = vu_path(&vu, 9);
    let mut bytes = std::fs::read(&p).unwrap();
    let i = 123_456usize;
    bytes[i] = (bytes[i] as i8).wrapping_add(if bytes[i] as i8 > 0 { -1 } else { 1 }) as u8;
    std::fs::write(&p, &bytes).unwrap();
    let (code, out, err) = oware(&["verify", "--dir", s(&vu), "--format", "vu", "--json"]);
    assert_eq!(code, 8, "{err}");
    let doc = json(&out);
    assert_eq!(doc["layers"][9]["status"], "mismatch");
    let listed: Vec<u64> = doc["layers"][9]["first_mismatches"].as_array().unwrap().iter().map(|m| m["index"].as_u64().unwrap()).collect();
    let count = doc["layers"][9]["mismatches"].as_u64().unwrap();
    assert!(count >= 1);
    if count as usize <= oware::verify::MISMATCHES_KEPT {
        assert!(listed.contains(&(i as u64)), "{listed:?}");
    }
}

#[test]
fn export_refuses_other_rulesets_and_other_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let out_dir = tmp.path().join("vu");
    copy_fixture(Ruleset::Abapa(GrandSlam::NoCapture), 4, &db);
    let (code, _, err) = oware(&["export", "--format", "vu", "--rules", "abapa", "--dir", s(&db), "--out", s(&out_dir)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("only 'awari'") && err.contains("'abapa'"), "{err}");
    assert!(!out_dir.exists(), "nothing may be written");
    let (code, _, err) = oware(&["export", "--format", "native", "--rules", "abapa", "--dir", s(&db), "--out", s(&out_dir)]);
    assert_eq!(code, 2, "{err}");
    // stats and verify refuse to read abapa from published files as well.
    assert_eq!(oware(&["stats", "--format", "vu", "--rules", "abapa", "--dir", s(&db)]).0, 2);
    // stats of the abapa build itself works.
    let (code, out, err) = oware(&["stats", "--rules", "abapa", "--dir", s(&db), "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["total"]["positions"], (0..=4).map(layer_size).sum::<u64>());
}

#[test]
fn compressed_export_round_trips_and_damaged_sources_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    copy_fixture(Ruleset::Awari, 8, &db);

    let zdir = tmp.path().join("zst");
    let (code, out, err) = oware(&["export", "--format", "vu", "--dir", s(&db), "--out", s(&zdir), "--compress", "--max-stones", "8"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let mut expected: Vec<String> = (0..=8).map(|n| format!("scores.{n}.zst")).collect();
    expected.sort();
    assert_eq!(files(&zdir), expected, "only .zst files");
    for n in 0..=8 {
        let z = std::fs::read(zdir.join(format!("scores.{n}.zst"))).unwrap();
        let plain = zstd::decode_all(&z[..]).unwrap();
        let native = std::fs::read(native_path::<ValuesKind>(&db, Ruleset::Awari, n)).unwrap();
        assert!(plain == native[PAYLOAD_OFFSET as usize..], "scores.{n}.zst does not decompress to the payload");
    }
    // Every reader of the published format reads the .zst files directly.
    let (code, out, err) = oware(&["verify", "--dir", s(&zdir), "--format", "vu"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("OK: layers 0..8 of awari"), "{out}");

    // A damaged payload is never exported; the layers before it are.
    let p = native_path::<ValuesKind>(&db, Ruleset::Awari, 6);
    let mut bytes = std::fs::read(&p).unwrap();
    let at = PAYLOAD_OFFSET as usize + 5_000;
    bytes[at] ^= 0x01;
    std::fs::write(&p, &bytes).unwrap();
    let vu = tmp.path().join("vu");
    let (code, out, err) = oware(&["export", "--format", "vu", "--dir", s(&db), "--out", s(&vu)]);
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(err.contains("layer-06.owdb") && err.contains("checksum mismatch"), "{err}");
    let mut expected: Vec<String> = (0..=5).map(|n| format!("scores.{n}")).collect();
    expected.sort();
    assert_eq!(files(&vu), expected, "layers 0..5 exported, nothing of layer 6, no temporaries");

    // A layer asked for but not built: nothing is written.
    let vu2 = tmp.path().join("vu2");
    let (code, _, err) = oware(&["export", "--format", "vu", "--dir", s(&db), "--out", s(&vu2), "--max-stones", "9"]);
    assert_eq!(code, 4, "{err}");
    assert!(!vu2.exists());
}
