//! Writing files without ever damaging a complete one: temporaries under unique names, renamed
//! into place once complete and flushed.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

use crate::error::{Damage, Error, Result};
use crate::format::{Header, HEADER_LEN, PAYLOAD_OFFSET, VALUE_EXACT_I8};
use crate::index::layer_size;
use crate::rules::Ruleset;

use super::*;
use crate::sys::{open_regular, open_regular_rw};

/// A file being written: a temporary beside the target, created exclusively (`O_EXCL`, a
/// unique random name, never following a link), that replaces the target only in
/// [`commit`](Self::commit), by rename after an `fsync`.
///
/// Invariants: until `commit` succeeds the target is untouched; dropping an `AtomicFile` (any
/// error path, a panic) removes the temporary; a killed process leaves at most a temporary
/// named `.TARGET.XXXXXX.tmp`, which `DatabaseDir::remove_stale_temporaries` cleans up.
///
/// Public for programs over this crate that write files of their own with the same guarantees:
/// the `oware` program writes pack files, the depths-to-capture files it copies beside them,
/// exported `scores.N` files and its manual pages through it, each streamed in its own way
/// (through a compressor, checked before the rename). The layer files themselves are written by
/// [`DatabaseDir::write_layer`].
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary for `path` in `path`'s directory (which must exist).
    ///
    /// # Errors
    /// [`Error::Io`] when the temporary cannot be created.
    pub fn create(path: &Path) -> Result<AtomicFile> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp").rand_bytes(6);
        #[cfg(unix)]
        {
            // Like any file the tool writes: readable by all, as the umask allows (tempfile's
            // default, 0600, would hide published databases from other users).
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o644));
        }
        let tmp = builder.tempfile_in(dir).map_err(|e| Error::io(dir.join(format!(".{name}.XXXXXX.tmp")), e))?;
        Ok(AtomicFile { tmp, path: path.to_path_buf() })
    }

    /// The open temporary file.
    pub fn file(&self) -> &File {
        self.tmp.as_file()
    }

    /// The temporary's path (for messages).
    pub fn tmp_path(&self) -> &Path {
        self.tmp.path()
    }

    /// The target path.
    pub fn target(&self) -> &Path {
        &self.path
    }

    /// Flushes the temporary to disk and renames it over the target; then syncs the directory.
    ///
    /// # Errors
    /// [`Error::Io`] when flushing or renaming fails; the temporary is then removed and the
    /// target untouched.
    pub fn commit(self) -> Result<PathBuf> {
        self.tmp.as_file().sync_all().map_err(|e| Error::io(self.tmp.path(), e))?;
        let path = self.path;
        self.tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        sync_dir(&path);
        Ok(path)
    }
}

/// A layer file being written: a preallocated, memory-mapped [`AtomicFile`] that becomes the
/// layer only in [`finish`](Self::finish).
pub(crate) struct LayerWriter {
    rules: Ruleset,
    stones: u32,
    /// What the payload holds (its kind's encoding: values, bounds).
    encoding: u32,
    map: MmapMut,
    file: Target,
}

/// Where a [`LayerWriter`] writes before the file becomes the layer.
enum Target {
    /// A temporary removed unless committed.
    Temp(AtomicFile),
    /// A partial file with a fixed name that outlives the process (a build that stops resumes
    /// from its checkpoint and the best exits parked in it); renamed into place when finished.
    Partial { partial: PathBuf, path: PathBuf, file: File },
}

impl Target {
    fn tmp_path(&self) -> &Path {
        match self {
            Target::Temp(f) => f.tmp_path(),
            Target::Partial { partial, .. } => partial,
        }
    }

    fn commit(self) -> Result<PathBuf> {
        match self {
            Target::Temp(f) => f.commit(),
            Target::Partial { partial, path, file } => {
                file.sync_all().map_err(|e| Error::io(&partial, e))?;
                std::fs::rename(&partial, &path).map_err(|e| Error::io(&path, e))?;
                sync_dir(&path);
                Ok(path)
            }
        }
    }
}

/// The partial file of layer `n` in `dir`, which a stopped build resumes writing:
/// `.layer-NN.owdb.partial`.
pub(crate) fn partial_path(dir: &DatabaseDir, n: u32) -> PathBuf {
    let path = dir.path::<ValuesKind>(n);
    let name = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.partial"))
}

