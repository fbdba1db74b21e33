//! The turn suite: the core's promises at its seams, on any backend. Exactly one run per
//! turn when a worker joins mid-turn, a takeover after a crash with nothing of the dead
//! attempt in the answer, no task left behind when a command never reached the workers'
//! queue, exact idempotency of sends (sequential, concurrent, reused ids), follow-ups to a
//! running task, and a thousand tasks while workers come and go.
//!
//! Each case serves its own agent; waits are bounded by generous limits, nothing asserts on
//! speed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentlog::log::Log;
use agentlog::worker::{Handler, TaskContext, Worker, WorkerConfig, handler_fn};
use agentlog::{AgentTopics, Caller, ErrorKind};
use agentlog_wire::a2a::{Artifact, Message, Part, Role, SendMessageRequest, Task};
use agentlog_wire::fold::{Outcome, TaskFold};
use agentlog_wire::{Record, RecordBody, TaskState};
use bytes::Bytes;

use crate::bridge_suite::{Backend, SOON, bridge, follow_up, request, task, wait_for};
use crate::streamer::{Streamer, fold_log, one_attempt, task_records};

mod churn;

use churn::a_thousand_tasks_while_workers_join_and_leave;

/// Run every case against `subject`.
pub async fn run_all(subject: &dyn Backend) {
    crate::run_cases!(
        subject,
        "t",
        [
            a_client_message_must_be_the_users,
            a_reused_message_id_is_refused_and_writes_nothing,
            concurrent_identical_sends_answer_one_task,
            a_second_worker_joining_mid_turn_runs_nothing_twice,
            a_crashed_workers_turns_are_taken_over_after_the_lease,
            a_crashed_sharing_workers_first_claims_are_taken_over_after_the_lease,
            a_command_that_never_reached_the_queue_is_put_back,
            a_copy_that_arrives_before_its_command_runs,
            a_turn_whose_message_is_missing_fails_the_task,
            a_follow_up_reaches_the_running_handler,
            an_untaken_follow_up_starts_the_next_turn,
            a_thousand_tasks_while_workers_join_and_leave,
        ]
    );
}

fn worker_config(agent: &str) -> WorkerConfig {
    let mut config = WorkerConfig::new(agent);
    config.lease = Duration::from_secs(1);
    config.requeue_after = Duration::from_millis(500);
    config.shutdown_timeout = Duration::from_millis(300);
    config
}

async fn start(log: &Log, config: WorkerConfig, handler: impl Handler) -> Worker {
    Worker::start(log.clone(), config, handler)
        .await
        .expect("worker")
}

fn message_with(id: &str, text: &str, role: Role) -> SendMessageRequest {
    let mut r = request(id, text, true);
    r.message.role = role;
    r
}

async fn a_client_message_must_be_the_users(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    let err = b
        .send_message(&c, message_with("m-agent", "hi", Role::Agent))
        .await
        .expect_err("an agent's message from a client");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(
        err.details()
            .iter()
            .any(|(k, v)| *k == "field" && v == "message.role"),
        "{:?}",
        err.details()
    );
    let id = agentlog_wire::ids::task_id("", "alice", "m-agent");
    assert!(
        task_records(&log, agent, &id).await.is_empty(),
        "nothing written"
    );
}

async fn a_reused_message_id_is_refused_and_writes_nothing(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    let first = task(
        b.send_message(&c, request("m-1", "first", true))
            .await
            .expect("send"),
    );
    // The same message again: the same task, nothing more on the log.
    let again = task(
        b.send_message(&c, request("m-1", "first", true))
            .await
            .expect("retry"),
    );
    assert_eq!(again.id, first.id);
    let written = task_records(&log, agent, &first.id).await.len();
    // Another message under the same id: refused, nothing written.
    let err = b
        .send_message(&c, request("m-1", "second", true))
        .await
        .expect_err("a reused id");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.to_string().contains("already used"), "{err}");
    assert_eq!(task_records(&log, agent, &first.id).await.len(), written);
    // The same for a follow-up's id, and for the task's first message sent as a follow-up.
    let err = b
        .send_message(&c, follow_up(&first.id, "m-1", "other"))
        .await
        .expect_err("the command's id as a follow-up");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    // Another caller's same id is another task.
    let bob = task(
        b.send_message(&Caller::principal("bob"), request("m-1", "second", true))
            .await
            .expect("bob"),
    );
    assert_ne!(bob.id, first.id);
}

