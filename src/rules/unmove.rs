//! Un-moves: the same-layer predecessors of a position ([`for_each_predecessor`]), by un-sowing.

use super::board::{stones, Board, PITS, ROW, TOTAL_STONES};
use super::moves::{Move, Outcome};
use super::packed::{pack, pit_of, sum6, turned_packed, unpack, GUARDS, OPP_MASK, SOW};
use super::ruleset::Ruleset;

/// How [`for_each_predecessor`] found a parent: the pit its move sows from and the stones it
/// sows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Unsown {
    /// The parent's pit the move sows from (0..6).
    pub pit: usize,
    /// The stones it sows.
    pub stones: usize,
}

impl Unsown {
    /// The pits `lo..=hi` outside which the parent is the child turned
    /// ([`turned`](crate::rules::turned)), holding as many stones in all as that board does
    /// there: the origin and the pits the sowing reaches, or all twelve when it goes round. A
    /// caller that has ranked the turned child ranks the parent from these pits alone
    /// (the indexer's internal `RankBase`).
    #[inline]
    pub fn changed(self) -> (usize, usize) {
        if self.pit + self.stones < PITS {
            (self.pit, self.pit + self.stones)
        } else {
            (0, PITS - 1)
        }
    }
}

/// Un-moves: the same-layer predecessors of `child` under `rules`.
///
/// Calls `visit(parent, unsown)` for every board `parent` (mover-first) whose legal move from
/// `unsown.pit` captures nothing and leads to `child`. A parent is reported whether or not it
/// belongs to a layer; callers that index parents must check.
///
/// Candidates come from un-sowing. Un-sowing is the exact inverse of sowing, so what is left to
/// confirm is that the move captures nothing and is legal. Where legality depends only on the move
/// itself (the common case) that is decided here; where it depends on the parent's other moves
/// (eradication under `awari`, feeding or a grand slam under `abapa`) the forward generator
/// ([`Ruleset::play`]) decides, so each ruleset's rules hold exactly. The tests compare this
/// function with a plain search over forward moves.
///
/// Cost: a handful of un-sowings per empty pit of the child's opponent row; no allocation.
///
/// # Panics
/// As [`Ruleset::moves`]: only for boards with more than 48 stones.
#[inline]
pub fn for_each_predecessor(rules: Ruleset, child: &Board, mut visit: impl FnMut(&Board, Unsown)) {
    debug_assert!(stones(child) <= TOTAL_STONES, "more than 48 stones");
    // The parent's frame: its row is the child's opponent row.
    let after = turned_packed(pack(child));
    let n = sum6(after) + sum6(after >> 48);
    // After the move the parent's opponent row is the child's own row.
    let opp_after_nonempty = after & OPP_MASK != 0;
    for pit in 0..ROW {
        if pit_of(after, pit) != 0 {
            continue;
        }
        for s in 1..=n as usize {
            // Un-sow: every byte of `after | GUARDS` is at least 128 and an increment at most 5,
            // so the subtraction never borrows across bytes; a byte whose guard is gone went below
            // zero. Larger s removes at least as much from every pit: then no more candidates.
            let guarded = (after | GUARDS) - SOW.inc[pit][s];
            if guarded & GUARDS != GUARDS {
                break;
            }
            let parent = (guarded & !GUARDS) | ((s as u128) << (8 * pit));
            let last = SOW.last[pit][s] as usize;
            let captures = last >= ROW && matches!(pit_of(after, last), 2 | 3);
            let plain = !captures
                && match rules {
                    // Not eradicating: legal whatever the other moves are.
                    Ruleset::Awari => opp_after_nonempty,
                    // No feeding duty (the opponent had stones) and no grand slam (no capture).
                    Ruleset::Abapa(_) => parent & OPP_MASK != 0,
                };
            let parent_board = unpack(parent);
            let how = Unsown { pit, stones: s };
            if plain {
                visit(&parent_board, how);
            } else if let Some(Move { outcome: Outcome::Child { captured: 0, child: c }, .. }) = rules.play(&parent_board, pit) {
                if c == *child {
                    visit(&parent_board, how);
                }
            }
        }
    }
}
