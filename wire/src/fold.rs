//! The fold: a task's records, in log order, to the A2A [`Task`].
//!
//! Every replica of the bridge and every language runs these same rules, so they all answer
//! the same for the same log (the rules are also written in `wire/README.md`):
//!
//! 1. A task starts with its **command** record: state `submitted`, the command's message as
//!    the first history entry. Records of the task before its command are ignored (orphans).
//! 2. The **first terminal in log order wins**: once the task is completed, failed, canceled
//!    or rejected, every later record is ignored.
//! 3. A **cancel request** is itself terminal: it moves the task to `canceled` at its log
//!    position. So a cancel and a worker's completion race by log order alone: whichever is
//!    appended first wins, on every replica.
//! 4. A **status update** applies only if the legal-transition table allows it
//!    ([`TaskState::can_transition_to`]) and its state is non-terminal and known; otherwise
//!    it is ignored and counted as illegal. A **terminal** record must carry a terminal state.
//! 5. A **continue** applies only to an input-required or auth-required task; it appends its
//!    message to the history and moves the task back to `submitted`.
//! 6. Status and terminal messages are appended to the history and become `status.message`.
//! 7. An **artifact update** with `append` adds its parts to the artifact of the same id (or
//!    creates it); without `append` it replaces that artifact (or adds it at the end).
//! 8. A record whose `message_id` was already applied to the task is a duplicate and ignored
//!    (logs deliver at least once and Iggy does not dedupe).
//! 9. A record whose JSON payload does not parse is ignored and counted as invalid.
//!
//! Messages in the history get the task's `taskId` and `contextId` filled in.
//!
//! [`fold_content`] rebuilds the same task from fewer records: only those that carry content
//! (see [`Change::has_content`]), given the status the [`TaskMachine`] ended on. A reader
//! that already ran the machine (the bridge's view) need not read the rest back.

use std::collections::HashSet;

use serde::de::DeserializeOwned;

use crate::a2a::{Artifact, Message, SendMessageRequest, Task, TaskStatus};
use crate::timestamp::format_millis;
use crate::{Record, RecordBody, RecordHeader, TaskState};

/// What [`TaskFold::apply`] did with a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The record changed the task.
    Applied,
    /// A record of a task whose command has not been seen, or of another task.
    Orphan,
    /// A repeated command or `message_id`.
    Duplicate,
    /// The task was already terminal.
    AfterTerminal,
    /// A transition the table forbids, an unknown state code, or a terminal state in a
    /// status update (or the reverse).
    IllegalTransition,
    /// The record's JSON payload does not parse.
    Invalid,
}

/// How many records the fold applied and ignored, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FoldStats {
    /// Records that changed the task.
    pub applied: u32,
    /// Orphans.
    pub orphans: u32,
    /// Duplicates.
    pub duplicates: u32,
    /// Records after the terminal one.
    pub after_terminal: u32,
    /// Illegal transitions.
    pub illegal_transitions: u32,
    /// Records with unparsable payloads.
    pub invalid: u32,
}

impl FoldStats {
    fn count(&mut self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Applied => &mut self.applied,
            Outcome::Orphan => &mut self.orphans,
            Outcome::Duplicate => &mut self.duplicates,
            Outcome::AfterTerminal => &mut self.after_terminal,
            Outcome::IllegalTransition => &mut self.illegal_transitions,
            Outcome::Invalid => &mut self.invalid,
        };
        *counter += 1;
    }
}

/// What an applied record changes, with its parsed payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The command created the task.
    Created(Box<SendMessageRequest>),
    /// A follow-up message resumed the task (now `submitted`).
    Continued(Box<SendMessageRequest>),
    /// The cancel request canceled the task.
    Canceled,
    /// A status or terminal record set the state.
    Status {
        /// The new state.
        state: TaskState,
        /// The status message, if any.
        message: Option<Box<Message>>,
    },
    /// An artifact (chunk).
    Artifact {
        /// The artifact or its chunk.
        artifact: Box<Artifact>,
        /// Append to the artifact with the same id.
        append: bool,
        /// Its last chunk.
        last_chunk: bool,
    },
}

