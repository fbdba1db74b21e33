//! Records this process has just appended, applied to the view at once: when the view stands
//! right before them and nobody else is applying their partition, a bridge's command and a
//! worker's reports reach the view without being read back, decoded and parsed again. The
//! applied record is the one appended (the log stays the truth); a view standing elsewhere
//! gets it from its follower as any other record.

use std::sync::atomic::Ordering;

use agentlog_wire::fold::{Claim, Parsed};
use agentlog_wire::{Record, RecordBody};

use super::TaskView;
use super::tasks::Tasks;
use crate::log::raw::Place;

/// What [`TaskView::apply_own_command`] did with a command record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnCommand {
    /// Not applied here: the view was elsewhere or busy; it applies it from the log.
    NotApplied,
    /// Applied: the command created its task.
    Created,
    /// Applied as a duplicate: a command for the task came first.
    Duplicate,
}

impl TaskView {
    /// Apply the command record this process has just appended at `offset` of `partition`
    /// (`record`, whose params it parsed into a request with the header's message id, asking
    /// for the task at once when `return_immediately`), if the
    /// view stands right before it and nobody else is applying that partition: the record
    /// is then applied without being read back, decoded and parsed again. Otherwise this
    /// does nothing, and the record is applied from the log as any other.
    ///
    /// The caller vouches that its parse was of exactly the record's params text (see
    /// [`TaskMachine::apply_parsed_command`]), so every replica still folds the same.
    ///
    /// Returns what became of the record here: not applied (the caller looks at the view once
    /// it has applied the record), or applied as the task's command, or found a duplicate (a
    /// command for the task came first).
    pub(crate) fn apply_own_command(
        &self,
        partition: u32,
        offset: u64,
        place: Place,
        record: &Record,
        return_immediately: bool,
    ) -> OwnCommand {
        let RecordBody::Command { retention_ms, .. } = record.body else {
            return OwnCommand::NotApplied;
        };
        let header = &record.header;
        let inner = &self.inner;
        let Some(part) = inner.parts.get(partition as usize) else {
            return OwnCommand::NotApplied;
        };
        let Ok(mut next) = part.feed.try_lock() else {
            return OwnCommand::NotApplied;
        };
        if *next != offset || !part.held() {
            return OwnCommand::NotApplied;
        }
        let mut created = false;
        let mut tasks = part.write();
        tasks.apply_with(offset, place, header, |machine| {
            let applied = machine.apply_parsed_command(
                header,
                &header.message_id,
                retention_ms,
                return_immediately,
            );
            created = applied.is_ok();
            applied.map(|()| None)
        });
        inner.records_seen.fetch_add(1, Ordering::Relaxed);
        part.records_applied.fetch_add(1, Ordering::Relaxed);
        *next = offset + 1;
        // Under the tasks lock: a checkpoint reads the positions with the tasks.
        part.applied.send_replace(offset + 1);
        part.expire_locked(&mut tasks);
        drop(tasks);
        if created {
            OwnCommand::Created
        } else {
            OwnCommand::Duplicate
        }
    }

    /// Apply `records` (of one task), which this process has just appended at `first_offset`
    /// onward in `partition` (one batch, at `place`), if the view stands right before them and nobody else is applying
    /// that partition: they are then applied as the decoded records they are, without being
    /// read back (the same as reading them: a record decodes to what was encoded). Otherwise
    /// this does nothing, and they are applied from the log as any other.
    ///
    /// Returns `None` when it did nothing, else the claim on the task's turn after them (what
    /// a worker confirming its claim wants: no wait for its follower, no second look).
    pub(crate) fn apply_own(
        &self,
        partition: u32,
        first_offset: u64,
        place: Place,
        records: &[Record],
    ) -> Option<Option<Claim>> {
        let task_id = records.first()?.header.task_id.as_str();
        self.apply_own_with(partition, first_offset, records.len() as u64, |tasks| {
            for (offset, record) in (first_offset..).zip(records) {
                tasks.apply(offset, place, record);
            }
            tasks
                .entries
                .get(task_id)
                .and_then(|entry| entry.machine.claim().cloned())
        })
    }

    /// [`apply_own`](Self::apply_own) of a batch whose records their writer may have
    /// `parsed` already (one entry per record; `None` is parsed here). `false` when it did
    /// nothing.
    pub(crate) fn apply_own_batch(
        &self,
        partition: u32,
        first_offset: u64,
        place: Place,
        records: &[Record],
        parsed: Vec<Option<Parsed>>,
    ) -> bool {
        let count = records.len() as u64;
        self.apply_own_with(partition, first_offset, count, |tasks| {
            for ((offset, record), parsed) in (first_offset..).zip(records).zip(parsed) {
                match parsed {
                    Some(parsed) => tasks.apply_parsed(offset, place, record, parsed),
                    None => tasks.apply(offset, place, record),
                }
            }
        })
        .is_some()
    }

    /// Run `apply` on the tasks when the view stands right at `first_offset` of `partition`
    /// and nobody else is applying it, then move the partition on by `count` records.
    fn apply_own_with<T>(
        &self,
        partition: u32,
        first_offset: u64,
        count: u64,
        apply: impl FnOnce(&mut Tasks) -> T,
    ) -> Option<T> {
        let inner = &self.inner;
        let part = inner.parts.get(partition as usize)?;
        let mut next = part.feed.try_lock().ok()?;
        if *next != first_offset || !part.held() {
            return None;
        }
        let mut tasks = part.write();
        let result = apply(&mut tasks);
        inner.records_seen.fetch_add(count, Ordering::Relaxed);
        part.records_applied.fetch_add(count, Ordering::Relaxed);
        *next = first_offset + count;
        // Under the tasks lock: a checkpoint reads the positions with the tasks.
        part.applied.send_replace(*next);
        part.expire_locked(&mut tasks);
        drop(tasks);
        Some(result)
    }
}
