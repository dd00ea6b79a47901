//! The static evaluation of the search: a linear function of a few cheap features of the board,
//! fitted by least squares on exact database values (`docs/eval.md`).
//!
//! [`evaluate`] predicts a position's value in centi-stones (value × 100) from the mover's view,
//! clamped to `-100 n..=100 n` for the `n` stones on the board. Its weights are the `const` table
//! of `weights.rs` beside this file, written by `examples/fit_eval.rs` (`scripts/fit-eval`). The
//! `fit` module holds what that tool and the tests need (sampling, least squares, the measures);
//! it is compiled into the library only with the feature `eval-fit` (as `oware::eval_fit`) and for
//! the tests.

#[cfg(any(test, feature = "eval-fit"))]
use crate::rules::{sowings, Ruleset};
use crate::rules::{stones, Board, Sowings, PITS, ROW};

/// Number of features.
pub(crate) const K: usize = 48;

/// The features' names, in order (for the fitting tool's output and `docs/eval.md`); pits are
/// numbered mover-first (0..5 the mover's, 6..11 the opponent's).
#[cfg(any(test, feature = "eval-fit"))]
#[cfg_attr(not(feature = "eval-fit"), allow(dead_code, unused_imports))]
pub const FEATURE_NAMES: [&str; K] = [
    "bias",
    "stones",
    "capture_now",
    "threat",
    "threat*s",
    "pits_own",
    "pits_opp",
    "stones_0",
    "stones_1",
    "stones_2",
    "stones_3",
    "stones_4",
    "stones_5",
    "stones_6",
    "stones_7",
    "stones_8",
    "stones_9",
    "stones_10",
    "stones_11",
    "weak_0",
    "weak_1",
    "weak_2",
    "weak_3",
    "weak_4",
    "weak_5",
    "weak_6",
    "weak_7",
    "weak_8",
    "weak_9",
    "weak_10",
    "weak_11",
    "empty_0",
    "empty_1",
    "empty_2",
    "empty_3",
    "empty_4",
    "empty_5",
    "empty_6",
    "empty_7",
    "empty_8",
    "empty_9",
    "empty_10",
    "empty_11",
    "kroo_own",
    "kroo_opp",
    "reach_own",
    "reach_opp",
    "ending",
];

/// Where the per-pit features start.
const STONES: usize = 7;
const WEAK: usize = STONES + PITS;
const EMPTY: usize = WEAK + PITS;
const KROO: usize = EMPTY + PITS;
const REACH: usize = KROO + 2;
#[cfg(any(test, feature = "eval-fit"))]
const ENDING: usize = REACH + 2;

include!("weights.rs");

/// The features of `board` (mover-first, `n` stones) under `rules`, as the weights expect them.
///
/// In the order of [`FEATURE_NAMES`], with `s = n / 24`: the bias; `n`; the mover's best capture
/// of one sowing now; the threat (the opponent's best capture of one sowing were he to move now),
/// also times `s`; each side's non-empty pits (its sowings); per pit, its stones, whether it holds
/// 1 or 2 (one more stone makes it capturable) and whether it is empty; each side's stones in
/// pits of 12 or more (a kroo, which laps the board); each side's pits whose sowing reaches the
/// other row; and, when the mover has no legal move, the game's ending value (all other features,
/// the bias too, then 0). `docs/eval.md` has the table. Only the last depends on the rules: the
/// sowings are counted without their legality ([`sowings`]), so that the search evaluates a
/// position without generating its moves.
///
/// Cost: the board's moves (for the ending) and twelve sowings; no allocation.
#[cfg(any(test, feature = "eval-fit"))]
#[cfg_attr(not(feature = "eval-fit"), allow(dead_code, unused_imports))]
pub fn features(rules: Ruleset, board: &Board) -> [f32; K] {
    let mut f = [0f32; K];
    if let Some(v) = rules.moves(board).ending() {
        f[ENDING] = f32::from(v);
        return f;
    }
    let n = stones(board) as f32;
    let s = n / 24.0;
    f[0] = 1.0;
    f[1] = n;
    let [(cap_now, own_pits), (threat, opp_pits)] = sowings(board).sides;
    f[2] = f32::from(cap_now);
    f[3] = f32::from(threat);
    f[4] = f32::from(threat) * s;
    f[5] = f32::from(own_pits);
    f[6] = f32::from(opp_pits);
    for (i, &c) in board.iter().enumerate() {
        let (side, to_end) = if i < ROW { (0, ROW - i) } else { (1, PITS - i) };
        f[STONES + i] = f32::from(c);
        f[WEAK + i] = f32::from(u8::from(matches!(c, 1 | 2)));
        f[EMPTY + i] = f32::from(u8::from(c == 0));
        if c >= 12 {
            f[KROO + side] += f32::from(c);
        }
        if usize::from(c) >= to_end {
            f[REACH + side] += 1.0;
        }
    }
    f
}

