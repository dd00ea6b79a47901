//! The move generator: a position's legal moves under each ruleset ([`Moves`], from
//! [`Ruleset::moves`] and [`Ruleset::play`]), and the same moves as the solver's exits pass
//! counts them ([`Exits`], from [`Ruleset::exits`]).

use super::board::{stones, Board, ROW, TOTAL_STONES};
use super::packed::{pack, pit_of, raw_move, sum6, turned_packed, unpack, OPP_MASK, OWN_MASK};
use super::ruleset::{GrandSlam, Ruleset};

/// What a legal move leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The game goes on from `child` (mover-first, so the opponent moves next) after the mover
    /// captured `captured` stones. The move is worth `captured - v(child)`.
    Child {
        /// Stones the mover captured with this move.
        captured: u8,
        /// The next position, mover-first (the opponent of this move is its mover).
        child: Board,
    },
    /// The move ends the game; `value` is the mover's final result over all stones that were on the
    /// board before the move (his stones minus the opponent's, captures included).
    End {
        /// The mover's final result, `-n..=n` for the `n` stones on the board before the move.
        value: i8,
    },
}

/// One legal move: the pit (0..5, counted from the mover's first pit) and its outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Move {
    /// The pit sown from, 0..5 counted from the mover's first pit.
    pub pit: u8,
    /// Where the move leads.
    pub outcome: Outcome,
}

/// The legal moves of a position, or the game's end when there is none.
///
/// A fixed-size list (at most 6 moves) so that generating moves allocates nothing.
#[derive(Clone, Copy, Debug)]
pub struct Moves {
    moves: [Move; ROW],
    len: u8,
    /// The position's final value for the mover when it has no legal move.
    ending: Option<i8>,
}

impl Moves {
    const EMPTY_MOVE: Move = Move { pit: 0, outcome: Outcome::End { value: 0 } };

    fn ended(value: i8) -> Moves {
        Moves { moves: [Self::EMPTY_MOVE; ROW], len: 0, ending: Some(value) }
    }

    fn none() -> Moves {
        Moves { moves: [Self::EMPTY_MOVE; ROW], len: 0, ending: None }
    }

    #[inline]
    fn push(&mut self, m: Move) {
        self.moves[self.len as usize] = m;
        self.len += 1;
    }

    /// The legal moves, in increasing pit order. Empty exactly when [`ending`](Self::ending) is set.
    #[inline]
    pub fn as_slice(&self) -> &[Move] {
        &self.moves[..self.len as usize]
    }

    /// When the position has no legal move: the game is over and this is its value for the mover.
    #[inline]
    pub fn ending(&self) -> Option<i8> {
        self.ending
    }

    /// Number of legal moves.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when there is no legal move.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The legal move from `pit`, if there is one.
    #[inline]
    pub fn from_pit(&self, pit: u8) -> Option<&Move> {
        self.as_slice().iter().find(|m| m.pit == pit)
    }
}

#[inline(always)]
fn child_move(pit: usize, captured: u8, after: u128) -> Move {
    Move { pit: pit as u8, outcome: Outcome::Child { captured, child: unpack(turned_packed(after)) } }
}

impl Ruleset {
    /// The legal moves of `board` (mover-first) under this ruleset, or its ending value.
    ///
    /// Cost: at most six sowings (one add each) and capture checks; no allocation.
    ///
    /// # Panics
    /// Only for boards with more than 48 stones (which no [`Position`](crate::Position) holds);
    /// debug builds check this.
    #[inline]
    pub fn moves(self, board: &Board) -> Moves {
        debug_assert!(stones(board) <= TOTAL_STONES, "more than 48 stones");
        let x = pack(board);
        if x & OWN_MASK == 0 {
            // A player with no stones in his row cannot move: the opponent takes the rest.
            return Moves::ended(-(sum6(x >> 48) as i8));
        }
        match self {
            Ruleset::Awari => awari_moves(x),
            Ruleset::Abapa(gs) => abapa_moves(x, gs),
        }
    }

    /// The pit of a legal move of `from` (mover-first) that captures nothing and leaves `to`
    /// (mover-first: the other player's view), if there is one: whether `from` can come right
    /// before `to` in a game since its last capture (as a game's history must: see
    /// [`Root::history`](crate::search::Root::history)).
    ///
    /// Cost: as [`moves`](Self::moves).
    ///
    /// # Panics
    /// As [`moves`](Self::moves): only for boards with more than 48 stones.
    pub fn quiet_move_between(self, from: &Board, to: &Board) -> Option<u8> {
        if stones(from) != stones(to) {
            return None;
        }
        self.moves(from).as_slice().iter().find(|m| matches!(m.outcome, Outcome::Child { captured: 0, child } if child == *to)).map(|m| m.pit)
    }

