//! One partition: its batch index, its tail cache, its segment files and its end watch.
//!
//! Readers and the writer share [`PartState`] under a short mutex: the writer publishes a
//! batch there only once it is acknowledged, so readers never see unacknowledged records.
//! The writer's private state (the active segment, offsets assigned but not yet published)
//! lives in [`WriterState`], locked by whoever writes: the writer thread under `Always`, the
//! appending task otherwise (see `writer`).
//!
//! Segments are numbered in the order they were created (ids never change while the log is
//! open); a deleted segment leaves a hole in the list, so the ids of the others, which index
//! entries and the writer hold, stay valid (see `delete`). Opening a directory (`recover`)
//! and following another process's files (`read_only`) build the same list; reads (`read`)
//! plan under the lock and read the batches after it.

mod delete;
mod read;
mod read_only;
mod recover;
mod watchers;

use std::collections::VecDeque;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::watch;

use super::mapped::SegmentMap;
use crate::error::{Error, ErrorKind, Result};
use crate::log::Applier;
use crate::log::MappedSegments;
use crate::log::raw::Place;
use watchers::Watchers;

/// A segment file of the partition.
#[derive(Debug)]
pub(crate) struct Segment {
    pub path: PathBuf,
    pub file: Arc<File>,
    /// The offset of its first record (the one its file is named after).
    pub base: u64,
    map: SegmentMap,
}

impl Segment {
    /// Segment `id` of a partition whose maps `mapped` publishes, starting at offset `base`:
    /// a file that may grow to `max_len` bytes (the map covers that much).
    pub fn new(
        path: PathBuf,
        file: Arc<File>,
        base: u64,
        max_len: u64,
        (id, mapped): (usize, &Arc<MappedSegments>),
    ) -> Arc<Self> {
        Arc::new(Self {
            path,
            file,
            base,
            map: SegmentMap::new(max_len, mapped, id),
        })
    }

    /// A segment another process writes: read with `pread`, never mapped.
    fn unmapped(path: PathBuf, file: Arc<File>, base: u64) -> Arc<Self> {
        Arc::new(Self {
            path,
            file,
            base,
            map: SegmentMap::unmapped(),
        })
    }
}

/// One place in a partition's list of segments: a segment, or the offsets of deleted ones (a
/// hole). A slot covers the offsets from its `base` to the next slot's (the last slot: to the
/// partition's end), so a hole keeps the batch before it from reaching into it.
#[derive(Debug)]
struct Slot {
    base: u64,
    /// `None` for a hole.
    segment: Option<Arc<Segment>>,
    /// How many of the segment's first bytes hold published batches: all a read by place
    /// may touch (past them the map may reach beyond the file). 0 where nothing is read by
    /// place (a read-only partition's segments, which are not mapped).
    published: u64,
}

impl Slot {
    /// `segment`, whose first `published` bytes hold published batches.
    fn of(segment: Arc<Segment>, published: u64) -> Self {
        Self {
            base: segment.base,
            segment: Some(segment),
            published,
        }
    }

    fn hole(base: u64) -> Self {
        Self {
            base,
            segment: None,
            published: 0,
        }
    }
}

/// Where a batch sits in its segment file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Loc {
    pub segment: usize,
    pub pos: u64,
    pub len: u32,
}

/// One batch in the index: 24 bytes, because a long log has one per record (the bridge and
/// the workers append one record at a time), so 1 M records cost 24 MB of index, and a read's
/// index probes touch as few pages as they can. A batch's record count is where the next batch
/// of its segment (or the next slot, or the partition's end) starts: see [`PartState::count`].
/// Its records, while cached, sit beside the index in [`PartState::cached`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub base: u64,
    pos: u64,
    len: u32,
    /// The id of its segment ([`PartState::slots`]), or [`NO_SEGMENT`] in memory mode.
    segment: u32,
}

/// The `segment` of a batch that lives only in memory.
const NO_SEGMENT: u32 = u32::MAX;

