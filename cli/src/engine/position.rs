//! What the engine reads: a command line of at most [`MAX_LINE`] bytes, or a `position`
//! command of any length read a piece at a time, its moves played as they come; and the FEN.

use oware::game::{Captured, Game};
use oware::position::{excerpt, Side};
use oware::rules::{PITS, TOTAL_STONES};
use oware::{Position, Ruleset};

use crate::input::{read_line_parts, Line, MAX_LINE};

/// Parses a `position` command's arguments into a game.
pub(crate) fn parse_position(rules: Ruleset, args: &[&str]) -> std::result::Result<Game, String> {
    let mut r = PositionReader::new(rules);
    r.feed(b"position");
    for a in args {
        r.feed(b" ");
        r.feed(a.as_bytes());
    }
    r.finish()
}

/// The longest word of a `position` command before its moves that is read whole (a FEN has at
/// most 43 bytes).
const MAX_POSITION_WORD: usize = 64;

/// Where a [`PositionReader`] is in its command.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    /// The word `position`.
    Command,
    /// `startpos` or `fen`.
    Base,
    /// The FEN after `fen`.
    Fen,
    /// `moves`, or the end.
    AfterBase,
    /// The moves.
    Moves,
    /// A word among the moves that is not one (its first bytes, for the message).
    BadMove,
}

/// A `position (startpos | fen FEN) [moves M...]` command read a piece at a time, its moves
/// played as they come: a legal game has no length the protocol could bound (a game of 2,100
/// plies is 4,223 bytes), so the line is never held, and memory is the game's whatever the
/// line's length. The first problem refuses the whole command; the rest of the line is then
/// only skipped.
struct PositionReader {
    rules: Ruleset,
    stage: Stage,
    /// The word being read (at most [`MAX_POSITION_WORD`] bytes of it are kept).
    word: Vec<u8>,
    game: Option<Game>,
    ply: usize,
    error: Option<String>,
}

impl PositionReader {
    fn new(rules: Ruleset) -> PositionReader {
        PositionReader { rules, stage: Stage::Command, word: Vec::new(), game: None, ply: 0, error: None }
    }

    /// Reads the next bytes of the command.
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.error.is_some() {
                return;
            }
            let space = b.is_ascii_whitespace();
            match self.stage {
                Stage::Moves if space => {}
                Stage::Moves => match b {
                    b'A'..=b'F' | b'a'..=b'f' => self.play(char::from(b)),
                    _ => {
                        self.stage = Stage::BadMove;
                        self.word.push(b);
                    }
                },
                // A character is at most 4 bytes: enough to name it.
                Stage::BadMove if space || self.word.len() == 4 => self.bad_move(),
                _ if space => self.end_word(),
                _ => {
                    if self.word.len() <= MAX_POSITION_WORD {
                        self.word.push(b);
                    }
                }
            }
        }
    }

    /// The game, or why the command is refused.
    fn finish(mut self) -> std::result::Result<Game, String> {
        match self.stage {
            Stage::BadMove => self.bad_move(),
            _ => self.end_word(),
        }
        if let Some(e) = self.error {
            return Err(e);
        }
        match (self.stage, self.game) {
            (Stage::Command | Stage::Base, _) => Err("position needs startpos or fen FEN".into()),
            (Stage::Fen, _) => Err("position fen needs a FEN: A-B-C-D-E-F-a-b-c-d-e-f-SouthStore-NorthStore-S|N".into()),
            (_, Some(game)) => Ok(game),
            (_, None) => Err("position needs startpos or fen FEN".into()),
        }
    }

    fn end_word(&mut self) {
        if self.word.is_empty() {
            return;
        }
        let word = String::from_utf8_lossy(&self.word).into_owned();
        self.word.clear();
        let long = word.len() > MAX_POSITION_WORD;
        match self.stage {
            Stage::Command => self.stage = Stage::Base,
            Stage::Base => match word.as_str() {
                "startpos" => {
                    self.game = Some(Game::start(self.rules));
                    self.stage = Stage::AfterBase;
                }
                "fen" => self.stage = Stage::Fen,
                _ => self.error = Some("position needs startpos or fen FEN".into()),
            },
            Stage::Fen if long => {
                let start: String = word.chars().take(20).collect();
                self.error = Some(format!("bad fen {}...: it is longer than {MAX_POSITION_WORD} bytes", excerpt(&start)));
            }
            Stage::Fen => match parse_fen(self.rules, &word) {
                Ok(game) => {
                    self.game = Some(game);
                    self.stage = Stage::AfterBase;
                }
                Err(e) => self.error = Some(e),
            },
            Stage::AfterBase if word == "moves" => self.stage = Stage::Moves,
            Stage::AfterBase => self.error = Some(format!("unexpected {} in position: moves come after 'moves'", excerpt(&word))),
            Stage::Moves | Stage::BadMove => {}
        }
    }

    /// A house letter among the moves.
    fn play(&mut self, c: char) {
        let Some(game) = self.game.as_mut() else { return };
        self.ply += 1;
        let ply = self.ply;
        let side = game.side();
        let pit = match (c, side) {
            ('A'..='F', Side::South) => c as u8 - b'A',
            ('a'..='f', Side::North) => c as u8 - b'a',
            ('A'..='F', Side::North) => {
                self.error = Some(format!("illegal move '{c}' at ply {ply}: North is to move (North's houses are a..f)"));
                return;
            }
            _ => {
                self.error = Some(format!("illegal move '{c}' at ply {ply}: South is to move (South's houses are A..F)"));
                return;
            }
        };
        if let Err(e) = game.play(pit) {
            self.error = Some(format!("illegal move '{c}' at ply {ply}: {}", illegal_reason(&e)));
        }
    }

    /// A word among the moves that is not a house: named by its first character.
    fn bad_move(&mut self) {
        let text = String::from_utf8_lossy(&self.word).chars().next().map(String::from).unwrap_or_default();
        self.word.clear();
        self.stage = Stage::Moves;
        self.error = Some(format!("illegal move {} at ply {}: a move is a house, A..F (South) or a..f (North)", excerpt(&text), self.ply + 1));
    }
}

