//! The view's indexes: owners interned to small ids, and each owner's tasks by status time.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use agentlog_wire::TaskState;

use crate::agent::Caller;

/// A caller interned to a number (tasks store 4 bytes instead of two strings).
pub(super) type OwnerId = u32;

#[derive(Default)]
pub(super) struct Owners {
    /// tenant → principal → id: two levels, so that a lookup borrows the record's strings
    /// instead of building a `Caller` for every record applied.
    ids: HashMap<String, HashMap<String, OwnerId>>,
    callers: Vec<Caller>,
}

impl Owners {
    pub(super) fn intern(&mut self, principal: &str, tenant: &str) -> OwnerId {
        if let Some(id) = self.get(principal, tenant) {
            return id;
        }
        let id = self.callers.len() as OwnerId;
        self.callers.push(Caller {
            principal: principal.to_owned(),
            tenant: tenant.to_owned(),
        });
        self.ids
            .entry(tenant.to_owned())
            .or_default()
            .insert(principal.to_owned(), id);
        id
    }

    pub(super) fn find(&self, caller: &Caller) -> Option<OwnerId> {
        self.get(&caller.principal, &caller.tenant)
    }

    fn get(&self, principal: &str, tenant: &str) -> Option<OwnerId> {
        self.ids.get(tenant)?.get(principal).copied()
    }

    pub(super) fn caller(&self, id: OwnerId) -> &Caller {
        &self.callers[id as usize]
    }

    /// Every owner, by id.
    pub(super) fn all(&self) -> &[Caller] {
        &self.callers
    }
}

/// Each owner's tasks ordered by (status timestamp, task id).
#[derive(Default)]
pub(super) struct StatusIndex {
    by_owner: HashMap<OwnerId, BTreeSet<(u64, Arc<str>)>>,
}

impl StatusIndex {
    /// Move `id` from (owner, status time) `was`, if it was indexed, to `owner` at `new_ts`.
    pub(super) fn update(
        &mut self,
        owner: OwnerId,
        id: &Arc<str>,
        was: Option<(OwnerId, u64)>,
        new_ts: u64,
    ) {
        if was == Some((owner, new_ts)) {
            return;
        }
        if let Some((old_owner, old_ts)) = was {
            self.remove(old_owner, id, old_ts);
        }
        self.by_owner
            .entry(owner)
            .or_default()
            .insert((new_ts, id.clone()));
    }

    /// Take `id` (of `owner`, at status time `ts`) out of the index.
    pub(super) fn remove(&mut self, owner: OwnerId, id: &Arc<str>, ts: u64) {
        if let Some(set) = self.by_owner.get_mut(&owner) {
            set.remove(&(ts, id.clone()));
            if set.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
    }

    /// The owner's tasks, newest status first (ties: larger id first).
    pub(super) fn newest_first(&self, owner: OwnerId) -> impl Iterator<Item = (u64, &Arc<str>)> {
        self.by_owner
            .get(&owner)
            .into_iter()
            .flat_map(|set| set.iter().rev().map(|(ts, id)| (*ts, id)))
    }
}

/// One partition's tasks whose turn no worker has claimed, by (since when, task id): what a
/// worker's sweeper looks at to put a lost command back on the queue.
#[derive(Default)]
pub(super) struct AwaitingClaim {
    tasks: BTreeSet<(u64, Arc<str>)>,
}

impl AwaitingClaim {
    /// Move `id` from waiting since `was` (if it waited) to waiting since `now` (if it does).
    pub(super) fn update(&mut self, id: &Arc<str>, was: Option<u64>, now: Option<u64>) {
        if let Some(was) = was {
            self.tasks.remove(&(was, id.clone()));
        }
        if let Some(now) = now {
            self.tasks.insert((now, id.clone()));
        }
    }

    /// The tasks that have waited since before `before_ms`, oldest first.
    pub(super) fn since_before(&self, before_ms: u64) -> impl Iterator<Item = &Arc<str>> {
        self.tasks
            .iter()
            .take_while(move |(since, _)| *since < before_ms)
            .map(|(_, id)| id)
    }
}

/// Which tasks a `ListTasks` wants, and which page.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks whose status timestamp is at or after this, Unix milliseconds.
    pub status_after_ms: Option<u64>,
    /// Page size (1 to 100).
    pub page_size: usize,
    /// Resume after this (status timestamp, task id) — the last item of the previous page.
    pub cursor: Option<(u64, String)>,
}

impl ListFilter {
    pub(super) fn matches(&self, ts: u64, context_id: &str, state: Option<TaskState>) -> bool {
        self.context_id.as_deref().is_none_or(|c| c == context_id)
            && self.state.is_none_or(|s| Some(s) == state)
            && self.status_after_ms.is_none_or(|after| ts >= after)
    }

    pub(super) fn after_cursor(&self, ts: u64, id: &str) -> bool {
        match &self.cursor {
            None => true,
            Some((cursor_ts, cursor_id)) => (ts, id) < (*cursor_ts, cursor_id.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_interned_per_principal_and_tenant() {
        let mut owners = Owners::default();
        let alice = owners.intern("alice", "");
        let alice_in_acme = owners.intern("alice", "acme");
        let bob = owners.intern("bob", "");
        assert_eq!(owners.intern("alice", ""), alice);
        assert_ne!(alice, alice_in_acme);
        assert_ne!(alice, bob);
        let caller = Caller {
            principal: "alice".into(),
            tenant: "acme".into(),
        };
        assert_eq!(owners.find(&caller), Some(alice_in_acme));
        assert_eq!(owners.caller(alice_in_acme), &caller);
        let stranger = Caller {
            principal: "carol".into(),
            tenant: "acme".into(),
        };
        assert_eq!(owners.find(&stranger), None);
    }
}
