//! The rules of Oware: rulesets, move generation and un-moves.
//!
//! Everything here follows the rules described in `docs/rules.md`. Boards are kept in
//! **mover-first form**: pits 0..5 belong to the player to move, pits 6..11 to the opponent, and a
//! move's child is turned around so that its mover is first again.
//!
//! The move generator is the inner loop of the solver and the verifier: it allocates nothing and
//! works on fixed-size arrays. A deliberately naive generator lives in the tests and is compared
//! with this one on hundreds of thousands of random positions.

use std::fmt;
use std::str::FromStr;

/// Number of pits on the board.
pub const PITS: usize = 12;
/// Number of pits in one player's row.
pub(crate) const ROW: usize = 6;
/// Stones in the game (4 in each of the 12 pits at the start).
pub const TOTAL_STONES: u32 = 48;

/// The fewest stones a capturing move takes, under every ruleset: a capture takes whole pits
/// holding 2 or 3 stones (the spare options of a grand slam leave out a whole pit, so they capture
/// nothing or at least one whole pit). A move from a position of `n` stones therefore leads to
/// layer `n` (no capture) or to a layer of at most `n - 2` stones, never to layer `n - 1`.
pub const MIN_CAPTURE: u32 = 2;

/// The layers whose values a position of `n` stones needs, itself included, in increasing order:
/// `0..=n-2` and `n` (layer `n - 1` is never reached: [`MIN_CAPTURE`]). For `n` of 0 or 1, simply
/// `0..=n` (layer 0 is one position; keeping it leaves the smallest databases whole).
///
/// Cost: one allocation of `n` entries at most.
pub fn layers_needed(n: u32) -> Vec<u32> {
    (0..=n).filter(|&m| m + 1 != n || n < MIN_CAPTURE).collect()
}

/// The layer below `n` that no position of layer `n` needs (`n - 1`, for `n` of 2 or more), if
/// any: the layer `build --for` leaves out.
pub fn layer_not_needed(n: u32) -> Option<u32> {
    (n >= MIN_CAPTURE).then(|| n - 1)
}

/// A board in mover-first form: `b[0..6]` is the mover's row, `b[6..12]` the opponent's.
pub type Board = [u8; PITS];

/// Total number of stones on a board.
#[inline]
pub fn stones(board: &Board) -> u32 {
    board.iter().map(|&c| u32::from(c)).sum()
}

/// The board seen from the other side: the rows swap places (`b[0..6]` <-> `b[6..12]`).
///
/// This is how a child is put back into mover-first form after a move.
#[inline]
pub fn turned(board: &Board) -> Board {
    let mut t = [0u8; PITS];
    t[..ROW].copy_from_slice(&board[ROW..]);
    t[ROW..].copy_from_slice(&board[..ROW]);
    t
}

/// What a ruleset does with a grand slam (a move whose capture chain would take every stone in
/// the opponent's row). The options are described in `docs/rules.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GrandSlam {
    /// Legal, captures nothing (the international `abapa` default).
    NoCapture,
    /// Illegal; if every move the feeding rule allows is a grand slam, the game ends and each
    /// player takes the stones in his own row.
    Forbidden,
    /// Legal and captures normally (the opponent is then left without stones).
    Capture,
    /// Legal, captures, and the game ends with every stone left on the board going to the opponent.
    RemainderToOpponent,
    /// Legal, captures the chain except the pit where the last stone fell.
    SpareLast,
    /// Legal, captures the chain except the pit where the chain ends.
    SpareFirst,
}

/// A complete ruleset: which moves are legal, what a grand slam does, how the game ends.
///
/// Every ruleset has a stable short [`name`](Ruleset::name) (used on the command line and as the
/// database directory name) and a stable numeric [`id`](Ruleset::id) (stored in file headers).
/// Neither may ever change: files already written depend on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ruleset {
    /// Computer-Olympiad rules, the rules of the published 2002 solution: eradicating moves are
    /// legal only when every move eradicates; a player who cannot move loses all remaining stones.
    Awari,
    /// International rules (feeding obligation) with the given grand-slam option.
    Abapa(GrandSlam),
}

