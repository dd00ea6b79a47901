//! Packs: size against raw and probe speed, side by side with the native files, for several
//! block sizes (the trade-off behind `oware::pack::BLOCK_VALUES`), each in codec 2 (every value as
//! it is, rANS; blocks of 64 values or more) and over floors (what `oware pack` writes: codec 6,
//! range-coded, for blocks of up to 128 values; codec 4, rANS, above).
//!
//! ```text
//! cargo bench --bench pack [-- MAX [RULES...]]      (defaults: 24 awari abapa)
//! OWARE_BENCH_BLOCKS=192,240,256 cargo bench --bench pack     (other block sizes)
//! ```
//!
//! Reads the native layers 0..=MAX of each ruleset from `$OWARE_BENCH_DIR` (default
//! `databases`); a ruleset whose layers are not all there is skipped with a message. For each
//! block size it packs the layers into a temporary directory and prints: pack bytes as a share
//! of the raw bytes (one per position), packing seconds, then random single-position probes per
//! second on one thread (`Database::value` on positions drawn uniformly from all positions of
//! layers 0..=MAX), cold (pack pages evicted from the page cache with `posix_fadvise`, a fresh
//! `Database`: model loading and first checksum checks included) and warm (the same positions
//! again). The native files are timed the same way on the same positions, and a zstd column
//! (independent 4 KiB blocks at levels 3 and 19, size only) shows what a general-purpose block
//! compressor gives on the same bytes.
//!
//! When the depths to capture of every layer 0..=MAX are there too (`dtc-NN.owdb`), it packs them
//! as well (`OWARE_BENCH_DTC_BLOCKS`, default `256,512` depths per block, beside values packs of
//! 256) and prints their share of the dtc files' bytes, zstd-19's on 4 KiB blocks, and warm
//! `Database::dtc` probes per second from the native files and from the packs
//! ([`DTC_PROBES`] random positions).
//!
//! The row "floors alone, native" gives the floors of the same positions per second, warm, with
//! their capturing children read from the native files: the work a probe of any pack over floors
//! does besides decoding its own value, whatever the pack's layout.

#[path = "../tests/common/splitmix.rs"]
mod splitmix;
use splitmix::SplitMix64;

use std::path::{Path, PathBuf};
use std::time::Instant;

use oware::index::{layer_size, unrank_unchecked};
use oware::pack::{floors, pack, pack_floored, PackOptions};
use oware::probe::Database;
use oware::storage::{pack_path, DatabaseDir, DtcKind, Format, ValuesKind};
use oware::{Position, Ruleset};

const PROBES: usize = 1_000_000;
const DTC_PROBES: usize = 100_000;

fn positions(max: u32, count: usize) -> Vec<Position> {
    let total: u64 = (0..=max).map(layer_size).sum();
    let mut rng = SplitMix64(0x5eed);
    (0..count)
        .map(|_| {
            let mut i = rng.below(total);
            let mut n = 0;
            while i >= layer_size(n) {
                i -= layer_size(n);
                n += 1;
            }
            Position::new(unrank_unchecked(n, i)).expect("a layer's board")
        })
        .collect()
}

