//! The tests' own kind of file beside the values: each position's number of legal moves
//! (`moves-NN.owdb`, one byte per position). It exists to check that a kind is added in the
//! files docs/architecture.md names ("A fourth kind"): its words and numbers
//! ([`FileContent::Moves`]), this file (its tag, its impl of [`Kind`] and its [`Check`]), one
//! line in `verify/mod.rs`, its build (`builder/moves.rs`) and one line in `builder/mod.rs`.
//! Nothing else in the library names it, and the tests build, verify, damage and remove its
//! files through the same code as the bounds' and the depths'.

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use memmap2::Mmap;

use super::companion::{check_positions, Check, Inputs};
use super::report::{EntriesReport, EntryMismatch};
use crate::error::{Damage, Error, FileContent, Result};
use crate::format::{Header, PAYLOAD_OFFSET};
use crate::index::layer_size;
use crate::progress::Progress;
use crate::rules::{Board, Ruleset};
use crate::storage::private::Sealed;
use crate::storage::{DatabaseDir, FileLayer, Kind, Layer, NoPack, ReadMode};

/// The number of legal moves of `board` under `rules`, from the rules' plain move list.
pub(crate) fn count_moves(rules: Ruleset, board: &Board) -> u8 {
    (0..6).filter(|&pit| rules.play(board, pit).is_some()).count() as u8
}

/// Each position's number of legal moves as a [`Kind`]: `moves-NN.owdb`. Never packed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct MovesKind;

impl Sealed for MovesKind {}

impl Kind for MovesKind {
    const CONTENT: FileContent = FileContent::Moves;
    const CHAINED: bool = false;
    const PACKED: bool = false;
    type Entry = u8;
    type Layout = ();
    type Packed = NoPack<u8>;

    fn layout(path: &Path, n: u32, header: Option<&Header>, len: u64, _read: &dyn Fn(&mut [u8], u64) -> Result<()>) -> Result<()> {
        let want = PAYLOAD_OFFSET + layer_size(header.map_or(n, |h| h.stones));
        if len != want {
            return Err(Error::corrupt(path, Damage::Size { expected: want, found: len }));
        }
        Ok(())
    }

    fn entry(layer: &Layer<MovesKind>, i: u64) -> Result<u8> {
        let size = layer_size(layer.stones());
        layer.bytes().get(i as usize).copied().ok_or(Error::IndexOutOfRange { layer: layer.stones(), index: i, size })
    }

    fn read_entry(file: &FileLayer<MovesKind>, i: u64) -> Result<u8> {
        let size = layer_size(file.stones());
        if i >= size {
            return Err(Error::IndexOutOfRange { layer: file.stones(), index: i, size });
        }
        let mut b = [0u8; 1];
        file.read(&mut b, PAYLOAD_OFFSET + i)?;
        Ok(b[0])
    }

    fn open_packed(_: &DatabaseDir, _: u32, path: &Path, _: File, _: Mmap, _: bool, _: ReadMode) -> Result<NoPack<u8>> {
        Err(Error::corrupt(path, Damage::WrongContent { found: "a pack", expected: "move counts" }))
    }

    fn unpack(_: &DatabaseDir, _: u32, path: &Path, _: File, _: Mmap, _: bool) -> Result<Layer<MovesKind>> {
        Err(Error::corrupt(path, Damage::WrongContent { found: "a pack", expected: "move counts" }))
    }
}

/// Each entry against the count of the position's moves; nothing of the smaller layers is read.
impl Check for MovesKind {
    type Report = EntriesReport;
    type Payload<'a> = &'a [u8];
    type Lower = u8;

    fn payload(file: &Layer<MovesKind>) -> &[u8] {
        file.bytes()
    }

    fn lengths(this: &[u8], n: u32) -> (u64, u64) {
        (this.len() as u64, layer_size(n))
    }

    fn lower_len(_m: u32) -> u64 {
        0
    }

    fn lower_missing(n: u32, m: u32) -> String {
        format!("layer {m} is not needed to check layer {n}'s move counts")
    }

    fn lower<'a>(_values: Option<&'a Layer>, _own: Option<&'a Layer<MovesKind>>) -> Option<&'a [u8]> {
        Some(&[])
    }

    fn check(inputs: &Inputs<'_, MovesKind>, progress: &dyn Progress) -> Result<EntriesReport> {
        let &Inputs { rules, n, this, .. } = inputs;
        let start = Instant::now();
        let walked = check_positions(n, progress, |i, board| {
            let (stored, derived) = (this[i as usize], count_moves(rules, &board));
            (stored != derived).then(|| EntryMismatch { index: i, board, stored: stored.to_string(), derived: derived.to_string() })
        })?;
        Ok(EntriesReport {
            kind: FileContent::Moves,
            layer: n,
            checked: walked.checked,
            mismatches: walked.mismatches,
            first_mismatches: walked.first,
            seconds: start.elapsed().as_secs_f64(),
        })
    }
}
