//! Holding and releasing partitions ([`TaskView::hold`], [`TaskView::release`]): a hold
//! restores the partition's newest usable checkpoint and catches it up in the background; a
//! release stops its follower and drops its tasks at once. A retire ([`TaskView::retire`])
//! releases once the requests that pinned the partition ([`TaskView::pin`]) are done.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::part::{KnownCheckpoints, Part, PartitionStatus};
use super::tasks::Tasks;
use super::{Inner, TaskView, follow, persist};
use crate::error::{Error, ErrorKind, Result};

/// How often a retired partition's release, waiting for its pins, looks again whether it is
/// still retiring, at the least.
const RECHECK: std::time::Duration = std::time::Duration::from_millis(100);

impl TaskView {
    /// Start holding `partition` as part of the view's assignment: restore its newest usable
    /// checkpoint (if the view has a checkpoint topic), then catch it up in the background.
    /// Returns once the restore is done; [`partition_ready`](Self::partition_ready) says when
    /// it has caught up (until then a request about it waits, within its sync timeout).
    /// Holding a partition held already marks it assigned and does nothing else.
    pub async fn hold(&self, partition: u32) -> Result<()> {
        Inner::hold(&self.inner, partition, true).await
    }

    /// [`hold`](Self::hold) beyond the view's assignment (a successor standing in for an owner
    /// that does not answer): the view's readiness does not wait for it.
    pub async fn hold_on_demand(&self, partition: u32) -> Result<()> {
        Inner::hold(&self.inner, partition, false).await
    }

    /// Stop holding `partition`: its follower stops and its tasks are dropped in one step
    /// (no per-task work under a lock another partition's requests wait on). Writes nothing.
    /// A request about it is then refused as unavailable. Releasing a partition not held
    /// does nothing.
    pub async fn release(&self, partition: u32) -> Result<()> {
        self.inner.release(partition).await
    }

    /// Release `partition` once `grace` has passed and no request pins it any more: from now
    /// on it is held for no request that begins ([`holds`](Self::holds) is false: a request
    /// about it is forwarded), while the requests that began before, and found it held, finish
    /// on its tasks (it is still followed). A request that pinned it ([`pin`](Self::pin))
    /// keeps it however long it takes between its sync and its read; `grace` covers those
    /// that found it held and have not pinned it yet. Holding it as assigned meanwhile keeps
    /// it; holding it on demand serves that request and keeps the release. What a planned
    /// move's old holder does.
    pub async fn retire(&self, partition: u32, grace: std::time::Duration) -> Result<()> {
        let part = self.inner.part(partition)?;
        let follower = part.holding.lock().await;
        if !part.held() || part.retiring.load(Ordering::Acquire) {
            return Ok(());
        }
        part.retiring.store(true, Ordering::Release);
        part.assigned.store(false, Ordering::Release);
        let generation = part.generation.load(Ordering::Acquire);
        drop(follower);
        self.inner.recompute_caught_up();
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            loop {
                // Waited for without the view (a view dropped meanwhile ends the wait), and
                // looked at again each grace: a hold as assigned meanwhile ends it too.
                let pins = inner.upgrade().and_then(|view| {
                    let part = view.parts.get(partition as usize)?;
                    let retiring = part.retiring.load(Ordering::Acquire)
                        && part.generation.load(Ordering::Acquire) == generation;
                    retiring.then(|| part.pins.subscribe())
                });
                let Some(mut pins) = pins else {
                    return;
                };
                match tokio::time::timeout(grace.max(RECHECK), pins.wait_for(|n| *n == 0)).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(_)) => return,
                    Err(_) => continue,
                }
                drop(pins);
                let Some(view) = inner.upgrade() else {
                    return;
                };
                match view.release_retired(partition, generation).await {
                    // Pinned again between the wait and the release: wait for that one too.
                    Ok(false) => continue,
                    Ok(true) => return,
                    Err(error) => {
                        tracing::warn!(partition, error = %error.report(), "cannot release a retired partition");
                        return;
                    }
                }
            }
        });
        Ok(())
    }

    /// Pin `partition`'s tasks for a request that is about to sync and read them (take it
    /// before the sync, keep it until the read is done): while a pin lives, a retired
    /// partition ([`retire`](Self::retire)) is still followed and readable, however long the
    /// request takes. `None` when the view no longer has the partition's tasks (not held, or
    /// released): the request is refused as unavailable, as its sync would be. A
    /// [`release`](Self::release) does not wait for pins.
    pub fn pin(&self, partition: u32) -> Option<PartitionPin> {
        let part = self.inner.parts.get(partition as usize)?;
        // A pin either sees it held and holds a retired release back, or sees it gone.
        part.pin_if(false).then(|| PartitionPin {
            view: self.clone(),
            partition,
        })
    }

    /// The partitions the view holds, ascending (not those it is retiring).
    pub fn held_partitions(&self) -> Vec<u32> {
        (0u32..)
            .zip(self.inner.parts.iter())
            .filter(|(_, part)| part.serves())
            .map(|(p, _)| p)
            .collect()
    }

    /// Whether the view holds `partition` for a request that begins now (not while it is
    /// retiring).
    pub fn holds(&self, partition: u32) -> bool {
        self.inner
            .parts
            .get(partition as usize)
            .is_some_and(Part::serves)
    }

    /// Whether the view has `partition`'s tasks (held, or retiring): a request that found it
    /// held may sync and read it.
    pub(super) fn holds_data(&self, partition: u32) -> bool {
        self.inner
            .parts
            .get(partition as usize)
            .is_some_and(Part::held)
    }

    /// Whether `partition` is held and has caught up with what its log held when the hold
    /// began.
    pub fn partition_ready(&self, partition: u32) -> bool {
        self.inner
            .parts
            .get(partition as usize)
            .is_some_and(|part| part.held() && part.is_ready())
    }

    /// Every held partition as it stands now, ascending.
    pub fn partition_status(&self) -> Vec<PartitionStatus> {
        (0u32..)
            .zip(self.inner.parts.iter())
            .filter(|(_, part)| part.serves())
            .map(|(partition, part)| PartitionStatus {
                partition,
                ready: part.is_ready(),
                assigned: part.assigned.load(Ordering::Acquire),
                tasks: part.read().entries.len(),
                applied: part.applied_next(),
                restored_from: *Part::lock(&part.restored),
                ready_after: *Part::lock(&part.ready_after),
                held_at_ms: part.held_at_ms.load(Ordering::Acquire),
            })
            .collect()
    }
}

