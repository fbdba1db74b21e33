//! An attempt: one worker's claim on a turn of a task, and every record written under it.
//!
//! A *turn* is the work a task waits on for one client message (its command, or a
//! continue); an *attempt* is one worker's run of it. The worker claims the turn on the
//! task's events (fold rule 10), renews the lease while the handler runs, and writes every
//! record of the run with the attempt's number and its own `source`, so the fold takes them
//! from the holder only (rule 11). Record ids are [`ids::record_id`] of (task, turn, attempt,
//! sequence) (hashed once per attempt): a record written again is the same record, and the
//! fold drops the copy.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentlog_wire::a2a::{Message, Part};
use agentlog_wire::fold::Parsed;
use agentlog_wire::{Record, RecordBody, RecordHeader, TaskState, ids};
use bytes::Bytes;

use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};
use crate::log::{Appended, Log, TopicRef};
use crate::security::{RecordSigner, RecordVerifier};
use crate::view::TaskView;

/// Where a worker's records go, and under which name.
#[derive(Debug)]
pub(super) struct Writer {
    pub(super) log: Log,
    pub(super) events: TopicRef,
    pub(super) commands: TopicRef,
    pub(super) source: String,
    /// Signs every record written (none: unsigned).
    pub(super) signer: Option<RecordSigner>,
    /// The worker's trust: told of the records signed here, so its view does not check
    /// them again.
    pub(super) trust: Option<RecordVerifier>,
}

#[cfg(test)]
impl Writer {
    /// Unsigned records of source `w` to `events` (and `s/a.commands`), for the unit tests.
    pub(super) fn for_tests(log: Log, events: TopicRef) -> Writer {
        Writer {
            log,
            events,
            commands: TopicRef::new("s", "a.commands"),
            source: "w".into(),
            signer: None,
            trust: None,
        }
    }
}

impl Writer {
    /// Append `records` (of one task) to the events topic in one batch, keyed by their task,
    /// each signed if the worker has a signer.
    pub(super) async fn append(&self, records: &[Record]) -> Result<Appended> {
        let (key, payloads) = self.batch(records)?;
        self.log.append(&self.events, key, payloads).await
    }

    /// [`append`](Self::append), made for `view`, to which the caller offers every record
    /// once it landed ([`TaskView::applier`]).
    pub(super) async fn append_for(&self, records: &[Record], view: &TaskView) -> Result<Appended> {
        let (key, payloads) = self.batch(records)?;
        self.log
            .append_for(&self.events, key, payloads, view.applier())
            .await
    }

    /// The key and payloads of a batch of `records` of one task.
    fn batch<'r>(&self, records: &'r [Record]) -> Result<(&'r [u8], Vec<Bytes>)> {
        let Some(first) = records.first() else {
            return Err(Error::new(ErrorKind::Internal, "an empty batch of records"));
        };
        let payloads = records
            .iter()
            .map(|r| self.payload(r))
            .collect::<Result<Vec<_>>>()?;
        Ok((first.header.task_id.as_bytes(), payloads))
    }

    /// `record`'s bytes as this worker writes it: signed if it has a signer.
    pub(super) fn payload(&self, record: &Record) -> Result<Bytes> {
        let Some(signer) = &self.signer else {
            return encode(record);
        };
        let bytes = signer.encode(record)?;
        if let Some(trust) = &self.trust {
            trust.remember_own(&bytes, record.body.kind(), signer);
        }
        Ok(Bytes::from(bytes))
    }
}

/// A record's bytes.
pub(super) fn encode(record: &Record) -> Result<Bytes> {
    record.encode().map(Bytes::from).map_err(|e| {
        Error::new(ErrorKind::InvalidParams, "the record cannot be encoded").with_source(e)
    })
}

/// A turn of a task: its id and the client message it answers.
pub(super) type TurnKey = (String, String);

/// The task an attempt works for.
#[derive(Debug, Clone)]
pub(super) struct TaskRef {
    pub(super) id: String,
    pub(super) context_id: String,
    /// The task's owner: every record carries them.
    pub(super) caller: Caller,
}

