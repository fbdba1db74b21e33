//! What the view holds per task, and how a record changes it: the task's machine, its
//! applied records, the owner and status indexes, the tasks waiting for a worker's claim, and
//! the live subscribers.

use std::collections::HashMap;
use std::sync::Arc;

use agentlog_wire::fold::{Change, ClaimKind, Outcome, TaskMachine};
use agentlog_wire::{Record, RecordHeader, TaskState};
use smallvec::SmallVec;
use tokio::sync::broadcast;

use super::index::{AwaitingClaim, OwnerId, Owners, StatusIndex};
use super::{Applied, TaskEvent};
use crate::agent::Caller;

/// One task as the view keeps it.
pub(super) struct Entry {
    pub(super) owner: OwnerId,
    pub(super) context_id: Arc<str>,
    pub(super) machine: TaskMachine,
    /// Inline for the usual few records: a lookup touches no other allocation for them.
    pub(super) records: SmallVec<[Applied; 4]>,
}

/// Every task of the view, and the indexes over them.
pub(super) struct Tasks {
    pub(super) entries: HashMap<Arc<str>, Entry>,
    pub(super) owners: Owners,
    pub(super) index: StatusIndex,
    /// Per partition, the tasks whose turn no worker has claimed yet; kept only once a worker
    /// asked for it ([`Tasks::track_awaiting`]): a bridge's view does not pay for it.
    pub(super) awaiting: Option<Vec<AwaitingClaim>>,
    pub(super) watchers: HashMap<Arc<str>, broadcast::Sender<Arc<TaskEvent>>>,
}

impl Tasks {
    pub(super) fn new() -> Self {
        Self {
            entries: HashMap::new(),
            owners: Owners::default(),
            index: StatusIndex::default(),
            awaiting: None,
            watchers: HashMap::new(),
        }
    }

    /// Keep the awaiting-claim index from now on, built from the tasks known so far
    /// (`partition_of` places a task).
    pub(super) fn track_awaiting(&mut self, partitions: u32, partition_of: impl Fn(&str) -> u32) {
        if self.awaiting.is_some() {
            return;
        }
        let mut awaiting: Vec<AwaitingClaim> =
            (0..partitions).map(|_| AwaitingClaim::default()).collect();
        for (id, entry) in &self.entries {
            let machine = &entry.machine;
            if machine.awaits_claim()
                && let Some(index) = awaiting.get_mut(partition_of(id) as usize)
            {
                index.update(id, None, Some(machine.status_timestamp_ms()));
            }
        }
        self.awaiting = Some(awaiting);
    }

    /// The task's entry if it exists and belongs to `caller`.
    pub(super) fn owned(&self, caller: &Caller, task_id: &str) -> Option<(&Arc<str>, &Entry)> {
        let owner = self.owners.find(caller)?;
        let (id, entry) = self.entries.get_key_value(task_id)?;
        (entry.owner == owner).then_some((id, entry))
    }

    pub(super) fn apply(&mut self, partition: u32, offset: u64, record: &Record) {
        self.apply_with(partition, offset, &record.header, |machine| {
            machine.apply(record).map(Some)
        });
    }

