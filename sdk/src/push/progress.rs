//! How far each partition's updates are done: the offset the sender may commit is the
//! oldest record with a notification still queued or being sent, or an anchor (below), or
//! else the next record to read. Committed on the log (the consumer group's offset), it is
//! where a restarted or replacing sender starts: what was in flight is sent again, nothing is
//! lost.
//!
//! A config whose receiver keeps failing would hold its partition's point back for as long
//! as it retries, and a restart would send again everything delivered since to every other
//! config. So such a config is *parked*: a push progress record on its task's log says from
//! which update on its notifications are not done, and once the sender reads that record
//! back, the config's notifications hold the point no more; the record (its *anchor*) holds
//! it instead, until they are done or the config is parked again further on. A sender that
//! takes the partition over finds the record and resumes the config there.

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
    /// Offsets holding the commit point (notices not done, anchors), and how many.
    held: BTreeMap<u64, u32>,
    /// Notices not done, held at their offset or by an anchor.
    pending: usize,
    /// What was committed last.
    committed: u64,
}

impl Partition {
    fn hold(&mut self, offset: u64) {
        *self.held.entry(offset).or_default() += 1;
    }

    /// `false` if nothing was held there.
    fn unhold(&mut self, offset: u64) -> bool {
        let Some(count) = self.held.get_mut(&offset) else {
            return false;
        };
        *count -= 1;
        if *count == 0 {
            self.held.remove(&offset);
        }
        true
    }
}

/// Every owned partition's progress.
#[derive(Debug, Default)]
pub(super) struct Progress {
    partitions: HashMap<u32, Partition>,
    epochs: u64,
    /// Notices not done over every partition (what the memory bound counts).
    pending: usize,
    /// Whether the commit point may have moved since [`take_moved`](Self::take_moved) last
    /// asked.
    moved: bool,
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

    /// Whether `partition` is owned (read in its current assignment).
    pub(super) fn owns(&self, partition: u32) -> bool {
        self.partitions.contains_key(&partition)
    }

    /// Whether `epoch` is still `partition`'s current assignment.
    pub(super) fn is_current(&self, partition: u32, epoch: u64) -> bool {
        self.partitions
            .get(&partition)
            .is_some_and(|p| p.epoch == epoch)
    }

    fn current(&mut self, partition: u32, epoch: u64) -> Option<&mut Partition> {
        self.partitions
            .get_mut(&partition)
            .filter(|p| p.epoch == epoch)
    }

    /// The record at `offset` of `partition` was read, with `notices` notifications to send
    /// (held at `offset`).
    pub(super) fn read(&mut self, partition: u32, offset: u64, notices: usize) {
        self.epoch(partition);
        let Some(p) = self.partitions.get_mut(&partition) else {
            return;
        };
        p.next = p.next.max(offset + 1);
        if notices > 0 {
            *p.held.entry(offset).or_default() += notices as u32;
            p.pending += notices;
            self.pending += notices;
        }
    }

    /// `notices` notifications of earlier records to send again, held by an anchor (a
    /// config resumed where a push progress record said).
    pub(super) fn add_anchored(&mut self, partition: u32, epoch: u64, notices: usize) {
        if let Some(p) = self.current(partition, epoch) {
            p.pending += notices;
            self.pending += notices;
        }
    }

    /// One notification of the record at `offset` is done (sent or given up); `anchored`:
    /// an anchor held it rather than its offset.
    pub(super) fn done(&mut self, partition: u32, epoch: u64, offset: u64, anchored: bool) {
        let Some(p) = self.current(partition, epoch) else {
            return;
        };
        if (anchored || p.unhold(offset)) && p.pending > 0 {
            p.pending -= 1;
            self.pending -= 1;
            self.moved = true;
        }
    }

    /// An anchor at `offset` (a push progress record) holds the point.
    pub(super) fn anchor(&mut self, partition: u32, epoch: u64, offset: u64) {
        if let Some(p) = self.current(partition, epoch) {
            p.hold(offset);
        }
    }

    /// A notice held at `offset` is held by an anchor now; or an anchor at `offset` holds no
    /// more.
    pub(super) fn release(&mut self, partition: u32, epoch: u64, offset: u64) {
        if let Some(p) = self.current(partition, epoch)
            && p.unhold(offset)
        {
            self.moved = true;
        }
    }

