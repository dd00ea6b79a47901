//! Values of positions in a game, the captured stones counted: the 25-stone rule.
//!
//! A layer's value counts the stones still on the board as if the game went on until they are
//! all captured or shared out. A game does not: a side that has captured more than 24 stones
//! (or both 24) has won, and the stones still on the board are then split evenly. A capture on
//! the way that crosses 24 therefore ends the game earlier than the layer's value assumes, and
//! the game's value can differ from the layer's (`S: 0 1 0 0 0 0  N: 1 1 0 0 0 2  S` with 20:23
//! captured: the layer's value −5 makes a final score of −8, the game's value −2 one of −5).
//!
//! Whether the rule can change anything depends on how many stones each side still needs:
//! its *quota*, 25 minus its captured stones. A quota larger than the stones on the board can
//! never be met. When neither can, the layer's value is the game's ([`GameValue::Layer`]).
//! Otherwise the game's value is that of the same cyclic game with other exits: a capture that
//! meets the mover's quota scores its stones and ends the game (the board split evenly, unless
//! the opponent cannot move: the rules share it out then); any other capture leads to a
//! position of the smaller layer with the opponent's quota unchanged and the mover's smaller by
//! what it took; a move without capture stays in the layer with the quotas swapped. So a layer
//! with a pair of quotas is solved like a layer, over lower layers that are themselves layers
//! with quotas: [`GameValues`] does that on demand, up to [`GameValues::MAX_STONES`] stones, and
//! keeps what it solved.
//!
//! Under `awari` a repetition (endless play) shares the board evenly, as in the layers, and the
//! values are exact. Under `abapa` a repetition gives each side the stones in his row, a value
//! that depends on the game's path: what is solved there is the least and the most each side
//! can force in finitely many moves ([`GameValue::Between`]), which hold whatever came before.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use crate::error::Result;
use crate::index::{in_some_layer, layer_size, rank_unchecked, LayerWalker};
use crate::rules::{stones, Board, Outcome, Ruleset};

/// A quota no capture can meet in a layer of `n` stones: `n + 1`.
fn cap_quota(q: i32, n: u32) -> u8 {
    q.clamp(0, n as i32 + 1) as u8
}

/// What a game with captured counts makes of a position's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameValue {
    /// The game is over by the 25-stone rule (a side has more than 24, or both 24): the stones
    /// on the board are split evenly, a value of 0, unless the side to move has no legal move
    /// (the rules share them out then).
    Decided,
    /// No capture can end the game by the 25-stone rule: the layer's value is the game's.
    Layer,
    /// The game's value under the 25-stone rule: the stones the mover will still capture minus
    /// those the opponent will, the stones left when the game ends split evenly.
    Exact(i8),
    /// Under `abapa`, where a repetition's value depends on the game's path: the least and the
    /// most the mover can be sure of under the 25-stone rule, each forced in finitely many
    /// moves whatever the opponent does and whatever came before.
    Between(i8, i8),
    /// The rule can end the game, and the position has more than [`GameValues::MAX_STONES`]
    /// stones: not known here.
    Unknown,
}

/// The quotas of a position: the stones the mover and the opponent still need to end the game
/// (25 minus their captured stones), capped at `n + 1` (cannot be met); `None` when the game is
/// over (a quota met, or both sides at 24).
fn quotas(n: u32, mover: u32, opponent: u32) -> Option<(u8, u8)> {
    if mover > 24 || opponent > 24 || (mover == 24 && opponent == 24) {
        return None;
    }
    Some((cap_quota(25 - mover as i32, n), cap_quota(25 - opponent as i32, n)))
}

/// A layer with a pair of quotas, solved: per position the least and the most the mover is
/// sure of (equal under `awari`).
#[derive(Debug)]
struct Solved {
    low: Box<[i8]>,
    high: Box<[i8]>,
}

/// Values under the 25-stone rule, solved on demand layer by layer and kept: one layer of `n`
/// stones per pair of quotas met on the way.
///
/// `Send + Sync`: searches on several threads share one. Memory: two bytes per position of each
/// layer with quotas solved; about 15 MB for every pair of quotas of every layer up to
/// [`MAX_STONES`](Self::MAX_STONES) when the captured counts and the board make 48, at most about
/// 140 MB whatever the captured counts asked.
#[derive(Debug)]
pub struct GameValues {
    rules: Ruleset,
    solved: RwLock<HashMap<(u32, u8, u8), Arc<Solved>>>,
    /// Held while solving, so that threads asking for the same layer solve it once.
    solving: Mutex<()>,
    /// Layers being solved on another thread (`value_now`).
    pending: Mutex<HashSet<(u32, u8, u8)>>,
}

impl GameValues {
    /// The largest position whose value under the rule is solved.
    pub const MAX_STONES: u32 = 10;

