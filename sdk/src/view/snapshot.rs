//! The view's tasks to and from a checkpoint ([`checkpoint::codec`]).

use super::applied::{self, Applied};
use super::checkpoint::{Checkpoint, codec};
use super::expiry::LiveRecords;
use super::key::Key;
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
    /// places a task); the list index and the expiry order are built when the view has
    /// caught up.
    pub(super) fn from_checkpoint(
        checkpoint: Checkpoint,
        partitions: u32,
        count_live: bool,
        partition_of: impl Fn(&str) -> u32,
    ) -> Self {
        let mut tasks = Tasks::new(partitions, count_live);
        let owners: Vec<_> = checkpoint
            .owners
            .iter()
            .map(|c| tasks.owners.intern(&c.principal, &c.tenant))
            .collect();
        let mut live: Vec<Vec<u64>> =
            vec![Vec::new(); if count_live { partitions as usize } else { 0 }];
        tasks.entries.reserve(checkpoint.tasks.len());
        for task in checkpoint.tasks {
            let Some(owner) = owners.get(task.owner as usize).copied() else {
                continue;
            };
            let records: smallvec::SmallVec<[Applied; 4]> =
                task.records.into_iter().map(Applied).collect();
            if let Some(offsets) = live.get_mut(partition_of(&task.id) as usize) {
                applied::counted(&records, offsets);
            }
            tasks.entries.insert(Entry {
                id: Key::new(&task.id),
                context: Key::new(&task.context_id),
                owner,
                machine: TaskMachine::from_snapshot(task.machine),
                records,
            });
        }
        tasks.live = live.into_iter().map(LiveRecords::build).collect();
        tasks
    }
}

/// The raw words of applied records, as a checkpoint stores them.
fn applied_words(records: &[Applied]) -> Vec<u64> {
    records.iter().map(|r| r.0).collect()
}
