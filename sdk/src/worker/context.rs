//! [`TaskContext`]: what a handler knows about its task, and how it reports back.
//!
//! Every report is one record appended to the agent's events topic, keyed by the task id, so
//! it lands in the task's partition after the command it answers. The fold decides what each
//! record does; the context only skips writes that could not matter any more (after the turn
//! ended, or once the task is canceled or the worker gave up on it).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use agentlog_wire::a2a::{Artifact, Message, Part};
use agentlog_wire::{Record, RecordBody, RecordHeader, TaskState};
use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};
use crate::log::{Log, TopicRef};

/// Where a worker's records go, and under which name.
#[derive(Debug)]
pub(super) struct Writer {
    pub(super) log: Log,
    pub(super) events: TopicRef,
    pub(super) source: String,
}

impl Writer {
    /// Append one record to the events topic, keyed by its task.
    async fn append(&self, record: &Record) -> Result<()> {
        let bytes = record.encode().map_err(|e| {
            Error::new(ErrorKind::InvalidParams, "the record cannot be encoded").with_source(e)
        })?;
        self.log
            .append(
                &self.events,
                record.header.task_id.as_bytes(),
                vec![Bytes::from(bytes)],
            )
            .await
            .map(|_| ())
    }
}

/// How far the handler's turn has come. Stored in an `AtomicU8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Turn {
    /// Still running; reports are written.
    Open = 0,
    /// The handler asked for input or authentication: the turn is over.
    Interrupted = 1,
    /// The handler ended the task.
    Terminal = 2,
}

/// One turn of a task, as handed to a [`Handler`](super::Handler). Cheap to clone.
///
/// The reporting methods append records to the task log. They return `Ok` without writing
/// once the turn has ended (after `input_required`, `auth_required`, `complete`, `fail` or
/// `reject`) or once [`cancellation`](Self::cancellation) has fired: the log already says how
/// the task ended, and the fold would ignore anything more.
#[derive(Debug, Clone)]
pub struct TaskContext {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    task_id: String,
    context_id: String,
    /// `history[message_index]` is the message this turn answers.
    history: Vec<Message>,
    message_index: usize,
    caller: Caller,
    cancellation: CancellationToken,
    writer: Arc<Writer>,
    turn: AtomicU8,
}

/// Everything a context is made of (built by the worker's run loop).
pub(super) struct Parts {
    pub(super) task_id: String,
    pub(super) context_id: String,
    pub(super) history: Vec<Message>,
    pub(super) message_index: usize,
    pub(super) caller: Caller,
    pub(super) cancellation: CancellationToken,
    pub(super) writer: Arc<Writer>,
}

