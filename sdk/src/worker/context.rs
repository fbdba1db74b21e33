//! [`TaskContext`]: what a handler knows about its task, and how it reports back.
//!
//! Every report is one record appended to the agent's events topic, keyed by the task id, so
//! it lands in the task's partition after the command it answers. Each is written under the
//! worker's claim on the turn (its attempt number and `source`), so the fold takes it only
//! while this attempt holds the turn. The context skips writes that could not matter any
//! more (after the turn ended, or once the task is canceled or the claim was lost). Taking the
//! client's follow-ups while the turn runs: `follow_up.rs`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentlog_wire::RecordBody;
use agentlog_wire::TaskState;
use agentlog_wire::a2a::{Artifact, Message, Part, SendMessageRequest};
use tokio_util::sync::CancellationToken;

use super::attempt::Attempt;
use super::reports::{Reports, SendsOnYield};
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};
use crate::view::TaskView;

mod follow_up;

/// How far the handler's turn has come. Stored in an `AtomicU8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Progress {
    /// Still running; reports are written.
    Open = 0,
    /// The handler asked for input or authentication: the turn is over.
    Interrupted = 1,
    /// The handler ended the task.
    Terminal = 2,
}

/// One turn of a task, as handed to a [`Handler`](super::Handler). Cheap to clone.
///
/// The reporting methods append records to the task log, in the order they are called. A
/// report that leaves the turn open (`working`, `artifact`, `report`, `log`) returns once it
/// is queued, so a burst of them costs one append; one that ends the turn returns once it
/// and everything before it is on the log. A report that could not be written is returned
/// as an error by the next reporting call, or fails the turn when the handler returns, and
/// nothing queued behind it is written.
///
/// They return `Ok` without writing once the turn has ended (after `input_required`,
/// `auth_required`, `complete`, `fail` or `reject`) or once
/// [`cancellation`](Self::cancellation) has fired: the log already says how the task ended (or
/// another attempt holds the turn), and the fold would ignore anything more.
///
/// # Side effects that must happen once
///
/// A turn runs again, on another worker, when the worker running it stops renewing its claim
/// (it crashed, hung, or lost the log for longer than the lease). The new run has
/// [`attempt`](Self::attempt) > 1, and whatever the first run reported is fenced out of the
/// task from the takeover on. A handler whose work has effects outside agentlog (a payment,
/// an email) passes [`idempotency_key`](Self::idempotency_key) to the system it calls, so
/// that the second run's call is recognised there as the first one's.
#[derive(Debug, Clone)]
pub struct TaskContext {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    attempt: Arc<Attempt>,
    /// `history[message_index]` is the message this turn answers.
    history: Vec<Message>,
    message_index: usize,
    cancellation: CancellationToken,
    progress: AtomicU8,
    /// The reports on their way to the log; the offset of the last one written is what the
    /// worker waits for the view to apply before it calls the turn settled.
    reports: Arc<Reports>,
    /// Artifact ids that earlier attempts of this turn wrote to: this attempt's first write
    /// of each starts it over, so an artifact never holds parts of two attempts.
    restart: Mutex<HashSet<String>>,
    view: TaskView,
    sync_timeout: Duration,
    /// The bridge path of the record that brought this turn's message.
    hops: Vec<String>,
    /// The trace context of the call that brought this turn's message.
    trace: Option<agentlog_wire::trace::TraceContext>,
    /// The context of this turn's own span, a child of `trace`.
    span: Option<agentlog_wire::trace::TraceContext>,
}

/// Everything a context is made of (built by the worker's run loop).
pub(super) struct Parts {
    pub(super) attempt: Arc<Attempt>,
    pub(super) history: Vec<Message>,
    pub(super) message_index: usize,
    pub(super) cancellation: CancellationToken,
    pub(super) restart: HashSet<String>,
    pub(super) view: TaskView,
    pub(super) sync_timeout: Duration,
    pub(super) hops: Vec<String>,
    pub(super) trace: Option<agentlog_wire::trace::TraceContext>,
    pub(super) span: Option<agentlog_wire::trace::TraceContext>,
}

impl TaskContext {
    /// A context for one turn. `history` must hold `message_index`; it is cut after it.
    pub(super) fn new(mut parts: Parts) -> Option<Self> {
        parts.history.truncate(parts.message_index + 1);
        parts.history.get(parts.message_index)?;
        let partition = parts.view.partition_of(&parts.attempt.task.id);
        let reports = Reports::new(parts.attempt.writer.clone(), parts.view.clone(), partition);
        Some(Self {
            inner: Arc::new(Inner {
                attempt: parts.attempt,
                history: parts.history,
                message_index: parts.message_index,
                cancellation: parts.cancellation,
                progress: AtomicU8::new(Progress::Open as u8),
                reports,
                restart: Mutex::new(parts.restart),
                view: parts.view,
                sync_timeout: parts.sync_timeout,
                hops: parts.hops,
                trace: parts.trace,
                span: parts.span,
            }),
        })
    }