impl Change {
    /// Whether the change adds to the task's history or artifacts. The others (a cancel, a
    /// status without a message) only set the status, which [`StatusMark`] carries for
    /// [`fold_content`].
    pub fn has_content(&self) -> bool {
        match self {
            Change::Created(_) | Change::Continued(_) | Change::Artifact { .. } => true,
            Change::Canceled => false,
            Change::Status { message, .. } => message.is_some(),
        }
    }
}

/// A task's status as its [`TaskMachine`] left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusMark {
    /// The state.
    pub state: TaskState,
    /// When it was set, Unix milliseconds.
    pub timestamp_ms: u64,
    /// Whether the record that set it carried a message (then `status.message` is that
    /// message, the last status message among the task's content records).
    pub has_message: bool,
}

/// The state-level half of the fold: which records apply, and the state they lead to, without
/// keeping history or artifacts.
///
/// [`TaskFold`] wraps it to build the whole [`Task`]; the bridge's view keeps one per task so
/// that it decides exactly as the fold does while holding a few dozen bytes per task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskMachine {
    state: Option<TaskState>,
    status_timestamp_ms: u64,
    /// Whether the record that set the status carried a message.
    status_has_message: bool,
    last_message_id: Option<Box<str>>,
    /// `message_id`s applied so far; dropped once the task is terminal (nothing applies then).
    /// Boxed so a finished task pays one null pointer here instead of an inline empty set.
    #[allow(clippy::box_collection)]
    seen: Option<Box<HashSet<Box<str>>>>,
}

impl TaskMachine {
    /// A machine waiting for its task's command.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decide the next record of the task, in log order. The caller routes records by task id.
    pub fn apply(&mut self, record: &Record) -> Result<Change, Outcome> {
        let change = self.decide(record)?;
        let ts = record.header.timestamp_ms;
        match &change {
            Change::Created(request) | Change::Continued(request) => {
                self.submit(&request.message.message_id, ts);
            }
            Change::Canceled => self.set(TaskState::Canceled, ts, false),
            Change::Status { state, message } => self.set(*state, ts, message.is_some()),
            Change::Artifact { .. } => {}
        }
        self.remember(&record.header.message_id);
        Ok(change)
    }

    /// [`apply`](Self::apply) of a command record (`header`) whose params the caller has
    /// already parsed into a [`SendMessageRequest`] whose message id is `message_id`: the same
    /// decision and the same state, without parsing the params again (a bridge applying the
    /// command it just wrote). The caller vouches that the parse succeeded on exactly the
    /// record's params text; the change (the request) is not returned.
    pub fn apply_parsed_command(
        &mut self,
        header: &RecordHeader,
        message_id: &str,
    ) -> Result<(), Outcome> {
        if self.state.is_some() {
            return Err(Outcome::Duplicate);
        }
        self.submit(message_id, header.timestamp_ms);
        self.remember(&header.message_id);
        Ok(())
    }

    /// A client message (command or continue) was applied: the task waits on a worker for it.
    fn submit(&mut self, message_id: &str, timestamp_ms: u64) {
        self.last_message_id = Some(message_id.into());
        self.set(TaskState::Submitted, timestamp_ms, false);
    }

    /// Remember an applied record's `message_id`, to refuse its duplicates while live.
    fn remember(&mut self, id: &str) {
        if id.is_empty() {
            return;
        }
        if let Some(seen) = self.seen.as_mut() {
            seen.insert(id.into());
        } else if !self.is_terminal() {
            self.seen = Some(Box::new(HashSet::from([id.into()])));
        }
    }

    fn set(&mut self, state: TaskState, timestamp_ms: u64, has_message: bool) {
        self.state = Some(state);
        self.status_timestamp_ms = timestamp_ms;
        self.status_has_message = has_message;
        if state.is_terminal() {
            self.seen = None;
        }
    }