impl Ruleset {
    /// Whether the rules documents of this ruleset give each player the stones on his own side
    /// when play repeats (abapa and its variants); otherwise (awari) endless play splits the
    /// stones evenly. The databases' values use the even split for every ruleset.
    pub fn own_side_repetition(self) -> bool {
        matches!(self, Ruleset::Abapa(_))
    }

    /// Every ruleset, in id order.
    pub const ALL: [Ruleset; 7] = [
        Ruleset::Awari,
        Ruleset::Abapa(GrandSlam::NoCapture),
        Ruleset::Abapa(GrandSlam::Forbidden),
        Ruleset::Abapa(GrandSlam::Capture),
        Ruleset::Abapa(GrandSlam::RemainderToOpponent),
        Ruleset::Abapa(GrandSlam::SpareLast),
        Ruleset::Abapa(GrandSlam::SpareFirst),
    ];

    /// Stable short name: `awari`, `abapa`, `abapa-forbidden`, `abapa-capture`,
    /// `abapa-remainder-to-opponent`, `abapa-spare-last`, `abapa-spare-first`.
    pub fn name(self) -> &'static str {
        match self {
            Ruleset::Awari => "awari",
            Ruleset::Abapa(GrandSlam::NoCapture) => "abapa",
            Ruleset::Abapa(GrandSlam::Forbidden) => "abapa-forbidden",
            Ruleset::Abapa(GrandSlam::Capture) => "abapa-capture",
            Ruleset::Abapa(GrandSlam::RemainderToOpponent) => "abapa-remainder-to-opponent",
            Ruleset::Abapa(GrandSlam::SpareLast) => "abapa-spare-last",
            Ruleset::Abapa(GrandSlam::SpareFirst) => "abapa-spare-first",
        }
    }

    /// Stable numeric id stored in database headers (0 = awari, 1..=6 = abapa options).
    pub fn id(self) -> u32 {
        match self {
            Ruleset::Awari => 0,
            Ruleset::Abapa(GrandSlam::NoCapture) => 1,
            Ruleset::Abapa(GrandSlam::Forbidden) => 2,
            Ruleset::Abapa(GrandSlam::Capture) => 3,
            Ruleset::Abapa(GrandSlam::RemainderToOpponent) => 4,
            Ruleset::Abapa(GrandSlam::SpareLast) => 5,
            Ruleset::Abapa(GrandSlam::SpareFirst) => 6,
        }
    }

    /// The ruleset with the given header id, if any.
    pub(crate) fn from_id(id: u32) -> Option<Ruleset> {
        Ruleset::ALL.into_iter().find(|r| r.id() == id)
    }

    /// The names accepted by [`FromStr`], for help texts.
    pub fn names() -> Vec<&'static str> {
        Ruleset::ALL.iter().map(|r| r.name()).collect()
    }
}

impl fmt::Display for Ruleset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Ruleset {
    type Err = String;

    /// Parses a short name; `abapa-no-capture` is accepted as an alias of `abapa`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase();
        if s == "abapa-no-capture" {
            return Ok(Ruleset::Abapa(GrandSlam::NoCapture));
        }
        Ruleset::ALL.into_iter().find(|r| r.name() == s).ok_or_else(|| format!("unknown ruleset '{s}' (expected one of: {})", Ruleset::names().join(", ")))
    }
}

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

// ---------------------------------------------------------------------------------------------
// Packed boards. The hot paths work on a board packed into a u128, pit p in byte p (bytes 12..15
// zero). No pit ever holds more than 48 stones, so bytewise sums never carry into the next pit:
// a sowing is one masked add of a precomputed increment vector, an un-sowing one subtraction with
// a bytewise borrow test, and a row test one mask.

/// Bytes 0..5 (the mover's row) of a packed board.
const OWN_MASK: u128 = (1u128 << 48) - 1;
/// Bytes 6..11 (the opponent's row) of a packed board.
const OPP_MASK: u128 = OWN_MASK << 48;
/// 0x80 in each of bytes 0..11: the borrow guards of an un-sowing.
const GUARDS: u128 = 0x8080_8080_8080_8080_8080_8080;