impl Entry {
    /// A batch at `loc` in a segment file.
    pub fn stored(base: u64, loc: Loc) -> Result<Self> {
        let segment = u32::try_from(loc.segment)
            .ok()
            .filter(|s| *s != NO_SEGMENT)
            .ok_or_else(|| Error::new(ErrorKind::Internal, "too many segments"))?;
        Ok(Self {
            base,
            pos: loc.pos,
            len: loc.len,
            segment,
        })
    }

    /// A batch of a memory partition.
    fn in_memory(base: u64) -> Self {
        Self {
            base,
            pos: 0,
            len: 0,
            segment: NO_SEGMENT,
        }
    }

    /// Where the batch is, for readers ([`Place::UNKNOWN`] in memory mode).
    fn place(&self) -> Place {
        self.loc().map_or(Place::UNKNOWN, |loc| {
            Place::in_segment(loc.segment, loc.pos)
        })
    }

    fn loc(&self) -> Option<Loc> {
        (self.segment != NO_SEGMENT).then_some(Loc {
            segment: self.segment as usize,
            pos: self.pos,
            len: self.len,
        })
    }
}

/// A batch staged by the writer: its index entry and its records, cached once published.
#[derive(Debug)]
pub(crate) struct Staged {
    pub entry: Entry,
    pub records: Arc<[Bytes]>,
}

fn cached_bytes(records: &[Bytes]) -> usize {
    records.iter().map(|b| b.len() + 16).sum()
}

/// What readers and the writer share.
#[derive(Debug)]
pub(crate) struct PartState {
    entries: Vec<Entry>,
    /// The tail cache: the records of `entries[first_cached..]`, in order (all of them in
    /// memory mode). Older batches are read back from their segment.
    cached: VecDeque<Arc<[Bytes]>>,
    first_cached: usize,
    cached_bytes: usize,
    /// The segment list, oldest first: slot `i` is segment id `first_slot + i`, the id that
    /// [`Entry`] and [`WriterState::active`] hold. Leading holes are dropped.
    slots: VecDeque<Slot>,
    first_slot: usize,
    end: u64,
    /// `None` once the log is closed, which wakes every watcher with an error.
    watchers: Option<Arc<Watchers>>,
}

impl PartState {
    /// How many records batch `i` holds: up to the next batch of its segment, else to the
    /// end of its segment (where the next slot, a segment or a hole, starts), else to the
    /// partition's end.
    fn count(&self, i: usize) -> u64 {
        let entry = &self.entries[i];
        let next = match self.entries.get(i + 1) {
            Some(next) if next.segment == entry.segment => next.base,
            _ => entry
                .loc()
                .and_then(|loc| self.slot(loc.segment + 1))
                .map_or(self.end, |slot| slot.base),
        };
        next.saturating_sub(entry.base)
    }

    /// The slot of segment id `id`, unless it was dropped.
    fn slot(&self, id: usize) -> Option<&Slot> {
        self.slots.get(id.checked_sub(self.first_slot)?)
    }

    fn slot_mut(&mut self, id: usize) -> Option<&mut Slot> {
        self.slots.get_mut(id.checked_sub(self.first_slot)?)
    }
}

/// The writer thread's private view of the partition.
#[derive(Debug)]
pub(crate) struct WriterState {
    /// The offset the next staged record gets (ahead of the published end while a batch
    /// is in flight).
    pub next_offset: u64,
    /// The segment being appended to: its id in the segment list, and its size in bytes
    /// including anything staged in `buf`.
    pub active: Option<(usize, Arc<File>, u64)>,
    /// Encoded batches not yet written, and the file position where they go.
    pub buf: Vec<u8>,
    pub buf_start: u64,
    /// Staged batches and segments, published after the write (and sync) succeed.
    pub pending_entries: Vec<Staged>,
    pub pending_segments: Vec<Arc<Segment>>,
    /// Segment ids given so far (published and pending, holes included): the next
    /// segment's id.
    pub segment_count: usize,
    /// Whether this partition is in the writer's current drain.
    pub touched: bool,
    /// The applier every batch of the current drain to this partition was made for, if one
    /// was: its watch is not woken for them.
    pub applied_by: Option<Applier>,
    /// Set by `close` (direct path): later appends fail.
    pub closed: bool,
}