    /// The legal move from `pit` of `board`, if that pit holds a legal move.
    ///
    /// Cheaper than [`moves`](Self::moves) in the common case: only when legality depends on the
    /// position's other moves (eradication, feeding, grand slams) are they generated.
    ///
    /// # Panics
    /// As [`moves`](Self::moves): only for boards with more than 48 stones.
    #[inline]
    pub fn play(self, board: &Board, pit: usize) -> Option<Move> {
        if pit >= ROW || board[pit] == 0 {
            return None;
        }
        let x = pack(board);
        let raw = raw_move(x, pit);
        let simple = match self {
            // A move that leaves the opponent stones is legal whatever the other moves do.
            Ruleset::Awari => raw.after & OPP_MASK != 0,
            // Feeding matters only when the opponent row is empty; grand slams need their option.
            Ruleset::Abapa(_) => x & OPP_MASK != 0 && !raw.grand_slam,
        };
        if simple {
            return Some(child_move(pit, raw.captured, raw.after));
        }
        self.moves(board).from_pit(pit as u8).copied()
    }
}

/// A position's moves as the solver's exits pass counts them ([`Ruleset::exits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exits {
    /// No legal move: the game is over, worth this to the mover.
    Ended(i8),
    /// Legal moves: the best value among those that end the game (`None`: no such move), and
    /// the number of those that capture nothing (the moves that stay in the layer).
    Moves { best_end: Option<i8>, same_layer: u8 },
}

impl Ruleset {
    /// The legal moves of `board` as the exits pass needs them: `capture(captured, child)` for
    /// every move that captures, in increasing pit order, and the rest summed up in the result.
    /// The same moves as [`moves`](Self::moves) (a test compares the two), without building the
    /// children of the moves that capture nothing.
    ///
    /// Cost: under `awari`, at most six sowings and no board but the capturing children's (most
    /// moves capture nothing: the exits pass of layer 24 took 11.0 s with it, 14.3 s with
    /// [`moves`](Self::moves)); under `abapa`, [`moves`](Self::moves).
    ///
    /// # Panics
    /// As [`moves`](Self::moves): only for boards with more than 48 stones.
    #[inline]
    pub(crate) fn exits(self, board: &Board, mut capture: impl FnMut(u8, &Board)) -> Exits {
        self.exits_by_pit(board, |_, captured, child| capture(captured, child))
    }

    /// [`exits`](Self::exits) with the pit of each capturing move: `capture(pit, captured,
    /// child)`.
    #[inline]
    pub(crate) fn exits_by_pit(self, board: &Board, mut capture: impl FnMut(usize, u8, &Board)) -> Exits {
        debug_assert!(stones(board) <= TOTAL_STONES, "more than 48 stones");
        let x = pack(board);
        if x & OWN_MASK == 0 {
            return Exits::Ended(-(sum6(x >> 48) as i8));
        }
        if self == Ruleset::Awari {
            return Exits::Moves { best_end: None, same_layer: awari_exits(x, &mut capture) };
        }
        let moves = self.moves(board);
        if let Some(ending) = moves.ending() {
            return Exits::Ended(ending);
        }
        let (mut best_end, mut same_layer) = (None::<i8>, 0u8);
        for m in moves.as_slice() {
            match m.outcome {
                Outcome::End { value } => best_end = Some(best_end.map_or(value, |b| b.max(value))),
                Outcome::Child { captured: 0, .. } => same_layer += 1,
                Outcome::Child { captured, ref child } => capture(usize::from(m.pit), captured, child),
            }
        }
        Exits::Moves { best_end, same_layer }
    }

