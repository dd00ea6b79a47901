//! `oware index`: the layer and index of a position, or the board at an index of a layer.
//!
//! The index is the position's rank in its layer in the byte order of the published 2002
//! databases (`docs/indexing.md`): `scores.N` holds the value of the board with
//! index `i` at byte offset `i`.

use clap::Args;
use oware::index::{in_some_layer, layer_size, rank, unrank, MAX_STONES};
use oware::{Error, Position, Result};
use serde::Serialize;

use crate::args::{reword, PositionArgs, PositionCommandArgs};
use crate::output::{Stdout, SCHEMA_VERSION};

/// Arguments of `oware index`.
#[derive(Args, Debug)]
#[command(mut_args(reword(&[("json", "Print one JSON object (`schema_version`, `layer`, `index`, `layer_size`, `board`)"), ("quiet", "No messages besides errors (this command prints none)")])))]
pub(crate) struct IndexArgs {
    /// The position to look up (12 mover-first counts, or --south/--north/--to-move).
    #[command(flatten)]
    position: PositionArgs,
    /// Layer (stone count, 0..48) of the board to print; with --at, instead of a position.
    #[arg(long, value_name = "N", requires = "at")]
    layer: Option<u32>,
    /// Index in the layer of the board to print (0 = first); with --layer.
    #[arg(long, value_name = "I", requires = "layer")]
    at: Option<u64>,
    // The ruleset is accepted for symmetry with the other commands: the index order is the same
    // under every ruleset.
    #[command(flatten)]
    options: PositionCommandArgs,
}

/// What `oware index` reports: a board, its layer and its index there.
struct Located {
    position: Position,
    layer: u32,
    index: u64,
}

/// Runs `oware index`: looks up the position given, or prints the board at `--layer N --at I`.
///
/// Cost: one rank or unrank (well under a microsecond) and one line of output.
///
/// # Errors
/// [`Error::Usage`] when both or neither of a position and `--layer/--at` are given, or for a
/// layer above 48; [`Error::InvalidPosition`] for a malformed position; [`Error::NotInLayer`]
/// for a position in no layer (its opponent row has no empty pit, like the start position);
/// [`Error::IndexOutOfRange`] for an index past the end of the layer; [`Error::Io`] when
/// standard output cannot be written.
pub(crate) fn run(a: IndexArgs) -> Result<()> {
    let given = a.position.position()?;
    let found = match (given, a.layer, a.at) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => return Err(Error::Usage("give either a position or --layer N --at I, not both".into())),
        (Some(position), None, None) => locate(position)?,
        (None, Some(layer), Some(index)) => board_at(layer, index)?,
        // clap makes --layer and --at require each other.
        (None, _, _) => return Err(Error::Usage("give a position (12 counts, or --south/--north/--to-move), or --layer N --at I".into())),
    };
    let _ = a.options.rules.ruleset();
    let mut out = Stdout::new();
    if a.options.json.json {
        out.json(&json_report(&found))
    } else {
        out.write(&text_report(&found))
    }
}

/// The layer and index of a position.
fn locate(position: Position) -> Result<Located> {
    let board = position.board();
    let layer = position.stones();
    if !in_some_layer(board) {
        return Err(Error::NotInLayer { layer, stones: layer });
    }
    let index = rank(board)?;
    Ok(Located { position, layer, index })
}

/// The board at `index` of `layer`.
fn board_at(layer: u32, index: u64) -> Result<Located> {
    if layer > MAX_STONES {
        return Err(Error::Usage(format!("--layer {layer}: layers go from 0 to {MAX_STONES} stones")));
    }
    let position = Position::new(unrank(layer, index)?)?;
    Ok(Located { position, layer, index })
}

fn text_report(f: &Located) -> String {
    format!(
        "layer {} index {} (of {} boards)\nposition {}\n{}",
        f.layer,
        f.index,
        layer_size(f.layer),
        f.position,
        f.position.drawing_sides(oware::position::Side::South)
    )
}

/// `oware index --json`.
#[derive(Serialize)]
struct IndexDoc {
    schema_version: u32,
    layer: u32,
    index: u64,
    layer_size: u64,
    /// Mover-first counts.
    board: [u8; 12],
}

fn json_report(f: &Located) -> IndexDoc {
    IndexDoc { schema_version: SCHEMA_VERSION, layer: f.layer, index: f.index, layer_size: layer_size(f.layer), board: *f.position.board() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn located(s: &str) -> Result<Located> {
        locate(s.parse()?)
    }

    #[test]
    fn locate_and_board_at_agree() {
        let f = located("1 1 1 1 1 2 4 2 3 0 0 0").unwrap();
        assert_eq!(f.layer, 16);
        let g = board_at(16, f.index).unwrap();
        assert_eq!(g.position, f.position);
        // The first and last boards of a layer.
        assert_eq!(board_at(5, 0).unwrap().position.board(), &[5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let last = board_at(5, layer_size(5) - 1).unwrap();
        assert_eq!(last.position.board(), &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5]);
        assert_eq!(located("0 0 0 0 0 0 0 0 0 0 0 5").unwrap().index, layer_size(5) - 1);
    }

    #[test]
    fn positions_outside_every_layer_and_bad_indices_are_errors() {
        let start = located("4 4 4 4 4 4 4 4 4 4 4 4");
        assert!(matches!(start, Err(Error::NotInLayer { layer: 48, .. })), "{:?}", start.err());
        assert!(matches!(board_at(3, layer_size(3)), Err(Error::IndexOutOfRange { .. })));
        assert!(matches!(board_at(49, 0), Err(Error::Usage(_))));
    }

    #[test]
    fn reports_carry_the_numbers() {
        let f = board_at(2, 5).unwrap();
        let v = serde_json::to_value(json_report(&f)).unwrap();
        assert_eq!(v["layer"], 2);
        assert_eq!(v["index"], 5);
        assert_eq!(v["layer_size"], 78);
        assert_eq!(v["board"].as_array().map(Vec::len), Some(12));
        let t = text_report(&f);
        assert!(t.starts_with("layer 2 index 5 (of 78 boards)\nposition "), "{t}");
        assert!(t.contains("to move"), "{t}");
    }
}
