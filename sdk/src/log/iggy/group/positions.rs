//! Where a consumer-group member stands in each partition it owns ([`Positions`]): what
//! lets it skip a partition with nothing new instead of polling it.

use std::collections::HashMap;

/// Per owned partition, the member's cursor and how far it knows the partition is done.
#[derive(Debug, Default)]
pub(super) struct Positions {
    /// The offset after the last record this member returned.
    cursors: HashMap<u32, u64>,
    /// An end offset below which a poll found nothing left for this member: every record
    /// there was committed by the group or returned here already.
    drained: HashMap<u32, u64>,
}

impl Positions {
    /// The offset after the last record returned from `partition`, if any was.
    pub(super) fn cursor(&self, partition: u32) -> Option<u64> {
        self.cursors.get(&partition).copied()
    }

    /// Records up to `next` (exclusive) of `partition` were returned.
    pub(super) fn returned(&mut self, partition: u32, next: u64) {
        self.cursors.insert(partition, next);
    }

    /// Records up to `next` (exclusive) of `partition` were committed; the cursor never moves
    /// back.
    pub(super) fn committed(&mut self, partition: u32, next: u64) {
        if let Some(cursor) = self.cursors.get_mut(&partition) {
            *cursor = (*cursor).max(next);
        }
    }

    /// A poll of `partition` made when its end was at least `end` found nothing.
    pub(super) fn drained(&mut self, partition: u32, end: u64) {
        let known = self.drained.entry(partition).or_default();
        *known = (*known).max(end);
    }

    /// Whether `partition`, whose end is `end`, has nothing this member has not seen: a poll
    /// of it would find nothing. Unknown (never polled since it was owned): only if empty.
    pub(super) fn caught_up(&self, partition: u32, end: u64) -> bool {
        let done = self
            .cursor(partition)
            .max(self.drained.get(&partition).copied());
        end == 0 || done.is_some_and(|done| end <= done)
    }

    /// Keep only the partitions in `owned` (sorted): one handed back later starts unknown.
    pub(super) fn retain(&mut self, owned: &[u32]) {
        self.cursors.retain(|p, _| owned.binary_search(p).is_ok());
        self.drained.retain(|p, _| owned.binary_search(p).is_ok());
    }

    /// Forget `partition` (it moved to another member).
    pub(super) fn forget(&mut self, partition: u32) {
        self.cursors.remove(&partition);
        self.drained.remove(&partition);
    }

    /// Forget everything (a new membership starts at the committed offsets).
    pub(super) fn clear(&mut self) {
        self.cursors.clear();
        self.drained.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_is_caught_up_once_known_or_empty_and_only_up_to_what_was_seen() {
        let mut positions = Positions::default();
        assert!(!positions.caught_up(0, 1), "never polled: poll it");
        assert!(positions.caught_up(0, 0), "empty: nothing to poll for");
        positions.drained(0, 5);
        assert!(positions.caught_up(0, 5));
        assert!(!positions.caught_up(0, 6), "grew since");
        positions.returned(0, 9);
        assert!(positions.caught_up(0, 9));
        positions.drained(0, 3);
        assert!(
            positions.caught_up(0, 9),
            "a lower end does not undo the cursor"
        );
        positions.committed(0, 7);
        assert_eq!(
            positions.cursor(0),
            Some(9),
            "a commit never moves the cursor back"
        );
        positions.retain(&[1, 2]);
        assert!(
            !positions.caught_up(0, 1),
            "handed back later: unknown again"
        );
        positions.drained(2, 4);
        positions.forget(2);
        assert!(!positions.caught_up(2, 4));
        positions.returned(1, 1);
        positions.clear();
        assert_eq!(positions.cursor(1), None);
    }
}
