//! The files beside the values: depths to capture and forced-capture bounds.

use std::sync::OnceLock;

use crate::bounds::Bounds;
use crate::error::{Error, Result};
use crate::index::{in_some_layer, rank_unchecked};
use crate::position::Position;
use crate::rules::{stones, Board};
use crate::storage::{BoundsKind, DtcKind, Table};

use super::{open_once, Database, MoveValue};

impl Database {
    /// Layer `n`'s depths to capture, opened (and checked as the layers are) on first use and
    /// kept open; `None` when the layer has no dtc file (remembered: a file built later is seen
    /// by a `Database` opened after it).
    ///
    /// # Errors
    /// [`Error::RulesetMismatch`] / [`Error::LayerMismatch`] for another ruleset's or layer's
    /// file; [`Error::Corrupt`] when the header, size or checksum is wrong or the file holds
    /// something else; [`Error::Io`] for other failures to read it.
    pub(crate) fn dtc_layer(&self, n: u32) -> Result<Option<&Table<DtcKind>>> {
        if let Some(d) = self.dtc.get(n as usize).and_then(OnceLock::get) {
            return Ok(d.as_ref());
        }
        let missing = || self.dir.missing::<DtcKind>(n);
        let opened = open_once(self.dtc.get(n as usize), self.opening_dtc.get(n as usize), missing, || {
            match self.dir.open_table::<DtcKind>(n, self.verify, self.read) {
                Ok(d) => Ok(Some(d)),
                Err(Error::CompanionMissing { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        })?;
        Ok(opened.as_ref())
    }

    /// The stored depth of a board in a layer; `Ok(None)` for value 0 or when its layer has no
    /// dtc file.
    pub(super) fn stored_dtc(&self, board: &Board) -> Result<Option<u16>> {
        match self.dtc_layer(stones(board))? {
            Some(d) => self.layer_dtc(d, board),
            None => Ok(None),
        }
    }

    /// The depth of a board in a layer from its dtc table `d`: what it stores, or in a depths
    /// pack over floors the depth its value and floor decide, else what it stores.
    ///
    /// Cost: one read of the table; over floors, the value, one move generation and for a value
    /// above 0 the values of the captures that could reach it, then (when they do not decide)
    /// the read.
    fn layer_dtc(&self, d: &Table<DtcKind>, board: &Board) -> Result<Option<u16>> {
        if d.over_floors() {
            let v = self.lookup(board)?;
            if let Some(depth) = crate::pack::decided_depth(self.rules(), board, v, |c| self.child_value(c))? {
                return Ok(depth);
            }
            return d.stored(rank_unchecked(board));
        }
        d.get(rank_unchecked(board))
    }

    /// The depth to capture of `position` (`docs/dtc.md`): how many plies best play takes to
    /// the value's first capture (by either side) or the end of the game, the winner hurrying
    /// and the loser delaying, both keeping the value. `None` when the value is 0 (no capture
    /// can be forced; endless play splits the stones).
    ///
    /// A position outside every layer is answered from its moves, by the definition.
    ///
    /// Cost: one rank computation and one byte read of a memory-mapped file (plus the dtc file's
    /// opening on first use); outside every layer, one move generation and up to six probes of
    /// values and depths.
    ///
    /// # Errors
    /// [`Error::CompanionMissing`] when a layer's depths are not built (`oware build --dtc`); as
    /// [`value`](Self::value) for the values it needs; [`Error::Corrupt`] for a damaged dtc
    /// file.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::builder::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), companions: vec![oware::error::FileContent::Dtc], ..Default::default() };
    /// builder::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    /// // Pit 5 captures 2 at once: the value is realized at the first ply.
    /// let pos: Position = "0 0 0 0 2 1 1 0 0 0 0 0".parse()?;
    /// assert_eq!(db.dtc(&pos)?, Some(1));
    /// // Following the best moves reaches the first capture at ply dtc.
    /// let best = &db.best_moves(&pos)?[0];
    /// assert_eq!(best.dtc, Some(0));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn dtc(&self, position: &Position) -> Result<Option<u16>> {
        self.dtc_of(position.board())
    }

    fn dtc_of(&self, board: &Board) -> Result<Option<u16>> {
        if in_some_layer(board) {
            let n = stones(board);
            // Without the layer's values its depths mean nothing: that is what is missing.
            self.layer(n)?;
            return match self.dtc_layer(n)? {
                Some(d) => self.layer_dtc(d, board),
                None => Err(self.dir.missing::<DtcKind>(n)),
            };
        }
        let value = self.value_from_children(board)?;
        crate::verify::derive_dtc(self.rules(), board, value, |_, child| self.child_value(child), |child| self.dtc_of(child))
    }

    /// Layer `n`'s forced-capture bounds, opened (and checked as the layers are) on first use
    /// and kept open. Thread-safe as [`layer`](Self::layer).
    ///
    /// # Errors
    /// [`Error::CompanionMissing`] when they are not built (or for the published format, which has
    /// none); [`Error::RulesetMismatch`] / [`Error::LayerMismatch`] for another ruleset's or
    /// layer's file; [`Error::Corrupt`] when the header, size or checksum is wrong or the file
    /// holds values; [`Error::Io`] for other failures to read it.
    pub(crate) fn bounds_layer(&self, n: u32) -> Result<&Table<BoundsKind>> {
        match self.bounds.get(n as usize).and_then(OnceLock::get) {
            Some(b) => Ok(b),
            None => {
                let missing = || self.dir.missing::<BoundsKind>(n);
                open_once(self.bounds.get(n as usize), self.opening_bounds.get(n as usize), missing, || {
                    self.dir.open_table::<BoundsKind>(n, self.verify, self.read)
                })
            }
        }
    }

    /// What each side of `position` can force itself to capture of the stones on the board by
    /// play that ends by itself, whatever the opponent does and whatever repetition brings
    /// ([`crate::bounds`]): `mover` (gM) for the player to move, `opponent` (gN) for the other.
    /// Under abapa's repetition rule (each player takes the stones on his own side) the mover
    /// ends with between `gM` and `n - gN` of the `n` stones.
    ///
    /// A position outside every layer is answered from its children, as [`value`](Self::value).
    ///
    /// Cost: one rank computation and one or two byte reads of a memory-mapped file (plus the
    /// bounds file's opening on first use); outside every layer, one move generation and up to
    /// six such probes.
    ///
    /// # Errors
    /// [`Error::CompanionMissing`] when a layer's bounds are not built (`oware build --bounds`), and
    /// as `bounds_layer`.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::builder::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let abapa = Ruleset::Abapa(oware::rules::GrandSlam::NoCapture);
    /// let config = BuildConfig { rules: abapa, max_stones: 6, dir: dir.path().into(), companions: vec![oware::error::FileContent::Bounds], ..Default::default() };
    /// builder::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), abapa)?;
    /// let pos: Position = "0 0 0 0 2 1 1 0 0 0 0 0".parse()?;
    /// let b = db.bounds(&pos)?;
    /// // Pit 5 captures 2 at once; the last stone is then the opponent's to play.
    /// assert!(b.mover >= 2);
    /// assert!(b.consistent_with(pos.stones(), db.value(&pos)?));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn bounds(&self, position: &Position) -> Result<Bounds> {
        self.bounds_of(position.board())
    }

    fn bounds_of(&self, board: &Board) -> Result<Bounds> {
        if in_some_layer(board) {
            let n = stones(board);
            self.layer(n)?;
            return self.bounds_layer(n)?.get(rank_unchecked(board));
        }
        // Outside every layer: the two equations over the moves (children are in layers).
        crate::verify::derive_bounds(self.rules(), board, |_, child| self.bounds_of(child))
    }
}

/// The depth the best moves `moves` (all of one value) should realize: the least of their
/// depths for a positive value, the greatest for a negative one; `None` for value 0, or when a
/// move's depth is unknown (its layer has no dtc file).
pub(crate) fn best_dtc(moves: &[MoveValue]) -> Option<u16> {
    let value = moves.first()?.value;
    if value == 0 || moves.iter().any(|m| m.dtc.is_none()) {
        return None;
    }
    let depths = moves.iter().filter_map(|m| m.dtc);
    if value > 0 {
        depths.min()
    } else {
        depths.max()
    }
}
