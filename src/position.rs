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
//! Parsing never holds more than a few tokens of the input: counting stops one token past what is
//! expected, and an error quotes at most [`EXCERPT_CHARS`] characters of the input, escaped.

use std::fmt;
use std::str::FromStr;

pub use crate::error::{Part, PositionError};
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

fn invalid(e: PositionError) -> Error {
    Error::InvalidPosition(e)
}

/// At most this many characters of user input are quoted in a message.
pub const EXCERPT_CHARS: usize = 40;

/// A short, escaped quotation of user input for messages: at most [`EXCERPT_CHARS`]
/// characters in quotes, control and other non-printing characters escaped (`\u{1b}`, `\n`),
/// longer input cut with `…` and its length in bytes noted.
///
/// Cost: at most [`EXCERPT_CHARS`] characters are looked at (plus the length).
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
    /// and the side to move. To type a board as drawn instead, see [`from_drawn`](Self::from_drawn).
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] when a row is malformed or the board holds more than 48 stones.
    pub fn from_sides(south: &str, north: &str, to_move: Side) -> Result<Position> {
        let s: [u8; ROW] = parse_counts(south, Part::SouthRow)?;
        let n: [u8; ROW] = parse_counts(north, Part::NorthRow)?;
        Position::from_rows(s, n, to_move)
    }

    fn from_rows(south: [u8; ROW], north: [u8; ROW], to_move: Side) -> Result<Position> {
        let (first, second) = match to_move {
            Side::South => (south, north),
            Side::North => (north, south),
        };
        let mut board = [0u8; PITS];
        board[..ROW].copy_from_slice(&first);
        board[ROW..].copy_from_slice(&second);
        Position::new(board)
    }

    /// A position typed as it is drawn: `TOP / BOTTOM`, each row left to right as it appears.
    ///
    /// - `to_move = None`: the mover-first drawing of [`drawing`](Self::drawing): the top row
    ///   is the opponent's pits 11..6, the bottom row the mover's pits 0..5;
    /// - `to_move = Some(side)`: the drawing of [`drawing_sides`](Self::drawing_sides): the top
    ///   row is North's houses f..a, the bottom row South's houses A..F, and `side` moves.
    ///
    /// ```
    /// use oware::position::{Position, Side};
    /// let p = Position::from_drawn("0 0 0 3 2 4 / 1 1 1 1 1 2", None)?;
    /// assert_eq!(p.to_string(), "1 1 1 1 1 2 4 2 3 0 0 0");
    /// let q = Position::from_drawn("0 0 0 3 2 4 / 1 1 1 1 1 2", Some(Side::North))?;
    /// assert_eq!(q.to_string(), "4 2 3 0 0 0 1 1 1 1 1 2");
    /// # Ok::<(), oware::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] when the text is not two rows of six counts around one `/`, or
    /// the board holds more than 48 stones.
    pub fn from_drawn(text: &str, to_move: Option<Side>) -> Result<Position> {
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
    /// side whose turn it is.
    pub fn absolute(&self, to_move: Side) -> Board {
        match to_move {
            Side::South => self.board,
            Side::North => turned(&self.board),
        }
    }

    /// A two-row drawing as the board looks across a table: the opponent's row on top, read right
    /// to left (pit 11 first), the mover's row below (pit 0 first), with pit numbers. The two
    /// rows of counts can be typed back as `TOP / BOTTOM` ([`from_drawn`](Self::from_drawn)).
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
    /// ([`from_drawn`](Self::from_drawn) with `Some(side)`, or `--to-move` on the command line).
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
        format!(
            "  house {north_houses}\n  North {north}{n_mark}\n  South {south}{s_mark}\n  house {south_houses}\n"
        )
    }
}

fn row(counts: impl Iterator<Item = u8>) -> String {
    counts.map(|c| format!("{c:>3}")).collect::<Vec<_>>().join(" ")
}

impl FromStr for Position {
    type Err = Error;

    /// Parses any of the forms of the module documentation: 12 mover-first counts, the JSON
    /// array, or the drawn form `TOP / BOTTOM`.
    fn from_str(s: &str) -> Result<Position> {
        let t = s.trim();
        if let Some(inner) = t.strip_prefix('[') {
            let inner = inner.strip_suffix(']').ok_or_else(|| {
                invalid(PositionError::Malformed { reason: "a JSON array must end with ']'", excerpt: excerpt(s) })
            })?;
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
                let rows: Vec<String> = d
                    .lines()
                    .skip(1)
                    .take(2)
                    .map(|l| l.replace("North", "").replace("South", "").replace("(to move)", ""))
                    .collect();
                let typed = format!("{} / {}", rows[0], rows[1]);
                assert_eq!(Position::from_drawn(&typed, Some(side)).unwrap(), p, "{typed} {side:?}");
                assert!(d.lines().all(|l| l.len() <= 80));
            }
        }
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