    /// Whether the commit point may have moved since the last call: then an idle reader
    /// commits at once (a restart sends again everything past the committed point).
    pub(super) fn take_moved(&mut self) -> bool {
        std::mem::take(&mut self.moved)
    }

    /// Notifications not done over every partition.
    pub(super) fn pending(&self) -> usize {
        self.pending
    }

    /// Whether something at or past `offset + 1` was read in `partition`: what a hold at
    /// `offset` keeps from being committed.
    pub(super) fn read_past(&self, partition: u32, offset: u64) -> bool {
        self.partitions
            .get(&partition)
            .is_some_and(|p| p.next > offset + 1)
    }

    /// The partitions whose commit point moved past what was committed, with that point
    /// (marked committed: call it only when committing).
    pub(super) fn commit_points(&mut self) -> Vec<(u32, u64)> {
        let mut moved = Vec::new();
        for (partition, p) in &mut self.partitions {
            // An anchor may lie past what was read (a config resumed from a record ahead).
            let point = p.held.keys().next().map_or(p.next, |h| (*h).min(p.next));
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
            self.pending -= p.pending;
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
        assert_eq!(progress.pending(), 3);
        progress.done(0, epoch, 2, false);
        assert_eq!(progress.commit_points(), [], "1 still holds");
        progress.done(0, epoch, 1, false);
        progress.done(0, epoch, 1, false);
        assert_eq!(progress.commit_points(), [(0, 4)]);
        assert_eq!(progress.pending(), 0);
    }

    #[test]
    fn a_parked_notice_holds_no_more_once_its_anchor_is_read() {
        let mut progress = Progress::default();
        let epoch = progress.epoch(0);
        progress.read(0, 1, 1); // the failing config's
        progress.read(0, 2, 1); // a healthy one's
        progress.done(0, epoch, 2, false);
        progress.read(0, 3, 0);
        assert_eq!(progress.commit_points(), [(0, 1)]);
        // The progress record at 4, read back: the anchor holds, not the notice.
        progress.read(0, 4, 0);
        progress.anchor(0, epoch, 4);
        progress.release(0, epoch, 1);
        progress.read(0, 5, 0);
        assert_eq!(progress.commit_points(), [(0, 4)]);
        assert_eq!(progress.pending(), 1, "still to send");
        // Parked again further on: the old anchor goes.
        progress.read(0, 6, 0);
        progress.anchor(0, epoch, 6);
        progress.release(0, epoch, 4);
        assert_eq!(progress.commit_points(), [(0, 6)]);
        progress.done(0, epoch, 1, true);
        progress.release(0, epoch, 6);
        assert_eq!(progress.commit_points(), [(0, 7)]);
        assert_eq!(progress.pending(), 0);
    }

    #[test]
    fn an_anchor_ahead_of_the_reading_holds_at_the_reading() {
        let mut progress = Progress::default();
        let epoch = progress.epoch(0);
        progress.read(0, 10, 0);
        progress.add_anchored(0, epoch, 2);
        progress.anchor(0, epoch, 20);
        assert_eq!(progress.commit_points(), [(0, 11)]);
        progress.read(0, 25, 0);
        assert_eq!(progress.commit_points(), [(0, 20)]);
        progress.done(0, epoch, 3, true);
        progress.done(0, epoch, 4, true);
        progress.release(0, epoch, 20);
        assert_eq!(progress.commit_points(), [(0, 26)]);
        assert_eq!(progress.pending(), 0);
    }

    #[test]
    fn notices_of_an_earlier_assignment_count_no_more() {
        let mut progress = Progress::default();
        let old = progress.epoch(3);
        progress.read(3, 10, 1);
        progress.drop_partition(3);
        assert_eq!(progress.pending(), 0);
        let new = progress.epoch(3);
        assert_ne!(old, new);
        progress.read(3, 10, 1);
        progress.done(3, old, 10, false);
        assert_eq!(progress.pending(), 1);
        assert!(progress.is_current(3, new) && !progress.is_current(3, old));
    }
}
