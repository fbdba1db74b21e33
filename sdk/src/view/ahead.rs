//! Records this process appended that the view could not apply as they were appended: it
//! stood before them (appends answered out of order, as a remote log's group commit does),
//! or another applier held the partition's feed. They wait here, as their writer made them,
//! for whoever applies the partition up to them (the background follower, a request
//! catching the view up, the next own append): applied from here, not read back, decoded
//! and parsed a second time. The log stays the truth: a record kept here is the one at its
//! offset, which never changes, and one the view applied from the log meanwhile is dropped.

use std::collections::BTreeMap;

use agentlog_wire::fold::Parsed;
use agentlog_wire::{Record, RecordHeader};

use crate::log::raw::Place;

/// The most records kept per partition: past it, the next ones are read back as any other.
const MAX_KEPT: usize = 1024;

/// One record kept, in the form its writer had it.
pub(super) enum Own {
    /// A new task's command whose params the writer parsed (see
    /// [`TaskView::apply_own_command`](super::TaskView::apply_own_command)): what folding it
    /// needs besides.
    Command {
        header: RecordHeader,
        retention_ms: u64,
        return_immediately: bool,
    },
    /// Any record, with what it changes when its writer knew.
    Record {
        record: Record,
        parsed: Option<Parsed>,
    },
}

/// A partition's records kept ahead of where the view stands, by offset.
#[derive(Default)]
pub(super) struct Ahead {
    kept: BTreeMap<u64, (Place, Own)>,
}

impl Ahead {
    /// Keep `records` (offset, place, record) unless the partition keeps too many already.
    pub(super) fn keep(&mut self, records: impl IntoIterator<Item = (u64, Place, Own)>) {
        for (offset, place, own) in records {
            if self.kept.len() >= MAX_KEPT {
                return;
            }
            self.kept.insert(offset, (place, own));
        }
    }

    /// The first offset from `next` on that a kept record holds: a reader of the log need
    /// read only up to it.
    pub(super) fn first_from(&self, next: u64) -> Option<u64> {
        self.kept.range(next..).next().map(|(offset, _)| *offset)
    }

    /// The records kept from `next` on with no gap, taken out; those before `next` (applied
    /// from the log meanwhile) are dropped.
    pub(super) fn take_from(&mut self, next: u64) -> Vec<(u64, Place, Own)> {
        if self.kept.is_empty() {
            return Vec::new();
        }
        let later = self.kept.split_off(&next);
        self.kept = later;
        let mut run = Vec::new();
        let mut at = next;
        while let Some((place, own)) = self.kept.remove(&at) {
            run.push((at, place, own));
            at += 1;
        }
        run
    }
}

#[cfg(test)]
mod tests {
    use agentlog_wire::RecordBody;

    use super::*;

    fn own(n: u64) -> (u64, Place, Own) {
        let record = crate::view::tests::record(
            "t",
            "m",
            RecordBody::CancelRequest {
                metadata: String::new(),
            },
        );
        (
            n,
            Place::UNKNOWN,
            Own::Record {
                record,
                parsed: None,
            },
        )
    }

    #[test]
    fn a_run_is_taken_from_the_next_offset_and_what_is_behind_it_is_dropped() {
        let mut ahead = Ahead::default();
        ahead.keep([own(3), own(5), own(6), own(8)]);
        // Nothing at 4: nothing to take yet; a reader reads 4 alone.
        assert!(ahead.take_from(4).is_empty());
        assert_eq!(ahead.first_from(4), Some(5));
        // 3 was applied from the log meanwhile (the view is at 5): dropped; 5 and 6 run on.
        let run: Vec<u64> = ahead.take_from(5).iter().map(|(o, ..)| *o).collect();
        assert_eq!(run, vec![5, 6]);
        assert_eq!(ahead.first_from(7), Some(8));
        let rest: Vec<u64> = ahead.take_from(8).iter().map(|(o, ..)| *o).collect();
        assert_eq!(rest, vec![8]);
        assert!(ahead.kept.is_empty());
    }

    #[test]
    fn at_most_max_kept_records_wait() {
        let mut ahead = Ahead::default();
        ahead.keep((0..MAX_KEPT as u64 + 10).map(own));
        assert_eq!(ahead.take_from(0).len(), MAX_KEPT);
    }
}
