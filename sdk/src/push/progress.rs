//! How far each partition's updates are done: the offset the sender may commit is the
//! oldest record with a notification still queued or being sent, or else the next record to
//! read. Committed on the log (the consumer group's offset), it is where a restarted or
//! replacing sender starts: what was in flight is sent again, nothing is lost.

use std::collections::BTreeMap;

use foldhash::HashMap;

/// One partition's progress.
#[derive(Debug, Default)]
struct Partition {
    /// Which assignment of the partition to this sender the notices belong to: a notice of
    /// an earlier one (the partition went to another sender and came back) counts no more.
    epoch: u64,
    /// The next offset to read.
    next: u64,
    /// Offsets with notices not done yet, and how many.
    held: BTreeMap<u64, u32>,
    /// What was committed last.
    committed: u64,
}

/// Every owned partition's progress.
#[derive(Debug, Default)]
pub(super) struct Progress {
    partitions: HashMap<u32, Partition>,
    epochs: u64,
    /// Notices held over every partition.
    held: usize,
    /// Whether a notice was done since [`take_delivered`](Self::take_delivered) last asked.
    delivered: bool,
}

impl Progress {
    /// The epoch of `partition`'s current assignment (a new one for a partition not owned).
    pub(super) fn epoch(&mut self, partition: u32) -> u64 {
        let epochs = &mut self.epochs;
        self.partitions
            .entry(partition)
            .or_insert_with(|| {
                *epochs += 1;
                Partition {
                    epoch: *epochs,
                    ..Partition::default()
                }
            })
            .epoch
    }

    /// Whether `epoch` is still `partition`'s current assignment.
    pub(super) fn is_current(&self, partition: u32, epoch: u64) -> bool {
        self.partitions
            .get(&partition)
            .is_some_and(|p| p.epoch == epoch)
    }

    /// The record at `offset` of `partition` was read, with `notices` notifications to send.
    pub(super) fn read(&mut self, partition: u32, offset: u64, notices: usize) {
        self.epoch(partition);
        let Some(p) = self.partitions.get_mut(&partition) else {
            return;
        };
        p.next = p.next.max(offset + 1);
        if notices > 0 {
            *p.held.entry(offset).or_default() += notices as u32;
            self.held += notices;
        }
    }

    /// One notification of the record at `offset` is done (sent or given up).
    pub(super) fn done(&mut self, partition: u32, epoch: u64, offset: u64) {
        let Some(p) = self.partitions.get_mut(&partition) else {
            return;
        };
        if p.epoch != epoch {
            return;
        }
        if let Some(count) = p.held.get_mut(&offset) {
            *count -= 1;
            if *count == 0 {
                p.held.remove(&offset);
            }
            self.held -= 1;
            self.delivered = true;
        }
    }

    /// Whether a notice was done since the last call: then its commit should not wait (a
    /// restart sends again everything past the committed point).
    pub(super) fn take_delivered(&mut self) -> bool {
        std::mem::take(&mut self.delivered)
    }

    /// Notifications held over every partition.
    pub(super) fn held(&self) -> usize {
        self.held
    }

    /// The partitions whose commit point moved past what was committed, with that point
    /// (marked committed: call it only when committing).
    pub(super) fn commit_points(&mut self) -> Vec<(u32, u64)> {
        let mut moved = Vec::new();
        for (partition, p) in &mut self.partitions {
            let point = p.held.keys().next().copied().unwrap_or(p.next);
            if point > p.committed {
                p.committed = point;
                moved.push((*partition, point));
            }
        }
        moved
    }

    /// A commit of `partition` failed: the next call of [`commit_points`](Self::commit_points) gives
    /// its point again.
    pub(super) fn uncommit(&mut self, partition: u32) {
        if let Some(p) = self.partitions.get_mut(&partition) {
            p.committed = 0;
        }
    }

    /// Forget a partition this sender no longer owns; its notices count no more.
    pub(super) fn drop_partition(&mut self, partition: u32) {
        if let Some(p) = self.partitions.remove(&partition) {
            self.held -= p.held.values().map(|n| *n as usize).sum::<usize>();
        }
    }

    /// The partitions followed.
    pub(super) fn partitions(&self) -> Vec<u32> {
        self.partitions.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_point_is_the_oldest_record_not_done() {
        let mut progress = Progress::default();
        let epoch = progress.epoch(0);
        progress.read(0, 0, 0);
        progress.read(0, 1, 2);
        progress.read(0, 2, 1);
        progress.read(0, 3, 0);
        assert_eq!(progress.commit_points(), [(0, 1)]);
        assert_eq!(progress.held(), 3);
        progress.done(0, epoch, 2);
        assert_eq!(progress.commit_points(), [], "1 still holds");
        progress.done(0, epoch, 1);
        progress.done(0, epoch, 1);
        assert_eq!(progress.commit_points(), [(0, 4)]);
        assert_eq!(progress.held(), 0);
    }

    #[test]
    fn notices_of_an_earlier_assignment_count_no_more() {
        let mut progress = Progress::default();
        let old = progress.epoch(3);
        progress.read(3, 10, 1);
        progress.drop_partition(3);
        assert_eq!(progress.held(), 0);
        let new = progress.epoch(3);
        assert_ne!(old, new);
        progress.read(3, 10, 1);
        progress.done(3, old, 10);
        assert_eq!(progress.held(), 1);
        assert!(progress.is_current(3, new) && !progress.is_current(3, old));
    }
}
