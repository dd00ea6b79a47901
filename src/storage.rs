//! Database directories and layer files: where layers live, how they are read (memory-mapped)
//! and how they are written without ever damaging a complete file.
//!
//! Layout of a database directory `D` (default `databases/`):
//!
//! ```text
//! D/<ruleset>/layer-NN.owdb        one layer, header + payload (FORMAT.md)
//! D/<ruleset>/layer-NN.json        statistics of that layer's build
//! D/<ruleset>/layer-NN.owdb.tmp    a layer being written (never read; replaced on the next build)
//! ```
//!
//! Each ruleset has its own subdirectory and every header names its ruleset, so databases of
//! different rulesets can never be mixed up. The published 2002 format (`scores.N`, headerless,
//! one signed byte per position, `awari` only) is read by [`Layer::open_vu`].

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapMut};

use crate::error::{Error, Result};
use crate::format::{checksum, Header, HEADER_LEN, PAYLOAD_OFFSET};
use crate::index::layer_size;
use crate::rules::Ruleset;

/// The directory holding `rules`' layers under the database directory `base`.
pub fn ruleset_dir(base: &Path, rules: Ruleset) -> PathBuf {
    base.join(rules.name())
}

/// Path of layer `n` of `rules` under `base`.
pub fn layer_path(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("layer-{n:02}.owdb"))
}

/// Path of the statistics file of layer `n` of `rules` under `base`.
pub fn stats_path(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("layer-{n:02}.json"))
}

/// Path of layer `n` in a directory of published 2002 files.
pub fn vu_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("scores.{n}"))
}

/// Where layer `n` of `rules` lives in a database directory of the given format.
pub fn layer_file(format: Format, base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    match format {
        Format::Native => layer_path(base, rules, n),
        Format::Vu => vu_path(base, n),
    }
}

/// Checks that `format` can hold `rules`: the published format holds only `awari` values.
///
/// # Errors
/// [`Error::Usage`] for the published format with another ruleset.
pub fn check_format_rules(format: Format, rules: Ruleset) -> Result<()> {
    if format == Format::Vu && rules != Ruleset::Awari {
        return Err(Error::Usage(format!(
            "the published 2002 format (vu) holds only 'awari' values, not '{}'",
            rules.name()
        )));
    }
    Ok(())
}

/// The on-disk format of a database directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// This tool's files: `<dir>/<ruleset>/layer-NN.owdb` with a header and checksum.
    Native,
    /// The published 2002 files: `<dir>/scores.N`, one signed byte per position, `awari` only.
    Vu,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "native" | "owdb" => Ok(Format::Native),
            "vu" | "scores" => Ok(Format::Vu),
            _ => Err(format!("unknown format '{s}' (expected 'native' or 'vu')")),
        }
    }
}

/// One layer's values, memory-mapped read-only.
///
/// Invariant: `values().len() == layer_size(stones())`. The file must not be modified while it
/// is mapped; this crate never does (it replaces files by renaming, which leaves maps intact).
pub struct Layer {
    stones: u32,
    path: PathBuf,
    map: Mmap,
    offset: usize,
    header: Option<Header>,
}

impl std::fmt::Debug for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layer").field("stones", &self.stones).field("path", &self.path).finish()
    }
}

/// Maps `path` read-only. `missing` builds the error for a file that does not exist (any other
/// failure to open it, such as a permission error, is an [`Error::Io`]).
fn map_file(path: &Path, missing: impl FnOnce() -> Error) -> Result<(File, Mmap)> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if len == 0 {
        return Err(Error::Corrupt { path: path.into(), reason: "file is empty".into() });
    }
    // SAFETY: the map is read-only and this crate never writes to or truncates a finished layer
    // file; it replaces files by rename, which leaves existing maps valid. A file changed
    // underneath by another program is outside what this type can defend against (documented).
    let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    Ok((file, map))
}