impl LayerWriter {
    /// Creates the temporary file of layer `n`'s file of kind `K` in `dir` (native format), for
    /// a payload of `len` bytes, with its full size reserved on disk, so a full disk is reported
    /// here and not as a crash while the payload is written through the map.
    ///
    /// # Errors
    /// [`Error::Usage`] for a published-format directory; [`Error::Io`] when the directory cannot
    /// be created or the space cannot be reserved (the temporary is then removed).
    pub(crate) fn create<K: Kind>(dir: &DatabaseDir, n: u32, len: u64) -> Result<LayerWriter> {
        if dir.format() != Format::Native {
            return Err(Error::Usage(format!("{} are written in the native format only", K::CONTENT.what())));
        }
        dir.create()?;
        let file = AtomicFile::create(&dir.path::<K>(n))?;
        let len = PAYLOAD_OFFSET + len;
        crate::sys::reserve(file.file(), len).map_err(|e| Error::io(file.tmp_path(), e))?;
        // SAFETY: the file was just created by us (exclusively, under a unique name) with its full
        // length reserved; nothing else writes or truncates it while the map lives.
        let map = unsafe { MmapMut::map_mut(file.file()) }.map_err(|e| Error::io(file.tmp_path(), e))?;
        Ok(LayerWriter { rules: dir.rules(), stones: n, encoding: K::ENCODING, map, file: Target::Temp(file) })
    }

    /// As [`create`](Self::create), into the partial file of layer `n` (`.layer-NN.owdb.partial`
    /// in `dir`), which outlives the process: an existing one of the right length is reopened
    /// with its contents (what a stopped build parked there), else it is created. It is renamed
    /// into place by [`finish`](Self::finish); nothing removes it otherwise (a later build of
    /// the layer reuses it).
    ///
    /// # Errors
    /// As [`create`](Self::create); [`Error::NotAFile`] when something other than a regular
    /// file has its name.
    pub(crate) fn create_partial(dir: &DatabaseDir, n: u32) -> Result<(LayerWriter, bool)> {
        if dir.format() != Format::Native {
            return Err(Error::Usage("layers are written in the native format only".into()));
        }
        dir.create()?;
        let partial = partial_path(dir, n);
        let len = PAYLOAD_OFFSET + layer_size(n);
        match std::fs::symlink_metadata(&partial) {
            Ok(m) if !m.file_type().is_file() => {
                return Err(Error::NotAFile { path: partial, found: crate::error::FileKind::of(m.file_type()), expected: crate::error::FileKind::File })
            }
            _ => {}
        }
        let file = open_regular_rw(&partial)?;
        let reused = file.metadata().map_err(|e| Error::io(&partial, e))?.len() == len;
        if !reused {
            file.set_len(0).map_err(|e| Error::io(&partial, e))?;
            crate::sys::reserve(&file, len).map_err(|e| Error::io(&partial, e))?;
        }
        // SAFETY: the partial file is this layer's, written only under the build's lock; nothing
        // else writes or truncates it while the map lives.
        let map = unsafe { MmapMut::map_mut(&file) }.map_err(|e| Error::io(&partial, e))?;
        let target = Target::Partial { partial, path: dir.path::<ValuesKind>(n), file };
        Ok((LayerWriter { rules: dir.rules(), stones: n, encoding: VALUE_EXACT_I8, map, file: target }, reused))
    }

    /// The temporary file's path (where the other ranks of a distributed build write their
    /// shares: `ShareWriter`).
    pub(crate) fn tmp_path(&self) -> &Path {
        self.file.tmp_path()
    }

    /// The payload (one byte per position, in index order), initially zero.
    pub(crate) fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.map[PAYLOAD_OFFSET as usize..]
    }

    /// The payload, and a handle that gives its pages back to the system while it is written
    /// (out-of-core builds keep only a window of the output resident).
    pub(crate) fn payload_and_pages(&mut self) -> (&mut [u8], PayloadPages<'_>) {
        let payload = &mut self.map[PAYLOAD_OFFSET as usize..];
        let pages = PayloadPages { ptr: payload.as_ptr() as usize, len: payload.len(), _borrow: std::marker::PhantomData };
        (payload, pages)
    }

    /// Gives the pages of payload bytes `range` back to the system (the bytes stay in the file).
    pub(crate) fn release(&self, range: std::ops::Range<u64>) {
        let b = &self.map[PAYLOAD_OFFSET as usize..];
        // SAFETY: a shared mapping of our own file: dropping its pages loses nothing.
        unsafe { crate::sys::release_within(b.as_ptr(), b.len(), range) };
    }

    /// The payload bytes as written so far.
    pub(crate) fn payload(&self) -> &[u8] {
        &self.map[PAYLOAD_OFFSET as usize..]
    }

    /// The payload as values.
    pub(crate) fn values(&self) -> &[i8] {
        let b = &self.map[PAYLOAD_OFFSET as usize..];
        // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid.
        unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
    }

    /// Writes the header with the payload checksum, flushes everything to disk and renames the
    /// file into place. Returns the final path.
    ///
    /// # Errors
    /// [`Error::Io`] when flushing or renaming fails; the final path is then untouched.
    pub(crate) fn finish(mut self) -> Result<PathBuf> {
        let sum = checksum_released(&self.map[PAYLOAD_OFFSET as usize..], &|r| self.release(r));
        let mut header = Header::new(self.rules, self.stones, sum);
        header.encoding = self.encoding;
        self.map[..HEADER_LEN].copy_from_slice(&header.encode());
        self.map.flush().map_err(|e| Error::io(self.file.tmp_path(), e))?;
        drop(self.map);
        self.file.commit()
    }
}

