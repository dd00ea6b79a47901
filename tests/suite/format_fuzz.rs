//! Randomised damage to layer files: the decoder and the layer reader must reject every damaged
//! file with a typed error and never panic, whatever the bytes (a deterministic fuzz test; the
//! generator is seeded so failures reproduce).
//!
//! (Random damage to packs and bounds files, which the program makes, is the program's test:
//! `cli/tests/suite/packs.rs`.)

use crate::common;

use common::SplitMix64;

use std::path::Path;

use oware::rules::Ruleset;
use oware::storage::{native_path, DatabaseDir, ValuesKind};
use oware::storage::{Header, HEADER_LEN, PAYLOAD_OFFSET};
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
        match DatabaseDir::native(dir.path(), Ruleset::Awari).unwrap().open_layer::<ValuesKind>(6, true) {
            Err(Error::Corrupt { .. }) | Err(Error::RulesetMismatch { .. }) => {}
            Err(e) => panic!("round {round}: unexpected error kind {e}"),
            Ok(_) => panic!("round {round}: damaged file accepted"),
        }
    }
    std::fs::write(&path, &original).unwrap();
    DatabaseDir::native(dir.path(), Ruleset::Awari).unwrap().open_layer::<ValuesKind>(6, true).unwrap();
}
