//! Tests of the retry layer over a faulty in-memory log, counted by the metrics layer.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::error::ErrorKind;
use crate::log::embedded::EmbeddedLog;
use crate::log::layers::{FaultLayer, Faults, LogMetrics, MetricsLayer};
use crate::log::{Log, TopicRef};

fn topic() -> TopicRef {
    TopicRef::new("s", "t")
}

/// Memory, then faults, then metrics (to count the attempts), then retries (fast).
async fn stack(policy: RetryLayer) -> (Log, Faults, LogMetrics) {
    let faults = Faults::new();
    let metrics = LogMetrics::new();
    let log = Log::new(EmbeddedLog::in_memory())
        .layer(FaultLayer::new(faults.clone()))
        .layer(MetricsLayer::new(metrics.clone()))
        .layer(policy);
    log.ensure_topic(&topic(), 1).await.unwrap();
    (log, faults, metrics)
}

fn fast() -> RetryLayer {
    RetryLayer::new().initial_delay(Duration::from_millis(1))
}

fn payload(i: u8) -> Vec<Bytes> {
    vec![Bytes::from(vec![i])]
}

#[test]
fn backoff_doubles_up_to_the_cap_for_the_attempts_after_the_first() {
    let policy = RetryLayer::new()
        .attempts(7)
        .initial_delay(Duration::from_millis(10))
        .max_delay(Duration::from_millis(50))
        .jitter(false);
    let delays: Vec<_> = policy.backoff().map(|d| d.as_millis()).collect();
    assert_eq!(delays, [10, 20, 40, 50, 50, 50]);
    let defaults: Vec<_> = RetryLayer::new()
        .jitter(false)
        .backoff()
        .map(|d| d.as_millis())
        .collect();
    assert_eq!(defaults, [10, 20, 40]);
    assert_eq!(RetryLayer::new().attempts(1).backoff().count(), 0);
    assert_eq!(RetryLayer::new().attempts(0).backoff().count(), 0);
}

#[test]
fn jitter_stays_between_half_and_all_of_each_delay() {
    let policy = RetryLayer::new().attempts(30);
    let nominal: Vec<_> = policy.jitter(false).backoff().collect();
    for _ in 0..20 {
        for (jittered, nominal) in policy.backoff().zip(&nominal) {
            assert!(
                jittered <= *nominal && jittered >= *nominal / 2,
                "{jittered:?}"
            );
        }
    }
    // Not every draw is the same (20 × 29 draws between 5 and 200 ms).
    let draws: std::collections::HashSet<_> = (0..20).flat_map(|_| policy.backoff()).collect();
    assert!(draws.len() > 10);
}

#[tokio::test]
async fn a_retryable_failure_is_retried_until_it_succeeds() {
    let (log, faults, metrics) = stack(fast()).await;
    faults.drop_connection(3);
    let appended = log.append(&topic(), b"k", payload(0)).await.unwrap();
    assert_eq!(appended.first_offset, 0);
    assert_eq!(metrics.calls(LogOp::Append), 4);
    assert_eq!(metrics.errors(LogOp::Append, ErrorKind::Unavailable), 3);
    assert_eq!(faults.counts().dropped, 3);
    // Nothing was stored twice: the failed attempts never reached the backend.
    assert_eq!(log.end_offsets(&topic()).await.unwrap(), [1]);
}

#[tokio::test]
async fn the_last_attempts_error_is_returned() {
    let (log, faults, metrics) = stack(fast().attempts(3)).await;
    faults.drop_connection(10);
    let err = log.read(&topic(), 0, 0, 10).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(metrics.calls(LogOp::Read), 3);
}

