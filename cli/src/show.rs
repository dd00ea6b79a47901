//! How the program shows positions, the engine's scores and lines, and a game's end: the words
//! every command that shows them shares (`analyse`, `moves`, `play`, the engine command, the
//! server).

use oware::game::{End, Game};
use oware::position::{house, Position, Side};
use oware::search::ScoreBound;
use oware::Ruleset;

/// A position drawn for people, with its South/North labels and house names: mover-first counts
/// name no side, and then South is to move.
pub(crate) fn draw(pos: &Position, side: Option<Side>) -> String {
    pos.drawing_sides(side.unwrap_or(Side::South))
}

/// A score in stones, signed, as people read it: `+3`, `-1.25`.
pub(crate) fn stones(centi: i32) -> String {
    if centi % 100 == 0 {
        format!("{:+}", centi / 100)
    } else {
        format!("{:+.2}", f64::from(centi) / 100.0)
    }
}

/// The line as house letters, each ply in the letters of the side that plays it.
pub(crate) fn line_houses(pv: &[u8], side: Side) -> Vec<String> {
    let mut s = side;
    pv.iter()
        .map(|&p| {
            let h = house(s, p).to_string();
            s = s.other();
            h
        })
        .collect()
}

/// A bound's name in the JSON documents.
pub(crate) fn bound_name(b: ScoreBound) -> &'static str {
    match b {
        ScoreBound::Equal => "exact",
        ScoreBound::Upper => "upper",
        ScoreBound::Lower => "lower",
    }
}

/// How a game ended, told apart as the rules end it: the one reading of [`End`] for the words
/// of `play` ([`words`](Self::words): the sides named, the stones counted) and of the engine
/// command ([`uci_words`](Self::uci_words): from the side to move, as UCI speaks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The last move, a grand slam from pit `pit` of the side that played it, ended the game:
    /// the stones left go to the side to move.
    GrandSlam { pit: u8 },
    /// The side to move has no stone in his row: the opponent takes the stones left.
    NoStone,
    /// The side to move cannot feed the opponent, whose row is empty: he takes his row.
    CannotFeed,
    /// Every move of the side to move would be a forbidden grand slam: each side takes his row.
    OnlyForbiddenMoves,
    /// A side has captured more than 24 stones, or both 24 (the 25-stone rule): the stones left
    /// count as split evenly.
    Captures,
    /// The last move repeated a position: awari splits the stones left evenly, abapa
    /// (`own_rows`) gives each side the stones in his row.
    Repetition { own_rows: bool },
    /// An end of the library's this program does not know.
    Other,
}

impl Ending {
    /// How `game` ended, `end` being its [`Game::end`].
    pub(crate) fn of(game: &Game, end: End) -> Ending {
        let board = game.position().board();
        // An empty board with a side past 24 (or both at 24): the capture that got there ended
        // the game by the 25-stone rule; that the side to move has no move then shares nothing.
        let quota_met = game.captured().is_some_and(|c| c.south > 24 || c.north > 24 || (c.south == 24 && c.north == 24));
        match end {
            End::NoMove { .. } if quota_met && board.iter().all(|&s| s == 0) => Ending::Captures,
            End::ByMove { pit, .. } => Ending::GrandSlam { pit },
            End::NoMove { .. } if board[..6].iter().all(|&s| s == 0) => Ending::NoStone,
            End::NoMove { .. } if board[6..].iter().all(|&s| s == 0) => Ending::CannotFeed,
            End::NoMove { .. } => Ending::OnlyForbiddenMoves,
            End::Captures => Ending::Captures,
            End::Repetition { .. } => Ending::Repetition { own_rows: matches!(game.rules(), Ruleset::Abapa(_)) },
            _ => Ending::Other,
        }
    }

