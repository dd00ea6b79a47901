//! Where `oware pack` keeps a layer's two working arrays, the floors and the stored values (one
//! byte per position each): in anonymous memory, or in two scratch files mapped shared, whose
//! pages the system writes back and drops under pressure, as the build's out-of-core state.

use std::path::{Path, PathBuf};

use crate::error::{Error, MemoryLimit, Result};
use crate::index::layer_size;

/// The names of the scratch files, in the work directory given to [`PackBuffers::new`].
const FILES: [&str; 2] = ["pack-floors.bin", "pack-stored.bin"];

/// One array: anonymous memory, or a scratch file's mapping (the file removed when it is
/// dropped).
enum Buf {
    Memory(memmap2::MmapMut),
    File(memmap2::MmapMut, PathBuf),
}

impl Buf {
    fn bytes(&mut self) -> &mut [u8] {
        match self {
            Buf::Memory(m) | Buf::File(m, _) => &mut m[..],
        }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // Unlinked while still mapped: the pages go with the mapping, right after.
        if let Buf::File(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A layer's floors and stored values while it is packed ([`super::pack_floored`],
/// [`super::pack_dtc_over`]). The scratch files are removed when it is dropped (the first one
/// too when the second cannot be made).
pub struct PackBuffers {
    floors: Buf,
    stored: Buf,
    len: usize,
    /// [`PackBuffers::working_memory`] of the layer.
    working: u64,
}

impl PackBuffers {
    /// Bytes of anonymous memory packing layer `n` needs with its buffers in memory: two per
    /// position, and [`working_memory`](Self::working_memory).
    pub fn memory_needed(n: u32) -> u64 {
        2 * layer_size(n) + Self::working_memory(n)
    }

    /// Bytes of anonymous memory the writer of layer `n` needs besides the buffers, wherever
    /// they are: the tables of counts of its models (one per piece of the layer being counted,
    /// two pieces per thread, and the sum), the model itself, and one batch of coded groups.
    pub fn working_memory(n: u32) -> u64 {
        let threads = rayon::current_num_threads() as u64;
        super::write::count_table_bytes(n) * (2 * threads + 2) + super::write::BATCH_BYTES
    }

    /// Buffers for layer `n`: in anonymous memory when `work_dir` is `None`, else in two
    /// scratch files created there (`pack-floors.bin`, `pack-stored.bin`; replaced if present),
    /// their disk space reserved and written first, so that a full disk fails here.
    ///
    /// Cost: with files, a sequential write of two bytes per position.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the memory cannot be mapped; [`Error::Io`] when a scratch file
    /// cannot be created, reserved or mapped (naming it).
    pub fn new(n: u32, work_dir: Option<&Path>) -> Result<PackBuffers> {
        let len = layer_size(n) as usize;
        let make = |name: &str| -> Result<Buf> {
            Ok(match work_dir {
                None => Buf::Memory(crate::sys::huge_zeroed(len).map_err(|_| Error::OutOfMemory {
                    layer: n,
                    needed: Self::memory_needed(n),
                    available: 0,
                    limit: MemoryLimit::Refused,
                })?),
                Some(dir) => {
                    let path = dir.join(name);
                    let file = crate::solver::spill::create_file(&path)?;
                    let mapped = crate::sys::reserve_written(&file, len.max(1) as u64)
                        // SAFETY: the file was just created by us (never following a link);
                        // nothing else writes or truncates it while the map lives.
                        .and_then(|()| unsafe { memmap2::MmapMut::map_mut(&file) });
                    match mapped {
                        Ok(m) => Buf::File(m, path),
                        Err(e) => {
                            let _ = std::fs::remove_file(&path);
                            return Err(Error::io(&path, e));
                        }
                    }
                }
            })
        };
        let floors = make(FILES[0])?;
        let stored = make(FILES[1])?;
        Ok(PackBuffers { floors, stored, len, working: Self::working_memory(n) })
    }

    /// Buffers for layer `n` placed by the build's rule for `--max-memory`: in memory when
    /// [`memory_needed`](Self::memory_needed) fits within `limit` ([`memory_limit`]; `None`: no
    /// limit), else in scratch files in `work_dir` (created if needed).
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::NotAFile`] when something other than a directory is at
    /// `work_dir`; [`Error::Io`] when it cannot be created.
    pub fn place(n: u32, limit: Option<u64>, work_dir: &Path) -> Result<PackBuffers> {
        if limit.map_or(true, |l| Self::memory_needed(n) <= l) {
            return PackBuffers::new(n, None);
        }
        crate::sys::create_work_dir(work_dir)?;
        PackBuffers::new(n, Some(work_dir))
    }

    /// Bytes of anonymous memory the buffers and the writer take at most: [`memory_needed`]
    /// in memory, [`working_memory`](Self::working_memory) with the buffers in files.
    ///
    /// [`memory_needed`]: Self::memory_needed
    pub fn anonymous_bytes(&self) -> u64 {
        if self.in_files() {
            self.working
        } else {
            2 * self.len as u64 + self.working
        }
    }

    /// Whether the buffers are scratch files.
    pub fn in_files(&self) -> bool {
        matches!(self.floors, Buf::File(..))
    }

    /// The floors and the stored values, one per position each, and a handle that gives the
    /// pages of both back to the system while they are worked on (when they are files'; in
    /// memory it does nothing).
    pub fn split(&mut self) -> (&mut [i8], &mut [u8], ScratchPages<'_>) {
        let len = self.len;
        let file = self.in_files();
        let f = &mut self.floors.bytes()[..len];
        let s = &mut self.stored.bytes()[..len];
        let pages = ScratchPages { ptrs: [f.as_ptr() as usize, s.as_ptr() as usize], len: if file { len } else { 0 }, _borrow: std::marker::PhantomData };
        // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid.
        let floors = unsafe { std::slice::from_raw_parts_mut(f.as_mut_ptr().cast::<i8>(), len) };
        (floors, s, pages)
    }
}

/// Gives back the pages of the scratch files, floors and stored values ([`PackBuffers::split`]).
pub struct ScratchPages<'a> {
    ptrs: [usize; 2],
    /// Zero in memory: anonymous pages given back would lose what they hold.
    len: usize,
    _borrow: std::marker::PhantomData<&'a ()>,
}

impl ScratchPages<'_> {
    /// Gives the pages of positions `range` of both arrays back to the system (they stay in the
    /// files, dirty ones written back first by the system; in memory, nothing is done).
    ///
    /// Cost: two `madvise` calls.
    pub fn release(&self, range: std::ops::Range<u64>) {
        if self.len > 0 {
            for ptr in self.ptrs {
                // SAFETY: a shared mapping of our own scratch file, alive for the borrow:
                // dropping its pages loses nothing.
                unsafe { crate::sys::release_within(ptr as *const u8, self.len, range.clone()) };
            }
        }
    }
}

/// The memory limit of `oware pack`: `max_memory` when given, else what the system reports
/// available less the process's own 64 MiB (`None` when unknown: no limit).
pub fn memory_limit(max_memory: Option<u64>) -> Option<u64> {
    max_memory.or_else(|| crate::sys::memory_available().map(|m| m.saturating_sub(crate::sys::FIXED_OVERHEAD)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_in_files_are_zeroed_writable_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let n = 6;
        {
            let mut b = PackBuffers::new(n, Some(dir.path())).unwrap();
            assert!(b.in_files());
            let (f, s, pages) = b.split();
            assert_eq!((f.len() as u64, s.len() as u64), (layer_size(n), layer_size(n)));
            assert!(f.iter().all(|&x| x == 0) && s.iter().all(|&x| x == 0));
            (f[3], s[7], f[8192], s[8193]) = (-5, 9, 6, 7);
            // Pages given back stay in the file.
            pages.release(0..layer_size(n));
            assert_eq!((f[3], s[7], f[8192], s[8193]), (-5, 9, 6, 7));
            assert!(FILES.iter().all(|name| dir.path().join(name).is_file()));
        }
        assert!(FILES.iter().all(|name| !dir.path().join(name).exists()), "scratch files removed");
        let mut m = PackBuffers::new(n, None).unwrap();
        assert!(!m.in_files());
        assert_eq!(m.anonymous_bytes(), PackBuffers::memory_needed(n));
        {
            // In memory, nothing is given back (anonymous pages would lose what they hold).
            let (f, s, pages) = m.split();
            (f[5], s[4096]) = (3, 4);
            pages.release(0..layer_size(n));
            assert_eq!((f[5], s[4096]), (3, 4));
        }
        // Placed by a limit: files below what memory needs (the work directory created), memory at it.
        let work = dir.path().join("w");
        assert!(PackBuffers::place(n, Some(PackBuffers::memory_needed(n) - 1), &work).unwrap().in_files());
        assert!(!PackBuffers::place(n, Some(PackBuffers::memory_needed(n)), &work).unwrap().in_files());
        assert_eq!(m.split().0.len() as u64, layer_size(n));
        // A work directory that is not there is an error naming the file.
        let e = PackBuffers::new(n, Some(&dir.path().join("missing"))).err().unwrap();
        assert!(matches!(e, Error::Io { .. }) && e.to_string().contains("pack-floors.bin"), "{e}");
    }
}