    /// Apply a record of `header`'s task at `offset` of `partition`: `decide` runs the task's
    /// machine (a fresh one for a new task) and returns the change, or `None` where the caller
    /// has no payload to give (only for a new task's command, which nobody can be subscribed
    /// to yet and which has content).
    pub(super) fn apply_with(
        &mut self,
        partition: u32,
        offset: u64,
        header: &RecordHeader,
        decide: impl FnOnce(&mut TaskMachine) -> Result<Option<Change>, Outcome>,
    ) {
        let id: &str = &header.task_id;
        let mut before = None;
        // A renewal that only extends the lease: neither kept nor told (see `is_extension`).
        let mut quiet = false;
        let change = match self.entries.get_mut(id) {
            Some(entry) => {
                let lease = entry.machine.claim().map(|c| c.lease_until_ms);
                before = Some(Before::of(&entry.machine));
                let Ok(change) = decide(&mut entry.machine) else {
                    return;
                };
                quiet = is_extension(change.as_ref(), lease);
                if !quiet {
                    entry.records.push(applied(offset, change.as_ref()));
                }
                change
            }
            None => {
                let mut machine = TaskMachine::new();
                let Ok(change) = decide(&mut machine) else {
                    return;
                };
                let owner = self.owners.intern(&header.principal, &header.tenant);
                let id: Arc<str> = Arc::from(id);
                self.entries.insert(
                    id,
                    Entry {
                        owner,
                        context_id: Arc::from(header.context_id.as_str()),
                        machine,
                        records: smallvec::smallvec![applied(offset, change.as_ref())],
                    },
                );
                change
            }
        };
        let Some((id, entry)) = self.entries.get_key_value(header.task_id.as_str()) else {
            return;
        };
        let machine = &entry.machine;
        let state = machine.state().unwrap_or(TaskState::Unspecified);
        let ts = machine.status_timestamp_ms();
        self.index
            .update(entry.owner, id, before.as_ref().map(|b| b.status_ms), ts);
        if let Some(awaiting) = self
            .awaiting
            .as_mut()
            .and_then(|a| a.get_mut(partition as usize))
        {
            let was = before.and_then(|b| b.awaiting);
            let now = machine.awaits_claim().then_some(ts);
            if was != now {
                awaiting.update(id, was, now);
            }
        }
        let (Some(sender), Some(change)) = (self.watchers.get(id), change) else {
            return;
        };
        if quiet || is_first_claim(&change) {
            return;
        }
        let event = Arc::new(TaskEvent {
            offset,
            task_id: id.clone(),
            context_id: entry.context_id.clone(),
            timestamp_ms: header.timestamp_ms,
            state,
            change,
        });
        // Drop the channel once nobody listens, or once the task is terminal (nothing
        // follows; subscribers still receive what was sent, then `Closed`).
        if sender.send(event).is_err() || state.is_terminal() {
            let id = id.clone();
            self.watchers.remove(&id);
        }
    }
}

/// What an index needs to know of a task before a record changes it.
#[derive(Clone, Copy)]
struct Before {
    status_ms: u64,
    /// Since when the task has waited for a claim, if it does.
    awaiting: Option<u64>,
}

impl Before {
    fn of(machine: &TaskMachine) -> Self {
        let status_ms = machine.status_timestamp_ms();
        Self {
            status_ms,
            awaiting: machine.awaits_claim().then_some(status_ms),
        }
    }
}

/// Whether `change` is a renewal that extends the holder's lease (from `lease`, when known):
/// the view keeps no record of it and tells nobody. Replaying the records it keeps decides
/// the same: every worker record applies by attempt and holder, never by lease, and a longer
/// lease never lets a claim apply that a shorter one would refuse. A renewal that shortens the
/// lease (a release) is kept: it lets a takeover apply earlier.
fn is_extension(change: Option<&Change>, lease: Option<u64>) -> bool {
    matches!(change, Some(Change::Claimed(claimed))
        if claimed.kind == ClaimKind::Renewal
            && lease.is_some_and(|old| claimed.claim.lease_until_ms >= old))
}

/// Whether `change` is a turn's first claim that changed no state: kept (a replay needs it to
/// accept the holder's records) but not told. Nobody waits for one: a waiting worker waits on
/// a claim that exists (its takeover, release or advance), a client on the states a turn
/// reaches (a first claim that starts a submitted turn is told: it is `working`).
fn is_first_claim(change: &Change) -> bool {
    matches!(change, Change::Claimed(claimed)
        if claimed.kind == ClaimKind::First && !claimed.started)
}

/// An applied record at `offset`; no change given means the task's own command (content).
fn applied(offset: u64, change: Option<&Change>) -> Applied {
    Applied::new(offset, change.is_none_or(Change::has_content))
}