#[inline(always)]
fn pack(b: &Board) -> u128 {
    let mut a = [0u8; 16];
    a[..PITS].copy_from_slice(b);
    u128::from_le_bytes(a)
}

#[inline(always)]
fn unpack(x: u128) -> Board {
    let a = x.to_le_bytes();
    let mut b = [0u8; PITS];
    b.copy_from_slice(&a[..PITS]);
    b
}

#[inline(always)]
fn pit_of(x: u128, p: usize) -> u8 {
    (x >> (8 * p)) as u8
}

/// Sum of the six bytes of a row (the row in bytes 0..5 of `x`).
#[inline(always)]
fn sum6(x: u128) -> u32 {
    // Multiplying by 0x0101.. adds every byte into the top one; sums stay below 256.
    (((x as u64) & 0xFFFF_FFFF_FFFF).wrapping_mul(0x0101_0101_0101_0101) >> 56) as u32
}

#[inline(always)]
fn turned_packed(x: u128) -> u128 {
    ((x & OWN_MASK) << 48) | ((x >> 48) & OWN_MASK)
}

/// `INC[pit][s]`: what sowing `s` stones from `pit` adds to each pit (the origin gets nothing).
/// `LAST[pit][s]`: the pit that receives the last stone.
struct SowTables {
    inc: [[u128; 49]; ROW],
    last: [[u8; 49]; ROW],
}

const SOW: SowTables = {
    let mut t = SowTables { inc: [[0; 49]; ROW], last: [[0; 49]; ROW] };
    let mut pit = 0;
    while pit < ROW {
        let mut s = 1;
        while s <= 48 {
            let laps = (s / 11) as u128;
            let rem = s % 11;
            let mut inc = 0u128;
            let mut j = 1;
            while j < PITS {
                let add = laps + if j <= rem { 1 } else { 0 };
                inc += add << (8 * ((pit + j) % PITS));
                j += 1;
            }
            t.inc[pit][s] = inc;
            t.last[pit][s] = ((pit + (s - 1) % 11 + 1) % PITS) as u8;
            s += 1;
        }
        pit += 1;
    }
    t
};

/// What sowing `s` stones (1..=48) from the mover's pit `pit` (0..5) adds to each pit (the
/// origin gets nothing), and the last pit sown: the same for every board.
pub(crate) fn sowing(pit: usize, s: usize) -> ([u8; PITS], usize) {
    (unpack(SOW.inc[pit][s]), usize::from(SOW.last[pit][s]))
}

/// The board right after sowing from `pit` (not yet captured, not turned), and the last pit sown.
///
/// Sowing skips the origin pit on every lap, so it receives nothing and ends up empty.
///
/// # Panics
/// When `pit` is not one of the mover's pits (0..5) or holds no stone.
#[cfg(test)]
fn sow(board: &Board, pit: usize) -> (Board, usize) {
    assert!(pit < ROW && board[pit] > 0, "sowing needs a non-empty pit of the mover");
    let (x, last) = sow_packed(pack(board), pit);
    (unpack(x), last)
}

#[inline(always)]
fn sow_packed(x: u128, pit: usize) -> (u128, usize) {
    let s = pit_of(x, pit) as usize;
    let sown = (x & !(0xFFu128 << (8 * pit))) + SOW.inc[pit][s];
    (sown, SOW.last[pit][s] as usize)
}

/// One move before legality rules are applied.
#[derive(Clone, Copy)]
struct RawMove {
    /// The board after sowing, before any capture (not turned).
    sown: u128,
    /// The board after sowing and capture (not turned).
    after: u128,
    captured: u8,
    /// The chain took the whole opponent row.
    grand_slam: bool,
    /// The chain (lowest pit, last pit), when there is one: the spare options need it.
    chain: Option<(usize, usize)>,
}