/// The media type of a record's JSON payload.
const JSON: &str = "application/json";

/// One worker's claim on a turn. Shared by the turn's supervisor (claims, renewals) and the
/// handler's [`TaskContext`](super::TaskContext) (its reports).
#[derive(Debug)]
pub(super) struct Attempt {
    pub(super) task: TaskRef,
    /// The attempt number: the task's claims count from 1.
    pub(super) number: u32,
    /// Which try of the turn this is: 1 for the turn's first claim.
    pub(super) turn_attempt: u32,
    /// `ids::attempt_id` of the task, the turn claimed first and the attempt: with a sequence
    /// number it names every record.
    id_prefix: String,
    /// The turn claimed now: the first one, or a follow-up the holder took since.
    turn: Mutex<Arc<str>>,
    /// The next record's sequence number.
    sequence: AtomicU32,
    pub(super) writer: Arc<Writer>,
    pub(super) lease: Duration,
    /// The `content_type` of the attempt's records: JSON, with the trace context of the
    /// turn's span (a child of the call's) once the turn is loaded (`set_trace`).
    content_type: Mutex<String>,
}

impl Attempt {
    pub(super) fn new(
        task: TaskRef,
        number: u32,
        turn: Arc<str>,
        writer: Arc<Writer>,
        lease: Duration,
    ) -> Self {
        Self {
            id_prefix: ids::attempt_id(&task.id, &turn, number),
            task,
            number,
            turn_attempt: 1,
            turn: Mutex::new(turn),
            sequence: AtomicU32::new(0),
            writer,
            lease,
            content_type: Mutex::new(JSON.to_owned()),
        }
    }

    /// The turn being answered came with trace context `call` (or none): the attempt's
    /// records from now on carry a span of its own under it (`span`, the turn's exported
    /// span when tracing is on; else an id made here), or none. That span's context.
    pub(super) fn set_trace(
        &self,
        call: Option<&agentlog_wire::trace::TraceContext>,
        span: Option<agentlog_wire::trace::TraceContext>,
    ) -> Option<agentlog_wire::trace::TraceContext> {
        let child = span.or_else(|| {
            let span = uuid::Uuid::new_v4().simple().to_string();
            // A v4 uuid's first 16 hex digits hold its version digit: never all zero.
            call.and_then(|call| call.child(&span[..16]))
        });
        let content_type = child
            .as_ref()
            .map_or_else(|| JSON.to_owned(), |child| child.in_content_type(JSON));
        *self.content_type.lock().unwrap_or_else(|e| e.into_inner()) = content_type;
        child
    }

    /// The span of this attempt's turn, a child of the context `call` its message came with
    /// (empty while tracing is off).
    pub(super) fn turn_span(
        &self,
        call: Option<&agentlog_wire::trace::TraceContext>,
    ) -> crate::telemetry::Span {
        use crate::telemetry::{Kind, Parent, Span};
        let span = Span::start("turn", Kind::Consumer, Parent::Remote(call));
        if span.is_some() {
            span.set("a2a.task.id", &self.task.id);
            span.set("agentlog.worker", &self.writer.source);
            span.set("agentlog.attempt", self.number);
            span.set("agentlog.turn_attempt", self.turn_attempt);
            // A later attempt at the same turn: an earlier one's worker died or stalled.
            span.set("agentlog.takeover", self.turn_attempt > 1);
        }
        span
    }

    /// The same attempt, now known to be the turn's `turn_attempt`-th try.
    pub(super) fn with_turn_attempt(mut self, turn_attempt: u32) -> Self {
        self.turn_attempt = turn_attempt;
        self
    }

