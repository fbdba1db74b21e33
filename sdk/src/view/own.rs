//! Records this process has just appended, applied to the view at once: when the view stands
//! right before them and nobody else is applying their partition, a bridge's command and a
//! worker's reports reach the view without being read back, decoded and parsed again. The
//! applied record is the one appended (the log stays the truth). When the view stands before
//! them (appends answered out of order) or another applier holds the partition, they wait in
//! the partition's [`Ahead`](super::ahead::Ahead) for whoever applies up to them; a view
//! already past them has them from the log.

use std::sync::atomic::Ordering;

use agentlog_wire::fold::{Claim, Parsed};
use agentlog_wire::{Record, RecordBody};

use agentlog_wire::RecordHeader;
use tokio::sync::MutexGuard;

use super::ahead::Own;
use super::part::Part;
use super::tasks::Tasks;
use super::{Inner, TaskView};
use crate::log::Applier;
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
    /// The view as an applier ([`Applier`]): an append made for it
    /// ([`AppendBatch::applied_by`](crate::log::AppendBatch)) does not wake its follower, so
    /// its appender must, once the log acknowledged it, offer every record of it to
    /// [`apply_own_command`](Self::apply_own_command), [`apply_own`](Self::apply_own) or
    /// [`apply_own_batch`](Self::apply_own_batch), which apply it or keep it (waking the
    /// follower). An append the log refused wakes the follower as any other.
    pub(crate) fn applier(&self) -> Applier {
        self.inner.applier
    }

    /// Apply the command record this process has just appended at `offset` of `partition`
    /// (`record`, whose params it parsed into a request with the header's message id, asking
    /// for the task at once when `return_immediately`), if the view stands right before it
    /// and nobody else is applying that partition: the record is then applied without being
    /// read back, decoded and parsed again. When the view stands before it or is busy, it is
    /// kept for whoever applies the partition up to it; a view past it has it already.
    ///
    /// The caller vouches that its parse was of exactly the record's params text (see
    /// [`TaskMachine::apply_parsed_command`]), so every replica still folds the same.
    ///
    /// Returns what became of the record here: not applied yet (the caller looks at the view
    /// once it has applied the record), or applied as the task's command, or found a
    /// duplicate (a command for the task came first).
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
        match self.own_turn(partition, offset) {
            Some(OwnTurn::Apply(part, next)) => {
                let created = self.apply_at(part, next, offset, 1, |tasks| {
                    apply_command(
                        tasks,
                        offset,
                        place,
                        header,
                        retention_ms,
                        return_immediately,
                    )
                });
                if created {
                    OwnCommand::Created
                } else {
                    OwnCommand::Duplicate
                }
            }
            Some(OwnTurn::Keep(part)) => {
                let own = Own::Command {
                    header: header.clone(),
                    retention_ms,
                    return_immediately,
                };
                part.keep_ahead([(offset, place, own)]);
                OwnCommand::NotApplied
            }
            None => OwnCommand::NotApplied,
        }
    }

    /// Apply `records` (of one task), which this process has just appended at `first_offset`
    /// onward in `partition` (one batch, at `place`), if the view stands right before them and
    /// nobody else is applying that partition: they are then applied as the decoded records
    /// they are, without being read back (the same as reading them: a record decodes to what
    /// was encoded). Otherwise they are kept, as for a command.
    ///
    /// Returns `None` when it did not apply them now, else the claim on the task's turn after
    /// them (what a worker confirming its claim wants: no wait for its follower, no second
    /// look).
    pub(crate) fn apply_own(
        &self,
        partition: u32,
        first_offset: u64,
        place: Place,
        records: &[Record],
    ) -> Option<Option<Claim>> {
        let task_id = records.first()?.header.task_id.as_str();
        match self.own_turn(partition, first_offset)? {
            OwnTurn::Apply(part, next) => {
                let count = records.len() as u64;
                Some(self.apply_at(part, next, first_offset, count, |tasks| {
                    for (offset, record) in (first_offset..).zip(records) {
                        tasks.apply(offset, place, record);
                    }
                    tasks
                        .entries
                        .get(task_id)
                        .and_then(|entry| entry.machine.claim().cloned())
                }))
            }
            OwnTurn::Keep(part) => {
                part.keep_ahead((first_offset..).zip(records).map(|(offset, record)| {
                    let record = record.clone();
                    (
                        offset,
                        place,
                        Own::Record {
                            record,
                            parsed: None,
                        },
                    )
                }));
                None
            }
        }
    }

    /// [`apply_own`](Self::apply_own) of a batch whose records their writer may have
    /// `parsed` already (one entry per record; `None` is parsed here). `false` when it did
    /// not apply them now.
    pub(crate) fn apply_own_batch(
        &self,
        partition: u32,
        first_offset: u64,
        place: Place,
        records: &[Record],
        parsed: Vec<Option<Parsed>>,
    ) -> bool {
        let count = records.len() as u64;
        match self.own_turn(partition, first_offset) {
            Some(OwnTurn::Apply(part, next)) => {
                self.apply_at(part, next, first_offset, count, |tasks| {
                    for ((offset, record), parsed) in (first_offset..).zip(records).zip(parsed) {
                        match parsed {
                            Some(parsed) => tasks.apply_parsed(offset, place, record, parsed),
                            None => tasks.apply(offset, place, record),
                        }
                    }
                });
                true
            }
            Some(OwnTurn::Keep(part)) => {
                let kept =
                    (first_offset..)
                        .zip(records)
                        .zip(parsed)
                        .map(|((offset, record), parsed)| {
                            let record = record.clone();
                            (offset, place, Own::Record { record, parsed })
                        });
                part.keep_ahead(kept);
                false
            }
            None => false,
        }
    }

    /// What records this process appended at `first_offset` of `partition` may do now: be
    /// applied (the view stands right before them and the feed is free: it is taken), or be
    /// kept (the view stands before them, or another applier is at it); `None` when the
    /// view holds no such partition or is past them.
    fn own_turn(&self, partition: u32, first_offset: u64) -> Option<OwnTurn<'_>> {
        let part = self.inner.parts.get(partition as usize)?;
        if !part.held() {
            return None;
        }
        match part.feed.try_lock() {
            Ok(next) if *next == first_offset => Some(OwnTurn::Apply(part, next)),
            Ok(next) if *next < first_offset => Some(OwnTurn::Keep(part)),
            Ok(_) => None,
            // Whoever holds it may be applying these very records from the log: kept ones
            // it went past are dropped unused.
            Err(_) => (part.applied_next() <= first_offset).then_some(OwnTurn::Keep(part)),
        }
    }

    /// Run `apply` on the tasks (the partition's feed held, standing at `first_offset`), move
    /// the partition on by `count` records, then apply what was kept right after them.
    fn apply_at<T>(
        &self,
        part: &Part,
        mut next: MutexGuard<'_, u64>,
        first_offset: u64,
        count: u64,
        apply: impl FnOnce(&mut Tasks) -> T,
    ) -> T {
        let mut tasks = part.write();
        let result = apply(&mut tasks);
        *next = first_offset + count;
        let kept = part.take_ahead(*next);
        let applied = count + apply_run(&mut tasks, kept, &mut next);
        self.inner.moved_on(part, &mut tasks, applied, *next);
        result
    }
}

