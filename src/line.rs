//! Best lines: the principal variation of a position, found in a value-only database.
//!
//! The search works through a small interface, `MoveOracle` (a ruleset and the values of a
//! position's moves), so it is tested on hand-made value tables without building databases;
//! [`Database`] implements it, and [`Database::principal_variation`] and [`Database::solution`]
//! are the entry points most programs use.

use std::collections::{HashMap, HashSet};

use crate::error::{Damage, Error, Result};
use crate::index::in_some_layer;
use crate::position::Position;
use crate::probe::{Database, MoveResult, MoveValue};
use crate::rules::Ruleset;

/// Most positions the search of [`Database::principal_variation`] (its rule 2) looks at before
/// giving up.
pub(crate) const PV_SEARCH_NODES: usize = 20_000;

/// Why a principal variation stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PvEnd {
    /// The game is over: the last move ended it, or the player to move next has no legal move
    /// (also when the line is empty because the starting position has no legal move).
    GameOver,
    /// The position after the last move already occurred before the move of step `first_ply`
    /// (0-based, an index into [`PrincipalVariation::steps`]) and its value is 0: best play
    /// goes round in a cycle, endless play, and the stones left on the board are split evenly
    /// (the value 0 says so).
    Repetition {
        /// Index of the step whose starting position the last move reached again.
        first_ply: usize,
    },
    /// The position after the last move already occurred before the move of step `first_ply`
    /// although its value is not 0. Endless play would be worth 0, so this line is not how the
    /// game goes: a value-only database cannot always show the forcing line (the way to the
    /// capture that realises the value may lie beyond the search bound of
    /// [`Database::principal_variation`]); the value itself is exact.
    Cycle {
        /// Index of the step whose starting position the last move reached again.
        first_ply: usize,
    },
    /// The value of the position after the last step (or of the starting position, when there
    /// is no step) is 0 and no sequence of best moves of either side from it ever captures or
    /// ends the game: neither side can force a capture, the stones stay on the board and are
    /// split evenly by endless play. The line stops here rather than print shuffling plies.
    EndlessPlay,
    /// The line was cut at the requested number of plies (also when that number is 0).
    PlyLimit,
}

/// What the search for a best move that makes progress found.
enum Search {
    /// The pits of a shortest sequence of best moves to a position with such a move, the first
    /// move last.
    Found(Vec<u8>),
    /// Every position reachable by best moves was looked at: none has such a move.
    Exhausted,
    /// The search looked at its limit of positions without finding one.
    GaveUp,
}

/// One ply of a principal variation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PvStep {
    /// The position before the move, mover-first for the player making it.
    pub position: Position,
    /// The exact value of `position` for its mover (equal to `played.value`).
    pub value: i8,
    /// The move played: a best move of `position`, chosen as described at
    /// [`Database::principal_variation`].
    pub played: MoveValue,
}

/// A best line: the steps played and why the line stops there.
///
/// Each step's position is the previous step's child ([`MoveValue::child`] of its `played`
/// move).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrincipalVariation {
    /// The plies of the line, from the starting position on.
    pub steps: Vec<PvStep>,
    /// Why the line stops after the last step.
    pub end: PvEnd,
}

/// Everything known about one position: its value, its moves' values and a best line
/// ([`Database::solution`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Solution {
    /// The exact value of the position for its mover, as [`Database::value`].
    pub value: i8,
    /// Every legal move with its value, in increasing pit order, as
    /// [`Database::move_values`]; empty when the game is over.
    pub moves: Vec<MoveValue>,
    /// A best line from the position, as [`Database::principal_variation`].
    pub line: PrincipalVariation,
    /// The position's depth to capture ([`Database::dtc`]), from its moves' depths: `None`
    /// when the value is 0 or the depths of the layers its moves reach are not built.
    pub dtc: Option<u16>,
}

