//! The worker runtime: runs an agent's [`Handler`] for the tasks its bridges put on the log.
//!
//! A [`Worker`] joins the agent's worker group on the commands topic (so the workers of one
//! agent share its partitions), and for each command or follow-up message it receives runs
//! the handler with a [`TaskContext`], whose reports become records on the events topic, the
//! task log of record. The worker keeps no state of its own beyond what it is running now:
//!
//! - **What to run** is decided against the task log, not the queue ([`TaskView`]): a
//!   command runs only while its task is live and still waits for exactly that message, so
//!   repeated copies and redelivered commands of finished tasks are skipped.
//! - **At least once**: a partition is committed only up to its first command still being
//!   handled, so a crashed worker's unfinished commands are handled again by whoever takes
//!   the partition over.
//! - **Cancellation** reaches a handler through the log: a bridge's cancel request ends the
//!   task at its log position, and the worker, following the task in its view, fires the
//!   handler's [`TaskContext::cancellation`] token.
//!
//! The rules are written in `skills/workers/SKILL.md`.

mod context;
pub mod demo;
mod handler;
mod pending;
mod run;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::agent::AgentTopics;
use crate::error::Result;
use crate::log::Log;
use crate::view::TaskView;

pub use context::TaskContext;
pub use demo::DemoHandler;
pub use handler::{Handler, HandlerError, handler_fn};

/// How a worker behaves.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The agent served, and so its topics and worker group.
    pub topics: AgentTopics,
    /// The most handlers running at once. Default 64.
    pub concurrency: usize,
    /// The `source` written in this worker's records. Default `worker-<uuid>`.
    pub source: String,
    /// A view of the agent's events topic to share (e.g. a bridge's in the same process);
    /// without one the worker starts its own.
    pub view: Option<TaskView>,
    /// How long [`Worker::shutdown`] waits for running handlers before firing their
    /// cancellation tokens and abandoning them (they run again elsewhere). Default 10 s.
    pub shutdown_timeout: Duration,
}

impl WorkerConfig {
    /// Defaults for `agent`: its topics in the default stream.
    pub fn new(agent: &str) -> Self {
        Self {
            topics: AgentTopics::of(agent),
            concurrency: 64,
            source: format!("worker-{}", uuid::Uuid::new_v4().simple()),
            view: None,
            shutdown_timeout: Duration::from_secs(10),
        }
    }
}

/// A running worker. Dropping it stops taking work, like [`shutdown`](Self::shutdown) without
/// waiting for the result.
#[derive(Debug)]
pub struct Worker {
    source: String,
    view: TaskView,
    stop: CancellationToken,
    task: JoinHandle<Result<()>>,
    _stop_on_drop: DropGuard,
}

impl Worker {
    /// Ensure the agent's topics, start (or share) the task view, join the commands topic's
    /// worker group, and start handling commands with `handler`.
    pub async fn start(log: Log, config: WorkerConfig, handler: impl Handler) -> Result<Worker> {
        let topics = config.topics;
        topics.ensure(&log).await?;
        let view = match config.view {
            Some(view) => view,
            None => TaskView::start(log.clone(), topics.events.clone()).await?,
        };
        let consumer = log
            .join_group(&topics.commands, &topics.worker_group())
            .await?;
        let stop = CancellationToken::new();
        let shared = Arc::new(run::Shared {
            view: view.clone(),
            handler: Arc::new(handler),
            writer: Arc::new(context::Writer {
                log,
                events: topics.events,
                source: config.source.clone(),
            }),
            concurrency: config.concurrency.max(1),
            shutdown_timeout: config.shutdown_timeout,
            stop: stop.clone(),
            force: CancellationToken::new(),
        });
        let task = tokio::spawn(run::run(shared, consumer));
        Ok(Worker {
            source: config.source,
            view,
            _stop_on_drop: stop.clone().drop_guard(),
            stop,
            task,
        })
    }

    /// The `source` this worker writes in its records.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The task view the worker decides with.
    pub fn view(&self) -> &TaskView {
        &self.view
    }

    /// Stop taking work, wait (at most [`WorkerConfig::shutdown_timeout`], then a second more
    /// after firing their tokens) for running handlers, commit what finished and leave the
    /// group. Commands not finished are delivered again to the group's other members.
    pub async fn shutdown(self) -> Result<()> {
        self.stop.cancel();
        self.task.await.map_err(run::join_error)?
    }
}
