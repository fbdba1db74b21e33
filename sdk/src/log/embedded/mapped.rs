//! Read-only memory maps of segment files: how batches evicted from the tail cache are read
//! back without a system call.
//!
//! A `pread` per record read costs a syscall, a page-cache lookup and a copy into a fresh
//! buffer, which made a `GetTask` on a long log (its records no longer in the tail cache)
//! markedly slower than on a short one. Reading through a map costs a copy from memory the
//! page cache already holds.
//!
//! A segment is mapped once, lazily, at its first evicted read, with the length it may reach
//! (`segment_bytes`, or its size if larger), so the active segment's later batches are covered
//! by the same map. A batch outside the map (one that overshot the segment size) and a
//! segment that cannot be mapped fall back to `pread`.
//!
//! A mapped segment tells its partition's [`MappedSegments`] where it lies in memory, so that a
//! `Prefetcher` can ask for a batch's bytes from its place alone (`log/place.rs`); it takes
//! the address back when the map goes.
//!
//! The price of a map: a disk error under a mapped page that is not in the page cache stops
//! the process (`SIGBUS`) where `pread` would have returned an error. A read never loses an
//! acknowledged record, and the records are still on disk for the next start.

use std::fs::File;
use std::sync::{Arc, OnceLock};

use memmap2::{Mmap, MmapOptions};

use crate::log::MappedSegments;

/// The lazily created map of one segment file.
#[derive(Debug)]
pub(crate) struct SegmentMap {
    len: u64,
    map: OnceLock<Option<Mmap>>,
    /// Where the map's address is published, under the segment's id.
    published: Option<(Arc<MappedSegments>, usize)>,
}

impl SegmentMap {
    /// A map of up to `len` bytes, created at the first [`bytes`](Self::bytes) call, of the
    /// segment numbered `segment`, published in `mapped` once created.
    pub fn new(len: u64, mapped: &Arc<MappedSegments>, segment: usize) -> Self {
        Self {
            len,
            map: OnceLock::new(),
            published: Some((Arc::clone(mapped), segment)),
        }
    }

    /// A segment that is never mapped: every read of it is a `pread` (a read-only log's
    /// segments, which another process writes; see `EmbeddedLog::open_read_only`).
    pub fn unmapped() -> Self {
        let map = OnceLock::new();
        let _ = map.set(None);
        Self {
            len: 0,
            map,
            published: None,
        }
    }

    /// The map, created at the first call.
    fn map(&self, file: &File) -> Option<&Mmap> {
        self.map
            .get_or_init(|| {
                let map = map(file, self.len);
                if let (Some(map), Some((mapped, segment))) = (&map, &self.published) {
                    mapped.publish(*segment, map.as_ptr() as usize);
                }
                map
            })
            .as_ref()
    }

    /// The bytes at `pos..pos + len` of `file`, if they lie inside the map.
    ///
    /// The caller must only ask for bytes of a published batch: ones already written to the
    /// file (see the safety argument in `map`).
    pub fn bytes(&self, file: &File, pos: u64, len: u32) -> Option<&[u8]> {
        let map = self.map(file)?;
        let start = usize::try_from(pos).ok()?;
        let end = start.checked_add(len as usize)?;
        map.get(start..end)
    }
}

impl Drop for SegmentMap {
    fn drop(&mut self) {
        if let (Some(Some(map)), Some((mapped, segment))) = (self.map.get(), &self.published) {
            mapped.withdraw(*segment, map.as_ptr() as usize);
        }
    }
}

/// The whole of `file` (`len` bytes) mapped for a recovery's scan; `None` where the system
/// refuses (or the file is empty). The caller drops it before it truncates the file.
pub(crate) fn map_whole(file: &File, len: u64) -> Option<Mmap> {
    if len == 0 {
        return None;
    }
    map(file, len)
}

/// Map `len` bytes of `file` read-only, shared; `None` where the system refuses.
#[allow(unsafe_code)]
fn map(file: &File, len: u64) -> Option<Mmap> {
    let len = usize::try_from(len).ok()?;
    // SAFETY: `Mmap` hands out `&[u8]` over the file, which is undefined behaviour if the
    // bytes change under it or (a `SIGBUS`) if the file shrinks below a page being read.
    // Neither happens to the bytes we read:
    // - readers only ask for published batches, and the log publishes a batch only after
    //   its bytes were written, and never writes at a position below its segment's end;
    // - the log truncates a segment only while recovering it in `open`, before any reader's
    //   map of it exists and once the recovery's own scan map is dropped; segments are never rewritten or shrunk afterwards. Deleting a segment
    //   (`delete_segments`) unlinks its file without truncating it: the inode and its pages
    //   live on while a map or an open file of it does, so a read that holds it finishes;
    // - the directory is held under an exclusive lock (`lock.rs`), so another agentlog
    //   process does not write to it (a read-only open, which takes no lock, never maps). Other programs editing the files of a live log are out
    //   of contract, as they are for any database.
    // The map may extend past the current end of the file (the active segment grows into
    // it); pages past the end are never read, since no published batch lies there.
    unsafe { MmapOptions::new().len(len).map(file) }
        .inspect_err(|error| {
            tracing::debug!(%error, "cannot map a segment; reading it with pread");
        })
        .ok()
}