async fn concurrent_identical_sends_answer_one_task(subject: &dyn Backend, agent: &str) {
    let log_a = subject.log().await;
    let log_b = subject.replica(&log_a).await;
    let a = bridge(&log_a, agent).await;
    let b = bridge(&log_b, agent).await;
    let c = Caller::principal("alice");
    // No worker yet: every answer is the task the log holds, submitted.
    let sends = (0..16).map(|i| {
        let bridge = if i % 2 == 0 { a.clone() } else { b.clone() };
        let c = c.clone();
        tokio::spawn(async move {
            bridge
                .send_message(&c, request("m-same", "once", true))
                .await
        })
    });
    let answers: Vec<Task> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|joined| task(joined.expect("join").expect("send")))
        .collect();
    for answer in &answers {
        assert_eq!(
            answer, &answers[0],
            "every concurrent send answers the same task"
        );
    }
    let streamer = Streamer::new(2, Duration::from_millis(1));
    let w = start(&log_a, worker_config(agent), streamer.clone()).await;
    let done = wait_for(&b, &c, &answers[0].id, |t| t.status.state.is_terminal()).await;
    assert_eq!(done.status.state, TaskState::Completed);
    // Blocking retries, concurrent, through both bridges: the finished task, nothing rerun.
    let retries = (0..4).map(|i| {
        let bridge = if i % 2 == 0 { a.clone() } else { b.clone() };
        let c = c.clone();
        tokio::spawn(async move {
            bridge
                .send_message(&c, request("m-same", "once", false))
                .await
        })
    });
    for joined in futures::future::join_all(retries).await {
        assert_eq!(task(joined.expect("join").expect("retry")), done);
    }
    assert_eq!(streamer.runs.load(Ordering::SeqCst), 1);
    let commands = task_records(&log_a, agent, &done.id)
        .await
        .iter()
        .filter(|r| matches!(r.body, RecordBody::Command { .. }))
        .count();
    assert!(commands >= 1, "at least one command");
    assert_eq!(
        fold_log(&log_a, agent, &done.id).await.stats().duplicates as usize,
        commands - 1
    );
    w.shutdown().await.expect("shutdown");
}

async fn a_second_worker_joining_mid_turn_runs_nothing_twice(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    let (release, held) = tokio::sync::watch::channel(false);
    let mut streamer = Streamer::new(20, Duration::from_millis(5));
    streamer.release = Some(held);
    let first = start(&log, worker_config(agent), streamer.clone()).await;
    let mut ids = Vec::new();
    for i in 0..16 {
        let t = task(
            b.send_message(&c, request(&format!("m-{i}"), "go", true))
                .await
                .expect("send"),
        );
        ids.push(t.id);
    }
    for id in &ids {
        wait_for(&b, &c, id, |t| t.status.state == TaskState::Working).await;
    }
    // A member joins while all 16 turns run: it receives their commands again and must
    // leave them to the live claims.
    let second = start(&log, worker_config(agent), streamer.clone()).await;
    // Held open past two leases: the first worker renews, the second must keep out.
    tokio::time::sleep(Duration::from_secs(2)).await;
    release.send_replace(true);
    for id in &ids {
        let t = wait_for(&b, &c, id, |t| t.status.state.is_terminal()).await;
        assert_eq!(t.status.state, TaskState::Completed);
        assert_eq!(one_attempt(&t, 20), 1);
        let f = fold_log(&log, agent, id).await;
        assert_eq!(
            f.stats().fenced,
            0,
            "task {id}: nothing was written by a second run"
        );
    }
    assert_eq!(
        streamer.runs.load(Ordering::SeqCst),
        ids.len(),
        "one run per turn"
    );
    first.shutdown().await.expect("shutdown");
    second.shutdown().await.expect("shutdown");
}

async fn a_crashed_workers_turns_are_taken_over_after_the_lease(
    subject: &dyn Backend,
    agent: &str,
) {
    crash_and_take_over(subject, agent, false).await;
}

/// A worker sharing its bridge's view claims each first turn in its command's append, which
/// then goes without a copy on the workers' queue: once it dies, the worker that gets the
/// partitions finds its turns by its sweep as their leases end, not through copies (it would
/// wait `requeue_after` for those: here longer than the test's patience).
async fn a_crashed_sharing_workers_first_claims_are_taken_over_after_the_lease(
    subject: &dyn Backend,
    agent: &str,
) {
    crash_and_take_over(subject, agent, true).await;
}

