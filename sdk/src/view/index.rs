//! The view's indexes: owners interned to small ids, and each owner's tasks by status time.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

use agentlog_wire::TaskState;

use super::key::{Key, KeyRef, stable_hash};
use super::task_map::Slot;
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

/// Where a task sits in the `ListTasks` index: its owner, context (hashed), state, status
/// time and tie-break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Listed {
    pub owner: OwnerId,
    /// [`context_hash`] of the task's context.
    pub context: u64,
    pub state: TaskState,
    pub status_ms: u64,
    /// [`stable_hash`] of the task id: orders tasks of equal status time alike everywhere.
    pub tie: u32,
}

impl Listed {
    /// Where a task of `owner`, `id` and `context` in `state` since `status_ms` is listed
    /// (nowhere before its command: no state).
    pub(super) fn of(
        owner: OwnerId,
        id: KeyRef<'_>,
        context: KeyRef<'_>,
        state: Option<TaskState>,
        status_ms: u64,
    ) -> Option<Self> {
        Some(Self {
            owner,
            context: context_hash(context),
            state: state?,
            status_ms,
            tie: stable_hash(id),
        })
    }
}

/// Every task under three groupings, each ordered by (status time, tie-break): the owner's
/// tasks, the owner's in one state, and the owner's in one context. So a filter on state or
/// status time is one range of one grouping: a page costs O(log n + page), with no scan; a
/// context filter (with a state or not) is a range of the context's tasks, O(log n + the
/// context's tasks) at worst (a context holds one conversation's tasks). The owner's and
/// owner-state groupings' sizes are kept, so their total is O(1); with `statusTimestampAfter`
/// it is counted from whichever end of the range is nearer, O(min(tasks matching, tasks of the
/// grouping not matching)); a context's total is counted.
///
/// A key is 128 bits: 48 of a hash of the grouping, 48 of the status time (milliseconds, good
/// for the next 8,000 years), 32 of a [`stable_hash`] of the task id; the value is the task's
/// slot. The page's caller checks each task it gets against the filter, so a grouping hash
/// collision costs a skipped entry, never a wrong one. Two tasks of one grouping with equal
/// status time and equal id hashes (one chance in 2^32 per such pair) take neighbouring keys.
#[derive(Default)]
pub(super) struct ListIndex {
    map: BTreeMap<u128, Slot>,
    sizes: HashMap<u64, u32, foldhash::fast::RandomState>,
}

/// The largest status time a key holds.
const TS_MAX: u64 = (1 << 48) - 1;

fn key(group: u64, status_ms: u64, tie: u32) -> u128 {
    (u128::from(group >> 16) << 80) | (u128::from(status_ms.min(TS_MAX)) << 32) | u128::from(tie)
}

/// The first key of the grouping after `group`'s, if there is one.
fn next_group(group: u64) -> Option<u128> {
    (group >> 16)
        .checked_add(1)
        .filter(|next| *next < 1 << 48)
        .map(|next| u128::from(next) << 80)
}

impl ListIndex {
    fn groups(listed: &Listed) -> [u64; 3] {
        [
            group(0, listed.owner, None, None),
            group(1, listed.owner, None, Some(listed.state)),
            group(2, listed.owner, Some(listed.context), None),
        ]
    }

    /// Move `slot` from where it was listed (if it was) to `now` (if it is listed).
    pub(super) fn update(&mut self, slot: Slot, was: Option<&Listed>, now: Option<&Listed>) {
        if was == now {
            return;
        }
        if let Some(was) = was {
            for (family, g) in Self::groups(was).into_iter().enumerate() {
                if self.remove(key(g, was.status_ms, was.tie), slot)
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
                self.insert(key(g, now.status_ms, now.tie), slot);
                if family < COUNTED {
                    *self.sizes.entry(g).or_default() += 1;
                }
            }
        }
    }