    /// The capture of the move from `pit` of `board` as [`exits`](Self::exits) reports it:
    /// what it captures and the child (turned), or `None` when the move is not legal or
    /// captures nothing. The exits pass that reads the lower layers in order asks each of a
    /// position's moves apart.
    ///
    /// Cost: one sowing when the opponent's row holds stones and the move takes some but not
    /// all of them (a move that is then legal under every ruleset, whatever the others do);
    /// else the position's moves ([`exits`](Self::exits)).
    #[inline]
    pub(crate) fn capture_from(self, board: &Board, pit: usize) -> Option<(u8, Board)> {
        let x = pack(board);
        let raw = raw_move(x, pit);
        if raw.captured == 0 {
            // Every ruleset's capture is a sowing's capture (a grand slam's may shrink or vanish).
            return None;
        }
        if !raw.grand_slam && x & OPP_MASK != 0 {
            return Some((raw.captured, unpack(turned_packed(raw.after))));
        }
        let mut found = None;
        self.exits_by_pit(board, |p, captured, child| {
            if p == pit {
                found = Some((captured, *child));
            }
        });
        found
    }
}

/// The legal moves of `x` under awari: the board after each pit's sowing and capture (not
/// turned), what it captured, and the legal pits as bits. The sowings come first: an eradicating
/// move is legal only when every move eradicates. The mover has stones.
#[inline(always)]
fn awari_legal(x: u128) -> ([u128; ROW], [u8; ROW], u32) {
    let mut after = [0u128; ROW];
    let mut taken = [0u8; ROW];
    let (mut live, mut keeping) = (0u32, 0u32);
    for pit in 0..ROW {
        if pit_of(x, pit) != 0 {
            let raw = raw_move(x, pit);
            after[pit] = raw.after;
            taken[pit] = raw.captured;
            live |= 1 << pit;
            keeping |= u32::from(raw.after & OPP_MASK != 0) << pit;
        }
    }
    (after, taken, if keeping != 0 { keeping } else { live })
}

/// [`awari_moves`] for the exits pass: the capturing moves' children to `capture`, the number
/// of the other legal moves returned. The mover has stones.
#[inline(always)]
fn awari_exits(x: u128, capture: &mut impl FnMut(usize, u8, &Board)) -> u8 {
    let (after, taken, mut legal) = awari_legal(x);
    let mut same_layer = 0u8;
    while legal != 0 {
        let pit = legal.trailing_zeros() as usize;
        legal &= legal - 1;
        if taken[pit] == 0 {
            same_layer += 1;
        } else {
            capture(pit, taken[pit], &unpack(turned_packed(after[pit])));
        }
    }
    same_layer
}

fn awari_moves(x: u128) -> Moves {
    let (after, taken, mut legal) = awari_legal(x);
    let mut all = Moves::none();
    while legal != 0 {
        let pit = legal.trailing_zeros() as usize;
        legal &= legal - 1;
        all.push(child_move(pit, taken[pit], after[pit]));
    }
    all
}

fn abapa_moves(x: u128, gs: GrandSlam) -> Moves {
    let own = sum6(x) as i8;
    let n = own + sum6(x >> 48) as i8;
    let opp_empty = x & OPP_MASK == 0;
    let mut out = Moves::none();
    let mut feeding_allowed = 0;
    let mut all_slams = true;
    for pit in 0..ROW {
        let s = pit_of(x, pit) as usize;
        if s == 0 {
            continue;
        }
        // Feeding: with the opponent's row empty, a move must reach it (pit + s > 5).
        if opp_empty && pit + s < ROW {
            continue;
        }
        feeding_allowed += 1;
        let raw = raw_move(x, pit);
        if !raw.grand_slam {
            all_slams = false;
            out.push(child_move(pit, raw.captured, raw.after));
            continue;
        }
        let m = match gs {
            GrandSlam::NoCapture => child_move(pit, 0, raw.sown),
            GrandSlam::Forbidden => continue,
            GrandSlam::Capture => child_move(pit, raw.captured, raw.after),
            GrandSlam::RemainderToOpponent => {
                let c = raw.captured as i8;
                Move { pit: pit as u8, outcome: Outcome::End { value: c - (n - c) } }
            }
            GrandSlam::SpareLast | GrandSlam::SpareFirst => {
                let Some((low, last)) = raw.chain else { continue };
                let spared = if gs == GrandSlam::SpareLast { last } else { low };
                let keep = 0xFFu128 << (8 * spared);
                let spared_stones = pit_of(raw.sown, spared);
                child_move(pit, raw.captured - spared_stones, raw.after | (raw.sown & keep))
            }
        };
        out.push(m);
    }
    if feeding_allowed == 0 {
        // The opponent cannot be fed: the mover takes the stones in his own row.
        return Moves::ended(own);
    }
    if gs == GrandSlam::Forbidden && all_slams {
        // Every allowed move is a forbidden grand slam: each side takes his own row.
        return Moves::ended(own - (n - own));
    }
    out
}
