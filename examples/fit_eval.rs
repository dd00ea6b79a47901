//! Fits the search's static evaluation on exact database values and measures it (`docs/eval.md`).
//!
//! ```text
//! cargo run --release --example fit_eval -- --dir /work/db --rules awari --train 8..=20 --test 21..=24 \
//!     --sample 200000 [--seed 1] [--ridge 1e-6] [--holdout 0.1] [--emit src/search/weights.rs]
//! ```
//!
//! Samples `--sample` positions at seeded random indices of each layer (the whole layer when it is
//! smaller), fits the weights by least squares on the training layers minus a held-out share of
//! each, and prints, per held-out training layer and per test layer, the mean absolute error, the
//! RMSE, R² and the share of right signs (win, draw or loss for the mover) of the fitted weights,
//! of the weights compiled into the library ("shipped"), of predicting 0 and of material (stones in
//! the mover's row minus the opponent's, times a factor fitted on the same training samples).
//! `--emit` writes the fitted weights as Rust source. Then it times `evaluate`, and prints the
//! spread of its predictions on layers 28, 36 and 44, which have no table. With no training layer
//! (`--train none`) it measures the shipped weights only, the material factor then fitted on the
//! test samples.

use std::process::ExitCode;
use std::time::Instant;

use oware::eval_fit::{self, least_squares, material_factor, measure, predict, predict_shipped, sample_layer, weights_source, Measures, Sample, SplitMix, K};
use oware::{index, Database, Ruleset};

struct Args {
    dir: String,
    rules: Ruleset,
    train: Vec<u32>,
    test: Vec<u32>,
    sample: u64,
    seed: u64,
    ridge: f64,
    holdout: f64,
    emit: Option<String>,
}

fn layers(s: &str) -> Result<Vec<u32>, String> {
    let bad = || format!("bad layer range '{s}' (expected A..=B, A..B or N)");
    if s.is_empty() || s == "none" {
        return Ok(Vec::new());
    }
    let num = |t: &str| t.trim().parse::<u32>().map_err(|_| bad());
    if let Some((a, b)) = s.split_once("..=") {
        Ok((num(a)?..=num(b)?).collect())
    } else if let Some((a, b)) = s.split_once("..") {
        Ok((num(a)?..num(b)?).collect())
    } else {
        Ok(vec![num(s)?])
    }
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        dir: String::new(),
        rules: Ruleset::Awari,
        train: Vec::new(),
        test: Vec::new(),
        sample: 200_000,
        seed: 1,
        ridge: 1e-6,
        holdout: 0.1,
        emit: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--dir" => a.dir = value()?,
            "--rules" => a.rules = value()?.parse()?,
            "--train" => a.train = layers(&value()?)?,
            "--test" => a.test = layers(&value()?)?,
            "--sample" => a.sample = value()?.parse().map_err(|e| format!("--sample: {e}"))?,
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--ridge" => a.ridge = value()?.parse().map_err(|e| format!("--ridge: {e}"))?,
            "--holdout" => a.holdout = value()?.parse().map_err(|e| format!("--holdout: {e}"))?,
            "--emit" => a.emit = Some(value()?),
            "-h" | "--help" => return Err(String::new()),
            _ => return Err(format!("unknown option '{flag}'")),
        }
    }
    if a.dir.is_empty() {
        return Err("--dir is required".into());
    }
    Ok(a)
}

fn row(label: &str, m: &Measures) -> String {
    format!("{label:>9} | {:6.3} | {:6.3} | {:6.3} | {:5.1}%", m.mae, m.rmse, m.r2, 100.0 * m.sign)
}

fn report(title: &str, samples: &[Sample], w: Option<&[f64; K]>, c: f64) {
    let mut lines = vec![format!("{title}: {} positions", samples.len())];
    if let Some(w) = w {
        lines.push(row("fitted", &measure(samples, |s| predict(w, s))));
    }
    lines.push(row("shipped", &measure(samples, predict_shipped)));
    lines.push(row("zero", &measure(samples, |_| 0.0)));
    lines.push(row("material", &measure(samples, |s| (c * f64::from(s.material)).clamp(-f64::from(s.stones), f64::from(s.stones)))));
    println!("{}", lines.join("\n"));
}

