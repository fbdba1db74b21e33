//! Subscriptions to a task's events: a task's next applied records, with no gap and no
//! overlap against what a lookup returned, for streams, blocking sends and workers.

use std::sync::Arc;

use tokio::sync::broadcast;

use super::key::Key;
use super::tasks;
use super::tasks::Tasks;
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

    /// Start receiving the events of the task `task_id` names once a command creates it, for
    /// a call about to write that command: the events begin right after the creating record,
    /// whoever applies it (this process's append or the follower, with any records after it),
    /// so a caller that holds what its command made of the task (its own command, parsed)
    /// follows the task from the events alone. Registered before the append, so the command
    /// cannot be applied first.
    pub(crate) fn watch_new(&self, task_id: &str) -> NewTaskWatch {
        let (partition, part) = self.inner.part_of(task_id);
        let key = Key::new(task_id);
        let events = part
            .write()
            .pending
            .entry(key.clone())
            .or_insert_with(|| broadcast::channel(SUBSCRIBER_BUFFER).0)
            .subscribe();
        NewTaskWatch {
            view: self.clone(),
            partition,
            key,
            events: Some(events),
        }
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

/// The events of a task a call is about to create ([`TaskView::watch_new`]). Dropped without
/// [`created`](Self::created) (the append failed, or another command created the task first),
/// it takes back the registration nobody will use.
pub(crate) struct NewTaskWatch {
    view: TaskView,
    partition: u32,
    key: Key,
    events: Option<broadcast::Receiver<Arc<TaskEvent>>>,
}

impl NewTaskWatch {
    /// The events after the command that created the task: call once the caller knows its own
    /// command did (then the view moved the registration to the task).
    pub(crate) fn created(mut self) -> Option<broadcast::Receiver<Arc<TaskEvent>>> {
        self.events.take()
    }
}

impl Drop for NewTaskWatch {
    fn drop(&mut self) {
        // Taken by `created`: the task's command moved the registration to the task already.
        if self.events.take().is_none() {
            return;
        }
        let Some(part) = self.view.inner.parts.get(self.partition as usize) else {
            return;
        };
        let mut tasks = part.write();
        if tasks
            .pending
            .get(&self.key)
            .is_some_and(|sender| sender.receiver_count() == 0)
        {
            tasks.pending.remove(&self.key);
        }
    }
}

#[cfg(test)]
impl TaskView {
    /// How many receivers watch `task_id`'s events now (a worker's supervisor holds one while
    /// it waits on the task): lets a test act once a supervisor is parked.
    pub(crate) fn watchers(&self, task_id: &str) -> usize {
        let (_, part) = self.inner.part_of(task_id);
        let tasks = part.read();
        tasks
            .live_slot(task_id, now_ms())
            .and_then(|(slot, _)| tasks.watchers.get(&slot))
            .map_or(0, |sender| sender.receiver_count())
    }
}
