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

#[tokio::test]
async fn the_backlog_counts_what_the_loop_has_not_read_until_it_reads_it() {
    // Four copies fresh enough to be looked at again for `requeue_after` fill the four slots
    // of one handler; behind them, copies of tasks that ran and expired, dropped at once
    // once a slot frees. The first poll takes 64 of the 100; the loop then waits for a slot.
    let now = crate::retention::now_ms();
    let copies = (0..100)
        .map(|i| match i {
            0..4 => queued(&format!("pending-{i}"), now, 0),
            _ => queued(&format!("expired-{i}"), now - 2_000, 1_000),
        })
        .collect();
    let h = start_worker(bridge_behind(copies).await, |config| {
        config.concurrency = 1;
        config.requeue_after = Duration::from_secs(3);
    })
    .await;
    let backlog = h.worker.backlog();
    assert_eq!(backlog.topic(), &h.bridge.config().topics.commands);
    let reaches = |wanted: u64| {
        let backlog = backlog.clone();
        tokio::time::timeout(PATIENCE, async move {
            let mut seen = Vec::new();
            loop {
                let records = backlog.records().await.unwrap();
                if seen.last() != Some(&records) {
                    seen.push(records);
                }
                if records == wanted {
                    return seen;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    // Nothing read yet counts nothing (the partition counts from its first read), then the 36
    // records the loop has not reached, until the copies in the slots give up and it reads on.
    let seen = reaches(36).await.expect("the loop behind by 36");
    assert!(seen.iter().all(|n| *n == 0 || *n == 36), "{seen:?}");
    let seen = reaches(0).await.expect("the loop read everything");
    assert_eq!(seen, [36, 0]);
    h.shutdown().await;
}

#[tokio::test]
async fn a_turn_whose_copy_the_loop_has_not_reached_is_not_put_back() {
    // Four copies the loop looks at again until four seconds from now fill the slots of one
    // handler; behind them 61 copies of expired tasks, then the copy of a real task: the
    // first poll (64) stops short of it. When the slots free the real task has waited longer
    // than `requeue_after` and the sweep that follows finds it still unclaimed, its copy
    // unread.
    let later = crate::retention::now_ms() + 1_000;
    let copies = (0..65)
        .map(|i| match i {
            0..4 => queued(&format!("pending-{i}"), later, 0),
            _ => queued(&format!("expired-{i}"), later - 3_000, 1_000),
        })
        .collect();
    let (log, bridge) = bridge_behind(copies).await;
    let id = send(&bridge, user("behind the others"), true).await.id;
    let h = start_worker((log, bridge), |config| {
        config.concurrency = 1;
        config.requeue_after = Duration::from_secs(3);
    })
    .await;
    h.wait_for_state(&id, TaskState::Completed).await;
    // Put back, it would have a second copy on the queue.
    let commands = &h.bridge.config().topics.commands;
    assert_eq!(h.log.end_offsets(commands).await.unwrap(), [66]);
    h.shutdown().await;
}
