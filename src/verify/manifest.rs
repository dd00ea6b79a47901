//! The `SHA256SUMS` manifest of a pack directory: one line per pack file, `HEX  RULES/layer-NN.owpk`
//! (the format of `sha256sum`, so `sha256sum -c SHA256SUMS` checks a downloaded set too).
//!
//! `oware pack` updates it with [`update`]: under a lock (`.SHA256SUMS.lock` beside it, so
//! concurrent runs into one directory take turns), the lines of the files just written replace
//! theirs, every other line is kept while its file still has its digest, and the result is
//! written atomically. `oware verify` checks the lines of its ruleset with [`check`]: every
//! listed file present with that digest, and no pack file left unlisted.
//!
//! Every file is opened as a regular file only (a FIFO, device or directory is refused, never
//! read), and hashing checks the caller's [`Progress`] for cancellation between blocks.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Damage, Error, Result};
use crate::progress::Progress;
use crate::rules::Ruleset;
use crate::storage::{open_regular, open_regular_rw, write_atomic};

/// The manifest's file name, in the pack directory.
pub(crate) const MANIFEST: &str = "SHA256SUMS";

/// The lock file [`update`] holds while it reads, merges and writes the manifest.
pub(crate) const MANIFEST_LOCK: &str = ".SHA256SUMS.lock";

/// The largest manifest read: far above the 4 rulesets × 49 layers × 90 bytes a real one holds.
pub(crate) const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// Bytes hashed between two checks for cancellation.
const HASH_BLOCK: usize = 1 << 20;

/// One manifest line: a digest and a path relative to the pack directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The SHA-256 of the file, 64 lower-case hex digits.
    pub sha256: String,
    /// `RULES/layer-NN.owpk`.
    pub path: String,
}

/// The SHA-256 of a regular file, as 64 lower-case hex digits.
///
/// Cost: one sequential read of the file; `progress` is told of the bytes read and asked
/// whether to stop after each megabyte.
///
/// # Errors
/// [`Error::NotAFile`] for a FIFO, device, directory or other non-regular file (never opened
/// for reading, so never blocked on); [`Error::Io`] when it cannot be read;
/// [`Error::Interrupted`] when `progress` cancels.
pub fn sha256_file(path: &Path, progress: &dyn Progress) -> Result<String> {
    let mut f = open_regular(path, || Error::io(path, std::io::ErrorKind::NotFound.into()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; HASH_BLOCK];
    loop {
        if progress.cancelled() {
            return Err(Error::Interrupted);
        }
        let k = match f.read(&mut buf) {
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        progress.advance(k as u64);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `rel` is a path a manifest may name: `RULES/layer-NN.owpk` (a pack),
/// `RULES/dtc-NN.owpk` (a layer's depths to capture packed beside it) or `RULES/dtc-NN.owdb`
/// (depths carried unpacked, as packs made before depths were packed hold them) with a known
/// ruleset and `NN` of two digits (nothing absolute, no `..`, no other file).
fn acceptable(rel: &str) -> bool {
    is_pack_name(rel) || named(rel, "dtc-", ".owpk") || named(rel, "dtc-", ".owdb")
}

/// Whether `rel` is `RULES/layer-NN.owpk`.
fn is_pack_name(rel: &str) -> bool {
    named(rel, "layer-", ".owpk")
}

fn named(rel: &str, prefix: &str, suffix: &str) -> bool {
    let Some((rules, name)) = rel.split_once('/') else { return false };
    // The exact directory name of a ruleset: not the parser's aliases, case or blanks.
    Ruleset::ALL.iter().any(|r| r.name() == rules)
        && name.strip_prefix(prefix).and_then(|r| r.strip_suffix(suffix)).is_some_and(|nn| nn.len() == 2 && nn.bytes().all(|b| b.is_ascii_digit()))
}

/// Parses the text of a manifest (the bytes of a `SHA256SUMS`).
///
/// # Errors
/// A description naming the first bad line (1-based) for anything that is not
/// `HEX  RULES/layer-NN.owpk` lines (blank lines are skipped), or for text that is not UTF-8.
pub fn parse(bytes: &[u8]) -> std::result::Result<Vec<Entry>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let bad = |why: &str| format!("line {}: {why}", i + 1);
        // `HEX  PATH` (text mode) or `HEX *PATH` (binary mode, `sha256sum -b`): one space,
        // then a space or a star before the path.
        let (hex, rest) = line.split_once(' ').ok_or_else(|| bad("expected 'SHA256  PATH' or 'SHA256 *PATH'"))?;
        let rel = rest.strip_prefix(' ').or_else(|| rest.strip_prefix('*')).ok_or_else(|| bad("expected 'SHA256  PATH' or 'SHA256 *PATH'"))?;
        let rel = rel.strip_prefix('*').unwrap_or(rel);
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("the digest is not 64 hex digits"));
        }
        if !acceptable(rel) {
            return Err(bad(&format!("'{}' is not a pack file name (RULES/layer-NN.owpk)", rel.escape_debug())));
        }
        entries.push(Entry { sha256: hex.to_ascii_lowercase(), path: rel.to_string() });
    }
    Ok(entries)
}