impl Inner {
    /// Apply the records this process appended that were kept from `next` on (the
    /// partition's feed held), moving `next` past them; how many.
    pub(super) fn apply_kept(&self, part: &Part, next: &mut u64) -> u64 {
        let run = part.take_ahead(*next);
        if run.is_empty() {
            return 0;
        }
        let mut tasks = part.write();
        let applied = apply_run(&mut tasks, run, next);
        self.moved_on(part, &mut tasks, applied, *next);
        applied
    }

    /// Count `applied` records, publish `next` as the partition's next offset and drop what
    /// expired, under the tasks lock (a checkpoint reads the positions with the tasks).
    fn moved_on(&self, part: &Part, tasks: &mut Tasks, applied: u64, next: u64) {
        self.records_seen.fetch_add(applied, Ordering::Relaxed);
        part.records_applied.fetch_add(applied, Ordering::Relaxed);
        part.applied.send_replace(next);
        part.expire_locked(tasks);
    }
}

/// Where records this process appended stand ([`TaskView::own_turn`]).
enum OwnTurn<'a> {
    /// Apply them now: the feed is held, at their first offset.
    Apply(&'a Part, MutexGuard<'a, u64>),
    /// Keep them for whoever applies the partition up to them.
    Keep(&'a Part),
}

/// Apply `run`, records kept from `next` on with no gap ([`Part::take_ahead`]; the tasks lock
/// and the partition's feed held), moving `next` past them; how many.
fn apply_run(tasks: &mut Tasks, run: Vec<(u64, Place, Own)>, next: &mut u64) -> u64 {
    let count = run.len() as u64;
    for (offset, place, own) in run {
        match own {
            Own::Command {
                header,
                retention_ms,
                return_immediately,
            } => {
                apply_command(
                    tasks,
                    offset,
                    place,
                    &header,
                    retention_ms,
                    return_immediately,
                );
            }
            Own::Record {
                record,
                parsed: Some(parsed),
            } => tasks.apply_parsed(offset, place, &record, parsed),
            Own::Record {
                record,
                parsed: None,
            } => tasks.apply(offset, place, &record),
        }
    }
    *next += count;
    count
}

/// Apply a new task's command from its writer's parse; whether it created the task.
fn apply_command(
    tasks: &mut Tasks,
    offset: u64,
    place: Place,
    header: &RecordHeader,
    retention_ms: u64,
    return_immediately: bool,
) -> bool {
    let mut created = false;
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
    created
}
