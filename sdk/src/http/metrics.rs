//! Prometheus metrics (OpenMetrics text): requests by method and code, request durations,
//! and the task view's lag and counters, read on each scrape.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::AppState;
use crate::view::TaskView;

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

type DurationFamily = Family<MethodLabels, Histogram, fn() -> Histogram>;

/// The router's metrics and their registry.
#[derive(Debug)]
pub(super) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: DurationFamily,
    lag: Gauge<u64, AtomicU64>,
    view: TaskView,
}

fn duration_histogram() -> Histogram {
    // 100 µs .. ~105 s (a blocking SendMessage waits up to a minute by default).
    Histogram::new(exponential_buckets(0.0001, 2.0, 21))
}

impl Metrics {
    pub(super) fn new(view: TaskView) -> Self {
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
        let lag = Gauge::<u64, AtomicU64>::default();
        registry.register(
            "agentlog_view_lag_records",
            "Records in the events topic not yet applied by the task view (measured per scrape)",
            lag.clone(),
        );
        registry.register_collector(Box::new(ViewCounters(view.clone())));
        Self {
            registry,
            requests,
            durations,
            lag,
            view,
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
        Ok(())
    }
}

/// `GET /metrics`.
pub(super) async fn scrape(State(state): State<AppState>) -> Response {
    let metrics = &state.inner.metrics;
    match metrics.view.lag().await {
        Ok(lag) => {
            metrics.lag.set(lag);
        }
        Err(e) => tracing::debug!("cannot measure the view's lag: {e}"),
    }
    let mut text = String::with_capacity(4096);
    match prometheus_client::encoding::text::encode(&mut text, &metrics.registry) {
        Ok(()) => ([(CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "cannot encode the metrics",
        )
            .into_response(),
    }
}