/// What the best-line search needs to know of a database: the ruleset and the exact values of a
/// position's moves.
pub(crate) trait MoveOracle {
    /// The ruleset of the values.
    fn rules(&self) -> Ruleset;
    /// Every legal move of `position` with its exact value, in increasing pit order (empty when
    /// the game is over), as [`Database::move_values`].
    ///
    /// # Errors
    /// Whatever the source of the values reports.
    fn move_values(&self, position: &Position) -> Result<Vec<MoveValue>>;
}

impl MoveOracle for Database {
    fn rules(&self) -> Ruleset {
        Database::rules(self)
    }
    fn move_values(&self, position: &Position) -> Result<Vec<MoveValue>> {
        Database::move_values(self, position)
    }
}

impl Database {
    /// The best line from `position`, at most `max_plies` moves long: every move played is a
    /// best move (its value equals its position's value).
    ///
    /// A value-only database says which moves keep the value, not which of them make progress:
    /// the winner may have a waiting move of the same value as the capture that realises it, and
    /// playing waiting moves forever would be worth 0, not the value. So the move of each ply is
    /// chosen among the best moves as follows:
    /// 0. when the value is not 0 and the depths to capture of the moves' children are built
    ///    (`docs/dtc.md`), the lowest-numbered move of least depth (for the winner) or greatest
    ///    depth (for the loser): the line then reaches the value's first capture at exactly ply
    ///    [`dtc`](Self::dtc), and again after each capture while the depths reach;
    /// 1. a move that captures or ends the game (or leaves the opponent without a legal move),
    ///    the lowest-numbered one: its value comes from a smaller layer or from the end of the
    ///    game, so it cannot lead back to an earlier position;
    /// 2. otherwise, the next move of a shortest sequence of best moves (of both players, lowest
    ///    pits first) that leads to a position with such a move. It is found by a breadth-first
    ///    search over the best moves that looks at no more than 20 000 positions, which only
    ///    fails for lines longer than any seen in the tests: a value `v != 0` means endless play
    ///    (worth 0) is not best play, so such a sequence exists. When the value is 0 and the
    ///    search looked at every position reachable by best moves without finding one, neither
    ///    side can force a capture: the line stops there ([`PvEnd::EndlessPlay`]);
    /// 3. otherwise (the search gave up), the lowest-numbered move whose position after the move
    ///    has not occurred earlier in the line, or else the lowest-numbered one.
    ///
    /// The line stops when the game ends ([`PvEnd::GameOver`]), when no capture can come any
    /// more ([`PvEnd::EndlessPlay`]), when a position repeats ([`PvEnd::Repetition`] when its
    /// value is 0: endless play; [`PvEnd::Cycle`] otherwise; only a search that gave up can
    /// cause either), or after `max_plies` moves ([`PvEnd::PlyLimit`]). The choice depends only on the line so far, so a shorter
    /// `max_plies` cuts the same line.
    ///
    /// Cost: per ply, as [`move_values`](Self::move_values), plus a hash-map insertion; memory
    /// grows with the length of the line. When rule 2 searches, as `move_values` for each
    /// position it looks at (usually a handful, at most 20 000, once per stretch of the line
    /// between two captures).
    ///
    /// # Errors
    /// As [`value`](Self::value), for every position on the line or looked at by the search,
    /// and their children.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::line::PvEnd;
    /// use oware::builder::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None, ..Default::default() };
    /// builder::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    ///
    /// let pos: Position = "0 0 0 0 2 1 1 0 0 0 0 0".parse()?;
    /// let line = db.principal_variation(&pos, 100)?;
    /// assert_eq!(line.steps[0].value, db.value(&pos)?);
    /// // Each step plays a best move, and the next step starts where it led.
    /// for (i, step) in line.steps.iter().enumerate() {
    ///     assert!(db.best_moves(&step.position)?.contains(&step.played));
    ///     if let Some(next) = line.steps.get(i + 1) {
    ///         assert_eq!(step.played.child(), Some(&next.position));
    ///     }
    /// }
    /// assert_eq!(line.end, PvEnd::GameOver);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn principal_variation(&self, position: &Position, max_plies: usize) -> Result<PrincipalVariation> {
        LineSearch::new(self).principal_variation(position, max_plies)
    }

    /// The value, the move values and the best line of `position` together, probing the
    /// position's moves once: as [`value`](Self::value), [`move_values`](Self::move_values) and
    /// [`principal_variation`](Self::principal_variation)`(position, max_plies)`.
    ///
    /// Cost: as `move_values` plus `principal_variation` without its first ply's probes. The
    /// depth to capture comes from the moves' depths, with no probe of its own.
    ///
    /// The stored value is checked against the move values: a position in a layer whose stored
    /// value is not the best of its moves' values (only a damaged or altered database can hold
    /// one) gives an error rather than a self-contradictory report.
    ///
    /// # Errors
    /// As [`principal_variation`](Self::principal_variation); [`Error::Corrupt`] with
    /// [`Damage::Inconsistent`] when the stored value contradicts the move values.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::line::PvEnd;
    /// use oware::builder::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 4, dir: dir.path().into(), max_memory: None, ..Default::default() };
    /// builder::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    ///
    /// let pos: Position = "0 0 0 0 2 1 1 0 0 0 0 0".parse()?;
    /// let a = db.solution(&pos, 60)?;
    /// assert_eq!(a.value, db.value(&pos)?);
    /// assert_eq!(a.moves, db.move_values(&pos)?);
    /// assert_eq!(a.line, db.principal_variation(&pos, 60)?);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn solution(&self, position: &Position, max_plies: usize) -> Result<Solution> {
        let board = position.board();
        let moves = self.move_values(position)?;
        let derived = match (moves.iter().map(|m| m.value).max(), self.rules().moves(board).ending()) {
            (Some(best), _) => best,
            (None, ending) => ending.unwrap_or(0),
        };
        let value = if in_some_layer(board) {
            let stored = self.value(position)?;
            if stored != derived {
                return Err(Error::corrupt(self.layer_path(position.stones()), Damage::Inconsistent { board: *board, stored, best_move: derived }));
            }
            stored
        } else {
            derived
        };
        let line = if max_plies == 0 {
            self.principal_variation(position, 0)?
        } else {
            LineSearch::new(self).line_from(position, moves.clone(), max_plies, PV_SEARCH_NODES)?
        };
        let dtc = if value == 0 {
            None
        } else if moves.is_empty() {
            Some(0)
        } else {
            let keeping: Vec<MoveValue> = moves.iter().filter(|m| m.value == value).copied().collect();
            crate::probe::best_dtc(&keeping).map(|d| d + 1)
        };
        Ok(Solution { value, moves, line, dtc })
    }
}

