//! A game in progress: the one place where a game's rules beyond a single move live (the
//! captured stones, the 25-stone rule, the positions since the last capture and repetition,
//! moves that end the game). The engine command, `play` and `game` (through
//! [`annotate`](super::annotate)) keep their games in it, and [`Game::root`] hands the search what
//! it needs of the past; the server, Python and C are stateless and take the game's positions
//! since the last capture from their callers (the page keeps them as this type does).

use crate::error::{Error, PositionError, Result};
use crate::position::{house, Position, Side};
use crate::rules::{stones, Board, Outcome, Ruleset, TOTAL_STONES};
use crate::search::Root;

use super::{Captured, Verdict};

/// Why a game is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum End {
    /// A side has captured more than 24 stones, or both 24 (the 25-stone rule). The stones
    /// left on the board count as split evenly.
    Captures,
    /// The side to move has no legal move: the rules give him `value` of the stones on the
    /// board (his share minus the opponent's): `-n` without stones in his row, `+n` (abapa)
    /// when he cannot feed the opponent, `own - opponent's row` when every move would be a
    /// forbidden grand slam.
    NoMove {
        /// The share for the side to move, `-n..=n`.
        value: i8,
    },
    /// The last move ended the game by itself (a grand slam whose remainder goes to the
    /// opponent): `value` is its mover's result over the stones that were on the board.
    ByMove {
        /// The pit played, 0..5 from its mover's first house.
        pit: u8,
        /// The result for the side that played it, over the stones then on the board.
        value: i8,
    },
    /// The last move repeated a position (the same board with the same side to move) since
    /// the last capture: awari splits the stones on the board evenly, abapa gives each side
    /// the stones in his row. `value` is the share of the side to move.
    Repetition {
        /// The share for the side to move, `-n..=n`.
        value: i8,
    },
}

/// A game under one ruleset, from any position.
///
/// ```
/// use oware::game::{End, Game};
/// use oware::Ruleset;
///
/// let mut g = Game::start(Ruleset::Awari);
/// g.play(5)?; // South F
/// assert_eq!(g.history().len(), 1);
/// assert_eq!(g.end(), None);
/// # Ok::<(), oware::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Game {
    rules: Ruleset,
    position: Position,
    side: Side,
    captured: Option<Captured>,
    /// Mover-first boards since the last capture, oldest first, the current one excluded.
    history: Vec<Board>,
    end: Option<End>,
}

impl Game {
    /// The 48-stone start, South to move, nothing captured.
    pub fn start(rules: Ruleset) -> Game {
        Game::from_position(rules, Position::start(), Side::South, Some(Captured::default()))
    }

    /// A game from `position` (mover-first) with `side` to move and the stones captured so far
    /// (`None` when unknown: the 25-stone rule then cannot apply). The game's earlier positions
    /// are not known: repetitions count from here.
    pub fn from_position(rules: Ruleset, position: Position, side: Side, captured: Option<Captured>) -> Game {
        let mut g = Game { rules, position, side, captured, history: Vec::new(), end: None };
        g.end = g.end_here();
        g
    }

    /// The ruleset.
    pub fn rules(&self) -> Ruleset {
        self.rules
    }

    /// The current position, mover-first.
    pub fn position(&self) -> &Position {
        &self.position
    }

    /// The side to move.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The stones captured so far, when known.
    pub fn captured(&self) -> Option<Captured> {
        self.captured
    }

    /// The positions since the last capture, mover-first, oldest first; the current one is not
    /// among them. The last one has the other side to move.
    pub fn history(&self) -> &[Board] {
        &self.history
    }

    /// Why the game is over, or `None` while it goes on.
    pub fn end(&self) -> Option<End> {
        self.end
    }

    /// The game's result when it is over and the captured stones are known: the captures
    /// plus the board's stones as [`End`] shares them out.
    pub fn verdict(&self) -> Option<Verdict> {
        let (end, c) = (self.end?, self.captured?);
        let value = match end {
            End::NoMove { value } | End::Repetition { value } => value,
            // By the 25-stone rule the board splits evenly; a move that ended the game has
            // shared every stone out already (the board is empty).
            End::Captures | End::ByMove { .. } => 0,
        };
        Some(Verdict::new(c, self.position.stones(), value, self.side))
    }

