//! Signed records across a bridge and a worker: with a trust configured, forged records
//! (unsigned, signed by an unknown key, or by a key not allowed their kind) change nothing,
//! a replay after a restart turns them away again, and the legit flow completes; without
//! one, nothing changes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentlog::log::Log;
use agentlog::security::{RecordSigner, RecordVerifier, Rejection, Role, SigningKey, Trust};
use agentlog::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
use agentlog::{AgentTopics, Bridge, Caller};
use agentlog_integration::bridge_suite::{SOON, config, get, request, task, wait_for};
use agentlog_integration::streamer::{status_text, task_records};
use agentlog_wire::a2a::Task;
use agentlog_wire::{Record, RecordBody, RecordHeader, TaskState};
use bytes::Bytes;
use tokio::sync::Notify;

const BRIDGE: u8 = 1;
const WORKER: u8 = 2;
const STRANGER: u8 = 9;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed([seed; 32])
}

fn trust() -> RecordVerifier {
    RecordVerifier::new(
        Trust::new()
            .with_role(key(BRIDGE).verifying_key(), Role::Bridge)
            .with_role(key(WORKER).verifying_key(), Role::Worker),
    )
}

async fn signed_bridge(log: &Log, agent: &str, verifier: &RecordVerifier) -> Bridge {
    let mut config = config(agent);
    config.signer = Some(RecordSigner::new(key(BRIDGE)));
    config.trust = Some(verifier.clone());
    config.checkpoint_every = None;
    Bridge::open(log.clone(), config).await.expect("bridge")
}

fn worker_config(agent: &str, verifier: Option<&RecordVerifier>) -> WorkerConfig {
    let mut config = WorkerConfig::new(agent);
    if let Some(verifier) = verifier {
        config.signer = Some(RecordSigner::new(key(WORKER)));
        config.trust = Some(verifier.clone());
    }
    config
}

/// A handler that says it works, waits for `go`, then completes with "done"; counts runs.
fn gated(go: Arc<Notify>, runs: Arc<AtomicUsize>) -> impl agentlog::worker::Handler {
    handler_fn(move |ctx: TaskContext| {
        let go = go.clone();
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            ctx.working(Some("waiting")).await?;
            go.notified().await;
            ctx.complete(Some("done")).await?;
            Ok(())
        }
    })
}

