//! The worker's run loop: poll the commands topic, decide against the task log which commands
//! still need a handler, run the handlers, and commit what is finished.
//!
//! The commands topic only hands out work; the events topic decides. For each command or
//! continue record the loop brings its view up to date with the task's partition (the bridge
//! appended the events record before the commands copy, so it is there) and runs the handler
//! only if the task still waits for exactly that message: not terminal, not interrupted, its
//! `last_message_id` is the record's `message_id`, and that turn is not already running here.
//! Repeated copies and redelivered commands of finished tasks are skipped that way.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::a2a::Role;
use agentlog_wire::{Record, RecordBody, TaskState};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::{Id, JoinError, JoinSet};
use tokio_util::sync::CancellationToken;

use super::context::{Parts, TaskContext, Turn, Writer};
use super::handler::Handler;
use super::pending::Pending;
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};
use crate::log::{Delivery, GroupConsumer, StoredRecord};
use crate::view::{TaskEvent, TaskInfo, TaskView};

/// How long one poll waits for records; also how often the loop looks at the stop signal
/// and commits finished work while idle.
const POLL_TIMEOUT: Duration = Duration::from_millis(250);
/// The most records taken in one poll.
const POLL_MAX: usize = 64;
/// How long the view may take to catch up with a task's partition before the loop retries.
const SYNC_TIMEOUT: Duration = Duration::from_secs(10);
/// After the grace period and firing the handlers' tokens, how long to wait before aborting.
const ABORT_AFTER: Duration = Duration::from_secs(1);

/// What the loop and every handler run share.
pub(super) struct Shared {
    pub(super) view: TaskView,
    pub(super) handler: Arc<dyn Handler>,
    pub(super) writer: Arc<Writer>,
    pub(super) concurrency: usize,
    pub(super) shutdown_timeout: Duration,
    /// Stop taking work (shutdown requested).
    pub(super) stop: CancellationToken,
    /// The grace period is over: handlers' tokens fire, their work is abandoned.
    pub(super) force: CancellationToken,
}

/// How a handler run ended, as far as the command's offset is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The turn is settled in the log (or never needed a handler): commit past it.
    Done,
    /// The worker gave up on it (shutdown): leave it uncommitted so it is delivered again.
    Abandoned,
}

/// A handler run in flight.
struct Running {
    partition: u32,
    offset: u64,
    turn: TurnKey,
}

/// A turn of a task: its id and the client message it answers.
type TurnKey = (String, String);

/// A command that needs its handler run.
struct Job {
    info: TaskInfo,
    caller: Caller,
    message_id: String,
}

enum Decision {
    Run(Job),
    Skip,
    /// The worker is stopping before it could decide: leave the record uncommitted.
    Stopped,
}

/// The loop's own state; only the loop touches it.
struct Loop {
    shared: Arc<Shared>,
    pending: Pending,
    running: HashMap<Id, Running>,
    turns: HashSet<TurnKey>,
    set: JoinSet<Outcome>,
}

/// Run until [`Shared::stop`] fires, then drain (bounded) and leave the group.
pub(super) async fn run(shared: Arc<Shared>, mut consumer: Box<dyn GroupConsumer>) -> Result<()> {
    let mut state = Loop {
        shared: shared.clone(),
        pending: Pending::default(),
        running: HashMap::new(),
        turns: HashSet::new(),
        set: JoinSet::new(),
    };
    let mut backoff = Backoff::default();
    while !shared.stop.is_cancelled() {
        state.reap_ready();
        state.commit(consumer.as_mut()).await;
        match consumer.poll(POLL_MAX, POLL_TIMEOUT).await {
            Ok(None) => backoff.reset(),
            Ok(Some(delivery)) => {
                backoff.reset();
                state.dispatch(delivery).await;
            }
            Err(error) => {
                tracing::warn!(%error, "worker: polling the commands topic failed; retrying");
                backoff.sleep(&shared.stop).await;
            }
        }
    }
    state.drain().await;
    state.commit(consumer.as_mut()).await;
    consumer.leave().await
}

impl Loop {
    /// Decide and start every record of a delivery, in order.
    async fn dispatch(&mut self, delivery: Delivery) {
        let partition = delivery.partition;
        for stored in &delivery.records {
            self.pending.start(partition, stored.offset);
        }
        for stored in &delivery.records {
            match self.decide(stored).await {
                Decision::Skip => self.pending.finish(partition, stored.offset),
                // The rest stay in flight, so they are not committed and come again.
                Decision::Stopped => return,
                Decision::Run(job) => {
                    if !self.wait_for_slot().await {
                        return;
                    }
                    self.spawn(partition, stored.offset, job);
                }
            }
        }
    }