/// A request's pin on a partition's tasks ([`TaskView::pin`]): dropping it unpins.
#[must_use = "a pin holds the partition only while it lives"]
pub struct PartitionPin {
    view: TaskView,
    partition: u32,
}

impl PartitionPin {
    /// The partition pinned.
    pub fn partition(&self) -> u32 {
        self.partition
    }
}

impl std::fmt::Debug for PartitionPin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionPin")
            .field("partition", &self.partition)
            .finish_non_exhaustive()
    }
}

impl Drop for PartitionPin {
    fn drop(&mut self) {
        if let Some(part) = self.view.inner.parts.get(self.partition as usize) {
            part.unpin();
        }
    }
}

impl Inner {
    /// The partition's share, or a configuration error for one the topic lacks.
    pub(super) fn part(&self, partition: u32) -> Result<&Part> {
        self.parts.get(partition as usize).ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "{} has {} partitions: no partition {partition}",
                    self.topic, self.partitions
                ),
            )
        })
    }

    /// The refusal of a request about a partition the view does not hold: retryable.
    pub(super) fn not_held(&self, partition: u32) -> Error {
        Error::new(
            ErrorKind::Unavailable,
            format!(
                "partition {partition} of {} is not held by this view; retry (another holds it, or will)",
                self.topic
            ),
        )
    }

    pub(super) async fn hold(self: &Arc<Self>, partition: u32, assigned: bool) -> Result<()> {
        let part = self.part(partition)?;
        let mut follower = part.holding.lock().await;
        if part.held() {
            if assigned {
                part.retiring.store(false, Ordering::Release);
                part.assigned.store(true, Ordering::Release);
                self.recompute_caught_up();
            }
            return Ok(());
        }
        let began = Instant::now();
        let held_at_ms = crate::retention::now_ms();
        let count_live = self.options.compact.is_some();
        let restored = match &self.options.checkpoints {
            Some(checkpoints) => persist::restore(self, checkpoints, partition, count_live).await,
            None => None,
        };
        // The end the hold's readiness is measured against, read after the restore: the
        // records before it are replayed before the partition answers.
        let start_end = self.log.end_offset(&self.topic, partition).await?;
        let end = self
            .log
            .watch_end_for(&self.topic, partition, self.applier)
            .await?;
        let (tasks, position, mark) = match restored {
            Some((tasks, mark)) => (tasks, mark.position, Some(mark)),
            None => (Tasks::new(count_live), 0, None),
        };
        let generation = part.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let old = {
            let mut next = part.feed.lock().await;
            let mut held = part.write();
            let old = std::mem::replace(&mut *held, tasks);
            *next = position;
            part.applied.send_replace(position);
            part.held.store(true, Ordering::Release);
            part.assigned.store(assigned, Ordering::Release);
            part.held_at_ms.store(held_at_ms, Ordering::Release);
            *Part::lock(&part.restored) = mark.as_ref().map(|m| m.position);
            *Part::lock(&part.ready_after) = None;
            *part.known() = KnownCheckpoints {
                previous: None,
                last: mark,
            };
            part.records_applied.store(0, Ordering::Relaxed);
            if position >= start_end {
                // Nothing to replay past the start (an empty partition, or a checkpoint at
                // its end): the list index of what was restored, built before anyone is told.
                held.index_ready();
                *Part::lock(&part.ready_after) = Some(began.elapsed());
                part.ready.send_replace(true);
            } else {
                part.ready.send_replace(false);
            }
            old
        };
        drop(old);
        let token = self.shutdown.child_token();
        *follower = Some(token.clone());
        drop(follower);
        if !part.is_ready() {
            tokio::spawn(follow::mark_ready(
                Arc::downgrade(self),
                partition,
                generation,
                start_end,
                began,
                token.clone(),
            ));
        }
        tokio::spawn(follow::follow(Arc::downgrade(self), partition, end, token));
        self.recompute_caught_up();
        Ok(())
    }

    async fn release(&self, partition: u32) -> Result<()> {
        self.release_if(partition, None).await.map(|_| ())
    }

    /// Release `partition`; with `retired`, only if that hold is still retiring and no
    /// request pins it. Whether it is done with (released, or nothing left to release):
    /// `false` when a pin holds it.
    async fn release_if(&self, partition: u32, retired: Option<u64>) -> Result<bool> {
        let part = self.part(partition)?;
        let mut follower = part.holding.lock().await;
        if !part.held() {
            return Ok(true);
        }
        if let Some(generation) = retired {
            if !part.retiring.load(Ordering::Acquire)
                || part.generation.load(Ordering::Acquire) != generation
            {
                return Ok(true);
            }
            // Under the count's lock, as a pin checks `held` (`pins.rs`).
            let mut unpinned = false;
            part.pins.send_if_modified(|pins| {
                unpinned = *pins == 0;
                if unpinned {
                    part.held.store(false, Ordering::Release);
                }
                false
            });
            if !unpinned {
                return Ok(false);
            }
        }
        if let Some(token) = follower.take() {
            token.cancel();
        }
        part.held.store(false, Ordering::Release);
        part.assigned.store(false, Ordering::Release);
        part.retiring.store(false, Ordering::Release);
        let count_live = self.options.compact.is_some();
        let old = {
            // An apply under way finishes first; none starts after (they check `held`).
            let _next = part.feed.lock().await;
            let old = std::mem::replace(&mut *part.write(), Tasks::new(count_live));
            part.ready.send_replace(false);
            old
        };
        *part.known() = KnownCheckpoints::default();
        *Part::lock(&part.restored) = None;
        *Part::lock(&part.ready_after) = None;
        drop(follower);
        self.recompute_caught_up();
        // Outside every lock: the partition's tasks go at once, whoever waits.
        drop(old);
        Ok(true)
    }

    /// Release partition `partition` if its hold number `generation` is still retiring and
    /// no request pins it; `false` when one does.
    async fn release_retired(&self, partition: u32, generation: u64) -> Result<bool> {
        self.release_if(partition, Some(generation)).await
    }

    /// Mark partition `partition`'s hold number `generation` ready (it applied up to where
    /// its log ended when the hold began, after `began`).
    pub(super) fn mark_ready(&self, partition: u32, generation: u64, began: Instant) {
        let Some(part) = self.parts.get(partition as usize) else {
            return;
        };
        {
            if part.generation.load(Ordering::Acquire) != generation || !part.held() {
                return;
            }
            // The list index of what the replay applied, built once, before anyone is told.
            part.write().index_ready();
            *Part::lock(&part.ready_after) = Some(began.elapsed());
            part.ready.send_replace(true);
        }
        self.recompute_caught_up();
    }

    /// The view is caught up when every partition it holds as assigned is ready.
    pub(super) fn recompute_caught_up(&self) {
        let now = self
            .parts
            .iter()
            .filter(|part| part.held() && part.assigned.load(Ordering::Acquire))
            .all(Part::is_ready);
        self.caught_up.send_if_modified(|was| {
            let changed = *was != now;
            *was = now;
            changed
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use crate::error::ErrorKind;
    use crate::{Bridge, BridgeConfig, Caller};

    const GRACE: Duration = Duration::from_millis(50);

    /// A bridge with one submitted task (no worker): the bridge and the task's id.
    async fn one_task() -> (Bridge, String) {
        let log = crate::log::open("memory://").await.unwrap();
        let bridge = Bridge::open(log, BridgeConfig::new("echo")).await.unwrap();
        let request = json!({
            "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"returnImmediately": true},
        });
        let answer = bridge
            .send_message(
                &Caller::anonymous(),
                serde_json::from_value(request).unwrap(),
            )
            .await
            .unwrap();
        let answer = serde_json::to_value(&answer).unwrap();
        let task = answer["task"]["id"].as_str().unwrap().to_owned();
        (bridge, task)
    }

    async fn until_released(view: &super::TaskView, partition: u32) {
        tokio::time::timeout(Duration::from_secs(5), async {
            while view.holds_data(partition) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("released");
    }

    #[tokio::test]
    async fn a_retired_partition_stays_for_a_request_pinning_it_however_long_it_stalls() {
        let (bridge, task) = one_task().await;
        let view = bridge.view().clone();
        let p = view.partition_of(&task);
        // A request found p held: pinned, then synced.
        let pin = view.pin(p).unwrap();
        assert_eq!(pin.partition(), p);
        view.sync(Some(p), GRACE).await.unwrap();
        view.retire(p, GRACE).await.unwrap();
        // New requests go elsewhere at once.
        assert!(!view.holds(p));
        // The request stalls far longer than the grace between its sync and its read: its
        // task is still there, followed.
        tokio::time::sleep(GRACE * 8).await;
        assert!(view.lookup_any(&task).is_some());
        view.sync(Some(p), GRACE).await.unwrap();
        // Done: the release follows, and nothing pins or syncs p here any more.
        drop(pin);
        until_released(&view, p).await;
        assert!(view.lookup_any(&task).is_none());
        assert!(view.pin(p).is_none());
        let refused = view.sync(Some(p), GRACE).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Unavailable);
    }

    #[tokio::test]
    async fn a_retired_partition_nobody_pins_goes_after_the_grace_unless_held_as_assigned_again() {
        let (bridge, task) = one_task().await;
        let view = bridge.view().clone();
        let p = view.partition_of(&task);
        let q = (p + 1) % view.partitions();
        view.retire(q, GRACE).await.unwrap();
        tokio::time::sleep(GRACE / 2).await;
        assert!(view.holds_data(q), "not before the grace");
        until_released(&view, q).await;
        // Pinned while retiring, then held as assigned again: kept once the pin goes.
        let pin = view.pin(p).unwrap();
        view.retire(p, GRACE).await.unwrap();
        tokio::time::sleep(GRACE * 2).await;
        view.hold(p).await.unwrap();
        drop(pin);
        tokio::time::sleep(GRACE * 4).await;
        assert!(view.holds(p));
        assert!(view.lookup_any(&task).is_some());
        // A pin and a release race: either the pin holds it, or it finds it gone.
        view.retire(p, Duration::ZERO).await.unwrap();
        let mut pins = 0;
        while let Some(pin) = view.pin(p) {
            pins += 1;
            drop(pin);
            tokio::task::yield_now().await;
        }
        until_released(&view, p).await;
        assert!(view.lookup_any(&task).is_none(), "after {pins} pins");
    }
}