/// Twelve turns whose first attempts hang, their worker (sharing the bridge's view if
/// `sharing`) killed, another started: each task ends once, from the takeover alone.
async fn crash_and_take_over(subject: &dyn Backend, agent: &str, sharing: bool) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    let mut streamer = Streamer::new(5, Duration::from_millis(5));
    streamer.hang_after = Some(2);
    let mut config = worker_config(agent);
    if sharing {
        config.view = Some(b.view().clone());
        // A free handler slot for each first claim.
        config.concurrency = 16;
    }
    let doomed = start(&log, config, streamer.clone()).await;
    let mut ids = Vec::new();
    for i in 0..12 {
        let t = task(
            b.send_message(&c, request(&format!("m-{i}"), "go", true))
                .await
                .expect("send"),
        );
        ids.push(t.id);
    }
    // Each first run wrote two chunks and hangs.
    for id in &ids {
        wait_for(&b, &c, id, |t| {
            t.artifacts.first().is_some_and(|a| a.parts.len() == 2)
        })
        .await;
    }
    let commands = &b.config().topics.commands;
    let queued: u64 = log.end_offsets(commands).await.expect("ends").iter().sum();
    if sharing {
        assert_eq!(queued, 0, "no copies");
    }
    doomed.abort();
    let mut config = worker_config(agent);
    if sharing {
        config.requeue_after = SOON * 4;
    }
    let rescuer = start(&log, config, streamer.clone()).await;
    for id in &ids {
        let t = wait_for(&b, &c, id, |t| t.status.state.is_terminal()).await;
        assert_eq!(t.status.state, TaskState::Completed);
        // The artifact is the takeover's alone: nothing of the dead attempt's two chunks.
        assert_eq!(one_attempt(&t, 5), 2, "task {id}");
        let records = task_records(&log, agent, id).await;
        let claims: Vec<u32> = records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::Claim { .. }))
            .map(|r| r.header.attempt)
            .collect();
        assert!(claims.contains(&1) && claims.contains(&2), "{claims:?}");
        let terminals = records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::Terminal { .. }))
            .count();
        assert_eq!(terminals, 1, "task {id}: exactly one terminal");
    }
    assert_eq!(
        streamer.retries.load(Ordering::SeqCst),
        ids.len(),
        "each takeover knew it retried"
    );
    rescuer.shutdown().await.expect("shutdown");
}

/// Append `request`'s command to the events topic alone, as a bridge that died between its
/// two appends would have.
async fn half_send(
    log: &Log,
    agent: &str,
    caller: &Caller,
    request: &SendMessageRequest,
) -> String {
    let (task_id, bytes) = command(caller, request);
    let topics = AgentTopics::of(agent);
    log.append(&topics.events, task_id.as_bytes(), vec![bytes])
        .await
        .expect("append");
    task_id
}

/// `request`'s command record as a bridge writes it: its task id and its bytes.
fn command(caller: &Caller, request: &SendMessageRequest) -> (String, Bytes) {
    let message = &request.message;
    let task_id =
        agentlog_wire::ids::task_id(&caller.tenant, &caller.principal, &message.message_id);
    let record = Record {
        header: agentlog_wire::RecordHeader {
            task_id: task_id.clone(),
            context_id: agentlog_wire::ids::context_id(
                &caller.tenant,
                &caller.principal,
                &message.message_id,
            ),
            message_id: message.message_id.clone(),
            source: "a-bridge-that-died".into(),
            principal: caller.principal.clone(),
            tenant: caller.tenant.clone(),
            timestamp_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            content_type: "application/json".into(),
            ..Default::default()
        },
        body: RecordBody::Command {
            params: serde_json::to_string(request).expect("params"),
            retention_ms: 0,
        },
    };
    (task_id, Bytes::from(record.encode().expect("encode")))
}

/// A bridge sends a command and its copy at once, so the copy may reach a worker first: the
/// worker looks again, and the turn runs, without the sweeper (which would wait an hour here).
async fn a_copy_that_arrives_before_its_command_runs(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    let streamer = Streamer::new(1, Duration::from_millis(1));
    let mut config = worker_config(agent);
    config.requeue_after = Duration::from_secs(3600);
    let w = start(&log, config, streamer.clone()).await;
    let (id, bytes) = command(&c, &request("m-early", "early", false));
    let topics = AgentTopics::of(agent);
    log.append(&topics.commands, id.as_bytes(), vec![bytes.clone()])
        .await
        .expect("the copy");
    // Not a synchronisation: it gives the worker time to find the copy without its command,
    // which is the case under test (the outcome is the same either way).
    tokio::time::sleep(Duration::from_millis(100)).await;
    log.append(&topics.events, id.as_bytes(), vec![bytes])
        .await
        .expect("the command");
    let t = wait_for(&b, &c, &id, |t| t.status.state.is_terminal()).await;
    assert_eq!(t.status.state, TaskState::Completed);
    assert_eq!(streamer.runs.load(Ordering::SeqCst), 1);
    w.shutdown().await.expect("shutdown");
}

