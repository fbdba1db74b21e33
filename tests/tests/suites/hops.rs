//! The hop guard across two agents on one log: A's handler calls B, B's calls A; the second
//! arrival at A is refused (nothing written), and both tasks fail saying why.

use agentlog::log::Log;
use agentlog::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
use agentlog::{AgentTopics, Bridge, Caller, ErrorKind};
use agentlog_integration::bridge_suite::{config, request, task};
use agentlog_integration::streamer::{partition_records, status_text};
use agentlog_wire::a2a::{SendMessageRequest, SendMessageResponse};
use agentlog_wire::{Record, RecordBody, TaskState};

/// Every record on `agent`'s events topic, in log order per partition.
async fn all_records(log: &Log, agent: &str) -> Vec<Record> {
    let topic = AgentTopics::of(agent).events;
    let partitions = log.partitions(&topic).await.expect("partitions");
    let mut out = Vec::new();
    for partition in 0..partitions {
        out.extend(partition_records(log, &topic, partition).await);
    }
    out
}

/// A worker for its agent whose handler calls `next` (blocking) with its task's path, and
/// fails its own task with what came back unless the call completed.
async fn calling_worker(log: &Log, agent: &str, next: Bridge) -> Worker {
    Worker::start(
        log.clone(),
        WorkerConfig::new(agent),
        handler_fn(move |ctx: TaskContext| {
            let next = next.clone();
            async move {
                let mut call: SendMessageRequest =
                    request(&format!("{}-call", ctx.task_id()), &ctx.text(), false);
                ctx.stamp(&mut call);
                let callee = next.config().id.clone();
                match next.send_message(ctx.caller(), call).await {
                    Ok(SendMessageResponse::Task(t)) if t.status.state == TaskState::Completed => {
                        ctx.complete(Some("the call completed")).await?;
                    }
                    Ok(SendMessageResponse::Task(t)) => {
                        let why = format!(
                            "calling {callee}: its task ended {}: {}",
                            t.status.state,
                            status_text(&t)
                        );
                        ctx.fail(&why).await?;
                    }
                    Ok(SendMessageResponse::Message(_)) => ctx.fail("unexpected message").await?,
                    Err(error) => {
                        assert_eq!(error.kind(), ErrorKind::LoopDetected);
                        ctx.fail(&format!(
                            "calling {callee} was refused: {}",
                            error.message()
                        ))
                        .await?;
                    }
                }
                Ok(())
            }
        }),
    )
    .await
    .expect("worker")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_b_calls_a_is_refused_and_both_tasks_fail_saying_why() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let a = Bridge::open(log.clone(), config("a"))
        .await
        .expect("bridge a");
    let b = Bridge::open(log.clone(), config("b"))
        .await
        .expect("bridge b");
    assert_eq!((a.config().id.as_str(), b.config().id.as_str()), ("a", "b"));
    let _worker_a = calling_worker(&log, "a", b.clone()).await;
    let _worker_b = calling_worker(&log, "b", a.clone()).await;

    let c = Caller::principal("alice");
    let first = task(
        a.send_message(&c, request("m-1", "ping", false))
            .await
            .expect("send"),
    );
    assert_eq!(first.status.state, TaskState::Failed, "{first:?}");
    let why_a = status_text(&first);
    assert!(why_a.contains("calling b: its task ended"), "{why_a}");
    assert!(why_a.contains("a → b → a"), "{why_a}");

    let records_a = all_records(&log, "a").await;
    let records_b = all_records(&log, "b").await;
    // One command at A (the client's): the second arrival wrote nothing. One at B.
    let commands = |records: &[Record]| {
        records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::Command { .. }))
            .cloned()
            .collect::<Vec<_>>()
    };
    let (commands_a, commands_b) = (commands(&records_a), commands(&records_b));
    assert_eq!(commands_a.len(), 1, "{records_a:?}");
    assert_eq!(commands_b.len(), 1, "{records_b:?}");
    assert_eq!(commands_a[0].header.bridge_hops, ["a"]);
    assert_eq!(commands_a[0].header.hops, 1);
    assert_eq!(commands_b[0].header.bridge_hops, ["a", "b"]);
    assert_eq!(commands_b[0].header.hops, 2);
    // No storm: each task is a command, a claim, its terminal (a renewal or two at most).
    for records in [&records_a, &records_b] {
        assert!(records.len() <= 6, "{records:?}");
        let terminals = records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::Terminal { .. }))
            .count();
        assert_eq!(terminals, 1, "{records:?}");
    }

    // B's task failed too, saying why.
    let b_task_id = &commands_b[0].header.task_id;
    let second = b
        .get_task(&c, agentlog_integration::bridge_suite::get(b_task_id))
        .await
        .expect("get");
    assert_eq!(second.status.state, TaskState::Failed);
    let why_b = status_text(&second);
    assert!(why_b.contains("calling a was refused"), "{why_b}");
    assert!(why_b.contains("a → b → a"), "{why_b}");
    println!("a's task: {why_a}\nb's task: {why_b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_most_hops_is_refused_and_writes_nothing() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let mut short = config("short");
    short.max_hops = 2;
    short.id = "edge-1".into();
    let bridge = Bridge::open(log.clone(), short).await.expect("bridge");
    let c = Caller::principal("alice");
    let mut call = request("m-1", "hi", true);
    agentlog::hops::stamp(&mut call.message, &["x".to_owned(), "y".to_owned()]);
    let refused = bridge.send_message(&c, call).await.expect_err("refused");
    assert_eq!(refused.kind(), ErrorKind::LoopDetected);
    assert!(
        refused.message().contains("x → y → edge-1"),
        "{}",
        refused.message()
    );
    let mut call = request("m-2", "hi", true);
    agentlog::hops::stamp(&mut call.message, &["edge-1".to_owned()]);
    assert_eq!(
        bridge
            .send_message(&c, call)
            .await
            .expect_err("loop")
            .kind(),
        ErrorKind::LoopDetected
    );
    assert!(all_records(&log, "short").await.is_empty());
    // One hop before this bridge is within the limit: the path is continued.
    let mut call = request("m-3", "hi", true);
    agentlog::hops::stamp(&mut call.message, &["x".to_owned()]);
    task(bridge.send_message(&c, call).await.expect("accepted"));
    let records = all_records(&log, "short").await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].header.bridge_hops, ["x", "edge-1"]);
}