impl Layer {
    /// Opens layer `n` of `rules` in this tool's format and checks its header (and, when
    /// `verify_payload` is set, the payload checksum).
    ///
    /// Cost: one `mmap`; with `verify_payload`, one sequential read of the layer.
    ///
    /// # Errors
    /// [`Error::LayerMissing`] when the file does not exist, [`Error::RulesetMismatch`] when it
    /// holds another ruleset, [`Error::Corrupt`] for a bad header, size or checksum,
    /// [`Error::Io`] for other I/O failures.
    pub fn open_native(base: &Path, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer> {
        let path = layer_path(base, rules, n);
        let missing = || Error::LayerMissing { layer: n, dir: ruleset_dir(base, rules), rules: rules.name().into() };
        let (_file, map) = map_file(&path, missing)?;
        Layer::from_map(&path, map, rules, n, verify_payload)
    }

    /// Opens a layer file at any path, expecting layer `n` of `rules`. See [`open_native`](Self::open_native).
    ///
    /// # Errors
    /// As [`open_native`](Self::open_native), with [`Error::Io`] for a missing file.
    pub fn open_file(path: &Path, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer> {
        let missing = || Error::io(path, std::io::Error::from(std::io::ErrorKind::NotFound));
        let (_file, map) = map_file(path, missing)?;
        Layer::from_map(path, map, rules, n, verify_payload)
    }

    fn from_map(path: &Path, map: Mmap, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer> {
        let header = Header::decode(&map[..map.len().min(PAYLOAD_OFFSET as usize)], path)?;
        if header.rules != rules {
            return Err(Error::RulesetMismatch {
                path: path.into(),
                found: header.rules.name().into(),
                expected: rules.name().into(),
            });
        }
        if header.stones != n {
            return Err(Error::Corrupt {
                path: path.into(),
                reason: format!("header says layer {}, expected layer {n}", header.stones),
            });
        }
        let want = PAYLOAD_OFFSET + header.entries;
        if map.len() as u64 != want {
            return Err(Error::Corrupt {
                path: path.into(),
                reason: format!("file is {} bytes, expected {want} (truncated or extended)", map.len()),
            });
        }
        let layer = Layer { stones: n, path: path.into(), map, offset: PAYLOAD_OFFSET as usize, header: Some(header) };
        if verify_payload {
            layer.check_payload()?;
        }
        Ok(layer)
    }

    /// Opens `scores.N` of a published-format (2002) directory: no header, exactly
    /// `layer_size(n)` bytes.
    ///
    /// # Errors
    /// [`Error::PublishedLayerMissing`] when absent, [`Error::Corrupt`] when its size is wrong,
    /// [`Error::Io`] when it cannot be read.
    pub fn open_vu(dir: &Path, n: u32) -> Result<Layer> {
        let path = vu_path(dir, n);
        let (_file, map) = map_file(&path, || Error::PublishedLayerMissing { layer: n, path: path.clone() })?;
        if map.len() as u64 != layer_size(n) {
            return Err(Error::Corrupt {
                path,
                reason: format!("{} bytes, but layer {n} has {} positions", map.len(), layer_size(n)),
            });
        }
        Ok(Layer { stones: n, path, map, offset: 0, header: None })
    }

    /// Opens layer `n` in the given directory format.
    ///
    /// # Errors
    /// As [`open_native`](Self::open_native) or [`open_vu`](Self::open_vu); [`Error::Usage`] for
    /// the published format with a ruleset other than `awari`.
    pub fn open(format: Format, base: &Path, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer> {
        check_format_rules(format, rules)?;
        match format {
            Format::Native => Layer::open_native(base, rules, n, verify_payload),
            Format::Vu => Layer::open_vu(base, n),
        }
    }

    /// Recomputes the payload checksum and compares it with the header's.
    ///
    /// # Errors
    /// [`Error::Corrupt`] on a mismatch. Always `Ok` for headerless (published-format) layers.
    pub fn check_payload(&self) -> Result<()> {
        let Some(h) = &self.header else { return Ok(()) };
        let got = checksum(self.bytes());
        if got != h.payload_checksum {
            return Err(Error::Corrupt {
                path: self.path.clone(),
                reason: format!(
                    "payload checksum mismatch (header {:016x}, payload {got:016x}): values were altered",
                    h.payload_checksum
                ),
            });
        }
        Ok(())
    }

    /// The layer number (stones on the board).
    pub fn stones(&self) -> u32 {
        self.stones
    }

    /// The file this layer was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header, for this tool's files (`None` for the published format).
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// The payload bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map[self.offset..]
    }

    /// The values, one per position in index order.
    pub fn values(&self) -> &[i8] {
        let b = self.bytes();
        // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid.
        unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
    }
}

/// A layer file being written: a preallocated, memory-mapped temporary file that becomes the
/// layer only in [`finish`](Self::finish), by rename.
///
/// Invariant: until `finish` succeeds, the final path is untouched; a crash or kill leaves at most a
/// stale `.tmp` file, which the next build overwrites.
pub struct LayerWriter {
    rules: Ruleset,
    stones: u32,
    tmp: PathBuf,
    path: PathBuf,
    file: File,
    map: MmapMut,
}

impl LayerWriter {
    /// Creates the temporary file of layer `n`, with its full size reserved on disk, so a full
    /// disk is reported here and not as a crash while values are written through the map.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be created or the space cannot be reserved.
    pub fn create(base: &Path, rules: Ruleset, n: u32) -> Result<LayerWriter> {
        let dir = ruleset_dir(base, rules);
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let path = layer_path(base, rules, n);
        let tmp = path.with_extension("owdb.tmp");
        let len = PAYLOAD_OFFSET + layer_size(n);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, e))?;
        reserve(&file, len).map_err(|e| Error::io(&tmp, e))?;
        // SAFETY: the file was just created by us with its full length reserved; nothing else
        // writes or truncates it while the map lives.
        let map = unsafe { MmapMut::map_mut(&file) }.map_err(|e| Error::io(&tmp, e))?;
        Ok(LayerWriter { rules, stones: n, tmp, path, file, map })
    }

    /// The payload (one byte per position, in index order), initially zero.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.map[PAYLOAD_OFFSET as usize..]
    }

