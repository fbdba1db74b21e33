//! Following the log: the background followers, the catch-up a request does itself, and the
//! bounded waits of `sync` and `sync_to`.
//!
//! Every wait here ends: within the caller's timeout it answers, or fails with a retryable
//! [`ErrorKind::Timeout`]. The end-offset probe that does not answer at once runs in a task of
//! its own, so that giving up on a slow one never cuts it in the middle (an Iggy connection
//! cut mid-call stays broken for seconds).

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use agentlog_wire::Record;
use agentlog_wire::fold::Parsed;
use tokio::sync::watch;
use tokio::time::Instant;

use tokio_util::sync::CancellationToken;

use super::part::Part;
use super::{Inner, TaskView};
use crate::error::{Error, ErrorKind, Result};
use crate::log::raw::Place;
use crate::log::{StoredRecord, TopicRef};

impl TaskView {
    /// Wait until the view has applied everything the log held when this call started, on one
    /// partition or on all it holds, for at most `timeout` in all (the end-offset probe
    /// included): then a retryable [`ErrorKind::Timeout`]. This is what gives read-your-writes
    /// across replicas: an acknowledged append by anyone is in the log's end offsets. A
    /// partition the view does not hold is a retryable [`ErrorKind::Unavailable`].
    pub async fn sync(&self, partition: Option<u32>, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        if let Some(partition) = partition {
            if !self.holds_data(partition) {
                return Err(self.inner.not_held(partition));
            }
            // One partition's end: the log is asked about that partition alone.
            let end = self
                .probe(deadline, timeout, move |inner| async move {
                    inner.log.end_offset(&inner.topic, partition).await
                })
                .await?;
            if self.applied(partition).is_some_and(|a| a >= end) {
                return Ok(());
            }
            return self
                .wait_applied_until(partition, end, deadline, timeout)
                .await;
        }
        self.sync_several(None, timeout).await
    }

    /// [`sync`](Self::sync) of the partitions `only` names (each one the view has the tasks
    /// of: a partition it does not is [`ErrorKind::Unavailable`]), or of every one it has,
    /// with one probe of the log's ends.
    pub(super) async fn sync_several(&self, only: Option<&[u32]>, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let ends = self
            .probe(deadline, timeout, |inner| async move {
                inner.log.end_offsets(&inner.topic).await
            })
            .await?;
        let is_behind = |p: u32, end: u64| self.applied(p).is_some_and(|a| a < end);
        // Usually the view is there already: no timer to arm then.
        let behind: Vec<(u32, u64)> = match only {
            None => (0u32..)
                .zip(ends)
                .filter(|(p, end)| self.holds_data(*p) && is_behind(*p, *end))
                .collect(),
            Some(only) => {
                if let Some(p) = only.iter().find(|p| !self.holds_data(**p)) {
                    return Err(self.inner.not_held(*p));
                }
                only.iter()
                    .filter_map(|p| Some((*p, *ends.get(*p as usize)?)))
                    .filter(|(p, end)| is_behind(*p, *end))
                    .collect()
            }
        };
        for (p, end) in behind {
            self.wait_applied_until(p, end, deadline, timeout).await?;
        }
        Ok(())
    }

    /// Wait until the view has applied partition `partition` up to (not including) `end`, for
    /// at most `timeout`: then a retryable [`ErrorKind::Timeout`].
    pub async fn sync_to(&self, partition: u32, end: u64, timeout: Duration) -> Result<()> {
        if !self.holds_data(partition) {
            return Err(self.inner.not_held(partition));
        }
        if self.applied(partition).is_some_and(|a| a >= end) {
            return Ok(());
        }
        self.wait_applied_until(partition, end, Instant::now() + timeout, timeout)
            .await
    }

