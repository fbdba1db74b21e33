//! [`TracingLayer`]: a `tracing` span and event per log operation.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::watch;
use tracing::Instrument;

use super::{LogOp, payloads_and_bytes, records_and_bytes};
use crate::error::Result;
use crate::log::raw::{Layer, LogBackend, Place, Prefetcher};
use crate::log::{
    AppendBatch, Appended, Delivery, GroupConsumer, SegmentInfo, StoredRecord, TopicRef,
};

/// Traces every operation: a `log` span (debug level) with the operation's `op`, `topic`
/// and, where there is one, `partition` (or `group`), which the backend's own events nest
/// in, and when the call returns one event inside it:
///
/// - debug `"log: done"` with `records` and `bytes` where the call moved records, and
///   `elapsed` (a [`Duration`], debug-formatted);
/// - warn `"log: failed"` with the error's `kind` (its stable name, as in
///   [`ErrorKind::as_str`]), the `error` and `elapsed`.
///
/// Group members from `join_group` are traced too (`poll`, `commit`, `leave`). A poll that
/// times out with nothing is a debug event with `records = 0`. With nothing listening at
/// debug level, a call costs one disabled span and one timestamp.
///
/// [`ErrorKind::as_str`]: crate::error::ErrorKind::as_str
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TracingLayer {
    _private: (),
}

impl TracingLayer {
    /// The layer; it has no settings (filter with the `tracing` subscriber, target
    /// `agentlog::log::layers::trace`).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Layer for TracingLayer {
    fn layer(&self, inner: Arc<dyn LogBackend>) -> Arc<dyn LogBackend> {
        Arc::new(TracingLog { inner })
    }
}

/// What a finished call reports: records and payload bytes moved, if any.
trait Moved {
    fn moved(&self) -> Option<(u64, u64)> {
        None
    }
}

impl Moved for () {}
impl Moved for u32 {}
impl Moved for Vec<u64> {}
impl Moved for watch::Receiver<u64> {}
impl Moved for Box<dyn GroupConsumer> {}
impl Moved for Vec<SegmentInfo> {}
impl Moved for usize {}

impl Moved for Appended {
    fn moved(&self) -> Option<(u64, u64)> {
        Some((u64::from(self.count), 0))
    }
}

impl Moved for Vec<Appended> {
    fn moved(&self) -> Option<(u64, u64)> {
        Some((self.iter().map(|a| u64::from(a.count)).sum(), 0))
    }
}

impl Moved for Vec<StoredRecord> {
    fn moved(&self) -> Option<(u64, u64)> {
        Some(records_and_bytes(self))
    }
}

impl Moved for Option<Delivery> {
    fn moved(&self) -> Option<(u64, u64)> {
        Some(
            self.as_ref()
                .map_or((0, 0), |d| records_and_bytes(&d.records)),
        )
    }
}

/// Run `call` inside `span` and report how it ended. `bytes` are the payload bytes an
/// append carried (an [`Appended`] does not know them).
async fn traced<T: Moved>(
    span: tracing::Span,
    bytes: Option<u64>,
    call: impl Future<Output = Result<T>>,
) -> Result<T> {
    let started = Instant::now();
    async move {
        let result = call.await;
        let elapsed: Duration = started.elapsed();
        match &result {
            Ok(value) => match value.moved() {
                Some((records, moved)) => {
                    let bytes = bytes.unwrap_or(moved);
                    tracing::debug!(records, bytes, ?elapsed, "log: done");
                }
                None => tracing::debug!(?elapsed, "log: done"),
            },
            Err(error) => {
                tracing::warn!(kind = error.kind().as_str(), error = %error.report(), ?elapsed, "log: failed");
            }
        }
        result
    }
    .instrument(span)
    .await
}

/// The span of a call on `topic`. `partition` is declared even when not known yet, so an
/// append can record it once the backend has routed the key.
fn span(op: LogOp, topic: &TopicRef, partition: Option<u32>) -> tracing::Span {
    tracing::debug_span!("log", op = op.as_str(), topic = %topic, partition)
}

/// The backend under a [`TracingLayer`].
#[derive(Debug)]
struct TracingLog {
    inner: Arc<dyn LogBackend>,
}

#[async_trait]
impl LogBackend for TracingLog {
    async fn ensure_topic(&self, topic: &TopicRef, partitions: u32) -> Result<()> {
        let span = tracing::debug_span!("log", op = "ensure_topic", topic = %topic, partitions);
        traced(span, None, self.inner.ensure_topic(topic, partitions)).await
    }

    async fn partitions(&self, topic: &TopicRef) -> Result<u32> {
        let span = span(LogOp::Partitions, topic, None);
        traced(span, None, self.inner.partitions(topic)).await
    }

