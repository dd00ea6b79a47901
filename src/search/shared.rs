//! What every thread of one search shares: the engine, the control, the node count, the game's
//! salt and the root's depths to capture; the layers' answer for a node ([`TableAnswer`]); the
//! scores passed up the tree with their proof ([`Scored`], [`Proof`]).

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;
use std::time::Instant;

use crate::error::Error;
use crate::index::{in_some_layer, rank_unchecked};
use crate::rules::{Board, Ruleset, PITS};

use super::keys::ZOBRIST;
use super::{Control, Engine, GameValue};

/// A node: the board (mover-first) and, in a game, the captured counts (mover, opponent).
#[derive(Clone, Copy, Debug)]
pub(super) struct Node {
    pub(super) board: Board,
    pub(super) cm: u8,
    pub(super) cn: u8,
}

/// How far a score is known to be true (see the module's "Exact answers"). Ordered: a score
/// that rests on several is as good as the worst of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Proof {
    /// An estimate: it rests on an evaluated leaf, a stand-pat, or a repetition below the
    /// game's positions.
    Estimate,
    /// True for this node with the positions before it (the game's and the line's): it rests
    /// on repetitions of them. Never stored in the table as proven.
    Here,
    /// True whatever came before: layer values, game ends, and bounds that hold in any
    /// history.
    Proven,
}

/// A score and how far it is proven.
#[derive(Clone, Copy, Debug)]
pub(super) struct Scored {
    pub(super) v: i32,
    pub(super) proof: Proof,
}

pub(super) const fn scored(v: i32, proof: Proof) -> Scored {
    Scored { v, proof }
}

/// A proven score when `proven`, else an estimate.
pub(super) const fn scored_if(v: i32, proven: bool) -> Scored {
    Scored { v, proof: if proven { Proof::Proven } else { Proof::Estimate } }
}

/// What every thread of one search shares.
pub(super) struct Shared<'a> {
    pub(super) engine: &'a Engine,
    pub(super) control: &'a Control,
    pub(super) game: bool,
    pub(super) nodes: AtomicU64,
    /// The main thread has finished: helpers stop.
    pub(super) done: AtomicBool,
    pub(super) error: Mutex<Option<Error>>,
    pub(super) node_limit: Option<u64>,
    pub(super) start: Instant,
    /// The stone count of the game's positions before the root (since its last capture), when
    /// there are any: nodes of that count can repeat them.
    pub(super) region: Option<u32>,
    /// Mixed into the table keys of those nodes: a digest of the game's positions, so that
    /// what depends on them serves only searches with the same ones.
    pub(super) salt: u64,
    /// What breaks ties between the root's moves of equal score ([`Engine::preferences`]),
    /// empty when nothing does.
    pub(super) prefer: Vec<Preference>,
    /// The search runs against a clock: values under the 25-stone rule not solved yet are
    /// solved on another thread rather than waited for ([`GameValues::value_now`]).
    ///
    /// [`GameValues::value_now`]: super::GameValues::value_now
    pub(super) clock: bool,
}

