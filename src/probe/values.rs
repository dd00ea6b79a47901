//! Values: of a position, of its moves, and its best moves.

use crate::error::Result;
use crate::index::in_some_layer;
use crate::position::Position;
use crate::rules::{Board, Outcome};

use super::{best_dtc, Database, MoveResult, MoveValue};

impl Database {
    /// The exact value of `position` for its player to move: stones he will still capture minus
    /// stones the opponent will still capture, with both playing their best and endless play
    /// counting 0. Between `-n` and `n` for `n` stones on the board.
    ///
    /// A position in a layer is read from its layer. A position outside every layer (its
    /// opponent row has no empty pit, like the start position) is answered from its children:
    /// the best of `captured - v(child)` and the values of moves that end the game, or the
    /// ruleset's ending value when it has no legal move.
    ///
    /// Cost: a position in a layer takes one rank computation and one read from a memory-mapped
    /// file (plus the layer's opening on first use, see [`layer`](Self::layer)); one outside
    /// every layer takes one move generation and up to six such probes.
    ///
    /// # Errors
    /// [`Error::LayerMissing`](crate::error::Error::LayerMissing) when a layer needed is not built (the message names the command
    /// that builds it), [`Error::RulesetMismatch`](crate::error::Error::RulesetMismatch) when its file holds another ruleset's values,
    /// [`Error::Corrupt`](crate::error::Error::Corrupt) when the file is damaged (bad header, size, checksum, or a value
    /// outside `-n..=n`), [`Error::Io`](crate::error::Error::Io) when it cannot be read.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::builder::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None, ..Default::default() };
    /// builder::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    ///
    /// // Layer 1 (published): a lone stone in the mover's pit 5 is worth -1 ...
    /// assert_eq!(db.value(&"0 0 0 0 0 1 0 0 0 0 0 0".parse()?)?, -1);
    /// // ... and on the opponent's side too.
    /// assert_eq!(db.value(&"0 0 0 0 0 0 0 0 1 0 0 0".parse()?)?, -1);
    /// // The start position's children hold 48 stones: layer 48 is not built here.
    /// assert!(matches!(db.value(&Position::start()), Err(Error::LayerMissing { layer: 48, .. })));
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn value(&self, position: &Position) -> Result<i8> {
        let board = position.board();
        if in_some_layer(board) {
            self.lookup(board)
        } else {
            self.value_from_children(board)
        }
    }

    pub(super) fn value_from_children(&self, board: &Board) -> Result<i8> {
        let moves = self.rules().moves(board);
        if let Some(ending) = moves.ending() {
            return Ok(ending);
        }
        let mut best: Option<i8> = None;
        for m in moves.as_slice() {
            let v = match m.outcome {
                Outcome::End { value } => value,
                // A child always has an empty opponent pit (the pit just played): in a layer.
                Outcome::Child { captured, child } => captured as i8 - self.child_value(&child)?,
            };
            best = Some(best.map_or(v, |b| b.max(v)));
        }
        // `moves` is never empty without an ending; an empty board (0 stones) is in layer 0.
        Ok(best.unwrap_or(0))
    }

    /// The value of a child board (any board: a child is in a layer, but check rather than trust).
    #[inline]
    pub(super) fn child_value(&self, child: &Board) -> Result<i8> {
        if in_some_layer(child) {
            self.lookup(child)
        } else {
            self.value_from_children(child)
        }
    }

    /// Every legal move of `position` with its exact value, in increasing pit order. Empty when
    /// the position has no legal move (the game is over; [`value`](Self::value) then gives the
    /// ruleset's ending value).
    ///
    /// Cost: one move generation and one probe per move that does not end the game (at most six).
    ///
    /// # Errors
    /// As [`value`](Self::value), for the layers of the children.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::{Database, MoveResult};
    /// use oware::builder::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None, ..Default::default() };
    /// builder::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    ///
    /// let pos: Position = "0 0 0 0 2 1 1 0 0 0 0 0".parse()?;
    /// let moves = db.move_values(&pos)?;
    /// assert_eq!(moves.iter().map(|m| m.pit).collect::<Vec<_>>(), vec![4, 5]);
    /// // Pit 5 sows one stone onto the opponent's 1 and captures the 2.
    /// assert_eq!(moves[1].captured(), Some(2));
    /// // Every move's value is captured - v(child); the position's value is the best of them.
    /// for m in &moves {
    ///     if let MoveResult::Continues { captured, child } = m.result {
    ///         assert_eq!(m.value, captured as i8 - db.value(&child)?);
    ///     }
    /// }
    /// assert_eq!(db.value(&pos)?, moves.iter().map(|m| m.value).max().unwrap_or(i8::MIN));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn move_values(&self, position: &Position) -> Result<Vec<MoveValue>> {
        let moves = self.rules().moves(position.board());
        let mut out = Vec::with_capacity(moves.len());
        for m in moves.as_slice() {
            let mv = match m.outcome {
                Outcome::End { value } => MoveValue { pit: m.pit, result: MoveResult::EndsGame, value, dtc: Some(0) },
                Outcome::Child { captured, child } => {
                    let w = self.child_value(&child)?;
                    let value = captured as i8 - w;
                    let dtc = if captured > 0 {
                        Some(0)
                    } else if w == 0 {
                        None
                    } else {
                        self.stored_dtc(&child)?
                    };
                    let child = Position::new(child)?;
                    MoveValue { pit: m.pit, result: MoveResult::Continues { captured, child }, value, dtc }
                }
            };
            out.push(mv);
        }
        Ok(out)
    }

    /// The best moves of `position`: every legal move whose value equals the position's value,
    /// in increasing pit order. Empty when the position has no legal move.
    ///
    /// When the value is not 0 and the children's depths to capture are known (their layers'
    /// dtc files are built, [`MoveValue::dtc`]), only the moves that also realize the value
    /// soonest are kept: for the winner those of least depth, for the loser those of greatest
    /// depth. Following them reaches the value's first capture in exactly [`dtc`](Self::dtc)
    /// plies, where a move of the same value that makes no progress could go round forever.
    ///
    /// Cost: as [`move_values`](Self::move_values).
    ///
    /// # Errors
    /// As [`value`](Self::value), for the layers of the children.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::builder::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None, ..Default::default() };
    /// builder::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    ///
    /// // A lone stone in pit 3: playing it keeps the stone home and eradicates; +1.
    /// let best = db.best_moves(&"0 0 0 1 0 0 0 0 0 0 0 0".parse()?)?;
    /// assert_eq!((best.len(), best[0].pit, best[0].value), (1, 3, 1));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn best_moves(&self, position: &Position) -> Result<Vec<MoveValue>> {
        let mut moves = self.move_values(position)?;
        let best = moves.iter().map(|m| m.value).max();
        moves.retain(|m| Some(m.value) == best);
        if let Some(d) = best_dtc(&moves) {
            moves.retain(|m| m.dtc == Some(d));
        }
        Ok(moves)
    }
}
