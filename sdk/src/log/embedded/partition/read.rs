//! The read path: a read is planned under the partition lock (which batches, from the tail
//! cache or from their segment), and its batches are read and decoded after it.
//!
//! A record asked for with its [`Place`] is read there, through the segment's map, without its
//! index entry: in a long log the entry is a cache miss of its own, which every `GetTask`
//! waited for before the batch. What lies at the place is checked (the place's tag is the
//! segment's that holds the offset, and a checksummed header whose batch holds the offset lies
//! there, inside the segment's published bytes); if it is not the record's batch, the whole
//! read is done again by the index.

use std::borrow::Cow;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;

use super::{Entry, Loc, PartState, Partition, Segment, lock};
use crate::error::{Error, ErrorKind, Result};
use crate::log::StoredRecord;
use crate::log::embedded::files::io_error;
use crate::log::embedded::segment::{self, HEADER_LEN};
use crate::log::raw::Place;

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
            place: self.entries[i].place(),
            source,
        })
    }

    /// The segment holding `offset`, its id, and how many of its bytes are published; `None`
    /// past the end, before the first segment, in a hole, or in memory mode.
    fn holding(&self, offset: u64) -> Option<(&Arc<Segment>, usize, u64)> {
        if offset >= self.end {
            return None;
        }
        let k = self
            .slots
            .partition_point(|s| s.base <= offset)
            .checked_sub(1)?;
        let slot = self.slots.get(k)?;
        Some((slot.segment.as_ref()?, self.first_slot + k, slot.published))
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
                out.push(self.stored(offset, payload, planned.place));
            }
        }
        Ok(out)
    }

    /// The records at `offsets` (ascending), in that order; offsets past the end or deleted
    /// are left out. `places`, one per offset or none, say where the records are: read there
    /// when every one is known and checks out, else looked up ([module docs](self)).
    pub fn read_at(&self, offsets: &[u64], places: &[Place]) -> Result<Vec<StoredRecord>> {
        if places.len() == offsets.len()
            && !offsets.is_empty()
            && let Some(read) = self.read_placed(offsets, places)?
        {
            return Ok(read);
        }
        self.read_indexed(offsets)
    }

    /// [`read_at`](Self::read_at) at the records' places; `None` where a place is unknown or
    /// does not hold its record's batch (then the caller looks them up).
    pub(in crate::log::embedded) fn read_placed(
        &self,
        offsets: &[u64],
        places: &[Place],
    ) -> Result<Option<Vec<StoredRecord>>> {
        let mut plan = Vec::with_capacity(offsets.len());
        {
            let state = lock(&self.state)?;
            for (&offset, place) in offsets.iter().zip(places) {
                let Some((_, pos)) = place.in_segment_parts() else {
                    return Ok(None);
                };
                let Some((segment, id, published)) = state.holding(offset) else {
                    return Ok(None);
                };
                if !place.is_in(id) {
                    return Ok(None);
                }
                plan.push((offset, Arc::clone(segment), id, pos, published));
            }
        }
        // The batches' first lines, all at once: their misses overlap (see `warm_entries`).
        for (_, segment, _, pos, published) in &plan {
            if pos + HEADER_LEN as u64 <= *published
                && let Some(bytes) = segment.map.bytes(&segment.file, *pos, 1)
            {
                std::hint::black_box(bytes.first().copied());
            }
        }
        let mut out = Vec::with_capacity(plan.len());
        // The batch read last, reused by the next offset at the same place of the same
        // segment (a place is a position in its segment: every segment has a batch at 0).
        let mut last: Option<(Arc<Segment>, u64, u64, Vec<Bytes>)> = None;
        for (offset, segment, id, pos, published) in plan {
            let same = |(at_segment, at, _, _): &(Arc<Segment>, u64, u64, Vec<Bytes>)| {
                Arc::ptr_eq(at_segment, &segment) && *at == pos
            };
            if !last.as_ref().is_some_and(same) {
                let Some((base, records)) = batch_at(&segment, pos, published) else {
                    return Ok(None);
                };
                last = Some((segment, pos, base, records));
            }
            let Some(payload) = last.as_ref().and_then(|(_, _, base, records)| {
                let i = usize::try_from(offset.checked_sub(*base)?).ok()?;
                records.get(i)
            }) else {
                return Ok(None);
            };
            out.push(self.stored(offset, payload, Place::in_segment(id, pos)));
        }
        Ok(Some(out))
    }

    /// [`read_at`](Self::read_at) by the index: every offset looked up under one lock, the
    /// batches read after it.
    fn read_indexed(&self, offsets: &[u64]) -> Result<Vec<StoredRecord>> {
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
                out.push(self.stored(offset, payload, planned.place));
            }
        }
        Ok(out)
    }

    fn stored(&self, offset: u64, payload: &Bytes, place: Place) -> StoredRecord {
        StoredRecord {
            partition: self.index,
            offset,
            payload: payload.clone(),
            place,
        }
    }
}

/// The batch at byte `pos` of `segment`, read through its map, with its base offset: `None`
/// unless a whole, verified batch lies there inside the `published` bytes (a place that does
/// not hold one is not trusted, whatever it says).
fn batch_at(segment: &Segment, pos: u64, published: u64) -> Option<(u64, Vec<Bytes>)> {
    let within = |len: usize| {
        pos.checked_add(len as u64)
            .is_some_and(|end| end <= published)
    };
    if !within(HEADER_LEN) {
        return None;
    }
    let header = segment.map.bytes(&segment.file, pos, HEADER_LEN as u32)?;
    let header = segment::decode_header(header)?;
    let len = header.batch_len();
    if !within(len) {
        return None;
    }
    let bytes = segment
        .map
        .bytes(&segment.file, pos, u32::try_from(len).ok()?)?;
    let records =
        segment::decode_batch_copied(bytes, &segment.path, pos, header.base_offset).ok()?;
    Some((header.base_offset, records))
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
    place: Place,
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