#[inline(always)]
fn raw_move(x: u128, pit: usize) -> RawMove {
    let (sown, last) = sow_packed(x, pit);
    let plain = RawMove { sown, after: sown, captured: 0, grand_slam: false, chain: None };
    if last < ROW || !matches!(pit_of(sown, last), 2 | 3) {
        return plain;
    }
    let mut low = last;
    let mut taken = u32::from(pit_of(sown, last));
    while low > ROW && matches!(pit_of(sown, low - 1), 2 | 3) {
        low -= 1;
        taken += u32::from(pit_of(sown, low));
    }
    let grand_slam = taken == sum6(sown >> 48);
    let chain_mask = ((1u128 << (8 * (last + 1))) - 1) & !((1u128 << (8 * low)) - 1);
    RawMove { sown, after: sown & !chain_mask, captured: taken as u8, grand_slam, chain: Some((low, last)) }
}

#[inline(always)]
fn child_move(pit: usize, captured: u8, after: u128) -> Move {
    Move { pit: pit as u8, outcome: Outcome::Child { captured, child: unpack(turned_packed(after)) } }
}

impl Ruleset {
    /// What a repetition gives the side to move of `board` (mover-first) when it ends the game:
    /// awari splits the stones on the board evenly (0), abapa gives each side the stones in
    /// his row (his row minus the opponent's).
    pub fn repetition_value(self, board: &Board) -> i8 {
        match self {
            Ruleset::Awari => 0,
            Ruleset::Abapa(_) => {
                let own: i32 = board[..ROW].iter().map(|&c| i32::from(c)).sum();
                let opp: i32 = board[ROW..].iter().map(|&c| i32::from(c)).sum();
                (own - opp) as i8
            }
        }
    }

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

/// `raw_move(x, pit).captured` (`pit` not empty), pit by pit: a sowing that ends in the mover's
/// row captures nothing, and one of fewer than 12 stones (no lap) drops one stone in each pit it
/// passes, so that its chain is the run of pits holding 1 or 2 that ends where it ends. The
/// simple twin of [`row_sowings`]'s table: a test compares the three.
#[cfg(test)]
fn raw_capture(x: u128, pit: usize) -> u8 {
    let s = usize::from(pit_of(x, pit));
    let last = usize::from(SOW.last[pit][s & 63]);
    if last < ROW {
        return 0;
    }
    if s >= 12 {
        return raw_move(x, pit).captured;
    }
    let mut taken = 0u8;
    let mut p = last;
    // Every pit from `pit + 1` to `last` received one stone; the chain stops at the row's edge.
    while p >= ROW && matches!(pit_of(x, p), 1 | 2) {
        taken += pit_of(x, p) + 1;
        p -= 1;
    }
    taken
}

/// Each side's sowings of a board, summed up for the search ([`sowings`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sowings {
    /// The mover's, then the opponent's (were he to move now): the largest capture of any
    /// sowing and the number of non-empty pits.
    pub(crate) sides: [(u8, u8); 2],
    /// The mover's pits whose sowing captures, as bits (pit `p`: bit `p`): every legal move that
    /// captures or ends the game (a grand slam under `abapa-remainder-to-opponent`) is among
    /// them. The search's quiescence plays only those.
    pub(crate) capturing: u8,
}

/// Each side's sowings of `board` (mover-first) summed up for the search's evaluation and its
/// quiescence.
///
/// An estimate of the legal moves' figures, not the rules' answer: every sowing counts as a move
/// and every chain as a capture (the eradication and feeding rules and a grand slam's option,
/// which [`Ruleset::moves`] applies, are ignored; they matter in few positions).
///
/// Cost: per side two bytewise compares of the opponent's row, then one table read per pit (a
/// sowing that laps the board is played); no loop over a chain, no board built. A test compares
/// it with the pit-by-pit [`raw_capture`].
#[inline]
pub(crate) fn sowings(board: &Board) -> Sowings {
    let x = pack(board);
    let (own, capturing) = row_sowings(x);
    let (opp, _) = row_sowings(turned_packed(x));
    Sowings { sides: [own, opp], capturing }
}

/// Bit `i` set where byte `i` (0..5) of `v` equals `b`: a bytewise zero test of `v ^ b…b`
/// without carries between bytes, its flags gathered by one multiplication.
#[inline(always)]
fn bytes_equal(v: u64, b: u8) -> u32 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let t = v ^ (0x0101_0101_0101_0101u64 * u64::from(b));
    let zero = !(((t & LOW7) + LOW7) | t) & !LOW7;
    ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32 & 0x3F
}