    fn decide(&self, record: &Record) -> Result<Change, Outcome> {
        let Some(current) = self.state else {
            return match &record.body {
                RecordBody::Command { params } => parse::<SendMessageRequest>(params)
                    .map(|r| Change::Created(Box::new(r)))
                    .ok_or(Outcome::Invalid),
                _ => Err(Outcome::Orphan),
            };
        };
        if matches!(record.body, RecordBody::Command { .. }) {
            return Err(Outcome::Duplicate);
        }
        if current.is_terminal() {
            return Err(Outcome::AfterTerminal);
        }
        let id = record.header.message_id.as_str();
        if !id.is_empty() && self.seen.as_ref().is_some_and(|seen| seen.contains(id)) {
            return Err(Outcome::Duplicate);
        }
        match &record.body {
            RecordBody::Command { .. } => return Err(Outcome::Duplicate),
            RecordBody::Continue { .. } if !current.is_interrupted() => {
                return Err(Outcome::IllegalTransition);
            }
            RecordBody::StatusUpdate { state, .. } | RecordBody::Terminal { state, .. } => {
                let terminal_record = matches!(record.body, RecordBody::Terminal { .. });
                let state = state.state().map_err(|_| Outcome::IllegalTransition)?;
                if state.is_terminal() != terminal_record || !current.can_transition_to(state) {
                    return Err(Outcome::IllegalTransition);
                }
            }
            _ => {}
        }
        parse_change(&record.body)
    }

    /// The status, or `None` before the command.
    pub fn status(&self) -> Option<StatusMark> {
        Some(StatusMark {
            state: self.state?,
            timestamp_ms: self.status_timestamp_ms,
            has_message: self.status_has_message,
        })
    }

    /// The current state, or `None` before the command.
    pub fn state(&self) -> Option<TaskState> {
        self.state
    }

    /// Whether the task is terminal.
    pub fn is_terminal(&self) -> bool {
        self.state.is_some_and(TaskState::is_terminal)
    }

    /// When the current status was set, in Unix milliseconds (0 before the command).
    pub fn status_timestamp_ms(&self) -> u64 {
        self.status_timestamp_ms
    }

    /// The `messageId` of the latest client message applied (command or continue): the
    /// message the task currently waits on a worker for.
    pub fn last_message_id(&self) -> Option<&str> {
        self.last_message_id.as_deref()
    }

    /// Whether a record with this `message_id` was applied (always `false` once terminal).
    pub fn has_applied(&self, message_id: &str) -> bool {
        self.seen
            .as_ref()
            .is_some_and(|seen| seen.contains(message_id))
    }
}

/// A task being folded, one record at a time: [`TaskMachine`] decides, this keeps the content.
#[derive(Debug, Clone, Default)]
pub struct TaskFold {
    machine: TaskMachine,
    task: Option<Task>,
    stats: FoldStats,
}

impl TaskFold {
    /// An empty fold, waiting for a command.
    pub fn new() -> Self {
        Self::default()
    }

    /// Apply the next record in log order.
    pub fn apply(&mut self, record: &Record) -> Outcome {
        let outcome = self.apply_inner(record);
        self.stats.count(outcome);
        outcome
    }

    fn apply_inner(&mut self, record: &Record) -> Outcome {
        let header = &record.header;
        if self
            .task
            .as_ref()
            .is_some_and(|task| task.id != header.task_id)
        {
            return Outcome::Orphan;
        }
        let change = match self.machine.apply(record) {
            Ok(change) => change,
            Err(outcome) => return outcome,
        };
        if let Change::Created(request) = change {
            self.task = Some(submitted_task(header, *request));
            return Outcome::Applied;
        }
        let Some(task) = self.task.as_mut() else {
            return Outcome::Orphan;
        };
        apply_change(task, change, header.timestamp_ms);
        Outcome::Applied
    }

    /// The task so far, or `None` before its command.
    pub fn task(&self) -> Option<&Task> {
        self.task.as_ref()
    }

    /// The task, consuming the fold.
    pub fn into_task(self) -> Option<Task> {
        self.task
    }

    /// The current state, or `None` before the command.
    pub fn state(&self) -> Option<TaskState> {
        self.machine.state()
    }

    /// When the current status was set, in Unix milliseconds (0 before the command).
    pub fn status_timestamp_ms(&self) -> u64 {
        self.machine.status_timestamp_ms()
    }

    /// The state machine behind the fold.
    pub fn machine(&self) -> &TaskMachine {
        &self.machine
    }

    /// What was applied and ignored so far.
    pub fn stats(&self) -> FoldStats {
        self.stats
    }
}

