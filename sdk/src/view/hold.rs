//! Holding and releasing partitions ([`TaskView::hold`], [`TaskView::release`]): a hold
//! restores the partition's newest usable checkpoint and catches it up in the background; a
//! release stops its follower and drops its tasks at once.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::part::{KnownCheckpoints, Part, PartitionStatus};
use super::tasks::Tasks;
use super::{Inner, TaskView, follow, persist};
use crate::error::{Error, ErrorKind, Result};

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

    /// Release `partition` once `grace` has passed: from now on it is held for no request
    /// that begins ([`holds`](Self::holds) is false: a request about it is forwarded), while
    /// the requests that began before, and found it held, finish on its tasks (it is still
    /// followed). Holding it as assigned meanwhile keeps it; holding it on demand serves that
    /// request and keeps the release. What a planned move's old holder does.
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
            if let Some(inner) = inner.upgrade()
                && let Err(error) = inner.release_retired(partition, generation).await
            {
                tracing::warn!(partition, error = %error.report(), "cannot release a retired partition");
            }
        });
        Ok(())
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
        let end = self.log.watch_end(&self.topic, partition).await?;
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
        self.release_if(partition, None).await
    }

    /// Release `partition`; with `retired`, only if that hold is still retiring.
    async fn release_if(&self, partition: u32, retired: Option<u64>) -> Result<()> {
        let part = self.part(partition)?;
        let mut follower = part.holding.lock().await;
        if !part.held() {
            return Ok(());
        }
        if let Some(generation) = retired
            && (!part.retiring.load(Ordering::Acquire)
                || part.generation.load(Ordering::Acquire) != generation)
        {
            return Ok(());
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
        Ok(())
    }

    /// Release partition `partition` if its hold number `generation` is still retiring.
    async fn release_retired(&self, partition: u32, generation: u64) -> Result<()> {
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
