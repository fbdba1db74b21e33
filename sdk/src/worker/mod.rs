//! The worker runtime: runs an agent's [`Handler`] for the tasks its bridges put on the log.
//!
//! A [`Worker`] joins the agent's worker group on the commands topic (so the workers of one
//! agent share its partitions), and for each command or follow-up message it receives runs
//! the handler with a [`TaskContext`], whose reports become records on the events topic, the
//! task log of record. The worker keeps no state of its own beyond what it is running now:
//!
//! - **What to run** is decided against the task log, not the queue ([`TaskView`]): a
//!   command's *turn* (the task and the client message it answers) runs only while the task
//!   waits for exactly that message, so repeated copies and redelivered commands of finished
//!   turns are skipped.
//! - **Exactly one run per turn**, as long as workers keep their claims: a worker first
//!   appends a *claim* on the turn (an attempt number and a lease) and runs the handler only
//!   if the fold says its claim applied; it renews the lease while the handler runs. Another
//!   worker handed the same command (a rebalance, a redelivery) waits while the lease lives,
//!   and takes the turn over, with the next attempt, only once it has run out: the first
//!   worker crashed or hung. From then on the fold drops everything the old attempt writes
//!   (fencing), so a client never sees the output of two attempts mixed.
//! - **No command is lost**: a partition is committed only up to its first command whose turn
//!   is not settled, so a crashed worker's commands are delivered again to whoever takes the
//!   partition over; a command that never reached the queue is put back by the sweeper.
//! - **Cancellation** reaches a handler through the log: a bridge's cancel request ends the
//!   task at its log position, and the worker, following the task in its view, fires the
//!   handler's [`TaskContext::cancellation`] token (as it does when another worker takes the
//!   turn over).
//!
//! The rules are written in `skills/workers/SKILL.md`.

mod attempt;
mod backlog;
mod claim;
mod context;
mod expiry;
mod handler;
mod pending;
mod pickup;
mod reports;
mod reserve;
mod run;
mod served;
mod settle;
mod shared;
mod skills;
mod sweep;
#[cfg(test)]
mod tests;
mod tools;
mod turn;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::agent::AgentTopics;
use crate::error::Result;
use crate::log::Log;
use crate::security::{RecordSigner, RecordVerifier};
use crate::view::{TaskView, ViewOptions};
use pickup::Pickup;
use reserve::Reservations;

pub use backlog::Backlog;
pub use context::TaskContext;
pub use expiry::DEFAULT_INPUT_TIMEOUT;
pub use handler::{Handler, HandlerError, handler_fn};
pub use served::{
    CompletionHandler, HandlerResult, PromptHandler, ResourceHandler, completion_fn, prompt_fn,
    resource_fn,
};
pub use skills::Skills;
pub use tools::{ToolCall, ToolHandler, Tools, tool_fn};

/// How a worker behaves.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// cancellation tokens and releasing their turns (they run again elsewhere, at once).
    /// Default 10 s.
    pub shutdown_timeout: Duration,
    /// How long a claim on a turn holds without a renewal; the worker renews it every third
    /// of it while the handler runs. A worker that dies leaves its turns to others once this
    /// has passed since its last renewal. Shorter means faster takeovers, longer means fewer
    /// spurious ones (a stall longer than the lease, or clocks further apart, lets another
    /// worker run the turn too). Default 10 s.
    pub lease: Duration,
    /// How long a turn may wait for a claim before this worker's sweeper puts its command
    /// back on the queue (it may never have got there). Default 3 s.
    pub requeue_after: Duration,
    /// How long a look at the task log may wait for the view to catch up before it is retried.
    /// Default 10 s.
    pub sync_timeout: Duration,
    /// Signs every record this worker writes (claims, statuses, artifacts, terminals);
    /// `None` writes them unsigned.
    pub signer: Option<RecordSigner>,
    /// With a trust configured, the worker runs only commands and continues it admits, and
    /// its own view (when it starts one) applies only the records it admits
    /// (`skills/security/records.md`). A shared `view` keeps its own setting. `None`: every
    /// record.
    pub trust: Option<RecordVerifier>,
}

