//! Subscriptions to a task's events: a task's next applied records, with no gap and no
//! overlap against what a lookup returned, for streams, blocking sends and workers.

use std::sync::Arc;

use agentlog_wire::TaskState;
use tokio::sync::broadcast;

use super::tasks::Tasks;
use super::tasks::{self, applied};
use super::{TaskEvent, TaskInfo, TaskView, info};
use crate::agent::Caller;
use crate::retention::now_ms;

/// How many events a slow subscriber may fall behind before it re-reads from the log.
const SUBSCRIBER_BUFFER: usize = 64;

impl TaskView {
    /// Like [`lookup`](Self::lookup), and also start receiving the task's next events, with
    /// no gap and no overlap between the returned info (its `offsets`) and the events.
    pub fn subscribe(
        &self,
        caller: Option<&Caller>,
        task_id: &str,
    ) -> Option<(TaskInfo, broadcast::Receiver<Arc<TaskEvent>>)> {
        let (partition, part) = self.inner.part_of(task_id);
        let mut tasks = part.write();
        let (slot, entry) = tasks.live_slot(task_id, now_ms())?;
        if caller.is_some_and(|caller| tasks.owners.find(caller) != Some(entry.owner)) {
            return None;
        }
        Self::subscribe_locked(info(partition, entry), slot, &mut tasks)
    }

    /// Start receiving the task's next events if the last record the view applied for it is
    /// the one at `offset` (a command the caller has just written): the events then begin
    /// right after it, so a caller that holds what that record made of the task (its own
    /// command, parsed) follows the task from the events alone. `None` if the task is not
    /// `caller`'s (when given), not live, or has moved past `offset` already.
    pub fn subscribe_after(
        &self,
        caller: Option<&Caller>,
        task_id: &str,
        offset: u64,
    ) -> Option<broadcast::Receiver<Arc<TaskEvent>>> {
        let mut tasks = self.inner.part_of(task_id).1.write();
        let (slot, entry) = tasks.live_slot(task_id, now_ms())?;
        if caller.is_some_and(|caller| tasks.owners.find(caller) != Some(entry.owner))
            || applied::position(&entry.records) != offset
            || entry.machine.state().is_none_or(TaskState::is_terminal)
        {
            return None;
        }
        let rx = tasks
            .watchers
            .entry(slot)
            .or_insert_with(|| broadcast::channel(SUBSCRIBER_BUFFER).0)
            .subscribe();
        Some(rx)
    }

    /// [`lookup_any`](Self::lookup_any) and [`subscribe`](Self::subscribe) at once, for a
    /// worker: the task whoever owns it, its owner, and its next events.
    pub fn watch(
        &self,
        task_id: &str,
    ) -> Option<(TaskInfo, Caller, broadcast::Receiver<Arc<TaskEvent>>)> {
        let (partition, part) = self.inner.part_of(task_id);
        let mut tasks = part.write();
        let (slot, entry) = tasks.live_slot(task_id, now_ms())?;
        let owner = tasks.owners.caller(entry.owner).clone();
        let info = info(partition, entry);
        Self::subscribe_locked(info, slot, &mut tasks).map(|(info, rx)| (info, owner, rx))
    }

    /// The owner of each task the view gains (its first record, or a new incarnation after it
    /// expired, whichever replica or worker wrote it) or drops (expired), from now on: what
    /// changes a caller's list of tasks. One channel for every partition, made by the first
    /// to ask.
    pub fn listing_changes(&self) -> broadcast::Receiver<Caller> {
        let mut shared: Option<broadcast::Sender<Caller>> = None;
        for part in self.inner.parts.iter() {
            let mut tasks = part.write();
            let created = tasks
                .listing
                .get_or_insert_with(|| match &shared {
                    Some(sender) => sender.clone(),
                    None => broadcast::channel(SUBSCRIBER_BUFFER).0,
                })
                .clone();
            shared.get_or_insert(created);
        }
        match shared {
            Some(sender) => sender.subscribe(),
            None => broadcast::channel(1).1,
        }
    }

    fn subscribe_locked(
        info: TaskInfo,
        slot: tasks::Slot,
        tasks: &mut Tasks,
    ) -> Option<(TaskInfo, broadcast::Receiver<Arc<TaskEvent>>)> {
        if info.state.is_terminal() {
            // Nothing follows a terminal record: a closed channel, and no entry left behind.
            return Some((info, broadcast::channel(1).1));
        }
        let rx = tasks
            .watchers
            .entry(slot)
            .or_insert_with(|| broadcast::channel(SUBSCRIBER_BUFFER).0)
            .subscribe();
        Some((info, rx))
    }
}