/// The predicted value of `board` (mover-first) in centi-stones from the mover's view, clamped to
/// `-100 n..=100 n` for its `n` stones; exact (the ending value) when the mover cannot move.
///
/// Cost: the board's moves (for the ending) and [`evaluate_moving`].
#[cfg(any(test, feature = "eval-fit"))]
#[cfg_attr(not(feature = "eval-fit"), allow(dead_code, unused_imports))]
pub fn evaluate(rules: Ruleset, board: &Board) -> i32 {
    match rules.moves(board).ending() {
        Some(v) => 100 * i32::from(v),
        None => evaluate_moving(board, &sowings(board)),
    }
}

/// The weights folded for [`evaluate_moving`], in centi-stones: the terms of the whole board, and
/// per pit and stone count everything the pit's own features add (its stones, weak and empty
/// terms, and its share of its side's kroo and reach).
struct Folded {
    /// Bias, stones, capture now, threat, threat × s, the mover's pits, the opponent's pits.
    board: [f32; 7],
    pit: [[f32; 49]; PITS],
}

fn fold() -> Folded {
    let w = |i: usize| 100.0 * WEIGHTS[i];
    let mut pit = [[0f32; 49]; PITS];
    for (i, row) in pit.iter_mut().enumerate() {
        let (side, to_end) = if i < ROW { (0, ROW - i) } else { (1, PITS - i) };
        for (c, cell) in row.iter_mut().enumerate() {
            let x = c as f32;
            let mut v = w(STONES + i) * x;
            if matches!(c, 1 | 2) {
                v += w(WEAK + i);
            }
            if c == 0 {
                v += w(EMPTY + i);
            }
            if c >= 12 {
                v += w(KROO + side) * x;
            }
            if c >= to_end {
                v += w(REACH + side);
            }
            *cell = v;
        }
    }
    Folded { board: [w(0), w(1), w(2), w(3), w(4), w(5), w(6)], pit }
}

static FOLDED: std::sync::LazyLock<Folded> = std::sync::LazyLock::new(fold);

/// [`evaluate`] of a board whose mover has a legal move (the caller knows: the search asks
/// [`Ruleset::surely_has_moves`] or has the moves), without its moves: [`features`] times the
/// weights, with the per-pit terms read from a table of the weights folded per pit and stone
/// count (the same sum in another order: a test holds the two within a centi-stone).
///
/// Cost: given the board's [`sowings`] (which the quiescence also uses for its captures),
/// twelve table reads and a few products.
#[inline]
pub(crate) fn evaluate_moving(board: &Board, sown: &Sowings) -> i32 {
    let t = &*FOLDED;
    let [(cap_now, own_pits), (threat, opp_pits)] = sown.sides;
    let n = stones(board);
    let (nf, threat) = (n as f32, f32::from(threat));
    let b = &t.board;
    let mut acc = b[0] + b[1] * nf + b[2] * f32::from(cap_now) + b[3] * threat + b[4] * threat * (nf / 24.0);
    acc += b[5] * f32::from(own_pits) + b[6] * f32::from(opp_pits);
    for (row, &c) in t.pit.iter().zip(board) {
        acc += row[usize::from(c)];
    }
    // Rounded half away from zero (`f32::round`, without its library call).
    let v = (acc + 0.5f32.copysign(acc)) as i32;
    let n = n as i32;
    v.clamp(-100 * n, 100 * n)
}