    async fn append(&self, topic: &TopicRef, key: &[u8], payloads: Vec<Bytes>) -> Result<Appended> {
        let (_, bytes) = payloads_and_bytes(&payloads);
        let span = span(LogOp::Append, topic, None);
        let result = traced(span.clone(), Some(bytes), async {
            let appended = self.inner.append(topic, key, payloads).await?;
            // The partition is known only once the backend has routed the key.
            span.record("partition", appended.partition);
            Ok(appended)
        });
        result.await
    }

    async fn append_all(&self, batches: Vec<AppendBatch<'_>>) -> Result<Vec<Appended>> {
        let bytes = batches
            .iter()
            .map(|b| payloads_and_bytes(&b.payloads).1)
            .sum();
        let span = tracing::debug_span!("log", op = "append_all", batches = batches.len());
        traced(span, Some(bytes), self.inner.append_all(batches)).await
    }

    async fn read(
        &self,
        topic: &TopicRef,
        partition: u32,
        from: u64,
        max: usize,
    ) -> Result<Vec<StoredRecord>> {
        let span = tracing::debug_span!("log", op = "read", topic = %topic, partition, from, max);
        traced(span, None, self.inner.read(topic, partition, from, max)).await
    }

    async fn read_at(
        &self,
        topic: &TopicRef,
        partition: u32,
        offsets: &[u64],
        places: &[Place],
    ) -> Result<Vec<StoredRecord>> {
        let span = tracing::debug_span!("log", op = "read_at", topic = %topic, partition, offsets = offsets.len());
        traced(
            span,
            None,
            self.inner.read_at(topic, partition, offsets, places),
        )
        .await
    }

    fn prefetcher(&self, topic: &TopicRef) -> Option<Prefetcher> {
        self.inner.prefetcher(topic)
    }

    async fn end_offsets(&self, topic: &TopicRef) -> Result<Vec<u64>> {
        let span = span(LogOp::EndOffsets, topic, None);
        traced(span, None, self.inner.end_offsets(topic)).await
    }

    async fn watch_end(&self, topic: &TopicRef, partition: u32) -> Result<watch::Receiver<u64>> {
        let span = span(LogOp::WatchEnd, topic, Some(partition));
        traced(span, None, self.inner.watch_end(topic, partition)).await
    }

    async fn segments(&self, topic: &TopicRef, partition: u32) -> Result<Vec<SegmentInfo>> {
        let span = span(LogOp::Segments, topic, Some(partition));
        traced(span, None, self.inner.segments(topic, partition)).await
    }

    async fn delete_segments(
        &self,
        topic: &TopicRef,
        partition: u32,
        bases: &[u64],
    ) -> Result<usize> {
        let span = tracing::debug_span!("log", op = "delete_segments", topic = %topic, partition, bases = bases.len(), deleted = tracing::field::Empty);
        let result = traced(span.clone(), None, async {
            let deleted = self.inner.delete_segments(topic, partition, bases).await?;
            span.record("deleted", deleted);
            Ok(deleted)
        });
        result.await
    }

    async fn join_group(&self, topic: &TopicRef, group: &str) -> Result<Box<dyn GroupConsumer>> {
        let span = tracing::debug_span!("log", op = "join_group", topic = %topic, group);
        let inner = traced(span, None, self.inner.join_group(topic, group)).await?;
        Ok(Box::new(TracingConsumer {
            inner,
            topic: topic.clone(),
            group: group.to_owned(),
        }))
    }

    async fn ready(&self) -> Result<()> {
        let span = tracing::debug_span!("log", op = "ready");
        traced(span, None, self.inner.ready()).await
    }

    async fn close(&self) -> Result<()> {
        let span = tracing::debug_span!("log", op = "close");
        traced(span, None, self.inner.close()).await
    }
}

/// A group member under a [`TracingLayer`].
#[derive(Debug)]
struct TracingConsumer {
    inner: Box<dyn GroupConsumer>,
    topic: TopicRef,
    group: String,
}

impl TracingConsumer {
    fn span(&self, op: LogOp) -> tracing::Span {
        tracing::debug_span!("log", op = op.as_str(), topic = %self.topic, group = %self.group, partition = tracing::field::Empty)
    }
}

#[async_trait]
impl GroupConsumer for TracingConsumer {
    fn owned_partitions(&self) -> Vec<u32> {
        self.inner.owned_partitions()
    }

    async fn poll(&mut self, max: usize, timeout: Duration) -> Result<Option<Delivery>> {
        let span = self.span(LogOp::Poll);
        let inner = &mut self.inner;
        let result = traced(span.clone(), None, async {
            let polled = inner.poll(max, timeout).await?;
            if let Some(delivery) = &polled {
                span.record("partition", delivery.partition);
            }
            Ok(polled)
        });
        result.await
    }

    async fn commit(&mut self, partition: u32, next_offset: u64) -> Result<()> {
        let span = self.span(LogOp::Commit);
        span.record("partition", partition);
        traced(span, None, self.inner.commit(partition, next_offset)).await
    }

