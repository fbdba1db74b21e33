//! One wrapper for every layer that does the same thing around each call: an [`Interceptor`]
//! gets a [`Call`] (what is asked) and the future of the call on the layer below, and
//! [`Intercepted`] builds both for every method of [`LogBackend`] and of the
//! [`GroupConsumer`]s from `join_group`. The tracing, metrics and fault layers are
//! interceptors.
//!
//! [`LogBackend`]: crate::log::raw::LogBackend

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::watch;

use super::LogOp;
use crate::error::Result;
use crate::log::raw::{Layered, LogBackend, Place};
use crate::log::{
    AppendBatch, Appended, Applier, Delivery, GroupConsumer, SegmentInfo, StoredRecord, TopicRef,
};

/// What a layer does around every call: given what the call is and the call on the layer
/// below (not started yet), return the future the caller awaits. It may await the call
/// (once), or fail without it (the call is then dropped, never run).
pub(crate) trait Interceptor: Clone + Send + Sync + std::fmt::Debug + 'static {
    /// Run `next`, the call `call` describes, on the layer below.
    fn around<T, F>(&self, call: &Call<'_>, next: F) -> impl Future<Output = Result<T>> + Send
    where
        T: Outcome,
        F: Future<Output = Result<T>> + Send;
}

/// One call as an interceptor sees it, borrowed from the caller's arguments: the operation,
/// where it goes, and the few figures known before it runs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Call<'a> {
    EnsureTopic {
        topic: &'a TopicRef,
        partitions: u32,
    },
    Partitions {
        topic: &'a TopicRef,
    },
    /// `records` and payload `bytes`: what the append carries.
    Append {
        topic: &'a TopicRef,
        records: u64,
        bytes: u64,
    },
    /// `records` and payload `bytes`: what the append carries.
    AppendTo {
        topic: &'a TopicRef,
        partition: u32,
        records: u64,
        bytes: u64,
    },
    /// `records` and payload `bytes`: what the batches carry together.
    AppendAll {
        batches: usize,
        records: u64,
        bytes: u64,
    },
    Read {
        topic: &'a TopicRef,
        partition: u32,
        from: u64,
        max: usize,
    },
    /// `offsets`: how many were asked for.
    ReadAt {
        topic: &'a TopicRef,
        partition: u32,
        offsets: usize,
    },
    EndOffsets {
        topic: &'a TopicRef,
    },
    EndOffset {
        topic: &'a TopicRef,
        partition: u32,
    },
    WatchEnd {
        topic: &'a TopicRef,
        partition: u32,
    },
    Segments {
        topic: &'a TopicRef,
        partition: u32,
    },
    /// `bases`: how many segments were named.
    DeleteSegments {
        topic: &'a TopicRef,
        partition: u32,
        bases: usize,
    },
    JoinGroup {
        topic: &'a TopicRef,
        group: &'a str,
    },
    Poll {
        topic: &'a TopicRef,
        group: &'a str,
    },
    Commit {
        topic: &'a TopicRef,
        group: &'a str,
        partition: u32,
    },
    Leave {
        topic: &'a TopicRef,
        group: &'a str,
    },
    Ready,
    Close,
}

impl Call<'_> {
    /// The operation called.
    pub(crate) fn op(&self) -> LogOp {
        match self {
            Call::EnsureTopic { .. } => LogOp::EnsureTopic,
            Call::Partitions { .. } => LogOp::Partitions,
            Call::Append { .. } => LogOp::Append,
            Call::AppendAll { .. } => LogOp::AppendAll,
            Call::AppendTo { .. } => LogOp::AppendTo,
            Call::Read { .. } => LogOp::Read,
            Call::ReadAt { .. } => LogOp::ReadAt,
            Call::EndOffsets { .. } => LogOp::EndOffsets,
            Call::EndOffset { .. } => LogOp::EndOffset,
            Call::WatchEnd { .. } => LogOp::WatchEnd,
            Call::Segments { .. } => LogOp::Segments,
            Call::DeleteSegments { .. } => LogOp::DeleteSegments,
            Call::JoinGroup { .. } => LogOp::JoinGroup,
            Call::Poll { .. } => LogOp::Poll,
            Call::Commit { .. } => LogOp::Commit,
            Call::Leave { .. } => LogOp::Leave,
            Call::Ready => LogOp::Ready,
            Call::Close => LogOp::Close,
        }
    }

    /// The records and payload bytes an append carries (`None` for any other call).
    pub(crate) fn carries(&self) -> Option<(u64, u64)> {
        match *self {
            Call::Append { records, bytes, .. }
            | Call::AppendTo { records, bytes, .. }
            | Call::AppendAll { records, bytes, .. } => Some((records, bytes)),
            _ => None,
        }
    }
}

