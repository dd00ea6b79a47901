//! How the files of a database are read: opened as regular files only, memory-mapped, or read
//! with `pread` ([`ReadMode::Pread`]) whole into memory within a budget or piece by piece; their
//! headers checked; their payload checksums computed. Shared by the files of every kind
//! ([`super::layer`]).

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Damage, Error, Result};
use crate::format::{Header, PAYLOAD_OFFSET};
use crate::rules::Ruleset;
use crate::sys::{open_regular, FileStamp};

/// Bytes of layers that [`ReadMode::Pread`] holds copied in memory in this process.
static COPIED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A copied layer's share of [`ReadMode::COPY_BUDGET`], given back when the layer is dropped.
pub(super) struct CopyGuard(u64);

impl CopyGuard {
    /// Takes `bytes` of the budget, or `None` when they do not fit in what is left.
    pub(super) fn reserve(bytes: u64) -> Option<CopyGuard> {
        use std::sync::atomic::Ordering::SeqCst;
        COPIED.fetch_update(SeqCst, SeqCst, |used| used.checked_add(bytes).filter(|&total| total <= ReadMode::COPY_BUDGET)).ok().map(|_| CopyGuard(bytes))
    }

    /// The bytes held.
    #[cfg(test)]
    fn bytes(&self) -> u64 {
        self.0
    }
}

impl Drop for CopyGuard {
    fn drop(&mut self) {
        COPIED.fetch_sub(self.0, std::sync::atomic::Ordering::SeqCst);
    }
}

/// How the values of a layer opened for probing are read ([`DatabaseDir::open_table`](super::DatabaseDir::open_table),
/// [`crate::probe::Database::read_mode`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReadMode {
    /// The file is memory-mapped and each value is one memory read (the default; the fastest).
    /// A file truncated in place by another program while mapped kills the process with
    /// `SIGBUS` when a removed page is read.
    #[default]
    Map,
    /// Each value is read from the file with one `pread` system call (about a microsecond when
    /// the file is cached, against tens of nanoseconds for a mapped read): a file truncated or
    /// rewritten under the reader gives an error or a value the identity check catches, never a
    /// crash. For long-running programs whose files another program may change (a server).
    /// Layers are instead read whole into memory when they are opened, as long as the copies fit
    /// in [`ReadMode::COPY_BUDGET`] (as safe: the copy is private; probes as fast as mapped ones;
    /// the memory is the layers' size). Forced-capture bounds and depths to capture are read the
    /// same way (copied within the same budget, else entry by entry). Packs are still read
    /// through a map.
    Pread,
}

impl ReadMode {
    /// The memory (one byte per value: 1 GiB, awari layers 0..23 with room to spare) in which
    /// [`ReadMode::Pread`] holds layers read whole when they are opened, in the order they are
    /// opened, in one process; a layer that does not fit in what is left is read value by value.
    /// A copy's share is given back when its layer is dropped (a database reopened after a file
    /// was replaced).
    pub const COPY_BUDGET: u64 = 1 << 30;
}

/// Reads exactly `buf.len()` bytes of `file` at `at`: a short file is [`Damage::Size`]
/// (`expected` the file's length when opened).
pub(super) fn read_exact_at(file: &File, path: &Path, buf: &mut [u8], at: u64, expected: u64) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let mut done = 0;
        while done < buf.len() {
            match file.read_at(&mut buf[done..], at + done as u64) {
                Ok(0) => {
                    let found = file.metadata().map(|m| m.len()).unwrap_or(at + done as u64);
                    return Err(Error::corrupt(path, Damage::Size { expected, found }));
                }
                Ok(k) => done += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(path, e)),
            }
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        let _ = (file, buf, at, expected);
        Err(Error::Usage(format!("{}: reading with pread needs a Unix system", path.display())))
    }
}

/// Reads the first bytes of `file` into `buf` (as many as there are): the count read.
pub(super) fn read_prefix(file: &File, buf: &mut [u8]) -> usize {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_at(buf, 0).unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        let _ = (file, buf);
        0
    }
}

/// Opens and maps `path` read-only (see [`open_regular`]).
pub(super) fn map_file(path: &Path, missing: impl FnOnce() -> Error) -> Result<(File, Mmap)> {
    let file = open_regular(path, missing)?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if len == 0 {
        return Err(Error::corrupt(path, Damage::Empty));
    }
    // SAFETY: the map is read-only and this crate never writes to or truncates a finished layer
    // file; it replaces files by rename, which leaves existing maps valid. A file changed
    // underneath by another program is outside what this type can defend against (documented in
    // the module's contract; `Layer::check_unchanged` detects it between uses).
    let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    Ok((file, map))
}