/// The best-line search over any [`MoveOracle`].
pub(crate) struct LineSearch<'a, O: MoveOracle> {
    oracle: &'a O,
}

impl<'a, O: MoveOracle> LineSearch<'a, O> {
    /// A search over `oracle`'s values.
    pub(crate) fn new(oracle: &'a O) -> Self {
        LineSearch { oracle }
    }

    /// The best line from `position`, at most `max_plies` moves long, chosen as
    /// [`Database::principal_variation`] describes.
    ///
    /// # Errors
    /// As the oracle's [`MoveOracle::move_values`].
    pub(crate) fn principal_variation(&self, position: &Position, max_plies: usize) -> Result<PrincipalVariation> {
        if max_plies == 0 {
            let over = self.oracle.rules().moves(position.board()).ending().is_some();
            let end = if over { PvEnd::GameOver } else { PvEnd::PlyLimit };
            return Ok(PrincipalVariation { steps: Vec::new(), end });
        }
        let moves = self.oracle.move_values(position)?;
        self.line_from(position, moves, max_plies, PV_SEARCH_NODES)
    }

    /// The principal variation from `position`, whose move values are `moves`; `max_plies >= 1`;
    /// the searches of rule 2 look at no more than `search_limit` positions.
    fn line_from(&self, position: &Position, mut moves: Vec<MoveValue>, max_plies: usize, search_limit: usize) -> Result<PrincipalVariation> {
        let mut steps: Vec<PvStep> = Vec::new();
        let mut seen: HashMap<Position, usize> = HashMap::new();
        // Pits still to play from a search (rule 2), the next one last.
        let mut plan: Vec<u8> = Vec::new();
        let mut current = *position;
        let end = loop {
            let Some(value) = moves.iter().map(|m| m.value).max() else { break PvEnd::GameOver };
            seen.insert(current, steps.len());
            let Some(played) = self.choose(&current, &moves, value, &seen, &mut plan, search_limit)? else {
                break PvEnd::EndlessPlay;
            };
            steps.push(PvStep { position: current, value, played });
            let MoveResult::Continues { child, .. } = played.result else { break PvEnd::GameOver };
            if let Some(&first_ply) = seen.get(&child) {
                break if steps[first_ply].value == 0 { PvEnd::Repetition { first_ply } } else { PvEnd::Cycle { first_ply } };
            }
            if self.oracle.rules().moves(child.board()).ending().is_some() {
                break PvEnd::GameOver;
            }
            if steps.len() >= max_plies {
                break PvEnd::PlyLimit;
            }
            current = child;
            moves = self.oracle.move_values(&current)?;
        };
        Ok(PrincipalVariation { steps, end })
    }