    /// Put `slot` at `key`, or at the next free tie-break after it.
    fn insert(&mut self, mut key: u128, slot: Slot) {
        while let Some(&other) = self.map.get(&key) {
            if other == slot {
                return;
            }
            key = bump(key);
        }
        self.map.insert(key, slot);
    }

    /// Take `slot` out from `key`, or from a later tie-break of the same time, where an
    /// equal id hash put it. Whether it was there.
    fn remove(&mut self, key: u128, slot: Slot) -> bool {
        if self.map.get(&key) == Some(&slot) {
            self.map.remove(&key);
            return true;
        }
        let same_time = (key >> 32) << 32;
        let found = self
            .map
            .range(same_time..=same_time | u128::from(u32::MAX))
            .find(|(_, s)| **s == slot)
            .map(|(k, _)| *k);
        found.is_some_and(|k| self.map.remove(&k).is_some())
    }

    /// An index of `tasks` (slot and where each is listed), built at once: what a view that
    /// replayed or restored its tasks builds, instead of one update per record.
    pub(super) fn build(tasks: impl Iterator<Item = (Slot, Listed)>) -> Self {
        let mut keys = Vec::with_capacity(tasks.size_hint().0 * 3);
        let mut sizes: HashMap<u64, u32, _> = HashMap::default();
        for (slot, listed) in tasks {
            for (family, g) in Self::groups(&listed).into_iter().enumerate() {
                keys.push((key(g, listed.status_ms, listed.tie), slot));
                if family < COUNTED {
                    *sizes.entry(g).or_default() += 1;
                }
            }
        }
        // Sorted first, the tree is built in one pass with full nodes.
        keys.sort_unstable();
        let mut index = Self {
            map: BTreeMap::new(),
            sizes,
        };
        let duplicate = keys.windows(2).any(|pair| pair[0].0 == pair[1].0);
        if duplicate {
            // Equal keys (see the type's docs): placed one by one.
            for (key, slot) in keys {
                index.insert(key, slot);
            }
        } else {
            index.map = keys.into_iter().collect();
        }
        index
    }

    /// The newest tasks of `owner` matching `filter` (status time at or after
    /// `filter.status_after_ms`, before `filter.cursor`), newest first, as (status time,
    /// slot), and how many match in all (the cursor aside) when the index can tell: `None`
    /// for a context filter, whose total the caller counts over the same candidates without
    /// the cursor ([`ListIndex::context_range`]). Candidates: the caller checks each against
    /// the filter.
    pub(super) fn page(
        &self,
        owner: OwnerId,
        filter: &ListFilter,
    ) -> (impl Iterator<Item = (u64, Slot)> + '_, Option<usize>) {
        let g = filter_group(owner, filter);
        let lower = key(g, filter.status_after_ms.unwrap_or(0), 0);
        let end = next_group(g);
        let upper_of_group = || end.map_or(Bound::Unbounded, Bound::Excluded);
        let total = if filter.context_id.is_some() {
            None
        } else if filter.status_after_ms.is_none_or(|after| after == 0) {
            Some(self.sizes.get(&g).copied().unwrap_or(0) as usize)
        } else {
            let size = self.sizes.get(&g).copied().unwrap_or(0) as usize;
            // Count the nearer side: the matching keys, or the group's others.
            let mut matching = self.map.range((Bound::Included(lower), upper_of_group()));
            let mut older = self.map.range(key(g, 0, 0)..lower);
            let mut steps = 0;
            Some(loop {
                match (matching.next(), older.next()) {
                    (None, _) => break steps,
                    (Some(_), None) => break size - steps,
                    (Some(_), Some(_)) => steps += 1,
                }
            })
        };
        let upper = match &filter.cursor {
            // A cursor below the range (older than `statusTimestampAfter`): nothing after it.
            Some((ts, _)) if *ts < filter.status_after_ms.unwrap_or(0) => Bound::Excluded(lower),
            Some((ts, id)) => Bound::Excluded(key(g, *ts, stable_hash(KeyRef::of(id)))),
            None => upper_of_group(),
        };
        let page = self
            .map
            .range((Bound::Included(lower), upper))
            .rev()
            .map(|(key, slot)| (status_ms_of(*key), *slot));
        (page, total)
    }

