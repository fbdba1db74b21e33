//! The read path: a read is planned under the partition lock (which batches, from the tail
//! cache or from their segment), and its batches are read and decoded after it.

use std::borrow::Cow;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;

use super::{Entry, Loc, PartState, Partition, Segment, lock};
use crate::error::{Error, ErrorKind, Result};
use crate::log::StoredRecord;
use crate::log::embedded::files::io_error;
use crate::log::embedded::segment;

impl PartState {
    /// Where batch `i`'s records come from: the tail cache, or its segment.
    fn plan(&self, i: usize) -> Result<Planned> {
        let source = match i.checked_sub(self.first_cached) {
            Some(c) => self.cached.get(c).cloned().map(Source::Cached),
            None => self.entries[i].loc().and_then(|loc| {
                let segment = self.slot(loc.segment)?.segment.clone()?;
                Some(Source::Segment(segment, loc))
            }),
        };
        let source = source
            .ok_or_else(|| Error::new(ErrorKind::Internal, "an evicted batch has no segment"))?;
        Ok(Planned {
            base: self.entries[i].base,
            source,
        })
    }

    /// The index of the first batch holding an offset at or after `from`.
    fn first_batch_from(&self, from: u64) -> usize {
        let i = entry_index(&self.entries, from);
        match self.entries.get(i) {
            // `from` lies after batch i: in a hole a deletion left (or past the end).
            Some(entry) if from >= entry.base + self.count(i) => i + 1,
            _ => i,
        }
    }
}

impl Partition {
    /// Up to `max` records from offset `from` (from the next offset that exists, where
    /// `from` was deleted). Cached batches are cloned out under the lock (cheap:
    /// reference-counted); evicted ones are read back from their segment after it.
    pub fn read(&self, from: u64, max: usize) -> Result<Vec<StoredRecord>> {
        let mut plan = Vec::new();
        let mut covered = 0u64;
        {
            let state = lock(&self.state)?;
            if from >= state.end || max == 0 {
                return Ok(Vec::new());
            }
            for i in state.first_batch_from(from)..state.entries.len() {
                if covered >= max as u64 {
                    break;
                }
                let skip = from.saturating_sub(state.entries[i].base);
                covered += state.count(i).saturating_sub(skip);
                plan.push(state.plan(i)?);
            }
        }
        // Sized by what the planned batches hold, not by `max`: a follower asks for up to
        // 1,024 records and usually gets one, and a 48 KiB buffer per read was most of the
        // allocator's page faults under load.
        let mut out = Vec::with_capacity(usize::try_from(covered).unwrap_or(max).min(max));
        for planned in plan {
            let records = planned.records()?;
            let skip = from.saturating_sub(planned.base) as usize;
            for (offset, payload) in (planned.base..).zip(&records[..]).skip(skip) {
                if out.len() == max {
                    return Ok(out);
                }
                out.push(self.stored(offset, payload));
            }
        }
        Ok(out)
    }

    /// The records at `offsets` (ascending), in that order; offsets past the end or deleted
    /// are left out. Every offset is looked up under one lock; the batches are read after it.
    pub fn read_at(&self, offsets: &[u64]) -> Result<Vec<StoredRecord>> {
        // Each planned batch with the range of `offsets` it holds.
        let mut plan = Vec::with_capacity(offsets.len());
        {
            let state = lock(&self.state)?;
            warm_entries(&state.entries, offsets);
            let mut i = 0;
            while let Some(&offset) = offsets.get(i) {
                if offset >= state.end {
                    break;
                }
                let index = entry_index(&state.entries, offset);
                let base = state.entries[index].base;
                let batch_end = base + state.count(index);
                let held = offsets[i..]
                    .iter()
                    .take_while(|o| (base..batch_end).contains(*o))
                    .count();
                if held == 0 {
                    // Before the partition's first batch, or in a hole: nothing there.
                    i += 1;
                    continue;
                }
                plan.push((state.plan(index)?, i..i + held));
                i += held;
            }
        }
        for (planned, _) in &plan {
            planned.warm();
        }
        let mut out = Vec::with_capacity(offsets.len());
        for (planned, held) in plan {
            let records = planned.records()?;
            for &offset in &offsets[held] {
                let payload = usize::try_from(offset - planned.base)
                    .ok()
                    .and_then(|i| records.get(i))
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::Internal,
                            "a batch is shorter than its index entry",
                        )
                    })?;
                out.push(self.stored(offset, payload));
            }
        }
        Ok(out)
    }

    fn stored(&self, offset: u64, payload: &Bytes) -> StoredRecord {
        StoredRecord {
            partition: self.index,
            offset,
            payload: payload.clone(),
        }
    }
}