    /// Wait (at most `timeout`) until the view shows `task_id`, as its follower applies what
    /// others append, without asking the log for its end: `false` if it does not by then, or
    /// if the view does not hold the task's partition. For a worker handed the copy of a
    /// command written elsewhere: a claim it makes on what the view shows loses by log order
    /// to one the view had not reached yet.
    pub async fn wait_shown(&self, task_id: &str, timeout: Duration) -> bool {
        let partition = self.partition_of(task_id);
        if !self.holds_data(partition) {
            return false;
        }
        let Ok(part) = self.inner.part(partition) else {
            return false;
        };
        let mut applied = part.applied.subscribe();
        let deadline = Instant::now() + timeout;
        loop {
            applied.borrow_and_update();
            if self.lookup_any(task_id).is_some() {
                return true;
            }
            match tokio::time::timeout_at(deadline, applied.changed()).await {
                Ok(Ok(())) => {}
                _ => return false,
            }
        }
    }

    /// The next offset to apply of `partition`, or `None` for a partition the topic lacks.
    fn applied(&self, partition: u32) -> Option<u64> {
        self.inner
            .parts
            .get(partition as usize)
            .map(super::part::Part::applied_next)
    }

    /// What `ask` answers about the log's ends, given up on at `deadline`. The probe runs in
    /// a task of its own when it does not answer at once, so that giving up never cuts a
    /// call to the log in the middle (an Iggy connection cut mid-call stays broken for
    /// seconds).
    async fn probe<T, F>(
        &self,
        deadline: Instant,
        timeout: Duration,
        ask: impl FnOnce(Arc<Inner>) -> F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let mut probe = Box::pin(ask(self.inner.clone()));
        if let std::task::Poll::Ready(ends) = futures::poll!(probe.as_mut()) {
            return ends;
        }
        let probe = tokio::spawn(probe);
        match tokio::time::timeout_at(deadline, probe).await {
            Ok(Ok(ends)) => ends,
            Ok(Err(join)) => Err(
                Error::new(ErrorKind::Internal, "the end-offset probe panicked").with_source(join),
            ),
            Err(_) => Err(behind(&self.inner.topic, timeout)),
        }
    }

    /// Catch `partition` up to `end` and wait for it until `deadline`. The catch-up runs here,
    /// not in a task of its own (a spawn per request would cost more than the common case's
    /// whole wait); it is cut only when the deadline passes, when the log has been failing
    /// for the whole timeout already.
    async fn wait_applied_until(
        &self,
        partition: u32,
        end: u64,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<()> {
        let part = self.inner.part(partition)?;
        let mut rx = part.applied.subscribe();
        if *rx.borrow_and_update() >= end {
            return Ok(());
        }
        let stopped = || Error::new(ErrorKind::Unavailable, "the task view stopped");
        let wait = async {
            let feed = &part.feed;
            // Whoever holds the feed is applying the records now: wait for what they publish
            // rather than queue for the lock (many requests after their own appends would
            // otherwise take it in turn); apply them ourselves when nobody is at it.
            while *rx.borrow_and_update() < end {
                match feed.try_lock() {
                    Ok(mut next) => {
                        self.inner
                            .catch_up_locked(partition, part, &mut next, end)
                            .await?;
                        break;
                    }
                    // A holder that stops without publishing (the log had nothing more to hand
                    // out yet) leaves the records to the background follower, which publishes
                    // them once they can be read.
                    Err(_) => rx.changed().await.map_err(|_| stopped())?,
                }
            }
            // Whatever the log could not hand out yet arrives through the follower.
            rx.wait_for(|applied| *applied >= end)
                .await
                .map(|_| ())
                .map_err(|_| stopped())
        };
        tokio::time::timeout_at(deadline, wait)
            .await
            .map_err(|_| behind(&self.inner.topic, timeout))?
    }
}

/// The error for a view that did not catch up in time: retryable.
fn behind(topic: &TopicRef, timeout: Duration) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!("the task view of {topic} did not catch up with the log within {timeout:?}"),
    )
}

/// Records applied under one hold of the view's write lock: what a reader waits for at most
/// while a follower catches up (a whole 1,024-record batch held it for 2 to 9 ms in the
/// growth bench).
const APPLY_SLICE: usize = 128;

