//! Games as players see them: results with the captured stones counted, positions probed as
//! far as the built layers reach, and game records annotated ply by ply.
//!
//! Everything here is built on [`Database`] probes; nothing is guessed. A position whose layer is
//! not built is answered from its moves when every move's result is known (captures into built
//! layers, or moves that end the game), and is otherwise reported as not covered, naming the
//! layer ([`Probed::missing`]).
//!
//! **The score.** Oware is played with 48 stones; a player who has captured 25 has won (the
//! 25-stone rule), and 24 each is a draw. Best play from a position with `n` stones and value `v`
//! ends with the mover holding his captured stones plus `(n + v) / 2` ([`Verdict`]).
//!
//! The files: results, probes and annotated records here; a game in progress, its captured
//! stones, the 25-stone rule and repetitions in `state.rs` ([`Game`]).

use serde::Serialize;

mod state;
pub use state::{End, Game};

use crate::error::{Error, PositionError, Result};
use crate::position::{house, parse_move, Position, Side};
use crate::probe::{Database, MoveResult, MoveValue};
use crate::rules::{Outcome as RulesOutcome, TOTAL_STONES};
use crate::search::{GameValue, GameValues, MoverCaptured};

/// Win, draw or loss, for one player (a game's result, not a move's [`crate::rules::Outcome`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Wdl {
    /// More stones than the opponent at the end (25 or more of 48).
    Win,
    /// As many as the opponent (24 each).
    Draw,
    /// Fewer than the opponent.
    Loss,
}

impl Wdl {
    /// The outcome of a value for the player to move, counting the stones on the board only:
    /// positive wins more of them, 0 shares them, negative loses.
    pub fn of_value(value: i8) -> Wdl {
        match value {
            v if v > 0 => Wdl::Win,
            0 => Wdl::Draw,
            _ => Wdl::Loss,
        }
    }

    /// The same outcome seen by the other player.
    pub(crate) fn reversed(self) -> Wdl {
        match self {
            Wdl::Win => Wdl::Loss,
            Wdl::Draw => Wdl::Draw,
            Wdl::Loss => Wdl::Win,
        }
    }

    /// `win`, `draw` or `loss`.
    pub fn name(self) -> &'static str {
        match self {
            Wdl::Win => "win",
            Wdl::Draw => "draw",
            Wdl::Loss => "loss",
        }
    }
}

/// Stones each side has captured so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Captured {
    /// South's captured stones.
    pub south: u32,
    /// North's captured stones.
    pub north: u32,
}

impl Captured {
    /// The count of `side`.
    pub fn of(&self, side: Side) -> u32 {
        match side {
            Side::South => self.south,
            Side::North => self.north,
        }
    }

    /// The same counts the player to move's first, when `to_move` is to move: as the search's
    /// [`Root`](crate::search::Root) and the mover-first interfaces hold them.
    pub fn mover_first(&self, to_move: Side) -> MoverCaptured {
        MoverCaptured { mover: self.of(to_move), opponent: self.of(to_move.other()) }
    }

    /// The counts by side of `c`, the player to move's first when `to_move` is to move (the
    /// inverse of [`mover_first`](Self::mover_first)).
    ///
    /// ```
    /// use oware::game::Captured;
    /// use oware::position::Side;
    /// use oware::search::MoverCaptured;
    /// let c = Captured { south: 20, north: 16 };
    /// assert_eq!(c.mover_first(Side::North), MoverCaptured { mover: 16, opponent: 20 });
    /// assert_eq!(Captured::from_mover_first(c.mover_first(Side::North), Side::North), c);
    /// ```
    pub fn from_mover_first(c: MoverCaptured, to_move: Side) -> Captured {
        match to_move {
            Side::South => Captured { south: c.mover, north: c.opponent },
            Side::North => Captured { south: c.opponent, north: c.mover },
        }
    }

    /// Adds `stones` to `side`'s count.
    pub fn add(&mut self, side: Side, stones: u32) {
        match side {
            Side::South => self.south += stones,
            Side::North => self.north += stones,
        }
    }

    /// Parses `SOUTH:NORTH`, e.g. `20:16`.
    ///
    /// # Errors
    /// [`Error::Usage`] when the text is not two whole numbers around a colon, or they add up to
    /// more than 48.
    pub fn parse(text: &str) -> Result<Captured> {
        let bad = || Error::Usage(format!("captured stones are SOUTH:NORTH, like 20:16, not '{}'", text.escape_debug()));
        let (south, north) = count_pair(text).ok_or_else(bad)?;
        if south.saturating_add(north) > TOTAL_STONES {
            return Err(Error::Usage(format!("{south} + {north} captured stones: a game has {TOTAL_STONES}")));
        }
        Ok(Captured { south, north })
    }