    /// Writes the header with the payload checksum, flushes everything to disk and renames the
    /// file into place. Returns the final path.
    ///
    /// # Errors
    /// [`Error::Io`] when flushing or renaming fails; the final path is then untouched.
    pub fn finish(mut self) -> Result<PathBuf> {
        let sum = checksum(&self.map[PAYLOAD_OFFSET as usize..]);
        let header = Header::new(self.rules, self.stones, sum);
        self.map[..HEADER_LEN].copy_from_slice(&header.encode());
        self.map.flush().map_err(|e| Error::io(&self.tmp, e))?;
        self.file.sync_all().map_err(|e| Error::io(&self.tmp, e))?;
        drop(self.map);
        fs::rename(&self.tmp, &self.path).map_err(|e| Error::io(&self.path, e))?;
        sync_dir(&self.path);
        Ok(self.path)
    }
}

/// Reserves `len` bytes of disk for `file` so later writes through a map cannot hit a full disk
/// (which would kill the process with SIGBUS instead of returning an error).
fn reserve(file: &File, len: u64) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a plain system call on a file descriptor we own.
        let r = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
        if r == 0 {
            return Ok(());
        }
        if r != libc::EOPNOTSUPP && r != libc::EINVAL {
            return Err(std::io::Error::from_raw_os_error(r));
        }
    }
    // No fallocate on this file system: allocate by writing zeros.
    use std::io::{Seek, SeekFrom};
    let mut f = file;
    f.seek(SeekFrom::Start(0))?;
    let zeros = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let k = left.min(zeros.len() as u64) as usize;
        f.write_all(&zeros[..k])?;
        left -= k as u64;
    }
    f.flush()
}

/// Best-effort fsync of the directory holding `path`, so a rename survives a power cut.
pub fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Writes a small file atomically: to `<path>.tmp` (the full name plus `.tmp`), fsync, then
/// rename over `path`.
///
/// # Errors
/// [`Error::Io`] on any failure; `path` is then untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    // `<name>.tmp` beside the target (not `with_extension`, which would make `scores.12` and
    // `scores.13` share `scores.tmp`).
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    let mut f = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
    f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    sync_dir(path);
    Ok(())
}
