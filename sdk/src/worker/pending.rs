//! Which command offsets are still being processed, per partition, and so how far each
//! partition may be committed.
//!
//! A partition is committed only up to its first record still in flight: committing past a
//! record whose handler is running would lose it if the worker crashed, while committing
//! before it merely re-delivers records that were finished (at least once).

use std::collections::BTreeMap;

use foldhash::HashMap;

/// In-flight offsets of the polled partitions.
#[derive(Debug, Default)]
pub(super) struct Pending {
    partitions: HashMap<u32, PartitionPending>,
}

#[derive(Debug, Default)]
struct PartitionPending {
    /// In-flight offsets, counted: after a rebalance the same offset may be delivered again
    /// while its first delivery still runs.
    in_flight: BTreeMap<u64, usize>,
    /// One past the highest offset delivered.
    delivered_end: u64,
    /// The last committed offset (next offset to consume), as far as this member knows.
    committed: u64,
}

impl Pending {
    /// Note a delivered record as in flight.
    pub(super) fn start(&mut self, partition: u32, offset: u64) {
        let p = self.partitions.entry(partition).or_default();
        *p.in_flight.entry(offset).or_insert(0) += 1;
        p.delivered_end = p.delivered_end.max(offset + 1);
    }

    /// Note a delivered record as done (handled or skipped).
    pub(super) fn finish(&mut self, partition: u32, offset: u64) {
        let Some(p) = self.partitions.get_mut(&partition) else {
            return;
        };
        if let Some(count) = p.in_flight.get_mut(&offset) {
            *count -= 1;
            if *count == 0 {
                p.in_flight.remove(&offset);
            }
        }
    }

    /// The partitions whose commit point moved past what was committed: `(partition, next)`.
    pub(super) fn commits(&self) -> Vec<(u32, u64)> {
        let mut out: Vec<_> = self
            .partitions
            .iter()
            .filter_map(|(partition, p)| {
                let point = p
                    .in_flight
                    .keys()
                    .next()
                    .copied()
                    .unwrap_or(p.delivered_end);
                (point > p.committed).then_some((*partition, point))
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// Note that `partition` was committed up to `next`.
    pub(super) fn committed(&mut self, partition: u32, next: u64) {
        if let Some(p) = self.partitions.get_mut(&partition) {
            p.committed = p.committed.max(next);
        }
    }

    /// How many records are in flight over all partitions.
    #[cfg(test)]
    pub(super) fn in_flight(&self) -> usize {
        self.partitions
            .values()
            .map(|p| p.in_flight.values().sum::<usize>())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_stop_at_the_first_record_in_flight() {
        let mut pending = Pending::default();
        for offset in 0..4 {
            pending.start(0, offset);
        }
        assert_eq!(pending.commits(), vec![]);
        pending.finish(0, 0);
        pending.finish(0, 2);
        assert_eq!(pending.commits(), vec![(0, 1)]);
        pending.committed(0, 1);
        assert_eq!(pending.commits(), vec![]);
        pending.finish(0, 1);
        assert_eq!(pending.commits(), vec![(0, 3)]);
        pending.finish(0, 3);
        assert_eq!(pending.commits(), vec![(0, 4)]);
        pending.committed(0, 4);
        assert_eq!(pending.commits(), vec![]);
        assert_eq!(pending.in_flight(), 0);
    }

    #[test]
    fn partitions_are_independent() {
        let mut pending = Pending::default();
        pending.start(0, 5);
        pending.start(1, 7);
        pending.finish(1, 7);
        // Partition 0 was delivered from offset 5: everything before it is done already.
        assert_eq!(pending.commits(), vec![(0, 5), (1, 8)]);
        pending.committed(0, 5);
        pending.committed(1, 8);
        pending.finish(0, 5);
        assert_eq!(pending.commits(), vec![(0, 6)]);
    }

    #[test]
    fn a_redelivered_offset_stays_in_flight_until_both_copies_finish() {
        let mut pending = Pending::default();
        pending.start(0, 0);
        pending.start(0, 0);
        pending.finish(0, 0);
        assert_eq!(pending.commits(), vec![]);
        pending.finish(0, 0);
        assert_eq!(pending.commits(), vec![(0, 1)]);
        // Finishing an unknown offset or partition changes nothing.
        pending.finish(0, 9);
        pending.finish(3, 0);
        assert_eq!(pending.commits(), vec![(0, 1)]);
    }
}