/// The text of a manifest listing `entries` in their order: what [`parse`] reads back.
pub fn render(entries: &[Entry]) -> String {
    entries.iter().map(|e| format!("{}  {}\n", e.sha256, e.path)).collect()
}

/// Reads the manifest of pack directory `dir`: `None` when there is none.
///
/// # Errors
/// [`Error::Corrupt`] (naming the line) for a line that is not `HEX  RULES/layer-NN.owpk`, or a
/// manifest over `MAX_MANIFEST_BYTES` (1 MiB); [`Error::NotAFile`] when `SHA256SUMS` is not a regular
/// file; [`Error::Io`] when it cannot be read.
pub fn read(dir: &Path) -> Result<Option<Vec<Entry>>> {
    let path = dir.join(MANIFEST);
    let file = match open_regular(&path, || Error::Internal(String::new())) {
        Ok(f) => f,
        Err(Error::Internal(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let bad = |what: String| Error::corrupt(&path, Damage::Manifest { what });
    let mut text = Vec::new();
    file.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut text).map_err(|e| Error::io(&path, e))?;
    if text.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(bad(format!("larger than {MAX_MANIFEST_BYTES} bytes: not a manifest of pack files")));
    }
    parse(&text).map(Some).map_err(bad)
}

/// A manifest line [`update`] dropped: its file is gone or no longer has the listed digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The line's path, relative to the pack directory.
    pub path: String,
    /// Why: "missing", "not a regular file" or "its SHA-256 differs".
    pub why: &'static str,
}

/// What [`update`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Updated {
    /// The manifest's path.
    pub path: PathBuf,
    /// The lines it lists.
    pub lines: usize,
    /// The earlier lines dropped because their files changed or went away.
    pub dropped: Vec<Dropped>,
}

/// Merges `entries` (files just written) into `dir`'s manifest: under the manifest's lock, each
/// entry replaces the line of its path; every other line is kept while its file is a regular
/// file with that digest (re-hashed), and dropped otherwise; the lines are sorted by path and
/// written atomically. Two runs into one directory (different rulesets, or different layers of
/// one) therefore lose none of each other's lines.
///
/// Cost: one SHA-256 pass over every file listed and not in `entries`; waits while another
/// process holds the lock (checking `progress` for cancellation).
///
/// # Errors
/// As [`read`] for the existing manifest; [`Error::Io`] when the lock or manifest cannot be
/// written (or the lock is a link); [`Error::NotAFile`] when the lock's name holds something
/// other than a regular file (never opened); [`Error::Interrupted`] when `progress` cancels
/// (the manifest is then unchanged).
pub fn update(dir: &Path, entries: &[Entry], progress: &dyn Progress) -> Result<Updated> {
    let lock_path = dir.join(MANIFEST_LOCK);
    let lock: File = open_regular_rw(&lock_path)?;
    if !crate::sys::lock_exclusive_waiting(&lock, &|| progress.cancelled()).map_err(|e| Error::io(&lock_path, e))? {
        return Err(Error::Interrupted);
    }
    let mut merged: BTreeMap<String, String> = BTreeMap::new();
    let mut dropped = Vec::new();
    for old in read(dir)?.unwrap_or_default() {
        if entries.iter().any(|e| e.path == old.path) || merged.contains_key(&old.path) {
            continue;
        }
        let file = dir.join(&old.path);
        let why = match sha256_file(&file, progress) {
            Ok(got) if got == old.sha256 => None,
            Ok(_) => Some("its SHA-256 differs"),
            Err(Error::Interrupted) => return Err(Error::Interrupted),
            Err(Error::NotAFile { .. }) => Some("not a regular file"),
            Err(_) if std::fs::symlink_metadata(&file).is_err() => Some("missing"),
            Err(e) => return Err(e),
        };
        match why {
            None => {
                merged.insert(old.path, old.sha256);
            }
            Some(why) => dropped.push(Dropped { path: old.path, why }),
        }
    }
    for e in entries {
        merged.insert(e.path.clone(), e.sha256.clone());
    }
    let all: Vec<Entry> = merged.into_iter().map(|(path, sha256)| Entry { sha256, path }).collect();
    let path = dir.join(MANIFEST);
    write_atomic(&path, render(&all).as_bytes())?;
    drop(lock);
    Ok(Updated { path, lines: all.len(), dropped })
}

