//! [`MetricsLayer`] and its [`LogMetrics`]: counters and latencies per log operation.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::LogOp;
use super::intercept::{Call, Intercepted, Interceptor, Outcome};
use crate::error::{ErrorKind, Result};
use crate::log::raw::{Layer, LogBackend};

/// How many latency buckets have an upper bound; one more holds the slower calls.
const BOUNDED_BUCKETS: usize = 22;
/// The first bucket's upper bound; each next one doubles it (10 µs .. ~21 s).
const FIRST_BOUND_NANOS: u64 = 10_000;

/// Counts every operation through the layer into a [`LogMetrics`]: calls by outcome (success
/// or the error's [`ErrorKind`]), records and payload bytes appended and read, and how long
/// the calls took. Group members from `join_group` are counted too (`poll`, `commit`,
/// `leave`).
///
/// Counting is a few relaxed atomic additions per call: no lock, no allocation.
#[derive(Debug, Clone, Default)]
pub struct MetricsLayer {
    metrics: LogMetrics,
}

impl MetricsLayer {
    /// A layer counting into `metrics` (clone the handle first to read it later).
    pub fn new(metrics: LogMetrics) -> Self {
        Self { metrics }
    }

    /// The handle this layer counts into.
    pub fn metrics(&self) -> &LogMetrics {
        &self.metrics
    }
}

impl Layer for MetricsLayer {
    fn layer(&self, inner: Arc<dyn LogBackend>) -> Arc<dyn LogBackend> {
        Arc::new(Intercepted::new(inner, self.clone()))
    }
}

impl Interceptor for MetricsLayer {
    /// Time `next` and count it: on success, the records and bytes an append carried or
    /// a read or poll returned.
    async fn around<T, F>(&self, call: &Call<'_>, next: F) -> Result<T>
    where
        T: Outcome,
        F: Future<Output = Result<T>> + Send,
    {
        let started = Instant::now();
        let result = next.await;
        let outcome = match &result {
            Ok(value) => Ok(call.carries().or_else(|| value.moved()).unwrap_or((0, 0))),
            Err(error) => Err(error.kind()),
        };
        self.metrics.observe(call.op(), started.elapsed(), outcome);
        result
    }
}

/// The counters a [`MetricsLayer`] fills, per [`LogOp`]; cheap to clone (clones share the
/// counters) and read at any time, e.g. by the HTTP router's `/metrics`.
///
/// Counters only grow. Two handles are equal when they share their counters.
#[derive(Clone, Default)]
pub struct LogMetrics {
    inner: Arc<Counters>,
}

struct Counters {
    ops: [OpCounters; LogOp::ALL.len()],
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            ops: std::array::from_fn(|_| OpCounters::default()),
        }
    }
}

#[derive(Default)]
struct OpCounters {
    ok: AtomicU64,
    errors: [AtomicU64; ErrorKind::ALL.len()],
    records: AtomicU64,
    bytes: AtomicU64,
    /// Calls per latency bucket (not cumulative); the last one has no upper bound.
    buckets: [AtomicU64; BOUNDED_BUCKETS + 1],
    /// Total time of every call, in nanoseconds (overflows after ~584 years of calls).
    nanos: AtomicU64,
}

/// The latency histogram of one operation, read from a [`LogMetrics`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencySnapshot {
    /// Each bucket's upper bound (inclusive) and how many calls fell in it, not cumulative:
    /// a call is in the first bucket whose bound is at least its duration. The last bucket
    /// has no bound (`None`).
    pub buckets: Vec<(Option<Duration>, u64)>,
    /// How many calls were timed.
    pub count: u64,
    /// Their total duration.
    pub sum: Duration,
}

