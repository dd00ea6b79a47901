//! Verifying forced-capture bounds ([`crate::bounds`]): one position's bounds derived from its
//! children's ([`derive_bounds`], also the builder's spot check and the probe's), and every entry
//! of a layer checked against the two equations and against the position's value (the bounds'
//! [`Check`], through [`super::verify_companion`]).

use std::time::Instant;

use serde::Serialize;

use super::companion::{check_positions, Check, Inputs};
use crate::bounds::{Bounds, Codec};
use crate::error::Result;
use crate::index::{layer_size, rank_unchecked};
use crate::progress::Progress;
use crate::rules::{Board, Outcome as Move, Ruleset};
use crate::storage::{BoundsKind, Layer};

/// The forced-capture bounds of `board` derived from its children's stored bounds: the two
/// equations of [`crate::bounds`] evaluated once.
///
/// `get(m, child)` returns the stored bounds of `child`, a board of layer `m` (the position's
/// own layer included, for moves that capture nothing), or the caller's error. Positions with
/// no legal move get their ruleset's ending split.
///
/// Cost: one move generation and one `get` per move.
///
/// # Errors
/// The first error `get` returns.
#[inline]
pub(crate) fn derive_bounds<E>(
    rules: Ruleset,
    board: &Board,
    mut get: impl FnMut(u32, &Board) -> std::result::Result<Bounds, E>,
) -> std::result::Result<Bounds, E> {
    let n = crate::rules::stones(board) as i32;
    let share = |value: i8| ((n + i32::from(value)) / 2) as u8;
    let moves = rules.moves(board);
    if let Some(ending) = moves.ending() {
        return Ok(Bounds { mover: share(ending), opponent: n as u8 - share(ending) });
    }
    let (mut mover, mut opponent) = (0u8, u8::MAX);
    for m in moves.as_slice() {
        let (a, b) = match m.outcome {
            Move::End { value } => (share(value), n as u8 - share(value)),
            Move::Child { captured, child } => {
                let g = get(n as u32 - u32::from(captured), &child)?;
                (captured.saturating_add(g.opponent), g.mover)
            }
        };
        mover = mover.max(a);
        opponent = opponent.min(b);
    }
    Ok(Bounds { mover, opponent })
}

/// One position whose stored bounds are wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BoundsMismatch {
    /// Index of the position in its layer.
    pub index: u64,
    /// The board, mover-first.
    pub board: Board,
    /// The stored bounds (mover, opponent); `None` when the entry holds no valid code.
    pub stored: Option<(u8, u8)>,
    /// What its moves give from the children's stored bounds; `None` when a child's entry
    /// holds no valid code.
    pub derived: Option<(u8, u8)>,
    /// The position's value.
    pub value: i8,
    /// Whether the stored bounds contradict the value (`2 gM - n <= v <= n - 2 gN`).
    pub contradicts_value: bool,
}

/// The result of checking every bounds entry of one layer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoundsReport {
    /// Layer number.
    pub layer: u32,
    /// Positions checked: the whole layer.
    pub checked: u64,
    /// Positions whose bounds break an equation or contradict the value.
    pub mismatches: u64,
    /// The first [`MISMATCHES_KEPT`](super::MISMATCHES_KEPT) of them in index order.
    pub first_mismatches: Vec<BoundsMismatch>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl BoundsReport {
    /// True when every entry satisfies its equations and agrees with its value.
    pub fn is_ok(&self) -> bool {
        self.mismatches == 0
    }
}

/// Forced-capture bounds are checked entry by entry: each against what the two equations give
/// from its children's stored bounds, and against the position's value. Bad codes anywhere are
/// mismatches.
impl Check for BoundsKind {
    type Report = BoundsReport;
    type Payload<'a> = &'a [u8];
    type Lower = u8;

    fn payload(file: &Layer<BoundsKind>) -> &[u8] {
        file.bytes()
    }

    fn lengths(this: &[u8], n: u32) -> (u64, u64) {
        (this.len() as u64, crate::bounds::payload_len(n))
    }

    fn lower_len(m: u32) -> u64 {
        crate::bounds::payload_len(m)
    }

    fn lower_missing(n: u32, m: u32) -> String {
        format!("the bounds of layer {m} are needed to check layer {n}'s but were not given")
    }

    fn lower<'a>(_values: Option<&'a Layer>, own: Option<&'a Layer<BoundsKind>>) -> Option<&'a [u8]> {
        own.map(|b| b.bytes())
    }

    fn check(inputs: &Inputs<'_, BoundsKind>, progress: &dyn Progress) -> Result<BoundsReport> {
        let &Inputs { rules, n, values, this, lower, .. } = inputs;
        let codecs: Vec<Codec> = (0..=n).map(Codec::new).collect();
        let get = |m: u32, child: &Board| -> std::result::Result<Bounds, ()> {
            let payload = if m == n { this } else { lower.get(m as usize).copied().ok_or(())? };
            let j = rank_unchecked(child);
            if j >= layer_size(m) {
                return Err(());
            }
            codecs[m as usize].get(payload, j).ok_or(())
        };
        let start = Instant::now();
        let walked = check_positions(n, progress, |i, board| {
            let stored = codecs[n as usize].get(this, i);
            let derived = derive_bounds(rules, &board, get).ok();
            let value = values[i as usize];
            let contradicts_value = stored.is_some_and(|b| !b.consistent_with(n, value));
            let pair = |b: Bounds| (b.mover, b.opponent);
            (stored.is_none() || stored != derived || contradicts_value).then(|| BoundsMismatch {
                index: i,
                board,
                stored: stored.map(pair),
                derived: derived.map(pair),
                value,
                contradicts_value,
            })
        })?;
        Ok(BoundsReport {
            layer: n,
            checked: walked.checked,
            mismatches: walked.mismatches,
            first_mismatches: walked.first,
            seconds: start.elapsed().as_secs_f64(),
        })
    }
}
