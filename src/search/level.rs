//! Playing strengths: levels from a beginner's (1) to full strength ([`Level::MAX`]), the same in
//! `oware play --level`, the engine's `setoption name Level` and the web page's "Strength".
//!
//! A level below the top searches to a small fixed depth, every root move with a full window
//! ([`Limits::all_moves`]), and plays a move drawn among those scoring within the level's margin
//! of the best: a beginner sees one ply and takes any move within 3 stones of the best it sees;
//! the top level plays the search's best move with the limits given. Inside the tables the
//! scores are exact, and the margin still lets a lower level throw stones away there.

use std::time::Duration;

use super::keys::splitmix;
use super::{Limits, Report};
use crate::error::{Error, Result};

/// A playing strength, `1..=`[`Level::MAX`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level(u8);

/// Per level below the top: the search's depth (plies) and the margin (centi-stones) within
/// which a move of the root is as good as the best for it.
const BELOW_TOP: [(u32, i32); 4] = [(1, 300), (2, 200), (4, 120), (6, 50)];

impl Level {
    /// Full strength.
    pub const MAX: u8 = 5;

    /// Full strength: the search's best move with the limits given.
    pub const FULL: Level = Level(Level::MAX);

    /// Level `n` (1..=[`Level::MAX`]).
    ///
    /// # Errors
    /// [`Error::Usage`] for a level out of range.
    pub fn new(n: u32) -> Result<Level> {
        match u8::try_from(n) {
            Ok(k) if (1..=Level::MAX).contains(&k) => Ok(Level(k)),
            _ => Err(Error::Usage(format!("a level is 1 (a beginner's) to {} (full strength), not {n}", Level::MAX))),
        }
    }

    /// The level's number.
    pub fn get(self) -> u8 {
        self.0
    }

    /// Whether it is full strength.
    pub fn is_full(self) -> bool {
        self.0 == Level::MAX
    }

    /// The limits of a search at this level, from those of full strength (`full`): those
    /// themselves at the top; below it the level's depth, every root move scored, within
    /// `full`'s time when it has one.
    pub fn limits(self, full: &Limits) -> Limits {
        match self.below_top() {
            None => full.clone(),
            Some((depth, _)) => Limits { depth: Some(depth), movetime: full.movetime.map(|t| t.min(Duration::from_secs(60))), nodes: None, all_moves: true },
        }
    }

    /// The move to play after a search with [`limits`](Self::limits): the best at the top;
    /// below it a move drawn (by `seed`) among the root's moves scoring within the level's
    /// margin of the best. `None` when the report has no move (the game is over).
    pub fn choose(self, report: &Report, seed: u64) -> Option<u8> {
        let best = report.best_pit?;
        let Some((_, margin)) = self.below_top() else { return Some(best) };
        let top = report.moves.iter().map(|m| m.score).max().unwrap_or(report.score).max(report.score);
        let near: Vec<u8> = report.moves.iter().filter(|m| m.score >= top - margin).map(|m| m.pit).collect();
        if near.is_empty() {
            return Some(best);
        }
        Some(near[(splitmix(seed) % near.len() as u64) as usize])
    }

    fn below_top(self) -> Option<(u32, i32)> {
        BELOW_TOP.get(usize::from(self.0) - 1).copied()
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{RootMove, ScoreBound};
    use super::*;

    fn report(scores: &[(u8, i32)]) -> Report {
        let moves: Vec<RootMove> = scores.iter().map(|&(pit, score)| RootMove { pit, score, bound: ScoreBound::Equal, exact: false }).collect();
        let best = moves.iter().max_by_key(|m| m.score).unwrap();
        Report {
            best_pit: Some(best.pit),
            score: best.score,
            exact: false,
            depth: 1,
            seldepth: 1,
            nodes: 1,
            seconds: 0.0,
            pv: vec![best.pit],
            moves,
            hashfull: 0,
        }
    }

    #[test]
    fn levels_are_one_to_five() {
        assert!(Level::new(0).is_err() && Level::new(6).is_err() && Level::new(300).is_err());
        assert_eq!(Level::new(5).unwrap(), Level::FULL);
        assert!(Level::FULL.is_full() && !Level::new(4).unwrap().is_full());
        // Depths grow with the level; the top keeps the limits given.
        let full = Limits { movetime: Some(Duration::from_millis(700)), ..Default::default() };
        let depths: Vec<Option<u32>> = (1..=5).map(|n| Level::new(n).unwrap().limits(&full).depth).collect();
        assert_eq!(depths, vec![Some(1), Some(2), Some(4), Some(6), None]);
        assert_eq!(Level::FULL.limits(&full).movetime, Some(Duration::from_millis(700)));
        assert!(Level::new(1).unwrap().limits(&full).all_moves);
    }

    #[test]
    fn a_level_plays_within_its_margin_and_the_top_plays_the_best() {
        let r = report(&[(0, 100), (1, -150), (2, -400), (3, 90), (4, -250)]);
        for seed in 0..200 {
            assert_eq!(Level::FULL.choose(&r, seed), Some(0));
        }
        // Level 1: within 3 stones of the best (+1): pits 0, 1 and 3 (-2.5 and -4 are not).
        let seen: std::collections::BTreeSet<u8> = (0..400).map(|s| Level::new(1).unwrap().choose(&r, s).unwrap()).collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![0, 1, 3]);
        // Level 4: within half a stone: pits 0 and 3.
        let seen: std::collections::BTreeSet<u8> = (0..200).map(|s| Level::new(4).unwrap().choose(&r, s).unwrap()).collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![0, 3]);
        // No move: the game is over.
        let mut over = r.clone();
        over.best_pit = None;
        assert_eq!(Level::new(2).unwrap().choose(&over, 1), None);
    }
}