/// What a finished call reports to an interceptor, known only once it returned.
pub(crate) trait Outcome: Send {
    /// Records and payload bytes moved, for a call that moves records (an append's
    /// [`Appended`] knows no bytes: 0; [`Call::carries`] has them).
    fn moved(&self) -> Option<(u64, u64)> {
        None
    }

    /// The partition an append or a poll landed on.
    fn landed(&self) -> Option<u32> {
        None
    }

    /// How many segments a `delete_segments` deleted.
    fn deleted(&self) -> Option<usize> {
        None
    }
}

impl Outcome for () {}
impl Outcome for u32 {}
impl Outcome for u64 {}
impl Outcome for Vec<u64> {}
impl Outcome for watch::Receiver<u64> {}
impl Outcome for Box<dyn GroupConsumer> {}
impl Outcome for Vec<SegmentInfo> {}

impl Outcome for usize {
    fn deleted(&self) -> Option<usize> {
        Some(*self)
    }
}

impl Outcome for Appended {
    fn moved(&self) -> Option<(u64, u64)> {
        Some((u64::from(self.count), 0))
    }

    fn landed(&self) -> Option<u32> {
        Some(self.partition)
    }
}

impl Outcome for Vec<Appended> {
    fn moved(&self) -> Option<(u64, u64)> {
        Some((self.iter().map(|a| u64::from(a.count)).sum(), 0))
    }
}

impl Outcome for Vec<StoredRecord> {
    fn moved(&self) -> Option<(u64, u64)> {
        Some(records_and_bytes(self))
    }
}

impl Outcome for Option<Delivery> {
    fn moved(&self) -> Option<(u64, u64)> {
        Some(
            self.as_ref()
                .map_or((0, 0), |d| records_and_bytes(&d.records)),
        )
    }

    fn landed(&self) -> Option<u32> {
        self.as_ref().map(|d| d.partition)
    }
}

/// How many records and payload bytes a list of records holds (what a read returned).
fn records_and_bytes(records: &[StoredRecord]) -> (u64, u64) {
    let bytes = records.iter().map(|r| r.payload.len() as u64).sum();
    (records.len() as u64, bytes)
}

/// How many records and payload bytes a list of payloads holds (what an append carries).
fn payloads_and_bytes(payloads: &[Bytes]) -> (u64, u64) {
    let bytes = payloads.iter().map(|p| p.len() as u64).sum();
    (payloads.len() as u64, bytes)
}

/// The layer below with `hook` around each of its calls (and its group members' calls).
#[derive(Debug)]
pub(crate) struct Intercepted<I> {
    hook: I,
    inner: Arc<dyn LogBackend>,
}

impl<I: Interceptor> Intercepted<I> {
    /// `inner` with `hook` around its calls.
    pub(crate) fn new(inner: Arc<dyn LogBackend>, hook: I) -> Self {
        Self { hook, inner }
    }
}

#[async_trait]
impl<I: Interceptor> Layered for Intercepted<I> {
    fn inner(&self) -> &Arc<dyn LogBackend> {
        &self.inner
    }

    async fn ensure_topic(&self, topic: &TopicRef, partitions: u32) -> Result<()> {
        let call = Call::EnsureTopic { topic, partitions };
        let next = self.inner.ensure_topic(topic, partitions);
        self.hook.around(&call, next).await
    }

    async fn partitions(&self, topic: &TopicRef) -> Result<u32> {
        let next = self.inner.partitions(topic);
        self.hook.around(&Call::Partitions { topic }, next).await
    }

    async fn append(&self, topic: &TopicRef, key: &[u8], payloads: Vec<Bytes>) -> Result<Appended> {
        let (records, bytes) = payloads_and_bytes(&payloads);
        let call = Call::Append {
            topic,
            records,
            bytes,
        };
        let next = self.inner.append(topic, key, payloads);
        self.hook.around(&call, next).await
    }

    async fn append_for(
        &self,
        topic: &TopicRef,
        key: &[u8],
        payloads: Vec<Bytes>,
        applier: Applier,
    ) -> Result<Appended> {
        let (records, bytes) = payloads_and_bytes(&payloads);
        let call = Call::Append {
            topic,
            records,
            bytes,
        };
        let next = self.inner.append_for(topic, key, payloads, applier);
        self.hook.around(&call, next).await
    }

    async fn append_to(
        &self,
        topic: &TopicRef,
        partition: u32,
        payloads: Vec<Bytes>,
    ) -> Result<Appended> {
        let (records, bytes) = payloads_and_bytes(&payloads);
        let call = Call::AppendTo {
            topic,
            partition,
            records,
            bytes,
        };
        let next = self.inner.append_to(topic, partition, payloads);
        self.hook.around(&call, next).await
    }