/// Where the bytes of a layer's file are: a read-only map of it, a private copy read by
/// [`ReadMode::Pread`] (holding its share of the copy budget), or the file rebuilt in memory from
/// a compressed one.
pub(super) enum Bytes {
    Map(Mmap),
    Copied {
        bytes: Vec<u8>,
        _budget: CopyGuard,
    },
    /// Decoded from a pack (the native file's bytes rebuilt in memory) or a `scores.N.zst`.
    Decoded(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(map) => map,
            Bytes::Copied { bytes, .. } | Bytes::Decoded(bytes) => bytes,
        }
    }
}

impl Bytes {
    /// Gives the pages of `bytes[at..]`'s `range` back to the system when they are mapped (a
    /// copy is private memory: nothing to give back).
    pub(super) fn release(&self, at: usize, range: std::ops::Range<u64>) {
        if let Bytes::Map(map) = self {
            let b = &map[at..];
            // SAFETY: a read-only shared mapping of a file: dropping its pages loses nothing.
            unsafe { crate::sys::release_within(b.as_ptr(), b.len(), range) };
        }
    }
}

/// A layer's file read as [`ReadMode::Pread`] says: whole into memory when the copy
/// fits in what is left of [`ReadMode::COPY_BUDGET`], else left in the file (its stamp taken
/// when opened).
pub(super) enum SideFile {
    Copied(Bytes, FileStamp),
    InFile(FileStamp),
}

impl SideFile {
    /// Reads `file` (at `path`) as [`ReadMode::Pread`] says.
    ///
    /// Cost: one `fstat`; when the copy fits, one sequential read of the file and its size in
    /// memory.
    ///
    /// # Errors
    /// [`Error::Corrupt`] ([`Damage::Empty`]) for an empty file; as [`read_exact_at`].
    pub(super) fn read(file: &File, path: &Path) -> Result<SideFile> {
        let stamp = FileStamp::of(file, path)?;
        if stamp.len == 0 {
            return Err(Error::corrupt(path, Damage::Empty));
        }
        let Some(budget) = CopyGuard::reserve(stamp.len) else { return Ok(SideFile::InFile(stamp)) };
        let mut bytes = vec![0u8; stamp.len as usize];
        read_exact_at(file, path, &mut bytes, 0, stamp.len)?;
        Ok(SideFile::Copied(Bytes::Copied { bytes, _budget: budget }, stamp))
    }
}

/// The header of a file read with `pread` (as [`header_of`]).
pub(super) fn header_at(file: &File, path: &Path, len: u64, encoding: u32, rules: Ruleset, n: u32) -> Result<Header> {
    let mut head = vec![0u8; PAYLOAD_OFFSET.min(len) as usize];
    read_exact_at(file, path, &mut head, 0, len)?;
    header_of(&head, path, encoding, rules, n)
}

/// The checksum of `file`'s bytes from `offset` to `len` (its length when opened), read in
/// 1 MiB pieces.
pub(super) fn checksum_from(file: &File, path: &Path, offset: u64, len: u64) -> Result<u64> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut at = offset;
    while at < len {
        let k = (len - at).min(buf.len() as u64) as usize;
        read_exact_at(file, path, &mut buf[..k], at, len)?;
        hasher.update(&buf[..k]);
        at += k as u64;
    }
    Ok(hasher.digest())
}

/// The checked header of a file of layer `n` of `rules` (values, bounds, depths): decoded, holding
/// `encoding`.
///
/// # Errors
/// [`Error::Corrupt`] for a bad header or another kind of payload; [`Error::RulesetMismatch`] /
/// [`Error::LayerMismatch`] for another ruleset's or layer's file.
pub(super) fn header_of(bytes: &[u8], path: &Path, encoding: u32, rules: Ruleset, n: u32) -> Result<Header> {
    let header = Header::decode(&bytes[..bytes.len().min(PAYLOAD_OFFSET as usize)], path)?;
    header.expect(encoding, path)?;
    if header.rules != rules {
        return Err(Error::RulesetMismatch { path: path.into(), found: header.rules, expected: rules });
    }
    if header.stones != n {
        return Err(Error::LayerMismatch { path: path.into(), found: header.stones, expected: n });
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_budget_refuses_what_does_not_fit() {
        assert!(CopyGuard::reserve(ReadMode::COPY_BUDGET + 1).is_none());
        assert!(CopyGuard::reserve(u64::MAX).is_none());
        let one = CopyGuard::reserve(1).expect("one byte fits");
        assert_eq!(one.bytes(), 1);
    }
}