    /// The largest position `value_now` waits for (31,824 positions a
    /// layer: tens of milliseconds with everything below).
    pub(crate) const WAIT_STONES: u32 = 7;

    /// Values under `rules`, none solved yet.
    pub fn new(rules: Ruleset) -> GameValues {
        GameValues { rules, solved: RwLock::new(HashMap::new()), solving: Mutex::new(()), pending: Mutex::new(HashSet::new()) }
    }

    /// The ruleset.
    pub fn rules(&self) -> Ruleset {
        self.rules
    }

    /// What the 25-stone rule makes of `board`'s value (mover first) when the mover has
    /// captured `mover` stones and the opponent `opponent`.
    ///
    /// Cost: a look-up when its layer with these quotas is solved; otherwise it and the lower
    /// layers with quotas it needs are solved first, once (one thread solves while the others
    /// wait; it cannot be stopped: about 0.1 s at 8 stones and up to 0.75 s at 10 under awari,
    /// up to 2 s under abapa, on a busy machine, with everything below;
    /// `value_now` does not wait).
    ///
    /// # Errors
    /// None today (the `Result` is kept for memory limits to come).
    pub fn value(&self, board: &Board, mover: u32, opponent: u32) -> Result<GameValue> {
        self.value_with(board, mover, opponent, None)
    }

    /// As [`value`](Self::value), without waiting above [`WAIT_STONES`](Self::WAIT_STONES)
    /// stones, nor at all while another thread solves: where the layer with these quotas is not
    /// solved yet, it is solved on another thread (once) and this answers
    /// [`GameValue::Unknown`] until it is. For searches with a clock: a first probe would
    /// otherwise stop the search for as long as the layer takes (about 0.1 s at 8 stones, up
    /// to 2 s at 10 under abapa).
    ///
    /// # Errors
    /// As [`value`](Self::value).
    pub(crate) fn value_now(self: &Arc<Self>, board: &Board, mover: u32, opponent: u32) -> Result<GameValue> {
        self.value_with(board, mover, opponent, Some(self))
    }

    fn value_with(&self, board: &Board, mover: u32, opponent: u32, background: Option<&Arc<Self>>) -> Result<GameValue> {
        let n = stones(board);
        let Some((a, b)) = quotas(n, mover, opponent) else { return Ok(GameValue::Decided) };
        if u32::from(a) > n && u32::from(b) > n {
            return Ok(GameValue::Layer);
        }
        if n > Self::MAX_STONES || !in_some_layer(board) {
            return Ok(GameValue::Unknown);
        }
        let cached = self.solved.read().unwrap_or_else(|p| p.into_inner()).get(&(n, a, b)).cloned();
        let layer = match (cached, background) {
            (Some(l), _) => l,
            // Small layers are solved at once (at most a few tens of ms with everything below),
            // unless another thread is solving (a larger layer can take most of a second, and
            // a search with a clock must not wait for it: issue 66, a 1 s search answered in 7).
            (None, Some(me)) if n > Self::WAIT_STONES => {
                Self::in_background(me, n, a, b);
                return Ok(GameValue::Unknown);
            }
            (None, Some(me)) => match self.solving.try_lock() {
                Ok(_one) => self.layer(n, a, b),
                Err(std::sync::TryLockError::Poisoned(p)) => {
                    let _one = p.into_inner();
                    self.layer(n, a, b)
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    Self::in_background(me, n, a, b);
                    return Ok(GameValue::Unknown);
                }
            },
            (None, None) => {
                let _one = self.solving.lock().unwrap_or_else(|p| p.into_inner());
                self.layer(n, a, b)
            }
        };
        let i = rank_unchecked(board) as usize;
        Ok(match (layer.low[i], layer.high[i]) {
            (low, high) if low == high => GameValue::Exact(low),
            (low, high) => GameValue::Between(low, high),
        })
    }

    /// As [`value`](Self::value) where the layer with these quotas is solved already, else
    /// [`GameValue::Unknown`]: never solves, never waits (the engine's line after a search with
    /// a clock).
    pub(crate) fn value_if_solved(&self, board: &Board, mover: u32, opponent: u32) -> GameValue {
        let n = stones(board);
        let Some((a, b)) = quotas(n, mover, opponent) else { return GameValue::Decided };
        if u32::from(a) > n && u32::from(b) > n {
            return GameValue::Layer;
        }
        if n > Self::MAX_STONES || !in_some_layer(board) {
            return GameValue::Unknown;
        }
        let Some(layer) = self.solved.read().unwrap_or_else(|p| p.into_inner()).get(&(n, a, b)).cloned() else { return GameValue::Unknown };
        let i = rank_unchecked(board) as usize;
        match (layer.low[i], layer.high[i]) {
            (low, high) if low == high => GameValue::Exact(low),
            (low, high) => GameValue::Between(low, high),
        }
    }

