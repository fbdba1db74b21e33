//! The view's indexes: owners interned to small ids, and each owner's tasks by status time.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
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

/// Where a task sits in the `ListTasks` index: its owner, context, state and status time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Listed {
    pub owner: OwnerId,
    pub context_id: Arc<str>,
    pub state: TaskState,
    pub status_ms: u64,
}

/// Every task under four groupings, each ordered by (status time, task id): the owner's
/// tasks, the owner's in one state, in one context, and in one context and state. So any
/// filter combination of `ListTasks` (context, state, status time at or after) is one range
/// of one grouping: a page costs O(log n + page), with no scan. The owner's and owner-state
/// groupings' sizes are kept, so their total is O(1); with `statusTimestampAfter` it is counted
/// from whichever end of the range is nearer, O(min(tasks matching, tasks of the grouping not
/// matching)); a context's total is counted, O(the context's tasks).
///
/// A grouping is keyed by a 64-bit hash of what it groups by; the page's caller checks each
/// task it gets against the filter, so a collision costs a skipped entry, never a wrong one
/// (a total could count a colliding context's tasks: two contexts of one owner whose hashes
/// collide, one chance in 2^64 per pair).
#[derive(Default)]
pub(super) struct ListIndex {
    set: BTreeSet<(u64, u64, Arc<str>)>,
    sizes: HashMap<u64, u32>,
}

impl ListIndex {
    fn groups(listed: &Listed) -> [u64; 4] {
        [
            group(0, listed.owner, None, None),
            group(1, listed.owner, None, Some(listed.state)),
            group(2, listed.owner, Some(&listed.context_id), None),
            group(
                3,
                listed.owner,
                Some(&listed.context_id),
                Some(listed.state),
            ),
        ]
    }

    /// Move `id` from where it was listed (if it was) to `now` (if it is listed).
    pub(super) fn update(&mut self, id: &Arc<str>, was: Option<&Listed>, now: Option<&Listed>) {
        if was == now {
            return;
        }
        if let Some(was) = was {
            for (family, g) in Self::groups(was).into_iter().enumerate() {
                if self.set.remove(&(g, was.status_ms, id.clone()))
                    && family < COUNTED
                    && let Some(size) = self.sizes.get_mut(&g)
                {
                    *size -= 1;
                    if *size == 0 {
                        self.sizes.remove(&g);
                    }
                }
            }
        }
        if let Some(now) = now {
            for (family, g) in Self::groups(now).into_iter().enumerate() {
                if self.set.insert((g, now.status_ms, id.clone())) && family < COUNTED {
                    *self.sizes.entry(g).or_default() += 1;
                }
            }
        }
    }

    /// An index of `tasks` (id and where each is listed), built at once: what a view that
    /// replayed or restored its tasks builds, instead of one update per record.
    pub(super) fn build<'a>(tasks: impl Iterator<Item = (&'a Arc<str>, Listed)>) -> Self {
        let mut keys = Vec::new();
        let mut sizes: HashMap<u64, u32> = HashMap::new();
        for (id, listed) in tasks {
            for (family, g) in Self::groups(&listed).into_iter().enumerate() {
                keys.push((g, listed.status_ms, id.clone()));
                if family < COUNTED {
                    *sizes.entry(g).or_default() += 1;
                }
            }
        }
        // Sorted first, the set is built in one pass.
        keys.sort_unstable();
        Self {
            set: keys.into_iter().collect(),
            sizes,
        }
    }

    /// The newest tasks of `owner` matching `filter` (status time at or after
    /// `filter.status_after_ms`, before `filter.cursor`), newest first, and how many match in
    /// all (the cursor aside). Candidates: the caller checks each against the filter.
    pub(super) fn page(
        &self,
        owner: OwnerId,
        filter: &ListFilter,
    ) -> (impl Iterator<Item = (u64, &Arc<str>)> + '_, usize) {
        let family = match (&filter.context_id, filter.state) {
            (None, None) => 0,
            (None, Some(_)) => 1,
            (Some(_), None) => 2,
            (Some(_), Some(_)) => 3,
        };
        let g = group(family, owner, filter.context_id.as_deref(), filter.state);
        let first = (g, 0, empty_id());
        let lower = (g, filter.status_after_ms.unwrap_or(0), empty_id());
        // Every key of the group is below the next group's first one.
        let end = g.checked_add(1).map(|next| (next, 0, empty_id()));
        let upper_of_group = || match &end {
            Some(end) => Bound::Excluded(end.clone()),
            None => Bound::Unbounded,
        };
        let total = if usize::from(family) >= COUNTED {
            // A context's tasks: few, counted.
            self.set
                .range((Bound::Included(lower.clone()), upper_of_group()))
                .count()
        } else if filter.status_after_ms.is_none_or(|after| after == 0) {
            self.sizes.get(&g).copied().unwrap_or(0) as usize
        } else {
            let size = self.sizes.get(&g).copied().unwrap_or(0) as usize;
            // Count the nearer side: the matching keys, or the group's others.
            let mut matching = self
                .set
                .range((Bound::Included(lower.clone()), upper_of_group()));
            let mut older = self.set.range(first..lower.clone());
            let mut steps = 0;
            loop {
                match (matching.next(), older.next()) {
                    (None, _) => break steps,
                    (Some(_), None) => break size - steps,
                    (Some(_), Some(_)) => steps += 1,
                }
            }
        };
        let upper = match &filter.cursor {
            // A cursor below the range (older than `statusTimestampAfter`): nothing after it.
            Some((ts, _)) if (g, *ts) < (g, lower.1) => Bound::Excluded(lower.clone()),
            Some((ts, id)) => Bound::Excluded((g, *ts, Arc::<str>::from(id.as_str()))),
            None => upper_of_group(),
        };
        let page = self
            .set
            .range((Bound::Included(lower), upper))
            .rev()
            .map(|(_, ts, id)| (*ts, id));
        (page, total)
    }
}

/// The groupings whose sizes are kept (the owner's, the owner's per state): few of them. A
/// context's tasks are counted when listed (a context holds one conversation's tasks; a size per
/// context would cost memory per task).
const COUNTED: usize = 2;

/// The empty task id: below every other.
fn empty_id() -> Arc<str> {
    static EMPTY: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Arc::from("")).clone()
}

/// The 64-bit key of one grouping of the index (a fixed-key hash: the same in every process).
fn group(family: u8, owner: OwnerId, context_id: Option<&str>, state: Option<TaskState>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (family, owner, context_id, state.map(TaskState::code)).hash(&mut hasher);
    hasher.finish()
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
