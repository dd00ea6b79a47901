// Placeholder until examples/fit_eval.rs writes the fitted weights.
/// The weights of [`features`], in stones per unit of each feature.
pub(crate) const WEIGHTS: [f32; K] = [0.0; K];
