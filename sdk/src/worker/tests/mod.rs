//! Worker tests over the in-memory log: a bridge sends tasks, a worker runs a test handler
//! (answering with a message: `reply.rs`).
//! Timeouts here are only upper bounds against hangs; nothing asserts on timing.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentlog_wire::a2a::{
    CancelTaskRequest, GetTaskRequest, Message, Part, PartContent, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, Task,
};
use agentlog_wire::{Record, RecordBody, RecordHeader, TaskState};
use bytes::Bytes;
use tokio::sync::{Barrier, mpsc};

use super::*;
use crate::agent::Caller;
use crate::bridge::{Bridge, BridgeConfig};

mod apart;
mod first_claim;
mod queue;
mod reply;

/// An upper bound for anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(60);

/// A log, a bridge, and one worker.
pub(super) struct Harness {
    pub(super) log: Log,
    pub(super) bridge: Bridge,
    pub(super) worker: Worker,
}

impl Harness {
    /// A bridge and a worker (with its own view) for `agent` over a fresh in-memory log.
    pub(super) async fn new(agent: &str, handler: impl Handler) -> Self {
        Self::with(BridgeConfig::new(agent), handler, |_| {}).await
    }

    /// Like [`new`](Self::new), with the bridge's config given and the worker's adjusted.
    pub(super) async fn with(
        bridge: BridgeConfig,
        handler: impl Handler,
        adjust: impl FnOnce(&mut WorkerConfig),
    ) -> Self {
        let log = crate::log::open("memory://").await.unwrap();
        let mut config = WorkerConfig::new(&bridge.topics.agent);
        config.topics = bridge.topics.clone();
        config.shutdown_timeout = PATIENCE * 2;
        adjust(&mut config);
        let bridge = Bridge::open(log.clone(), bridge).await.unwrap();
        let worker = Worker::start(log.clone(), config, handler).await.unwrap();
        Self {
            log,
            bridge,
            worker,
        }
    }

    /// Send `message` and wait for the task to settle (terminal or interrupted).
    pub(super) async fn send_message(&self, message: Message) -> Task {
        send(&self.bridge, message, false).await
    }

    /// Send a new task with `text` and wait for it to settle.
    pub(super) async fn send(&self, text: &str) -> Task {
        self.send_message(user(text)).await
    }

    /// Send a new task with `text` and return its id at once.
    pub(super) async fn send_immediately(&self, text: &str) -> String {
        send(&self.bridge, user(text), true).await.id
    }