/// What the fitting tool and the tests need: seeded sampling of a layer, the least-squares fit, the
/// measures of a predictor, the weights printed as Rust source. Only with the feature `eval-fit`
/// (and in the tests).
#[cfg(any(test, feature = "eval-fit"))]
#[cfg_attr(not(feature = "eval-fit"), allow(dead_code, unused_imports))]
pub mod fit {
    pub use super::{evaluate, features, FEATURE_NAMES};

    /// Number of features.
    pub const K: usize = super::K;
    use crate::index::{layer_size, unrank_unchecked};
    use crate::probe::Database;
    use crate::Result;

    /// One sampled position: its features, its material (for the baseline) and its exact value.
    #[derive(Clone, Debug)]
    pub struct Sample {
        /// The stones on the board.
        pub stones: u32,
        /// [`features`] of the position.
        pub x: [f32; K],
        /// Stones in the mover's row minus the opponent's.
        pub material: f32,
        /// The exact value from the database.
        pub value: i8,
    }

    /// A small deterministic generator (splitmix64), so that samples are reproducible.
    #[derive(Clone, Debug)]
    pub struct SplitMix(pub u64);

    impl SplitMix {
        /// The next 64 random bits.
        pub fn next_u64(&mut self) -> u64 {
            let z = crate::search::splitmix(self.0);
            self.0 = self.0.wrapping_add(super::super::keys::GOLDEN_GAMMA);
            z
        }

        /// A number in `0..bound` (`bound > 0`).
        pub fn below(&mut self, bound: u64) -> u64 {
            ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
        }
    }

    /// `count` positions of layer `n` at random indices (with replacement; the whole layer, in
    /// index order, when it holds no more than `count`), seeded by `seed` and `n`.
    ///
    /// # Errors
    /// Those of [`Database::layer`] and [`Table::get`](crate::storage::Table::get).
    pub fn sample_layer(db: &Database, n: u32, count: u64, seed: u64) -> Result<Vec<Sample>> {
        db.layer(n)?;
        let size = layer_size(n);
        let rules = db.rules();
        let mut rng = SplitMix(seed ^ u64::from(n).wrapping_mul(0xA076_1D64_78BD_642F));
        let pick = |i: u64| -> Result<Sample> {
            let board = unrank_unchecked(n, i);
            let own: i32 = board[..6].iter().map(|&c| i32::from(c)).sum();
            Ok(Sample { stones: n, x: features(rules, &board), material: (2 * own - n as i32) as f32, value: db.lookup(&board)? })
        };
        if size <= count {
            (0..size).map(pick).collect()
        } else {
            (0..count).map(|_| pick(rng.below(size))).collect()
        }
    }

    /// Least squares over `samples`, each layer weighted so that every layer counts the same:
    /// solves the normal equations `(XᵀWX + λD) w = XᵀWy` in f64, with `D` the diagonal of `XᵀWX`
    /// (the bias excluded) and `λ = ridge`. Features that are 0 everywhere get weight 0.
    pub fn least_squares(samples: &[Sample], ridge: f64) -> [f64; K] {
        let mut per_layer = std::collections::BTreeMap::<u32, usize>::new();
        for s in samples {
            *per_layer.entry(s.stones).or_default() += 1;
        }
        let mut a = [[0f64; K]; K];
        let mut b = [0f64; K];
        for s in samples {
            let w = 1.0 / per_layer[&s.stones] as f64;
            for ((row, bi), &xi) in a.iter_mut().zip(b.iter_mut()).zip(&s.x) {
                let xi = f64::from(xi) * w;
                *bi += xi * f64::from(s.value);
                for (aij, &xj) in row.iter_mut().zip(&s.x) {
                    *aij += xi * f64::from(xj);
                }
            }
        }
        for (i, row) in a.iter_mut().enumerate() {
            if row[i] == 0.0 {
                row[i] = 1.0; // an unused feature: weight 0
            } else if i > 0 {
                row[i] *= 1.0 + ridge;
            }
        }
        solve(a, b)
    }

