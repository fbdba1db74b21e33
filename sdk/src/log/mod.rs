//! The log layer: what the bridge and the workers need from a broker, behind one interface.
//!
//! Two backends implement [`LogBackend`]:
//! - [`embedded`]: in-process, durable in a directory (`file:///path`) or purely in memory
//!   (`memory://`). The default: nothing else to install.
//! - [`iggy`]: Apache Iggy through the official `iggy` crate (`iggy://user:pass@host:port`).
//!
//! [`open`] picks one from a URL. Records are opaque byte payloads here; the bridge puts
//! encoded `agentlog_wire::Record`s in them, so headers travel inside the payload and look the
//! same on every backend (and are covered by signatures).
//!
//! Offsets are per partition, start at 0 and grow by one per record. An "end offset" is the
//! offset the next record appended to that partition will get (so an empty partition has end 0).
//!
//! # Layers
//!
//! A [`Log`] is a handle over a backend with [`Layer`]s stacked on it:
//! `log::open(url).await?.layer(a).layer(b)`. What is the same for every backend lives in a
//! layer, written once ([`layers`]): retries ([`layers::RetryLayer`]), tracing
//! ([`layers::TracingLayer`]), metrics ([`layers::MetricsLayer`], read through
//! [`layers::LogMetrics`]) and, for tests, injected faults ([`layers::FaultLayer`], armed
//! through [`layers::Faults`]). [`open`] stacks none.
//!
//! # Deleting segments
//!
//! A backend that keeps its records in segments (the embedded log's files) lists its sealed
//! ones ([`LogBackend::segments`]) and deletes whole segments when asked
//! ([`LogBackend::delete_segments`]): the task view decides which ones no retained task needs
//! (the log never decodes a record). Afterwards a partition may have holes: a `read` from a
//! deleted offset returns the records from the next offset that exists, `read_at` leaves
//! deleted offsets out, and end offsets do not move. Iggy expires segments itself (the
//! topic's message expiry, see [`iggy`]), and `memory://` keeps everything; both list no
//! segments.
//!
//! # Closing
//!
//! After [`LogBackend::close`], every call (and every call of a group member of the log)
//! fails with [`ErrorKind::Internal`] "the log was closed", on every backend: not
//! `Unavailable`, because a closed handle never comes back, so no retry may wait for it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::watch;

use crate::error::{Error, ErrorKind, Result};
use raw::{Layer, LogBackend, Place, Prefetcher};

mod applier;
pub mod embedded;
mod follower;
#[cfg(feature = "iggy")]
pub mod iggy;
pub mod layers;
mod partitioner;
mod place;
pub mod raw;
mod tls;
mod url;

pub use applier::Applier;
pub use follower::Follower;
pub use partitioner::partition_for_key;
pub(crate) use place::MappedSegments;
pub use tls::IggyTls;
pub use url::{FileOptions, IGGY_PASSWORD_ENV, LogSpec, LogUrl, MAX_PARTITIONS, open, redacted};

/// A topic inside a stream. Streams and topics are created on demand by [`LogBackend::ensure_topic`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicRef {
    /// The stream (namespace) holding the topic.
    pub stream: String,
    /// The topic's name inside its stream.
    pub topic: String,
}

impl TopicRef {
    /// A topic reference from its stream and topic names.
    pub fn new(stream: impl Into<String>, topic: impl Into<String>) -> Self {
        Self {
            stream: stream.into(),
            topic: topic.into(),
        }
    }
}

impl fmt::Display for TopicRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.stream, self.topic)
    }
}

/// A record as stored: where it is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord {
    /// The partition holding the record.
    pub partition: u32,
    /// Its offset inside the partition.
    pub offset: u64,
    /// The bytes that were appended.
    pub payload: Bytes,
    /// Where the backend keeps it: given back to [`LogBackend::read_at`], it spares a lookup.
    pub place: Place,
}

/// Where an appended batch landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The partition chosen by the key.
    pub partition: u32,
    /// The offset of the batch's first record; the rest follow contiguously.
    pub first_offset: u64,
    /// How many records were appended.
    pub count: u32,
    /// Where the backend keeps them (one place for the batch; see [`Place`]).
    pub place: Place,
}

/// One batch of [`LogBackend::append_all`]: `payloads` go, in order, to the partition of
/// `topic` that `key` chooses.
#[derive(Debug, Clone)]
pub struct AppendBatch<'a> {
    /// The topic appended to.
    pub topic: &'a TopicRef,
    /// The partitioning key ([`partition_for_key`]).
    pub key: &'a [u8],
    /// The records.
    pub payloads: Vec<Bytes>,
    /// The reader that applies these records itself, if one does: its watch of the partition
    /// is not woken for them ([`Applier`]). `None` for every other append.
    pub applied_by: Option<Applier>,
}

/// Records handed to one consumer-group member by [`GroupConsumer::poll`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The partition the records come from (owned by this member while it holds the batch).
    pub partition: u32,
    /// The records, in offset order.
    pub records: Vec<StoredRecord>,
}

