//! Pins on partitions for the reads that sync them first: one request's read of several
//! partitions ([`PartitionPins`]: a `ListTasks`), and a worker's look at one task after its
//! sync ([`TaskView::pin_synced`]). A retired partition is released only once no pin is left
//! (`hold.rs`), so a read stalled longer than the retire's grace still finds the tasks it
//! synced, and a page never comes short of a partition released under it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::part::Part;
use super::{ListFilter, PartitionPin, TaskInfo, TaskView};
use crate::agent::Caller;
use crate::error::Result;

impl Part {
    /// Count a pin if the partition is held (and, with `serving`, not retiring): under the
    /// count's lock, as a retired partition's release checks the count and drops `held`, so
    /// a pin either holds that release back or finds the partition gone. A count that rises
    /// satisfies no waiter: nobody is woken.
    pub(super) fn pin_if(&self, serving: bool) -> bool {
        let mut pinned = false;
        self.pins.send_if_modified(|pins| {
            pinned = if serving { self.serves() } else { self.held() };
            if pinned {
                *pins += 1;
            }
            false
        });
        pinned
    }

    /// Take a pin back. Only a retiring partition's release waits on the count (for none
    /// left): it alone is woken, and only then; a release that misses a wake looks again
    /// after a while anyway.
    pub(super) fn unpin(&self) {
        self.pins.send_if_modified(|pins| {
            *pins = pins.saturating_sub(1);
            *pins == 0 && self.retiring.load(Ordering::Acquire)
        });
    }
}

/// One read's pins on some partitions of a view (a `ListTasks` over them): taken before the
/// read's sync, kept until the read is done; while they live none of those partitions is
/// released by a retire, however long the read takes. Dropping them unpins.
#[must_use = "pins hold the partitions only while they live"]
pub struct PartitionPins<'a> {
    view: &'a TaskView,
    /// Ascending, each once.
    partitions: Vec<u32>,
}

impl TaskView {
    /// No pins yet: [`PartitionPins::add`] pins partitions one by one.
    pub fn pins(&self) -> PartitionPins<'_> {
        PartitionPins {
            view: self,
            partitions: Vec::new(),
        }
    }

    /// Pins on every partition the view holds for a request that begins now
    /// ([`holds`](Self::holds)): what a listing of the whole view reads. A partition being
    /// retired is not one of them: its new holder lists it (a listing that names it,
    /// [`PartitionPins::add`], still reads it until it goes).
    pub fn pin_held(&self) -> PartitionPins<'_> {
        let partitions = (0u32..)
            .zip(self.inner.parts.iter())
            .filter(|(_, part)| part.pin_if(true))
            .map(|(p, _)| p)
            .collect();
        PartitionPins {
            view: self,
            partitions,
        }
    }

    /// Pin `partition` ([`pin`](Self::pin)), then [`sync`](Self::sync) it: for a look at a
    /// task that follows a sync, however long the sync takes (a worker deciding a turn).
    /// Keep the pin until the look is done. A partition the view does not have the tasks of
    /// is a retryable [`Unavailable`](crate::ErrorKind::Unavailable).
    pub async fn pin_synced(&self, partition: u32, timeout: Duration) -> Result<PartitionPin> {
        let pin = self
            .pin(partition)
            .ok_or_else(|| self.inner.not_held(partition))?;
        self.sync(Some(partition), timeout).await?;
        Ok(pin)
    }

    /// [`pin_synced`](Self::pin_synced) up to `end` ([`sync_to`](Self::sync_to)): for a look
    /// after this process's own append.
    pub async fn pin_synced_to(
        &self,
        partition: u32,
        end: u64,
        timeout: Duration,
    ) -> Result<PartitionPin> {
        let pin = self
            .pin(partition)
            .ok_or_else(|| self.inner.not_held(partition))?;
        self.sync_to(partition, end, timeout).await?;
        Ok(pin)
    }
}

impl PartitionPins<'_> {
    /// Pin `partition` too, if the view has its tasks (held, or retiring: a request that
    /// names it reads it until it goes); `false` if not. A partition pinned already is
    /// pinned once.
    pub fn add(&mut self, partition: u32) -> bool {
        let at = match self.partitions.binary_search(&partition) {
            Ok(_) => return true,
            Err(at) => at,
        };
        let pinned = self
            .view
            .inner
            .parts
            .get(partition as usize)
            .is_some_and(|part| part.pin_if(false));
        if pinned {
            self.partitions.insert(at, partition);
        }
        pinned
    }

    /// The partitions pinned, ascending.
    pub fn partitions(&self) -> &[u32] {
        &self.partitions
    }

    /// Wait until the view has applied everything the log held when this call started on
    /// the partitions pinned, as [`TaskView::sync`] does (one probe of the log's ends).
    pub async fn sync(&self, timeout: Duration) -> Result<()> {
        match self.partitions.as_slice() {
            [] => Ok(()),
            [partition] => self.view.sync(Some(*partition), timeout).await,
            several => self.view.sync_several(Some(several), timeout).await,
        }
    }

    /// The caller's tasks matching `filter` in the partitions pinned, as
    /// [`TaskView::list`] pages them. A partition released under the pins (a plain
    /// [`release`](TaskView::release) does not wait for them) is a retryable
    /// [`Unavailable`](crate::ErrorKind::Unavailable), not a page short of its tasks.
    pub fn list(&self, caller: &Caller, filter: &ListFilter) -> Result<(Vec<TaskInfo>, usize)> {
        self.view
            .list_of(caller, filter, self.partitions.iter().copied(), false)
            .map_err(|partition| self.view.inner.not_held(partition))
    }
}

impl std::fmt::Debug for PartitionPins<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionPins")
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}

impl Drop for PartitionPins<'_> {
    fn drop(&mut self) {
        for &partition in &self.partitions {
            if let Some(part) = self.view.inner.parts.get(partition as usize) {
                part.unpin();
            }
        }
    }
}