/// A dtc file being written: a [`LayerWriter`] of depths to capture of the exact length
/// ([`crate::dtc::payload_len`]), its count of escaped depths written, that becomes
/// `dtc-NN.owdb` only in [`finish`](Self::finish).
pub(crate) struct DtcWriter(LayerWriter);

impl DtcWriter {
    /// Creates the temporary dtc file of layer `n` in `dir` for `escaped` escaped depths, with
    /// its full size reserved on disk.
    ///
    /// # Errors
    /// As [`LayerWriter::create`].
    pub(crate) fn create(dir: &DatabaseDir, n: u32, escaped: u64) -> Result<DtcWriter> {
        let mut w = LayerWriter::create::<DtcKind>(dir, n, crate::dtc::payload_len(n, escaped))?;
        let end = w.map.len();
        w.map[end - 8..].copy_from_slice(&escaped.to_le_bytes());
        Ok(DtcWriter(w))
    }

    /// The position bytes and the records of the escaped depths (their count is written).
    pub(crate) fn parts_mut(&mut self) -> (&mut [u8], &mut [u8]) {
        let size = layer_size(self.0.stones) as usize;
        let end = self.0.map.len() - 8;
        let payload = &mut self.0.map[PAYLOAD_OFFSET as usize..end];
        payload.split_at_mut(size)
    }

    /// The payload as written so far.
    pub(crate) fn payload(&self) -> &[u8] {
        self.0.payload()
    }

    /// The temporary file's path (where the ranks of a distributed build map their shares).
    pub(crate) fn tmp_path(&self) -> &Path {
        self.0.tmp_path()
    }

    /// Writes the header with the payload checksum, flushes everything to disk and renames the
    /// file into place. Returns the final path.
    ///
    /// # Errors
    /// [`Error::Io`] when flushing or renaming fails; the final path is then untouched.
    pub(crate) fn finish(self) -> Result<PathBuf> {
        self.0.finish()
    }
}

/// One rank's share of a layer file being written by the ranks of a distributed build: a shared
/// writable mapping of payload bytes `range` of the temporary file another rank (rank 0)
/// created with [`LayerWriter::create`]. Ranks write disjoint shares whose ends are multiples of
/// the page size, so no two ranks ever write one page.
pub(crate) struct ShareWriter {
    map: Option<MmapMut>,
    path: PathBuf,
}

impl ShareWriter {
    /// Maps payload bytes `range` (position bytes of layer `n`) of the temporary file `path`,
    /// of a layer's file with `payload_len` payload bytes (values: [`LayerWriter::create`];
    /// depths to capture: [`DtcWriter::create`]), for writing.
    ///
    /// # Errors
    /// [`Error::NotAFile`] / [`Error::Io`] when `path` is not a regular file that can be opened
    /// for writing; [`Error::Corrupt`] when it does not have the file's length.
    pub(crate) fn open(path: &Path, n: u32, payload_len: u64, range: std::ops::Range<u64>) -> Result<ShareWriter> {
        let expected = PAYLOAD_OFFSET + payload_len;
        let file = open_regular(path, || Error::io(path, std::io::ErrorKind::NotFound.into()))?;
        drop(file);
        let file = OpenOptions::new().read(true).write(true).open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        if len != expected || range.end > layer_size(n) {
            return Err(Error::corrupt(path, Damage::Size { expected, found: len }));
        }
        let map = if range.is_empty() {
            None
        } else {
            // SAFETY: the temporary is written only through the ranks' disjoint share maps until
            // every rank has flushed; nothing truncates it while the map lives.
            let m = unsafe { memmap2::MmapOptions::new().offset(PAYLOAD_OFFSET + range.start).len((range.end - range.start) as usize).map_mut(&file) }
                .map_err(|e| Error::io(path, e))?;
            Some(m)
        };
        Ok(ShareWriter { map, path: path.into() })
    }

