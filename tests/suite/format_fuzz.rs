//! Randomised damage to layer files: the decoder and the layer reader must reject every damaged
//! file with a typed error and never panic, whatever the bytes (a deterministic fuzz test; the
//! generator is seeded so failures reproduce).

use crate::common;

use common::SplitMix64;

use std::path::Path;

use oware::format::{Header, HEADER_LEN, PAYLOAD_OFFSET};
use oware::rules::Ruleset;
use oware::storage::{native_path, Layer, ValuesKind};
use oware::Error;

#[test]
fn header_decoder_rejects_random_damage_without_panicking() {
    let good = Header::new(Ruleset::Awari, 9, 0x1234_5678_9abc_def0);
    let mut page = vec![0u8; PAYLOAD_OFFSET as usize];
    page[..HEADER_LEN].copy_from_slice(&good.encode());
    let path = Path::new("fuzz");
    assert_eq!(Header::decode(&page, path).unwrap(), good);
    let mut rng = SplitMix64(7);
    for round in 0..200_000 {
        let mut d = page.clone();
        // 1..4 random byte changes anywhere in the header page, or a truncation.
        if round % 10 == 0 {
            // Shorter than the header (longer prefixes are the layer reader's to reject).
            d.truncate(rng.below(HEADER_LEN as u64) as usize);
        } else {
            for _ in 0..=rng.below(4) {
                let at = if rng.below(4) == 0 { rng.below(d.len() as u64) } else { rng.below(HEADER_LEN as u64) } as usize;
                d[at] ^= (1 + rng.below(255)) as u8;
            }
        }
        if d == page {
            continue;
        }
        match Header::decode(&d, path) {
            Err(e @ Error::Corrupt { .. }) => assert!(!e.to_string().is_empty()),
            Err(e) => panic!("round {round}: unexpected error kind {e}"),
            Ok(h) => panic!(
                "round {round}: damaged header accepted as {h:?}; changed bytes {:?}",
                (0..d.len().min(page.len())).filter(|&i| d[i] != page[i]).map(|i| (i, page[i], d[i])).collect::<Vec<_>>()
            ),
        }
    }
}

#[test]
fn layer_reader_rejects_damaged_files() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_fixture(Ruleset::Awari, 6, dir.path());
    let path = native_path::<ValuesKind>(dir.path(), Ruleset::Awari, 6);
    let original = std::fs::read(&path).unwrap();
    let mut rng = SplitMix64(11);
    for round in 0..300 {
        let mut d = original.clone();
        match round % 3 {
            // Truncated or extended.
            0 => {
                let len = rng.below(original.len() as u64 * 2) as usize;
                d.resize(len, 0);
                if d.len() == original.len() {
                    d.push(0);
                }
            }
            // A payload byte changed.
            1 => {
                let at = PAYLOAD_OFFSET as usize + rng.below(d.len() as u64 - PAYLOAD_OFFSET) as usize;
                d[at] ^= (1 + rng.below(255)) as u8;
            }
            // A header byte changed.
            _ => {
                let at = rng.below(PAYLOAD_OFFSET) as usize;
                d[at] ^= (1 + rng.below(255)) as u8;
            }
        }
        std::fs::write(&path, &d).unwrap();
        match Layer::open_native(dir.path(), Ruleset::Awari, 6, true) {
            Err(Error::Corrupt { .. }) | Err(Error::RulesetMismatch { .. }) => {}
            Err(e) => panic!("round {round}: unexpected error kind {e}"),
            Ok(_) => panic!("round {round}: damaged file accepted"),
        }
    }
    std::fs::write(&path, &original).unwrap();
    Layer::open_native(dir.path(), Ruleset::Awari, 6, true).unwrap();
}

/// Random damage to a pack (bytes changed anywhere, in runs or alone; truncated; extended): read
/// without the whole-file check at open, every probe of the layer either answers the true value
/// or fails with a typed error, never a wrong value and never a panic; with the check (the
/// default), the damaged pack is refused. And damaged bounds files are refused at open.
#[test]
fn damaged_packs_and_bounds_never_give_a_wrong_answer() {
    use oware::index::{layer_size, unrank_unchecked};
    use oware::storage::{native_path, pack_path, BoundsKind, Layer, ValuesKind};
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
        match Layer::<BoundsKind>::open_file(&path, abapa, 8, true) {
            Err(Error::Corrupt { .. } | Error::RulesetMismatch { .. } | Error::LayerMismatch { .. }) => {}
            Err(e) => panic!("round {round}: unexpected error kind {e}"),
            Ok(_) => panic!("round {round}: damaged bounds file accepted"),
        }
    }
    std::fs::write(&path, &original).unwrap();
    Layer::<BoundsKind>::open_file(&path, abapa, 8, true).unwrap();
}
