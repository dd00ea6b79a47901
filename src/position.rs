//! Positions: parsing from user text and printing for humans and programs.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::rules::{stones, turned, Board, PITS, ROW, TOTAL_STONES};

/// A position: 12 pit counts in mover-first form (pits 0..5 are the player to move's).
///
/// Invariant: at most 48 stones on the board (checked by every constructor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    board: Board,
}

/// A side of the board in South/North notation. South's houses are pits 0..5 in sowing order,
/// North's are pits 6..11.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Player 0: houses 0..5 of the absolute board (also written `s` or `0`).
    South,
    /// Player 1: houses 6..11 of the absolute board (also written `n` or `1`).
    North,
}

impl FromStr for Side {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "south" | "s" | "0" => Ok(Side::South),
            "north" | "n" | "1" => Ok(Side::North),
            other => Err(Error::InvalidPosition(format!(
                "side to move must be 'south' or 'north', not '{other}'"
            ))),
        }
    }
}

impl Position {
    /// A position from a mover-first board.
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] when the board holds more than 48 stones.
    pub fn new(board: Board) -> Result<Position> {
        let n = stones(&board);
        if n > TOTAL_STONES {
            return Err(Error::InvalidPosition(format!(
                "{n} stones on the board; Oware has only {TOTAL_STONES}"
            )));
        }
        Ok(Position { board })
    }

    /// The starting position: four stones in every pit.
    pub fn start() -> Position {
        Position { board: [4; PITS] }
    }

    /// A position from South's and North's rows (each in sowing order) and the side to move.
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] when a row is malformed or the board holds more than 48 stones.
    pub fn from_sides(south: &str, north: &str, to_move: Side) -> Result<Position> {
        let s = parse_counts(south, ROW, "South's row")?;
        let n = parse_counts(north, ROW, "North's row")?;
        let (first, second) = match to_move {
            Side::South => (s, n),
            Side::North => (n, s),
        };
        let mut board = [0u8; PITS];
        board[..ROW].copy_from_slice(&first[..ROW]);
        board[ROW..].copy_from_slice(&second[..ROW]);
        Position::new(board)
    }

    /// The mover-first board.
    #[inline]
    pub fn board(&self) -> &Board {
        &self.board
    }

    /// Stones on the board: the position's layer.
    #[inline]
    pub fn stones(&self) -> u32 {
        stones(&self.board)
    }

    /// The same board with the other player to move.
    pub fn turned(&self) -> Position {
        Position { board: turned(&self.board) }
    }

    /// A two-row drawing as the board looks across a table: the opponent's row on top, read right
    /// to left (pit 11 first), the mover's row below (pit 0 first), with pit numbers.
    pub fn drawing(&self) -> String {
        let b = &self.board;
        let cell = |c: u8| format!("{c:>3}");
        let top: String = (ROW..PITS).rev().map(|p| cell(b[p])).collect::<Vec<_>>().join(" ");
        let bottom: String = (0..ROW).map(|p| cell(b[p])).collect::<Vec<_>>().join(" ");
        let top_idx: String = (ROW..PITS).rev().map(|p| format!("{p:>3}")).collect::<Vec<_>>().join(" ");
        let bot_idx: String = (0..ROW).map(|p| format!("{p:>3}")).collect::<Vec<_>>().join(" ");
        format!(
            "  pit {top_idx}\n      {top}   opponent\n      {bottom}   to move\n  pit {bot_idx}\n"
        )
    }
}

impl FromStr for Position {
    type Err = Error;

    /// Parses 12 counts in mover-first form separated by spaces and/or commas,
    /// e.g. `1 1 1 1 1 2 4 2 3 0 0 0` or `1,1,1,1,1,2,4,2,3,0,0,0`.
    fn from_str(s: &str) -> Result<Position> {
        let counts = parse_counts(s, PITS, "position")?;
        let mut board = [0u8; PITS];
        board.copy_from_slice(&counts);
        Position::new(board)
    }
}

impl fmt::Display for Position {
    /// The mover-first counts separated by single spaces (parseable by [`FromStr`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.board.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// Parses exactly `want` non-negative counts (at most 48 each) separated by spaces or commas.
fn parse_counts(s: &str, want: usize, what: &str) -> Result<Vec<u8>> {
    let parts: Vec<&str> = s.split(|c: char| c == ',' || c.is_whitespace()).filter(|p| !p.is_empty()).collect();
    if parts.len() != want {
        return Err(Error::InvalidPosition(format!(
            "{what} needs {want} pit counts, found {} in '{}'",
            parts.len(),
            s.trim()
        )));
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if p.starts_with('-') {
                return Err(Error::InvalidPosition(format!("{what}: pit {i} has a negative count '{p}'")));
            }
            let v: u32 = p.parse().map_err(|_| {
                Error::InvalidPosition(format!("{what}: pit {i} is '{p}', not a whole number"))
            })?;
            if v > TOTAL_STONES {
                return Err(Error::InvalidPosition(format!(
                    "{what}: pit {i} holds {v} stones; Oware has only {TOTAL_STONES}"
                )));
            }
            Ok(v as u8)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_separators() {
        let a: Position = "1 1 1 1 1 2 4 2 3 0 0 0".parse().unwrap();
        let b: Position = "1,1,1,1,1,2,4,2,3,0,0,0".parse().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.stones(), 16); // FACTS.md calls it "18-stone"; the counts sum to 16
        assert_eq!(a.to_string(), "1 1 1 1 1 2 4 2 3 0 0 0");
    }

    #[test]
    fn rejects_bad_input() {
        for bad in ["1 2 3", "a b c d e f g h i j k l", "1 1 1 1 1 1 1 1 1 1 1 -1", "48 1 0 0 0 0 0 0 0 0 0 0", "49 0 0 0 0 0 0 0 0 0 0 0", ""] {
            assert!(bad.parse::<Position>().is_err(), "{bad}");
        }
    }

    #[test]
    fn sides_convert_to_mover_first() {
        let p = Position::from_sides("1,2,3,4,5,6", "0,0,0,0,0,7", Side::North).unwrap();
        assert_eq!(p.board(), &[0, 0, 0, 0, 0, 7, 1, 2, 3, 4, 5, 6]);
        let q = Position::from_sides("1,2,3,4,5,6", "0,0,0,0,0,7", Side::South).unwrap();
        assert_eq!(q.board(), &[1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 7]);
    }
}
