//! What retention asks of the view: which finished tasks expire when (so that memory is
//! bounded by the tasks inside retention), and which log offsets still hold a record some
//! retained task needs (so that the log can delete the segments that hold none).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use super::Slot;

/// Finished tasks with a retention, by (expiry, slot): the soonest first. A key is 128 bits:
/// the expiry above, the slot below.
#[derive(Default)]
pub(in crate::view) struct Expiring {
    tasks: BTreeSet<u128>,
}

fn expiring_key(at: u64, slot: Slot) -> u128 {
    (u128::from(at) << 64) | u128::from(slot)
}

impl Expiring {
    /// Move `slot` from expiring at `was` (if it did) to expiring at `now` (if it does).
    pub(in crate::view) fn update(&mut self, slot: Slot, was: Option<u64>, now: Option<u64>) {
        if was == now {
            return;
        }
        if let Some(was) = was {
            self.tasks.remove(&expiring_key(was, slot));
        }
        if let Some(now) = now {
            self.tasks.insert(expiring_key(now, slot));
        }
    }

    /// The tasks `keys` (expiry, slot) at once, for a view that replayed or restored them.
    pub(in crate::view) fn build(keys: impl Iterator<Item = (u64, Slot)>) -> Self {
        let mut keys: Vec<u128> = keys.map(|(at, slot)| expiring_key(at, slot)).collect();
        keys.sort_unstable();
        Self {
            tasks: keys.into_iter().collect(),
        }
    }

    /// When the next task expires.
    pub(in crate::view) fn next_due(&self) -> Option<u64> {
        self.tasks.first().map(|key| (key >> 64) as u64)
    }

    /// Take out the next task expired at `now_ms`, if any.
    pub(in crate::view) fn pop_expired(&mut self, now_ms: u64) -> Option<Slot> {
        if self.next_due()? > now_ms {
            return None;
        }
        self.tasks.pop_first().map(|key| key as Slot)
    }

    pub(in crate::view) fn len(&self) -> usize {
        self.tasks.len()
    }
}

/// One partition's offsets that hold a record a retained task needs (its applied records),
/// counted per chunk of [`LiveRecords::CHUNK`] offsets: a segment none of whose chunks is
/// counted holds no such record. A chunk is small against a segment (thousands of records),
/// so a segment is kept for a neighbour's record at most at its two ends.
#[derive(Default, Clone, PartialEq, Eq, Debug)]
pub(in crate::view) struct LiveRecords {
    chunks: BTreeMap<u64, u32>,
}

impl LiveRecords {
    /// Offsets per chunk.
    pub(in crate::view) const CHUNK: u64 = 64;

    pub(in crate::view) fn add(&mut self, offset: u64) {
        *self.chunks.entry(offset / Self::CHUNK).or_default() += 1;
    }

    pub(in crate::view) fn remove(&mut self, offset: u64) {
        let chunk = offset / Self::CHUNK;
        if let Some(count) = self.chunks.get_mut(&chunk) {
            *count -= 1;
            if *count == 0 {
                self.chunks.remove(&chunk);
            }
        }
    }

    /// The counts of `offsets` at once, for a view restored from a checkpoint.
    pub(in crate::view) fn build(mut offsets: Vec<u64>) -> Self {
        for offset in &mut offsets {
            *offset /= Self::CHUNK;
        }
        let (Some(first), Some(last)) = (offsets.iter().min(), offsets.iter().max()) else {
            return Self::default();
        };
        let span = usize::try_from(last - first + 1).unwrap_or(usize::MAX);
        if span <= offsets.len().saturating_mul(4) {
            // Dense (a partition's records are mostly retained tasks'): counted in place.
            let mut counts = vec![0u32; span];
            for chunk in &offsets {
                counts[(chunk - first) as usize] += 1;
            }
            let chunks = (*first..)
                .zip(counts)
                .filter(|(_, count)| *count > 0)
                .collect();
            return Self { chunks };
        }
        offsets.sort_unstable();
        let chunks = offsets
            .chunk_by(|a, b| a == b)
            .map(|run| (run[0], run.len() as u32))
            .collect();
        Self { chunks }
    }

