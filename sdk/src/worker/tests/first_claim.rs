//! A worker sharing its bridge's view claims a new task's first turn in the command's own
//! append (`reserve.rs`, `pickup.rs`), and a claim whose copy never landed still gets its
//! turn run.

use super::*;
use crate::log::layers::{FaultLayer, Faults, LogMetrics, LogOp, MetricsLayer};

/// A bridge and a worker sharing its view over `log`, the worker adjusted by `adjust`.
async fn sharing(
    log: &Log,
    handler: impl Handler,
    adjust: impl FnOnce(&mut WorkerConfig),
) -> Harness {
    let bridge = Bridge::open(log.clone(), BridgeConfig::new("agent"))
        .await
        .unwrap();
    let mut config = WorkerConfig::new("agent");
    config.view = Some(bridge.view().clone());
    config.shutdown_timeout = PATIENCE * 2;
    adjust(&mut config);
    let worker = Worker::start(log.clone(), config, handler).await.unwrap();
    Harness {
        log: log.clone(),
        bridge,
        worker,
    }
}

/// A blocking send as a transport makes it: its params as received, which the view applies
/// without reading the command back.
async fn send_as_received(bridge: &Bridge, message: Message) -> Task {
    let request = request(message, false);
    let raw = serde_json::to_string(&request).unwrap();
    let response = bridge
        .send_message_raw(&Caller::anonymous(), request, Some(&raw))
        .await
        .unwrap();
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(m) => panic!("expected a task, got {m:?}"),
    }
}

