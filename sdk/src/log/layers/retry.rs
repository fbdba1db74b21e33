//! [`RetryLayer`]: calls that fail with a retryable error are tried again, with backoff.

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::watch;
use tokio::time::Instant;

use super::LogOp;
use crate::error::Result;
use crate::log::raw::{Layer, Layered, LogBackend, Place};
use crate::log::{
    AppendBatch, Appended, Applier, Delivery, GroupConsumer, SegmentInfo, StoredRecord, TopicRef,
};

/// Retries a call that fails with a retryable error ([`Error::is_retryable`]: `Timeout` or
/// `Unavailable`), sleeping an exponentially growing, jittered delay between attempts.
///
/// Defaults: 4 attempts in all, the first delay 10 ms, doubling up to 200 ms, each delay
/// drawn between half and all of its nominal value (so retries of many callers spread out).
/// Any other error, and the last attempt's error, is returned as it is. A closed log fails
/// with a non-retryable error, so it is never retried.
///
/// Every operation is retried except `close` (a retried close would report success for a
/// close that failed) and [`GroupConsumer::leave`] (it consumes the member). A retried
/// [`poll`](GroupConsumer::poll) keeps the caller's deadline: each attempt waits only for
/// what is left of the timeout.
///
/// # Retried appends may store a record twice
///
/// An append that failed with `Timeout` or `Unavailable` may still have landed (the server
/// stored it, the acknowledgement was lost), and a failed `append_all` may have appended the
/// batches before the failing one; the retry appends them again. For agentlog's own records
/// that is safe: the fold drops a record whose message id it already applied to the task, a
/// second copy of a command is ignored, and workers skip a command whose task the events
/// topic already shows handled, so a duplicate changes nothing anyone sees. A user appending
/// their own payloads through this layer needs readers that deduplicate the same way (give
/// each record an id); where a duplicate would matter, do not retry appends.
///
/// [`Error::is_retryable`]: crate::error::Error::is_retryable
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryLayer {
    attempts: u32,
    initial_delay: Duration,
    max_delay: Duration,
    jitter: bool,
}

impl Default for RetryLayer {
    fn default() -> Self {
        Self {
            attempts: 4,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(200),
            jitter: true,
        }
    }
}

impl RetryLayer {
    /// The default policy: 4 attempts, 10 ms doubling to 200 ms, with jitter.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many times a call is tried in all, the first included (default 4; 1 turns
    /// retrying off; 0 counts as 1).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// The delay before the first retry (default 10 ms); each later one doubles it.
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// The longest delay between two attempts (default 200 ms).
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Whether each delay is drawn at random between half and all of its nominal value
    /// (default `true`). Without jitter, callers that failed together retry together.
    pub fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// The delays between attempts of one call, in order.
    fn backoff(&self) -> Backoff {
        Backoff {
            policy: *self,
            retries_left: self.attempts.saturating_sub(1),
            next: self.initial_delay.min(self.max_delay),
        }
    }

    /// Run `call` until it succeeds, fails for good, or the attempts are used up.
    async fn run<T, F, Fut>(&self, op: LogOp, mut call: F) -> Result<T>
    where
        F: FnMut() -> Fut + Send,
        Fut: Future<Output = Result<T>> + Send,
        T: Send,
    {
        let mut backoff = self.backoff();
        loop {
            match call().await {
                Err(error) if error.is_retryable() => match backoff.next() {
                    Some(delay) => {
                        tracing::debug!(op = op.as_str(), kind = %error.kind(), error = %error.report(), ?delay, "log: retrying");
                        tokio::time::sleep(delay).await;
                    }
                    None => return Err(error),
                },
                result => return result,
            }
        }
    }
}

impl Layer for RetryLayer {
    fn layer(&self, inner: Arc<dyn LogBackend>) -> Arc<dyn LogBackend> {
        Arc::new(RetryLog {
            inner,
            policy: *self,
        })
    }
}

/// The delays of one call's retries: `initial_delay`, doubling, capped at `max_delay`,
/// each jittered down to at most half.
#[derive(Debug)]
struct Backoff {
    policy: RetryLayer,
    retries_left: u32,
    next: Duration,
}

impl Iterator for Backoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.retries_left = self.retries_left.checked_sub(1)?;
        let nominal = self.next;
        self.next = (nominal * 2).min(self.policy.max_delay);
        if !self.policy.jitter {
            return Some(nominal);
        }
        let half = nominal / 2;
        let spread = (nominal - half).as_nanos() as u64;
        Some(half + Duration::from_nanos(random_below(spread + 1)))
    }
}

/// A random number in `0..bound` (`0` for a bound of 0), good enough to spread retries.
fn random_below(bound: u64) -> u64 {
    if bound == 0 {
        return 0;
    }
    // Each `RandomState` is seeded afresh, so hashing nothing gives a new number per call
    // without a dependency on a random-number crate.
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        % bound
}

/// The backend under a [`RetryLayer`]. `ready` and `close` are left to the forwarding
/// defaults: a probe asks about now (retrying would hide what it is asked), and a retried
/// close could report success for a close that failed.
#[derive(Debug)]
struct RetryLog {
    inner: Arc<dyn LogBackend>,
    policy: RetryLayer,
}

#[async_trait]
impl Layered for RetryLog {
    fn inner(&self) -> &Arc<dyn LogBackend> {
        &self.inner
    }

    async fn ensure_topic(&self, topic: &TopicRef, partitions: u32) -> Result<()> {
        self.policy
            .run(LogOp::EnsureTopic, || {
                self.inner.ensure_topic(topic, partitions)
            })
            .await
    }

    async fn partitions(&self, topic: &TopicRef) -> Result<u32> {
        self.policy
            .run(LogOp::Partitions, || self.inner.partitions(topic))
            .await
    }