/// What the engine reads: a line (at most [`MAX_LINE`] bytes kept), or
/// a `position` command longer than that, read as it came ([`PositionReader`]).
pub(crate) enum Input {
    Line(Line),
    Position(std::result::Result<Game, String>),
}

/// Reads the next command. A line longer than [`MAX_LINE`] bytes is
/// skipped without being held ([`Line::TooLong`]), unless it is a `position` command: then
/// its moves are played as they are read, whatever the line's length.
pub(crate) fn read_input(input: &mut impl std::io::BufRead, buf: &mut Vec<u8>, rules: Ruleset) -> std::io::Result<Option<Input>> {
    const MAX: usize = MAX_LINE;
    buf.clear();
    let mut stream: Option<PositionReader> = None;
    let read = read_line_parts(input, |part| match stream.as_mut() {
        Some(reader) => reader.feed(part),
        None if buf.len() <= MAX => {
            let room = (MAX + 1 - buf.len()).min(part.len());
            buf.extend_from_slice(&part[..room]);
            let start = buf.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(buf.len());
            let word = &buf[start..];
            if buf.len() > MAX && word.starts_with(b"position") && word.get(8).is_some_and(u8::is_ascii_whitespace) {
                let mut reader = PositionReader::new(rules);
                reader.feed(buf);
                reader.feed(&part[room..]);
                stream = Some(reader);
            }
        }
        None => {}
    })?;
    let Some(len) = read else {
        return Ok(None);
    };
    Ok(Some(match stream {
        Some(reader) => Input::Position(reader.finish()),
        None if buf.len() > MAX => Input::Line(Line::TooLong { bytes: len, first: None }),
        None => Input::Line(Line::Text(std::mem::take(buf))),
    }))
}

/// Parses `A-B-C-D-E-F-a-b-c-d-e-f-SouthStore-NorthStore-S|N`.
pub(crate) fn parse_fen(rules: Ruleset, fen: &str) -> std::result::Result<Game, String> {
    let bad = |why: &str| format!("bad fen {}: {why}", excerpt(fen));
    let parts: Vec<&str> = fen.split('-').take(16).collect();
    if parts.len() != 15 {
        return Err(bad("it is 14 counts and the side to move, joined by '-' (A..F, a..f, South's store, North's store, S or N)"));
    }
    let mut counts = [0u32; 14];
    for (i, (slot, text)) in counts.iter_mut().zip(&parts).enumerate() {
        if text.is_empty() || text.len() > 2 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(&format!("count {} is not a number 0..48", i + 1)));
        }
        let v: u32 = text.parse().map_err(|_| bad("a count is not a number"))?;
        if v > TOTAL_STONES {
            return Err(bad(&format!("count {} is {v}, more than 48", i + 1)));
        }
        *slot = v;
    }
    let total: u32 = counts.iter().sum();
    if total != TOTAL_STONES {
        return Err(bad(&format!("the houses and stores hold {total} stones, not 48")));
    }
    let side = match parts[14] {
        "S" => Side::South,
        "N" => Side::North,
        _ => return Err(bad("the side to move is S or N")),
    };
    let mut absolute = [0u8; PITS];
    for (a, &c) in absolute.iter_mut().zip(&counts[..PITS]) {
        *a = c as u8;
    }
    let position = Position::from_absolute(absolute, side).map_err(|e| bad(&e.to_string()))?;
    let captured = Captured { south: counts[12], north: counts[13] };
    Ok(Game::from_position(rules, position, side, Some(captured)))
}

/// Why a move was refused, in the words of `info string illegal move ...`.
fn illegal_reason(e: &oware::Error) -> String {
    match e {
        oware::Error::InvalidPosition(oware::error::PositionError::IllegalMove { reason, .. }) => (*reason).to_string(),
        other => other.to_string(),
    }
}