setters!(WorkerConfig {
    topics: AgentTopics,
    concurrency: usize,
    source: String,
    shutdown_timeout: Duration,
    lease: Duration,
    requeue_after: Duration,
    sync_timeout: Duration,
} optional {
    view: TaskView,
    signer: RecordSigner,
    trust: RecordVerifier,
});

impl WorkerConfig {
    /// Defaults for `agent`: its topics in the default stream.
    pub fn new(agent: &str) -> Self {
        Self {
            topics: AgentTopics::of(agent),
            concurrency: 64,
            source: format!("worker-{}", uuid::Uuid::new_v4().simple()),
            view: None,
            shutdown_timeout: Duration::from_secs(10),
            lease: Duration::from_secs(10),
            requeue_after: Duration::from_secs(3),
            sync_timeout: Duration::from_secs(10),
            signer: None,
            trust: None,
        }
    }
}

/// A running worker. Dropping it stops taking work, like [`shutdown`](Self::shutdown) without
/// waiting for the result.
#[derive(Debug)]
pub struct Worker {
    source: String,
    view: TaskView,
    backlog: Backlog,
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
        let shares_view = config.view.is_some();
        let view = match config.view {
            Some(view) => view,
            None => {
                let options = ViewOptions {
                    verifier: config.trust.clone(),
                    ..ViewOptions::restore_only(topics.checkpoints.clone())
                };
                TaskView::start_with(log.clone(), topics.events.clone(), options).await?
            }
        };
        // New commands reach their first turns parsed: those this process's bridge appends
        // on a shared view, and those the view's follower applies.
        view.hand_off_commands();
        let consumer = log
            .join_group(&topics.commands, &topics.worker_group())
            .await?;
        let backlog = Backlog::new(log.clone(), topics.commands.clone());
        let stop = CancellationToken::new();
        let (landed, claimed) = tokio::sync::mpsc::unbounded_channel();
        let concurrency = config.concurrency.max(1);
        let shared = Arc::new(shared::Shared {
            view: view.clone(),
            handler: Arc::new(handler),
            writer: Arc::new(attempt::Writer {
                log,
                events: topics.events,
                commands: topics.commands,
                source: config.source.clone(),
                signer: config.signer,
                trust: config.trust.clone(),
            }),
            trust: config.trust,
            permits: Arc::new(Semaphore::new(concurrency)),
            // Turns waiting for a lease or a permit hold no handler; allow a few per slot.
            max_supervised: concurrency.saturating_mul(4),
            lease: config.lease.max(Duration::from_millis(30)),
            sync_timeout: config.sync_timeout,
            requeue_after: config.requeue_after,
            shutdown_timeout: config.shutdown_timeout,
            stop: stop.clone(),
            force: CancellationToken::new(),
            reservations: Reservations::new(landed),
        });
        if shares_view {
            view.take_first_turns(Arc::new(Pickup::new(Arc::downgrade(&shared))));
        }
        let task = tokio::spawn(run::run(shared, consumer, claimed, backlog.clone()));
        Ok(Worker {
            source: config.source,
            view,
            backlog,
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

    /// How far behind its commands queue the worker is ([`Backlog::records`]), for as
    /// long as anyone holds the handle.
    pub fn backlog(&self) -> Backlog {
        self.backlog.clone()
    }

    /// Stop taking work, wait (at most [`WorkerConfig::shutdown_timeout`], then a second more
    /// after firing their tokens) for running handlers, commit what finished and leave the
    /// group. The turns not finished are released (another worker takes them over at once)
    /// and their commands are delivered again to the group's other members; a first turn
    /// claimed in its command's append has no copy to deliver, and the sweep of the member
    /// that gets its partition finds it within a second.
    pub async fn shutdown(self) -> Result<()> {
        self.stop.cancel();
        self.task.await.map_err(run::join_error)?
    }

    /// Stop at once, as a crash would: nothing more is written, released or committed, and
    /// running handlers are aborted. The turns this worker held are taken over by the
    /// group's other members once their leases run out. For tests of crash recovery, and for
    /// a host that must stop without waiting.
    pub fn abort(self) {
        self.task.abort();
    }
}