/// What a partition is opened with: its index, its segment list and where it ends.
struct Contents {
    entries: Vec<Entry>,
    slots: Vec<Slot>,
    end: u64,
    /// The segment appended to: its id, its file and its length.
    active: Option<(usize, Arc<File>, u64)>,
    /// Where the segments in `slots` publish their maps.
    mapped: Arc<MappedSegments>,
}

/// One partition of a topic.
#[derive(Debug)]
pub(crate) struct Partition {
    pub index: u32,
    /// The partition's directory; `None` in memory mode.
    pub dir: Option<PathBuf>,
    cache_budget: usize,
    /// Made by [`read_only`](Self::read_only): another process writes its files.
    read_only: bool,
    /// A read-only partition's poller is running (see `EmbeddedLog::watch_end`).
    polled: AtomicBool,
    state: Mutex<PartState>,
    pub writer: Mutex<WriterState>,
    /// Where its mapped segments lie, for a `Prefetcher`.
    pub mapped: Arc<MappedSegments>,
}

/// Lock a mutex, turning poisoning (a panic while it was held) into an error.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> Result<MutexGuard<'_, T>> {
    mutex
        .lock()
        .map_err(|_| Error::new(ErrorKind::Internal, "a log lock was poisoned by a panic"))
}

impl Partition {
    /// An empty partition; `dir` must exist already in file mode.
    pub fn new(index: u32, dir: Option<PathBuf>, cache_budget: usize) -> Self {
        let contents = Contents {
            entries: Vec::new(),
            slots: Vec::new(),
            end: 0,
            active: None,
            mapped: Arc::default(),
        };
        Self::with_contents(index, dir, cache_budget, contents)
    }

    fn with_contents(
        index: u32,
        dir: Option<PathBuf>,
        cache_budget: usize,
        Contents {
            entries,
            slots,
            end,
            active,
            mapped,
        }: Contents,
    ) -> Self {
        let segment_count = slots.len();
        let buf_start = active.as_ref().map_or(0, |a| a.2);
        Self {
            index,
            dir,
            cache_budget,
            read_only: false,
            polled: AtomicBool::new(false),
            state: Mutex::new(PartState {
                first_cached: entries.len(),
                entries,
                cached: VecDeque::new(),
                cached_bytes: 0,
                slots: slots.into(),
                first_slot: 0,
                end,
                watchers: Some(Arc::new(Watchers::new(end))),
            }),
            writer: Mutex::new(WriterState {
                next_offset: end,
                active,
                buf: Vec::new(),
                buf_start,
                pending_entries: Vec::new(),
                pending_segments: Vec::new(),
                segment_count,
                touched: false,
                applied_by: None,
                closed: false,
            }),
            mapped,
        }
    }

    /// The end offset (the offset the next acknowledged record gets).
    pub fn end(&self) -> Result<u64> {
        Ok(lock(&self.state)?.end)
    }

    /// A receiver of the end offset, or an error once the log is closed.
    pub fn watch_end(&self) -> Result<watch::Receiver<u64>> {
        lock(&self.state)?
            .watchers
            .as_ref()
            .map(|watchers| watchers.subscribe())
            .ok_or_else(super::closed_error)
    }

    /// A receiver of the end offset that `applier`'s own appends do not move, or an error
    /// once the log is closed.
    pub fn watch_end_for(&self, applier: Applier) -> Result<watch::Receiver<u64>> {
        lock(&self.state)?
            .watchers
            .as_ref()
            .map(|watchers| watchers.subscribe_for(applier))
            .ok_or_else(super::closed_error)
    }

