//! The `SHA256SUMS` manifest of a pack directory: one line per pack file, `HEX  RULES/layer-NN.owpk`
//! (the format of `sha256sum`, so `sha256sum -c SHA256SUMS` checks a downloaded set too).
//!
//! `oware pack` writes it (keeping the lines of other rulesets); `oware verify` checks the lines
//! of its ruleset: every listed file present with that digest, and no pack file left unlisted.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Damage, Error, Result};
use crate::rules::Ruleset;
use crate::storage::write_atomic;

/// The manifest's file name, in the pack directory.
pub(crate) const MANIFEST: &str = "SHA256SUMS";

/// One manifest line: a digest and a path relative to the pack directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The SHA-256 of the file, 64 lower-case hex digits.
    pub sha256: String,
    /// `RULES/layer-NN.owpk`.
    pub path: String,
}

/// The SHA-256 of a file, as 64 lower-case hex digits.
///
/// Cost: one sequential read of the file.
///
/// # Errors
/// [`Error::Io`] when it cannot be read.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let k = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `rel` is a path a manifest may name: `RULES/layer-NN.owpk` with a known ruleset and
/// `NN` of two digits (nothing absolute, no `..`, no other file).
fn acceptable(rel: &str) -> bool {
    let Some((rules, name)) = rel.split_once('/') else { return false };
    rules.parse::<Ruleset>().is_ok()
        && name.strip_prefix("layer-").and_then(|r| r.strip_suffix(".owpk")).is_some_and(|nn| nn.len() == 2 && nn.bytes().all(|b| b.is_ascii_digit()))
}

/// Reads the manifest of pack directory `dir`: `None` when there is none.
///
/// # Errors
/// [`Error::Corrupt`] (naming the line) for a line that is not `HEX  RULES/layer-NN.owpk`;
/// [`Error::Io`] when it cannot be read.
pub fn read(dir: &Path) -> Result<Option<Vec<Entry>>> {
    let path = dir.join(MANIFEST);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let bad = |line: usize, why: &str| Error::corrupt(&path, Damage::Pack { what: format!("manifest line {line}: {why}") });
    let text = String::from_utf8(text).map_err(|_| bad(0, "not UTF-8 text"))?;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let (hex, rel) = line.split_once("  ").ok_or_else(|| bad(i + 1, "expected 'SHA256  PATH'"))?;
        let rel = rel.strip_prefix('*').unwrap_or(rel);
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(i + 1, "the digest is not 64 hex digits"));
        }
        if !acceptable(rel) {
            return Err(bad(i + 1, &format!("'{}' is not a pack file name (RULES/layer-NN.owpk)", rel.escape_debug())));
        }
        entries.push(Entry { sha256: hex.to_ascii_lowercase(), path: rel.to_string() });
    }
    Ok(Some(entries))
}

/// Replaces the lines of `rules` in `dir`'s manifest by `entries` (keeping other rulesets'
/// lines), sorted by path, written atomically.
///
/// # Errors
/// As [`read`] for the existing manifest; [`Error::Io`] when it cannot be written.
pub fn update(dir: &Path, rules: Ruleset, entries: &[Entry]) -> Result<PathBuf> {
    let prefix = format!("{}/", rules.name());
    let mut all: Vec<Entry> = read(dir)?.unwrap_or_default().into_iter().filter(|e| !e.path.starts_with(&prefix)).collect();
    all.extend_from_slice(entries);
    all.sort_by(|a, b| a.path.cmp(&b.path));
    let text: String = all.iter().map(|e| format!("{}  {}\n", e.sha256, e.path)).collect();
    let path = dir.join(MANIFEST);
    write_atomic(&path, text.as_bytes())?;
    Ok(path)
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
/// Cost: one sequential read of every listed file.
///
/// # Errors
/// [`Error::Corrupt`] naming the file whose digest differs, the missing file, or the unlisted
/// pack; as [`read`] for a malformed manifest.
pub fn check(dir: &Path, rules: Ruleset) -> Result<Option<Checked>> {
    let Some(entries) = read(dir)? else { return Ok(None) };
    let manifest = dir.join(MANIFEST);
    let prefix = format!("{}/", rules.name());
    let mut checked = Checked::default();
    for e in entries.iter().filter(|e| e.path.starts_with(&prefix)) {
        let path = dir.join(&e.path);
        if std::fs::symlink_metadata(&path).is_err() {
            return Err(Error::corrupt(&manifest, Damage::Pack { what: format!("{} is listed but missing", e.path) }));
        }
        let got = sha256_file(&path)?;
        if got != e.sha256 {
            return Err(Error::corrupt(&path, Damage::Pack { what: format!("SHA-256 {got} differs from the manifest's {} ({MANIFEST})", e.sha256) }));
        }
        checked.matched.push(e.path.clone());
    }
    let ruleset_dir = dir.join(rules.name());
    if let Ok(list) = std::fs::read_dir(&ruleset_dir) {
        for entry in list.flatten() {
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if acceptable(&name) && !checked.matched.contains(&name) {
                return Err(Error::corrupt(&manifest, Damage::Pack { what: format!("{name} is not listed in the manifest") }));
            }
        }
    }
    Ok(Some(checked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_lines() {
        assert!(acceptable("awari/layer-07.owpk"));
        for bad in ["../x", "/etc/passwd", "awari/layer-7.owpk", "awari/../layer-07.owpk", "chess/layer-07.owpk", "awari/layer-07.owdb"] {
            assert!(!acceptable(bad), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(MANIFEST), "abc  awari/layer-00.owpk\n").unwrap();
        assert!(matches!(read(dir.path()), Err(Error::Corrupt { .. })));
        assert_eq!(check(tempfile::tempdir().unwrap().path(), Ruleset::Awari).unwrap(), None);
    }

    #[test]
    fn update_check_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("awari")).unwrap();
        let f = dir.path().join("awari/layer-00.owpk");
        std::fs::write(&f, b"hello").unwrap();
        let e = Entry { sha256: sha256_file(&f).unwrap(), path: "awari/layer-00.owpk".into() };
        assert_eq!(e.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        update(dir.path(), Ruleset::Awari, &[e]).unwrap();
        assert_eq!(check(dir.path(), Ruleset::Awari).unwrap().unwrap().matched, vec!["awari/layer-00.owpk".to_string()]);
        std::fs::write(&f, b"hellO").unwrap();
        assert!(matches!(check(dir.path(), Ruleset::Awari), Err(Error::Corrupt { .. })));
        std::fs::write(&f, b"hello").unwrap();
        std::fs::write(dir.path().join("awari/layer-01.owpk"), b"x").unwrap();
        let err = check(dir.path(), Ruleset::Awari).unwrap_err().to_string();
        assert!(err.contains("not listed"), "{err}");
    }
}
