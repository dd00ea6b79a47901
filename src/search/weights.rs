// Written by examples/fit_eval.rs (scripts/fit-eval); do not edit. Reproduce with:
//   scripts/fit-eval --dir /work/db --rules awari --train 20..=24 --test none --sample 200000 --emit src/search/weights.rs
/// The weights of [`features`], in stones per unit of each feature.
pub(crate) const WEIGHTS: [f32; K] = [
    -1.4273822e0, // bias
    7.1312445e-3, // stones
    1.1990638e0, // capture_now
    -2.3731488e-1, // threat
    -2.9711723e-2, // threat*s
    2.356334e-1, // pits_own
    -3.2686192e-1, // pits_opp
    -6.5879315e-2, // stones_0
    -1.6029653e-1, // stones_1
    -2.530336e-1, // stones_2
    -2.6756123e-1, // stones_3
    -1.3786657e-1, // stones_4
    2.7038074e-1, // stones_5
    9.149652e-2, // stones_6
    2.0848511e-1, // stones_7
    2.902608e-1, // stones_8
    3.1293878e-1, // stones_9
    2.3649919e-1, // stones_10
    -5.5361677e-2, // stones_11
    -2.0455832e0, // weak_0
    -1.334587e0, // weak_1
    -1.1395625e0, // weak_2
    -5.461745e-1, // weak_3
    4.2409442e-2, // weak_4
    9.5327985e-1, // weak_5
    2.030185e0, // weak_6
    1.6438901e0, // weak_7
    1.3387309e0, // weak_8
    6.223518e-1, // weak_9
    1.3199331e-1, // weak_10
    -5.745793e-1, // weak_11
    -3.5574129e0, // empty_0
    -3.350222e0, // empty_1
    -3.1695552e0, // empty_2
    -2.2809746e0, // empty_3
    -1.0147605e0, // empty_4
    9.319684e-1, // empty_5
    3.280257e0, // empty_6
    3.64206e0, // empty_7
    3.5124772e0, // empty_8
    2.595396e0, // empty_9
    1.4966137e0, // empty_10
    -1.8166333e-1, // empty_11
    1.1994548e-1, // kroo_own
    -1.5959603e-1, // kroo_opp
    1.1177618e-1, // reach_own
    -2.8037384e-1, // reach_opp
    9.99999e-1, // ending
];