#[tokio::test]
async fn an_error_that_is_not_retryable_is_returned_at_once() {
    let (log, faults, metrics) = stack(fast()).await;
    faults.fail_append_with(1, ErrorKind::InvalidParams);
    let err = log.append(&topic(), b"k", payload(0)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert_eq!(metrics.calls(LogOp::Append), 1);
    // A missing topic is not retried either.
    let missing = TopicRef::new("s", "missing");
    let err = log.partitions(&missing).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert_eq!(metrics.calls(LogOp::Partitions), 1);
}

#[tokio::test]
async fn a_closed_log_is_not_retried() {
    let (log, _faults, metrics) = stack(fast()).await;
    log.close().await.unwrap();
    let err = log.append(&topic(), b"k", payload(0)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Internal);
    assert_eq!(metrics.calls(LogOp::Append), 1);
}

#[tokio::test]
async fn every_backend_operation_is_retried() {
    let (log, faults, metrics) = stack(fast().attempts(2)).await;
    let t = topic();
    let before = LogOp::ALL.map(|op| metrics.calls(op));
    let ops: [(LogOp, bool); 11] = [
        (LogOp::EnsureTopic, {
            faults.drop_connection(1);
            log.ensure_topic(&t, 1).await.is_ok()
        }),
        (LogOp::Partitions, {
            faults.drop_connection(1);
            log.partitions(&t).await.is_ok()
        }),
        (LogOp::Append, {
            faults.drop_connection(1);
            log.append(&t, b"k", payload(0)).await.is_ok()
        }),
        (LogOp::AppendTo, {
            faults.drop_connection(1);
            log.append_to(&t, 0, payload(2)).await.is_ok()
        }),
        (LogOp::AppendAll, {
            faults.drop_connection(1);
            let batch = AppendBatch {
                topic: &t,
                key: b"k",
                payloads: payload(1),
                applied_by: None,
            };
            log.append_all(vec![batch]).await.is_ok()
        }),
        (LogOp::Read, {
            faults.drop_connection(1);
            log.read(&t, 0, 0, 10).await.is_ok()
        }),
        (LogOp::ReadAt, {
            faults.drop_connection(1);
            log.read_at(&t, 0, &[0, 1]).await.is_ok()
        }),
        (LogOp::EndOffsets, {
            faults.drop_connection(1);
            log.end_offsets(&t).await.is_ok()
        }),
        (LogOp::EndOffset, {
            faults.drop_connection(1);
            log.end_offset(&t, 0).await.is_ok()
        }),
        (LogOp::WatchEnd, {
            faults.drop_connection(1);
            log.watch_end(&t, 0).await.is_ok()
        }),
        (LogOp::JoinGroup, {
            faults.drop_connection(1);
            log.join_group(&t, "g").await.is_ok()
        }),
    ];
    for (op, ok) in ops {
        assert!(ok, "{op}");
        assert_eq!(metrics.calls(op) - before[op.index()], 2, "{op}");
        assert_eq!(metrics.errors(op, ErrorKind::Unavailable), 1, "{op}");
    }
    assert_eq!(log.read_at(&t, 0, &[0, 1]).await.unwrap().len(), 2);
}

#[tokio::test]
async fn close_is_not_retried() {
    let (log, faults, metrics) = stack(fast()).await;
    faults.drop_connection(1);
    let err = log.close().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(metrics.calls(LogOp::Close), 1);
}

#[tokio::test]
async fn polls_and_commits_are_retried() {
    let (log, faults, metrics) = stack(fast()).await;
    log.append(&topic(), b"k", payload(7)).await.unwrap();
    let mut member = log.join_group(&topic(), "g").await.unwrap();
    faults.fail_poll_with(ErrorKind::Timeout);
    faults.fail_poll();
    let delivery = member
        .poll(10, Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(delivery.records.len(), 1);
    assert_eq!(metrics.calls(LogOp::Poll), 3);
    faults.fail_commit();
    member.commit(0, 1).await.unwrap();
    assert_eq!(metrics.calls(LogOp::Commit), 2);
    assert_eq!(faults.counts().poll, 2);
    assert_eq!(faults.counts().commit, 1);
    // A commit that cannot succeed is not retried.
    faults.fail_commit_with(ErrorKind::InvalidParams);
    let err = member.commit(0, 1).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert_eq!(metrics.calls(LogOp::Commit), 3);
}

#[tokio::test]
async fn a_retried_poll_keeps_the_callers_deadline() {
    // Delays far longer than the poll's timeout: no retry fits, the first error returns.
    let policy = RetryLayer::new()
        .initial_delay(Duration::from_secs(30))
        .max_delay(Duration::from_secs(30));
    let (log, faults, metrics) = stack(policy).await;
    let mut member = log.join_group(&topic(), "g").await.unwrap();
    faults.fail_poll();
    let polled = tokio::time::timeout(
        Duration::from_secs(10),
        member.poll(10, Duration::from_millis(50)),
    )
    .await
    .unwrap();
    assert_eq!(polled.unwrap_err().kind(), ErrorKind::Unavailable);
    assert_eq!(metrics.calls(LogOp::Poll), 1);
}