/// The most records a catch-up asks the log for at once.
const READ_BATCH: usize = 1024;

impl Inner {
    /// Apply partition `partition`'s records before `end` that nobody has applied yet,
    /// reading them from the log. Returns early if the log has fewer records than `end`.
    async fn catch_up(&self, partition: u32, end: u64) -> Result<()> {
        let part = self.part(partition)?;
        let mut next = part.feed.lock().await;
        self.catch_up_locked(partition, part, &mut next, end).await
    }

    /// [`catch_up`](Self::catch_up) with the partition's feed held: `next` is its next offset.
    async fn catch_up_locked(
        &self,
        partition: u32,
        part: &Part,
        next: &mut u64,
        end: u64,
    ) -> Result<()> {
        // Released meanwhile: nothing to apply to.
        if !part.held() {
            return Ok(());
        }
        // Records this process wrote are applied as they are appended (`own.rs`), or kept
        // until the view reaches them: not read back, decoded and parsed a second time.
        *next = (*next).max(part.applied_next());
        loop {
            if self.apply_kept(part, next) > 0 {
                continue;
            }
            if *next >= end {
                break;
            }
            // Up to the first record kept here: what follows it is applied from memory.
            let max = part.first_kept(*next).map_or(READ_BATCH, |kept| {
                (kept - *next).min(READ_BATCH as u64) as usize
            });
            let batch = self.log.read(&self.topic, partition, *next, max).await?;
            let Some(last) = batch.last().map(|r| r.offset) else {
                break;
            };
            self.apply_batch(partition, part, &batch);
            *next = last + 1;
        }
        Ok(())
    }

    fn apply_batch(&self, partition: u32, part: &Part, batch: &[StoredRecord]) {
        // Decoding and JSON parsing need no state: done before the lock, so that requests
        // waiting for it wait only for the rules.
        // So is checking signatures (the costliest step per record).
        let verifier = self.options.verifier.as_ref();
        let decoded: Vec<(u64, Place, Record, Parsed)> = batch
            .iter()
            .filter_map(|stored| match Record::decode(&stored.payload) {
                Ok(record) => {
                    if let Some(verifier) = verifier
                        && !verifier.admit_encoded(
                            &stored.payload,
                            &record,
                            &self.topic,
                            partition,
                            stored.offset,
                        )
                    {
                        return None;
                    }
                    let parsed = Parsed::of(&record);
                    Some((stored.offset, stored.place, record, parsed))
                }
                Err(error) => {
                    self.undecodable.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        topic = %self.topic, partition, offset = stored.offset, %error,
                        "skipping a record that does not decode"
                    );
                    None
                }
            })
            .collect();
        self.records_seen
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        part.records_applied
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        let Some(last) = batch.last() else {
            return;
        };
        let sender = &part.applied;
        let handoff = &self.handoff;
        // A slice at a time under the lock, each published as applied: a reader of any
        // partition waits for one slice at most, not for the whole batch.
        let mut decoded = decoded.into_iter().peekable();
        loop {
            let mut tasks = part.write();
            for (offset, place, record, parsed) in decoded.by_ref().take(APPLY_SLICE) {
                let created = tasks.apply_created(offset, place, &record, parsed);
                // Kept before the slice is published: a worker woken by it finds it.
                if let Some(request) = created
                    && handoff.wants(&record)
                {
                    handoff.keep(offset, &record, *request);
                }
            }
            // Under the tasks lock: a checkpoint reads the positions with the tasks.
            match decoded.peek() {
                // Every record before the next one is in (those that did not decode too).
                Some((next, ..)) => {
                    sender.send_replace(*next);
                }
                None => {
                    sender.send_replace(last.offset + 1);
                    part.expire_locked(&mut tasks);
                    return;
                }
            }
        }
    }
}

/// A timer for a view's background chore: every `period`, the view if it still lives and
/// is not shut down.
pub(super) struct Chore {
    tick: tokio::time::Interval,
    inner: Weak<Inner>,
    shutdown: CancellationToken,
}

