//! What the agents' tests share: a bridge and a worker running an agent over an in-memory log.
//! Timeouts are only upper bounds against hangs; nothing asserts on timing.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use agentlog::agent::Caller;
use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::worker::{Handler, Worker, WorkerConfig};
use agentlog_wire::TaskState;
use agentlog_wire::a2a::{
    CancelTaskRequest, Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    Task,
};

/// An upper bound for anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(60);

/// A bridge and a worker running an agent's handler.
pub(super) struct Harness {
    pub(super) bridge: Bridge,
    worker: Worker,
}

impl Harness {
    /// A bridge and a worker (with its own view) for `agent` over a fresh in-memory log.
    pub(super) async fn new(agent: &str, handler: impl Handler) -> Self {
        let log = agentlog::log::open("memory://").await.unwrap();
        let config = BridgeConfig::new(agent);
        let mut worker_config = WorkerConfig::new(agent);
        worker_config.topics = config.topics.clone();
        worker_config.shutdown_timeout = PATIENCE * 2;
        let bridge = Bridge::open(log.clone(), config).await.unwrap();
        let worker = Worker::start(log, worker_config, handler).await.unwrap();
        Self { bridge, worker }
    }

    /// Send `message` and wait for the task to settle (terminal or interrupted).
    pub(super) async fn send_message(&self, message: Message) -> Task {
        self.send_request(message, false).await
    }

    /// Send a new task with `text` and wait for it to settle.
    pub(super) async fn send(&self, text: &str) -> Task {
        self.send_message(user(text)).await
    }

    /// Send a new task with `text` and return its id at once.
    pub(super) async fn send_immediately(&self, text: &str) -> String {
        self.send_request(user(text), true).await.id
    }

    async fn send_request(&self, message: Message, return_immediately: bool) -> Task {
        let request = request(message, return_immediately);
        let response = tokio::time::timeout(
            PATIENCE * 2,
            self.bridge.send_message(&Caller::anonymous(), request),
        )
        .await
        .unwrap()
        .unwrap();
        match response {
            SendMessageResponse::Task(task) => task,
            SendMessageResponse::Message(m) => panic!("expected a task, got {m:?}"),
        }
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