    /// Every candidate of a context `filter` (its cursor aside), for its total.
    pub(super) fn context_range(
        &self,
        owner: OwnerId,
        filter: &ListFilter,
    ) -> impl Iterator<Item = (u64, Slot)> + '_ {
        let g = filter_group(owner, filter);
        let lower = key(g, filter.status_after_ms.unwrap_or(0), 0);
        let upper = next_group(g).map_or(Bound::Unbounded, Bound::Excluded);
        self.map
            .range((Bound::Included(lower), upper))
            .map(|(key, slot)| (status_ms_of(*key), *slot))
    }
}

/// The grouping a filter reads.
fn filter_group(owner: OwnerId, filter: &ListFilter) -> u64 {
    match (&filter.context_id, filter.state) {
        (Some(context), _) => group(2, owner, Some(context_hash(KeyRef::of(context))), None),
        (None, Some(state)) => group(1, owner, None, Some(state)),
        (None, None) => group(0, owner, None, None),
    }
}

fn status_ms_of(key: u128) -> u64 {
    ((key >> 32) as u64) & TS_MAX
}

/// The key after `key` with the same grouping and time (its tie-break wraps around).
fn bump(key: u128) -> u128 {
    let tie = (key as u32).wrapping_add(1);
    ((key >> 32) << 32) | u128::from(tie)
}

/// The groupings whose sizes are kept (the owner's, the owner's per state): few of them. A
/// context's tasks are counted when listed (a context holds one conversation's tasks; a size per
/// context would cost memory per task).
const COUNTED: usize = 2;

/// The hasher of the index's groupings: fast, with a fixed seed (a grouping is the same in
/// every process of a build). A collision is harmless (see [`ListIndex`]) and only mixes one
/// owner's own tasks, so the groupings need no per-process seed.
const GROUPING: foldhash::fast::FixedState =
    foldhash::fast::FixedState::with_seed(0x6167_656e_746c_6f67);

/// The 64-bit key of one grouping of the index.
fn group(family: u8, owner: OwnerId, context: Option<u64>, state: Option<TaskState>) -> u64 {
    use std::hash::BuildHasher;
    GROUPING.hash_one((family, owner, context, state.map(TaskState::code)))
}

/// A task's context as the index groups it.
pub(super) fn context_hash(context: KeyRef<'_>) -> u64 {
    use std::hash::BuildHasher;
    GROUPING.hash_one(context)
}

/// One partition's tasks whose turn no worker has claimed, by (since when, slot): what a
/// worker's sweeper looks at to put a lost command back on the queue.
#[derive(Default)]
pub(super) struct AwaitingClaim {
    tasks: BTreeSet<(u64, Slot)>,
}

impl AwaitingClaim {
    /// Move `slot` from waiting since `was` (if it waited) to waiting since `now` (if it does).
    pub(super) fn update(&mut self, slot: Slot, was: Option<u64>, now: Option<u64>) {
        if let Some(was) = was {
            self.tasks.remove(&(was, slot));
        }
        if let Some(now) = now {
            self.tasks.insert((now, slot));
        }
    }

    /// The tasks that have waited since before `before_ms`, oldest first.
    pub(super) fn since_before(&self, before_ms: u64) -> impl Iterator<Item = Slot> + '_ {
        self.tasks
            .iter()
            .take_while(move |(since, _)| *since < before_ms)
            .map(|(_, slot)| *slot)
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
    pub(super) fn matches(&self, ts: u64, context: &Key, state: Option<TaskState>) -> bool {
        self.context_id.as_deref().is_none_or(|c| context.is(c))
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
