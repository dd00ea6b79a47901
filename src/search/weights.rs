// Written by examples/fit_eval.rs (scripts/fit-eval); do not edit. Reproduce with:
//   scripts/fit-eval --dir /work/db --rules awari --train 20..=24 --test none --sample 200000 --emit src/search/weights.rs
/// The weights of [`features`], in stones per unit of each feature.
pub(crate) const WEIGHTS: [f32; K] = [
    -7.2611127e0, // bias
    2.261894e-3, // stones
    7.667627e-1, // net_capture+
    6.564313e-1, // net_capture-
    2.8089708e-1, // net_capture*s
    4.235972e-1, // capture_now
    -1.3916127e-1, // threat
    9.870781e-2, // threat*s
    3.6820775e-1, // mobility_own
    5.605407e-1, // mobility_opp
    -6.949125e-2, // stones_0
    -1.8842274e-1, // stones_1
    -2.8675583e-1, // stones_2
    -3.0310234e-1, // stones_3
    -1.6661021e-1, // stones_4
    2.5816116e-1, // stones_5
    7.0310466e-2, // stones_6
    1.8597822e-1, // stones_7
    2.6388338e-1, // stones_8
    2.9081568e-1, // stones_9
    2.0018393e-1, // stones_10
    -8.525234e-2, // stones_11
    -1.7171254e0, // weak_0
    -1.2295746e0, // weak_1
    -1.1207397e0, // weak_2
    -5.6091267e-1, // weak_3
    3.1457786e-2, // weak_4
    9.846383e-1, // weak_5
    2.0624032e0, // weak_6
    1.6177065e0, // weak_7
    1.2608426e0, // weak_8
    5.521583e-1, // weak_9
    -1.7865337e-2, // weak_10
    -6.597894e-1, // weak_11
    -3.3720942e0, // empty_0
    -3.2234154e0, // empty_1
    -3.0492423e0, // empty_2
    -2.1682825e0, // empty_3
    -8.438382e-1, // empty_4
    1.2200053e0, // empty_5
    4.11757e0, // empty_6
    4.4761333e0, // empty_7
    4.323645e0, // empty_8
    3.4308474e0, // empty_9
    2.2614057e0, // empty_10
    6.2729317e-1, // empty_11
    1.6398425e-1, // kroo_own
    -1.2388058e-1, // kroo_opp
    1.4932667e-1, // reach_own
    -9.110425e-2, // reach_opp
    9.99999e-1, // ending
];
