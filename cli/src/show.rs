//! How the program shows positions and the engine's scores and lines: the words every command
//! that shows them shares (`analyse`, `moves`, `play`, the server).

use oware::position::{house, Position, Side};
use oware::search::ScoreBound;

/// A position drawn for people, with its South/North labels and house names: mover-first counts
/// name no side, and then South is to move.
pub fn draw(pos: &Position, side: Option<Side>) -> String {
    pos.drawing_sides(side.unwrap_or(Side::South))
}

/// A score in stones, signed, as people read it: `+3`, `-1.25`.
pub fn stones(centi: i32) -> String {
    if centi % 100 == 0 {
        format!("{:+}", centi / 100)
    } else {
        format!("{:+.2}", f64::from(centi) / 100.0)
    }
}

/// The line as house letters, each ply in the letters of the side that plays it.
pub fn line_houses(pv: &[u8], side: Side) -> Vec<String> {
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
pub fn bound_name(b: ScoreBound) -> &'static str {
    match b {
        ScoreBound::Equal => "exact",
        ScoreBound::Upper => "upper",
        ScoreBound::Lower => "lower",
    }
}
