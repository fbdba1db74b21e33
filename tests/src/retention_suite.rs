//! The retention suite: finished tasks expire for every verb and every replica at once,
//! interrupted ones never, and a view restarted from a checkpoint answers exactly as a full
//! replay — run against any backend through a [`Backend`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentlog::bridge::Bridge;
use agentlog::log::Log;
use agentlog::view::{ListFilter, TaskView, ViewOptions};
use agentlog::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
use agentlog::{AgentTopics, Caller, ErrorKind};
use agentlog_server::agents::DemoHandler;
use agentlog_wire::TaskState;
use agentlog_wire::a2a::{ListTasksRequest, SubscribeToTaskRequest};

use crate::bridge_suite::{
    Backend, SOON, cancel, config, follow_up, get, kind, request, task, wait_for,
};

/// Run every case against `subject`.
pub async fn run_all(subject: &dyn Backend) {
    crate::run_cases!(
        subject,
        "r",
        [
            a_finished_task_expires_everywhere_at_once,
            an_interrupted_task_outlives_the_retention,
            a_restart_from_a_checkpoint_answers_as_a_full_replay,
        ]
    );
}

/// A short retention, so that the cases wait for it.
const RETENTION: Duration = Duration::from_millis(1_500);

async fn bridge_with_retention(log: &Log, agent: &str) -> Bridge {
    let mut config = config(agent);
    config.retention = Some(RETENTION);
    Bridge::open(log.clone(), config).await.expect("bridge")
}

fn subscribe(id: &str) -> SubscribeToTaskRequest {
    SubscribeToTaskRequest {
        tenant: None,
        id: id.to_owned(),
    }
}

fn now_ms() -> u64 {
    agentlog::retention::now_ms()
}

/// Sleep until the wall clock reaches `at_ms` (Unix ms).
async fn sleep_until_ms(at_ms: u64) {
    let now = now_ms();
    if at_ms > now {
        tokio::time::sleep(Duration::from_millis(at_ms - now)).await;
    }
}

