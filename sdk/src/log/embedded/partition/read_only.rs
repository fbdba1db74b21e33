//! A partition of a log another process writes: indexed by following its files.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::recover::segment_bases;
use super::{Contents, Entry, Loc, Partition, Segment, Slot, WriterState, lock};
use crate::error::{Error, ErrorKind, Result};
use crate::log::embedded::files::io_error;
use crate::log::embedded::segment::{self, Damage};
use std::os::unix::fs::FileExt;

impl Partition {
    /// A partition of a log another process writes, with nothing indexed yet: each
    /// [`refresh`](Self::refresh) indexes what that process has written since. Its files
    /// are opened read-only, never repaired and never mapped.
    pub fn read_only(index: u32, dir: PathBuf) -> Result<Self> {
        let start = segment_bases(&dir)?.first().copied().unwrap_or(0);
        let contents = Contents {
            entries: Vec::new(),
            slots: Vec::new(),
            end: start,
            active: None,
            mapped: Arc::default(),
        };
        let mut partition = Self::with_contents(index, Some(dir), 0, contents);
        partition.read_only = true;
        Ok(partition)
    }

    /// Index the whole batches a read-only partition's writer added since the last call,
    /// following it into new segments (over the holes of segments it deleted before they
    /// were seen here), drop from the index the segments it has deleted, and move the end.
    /// A batch still being written is left for a later call. Returns whether the end moved.
    ///
    /// The writer's scan position lives in the writer state (unused otherwise): the segment
    /// being read, its file, and how many of its bytes are indexed.
    pub fn refresh(&self) -> Result<bool> {
        let (Some(dir), true) = (&self.dir, self.read_only) else {
            return Err(Error::new(
                ErrorKind::Internal,
                "refresh of a partition this process writes",
            ));
        };
        let mut ws = lock(&self.writer)?;
        let on_disk = segment_bases(dir)?;
        let start = ws.next_offset;
        let mut entries = Vec::new();
        let mut slots = Vec::new();
        let outcome = self.follow_writer(dir, &on_disk, &mut ws, &mut entries, &mut slots);
        // Publish what was found even on an error: the scan position already counts it.
        let end = ws.next_offset;
        if end > start || !slots.is_empty() {
            self.publish_indexed(slots, entries, end)?;
        }
        self.forget_deleted(&on_disk)?;
        outcome.map(|()| end > start)
    }

    fn follow_writer(
        &self,
        dir: &Path,
        on_disk: &[u64],
        ws: &mut WriterState,
        entries: &mut Vec<Entry>,
        slots: &mut Vec<Slot>,
    ) -> Result<()> {
        loop {
            if scan_new_bytes(ws, entries)?.is_some() {
                // Bytes that are no whole batch yet: a write in progress, unless the writer
                // has started a later segment (it does so only once the previous one is
                // whole). Then look once more, in case its last write just landed.
                let next = ws.next_offset;
                if !segment_bases(dir)?.iter().any(|base| *base > next) {
                    return Ok(());
                }
                if let Some((why, at)) = scan_new_bytes(ws, entries)? {
                    let torn = self.scanned(ws.active.as_ref(), slots)?;
                    return Err(segment::corrupt_at(&torn.path, at, &why));
                }
            }
            // The next segment starts where the scanned ones end; if the writer deleted it
            // (and maybe more after it) before it was seen here, the next file there is
            // starts after a hole. The segment being scanned may be empty still (created,
            // its first batch not written yet): it is not a next one.
            let scanning = match ws.active.as_ref() {
                Some(active) => Some(self.scanned(Some(active), slots)?.base),
                None => None,
            };
            let Some(&base) = on_disk
                .iter()
                .find(|b| **b >= ws.next_offset && scanning.is_none_or(|s| **b > s))
            else {
                return Ok(());
            };
            let path = dir.join(segment::file_name(base));
            let file = match File::open(&path) {
                Ok(file) => Arc::new(file),
                // Deleted since the listing: the next refresh lists again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(io_error("cannot open", &path, e)),
            };
            if base > ws.next_offset {
                slots.push(Slot::hole(ws.next_offset));
                ws.segment_count += 1;
                ws.next_offset = base;
            }
            ws.active = Some((ws.segment_count, Arc::clone(&file), 0));
            ws.segment_count += 1;
            slots.push(Slot::of(Segment::unmapped(path, file, base), 0));
        }
    }