/// Read one batch back from its segment (through its map when it can) and verify it.
fn read_batch(segment: &Segment, loc: Loc, base: u64) -> Result<Vec<Bytes>> {
    if let Some(bytes) = segment.map.bytes(&segment.file, loc.pos, loc.len) {
        return segment::decode_batch_copied(bytes, &segment.path, loc.pos, base);
    }
    let mut buf = vec![0u8; loc.len as usize];
    segment
        .file
        .read_exact_at(&mut buf, loc.pos)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                segment::corrupt_at(&segment.path, loc.pos, "segment ends inside a batch")
            }
            _ => io_error("cannot read", &segment.path, e),
        })?;
    segment::decode_batch(Bytes::from(buf), &segment.path, loc.pos, base)
}

/// One batch a read returns, and where its records come from.
struct Planned {
    base: u64,
    source: Source,
}

enum Source {
    Cached(Arc<[Bytes]>),
    Segment(Arc<Segment>, Loc),
}

impl Planned {
    /// Load the first bytes of a batch that lies in a mapped segment, so that the reads of
    /// several batches wait for their cache and TLB misses together (see [`warm_entries`]).
    fn warm(&self) {
        if let Source::Segment(segment, loc) = &self.source
            && let Some(bytes) = segment.map.bytes(&segment.file, loc.pos, loc.len)
        {
            std::hint::black_box(bytes.first().copied());
        }
    }

    /// The batch's records: cloned from the cache, or read back and verified.
    fn records(&self) -> Result<Cow<'_, [Bytes]>> {
        Ok(match &self.source {
            Source::Cached(records) => Cow::Borrowed(&records[..]),
            Source::Segment(segment, loc) => Cow::Owned(read_batch(segment, *loc, self.base)?),
        })
    }
}

/// Load the index entries where `offsets` lie if every batch holds one record (the direct
/// guess of [`entry_index`]) before the lookups use them. A task's records are scattered over a
/// long log whose index lies far outside the caches: loads that depend on nothing are issued
/// together and their misses overlap, where the lookups, one after another, would take them in
/// turn. A wrong guess costs one wasted load.
fn warm_entries(entries: &[Entry], offsets: &[u64]) {
    let Some(first) = entries.first() else {
        return;
    };
    for &offset in offsets {
        let guess = offset
            .checked_sub(first.base)
            .and_then(|distance| usize::try_from(distance).ok())
            .and_then(|i| entries.get(i));
        if let Some(entry) = guess {
            std::hint::black_box(entry.base);
        }
    }
}

/// The index of the last entry starting at or before `offset` (the one holding it, unless
/// `offset` lies in a hole after it), or 0 if `offset` precedes them all.
///
/// Direct guesses first: where every batch holds one record (the bridge and the workers append
/// one record at a time) entry `i` starts at `first base + i`, so a random read costs one
/// probe instead of a binary search's ~20 cache misses over a large index. Counting back from
/// the last entry finds recent offsets the same way after a deletion left a hole. Otherwise,
/// binary search.
fn entry_index(entries: &[Entry], offset: u64) -> usize {
    let at = |i: usize| entries.get(i).is_some_and(|e| e.base == offset);
    let from_first = entries
        .first()
        .and_then(|first| offset.checked_sub(first.base))
        .and_then(|distance| usize::try_from(distance).ok())
        .filter(|i| at(*i));
    let from_last = || {
        let last = entries.last()?;
        let distance = usize::try_from(last.base.checked_sub(offset)?).ok()?;
        (entries.len() - 1).checked_sub(distance).filter(|i| at(*i))
    };
    from_first.or_else(from_last).unwrap_or_else(|| {
        entries
            .partition_point(|e| e.base <= offset)
            .saturating_sub(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries for batches of these `(base, count)`, and the end offset after them.
    fn entries(batches: &[(u64, u64)]) -> (Vec<Entry>, u64) {
        let list = batches.iter().map(|&(base, _)| Entry::in_memory(base));
        let end = batches.last().map_or(0, |&(base, count)| base + count);
        (list.collect(), end)
    }

    #[test]
    fn entry_index_finds_the_batch_holding_an_offset() {
        let cases = [
            [(0, 1), (1, 1), (2, 1), (3, 1)].as_slice(),
            &[(0, 1), (1, 3), (4, 1), (5, 1)],
            &[(10, 5), (15, 1), (16, 100), (116, 1)],
        ];
        for batches in cases {
            let (list, end) = entries(batches);
            for offset in list[0].base..end {
                let holding = batches
                    .iter()
                    .position(|&(base, count)| base <= offset && offset < base + count);
                assert_eq!(Some(entry_index(&list, offset)), holding, "offset {offset}");
            }
            assert_eq!(entry_index(&list, 0), 0, "before the first batch");
        }
        assert_eq!(entry_index(&[], 7), 0);
    }
}
