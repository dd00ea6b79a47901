// Written by examples/fit_eval.rs (scripts/fit-eval); do not edit. Reproduce with:
//   scripts/fit-eval --dir /work/db --rules awari --train 20..=24 --test none --sample 200000 --emit src/search/weights.rs
/// The weights of [`features`], in stones per unit of each feature.
pub(crate) const WEIGHTS: [f32; K] = [
    -2.4588637e0, // bias
    6.9967927e-3, // stones
    1.2248274e0, // capture_now
    -2.502535e-1, // threat
    -1.672557e-2, // threat*s
    4.0130886e-1, // mobility_own
    -3.2910967e-1, // mobility_opp
    -6.548201e-2, // stones_0
    -1.5899052e-1, // stones_1
    -2.5227332e-1, // stones_2
    -2.6725537e-1, // stones_3
    -1.3616303e-1, // stones_4
    2.7182093e-1, // stones_5
    8.877919e-2, // stones_6
    2.059258e-1, // stones_7
    2.8782716e-1, // stones_8
    3.10637e-1, // stones_9
    2.3411007e-1, // stones_10
    -5.754896e-2, // stones_11
    -2.0411696e0, // weak_0
    -1.3298497e0, // weak_1
    -1.1368418e0, // weak_2
    -5.4338586e-1, // weak_3
    4.9843766e-2, // weak_4
    9.60256e-1, // weak_5
    2.0347273e0, // weak_6
    1.6451349e0, // weak_7
    1.3423729e0, // weak_8
    6.2613446e-1, // weak_9
    1.3102643e-1, // weak_10
    -5.8033663e-1, // weak_11
    -3.3874295e0, // empty_0
    -3.1771705e0, // empty_1
    -2.998771e0, // empty_2
    -2.1106832e0, // empty_3
    -8.3882856e-1, // empty_4
    1.1081043e0, // empty_5
    3.2790952e0, // empty_6
    3.6461468e0, // empty_7
    3.5236478e0, // empty_8
    2.614567e0, // empty_9
    1.5243046e0, // empty_10
    -1.438878e-1, // empty_11
    1.2031652e-1, // kroo_own
    -1.594579e-1, // kroo_opp
    9.9233e-2, // reach_own
    -2.7960137e-1, // reach_opp
    9.99999e-1, // ending
];