impl LogMetrics {
    /// Fresh counters, all zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn op(&self, op: LogOp) -> &OpCounters {
        &self.inner.ops[op.index()]
    }

    /// Calls of `op` that returned, successes and errors.
    pub fn calls(&self, op: LogOp) -> u64 {
        let counters = self.op(op);
        let errors: u64 = counters
            .errors
            .iter()
            .map(|e| e.load(Ordering::Relaxed))
            .sum();
        counters.ok.load(Ordering::Relaxed) + errors
    }

    /// Calls of `op` that succeeded.
    pub fn successes(&self, op: LogOp) -> u64 {
        self.op(op).ok.load(Ordering::Relaxed)
    }

    /// Calls of `op` that failed with an error of `kind`.
    pub fn errors(&self, op: LogOp, kind: ErrorKind) -> u64 {
        let counters = self.op(op);
        kind_index(kind).map_or(0, |i| counters.errors[i].load(Ordering::Relaxed))
    }

    /// Records moved by successful calls of `op`: appended (`append`, `append_all`) or
    /// returned (`read`, `read_at`, `poll`); 0 for the other operations.
    pub fn records(&self, op: LogOp) -> u64 {
        self.op(op).records.load(Ordering::Relaxed)
    }

    /// Payload bytes of the records counted by [`records`](Self::records).
    pub fn bytes(&self, op: LogOp) -> u64 {
        self.op(op).bytes.load(Ordering::Relaxed)
    }

    /// The latency histogram of `op` (buckets 10 µs, 20 µs, ... doubling to ~21 s, then
    /// unbounded). A `poll`'s duration includes its wait for records.
    pub fn latency(&self, op: LogOp) -> LatencySnapshot {
        let counters = self.op(op);
        let buckets: Vec<_> = counters
            .buckets
            .iter()
            .enumerate()
            .map(|(i, count)| (bucket_bound(i), count.load(Ordering::Relaxed)))
            .collect();
        LatencySnapshot {
            count: buckets.iter().map(|(_, n)| n).sum(),
            sum: Duration::from_nanos(counters.nanos.load(Ordering::Relaxed)),
            buckets,
        }
    }

    /// Count one call of `op` that took `elapsed` and ended with `outcome`: on success, the
    /// records and bytes it moved.
    fn observe(&self, op: LogOp, elapsed: Duration, outcome: Result<(u64, u64), ErrorKind>) {
        let counters = self.op(op);
        match outcome {
            Ok((records, bytes)) => {
                counters.ok.fetch_add(1, Ordering::Relaxed);
                if records > 0 {
                    counters.records.fetch_add(records, Ordering::Relaxed);
                    counters.bytes.fetch_add(bytes, Ordering::Relaxed);
                }
            }
            Err(kind) => {
                if let Some(i) = kind_index(kind) {
                    counters.errors[i].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        counters.buckets[bucket_of(nanos)].fetch_add(1, Ordering::Relaxed);
        counters.nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

impl PartialEq for LogMetrics {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for LogMetrics {}

impl fmt::Debug for LogMetrics {
    /// The calls of every operation that had any.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for op in LogOp::ALL {
            let calls = self.calls(op);
            if calls > 0 {
                map.entry(&op.as_str(), &calls);
            }
        }
        map.finish()
    }
}

fn kind_index(kind: ErrorKind) -> Option<usize> {
    ErrorKind::ALL.iter().position(|k| *k == kind)
}

/// The bucket of a call that took `nanos`.
fn bucket_of(nanos: u64) -> usize {
    (0..BOUNDED_BUCKETS)
        .find(|&i| nanos <= FIRST_BOUND_NANOS << i)
        .unwrap_or(BOUNDED_BUCKETS)
}

/// The upper bound of bucket `i`, `None` for the last one.
fn bucket_bound(i: usize) -> Option<Duration> {
    (i < BOUNDED_BUCKETS).then(|| Duration::from_nanos(FIRST_BOUND_NANOS << i))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::log::embedded::EmbeddedLog;
    use crate::log::{AppendBatch, Log, TopicRef};

    fn payload(text: &'static str) -> Bytes {
        Bytes::from_static(text.as_bytes())
    }

    #[test]
    fn a_call_lands_in_the_first_bucket_whose_bound_holds_it() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(10_000), 0);
        assert_eq!(bucket_of(10_001), 1);
        assert_eq!(bucket_of(20_000), 1);
        assert_eq!(bucket_of(FIRST_BOUND_NANOS << (BOUNDED_BUCKETS - 1)), 21);
        assert_eq!(bucket_of(u64::MAX), BOUNDED_BUCKETS);
        assert_eq!(bucket_bound(0), Some(Duration::from_micros(10)));
        assert_eq!(bucket_bound(1), Some(Duration::from_micros(20)));
        assert_eq!(bucket_bound(BOUNDED_BUCKETS), None);
        // The bounds go past 20 s: nothing but a stuck call lands in the last bucket.
        assert!(bucket_bound(BOUNDED_BUCKETS - 1).unwrap() > Duration::from_secs(20));
    }

    #[test]
    fn observations_are_counted_by_outcome_and_timed() {
        let metrics = LogMetrics::new();
        metrics.observe(LogOp::Read, Duration::from_micros(5), Ok((3, 30)));
        metrics.observe(LogOp::Read, Duration::from_millis(3), Ok((0, 0)));
        metrics.observe(
            LogOp::Read,
            Duration::from_secs(100),
            Err(ErrorKind::Timeout),
        );
        assert_eq!(metrics.calls(LogOp::Read), 3);
        assert_eq!(metrics.successes(LogOp::Read), 2);
        assert_eq!(metrics.errors(LogOp::Read, ErrorKind::Timeout), 1);
        assert_eq!(metrics.errors(LogOp::Read, ErrorKind::Unavailable), 0);
        assert_eq!(
            (metrics.records(LogOp::Read), metrics.bytes(LogOp::Read)),
            (3, 30)
        );
        assert_eq!(metrics.calls(LogOp::Append), 0);
        let latency = metrics.latency(LogOp::Read);
        assert_eq!(latency.count, 3);
        assert_eq!(latency.buckets.len(), BOUNDED_BUCKETS + 1);
        assert_eq!(latency.buckets[0], (Some(Duration::from_micros(10)), 1));
        // 3 ms: in the bucket bounded by 10 µs × 2^9 = 5.12 ms.
        assert_eq!(latency.buckets[9].1, 1);
        assert_eq!(latency.buckets[BOUNDED_BUCKETS], (None, 1));
        assert_eq!(
            latency.sum,
            Duration::from_micros(5) + Duration::from_millis(3) + Duration::from_secs(100)
        );
    }

    #[test]
    fn clones_share_their_counters() {
        let metrics = LogMetrics::new();
        let clone = metrics.clone();
        clone.observe(LogOp::Close, Duration::ZERO, Ok((0, 0)));
        assert_eq!(metrics.calls(LogOp::Close), 1);
        assert_eq!(metrics, clone);
        assert_ne!(metrics, LogMetrics::new());
        assert_eq!(format!("{metrics:?}"), r#"{"close": 1}"#);
    }

    #[tokio::test]
    async fn the_layer_counts_calls_records_bytes_and_errors() {
        let metrics = LogMetrics::new();
        let log = Log::new(EmbeddedLog::in_memory()).layer(MetricsLayer::new(metrics.clone()));
        let topic = TopicRef::new("s", "t");
        let other = TopicRef::new("s", "u");
        log.ensure_topic(&topic, 1).await.unwrap();
        log.ensure_topic(&other, 1).await.unwrap();
        log.append(&topic, b"k", vec![payload("ab"), payload("cde")])
            .await
            .unwrap();
        log.append_all(vec![
            AppendBatch {
                topic: &topic,
                key: b"k",
                payloads: vec![payload("f")],
                applied_by: None,
            },
            AppendBatch {
                topic: &other,
                key: b"k",
                payloads: vec![payload("gh")],
                applied_by: None,
            },
        ])
        .await
        .unwrap();
        assert_eq!(log.read(&topic, 0, 0, 10).await.unwrap().len(), 3);
        assert_eq!(log.read_at(&topic, 0, &[0, 2]).await.unwrap().len(), 2);
        let missing = TopicRef::new("s", "missing");
        let err = log.append(&missing, b"k", vec![payload("x")]).await;
        assert_eq!(err.unwrap_err().kind(), ErrorKind::InvalidParams);
        log.end_offsets(&topic).await.unwrap();
        log.partitions(&topic).await.unwrap();
        log.watch_end(&topic, 0).await.unwrap();

        let mut member = log.join_group(&topic, "g").await.unwrap();
        let delivery = member.poll(10, Duration::from_secs(5)).await.unwrap();
        assert_eq!(delivery.map(|d| d.records.len()), Some(3));
        member.commit(0, 3).await.unwrap();
        member.leave().await.unwrap();
        log.close().await.unwrap();

        let m = &metrics;
        assert_eq!(m.calls(LogOp::EnsureTopic), 2);
        assert_eq!(m.calls(LogOp::Append), 2);
        assert_eq!(m.successes(LogOp::Append), 1);
        assert_eq!(m.errors(LogOp::Append, ErrorKind::InvalidParams), 1);
        // The failed append moved nothing.
        assert_eq!((m.records(LogOp::Append), m.bytes(LogOp::Append)), (2, 5));
        assert_eq!(
            (m.records(LogOp::AppendAll), m.bytes(LogOp::AppendAll)),
            (2, 3)
        );
        assert_eq!((m.records(LogOp::Read), m.bytes(LogOp::Read)), (3, 6));
        assert_eq!((m.records(LogOp::ReadAt), m.bytes(LogOp::ReadAt)), (2, 3));
        assert_eq!((m.records(LogOp::Poll), m.bytes(LogOp::Poll)), (3, 6));
        for op in [
            LogOp::AppendAll,
            LogOp::Read,
            LogOp::ReadAt,
            LogOp::EndOffsets,
            LogOp::Partitions,
            LogOp::WatchEnd,
            LogOp::JoinGroup,
            LogOp::Poll,
            LogOp::Commit,
            LogOp::Leave,
            LogOp::Close,
        ] {
            assert_eq!(m.calls(op), 1, "{op}");
            assert_eq!(m.latency(op).count, 1, "{op}");
        }
        assert_eq!(m.latency(LogOp::Append).count, 2);
    }
}
