//! Positions: parsing from user text and printing for humans and programs.
//!
//! Accepted text forms (one [`FromStr`] for all, so any of them works wherever a position is
//! read):
//! - twelve counts in **mover-first** order, separated by spaces and/or commas:
//!   `1 1 1 1 1 2 4 2 3 0 0 0`;
//! - the JSON array that `--json` output prints: `[1,1,1,1,1,2,4,2,3,0,0,0]`;
//! - the **drawn form**, the two rows exactly as [`Position::drawing`] draws them, top row
//!   first, separated by `/`: `0 0 0 3 2 4 / 1 1 1 1 1 2` (the top row is the opponent's, right
//!   to left; the bottom row is the mover's, left to right).
//!
//! With the side to move ([`Position::parse_with_side`]), also the **side form**: each side's
//! houses in sowing order after its label, then the side to move, as Oware records write a
//! board: `S: 1 1 1 1 1 2  N: 4 2 3 0 0 0  S` (labels `S`/`South`, `N`/`North`, any case, the
//! colon optional, the rows in either order, an optional `to move` at the end).
//!
//! **Houses.** South's houses are `A`..`F` and North's `a`..`f`, each in sowing order (South's
//! `A` is opposite North's `f`). South moves first in a game. Moves are written as houses
//! ([`house`], [`parse_move`]); pit numbers 0..5 (mover-first) stay for programs.
//!
//! Parsing never holds more than a few tokens of the input: counting stops one token past what is
//! expected, and an error quotes at most `EXCERPT_CHARS` characters of the input, escaped.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
pub use crate::error::{Part, PositionError};
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

fn invalid(e: PositionError) -> Error {
    Error::InvalidPosition(e)
}

/// At most this many characters of user input are quoted in a message.
pub(crate) const EXCERPT_CHARS: usize = 40;

/// A short, escaped quotation of user input for messages: at most `EXCERPT_CHARS`
/// characters in quotes, control and other non-printing characters escaped (`\u{1b}`, `\n`),
/// longer input cut with `…` and its length in bytes noted.
///
/// Cost: at most `EXCERPT_CHARS` characters are looked at (plus the length).
///
/// Public because it is how this crate quotes input in its errors (the `excerpt` fields of
/// [`PositionError`] are made by it), and a program over the crate
/// that quotes its own users' input (the `oware` program's engine command quotes what a GUI
/// sends) quotes it the same way with the same function.
///
/// ```
/// use oware::position::excerpt;
/// assert_eq!(excerpt("1 2\u{1b}"), "'1 2\\u{1b}'");
/// assert!(excerpt(&"7".repeat(1000)).ends_with("…' (1000 bytes)"));
/// ```
pub fn excerpt(s: &str) -> String {
    let mut out = String::new();
    let mut cut = false;
    for (n, c) in s.chars().enumerate() {
        if n == EXCERPT_CHARS {
            cut = true;
            break;
        }
        if c == ' ' {
            out.push(' ');
        } else {
            out.extend(c.escape_debug());
        }
    }
    if cut {
        format!("'{out}…' ({} bytes)", s.len())
    } else {
        format!("'{out}'")
    }
}

impl Side {
    /// `south` or `north` (the names the command line and JSON use).
    pub fn name(self) -> &'static str {
        match self {
            Side::South => "south",
            Side::North => "north",
        }
    }

    /// `South` or `North` (for people).
    pub fn title(self) -> &'static str {
        match self {
            Side::South => "South",
            Side::North => "North",
        }
    }

    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::South => Side::North,
            Side::North => Side::South,
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.title())
    }
}

/// The name of the mover's pit `pit` (0..5, mover-first) when `side` is to move: `A`..`F` for
/// South, `a`..`f` for North.
///
/// ```
/// use oware::position::{house, Side};
/// assert_eq!(house(Side::South, 0), 'A');
/// assert_eq!(house(Side::North, 5), 'f');
/// ```
pub fn house(side: Side, pit: u8) -> char {
    let base = match side {
        Side::South => b'A',
        Side::North => b'a',
    };
    char::from(base + pit.min(5))
}