    /// Whether some layer is being solved (or waits to be) on another thread
    /// ([`value_now`](Self::value_now) started it).
    pub(crate) fn solving_in_background(&self) -> bool {
        !self.pending.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }

    /// Solves layer `n` with quotas `(a, b)` on another thread, once, one solve at a time.
    fn in_background(me: &Arc<Self>, n: u32, a: u8, b: u8) {
        if me.pending.lock().unwrap_or_else(|p| p.into_inner()).insert((n, a, b)) {
            let me = Arc::clone(me);
            std::thread::spawn(move || {
                let _one = me.solving.lock().unwrap_or_else(|p| p.into_inner());
                me.layer(n, a, b);
                me.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&(n, a, b));
            });
        }
    }

    /// Layer `n` with quotas `(a, b)` (mover, opponent; each in `1..=n + 1`), solved if need be.
    fn layer(&self, n: u32, a: u8, b: u8) -> Arc<Solved> {
        if let Some(l) = self.solved.read().unwrap_or_else(|p| p.into_inner()).get(&(n, a, b)) {
            return l.clone();
        }
        let sheets = self.solve(n, a, b);
        let mut solved = self.solved.write().unwrap_or_else(|p| p.into_inner());
        solved.insert((n, b, a), sheets[sheets.len() - 1].clone());
        solved.insert((n, a, b), sheets[0].clone());
        sheets[0].clone()
    }

    /// Solves layer `n` with quotas `(a, b)` and, when they differ, with `(b, a)`: a move that
    /// captures nothing stays in the layer with the quotas swapped, so the two are one game
    /// (two *sheets* of the layer's positions).
    ///
    /// By thresholds, as the builder does: at threshold `t`, the positions whose mover can
    /// force at least `t` in finitely many moves (an exit sure to give `t`, or a move to a
    /// position held to `-t`) and those held to at most `-t` (every exit at most `-t`, every
    /// move to a position that can force `t`) grow from the exits by a backward search over the
    /// layer's moves. Under `awari` thresholds `1..=n` give the value, what none reaches being
    /// worth 0 (endless play shares the board evenly); under `abapa` thresholds `1 - n..=n`
    /// give the two bounds.
    ///
    /// Cost: one pass over the layer's moves, then per threshold one pass over both sheets and
    /// their moves; memory about 60 bytes per position while solving.
    fn solve(&self, n: u32, a: u8, b: u8) -> Vec<Arc<Solved>> {
        const NONE: i8 = i8::MIN;
        let len = layer_size(n) as usize;
        let quota: Vec<(u8, u8)> = if a == b { vec![(a, b)] } else { vec![(a, b), (b, a)] };
        let sheets = quota.len();
        // The layer's moves: per sheet the best exit the mover is sure of and the best it may
        // get, and the children in the layer (CSR).
        let mut sure = vec![NONE; sheets * len];
        let mut may = vec![NONE; sheets * len];
        let mut first = Vec::with_capacity(len + 1);
        let mut children: Vec<u32> = Vec::with_capacity(len * 4);
        let mut lower: HashMap<(usize, u8), Option<Arc<Solved>>> = HashMap::new();
        let walker = LayerWalker::new(n, 0..len as u64).expect("a layer of at most MAX_STONES");
        for (i, board) in walker {
            let i = i as usize;
            first.push(children.len() as u32);
            let moves = self.rules.moves(&board);
            if let Some(e) = moves.ending() {
                for s in 0..sheets {
                    (sure[s * len + i], may[s * len + i]) = (e, e);
                }
                continue;
            }
            for m in moves.as_slice() {
                match m.outcome {
                    Outcome::End { value } => {
                        for s in 0..sheets {
                            sure[s * len + i] = sure[s * len + i].max(value);
                            may[s * len + i] = may[s * len + i].max(value);
                        }
                    }
                    Outcome::Child { captured: 0, child } => children.push(rank_unchecked(&child) as u32),
                    Outcome::Child { captured, child } => {
                        let j = n - u32::from(captured);
                        for (s, &(qa, qb)) in quota.iter().enumerate() {
                            // The mover's quota after the capture; met (or both sides at 24):
                            // the game is over, the board split evenly unless the opponent
                            // cannot move (the rules share it out then).
                            let left = i32::from(qa) - i32::from(captured);
                            let l = lower.entry((s, captured)).or_insert_with(|| {
                                let over = left <= 0 || (left == 1 && qb == 1);
                                (!over).then(|| self.layer(j, cap_quota(i32::from(qb), j), left as u8))
                            });
                            let (low, high) = match l {
                                Some(l) => {
                                    let c = rank_unchecked(&child) as usize;
                                    (l.low[c], l.high[c])
                                }
                                None => {
                                    let e = self.rules.moves(&child).ending().unwrap_or(0);
                                    (e, e)
                                }
                            };
                            let c = captured as i8;
                            sure[s * len + i] = sure[s * len + i].max(c - high);
                            may[s * len + i] = may[s * len + i].max(c - low);
                        }
                    }
                }
            }
        }
        first.push(children.len() as u32);
        drop(lower);
        // The parents of each position in the layer (CSR).
        let mut pfirst = vec![0u32; len + 1];
        for &c in &children {
            pfirst[c as usize + 1] += 1;
        }
        for i in 0..len {
            pfirst[i + 1] += pfirst[i];
        }
        let mut parents = vec![0u32; children.len()];
        let mut fill = pfirst.clone();
        for p in 0..len {
            for &c in &children[first[p] as usize..first[p + 1] as usize] {
                parents[fill[c as usize] as usize] = p as u32;
                fill[c as usize] += 1;
            }
        }
        drop(fill);
        // A child of a position of sheet `s` is in the other sheet (the quotas swap).
        let other = |s: usize| if sheets == 2 { 1 - s } else { 0 };
        let path = self.rules.own_side_repetition();
        let n8 = n as i8;
        let (thresholds, init) = if path { (1 - n8..=n8, (-n8, n8)) } else { (1..=n8, (0, 0)) };
        let mut low = vec![init.0; sheets * len];
        let mut high = vec![init.1; sheets * len];
        let mut won = vec![false; sheets * len];
        let mut lost = vec![false; sheets * len];
        let mut open = vec![0u8; sheets * len];
        // Positions that became won, and lost, whose parents are still to be told.
        let (mut wins, mut losses): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for t in thresholds {
            won.fill(false);
            lost.fill(false);
            for st in 0..sheets * len {
                let i = st % len;
                open[st] = (first[i + 1] - first[i]) as u8;
                if sure[st] >= t {
                    won[st] = true;
                    wins.push(st as u32);
                }
                if open[st] == 0 && may[st] <= -t {
                    lost[st] = true;
                    losses.push(st as u32);
                }
            }
            if wins.is_empty() && losses.is_empty() && t > 0 {
                break;
            }
            loop {
                let (st, is_loss) = match losses.pop() {
                    Some(st) => (st as usize, true),
                    None => match wins.pop() {
                        Some(st) => (st as usize, false),
                        None => break,
                    },
                };
                let ps = other(st / len) * len;
                let i = st % len;
                for &p in &parents[pfirst[i] as usize..pfirst[i + 1] as usize] {
                    let q = ps + p as usize;
                    if is_loss {
                        // A move to a position held to -t: the parent can force t.
                        if !won[q] {
                            won[q] = true;
                            wins.push(q as u32);
                        }
                    } else {
                        // One more move to a position that can force t: the parent is held to
                        // -t when every move is such and no exit gives more.
                        open[q] -= 1;
                        if open[q] == 0 && !lost[q] && may[q] <= -t {
                            lost[q] = true;
                            losses.push(q as u32);
                        }
                    }
                }
            }
            for st in 0..sheets * len {
                match (won[st], lost[st], path) {
                    (true, _, false) => (low[st], high[st]) = (t, t),
                    (_, true, false) => (low[st], high[st]) = (-t, -t),
                    (w, l, true) => {
                        if w {
                            low[st] = t;
                        }
                        if l {
                            high[st] = -t;
                        }
                    }
                    _ => {}
                }
            }
        }
        (0..sheets).map(|s| Arc::new(Solved { low: low[s * len..][..len].into(), high: high[s * len..][..len].into() })).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_follow_the_rule() {
        assert_eq!(quotas(5, 25, 18), None);
        assert_eq!(quotas(0, 24, 24), None);
        assert_eq!(quotas(5, 20, 23), Some((5, 2)));
        // Quotas above the board cannot be met: capped at n + 1.
        assert_eq!(quotas(4, 0, 0), Some((5, 5)));
        assert_eq!(quotas(12, 18, 18), Some((7, 7)));
    }

    #[test]
    fn the_issue_position_is_minus_five() {
        // S: 0 1 0 0 0 0  N: 1 1 0 0 0 2, South to move with 20:23 captured: best play ends
        // 21.5 to 26.5, the board's share -2 (the layer's value, -5, plays the board out).
        let g = GameValues::new(Ruleset::Awari);
        let board = [0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 2];
        assert_eq!(g.value(&board, 20, 23).unwrap(), GameValue::Exact(-2));
        assert_eq!(g.value(&board, 0, 0).unwrap(), GameValue::Layer);
        assert_eq!(g.value(&board, 25, 18).unwrap(), GameValue::Decided);
        let big = [2, 1, 0, 0, 0, 0, 3, 1, 0, 0, 0, 4];
        assert_eq!(g.value(&big, 20, 17).unwrap(), GameValue::Unknown);
    }
}