/// What [`check`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Files whose digest matched, relative to the pack directory.
    pub matched: Vec<String>,
}

/// Checks the lines of `rules` in `dir`'s manifest: each listed file exists and has its digest,
/// and every pack file of `rules` in the directory is listed. `Ok(None)` when there is no
/// manifest.
///
/// Cost: one sequential read of every listed file; `progress` is asked whether to stop after
/// each megabyte.
///
/// # Errors
/// [`Error::Corrupt`] naming the file whose digest differs, the missing file, or the unlisted
/// pack; [`Error::NotAFile`] for a listed path that is a FIFO, device or directory; as [`read`]
/// for a malformed manifest; [`Error::Interrupted`] when `progress` cancels.
pub fn check(dir: &Path, rules: Ruleset, progress: &dyn Progress) -> Result<Option<Checked>> {
    let Some(entries) = read(dir)? else { return Ok(None) };
    let manifest = dir.join(MANIFEST);
    let prefix = format!("{}/", rules.name());
    let mut checked = Checked::default();
    for e in entries.iter().filter(|e| e.path.starts_with(&prefix)) {
        let path = dir.join(&e.path);
        if std::fs::symlink_metadata(&path).is_err() {
            return Err(Error::corrupt(&manifest, Damage::Manifest { what: format!("{} is listed but missing", e.path) }));
        }
        let got = sha256_file(&path, progress)?;
        if got != e.sha256 {
            return Err(Error::corrupt(&path, Damage::Manifest { what: format!("SHA-256 {got} differs from the manifest's {} ({MANIFEST})", e.sha256) }));
        }
        checked.matched.push(e.path.clone());
    }
    let ruleset_dir = dir.join(rules.name());
    if let Ok(list) = std::fs::read_dir(&ruleset_dir) {
        for entry in list.flatten() {
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if acceptable(&name) && !checked.matched.contains(&name) {
                return Err(Error::corrupt(&manifest, Damage::Manifest { what: format!("{name} is not listed in the manifest") }));
            }
        }
    }
    Ok(Some(checked))
}