/// A move of `to_move` read from text: a house of that side (`A`..`F` for South, `a`..`f` for
/// North) or a mover-first pit number `0`..`5`. The result is the mover-first pit. Whether the
/// move is legal is the rules' question, not this one's.
///
/// ```
/// use oware::position::{parse_move, Side};
/// assert_eq!(parse_move("C", Side::South)?, 2);
/// assert_eq!(parse_move("f", Side::North)?, 5);
/// assert_eq!(parse_move("4", Side::North)?, 4);
/// assert!(parse_move("c", Side::South).is_err()); // North's house, South to move
/// # Ok::<(), oware::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidPosition`] with [`PositionError::BadMove`] for anything else, naming the
/// problem (another side's house, a pit number out of range).
pub fn parse_move(text: &str, to_move: Side) -> Result<u8> {
    let bad = |reason| invalid(PositionError::BadMove { reason, excerpt: excerpt(text) });
    let t = text.trim();
    let mut chars = t.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return Err(bad("a move is one house, A..F (South) or a..f (North), or a pit number 0..5"));
    };
    match c {
        'A'..='F' if to_move == Side::South => Ok(c as u8 - b'A'),
        'a'..='f' if to_move == Side::North => Ok(c as u8 - b'a'),
        'A'..='F' => Err(bad("that is South's house, and North is to move (North's houses are a..f)")),
        'a'..='f' => Err(bad("that is North's house, and South is to move (South's houses are A..F)")),
        '0'..='5' => Ok(c as u8 - b'0'),
        '6'..='9' => Err(bad("a pit number is 0..5, counted from the mover's first house")),
        _ => Err(bad("a move is one house, A..F (South) or a..f (North), or a pit number 0..5")),
    }
}

impl FromStr for Side {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "south" | "s" | "0" => Ok(Side::South),
            "north" | "n" | "1" => Ok(Side::North),
            _ => Err(invalid(PositionError::BadSide { excerpt: excerpt(s) })),
        }
    }
}