impl Chore {
    /// The first tick comes a `period` from now.
    pub(super) fn new(inner: Weak<Inner>, period: Duration, shutdown: CancellationToken) -> Self {
        let start = tokio::time::Instant::now() + period;
        let mut tick = tokio::time::interval_at(start, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Self {
            tick,
            inner,
            shutdown,
        }
    }

    /// Wait for the next tick; `None` once the view is gone or shut down.
    pub(super) async fn next(&mut self) -> Option<Arc<Inner>> {
        tokio::select! {
            () = self.shutdown.cancelled() => None,
            _ = self.tick.tick() => self.inner.upgrade(),
        }
    }
}

/// Drop expired tasks every second, so that an idle view frees them too.
pub(super) async fn expire_periodically(inner: Weak<Inner>, shutdown: CancellationToken) {
    let mut chore = Chore::new(inner, Duration::from_secs(1), shutdown);
    while let Some(inner) = chore.next().await {
        let now = crate::retention::now_ms();
        for part in inner.parts.iter() {
            if part.held() && part.read().maintenance_due(now) {
                part.expire_locked(&mut part.write());
            }
        }
    }
}

/// Mark hold number `generation` of `partition` ready once it has applied up to `end`, where
/// its log ended when the hold began (at `began`); nothing once `stop` (the hold's) is
/// cancelled.
pub(super) async fn mark_ready(
    inner: Weak<Inner>,
    partition: u32,
    generation: u64,
    end: u64,
    began: std::time::Instant,
    stop: CancellationToken,
) {
    let Some(mut applied) = inner.upgrade().and_then(|i| {
        i.parts
            .get(partition as usize)
            .map(|p| p.applied.subscribe())
    }) else {
        return;
    };
    tokio::select! {
        () = stop.cancelled() => return,
        reached = applied.wait_for(|a| *a >= end) => if reached.is_err() {
            return;
        },
    }
    if let Some(inner) = inner.upgrade() {
        inner.mark_ready(partition, generation, began);
    }
}

/// The background follower of one partition: whenever the log's end moves past what is
/// applied, catch up (unless a request already did). `end` is the view's own watch of the
/// log ([`Applier`](crate::log::Applier)): the records this process appends for the view do
/// not move it, since their appender applies them; those it keeps for later move the
/// partition's `kept_end` instead.
pub(super) async fn follow(
    inner: Weak<Inner>,
    partition: u32,
    mut end: watch::Receiver<u64>,
    shutdown: CancellationToken,
) {
    let Some(mut kept_end) = inner.upgrade().and_then(|i| {
        i.parts
            .get(partition as usize)
            .map(|p| p.kept_end.subscribe())
    }) else {
        return;
    };
    let mut backoff = Duration::from_millis(10);
    loop {
        let Some(applied) = inner
            .upgrade()
            .and_then(|i| i.parts.get(partition as usize).map(Part::applied_next))
        else {
            return;
        };
        let target = tokio::select! {
            () = shutdown.cancelled() => return,
            moved = end.wait_for(|end| *end > applied) => match moved {
                Ok(target) => *target,
                Err(_) => return, // the log is closed
            },
            kept = kept_end.wait_for(|kept| *kept > applied) => match kept {
                Ok(target) => *target,
                Err(_) => return, // the view is gone
            },
        };
        // Appenders of this process woken with this follower (a group commit acknowledges
        // them together) apply their own records as they made them: let them go first.
        tokio::task::yield_now().await;
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let progressed = |strong: &Inner| {
            strong
                .parts
                .get(partition as usize)
                .is_some_and(|p| p.applied_next() > applied)
        };
        match strong.catch_up(partition, target).await {
            Ok(()) if progressed(&strong) => backoff = Duration::from_millis(10),
            outcome => {
                // An error, or the log announced records it did not hand out yet: retry
                // after a pause rather than spin.
                if let Err(error) = outcome {
                    tracing::warn!(topic = %strong.topic, partition, error = %error.report(), "task view follower: retrying");
                }
                drop(strong);
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}