    async fn decide(&mut self, stored: &StoredRecord) -> Decision {
        let record = match Record::decode(&stored.payload) {
            Ok(record) => record,
            Err(error) => {
                tracing::warn!(
                    partition = stored.partition, offset = stored.offset, %error,
                    "worker: skipping a command that does not decode"
                );
                return Decision::Skip;
            }
        };
        if !matches!(
            record.body,
            RecordBody::Command { .. } | RecordBody::Continue { .. }
        ) {
            return Decision::Skip;
        }
        let task_id = record.header.task_id;
        let message_id = record.header.message_id;
        let turn = (task_id, message_id);
        if self.turns.contains(&turn) {
            return Decision::Skip;
        }
        let (task_id, message_id) = turn;
        let view = &self.shared.view;
        let partition = view.partition_of(&task_id);
        let mut backoff = Backoff::default();
        while let Err(error) = view.sync(Some(partition), SYNC_TIMEOUT).await {
            tracing::warn!(task_id, %error, "worker: the task view is not catching up; retrying");
            if !backoff.sleep(&self.shared.stop).await {
                return Decision::Stopped;
            }
        }
        let Some((info, caller)) = view.lookup_any(&task_id) else {
            tracing::debug!(
                task_id,
                "worker: no such task in the log; skipping its command"
            );
            return Decision::Skip;
        };
        if info.state.is_terminal()
            || info.state.is_interrupted()
            || info.last_message_id.as_deref() != Some(message_id.as_str())
        {
            tracing::debug!(task_id, message_id, state = %info.state, "worker: command already handled");
            return Decision::Skip;
        }
        Decision::Run(Job {
            info,
            caller,
            message_id,
        })
    }

    /// Wait until fewer than `concurrency` handlers run; `false` if the worker is stopping.
    async fn wait_for_slot(&mut self) -> bool {
        while self.set.len() >= self.shared.concurrency.max(1) {
            tokio::select! {
                () = self.shared.stop.cancelled() => return false,
                Some(joined) = self.set.join_next_with_id() => self.reap(joined),
            }
        }
        true
    }

    fn spawn(&mut self, partition: u32, offset: u64, job: Job) {
        let turn = (job.info.id.to_string(), job.message_id.clone());
        self.turns.insert(turn.clone());
        let handle = self.set.spawn(supervise(self.shared.clone(), job));
        self.running.insert(
            handle.id(),
            Running {
                partition,
                offset,
                turn,
            },
        );
    }

    fn reap_ready(&mut self) {
        while let Some(joined) = self.set.try_join_next_with_id() {
            self.reap(joined);
        }
    }

    fn reap(&mut self, joined: std::result::Result<(Id, Outcome), JoinError>) {
        let (id, outcome) = match joined {
            Ok((id, outcome)) => (id, outcome),
            Err(error) => {
                if error.is_panic() {
                    tracing::error!(%error, "worker: a handler supervisor panicked; its command stays uncommitted");
                }
                (error.id(), Outcome::Abandoned)
            }
        };
        let Some(running) = self.running.remove(&id) else {
            return;
        };
        self.turns.remove(&running.turn);
        if outcome == Outcome::Done {
            self.pending.finish(running.partition, running.offset);
        }
    }

    async fn commit(&mut self, consumer: &mut dyn GroupConsumer) {
        for (partition, next) in self.pending.commits() {
            match consumer.commit(partition, next).await {
                Ok(()) => self.pending.committed(partition, next),
                // Kept pending: the next round commits again.
                Err(error) => {
                    tracing::warn!(partition, next, %error, "worker: commit failed; retrying later");
                }
            }
        }
    }

    /// Wait for running handlers for the grace period, then fire their tokens, then abort.
    async fn drain(&mut self) {
        let grace = tokio::time::sleep(self.shared.shutdown_timeout);
        tokio::pin!(grace);
        loop {
            tokio::select! {
                () = &mut grace => break,
                joined = self.set.join_next_with_id() => match joined {
                    Some(joined) => self.reap(joined),
                    None => return,
                },
            }
        }
        tracing::warn!(
            running = self.set.len(),
            "worker: handlers still running after the shutdown grace period; canceling them"
        );
        self.shared.force.cancel();
        let abort = tokio::time::sleep(ABORT_AFTER);
        tokio::pin!(abort);
        loop {
            tokio::select! {
                () = &mut abort => break,
                joined = self.set.join_next_with_id() => match joined {
                    Some(joined) => self.reap(joined),
                    None => return,
                },
            }
        }
        self.set.abort_all();
        while let Some(joined) = self.set.join_next_with_id().await {
            self.reap(joined);
        }
    }
}