impl Position {
    /// A position from a mover-first board.
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] when the board holds more than 48 stones.
    pub fn new(board: Board) -> Result<Position> {
        let total = stones(&board);
        if total > TOTAL_STONES {
            return Err(invalid(PositionError::TooManyStones { total }));
        }
        Ok(Position { board })
    }

    /// The starting position: four stones in every pit.
    pub fn start() -> Position {
        Position { board: [4; PITS] }
    }

    /// A position from South's and North's rows (each in **sowing order**, house A or a first)
    /// and the side to move. To type a board as drawn instead, see `from_drawn`.
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] when a row is malformed or the board holds more than 48 stones.
    pub fn from_sides(south: &str, north: &str, to_move: Side) -> Result<Position> {
        let s: [u8; ROW] = parse_counts(south, Part::SouthRow)?;
        let n: [u8; ROW] = parse_counts(north, Part::NorthRow)?;
        Position::from_rows(s, n, to_move)
    }

    fn from_rows(south: [u8; ROW], north: [u8; ROW], to_move: Side) -> Result<Position> {
        let mut absolute = [0u8; PITS];
        absolute[..ROW].copy_from_slice(&south);
        absolute[ROW..].copy_from_slice(&north);
        Position::from_absolute(absolute, to_move)
    }

    /// A position from its absolute board (South's houses A..F first, then North's a..f, as a
    /// board is drawn and as records and the UCI FEN write it) and the side to move: the inverse
    /// of [`absolute`](Self::absolute).
    ///
    /// ```
    /// use oware::position::{Position, Side};
    /// let p = Position::from_absolute([1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 7], Side::North)?;
    /// assert_eq!(p.board(), &[0, 0, 0, 0, 0, 7, 1, 2, 3, 4, 5, 6]);
    /// assert_eq!(p.absolute(Side::North), [1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 7]);
    /// # Ok::<(), oware::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] when the board holds more than 48 stones.
    pub fn from_absolute(absolute: Board, to_move: Side) -> Result<Position> {
        Position::new(match to_move {
            Side::South => absolute,
            Side::North => turned(&absolute),
        })
    }

    /// A position typed as it is drawn: `TOP / BOTTOM`, each row left to right as it appears.
    ///
    /// - `to_move = None`: the mover-first drawing of [`drawing`](Self::drawing): the top row
    ///   is the opponent's pits 11..6, the bottom row the mover's pits 0..5;
    /// - `to_move = Some(side)`: the drawing of [`drawing_sides`](Self::drawing_sides): the top
    ///   row is North's houses f..a, the bottom row South's houses A..F, and `side` moves.
    ///
    /// (Examples: the unit test `from_drawn_reads_both_drawings`.)
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] when the text is not two rows of six counts around one `/`, or
    /// the board holds more than 48 stones.
    pub(crate) fn from_drawn(text: &str, to_move: Option<Side>) -> Result<Position> {
        let malformed = |reason| invalid(PositionError::Malformed { reason, excerpt: excerpt(text) });
        let (top, bottom) = text.split_once('/').ok_or_else(|| malformed("a drawn board needs its two rows separated by '/'"))?;
        if bottom.contains('/') {
            return Err(malformed("a drawn board has two rows, separated by one '/'"));
        }
        let mut top: [u8; ROW] = parse_counts(top, Part::TopRow)?;
        let bottom: [u8; ROW] = parse_counts(bottom, Part::BottomRow)?;
        top.reverse(); // now in sowing order: pit 6 (or house a) first
        match to_move {
            None => {
                let mut board = [0u8; PITS];
                board[..ROW].copy_from_slice(&bottom);
                board[ROW..].copy_from_slice(&top);
                Position::new(board)
            }
            Some(side) => Position::from_rows(bottom, top, side),
        }
    }

    /// A position and, when the text names it, the side to move: any form of the module
    /// documentation, including the side form `S: 1 1 1 1 1 2  N: 4 2 3 0 0 0  S`, which names it.
    ///
    /// ```
    /// use oware::position::{Position, Side};
    /// let (p, side) = Position::parse_with_side("S: 1 1 1 1 1 2  N: 4 2 3 0 0 0  N")?;
    /// assert_eq!((p.to_string().as_str(), side), ("4 2 3 0 0 0 1 1 1 1 1 2", Some(Side::North)));
    /// let (q, side) = Position::parse_with_side("1 1 1 1 1 2 4 2 3 0 0 0")?;
    /// assert_eq!((q.to_string().as_str(), side), ("1 1 1 1 1 2 4 2 3 0 0 0", None));
    /// # Ok::<(), oware::Error>(())
    /// ```
    ///
    /// Cost: as [`FromStr`]: a few dozen tokens at most are looked at.
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] naming the problem, as [`FromStr`]; for the side form, a
    /// missing or repeated label, a row of the wrong length, or no side to move.
    pub fn parse_with_side(s: &str) -> Result<(Position, Option<Side>)> {
        if starts_with_label(s) {
            return parse_side_form(s).map(|(p, side)| (p, Some(side)));
        }
        s.parse().map(|p| (p, None))
    }

    /// A position typed by a person, with the side to move given besides when it was
    /// (`--to-move`, `to_move=`): the drawn form is read with North's row on top when `to_move`
    /// is given (`from_drawn`); any other form as
    /// [`parse_with_side`](Self::parse_with_side). The side is the one named, or `None`.
    ///
    /// ```
    /// use oware::position::{Position, Side};
    /// let (p, side) = Position::place("0 0 0 3 2 4 / 1 1 1 1 1 2", Some(Side::North))?;
    /// assert_eq!((p.to_string().as_str(), side), ("4 2 3 0 0 0 1 1 1 1 1 2", Some(Side::North)));
    /// assert!(Position::place("S: 1 1 1 1 1 2 N: 4 2 3 0 0 0 S", Some(Side::North)).is_err());
    /// # Ok::<(), oware::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`parse_with_side`](Self::parse_with_side), and [`PositionError::SideConflict`] when
    /// the text names another side than `to_move`.
    pub fn place(text: &str, to_move: Option<Side>) -> Result<(Position, Option<Side>)> {
        if let Some(side) = to_move {
            if text.contains('/') {
                return Ok((Position::from_drawn(text, Some(side))?, Some(side)));
            }
        }
        let (p, named) = Position::parse_with_side(text)?;
        match (named, to_move) {
            (Some(named), Some(given)) if named != given => Err(invalid(PositionError::SideConflict { named: named.title(), given: given.title() })),
            (named, given) => Ok((p, named.or(given))),
        }
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

    /// The absolute board, South's houses A..F first, then North's a..f, when `to_move` is the
    /// side whose turn it is (the inverse of [`from_absolute`](Self::from_absolute)).
    pub fn absolute(&self, to_move: Side) -> Board {
        match to_move {
            Side::South => self.board,
            Side::North => turned(&self.board),
        }
    }

    /// A two-row drawing as the board looks across a table: the opponent's row on top, read right
    /// to left (pit 11 first), the mover's row below (pit 0 first), with pit numbers. The two
    /// rows of counts can be typed back as `TOP / BOTTOM` (`from_drawn`).
    pub fn drawing(&self) -> String {
        let b = &self.board;
        let top = row((ROW..PITS).rev().map(|p| b[p]));
        let bottom = row((0..ROW).map(|p| b[p]));
        let top_idx: String = (ROW..PITS).rev().map(|p| format!("{p:>3}")).collect::<Vec<_>>().join(" ");
        let bot_idx: String = (0..ROW).map(|p| format!("{p:>3}")).collect::<Vec<_>>().join(" ");
        format!("  pit {top_idx}\n      {top}   opponent\n      {bottom}   to move\n  pit {bot_idx}\n")
    }

    /// The absolute drawing, labelled by side: North's row on top, right to left (houses f..a),
    /// South's row below, left to right (houses A..F), `(to move)` beside the mover's row. The
    /// two rows of counts can be typed back as `TOP / BOTTOM` with the side to move
    /// (`from_drawn` with `Some(side)`, or `--to-move` on the command line).
    ///
    /// ```
    /// use oware::position::{Position, Side};
    /// let p: Position = "1 1 1 1 1 2 4 2 3 0 0 0".parse()?;
    /// let d = p.drawing_sides(Side::North);
    /// assert!(d.contains("North") && d.contains("(to move)"));
    /// # Ok::<(), oware::Error>(())
    /// ```
    pub fn drawing_sides(&self, to_move: Side) -> String {
        let a = self.absolute(to_move);
        let north = row((ROW..PITS).rev().map(|p| a[p]));
        let south = row((0..ROW).map(|p| a[p]));
        let (n_mark, s_mark) = match to_move {
            Side::North => ("   (to move)", ""),
            Side::South => ("", "   (to move)"),
        };
        let north_houses: String = ["f", "e", "d", "c", "b", "a"].iter().map(|h| format!("{h:>3}")).collect::<Vec<_>>().join(" ");
        let south_houses: String = ["A", "B", "C", "D", "E", "F"].iter().map(|h| format!("{h:>3}")).collect::<Vec<_>>().join(" ");
        format!("  house {north_houses}\n  North {north}{n_mark}\n  South {south}{s_mark}\n  house {south_houses}\n")
    }
}