/// `CHAIN[m][e]`: the opponent's pits (bits 0..5) taken by a sowing of fewer than 12 stones from
/// the mover's row whose last stone lands `e` pits after the mover's first pit (`e` is 0..16:
/// pit + stones), when `m` marks the opponent's pits that held 1 or 2 before it (they hold 2 or
/// 3 after): the run of marked pits that ends at `e - 6`, empty when `e` is outside 6..11.
const CHAIN: [[u8; 17]; 64] = {
    let mut t = [[0u8; 17]; 64];
    let mut m = 0;
    while m < 64 {
        let mut e = ROW;
        while e < PITS {
            let mut run = 0u8;
            let mut p = e - ROW;
            loop {
                if m & (1 << p) == 0 {
                    break;
                }
                run |= 1 << p;
                if p == 0 {
                    break;
                }
                p -= 1;
            }
            t[m][e] = run;
            e += 1;
        }
        m += 1;
    }
    t
};

/// The number of bits set in each 6-bit mask.
const BITS6: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut m = 0;
    while m < 64 {
        t[m] = (m as u32).count_ones() as u8;
        m += 1;
    }
    t
};

/// The mover's sowings of `x`: (largest capture, non-empty pits) and the capturing pits as bits.
#[inline(always)]
fn row_sowings(x: u128) -> ((u8, u8), u8) {
    let own = x as u64 & 0xFFFF_FFFF_FFFF;
    let opp = (x >> 48) as u64 & 0xFFFF_FFFF_FFFF;
    let twos = bytes_equal(opp, 2);
    let chains = &CHAIN[(bytes_equal(opp, 1) | twos) as usize];
    let live = !bytes_equal(own, 0) & 0x3F;
    let (mut best, mut capturing) = (0u8, 0u8);
    for pit in 0..ROW {
        let s = usize::from(pit_of(x, pit));
        let c = if s < 12 {
            // Each chain pit held 1 or 2 and takes one more: two stones a pit, three for a 2.
            let run = usize::from(chains[pit + s]);
            2 * BITS6[run] + BITS6[run & twos as usize]
        } else {
            raw_move(x, pit).captured
        };
        best = best.max(c);
        capturing |= u8::from(c > 0) << pit;
    }
    ((best, BITS6[live as usize]), capturing)
}

impl Ruleset {
    /// Whether `board`'s mover certainly has a legal move, decided without generating them: both
    /// rows hold stones (no feeding duty, and under awari a mover with stones always has a move),
    /// and the ruleset does not forbid grand slams (under `abapa-forbidden` every move of a
    /// position may be a grand slam). False says nothing: ask [`moves`](Self::moves).
    ///
    /// Cost: two masks of the packed board.
    #[inline]
    pub(crate) fn surely_has_moves(self, board: &Board) -> bool {
        let x = pack(board);
        x & OWN_MASK != 0 && x & OPP_MASK != 0 && self != Ruleset::Abapa(GrandSlam::Forbidden)
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
    /// The pits `lo..=hi` outside which the parent is the child turned ([`turned`]), holding as
    /// many stones in all as that board does there: the origin and the pits the sowing reaches,
    /// or all twelve when it goes round. A caller that has ranked the turned child ranks the
    /// parent from these pits alone ([`crate::index::RankBase`]).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sowing_skips_origin() {
        let mut b = [0u8; 12];
        b[4] = 14;
        let (after, last) = sow(&b, 4);
        assert_eq!(after[4], 0);
        assert_eq!(after.iter().map(|&c| c as u32).sum::<u32>(), 14);
        // 14 stones: 11 pits get one, then pits 5, 6, 7 get a second.
        assert_eq!(after[5], 2);
        assert_eq!(after[7], 2);
        assert_eq!(after[8], 1);
        assert_eq!(last, 7);
    }