    /// Whether a move cannot lead back to its position: it ends the game, captures, or leaves
    /// the opponent without a legal move.
    fn makes_progress(&self, m: &MoveValue) -> bool {
        match &m.result {
            MoveResult::EndsGame => true,
            MoveResult::Continues { captured, child } => *captured > 0 || self.oracle.rules().moves(child.board()).ending().is_some(),
        }
    }

    /// The move a principal variation plays at `current` (value `value`, legal moves `moves`,
    /// not empty), following the rules of [`principal_variation`](Self::principal_variation);
    /// `None` when the value is 0 and no capture can come any more (endless play).
    fn choose(
        &self,
        current: &Position,
        moves: &[MoveValue],
        value: i8,
        seen: &HashMap<Position, usize>,
        plan: &mut Vec<u8>,
        search_limit: usize,
    ) -> Result<Option<MoveValue>> {
        let best: Vec<MoveValue> = moves.iter().filter(|m| m.value == value).copied().collect();
        // Rule 0: with depths to capture, the winner's least and the loser's greatest.
        if let Some(d) = crate::probe::best_dtc(&best) {
            plan.clear();
            return Ok(best.iter().find(|m| m.dtc == Some(d)).copied());
        }
        if let Some(m) = best.iter().find(|m| self.makes_progress(m)) {
            plan.clear();
            return Ok(Some(*m));
        }
        if plan.is_empty() {
            // With value 0 the search may pass through earlier positions of the line: it must see
            // everything reachable to tell endless play; the path it returns is shortest, so
            // following it cannot go round.
            let avoid = if value == 0 { &HashMap::new() } else { seen };
            match self.path_to_progress(current, moves, avoid, search_limit)? {
                Search::Found(path) => *plan = path,
                Search::Exhausted if value == 0 => return Ok(None),
                Search::Exhausted | Search::GaveUp => {}
            }
        }
        if let Some(pit) = plan.pop() {
            if let Some(m) = best.iter().find(|m| m.pit == pit) {
                return Ok(Some(*m));
            }
            plan.clear(); // cannot happen: the search followed best moves
        }
        let fresh = best.iter().find(|m| m.child().is_some_and(|c| !seen.contains_key(c)));
        // `best` is not empty: `value` is the largest move value.
        Ok(Some(*fresh.or(best.first()).unwrap_or(&moves[0])))
    }

