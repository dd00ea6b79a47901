//! Floors: what a position's moves that leave its layer are worth, and why a pack may store
//! anything up to it ("don't care" positions, codec 4).
//!
//! The *floor* of a position is the best value among its moves whose value does not depend on
//! its own layer: its captures (`captured - v(child)`, the child in a smaller layer) and its
//! moves that end the game; a position with no legal move has its ending value as floor, and one
//! whose moves all stay in the layer has none ([`NO_FLOOR`]). A position's value is the best of
//! all its moves, so it is never below its floor; where it equals it (the value is reached by a
//! capture or an ending), a reader that knows the floor knows the value. A pack of codec 4 or 6
//! stores at such a position whatever codes cheapest, as long as it is not above the floor, and
//! every reader takes `max(stored, floor)`:
//!
//! - where the value is above the floor, the stored value is the value, and the maximum is it;
//! - where it equals the floor, the stored value is at most the floor, and the maximum is the
//!   floor, which is the value.
//!
//! The writer checks `value >= floor` at every position before it writes anything.

use crate::error::Result;
use crate::rules::{Board, Exits, Ruleset, ROW};

/// The floor of a position whose moves all stay in its layer.
pub const NO_FLOOR: i8 = i8::MIN;

/// The moves of a position that leave its layer, as a reader needs them to find its floor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Exit {
    /// The game is over: its value (the position's value, whatever is stored).
    pub(crate) ended: Option<i8>,
    /// The best value of a move that ends the game ([`NO_FLOOR`] when none does).
    pub(crate) best_end: i8,
    /// The captures: stones taken and the child (turned, in a smaller layer).
    pub(crate) captures: [(u8, Board); ROW],
    /// How many of [`captures`](Self::captures) are used.
    pub(crate) count: usize,
}

impl Exit {
    /// The exits of `board` under `rules`.
    ///
    /// Cost: one move generation (under `awari`, no board but the capturing children's).
    #[inline]
    pub(crate) fn of(rules: Ruleset, board: &Board) -> Exit {
        let mut x = Exit { ended: None, best_end: NO_FLOOR, captures: [(0, [0; 12]); ROW], count: 0 };
        match rules.exits(board, |c, child| {
            x.captures[x.count] = (c, *child);
            x.count += 1;
        }) {
            Exits::Ended(v) => x.ended = Some(v),
            Exits::Moves { best_end, .. } => x.best_end = best_end.unwrap_or(NO_FLOOR),
        }
        x
    }

    /// The captures, in increasing pit order.
    #[inline]
    pub(crate) fn captures(&self) -> &[(u8, Board)] {
        &self.captures[..self.count]
    }
}

/// The floor of `board` (see the module's docs), the values of the capturing children read with
/// `child_value`.
///
/// # Errors
/// Those of `child_value`.
#[inline]
pub fn floor(rules: Ruleset, board: &Board, mut child_value: impl FnMut(&Board) -> Result<i8>) -> Result<i8> {
    let x = Exit::of(rules, board);
    if let Some(v) = x.ended {
        return Ok(v);
    }
    let mut best = x.best_end;
    for &(c, ref child) in x.captures() {
        best = best.max(c as i8 - child_value(child)?);
    }
    Ok(best)
}

/// The depth to capture of `board` (value `value`) when its value and floor decide it, as a
/// pack of depths over floors (codec 5) leaves it to the reader: `Some(None)` for value 0 (no
/// depth), `Some(Some(0))` when the game is over, `Some(Some(1))` for a value above 0 that a
/// capture or an ending reaches; `None` otherwise (the pack holds the depth). The values of the
/// capturing children are read with `child_value`, only while they could decide it.
///
/// # Errors
/// Those of `child_value`.
pub(crate) fn decided_depth(rules: Ruleset, board: &Board, value: i8, mut child_value: impl FnMut(&Board) -> Result<i8>) -> Result<Option<Option<u16>>> {
    if value == 0 {
        return Ok(Some(None));
    }
    let x = Exit::of(rules, board);
    if x.ended.is_some() {
        return Ok(Some(Some(0)));
    }
    if value < 0 {
        return Ok(None);
    }
    if x.best_end == value {
        return Ok(Some(Some(1)));
    }
    for &(c, ref child) in x.captures() {
        // The child's value is at least -m: a capture of c stones is worth at most c + m.
        if i32::from(c) + crate::rules::stones(child) as i32 >= i32::from(value) && c as i8 - child_value(child)? == value {
            return Ok(Some(Some(1)));
        }
    }
    Ok(None)
}