/// The task a command record creates (fold rule 1), from its header and its already parsed
/// params: what folding that one record gives, without parsing the params again.
pub fn submitted_task(header: &RecordHeader, request: SendMessageRequest) -> Task {
    let mut task = Task {
        id: header.task_id.clone(),
        context_id: header.context_id.clone(),
        status: TaskStatus {
            state: TaskState::Submitted,
            message: None,
            timestamp: Some(format_millis(header.timestamp_ms)),
        },
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: None,
    };
    let message = adopt(request.message, &task);
    task.history.push(message);
    task
}

/// Fold a task's records, in log order.
pub fn fold<'a>(records: impl IntoIterator<Item = &'a Record>) -> TaskFold {
    let mut fold = TaskFold::new();
    for record in records {
        fold.apply(record);
    }
    fold
}

/// The task from only its content records (the records its machine applied whose change
/// [has content](Change::has_content)), in log order, and the status its machine ended on:
/// the same task as [`fold`] of all its records.
///
/// The records are trusted to be exactly those (this does not re-decide them); the first
/// must be the command. `None` if it is not, or if a record does not parse.
pub fn fold_content<'a>(
    records: impl IntoIterator<Item = &'a Record>,
    status: StatusMark,
) -> Option<Task> {
    let mut records = records.into_iter();
    let command = records.next()?;
    let Ok(Change::Created(request)) = parse_change(&command.body) else {
        return None;
    };
    let mut task = submitted_task(&command.header, *request);
    for record in records {
        let change = parse_change(&record.body).ok()?;
        apply_change(&mut task, change, record.header.timestamp_ms);
    }
    // The status records left out only set what the mark holds; a later one without a
    // message clears the status message an earlier content record set.
    task.status.state = status.state;
    task.status.timestamp = Some(format_millis(status.timestamp_ms));
    if !status.has_message {
        task.status.message = None;
    }
    Some(task)
}

/// A record's change as its payload gives it, before the machine's rules decide whether it
/// applies.
fn parse_change(body: &RecordBody) -> Result<Change, Outcome> {
    match body {
        RecordBody::Command { params } => parse::<SendMessageRequest>(params)
            .map(|r| Change::Created(Box::new(r)))
            .ok_or(Outcome::Invalid),
        RecordBody::Continue { params } => parse::<SendMessageRequest>(params)
            .map(|r| Change::Continued(Box::new(r)))
            .ok_or(Outcome::Invalid),
        RecordBody::CancelRequest { .. } => Ok(Change::Canceled),
        RecordBody::StatusUpdate { state, message } | RecordBody::Terminal { state, message } => {
            let state = state.state().map_err(|_| Outcome::IllegalTransition)?;
            let message = if message.is_empty() {
                None
            } else {
                Some(Box::new(parse::<Message>(message).ok_or(Outcome::Invalid)?))
            };
            Ok(Change::Status { state, message })
        }
        RecordBody::ArtifactUpdate {
            append,
            last_chunk,
            artifact,
        } => parse::<Artifact>(artifact)
            .map(|a| Change::Artifact {
                artifact: Box::new(a),
                append: *append,
                last_chunk: *last_chunk,
            })
            .ok_or(Outcome::Invalid),
    }
}

/// Apply an applied change (other than the command's) to the task (rules 3, 5, 6 and 7).
fn apply_change(task: &mut Task, change: Change, timestamp_ms: u64) {
    let timestamp = Some(format_millis(timestamp_ms));
    match change {
        Change::Created(_) => {}
        Change::Continued(request) => {
            let message = adopt(request.message, task);
            task.history.push(message);
            task.status = TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp,
            };
        }
        Change::Canceled => {
            task.status = TaskStatus {
                state: TaskState::Canceled,
                message: None,
                timestamp,
            };
        }
        Change::Status { state, message } => {
            let message = message.map(|m| adopt(*m, task));
            if let Some(message) = &message {
                task.history.push(message.clone());
            }
            task.status = TaskStatus {
                state,
                message,
                timestamp,
            };
        }
        Change::Artifact {
            artifact, append, ..
        } => merge_artifact(&mut task.artifacts, *artifact, append),
    }
}

fn parse<T: DeserializeOwned>(json: &str) -> Option<T> {
    serde_json::from_str(json).ok()
}