    /// Plays `pit` (0..5 from the mover's first house).
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] with [`PositionError::IllegalMove`] when the game is over,
    /// the house is empty or the ruleset forbids the move (the game is unchanged).
    pub fn play(&mut self, pit: u8) -> Result<()> {
        let illegal = |reason| Error::InvalidPosition(PositionError::IllegalMove { house: house(self.side, pit.min(5)), reason });
        if self.end.is_some() {
            return Err(illegal("the game is over"));
        }
        let board = *self.position.board();
        let Some(m) = self.rules.play(&board, usize::from(pit)) else {
            return Err(illegal(if usize::from(pit) >= 6 || board[usize::from(pit)] == 0 {
                "that house is empty"
            } else {
                "the ruleset does not allow it here (feeding, eradication or grand-slam rule)"
            }));
        };
        match m.outcome {
            Outcome::Child { captured, child } => {
                self.history.push(board);
                if captured > 0 {
                    self.history.clear();
                }
                if let Some(c) = self.captured.as_mut() {
                    c.add(self.side, u32::from(captured));
                }
                self.position = Position::new(child)?;
                self.side = self.side.other();
                self.end = self.end_here();
            }
            Outcome::End { value } => {
                // Every stone is shared out by the move: the board is empty.
                let n = stones(&board) as i32;
                if let Some(c) = self.captured.as_mut() {
                    let mover = (n + i32::from(value)) / 2;
                    c.add(self.side, mover as u32);
                    c.add(self.side.other(), (n - mover) as u32);
                }
                self.history.clear();
                self.position = Position::new([0; 12])?;
                self.side = self.side.other();
                self.end = Some(End::ByMove { pit, value });
            }
        }
        Ok(())
    }

    /// Why the game is over at the current position, by its own rules. A position without
    /// legal moves ends the game by the rules' sharing of the stones left, even when a side
    /// has also passed 24.
    fn end_here(&self) -> Option<End> {
        let board = self.position.board();
        if let Some(value) = self.rules.moves(board).ending() {
            return Some(End::NoMove { value });
        }
        if let Some(c) = self.captured {
            if c.south > TOTAL_STONES / 2 || c.north > TOTAL_STONES / 2 || (c.south == 24 && c.north == 24) {
                return Some(End::Captures);
            }
        }
        // A repetition: the same board with the same side to move, an even number of plies back.
        let len = self.history.len();
        if (2..=len).step_by(2).any(|back| self.history[len - back] == *board) {
            return Some(End::Repetition { value: self.rules.repetition_value(board) });
        }
        None
    }

    /// What the search needs to search from here: the position, the captured counts
    /// (mover first) and the positions since the last capture.
    pub fn root(&self) -> Root {
        Root::in_game(self.position, self.captured.map(|c| c.mover_first(self.side)), self.history.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::GrandSlam;
    use crate::search::MoverCaptured;

    #[test]
    fn a_repetition_ends_the_game() {
        // Two lone stones: South F then North f return to the start after four plies.
        for rules in [Ruleset::Awari, Ruleset::Abapa(GrandSlam::NoCapture)] {
            let p: Position = "0 0 0 0 1 0 0 0 0 0 1 0".parse().unwrap();
            let mut g = Game::from_position(rules, p, Side::South, Some(Captured { south: 23, north: 23 }));
            let mut plies = 0;
            while g.end().is_none() && plies < 40 {
                let pit = g.rules().moves(g.position().board()).as_slice()[0].pit;
                g.play(pit).unwrap();
                plies += 1;
            }
            match g.end() {
                Some(End::Repetition { value }) => {
                    let v = g.verdict().unwrap();
                    assert_eq!(v.south + v.north, 48.0);
                    if rules == Ruleset::Awari {
                        assert_eq!((value, v.south, v.north), (0, 24.0, 24.0));
                    }
                }
                other => panic!("{rules}: {other:?} after {plies} plies"),
            }
            assert!(g.play(0).is_err(), "no move after the end");
        }
    }

    #[test]
    fn the_25_stone_rule_and_captures_clear_the_history() {
        let mut g = Game::start(Ruleset::Awari);
        for pit in [5, 5, 4, 4] {
            g.play(pit).unwrap();
        }
        assert_eq!(g.history().len(), 4);
        let p: Position = "1 0 0 0 0 0 2 0 0 0 0 0".parse().unwrap();
        let g = Game::from_position(Ruleset::Awari, p, Side::South, Some(Captured { south: 30, north: 15 }));
        assert_eq!(g.end(), Some(End::Captures));
        let v = g.verdict().unwrap();
        assert_eq!((v.south, v.north), (31.5, 16.5));
        let root = g.root();
        assert_eq!(root.captured, Some(MoverCaptured { mover: 30, opponent: 15 }));
    }
}