    /// Count every chunk after `last`'s up to `offset`'s (a spilled task's range grew).
    pub(in crate::view) fn extend(&mut self, last: u64, offset: u64) {
        for chunk in (last / Self::CHUNK + 1)..=(offset / Self::CHUNK) {
            *self.chunks.entry(chunk).or_default() += 1;
        }
    }

    /// Uncount every chunk from `from`'s to `last`'s.
    pub(in crate::view) fn retract(&mut self, from: u64, last: u64) {
        for chunk in (from / Self::CHUNK)..=(last / Self::CHUNK) {
            self.remove(chunk * Self::CHUNK);
        }
    }

    /// One offset in each chunk from `from`'s to `last`'s.
    pub(in crate::view) fn chunk_offsets(from: u64, last: u64) -> impl Iterator<Item = u64> {
        ((from / Self::CHUNK)..=(last / Self::CHUNK)).map(|chunk| chunk * Self::CHUNK)
    }

    /// Whether any offset in `range` may hold a needed record.
    pub(in crate::view) fn any_in(&self, range: Range<u64>) -> bool {
        if range.is_empty() {
            return false;
        }
        let first = range.start / Self::CHUNK;
        let last = (range.end - 1) / Self::CHUNK;
        self.chunks.range(first..=last).next().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiring_tasks_come_out_soonest_first_once_due() {
        let mut expiring = Expiring::default();
        let (a, b): (Slot, Slot) = (1, 2);
        expiring.update(a, None, Some(20));
        expiring.update(b, None, Some(10));
        assert_eq!(expiring.pop_expired(9), None);
        assert_eq!(expiring.pop_expired(10), Some(b));
        // Moved (a new incarnation finished later), then due.
        expiring.update(a, Some(20), Some(30));
        assert_eq!(expiring.pop_expired(29), None);
        assert_eq!(expiring.pop_expired(30), Some(a));
        assert_eq!(expiring.len(), 0);
        expiring.update(b, None, Some(5));
        expiring.update(b, Some(5), None);
        assert_eq!(expiring.pop_expired(u64::MAX), None);
        let built = Expiring::build([(7, a), (3, b)].into_iter());
        assert_eq!(built.next_due(), Some(3));
    }

    #[test]
    fn live_records_answer_per_range() {
        let mut live = LiveRecords::default();
        let chunk = LiveRecords::CHUNK;
        live.add(5);
        live.add(6);
        live.add(3 * chunk);
        assert!(live.any_in(0..1));
        assert!(!live.any_in(chunk..3 * chunk));
        assert!(live.any_in(chunk..3 * chunk + 1));
        assert!(!live.any_in(7..7));
        live.remove(5);
        assert!(live.any_in(0..chunk));
        live.remove(6);
        assert!(!live.any_in(0..3 * chunk));
        live.remove(3 * chunk);
        live.remove(3 * chunk); // an offset never added changes nothing
        assert!(!live.any_in(0..u64::MAX));
        let mut one_by_one = LiveRecords::default();
        for offset in [9, 1, 700, 65, 64, 3] {
            one_by_one.add(offset);
        }
        assert_eq!(LiveRecords::build(vec![9, 1, 700, 65, 64, 3]), one_by_one);
        // Dense offsets, counted in place.
        let offsets: Vec<u64> = (0..1000).chain(200..300).collect();
        let mut one_by_one = LiveRecords::default();
        for offset in &offsets {
            one_by_one.add(*offset);
        }
        assert_eq!(LiveRecords::build(offsets), one_by_one);
        assert_eq!(LiveRecords::build(Vec::new()), LiveRecords::default());
    }
}