fn run(a: &Args) -> Result<(), String> {
    let db = Database::open(&a.dir, a.rules).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let mut fit_set = Vec::new();
    let mut held = Vec::new();
    for &n in &a.train {
        let s = sample_layer(&db, n, a.sample, a.seed).map_err(|e| e.to_string())?;
        // Shuffle-free split: samples are at random indices already, except whole small layers,
        // so take every k-th one out.
        let k = if a.holdout > 0.0 { (1.0 / a.holdout).round().max(2.0) as usize } else { usize::MAX };
        for (i, x) in s.into_iter().enumerate() {
            if i % k == k - 1 {
                held.push(x);
            } else {
                fit_set.push(x);
            }
        }
    }
    let mut tests = Vec::new();
    for &n in &a.test {
        tests.push((n, sample_layer(&db, n, a.sample, a.seed.wrapping_add(1000)).map_err(|e| e.to_string())?));
    }
    eprintln!("sampled in {:.1} s", t0.elapsed().as_secs_f64());
    let (w, c) = if fit_set.is_empty() {
        // Nothing to fit: the material baseline gets its best factor on the test samples.
        let all: Vec<Sample> = tests.iter().flat_map(|(_, t)| t.iter().cloned()).collect();
        (None, material_factor(&all))
    } else {
        let w = least_squares(&fit_set, a.ridge);
        (Some(w), material_factor(&fit_set))
    };
    println!(
        "# rules {}, train {:?} ({} fitted, {} held out), test {:?}, {} per layer, seed {}",
        a.rules,
        a.train,
        fit_set.len(),
        held.len(),
        a.test,
        a.sample,
        a.seed
    );
    println!("# material factor {c:.4}");
    if let Some(w) = &w {
        println!("# weights:");
        for (name, x) in eval_fit::FEATURE_NAMES.iter().zip(w) {
            println!("#   {name:>14} {x:+.5}");
        }
    }
    println!("predictor |    MAE |   RMSE |     R² | sign");
    for &n in &a.train {
        let h: Vec<_> = held.iter().filter(|s| s.stones == n).cloned().collect();
        if !h.is_empty() {
            report(&format!("layer {n} (held out of training)"), &h, w.as_ref(), c);
        }
    }
    for (n, t) in &tests {
        report(&format!("layer {n} (test)"), t, w.as_ref(), c);
    }
    if let (Some(path), Some(w)) = (&a.emit, &w) {
        let args: Vec<String> = std::env::args().skip(1).filter(|x| x != "--emit" && Some(x) != a.emit.as_ref()).collect();
        let how = format!("scripts/fit-eval {} --emit {path}", args.join(" "));
        std::fs::write(path, weights_source(w, &how)).map_err(|e| format!("{path}: {e}"))?;
        eprintln!("wrote {path}");
    }
    // Speed: evaluate on boards of the largest layer asked for.
    let n = a.test.iter().chain(&a.train).copied().max().unwrap_or(12);
    let mut rng = SplitMix(a.seed);
    let boards: Vec<_> = (0..100_000).map(|_| index::unrank_unchecked(n, rng.below(index::layer_size(n)))).collect();
    let t = Instant::now();
    let mut sum = 0i64;
    let rounds = 20;
    for _ in 0..rounds {
        for b in &boards {
            sum += i64::from(eval_fit::evaluate(a.rules, std::hint::black_box(b)));
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!("# evaluate: {:.2} M evaluations/s on layer {n} boards, one thread (checksum {sum})", (rounds * boards.len()) as f64 / secs / 1e6);
    // Above the tables nothing can be measured, but the spread of the predictions can be seen.
    for n in [28u32, 36, 44] {
        let e: Vec<f64> =
            (0..100_000).map(|_| f64::from(eval_fit::evaluate(a.rules, &index::unrank_unchecked(n, rng.below(index::layer_size(n))))) / 100.0).collect();
        let len = e.len() as f64;
        let mean = e.iter().sum::<f64>() / len;
        let sd = (e.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / len).sqrt();
        let clamped = e.iter().filter(|x| x.abs() >= f64::from(n)).count() as f64 / len;
        println!("# layer {n} (no table): predictions mean {mean:+.2}, sd {sd:.2} stones, {:.2}% at the clamp", 100.0 * clamped);
    }
    Ok(())
}

fn main() -> ExitCode {
    match parse() {
        Ok(a) => match run(&a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("fit_eval: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            if !e.is_empty() {
                eprintln!("fit_eval: {e}");
            }
            eprintln!("usage: fit_eval --dir DIR [--rules R] --train A..=B [--test C..=D] [--sample N] [--seed S] [--ridge L] [--holdout F] [--emit FILE]");
            ExitCode::from(2)
        }
    }
}
