// Written by examples/fit_eval.rs (scripts/fit-eval); do not edit. Reproduce with:
//   scripts/fit-eval --dir /work/db --rules awari --train 12..=20 --test 21..=22 --sample 200000 --emit src/search/weights.rs
/// The weights of [`features`], in stones per unit of each feature.
pub(crate) const WEIGHTS: [f32; K] = [
    -6.5298715e0, // bias
    -4.8119593e-3, // stones
    1.012566e0, // net_capture+
    8.6411595e-1, // net_capture-
    -5.9519764e-2, // net_capture*s
    5.61687e-1, // capture_now
    2.0564596e-1, // threat
    -4.2947772e-1, // threat*s
    5.098477e-1, // mobility_own
    5.470297e-1, // mobility_opp
    1.2924187e-1, // stones_0
    -6.0473718e-2, // stones_1
    -2.2155173e-1, // stones_2
    -3.1205857e-1, // stones_3
    -3.0121106e-1, // stones_4
    -1.3718939e-1, // stones_5
    -1.5579471e-1, // stones_6
    1.0834514e-2, // stones_7
    1.3416839e-1, // stones_8
    2.5048494e-1, // stones_9
    2.2136387e-1, // stones_10
    1.8180215e-1, // stones_11
    -1.0374551e0, // weak_0
    -8.014124e-1, // weak_1
    -7.634982e-1, // weak_2
    -4.4610664e-1, // weak_3
    -1.1199377e-1, // weak_4
    5.8909285e-1, // weak_5
    1.3536754e0, // weak_6
    1.0257564e0, // weak_7
    6.294566e-1, // weak_8
    3.006099e-1, // weak_9
    -6.350996e-2, // weak_10
    -2.1743803e-1, // weak_11
    -2.1844285e0, // empty_0
    -2.3569481e0, // empty_1
    -2.2070827e0, // empty_2
    -1.6242371e0, // empty_3
    -9.103619e-1, // empty_4
    3.4182116e-1, // empty_5
    2.7990692e0, // empty_6
    3.5625117e0, // empty_7
    3.3541348e0, // empty_8
    2.7910945e0, // empty_9
    1.975947e0, // empty_10
    1.4421065e0, // empty_11
    1.4070624e-1, // kroo_own
    -8.20224e-2, // kroo_opp
    -1.3883296e-2, // reach_own
    1.7199412e-1, // reach_opp
    9.99999e-1, // ending
];
