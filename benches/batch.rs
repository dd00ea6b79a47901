//! Batch probing speed of the Rust library: the values of N boards read from a file (N rows of
//! 12 bytes, mover-first counts), probed in parallel with rayon (`Database::value` per board),
//! as `oware.Database.values` does from Python. `scripts/bench-python` writes the boards and
//! runs this beside the Python call.
//!
//! ```text
//! cargo bench --bench batch -- BOARDS_FILE DIR [RULES]
//! ```

use std::time::Instant;

use oware::probe::Database;
use oware::{Position, Ruleset};
use rayon::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let (Some(file), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("usage: cargo bench --bench batch -- BOARDS_FILE DIR [RULES]");
        return;
    };
    let rules: Ruleset = args.get(2).map_or(Ok(Ruleset::Awari), |r| r.parse()).expect("a ruleset");
    let bytes = std::fs::read(file).expect("boards file");
    let boards: Vec<Position> = bytes.chunks_exact(12).map(|c| Position::new(c.try_into().expect("12")).expect("a board")).collect();
    let db = Database::open(dir, rules).expect("database");
    // Warm-up: open every layer and bring the files into the page cache.
    let warm: i64 = boards.par_iter().map(|p| i64::from(db.value(p).expect("probe"))).sum();
    for round in 0..3 {
        let t = Instant::now();
        let values: Vec<i8> = boards.par_iter().with_min_len(4096).map(|p| db.value(p).expect("probe")).collect();
        let secs = t.elapsed().as_secs_f64();
        let sum: i64 = values.iter().map(|&v| i64::from(v)).sum();
        assert_eq!(sum, warm);
        println!(
            "rust batch round {round}: {} boards in {secs:.3} s = {:.0} boards/s ({} threads)",
            boards.len(),
            boards.len() as f64 / secs,
            rayon::current_num_threads()
        );
    }
}