    /// The captured stones known before a position of `on_board` stones: `given`, checked
    /// against the board, or 0:0 for a full board (48 stones), else unknown (`None`).
    ///
    /// # Errors
    /// As [`check`](Self::check).
    pub fn known(given: Option<Captured>, on_board: u32) -> Result<Option<Captured>> {
        match given {
            Some(c) => c.check(on_board).map(|()| Some(c)),
            None if on_board == TOTAL_STONES => Ok(Some(Captured::default())),
            None => Ok(None),
        }
    }

    /// Checks that these counts and a board of `on_board` stones fit in one game.
    ///
    /// # Errors
    /// [`Error::Usage`] when they make more than 48 stones.
    pub fn check(&self, on_board: u32) -> Result<()> {
        if self.south + self.north + on_board > TOTAL_STONES {
            return Err(Error::Usage(format!(
                "{} + {} captured stones and {on_board} on the board make more than the game's {TOTAL_STONES}",
                self.south, self.north
            )));
        }
        Ok(())
    }
}

/// Two whole numbers around a colon, `20:16` (spaces allowed around each): the syntax of
/// captured stones, whoever's they are.
fn count_pair(text: &str) -> Option<(u32, u32)> {
    let (a, b) = text.split_once(':')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// The end of a game under best play: each side's final stones and the outcome, for South.
///
/// Shares are multiples of one half: endless play splits an odd number of stones evenly. `{}`
/// prints a share as `24` or `24.5`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// South's stones at the end.
    pub south: f64,
    /// North's stones at the end.
    pub north: f64,
    /// The outcome for South.
    pub south_result: Wdl,
    /// The side that wins, `None` for a draw.
    pub winner: Option<&'static str>,
    /// Whether `south` and `north` are the final stones. False where the 25-stone rule can end
    /// the game before the board is played out and the value under it is not solved
    /// ([`Verdict::in_game`]): they are then the stones with the board played out, and only
    /// the result and the winner hold (the rule never changes who wins).
    pub score_known: bool,
}

impl Verdict {
    /// Best play's end from a position of `stones` stones, worth `value` to `to_move`, with
    /// `captured` stones already taken.
    ///
    /// ```
    /// use oware::game::{Captured, Wdl, Verdict};
    /// use oware::position::Side;
    /// // North to move on 10 stones worth +2 to him, after South took 20 and North 18.
    /// let v = Verdict::new(Captured { south: 20, north: 18 }, 10, 2, Side::North);
    /// assert_eq!((v.south, v.north, v.south_result), (24.0, 24.0, Wdl::Draw));
    /// ```
    pub fn new(captured: Captured, stones: u32, value: i8, to_move: Side) -> Verdict {
        let (n, v) = (f64::from(stones), f64::from(value));
        let (mover, opponent) = ((n + v) / 2.0, (n - v) / 2.0);
        let (s, o) = match to_move {
            Side::South => (mover, opponent),
            Side::North => (opponent, mover),
        };
        let south = f64::from(captured.south) + s;
        let north = f64::from(captured.north) + o;
        let south_result = if south > north {
            Wdl::Win
        } else if south < north {
            Wdl::Loss
        } else {
            Wdl::Draw
        };
        let winner = match south_result {
            Wdl::Win => Some("south"),
            Wdl::Loss => Some("north"),
            Wdl::Draw => None,
        };
        Verdict { south, north, south_result, winner, score_known: true }
    }