    /// The turn the attempt answers now.
    pub(super) fn turn(&self) -> Arc<str> {
        self.turn.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The attempt took the follow-up `turn` (its claim of it applied).
    pub(super) fn set_turn(&self, turn: Arc<str>) {
        *self.turn.lock().unwrap_or_else(|e| e.into_inner()) = turn;
    }

    /// The id of the next record written under this attempt.
    pub(super) fn next_id(&self) -> String {
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        ids::sequenced(&self.id_prefix, sequence)
    }

    /// A record of this attempt with `body`, its id `message_id`.
    pub(super) fn record(&self, message_id: String, body: RecordBody) -> Record {
        let task = &self.task;
        Record {
            header: RecordHeader {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                message_id,
                source: self.writer.source.clone(),
                principal: task.caller.principal.clone(),
                tenant: task.caller.tenant.clone(),
                hops: 0,
                attempt: self.number,
                deadline_ms: 0,
                timestamp_ms: now_ms(),
                content_type: self
                    .content_type
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone(),
                key_id: String::new(),
                bridge_hops: Vec::new(),
                signature: Vec::new(),
            },
            body,
        }
    }

    /// A status (or terminal) record of this attempt setting `state`, with `text` as the
    /// agent's status message.
    pub(super) fn status_record(&self, state: TaskState, text: Option<&str>) -> Result<Record> {
        self.status_parts_record(state, text.map(|t| vec![Part::text(t)]))
    }

    /// A status (or terminal) record of this attempt setting `state`, with a status message
    /// of `parts` (none: no message).
    pub(super) fn status_parts_record(
        &self,
        state: TaskState,
        parts: Option<Vec<Part>>,
    ) -> Result<Record> {
        self.status_record_parsed(state, parts)
            .map(|(record, _)| record)
    }

    /// [`status_parts_record`](Self::status_parts_record), with the change the record makes
    /// as parsing it would give it ([`Parsed::status`]), for applying it to the worker's view
    /// without parsing its message back.
    pub(super) fn status_record_parsed(
        &self,
        state: TaskState,
        parts: Option<Vec<Part>>,
    ) -> Result<(Record, Parsed)> {
        self.status_record_with(state, parts, None)
    }

    /// [`status_record_parsed`](Self::status_record_parsed) whose message (when it has
    /// `parts`) carries `metadata`.
    pub(super) fn status_record_with(
        &self,
        state: TaskState,
        parts: Option<Vec<Part>>,
        metadata: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<(Record, Parsed)> {
        let id = self.next_id();
        let (json, message) = match parts {
            Some(parts) => {
                let mut message = Message::agent_text(id.clone(), "");
                message.parts = parts;
                message.metadata = metadata;
                message.task_id = Some(self.task.id.clone());
                message.context_id = Some(self.task.context_id.clone());
                let json = serde_json::to_string(&message).map_err(|e| {
                    Error::new(ErrorKind::InvalidParams, "the message cannot be encoded")
                        .with_source(e)
                })?;
                (json, Some(message))
            }
            None => (String::new(), None),
        };
        let record = self.record(id, RecordBody::status(state, json));
        Ok((record, Parsed::status(state, message)))
    }

    /// A claim of `turn` under this attempt, leased for [`Attempt::lease`] from now (or, with
    /// `release`, over at once: the turn is free for a takeover).
    pub(super) fn claim_record(&self, turn: &str, release: bool) -> Record {
        let now = now_ms();
        let lease_until_ms = if release {
            now
        } else {
            now.saturating_add(millis(self.lease))
        };
        let mut record = self.record(
            self.next_id(),
            RecordBody::Claim {
                turn: turn.to_owned(),
                lease_until_ms,
            },
        );
        record.header.timestamp_ms = now;
        record
    }

    /// Renew the claim of the current turn: the lease runs [`Attempt::lease`] from now.
    /// Returns the new lease's end.
    pub(super) async fn renew(&self) -> Result<u64> {
        let record = self.claim_record(&self.turn(), false);
        let until = match &record.body {
            RecordBody::Claim { lease_until_ms, .. } => *lease_until_ms,
            _ => 0,
        };
        self.writer.append(&[record]).await?;
        Ok(until)
    }

    /// Release the claim: another worker may take the turn over at once.
    pub(super) async fn release(&self) -> Result<()> {
        let record = self.claim_record(&self.turn(), true);
        self.writer.append(&[record]).await.map(drop)
    }
}

pub(super) use crate::retention::{millis, now_ms};