    /// The W3C trace context of the call that brought this turn's message (its
    /// `traceparent` and `tracestate`), if it came with one: the parent of the work this
    /// turn does. The records this turn writes carry a child of it.
    pub fn trace_context(&self) -> Option<&agentlog_wire::trace::TraceContext> {
        self.inner.trace.as_ref()
    }

    /// The trace context of this turn's own span (a child of
    /// [`trace_context`](Self::trace_context), the one the turn's records carry): what a call
    /// this turn makes passes on as its parent (`agentlog worker --exec` gives it to its
    /// command as `TRACEPARENT` and `TRACESTATE`, which `agentlog send` sends on).
    pub fn span_context(&self) -> Option<&agentlog_wire::trace::TraceContext> {
        self.inner.span.as_ref()
    }

    /// The bridges the message this turn answers came through, oldest first, the bridge that
    /// wrote it last (the hop guard: [`crate::hops`]). Empty for a record written by no bridge
    /// of this release.
    pub fn hops(&self) -> &[String] {
        &self.inner.hops
    }

    /// Carry this turn's bridge path on `request` (its message's metadata under
    /// [`crate::hops::HOPS_METADATA_KEY`]) before sending it to another agent: the bridge that
    /// receives it continues the path, and refuses a call that would loop.
    pub fn stamp(&self, request: &mut SendMessageRequest) {
        crate::hops::stamp(&mut request.message, &self.inner.hops);
    }

    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.inner.attempt.task.id
    }

    /// The task's context (conversation) id.
    pub fn context_id(&self) -> &str {
        &self.inner.attempt.task.context_id
    }

    /// The message this turn answers: the command that created the task, or the follow-up
    /// message that continued it.
    pub fn message(&self) -> &Message {
        // `new` checked the index.
        &self.inner.history[self.inner.message_index]
    }

    /// The task's history up to and including [`message`](Self::message), oldest first.
    pub fn history(&self) -> &[Message] {
        &self.inner.history
    }

    /// The extensions the client activated for this turn's message (A2A §4.6): the URIs it
    /// named in the message's `extensions`, with those of its `A2A-Extensions` header that
    /// the agent's card declares (the bridge adds them to the message it records).
    pub fn extensions(&self) -> &[String] {
        &self.message().extensions
    }

    /// The skill the task is for: the one its first message names (metadata
    /// `agentlog.skill`, or `skillId`: [`crate::skill`]), which the bridge checked against
    /// the card; `None` when it names none.
    pub fn skill(&self) -> Option<&str> {
        crate::skill::task_skill(self.inner.history.first()?)
    }

    /// The principal and tenant of the task's owner.
    pub fn caller(&self) -> &Caller {
        &self.inner.attempt.task.caller
    }

    /// The message's text parts joined with `"\n"`.
    pub fn text(&self) -> String {
        self.message()
            .parts
            .iter()
            .filter_map(Part::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Which run of this turn this is: 1 for the first, more when a worker took the turn over
    /// from one that stopped renewing its claim (see the type's docs).
    pub fn attempt(&self) -> u32 {
        self.inner.attempt.turn_attempt
    }

    /// Whether an earlier run of this turn may have done part of its work: `attempt() > 1`.
    pub fn is_retry(&self) -> bool {
        self.attempt() > 1
    }

    /// A key naming this turn, the same in every run of it: `<task id>/<message id>`. Pass
    /// it to an outside system so that a side effect happens once however often the turn
    /// runs.
    pub fn idempotency_key(&self) -> String {
        format!("{}/{}", self.task_id(), self.message().message_id)
    }

    /// Fires when the task is canceled (or otherwise ended by someone else), when another
    /// worker took the turn over, or when the worker shuts down and gives up waiting for this
    /// handler. A handler doing long work should watch it and return promptly.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancellation
    }

    /// Report progress: status `working`, with an optional agent message.
    pub async fn working(&self, text: Option<&str>) -> Result<()> {
        self.status(TaskState::Working, text, Progress::Open).await
    }

    /// Add an artifact, or with `append` a chunk to the artifact with the same id;
    /// `last_chunk` marks its final chunk.
    pub async fn artifact(&self, artifact: Artifact, append: bool, last_chunk: bool) -> Result<()> {
        if self.skips() {
            return Ok(());
        }
        // A retry starts over what an earlier run of this turn wrote to this artifact.
        let restarted = self
            .inner
            .restart
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&artifact.artifact_id);
        let json = to_json(&artifact, "artifact")?;
        let body = RecordBody::ArtifactUpdate {
            append: append && !restarted,
            last_chunk,
            artifact: json,
        };
        self.write(self.inner.attempt.next_id(), body).await
    }

    /// Ask the client for more input: status `input-required` with `text`. Ends this turn;
    /// the handler runs again with the client's follow-up message.
    pub async fn input_required(&self, text: &str) -> Result<()> {
        self.status(TaskState::InputRequired, Some(text), Progress::Interrupted)
            .await
    }

    /// Ask the client to authenticate: status `auth-required` with `text`. Ends this turn.
    pub async fn auth_required(&self, text: &str) -> Result<()> {
        self.status(TaskState::AuthRequired, Some(text), Progress::Interrupted)
            .await
    }

    /// Complete the task, with an optional final agent message.
    pub async fn complete(&self, text: Option<&str>) -> Result<()> {
        self.status(TaskState::Completed, text, Progress::Terminal)
            .await
    }

    /// Fail the task with `text` as the agent's final message.
    pub async fn fail(&self, text: &str) -> Result<()> {
        self.status(TaskState::Failed, Some(text), Progress::Terminal)
            .await
    }

    /// Reject the task with `text` as the agent's final message.
    pub async fn reject(&self, text: &str) -> Result<()> {
        self.status(TaskState::Rejected, Some(text), Progress::Terminal)
            .await
    }

    /// Report progress (an MCP tool call's `notifications/progress`, or any long task's):
    /// status `working` with a message holding a progress part (`{progress, total?,
    /// message?}`, media type [`PROGRESS_MEDIA_TYPE`](agentlog_wire::mcp::call::PROGRESS_MEDIA_TYPE))
    /// and `message` as text. `progress` should grow with each report; the MCP bridge drops
    /// a report that does not (the spec requires strictly increasing values).
    pub async fn report(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<()> {
        use agentlog_wire::mcp::call::{PROGRESS_MEDIA_TYPE, Progress as Report, typed_part};
        // JSON has no NaN or infinity (serde would write null), and a client needs a number.
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!("progress must be a finite number (progress {progress}, total {total:?})"),
            ));
        }
        let report = Report {
            progress,
            total,
            message: message.map(str::to_owned),
        };
        let data = serde_json::to_value(&report)
            .map_err(|e| Error::new(ErrorKind::InvalidParams, "bad progress").with_source(e))?;
        let mut parts = vec![typed_part(data, PROGRESS_MEDIA_TYPE)];
        parts.extend(message.map(Part::text));
        self.status_parts(TaskState::Working, Some(parts), Progress::Open)
            .await
    }

    /// Log a message (an MCP tool call's `notifications/message`): status `working` with a
    /// message holding a log part (`{level, logger?, data}`, media type
    /// [`LOG_MEDIA_TYPE`](agentlog_wire::mcp::call::LOG_MEDIA_TYPE)). The MCP bridge sends it
    /// on a sync call's event stream, in order and before the result, when the client asked
    /// for `level` (modern: the request's `_meta` log level or a less severe one; legacy:
    /// every level); it is on the task's log either way.
    pub async fn log(
        &self,
        level: agentlog_wire::mcp::LoggingLevel,
        logger: Option<&str>,
        data: serde_json::Value,
    ) -> Result<()> {
        use agentlog_wire::mcp::call::{LOG_MEDIA_TYPE, typed_part};
        let message = agentlog_wire::mcp::LogMessage {
            level,
            logger: logger.map(str::to_owned),
            data,
        };
        let data = serde_json::to_value(&message)
            .map_err(|e| Error::new(ErrorKind::InvalidParams, "bad log message").with_source(e))?;
        let parts = vec![typed_part(data, LOG_MEDIA_TYPE)];
        self.status_parts(TaskState::Working, Some(parts), Progress::Open)
            .await
    }

    /// End the turn with `state` (terminal, or an interruption) and a status message of
    /// `parts`: how a handler answers with data rather than text (an MCP tool's result).
    pub async fn finish_with(&self, state: TaskState, parts: Vec<Part>) -> Result<()> {
        self.finish_with_metadata(state, parts, None).await
    }

    /// [`finish_with`](Self::finish_with), the status message carrying `metadata` too (an
    /// MCP ask's deadline: `ToolCall::ask`).
    pub(crate) async fn finish_with_metadata(
        &self,
        state: TaskState,
        parts: Vec<Part>,
        metadata: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<()> {
        let then = if state.is_terminal() {
            Progress::Terminal
        } else if state.is_interrupted() {
            Progress::Interrupted
        } else {
            Progress::Open
        };
        if self.skips() {
            return Ok(());
        }
        let attempt = &self.inner.attempt;
        let (record, parsed) = attempt.status_record_with(state, Some(parts), metadata)?;
        self.append(record, Some(parsed), then != Progress::Open)
            .await?;
        self.moved_to(then);
        Ok(())
    }

    /// Answer the client's message with a message instead of a task (A2A: "respond with a
    /// stateless Message"): `SendMessage` returns `{"message": ...}`, a streaming send streams
    /// that one message, and `GetTask` finds no task (fold rule 15). The reply is a record on
    /// the log like every report, so any bridge, and a retried send, answers the same. Ends
    /// the task. Answer first: once the client has seen the task (after a status or artifact
    /// report, a follow-up, or when the client asked for the task at once with
    /// `returnImmediately`), the reply completes the task with this message instead.
    pub async fn reply(&self, parts: Vec<Part>) -> Result<()> {
        if self.skips() {
            return Ok(());
        }
        let attempt = &self.inner.attempt;
        let id = attempt.next_id();
        let message = Message {
            context_id: Some(self.context_id().to_owned()),
            parts,
            ..Message::agent_text(id.clone(), "")
        };
        message
            .validate()
            .map_err(|e| Error::new(ErrorKind::InvalidParams, format!("invalid reply: {e}")))?;
        let body = RecordBody::Reply {
            message: to_json(&message, "reply")?,
        };
        self.end(attempt.record(id, body), Progress::Terminal).await
    }

    /// [`reply`](Self::reply) with one text part.
    pub async fn reply_text(&self, text: &str) -> Result<()> {
        self.reply(vec![Part::text(text)]).await
    }

    /// The offset (in the task's partition) of the last record this context wrote, if any.
    pub(super) fn last_written(&self) -> Option<u64> {
        self.inner.reports.last_written()
    }

    /// Wait until every report made so far is on the log; the failure of one the handler
    /// was not told of yet is returned.
    pub(super) async fn flush(&self) -> Result<()> {
        self.inner.reports.flush().await
    }

    /// Poll the turn's `handler` so that the reports it queues without waiting go out each
    /// time it yields ([`Reports::sends_on_yield`]).
    pub(super) fn sends_on_yield<F: std::future::Future>(&self, handler: F) -> SendsOnYield<F> {
        self.inner.reports.sends_on_yield(handler)
    }

    /// How far the turn has come.
    pub(super) fn progress(&self) -> Progress {
        match self.inner.progress.load(Ordering::Acquire) {
            0 => Progress::Open,
            1 => Progress::Interrupted,
            _ => Progress::Terminal,
        }
    }

    fn skips(&self) -> bool {
        self.inner.cancellation.is_cancelled() || self.progress() != Progress::Open
    }

    /// Write a status (or terminal) record and move the turn to `then` once it is written.
    async fn status(&self, state: TaskState, text: Option<&str>, then: Progress) -> Result<()> {
        if self.skips() {
            return Ok(());
        }
        self.status_parts(state, text.map(|t| vec![Part::text(t)]), then)
            .await
    }

    /// [`status`](Self::status) with a message of `parts`.
    async fn status_parts(
        &self,
        state: TaskState,
        parts: Option<Vec<Part>>,
        then: Progress,
    ) -> Result<()> {
        if self.skips() {
            return Ok(());
        }
        let (record, parsed) = self.inner.attempt.status_record_parsed(state, parts)?;
        self.append(record, Some(parsed), then != Progress::Open)
            .await?;
        self.moved_to(then);
        Ok(())
    }

    /// Write `record` and move the turn to `then` once it is written.
    async fn end(&self, record: agentlog_wire::Record, then: Progress) -> Result<()> {
        self.append(record, None, true).await?;
        self.moved_to(then);
        Ok(())
    }

    /// The turn has come to `then` (its record is written).
    fn moved_to(&self, then: Progress) {
        if then != Progress::Open {
            self.inner.progress.store(then as u8, Ordering::Release);
        }
    }

    async fn write(&self, message_id: String, body: RecordBody) -> Result<()> {
        let record = self.inner.attempt.record(message_id, body);
        self.append(record, None, false).await
    }

    /// Write one record of this attempt ([`Reports`]): with `wait`, return once it is on
    /// the log. Written, it is applied to the worker's view at once when the view stands
    /// right before it (as a claim is): the turn's end then reaches whoever follows the task
    /// (the bridge's waiting call, the supervisor's confirmation) without waiting for the
    /// view's follower to read it back. `parsed`: the change the record makes, as its writer
    /// knows it (none: parsed when applied).
    async fn append(
        &self,
        record: agentlog_wire::Record,
        parsed: Option<agentlog_wire::fold::Parsed>,
        wait: bool,
    ) -> Result<()> {
        self.inner.reports.write(record, parsed, wait).await
    }
}

fn to_json<T: serde::Serialize>(value: &T, what: &str) -> Result<String> {
    serde_json::to_string(value).map_err(|e| {
        Error::new(
            ErrorKind::InvalidParams,
            format!("the {what} cannot be encoded"),
        )
        .with_source(e)
    })
}

#[cfg(test)]
mod tests;