/// A sealed segment of a partition (never the one being appended to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Offset of its first record.
    pub base: u64,
    /// One past its last record's offset.
    pub end: u64,
    /// Bytes it takes on disk.
    pub bytes: u64,
    /// When its last record was written, Unix milliseconds (the embedded log: the file's
    /// modification time).
    pub last_write_ms: u64,
}

/// The error every call on a closed log (or a consumer of one) gets, on every backend.
///
/// It is [`ErrorKind::Internal`], not `Unavailable`: a closed handle never opens again, so
/// the same call retried cannot succeed, and a retry loop (the [`layers::RetryLayer`], a
/// worker's) must give up at once instead of waiting for it.
pub(crate) fn closed_error() -> Error {
    Error::new(ErrorKind::Internal, "the log was closed")
}

/// One member of a consumer group.
#[async_trait]
pub trait GroupConsumer: Send + fmt::Debug {
    /// Wait until records are available on a partition this member owns and return up to
    /// `max` of them, or `None` if `timeout` passes first. Without a commit, the next poll
    /// continues after what was returned; only a new member (after a restart or a rebalance)
    /// goes back to the committed offset.
    async fn poll(&mut self, max: usize, timeout: std::time::Duration) -> Result<Option<Delivery>>;

    /// Record that every record of `partition` before `next_offset` is done.
    async fn commit(&mut self, partition: u32, next_offset: u64) -> Result<()>;

    /// The partitions this member owned at its last poll, ascending (the group may have moved
    /// some since): what a worker's sweeper looks after.
    fn owned_partitions(&self) -> Vec<u32>;

    /// Leave the group, handing this member's partitions to the others.
    async fn leave(self: Box<Self>) -> Result<()>;
}

/// A handle to a log: one backend under the layers stacked on it, cheap to clone, with every
/// operation a user of the log calls (each documented at [`LogBackend`]'s method of its name).
///
/// Cross-cutting concerns (retries, tracing, metrics, fault injection) are [`Layer`]s, each
/// written once for every backend, as opendal's layers are: `Log::new(backend).layer(a).layer(b)`
/// puts `b` outermost.
///
/// The handle also carries the log's [`retention`](Self::retention) (`retention=` in its URL):
/// what the bridges over it give the tasks they create unless told otherwise. It is a setting
/// of the handle, not of the backend: the log itself never decodes records, so it cannot
/// expire tasks.
#[derive(Clone)]
pub struct Log {
    backend: Arc<dyn LogBackend>,
    retention: Option<Duration>,
    partition_count: Option<u32>,
}

impl Log {
    /// A handle to `backend`, with no layers and no retention.
    pub fn new(backend: impl LogBackend) -> Self {
        Self::from_arc(Arc::new(backend))
    }

    /// A handle to an already shared backend (or stack of layers), with no retention.
    pub fn from_arc(backend: Arc<dyn LogBackend>) -> Self {
        Self {
            backend,
            retention: None,
            partition_count: None,
        }
    }

    /// This log with `layer` wrapped around it (outermost); the retention and the partition
    /// count are kept.
    pub fn layer(self, layer: impl Layer) -> Self {
        Self {
            backend: layer.layer(self.backend),
            ..self
        }
    }