fn evict(path: &Path) {
    if let Ok(f) = std::fs::File::open(path) {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a plain system call on a file descriptor we own.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
}

/// Probes per second: (cold, warm), and a checksum of the values so nothing is optimised away.
fn probe(dir: &Path, rules: Ruleset, files: &[PathBuf], pos: &[Position]) -> (f64, f64, i64) {
    for f in files {
        evict(f);
    }
    let db = Database::open(dir, rules).expect("open").verify_checksums(false);
    let mut sum = 0i64;
    let t = Instant::now();
    for p in pos {
        sum += i64::from(db.value(p).expect("probe"));
    }
    let cold = pos.len() as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut sum2 = 0i64;
    for p in pos {
        sum2 += i64::from(db.value(p).expect("probe"));
    }
    let warm = pos.len() as f64 / t.elapsed().as_secs_f64();
    assert_eq!(sum, sum2);
    (cold, warm, sum)
}

/// Warm floors per second (after one pass): each position's floor (`oware::pack::floor`: a move
/// generation, and its capturing children's values) from the native files, what any pack over
/// floors pays on top of its own decoding, whatever its layout.
fn floors_native(dir: &Path, rules: Ruleset, pos: &[Position]) -> f64 {
    let db = Database::open(dir, rules).expect("open").verify_checksums(false);
    let pass = || {
        pos.iter()
            .map(|p| i64::from(oware::pack::floor(rules, p.board(), |c| db.value(&Position::new(*c).expect("a child"))).expect("floor").max(-100)))
            .sum::<i64>()
    };
    let sum = pass();
    let t = Instant::now();
    assert_eq!(pass(), sum);
    pos.len() as f64 / t.elapsed().as_secs_f64()
}

/// Warm `Database::dtc` probes per second (after one pass), and a checksum of the depths.
fn probe_dtc(dir: &Path, rules: Ruleset, pos: &[Position]) -> (f64, u64) {
    let db = Database::open(dir, rules).expect("open").verify_checksums(false);
    let pass = || pos.iter().map(|p| u64::from(db.dtc(p).expect("dtc").unwrap_or(0))).sum::<u64>();
    let sum = pass();
    let t = Instant::now();
    assert_eq!(pass(), sum);
    (pos.len() as f64 / t.elapsed().as_secs_f64(), sum)
}

/// The depths section: packs of the dtc files of layers 0..=max at each block size.
fn depths(base: &Path, rules: Ruleset, src: &DatabaseDir, layers: &[oware::storage::Layer], max: u32) {
    let dtc: Vec<_> = match (0..=max).map(|n| src.open_layer::<DtcKind>(n, true)).collect::<oware::Result<Vec<_>>>() {
        Ok(d) => d,
        Err(e) => {
            println!("{rules}: depths skipped ({e})");
            return;
        }
    };
    let blocks: Vec<u32> = match std::env::var("OWARE_BENCH_DTC_BLOCKS") {
        Ok(list) => list.split(',').map(|b| b.trim().parse().expect("OWARE_BENCH_DTC_BLOCKS: block sizes like 256,512")).collect(),
        Err(_) => vec![256, 512],
    };
    let raw: u64 = dtc.iter().map(|d| d.bytes().len() as u64).sum();
    let z: u64 = dtc.iter().map(|d| zstd_blocks(d.bytes(), 19)).sum();
    let pos = &positions(max, DTC_PROBES);
    let (native, want) = probe_dtc(base, rules, pos);
    println!("\n{rules}: depths of layers 0..={max}, {raw} bytes of dtc payloads");
    println!("{:<22} {:>12} {:>7} {:>9} {:>13}", "variant", "bytes", "of raw", "pack s", "warm dtc/s");
    println!("{:<22} {raw:>12} {:>6.1}% {:>9} {native:>13.0}", "native (one byte each)", 100.0, "-");
    println!("{:<22} {z:>12} {:>6.1}% {:>9} {:>13}", "zstd-19, 4 KiB blocks", 100.0 * z as f64 / raw as f64, "-", "-");
    for &block in &blocks {
        let tmp = tempfile::tempdir().expect("tmp");
        let dst = DatabaseDir::new(Format::Native, tmp.path(), rules).expect("dir");
        dst.create().expect("create");
        let mut bytes = 0;
        let t = Instant::now();
        for (l, d) in layers.iter().zip(&dtc) {
            let n = l.stones();
            let path = pack_path::<ValuesKind>(tmp.path(), rules, n);
            let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
            pack(l.header().expect("native header"), l.bytes(), l.bytes(), PackOptions::default(), &mut f, &path, l.path()).expect("pack");
            drop(f);
            let path = pack_path::<DtcKind>(tmp.path(), rules, n);
            let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
            bytes += pack(d.header().expect("native header"), d.bytes(), l.bytes(), PackOptions { block_values: block }, &mut f, &path, d.path())
                .expect("pack dtc")
                .bytes;
        }
        let secs = t.elapsed().as_secs_f64();
        let (warm, sum) = probe_dtc(tmp.path(), rules, pos);
        assert_eq!(sum, want, "packed depths differ from native");
        let name = format!("rANS pack, {block} depths");
        println!("{name:<22} {bytes:>12} {:>6.1}% {secs:>9.1} {warm:>13.0}", 100.0 * bytes as f64 / raw as f64);
    }
}

fn zstd_blocks(values: &[u8], level: i32) -> u64 {
    use rayon::prelude::*;
    values.par_chunks(4096).map(|c| zstd::bulk::compress(c, level).map_or(c.len(), |z| z.len()) as u64).sum()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let max: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(24);
    let rulesets: Vec<Ruleset> = if args.len() > 1 {
        args[1..].iter().map(|r| r.parse().expect("a ruleset name")).collect()
    } else {
        vec![Ruleset::Awari, "abapa".parse().expect("abapa")]
    };
    let base = PathBuf::from(std::env::var_os("OWARE_BENCH_DIR").unwrap_or_else(|| "databases".into()));
    let blocks: Vec<u32> = match std::env::var("OWARE_BENCH_BLOCKS") {
        Ok(list) => list.split(',').map(|b| b.trim().parse().expect("OWARE_BENCH_BLOCKS: block sizes like 192,256")).collect(),
        Err(_) => vec![32, 64, 128, 256, 512],
    };
    let pos = positions(max, PROBES);
    println!("pack bench: layers 0..={max} of {}, {PROBES} random probes on one thread", base.display());
    for rules in rulesets {
        let src = DatabaseDir::new(Format::Native, &base, rules).expect("dir");
        let layers: Vec<_> = match (0..=max).map(|n| src.open_layer::<ValuesKind>(n, true)).collect::<oware::Result<Vec<_>>>() {
            Ok(l) => l,
            Err(e) => {
                println!("{rules}: skipped ({e})");
                continue;
            }
        };
        let raw: u64 = layers.iter().map(|l| l.bytes().len() as u64).sum();
        println!("\n{rules}: layers 0..={max}, {raw} raw bytes");
        let native_files: Vec<PathBuf> = (0..=max).map(|n| src.path::<ValuesKind>(n)).collect();
        let (cold, warm, want) = probe(&base, rules, &native_files, &pos);
        println!("{:<22} {:>12} {:>7} {:>9} {:>13} {:>13}", "variant", "bytes", "of raw", "pack s", "cold probe/s", "warm probe/s");
        println!("{:<22} {:>12} {:>6.1}% {:>9} {:>13.0} {:>13.0}", "native (uncompressed)", raw + 4096 * u64::from(max + 1), 100.0, "-", cold, warm);
        let floors_per_s = floors_native(&base, rules, &pos);
        println!("{:<22} {:>12} {:>7} {:>9} {:>13} {:>13.0}", "floors alone, native", "-", "-", "-", "-", floors_per_s);
        for level in [3, 19] {
            let t = Instant::now();
            let z: u64 = layers.iter().map(|l| zstd_blocks(l.bytes(), level)).sum();
            let name = format!("zstd-{level}, 4 KiB blocks");
            println!("{name:<22} {z:>12} {:>6.1}% {:>9.1} {:>13} {:>13}", 100.0 * z as f64 / raw as f64, t.elapsed().as_secs_f64(), "-", "-");
        }
        for &block in &blocks {
            // Codec 2 (every value as it is) and values over their floors (codec 6 or 4) side by
            // side.
            for over_floors in [false, true] {
                if !over_floors && block < 64 {
                    continue;
                }
                let tmp = tempfile::tempdir().expect("tmp");
                let dst = DatabaseDir::new(Format::Native, tmp.path(), rules).expect("dir");
                dst.create().expect("create");
                let t = Instant::now();
                let mut bytes = 0;
                let mut files = Vec::new();
                for l in &layers {
                    let path = pack_path::<ValuesKind>(tmp.path(), rules, l.stones());
                    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
                    let header = l.header().expect("native header");
                    let options = PackOptions { block_values: block };
                    bytes += if over_floors {
                        let child = |c: &oware::rules::Board| layers[oware::rules::stones(c) as usize].get(oware::index::rank(c)?);
                        let fl = floors(rules, l.stones(), &child).expect("floors");
                        let mut stored = vec![0u8; fl.len()];
                        pack_floored(header, l.bytes(), &fl, &mut stored, options, &|_| {}, &mut f, &path, l.path()).expect("pack").bytes
                    } else {
                        pack(header, l.bytes(), l.bytes(), options, &mut f, &path, l.path()).expect("pack").bytes
                    };
                    drop(f);
                    files.push(path);
                }
                let secs = t.elapsed().as_secs_f64();
                let (cold, warm, sum) = probe(tmp.path(), rules, &files, &pos);
                assert_eq!(sum, want, "pack values differ from native");
                let name = match (over_floors, block <= oware::pack::RANGE_BLOCK_MAX) {
                    (false, _) => format!("rANS pack, {block}"),
                    (true, true) => format!("range, floors, {block}"),
                    (true, false) => format!("rANS, floors, {block}"),
                };
                println!("{name:<22} {bytes:>12} {:>6.1}% {secs:>9.1} {cold:>13.0} {warm:>13.0}", 100.0 * bytes as f64 / raw as f64);
            }
        }
        depths(&base, rules, &src, &layers, max);
    }
}
