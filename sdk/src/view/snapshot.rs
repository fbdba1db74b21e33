//! The view's tasks to and from a checkpoint ([`checkpoint::codec`]).

use std::sync::Arc;

use super::applied::{self, Applied};
use super::checkpoint::{Checkpoint, codec};
use super::expiry::{Expiring, LiveRecords};
use super::tasks::{Entry, Tasks};
use agentlog_wire::fold::TaskMachine;

impl Tasks {
    /// Append the owners and tasks to a checkpoint being encoded.
    pub(super) fn encode_checkpoint(&self, out: &mut Vec<u8>) {
        let owners = self.owners.all();
        let tasks = self.entries.iter().map(|(id, entry)| {
            (
                &**id,
                entry.owner,
                &*entry.context_id,
                entry.machine.snapshot(),
                applied_words(&entry.records),
            )
        });
        codec::encode_tasks(out, owners, self.entries.len(), tasks);
    }

    /// The tasks a checkpoint holds, with every index rebuilt at once (`partition_of`
    /// places a task); the list index is built when the view has caught up.
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
        let mut expiring = Vec::new();
        let mut live: Vec<Vec<u64>> =
            vec![Vec::new(); if count_live { partitions as usize } else { 0 }];
        tasks.entries.reserve(checkpoint.tasks.len());
        for task in checkpoint.tasks {
            let Some(owner) = owners.get(task.owner as usize).copied() else {
                continue;
            };
            let id: Arc<str> = Arc::from(task.id);
            let machine = TaskMachine::from_snapshot(task.machine);
            if let Some(at) = machine.expires_at_ms() {
                expiring.push((at, id.clone()));
            }
            let records: smallvec::SmallVec<[Applied; 4]> =
                task.records.into_iter().map(Applied).collect();
            if let Some(offsets) = live.get_mut(partition_of(&id) as usize) {
                applied::counted(&records, offsets);
            }
            let entry = Entry {
                owner,
                context_id: Arc::from(task.context_id),
                machine,
                records,
            };
            tasks.entries.insert(id, entry);
        }
        tasks.expiring = Expiring::build(expiring);
        tasks.live = live.into_iter().map(LiveRecords::build).collect();
        tasks
    }
}

/// The raw words of applied records, as a checkpoint stores them.
fn applied_words(records: &[Applied]) -> Vec<u64> {
    records.iter().map(|r| r.0).collect()
}
