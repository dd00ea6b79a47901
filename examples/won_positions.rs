//! Prints won positions as fens (`A-B-C-D-E-F-a-b-c-d-e-f-SouthStore-NorthStore-S`), South to
//! move: positions of the given layers that South wins under best play, with a depth to capture
//! of at least `MIN_DTC` plies, and stores that make the win a win of the game. They are the
//! start positions of `scripts/match --fens`, to check that an engine converts what it wins.
//!
//! ```sh
//! cargo run --release --example won_positions -- databases awari 10..=14 100 10 > won.fens
//! scripts/match "target/release/oware engine" "target/release/oware engine" \
//!     --fens won.fens --single --movetime 100 --json converted.json
//! ```
//!
//! The sample is seeded (the same every run) and spread evenly over the layers. The layers and
//! their dtc files must be built (`oware build --max-stones 14 --dtc`).

use oware::index::unrank;
use oware::{Database, Position, Ruleset};

#[path = "../tests/common/splitmix.rs"]
mod splitmix;
use splitmix::splitmix;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        return Err("usage: won_positions DIR RULES FIRST..=LAST COUNT MIN_DTC".into());
    }
    let rules: Ruleset = args[1].parse()?;
    let db = Database::open(&args[0], rules)?;
    let (first, last) = args[2].split_once("..=").ok_or("layers are FIRST..=LAST")?;
    let (first, last): (u32, u32) = (first.parse()?, last.parse()?);
    let count: usize = args[3].parse()?;
    let min_dtc: u16 = args[4].parse()?;
    let layers: Vec<u32> = (first..=last).collect();
    let mut x = 0x0A7A_2002u64;
    let mut found = vec![0usize; layers.len()];
    let mut tries = 0u64;
    while found.iter().sum::<usize>() < count {
        tries += 1;
        if tries > 50_000_000 {
            return Err(format!("only {} such positions found", found.iter().sum::<usize>()).into());
        }
        // The layer with the fewest so far.
        let i = (0..layers.len()).min_by_key(|&i| found[i]).unwrap_or(0);
        let n = layers[i];
        x = splitmix(x);
        let len = db.layer(n)?.len();
        let p = Position::new(unrank(n, x % len)?)?;
        let v = db.value(&p)?;
        // The stores: what is not on the board, shared as evenly as can be, the odd stone to
        // North; South then wins the game when he wins the board by 2 or more (1 with an even
        // split).
        let left = 48 - n;
        let (south, north) = (left / 2, left - left / 2);
        if i32::from(v) + south as i32 - north as i32 <= 0 {
            continue;
        }
        if db.dtc(&p)?.map_or(true, |d| d < min_dtc) {
            continue;
        }
        found[i] += 1;
        let b = p.board();
        let pits: Vec<String> = b.iter().map(|c| c.to_string()).collect();
        println!("{}-{south}-{north}-S", pits.join("-"));
    }
    Ok(())
}