    /// The segment `active` names (the one being scanned): published, or among `new` slots.
    fn scanned(
        &self,
        active: Option<&(usize, Arc<File>, u64)>,
        new: &[Slot],
    ) -> Result<Arc<Segment>> {
        let state = lock(&self.state)?;
        let id = active.map_or(0, |a| a.0);
        let published = state.first_slot + state.slots.len();
        let slot = match id.checked_sub(published) {
            Some(i) => new.get(i),
            None => state.slot(id),
        };
        slot.and_then(|slot| slot.segment.clone())
            .ok_or_else(|| Error::new(ErrorKind::Internal, "no segment for the scan position"))
    }

    /// Make batches found by [`refresh`](Self::refresh) visible: like `publish`, for a
    /// partition that caches nothing.
    fn publish_indexed(&self, slots: Vec<Slot>, entries: Vec<Entry>, end: u64) -> Result<()> {
        let mut state = lock(&self.state)?;
        if !state.cached.is_empty() {
            return Err(Error::new(
                ErrorKind::Internal,
                "a read-only partition has cached batches",
            ));
        }
        state.slots.extend(slots);
        state.entries.extend(entries);
        state.first_cached = state.entries.len();
        state.end = end;
        let watchers = state.watchers.clone();
        drop(state);
        super::announce_end(watchers, end, None);
        Ok(())
    }

    /// Drop from the index the sealed segments whose files the writer has deleted (`on_disk`
    /// lists what was there before this refresh looked for new ones). Reads that already
    /// hold one finish from its open file.
    fn forget_deleted(&self, on_disk: &[u64]) -> Result<()> {
        let mut state = lock(&self.state)?;
        let gone: Vec<usize> = state
            .sealed()
            .filter(|(_, base, _)| on_disk.binary_search(base).is_err())
            .map(|(k, _, _)| k)
            .collect();
        if !gone.is_empty() {
            state.remove_slots(&gone);
        }
        Ok(())
    }
}

/// Index the bytes appended to the active segment since its last scan (whole batches only).
/// Returns why the bytes after them do not form a whole batch yet, and where they start.
fn scan_new_bytes(ws: &mut WriterState, entries: &mut Vec<Entry>) -> Result<Option<(String, u64)>> {
    let Some((index, file, scanned)) = ws.active.as_mut() else {
        return Ok(None);
    };
    let len = file
        .metadata()
        .map_err(|e| {
            Error::new(ErrorKind::Unavailable, "cannot read a segment's size").with_source(e)
        })?
        .len();
    if len <= *scanned {
        return Ok(None);
    }
    let mut bytes = vec![0u8; (len - *scanned) as usize];
    if let Err(e) = file.read_exact_at(&mut bytes, *scanned) {
        return match e.kind() {
            // The file shrank since its size was read: its writer is repairing a torn tail
            // it left (bytes never indexed here). Look again later.
            std::io::ErrorKind::UnexpectedEof => Ok(None),
            _ => Err(Error::new(ErrorKind::Unavailable, "cannot read a segment").with_source(e)),
        };
    }
    let scan = segment::scan(&bytes, ws.next_offset);
    for batch in &scan.batches {
        let loc = Loc {
            segment: *index,
            pos: *scanned + batch.pos,
            len: batch.len,
        };
        entries.push(Entry::stored(batch.base_offset, loc)?);
    }
    *scanned += scan.valid_len;
    ws.next_offset = scan.next_offset;
    Ok(scan.damage.map(|damage| {
        let why = match damage {
            Damage::TornTail(why) | Damage::Corrupt(why) => why,
        };
        (why, *scanned)
    }))
}
