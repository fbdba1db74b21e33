//! [`TracingLayer`]: a `tracing` span and event per log operation.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Instrument;
use tracing::field::Empty;

use super::intercept::{Call, Intercepted, Interceptor, Outcome};
use crate::error::Result;
use crate::log::TopicRef;
use crate::log::raw::{Layer, LogBackend};

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
        Arc::new(Intercepted::new(inner, *self))
    }
}

impl Interceptor for TracingLayer {
    /// Run `next` inside the call's span and report how it ended.
    async fn around<T, F>(&self, call: &Call<'_>, next: F) -> Result<T>
    where
        T: Outcome,
        F: Future<Output = Result<T>> + Send,
    {
        let span = span(call);
        let started = Instant::now();
        async {
            let result = next.await;
            match &result {
                Ok(value) => {
                    // Known only once the backend has routed the key, polled or deleted.
                    if let Some(partition) = value.landed() {
                        span.record("partition", partition);
                    }
                    if let Some(deleted) = value.deleted() {
                        span.record("deleted", deleted);
                    }
                    let elapsed: Duration = started.elapsed();
                    match value.moved() {
                        Some((records, moved)) => {
                            // An append's bytes are what it carried: its result has none.
                            let bytes = call.carries().map_or(moved, |(_, bytes)| bytes);
                            tracing::debug!(records, bytes, ?elapsed, "log: done");
                        }
                        None => tracing::debug!(?elapsed, "log: done"),
                    }
                }
                Err(error) => {
                    let elapsed: Duration = started.elapsed();
                    tracing::warn!(kind = error.kind().as_str(), error = %error.report(), ?elapsed, "log: failed");
                }
            }
            result
        }
        .instrument(span.clone())
        .await
    }
}

/// The span of `call`: `op`, and where the call goes with the figures known before it runs.
/// `partition` is declared even when not known yet, so an append or a poll can record it
/// once the backend has answered (and `deleted`, a deletion's count).
fn span(call: &Call<'_>) -> tracing::Span {
    let op = call.op().as_str();
    match *call {
        Call::EnsureTopic { topic, partitions } => {
            tracing::debug_span!("log", op, topic = %topic, partitions)
        }
        Call::Partitions { topic } | Call::Append { topic, .. } | Call::EndOffsets { topic } => {
            on_topic(op, topic, None)
        }
        Call::WatchEnd { topic, partition }
        | Call::Segments { topic, partition }
        | Call::EndOffset { topic, partition }
        | Call::AppendTo {
            topic, partition, ..
        } => on_topic(op, topic, Some(partition)),
        Call::AppendAll { batches, .. } => tracing::debug_span!("log", op, batches),
        Call::Read {
            topic,
            partition,
            from,
            max,
        } => tracing::debug_span!("log", op, topic = %topic, partition, from, max),
        Call::ReadAt {
            topic,
            partition,
            offsets,
        } => tracing::debug_span!("log", op, topic = %topic, partition, offsets),
        Call::DeleteSegments {
            topic,
            partition,
            bases,
        } => {
            tracing::debug_span!("log", op, topic = %topic, partition, bases, deleted = Empty)
        }
        Call::JoinGroup { topic, group } => tracing::debug_span!("log", op, topic = %topic, group),
        Call::Poll { topic, group } | Call::Leave { topic, group } => {
            tracing::debug_span!("log", op, topic = %topic, group = %group, partition = Empty)
        }
        Call::Commit {
            topic,
            group,
            partition,
        } => {
            let span =
                tracing::debug_span!("log", op, topic = %topic, group = %group, partition = Empty);
            span.record("partition", partition);
            span
        }
        Call::Ready | Call::Close => tracing::debug_span!("log", op),
    }
}

/// The span of a call on `topic`, on `partition` where it is known.
fn on_topic(op: &'static str, topic: &TopicRef, partition: Option<u32>) -> tracing::Span {
    tracing::debug_span!("log", op, topic = %topic, partition)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Mutex;

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Record};
    use tracing::{Event, Id, Metadata, Subscriber};

    use bytes::Bytes;

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