    /// Wait until the bridge's view shows the task in `state`.
    pub(super) async fn wait_for_state(&self, id: &str, state: TaskState) {
        let view = self.bridge.view();
        tokio::time::timeout(PATIENCE, async {
            while view.lookup_any(id).map(|(info, _)| info.state) != Some(state) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap();
    }

    pub(super) async fn cancel(&self, id: &str) -> Task {
        let request = CancelTaskRequest {
            tenant: None,
            id: id.to_owned(),
            metadata: None,
        };
        self.bridge
            .cancel_task(&Caller::anonymous(), request)
            .await
            .unwrap()
    }

    pub(super) async fn get(&self, id: &str) -> Task {
        let request = GetTaskRequest {
            tenant: None,
            id: id.to_owned(),
            history_length: None,
        };
        self.bridge
            .get_task(&Caller::anonymous(), request)
            .await
            .unwrap()
    }

    /// Every record of the events topic, per task, in log order.
    pub(super) async fn events(&self) -> HashMap<String, Vec<Record>> {
        records_of(&self.log, &self.bridge.config().topics.events).await
    }

    /// Shut the worker down (bounded by the test's patience).
    pub(super) async fn shutdown(self) {
        tokio::time::timeout(PATIENCE, self.worker.shutdown())
            .await
            .unwrap()
            .unwrap();
    }
}

pub(super) fn user(text: &str) -> Message {
    Message::user_text(uuid::Uuid::new_v4().to_string(), text)
}

/// A `SendMessage` of `message`, blocking unless `return_immediately`.
pub(super) fn request(message: Message, return_immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        tenant: None,
        message,
        configuration: Some(SendMessageConfiguration {
            return_immediately,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

async fn send(bridge: &Bridge, message: Message, return_immediately: bool) -> Task {
    let request = request(message, return_immediately);
    let response = tokio::time::timeout(
        PATIENCE * 2,
        bridge.send_message(&Caller::anonymous(), request),
    )
    .await
    .unwrap()
    .unwrap();
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(m) => panic!("expected a task, got {m:?}"),
    }
}

async fn records_of(log: &Log, topic: &crate::log::TopicRef) -> HashMap<String, Vec<Record>> {
    let mut out: HashMap<String, Vec<Record>> = HashMap::new();
    for partition in 0..log.partitions(topic).await.unwrap() {
        for stored in log.read(topic, partition, 0, 100_000).await.unwrap() {
            let Ok(record) = Record::decode(&stored.payload) else {
                continue;
            };
            out.entry(record.header.task_id.clone())
                .or_default()
                .push(record);
        }
    }
    out
}

fn text_of(message: &Message) -> String {
    message
        .parts
        .iter()
        .filter_map(|p| match &p.content {
            PartContent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn state_of(record: &Record) -> Option<TaskState> {
    match &record.body {
        RecordBody::StatusUpdate { state, .. } | RecordBody::Terminal { state, .. } => {
            state.state().ok()
        }
        _ => None,
    }
}

#[tokio::test]
async fn a_task_runs_working_first_and_completes_when_the_handler_returns() {
    let log = crate::log::open("memory://").await.unwrap();
    let bridge = Bridge::open(log.clone(), BridgeConfig::new("agent"))
        .await
        .unwrap();
    let mut config = WorkerConfig::new("agent");
    // Share the bridge's view, as a server with both in one process does.
    config.view = Some(bridge.view().clone());
    let handler = handler_fn(|task: TaskContext| async move {
        assert_eq!(task.history().len(), 1);
        assert_eq!(task.caller(), &Caller::anonymous());
        let artifact = agentlog_wire::a2a::Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![Part::text(format!("echo: {}", task.text()))],
            metadata: None,
            extensions: Vec::new(),
        };
        task.artifact(artifact, false, true).await?;
        Ok(())
    });
    let worker = Worker::start(log.clone(), config, handler).await.unwrap();
    let h = Harness {
        log,
        bridge,
        worker,
    };
    let task = h.send("hello").await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.artifacts.len(), 1);
    assert_eq!(task.artifacts[0].parts, vec![Part::text("echo: hello")]);

    let events = h.events().await;
    let records = &events[&task.id];
    let source = h.worker.source().to_owned();
    assert!(matches!(records[0].body, RecordBody::Command { .. }));
    // The claim first: it is the task's WORKING (fold rule 10); everything after it under
    // attempt 1.
    assert!(
        matches!(&records[1].body, RecordBody::Claim { turn, .. } if *turn == task.history[0].message_id)
    );
    let folded = agentlog_wire::fold::fold(&records[..2]);
    assert_eq!(folded.state(), Some(TaskState::Working));
    let states: Vec<_> = records.iter().filter_map(state_of).collect();
    assert_eq!(states, vec![TaskState::Completed]);
    assert!(records[1..].iter().all(|r| r.header.source == source));
    assert!(records[1..].iter().all(|r| r.header.attempt == 1));
    h.shutdown().await;
}

#[tokio::test]
async fn a_handler_error_fails_the_task_with_its_message() {
    let h = Harness::new(
        "agent",
        handler_fn(|_task: TaskContext| async move { Err("no can do".into()) }),
    )
    .await;
    let task = h.send("hello").await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert_eq!(text_of(task.status.message.as_ref().unwrap()), "no can do");
    h.shutdown().await;
}

#[tokio::test]
async fn a_panic_fails_the_task_and_the_worker_keeps_serving() {
    let h = Harness::new(
        "agent",
        handler_fn(|task: TaskContext| async move {
            if task.text() == "panic" {
                panic!("boom");
            }
            Ok(())
        }),
    )
    .await;
    let task = h.send("panic").await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert_eq!(
        text_of(task.status.message.as_ref().unwrap()),
        "handler panicked: boom"
    );
    let task = h.send("fine").await;
    assert_eq!(task.status.state, TaskState::Completed);
    h.shutdown().await;
}

#[tokio::test]
async fn input_required_then_the_follow_up_runs_with_the_history() {
    let seen = Arc::new(AtomicUsize::new(0));
    let seen_in = seen.clone();
    let h = Harness::new(
        "agent",
        handler_fn(move |task: TaskContext| {
            let seen = seen_in.clone();
            async move {
                if task.history().len() == 1 {
                    task.input_required("what next?").await?;
                } else {
                    seen.store(task.history().len(), Ordering::SeqCst);
                    assert_eq!(task.message(), task.history().last().unwrap());
                    task.complete(Some(&format!("got {}", task.text()))).await?;
                }
                Ok(())
            }
        }),
    )
    .await;
    let task = h.send("start").await;
    assert_eq!(task.status.state, TaskState::InputRequired);
    let mut follow_up = user("more");
    follow_up.task_id = Some(task.id.clone());
    let task = h.send_message(follow_up).await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(text_of(task.status.message.as_ref().unwrap()), "got more");
    assert!(seen.load(Ordering::SeqCst) >= 3);
    h.shutdown().await;
}

#[tokio::test]
async fn a_cancel_fires_the_running_handlers_token_and_nothing_more_is_written() {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (fired_tx, mut fired) = mpsc::unbounded_channel();
    let h = Harness::new(
        "agent",
        handler_fn(move |task: TaskContext| {
            let started_tx = started_tx.clone();
            let fired_tx = fired_tx.clone();
            async move {
                started_tx.send(task.task_id().to_owned()).unwrap();
                task.cancellation().cancelled().await;
                fired_tx.send(task.task_id().to_owned()).unwrap();
                // Ignored: the task is canceled.
                task.complete(Some("too late")).await?;
                Ok(())
            }
        }),
    )
    .await;
    let id = h.send_immediately("long").await;
    let running = tokio::time::timeout(PATIENCE, started.recv())
        .await
        .unwrap();
    assert_eq!(running.as_deref(), Some(id.as_str()));
    assert_eq!(h.cancel(&id).await.status.state, TaskState::Canceled);
    let canceled = tokio::time::timeout(PATIENCE, fired.recv()).await.unwrap();
    assert_eq!(canceled.as_deref(), Some(id.as_str()));

    assert_eq!(h.get(&id).await.status.state, TaskState::Canceled);
    let source = h.worker.source().to_owned();
    let worker = h.worker;
    tokio::time::timeout(PATIENCE, worker.shutdown())
        .await
        .unwrap()
        .unwrap();
    let records = &records_of(&h.log, &h.bridge.config().topics.events).await[&id];
    let cancel_at = records
        .iter()
        .position(|r| matches!(r.body, RecordBody::CancelRequest { .. }))
        .unwrap();
    assert!(
        records[cancel_at..]
            .iter()
            .all(|r| r.header.source != source),
        "the worker wrote after the cancel: {records:?}"
    );
}

#[tokio::test]
async fn two_workers_share_fifty_tasks_and_each_ends_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counting = |calls: Arc<AtomicUsize>| {
        handler_fn(move |_task: TaskContext| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
    };
    let h = Harness::new("agent", counting(calls.clone())).await;
    let mut config = WorkerConfig::new("agent");
    config.shutdown_timeout = PATIENCE * 2;
    let second = Worker::start(h.log.clone(), config, counting(calls.clone()))
        .await
        .unwrap();
    let sends = (0..50).map(|i| h.send_message(user(&format!("task {i}"))));
    let tasks = futures::future::join_all(sends).await;
    for task in &tasks {
        assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    }

    let events = h.events().await;
    let mut by_source: HashMap<String, usize> = HashMap::new();
    for task in &tasks {
        let terminals: Vec<_> = events[&task.id]
            .iter()
            .filter(|r| matches!(r.body, RecordBody::Terminal { .. }))
            .collect();
        assert_eq!(terminals.len(), 1, "task {}", task.id);
        *by_source
            .entry(terminals[0].header.source.clone())
            .or_default() += 1;
    }
    assert_eq!(calls.load(Ordering::SeqCst), 50);
    // Four partitions over two members: each gets work (all 50 in two partitions would
    // take odds of 2^-49).
    assert!(by_source.get(h.worker.source()).is_some_and(|n| *n > 0));
    assert!(by_source.get(second.source()).is_some_and(|n| *n > 0));
    tokio::time::timeout(PATIENCE, second.shutdown())
        .await
        .unwrap()
        .unwrap();
    h.shutdown().await;
}

#[tokio::test]
async fn a_repeated_command_copy_does_not_run_the_handler_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let calls_in = calls.clone();
    let mut bridge = BridgeConfig::new("agent");
    // One partition: the commands topic is read in append order, so once the last task is
    // done every earlier copy has been looked at.
    bridge.topics = AgentTopics::new("agentlog", "agent", 1);
    let h = Harness::with(
        bridge,
        handler_fn(move |_task: TaskContext| {
            let calls = calls_in.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        }),
        |_| {},
    )
    .await;
    let topics = h.bridge.config().topics.clone();
    let id = h.send_immediately("once").await;
    let command = h.events().await[&id][0].clone();
    assert!(matches!(command.body, RecordBody::Command { .. }));
    let copy = Bytes::from(command.encode().unwrap());
    // A copy while the task may still be running, and one after it is done.
    h.log
        .append(&topics.commands, id.as_bytes(), vec![copy.clone()])
        .await
        .unwrap();
    h.wait_for_state(&id, TaskState::Completed).await;
    h.log
        .append(&topics.commands, id.as_bytes(), vec![copy])
        .await
        .unwrap();
    let last = h.send("sentinel").await;
    assert_eq!(last.status.state, TaskState::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    h.shutdown().await;
}

#[tokio::test]
async fn records_that_are_not_commands_are_skipped() {
    let h = Harness::new("agent", handler_fn(|_task: TaskContext| async { Ok(()) })).await;
    let topics = h.bridge.config().topics.clone();
    let cancel = Record {
        header: RecordHeader {
            task_id: "nope".into(),
            message_id: "x".into(),
            ..RecordHeader::default()
        },
        body: RecordBody::CancelRequest {
            metadata: String::new(),
        },
    };
    let orphan = Record {
        body: RecordBody::Command {
            params: r#"{"message":{"messageId":"x","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#
                .into(),
            retention_ms: 0,
        },
        ..cancel.clone()
    };
    for payload in [
        Bytes::from_static(b"\x07garbage"),
        Bytes::from(cancel.encode().unwrap()),
        Bytes::from(orphan.encode().unwrap()),
    ] {
        h.log
            .append(&topics.commands, b"nope", vec![payload])
            .await
            .unwrap();
    }
    let task = h.send("after").await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert!(!h.events().await.contains_key("nope"));
    h.shutdown().await;
}

#[tokio::test]
async fn handlers_of_different_tasks_run_concurrently_up_to_the_limit() {
    let current = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(2));
    let (c, m, b) = (current.clone(), most.clone(), barrier.clone());
    let h = Harness::with(
        BridgeConfig::new("agent"),
        handler_fn(move |_task: TaskContext| {
            let (c, m, b) = (c.clone(), m.clone(), b.clone());
            async move {
                let now = c.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
                // Passes only when two handlers are in at once.
                b.wait().await;
                c.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            }
        }),
        |config| config.concurrency = 2,
    )
    .await;
    let harness = &h;
    let sends = (0..6).map(|i| async move { harness.send(&format!("task {i}")).await });
    for task in futures::future::join_all(sends).await {
        assert_eq!(task.status.state, TaskState::Completed);
    }
    assert_eq!(most.load(Ordering::SeqCst), 2);
    h.shutdown().await;
}

#[tokio::test]
async fn an_unfinished_command_runs_again_after_a_restart() {
    let calls = Arc::new(AtomicUsize::new(0));
    let calls_in = calls.clone();
    // The first run never finishes on its own; the worker gives up on it at shutdown.
    let stubborn = handler_fn(move |task: TaskContext| {
        let calls = calls_in.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            task.working(Some("started")).await?;
            task.cancellation().cancelled().await;
            Ok(())
        }
    });
    let h = Harness::with(BridgeConfig::new("agent"), stubborn, |config| {
        config.shutdown_timeout = Duration::ZERO;
    })
    .await;
    let id = h.send_immediately("work").await;
    tokio::time::timeout(PATIENCE, async {
        while calls.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let Harness {
        log,
        bridge,
        worker,
    } = h;
    tokio::time::timeout(PATIENCE, worker.shutdown())
        .await
        .unwrap()
        .unwrap();
    let h = Harness {
        worker: Worker::start(
            log.clone(),
            WorkerConfig::new("agent"),
            handler_fn(|task: TaskContext| async move {
                task.complete(Some("second time lucky")).await?;
                Ok(())
            }),
        )
        .await
        .unwrap(),
        log,
        bridge,
    };
    h.wait_for_state(&id, TaskState::Completed).await;
    let task = h.get(&id).await;
    assert_eq!(
        text_of(task.status.message.as_ref().unwrap()),
        "second time lucky"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    h.shutdown().await;
}
