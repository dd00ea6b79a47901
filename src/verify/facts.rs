//! The published facts `oware verify` checks against whatever layers are present
//! (documented in `docs/facts.md`): layer sizes, entry counts, the values of layer 1, the
//! published position and the start position.
//!
//! Everything here works on value slices (`layers[n]` is layer `n`'s values, or `None`), so it
//! is tested without building or opening any file. Move values are computed here from
//! [`Ruleset::moves`] and the layers, not through the builder or the probing library.

use serde::Serialize;

use crate::index::{layer_size, rank_unchecked};
use crate::rules::{stones, Board, GrandSlam, Outcome, Ruleset, PITS};
use crate::units::{describe_layers, group_digits, layers_phrase};

/// The published layer-size table (`docs/facts.md`): `(n, boards in layer n, boards in layers 0..=n)`, copied
/// from the document (not computed), for every layer of the 48-stone game (no layer 47).
pub(crate) const PUBLISHED_LAYER_SIZES: [(u32, u64, u64); 48] = [
    (0, 1, 1),
    (1, 12, 13),
    (2, 78, 91),
    (3, 364, 455),
    (4, 1_365, 1_820),
    (5, 4_368, 6_188),
    (6, 12_375, 18_563),
    (7, 31_812, 50_375),
    (8, 75_504, 125_879),
    (9, 167_596, 293_475),
    (10, 351_351, 644_826),
    (11, 701_064, 1_345_890),
    (12, 1_339_702, 2_685_592),
    (13, 2_464_320, 5_149_912),
    (14, 4_381_818, 9_531_730),
    (15, 7_558_200, 17_089_930),
    (16, 12_685_179, 29_775_109),
    (17, 20_768_748, 50_543_857),
    (18, 33_245_212, 83_789_069),
    (19, 52_131_156, 135_920_225),
    (20, 80_214_915, 216_135_140),
    (21, 121_298_320, 337_433_460),
    (22, 180_498_825, 517_932_285),
    (23, 264_623_580, 782_555_865),
    (24, 382_628_610, 1_165_184_475),
    (25, 546_177_996, 1_711_362_471),
    (26, 770_319_837, 2_481_682_308),
    (27, 1_074_297_808, 3_555_980_116),
    (28, 1_482_519_324, 5_038_499_440),
    (29, 2_025_703_680, 7_064_203_120),
    (30, 2_742_236_068, 9_806_439_188),
    (31, 3_679_756_080, 13_486_195_268),
    (32, 4_897_012_197, 18_383_207_465),
    (33, 6_466_016_844, 24_849_224_309),
    (34, 8_474_539_866, 33_323_764_175),
    (35, 11_028_981_756, 44_352_745_931),
    (36, 14_257_671_649, 58_610_417_580),
    (37, 18_314_638_992, 76_925_056_572),
    (38, 23_383_911_915, 100_308_968_487),
    (39, 29_684_399_668, 129_993_368_155),
    (40, 37_475_421_060, 167_468_789_215),
    (41, 47_062_945_644, 214_531_734_859),
    (42, 58_806_619_443, 273_338_354_302),
    (43, 73_127_652_312, 346_466_006_614),
    (44, 90_517_649_586, 436_983_656_200),
    (45, 111_548_476_480, 548_532_132_680),
    (46, 136_883_249_790, 685_415_382_470),
    (48, 203_648_015_935, 889_063_398_405),
];

/// Positions in the full published solution: every layer of the table plus the start position.
pub(crate) const PUBLISHED_TOTAL_POSITIONS: u64 = 889_063_398_406;

/// The published example position (mover-first), its value and its move values.
pub(crate) const PUBLISHED_POSITION: Board = [1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0];
/// Value of [`PUBLISHED_POSITION`] under `awari`.
pub(crate) const PUBLISHED_POSITION_VALUE: i8 = 0;
/// Values of the moves from pits 0..5 of [`PUBLISHED_POSITION`] under `awari`.
pub(crate) const PUBLISHED_MOVE_VALUES: [i8; 6] = [-1, -1, -2, -2, -2, 0];

