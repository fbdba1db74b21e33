//! The figures a scrape measures by asking the log for its end offsets: the task view's lag
//! (`agentlog_view_lag_records`) and the queue lag of each worker running in the process
//! (`agentlog_worker_queue_lag_records{topic}`).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::view::TaskView;
use crate::worker::Backlog;

/// How often a scrape may measure (each figure is a probe of the log's end offsets).
const MEASURE_EVERY: Duration = Duration::from_secs(1);

type LagGauge = Gauge<u64, AtomicU64>;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabels {
    topic: String,
}

/// The lags a scrape measures, registered in its registry.
#[derive(Debug)]
pub(super) struct Lags {
    view: Option<(TaskView, LagGauge)>,
    workers: Vec<Backlog>,
    worker_lag: Family<TopicLabels, LagGauge>,
    /// When a scrape last measured: at most once per [`MEASURE_EVERY`] and one scrape at a
    /// time, so that scraping `/metrics` in a loop does not reach the log each time.
    measured: tokio::sync::Mutex<Option<Instant>>,
}

impl Lags {
    /// Register the lag of `view` (if any) and of `workers` (if any) in `registry`.
    pub(super) fn register(
        registry: &mut Registry,
        view: Option<TaskView>,
        workers: Vec<Backlog>,
    ) -> Self {
        let view = view.map(|view| {
            let gauge = LagGauge::default();
            registry.register(
                "agentlog_view_lag_records",
                "Records in the events topic not yet applied by the task view (measured by a scrape, at most once a second)",
                gauge.clone(),
            );
            (view, gauge)
        });
        let worker_lag = Family::<TopicLabels, LagGauge>::default();
        if !workers.is_empty() {
            registry.register(
                "agentlog_worker_queue_lag_records",
                "Records on the commands topic's partitions a worker owns that its loop has not read yet, by topic (measured by a scrape, at most once a second)",
                worker_lag.clone(),
            );
        }
        Self {
            view,
            workers,
            worker_lag,
            measured: tokio::sync::Mutex::new(None),
        }
    }

    /// Measure every lag, unless another scrape is measuring right now or did a moment ago:
    /// its figures serve this one. A lag that cannot be measured keeps its last figure.
    pub(super) async fn measure(&self) {
        let Ok(mut measured) = self.measured.try_lock() else {
            return;
        };
        if measured.is_some_and(|at| at.elapsed() < MEASURE_EVERY) {
            return;
        }
        *measured = Some(Instant::now());
        if let Some((view, gauge)) = &self.view {
            match view.lag().await {
                Ok(lag) => {
                    gauge.set(lag);
                }
                Err(e) => tracing::debug!(error = %e.report(), "cannot measure the view's lag"),
            }
        }
        // Workers of one topic in one process add up (each reads the partitions it owns).
        let mut by_topic: BTreeMap<String, Option<u64>> = BTreeMap::new();
        for backlog in &self.workers {
            let sum = by_topic
                .entry(backlog.topic().to_string())
                .or_insert(Some(0));
            match backlog.records().await {
                Ok(records) => *sum = sum.map(|s| s + records),
                Err(e) => {
                    tracing::debug!(error = %e.report(), topic = %backlog.topic(), "cannot measure a worker's queue lag");
                    *sum = None;
                }
            }
        }
        for (topic, records) in by_topic {
            if let Some(records) = records {
                self.worker_lag
                    .get_or_create(&TopicLabels { topic })
                    .set(records);
            }
        }
    }
}