    /// Gaussian elimination with partial pivoting.
    fn solve(mut a: [[f64; K]; K], mut b: [f64; K]) -> [f64; K] {
        for c in 0..K {
            let p = (c..K).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs())).unwrap_or(c);
            a.swap(c, p);
            b.swap(c, p);
            let d = a[c][c];
            if d.abs() < 1e-300 {
                continue;
            }
            let (top, rest) = a.split_at_mut(c + 1);
            let pivot = &top[c];
            for (r, row) in rest.iter_mut().enumerate() {
                let f = row[c] / d;
                if f != 0.0 {
                    for (x, p) in row[c..].iter_mut().zip(&pivot[c..]) {
                        *x -= f * p;
                    }
                    b[c + 1 + r] -= f * b[c];
                }
            }
        }
        let mut w = [0f64; K];
        for c in (0..K).rev() {
            let mut s = b[c];
            for k in c + 1..K {
                s -= a[c][k] * w[k];
            }
            w[c] = if a[c][c].abs() < 1e-300 { 0.0 } else { s / a[c][c] };
        }
        w
    }

    /// The least-squares factor `c` of the material baseline `value ≈ c · material`.
    pub fn material_factor(samples: &[Sample]) -> f64 {
        let (xy, xx) = samples.iter().fold((0.0, 0.0), |(xy, xx), s| (xy + f64::from(s.material) * f64::from(s.value), xx + f64::from(s.material).powi(2)));
        if xx == 0.0 {
            0.0
        } else {
            xy / xx
        }
    }

    /// How well a predictor (in stones) does on some samples.
    #[derive(Clone, Copy, Debug, Default)]
    pub struct Measures {
        /// Mean absolute error, stones.
        pub mae: f64,
        /// Root mean square error, stones.
        pub rmse: f64,
        /// Coefficient of determination (1 − residual variance / value variance).
        pub r2: f64,
        /// Share of samples whose predicted sign (of the prediction rounded to whole stones) is
        /// the value's sign: win, draw or loss for the mover.
        pub sign: f64,
    }

    /// The measures of `predict` (stones) on `samples`.
    pub fn measure(samples: &[Sample], predict: impl Fn(&Sample) -> f64) -> Measures {
        let len = samples.len().max(1) as f64;
        let mean = samples.iter().map(|s| f64::from(s.value)).sum::<f64>() / len;
        let (mut abs, mut sq, mut var, mut right) = (0.0, 0.0, 0.0, 0usize);
        for s in samples {
            let p = predict(s);
            let v = f64::from(s.value);
            abs += (p - v).abs();
            sq += (p - v).powi(2);
            var += (v - mean).powi(2);
            right += usize::from((p.round() as i64).signum() == i64::from(s.value.signum()));
        }
        Measures { mae: abs / len, rmse: (sq / len).sqrt(), r2: if var > 0.0 { 1.0 - sq / var } else { 0.0 }, sign: right as f64 / len }
    }

    /// The prediction of weights `w` for a sample, stones, clamped to `-n..=n` as
    /// [`evaluate`](super::evaluate) does.
    pub fn predict(w: &[f64; K], s: &Sample) -> f64 {
        let p: f64 = s.x.iter().zip(w).map(|(&x, w)| f64::from(x) * w).sum();
        p.clamp(-f64::from(s.stones), f64::from(s.stones))
    }

    /// The shipped weights' prediction for a sample, stones (as [`evaluate`](super::evaluate)
    /// computes it, in f32, before rounding to centi-stones).
    pub fn predict_shipped(s: &Sample) -> f64 {
        let p: f32 = s.x.iter().zip(super::WEIGHTS.iter()).map(|(x, w)| x * w).sum();
        f64::from(p).clamp(-f64::from(s.stones), f64::from(s.stones))
    }

    /// The weights as the Rust source of `src/search/weights.rs`; `how` is the command that wrote
    /// them, for its header.
    pub fn weights_source(w: &[f64; K], how: &str) -> String {
        let mut out = String::new();
        out.push_str("// Written by examples/fit_eval.rs (scripts/fit-eval); do not edit. Reproduce with:\n");
        out.push_str(&format!("//   {how}\n"));
        out.push_str("/// The weights of [`features`], in stones per unit of each feature.\n");
        out.push_str("pub(crate) const WEIGHTS: [f32; K] = [\n");
        for (name, x) in super::FEATURE_NAMES.iter().zip(w) {
            out.push_str(&format!("    {:e}, // {name}\n", *x as f32));
        }
        out.push_str("];\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::fit::{least_squares, measure, predict, predict_shipped, sample_layer, SplitMix};
    use super::*;
    use crate::builder::{self, BuildConfig, Silent};
    use crate::probe::Database;
    use crate::rules::GrandSlam;

    #[test]
    fn evaluate_stays_within_the_stones_on_random_boards() {
        let mut rng = SplitMix(7);
        for rules in [Ruleset::Awari, Ruleset::Abapa(GrandSlam::NoCapture)] {
            for _ in 0..200_000 {
                let n = 1 + rng.below(48) as u32;
                let mut b = [0u8; PITS];
                for _ in 0..n {
                    b[rng.below(PITS as u64) as usize] += 1;
                }
                let e = evaluate(rules, &b);
                let n = n as i32;
                assert!((-100 * n..=100 * n).contains(&e), "{b:?}: {e}");
            }
            assert_eq!(evaluate(rules, &[0; PITS]), 0);
        }
    }

    #[test]
    fn the_folded_evaluation_is_the_features_times_the_weights() {
        // The simple form: every feature times its weight, summed in order, rounded, clamped.
        let reference = |rules: Ruleset, b: &Board| -> i32 {
            let f = features(rules, b);
            if f[0] == 0.0 {
                return 100 * f[ENDING] as i32;
            }
            let dot: f32 = f.iter().zip(WEIGHTS.iter()).map(|(x, w)| x * w).sum();
            let n = stones(b) as i32;
            ((dot * 100.0).round() as i32).clamp(-100 * n, 100 * n)
        };
        let mut rng = SplitMix(11);
        let mut off = 0;
        for rules in [Ruleset::Awari, Ruleset::Abapa(GrandSlam::NoCapture)] {
            for _ in 0..200_000 {
                let n = rng.below(49) as u32;
                let mut b = [0u8; PITS];
                for _ in 0..n {
                    b[rng.below(PITS as u64) as usize] += 1;
                }
                let (fast, slow) = (evaluate(rules, &b), reference(rules, &b));
                assert!((fast - slow).abs() <= 1, "{b:?}: folded {fast}, features {slow}");
                off += usize::from(fast != slow);
            }
        }
        // Summing in another order moves a rounding only where the sum lies within a rounding
        // error of a half centi-stone.
        assert!(off < 400, "{off} of 400,000 differ by a centi-stone");
    }

    #[test]
    fn evaluation_beats_zero_and_chance_on_layers_10_to_12() {
        let dir = tempfile::tempdir().unwrap();
        let config = BuildConfig { rules: Ruleset::Awari, max_stones: 12, dir: dir.path().into(), max_memory: None, ..Default::default() };
        builder::build(&config, &Silent).unwrap();
        let db = Database::open(dir.path(), Ruleset::Awari).unwrap();
        // A fresh fit on layers 6..=9, then the shipped weights, both judged on layers 10..=12.
        let train: Vec<_> = (6..=9).flat_map(|n| sample_layer(&db, n, 20_000, 1).unwrap()).collect();
        let w = least_squares(&train, 1e-6);
        let mut seen = Vec::new();
        for n in 10..=12 {
            let test = sample_layer(&db, n, 20_000, 2).unwrap();
            let zero = measure(&test, |_| 0.0);
            for (what, m) in [("fresh fit", measure(&test, |s| predict(&w, s))), ("shipped", measure(&test, predict_shipped))] {
                seen.push(format!("layer {n} {what}: {m:?}; zero: {zero:?}"));
                let all = seen.join("\n");
                assert!(m.mae < 0.85 * zero.mae, "{all}");
                assert!(m.r2 > 0.3, "{all}");
                // Three outcomes: chance is a third; the sign 0 always gets right (the share of
                // draws) is the other bar to clear.
                assert!(m.sign > 0.5 && m.sign > zero.sign + 0.2, "{all}");
            }
        }
    }
}