    async fn leave(self: Box<Self>) -> Result<()> {
        let span = self.span(LogOp::Leave);
        traced(span, None, self.inner.leave()).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Mutex;

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Record};
    use tracing::{Event, Id, Metadata, Subscriber};

    use super::*;
    use crate::error::ErrorKind;
    use crate::log::Log;
    use crate::log::embedded::EmbeddedLog;
    use crate::log::layers::{FaultLayer, Faults};

    /// What the subscriber saw: one line per span or event, `name level k=v ...`.
    #[derive(Default)]
    struct Seen {
        lines: Mutex<Vec<String>>,
        next_id: std::sync::atomic::AtomicU64,
    }

    struct Fields(String);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push_str(&format!(" {}={value:?}", field.name()));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push_str(&format!(" {}={value}", field.name()));
        }
    }

    impl Subscriber for &'static Seen {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, span: &Attributes<'_>) -> Id {
            let mut fields = Fields(format!("span {}", span.metadata().level()));
            span.record(&mut fields);
            self.lines.lock().unwrap().push(fields.0);
            Id::from_u64(
                1 + self
                    .next_id
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            )
        }
        fn record(&self, _: &Id, values: &Record<'_>) {
            let mut fields = Fields("record".to_owned());
            values.record(&mut fields);
            self.lines.lock().unwrap().push(fields.0);
        }
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut fields = Fields(format!("event {}", event.metadata().level()));
            event.record(&mut fields);
            self.lines.lock().unwrap().push(fields.0);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    fn seen() -> &'static Seen {
        Box::leak(Box::default())
    }

    fn lines(seen: &Seen) -> Vec<String> {
        std::mem::take(&mut *seen.lines.lock().unwrap())
    }

    #[tokio::test]
    async fn every_operation_gets_a_span_and_an_event_and_errors_a_warning() {
        let seen = seen();
        let _guard = tracing::subscriber::set_default(seen);
        let faults = Faults::new();
        let log = Log::new(EmbeddedLog::in_memory())
            .layer(FaultLayer::new(faults.clone()))
            .layer(TracingLayer::new());
        let topic = TopicRef::new("s", "t");
        log.ensure_topic(&topic, 1).await.unwrap();
        let ensure = lines(seen);
        assert!(ensure[0].contains("op=ensure_topic") && ensure[0].contains("topic=s/t"));
        assert!(
            ensure
                .iter()
                .any(|l| l.starts_with("event DEBUG") && l.contains("log: done"))
        );

        log.append(&topic, b"k", vec![Bytes::from_static(b"abc")])
            .await
            .unwrap();
        let append = lines(seen);
        assert!(append[0].starts_with("span DEBUG") && append[0].contains("op=append"));
        assert!(
            append
                .iter()
                .any(|l| l.starts_with("record") && l.contains("partition=0"))
        );
        assert!(
            append.iter().any(|l| l.contains("log: done")
                && l.contains("records=1")
                && l.contains("bytes=3")),
            "{append:?}"
        );

        let read = log.read(&topic, 0, 0, 10).await.unwrap();
        assert_eq!(read.len(), 1);
        let lines_read = lines(seen);
        assert!(lines_read[0].contains("op=read") && lines_read[0].contains("partition=0"));
        assert!(
            lines_read
                .iter()
                .any(|l| l.contains("records=1") && l.contains("bytes=3"))
        );

        faults.drop_connection(1);
        let err = log.end_offsets(&topic).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        let failed = lines(seen);
        assert!(
            failed
                .iter()
                .any(|l| l.starts_with("event WARN") && l.contains("kind=unavailable")),
            "{failed:?}"
        );
    }

    #[tokio::test]
    async fn group_members_are_traced() {
        let seen = seen();
        let _guard = tracing::subscriber::set_default(seen);
        let log = Log::new(EmbeddedLog::in_memory()).layer(TracingLayer::new());
        let topic = TopicRef::new("s", "t");
        log.ensure_topic(&topic, 1).await.unwrap();
        log.append(&topic, b"k", vec![Bytes::from_static(b"ab")])
            .await
            .unwrap();
        let mut member = log.join_group(&topic, "g").await.unwrap();
        lines(seen);
        member.poll(10, Duration::from_secs(5)).await.unwrap();
        let poll = lines(seen);
        assert!(poll[0].contains("op=poll") && poll[0].contains("group=g"));
        assert!(
            poll.iter()
                .any(|l| l.contains("records=1") && l.contains("bytes=2"))
        );
        member.commit(0, 1).await.unwrap();
        let commit = lines(seen);
        assert!(commit[0].contains("op=commit"));
        assert!(commit.iter().any(|l| l.contains("partition=0")));
        member.leave().await.unwrap();
        assert!(lines(seen)[0].contains("op=leave"));
    }
}