    /// This handle with a retention (`Duration::ZERO`: keep finished tasks forever), as
    /// `retention=` in the URL sets it.
    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention = Some(retention);
        self
    }

    /// How long finished tasks created through this log are kept: `retention=` of its URL,
    /// or [`with_retention`](Self::with_retention); `None` when neither said (the bridge then
    /// uses [`DEFAULT_RETENTION`](crate::retention::DEFAULT_RETENTION)).
    pub fn retention(&self) -> Option<Duration> {
        self.retention
    }

    /// This handle with a partition count, as `partitions=` in the URL sets it.
    pub fn with_partition_count(mut self, partitions: u32) -> Self {
        self.partition_count = Some(partitions);
        self
    }

    /// How many partitions an agent's keyed topics opened through this handle have:
    /// `partitions=` of its URL, or [`with_partition_count`](Self::with_partition_count).
    /// [`AgentTopics::ensure`](crate::AgentTopics::ensure) creates them with it and refuses
    /// existing ones with another count; `None` when neither said (then a new topic gets
    /// [`DEFAULT_PARTITIONS`](crate::agent::DEFAULT_PARTITIONS) and an existing one keeps its
    /// own).
    pub fn partition_count(&self) -> Option<u32> {
        self.partition_count
    }

    /// The stack under this handle, for a layer or a wrapper that needs it shared.
    pub fn as_arc(&self) -> &Arc<dyn LogBackend> {
        &self.backend
    }

    /// Create the topic with `partitions` partitions unless it exists ([`LogBackend::ensure_topic`]).
    pub async fn ensure_topic(&self, topic: &TopicRef, partitions: u32) -> Result<()> {
        self.backend.ensure_topic(topic, partitions).await
    }

    /// How many partitions `topic` has ([`LogBackend::partitions`]).
    pub async fn partitions(&self, topic: &TopicRef) -> Result<u32> {
        self.backend.partitions(topic).await
    }

    /// Append `payloads`, in order, to the partition `key` chooses ([`LogBackend::append`]).
    pub async fn append(
        &self,
        topic: &TopicRef,
        key: &[u8],
        payloads: Vec<Bytes>,
    ) -> Result<Appended> {
        self.backend.append(topic, key, payloads).await
    }

    /// Append `payloads`, in order, to partition `partition` ([`LogBackend::append_to`]).
    pub async fn append_to(
        &self,
        topic: &TopicRef,
        partition: u32,
        payloads: Vec<Bytes>,
    ) -> Result<Appended> {
        self.backend.append_to(topic, partition, payloads).await
    }

    /// Append `payloads` made for `applier`, which applies them itself
    /// ([`LogBackend::append_for`]).
    pub async fn append_for(
        &self,
        topic: &TopicRef,
        key: &[u8],
        payloads: Vec<Bytes>,
        applier: Applier,
    ) -> Result<Appended> {
        self.backend.append_for(topic, key, payloads, applier).await
    }

    /// Append several batches at once ([`LogBackend::append_all`]).
    pub async fn append_all(&self, batches: Vec<AppendBatch<'_>>) -> Result<Vec<Appended>> {
        self.backend.append_all(batches).await
    }

    /// Up to `max` records of `partition` from `from` on ([`LogBackend::read`]).
    pub async fn read(
        &self,
        topic: &TopicRef,
        partition: u32,
        from: u64,
        max: usize,
    ) -> Result<Vec<StoredRecord>> {
        self.backend.read(topic, partition, from, max).await
    }

    /// The records at `offsets` (ascending) of `partition`; an offset past the end or
    /// deleted is left out ([`LogBackend::read_at`]).
    pub async fn read_at(
        &self,
        topic: &TopicRef,
        partition: u32,
        offsets: &[u64],
    ) -> Result<Vec<StoredRecord>> {
        self.backend.read_at(topic, partition, offsets, &[]).await
    }

    /// [`read_at`](Self::read_at) with where the backend said the records are.
    pub(crate) async fn read_at_places(
        &self,
        topic: &TopicRef,
        partition: u32,
        offsets: &[u64],
        places: &[Place],
    ) -> Result<Vec<StoredRecord>> {
        self.backend
            .read_at(topic, partition, offsets, places)
            .await
    }

    /// What warms the records of `topic` ahead of a read at their places, if the backend can.
    pub(crate) fn prefetcher(&self, topic: &TopicRef) -> Option<Prefetcher> {
        self.backend.prefetcher(topic)
    }

    /// The end offset of every partition ([`LogBackend::end_offsets`]).
    pub async fn end_offsets(&self, topic: &TopicRef) -> Result<Vec<u64>> {
        self.backend.end_offsets(topic).await
    }

    /// The end offset of one partition ([`LogBackend::end_offset`]).
    pub async fn end_offset(&self, topic: &TopicRef, partition: u32) -> Result<u64> {
        self.backend.end_offset(topic, partition).await
    }

    /// A watch of `partition`'s end offset ([`LogBackend::watch_end`]).
    pub async fn watch_end(
        &self,
        topic: &TopicRef,
        partition: u32,
    ) -> Result<watch::Receiver<u64>> {
        self.backend.watch_end(topic, partition).await
    }

    /// A watch of `partition`'s end offset that `applier`'s own appends do not move
    /// ([`LogBackend::watch_end_for`]).
    pub async fn watch_end_for(
        &self,
        topic: &TopicRef,
        partition: u32,
        applier: Applier,
    ) -> Result<watch::Receiver<u64>> {
        self.backend.watch_end_for(topic, partition, applier).await
    }

    /// Join consumer group `group` on `topic` ([`LogBackend::join_group`]).
    pub async fn join_group(
        &self,
        topic: &TopicRef,
        group: &str,
    ) -> Result<Box<dyn GroupConsumer>> {
        self.backend.join_group(topic, group).await
    }

    /// The partition's sealed segments, oldest first ([`LogBackend::segments`]).
    pub async fn segments(&self, topic: &TopicRef, partition: u32) -> Result<Vec<SegmentInfo>> {
        self.backend.segments(topic, partition).await
    }

    /// Delete the sealed segments of `partition` starting at `bases`
    /// ([`LogBackend::delete_segments`]).
    pub async fn delete_segments(
        &self,
        topic: &TopicRef,
        partition: u32,
        bases: &[u64],
    ) -> Result<usize> {
        self.backend.delete_segments(topic, partition, bases).await
    }

    /// Whether the log takes appends now ([`LogBackend::ready`]).
    pub async fn ready(&self) -> Result<()> {
        self.backend.ready().await
    }

    /// Flush and release resources; further calls fail ([`LogBackend::close`]).
    pub async fn close(&self) -> Result<()> {
        self.backend.close().await
    }
}

impl fmt::Debug for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.backend, f)?;
        if let Some(retention) = self.retention {
            write!(f, " (retention {retention:?})")?;
        }
        if let Some(partitions) = self.partition_count {
            write!(f, " ({partitions} partitions)")?;
        }
        Ok(())
    }
}