/// Outcome of checking one fact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FactStatus {
    /// Checked, and the layers agree with the fact.
    Passed,
    /// Checked, and the layers contradict the fact.
    Failed,
    /// The layers at hand do not cover the fact, or it is not stated for this ruleset.
    NotCheckable,
}

impl FactStatus {
    /// `passed`, `FAILED` or `not checkable`, for reports.
    pub fn label(self) -> &'static str {
        match self {
            FactStatus::Passed => "passed",
            FactStatus::Failed => "FAILED",
            FactStatus::NotCheckable => "not checkable",
        }
    }
}

/// One published fact and what checking it gave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FactReport {
    /// Short stable name: `layer-size-formula`, `layer-entry-counts`, `layer-1-values`,
    /// `published-position`, `start-position`.
    pub id: &'static str,
    /// The fact, as stated.
    pub statement: String,
    /// Passed, failed or not checkable.
    pub status: FactStatus,
    /// What was compared, what differed, or why it could not be checked.
    pub detail: String,
}

impl FactReport {
    fn new(id: &'static str, statement: impl Into<String>, status: FactStatus, detail: impl Into<String>) -> FactReport {
        FactReport { id, statement: statement.into(), status, detail: detail.into() }
    }
}

/// Checks every published fact (`docs/facts.md`) that the given layers cover.
///
/// Parameters: `rules`, the ruleset of the layers; `layers[n]`, layer `n`'s values when it is
/// present and intact, `None` otherwise (the slice may be shorter than 49).
///
/// Result, in this order (one report each):
/// - `layer-size-formula`: [`layer_size`] reproduces every row of the published table, and the
///   layers plus the start position sum to 889,063,398,406 positions (needs no layer);
/// - `layer-entry-counts`: every present layer holds the published number of positions, and the
///   present prefix `0..=k` the published cumulative count;
/// - `layer-1-values`: a lone stone in the mover's pits 0..4 is +1, in pit 5 -1, on the opponent's
///   side -1 (stated for `awari` and `abapa`; needs layer 1);
/// - `published-position`: `1 1 1 1 1 2 4 2 3 0 0 0` has value 0 and move values
///   -1 -1 -2 -2 -2 0, move 5 capturing 3 (`awari`; the source calls it 18-stone but the pits hold
///   16 stones, so it needs layer 16 and the layers its captures lead to, i.e. a build of 0..16);
/// - `start-position`: the start position has value 0 (`awari`; computed from its children, so it
///   needs layer 48 and hence a build of every layer).
///
/// Move values are computed here from [`Ruleset::moves`] and the layers, not via another module.
///
/// Cost: a few table lookups, plus one pass over each present layer's length; no file access.
pub(crate) fn check_facts(rules: Ruleset, layers: &[Option<&[i8]>]) -> Vec<FactReport> {
    vec![
        fact_layer_size_formula(),
        fact_layer_entry_counts(layers),
        fact_layer_1(rules, layers),
        fact_published_position(rules, layers),
        fact_start_position(rules, layers),
    ]
}

/// The layer at `n` when present.
fn layer_at<'a>(layers: &[Option<&'a [i8]>], n: u32) -> Option<&'a [i8]> {
    layers.get(n as usize).copied().flatten()
}

fn present(layers: &[Option<&[i8]>]) -> String {
    describe_layers((0..layers.len() as u32).filter(|&n| layer_at(layers, n).is_some()))
}

