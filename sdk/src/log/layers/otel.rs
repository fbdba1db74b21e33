//! [`SpanLayer`]: an OpenTelemetry span per append (`agentlog::telemetry`).

use std::future::Future;
use std::sync::Arc;

use super::intercept::{Call, Intercepted, Interceptor, Outcome};
use crate::error::Result;
use crate::log::raw::{Layer, LogBackend};
use crate::telemetry::{Kind, Parent, Span};

/// A `log append` span for each append (`append`, `append_to`, `append_all`) made inside a
/// span of this task (a request, a turn, a push delivery), as its child: the topic, the
/// partition it landed on, records and bytes, and the error kind when it fails. An append
/// outside any span (a background flush) has none, and nothing else is traced: reads and
/// polls are the log's steady work, not a call's. With tracing off ([`crate::telemetry`]),
/// a call costs one atomic load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpanLayer {
    _private: (),
}

impl SpanLayer {
    /// The layer; it has no settings.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Layer for SpanLayer {
    fn layer(&self, inner: Arc<dyn LogBackend>) -> Arc<dyn LogBackend> {
        Arc::new(Intercepted::new(inner, *self))
    }
}

impl Interceptor for SpanLayer {
    async fn around<T, F>(&self, call: &Call<'_>, next: F) -> Result<T>
    where
        T: Outcome,
        F: Future<Output = Result<T>> + Send,
    {
        let span = match *call {
            Call::Append { topic, .. } | Call::AppendTo { topic, .. } => {
                let span = Span::start("log append", Kind::Internal, Parent::Current);
                if span.is_some() {
                    span.set("agentlog.log.topic", &topic.to_string());
                }
                span
            }
            Call::AppendAll { batches, .. } => {
                let span = Span::start("log append", Kind::Internal, Parent::Current);
                span.set("agentlog.log.batches", batches);
                span
            }
            _ => return next.await,
        };
        if !span.is_some() {
            return next.await;
        }
        if let Some((records, bytes)) = call.carries() {
            span.set("agentlog.log.records", records);
            span.set("agentlog.log.bytes", bytes);
        }
        let result = next.await;
        match &result {
            Ok(value) => {
                if let Some(partition) = value.landed() {
                    span.set("agentlog.log.partition", partition);
                }
            }
            Err(error) => {
                span.set("agentlog.outcome", error.kind().as_str());
                span.fail(error.kind().as_str());
            }
        }
        span.end();
        result
    }
}
