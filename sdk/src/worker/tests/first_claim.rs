//! A worker sharing its bridge's view claims a new task's first turn in the command's own
//! append (`reserve.rs`, `pickup.rs`), which then needs no copy on the workers' queue: a
//! crash under such a claim is taken over by the sweep.

use super::*;
use crate::log::layers::{LogMetrics, LogOp, MetricsLayer};

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

    // The claim hands the turns over: neither command has a copy on the workers' queue.
    assert_eq!(queued(&h.log, &h.bridge.config().topics.commands).await, 0);
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
async fn a_copy_that_finds_its_first_claim_shown_but_not_landed_adopts_it_once_it_lands() {
    let log = crate::log::open("memory://").await.unwrap();
    let h = sharing(&log, Completes, |config| {
        config.lease = PATIENCE * 4;
        config.requeue_after = PATIENCE * 4;
    })
    .await;
    let view = h.bridge.view();
    let topics = h.bridge.config().topics.clone();
    let message = user("raced");
    let task_id = agentlog_wire::ids::task_id("", "", &message.message_id);
    let command = Record {
        header: RecordHeader {
            task_id: task_id.clone(),
            context_id: "ctx".into(),
            message_id: message.message_id.clone(),
            timestamp_ms: crate::retention::now_ms(),
            ..RecordHeader::default()
        },
        body: RecordBody::Command {
            params: serde_json::to_string(&request(message, false)).unwrap(),
            retention_ms: 0,
        },
    };
    let bytes = Bytes::from(command.encode().unwrap());
    let key = task_id.as_bytes();

    // The command and this worker's first claim in one append, both applied to the view.
    let reserved = view
        .reserve_first_turn(&command.header)
        .expect("a free slot");
    let (claim, claim_bytes) = {
        let (record, bytes) = reserved.claim();
        (record.clone(), bytes.clone())
    };
    let appended = log
        .append(&topics.events, key, vec![bytes.clone(), claim_bytes])
        .await
        .unwrap();
    let (partition, offset) = (appended.partition, appended.first_offset);
    view.apply_own_command(partition, offset, appended.place, &command, false);
    view.apply_own(partition, offset + 1, appended.place, &[claim]);

    // Its copy reaches the worker, whose supervisor finds the claim before it landed.
    log.append(&topics.commands, key, vec![bytes])
        .await
        .unwrap();
    tokio::time::timeout(PATIENCE, async {
        while view.watchers(&task_id) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("a supervisor watches the task");
    assert_eq!(
        view.lookup_any(&task_id).unwrap().0.state,
        TaskState::Working
    );

    // The bridge is done with its append: the turn runs under that claim, and no other.
    drop(reserved);
    h.wait_for_state(&task_id, TaskState::Completed).await;
    let events = h.events().await;
    assert_eq!(claims(&events[&task_id]).len(), 1, "the first claim ran it");
    h.shutdown().await;
}

/// A first claim written in its command's append leaves no copy on the workers' queue: should
/// its process die, the sweep of the worker that then owns the partition puts the turn back
/// once the claim's lease is over (not `requeue_after` later, which is for copies on their
/// way: here longer than the test's patience).
#[tokio::test]
async fn a_crash_after_a_first_claim_is_taken_over_once_its_lease_is_over() {
    let log = crate::log::open("memory://").await.unwrap();
    let quick = |config: &mut WorkerConfig| {
        config.lease = Duration::from_secs(1);
        config.requeue_after = PATIENCE * 4;
    };
    // The first attempt hangs; the process dies under it.
    let h = sharing(&log, HangsFirst, quick).await;
    let id = send(&h.bridge, user("its process dies"), true).await.id;
    wait_for_claim(&h.bridge, &id).await;
    h.worker.abort();
    let commands = h.bridge.config().topics.commands.clone();
    assert_eq!(queued(&log, &commands).await, 0, "no copy");
    // Another worker finds the turn once the dead claim's lease is over.
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
    assert_eq!(attempts, [1, 2], "taken over");
    assert_eq!(queued(&h.log, &commands).await, 1, "the sweep's copy");
    h.shutdown().await;
}

/// How many records `topic` holds over all its partitions.
async fn queued(log: &Log, topic: &crate::log::TopicRef) -> u64 {
    log.end_offsets(topic).await.unwrap().iter().sum()
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
