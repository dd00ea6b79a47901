//! What a caller chooses of [`verify_directory`](super::verify_directory)(super::verify_directory) ([`VerifyOptions`])
//! and how it follows the stages as they happen ([`VerifyObserver`]).

use std::ops::RangeInclusive;

use super::report::{CompanionEntry, LayerEntry, ManifestCheck};
use crate::error::{FileContent, Result};
use crate::progress::{NoProgress, Progress};

/// What to verify in a directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyOptions {
    /// The layers to re-derive (inclusive). The layers below the range that they read are opened
    /// and checked (header, checksum) but not re-derived. `None`: every layer from 0 to the
    /// highest one on disk (unreadable entries included), so a gap is reported as missing. The one
    /// gap a directory may have without missing anything ([`DatabaseDir::gap`](crate::storage::DatabaseDir::gap): `oware build
    /// --for` leaves out the layer right below the highest one, which no layer present needs) is
    /// [`LayerStatus::NotNeeded`](super::LayerStatus::NotNeeded) instead, whenever the range goes past it.
    pub layers: Option<RangeInclusive<u32>>,
    /// The kinds of file beside the values required of every layer asked for
    /// ([`FileContent::Bounds`]: `bounds-NN.owdb`; [`FileContent::Dtc`]: `dtc-NN.owdb`): missing
    /// ones are problems. The files of the other kinds present are checked and absent ones
    /// skipped.
    pub require: Vec<FileContent>,
    /// Memory the re-derivation of a layer may keep in the page cache for the files it reads
    /// (`None`: what the system reports available), less the two bits per position
    /// `verify_within` marks in: a layer whose files do not fit together is re-derived in
    /// several passes (`source_groups`).
    pub max_memory: Option<u64>,
}

/// Receives the stages of [`verify_directory`](super::verify_directory) as they happen, to show progress or stream a
/// report. Every method has a default that does nothing.
pub trait VerifyObserver {
    /// The layers to verify are known: `first..=last`. Called once, before anything is read.
    fn start(&mut self, _first: u32, _last: u32) {}
    /// The pack manifest was checked (native directories with a `SHA256SUMS` only).
    ///
    /// # Errors
    /// Any error the observer returns stops the verification and is returned.
    fn manifest(&mut self, _check: &ManifestCheck) -> Result<()> {
        Ok(())
    }
    /// A progress reporter for re-deriving the values, or checking the bounds or the depths to
    /// capture, of layer `n`
    /// (told of up to `layer_size(n)` positions; dropped when done). Its
    /// [`cancelled`](Progress::cancelled) stops the verification with [`Error::Interrupted`](crate::Error::Interrupted).
    fn progress(&mut self, _n: u32) -> Box<dyn Progress> {
        Box::new(NoProgress)
    }
    /// A progress reporter for hashing the pack files the manifest lists (told of bytes read).
    /// Its [`cancelled`](Progress::cancelled), asked after each megabyte, stops the
    /// verification with [`Error::Interrupted`](crate::Error::Interrupted).
    fn manifest_progress(&mut self) -> Box<dyn Progress> {
        Box::new(NoProgress)
    }
    /// One layer is done; `earlier` holds the entries before it.
    ///
    /// # Errors
    /// As [`manifest`](Self::manifest).
    fn layer(&mut self, _entry: &LayerEntry, _earlier: &[LayerEntry]) -> Result<()> {
        Ok(())
    }
    /// One layer's file beside its values (its bounds, its depths to capture: `entry.kind`) is
    /// done. The files of one kind come in increasing layer order, the kinds one after the other.
    ///
    /// # Errors
    /// As [`manifest`](Self::manifest).
    fn companion(&mut self, _entry: &CompanionEntry) -> Result<()> {
        Ok(())
    }
}

/// A [`VerifyObserver`] that ignores everything and never cancels.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;
impl VerifyObserver for NoObserver {}