    /// Best play's end in a game, the 25-stone rule counted: from `position` (mover-first,
    /// `to_move` to move) whose layer value is `value`, with `captured` stones already taken.
    /// The layer's value where no capture can cross 24, else the value under the rule
    /// ([`GameValues`]). Where the rule can change the layer's value and the value under it is
    /// not known (above [`GameValues::MAX_STONES`] stones, or under `abapa` where it is not
    /// forced), the layer's verdict with [`score_known`](Self::score_known) false: its winner
    /// holds, not its stones. In a game of 48 stones a capture can always take a side past 24,
    /// so above 10 stones the final stones are never known here.
    ///
    /// ```
    /// use oware::game::{Captured, Verdict};
    /// use oware::position::{Position, Side};
    /// use oware::search::GameValues;
    /// use oware::Ruleset;
    /// // S: 0 1 0 0 0 0  N: 1 1 0 0 0 2, South to move: the layer's value is -5, but with
    /// // 20:23 captured North passes 24 before the board is played out.
    /// let p: Position = "0 1 0 0 0 0 1 1 0 0 0 2".parse()?;
    /// let values = GameValues::new(Ruleset::Awari);
    /// let v = Verdict::in_game(&values, Captured { south: 20, north: 23 }, &p, -5, Side::South);
    /// assert_eq!((v.south, v.north, v.score_known), (21.5, 26.5, true));
    /// # Ok::<(), oware::Error>(())
    /// ```
    pub fn in_game(values: &GameValues, captured: Captured, position: &Position, value: i8, to_move: Side) -> Verdict {
        let (m, o) = (captured.of(to_move), captured.of(to_move.other()));
        let v = match values.value(position.board(), m, o) {
            Ok(GameValue::Layer) => value,
            Ok(GameValue::Exact(g)) => g,
            Ok(GameValue::Decided) => values.rules().moves(position.board()).ending().unwrap_or(0),
            Ok(GameValue::Between(..) | GameValue::Unknown) | Err(_) => {
                return Verdict { score_known: false, ..Verdict::new(captured, position.stones(), value, to_move) };
            }
        };
        Verdict::new(captured, position.stones(), v, to_move)
    }

    /// Best play's end in a game after `m` (its value known) is played from `position` by
    /// `to_move`, with `captured` stones taken before it; as [`in_game`](Self::in_game) for
    /// the position it leads to. A move that ends the game shares the board out by itself.
    pub(crate) fn after_move(values: &GameValues, captured: Captured, position: &Position, to_move: Side, m: &KnownMove) -> Option<Verdict> {
        let mv = m.value?;
        match m.result {
            MoveResult::EndsGame => Some(Verdict::new(captured, position.stones(), mv, to_move)),
            MoveResult::Continues { captured: k, child } => {
                let mut after = captured;
                after.add(to_move, u32::from(k));
                Some(Verdict::in_game(values, after, &child, k as i8 - mv, to_move.other()))
            }
        }
    }

    /// The outcome for `side`.
    pub fn result_for(&self, side: Side) -> Wdl {
        match side {
            Side::South => self.south_result,
            Side::North => self.south_result.reversed(),
        }
    }
}

/// One legal move, its value when the built layers give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KnownMove {
    /// The pit, 0..5 from the mover's first house.
    pub pit: u8,
    /// Where the move leads.
    pub result: MoveResult,
    /// The move's exact value for the mover; `None` when the layer it needs is not built.
    pub value: Option<i8>,
}

/// A position probed as far as the built layers reach (its moves' values too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probed {
    /// The position, mover-first.
    pub position: Position,
    /// Its exact value for the mover; `None` when not covered.
    pub value: Option<i8>,
    /// Every legal move in pit order, with its value when known (empty when the game is over).
    pub moves: Vec<KnownMove>,
    /// The lowest layer that was needed and is not built, when some value is unknown.
    pub missing: Option<u32>,
}

impl Probed {
    /// The best pits (those whose value is the position's), when the value is known.
    pub fn best(&self) -> Vec<u8> {
        match self.value {
            Some(v) => self.moves.iter().filter(|m| m.value == Some(v)).map(|m| m.pit).collect(),
            None => Vec::new(),
        }
    }

    /// Whether the game is over (no legal move).
    pub fn game_over(&self) -> bool {
        self.moves.is_empty()
    }

    /// The move of pit `pit`, when legal.
    pub fn get(&self, pit: u8) -> Option<&KnownMove> {
        self.moves.iter().find(|m| m.pit == pit)
    }

    /// The moves as [`MoveValue`]s, when every value is known (without depths to capture:
    /// [`Database::move_values`] gives them).
    pub fn move_values(&self) -> Option<Vec<MoveValue>> {
        self.moves.iter().map(|m| m.value.map(|value| MoveValue { pit: m.pit, result: m.result, value, dtc: None })).collect()
    }
}