fn fact_layer_size_formula() -> FactReport {
    let statement = "layer n holds C(n+11,11) - C(n+5,11) boards (published table, no layer 47); \
                     the full solution holds 889,063,398,406 positions";
    let mut wrong = Vec::new();
    let mut cumulative = 0u64;
    for &(n, size, cum) in &PUBLISHED_LAYER_SIZES {
        cumulative += layer_size(n);
        if layer_size(n) != size || cumulative != cum {
            wrong.push(format!(
                "layer {n}: formula {} (cumulative {}), table {} (cumulative {})",
                group_digits(layer_size(n)),
                group_digits(cumulative),
                group_digits(size),
                group_digits(cum)
            ));
        }
    }
    let total = cumulative + 1;
    if total != PUBLISHED_TOTAL_POSITIONS {
        wrong.push(format!(
            "total {} + start position = {}, published {}",
            group_digits(cumulative),
            group_digits(total),
            group_digits(PUBLISHED_TOTAL_POSITIONS)
        ));
    }
    if wrong.is_empty() {
        FactReport::new(
            "layer-size-formula",
            statement,
            FactStatus::Passed,
            format!("the indexer's layer sizes match all {} rows and sum, with the start position, to {}", PUBLISHED_LAYER_SIZES.len(), group_digits(total)),
        )
    } else {
        FactReport::new("layer-size-formula", statement, FactStatus::Failed, wrong.join("; "))
    }
}

fn fact_layer_entry_counts(layers: &[Option<&[i8]>]) -> FactReport {
    let statement = "every layer holds the published number of positions";
    let mut checked = Vec::new();
    let mut wrong = Vec::new();
    let mut unlisted = Vec::new();
    for n in 0..layers.len() as u32 {
        let Some(values) = layer_at(layers, n) else { continue };
        match PUBLISHED_LAYER_SIZES.iter().find(|row| row.0 == n) {
            Some(&(_, size, _)) => {
                checked.push(n);
                if values.len() as u64 != size {
                    wrong.push(format!("layer {n} holds {} positions, published {}", group_digits(values.len() as u64), group_digits(size)));
                }
            }
            None => unlisted.push(n),
        }
    }
    if checked.is_empty() {
        return FactReport::new(
            "layer-entry-counts",
            statement,
            FactStatus::NotCheckable,
            format!("no layer of the published table is present (present: {})", present(layers)),
        );
    }
    // The cumulative count of the present prefix 0..=k.
    let prefix = (0..layers.len() as u32).take_while(|&n| layer_at(layers, n).is_some()).last();
    let mut detail = format!("{} checked", layers_phrase(checked.iter().copied()));
    if let Some(k) = prefix {
        if let Some(&(_, _, cum)) = PUBLISHED_LAYER_SIZES.iter().find(|row| row.0 == k) {
            let sum: u64 = (0..=k).filter_map(|n| layer_at(layers, n)).map(|v| v.len() as u64).sum();
            if sum != cum {
                wrong.push(format!("layers 0..{k} hold {} positions, published {}", group_digits(sum), group_digits(cum)));
            } else {
                detail.push_str(&format!("; layers 0..{k} hold {} positions as published", group_digits(sum)));
            }
        }
    }
    if !unlisted.is_empty() {
        detail.push_str(&format!("; {} not in the table (never needed)", layers_phrase(unlisted)));
    }
    if wrong.is_empty() {
        FactReport::new("layer-entry-counts", statement, FactStatus::Passed, detail)
    } else {
        FactReport::new("layer-entry-counts", statement, FactStatus::Failed, wrong.join("; "))
    }
}

fn fact_layer_1(rules: Ruleset, layers: &[Option<&[i8]>]) -> FactReport {
    let statement = "layer 1: a lone stone in the mover's pits 0..4 is worth +1, in pit 5 -1, \
                     on the opponent's side -1 (awari and abapa)";
    if !matches!(rules, Ruleset::Awari | Ruleset::Abapa(GrandSlam::NoCapture)) {
        return FactReport::new("layer-1-values", statement, FactStatus::NotCheckable, format!("stated for awari and abapa only, not for {rules}"));
    }
    let Some(values) = layer_at(layers, 1) else {
        return FactReport::new("layer-1-values", statement, FactStatus::NotCheckable, "layer 1 is not present");
    };
    let mut wrong = Vec::new();
    for pit in 0..PITS {
        let mut board = [0u8; PITS];
        board[pit] = 1;
        let expected: i8 = if pit < 5 { 1 } else { -1 };
        match values.get(rank_unchecked(&board) as usize) {
            Some(&v) if v == expected => {}
            Some(&v) => wrong.push(format!("stone in pit {pit}: stored {v:+}, published {expected:+}")),
            None => wrong.push(format!("stone in pit {pit}: not in the layer file")),
        }
    }
    if wrong.is_empty() {
        FactReport::new("layer-1-values", statement, FactStatus::Passed, "all 12 positions of layer 1 as published")
    } else {
        FactReport::new("layer-1-values", statement, FactStatus::Failed, wrong.join("; "))
    }
}