/// Run one turn: load the task, write WORKING if it was submitted, run the handler in its own
/// task (so a panic is caught) while watching the log for the task ending, then settle it.
async fn supervise(shared: Arc<Shared>, job: Job) -> Outcome {
    let view = &shared.view;
    let task_id = job.info.id.to_string();
    let token = shared.force.child_token();
    let Some((info, events)) = view.subscribe(None, &task_id) else {
        return Outcome::Done;
    };
    if info.state.is_terminal() {
        return Outcome::Done;
    }
    let mut backoff = Backoff::default();
    let task = loop {
        match view.load(&info).await {
            Ok(task) => break task,
            Err(error) => {
                tracing::warn!(task_id, %error, "worker: cannot load the task; retrying");
                if !backoff.sleep(&shared.force).await {
                    return Outcome::Abandoned;
                }
            }
        }
    };
    let Some(message_index) = task
        .history
        .iter()
        .rposition(|m| m.message_id == job.message_id && m.role == Role::User)
    else {
        tracing::warn!(
            task_id,
            message_id = job.message_id,
            "worker: the task's history lacks its message"
        );
        return Outcome::Done;
    };
    let Some(ctx) = TaskContext::new(Parts {
        task_id: task_id.clone(),
        context_id: task.context_id,
        history: task.history,
        message_index,
        caller: job.caller,
        cancellation: token.clone(),
        writer: shared.writer.clone(),
    }) else {
        return Outcome::Done;
    };
    if info.state == TaskState::Submitted
        && let Err(error) = ctx.working(None).await
    {
        tracing::warn!(task_id, %error, "worker: cannot mark the task working");
    }

    let handler = shared.handler.clone();
    let run_ctx = ctx.clone();
    let mut handle = tokio::spawn(async move { handler.handle(run_ctx).await });
    // If this supervisor is aborted (shutdown), the handler goes with it.
    let _abort = AbortOnDrop(handle.abort_handle());
    let watch = watch_for_end(view, &task_id, events, &token);
    tokio::pin!(watch);
    let mut watching = true;
    let result = loop {
        tokio::select! {
            result = &mut handle => break result,
            () = &mut watch, if watching => watching = false,
        }
    };

    if shared.force.is_cancelled() {
        return Outcome::Abandoned;
    }
    if token.is_cancelled() {
        // The log says the task ended (canceled, or by this handler): nothing more to write.
        return Outcome::Done;
    }
    let failure = match result {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(error.to_string()),
        Err(error) if error.is_panic() => {
            let payload = error.into_panic();
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Some(format!("handler panicked: {text}"))
        }
        Err(_) => return Outcome::Abandoned,
    };
    if ctx.turn() != Turn::Open {
        if let Some(failure) = failure {
            tracing::warn!(
                task_id,
                failure,
                "worker: handler failed after ending its turn; the reported outcome stands"
            );
        }
        return Outcome::Done;
    }
    settle(&shared, &ctx, failure.as_deref()).await
}

/// Complete (or fail with `failure`) a turn the handler left open, retrying while the log is
/// unavailable.
async fn settle(shared: &Shared, ctx: &TaskContext, failure: Option<&str>) -> Outcome {
    let mut backoff = Backoff::default();
    loop {
        let written = match failure {
            None => ctx.complete(None).await,
            Some(text) => ctx.fail(text).await,
        };
        match written {
            Ok(()) => return Outcome::Done,
            Err(error) if error.is_retryable() => {
                tracing::warn!(task_id = ctx.task_id(), %error, "worker: cannot settle the task; retrying");
                if !backoff.sleep(&shared.force).await {
                    return Outcome::Abandoned;
                }
            }
            Err(error) => {
                tracing::error!(task_id = ctx.task_id(), %error, "worker: cannot settle the task; giving up");
                return Outcome::Done;
            }
        }
    }
}

/// Return once the log shows the task terminal, after firing `token`. Never returns if the
/// view stops.
async fn watch_for_end(
    view: &TaskView,
    task_id: &str,
    mut events: tokio::sync::broadcast::Receiver<Arc<TaskEvent>>,
    token: &CancellationToken,
) {
    loop {
        match events.recv().await {
            Ok(event) if event.state.is_terminal() => break,
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => {
                if view
                    .lookup_any(task_id)
                    .is_some_and(|(info, _)| info.state.is_terminal())
                {
                    break;
                }
            }
            Err(RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
    token.cancel();
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Exponential backoff from 10 ms to 1 s.
#[derive(Debug)]
struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Self(Duration::from_millis(10))
    }
}

impl Backoff {
    fn reset(&mut self) {
        *self = Self::default();
    }

    /// Sleep the current delay and double it; `false` (at once) if `stop` fires.
    async fn sleep(&mut self, stop: &CancellationToken) -> bool {
        let delay = self.0;
        self.0 = (self.0 * 2).min(Duration::from_secs(1));
        tokio::select! {
            () = stop.cancelled() => false,
            () = tokio::time::sleep(delay) => true,
        }
    }
}

/// The error for a run loop that did not return normally.
pub(super) fn join_error(error: JoinError) -> Error {
    Error::new(ErrorKind::Internal, "the worker's run loop panicked").with_source(error)
}