fn claims(records: &[Record]) -> Vec<(u32, u64)> {
    records
        .iter()
        .filter_map(|r| match r.body {
            RecordBody::Claim { lease_until_ms, .. } => Some((r.header.attempt, lease_until_ms)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_new_tasks_call_brings_its_first_claim_in_the_commands_append() {
    let metrics = LogMetrics::new();
    let log = crate::log::open("memory://")
        .await
        .unwrap()
        .layer(MetricsLayer::new(metrics.clone()));
    let h = sharing(&log, Completes, |_| {}).await;
    let source = h.worker.source().to_owned();

    // Blocking: the claim rides in the command's append; the worker appends its end only,
    // and the call answers from the view's events, reading nothing back.
    let appends = metrics.calls(LogOp::Append);
    let reads = metrics.calls(LogOp::ReadAt);
    let task = send_as_received(&h.bridge, user("hi")).await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(metrics.calls(LogOp::Append) - appends, 1, "the end alone");
    assert_eq!(metrics.calls(LogOp::ReadAt) - reads, 0, "nothing read back");
    let events = h.events().await;
    let records = &events[&task.id];
    assert!(matches!(records[0].body, RecordBody::Command { .. }));
    assert!(
        matches!(&records[1].body, RecordBody::Claim { turn, .. } if *turn == task.history[0].message_id)
    );
    assert_eq!(records[1].header.source, source);
    assert_eq!(claims(records).len(), 1, "one claim: {records:?}");
    assert!(records[1..].iter().all(|r| r.header.attempt == 1));

    // returnImmediately: the claim rides along too, and the answer is still the task as
    // its command left it.
    let appends = metrics.calls(LogOp::Append);
    let submitted = send(&h.bridge, user("later"), true).await;
    assert_eq!(submitted.status.state, TaskState::Submitted);
    h.wait_for_state(&submitted.id, TaskState::Completed).await;
    assert_eq!(metrics.calls(LogOp::Append) - appends, 1, "the end alone");
    let events = h.events().await;
    let records = &events[&submitted.id];
    assert!(matches!(records[1].body, RecordBody::Claim { .. }));
    assert_eq!(claims(records).len(), 1, "one claim: {records:?}");
    h.shutdown().await;
}

/// The claim in a traced command's append carries the command's trace context, so what it
/// tells (a push sender's `working`) is in the caller's trace.
#[tokio::test]
async fn a_first_claim_carries_the_commands_trace_context() {
    use agentlog_wire::trace::TraceContext;
    let log = crate::log::open("memory://").await.unwrap();
    let h = sharing(&log, Completes, |_| {}).await;
    let context = TraceContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        Some("a=1"),
    )
    .unwrap();
    let traced =
        crate::bridge::trace::traced(Some(context.clone()), send(&h.bridge, user("hi"), false));
    let task = traced.await;
    assert_eq!(task.status.state, TaskState::Completed);
    let events = h.events().await;
    let records = &events[&task.id];
    let of = |r: &Record| TraceContext::from_content_type(&r.header.content_type);
    assert!(matches!(records[1].body, RecordBody::Claim { .. }));
    assert_eq!(of(&records[0]), Some(context.clone()));
    assert_eq!(of(&records[1]), Some(context.clone()));
    // What the turn writes carries the turn's own span, a child in the same trace.
    let end = records.last().unwrap();
    let turn = of(end).unwrap();
    assert_eq!(turn.trace_id(), context.trace_id());
    assert_ne!(turn.parent_id(), context.parent_id());
    h.shutdown().await;
}

#[tokio::test]
async fn a_first_claim_whose_copy_never_landed_runs_here() {
    let (faults, log) = faulty().await;
    let h = sharing(&log, Completes, |_| {}).await;
    let id = send_losing_its_copy(&h, &faults).await;
    h.wait_for_state(&id, TaskState::Completed).await;
    let events = h.events().await;
    assert_eq!(claims(&events[&id]).len(), 1, "the first claim ran it");
    h.shutdown().await;
}

#[tokio::test]
async fn a_crash_after_a_first_claim_whose_copy_never_landed_is_taken_over() {
    let (faults, log) = faulty().await;
    let quick = |config: &mut WorkerConfig| {
        config.lease = Duration::from_secs(1);
        config.requeue_after = Duration::from_millis(200);
    };
    // The first attempt hangs; the process dies under it.
    let h = sharing(&log, HangsFirst, quick).await;
    let id = send_losing_its_copy(&h, &faults).await;
    wait_for_claim(&h.bridge, &id).await;
    h.worker.abort();
    // Another worker finds the turn once the dead claim's lease is over: no copy brings it.
    let mut config = WorkerConfig::new("agent");
    quick(&mut config);
    let survivor = Worker::start(log.clone(), config, HangsFirst)
        .await
        .unwrap();
    let h = Harness {
        log,
        bridge: h.bridge,
        worker: survivor,
    };
    h.wait_for_state(&id, TaskState::Completed).await;
    let events = h.events().await;
    let attempts: Vec<u32> = claims(&events[&id]).iter().map(|c| c.0).collect();
    assert_eq!(attempts.first(), Some(&1));
    assert_eq!(attempts.last(), Some(&2), "taken over: {attempts:?}");
    h.shutdown().await;
}

/// A memory log under a fault layer, and its faults.
async fn faulty() -> (Faults, Log) {
    let faults = Faults::new();
    let log = crate::log::open("memory://")
        .await
        .unwrap()
        .layer(FaultLayer::new(faults.clone()));
    (faults, log)
}

/// A blocking send whose command and first claim land while its commands copy does not (the
/// call fails); the task's id.
async fn send_losing_its_copy(h: &Harness, faults: &Faults) -> String {
    faults.fail_batch(1);
    let message = user("its copy is lost");
    let failed = h
        .bridge
        .send_message(&Caller::anonymous(), request(message.clone(), false))
        .await;
    assert!(failed.is_err(), "the copy's append failed: {failed:?}");
    agentlog_wire::ids::task_id("", "", &message.message_id)
}

async fn wait_for_claim(bridge: &Bridge, id: &str) {
    let view = bridge.view();
    tokio::time::timeout(PATIENCE, async {
        while view
            .lookup_any(id)
            .and_then(|(info, _)| info.claim)
            .is_none()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
}

/// Completes every turn at once.
struct Completes;

#[async_trait::async_trait]
impl Handler for Completes {
    async fn handle(&self, task: TaskContext) -> std::result::Result<(), HandlerError> {
        task.complete(Some("done")).await?;
        Ok(())
    }
}

/// Hangs on a turn's first attempt (until cancelled); completes any later one.
struct HangsFirst;

#[async_trait::async_trait]
impl Handler for HangsFirst {
    async fn handle(&self, task: TaskContext) -> std::result::Result<(), HandlerError> {
        if task.attempt() == 1 {
            task.cancellation().cancelled().await;
            return Ok(());
        }
        task.complete(Some("done")).await?;
        Ok(())
    }
}
