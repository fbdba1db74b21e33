//! Listing and deleting a partition's sealed segments.
//!
//! A segment is *sealed* when it is neither the newest one (the writer appends to it) nor
//! the one holding the newest record (after a torn tail cut the newest file to nothing, the
//! one before it): so deleting every sealed segment still leaves the partition's last record,
//! and a read from anywhere before the end returns something.
//!
//! Deleting one takes its batches out of the index and the tail cache and turns its slot into
//! a hole, under the partition's lock, then unlinks its file. A read planned before that
//! holds the segment (its open file, its map) and finishes from it: an unlinked file stays
//! readable while it is open or mapped. A read planned after it does not see the batches.

use std::fs;
use std::ops::Range;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use super::{Entry, PartState, Partition, Segment, lock};
use crate::error::Result;
use crate::log::SegmentInfo;
use crate::log::embedded::files::{io_error, sync_dir};

impl PartState {
    /// The sealed segments, oldest first: each one's position in `slots`, base and segment.
    pub(super) fn sealed(&self) -> impl Iterator<Item = (usize, u64, &Arc<Segment>)> {
        let newest_slot = self.first_slot + self.slots.len().saturating_sub(1);
        let newest_record = self
            .entries
            .last()
            .and_then(Entry::loc)
            .map_or(self.first_slot, |loc| loc.segment);
        let sealed = newest_slot.min(newest_record) - self.first_slot;
        self.slots
            .iter()
            .take(sealed)
            .enumerate()
            .filter_map(|(k, slot)| Some((k, slot.base, slot.segment.as_ref()?)))
    }

    /// Take the segments at these positions of `slots` (ascending, sealed) out of the index
    /// and the tail cache, leave holes where they were, and return them. The index gives
    /// back its memory once it has shrunk to under half its capacity.
    pub(super) fn remove_slots(&mut self, positions: &[usize]) -> Vec<Arc<Segment>> {
        // Each segment's batches are the entries between its base and the next slot's.
        let mut ranges: Vec<Range<usize>> = Vec::with_capacity(positions.len());
        let mut removed = Vec::with_capacity(positions.len());
        for &k in positions {
            let (Some(slot), Some(next)) = (self.slots.get(k), self.slots.get(k + 1)) else {
                continue;
            };
            let start = self.entries.partition_point(|e| e.base < slot.base);
            let end = self.entries.partition_point(|e| e.base < next.base);
            ranges.push(start..end);
            if let Some(segment) = self.slots.get_mut(k).and_then(|s| s.segment.take()) {
                removed.push(segment);
            }
        }
        let before_cache: usize = ranges
            .iter()
            .map(|r| r.end.min(self.first_cached) - r.start.min(self.first_cached))
            .sum();
        let mut keep = outside(&ranges, 0);
        self.entries.retain(|_| keep());
        let mut keep = outside(&ranges, self.first_cached);
        let mut dropped_bytes = 0;
        self.cached.retain(|records| {
            let kept = keep();
            if !kept {
                dropped_bytes += super::cached_bytes(records);
            }
            kept
        });
        self.cached_bytes -= dropped_bytes;
        self.first_cached -= before_cache;
        // Holes in front of every segment left cover offsets nothing reads any more.
        while self.slots.len() > 1 && self.slots.front().is_some_and(|s| s.segment.is_none()) {
            self.slots.pop_front();
            self.first_slot += 1;
        }
        if self.entries.capacity() / 2 > self.entries.len() {
            self.entries.shrink_to_fit();
        }
        if self.slots.capacity() / 2 > self.slots.len() {
            self.slots.shrink_to_fit();
        }
        removed
    }
}

/// Whether each item of a list, asked in order from position `first`, lies outside every
/// range of `ranges` (ascending, disjoint): the test to `retain` a list by.
fn outside(ranges: &[Range<usize>], first: usize) -> impl FnMut() -> bool + '_ {
    let mut position = first;
    let mut next_range = 0;
    move || {
        while ranges.get(next_range).is_some_and(|r| r.end <= position) {
            next_range += 1;
        }
        let keep = !ranges
            .get(next_range)
            .is_some_and(|r| r.contains(&position));
        position += 1;
        keep
    }
}

impl Partition {
    /// The sealed segments, oldest first (none in memory mode). Their sizes and times come
    /// from their files.
    pub fn segments(&self) -> Result<Vec<SegmentInfo>> {
        let sealed: Vec<(u64, u64, Arc<Segment>)> = {
            let state = lock(&self.state)?;
            state
                .sealed()
                .filter_map(|(k, base, segment)| {
                    let end = state.slots.get(k + 1)?.base;
                    Some((base, end, Arc::clone(segment)))
                })
                .collect()
        };
        sealed
            .into_iter()
            .map(|(base, end, segment)| {
                let meta = segment
                    .file
                    .metadata()
                    .map_err(|e| io_error("cannot read the size of", &segment.path, e))?;
                let written = meta
                    .modified()
                    .map_err(|e| io_error("cannot read the time of", &segment.path, e))?;
                let last_write_ms = written
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                Ok(SegmentInfo {
                    base,
                    end,
                    bytes: meta.len(),
                    last_write_ms,
                })
            })
            .collect()
    }

    /// Delete the sealed segments starting at `bases` (other bases are ignored) and their
    /// files; `sync` makes the deletion durable (a directory sync). Returns how many were
    /// deleted. Blocks on the file system: call it off the async runtime.
    ///
    /// The index forgets them before the files go, so a failure to unlink (reported) leaves
    /// a file that the next open reads again: records come back, none is lost or damaged.
    pub fn delete_segments(&self, bases: &[u64], sync: bool) -> Result<usize> {
        let mut bases = bases.to_vec();
        bases.sort_unstable();
        let removed = {
            let mut state = lock(&self.state)?;
            let positions: Vec<usize> = state
                .sealed()
                .filter(|(_, base, _)| bases.binary_search(base).is_ok())
                .map(|(k, _, _)| k)
                .collect();
            state.remove_slots(&positions)
        };
        for segment in &removed {
            match fs::remove_file(&segment.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("cannot delete", &segment.path, e)),
            }
        }
        if let (true, false, Some(dir)) = (sync, removed.is_empty(), &self.dir) {
            sync_dir(dir)?;
        }
        Ok(removed.len())
    }

    /// How many batches the index holds and how many it has room for (tests of its memory).
    #[cfg(test)]
    pub fn index_size(&self) -> Result<(usize, usize)> {
        let state = lock(&self.state)?;
        Ok((state.entries.len(), state.entries.capacity()))
    }

    /// How many slots (segments and holes) the segment list holds.
    #[cfg(test)]
    pub fn slot_count(&self) -> Result<usize> {
        Ok(lock(&self.state)?.slots.len())
    }
}