    async fn append(&self, topic: &TopicRef, key: &[u8], payloads: Vec<Bytes>) -> Result<Appended> {
        // Each attempt takes its own copy of the list (the payloads' bytes are shared).
        self.policy
            .run(LogOp::Append, || {
                self.inner.append(topic, key, payloads.clone())
            })
            .await
    }

    async fn append_for(
        &self,
        topic: &TopicRef,
        key: &[u8],
        payloads: Vec<Bytes>,
        applier: Applier,
    ) -> Result<Appended> {
        self.policy
            .run(LogOp::Append, || {
                self.inner.append_for(topic, key, payloads.clone(), applier)
            })
            .await
    }

    async fn append_to(
        &self,
        topic: &TopicRef,
        partition: u32,
        payloads: Vec<Bytes>,
    ) -> Result<Appended> {
        self.policy
            .run(LogOp::AppendTo, || {
                self.inner.append_to(topic, partition, payloads.clone())
            })
            .await
    }

    async fn append_all(&self, batches: Vec<AppendBatch<'_>>) -> Result<Vec<Appended>> {
        self.policy
            .run(LogOp::AppendAll, || self.inner.append_all(batches.clone()))
            .await
    }

    async fn read(
        &self,
        topic: &TopicRef,
        partition: u32,
        from: u64,
        max: usize,
    ) -> Result<Vec<StoredRecord>> {
        self.policy
            .run(LogOp::Read, || self.inner.read(topic, partition, from, max))
            .await
    }

    async fn read_at(
        &self,
        topic: &TopicRef,
        partition: u32,
        offsets: &[u64],
        places: &[Place],
    ) -> Result<Vec<StoredRecord>> {
        self.policy
            .run(LogOp::ReadAt, || {
                self.inner.read_at(topic, partition, offsets, places)
            })
            .await
    }

    async fn end_offsets(&self, topic: &TopicRef) -> Result<Vec<u64>> {
        self.policy
            .run(LogOp::EndOffsets, || self.inner.end_offsets(topic))
            .await
    }

    async fn end_offset(&self, topic: &TopicRef, partition: u32) -> Result<u64> {
        self.policy
            .run(LogOp::EndOffset, || self.inner.end_offset(topic, partition))
            .await
    }

    async fn watch_end(&self, topic: &TopicRef, partition: u32) -> Result<watch::Receiver<u64>> {
        self.policy
            .run(LogOp::WatchEnd, || self.inner.watch_end(topic, partition))
            .await
    }

    async fn watch_end_for(
        &self,
        topic: &TopicRef,
        partition: u32,
        applier: Applier,
    ) -> Result<watch::Receiver<u64>> {
        self.policy
            .run(LogOp::WatchEnd, || {
                self.inner.watch_end_for(topic, partition, applier)
            })
            .await
    }

    async fn segments(&self, topic: &TopicRef, partition: u32) -> Result<Vec<SegmentInfo>> {
        self.policy
            .run(LogOp::Segments, || self.inner.segments(topic, partition))
            .await
    }

    async fn delete_segments(
        &self,
        topic: &TopicRef,
        partition: u32,
        bases: &[u64],
    ) -> Result<usize> {
        // Safe to repeat: a segment deleted by a failed attempt is no longer sealed, so the
        // retry ignores its base (the count then leaves it out).
        self.policy
            .run(LogOp::DeleteSegments, || {
                self.inner.delete_segments(topic, partition, bases)
            })
            .await
    }

    async fn join_group(&self, topic: &TopicRef, group: &str) -> Result<Box<dyn GroupConsumer>> {
        let inner = self
            .policy
            .run(LogOp::JoinGroup, || self.inner.join_group(topic, group))
            .await?;
        Ok(Box::new(RetryConsumer {
            inner,
            policy: self.policy,
        }))
    }
}

/// A group member under a [`RetryLayer`].
#[derive(Debug)]
struct RetryConsumer {
    inner: Box<dyn GroupConsumer>,
    policy: RetryLayer,
}

#[async_trait]
impl GroupConsumer for RetryConsumer {
    fn owned_partitions(&self) -> Vec<u32> {
        self.inner.owned_partitions()
    }

    async fn poll(&mut self, max: usize, timeout: Duration) -> Result<Option<Delivery>> {
        let deadline = Instant::now() + timeout;
        let mut backoff = self.policy.backoff();
        let mut wait = timeout;
        loop {
            // Written out rather than through `run`: each attempt borrows the member mutably.
            let error = match self.inner.poll(max, wait).await {
                Err(error) if error.is_retryable() => error,
                result => return result,
            };
            let Some(delay) = backoff.next() else {
                return Err(error);
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left <= delay {
                // No time left to try again within the caller's deadline.
                return Err(error);
            }
            tracing::debug!(op = "poll", kind = %error.kind(), error = %error.report(), ?delay, "log: retrying");
            tokio::time::sleep(delay).await;
            wait = left - delay;
        }
    }

    async fn commit(&mut self, partition: u32, next_offset: u64) -> Result<()> {
        let mut backoff = self.policy.backoff();
        loop {
            // Commits are monotonic, so one that landed before its error is harmless to repeat.
            let error = match self.inner.commit(partition, next_offset).await {
                Err(error) if error.is_retryable() => error,
                result => return result,
            };
            let Some(delay) = backoff.next() else {
                return Err(error);
            };
            tracing::debug!(op = "commit", kind = %error.kind(), error = %error.report(), ?delay, "log: retrying");
            tokio::time::sleep(delay).await;
        }
    }

    async fn leave(self: Box<Self>) -> Result<()> {
        self.inner.leave().await
    }
}

#[cfg(test)]
mod tests;
