//! Reading a layer's files of every kind: with `pread` (copied whole, or entry by entry), and
//! packs told by their magic.

use std::fs::OpenOptions;
use std::path::Path;

use super::*;
use crate::builder::{self, BuildConfig, Silent};
use crate::dtc::{ESCAPE, NONE};
use crate::error::{Damage, Error};
use crate::format::PAYLOAD_OFFSET;
use crate::index::layer_size;
use crate::rules::Ruleset;
use crate::sys::FileStamp;

/// `file` at `path` opened entry by entry, as when a copy does not fit the budget.
fn read_by_entry<K: Kind>(d: &DatabaseDir, path: &Path, n: u32) -> Table<K> {
    let file = open_regular(path, || Error::Internal("missing".into())).unwrap();
    let stamp = FileStamp::of(&file, path).unwrap();
    Table::File(FileLayer::open(path, file, stamp, d.format(), d.rules(), n, true).unwrap())
}

/// A layer read with `pread` gives the mapped values, and errors (never a crash) once its
/// file is rewritten in place or truncated under it.
#[test]
fn a_layer_read_with_pread_survives_changes_of_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = BuildConfig { rules: Ruleset::Awari, max_stones: 8, dir: dir.path().into(), max_memory: None, ..Default::default() };
    builder::build(&config, &Silent).unwrap();
    let d = DatabaseDir::native(dir.path(), Ruleset::Awari).unwrap();
    let path = d.path::<ValuesKind>(8);
    let expected = d.open_layer::<ValuesKind>(8, true).unwrap().values().to_vec();
    let table = read_by_entry::<ValuesKind>(&d, &path, 8);
    assert_eq!(table.len(), expected.len() as u64);
    for (i, &v) in expected.iter().enumerate() {
        assert_eq!(table.get(i as u64).unwrap(), v);
    }
    table.check_unchanged().unwrap();
    assert!(!table.replaced());
    // Rewritten in place at the same size: the identity check sees it.
    std::thread::sleep(std::time::Duration::from_millis(20));
    {
        use std::os::unix::fs::FileExt;
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(&[0], PAYLOAD_OFFSET).unwrap();
    }
    assert!(matches!(table.check_unchanged(), Err(Error::Corrupt { damage: Damage::ChangedWhileOpen { .. }, .. })));
    // Truncated in place: reads past the new end are errors.
    OpenOptions::new().write(true).open(&path).unwrap().set_len(5000).unwrap();
    let last = table.len() - 1;
    assert!(matches!(table.get(last), Err(Error::Corrupt { damage: Damage::Size { .. }, .. })));
    // The small layers of ReadMode::Pread are private copies, checked the same way.
    let copy = d.open_table::<ValuesKind>(7, true, ReadMode::Pread).unwrap();
    assert!(matches!(copy, Table::Layer(_)));
    // Replaced by rename: noticed.
    let tmp = dir.path().join("awari/replacement");
    std::fs::copy(d.path::<ValuesKind>(7), &tmp).unwrap();
    std::fs::rename(&tmp, d.path::<ValuesKind>(7)).unwrap();
    assert!(copy.replaced());
    copy.check_unchanged().unwrap();
}

/// A new directory with abapa's layers `0..=top`, their bounds and their depths to capture.
fn abapa_with_bounds_and_depths(top: u32) -> (tempfile::TempDir, DatabaseDir) {
    let dir = tempfile::tempdir().unwrap();
    let abapa: Ruleset = "abapa".parse().unwrap();
    let config = BuildConfig {
        rules: abapa,
        max_stones: top,
        dir: dir.path().into(),
        max_memory: None,
        companions: vec![crate::error::FileContent::Bounds, crate::error::FileContent::Dtc],
        ..Default::default()
    };
    builder::build(&config, &Silent).unwrap();
    let d = DatabaseDir::native(dir.path(), abapa).unwrap();
    (dir, d)
}

