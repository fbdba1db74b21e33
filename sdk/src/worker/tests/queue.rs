//! The workers' queue when copies hold every slot: a copy past its task's retention whose task
//! the log no longer shows is dropped at once, and a first claim from this process's bridge
//! gets its supervisor while copies wait. Each test queues its copies before the worker starts.

use super::*;

/// A bridge over a fresh in-memory log with one partition (the queue is read in append
/// order), `copies` on its queue, and no worker.
async fn bridge_behind(copies: Vec<Bytes>) -> (Log, Bridge) {
    let log = crate::log::open("memory://").await.unwrap();
    let mut config = BridgeConfig::new("agent");
    config.topics = AgentTopics::new("agentlog", "agent", 1);
    let bridge = Bridge::open(log.clone(), config).await.unwrap();
    let commands = &bridge.config().topics.commands;
    log.append(commands, b"copies", copies).await.unwrap();
    (log, bridge)
}

/// A copy of a command for a task no log shows, written at `timestamp_ms` for a task kept
/// `retention_ms` (0: forever).
fn queued(task_id: &str, timestamp_ms: u64, retention_ms: u64) -> Bytes {
    let body = RecordBody::Command {
        params: r#"{"message":{"messageId":"x","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#
            .into(),
        retention_ms,
    };
    let record = Record {
        header: RecordHeader {
            task_id: task_id.into(),
            message_id: format!("{task_id}-m"),
            timestamp_ms,
            ..RecordHeader::default()
        },
        body,
    };
    Bytes::from(record.encode().unwrap())
}

/// Start a worker for the bridge's agent that completes every task.
async fn start_worker(
    (log, bridge): (Log, Bridge),
    adjust: impl FnOnce(&mut WorkerConfig),
) -> Harness {
    let mut config = WorkerConfig::new("agent");
    config.topics = bridge.config().topics.clone();
    config.shutdown_timeout = PATIENCE;
    adjust(&mut config);
    let handler = handler_fn(|task: TaskContext| async move {
        task.complete(Some("done")).await?;
        Ok(())
    });
    let worker = Worker::start(log.clone(), config, handler).await.unwrap();
    Harness {
        log,
        bridge,
        worker,
    }
}

#[tokio::test]
async fn a_copy_past_its_tasks_retention_is_dropped_at_once() {
    // Copies of commands written two seconds ago for tasks kept one second, which the log no
    // longer shows (they ran and expired): as many as the worker supervises at once.
    let written = crate::retention::now_ms() - 2_000;
    let expired = (0..4)
        .map(|i| queued(&format!("expired-{i}"), written, 1_000))
        .collect();
    let (log, bridge) = bridge_behind(expired).await;
    let id = send(&bridge, user("after the expired"), true).await.id;

    // One handler, so four supervisors at once. Were the expired copies looked at again
    // for as long as a fresh one (`requeue_after`), the task would wait that long for a slot.
    let h = start_worker((log, bridge), |config| {
        config.concurrency = 1;
        config.requeue_after = PATIENCE * 2;
    })
    .await;
    h.wait_for_state(&id, TaskState::Completed).await;
    h.shutdown().await;
}

#[tokio::test]
async fn a_first_claim_gets_its_supervisor_while_copies_wait_for_a_slot() {
    // Copies written just now of commands the log does not show (yet): each is looked at
    // again for as long as `requeue_after`. Five fill the four slots of one handler and leave
    // the loop waiting for a slot.
    let now = crate::retention::now_ms();
    let pending = (0..5)
        .map(|i| queued(&format!("pending-{i}"), now, 0))
        .collect();
    let (log, bridge) = bridge_behind(pending).await;
    let view = bridge.view().clone();
    let h = start_worker((log, bridge), |config| {
        config.concurrency = 1;
        config.requeue_after = PATIENCE;
        // Shared: the bridge claims first turns for it in its own appends.
        config.view = Some(view);
    })
    .await;
    // Time for the loop to take the copies (were it slower, the send would come first and
    // the test would not tell).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let caller = Caller::anonymous();
    let blocking = h
        .bridge
        .send_message(&caller, request(user("local"), false));
    let Ok(Ok(SendMessageResponse::Task(task))) =
        tokio::time::timeout(PATIENCE / 2, blocking).await
    else {
        panic!("the first claim waited for a slot");
    };
    assert_eq!(task.status.state, TaskState::Completed);
    h.shutdown().await;
}
