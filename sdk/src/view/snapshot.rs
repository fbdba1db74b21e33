//! The view's tasks to and from a checkpoint ([`checkpoint::codec`]).

use super::applied::{self, Applied};
use super::checkpoint::Checkpoint;
use super::checkpoint::codec::{self, CodecError, TaskRecord};
use super::expiry::LiveRecords;
use super::index::{ListIndex, Listed, OwnerId};
use super::key::{Key, KeyRef};
use super::tasks::{Entry, Tasks};
use agentlog_wire::fold::TaskMachine;

impl Tasks {
    /// Append the owners and tasks to a checkpoint being encoded.
    pub(super) fn encode_checkpoint(&self, out: &mut Vec<u8>) {
        let owners = self.owners.all();
        let tasks = self.entries.iter().map(|(_, entry)| {
            (
                &entry.id,
                entry.owner,
                &entry.context,
                entry.machine.snapshot(),
                applied_words(&entry.records),
            )
        });
        codec::encode_tasks(out, owners, self.entries.len(), tasks);
    }

    /// The tasks a checkpoint holds, with every index rebuilt at once (`partition_of`
    /// places a task), or why its tasks do not decode. The list index is built on a second
    /// thread while the tasks are, so that a restart is ready sooner; the later records keep
    /// it up to date.
    pub(super) fn from_checkpoint(
        checkpoint: Checkpoint<'_>,
        partitions: u32,
        count_live: bool,
        partition_of: impl Fn(&str) -> u32,
    ) -> Result<Self, CodecError> {
        let mut tasks = Tasks::new(partitions, count_live);
        let owners: Vec<OwnerId> = checkpoint
            .owners
            .iter()
            .map(|c| tasks.owners.intern(&c.principal, &c.tenant))
            .collect();
        // Decoding checks every task's owner.
        let owner_of = |task: &TaskRecord<'_>| owners.get(task.owner as usize).copied();
        let list = &checkpoint.tasks;
        let (index, in_order) = std::thread::scope(|scope| {
            let index = scope.spawn(|| {
                let mut failed = false;
                let listed = list.iter().zip(0..).map_while(|(task, slot)| {
                    let Ok(task) = task else {
                        failed = true;
                        return None;
                    };
                    let listed = Listed::of(
                        owner_of(&task)?,
                        KeyRef::of(task.id),
                        KeyRef::of(task.context_id),
                        task.machine.state,
                        task.machine.status_timestamp_ms,
                    );
                    Some(listed.map(|listed| (slot, listed)))
                });
                let index = ListIndex::build(listed.flatten());
                (!failed).then_some(index)
            });
            let mut live: Vec<Vec<u64>> =
                vec![Vec::new(); if count_live { partitions as usize } else { 0 }];
            tasks.entries.reserve(list.len());
            // A fresh map gives slots 0, 1, 2... in order: the index thread counts on it.
            let mut in_order = true;
            for (task, expected) in list.iter().zip(0..) {
                let task = task?;
                let owner = owner_of(&task).ok_or(CodecError::Malformed("owner"))?;
                let applied: smallvec::SmallVec<[Applied; 4]> =
                    task.records.into_iter().map(Applied).collect();
                if let Some(offsets) = live.get_mut(partition_of(task.id) as usize) {
                    applied::counted(&applied, offsets);
                }
                let slot = tasks.entries.insert(Entry {
                    id: Key::new(task.id),
                    context: Key::new(task.context_id),
                    owner,
                    machine: TaskMachine::from_snapshot(task.machine),
                    records: applied,
                });
                in_order &= slot == expected;
            }
            tasks.live = live.into_iter().map(LiveRecords::build).collect();
            let index = index
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            Ok::<_, CodecError>((index, in_order))
        })?;
        match index {
            Some(index) if in_order => tasks.indexes_built(index),
            // Never, short of a bug: the index waits and is built from the tasks.
            _ => {}
        }
        Ok(tasks)
    }
}

/// The raw words of applied records, as a checkpoint stores them.
fn applied_words(records: &[Applied]) -> Vec<u64> {
    records.iter().map(|r| r.0).collect()
}
