//! The cells' own tests: every value fits the one-byte cell, and racing resolutions and
//! decrements never corrupt a resolved value.

use super::*;

#[test]
fn every_value_survives_the_one_byte_cell() {
    for v in -48i8..=48 {
        let c = resolved(v);
        assert!(c & RESOLVED != 0);
        assert_eq!(value_of(c), v);
    }
    for pending in 0..=6 {
        for ended in [false, true] {
            let c = open(pending, ended);
            assert_eq!((c & RESOLVED, c & PENDING, c & LOSES, c & ENDED != 0), (0, pending, 0, ended));
        }
    }
}

/// Threads race on the same cells: one resolves each cell with its own value while two
/// others refute its six same-layer moves, three each. Every cell ends resolved exactly
/// once: with its value when the resolution came first, with `-t` when the last decrement
/// of a cell marked [`LOSES`] did; never with anything else, and a cell never marked stays
/// open with its counter at zero when the decrements win.
#[test]
fn decrements_never_corrupt_a_resolved_value() {
    const CELLS: usize = 1 << 16;
    let t = 5i8;
    for round in 0..4 {
        let cells: Vec<Cell> = (0..CELLS).map(|k| Cell::new(open(6, false) | if k % 3 != 0 { LOSES } else { 0 })).collect();
        let value = |k: usize| (k % 97) as i8 - 48;
        let (by_value, by_decrement) = std::thread::scope(|s| {
            let resolver = s.spawn(|| {
                // Walks the cells in a different order each round.
                (0..CELLS).map(|i| if round % 2 == 0 { i } else { CELLS - 1 - i }).filter(|&k| resolve(&cells[k], value(k))).count()
            });
            let refuters: Vec<_> =
                (0..2).map(|_| s.spawn(|| (0..CELLS).flat_map(|k| (0..3).map(move |_| k)).filter(|&k| decrement(&cells[k], t).is_some()).count())).collect();
            let by_decrement: usize = refuters.into_iter().map(|h| h.join().unwrap()).sum();
            (resolver.join().unwrap(), by_decrement)
        });
        let mut resolved_by_decrement = 0;
        for (k, c) in cells.iter().enumerate() {
            let c = c.load(Relaxed);
            if c & RESOLVED == 0 {
                panic!("cell {k} is still open: {c:#04x}");
            }
            let v = value_of(c);
            if v != value(k) {
                assert!(v == -t && k % 3 != 0, "cell {k}: value {v}, neither its own {} nor -{t}", value(k));
                resolved_by_decrement += 1;
            }
        }
        // (A cell whose own value is -t counts as resolved by its value here.)
        assert!(resolved_by_decrement <= by_decrement, "round {round}");
        assert_eq!(by_value + by_decrement, CELLS, "round {round}: each cell resolved exactly once");
    }
}