/// Analyses `position` with `db`: its value and every move's value, as far as the built layers
/// reach. A missing layer is not an error here: the values it would give are `None` and
/// [`Probed::missing`] names it.
///
/// Cost: one move generation and up to six probes (as [`Database::move_values`]), plus one
/// probe of the position itself when its layer is built.
///
/// # Errors
/// Every probing error of [`Database::value`] except a missing layer: damaged or foreign files,
/// I/O errors.
pub fn probe(db: &Database, position: &Position) -> Result<Probed> {
    let moves = db.rules().moves(position.board());
    let mut missing: Option<u32> = None;
    let mut note = |e: Error| -> Result<Option<i8>> {
        match e {
            Error::LayerMissing { layer, .. } | Error::PublishedLayerMissing { layer, .. } => {
                missing = Some(missing.map_or(layer, |m: u32| m.min(layer)));
                Ok(None)
            }
            other => Err(other),
        }
    };
    let mut out = Vec::with_capacity(moves.len());
    for m in moves.as_slice() {
        let km = match m.outcome {
            RulesOutcome::End { value } => KnownMove { pit: m.pit, result: MoveResult::EndsGame, value: Some(value) },
            RulesOutcome::Child { captured, child } => {
                let child = Position::new(child)?;
                let value = match db.value(&child) {
                    Ok(v) => Some(captured as i8 - v),
                    Err(e) => note(e)?,
                };
                KnownMove { pit: m.pit, result: MoveResult::Continues { captured, child }, value }
            }
        };
        out.push(km);
    }
    let value = match moves.ending() {
        Some(ending) => Some(ending),
        None => {
            let all: Option<Vec<i8>> = out.iter().map(|m| m.value).collect();
            match all {
                Some(values) => values.into_iter().max(),
                // Not every move is known: the stored value, when the layer is built.
                None => match db.value(position) {
                    Ok(v) => Some(v),
                    Err(e) => note(e)?,
                },
            }
        }
    };
    Ok(Probed { position: *position, value, moves: out, missing })
}

/// One ply of an annotated game.
#[derive(Clone, Debug, PartialEq)]
pub struct Ply {
    /// 1-based ply number.
    pub number: usize,
    /// The side that moved.
    pub side: Side,
    /// Stones captured before the move.
    pub captured_before: Captured,
    /// The position before the move, probed (mover-first for `side`).
    pub before: Probed,
    /// The pit played (mover-first).
    pub pit: u8,
    /// The house played (`A`..`F` or `a`..`f`).
    pub house: char,
    /// What the move did.
    pub result: MoveResult,
    /// The move's value for the mover, when known.
    pub move_value: Option<i8>,
    /// How much value the move threw away (`value before - move value`, 0 for a best move),
    /// when both are known.
    pub error: Option<i8>,
    /// Best play's end from the position after the move, with every capture so far counted and
    /// the 25-stone rule ([`Verdict::in_game`]: its stones may be unknown); `None` when not
    /// covered or when the captured stones are unknown.
    pub verdict: Option<Verdict>,
}

/// An annotated game: the plies and where the game stands after them.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnotatedGame {
    /// The starting position (mover-first) and its side to move.
    pub start: Position,
    /// The side to move at the start.
    pub start_side: Side,
    /// Stones captured before the first ply, when known.
    pub start_captured: Option<Captured>,
    /// The plies played.
    pub plies: Vec<Ply>,
    /// The position reached, probed.
    pub end: Probed,
    /// The side to move in the position reached.
    pub end_side: Side,
    /// Stones captured by the moves of the record (and before it), when known; a move that ends
    /// the game shares out the board in [`verdict`](Self::verdict) instead.
    pub end_captured: Option<Captured>,
    /// Whether the last move ended the game (a ruleset's ending move) or left no legal move.
    pub over: bool,
    /// Best play's end from the position reached, with the captures counted and the 25-stone
    /// rule ([`Verdict::in_game`]: its stones may be unknown), when covered and the captured
    /// stones are known.
    pub verdict: Option<Verdict>,
}

/// The stones captured before ply `p`, when the game's captured stones are known.
fn game_captured_before(known: Option<Captured>, p: &Ply) -> Option<Captured> {
    known.map(|_| p.captured_before)
}

/// Splits a game record into its moves: whitespace, commas and semicolons separate them, and
/// move numbers (`1.`, `12.`, `3...`) are skipped, so `1. F c 2. B e` and `F,c,B,e` both give
/// four moves. A token of several house letters (`FcBe`) is read as that many moves.
pub fn record_moves(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for token in text.split(|c: char| c.is_whitespace() || c == ',' || c == ';').filter(|t| !t.is_empty()) {
        let is_number = token.trim_end_matches('.').bytes().all(|b| b.is_ascii_digit()) && token.ends_with('.');
        if is_number {
            continue;
        }
        if token.len() > 1 && token.chars().all(|c| matches!(c, 'A'..='F' | 'a'..='f')) {
            out.extend(token.chars().map(String::from));
        } else {
            out.push(token.to_string());
        }
    }
    out
}