/// A position's moves valued from the layers: `(pit, captured, value)` per legal move, or the
/// ending value when there is no legal move.
enum Valued {
    Moves(Vec<(u8, u8, i16)>),
    Ending(i8),
}

/// Values every legal move of `board` from the layers; `Err` lists the layers it would need
/// that are absent (or too short to hold the child).
fn value_moves(rules: Ruleset, board: &Board, layers: &[Option<&[i8]>]) -> std::result::Result<Valued, Vec<u32>> {
    let moves = rules.moves(board);
    if let Some(v) = moves.ending() {
        return Ok(Valued::Ending(v));
    }
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for m in moves.as_slice() {
        match m.outcome {
            Outcome::End { value } => out.push((m.pit, 0, i16::from(value))),
            Outcome::Child { captured, child } => {
                let l = stones(&child);
                match layer_at(layers, l).and_then(|v| v.get(rank_unchecked(&child) as usize)) {
                    Some(&v) => out.push((m.pit, captured, i16::from(captured) - i16::from(v))),
                    None => missing.push(l),
                }
            }
        }
    }
    if missing.is_empty() {
        Ok(Valued::Moves(out))
    } else {
        missing.sort_unstable();
        missing.dedup();
        Err(missing)
    }
}

fn fact_published_position(rules: Ruleset, layers: &[Option<&[i8]>]) -> FactReport {
    let board = PUBLISHED_POSITION;
    let n = stones(&board);
    let statement = format!(
        "position 1 1 1 1 1 2 4 2 3 0 0 0 has value 0 and move values -1 -1 -2 -2 -2 0, move 5 \
         capturing 3 (awari). The source calls it 18-stone, but its pits hold {n} stones: it is in \
         layer {n} and needs a build of layers 0..{n}"
    );
    let id = "published-position";
    if rules != Ruleset::Awari {
        return FactReport::new(id, statement, FactStatus::NotCheckable, format!("published for awari, not {rules}"));
    }
    let mut need = vec![n];
    let valued = value_moves(rules, &board, layers);
    if let Err(missing) = &valued {
        need.extend(missing);
    }
    let stored = layer_at(layers, n).and_then(|v| v.get(rank_unchecked(&board) as usize)).copied();
    let moves = match (stored, valued) {
        (Some(_), Ok(Valued::Moves(m))) => m,
        (Some(_), Ok(Valued::Ending(v))) => {
            return FactReport::new(id, statement, FactStatus::Failed, format!("the move generator finds no legal move (ending value {v:+})"))
        }
        _ => {
            need.sort_unstable();
            need.dedup();
            let absent: Vec<u32> = need.into_iter().filter(|&l| layer_at(layers, l).is_none()).collect();
            return FactReport::new(
                id,
                statement,
                FactStatus::NotCheckable,
                format!("needs {} (build layers 0..{n}); present: {}", layers_phrase(absent), present(layers)),
            );
        }
    };
    let stored = stored.unwrap_or_default();
    let mut wrong = Vec::new();
    if stored != PUBLISHED_POSITION_VALUE {
        wrong.push(format!("stored value {stored:+}, published {PUBLISHED_POSITION_VALUE:+}"));
    }
    let mut got = Vec::new();
    for (pit, &expected) in PUBLISHED_MOVE_VALUES.iter().enumerate() {
        match moves.iter().find(|m| m.0 as usize == pit) {
            Some(&(_, captured, v)) => {
                got.push(format!("{v:+}"));
                if v != i16::from(expected) {
                    wrong.push(format!("move {pit}: value {v:+}, published {expected:+}"));
                }
                if pit == 5 && captured != 3 {
                    wrong.push(format!("move 5 captures {captured}, published 3"));
                }
            }
            None => {
                got.push("illegal".into());
                wrong.push(format!("move {pit} is not legal"));
            }
        }
    }
    let best = moves.iter().map(|m| m.2).max().unwrap_or(i16::MIN);
    if best != i16::from(stored) {
        wrong.push(format!("the best move is worth {best:+}, but the stored value is {stored:+}"));
    }
    let detail = format!("stored value {stored:+}; move values {}; move 5 captures 3 into layer {}", got.join(" "), n - 3);
    if wrong.is_empty() {
        FactReport::new(id, statement, FactStatus::Passed, detail)
    } else {
        FactReport::new(id, statement, FactStatus::Failed, format!("{}; {detail}", wrong.join("; ")))
    }
}