impl TaskContext {
    /// A context for one turn. `history` must hold `message_index`; it is cut after it.
    pub(super) fn new(mut parts: Parts) -> Option<Self> {
        parts.history.truncate(parts.message_index + 1);
        parts.history.get(parts.message_index)?;
        Some(Self {
            inner: Arc::new(Inner {
                task_id: parts.task_id,
                context_id: parts.context_id,
                history: parts.history,
                message_index: parts.message_index,
                caller: parts.caller,
                cancellation: parts.cancellation,
                writer: parts.writer,
                turn: AtomicU8::new(Turn::Open as u8),
            }),
        })
    }

    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.inner.task_id
    }

    /// The task's context (conversation) id.
    pub fn context_id(&self) -> &str {
        &self.inner.context_id
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

    /// The principal and tenant of the task's owner.
    pub fn caller(&self) -> &Caller {
        &self.inner.caller
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

    /// Fires when the task is canceled (or otherwise ended by someone else), or when the
    /// worker shuts down and gives up waiting for this handler. A handler doing long work
    /// should watch it and return promptly.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancellation
    }

    /// Report progress: status `working`, with an optional agent message.
    pub async fn working(&self, text: Option<&str>) -> Result<()> {
        self.status(TaskState::Working, text, Turn::Open).await
    }

    /// Add an artifact, or with `append` a chunk to the artifact with the same id;
    /// `last_chunk` marks its final chunk.
    pub async fn artifact(&self, artifact: Artifact, append: bool, last_chunk: bool) -> Result<()> {
        if self.skips() {
            return Ok(());
        }
        let json = to_json(&artifact, "artifact")?;
        let body = RecordBody::ArtifactUpdate {
            append,
            last_chunk,
            artifact: json,
        };
        self.write(new_id(), body).await
    }

    /// Ask the client for more input: status `input-required` with `text`. Ends this turn;
    /// the handler runs again with the client's follow-up message.
    pub async fn input_required(&self, text: &str) -> Result<()> {
        self.status(TaskState::InputRequired, Some(text), Turn::Interrupted)
            .await
    }

    /// Ask the client to authenticate: status `auth-required` with `text`. Ends this turn.
    pub async fn auth_required(&self, text: &str) -> Result<()> {
        self.status(TaskState::AuthRequired, Some(text), Turn::Interrupted)
            .await
    }

    /// Complete the task, with an optional final agent message.
    pub async fn complete(&self, text: Option<&str>) -> Result<()> {
        self.status(TaskState::Completed, text, Turn::Terminal)
            .await
    }

    /// Fail the task with `text` as the agent's final message.
    pub async fn fail(&self, text: &str) -> Result<()> {
        self.status(TaskState::Failed, Some(text), Turn::Terminal)
            .await
    }

    /// Reject the task with `text` as the agent's final message.
    pub async fn reject(&self, text: &str) -> Result<()> {
        self.status(TaskState::Rejected, Some(text), Turn::Terminal)
            .await
    }

    /// How far the turn has come.
    pub(super) fn turn(&self) -> Turn {
        match self.inner.turn.load(Ordering::Acquire) {
            0 => Turn::Open,
            1 => Turn::Interrupted,
            _ => Turn::Terminal,
        }
    }

    fn skips(&self) -> bool {
        self.inner.cancellation.is_cancelled() || self.turn() != Turn::Open
    }

    /// Write a status (or terminal) record and move the turn to `then` once it is written.
    async fn status(&self, state: TaskState, text: Option<&str>, then: Turn) -> Result<()> {
        if self.skips() {
            return Ok(());
        }
        let (message_id, message) = match text {
            Some(text) => {
                let id = new_id();
                let mut message = Message::agent_text(id.clone(), text);
                message.task_id = Some(self.inner.task_id.clone());
                message.context_id = Some(self.inner.context_id.clone());
                (id, to_json(&message, "message")?)
            }
            None => (new_id(), String::new()),
        };
        self.write(message_id, RecordBody::status(state, message))
            .await?;
        if then != Turn::Open {
            self.inner.turn.store(then as u8, Ordering::Release);
        }
        Ok(())
    }

    async fn write(&self, message_id: String, body: RecordBody) -> Result<()> {
        let inner = &self.inner;
        let record = Record {
            header: RecordHeader {
                task_id: inner.task_id.clone(),
                context_id: inner.context_id.clone(),
                message_id,
                source: inner.writer.source.clone(),
                principal: inner.caller.principal.clone(),
                tenant: inner.caller.tenant.clone(),
                hops: 0,
                deadline_ms: 0,
                timestamp_ms: now_ms(),
                content_type: "application/json".to_owned(),
            },
            body,
        };
        inner.writer.append(&record).await
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

/// A fresh record or message id.
fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentlog_wire::a2a::Role;

    async fn context(history: Vec<Message>, index: usize) -> (TaskContext, Log, TopicRef) {
        let log = crate::log::open("memory://").await.unwrap();
        let events = TopicRef::new("s", "a.events");
        log.ensure_topic(&events, 1).await.unwrap();
        let writer = Arc::new(Writer {
            log: log.clone(),
            events: events.clone(),
            source: "w".into(),
        });
        let ctx = TaskContext::new(Parts {
            task_id: "t".into(),
            context_id: "c".into(),
            history,
            message_index: index,
            caller: Caller::principal("alice").in_tenant("acme"),
            cancellation: CancellationToken::new(),
            writer,
        })
        .unwrap();
        (ctx, log, events)
    }

    async fn records(log: &Log, events: &TopicRef) -> Vec<Record> {
        log.read(events, 0, 0, 100)
            .await
            .unwrap()
            .iter()
            .map(|s| Record::decode(&s.payload).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn the_message_is_the_turns_and_history_ends_with_it() {
        let mut first = Message::user_text("m1", "a");
        first.parts.push(Part::data(serde_json::json!({"k": 1})));
        first.parts.push(Part::text("b"));
        let history = vec![
            first,
            Message::agent_text("x", "?"),
            Message::user_text("m2", "c"),
        ];
        let (ctx, _, _) = context(history.clone(), 0).await;
        assert_eq!(ctx.message().message_id, "m1");
        assert_eq!(ctx.history().len(), 1);
        assert_eq!(ctx.text(), "a\nb");
        let (ctx, _, _) = context(history.clone(), 2).await;
        assert_eq!(ctx.history().len(), 3);
        assert_eq!(ctx.text(), "c");
        assert_eq!(ctx.caller(), &Caller::principal("alice").in_tenant("acme"));
        assert!(
            TaskContext::new(Parts {
                task_id: "t".into(),
                context_id: "c".into(),
                history,
                message_index: 3,
                caller: Caller::anonymous(),
                cancellation: CancellationToken::new(),
                writer: ctx.inner.writer.clone(),
            })
            .is_none()
        );
    }

    #[tokio::test]
    async fn records_carry_the_task_owner_and_the_message_id() {
        let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
        ctx.working(None).await.unwrap();
        ctx.working(Some("busy")).await.unwrap();
        ctx.complete(Some("done")).await.unwrap();
        let records = records(&log, &events).await;
        assert_eq!(records.len(), 3);
        for r in &records {
            assert_eq!(r.header.task_id, "t");
            assert_eq!(r.header.context_id, "c");
            assert_eq!(r.header.source, "w");
            assert_eq!(r.header.principal, "alice");
            assert_eq!(r.header.tenant, "acme");
            assert_eq!(r.header.content_type, "application/json");
            assert!(!r.header.message_id.is_empty());
            assert!(r.header.timestamp_ms > 0);
        }
        let RecordBody::StatusUpdate { state, message } = &records[1].body else {
            panic!("not a status update: {:?}", records[1].body);
        };
        assert_eq!(state.state().unwrap(), TaskState::Working);
        let message: Message = serde_json::from_str(message).unwrap();
        assert_eq!(message.role, Role::Agent);
        assert_eq!(message.message_id, records[1].header.message_id);
        assert_eq!(message.task_id.as_deref(), Some("t"));
        assert!(matches!(records[2].body, RecordBody::Terminal { .. }));
    }

    #[tokio::test]
    async fn nothing_is_written_after_the_turn_ends_or_the_token_fires() {
        let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
        ctx.input_required("more?").await.unwrap();
        assert_eq!(ctx.turn(), Turn::Interrupted);
        ctx.complete(None).await.unwrap();
        assert_eq!(records(&log, &events).await.len(), 1);

        let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
        ctx.cancellation().cancel();
        ctx.working(Some("x")).await.unwrap();
        ctx.fail("x").await.unwrap();
        assert!(records(&log, &events).await.is_empty());
        assert_eq!(ctx.turn(), Turn::Open);
    }
}