/// Whether `dir` holds a pack file of `rules` (`RULES/layer-NN.owpk`), so a manifest is expected.
pub(crate) fn has_packs(dir: &Path, rules: Ruleset) -> bool {
    let prefix = format!("{}/", rules.name());
    std::fs::read_dir(dir.join(rules.name())).is_ok_and(|list| list.flatten().any(|e| is_pack_name(&format!("{prefix}{}", e.file_name().to_string_lossy()))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    #[test]
    fn names_and_lines() {
        assert!(acceptable("awari/layer-07.owpk") && acceptable("awari/dtc-07.owdb") && acceptable("awari/dtc-07.owpk"));
        assert!(!is_pack_name("awari/dtc-07.owdb") && !is_pack_name("awari/dtc-07.owpk"));
        for bad in ["../x", "/etc/passwd", "awari/layer-7.owpk", "awari/../layer-07.owpk", "chess/layer-07.owpk", "awari/layer-07.owdb"] {
            assert!(!acceptable(bad), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(MANIFEST), "abc  awari/layer-00.owpk\n").unwrap();
        assert!(matches!(read(dir.path()), Err(Error::Corrupt { .. })));
        assert_eq!(check(tempfile::tempdir().unwrap().path(), Ruleset::Awari, &NoProgress).unwrap(), None);
        // Issue 67, item 6: `sha256sum -b` writes `HEX *PATH`; both modes read alike.
        let hex = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        let entry = Entry { sha256: hex.into(), path: "awari/layer-00.owpk".into() };
        for line in [format!("{hex}  awari/layer-00.owpk\n"), format!("{hex} *awari/layer-00.owpk\n"), format!("{hex}  *awari/layer-00.owpk\n")] {
            assert_eq!(parse(line.as_bytes()), Ok(vec![entry.clone()]), "{line}");
        }
        for bad in [format!("{hex} awari/layer-00.owpk"), format!("{hex}awari/layer-00.owpk"), format!("{hex}\tawari/layer-00.owpk")] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    /// A FIFO at the manifest's lock is named, never opened.
    #[test]
    fn a_fifo_at_the_manifests_lock_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        crate::test_support::mkfifo(&dir.path().join(MANIFEST_LOCK));
        let d = dir.path().to_path_buf();
        let got = crate::test_support::within("a manifest's lock that is a FIFO", move || update(&d, &[], &NoProgress).map(|_| ()));
        assert!(matches!(got, Err(Error::NotAFile { found: crate::error::FileKind::Fifo, .. })), "{got:?}");
        assert!(!dir.path().join(MANIFEST).exists());
    }

    #[test]
    fn update_check_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("awari")).unwrap();
        let f = dir.path().join("awari/layer-00.owpk");
        std::fs::write(&f, b"hello").unwrap();
        let e = Entry { sha256: sha256_file(&f, &NoProgress).unwrap(), path: "awari/layer-00.owpk".into() };
        assert_eq!(e.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        update(dir.path(), &[e], &NoProgress).unwrap();
        assert_eq!(check(dir.path(), Ruleset::Awari, &NoProgress).unwrap().unwrap().matched, vec!["awari/layer-00.owpk".to_string()]);
        std::fs::write(&f, b"hellO").unwrap();
        assert!(matches!(check(dir.path(), Ruleset::Awari, &NoProgress), Err(Error::Corrupt { .. })));
        std::fs::write(&f, b"hello").unwrap();
        std::fs::write(dir.path().join("awari/layer-01.owpk"), b"x").unwrap();
        let err = check(dir.path(), Ruleset::Awari, &NoProgress).unwrap_err().to_string();
        assert!(err.contains("not listed"), "{err}");
    }

    #[test]
    fn update_merges_and_drops_stale_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("awari")).unwrap();
        let entry = |n: u32, text: &str| {
            let rel = format!("awari/layer-{n:02}.owpk");
            std::fs::write(dir.path().join(&rel), text).unwrap();
            Entry { sha256: sha256_file(&dir.path().join(&rel), &NoProgress).unwrap(), path: rel }
        };
        let (a, b, c) = (entry(0, "a"), entry(1, "b"), entry(2, "c"));
        update(dir.path(), &[a.clone(), b.clone(), c.clone()], &NoProgress).unwrap();
        // Rewriting layer 0 keeps 1 and 2; a changed file's line is dropped, a missing one too.
        std::fs::write(dir.path().join(&b.path), "B").unwrap();
        std::fs::remove_file(dir.path().join(&c.path)).unwrap();
        let a2 = entry(0, "a2");
        let u = update(dir.path(), std::slice::from_ref(&a2), &NoProgress).unwrap();
        assert_eq!(read(dir.path()).unwrap().unwrap(), vec![a2]);
        assert_eq!(u.dropped, vec![Dropped { path: b.path, why: "its SHA-256 differs" }, Dropped { path: c.path, why: "missing" }]);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_huge_file_is_never_read_as_a_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST);
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a plain system call on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read(dir.path()), Err(Error::NotAFile { .. })));
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, vec![b'\n'; MAX_MANIFEST_BYTES as usize + 1]).unwrap();
        assert!(read(dir.path()).unwrap_err().to_string().contains("larger than"));
    }
}
