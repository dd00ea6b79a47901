//! Accuracy of the search engine above its tables, measured against exact layers.
//!
//! ```text
//! cargo run --release --example engine_accuracy -- DIR RULES TABLES LAYERS COUNT MS[,MS...] [--no-tables] [--threads T]
//! e.g.  DIR=databases awari 20 21..=24 1000 100,300,1000
//! ```
//!
//! Samples COUNT positions (seeded, deterministic) evenly from LAYERS with a non-zero exact value,
//! lets the engine (probing layers 0..=TABLES only, or none with `--no-tables`) choose a move in
//! MS milliseconds, and prints, per time control, the share of chosen moves that are
//! value-optimal by the full layers, the exact claims and whether every one equals the true
//! value, the mean depth and speed. Also prints the depth and speed reached in 1 s from the start
//! position on 1 and 2 threads.

use std::sync::Arc;
use std::time::Duration;

use oware::index::unrank;
use oware::search::{Control, Engine, Limits, Root};
use oware::{Database, Position, Ruleset};

#[path = "../tests/common/splitmix.rs"]
mod splitmix;
use splitmix::splitmix;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 6 {
        eprintln!("usage: engine_accuracy DIR RULES TABLES LAYERS(a..=b) COUNT MS[,MS..] [--no-tables] [--threads T]");
        std::process::exit(2);
    }
    let rules: Ruleset = args[1].parse()?;
    let db = Arc::new(Database::open(&args[0], rules)?);
    let tables: u32 = args[2].parse()?;
    let (a, b) = args[3].split_once("..=").ok_or("LAYERS is a..=b")?;
    let (lo, hi): (u32, u32) = (a.parse()?, b.parse()?);
    let count: usize = args[4].parse()?;
    let times: Vec<u64> = args[5].split(',').map(str::parse).collect::<Result<_, _>>()?;
    let no_tables = args.iter().any(|a| a == "--no-tables");
    let threads: usize = args.iter().position(|a| a == "--threads").and_then(|i| args.get(i + 1)).map_or(Ok(1), |t| t.parse())?;

    // Speed from the start position.
    if !no_tables {
        for t in [1usize, 2] {
            let mut e = Engine::new(rules, Some(db.clone()), Some(tables))?;
            e.set_threads(t);
            let r = e.search(
                &Root::new(Position::start()),
                &Limits { movetime: Some(Duration::from_secs(1)), ..Default::default() },
                &Control::new(),
                &mut |_| {},
            )?;
            println!(
                "start position, 1 s, {t} thread(s): depth {} (sel {}), {} nodes, {:.0} nodes/s, {:.2} s",
                r.depth,
                r.seldepth,
                r.nodes,
                r.nps(),
                r.seconds
            );
        }
    }

    // The sample: evenly over the layers, non-zero values, legal moves.
    let mut sample = Vec::with_capacity(count);
    let mut x = 0x5EED_2026u64;
    let layers: Vec<u32> = (lo..=hi).collect();
    while sample.len() < count {
        let n = layers[sample.len() % layers.len()];
        x = splitmix(x);
        let len = db.layer(n)?.len();
        let p = Position::new(unrank(n, x % len)?)?;
        let v = db.value(&p)?;
        if v != 0 && !rules.moves(p.board()).is_empty() {
            sample.push((p, v));
        }
    }

    let mut engine = Engine::new(rules, if no_tables { None } else { Some(db.clone()) }, Some(tables))?;
    engine.set_threads(threads);
    let label = if no_tables { "evaluation alone".to_string() } else { format!("tables 0..={tables}") };
    for &ms in &times {
        let (mut optimal, mut claims, mut wrong, mut depth, mut nodes, mut secs) = (0usize, 0usize, 0usize, 0u64, 0u64, 0f64);
        let mut per_layer = vec![(0usize, 0usize); layers.len()];
        for (i, (p, v)) in sample.iter().enumerate() {
            engine.clear();
            let r = engine.search(&Root::new(*p), &Limits { movetime: Some(Duration::from_millis(ms)), ..Default::default() }, &Control::new(), &mut |_| {})?;
            let best = r.best_pit.ok_or("no move")?;
            let values = db.move_values(p)?;
            let good = values.iter().any(|m| m.pit == best && m.value == *v);
            optimal += usize::from(good);
            let l = &mut per_layer[i % layers.len()];
            l.0 += 1;
            l.1 += usize::from(good);
            if r.exact {
                claims += 1;
                if r.score != i32::from(*v) * 100 {
                    wrong += 1;
                    eprintln!("WRONG exact claim: {p} score {} true {v}", r.score);
                }
            }
            depth += u64::from(r.depth);
            nodes += r.nodes;
            secs += r.seconds;
        }
        let n = sample.len() as f64;
        let layer_text: Vec<String> = layers.iter().zip(&per_layer).map(|(l, (c, g))| format!("{l}: {:.1}%", 100.0 * *g as f64 / *c as f64)).collect();
        println!(
            "{label}, {ms} ms, {threads} thread(s): {}/{} optimal ({:.1}%) [{}]; exact claims {claims}, wrong {wrong}; mean depth {:.1}, {:.0} nodes/s",
            optimal,
            sample.len(),
            100.0 * optimal as f64 / n,
            layer_text.join(", "),
            depth as f64 / n,
            nodes as f64 / secs.max(1e-9)
        );
    }
    Ok(())
}