    /// Why `game` is over, for people: the sides named and the stones on the board counted
    /// (`North has no stone to move: South takes the 0 left on the board`).
    pub(crate) fn words(self, game: &Game) -> String {
        let mover = game.side();
        let n = game.position().stones();
        match self {
            Ending::GrandSlam { pit } => {
                format!("{}'s grand slam with {} ends the game: the stones left on the board go to {mover}", mover.other(), house(mover.other(), pit))
            }
            Ending::NoStone => format!("{mover} has no stone to move: {} takes the {n} left on the board", mover.other()),
            Ending::CannotFeed => format!("{mover} cannot feed {}: {mover} takes the {n} stones in his row", mover.other()),
            Ending::OnlyForbiddenMoves => format!("every move {mover} has would be a forbidden grand slam: each side takes the stones in his row"),
            Ending::Captures => format!("a side has captured more than 24 stones (or both 24): the {n} left on the board count as split evenly"),
            Ending::Repetition { own_rows: false } => format!("the position repeats: the {n} stones left on the board are split evenly"),
            Ending::Repetition { own_rows: true } => "the position repeats: each side takes the stones in his row".to_string(),
            Ending::Other => "the game has ended".to_string(),
        }
    }

    /// Why the game is over, for a GUI (the engine command's `info string`): from the side to
    /// move, without names or counts.
    pub(crate) fn uci_words(self) -> &'static str {
        match self {
            Ending::GrandSlam { .. } => "the last move ended it and shared out the stones left",
            Ending::NoStone | Ending::CannotFeed | Ending::OnlyForbiddenMoves => "the side to move has no legal move; the rules share out the stones left",
            Ending::Captures => "a side has captured more than 24 stones (or both 24); the stones left count as split evenly",
            Ending::Repetition { own_rows: false } => "the last move repeated a position; the stones left are split evenly",
            Ending::Repetition { own_rows: true } => "the last move repeated a position; each side takes the stones in his row",
            Ending::Other => "it has ended",
        }
    }
}

#[cfg(test)]
mod tests {
    use oware::game::Captured;
    use oware::rules::GrandSlam;

    use super::*;

    fn ending(rules: Ruleset, board: &str, captured: Captured) -> (Game, Ending) {
        let game = Game::from_position(rules, board.parse().unwrap(), Side::South, Some(captured));
        let end = game.end().expect("the game is over");
        let ending = Ending::of(&game, end);
        (game, ending)
    }

    /// Issue 67, item 6: `fen 0-0-0-0-0-0-0-0-0-0-0-0-24-24-S` was "no legal move"; the capture
    /// that made 24:24 ended the game by the 25-stone rule.
    #[test]
    fn an_empty_board_after_the_quota_is_the_25_stone_rule() {
        for (south, north) in [(24, 24), (25, 23), (23, 25), (48, 0)] {
            let (_, e) = ending(Ruleset::Awari, "0 0 0 0 0 0 0 0 0 0 0 0", Captured { south, north });
            assert_eq!(e, Ending::Captures, "{south}:{north}");
        }
        let (_, e) = ending(Ruleset::Awari, "0 0 0 0 0 0 0 0 0 0 0 0", Captured { south: 0, north: 0 });
        assert_eq!(e, Ending::NoStone);
    }

    /// The ends are told apart once, and worded for people and for a GUI from that one reading.
    #[test]
    fn each_end_is_told_apart_and_worded() {
        let (g, e) = ending(Ruleset::Awari, "0 0 0 0 0 0 0 3 0 0 0 0", Captured { south: 22, north: 23 });
        assert_eq!(e, Ending::NoStone);
        assert_eq!(e.words(&g), "South has no stone to move: North takes the 3 left on the board");
        assert_eq!(e.uci_words(), "the side to move has no legal move; the rules share out the stones left");
        let (g, e) = ending(Ruleset::Abapa(GrandSlam::NoCapture), "1 0 0 0 0 0 0 0 0 0 0 0", Captured { south: 24, north: 23 });
        assert_eq!(e, Ending::CannotFeed);
        assert_eq!(e.words(&g), "South cannot feed North: South takes the 1 stones in his row");
        let (g, e) = ending(Ruleset::Awari, "1 0 0 0 0 0 2 0 0 0 0 0", Captured { south: 30, north: 15 });
        assert_eq!(e, Ending::Captures);
        assert!(e.words(&g).ends_with("the 3 left on the board count as split evenly"));
        assert!(e.uci_words().ends_with("the stones left count as split evenly"));
    }
}
