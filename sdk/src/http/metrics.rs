//! Prometheus metrics (OpenMetrics text): requests by method and code, request durations,
//! the task view's counters, the lags (`lag.rs`), the runtime's worker threads, and the log's
//! operations when a [`LogMetrics`] is given, read on each scrape.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::AppState;
use super::lag::Lags;
use crate::error::ErrorKind;
use crate::log::layers::{LogMetrics, LogOp};
use crate::security::RecordVerifier;
use crate::view::TaskView;
use crate::worker::Backlog;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The label of a request whose method is not one A2A defines (or that has none).
pub(super) const UNKNOWN_METHOD: &str = "unknown";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    code: i64,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: &'static str,
}

/// The labels of `agentlog_forwards_total`, counted by the forwarder (of the HTTP bindings
/// and the gRPC one alike).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ForwardLabels {
    pub(super) verb: &'static str,
    pub(super) outcome: &'static str,
}

type DurationFamily = Family<MethodLabels, Histogram, fn() -> Histogram>;

/// The router's metrics and their registry.
#[derive(Debug)]
pub(super) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: DurationFamily,
    lags: Lags,
}

fn duration_histogram() -> Histogram {
    // 100 µs .. ~105 s (a blocking SendMessage waits up to a minute by default).
    Histogram::new(exponential_buckets(0.0001, 2.0, 21))
}

impl Metrics {
    pub(super) fn new(
        view: TaskView,
        log: Option<LogMetrics>,
        push: Option<super::push::PushCounters>,
        forwards: Family<ForwardLabels, Counter>,
        workers: Vec<Backlog>,
    ) -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "agentlog_rpc_requests",
            "JSON-RPC requests by method and result code (0 = success)",
            requests.clone(),
        );
        let durations: DurationFamily = Family::new_with_constructor(duration_histogram);
        registry.register(
            "agentlog_rpc_request_duration_seconds",
            "Time from request to reply head (for streams: until the stream starts)",
            durations.clone(),
        );
        registry.register(
            "agentlog_forwards",
            "Requests about partitions held elsewhere, by verb and outcome: owner or successor (who answered), here (this bridge stood in), unavailable (nobody answered), received (a peer's, served here)",
            forwards,
        );
        let lags = Lags::register(&mut registry, Some(view.clone()), workers);
        // Fixed for the process's life: what `--threads` (or the core count) gave the runtime.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let workers = Gauge::<u64, AtomicU64>::default();
            workers.set(runtime.metrics().num_workers() as u64);
            registry.register(
                "agentlog_runtime_worker_threads",
                "Worker threads of the async runtime serving this process",
                workers,
            );
        }
        registry.register_collector(Box::new(ViewCounters(view.clone())));
        if let Some(verifier) = view.verifier() {
            registry.register_collector(Box::new(RejectedRecords(verifier.clone())));
        }
        if let Some(log) = log {
            registry.register_collector(Box::new(LogCounters(log)));
        }
        if let Some(push) = push {
            registry.register_collector(Box::new(push));
        }
        Self {
            registry,
            requests,
            durations,
            lags,
        }
    }

    /// Count one request to `method` that ended with `code` after `elapsed`.
    pub(super) fn observe(&self, method: &'static str, code: i64, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels { method, code })
            .inc();
        self.durations
            .get_or_create(&MethodLabels { method })
            .observe(elapsed.as_secs_f64());
    }
}

/// The view's monotonic counters, read at scrape time.
#[derive(Debug)]
struct ViewCounters(TaskView);

