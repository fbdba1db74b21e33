//! What a backend or a layer implements: [`LogBackend`], [`Layer`], [`Layered`] (a layer's
//! forwarding defaults), and the embedded log's read hints ([`Place`], [`Prefetcher`]) that a
//! backend may hand back and take again. A user of a log needs none of it: the
//! [`Log`](super::Log) handle has every operation (opendal's split of `Operator` and `raw`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::watch;

pub use super::place::{Place, Prefetcher};
use super::{AppendBatch, Appended, Applier, GroupConsumer, SegmentInfo, StoredRecord, TopicRef};
use crate::error::{Error, ErrorKind, Result};

/// What the bridge and the workers need from a broker.
///
/// Every method is safe to call concurrently from many tasks. Appends to one partition are
/// ordered: a batch is contiguous and lands after every batch acknowledged before it.
#[async_trait]
pub trait LogBackend: Send + Sync + fmt::Debug + 'static {
    /// Create the stream and topic with `partitions` partitions if they do not exist yet.
    /// An existing topic is left as it is (its partition count is not changed).
    async fn ensure_topic(&self, topic: &TopicRef, partitions: u32) -> Result<()>;

    /// The number of partitions of an existing topic.
    async fn partitions(&self, topic: &TopicRef) -> Result<u32>;

    /// Append `payloads`, in order, to the partition chosen by `key`
    /// ([`partition_for_key`](super::partition_for_key)), and return where they landed.
    /// Returns once the batch is acknowledged under the backend's durability setting.
    async fn append(&self, topic: &TopicRef, key: &[u8], payloads: Vec<Bytes>) -> Result<Appended>;

    /// [`append`](Self::append), made for `applier` ([`Applier`]): once acknowledged, it does
    /// not move `applier`'s watches ([`watch_end_for`](Self::watch_end_for)). Default: a
    /// plain append (every watch moves).
    async fn append_for(
        &self,
        topic: &TopicRef,
        key: &[u8],
        payloads: Vec<Bytes>,
        applier: Applier,
    ) -> Result<Appended> {
        let _ = applier;
        self.append(topic, key, payloads).await
    }

    /// Append `payloads`, in order, to partition `partition` of `topic`, whatever a key would
    /// choose: for records that belong to a partition rather than to a key (what a holder of
    /// the partition writes about it). Ordered with every other append to that partition, as
    /// [`append`](Self::append) is; a partition the topic lacks is
    /// [`ErrorKind::InvalidParams`], nothing appended.
    async fn append_to(
        &self,
        topic: &TopicRef,
        partition: u32,
        payloads: Vec<Bytes>,
    ) -> Result<Appended>;

    /// Append several batches, each to the partition its key chooses in its topic, in order:
    /// batch i is acknowledged only if every batch before it is, and the result lists where
    /// each landed, in the same order. On an error, other batches may have been appended (the
    /// default: those before the failing one). Default: one [`append`](Self::append) after
    /// the other; a backend may take them all in one round (the embedded log writes and
    /// acknowledges them together; Iggy sends them at once, so a later batch may be visible
    /// first, or land though an earlier one failed: a worker handed a command's copy before
    /// its event looks again until the sweeper would queue it anew).
    async fn append_all(&self, batches: Vec<AppendBatch<'_>>) -> Result<Vec<Appended>> {
        let mut out = Vec::with_capacity(batches.len());
        for batch in batches {
            out.push(self.append(batch.topic, batch.key, batch.payloads).await?);
        }
        Ok(out)
    }

    /// Up to `max` records of `partition` starting at offset `from`, in offset order.
    /// Past the end it returns an empty vector, not an error. It may return fewer than `max`
    /// before the end (a backend caps what one call returns), so a caller that needs a whole
    /// range reads on from the last offset returned. Where `from` was deleted (see
    /// [`delete_segments`](Self::delete_segments)) it returns the records from the next
    /// offset that exists: the records' offsets say where they are.
    async fn read(
        &self,
        topic: &TopicRef,
        partition: u32,
        from: u64,
        max: usize,
    ) -> Result<Vec<StoredRecord>>;

    /// The records at `offsets` (ascending) of `partition`, in that order: how a task's
    /// records are read back. `places` are where the backend said they are ([`Place`]), one
    /// per offset, or empty when none are known. An offset past the end, or deleted, is left
    /// out, so the caller compares counts. Default: [`read`](Self::read)s over each run of
    /// consecutive offsets, reading on from where a short read stopped, until the run is
    /// whole or a read returns nothing (past the end); the embedded log reads the records at
    /// their places and looks the others up in one pass over its index.
    async fn read_at(
        &self,
        topic: &TopicRef,
        partition: u32,
        offsets: &[u64],
        places: &[Place],
    ) -> Result<Vec<StoredRecord>> {
        // Places are an embedded-log thing: read by offset.
        let _ = places;
        read_runs(topic, partition, offsets, |from, max| {
            self.read(topic, partition, from, max)
        })
        .await
    }

    /// What loads the batches of `topic`'s records into the CPU's cache from their places
    /// ahead of a [`read_at`](Self::read_at) ([`Prefetcher`]), if the backend can; `None` for
    /// a backend without places (Iggy) or an unknown topic. Cheap; a caller keeps it.
    fn prefetcher(&self, topic: &TopicRef) -> Option<Prefetcher>;

    /// The end offset (next offset to be written) of every partition, indexed by partition.
    /// Deleting segments does not move it.
    async fn end_offsets(&self, topic: &TopicRef) -> Result<Vec<u64>>;

    /// The end offset (next offset to be written) of one partition: what a reader of one
    /// task's partition syncs to, without asking about the others. A partition the topic
    /// lacks is [`ErrorKind::InvalidParams`]. Default: [`end_offsets`](Self::end_offsets)'s
    /// entry (a backend that can ask about one partition alone does so).
    async fn end_offset(&self, topic: &TopicRef, partition: u32) -> Result<u64> {
        let ends = self.end_offsets(topic).await?;
        ends.get(partition as usize)
            .copied()
            .ok_or_else(|| no_partition(topic, ends.len(), partition))
    }

    /// A watch of `partition`'s end offset. It changes when records are appended, by this
    /// process or (for a networked backend) by anyone, so followers await it instead of
    /// spinning. Backends that cannot be notified poll adaptively behind this receiver.
    async fn watch_end(&self, topic: &TopicRef, partition: u32) -> Result<watch::Receiver<u64>>;

    /// [`watch_end`](Self::watch_end) for `applier`, a reader that applies its own appends
    /// ([`Applier`]): appends acknowledged as made for it
    /// ([`AppendBatch::applied_by`](super::AppendBatch)) do not move this watch. Default: the
    /// plain watch, woken by every append (what a backend that cannot tell appends apart does).
    async fn watch_end_for(
        &self,
        topic: &TopicRef,
        partition: u32,
        applier: Applier,
    ) -> Result<watch::Receiver<u64>> {
        let _ = applier;
        self.watch_end(topic, partition).await
    }

    /// Join consumer group `group` on `topic` (creating the group if needed). Members of one
    /// group share the topic's partitions; each partition's committed offset survives the
    /// member, so a restarted member resumes after its last commit and anything polled but not
    /// committed is delivered again.
    async fn join_group(&self, topic: &TopicRef, group: &str) -> Result<Box<dyn GroupConsumer>>;

    /// The partition's sealed segments, oldest first. Empty for a backend that manages its
    /// own retention (Iggy: the topic's message expiry) or keeps no segments (`memory://`).
    async fn segments(&self, topic: &TopicRef, partition: u32) -> Result<Vec<SegmentInfo>>;

    /// Delete the sealed segments of `partition` starting at `bases` (bases that are not a
    /// sealed segment's, or the active segment's, are ignored). Returns how many were
    /// deleted. A reader racing the deletion gets the records or skips them cleanly, never
    /// an error or a corrupt read. Afterwards a `read` from a deleted offset returns the
    /// records from the next offset that exists, `read_at` leaves deleted offsets out, and
    /// [`end_offsets`](Self::end_offsets) is unchanged.
    async fn delete_segments(
        &self,
        topic: &TopicRef,
        partition: u32,
        bases: &[u64],
    ) -> Result<usize>;

    /// Whether the log takes appends now: `Ok`, or why not (closed, open read-only, stopped
    /// by a write error, its server unreachable). What a readiness probe asks; it writes
    /// nothing.
    async fn ready(&self) -> Result<()>;

    /// Flush and release resources. Further calls fail.
    async fn close(&self) -> Result<()>;
}