impl Shared<'_> {
    /// The table key of a node from its board's key `k` and its stone count `n`: the board,
    /// the captured counts in a game, and the salt where the game's positions matter.
    #[inline]
    pub(super) fn key_with(&self, mut k: u64, n: u32, cm: u8, cn: u8) -> u64 {
        if self.region(n) {
            k ^= self.salt;
        }
        if self.game {
            k ^= ZOBRIST[PITS][cm.min(48) as usize] ^ ZOBRIST[PITS + 1][cn.min(48) as usize] ^ 1;
        }
        k
    }

    pub(super) fn fail(&self, e: Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        self.control.stop();
    }

    /// What the layers say of a node inside them (`None` above the layers or for a board
    /// outside every layer: its children are, one ply down).
    ///
    /// The layers' value is the position's value when nothing came before it (or when only
    /// positions with more stones did). With earlier positions of as many stones that play can
    /// repeat, the value is bounded only, by what holds in any history: under the even split of
    /// a repetition, between the value and 0 (a side that can keep the value at or above 0
    /// keeps it so, a repetition giving 0); under abapa's rule with captured counts, by the
    /// forced-capture bounds when they are built. In a game, where a capture can take a side
    /// past 24, the values under the 25-stone rule replace the layer's ([`GameValues`]), and
    /// where they are not solved nothing is proven.
    ///
    /// [`GameValues`]: super::GameValues
    #[inline]
    pub(super) fn table(&self, nd: &Node, n: u32) -> Option<TableAnswer> {
        let e = self.engine;
        let top = e.tables?;
        if n > top || !in_some_layer(&nd.board) {
            return None;
        }
        let db = e.db.as_ref()?;
        let v = match db.lookup(&nd.board) {
            Ok(v) => i32::from(v) * 100,
            Err(err) => return self.failed(err),
        };
        // In a game the 25-stone rule can end play before the board is played out: the
        // layer's value holds only where no capture can cross 24; elsewhere the value under
        // the rule, where it is solved, and else nothing is proven here.
        if self.game {
            let (m, o) = (u32::from(nd.cm), u32::from(nd.cn));
            match e.rule_value(&nd.board, m, o, self.clock) {
                Ok(GameValue::Exact(g)) => {
                    let g = i32::from(g) * 100;
                    // Under abapa it is forced, but a forced line could repeat a position of
                    // the game before the root (which ends the game with each side's row): it
                    // is proven only where the game's positions cannot come again. Under awari
                    // such a repetition gives 0, as for a layer's value.
                    if e.rules.own_side_repetition() {
                        return Some(TableAnswer { est: g, low: g, high: g, clean: true, proven: !self.region(n) });
                    }
                    return Some(TableAnswer { est: g, low: g.min(0), high: g.max(0), clean: true, proven: true });
                }
                Ok(GameValue::Between(low, high)) => {
                    let (low, high) = (i32::from(low) * 100, i32::from(high) * 100);
                    let est = self.layer_answer(nd, n, v)?.est.clamp(low, high);
                    return Some(TableAnswer { est, low, high, clean: false, proven: !self.region(n) });
                }
                // Not solved: the layers' answer guides the search as before, proving nothing.
                Ok(GameValue::Unknown) => return self.layer_answer(nd, n, v).map(|t| TableAnswer { proven: false, ..t }),
                Ok(GameValue::Layer | GameValue::Decided) => {}
                Err(err) => return self.failed(err),
            }
        }
        self.layer_answer(nd, n, v)
    }

    /// The layers' answer for a node of `n` stones whose layer value is `v` (centi-stones),
    /// where the 25-stone rule cannot change it.
    fn layer_answer(&self, nd: &Node, n: u32, v: i32) -> Option<TableAnswer> {
        let e = self.engine;
        let db = e.db.as_ref()?;
        if self.game && matches!(e.rules, Ruleset::Abapa(_)) {
            // Abapa's own-side repetition: the even-split value is exact only where the
            // forced-capture bounds force the split; elsewhere it is clamped into them.
            if e.bounds.is_some_and(|b| n <= b) {
                return match db.bounds_layer(n).and_then(|b| b.get(rank_unchecked(&nd.board))) {
                    Ok(b) => {
                        let (low, high) = b.value_range(n);
                        let (low, high) = (low * 100, high * 100);
                        Some(TableAnswer { est: v.clamp(low, high), low, high, clean: false, proven: true })
                    }
                    Err(err) => self.failed(err),
                };
            }
            let n = n as i32 * 100;
            return Some(TableAnswer { est: v, low: -n, high: n, clean: false, proven: true });
        }
        Some(TableAnswer { est: v, low: v.min(0), high: v.max(0), clean: true, proven: true })
    }

    /// The answer after a file could not be read: the search is stopped, and its result
    /// thrown away.
    fn failed(&self, err: Error) -> Option<TableAnswer> {
        self.fail(err);
        Some(TableAnswer { est: 0, low: 0, high: 0, clean: false, proven: false })
    }

    /// Whether a node of `n` stones can repeat a position of the game before the root (the
    /// game has positions of `n` stones since its last capture). Such nodes are searched, not
    /// settled by the layers, and their table entries are kept apart ([`Shared::salt`]).
    #[inline]
    pub(super) fn region(&self, n: u32) -> bool {
        self.region == Some(n)
    }
}

/// What ranks a root move among moves of equal score: the higher floor first (under abapa, what
/// its mover is sure of, in centi-stones), then the depth to capture (the winner the least, the
/// loser the greatest).
#[derive(Clone, Copy, Debug)]
pub(super) struct Preference {
    pub(super) pit: u8,
    pub(super) floor: Option<i32>,
    pub(super) dtc: Option<u16>,
}

/// The layers' answer for a node: `est` the layer value (or, under abapa with captured counts,
/// that value clamped into the bounds; in a game where a capture can take a side past 24, the
/// value under the 25-stone rule, or the layer's clamped into the bounds under it),
/// `low..=high` what holds whatever came before.
/// `clean`: `est` is the true value when nothing came before (awari, or no captured counts).
/// `proven`: what it says is proven; not in a game where the 25-stone rule can change the
/// layer's value and the value under the rule is not solved: there it only guides the search.
#[derive(Clone, Copy, Debug)]
pub(super) struct TableAnswer {
    pub(super) est: i32,
    pub(super) low: i32,
    pub(super) high: i32,
    pub(super) clean: bool,
    pub(super) proven: bool,
}

impl TableAnswer {
    /// The answer at a node that follows a capture (or the game's positions do not matter).
    pub(super) fn settled(self) -> Scored {
        if self.clean || self.low == self.high {
            scored(self.est, self.proof())
        } else {
            scored(self.est, Proof::Estimate)
        }
    }

    /// How far its bounds are proven.
    pub(super) fn proof(self) -> Proof {
        if self.proven {
            Proof::Proven
        } else {
            Proof::Estimate
        }
    }
}