    /// The share's bytes, and a handle giving their pages back while they are written.
    pub(crate) fn bytes_and_pages(&mut self) -> (&mut [u8], PayloadPages<'_>) {
        let bytes = self.map.as_deref_mut().unwrap_or(&mut []);
        let pages = PayloadPages { ptr: bytes.as_ptr() as usize, len: bytes.len(), _borrow: std::marker::PhantomData };
        (bytes, pages)
    }

    /// Writes the share to the file (`msync`), so that the rank finishing the file reads it.
    ///
    /// # Errors
    /// [`Error::Io`] when the write-back fails.
    pub(crate) fn finish(self) -> Result<()> {
        if let Some(m) = &self.map {
            m.flush().map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(())
    }
}

/// Gives back the pages of a [`LayerWriter`]'s payload while the payload is borrowed for
/// writing (see [`LayerWriter::payload_and_pages`]).
pub(crate) struct PayloadPages<'a> {
    ptr: usize,
    len: usize,
    _borrow: std::marker::PhantomData<&'a ()>,
}

impl PayloadPages<'_> {
    /// Gives the pages of payload bytes `range` back to the system (the bytes stay in the file).
    pub(crate) fn release(&self, range: std::ops::Range<u64>) {
        // SAFETY: the writer's shared file mapping, alive for 'a: dropping pages loses nothing.
        unsafe { crate::sys::release_within(self.ptr as *const u8, self.len, range) };
    }
}

/// Bytes read (and then given back) at a time by [`scan_released`].
const WINDOW: usize = 64 << 20;

/// Calls `f` on `values` (a file mapping) window by window, giving each window's pages back with
/// `release` once it is read, so the whole file is never resident at once.
pub(crate) fn scan_released<T>(values: &[T], release: &dyn Fn(std::ops::Range<u64>), mut f: impl FnMut(&[T])) {
    let window = WINDOW / std::mem::size_of::<T>().max(1);
    for (k, w) in values.chunks(window).enumerate() {
        f(w);
        let a = (k * WINDOW) as u64;
        release(a..a + std::mem::size_of_val(w) as u64);
    }
}

/// [`checksum`](crate::format::checksum) of `bytes` (a file mapping), read with
/// [`scan_released`].
pub(crate) fn checksum_released(bytes: &[u8], release: &dyn Fn(std::ops::Range<u64>)) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    scan_released(bytes, release, |w| h.update(w));
    h.digest()
}

/// Best-effort fsync of the directory holding `path`, so a rename survives a power cut.
pub(crate) fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Writes a small file atomically through an [`AtomicFile`].
///
/// # Errors
/// [`Error::Io`] on any failure; `path` is then untouched and no temporary is left.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let f = AtomicFile::create(path)?;
    let mut w = f.file();
    w.write_all(bytes).map_err(|e| Error::io(f.tmp_path(), e))?;
    f.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::super::directory::is_temporary_name;
    use super::*;

    #[test]
    fn temporary_names_are_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("layer-05.owdb");
        let f = AtomicFile::create(&target).unwrap();
        let name = f.tmp_path().file_name().unwrap().to_str().unwrap().to_string();
        assert!(is_temporary_name(&name), "{name}");
        assert!(is_temporary_name(".layer-12.json.Ab3dE9.tmp"));
        assert!(is_temporary_name(".dtc-12.owdb.Ab3dE9.tmp") && is_temporary_name(".dtc-07.json.x9Yz00.tmp"));
        assert!(is_temporary_name("layer-05.owdb.tmp"), "earlier versions' name");
        for other in ["layer-05.owdb", ".my-own-notes-file.tmp", ".layer-05.owdb.toolong1.tmp", "notes.tmp", ".layer-5.owdb.abcdef.tmp"] {
            assert!(!is_temporary_name(other), "{other}");
        }
        drop(f);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "dropping removes the temporary");
    }

    #[cfg(unix)]
    #[test]
    fn written_files_are_readable_by_others() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("layer-01.json");
        write_atomic(&target, b"{}").unwrap();
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
        let umask = status.lines().find_map(|l| l.strip_prefix("Umask:")).and_then(|u| u32::from_str_radix(u.trim(), 8).ok()).unwrap_or(0o022);
        assert_eq!(mode, 0o644 & !umask, "{mode:o} with umask {umask:o}");
    }

    #[test]
    fn atomic_write_never_follows_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        fs::write(&victim, "keep").unwrap();
        let target = dir.path().join("layer-05.json");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&victim, dir.path().join("layer-05.json.tmp")).unwrap();
        write_atomic(&target, b"new").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    }
}