fn adopt(mut message: Message, task: &Task) -> Message {
    message.task_id = Some(task.id.clone());
    message.context_id = Some(task.context_id.clone());
    message
}

fn merge_artifact(artifacts: &mut Vec<Artifact>, artifact: Artifact, append: bool) {
    match artifacts
        .iter_mut()
        .find(|a| a.artifact_id == artifact.artifact_id)
    {
        Some(existing) if append => existing.parts.extend(artifact.parts),
        Some(existing) => *existing = artifact,
        None => artifacts.push(artifact),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{RecordHeader, StateCode};

    fn record(n: u64, message_id: &str, body: RecordBody) -> Record {
        Record {
            header: RecordHeader {
                task_id: "t".into(),
                context_id: "c".into(),
                message_id: message_id.into(),
                timestamp_ms: 1_700_000_000_000 + n,
                ..RecordHeader::default()
            },
            body,
        }
    }

    fn command() -> Record {
        record(
            0,
            "m1",
            RecordBody::Command {
                params:
                    r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#
                        .into(),
            },
        )
    }

    fn status(n: u64, id: &str, state: TaskState) -> Record {
        record(n, id, RecordBody::status(state, String::new()))
    }

    #[test]
    fn a_parsed_command_applies_exactly_as_the_record() {
        let record = command();
        let mut parsed = TaskMachine::new();
        let mut folded = TaskMachine::new();
        assert_eq!(parsed.apply_parsed_command(&record.header, "m1"), Ok(()));
        assert!(
            matches!(folded.apply(&record), Ok(Change::Created(r)) if r.message.message_id == "m1")
        );
        assert_eq!(parsed, folded);
        // A second command is a duplicate either way.
        assert_eq!(
            parsed.apply_parsed_command(&record.header, "m1"),
            Err(Outcome::Duplicate)
        );
        assert_eq!(folded.apply(&record), Err(Outcome::Duplicate));
        assert_eq!(parsed, folded);
    }

    #[test]
    fn first_terminal_wins() {
        let records = [
            command(),
            status(1, "s1", TaskState::Working),
            status(2, "s2", TaskState::Completed),
            status(3, "s3", TaskState::Failed),
        ];
        let f = fold(&records);
        assert_eq!(f.state(), Some(TaskState::Completed));
        assert_eq!(f.stats().after_terminal, 1);
        assert_eq!(f.status_timestamp_ms(), 1_700_000_000_002);
    }

    #[test]
    fn cancel_request_races_by_log_order() {
        let cancel = record(
            2,
            "x1",
            RecordBody::CancelRequest {
                metadata: String::new(),
            },
        );
        let done = status(3, "s2", TaskState::Completed);
        let f = fold([&command(), &cancel, &done]);
        assert_eq!(f.state(), Some(TaskState::Canceled));
        let f = fold([&command(), &done, &cancel]);
        assert_eq!(f.state(), Some(TaskState::Completed));
    }

    #[test]
    fn illegal_and_unknown_states_are_counted_and_ignored() {
        let records = [
            command(),
            status(1, "s1", TaskState::Submitted),
            record(
                2,
                "s2",
                RecordBody::StatusUpdate {
                    state: StateCode(99),
                    message: String::new(),
                },
            ),
            record(
                3,
                "s3",
                RecordBody::StatusUpdate {
                    state: TaskState::Completed.into(),
                    message: String::new(),
                },
            ),
            record(
                4,
                "s4",
                RecordBody::Terminal {
                    state: TaskState::Working.into(),
                    message: String::new(),
                },
            ),
        ];
        let f = fold(&records);
        assert_eq!(f.state(), Some(TaskState::Submitted));
        assert_eq!(f.stats().illegal_transitions, 4);
    }

    #[test]
    fn orphans_and_duplicates_are_ignored() {
        let f = fold([
            &status(1, "s0", TaskState::Working),
            &command(),
            &command(),
            &status(2, "s1", TaskState::Working),
            &status(3, "s1", TaskState::InputRequired),
        ]);
        assert_eq!(f.stats().orphans, 1);
        assert_eq!(f.stats().duplicates, 2);
        assert_eq!(f.state(), Some(TaskState::Working));
    }

    #[test]
    fn artifacts_append_and_replace() {
        let art = |n, id: &str, text: &str, append| {
            record(
                n,
                id,
                RecordBody::ArtifactUpdate {
                    append,
                    last_chunk: false,
                    artifact: format!(r#"{{"artifactId":"a","parts":[{{"text":"{text}"}}]}}"#),
                },
            )
        };
        let f = fold([
            &command(),
            &art(1, "a1", "x", false),
            &art(2, "a2", "y", true),
        ]);
        let task = f.task().unwrap();
        assert_eq!(task.artifacts.len(), 1);
        assert_eq!(task.artifacts[0].parts.len(), 2);
        let f = fold([
            &command(),
            &art(1, "a1", "x", false),
            &art(2, "a2", "y", false),
        ]);
        assert_eq!(f.task().unwrap().artifacts[0].parts.len(), 1);
    }

    #[test]
    fn continue_only_resumes_interrupted_tasks() {
        let cont = record(
            3,
            "m2",
            RecordBody::Continue {
                params:
                    r#"{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"more"}]}}"#
                        .into(),
            },
        );
        let f = fold([&command(), &cont]);
        assert_eq!(f.stats().illegal_transitions, 1);
        let f = fold([
            &command(),
            &status(2, "s1", TaskState::InputRequired),
            &cont,
        ]);
        assert_eq!(f.state(), Some(TaskState::Submitted));
        let task = f.into_task().unwrap();
        assert_eq!(task.history.len(), 2);
        assert_eq!(task.history[1].task_id.as_deref(), Some("t"));
        assert_eq!(task.history[1].context_id.as_deref(), Some("c"));
    }

    /// What the bridge's view does: run the machine over every record and keep the ones
    /// with content, then fold those alone with the machine's status.
    fn fold_of_content(records: &[Record]) -> Option<Task> {
        let mut machine = TaskMachine::new();
        let content: Vec<&Record> = records
            .iter()
            .filter(|r| machine.apply(r).is_ok_and(|change| change.has_content()))
            .collect();
        fold_content(content, machine.status()?)
    }

    #[test]
    fn the_content_records_and_the_status_fold_to_the_same_task() {
        // Random histories over every kind of record, legal or not, with repeated message
        // ids and bad payloads; a fixed seed keeps the test deterministic.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let message = |text: &str| {
            format!(
                r#"{{"messageId":"a-{text}","role":"ROLE_AGENT","parts":[{{"text":"{text}"}}]}}"#
            )
        };
        let mut with_message_status = 0;
        for history in 0..2_000 {
            let mut records = Vec::new();
            if next(8) != 0 {
                records.push(command());
            }
            for n in 1..=next(12) {
                let id = format!("r{}", next(6));
                let text = format!("{history}-{n}");
                let body = match next(7) {
                    0 => RecordBody::Continue {
                        params: format!(r#"{{"message":{}}}"#, message(&text)),
                    },
                    1 => RecordBody::CancelRequest {
                        metadata: String::new(),
                    },
                    2 | 3 => {
                        let state = StateCode(next(10) as u8);
                        let message = match next(4) {
                            0 => message(&text),
                            1 => "{not json".into(),
                            _ => String::new(),
                        };
                        if next(2) == 0 {
                            RecordBody::StatusUpdate { state, message }
                        } else {
                            RecordBody::Terminal { state, message }
                        }
                    }
                    4 => command().body,
                    _ => RecordBody::ArtifactUpdate {
                        append: next(2) == 0,
                        last_chunk: next(2) == 0,
                        artifact: if next(10) == 0 {
                            "[]".into()
                        } else {
                            format!(
                                r#"{{"artifactId":"a{}","parts":[{{"text":"{text}"}}]}}"#,
                                next(2)
                            )
                        },
                    },
                };
                records.push(record(n, &id, body));
            }
            let all = fold(&records);
            if all.task().is_some_and(|task| task.status.message.is_some()) {
                with_message_status += 1;
            }
            assert_eq!(
                fold_of_content(&records).as_ref(),
                all.task(),
                "history {history}: {records:?}"
            );
        }
        // The histories reach the interesting case: a status message kept at the end.
        assert!(with_message_status > 20, "{with_message_status}");
    }
}