/// The error for `partition` of `topic`, which has `partitions`: what every backend answers
/// for a partition its topic lacks.
pub(crate) fn no_partition(topic: &TopicRef, partitions: usize, partition: u32) -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        format!("topic {topic} has {partitions} partitions: there is no partition {partition}"),
    )
}

/// The body of the default [`LogBackend::read_at`], with `read(from, max)` standing for the
/// backend's `read` (so a layer overriding `read_at` can go through reads of its own, as the
/// fault layer's short reads do).
///
/// A `read` may return fewer records than asked (the trait allows it; Iggy caps a poll), so
/// each run of consecutive offsets is read on from the record after the last one returned;
/// leaving the rest out would make the caller's count check report corruption.
pub(crate) async fn read_runs<F, Fut>(
    topic: &TopicRef,
    partition: u32,
    offsets: &[u64],
    mut read: F,
) -> Result<Vec<StoredRecord>>
where
    F: FnMut(u64, usize) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<StoredRecord>>>,
{
    let mut out = Vec::with_capacity(offsets.len());
    let mut rest = offsets;
    while let Some(&start) = rest.first() {
        let run = rest
            .iter()
            .zip(start..)
            .take_while(|(offset, expected)| **offset == *expected)
            .count();
        let end = start + run as u64;
        let mut next = start;
        while next < end {
            let records = read(next, (end - next) as usize).await?;
            let Some(last) = records.last().map(|r| r.offset) else {
                // Past the end; the offsets are ascending, so every later one is too.
                return Ok(out);
            };
            if last < next {
                return Err(Error::new(
                    ErrorKind::Internal,
                    format!(
                        "{topic} partition {partition}: a read from offset {next} returned offset {last}"
                    ),
                ));
            }
            let from = next;
            next = last + 1;
            out.extend(
                records
                    .into_iter()
                    .filter(|r| (from..end).contains(&r.offset)),
            );
        }
        rest = &rest[run..];
    }
    Ok(out)
}

