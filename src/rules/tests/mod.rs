//! The move generator's own tests, beside it because they drive its internals (packed boards, raw
//! sowings and captures): the sowing, the exits pass's view and the search's shortcuts against
//! [`Ruleset::moves`], the rulesets' names and ids, and the un-moves against the forward moves
//! (`unmove.rs`). The generator against a naive one, perft and the test vectors are in
//! `tests/suite/` (`rules_*`, `perft`).

mod unmove;

use super::packed::{pack, pit_of, raw_move, sow, turned_packed};
use super::shortcuts::raw_capture;
use super::*;

#[test]
fn sowing_skips_origin() {
    let mut b = [0u8; 12];
    b[4] = 14;
    let (after, last) = sow(&b, 4);
    assert_eq!(after[4], 0);
    assert_eq!(after.iter().map(|&c| c as u32).sum::<u32>(), 14);
    // 14 stones: 11 pits get one, then pits 5, 6, 7 get a second.
    assert_eq!(after[5], 2);
    assert_eq!(after[7], 2);
    assert_eq!(after[8], 1);
    assert_eq!(last, 7);
}

/// [`Ruleset::exits`], [`Ruleset::surely_has_moves`] and [`sowings`] against
/// [`Ruleset::moves`]: every board of layers 0..8 and random boards of every layer, under
/// every ruleset.
#[test]
fn exits_agree_with_moves_and_the_searchs_shortcuts_hold() {
    use crate::index::{layer_size, unrank};
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut boards: Vec<Board> = Vec::new();
    for n in 0..=8 {
        boards.extend((0..layer_size(n)).map(|i| unrank(n, i).unwrap()));
    }
    for n in 9..=48 {
        for _ in 0..2000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            boards.push(unrank(n, (seed >> 11) % layer_size(n)).unwrap());
        }
    }
    let mut surely = 0;
    for rules in Ruleset::ALL {
        for b in &boards {
            let mut caps = Vec::new();
            let got = rules.exits(b, |c, child| caps.push((c, *child)));
            let moves = rules.moves(b);
            let want = match moves.ending() {
                Some(v) => Exits::Ended(v),
                None => {
                    let ends = moves.as_slice().iter().filter_map(|m| match m.outcome {
                        Outcome::End { value } => Some(value),
                        Outcome::Child { .. } => None,
                    });
                    let same = moves.as_slice().iter().filter(|m| matches!(m.outcome, Outcome::Child { captured: 0, .. })).count();
                    Exits::Moves { best_end: ends.max(), same_layer: same as u8 }
                }
            };
            let want_caps: Vec<(u8, Board)> = moves
                .as_slice()
                .iter()
                .filter_map(|m| match m.outcome {
                    Outcome::Child { captured, child } if captured > 0 => Some((captured, child)),
                    _ => None,
                })
                .collect();
            assert_eq!((got, &caps), (want, &want_caps), "{rules:?} {b:?}");
            // The search's shortcuts on the same boards: a position said to have moves has
            // some, and the sowings bound the legal moves' captures.
            if rules.surely_has_moves(b) {
                surely += 1;
                assert!(moves.ending().is_none() && !moves.is_empty(), "{rules:?} {b:?}");
            }
            let x = pack(b);
            for pit in (0..ROW).filter(|&p| b[p] > 0) {
                assert_eq!(raw_capture(x, pit), raw_move(x, pit).captured, "{b:?} {pit}");
            }
            let sown = sowings(b);
            // The table-driven sowings against raw_capture pit by pit, both sides.
            for (side, y) in [x, turned_packed(x)].into_iter().enumerate() {
                let live: Vec<usize> = (0..ROW).filter(|&p| pit_of(y, p) > 0).collect();
                let caps: Vec<u8> = live.iter().map(|&p| raw_capture(y, p)).collect();
                let want = (caps.iter().copied().max().unwrap_or(0), live.len() as u8);
                assert_eq!(sown.sides[side], want, "{b:?} side {side}");
                if side == 0 {
                    let mask = live.iter().zip(&caps).filter(|&(_, &c)| c > 0).fold(0u8, |m, (&p, _)| m | 1 << p);
                    assert_eq!(sown.capturing, mask, "{b:?}");
                }
            }
            let [(best, pits), _] = sown.sides;
            assert_eq!(usize::from(pits), b[..ROW].iter().filter(|&&c| c > 0).count());
            let capturing = sown.capturing;
            for m in moves.as_slice() {
                if let Outcome::Child { captured, .. } = m.outcome {
                    assert!(captured <= best, "{rules:?} {b:?}");
                }
                if matches!(m.outcome, Outcome::End { .. } | Outcome::Child { captured: 1.., .. }) {
                    assert!(capturing & (1 << m.pit) != 0, "{rules:?} {b:?} {}", m.pit);
                }
            }
        }
    }
    assert!(surely > boards.len(), "{surely} of {} boards × 7 rulesets said to have moves", boards.len());
}

#[test]
fn ruleset_names_and_ids_round_trip() {
    for r in Ruleset::ALL {
        assert_eq!(r.name().parse::<Ruleset>().unwrap(), r);
        assert_eq!(Ruleset::from_id(r.id()), Some(r));
    }
    assert!("chess".parse::<Ruleset>().is_err());
}
