//! How a layer's solve is counted for progress and estimates: work units per phase
//! ([`WorkModel`]) and the solver's working memory.

use crate::index::layer_size;

/// Work units per position of the exits pass (progress and ETA).
pub(super) const EXIT_UNITS: u64 = 8;
/// Work units per position a threshold resolves (its propagation dominates the threshold).
pub(super) const RESOLVE_UNITS: u64 = 16;
/// Positions per work unit of a scan (a threshold's seed scan, the final pass).
const SCAN_POSITIONS_PER_UNIT: u64 = 8;

/// Work units of scanning `positions` positions.
pub(super) fn scan_units(positions: u64) -> u64 {
    positions / SCAN_POSITIONS_PER_UNIT
}

/// How a layer's solve is divided into work units, so that progress moves at an even speed
/// and an ETA from the average speed holds across phases (the exits pass, thresholds that
/// resolve many positions and thresholds that resolve few).
///
/// Measured on awari layer 24 (2 threads): the exits pass costs about 130 ns per position, a
/// threshold about 1 ns per position scanned plus 250 ns per position it resolves. A threshold's
/// weight therefore comes from how many positions it is expected to resolve: the positions of
/// value `±t` in a layer of the same parity (layer `n − 2`) scaled to this layer's size, or a
/// generic shape when that is unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WorkModel {
    size: u64,
    /// Units of threshold `t` at index `t - 1`.
    thresholds: Vec<u64>,
}

impl WorkModel {
    /// The model of layer `n`. `expected`, when given, holds at index `t` the number of
    /// positions of value `t` or `-t` expected in the layer (index 0, draws, is not used);
    /// missing entries count as none.
    ///
    /// Cost: O(n).
    pub(crate) fn new(n: u32, expected: Option<&[u64]>) -> WorkModel {
        let size = layer_size(n.min(crate::index::MAX_STONES));
        let scan = scan_units(size);
        // Without expectations, a generic shape: four fifths of the layer decided, falling off
        // as e^(-t/4).
        let norm: f64 = (1..=n).map(|u| (-f64::from(u) / 4.0).exp()).sum();
        let thresholds = (1..=n as usize)
            .map(|t| {
                let resolved = match expected {
                    Some(e) => e.get(t).copied().unwrap_or(0).min(size),
                    None => (size as f64 * 0.8 * (-(t as f64) / 4.0).exp() / norm) as u64,
                };
                scan + resolved * RESOLVE_UNITS
            })
            .collect();
        WorkModel { size, thresholds }
    }

    /// The model of layer `n` from the value counts of layer `n - 2` (positions by value, as in
    /// its statistics), scaled to layer `n`'s size.
    ///
    /// Cost: O(n).
    pub(crate) fn from_counts(n: u32, counts: &std::collections::BTreeMap<i32, u64>) -> WorkModel {
        if n < 2 {
            return WorkModel::new(n, None);
        }
        let scale = layer_size(n) as f64 / layer_size(n - 2).max(1) as f64;
        let expected: Vec<u64> = (0..=n as i32)
            .map(|t| {
                let c = counts.get(&t).copied().unwrap_or(0) + if t > 0 { counts.get(&-t).copied().unwrap_or(0) } else { 0 };
                (c as f64 * scale) as u64
            })
            .collect();
        WorkModel::new(n, Some(&expected))
    }

    /// Units of the exits pass over `positions` positions.
    pub(super) fn exits(&self, positions: u64) -> u64 {
        positions * EXIT_UNITS
    }

    /// Units of threshold `t` over `positions` of the layer's positions.
    pub(super) fn threshold(&self, t: u32, positions: u64) -> u64 {
        let w = self.thresholds.get(t as usize - 1).copied().unwrap_or(0);
        (u128::from(w) * u128::from(positions) / u128::from(self.size.max(1))) as u64
    }

    /// Units of the final pass over `positions` positions.
    pub(super) fn draws(&self, positions: u64) -> u64 {
        scan_units(positions)
    }

    /// Units of checking the solved layer before it is published (a spot check and a count of
    /// its values, done by the caller, which advances progress by them): four scans.
    pub(crate) fn check(&self) -> u64 {
        4 * scan_units(self.size)
    }

    /// The units a solve of `positions` of the layer's positions reports (a rank's share of a
    /// distributed solve; all of them: [`WorkModel::total`] less [`WorkModel::check`]).
    pub(crate) fn solve(&self, positions: u64) -> u64 {
        self.exits(positions) + (1..=self.thresholds.len() as u32).map(|t| self.threshold(t, positions)).sum::<u64>() + self.draws(positions)
    }

    /// All the units of the layer, [`WorkModel::check`] included.
    #[cfg(test)]
    pub(crate) fn total(&self) -> u64 {
        self.exits(self.size) + self.thresholds.iter().sum::<u64>() + self.draws(self.size) + self.check()
    }
}

/// Total work units of solving layer `n` with the generic model ([`WorkModel::new`]).
#[cfg(test)]
pub(crate) fn work_units(n: u32) -> u64 {
    WorkModel::new(n, None).total()
}

/// Bytes of working memory [`solve_layer_with`](super::solve_layer_with) allocates besides its output in
/// memory mode: one per position, the cells. (During the thresholds, the lists of positions
/// that seed the next thresholds take up to half a byte more per position, within
/// [`SolveOptions::list_bytes`](super::SolveOptions); during the exits pass, the copy of the
/// lower layers it makes when they fit.)
pub(crate) fn working_memory(n: u32) -> u64 {
    layer_size(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_model_weights_thresholds_by_what_they_resolve() {
        let n = 20;
        let size = layer_size(n);
        let generic = WorkModel::new(n, None);
        assert_eq!(generic.total(), work_units(n));
        // Low thresholds resolve more than high ones in the generic shape.
        assert!(generic.threshold(1, size) > generic.threshold(n, size));
        // A threshold expected to resolve nothing costs one scan; one that resolves every
        // position costs RESOLVE_UNITS more per position.
        let mut expected = vec![0u64; n as usize + 1];
        expected[3] = size;
        let m = WorkModel::new(n, Some(&expected));
        assert_eq!(m.threshold(4, size), size / SCAN_POSITIONS_PER_UNIT);
        assert_eq!(m.threshold(3, size), size / SCAN_POSITIONS_PER_UNIT + size * RESOLVE_UNITS);
        let half = m.threshold(3, size / 2);
        assert!(half <= m.threshold(3, size) / 2 && half + 2 * RESOLVE_UNITS >= m.threshold(3, size) / 2, "{half}");
        let scans = u64::from(n) * (size / SCAN_POSITIONS_PER_UNIT);
        assert_eq!(m.total(), size * EXIT_UNITS + scans + size * RESOLVE_UNITS + 5 * (size / SCAN_POSITIONS_PER_UNIT));
        // Counts of layer n - 2 are scaled to layer n's size and both signs counted.
        let counts = std::collections::BTreeMap::from([(0, 7), (2, 10), (-2, 30), (5, 1000)]);
        let c = WorkModel::from_counts(n, &counts);
        let scale = size as f64 / layer_size(n - 2) as f64;
        let scan = size / SCAN_POSITIONS_PER_UNIT;
        assert_eq!(c.threshold(2, size), scan + (40.0 * scale) as u64 * RESOLVE_UNITS);
        assert_eq!(c.threshold(5, size), scan + (1000.0 * scale) as u64 * RESOLVE_UNITS);
        assert_eq!(c.threshold(1, size), scan);
        assert_eq!(WorkModel::from_counts(1, &counts), WorkModel::new(1, None));
    }
}