/// Bounds and depths to capture read with `pread` (copied whole, or entry by entry) give the
/// mapped answers, and errors (never a crash) once their files are truncated under them.
#[test]
fn bounds_and_depths_read_with_pread_survive_truncation() {
    let (_dir, d) = abapa_with_bounds_and_depths(9);
    let n = 9;
    let size = layer_size(n);
    let (bounds, dtc) = (d.open_layer::<BoundsKind>(n, true).unwrap(), d.open_layer::<DtcKind>(n, true).unwrap());
    let copied = (d.open_table::<BoundsKind>(n, true, ReadMode::Pread).unwrap(), d.open_table::<DtcKind>(n, true, ReadMode::Pread).unwrap());
    assert!(matches!(copied, (Table::Layer(_), Table::Layer(_))), "{copied:?}");
    // Entry by entry, as when the copies do not fit.
    let bounds_file = read_by_entry::<BoundsKind>(&d, &d.path::<BoundsKind>(n), n);
    let dtc_file = read_by_entry::<DtcKind>(&d, &d.path::<DtcKind>(n), n);
    for i in 0..size {
        let b = bounds.get(i).unwrap();
        assert_eq!((copied.0.get(i).unwrap(), bounds_file.get(i).unwrap()), (b, b), "bounds of {i}");
        let depth = dtc.get(i).unwrap();
        assert_eq!((copied.1.get(i).unwrap(), dtc_file.get(i).unwrap()), (depth, depth), "depth of {i}");
    }
    assert!(matches!(bounds_file.get(size), Err(Error::IndexOutOfRange { .. })));
    assert!(matches!(dtc_file.get(size), Err(Error::IndexOutOfRange { .. })));
    bounds_file.check_unchanged().unwrap();
    dtc_file.check_unchanged().unwrap();
    assert!(!bounds_file.replaced() && !dtc_file.replaced());
    drop((bounds, dtc));
    // Truncated in place into the header: errors, and the identity check sees it.
    for path in [d.path::<BoundsKind>(n), d.path::<DtcKind>(n)] {
        OpenOptions::new().write(true).open(&path).unwrap().set_len(1000).unwrap();
    }
    for i in [0, size / 2, size - 1] {
        assert!(matches!(bounds_file.get(i), Err(Error::Corrupt { damage: Damage::Size { .. }, .. })));
        assert!(matches!(dtc_file.get(i), Err(Error::Corrupt { damage: Damage::Size { .. }, .. })));
        // The copies are private: still the values read when opened.
        copied.0.get(i).unwrap();
        copied.1.get(i).unwrap();
    }
    assert!(bounds_file.check_unchanged().is_err() && dtc_file.check_unchanged().is_err());
    assert!(copied.0.check_unchanged().is_err() && copied.1.check_unchanged().is_err());
    // Opened again: refused, naming the file.
    assert!(matches!(d.open_table::<BoundsKind>(n, false, ReadMode::Pread), Err(Error::Corrupt { .. })));
    assert!(matches!(d.open_table::<DtcKind>(n, false, ReadMode::Pread), Err(Error::Corrupt { .. })));
}

/// A pack of depths is told by its magic, not its name: at the `dtc-NN.owdb` path it is
/// probed in place in both read modes (never decoded whole), with the native depths; a pack
/// at a bounds path is named as the wrong content in both modes.
#[test]
fn a_pack_is_told_by_its_magic_in_both_read_modes() {
    let (_dir, d) = abapa_with_bounds_and_depths(9);
    let n = 9;
    let native = d.open_layer::<DtcKind>(n, true).unwrap();
    let depths: Vec<Option<u16>> = (0..layer_size(n)).map(|i| native.get(i).unwrap()).collect();
    let header = native.header().unwrap().clone();
    let payload = native.bytes().to_vec();
    drop(native);
    let values = d.open_layer::<ValuesKind>(n, true).unwrap();
    let mut packed = std::io::Cursor::new(Vec::new());
    let path = d.path::<DtcKind>(n);
    crate::pack::pack(&header, &payload, values.bytes(), crate::pack::PackOptions::default(), &mut packed, &path, &path).unwrap();
    std::fs::write(&path, packed.get_ref()).unwrap();
    for mode in [ReadMode::Map, ReadMode::Pread] {
        let table = d.open_table::<DtcKind>(n, true, mode).unwrap();
        assert!(matches!(table, Table::Pack(_)), "{mode:?}: {table:?}");
        for (i, want) in depths.iter().enumerate().step_by(7) {
            assert_eq!(table.get(i as u64).unwrap(), *want, "{mode:?}: depth of {i}");
        }
    }
    std::fs::write(d.path::<BoundsKind>(n), packed.get_ref()).unwrap();
    for mode in [ReadMode::Map, ReadMode::Pread] {
        match d.open_table::<BoundsKind>(n, true, mode) {
            Err(Error::Corrupt { damage: Damage::WrongContent { found: "a pack", .. }, .. }) => {}
            other => panic!("{mode:?}: {other:?}"),
        }
    }
}

/// Escaped depths (254 or more, in the table after the bytes) read with `pread` are the
/// mapped ones, and an escape without its record is the same error.
#[test]
fn escaped_depths_read_with_pread() {
    let dir = tempfile::tempdir().unwrap();
    let d = DatabaseDir::native(dir.path(), Ruleset::Awari).unwrap();
    let n = 2;
    let mut w = DtcWriter::create(&d, n, 3).unwrap();
    {
        let (bytes, records) = w.parts_mut();
        bytes.fill(NONE);
        bytes[2] = 7;
        for i in [1, 5, 40, 41] {
            bytes[i] = ESCAPE;
        }
        for (k, (i, depth)) in [(1, 300), (5, 400), (40, 1000)].into_iter().enumerate() {
            records[k * 8..k * 8 + 8].copy_from_slice(&crate::dtc::record(i, depth).to_le_bytes());
        }
    }
    w.finish().unwrap();
    let mapped = d.open_layer::<DtcKind>(n, true).unwrap();
    let path = d.path::<DtcKind>(n);
    let read = read_by_entry::<DtcKind>(&d, &path, n);
    for i in 0..layer_size(n) {
        match (mapped.get(i), read.get(i)) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "depth of {i}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("{i}: mapped {a:?}, read {b:?}"),
        }
    }
    assert_eq!((read.get(1).unwrap(), read.get(40).unwrap(), read.get(2).unwrap(), read.get(0).unwrap()), (Some(300), Some(1000), Some(7), None));
    assert!(matches!(read.get(41), Err(Error::Corrupt { damage: Damage::BadDtc { .. }, .. })));
}