/// The floors of every position of layer `n` under `rules`, in index order, the values of the
/// capturing children read with `child_value`.
///
/// Cost: one move generation per position and one `child_value` per capture, in parallel;
/// memory: one byte per position.
///
/// # Errors
/// Those of `child_value` (the first met).
pub fn floors(rules: Ruleset, n: u32, child_value: &(dyn Fn(&Board) -> Result<i8> + Sync)) -> Result<Vec<i8>> {
    let mut out = vec![NO_FLOOR; crate::index::layer_size(n) as usize];
    for_each_board(n, &mut out, &|_| {}, |_, board, f| {
        *f = floor(rules, board, child_value)?;
        Ok(())
    })?;
    Ok(out)
}

/// Calls `f(index, board, entry)` for every position of layer `n` with its entry of `out` (one
/// per position, in index order), in parallel over chunks of the layer, each walked in index
/// order from one `unrank`; `done(range)` after each chunk, with the positions it covered (to
/// give their pages back, [`crate::pack::pack_dtc_over`]).
///
/// # Errors
/// The first error of `f` met.
pub(crate) fn for_each_board<T: Send>(
    n: u32,
    out: &mut [T],
    done: &(dyn Fn(std::ops::Range<u64>) + Sync),
    f: impl Fn(usize, &Board, &mut T) -> Result<()> + Sync,
) -> Result<()> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 16;
    out.par_chunks_mut(CHUNK).enumerate().try_for_each(|(c, chunk)| -> Result<()> {
        let mut b = crate::index::unrank_unchecked(n, (c * CHUNK) as u64);
        for (i, e) in chunk.iter_mut().enumerate() {
            if i > 0 {
                crate::index::LayerWalker::advance(&mut b);
            }
            f(c * CHUNK + i, &b, e)?;
        }
        done((c * CHUNK) as u64..(c * CHUNK + chunk.len()) as u64);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Damage, Error};
    use crate::index::{layer_size, unrank_unchecked};
    use crate::pack::{pack_dtc_over, pack_floored, PackBuffers, PackOptions};
    use crate::probe::Database;
    use crate::storage::{pack_path, DatabaseDir, DtcKind, ReadMode, Table, ValuesKind};
    use crate::test_support as common;

    /// Packs layers `0..=max` of `src` (values, in blocks of `block`, and depths) over floors
    /// into `out`, and returns how many positions store something other than their value.
    fn pack_all(src: &std::path::Path, rules: Ruleset, max: u32, out: &std::path::Path, block: u32) -> u64 {
        let d = DatabaseDir::native(src, rules).unwrap();
        let lower: Vec<_> = (0..=max).map(|n| d.open_layer::<ValuesKind>(n, true).unwrap()).collect();
        let mut differ = 0;
        std::fs::create_dir_all(out.join(rules.name())).unwrap();
        for n in 0..=max {
            let layer = &lower[n as usize];
            // In scratch files for odd layers, every page given back behind each pass (the
            // layer's, its depths', the scratch files'); in memory for even ones: both the same.
            let work = tempfile::tempdir().unwrap();
            let files = n % 2 == 1;
            let dtc = d.open_layer::<DtcKind>(n, true).ok();
            let mut buffers = PackBuffers::new(n, files.then_some(work.path())).unwrap();
            let (fl, stored, pages) = buffers.split();
            // How many times each position's pages were given back: once by every pass.
            let given_back = std::sync::Mutex::new(vec![0u8; layer_size(n) as usize]);
            let release = |r: std::ops::Range<u64>| {
                assert!(r.start <= r.end && r.end <= layer_size(n), "layer {n}: {r:?}");
                given_back.lock().unwrap()[r.start as usize..r.end as usize].iter_mut().for_each(|c| *c += 1);
                if files {
                    layer.release(r.clone());
                    dtc.iter().for_each(|d| d.release(r.clone()));
                    pages.release(r);
                }
            };
            let passes = |want: u8, what: &str| {
                let g = given_back.lock().unwrap();
                assert!(g.iter().all(|&c| c == want), "layer {n}, {what}: {:?} passes", g.iter().find(|&&c| c != want));
            };
            fl.copy_from_slice(&floors(rules, n, &|c: &Board| lower[crate::rules::stones(c) as usize].get(crate::index::rank(c)?)).unwrap());
            let header = layer.header().unwrap().clone();
            let mut w = std::io::Cursor::new(Vec::new());
            let opts = PackOptions { block_values: block };
            pack_floored(&header, layer.bytes(), fl, stored, opts, &release, &mut w, "p".as_ref(), layer.path()).unwrap();
            // The check, two counts, the choice and the coding.
            passes(5, "values");
            std::fs::write(pack_path::<ValuesKind>(out, rules, n), w.get_ref()).unwrap();
            for (i, (&s, &v)) in stored.iter().zip(layer.bytes()).enumerate() {
                // Never above the floor where it differs; the value where there is none.
                assert!(s == v || (s as i8) < v as i8 && fl[i] == v as i8, "layer {n} position {i}");
                differ += u64::from(s != v);
            }
            if let Some(dtc) = &dtc {
                let mut w = std::io::Cursor::new(Vec::new());
                // Range-coded depths (codec 7) beside range-coded values, rANS (codec 5) beside
                // rANS.
                let depth_block = if block <= crate::pack::RANGE_BLOCK_MAX { 64 } else { 512 };
                pack_dtc_over(
                    dtc.header().unwrap(),
                    dtc.bytes(),
                    layer.bytes(),
                    stored,
                    fl,
                    PackOptions { block_values: depth_block },
                    &release,
                    &mut w,
                    "p".as_ref(),
                    dtc.path(),
                )
                .unwrap();
                // The depths' tally, the deep ones found, the depths decided, their check, two
                // counts, the choice and the coding.
                passes(5 + 8, "depths");
                std::fs::write(pack_path::<DtcKind>(out, rules, n), w.get_ref()).unwrap();
            }
        }
        differ
    }

    /// Every position of layers 0..=9 of every ruleset: the value read from packs over floors
    /// (in place, through a database, and decoded whole) is the native file's, the depths too,
    /// and the packs do store something else at some positions (what makes them smaller).
    #[test]
    fn packs_over_floors_give_every_value_on_every_ruleset() {
        // Range-coded blocks (codec 6: the default, and small ones; depths in codec 7) and rANS
        // blocks (codec 4; depths in codec 5).
        for (rules, block) in Ruleset::ALL.into_iter().flat_map(|r| [(r, 64), (r, 16), (r, 256)]) {
            let max = 9;
            let src = common::with_dtc(rules, max);
            let out = tempfile::tempdir().unwrap();
            let differ = pack_all(src.path(), rules, max, out.path(), block);
            assert!(differ > 1000, "{rules}: only {differ} positions store something else");
            let native = Database::open(src.path(), rules).unwrap();
            let packed = Database::open(out.path(), rules).unwrap();
            let whole = DatabaseDir::native(out.path(), rules).unwrap();
            for n in 0..=max {
                let table = packed.layer(n).unwrap();
                assert!(matches!(table, Table::Pack(p) if p.over_floors()), "{rules} layer {n}");
                // What a pack over floors stores is never handed out as a value.
                assert!(matches!(table.get(0), Err(Error::Usage(_))), "{rules} layer {n}");
                let decoded = whole.open_layer::<ValuesKind>(n, true).unwrap();
                let ours = DatabaseDir::native(src.path(), rules).unwrap().open_layer::<ValuesKind>(n, true).unwrap();
                assert_eq!(decoded.bytes(), ours.bytes(), "{rules} layer {n} decoded whole");
                let depths = whole.open_layer::<DtcKind>(n, true).unwrap();
                let native_depths = DatabaseDir::native(src.path(), rules).unwrap().open_layer::<DtcKind>(n, true).unwrap();
                assert_eq!(depths.bytes(), native_depths.bytes(), "{rules} depths of layer {n} decoded whole");
                let dtc_table = whole.open_table::<DtcKind>(n, true, ReadMode::Map).unwrap();
                assert!(matches!(dtc_table.get(0), Err(Error::Usage(_))), "{rules} depths of layer {n}");
                for i in 0..layer_size(n) {
                    let p = crate::Position::new(unrank_unchecked(n, i)).unwrap();
                    assert_eq!(packed.value(&p).unwrap(), native.value(&p).unwrap(), "{rules} layer {n} position {i}");
                    assert_eq!(packed.dtc(&p).unwrap(), native_depths.get(i).unwrap(), "{rules} depth {n}/{i}");
                }
            }
        }
    }

    /// A flipped byte anywhere in a pack over floors is caught, or harmless: every value read
    /// through a database is right or an error naming the damage, never a wrong value.
    #[test]
    fn every_damaged_byte_of_a_pack_over_floors_is_caught_or_harmless() {
        let rules = Ruleset::Abapa(crate::rules::GrandSlam::NoCapture);
        let max = 6;
        let src = common::with_dtc(rules, max);
        let out = tempfile::tempdir().unwrap();
        // Range-coded blocks (codec 6) and rANS blocks (codec 4).
        for block in [64, 256] {
            pack_all(src.path(), rules, max, out.path(), block);
            let native = Database::open(src.path(), rules).unwrap();
            let path = pack_path::<ValuesKind>(out.path(), rules, max);
            let caught = each_flip(&path, 97, 5, |at| {
                let mut caught = 0;
                for verify in [false, true] {
                    let packed = Database::open(out.path(), rules).unwrap().verify_checksums(verify);
                    for i in (0..layer_size(max)).step_by(29) {
                        let p = crate::Position::new(unrank_unchecked(max, i)).unwrap();
                        caught += right_or_caught(packed.value(&p), native.value(&p).unwrap(), &format!("flip at byte {at}, position {i}"));
                    }
                }
                caught
            });
            assert!(caught > 0, "blocks of {block}");
            // The depths' pack beside it (codec 7 beside codec 6, codec 5 beside codec 4).
            let native_depths = DatabaseDir::native(src.path(), rules).unwrap().open_layer::<DtcKind>(max, true).unwrap();
            let caught = each_flip(&pack_path::<DtcKind>(out.path(), rules, max), 89, 7, |at| {
                let packed = Database::open(out.path(), rules).unwrap();
                let mut caught = 0;
                for i in (0..layer_size(max)).step_by(31) {
                    let p = crate::Position::new(unrank_unchecked(max, i)).unwrap();
                    let what = format!("depths, blocks of {block}: flip at byte {at}, position {i}");
                    caught += right_or_caught(packed.dtc(&p), native_depths.get(i).unwrap(), &what);
                }
                caught
            });
            assert!(caught > 0, "depths, blocks of {block}");
        }
    }

    /// Flips one byte of the file at `path` at a time (every `step`-th, and every `head_step`-th
    /// of the first 264: the headers), each time adding up what `probe(at)` counts as caught;
    /// then puts the file back.
    fn each_flip(path: &std::path::Path, step: usize, head_step: usize, mut probe: impl FnMut(usize) -> usize) -> usize {
        let good = std::fs::read(path).unwrap();
        let mut caught = 0;
        for at in (0..good.len()).step_by(step).chain((0..264).step_by(head_step)) {
            let mut bad = good.clone();
            bad[at] ^= 0x21;
            std::fs::write(path, &bad).unwrap();
            caught += probe(at);
        }
        std::fs::write(path, &good).unwrap();
        caught
    }

    /// 1 when `got` is an error naming damage, 0 when it is `want`; anything else fails the
    /// test (`what` says where).
    fn right_or_caught<T: PartialEq + std::fmt::Debug>(got: crate::Result<T>, want: T, what: &str) -> usize {
        match got {
            Ok(v) => {
                assert_eq!(v, want, "{what}");
                0
            }
            Err(e) => {
                assert!(matches!(e, Error::Corrupt { .. }), "{e}");
                1
            }
        }
    }

    /// A value below its floor (a layer that contradicts the smaller ones) is never packed.
    #[test]
    fn a_value_below_its_floor_is_refused() {
        let rules = Ruleset::Awari;
        let src = common::with_dtc(rules, 6);
        let d = DatabaseDir::native(src.path(), rules).unwrap();
        let lower: Vec<_> = (0..=6).map(|n| d.open_layer::<ValuesKind>(n, true).unwrap()).collect();
        let n = 6;
        let fl = floors(rules, n, &|c: &Board| lower[crate::rules::stones(c) as usize].get(crate::index::rank(c)?)).unwrap();
        let mut values = lower[6].bytes().to_vec();
        let at = (0..values.len()).find(|&i| fl[i] != NO_FLOOR && fl[i] > -6).unwrap();
        values[at] = (fl[at] - 1) as u8;
        let mut w = std::io::Cursor::new(Vec::new());
        let mut stored = vec![0u8; values.len()];
        let e = pack_floored(
            lower[6].header().unwrap(),
            &values,
            &fl,
            &mut stored,
            PackOptions::default(),
            &|_| {},
            &mut w,
            "p".as_ref(),
            "layer-06.owdb".as_ref(),
        )
        .unwrap_err();
        assert!(matches!(&e, Error::Corrupt { damage: Damage::Inconsistent { .. }, .. }) && e.to_string().contains("layer-06.owdb"), "{e}");
        assert!(w.get_ref().is_empty(), "nothing written");
    }
}