    /// Drop the end watches so that every follower wakes and sees the log closed.
    pub fn close(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.watchers = None;
        }
    }

    /// Make batches visible: add new segments and index entries, move the end, and evict
    /// the oldest cached batches over the budget. Watchers are woken by announcing what it
    /// returns: a reader finds the batches at once, a watcher only then; `by`'s watch not at
    /// all, when every batch was made for that applier.
    pub fn publish(
        &self,
        segments: Vec<Arc<Segment>>,
        staged: Vec<Staged>,
        end: u64,
        by: Option<Applier>,
    ) -> Result<EndMoved> {
        let mut state = lock(&self.state)?;
        // The writer numbered them `segment_count`, `segment_count + 1`, ...: the ids that
        // follow the last slot, since a deletion drops slots only from the front.
        state
            .slots
            .extend(segments.into_iter().map(|segment| Slot::of(segment, 0)));
        for Staged { entry, records } in staged {
            if let Some(loc) = entry.loc()
                && let Some(slot) = state.slot_mut(loc.segment)
            {
                slot.published = slot.published.max(loc.pos + u64::from(loc.len));
            }
            state.cached_bytes += cached_bytes(&records);
            state.entries.push(entry);
            state.cached.push_back(records);
        }
        state.end = end;
        // Keep at least the newest batch cached, whatever its size: followers read it next.
        while state.cached_bytes > self.cache_budget && state.cached.len() > 1 {
            if let Some(records) = state.cached.pop_front() {
                state.cached_bytes -= cached_bytes(&records);
                state.first_cached += 1;
            }
        }
        let watchers = state.watchers.clone();
        Ok(EndMoved { watchers, end, by })
    }

    /// Whether a poller must start following this read-only partition's files: `true` once,
    /// for the first caller.
    pub fn start_polling(&self) -> bool {
        self.read_only && !self.polled.swap(true, Ordering::AcqRel)
    }

    /// Whether the log was closed.
    pub fn is_closed(&self) -> bool {
        self.state
            .lock()
            .map_or(true, |state| state.watchers.is_none())
    }

    /// Append a batch in memory mode (no writer thread), made for `by` if it applies it
    /// itself: offsets are assigned here. Returns its first offset, and the end moved for the
    /// caller to announce.
    pub fn append_in_memory(
        &self,
        records: Vec<Bytes>,
        by: Option<Applier>,
    ) -> Result<(u64, EndMoved)> {
        let mut state = lock(&self.state)?;
        if state.watchers.is_none() {
            return Err(super::closed_error());
        }
        let base = state.end;
        let count = records.len() as u64;
        state.entries.push(Entry::in_memory(base));
        state.cached.push_back(records.into());
        state.end = base + count;
        let end = state.end;
        let watchers = state.watchers.clone();
        Ok((base, EndMoved { watchers, end, by }))
    }
}

/// A partition's end moved by [`Partition::publish`], not yet told to its watchers.
#[must_use = "watchers wake only once the move is announced"]
pub(crate) struct EndMoved {
    watchers: Option<Arc<Watchers>>,
    end: u64,
    /// The applier every batch was made for, if one was.
    by: Option<Applier>,
}

impl EndMoved {
    /// Wake the partition's watchers (but `by`'s).
    pub fn announce(self) {
        announce_end(self.watchers, self.end, self.by);
    }

    /// Wake every watcher, `by`'s too: its appender was told the append failed, so it will
    /// not apply the records itself.
    pub fn announce_to_all(self) {
        announce_end(self.watchers, self.end, None);
    }
}

/// Move the end watches to `end` (but `by`'s), with the state's lock released: a follower it
/// wakes reads at once instead of sleeping on the lock its waker still holds.
pub(super) fn announce_end(watchers: Option<Arc<Watchers>>, end: u64, by: Option<Applier>) {
    if let Some(watchers) = watchers {
        watchers.announce(end, by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_entry_stays_small() {
        // One per record on a bridge's topics: its size is the index's memory per record.
        assert_eq!(std::mem::size_of::<Entry>(), 24);
    }
}