    async fn append_all(&self, batches: Vec<AppendBatch<'_>>) -> Result<Vec<Appended>> {
        let (records, bytes) = batches
            .iter()
            .map(|b| payloads_and_bytes(&b.payloads))
            .fold((0, 0), |(r, b), (r2, b2)| (r + r2, b + b2));
        let call = Call::AppendAll {
            batches: batches.len(),
            records,
            bytes,
        };
        let next = self.inner.append_all(batches);
        self.hook.around(&call, next).await
    }

    async fn read(
        &self,
        topic: &TopicRef,
        partition: u32,
        from: u64,
        max: usize,
    ) -> Result<Vec<StoredRecord>> {
        let call = Call::Read {
            topic,
            partition,
            from,
            max,
        };
        let next = self.inner.read(topic, partition, from, max);
        self.hook.around(&call, next).await
    }

    async fn read_at(
        &self,
        topic: &TopicRef,
        partition: u32,
        offsets: &[u64],
        places: &[Place],
    ) -> Result<Vec<StoredRecord>> {
        let call = Call::ReadAt {
            topic,
            partition,
            offsets: offsets.len(),
        };
        let next = self.inner.read_at(topic, partition, offsets, places);
        self.hook.around(&call, next).await
    }

    async fn end_offsets(&self, topic: &TopicRef) -> Result<Vec<u64>> {
        let next = self.inner.end_offsets(topic);
        self.hook.around(&Call::EndOffsets { topic }, next).await
    }

    async fn end_offset(&self, topic: &TopicRef, partition: u32) -> Result<u64> {
        let call = Call::EndOffset { topic, partition };
        let next = self.inner.end_offset(topic, partition);
        self.hook.around(&call, next).await
    }

    async fn watch_end(&self, topic: &TopicRef, partition: u32) -> Result<watch::Receiver<u64>> {
        let call = Call::WatchEnd { topic, partition };
        let next = self.inner.watch_end(topic, partition);
        self.hook.around(&call, next).await
    }

    async fn watch_end_for(
        &self,
        topic: &TopicRef,
        partition: u32,
        applier: Applier,
    ) -> Result<watch::Receiver<u64>> {
        let call = Call::WatchEnd { topic, partition };
        let next = self.inner.watch_end_for(topic, partition, applier);
        self.hook.around(&call, next).await
    }

    async fn segments(&self, topic: &TopicRef, partition: u32) -> Result<Vec<SegmentInfo>> {
        let call = Call::Segments { topic, partition };
        let next = self.inner.segments(topic, partition);
        self.hook.around(&call, next).await
    }

    async fn delete_segments(
        &self,
        topic: &TopicRef,
        partition: u32,
        bases: &[u64],
    ) -> Result<usize> {
        let call = Call::DeleteSegments {
            topic,
            partition,
            bases: bases.len(),
        };
        let next = self.inner.delete_segments(topic, partition, bases);
        self.hook.around(&call, next).await
    }

    async fn join_group(&self, topic: &TopicRef, group: &str) -> Result<Box<dyn GroupConsumer>> {
        let next = self.inner.join_group(topic, group);
        let inner = self
            .hook
            .around(&Call::JoinGroup { topic, group }, next)
            .await?;
        Ok(Box::new(Member {
            hook: self.hook.clone(),
            inner,
            topic: topic.clone(),
            group: group.to_owned(),
        }))
    }

    async fn ready(&self) -> Result<()> {
        self.hook.around(&Call::Ready, self.inner.ready()).await
    }

    async fn close(&self) -> Result<()> {
        self.hook.around(&Call::Close, self.inner.close()).await
    }
}

/// A group member of the layer below with the hook around its `poll`, `commit` and `leave`.
#[derive(Debug)]
struct Member<I> {
    hook: I,
    inner: Box<dyn GroupConsumer>,
    topic: TopicRef,
    group: String,
}

#[async_trait]
impl<I: Interceptor> GroupConsumer for Member<I> {
    fn owned_partitions(&self) -> Vec<u32> {
        self.inner.owned_partitions()
    }

    async fn poll(&mut self, max: usize, timeout: Duration) -> Result<Option<Delivery>> {
        let call = Call::Poll {
            topic: &self.topic,
            group: &self.group,
        };
        self.hook.around(&call, self.inner.poll(max, timeout)).await
    }

    async fn commit(&mut self, partition: u32, next_offset: u64) -> Result<()> {
        let call = Call::Commit {
            topic: &self.topic,
            group: &self.group,
            partition,
        };
        let next = self.inner.commit(partition, next_offset);
        self.hook.around(&call, next).await
    }

    async fn leave(self: Box<Self>) -> Result<()> {
        let Member {
            hook,
            inner,
            topic,
            group,
        } = *self;
        let call = Call::Leave {
            topic: &topic,
            group: &group,
        };
        hook.around(&call, inner.leave()).await
    }
}