/// Whether the text starts with a side's label (`S`, `South`, `N`, `North`, any case): the side
/// form.
fn starts_with_label(s: &str) -> bool {
    let first = s.trim_start().split(|c: char| c == ',' || c == ':' || c.is_whitespace()).next().unwrap_or("");
    matches!(first.to_ascii_lowercase().as_str(), "s" | "south" | "n" | "north")
}

/// The side form `S: A..F  N: a..f  SIDE [to move]`.
fn parse_side_form(s: &str) -> Result<(Position, Side)> {
    let malformed = |reason| invalid(PositionError::Malformed { reason, excerpt: excerpt(s) });
    let label = |t: &str| match t.to_ascii_lowercase().as_str() {
        "s" | "south" => Some(Side::South),
        "n" | "north" => Some(Side::North),
        _ => None,
    };
    // Tokens, at most 20 of them looked at (a side form has 17 or fewer).
    let mut tokens = s.split(|c: char| c == ',' || c == ':' || c.is_whitespace()).filter(|t| !t.is_empty());
    let mut rows: [Option<[u8; ROW]>; 2] = [None, None];
    let expect_row = "the side form is 'S: six counts  N: six counts  S|N' (South's houses A..F, North's a..f, then the side to move)";
    for _ in 0..2 {
        let side = tokens.next().and_then(label).ok_or_else(|| malformed(expect_row))?;
        let slot = &mut rows[side as usize];
        if slot.is_some() {
            return Err(malformed("the side form names each side's row once"));
        }
        let part = if side == Side::South { Part::SouthRow } else { Part::NorthRow };
        let mut row = [0u8; ROW];
        for (i, r) in row.iter_mut().enumerate() {
            let token = tokens.next().ok_or_else(|| invalid(PositionError::WrongCount { part, expected: ROW, found: i, excerpt: excerpt(s) }))?;
            *r = parse_count(token, part, i)?;
        }
        *slot = Some(row);
    }
    let to_move = match tokens.next() {
        None => return Err(malformed("the side form ends with the side to move, S or N")),
        Some(t) => match label(t) {
            Some(side) => side,
            None if parse_count(t, Part::Position, 0).is_ok() => {
                return Err(malformed("a row of the side form has six counts"));
            }
            None => return Err(invalid(PositionError::BadSide { excerpt: excerpt(t) })),
        },
    };
    let rest: Vec<String> = tokens.take(3).map(str::to_ascii_lowercase).collect();
    if !(rest.is_empty() || rest == ["to", "move"]) {
        return Err(malformed("nothing may follow the side to move but 'to move'"));
    }
    let (Some(south), Some(north)) = (rows[0], rows[1]) else { unreachable!("two distinct labels fill both rows") };
    Position::from_rows(south, north, to_move).map(|p| (p, to_move))
}