async fn a_finished_task_expires_everywhere_at_once(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let replica_log = subject.replica(&log).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let handler = handler_fn(move |task: TaskContext| {
        let runs = counted.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            task.complete(Some(&format!("done: {}", task.text())))
                .await?;
            Ok(())
        }
    });
    let worker = Worker::start(log.clone(), WorkerConfig::new(agent), handler)
        .await
        .expect("worker");
    let one = bridge_with_retention(&log, agent).await;
    let two = bridge_with_retention(&replica_log, agent).await;
    let c = Caller::principal("alice");
    let first = task(
        one.send_message(&c, request("e-1", "hi", false))
            .await
            .expect("send"),
    );
    assert_eq!(first.status.state, TaskState::Completed);
    let finished_ms = agentlog_wire::timestamp::parse_millis(
        first.status.timestamp.as_deref().expect("a status time"),
    )
    .expect("a status time");
    let expires_ms = finished_ms + RETENTION.as_millis() as u64;
    // Inside retention: every verb on every replica finds it, and a retry runs nothing.
    for b in [&one, &two] {
        assert_eq!(b.get_task(&c, get(&first.id)).await.expect("get"), first);
        let again = task(
            b.send_message(&c, request("e-1", "hi", false))
                .await
                .expect("retry"),
        );
        assert_eq!(again, first);
        let listed = b
            .list_tasks(&c, ListTasksRequest::default())
            .await
            .expect("list");
        assert_eq!(listed.total_size, 1);
        assert_eq!(
            kind(b.cancel_task(&c, cancel(&first.id)).await),
            ErrorKind::TaskNotCancelable
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(
        now_ms() < expires_ms,
        "the case took longer than the retention"
    );

    // Once it has passed: gone for every verb, on both replicas at once.
    sleep_until_ms(expires_ms).await;
    for b in [&one, &two] {
        assert_eq!(
            kind(b.get_task(&c, get(&first.id)).await),
            ErrorKind::TaskNotFound
        );
        assert_eq!(
            kind(b.cancel_task(&c, cancel(&first.id)).await),
            ErrorKind::TaskNotFound
        );
        assert_eq!(
            kind(b.subscribe_to_task(&c, subscribe(&first.id), None).await),
            ErrorKind::TaskNotFound
        );
        assert_eq!(
            kind(
                b.send_message(&c, follow_up(&first.id, "e-2", "more"))
                    .await
            ),
            ErrorKind::TaskNotFound
        );
        let listed = b
            .list_tasks(&c, ListTasksRequest::default())
            .await
            .expect("list");
        assert_eq!(listed.total_size, 0);
    }
    // A retried send now creates the task afresh (the same id: it is derived from the
    // messageId), and the handler runs again; every replica answers the new one.
    let second = task(
        two.send_message(&c, request("e-1", "hi", false))
            .await
            .expect("send"),
    );
    assert_eq!(second.id, first.id);
    assert_eq!(second.status.state, TaskState::Completed);
    assert_ne!(second.status.timestamp, first.status.timestamp);
    assert_eq!(second.history.len(), first.history.len());
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(one.get_task(&c, get(&first.id)).await.expect("get"), second);
    // The views dropped the old task; they hold only what is inside retention.
    for b in [&one, &two] {
        b.view().expire_now();
        assert!(b.view().task_count() <= 1);
    }
    worker.shutdown().await.expect("shutdown");
}

async fn an_interrupted_task_outlives_the_retention(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge_with_retention(&log, agent).await;
    let worker = Worker::start(log.clone(), WorkerConfig::new(agent), DemoHandler)
        .await
        .expect("worker");
    let c = Caller::principal("alice");
    let asked = task(
        b.send_message(&c, request("i-1", "input", false))
            .await
            .expect("send"),
    );
    assert_eq!(asked.status.state, TaskState::InputRequired);
    tokio::time::sleep(RETENTION + Duration::from_millis(300)).await;
    b.view().expire_now();
    assert_eq!(
        b.get_task(&c, get(&asked.id))
            .await
            .expect("get")
            .status
            .state,
        TaskState::InputRequired
    );
    let done = task(
        b.send_message(&c, follow_up(&asked.id, "i-2", "Paris"))
            .await
            .expect("continue"),
    );
    assert_eq!(done.status.state, TaskState::Completed);
    worker.shutdown().await.expect("shutdown");
}

/// Everything `view` answers about `ids` for `caller`, comparable.
async fn answers(view: &TaskView, caller: &Caller, ids: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for id in ids {
        let task = view.get(caller, id).await.expect("read back");
        let info = view.lookup(caller, id).map(|i| {
            format!(
                "{:?} {:?} {} {:?} {:?}",
                i.state,
                i.claim,
                i.attempts,
                i.pending,
                i.offsets().collect::<Vec<_>>()
            )
        });
        out.push(format!(
            "{id}: {info:?} {}",
            serde_json::to_string(&task).expect("json")
        ));
    }
    let (page, total) = view.list(
        caller,
        &ListFilter {
            page_size: 100,
            ..ListFilter::default()
        },
    );
    out.push(format!(
        "{total}: {:?}",
        page.iter().map(|i| i.id.clone()).collect::<Vec<_>>()
    ));
    out
}

async fn a_restart_from_a_checkpoint_answers_as_a_full_replay(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let mut config = config(agent);
    config.checkpoint_every = None;
    let b = Bridge::open(log.clone(), config).await.expect("bridge");
    let worker = Worker::start(log.clone(), WorkerConfig::new(agent), DemoHandler)
        .await
        .expect("worker");
    let c = Caller::principal("alice");
    // A random mix of what tasks do: echo, fail, ask for input (then answered or canceled or
    // left waiting), cancel while sleeping; a fixed seed per run of the case.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64 ^ u64::from(agent.len() as u32);
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut ids = Vec::new();
    let mut checkpointed = None;
    for n in 0..30 {
        if n == 15 {
            checkpointed = b.view().checkpoint().await.expect("checkpoint");
        }
        let text = ["echo", "fail", "input", "sleep 5"][next(4) as usize];
        let sent = task(
            b.send_message(&c, request(&format!("x-{n}"), text, true))
                .await
                .expect("send"),
        );
        let id = sent.id.clone();
        match text {
            "input" => {
                let asked =
                    wait_for(&b, &c, &id, |t| t.status.state == TaskState::InputRequired).await;
                match next(3) {
                    0 => {
                        b.send_message(&c, follow_up(&asked.id, &format!("x-{n}-a"), "yes"))
                            .await
                            .expect("continue");
                    }
                    1 => {
                        b.cancel_task(&c, cancel(&id)).await.expect("cancel");
                    }
                    _ => {}
                }
            }
            "sleep 5" => {
                wait_for(&b, &c, &id, |t| t.status.state == TaskState::Working).await;
                b.cancel_task(&c, cancel(&id)).await.expect("cancel");
            }
            _ => {}
        }
        ids.push(id);
    }
    for id in &ids {
        wait_for(&b, &c, id, |t| {
            t.status.state.is_terminal() || t.status.state.is_interrupted()
        })
        .await;
    }
    let checkpointed = checkpointed.expect("a checkpoint topic");
    assert!(checkpointed.positions.iter().sum::<u64>() > 0);
    let before = answers(b.view(), &c, &ids).await;
    worker.shutdown().await.expect("shutdown");
    drop(b);
    let log = subject.restart(&log).await.unwrap_or(log);
    let topics = AgentTopics::of(agent);
    let restored = TaskView::start_with(
        log.clone(),
        topics.events.clone(),
        ViewOptions::restore_only(topics.checkpoints.clone()),
    )
    .await
    .expect("view");
    assert_eq!(
        restored.restored_from(),
        Some(checkpointed.positions.clone())
    );
    let replayed = TaskView::start(log.clone(), topics.events.clone())
        .await
        .expect("view");
    for view in [&restored, &replayed] {
        tokio::time::timeout(SOON, view.wait_caught_up())
            .await
            .expect("caught up");
    }
    let from_checkpoint = answers(&restored, &c, &ids).await;
    assert_eq!(from_checkpoint, answers(&replayed, &c, &ids).await);
    assert_eq!(from_checkpoint, before);
}