impl Collector for ViewCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (seen, undecodable) = self.0.counters();
        for (name, help, value) in [
            (
                "agentlog_view_records",
                "Records of the events topic applied by the task view",
                seen,
            ),
            (
                "agentlog_view_undecodable_records",
                "Records of the events topic the task view skipped because they could not be decoded",
                undecodable,
            ),
        ] {
            let counter = ConstCounter::new(value);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        let partitions = self.0.partition_status();
        let held = ConstGauge::new(i64::try_from(partitions.len()).unwrap_or(i64::MAX));
        held.encode(encoder.encode_descriptor(
            "agentlog_view_partitions_held",
            "Partitions of the events topic this task view holds",
            None,
            held.metric_type(),
        )?)?;
        let mut family = encoder.encode_descriptor(
            "agentlog_view_tasks",
            "Tasks this task view holds, by partition",
            None,
            MetricType::Gauge,
        )?;
        for status in &partitions {
            let tasks = i64::try_from(status.tasks).unwrap_or(i64::MAX);
            ConstGauge::new(tasks).encode(family.encode_family(&PartitionLabels::of(status))?)?;
        }
        let mut family = encoder.encode_descriptor(
            "agentlog_view_partition_ready",
            "1 once a held partition has caught up with what its log held when the hold began",
            None,
            MetricType::Gauge,
        )?;
        for status in &partitions {
            ConstGauge::new(i64::from(status.ready))
                .encode(family.encode_family(&PartitionLabels::of(status))?)?;
        }
        let mut family = encoder.encode_descriptor(
            "agentlog_view_partition_hold_seconds",
            "From holding a partition to its being ready (restored and caught up), by partition",
            None,
            MetricType::Gauge,
        )?;
        for status in &partitions {
            if let Some(took) = status.ready_after {
                ConstGauge::new(took.as_secs_f64())
                    .encode(family.encode_family(&PartitionLabels::of(status))?)?;
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PartitionLabels {
    partition: u32,
}

impl PartitionLabels {
    fn of(status: &crate::view::PartitionStatus) -> Self {
        Self {
            partition: status.partition,
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

/// The records a [`RecordVerifier`] turned away, by reason, read at scrape time: every
/// reason's series, zeros included (five of them).
#[derive(Debug)]
pub(super) struct RejectedRecords(pub(super) RecordVerifier);

impl Collector for RejectedRecords {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "agentlog_records_rejected",
            "Records ignored because the trust does not allow them, by reason (unsigned, unknown_key, retired_key, kind_not_allowed, bad_signature)",
            None,
            MetricType::Counter,
        )?;
        for (reason, n) in self.0.rejected() {
            let labels = ReasonLabels {
                reason: reason.as_str(),
            };
            ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    op: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    op: &'static str,
    outcome: &'static str,
}

/// The operations that move records, for the records and bytes counters.
const MOVING_OPS: [LogOp; 5] = [
    LogOp::Append,
    LogOp::AppendAll,
    LogOp::Read,
    LogOp::ReadAt,
    LogOp::Poll,
];

/// The log's operation counters ([`LogMetrics`], filled by a `MetricsLayer`), read at scrape
/// time. An operation's series appear once it has been called; an error kind's once it
/// occurred (so a scrape stays short: 13 operations × 15 kinds would be 195 series).
#[derive(Debug)]
pub(super) struct LogCounters(pub(super) LogMetrics);

impl Collector for LogCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let metrics = &self.0;
        let called: Vec<LogOp> = LogOp::ALL
            .into_iter()
            .filter(|op| metrics.calls(*op) > 0)
            .collect();

        let mut family = encoder.encode_descriptor(
            "agentlog_log_operations",
            "Log operations by outcome: ok, or the error kind (unavailable, timeout, ...)",
            None,
            MetricType::Counter,
        )?;
        for &op in &called {
            let outcomes = std::iter::once(("ok", metrics.successes(op))).chain(
                ErrorKind::ALL
                    .into_iter()
                    .map(|kind| (kind.as_str(), metrics.errors(op, kind)))
                    .filter(|(_, n)| *n > 0),
            );
            for (outcome, n) in outcomes {
                let labels = OutcomeLabels {
                    op: op.as_str(),
                    outcome,
                };
                ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
            }
        }

        let mut family = encoder.encode_descriptor(
            "agentlog_log_operation_duration_seconds",
            "Time a log operation took, every outcome (a poll includes its wait for records)",
            None,
            MetricType::Histogram,
        )?;
        for &op in &called {
            let latency = metrics.latency(op);
            let buckets: Vec<(f64, u64)> = latency
                .buckets
                .iter()
                .map(|(bound, n)| (bound.map_or(f64::INFINITY, |b| b.as_secs_f64()), *n))
                .collect();
            family
                .encode_family(&OpLabels { op: op.as_str() })?
                .encode_histogram::<NoLabelSet>(
                    latency.sum.as_secs_f64(),
                    latency.count,
                    &buckets,
                    None,
                )?;
        }

        for (name, help, value) in [
            (
                "agentlog_log_records",
                "Records appended (append, append_all) or returned (read, read_at, poll) by the log",
                LogMetrics::records as fn(&LogMetrics, LogOp) -> u64,
            ),
            (
                "agentlog_log_bytes",
                "Payload bytes of the records counted by agentlog_log_records",
                LogMetrics::bytes,
            ),
        ] {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for op in MOVING_OPS.into_iter().filter(|op| called.contains(op)) {
                let counter = ConstCounter::new(value(metrics, op));
                counter.encode(family.encode_family(&OpLabels { op: op.as_str() })?)?;
            }
        }
        Ok(())
    }
}

/// `GET /metrics`.
pub(super) async fn scrape(State(state): State<AppState>) -> Response {
    let metrics = &state.inner.metrics;
    metrics.lags.measure().await;
    encode(&metrics.registry)
}

/// The registry as an OpenMetrics response.
pub(super) fn encode(registry: &Registry) -> Response {
    let mut text = String::with_capacity(4096);
    match prometheus_client::encoding::text::encode(&mut text, registry) {
        Ok(()) => ([(CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "cannot encode the metrics",
        )
            .into_response(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use bytes::Bytes;
    use tower::ServiceExt;

    use crate::bridge::{Bridge, BridgeConfig};
    use crate::security::{RecordVerifier, Role, SigningKey, Trust};

    async fn scrape_text(app: axum::Router) -> String {
        let reply = app
            .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
            .await
            .unwrap();
        let body = axum::body::to_bytes(reply.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn a_workers_queue_lag_is_served_by_topic() {
        let log = crate::log::open("memory://").await.unwrap();
        let mut config = BridgeConfig::new("q");
        config.topics = crate::agent::AgentTopics::new("agentlog", "q", 1);
        let bridge = Bridge::open(log.clone(), config.clone()).await.unwrap();
        let mut worker_config = crate::worker::WorkerConfig::new("q");
        worker_config.topics = config.topics.clone();
        let handler = crate::worker::handler_fn(|task: crate::worker::TaskContext| async move {
            task.complete(Some("done")).await?;
            Ok(())
        });
        let worker = crate::worker::Worker::start(log.clone(), worker_config, handler)
            .await
            .unwrap();
        let backlog = worker.backlog();
        // A blocking send: the worker read the copy that brought the turn (its own view, not
        // the bridge's: nothing is handed over in-process).
        let request = agentlog_wire::a2a::SendMessageRequest {
            tenant: None,
            message: agentlog_wire::a2a::Message::user_text("m-1", "hi"),
            configuration: None,
            metadata: None,
        };
        bridge
            .send_message(&crate::Caller::anonymous(), request)
            .await
            .unwrap();
        worker.shutdown().await.unwrap();
        // Three more on its queue, which the stopped worker never reads.
        let queued = vec![Bytes::from_static(b"not a command"); 3];
        log.append(&config.topics.commands, b"k", queued)
            .await
            .unwrap();

        let line = r#"agentlog_worker_queue_lag_records{topic="agentlog/q.commands"} 3"#;
        let http = super::super::HttpConfig::new().worker_backlogs(vec![backlog.clone()]);
        let text = scrape_text(super::super::router(bridge, http)).await;
        assert!(text.contains(line), "missing {line:?} in\n{text}");
        let alone = super::super::worker_metrics_router(
            crate::log::layers::LogMetrics::new(),
            None,
            backlog,
        );
        let text = scrape_text(alone).await;
        assert!(text.contains(line), "missing {line:?} in\n{text}");
        let plain = super::super::log_metrics_router(crate::log::layers::LogMetrics::new());
        assert!(
            !scrape_text(plain)
                .await
                .contains("agentlog_worker_queue_lag")
        );
    }

    #[tokio::test]
    async fn rejected_records_are_counted_by_reason_on_metrics() {
        let log = crate::log::open("memory://").await.unwrap();
        let trust =
            Trust::new().with_role(SigningKey::from_seed([1; 32]).verifying_key(), Role::Bridge);
        let verifier = RecordVerifier::new(trust);
        let mut config = BridgeConfig::new("m");
        config.trust = Some(verifier.clone());
        let bridge = Bridge::open(log.clone(), config).await.unwrap();
        let unsigned = agentlog_wire::Record {
            header: agentlog_wire::RecordHeader {
                task_id: "t-1".into(),
                ..Default::default()
            },
            body: agentlog_wire::RecordBody::CancelRequest {
                metadata: String::new(),
            },
        };
        let events = &bridge.config().topics.events;
        log.append(
            events,
            b"t-1",
            vec![Bytes::from(unsigned.encode().unwrap())],
        )
        .await
        .unwrap();
        bridge
            .view()
            .sync(None, std::time::Duration::from_secs(10))
            .await
            .unwrap();
        let text = scrape_text(super::super::router(
            bridge,
            super::super::HttpConfig::default(),
        ))
        .await;
        for line in [
            r#"agentlog_records_rejected_total{reason="unsigned"} 1"#,
            r#"agentlog_records_rejected_total{reason="bad_signature"} 0"#,
            "agentlog_view_partitions_held 4",
            r#"agentlog_view_tasks{partition="0"} 0"#,
            r#"agentlog_view_partition_ready{partition="3"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        let worker =
            super::super::metrics_router(crate::log::layers::LogMetrics::new(), Some(verifier));
        let text = scrape_text(worker).await;
        assert!(
            text.contains(r#"agentlog_records_rejected_total{reason="unsigned"} 1"#),
            "{text}"
        );
        let plain = super::super::log_metrics_router(crate::log::layers::LogMetrics::new());
        assert!(
            !scrape_text(plain)
                .await
                .contains("agentlog_records_rejected")
        );
    }
}