fn row(counts: impl Iterator<Item = u8>) -> String {
    counts.map(|c| format!("{c:>3}")).collect::<Vec<_>>().join(" ")
}

impl FromStr for Position {
    type Err = Error;

    /// Parses any of the forms of the module documentation: 12 mover-first counts, the JSON
    /// array, the drawn form `TOP / BOTTOM`, or the side form (whose side to move makes the
    /// mover-first board; [`Position::parse_with_side`] returns it as well).
    fn from_str(s: &str) -> Result<Position> {
        let t = s.trim();
        if starts_with_label(t) {
            return parse_side_form(s).map(|(p, _)| p);
        }
        if let Some(inner) = t.strip_prefix('[') {
            let inner =
                inner.strip_suffix(']').ok_or_else(|| invalid(PositionError::Malformed { reason: "a JSON array must end with ']'", excerpt: excerpt(s) }))?;
            let board: Board = parse_counts(inner, Part::Position)?;
            return Position::new(board);
        }
        if t.contains('/') {
            return Position::from_drawn(t, None);
        }
        let board: Board = parse_counts(t, Part::Position)?;
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

/// Parses exactly `N` counts (0..=48 each) separated by spaces or commas. Lazy: looks at no
/// more than `N + 1` tokens, whatever the input's length.
fn parse_counts<const N: usize>(s: &str, part: Part) -> Result<[u8; N]> {
    let mut out = [0u8; N];
    let mut found = 0usize;
    for token in s.split(|c: char| c == ',' || c.is_whitespace()).filter(|p| !p.is_empty()) {
        if found == N {
            return Err(invalid(PositionError::WrongCount { part, expected: N, found: N + 1, excerpt: excerpt(s) }));
        }
        out[found] = parse_count(token, part, found)?;
        found += 1;
    }
    if found != N {
        return Err(invalid(PositionError::WrongCount { part, expected: N, found, excerpt: excerpt(s) }));
    }
    Ok(out)
}

/// One count: plain decimal digits, at most 48.
fn parse_count(token: &str, part: Part, pit: usize) -> Result<u8> {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = token.strip_prefix('-') {
        if digits(rest) {
            return Err(invalid(PositionError::Negative { part, pit, excerpt: excerpt(token) }));
        }
    }
    if !digits(token) {
        return Err(invalid(PositionError::NotANumber { part, pit, excerpt: excerpt(token) }));
    }
    let significant = token.trim_start_matches('0');
    let value = if significant.len() > 20 { None } else { token.parse::<u64>().ok().or(if significant.is_empty() { Some(0) } else { None }) };
    match value {
        Some(v) if v <= u64::from(TOTAL_STONES) => Ok(v as u8),
        found => Err(invalid(PositionError::PitTooLarge { part, pit, found })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_drawn_reads_both_drawings() {
        let p = Position::from_drawn("0 0 0 3 2 4 / 1 1 1 1 1 2", None).unwrap();
        assert_eq!(p.to_string(), "1 1 1 1 1 2 4 2 3 0 0 0");
        let q = Position::from_drawn("0 0 0 3 2 4 / 1 1 1 1 1 2", Some(Side::North)).unwrap();
        assert_eq!(q.to_string(), "4 2 3 0 0 0 1 1 1 1 1 2");
    }

    fn err(s: &str) -> PositionError {
        match s.parse::<Position>() {
            Err(Error::InvalidPosition(e)) => e,
            other => panic!("{s:?}: {other:?}"),
        }
    }

    #[test]
    fn parses_every_form() {
        let a: Position = "1 1 1 1 1 2 4 2 3 0 0 0".parse().unwrap();
        let b: Position = "1,1,1,1,1,2,4,2,3,0,0,0".parse().unwrap();
        let c: Position = "[1,1,1,1,1,2,4,2,3,0,0,0]".parse().unwrap();
        let d: Position = " [ 1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0 ] ".parse().unwrap();
        let e: Position = "0 0 0 3 2 4 / 1 1 1 1 1 2".parse().unwrap();
        assert!([b, c, d, e].iter().all(|x| *x == a));
        assert_eq!(a.stones(), 16); // the published example position: 16 stones
        assert_eq!(a.to_string(), "1 1 1 1 1 2 4 2 3 0 0 0");
        // The JSON that --json prints parses back.
        let json = serde_json::to_string(a.board()).unwrap();
        assert_eq!(json.parse::<Position>().unwrap(), a);
    }

    #[test]
    fn errors_carry_data() {
        assert!(matches!(err("1 2 3"), PositionError::WrongCount { expected: 12, found: 3, .. }));
        assert!(matches!(err("1 1 1 1 1 1 1 1 1 1 1 1 1"), PositionError::WrongCount { found: 13, .. }));
        assert!(matches!(err("a b c d e f g h i j k l"), PositionError::NotANumber { pit: 0, .. }));
        assert!(matches!(err("1 1 1 1 1 1 1 1 1 1 1 -1"), PositionError::Negative { pit: 11, .. }));
        assert!(matches!(err("49 0 0 0 0 0 0 0 0 0 0 0"), PositionError::PitTooLarge { found: Some(49), .. }));
        let big = err("99999999999999999999 0 0 0 0 0 0 0 0 0 0 0");
        assert!(matches!(big, PositionError::PitTooLarge { found: None, .. }), "{big:?}");
        assert!(big.to_string().contains("more than 48"), "{big}");
        for t in ["1.5", "x", "0x3", "+3"] {
            let s = format!("{t} 0 0 0 0 0 0 0 0 0 0 0");
            assert!(matches!(err(&s), PositionError::NotANumber { .. }), "{t}");
        }
        assert!(matches!(err("48 1 0 0 0 0 0 0 0 0 0 0"), PositionError::TooManyStones { total: 49 }));
        let zeros: Position = "0000000000000000000000000001 0 0 0 0 0 0 0 0 0 0 0".parse().unwrap();
        assert_eq!(zeros.stones(), 1);
        assert!(matches!(err(""), PositionError::WrongCount { found: 0, .. }));
        assert!(matches!(err("[1,2"), PositionError::Malformed { .. }));
        assert!(matches!(err("1 2 / 3 / 4"), PositionError::Malformed { .. }));
        assert!(matches!(err("1 1 1 1 1 1 / 1 1"), PositionError::WrongCount { part: Part::BottomRow, .. }));
        assert!(matches!("up".parse::<Side>(), Err(Error::InvalidPosition(PositionError::BadSide { .. }))));
    }

    #[test]
    fn huge_and_hostile_input_is_bounded_and_escaped() {
        let huge = format!("{} 1", "7 ".repeat(5_000_000));
        let start = std::time::Instant::now();
        let e = err(&huge).to_string();
        assert!(start.elapsed().as_millis() < 500, "parsing did not stop early");
        assert!(e.len() < 150, "{e}");
        assert!(e.contains("bytes)"), "{e}");
        let e = err("\u{1b}[31mred\u{7} 1").to_string();
        assert!(!e.contains('\u{1b}') && !e.contains('\u{7}'), "{e:?}");
        assert!(e.contains("\\u{1b}"), "{e}");
    }

    #[test]
    fn drawings_type_back() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut board = [0u8; PITS];
            for c in board.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *c = (x % 5) as u8;
            }
            let p = Position::new(board).unwrap();
            // Mover-first drawing: the two count rows, as drawn.
            let rows: Vec<String> = p.drawing().lines().skip(1).take(2).map(|l| l.replace("opponent", "").replace("to move", "")).collect();
            let typed = format!("{} / {}", rows[0], rows[1]);
            assert_eq!(typed.parse::<Position>().unwrap(), p, "{typed}");
            // Side drawing, either side to move.
            for side in [Side::South, Side::North] {
                let d = p.drawing_sides(side);
                let rows: Vec<String> = d.lines().skip(1).take(2).map(|l| l.replace("North", "").replace("South", "").replace("(to move)", "")).collect();
                let typed = format!("{} / {}", rows[0], rows[1]);
                assert_eq!(Position::from_drawn(&typed, Some(side)).unwrap(), p, "{typed} {side:?}");
                assert!(d.lines().all(|l| l.len() <= 80));
            }
        }
    }

    #[test]
    fn side_form_and_moves() {
        let want = Position::from_sides("1,1,1,1,1,2", "4,2,3,0,0,0", Side::South).unwrap();
        for t in ["S: 1 1 1 1 1 2  N: 4 2 3 0 0 0  S", "south 1,1,1,1,1,2 north 4,2,3,0,0,0 south to move", "N:4 2 3 0 0 0 S:1 1 1 1 1 2 s"] {
            assert_eq!(Position::parse_with_side(t).unwrap(), (want, Some(Side::South)), "{t}");
        }
        let (p, side) = Position::parse_with_side("S: 1 1 1 1 1 2 N: 4 2 3 0 0 0 North").unwrap();
        assert_eq!((p, side), (want.turned(), Some(Side::North)));
        let bad = |t: &str| match Position::parse_with_side(t) {
            Err(Error::InvalidPosition(e)) => e,
            other => panic!("{t}: {other:?}"),
        };
        assert!(matches!(bad("S: 1 1 1 1 1 2 N: 4 2 3 0 0 0"), PositionError::Malformed { .. }));
        assert!(matches!(bad("S: 1 1 1 1 1 2 S: 4 2 3 0 0 0 S"), PositionError::Malformed { .. }));
        assert!(matches!(bad("S: 1 1 1 1 1 N: 4 2 3 0 0 0 S"), PositionError::NotANumber { .. }));
        assert!(matches!(bad("S: 1 1 1 1 1 2 N: 4 2 3 0 0 0 0 S"), PositionError::Malformed { .. }));
        assert!(matches!(bad("S: 1 1 1 1 1 2 N: 4 2 3 0 0 0 W"), PositionError::BadSide { .. }));
        assert!(matches!(bad("S: 1 1 1 1 1 2 N: 4 2 3 0 0 0 S extra"), PositionError::Malformed { .. }));
        assert!(matches!(bad("S: 40 1 1 1 1 2 N: 4 2 3 0 0 0 S"), PositionError::TooManyStones { .. }));
        assert!(matches!(bad("X"), PositionError::NotANumber { .. }));
        assert!(matches!(bad("S 1 1 1 1 1 1 X"), PositionError::Malformed { .. }));
        // Houses.
        for side in [Side::South, Side::North] {
            for pit in 0..6u8 {
                assert_eq!(parse_move(&house(side, pit).to_string(), side).unwrap(), pit);
                assert_eq!(parse_move(&pit.to_string(), side).unwrap(), pit);
            }
        }
        for (t, side) in [("a", Side::South), ("F", Side::North), ("6", Side::South), ("", Side::South), ("AB", Side::South), ("é", Side::North)] {
            assert!(matches!(parse_move(t, side), Err(Error::InvalidPosition(PositionError::BadMove { .. }))), "{t}");
        }
    }

    #[test]
    fn absolute_boards_turn_back_to_mover_first() {
        let absolute = [1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 7];
        let south = Position::from_absolute(absolute, Side::South).unwrap();
        assert_eq!(south.board(), &absolute);
        let north = Position::from_absolute(absolute, Side::North).unwrap();
        assert_eq!(north.board(), &[0, 0, 0, 0, 0, 7, 1, 2, 3, 4, 5, 6]);
        // The inverse of `absolute`, both ways, for either side to move.
        for side in [Side::South, Side::North] {
            assert_eq!(Position::from_absolute(absolute, side).unwrap().absolute(side), absolute);
            let p: Position = "1 1 1 1 1 2 4 2 3 0 0 0".parse().unwrap();
            assert_eq!(Position::from_absolute(p.absolute(side), side).unwrap(), p);
        }
        assert!(matches!(Position::from_absolute([5; 12], Side::North), Err(Error::InvalidPosition(PositionError::TooManyStones { total: 60 }))));
    }

    #[test]
    fn sides_convert_to_mover_first() {
        let p = Position::from_sides("1,2,3,4,5,6", "0,0,0,0,0,7", Side::North).unwrap();
        assert_eq!(p.board(), &[0, 0, 0, 0, 0, 7, 1, 2, 3, 4, 5, 6]);
        assert_eq!(p.absolute(Side::North), [1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 7]);
        let q = Position::from_sides("1,2,3,4,5,6", "0,0,0,0,0,7", Side::South).unwrap();
        assert_eq!(q.board(), &[1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 7]);
        let d = q.drawing_sides(Side::South);
        assert!(d.contains("North") && d.contains("South") && d.contains("  A   B"), "{d}");
    }
}