    /// A shortest sequence of best moves from `start` (whose legal moves are `start_moves`) to a
    /// position with a best move that makes progress, avoiding the positions in `seen`: its
    /// pits, the first move last; or that there is none, or that the search gave up after
    /// `limit` positions.
    fn path_to_progress(&self, start: &Position, start_moves: &[MoveValue], seen: &HashMap<Position, usize>, limit: usize) -> Result<Search> {
        struct Node {
            parent: usize,
            pit: u8,
            moves: Vec<MoveValue>,
        }
        let mut visited: HashSet<Position> = seen.keys().copied().collect();
        visited.insert(*start);
        let mut nodes = vec![Node { parent: usize::MAX, pit: 0, moves: start_moves.to_vec() }];
        let mut next = 0;
        while next < nodes.len() {
            let value = nodes[next].moves.iter().map(|m| m.value).max();
            let children: Vec<(u8, Position)> =
                nodes[next].moves.iter().filter(|m| Some(m.value) == value).filter_map(|m| m.child().map(|c| (m.pit, *c))).collect();
            for (pit, child) in children {
                if !visited.insert(child) {
                    continue;
                }
                if nodes.len() >= limit {
                    return Ok(Search::GaveUp);
                }
                let moves = self.oracle.move_values(&child)?;
                let best = moves.iter().map(|m| m.value).max();
                let found = moves.iter().any(|m| Some(m.value) == best && self.makes_progress(m));
                nodes.push(Node { parent: next, pit, moves });
                if found || best.is_none() {
                    let mut path = Vec::new();
                    let mut at = nodes.len() - 1;
                    while at != 0 {
                        path.push(nodes[at].pit);
                        at = nodes[at].parent;
                    }
                    return Ok(Search::Found(path));
                }
            }
            next += 1;
        }
        Ok(Search::Exhausted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::layer_size;
    use std::collections::HashMap;

    /// A hand-made value table: no database, no files.
    struct Table(HashMap<Position, Vec<MoveValue>>);

    impl MoveOracle for Table {
        fn rules(&self) -> Ruleset {
            Ruleset::Awari
        }
        fn move_values(&self, p: &Position) -> Result<Vec<MoveValue>> {
            Ok(self.0.get(p).cloned().unwrap_or_default())
        }
    }

    /// Distinct boards that have legal moves under awari.
    fn p(k: u8) -> Position {
        Position::new([k + 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0]).unwrap()
    }

    fn quiet(pit: u8, child: Position, value: i8) -> MoveValue {
        MoveValue { pit, result: MoveResult::Continues { captured: 0, child }, value, dtc: None }
    }

    #[test]
    fn the_search_finds_the_way_to_the_winning_capture() {
        // p0 (value +1): pit 0 goes round a waiting loop p0 -> p1 -> p0; pit 1 leads to p2,
        // whose only move leads to p3, where the game ends: the line must leave the loop.
        let end = MoveValue { pit: 0, result: MoveResult::EndsGame, value: 1, dtc: None };
        let table = Table(HashMap::from([
            (p(0), vec![quiet(0, p(1), 1), quiet(1, p(2), 1)]),
            (p(1), vec![quiet(0, p(0), -1)]),
            (p(2), vec![quiet(0, p(3), -1)]),
            (p(3), vec![end]),
        ]));
        let line = LineSearch::new(&table).principal_variation(&p(0), 10).unwrap();
        let pits: Vec<u8> = line.steps.iter().map(|s| s.played.pit).collect();
        assert_eq!(pits, vec![1, 0, 0], "{line:?}");
        assert_eq!(line.end, PvEnd::GameOver);
        // Without the search (limit 0), the lowest-numbered best move goes round the loop.
        let moves = table.move_values(&p(0)).unwrap();
        let blind = LineSearch::new(&table).line_from(&p(0), moves, 10, 0).unwrap();
        assert!(matches!(blind.end, PvEnd::Cycle { first_ply: 0 }), "{blind:?}");
    }

    #[test]
    fn value_zero_loops_are_endless_play() {
        let table = Table(HashMap::from([(p(0), vec![quiet(0, p(1), 0)]), (p(1), vec![quiet(0, p(0), 0)])]));
        let line = LineSearch::new(&table).principal_variation(&p(0), 10).unwrap();
        assert_eq!(line, PrincipalVariation { steps: Vec::new(), end: PvEnd::EndlessPlay });
        // Without the search, the shuffling is played out until a position repeats.
        let moves = table.move_values(&p(0)).unwrap();
        let blind = LineSearch::new(&table).line_from(&p(0), moves, 10, 0).unwrap();
        assert_eq!(blind.steps.len(), 2);
        assert_eq!(blind.end, PvEnd::Repetition { first_ply: 0 });
    }

    #[test]
    fn value_zero_lines_go_to_the_capture_then_stop() {
        // p0 (value 0) can shuffle p0 -> p1 -> p0, or go p0 -> p2, where a capture of 0 value
        // (an even exchange) leads to p3, a quiet value-0 loop p3 <-> p4.
        let capture = MoveValue { pit: 1, result: MoveResult::Continues { captured: 2, child: p(3) }, value: 0, dtc: None };
        let table = Table(HashMap::from([
            (p(0), vec![quiet(0, p(1), 0), quiet(1, p(2), 0)]),
            (p(1), vec![quiet(0, p(0), 0)]),
            (p(2), vec![quiet(0, p(5), -1), capture]),
            (p(3), vec![quiet(0, p(4), 0)]),
            (p(4), vec![quiet(0, p(3), 0)]),
        ]));
        let line = LineSearch::new(&table).principal_variation(&p(0), 20).unwrap();
        let pits: Vec<u8> = line.steps.iter().map(|s| s.played.pit).collect();
        assert_eq!(pits, vec![1, 1], "{line:?}");
        assert_eq!(line.end, PvEnd::EndlessPlay);
    }

    /// Without the search of rule 2, winning lines of small layers do go round in circles (the
    /// review's bug); such a line is reported as a cycle, never as endless play.
    #[test]
    fn cycles_without_the_search() {
        let dir = tempfile::tempdir().unwrap();
        let config =
            crate::builder::BuildConfig { rules: Ruleset::Awari, max_stones: 8, dir: dir.path().to_path_buf(), max_memory: None, ..Default::default() };
        crate::builder::build(&config, &crate::builder::Silent).unwrap();
        let db = Database::open(dir.path(), Ruleset::Awari).unwrap();
        let (mut cycles, mut with_search) = (0, 0);
        for n in 1..=8 {
            for (_, board) in crate::index::LayerWalker::new(n, 0..layer_size(n)).unwrap() {
                let p = Position::new(board).unwrap();
                let moves = db.move_values(&p).unwrap();
                let line = LineSearch::new(&db).line_from(&p, moves.clone(), 200, 0).unwrap();
                match line.end {
                    PvEnd::Cycle { first_ply } => {
                        assert_ne!(line.steps[first_ply].value, 0, "{p}");
                        cycles += 1;
                        let full = LineSearch::new(&db).line_from(&p, moves, 200, PV_SEARCH_NODES).unwrap();
                        with_search += u32::from(matches!(full.end, PvEnd::Cycle { .. }));
                    }
                    PvEnd::Repetition { first_ply } => assert_eq!(line.steps[first_ply].value, 0, "{p}"),
                    PvEnd::GameOver | PvEnd::PlyLimit | PvEnd::EndlessPlay => {}
                }
            }
        }
        eprintln!("layers 1..=8 without the search: {cycles} cycles; with it: {with_search}");
        assert!(cycles > 0);
        assert_eq!(with_search, 0);
    }
}