/// A cross-cutting concern wrapped around a log's backend: it returns a backend that does
/// its part and calls `inner` for the rest.
pub trait Layer {
    /// Wrap `inner`.
    fn layer(&self, inner: Arc<dyn LogBackend>) -> Arc<dyn LogBackend>;
}

/// The future an `async fn` of [`LogBackend`] or [`Layered`] returns under `#[async_trait]`.
pub type BoxedCall<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// Declares [`Layered`] with a default for each listed method of [`LogBackend`] (in the
/// signature `#[async_trait]` gives it, so an override is an `async fn`) that forwards to
/// the layer below, and makes every `Layered` type a `LogBackend` whose methods hand back
/// the `Layered` ones' futures as they are (no second allocation per call).
macro_rules! layered {
    ($(
        $(#[$doc:meta])*
        fn $name:ident<$($lt:lifetime),*>(&$s:lifetime self $(, $arg:ident: $ty:ty)*) -> $ret:ty;
    )*) => {
        /// A layer's backend written as only what it changes: every method of [`LogBackend`]
        /// has a default here that forwards to the layer below ([`inner`](Self::inner)), and
        /// every `Layered` type is a [`LogBackend`] (opendal's `LayeredAccess`).
        ///
        /// Override a method with an `async fn` in an `#[async_trait] impl Layered for ...`.
        /// The defaults hand the layer below's future back as it is, so a forwarded call
        /// costs no allocation of its own. They forward `append_all` and `read_at` too (not
        /// the trait's sequential forms), so a backend's native ones survive any stack;
        /// `join_group` returns the layer below's member unwrapped (a layer that sees polls
        /// and commits overrides it).
        pub trait Layered: Send + Sync + fmt::Debug + 'static {
            /// The layer (or backend) below.
            fn inner(&self) -> &Arc<dyn LogBackend>;

            /// [`LogBackend::prefetcher`].
            fn prefetcher(&self, topic: &TopicRef) -> Option<Prefetcher> {
                self.inner().prefetcher(topic)
            }

            $(
                $(#[$doc])*
                fn $name<$s, $($lt,)* 'f>(&$s self $(, $arg: $ty)*) -> BoxedCall<'f, $ret>
                where
                    $s: 'f,
                    $($lt: 'f,)*
                    Self: 'f,
                {
                    self.inner().$name($($arg),*)
                }
            )*
        }

        impl<L: Layered> LogBackend for L {
            fn prefetcher(&self, topic: &TopicRef) -> Option<Prefetcher> {
                Layered::prefetcher(self, topic)
            }

            $(
                fn $name<$s, $($lt,)* 'f>(&$s self $(, $arg: $ty)*) -> BoxedCall<'f, $ret>
                where
                    $s: 'f,
                    $($lt: 'f,)*
                    Self: 'f,
                {
                    Layered::$name(self, $($arg),*)
                }
            )*
        }
    };
}

layered! {
    /// [`LogBackend::ensure_topic`].
    fn ensure_topic<'t>(&'s self, topic: &'t TopicRef, partitions: u32) -> ();
    /// [`LogBackend::partitions`].
    fn partitions<'t>(&'s self, topic: &'t TopicRef) -> u32;
    /// [`LogBackend::append`].
    fn append<'t, 'k>(&'s self, topic: &'t TopicRef, key: &'k [u8], payloads: Vec<Bytes>)
        -> Appended;
    /// [`LogBackend::append_for`].
    fn append_for<'t, 'k>(
        &'s self,
        topic: &'t TopicRef,
        key: &'k [u8],
        payloads: Vec<Bytes>,
        applier: Applier
    ) -> Appended;
    /// [`LogBackend::append_to`].
    fn append_to<'t>(&'s self, topic: &'t TopicRef, partition: u32, payloads: Vec<Bytes>)
        -> Appended;
    /// [`LogBackend::append_all`], to the layer below's own.
    fn append_all<'b>(&'s self, batches: Vec<AppendBatch<'b>>) -> Vec<Appended>;
    /// [`LogBackend::read`].
    fn read<'t>(&'s self, topic: &'t TopicRef, partition: u32, from: u64, max: usize)
        -> Vec<StoredRecord>;
    /// [`LogBackend::read_at`], to the layer below's own.
    fn read_at<'t, 'o, 'p>(
        &'s self,
        topic: &'t TopicRef,
        partition: u32,
        offsets: &'o [u64],
        places: &'p [Place]
    ) -> Vec<StoredRecord>;
    /// [`LogBackend::end_offsets`].
    fn end_offsets<'t>(&'s self, topic: &'t TopicRef) -> Vec<u64>;
    /// [`LogBackend::end_offset`], to the layer below's own.
    fn end_offset<'t>(&'s self, topic: &'t TopicRef, partition: u32) -> u64;
    /// [`LogBackend::watch_end`].
    fn watch_end<'t>(&'s self, topic: &'t TopicRef, partition: u32) -> watch::Receiver<u64>;
    /// [`LogBackend::watch_end_for`].
    fn watch_end_for<'t>(&'s self, topic: &'t TopicRef, partition: u32, applier: Applier)
        -> watch::Receiver<u64>;
    /// [`LogBackend::join_group`]: the layer below's member, unwrapped.
    fn join_group<'t, 'g>(&'s self, topic: &'t TopicRef, group: &'g str)
        -> Box<dyn GroupConsumer>;
    /// [`LogBackend::segments`].
    fn segments<'t>(&'s self, topic: &'t TopicRef, partition: u32) -> Vec<SegmentInfo>;
    /// [`LogBackend::delete_segments`].
    fn delete_segments<'t, 'b>(&'s self, topic: &'t TopicRef, partition: u32, bases: &'b [u64])
        -> usize;
    /// [`LogBackend::ready`].
    fn ready<>(&'s self) -> ();
    /// [`LogBackend::close`].
    fn close<>(&'s self) -> ();
}