/// Plays `moves` (houses or mover-first pits, as [`parse_move`] reads them) from `start`, where
/// `side` is to move, and annotates each ply with the database's values ([`probe`]).
///
/// `captured` are the stones taken before `start`; when `None` and the board holds all 48
/// stones it is 0:0, otherwise the results with the captured stones counted are not given.
///
/// Cost: one [`probe`] per ply and one for the position reached (at most seven probes each).
///
/// # Errors
/// [`Error::Usage`] naming the ply and the side to move for a move that cannot be read (the
/// message of [`PositionError::BadMove`]) or is not legal ([`PositionError::IllegalMove`]), for
/// moves after the game is over (by [`Game`]'s rules: no legal move, a move that ends it, the
/// 25-stone rule, a repetition), and for captured counts that do not fit the board; the probing
/// errors of [`probe`].
pub fn annotate(db: &Database, start: Position, side: Side, captured: Option<Captured>, moves: &[String]) -> Result<AnnotatedGame> {
    let start_captured = Captured::known(captured, start.stones())?;
    // The game's state (captured stones, side to move, the positions since the last capture,
    // its end by the ruleset's rules) lives in one place: [`Game`].
    let mut game = Game::from_position(db.rules(), start, side, start_captured);
    let values = GameValues::new(db.rules());
    let mut plies = Vec::with_capacity(moves.len());
    for (i, text) in moves.iter().enumerate() {
        let number = i + 1;
        let to_move = game.side();
        if let Some(end) = game.end() {
            let why = match end {
                End::Captures => "the game is already over (a player has captured more than 24 stones, or both 24)",
                End::Repetition { .. } => "the game is already over (the last move repeated a position)",
                End::NoMove { .. } | End::ByMove { .. } => "the game is already over",
            };
            return Err(Error::Usage(format!("ply {number} ('{}'): {why}", text.escape_debug())));
        }
        let at_ply = |e: Error| match e {
            Error::InvalidPosition(p) => Error::Usage(format!("ply {number} ({} to move): {p}", to_move.title())),
            other => other,
        };
        let pit = parse_move(text, to_move).map_err(at_ply)?;
        let position = *game.position();
        let before = probe(db, &position)?;
        let Some(m) = before.get(pit).copied() else {
            let reason = if before.game_over() {
                "the game is over: the player to move has no legal move"
            } else if position.board()[pit as usize] == 0 {
                "the house is empty"
            } else {
                "the rules forbid it here (the opponent must be fed, or it would capture every stone he has)"
            };
            return Err(at_ply(Error::InvalidPosition(PositionError::IllegalMove { house: house(to_move, pit), reason })));
        };
        let error = match (before.value, m.value) {
            (Some(v), Some(mv)) => Some(v - mv),
            _ => None,
        };
        let captured = game.captured();
        let verdict = captured.and_then(|c| Verdict::after_move(&values, c, &position, to_move, &m));
        plies.push(Ply {
            number,
            side: to_move,
            captured_before: captured.unwrap_or_default(),
            before,
            pit,
            house: house(to_move, pit),
            result: m.result,
            move_value: m.value,
            error,
            verdict,
        });
        game.play(pit).map_err(at_ply)?;
    }
    // A move that ends the game by itself leaves the record where it was played, with the
    // captures before it (its ply's verdict shares the board out).
    let (position, to_move, captured) = match (game.end(), plies.last()) {
        (Some(End::ByMove { .. }), Some(p)) => (p.before.position, p.side, game_captured_before(start_captured, p)),
        _ => (*game.position(), game.side(), game.captured()),
    };
    let end = probe(db, &position)?;
    let verdict = match game.end() {
        // A move that ended the game shared the board out: its ply's verdict is the result.
        Some(End::ByMove { .. }) => plies.last().and_then(|p| p.verdict),
        // A repetition ends the game with the ruleset's sharing of the board.
        Some(End::Repetition { .. }) => game.verdict(),
        _ => match (captured, end.value) {
            (Some(c), Some(v)) => Some(Verdict::in_game(&values, c, &position, v, to_move)),
            _ => None,
        },
    };
    let over = matches!(game.end(), Some(End::ByMove { .. } | End::Repetition { .. })) || end.game_over();
    Ok(AnnotatedGame { start, start_side: side, start_captured, plies, end, end_side: to_move, end_captured: captured, over, verdict })
}
