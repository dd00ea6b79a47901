//! The rulesets: what a grand slam does ([`GrandSlam`]) and the rulesets themselves ([`Ruleset`]),
//! with their stable names and ids, and what a repetition gives.

use std::fmt;
use std::str::FromStr;

use super::board::{Board, ROW};

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

    /// What a repetition gives the side to move of `board` (mover-first) when it ends the game:
    /// awari splits the stones on the board evenly (0), abapa gives each side the stones in
    /// his row (his row minus the opponent's).
    pub(crate) fn repetition_value(self, board: &Board) -> i8 {
        match self {
            Ruleset::Awari => 0,
            Ruleset::Abapa(_) => {
                let own: i32 = board[..ROW].iter().map(|&c| i32::from(c)).sum();
                let opp: i32 = board[ROW..].iter().map(|&c| i32::from(c)).sum();
                (own - opp) as i8
            }
        }
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
