//! The search engine above the largest built layer (alpha-beta; `docs/eval.md` for its evaluation).

pub(crate) mod eval;
