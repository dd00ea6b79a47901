//! Verifying depths to capture ([`crate::dtc`]): one position's depth derived from its moves
//! ([`derive_dtc`], also the builder's spot check and the probe's), and every depth of a layer
//! checked against the values and against the definition (the depths' [`Check`], through
//! [`super::verify_companion`]).

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::companion::{check_positions, Check, Inputs};
use crate::dtc::{BadDtc, DtcPayload};
use crate::error::{Damage, Error, Result};
use crate::index::{layer_size, rank_unchecked};
use crate::progress::Progress;
use crate::rules::{Board, Outcome as Move, Ruleset};
use crate::storage::{DtcKind, Layer};

/// The depth to capture of `board` (of value `value`) derived from its moves by the definition
/// of [`crate::dtc`], evaluated once: `None` for value 0, or when no depth follows (no move
/// keeps the value, or a value-keeping move's child has no depth).
///
/// `value_of(m, child)` returns the stored value of `child`, a board of layer `m` (the
/// position's own layer included); `dtc_of(child)` the stored depth of a child in the position's
/// own layer. Either may return the caller's error.
///
/// Cost: one move generation, one `value_of` per move, one `dtc_of` per value-keeping move
/// that captures nothing.
///
/// # Errors
/// The first error a closure returns.
#[inline]
pub(crate) fn derive_dtc<E>(
    rules: Ruleset,
    board: &Board,
    value: i8,
    mut value_of: impl FnMut(u32, &Board) -> std::result::Result<i8, E>,
    mut dtc_of: impl FnMut(&Board) -> std::result::Result<Option<u16>, E>,
) -> std::result::Result<Option<u16>, E> {
    if value == 0 {
        return Ok(None);
    }
    let n = crate::rules::stones(board);
    let moves = rules.moves(board);
    if moves.ending().is_some() {
        return Ok(Some(0));
    }
    let mut best: Option<u16> = None;
    for m in moves.as_slice() {
        let depth = match m.outcome {
            Move::End { value: e } => (e == value).then_some(0),
            Move::Child { captured, child } => {
                let w = value_of(n - u32::from(captured), &child)?;
                if captured as i8 - w != value {
                    continue;
                }
                if captured > 0 {
                    Some(0)
                } else {
                    match dtc_of(&child)? {
                        Some(d) => Some(d),
                        None => return Ok(None),
                    }
                }
            }
        };
        if let Some(d) = depth {
            best = Some(match best {
                None => d,
                Some(b) if value > 0 => b.min(d),
                Some(b) => b.max(d),
            });
        }
    }
    // A garbage depth of 65535 at a child gives no depth rather than an overflow.
    Ok(best.and_then(|b| b.checked_add(1)))
}

/// One position whose stored depth to capture is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DtcMismatch {
    /// Index of the position in its layer.
    pub index: u64,
    /// The board, mover-first.
    pub board: Board,
    /// The stored depth (`None`: none, for a position of value 0).
    pub stored: Option<u16>,
    /// What the definition gives from its moves (the children's stored values, and the stored
    /// depths of its same-layer children); `None`: no depth follows.
    pub derived: Option<u16>,
    /// The position's value.
    pub value: i8,
}

/// The result of checking every depth to capture of one layer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DtcReport {
    /// Layer number.
    pub layer: u32,
    /// Positions checked: the whole layer.
    pub checked: u64,
    /// Positions whose stored depth differs from what the definition gives over their moves.
    pub mismatches: u64,
    /// The first [`MISMATCHES_KEPT`](super::MISMATCHES_KEPT) of them in index order.
    pub first_mismatches: Vec<DtcMismatch>,
    /// The greatest depth stored (`None`: every position of the layer has value 0).
    pub greatest_depth: Option<u16>,
    /// Depths of 254 or more (stored in the table of escaped depths).
    pub escaped: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl DtcReport {
    /// True when every depth follows from the position's moves.
    pub fn is_ok(&self) -> bool {
        self.mismatches == 0
    }
}

/// The damage of a dtc file (at `path`) whose payload fails [`crate::dtc::tally`].
pub(crate) fn dtc_damage(path: &Path, fault: BadDtc) -> Error {
    match fault {
        BadDtc::ContradictsValue { index, dtc, value } => Error::corrupt(path, Damage::DtcContradictsValue { index, dtc, value }),
        e => Error::corrupt(path, Damage::BadDtc { what: e.to_string() }),
    }
}

/// Depths to capture are checked first against the values ([`crate::dtc::tally`]: a depth
/// exactly where the value is not 0, a well-formed table of escaped depths), then each against
/// the definition of [`crate::dtc`] evaluated over its moves ([`derive_dtc`]) from its children's
/// stored values and its same-layer children's stored depths. The depths of smaller layers are
/// not read: a capture ends the count.
impl Check for DtcKind {
    type Report = DtcReport;
    type Payload<'a> = DtcPayload<'a>;
    type Lower = i8;

    fn payload(file: &Layer<DtcKind>) -> DtcPayload<'_> {
        file.payload()
    }

    fn lengths(this: DtcPayload<'_>, n: u32) -> (u64, u64) {
        (this.bytes().len() as u64, layer_size(n))
    }

    fn lower_len(m: u32) -> u64 {
        layer_size(m)
    }

    fn lower_missing(n: u32, m: u32) -> String {
        format!("the values of layer {m} are needed to check layer {n}'s depths to capture but were not given")
    }

    fn lower<'a>(values: Option<&'a Layer>, _own: Option<&'a Layer<DtcKind>>) -> Option<&'a [i8]> {
        values.map(|l| l.values())
    }

    fn check(inputs: &Inputs<'_, DtcKind>, progress: &dyn Progress) -> Result<DtcReport> {
        let &Inputs { rules, n, values, this, lower, path } = inputs;
        let size = layer_size(n);
        let start = Instant::now();
        let tally = crate::dtc::tally(values, &this).map_err(|e| dtc_damage(path, e))?;
        let greatest_depth = tally.histogram.iter().rposition(|&c| c > 0).map(|d| d as u16);
        let value_of = |m: u32, child: &Board| -> std::result::Result<i8, ()> {
            let layer = if m == n { values } else { lower.get(m as usize).copied().ok_or(())? };
            layer.get(rank_unchecked(child) as usize).copied().ok_or(())
        };
        let dtc_of = |child: &Board| -> std::result::Result<Option<u16>, ()> {
            let j = rank_unchecked(child);
            if j >= size {
                return Err(());
            }
            this.get(j).map_err(|_| ())
        };
        let walked = check_positions(n, progress, |i, board| {
            let value = values[i as usize];
            match (this.get(i), derive_dtc(rules, &board, value, value_of, dtc_of)) {
                (Ok(s), Ok(d)) if s == d => None,
                (s, d) => Some(DtcMismatch { index: i, board, stored: s.ok().flatten(), derived: d.ok().flatten(), value }),
            }
        })?;
        let (checked, mismatches, first_mismatches) = (walked.checked, walked.mismatches, walked.first);
        Ok(DtcReport { layer: n, checked, mismatches, first_mismatches, greatest_depth, escaped: tally.escaped, seconds: start.elapsed().as_secs_f64() })
    }
}