/// A worker's terminal for `task` under the claim of worker `source` (attempt 1), as the fold
/// would take it from that worker, signed by `seed` (`None`: unsigned).
fn forged_terminal(task: &Task, source: &str, id: &str, seed: Option<u8>) -> Record {
    let mut record = Record {
        header: RecordHeader {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            message_id: id.into(),
            source: source.into(),
            principal: "alice".into(),
            attempt: 1,
            timestamp_ms: now_ms(),
            content_type: "application/json".into(),
            ..RecordHeader::default()
        },
        body: RecordBody::status(
            TaskState::Failed,
            r#"{"messageId":"forged","role":"ROLE_AGENT","parts":[{"text":"forged"}]}"#.into(),
        ),
    };
    if let Some(seed) = seed {
        RecordSigner::new(key(seed))
            .sign(&mut record)
            .expect("sign");
    }
    record
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

async fn append(log: &Log, topic: &agentlog::log::TopicRef, record: &Record) {
    log.append(
        topic,
        record.header.task_id.as_bytes(),
        vec![Bytes::from(record.encode().expect("encode"))],
    )
    .await
    .expect("append");
}

fn count(verifier: &RecordVerifier, reason: Rejection) -> u64 {
    verifier
        .rejected()
        .iter()
        .find(|(r, _)| *r == reason)
        .map(|(_, n)| *n)
        .unwrap_or(0)
}

/// Wait (bounded) until `verifier` has turned away at least `n` records in all.
async fn wait_rejected(verifier: &RecordVerifier, n: u64) {
    let deadline = tokio::time::Instant::now() + SOON;
    while verifier.rejected_total() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {:?} rejected",
            verifier.rejected()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Send `text` as `message_id` with returnImmediately and wait until a worker runs it.
async fn send_working(bridge: &Bridge, caller: &Caller, message_id: &str, text: &str) -> Task {
    let open = task(
        bridge
            .send_message(caller, request(message_id, text, true))
            .await
            .expect("send"),
    );
    wait_for(bridge, caller, &open.id, |t| {
        t.status.state == TaskState::Working
    })
    .await;
    open
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_trust_the_legit_flow_completes_and_every_record_is_signed() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let verifier = trust();
    let bridge = signed_bridge(&log, "signed", &verifier).await;
    let _worker = Worker::start(
        log.clone(),
        worker_config("signed", Some(&verifier)),
        handler_fn(|ctx: TaskContext| async move {
            let text = ctx.text();
            if text == "wait" {
                ctx.working(Some("waiting")).await?;
                ctx.cancellation().cancelled().await;
                return Ok(());
            }
            ctx.complete(Some(&format!("echo: {text}"))).await?;
            Ok(())
        }),
    )
    .await
    .expect("worker");
    let c = Caller::principal("alice");
    let done = task(
        bridge
            .send_message(&c, request("m-1", "hi", false))
            .await
            .expect("send"),
    );
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(status_text(&done), "echo: hi");
    let records = task_records(&log, "signed", &done.id).await;
    assert!(records.len() >= 3, "{records:?}");
    for record in &records {
        assert_eq!(verifier.check(record), Ok(()), "{record:?}");
        let expected = match record.body {
            RecordBody::Command { .. } => key(BRIDGE).kid().to_owned(),
            _ => key(WORKER).kid().to_owned(),
        };
        assert_eq!(record.header.key_id, expected);
    }
    // returnImmediately too, and a cancel request.
    let open = send_working(&bridge, &c, "m-2", "wait").await;
    let canceled = bridge
        .cancel_task(&c, agentlog_integration::bridge_suite::cancel(&open.id))
        .await
        .expect("cancel");
    assert_eq!(canceled.status.state, TaskState::Canceled);
    for record in task_records(&log, "signed", &open.id).await {
        assert_eq!(verifier.check(&record), Ok(()), "{record:?}");
    }
    assert_eq!(verifier.rejected_total(), 0, "{:?}", verifier.rejected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_terminal_does_not_end_a_task_now_or_after_a_restart() {
    let agent = "forged-terminal";
    let log = agentlog::log::open("memory://").await.expect("log");
    let verifier = trust();
    let bridge = signed_bridge(&log, agent, &verifier).await;
    let go = Arc::new(Notify::new());
    let runs = Arc::new(AtomicUsize::new(0));
    // The worker starts a view of its own: it checks the records too.
    let worker = Worker::start(
        log.clone(),
        worker_config(agent, Some(&verifier)),
        gated(go.clone(), runs.clone()),
    )
    .await
    .expect("worker");
    let c = Caller::principal("alice");
    let open = send_working(&bridge, &c, "m-1", "go").await;
    let events = AgentTopics::of(agent).events;
    // Unknown key, a bridge's key on a terminal, no signature at all.
    let source = worker.source().to_owned();
    append(
        &log,
        &events,
        &forged_terminal(&open, &source, "f-1", Some(STRANGER)),
    )
    .await;
    append(
        &log,
        &events,
        &forged_terminal(&open, &source, "f-2", Some(BRIDGE)),
    )
    .await;
    append(&log, &events, &forged_terminal(&open, &source, "f-3", None)).await;
    // A worker's own terminal (signed by its key) tampered with after signing.
    let mut tampered = forged_terminal(&open, &source, "f-4", Some(WORKER));
    if let RecordBody::Terminal { message, .. } = &mut tampered.body {
        *message = message.replace("forged", "tampered");
    }
    append(&log, &events, &tampered).await;
    // Both views (the bridge's, the worker's) turn each away.
    wait_rejected(&verifier, 8).await;
    assert_eq!(count(&verifier, Rejection::UnknownKey), 2);
    assert_eq!(count(&verifier, Rejection::KindNotAllowed), 2);
    assert_eq!(count(&verifier, Rejection::Unsigned), 2);
    assert_eq!(count(&verifier, Rejection::BadSignature), 2);
    let still = bridge.get_task(&c, get(&open.id)).await.expect("get");
    assert_eq!(still.status.state, TaskState::Working);
    go.notify_waiters();
    let done = wait_for(&bridge, &c, &open.id, |t| t.status.state.is_terminal()).await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(status_text(&done), "done");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // A restart replays the log and checks every record again (no checkpoint was written).
    let replay = trust();
    let restarted = signed_bridge(&log, agent, &replay).await;
    restarted.view().wait_caught_up().await;
    let again = restarted.get_task(&c, get(&open.id)).await.expect("get");
    assert_eq!(again.status.state, TaskState::Completed);
    assert_eq!(status_text(&again), "done");
    assert_eq!(replay.rejected_total(), 4, "{:?}", replay.rejected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_command_runs_nothing() {
    let agent = "forged-command";
    let log = agentlog::log::open("memory://").await.expect("log");
    let verifier = trust();
    let bridge = signed_bridge(&log, agent, &verifier).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let _worker = Worker::start(
        log.clone(),
        worker_config(agent, Some(&verifier)),
        handler_fn(move |ctx: TaskContext| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                ctx.complete(Some("ran")).await?;
                Ok(())
            }
        }),
    )
    .await
    .expect("worker");
    let c = Caller::principal("alice");
    let topics = AgentTopics::of(agent);
    let params = serde_json::to_string(&request("evil", "rm -rf /", true)).expect("params");
    let task_id = agentlog_wire::ids::task_id("", "alice", "evil");
    let forged = |seed: u8| {
        let mut record = Record {
            header: RecordHeader {
                task_id: task_id.clone(),
                context_id: "ctx-evil".into(),
                message_id: "evil".into(),
                source: "mallory".into(),
                principal: "alice".into(),
                timestamp_ms: now_ms(),
                content_type: "application/json".into(),
                ..RecordHeader::default()
            },
            body: RecordBody::Command {
                params: params.clone(),
                retention_ms: 0,
            },
        };
        RecordSigner::new(key(seed))
            .sign(&mut record)
            .expect("sign");
        record
    };
    // A worker's key may not write commands; a stranger's is not trusted. Both topics, as a
    // bridge writes them.
    for record in [forged(WORKER), forged(STRANGER)] {
        append(&log, &topics.events, &record).await;
        append(&log, &topics.commands, &record).await;
    }
    // Two views on the events topic, the worker on the commands topic: each turned away.
    wait_rejected(&verifier, 6).await;
    // A legit task after them runs (so the worker has passed the forged ones).
    let done = task(
        bridge
            .send_message(&c, request("m-1", "hi", false))
            .await
            .expect("send"),
    );
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let missing = bridge.get_task(&c, get(&task_id)).await;
    assert_eq!(
        missing.expect_err("no such task").kind(),
        agentlog::ErrorKind::TaskNotFound
    );
    assert_eq!(count(&verifier, Rejection::KindNotAllowed), 3);
    assert_eq!(count(&verifier, Rejection::UnknownKey), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_trust_nothing_changes() {
    let agent = "no-trust";
    let log = agentlog::log::open("memory://").await.expect("log");
    let bridge = Bridge::open(log.clone(), config(agent))
        .await
        .expect("bridge");
    let go = Arc::new(Notify::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let worker = Worker::start(
        log.clone(),
        worker_config(agent, None),
        gated(go.clone(), runs),
    )
    .await
    .expect("worker");
    let c = Caller::principal("alice");
    let open = send_working(&bridge, &c, "m-1", "go").await;
    for record in task_records(&log, agent, &open.id).await {
        assert!(!record.is_signed(), "{record:?}");
        assert!(record.header.key_id.is_empty());
    }
    // As before signed records: any record of the claim's attempt counts, signed or not.
    let events = AgentTopics::of(agent).events;
    let forged = forged_terminal(&open, worker.source(), "f-1", Some(STRANGER));
    append(&log, &events, &forged).await;
    let ended = wait_for(&bridge, &c, &open.id, |t| t.status.state.is_terminal()).await;
    assert_eq!(ended.status.state, TaskState::Failed);
    assert_eq!(status_text(&ended), "forged");
    go.notify_waiters();
}