async fn a_command_that_never_reached_the_queue_is_put_back(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    let streamer = Streamer::new(1, Duration::from_millis(1));
    let w = start(&log, worker_config(agent), streamer.clone()).await;
    let id = half_send(&log, agent, &c, &request("m-lost", "lost", false)).await;
    // No retry from the client: the sweeper puts it back on the queue.
    let t = wait_for(&b, &c, &id, |t| t.status.state.is_terminal()).await;
    assert_eq!(t.status.state, TaskState::Completed);
    assert_eq!(streamer.runs.load(Ordering::SeqCst), 1);
    w.shutdown().await.expect("shutdown");
}

async fn a_turn_whose_message_is_missing_fails_the_task(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let w = start(
        &log,
        worker_config(agent),
        handler_fn(move |_task: TaskContext| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        }),
    )
    .await;
    // Written by something other than a bridge (a bridge refuses it): an agent's message.
    let id = half_send(&log, agent, &c, &message_with("m-agent", "hi", Role::Agent)).await;
    let t = wait_for(&b, &c, &id, |t| t.status.state.is_terminal()).await;
    assert_eq!(t.status.state, TaskState::Failed);
    let why: String = t
        .status
        .message
        .iter()
        .flat_map(|m| m.parts.iter().filter_map(Part::as_text))
        .collect();
    assert!(why.contains("ROLE_USER"), "{why}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler never saw it");
    w.shutdown().await.expect("shutdown");
}

async fn a_follow_up_reaches_the_running_handler(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    let w = start(
        &log,
        worker_config(agent),
        handler_fn(|task: TaskContext| async move {
            task.working(Some("tell me more")).await?;
            let Some(more) = task.wait_follow_up().await? else {
                return Ok(());
            };
            let text = text_of(&more);
            task.complete(Some(&format!("{} and {text}", task.text())))
                .await?;
            Ok(())
        }),
    )
    .await;
    let first = task(
        b.send_message(&c, request("m-1", "this", true))
            .await
            .expect("send"),
    );
    wait_for(&b, &c, &first.id, |t| t.history.len() == 2).await;
    // A message to the working task: accepted, and it is the running handler's.
    let done = task(
        b.send_message(&c, follow_up(&first.id, "m-2", "that"))
            .await
            .expect("follow-up"),
    );
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(
        done.status.message.as_ref().map(text_of).as_deref(),
        Some("this and that")
    );
    let users: Vec<&str> = done
        .history
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.message_id.as_str())
        .collect();
    assert_eq!(users, ["m-1", "m-2"]);
    w.shutdown().await.expect("shutdown");
}

async fn an_untaken_follow_up_starts_the_next_turn(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let saw = seen.clone();
    let w = start(
        &log,
        worker_config(agent),
        handler_fn(move |task: TaskContext| {
            let saw = saw.clone();
            async move {
                saw.lock().expect("lock").push(task.text());
                task.working(None).await?;
                tokio::time::sleep(Duration::from_millis(300)).await;
                let artifact = Artifact {
                    artifact_id: format!("re-{}", task.message().message_id),
                    name: None,
                    description: None,
                    parts: vec![Part::text(format!("done: {}", task.text()))],
                    metadata: None,
                    extensions: Vec::new(),
                };
                task.artifact(artifact, false, true).await?;
                Ok(())
            }
        }),
    )
    .await;
    let first = task(
        b.send_message(&c, request("m-1", "one", true))
            .await
            .expect("send"),
    );
    wait_for(&b, &c, &first.id, |t| t.status.state == TaskState::Working).await;
    let done = task(
        b.send_message(&c, follow_up(&first.id, "m-2", "two"))
            .await
            .expect("follow-up"),
    );
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(*seen.lock().expect("lock"), ["one", "two"]);
    assert_eq!(done.artifacts.len(), 2, "{:?}", done.artifacts);
    w.shutdown().await.expect("shutdown");
}

fn text_of(message: &Message) -> String {
    message.parts.iter().filter_map(Part::as_text).collect()
}
