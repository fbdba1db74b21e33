//! `ListTasks` over the partitions a view holds: each partition's page from its own index,
//! merged in the order one index keeps (status time, then [`list_tie`], descending), so pages
//! and cursors are those of a one-partition view.

use super::part::Part;
use super::tasks;
use super::{ListFilter, TaskInfo, TaskView, info, list_tie};
use crate::agent::Caller;
use crate::retention::now_ms;

impl TaskView {
    /// The caller's tasks matching `filter`, newest status first: one page and the total
    /// count, over the partitions the view holds. O(page + log n) per partition under its
    /// lock: each partition's index holds every filter's range, and their pages merge in the
    /// order one index keeps (status time, then [`list_tie`], descending).
    pub fn list(&self, caller: &Caller, filter: &ListFilter) -> (Vec<TaskInfo>, usize) {
        self.list_in(caller, filter, None)
    }

    /// [`list`](Self::list) over those of `partitions` the view holds (`None`: every one).
    /// Nothing is pinned: a partition released meanwhile is left out. A request that synced
    /// first lists through the pins it took before its sync
    /// ([`PartitionPins::list`](crate::view::PartitionPins::list)).
    pub fn list_in(
        &self,
        caller: &Caller,
        filter: &ListFilter,
        partitions: Option<&[u32]>,
    ) -> (Vec<TaskInfo>, usize) {
        let held = (0u32..)
            .zip(self.inner.parts.iter())
            .filter(|(partition, part)| {
                part.held() && partitions.is_none_or(|only| only.contains(partition))
            })
            .map(|(partition, _)| partition);
        self.list_of(caller, filter, held, true).unwrap_or_default()
    }

    /// The page and total of `partitions` (ascending): each partition's page, merged. A
    /// partition found released is skipped with `skip_released`, else the answer (`Err`).
    pub(super) fn list_of(
        &self,
        caller: &Caller,
        filter: &ListFilter,
        partitions: impl Iterator<Item = u32>,
        skip_released: bool,
    ) -> std::result::Result<(Vec<TaskInfo>, usize), u32> {
        let now = now_ms();
        let mut pages = Vec::new();
        let mut total = 0;
        for partition in partitions {
            let Some(part) = self.inner.parts.get(partition as usize) else {
                continue;
            };
            let Some((page, count)) = list_part(partition, part, caller, filter, now) else {
                if skip_released {
                    continue;
                }
                return Err(partition);
            };
            total += count;
            if !page.is_empty() {
                pages.push(page);
            }
        }
        let page = match pages.len() {
            0 => Vec::new(),
            1 => pages.pop().unwrap_or_default(),
            _ => {
                let mut merged: Vec<TaskInfo> = pages.into_iter().flatten().collect();
                merged.sort_by_cached_key(|t| {
                    std::cmp::Reverse((t.status_timestamp_ms, list_tie(&t.id)))
                });
                merged.truncate(filter.page_size);
                merged
            }
        };
        Ok((page, total))
    }
}

/// One partition's page of `list`, and its total; `None` if the partition is not held (its
/// tasks are gone, or going).
fn list_part(
    partition: u32,
    part: &Part,
    caller: &Caller,
    filter: &ListFilter,
    now: u64,
) -> Option<(Vec<TaskInfo>, usize)> {
    if part.read().maintenance_due(now) {
        // A list during the replay (its request caught up with the log before the view
        // said so) builds the index itself; and the total counts what the index holds,
        // so expired tasks leave it first.
        let mut tasks = part.write();
        tasks.index_ready();
        part.expire_locked(&mut tasks);
    }
    let tasks = part.read();
    // A release drops `held` before it swaps the tasks out under the write lock: held now,
    // under the read lock, these are the partition's tasks.
    if !part.held() {
        return None;
    }
    let Some(owner) = tasks.owners.find(caller) else {
        return Some((Vec::new(), 0));
    };
    // A hash collision of the index, or a task expired during a replay: skipped.
    let matching = |(ts, slot): (u64, tasks::Slot)| {
        tasks.live_in(slot, now).filter(|entry| {
            entry.owner == owner && filter.matches(ts, &entry.context, entry.machine.state())
        })
    };
    let (candidates, total) = tasks.index.page(owner, filter);
    let page: Vec<TaskInfo> = candidates
        .filter_map(matching)
        .take(filter.page_size)
        .map(|entry| info(partition, entry))
        .collect();
    let total = total.unwrap_or_else(|| {
        tasks
            .index
            .context_range(owner, filter)
            .filter_map(matching)
            .count()
    });
    Some((page, total))
}