fn fact_start_position(rules: Ruleset, layers: &[Option<&[i8]>]) -> FactReport {
    let id = "start-position";
    let statement = "the 48-stone start position (4 in every pit) has value 0: Awari is a draw";
    if rules != Ruleset::Awari {
        return FactReport::new(id, statement, FactStatus::NotCheckable, format!("published for awari, not {rules}"));
    }
    let board: Board = [4; PITS];
    match value_moves(rules, &board, layers) {
        Err(missing) => FactReport::new(
            id,
            statement,
            FactStatus::NotCheckable,
            format!(
                "the start position is in no layer; its value comes from its children in {} \
                 ({} positions, which need layers 0..46 below them, not 47); present: {}",
                layers_phrase(missing.iter().copied()),
                group_digits(missing.iter().map(|&l| layer_size(l)).sum()),
                present(layers)
            ),
        ),
        Ok(Valued::Ending(v)) => FactReport::new(id, statement, FactStatus::Failed, format!("the move generator finds no legal move (ending value {v:+})")),
        Ok(Valued::Moves(moves)) => {
            let best = moves.iter().map(|m| m.2).max().unwrap_or(i16::MIN);
            let list: Vec<String> = moves.iter().map(|m| format!("{:+}", m.2)).collect();
            let detail = format!("value {best:+} from move values {}", list.join(" "));
            let status = if best == 0 { FactStatus::Passed } else { FactStatus::Failed };
            FactReport::new(id, statement, status, detail)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_formula_fact_passes_and_table_is_complete() {
        let f = fact_layer_size_formula();
        assert_eq!(f.status, FactStatus::Passed, "{}", f.detail);
        assert!(PUBLISHED_LAYER_SIZES.iter().all(|r| r.0 != 47));
    }

    #[test]
    fn layer_1_fact_uses_the_values() {
        // Layer 1 as published, then with one value changed.
        let mut v1 = vec![0i8; layer_size(1) as usize];
        for pit in 0..PITS {
            let mut b = [0u8; PITS];
            b[pit] = 1;
            v1[rank_unchecked(&b) as usize] = if pit < 5 { 1 } else { -1 };
        }
        let good = check_facts(Ruleset::Awari, &[None, Some(&v1)]);
        assert_eq!(good[2].status, FactStatus::Passed, "{}", good[2].detail);
        let mut b = [0u8; PITS];
        b[5] = 1;
        v1[rank_unchecked(&b) as usize] = 1;
        let bad = check_facts(Ruleset::Awari, &[None, Some(&v1)]);
        assert_eq!(bad[2].status, FactStatus::Failed);
        assert!(bad[2].detail.contains("pit 5"), "{}", bad[2].detail);
        // Other facts need layers that are absent.
        assert_eq!(bad[3].status, FactStatus::NotCheckable);
        assert!(bad[3].detail.contains("needs layers 13, 16"), "{}", bad[3].detail);
        assert_eq!(bad[4].status, FactStatus::NotCheckable);
        assert!(bad[4].detail.contains("layer 48"), "{}", bad[4].detail);
    }
}