    /// [`Ruleset::exits`], [`Ruleset::surely_has_moves`] and [`sowings`] against
    /// [`Ruleset::moves`]: every board of layers 0..8 and random boards of every layer, under
    /// every ruleset.
    #[test]
    fn exits_agree_with_moves_and_the_searchs_shortcuts_hold() {
        use crate::index::{layer_size, unrank};
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut boards: Vec<Board> = Vec::new();
        for n in 0..=8 {
            boards.extend((0..layer_size(n)).map(|i| unrank(n, i).unwrap()));
        }
        for n in 9..=48 {
            for _ in 0..2000 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                boards.push(unrank(n, (seed >> 11) % layer_size(n)).unwrap());
            }
        }
        let mut surely = 0;
        for rules in Ruleset::ALL {
            for b in &boards {
                let mut caps = Vec::new();
                let got = rules.exits(b, |c, child| caps.push((c, *child)));
                let moves = rules.moves(b);
                let want = match moves.ending() {
                    Some(v) => Exits::Ended(v),
                    None => {
                        let ends = moves.as_slice().iter().filter_map(|m| match m.outcome {
                            Outcome::End { value } => Some(value),
                            Outcome::Child { .. } => None,
                        });
                        let same = moves.as_slice().iter().filter(|m| matches!(m.outcome, Outcome::Child { captured: 0, .. })).count();
                        Exits::Moves { best_end: ends.max(), same_layer: same as u8 }
                    }
                };
                let want_caps: Vec<(u8, Board)> = moves
                    .as_slice()
                    .iter()
                    .filter_map(|m| match m.outcome {
                        Outcome::Child { captured, child } if captured > 0 => Some((captured, child)),
                        _ => None,
                    })
                    .collect();
                assert_eq!((got, &caps), (want, &want_caps), "{rules:?} {b:?}");
                // The search's shortcuts on the same boards: a position said to have moves has
                // some, and the sowings bound the legal moves' captures.
                if rules.surely_has_moves(b) {
                    surely += 1;
                    assert!(moves.ending().is_none() && !moves.is_empty(), "{rules:?} {b:?}");
                }
                let x = pack(b);
                for pit in (0..ROW).filter(|&p| b[p] > 0) {
                    assert_eq!(raw_capture(x, pit), raw_move(x, pit).captured, "{b:?} {pit}");
                }
                let sown = sowings(b);
                // The table-driven sowings against raw_capture pit by pit, both sides.
                for (side, y) in [x, turned_packed(x)].into_iter().enumerate() {
                    let live: Vec<usize> = (0..ROW).filter(|&p| pit_of(y, p) > 0).collect();
                    let caps: Vec<u8> = live.iter().map(|&p| raw_capture(y, p)).collect();
                    let want = (caps.iter().copied().max().unwrap_or(0), live.len() as u8);
                    assert_eq!(sown.sides[side], want, "{b:?} side {side}");
                    if side == 0 {
                        let mask = live.iter().zip(&caps).filter(|&(_, &c)| c > 0).fold(0u8, |m, (&p, _)| m | 1 << p);
                        assert_eq!(sown.capturing, mask, "{b:?}");
                    }
                }
                let [(best, pits), _] = sown.sides;
                assert_eq!(usize::from(pits), b[..ROW].iter().filter(|&&c| c > 0).count());
                let capturing = sown.capturing;
                for m in moves.as_slice() {
                    if let Outcome::Child { captured, .. } = m.outcome {
                        assert!(captured <= best, "{rules:?} {b:?}");
                    }
                    if matches!(m.outcome, Outcome::End { .. } | Outcome::Child { captured: 1.., .. }) {
                        assert!(capturing & (1 << m.pit) != 0, "{rules:?} {b:?} {}", m.pit);
                    }
                }
            }
        }
        assert!(surely > boards.len(), "{surely} of {} boards × 7 rulesets said to have moves", boards.len());
    }

    #[test]
    fn ruleset_names_and_ids_round_trip() {
        for r in Ruleset::ALL {
            assert_eq!(r.name().parse::<Ruleset>().unwrap(), r);
            assert_eq!(Ruleset::from_id(r.id()), Some(r));
        }
        assert!("chess".parse::<Ruleset>().is_err());
    }
}
