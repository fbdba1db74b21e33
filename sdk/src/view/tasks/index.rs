//! The view's indexes: owners interned to small ids, and each owner's tasks by status time.

use std::collections::{BTreeMap, BTreeSet, HashMap, btree_map};
use std::ops::Bound;

use agentlog_wire::{StateCode, TaskState};
use smallvec::SmallVec;

use super::Slot;
use crate::agent::Caller;
use crate::view::key::{Key, KeyRef, stable_hash};

/// A caller interned to a number (tasks store 4 bytes instead of two strings).
pub(in crate::view) type OwnerId = u32;

#[derive(Default)]
pub(in crate::view) struct Owners {
    /// tenant → principal → id: two levels, so that a lookup borrows the record's strings
    /// instead of building a `Caller` for every record applied.
    ids: HashMap<String, HashMap<String, OwnerId>>,
    callers: Vec<Caller>,
}

impl Owners {
    pub(in crate::view) fn intern(&mut self, principal: &str, tenant: &str) -> OwnerId {
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

    pub(in crate::view) fn find(&self, caller: &Caller) -> Option<OwnerId> {
        self.get(&caller.principal, &caller.tenant)
    }

    fn get(&self, principal: &str, tenant: &str) -> Option<OwnerId> {
        self.ids.get(tenant)?.get(principal).copied()
    }

    pub(in crate::view) fn caller(&self, id: OwnerId) -> &Caller {
        &self.callers[id as usize]
    }

    /// Every owner, by id.
    pub(in crate::view) fn all(&self) -> &[Caller] {
        &self.callers
    }
}

/// Where a task sits in the `ListTasks` index: its owner, context (hashed), state, status
/// time and tie-break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::view) struct Listed {
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
    pub(in crate::view) fn of(
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

/// Every task under two groupings, each ordered by (status time, tie-break): the owner's tasks
/// in one state, and the owner's tasks in one context. A state filter is one range of one
/// grouping; no filter merges the owner's ranges of every state (a handful); a status time
/// bounds each range from below and the cursor from above. So a page costs O(page + log n)
/// with no scan. A context filter (with a state or not) is a range of the context's tasks,
/// O(log n + the context's tasks) at worst (a context holds one conversation's tasks). The
/// owner-state groupings' sizes are kept, so the total without a status time is O(1) (a sum
/// over states); with `statusTimestampAfter` it is counted from whichever end of each range is
/// nearer, O(min(tasks matching, tasks of the grouping not matching)); a context's total is
/// counted.
///
/// A key is 128 bits: 48 of a hash of the grouping, 48 of the status time (milliseconds, good
/// for the next 8,000 years), 32 of a [`stable_hash`] of the task id; the value is the task's
/// slot. The page's caller checks each task it gets against the filter, so a grouping hash
/// collision costs a skipped entry, never a wrong one. Two tasks of one grouping with equal
/// status time and equal id hashes (one chance in 2^32 per such pair) take neighbouring keys.
#[derive(Default)]
pub(in crate::view) struct ListIndex {
    map: BTreeMap<u128, Slot>,
    /// Tasks per owner-state grouping.
    sizes: HashMap<u64, u32, foldhash::fast::RandomState>,
}

/// The largest status time a key holds.
const TS_MAX: u64 = (1 << 48) - 1;

/// The groupings' families (hashed into each grouping's key).
const BY_STATE: u8 = 1;
const BY_CONTEXT: u8 = 2;

fn key(group: u64, status_ms: u64, tie: u32) -> u128 {
    (u128::from(group >> 16) << 80) | (u128::from(status_ms.min(TS_MAX)) << 32) | u128::from(tie)
}

/// The position of a key inside its grouping: (status time, tie-break).
fn in_group(key: u128) -> u128 {
    key & ((1 << 80) - 1)
}

/// The first key of the grouping after `group`'s, if there is one.
fn next_group(group: u64) -> Option<u128> {
    (group >> 16)
        .checked_add(1)
        .filter(|next| *next < 1 << 48)
        .map(|next| u128::from(next) << 80)
}

impl ListIndex {
    /// The task's groupings: its owner-state one (counted), its owner-context one.
    fn groups(listed: &Listed) -> [u64; 2] {
        [
            group(BY_STATE, listed.owner, None, Some(listed.state)),
            group(BY_CONTEXT, listed.owner, Some(listed.context), None),
        ]
    }

    /// Move `slot` from where it was listed (if it was) to `now` (if it is listed).
    pub(in crate::view) fn update(
        &mut self,
        slot: Slot,
        was: Option<&Listed>,
        now: Option<&Listed>,
    ) {
        if was == now {
            return;
        }
        if let Some(was) = was {
            let [by_state, by_context] = Self::groups(was);
            self.remove(key(by_context, was.status_ms, was.tie), slot);
            if self.remove(key(by_state, was.status_ms, was.tie), slot)
                && let Some(size) = self.sizes.get_mut(&by_state)
            {
                *size -= 1;
                if *size == 0 {
                    self.sizes.remove(&by_state);
                }
            }
        }
        if let Some(now) = now {
            let [by_state, by_context] = Self::groups(now);
            self.insert(key(by_context, now.status_ms, now.tie), slot);
            if self.insert(key(by_state, now.status_ms, now.tie), slot) {
                *self.sizes.entry(by_state).or_default() += 1;
            }
        }
    }

    /// Put `slot` at `key`, or at the next free tie-break after it; whether it was not there.
    fn insert(&mut self, mut key: u128, slot: Slot) -> bool {
        // One search per key tried (an `entry`, not a `get` then an `insert`): every status
        // change of every task comes here twice.
        loop {
            match self.map.entry(key) {
                btree_map::Entry::Vacant(free) => {
                    free.insert(slot);
                    return true;
                }
                btree_map::Entry::Occupied(taken) if *taken.get() == slot => return false,
                btree_map::Entry::Occupied(_) => key = bump(key),
            }
        }
    }

    /// Take `slot` out from `key`, or from a later tie-break of the same time, where an
    /// equal id hash put it. Whether it was there.
    fn remove(&mut self, key: u128, slot: Slot) -> bool {
        if let btree_map::Entry::Occupied(found) = self.map.entry(key)
            && *found.get() == slot
        {
            found.remove();
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
    pub(in crate::view) fn build(tasks: impl Iterator<Item = (Slot, Listed)>) -> Self {
        let mut keys = Vec::with_capacity(tasks.size_hint().0 * 2);
        let mut sizes: HashMap<u64, u32, _> = HashMap::default();
        for (slot, listed) in tasks {
            let [by_state, by_context] = Self::groups(&listed);
            keys.push((key(by_state, listed.status_ms, listed.tie), slot));
            keys.push((key(by_context, listed.status_ms, listed.tie), slot));
            *sizes.entry(by_state).or_default() += 1;
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
    pub(in crate::view) fn page(
        &self,
        owner: OwnerId,
        filter: &ListFilter,
    ) -> (impl Iterator<Item = (u64, Slot)> + '_, Option<usize>) {
        let after = filter.status_after_ms.unwrap_or(0);
        let groups: SmallVec<[u64; 10]> = match (&filter.context_id, filter.state) {
            (Some(_), _) => smallvec::smallvec![context_group(owner, filter)],
            (None, Some(state)) => smallvec::smallvec![group(BY_STATE, owner, None, Some(state))],
            (None, None) => every_state()
                .map(|state| group(BY_STATE, owner, None, Some(state)))
                .filter(|g| self.sizes.contains_key(g))
                .collect(),
        };
        let total = filter
            .context_id
            .is_none()
            .then(|| groups.iter().map(|g| self.count_from(*g, after)).sum());
        let ranges = groups
            .iter()
            .map(|&g| {
                let lower = key(g, after, 0);
                let upper = match &filter.cursor {
                    // A cursor below the range (older than `statusTimestampAfter`): nothing.
                    Some((ts, _)) if *ts < after => Bound::Excluded(lower),
                    Some((ts, id)) => Bound::Excluded(key(g, *ts, stable_hash(KeyRef::of(id)))),
                    None => next_group(g).map_or(Bound::Unbounded, Bound::Excluded),
                };
                self.map
                    .range((Bound::Included(lower), upper))
                    .rev()
                    .peekable()
            })
            .collect();
        (Newest { ranges }, total)
    }

    /// How many tasks of the counted grouping `g` have a status time at or after `after`.
    fn count_from(&self, g: u64, after: u64) -> usize {
        let size = self.sizes.get(&g).copied().unwrap_or(0) as usize;
        if after == 0 {
            return size;
        }
        // Count the nearer side: the matching keys, or the group's others.
        let upper = next_group(g).map_or(Bound::Unbounded, Bound::Excluded);
        let mut matching = self.map.range((Bound::Included(key(g, after, 0)), upper));
        let mut older = self.map.range(key(g, 0, 0)..key(g, after, 0));
        let mut steps = 0;
        loop {
            match (matching.next(), older.next()) {
                (None, _) => break steps,
                (Some(_), None) => break size - steps,
                (Some(_), Some(_)) => steps += 1,
            }
        }
    }

    /// Every candidate of a context `filter` (its cursor aside), for its total.
    pub(in crate::view) fn context_range(
        &self,
        owner: OwnerId,
        filter: &ListFilter,
    ) -> impl Iterator<Item = (u64, Slot)> + '_ {
        let g = context_group(owner, filter);
        let lower = key(g, filter.status_after_ms.unwrap_or(0), 0);
        let upper = next_group(g).map_or(Bound::Unbounded, Bound::Excluded);
        self.map
            .range((Bound::Included(lower), upper))
            .map(|(key, slot)| (status_ms_of(*key), *slot))
    }
}

/// A few ranges of the index (newest first each) merged, newest first.
struct Newest<I: Iterator> {
    ranges: SmallVec<[std::iter::Peekable<I>; 10]>,
}

impl<'a, I: Iterator<Item = (&'a u128, &'a Slot)>> Iterator for Newest<I> {
    type Item = (u64, Slot);

    fn next(&mut self) -> Option<Self::Item> {
        let newest = self
            .ranges
            .iter_mut()
            .enumerate()
            .filter_map(|(i, range)| Some((in_group(*range.peek()?.0), i)))
            .max()?
            .1;
        let (key, slot) = self.ranges.get_mut(newest)?.next()?;
        Some((status_ms_of(*key), *slot))
    }
}

/// Every state a task can be listed in.
fn every_state() -> impl Iterator<Item = TaskState> {
    static STATES: std::sync::OnceLock<Vec<TaskState>> = std::sync::OnceLock::new();
    STATES
        .get_or_init(|| {
            (0..=u8::MAX)
                .filter_map(|code| StateCode(code).state().ok())
                .collect()
        })
        .iter()
        .copied()
}

/// The grouping a context filter reads.
fn context_group(owner: OwnerId, filter: &ListFilter) -> u64 {
    let context = filter.context_id.as_deref().unwrap_or_default();
    group(
        BY_CONTEXT,
        owner,
        Some(context_hash(KeyRef::of(context))),
        None,
    )
}

fn status_ms_of(key: u128) -> u64 {
    ((key >> 32) as u64) & TS_MAX
}

/// The key after `key` with the same grouping and time (its tie-break wraps around).
fn bump(key: u128) -> u128 {
    let tie = (key as u32).wrapping_add(1);
    ((key >> 32) << 32) | u128::from(tie)
}

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
pub(in crate::view) fn context_hash(context: KeyRef<'_>) -> u64 {
    use std::hash::BuildHasher;
    GROUPING.hash_one(context)
}

/// One partition's tasks waiting for something, by (since when, slot): those whose turn no
/// worker has claimed (what a worker's sweeper puts back on the queue), or those waiting
/// for input (whose asks it expires).
#[derive(Default)]
pub(in crate::view) struct AwaitingClaim {
    tasks: BTreeSet<(u64, Slot)>,
}

impl AwaitingClaim {
    /// Move `slot` from waiting since `was` (if it waited) to waiting since `now` (if it does).
    pub(in crate::view) fn update(&mut self, slot: Slot, was: Option<u64>, now: Option<u64>) {
        if let Some(was) = was {
            self.tasks.remove(&(was, slot));
        }
        if let Some(now) = now {
            self.tasks.insert((now, slot));
        }
    }

    /// The tasks that have waited since before `before_ms`, oldest first, with since when.
    pub(in crate::view) fn since_before(
        &self,
        before_ms: u64,
    ) -> impl Iterator<Item = (u64, Slot)> + '_ {
        self.tasks
            .iter()
            .take_while(move |(since, _)| *since < before_ms)
            .copied()
    }

    /// Every task with since when it waits, oldest first.
    pub(in crate::view) fn all(&self) -> impl Iterator<Item = (u64, Slot)> + '_ {
        self.tasks.iter().copied()
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
    pub(in crate::view) fn matches(
        &self,
        ts: u64,
        context: &Key,
        state: Option<TaskState>,
    ) -> bool {
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
