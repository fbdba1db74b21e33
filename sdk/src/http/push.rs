//! What the router serves of push notifications (`HttpConfig::push`): the keys that sign
//! them at `/.well-known/jwks.json`, and the sender's counters on `/metrics`
//! (`agentlog_push_*`).

use std::sync::Arc;

use axum::http::header::CONTENT_TYPE;
use axum::routing::{MethodRouter, get};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::push::Published;

/// Where the notification keys are served.
pub(super) const JWKS_PATH: &str = "/.well-known/jwks.json";

/// `GET /.well-known/jwks.json`: the keys, public (a receiver fetches them unauthenticated).
pub(super) fn jwks<S: Clone + Send + Sync + 'static>(published: &Published) -> MethodRouter<S> {
    let body: Arc<str> = Arc::from(published.jwks().to_string());
    get(move || {
        let body = Arc::clone(&body);
        async move { ([(CONTENT_TYPE, "application/json")], body.to_string()) }
    })
}

/// The sender's counters, read at scrape time.
#[derive(Debug)]
pub(super) struct PushCounters(pub(super) Published);

impl Collector for PushCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(metrics) = self.0.metrics() else {
            return Ok(());
        };
        let counts = metrics.counts();
        for (name, help, value) in [
            (
                "agentlog_push_delivered",
                "Push notifications a receiver took (a 2xx answer)",
                counts.delivered,
            ),
            (
                "agentlog_push_failed_attempts",
                "Push attempts that failed (then retried or given up; an open circuit counts)",
                counts.failed_attempts,
            ),
            (
                "agentlog_push_dead_letters",
                "Push notifications given up, each a dead-letter record on its task's log",
                counts.dead_letters,
            ),
            (
                "agentlog_push_refused",
                "Push notifications given up at once: a refused destination or a 4xx answer",
                counts.refused,
            ),
            (
                "agentlog_push_circuit_opens",
                "How often an endpoint's circuit opened after failures in a row",
                counts.circuit_opens,
            ),
        ] {
            let counter = ConstCounter::new(value);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        for (name, help, value) in [
            (
                "agentlog_push_pending",
                "Push notifications queued or being sent",
                counts.pending,
            ),
            (
                "agentlog_push_tracked_tasks",
                "Tasks with push configs the sender follows",
                counts.tracked,
            ),
        ] {
            let gauge = ConstGauge::new(value as i64);
            let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}
