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
//! 5. A **continue** to an input-required or auth-required task appends its message to the
//!    history and moves the task back to `submitted`: its message starts the next turn.
//! 6. Status and terminal messages are appended to the history and become `status.message`.
//! 7. An **artifact update** with `append` adds its parts to the artifact of the same id (or
//!    creates it); without `append` it replaces that artifact (or adds it at the end).
//! 8. A record whose `message_id` was already applied to the task is a duplicate and ignored
//!    (logs deliver at least once and Iggy does not dedupe): every client message's id counts,
//!    and of the other records' ids the newest [`RECENT_IDS`] applied.
//! 9. A record whose JSON payload does not parse is ignored and counted as invalid.
//! 10. A **claim** gives one worker's attempt the turn the task waits on (the client message
//!     it answers), under a lease. While the task is submitted or working, a claim naming that
//!     turn applies as the turn's first claim if its attempt is the task's next one (claims
//!     count from 1 over the task's life), as a renewal if it comes from the current holder
//!     (same attempt and `source`; its lease replaces the old one, so a lease already over
//!     releases the turn), or as a takeover if its attempt is the next one and its timestamp
//!     is at or after the current lease's end. Anything else is fenced. A claim that applies
//!     to a submitted task moves it to `working` (a worker started); otherwise it changes no
//!     A2A state.
//! 11. **Fencing**: once a task has had a claim, a status, artifact or terminal record applies
//!     only if it was written by the current claim (its `attempt` and `source`); a task whose
//!     turn ended by asking for input or auth has no current claim. Records of a task that
//!     never had a claim apply only with attempt 0 (logs from before claims). The others are
//!     ignored and counted as fenced.
//! 12. A **follow-up**: a continue to a submitted or working task appends its message to the
//!     history and queues it behind the current turn; the state does not change.
//! 13. The current holder **takes** the first queued follow-up with a claim naming it (same
//!     attempt): it becomes the turn the task waits on. A turn that ends by asking for input
//!     or auth while follow-ups wait goes on to the first one at once: the status record
//!     applies (its message joins the history) and the task is `submitted` for that message.
//!
//! 14. **Expiry.** A command carries its task's retention. A terminal task expires its
//!     retention after its terminal status time (never if the retention is 0; a live or
//!     interrupted task never expires). Readers answer an expired task as one that never
//!     existed, and a command written (by its timestamp) at or after that moment starts the
//!     task afresh: a new incarnation, everything before it forgotten. An earlier command is a
//!     duplicate (rule 8).
//!
//! 15. **Replies.** A reply (written by the current claim, rule 11) to a task that can still
//!     complete ends it, as a completion would for rule 2. If the client has not seen the
//!     task yet (no status or artifact record applied, no follow-up, and the command did not
//!     ask for the task at once with `returnImmediately`), the task is **answered**: its
//!     reply's message answers the command's send in its place, and readers answer the task
//!     as one that never existed (it expires as a finished task does, rule 14). Otherwise the
//!     reply completes the task, its message the status message, as a terminal record would.
//!
//! 16. **Push records** (a push config registered or deleted, a notification given up) change
//!     nothing of the task: they apply to a task once its command has, whatever its state,
//!     are not duplicates by id, and are kept for [`push::PushConfigs`].
//!
//! Messages in the history get the task's `taskId` and `contextId` filled in; an answering
//! reply's message gets the `contextId` only (there is no task).
//!
//! [`fold_content`] rebuilds the same task from fewer records: only those that carry content
//! (see [`Change::has_content`]), given the status the [`TaskMachine`] ended on. A reader
//! that already ran the machine (the bridge's view) need not read the rest back.

mod machine;
mod push;
mod seen;

use serde::de::DeserializeOwned;

use crate::a2a::{Artifact, Message, SendMessageRequest, Task, TaskStatus};
use crate::timestamp::format_millis;
use crate::{Record, RecordBody, RecordHeader, TaskState};

pub use machine::{Claim, ClaimKind, Claimed, MachineSnapshot, Parsed, StatusMark, TaskMachine};
pub use push::{PushChange, PushConfigs, Registration, fold_push, inline_config, is_push};
pub use seen::RECENT_IDS;

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
    /// A worker record not written by the current claim, or a claim that does not apply
    /// (rules 10 and 11).
    Fenced,
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
    /// Fenced records: worker records of another attempt, claims that do not apply.
    pub fenced: u32,
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
            Outcome::Fenced => &mut self.fenced,
        };
        *counter += 1;
    }
}

/// What an applied record changes, with its parsed payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The command created the task.
    Created(Box<SendMessageRequest>),
    /// A follow-up message resumed an interrupted task (now `submitted`, rule 5).
    Continued(Box<SendMessageRequest>),
    /// A follow-up message to a running task joined its history and waits behind the
    /// current turn (rule 12).
    FollowedUp(Box<SendMessageRequest>),
    /// The cancel request canceled the task.
    Canceled,
    /// A status or terminal record set the state.
    Status {
        /// The new state.
        state: TaskState,
        /// The status message, if any.
        message: Option<Box<Message>>,
        /// The state was an interruption while a follow-up waited: the task went on to that
        /// follow-up at once and is `submitted` (rule 13).
        resumed: bool,
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
    /// A claim applied (rules 10 and 13).
    Claimed(Box<Claimed>),
    /// A reply ended the task (rule 15).
    Replied {
        /// The agent's message.
        message: Box<Message>,
        /// It answered in the task's place (the client had not seen the task); otherwise it
        /// completed the task.
        answered: bool,
    },
    /// A push record (rule 16): the task itself does not change.
    Push(Box<PushChange>),
}

impl Change {
    /// Whether the change adds to the task's history or artifacts. The others (a cancel, a
    /// status without a message, a claim) only set the status or the claim, which
    /// [`StatusMark`] carries for [`fold_content`].
    pub fn has_content(&self) -> bool {
        match self {
            Change::Created(_)
            | Change::Continued(_)
            | Change::FollowedUp(_)
            | Change::Artifact { .. }
            | Change::Replied { .. } => true,
            Change::Canceled | Change::Claimed(_) | Change::Push(_) => false,
            Change::Status { message, .. } => message.is_some(),
        }
    }
}

/// A task being folded, one record at a time: [`TaskMachine`] decides, this keeps the content.
#[derive(Debug, Clone, Default)]
pub struct TaskFold {
    machine: TaskMachine,
    task: Option<Task>,
    /// The reply that answered in the task's place (rule 15).
    answer: Option<Message>,
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
            self.answer = None;
            return Outcome::Applied;
        }
        if let Change::Replied {
            message,
            answered: true,
        } = change
        {
            let context_id = self
                .task
                .as_ref()
                .map_or(&header.context_id, |t| &t.context_id);
            self.answer = Some(answering(*message, context_id));
            return Outcome::Applied;
        }
        let Some(task) = self.task.as_mut() else {
            return Outcome::Orphan;
        };
        apply_change(task, change, header.timestamp_ms);
        Outcome::Applied
    }

    /// The task so far, or `None` before its command and once a reply answered in its
    /// place (rule 15: there is no task, only [`answer`](Self::answer)).
    pub fn task(&self) -> Option<&Task> {
        self.task.as_ref().filter(|_| self.answer.is_none())
    }

    /// The task, consuming the fold (`None` as for [`task`](Self::task)).
    pub fn into_task(self) -> Option<Task> {
        self.task.filter(|_| self.answer.is_none())
    }

    /// The reply that answered in the task's place (rule 15), with the exchange's
    /// `contextId`.
    pub fn answer(&self) -> Option<&Message> {
        self.answer.as_ref()
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

/// A task folded from the changes its [`TaskMachine`] applied, told one by one by a reader
/// that runs the machine itself (the bridge's view tells its subscribers so): the same task,
/// and the same answer, as [`TaskFold`] of the same records, without the records.
///
/// It starts from the command ([`submitted_task`]: the header and the params it parsed) and
/// takes every change after it that the machine applied and that can change the task (a
/// lease's extension or a first claim that starts nothing can be left out: they change
/// nothing here).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeFold {
    task: Task,
    /// The reply that answered in the task's place (rule 15).
    answer: Option<Message>,
}

impl ChangeFold {
    /// The task the command of `header`, with its params parsed into `request`, creates.
    pub fn new(header: &RecordHeader, request: SendMessageRequest) -> Self {
        Self {
            task: submitted_task(header, request),
            answer: None,
        }
    }

    /// Apply the next change the machine applied, from a record with `timestamp_ms`.
    /// `false` for a change this cannot take: a command (a new incarnation of the task, rule
    /// 14, which only its own fold can start).
    pub fn apply(&mut self, change: &Change, timestamp_ms: u64) -> bool {
        match change {
            Change::Created(_) => return false,
            Change::Replied {
                message,
                answered: true,
            } => {
                self.answer = Some(answering((**message).clone(), &self.task.context_id));
            }
            change => apply_change(&mut self.task, change.clone(), timestamp_ms),
        }
        true
    }

    /// The task so far; `None` once a reply answered in its place (as [`TaskFold::task`]).
    pub fn task(&self) -> Option<&Task> {
        Some(&self.task).filter(|_| self.answer.is_none())
    }

    /// The reply that answered in the task's place (rule 15), if one did.
    pub fn answer(&self) -> Option<&Message> {
        self.answer.as_ref()
    }

    /// The task as folded, and the reply that answered in its place if one did (then there
    /// is no task for readers: rule 15).
    pub fn into_parts(self) -> (Task, Option<Message>) {
        (self.task, self.answer)
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
    fold_content_after(&command.header, *request, records, status)
}

/// [`fold_content`] of a command whose params are already parsed (`request`, the params of
/// the command record with `header`), then of `rest`, the content records after it: the same
/// task, without parsing the command again.
pub fn fold_content_after<'a>(
    header: &RecordHeader,
    request: SendMessageRequest,
    rest: impl IntoIterator<Item = &'a Record>,
    status: StatusMark,
) -> Option<Task> {
    let mut task = submitted_task(header, request);
    let mut status_message = None;
    for record in rest {
        let change = parse_change(&record.body).ok()?;
        apply_change(&mut task, change, record.header.timestamp_ms);
        if matches!(
            record.body,
            RecordBody::StatusUpdate { .. }
                | RecordBody::Terminal { .. }
                | RecordBody::Reply { .. }
        ) {
            status_message = task.status.message.take();
        }
    }
    // The status records left out only set what the mark holds. A status that carried a
    // message was set by the last status record with content (every applied status record
    // sets the status), whose message this kept; a continue in between does not clear it.
    task.status = TaskStatus {
        state: status.state,
        message: status_message.filter(|_| status.has_message),
        timestamp: Some(format_millis(status.timestamp_ms)),
    };
    Some(task)
}

/// A record's change as its payload gives it, before the machine's rules decide whether it
/// applies.
fn parse_change(body: &RecordBody) -> Result<Change, Outcome> {
    if let Some(push) = push::parse_push(body) {
        return push;
    }
    match body {
        RecordBody::Command { params, .. } => parse::<SendMessageRequest>(params)
            .map(|r| Change::Created(Box::new(r)))
            .ok_or(Outcome::Invalid),
        RecordBody::Continue { params } => parse::<SendMessageRequest>(params)
            .map(|r| Change::Continued(Box::new(r)))
            .ok_or(Outcome::Invalid),
        RecordBody::CancelRequest { .. } => Ok(Change::Canceled),
        // Decided by the machine (rule 10); nothing to parse, and no content.
        RecordBody::Claim { .. } => Err(Outcome::Fenced),
        RecordBody::StatusUpdate { state, message } | RecordBody::Terminal { state, message } => {
            let state = state.state().map_err(|_| Outcome::IllegalTransition)?;
            let message = if message.is_empty() {
                None
            } else {
                Some(Box::new(parse::<Message>(message).ok_or(Outcome::Invalid)?))
            };
            Ok(Change::Status {
                state,
                message,
                resumed: false,
            })
        }
        RecordBody::Reply { message } => parse::<Message>(message)
            .map(|m| Change::Replied {
                message: Box::new(m),
                answered: false,
            })
            .ok_or(Outcome::Invalid),
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
        RecordBody::PushConfig { .. }
        | RecordBody::PushConfigDeleted { .. }
        | RecordBody::PushDeadLetter { .. }
        | RecordBody::PushProgress { .. } => Err(Outcome::Invalid),
    }
}

/// Apply an applied change (other than the command's) to the task (rules 3, 5, 6 and 7).
fn apply_change(task: &mut Task, change: Change, timestamp_ms: u64) {
    let timestamp = Some(format_millis(timestamp_ms));
    match change {
        Change::Created(_) | Change::Push(_) => {}
        Change::Continued(request) => {
            let message = adopt(request.message, task);
            task.history.push(message);
            task.status = TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp,
            };
        }
        Change::FollowedUp(request) => {
            let message = adopt(request.message, task);
            task.history.push(message);
        }
        Change::Canceled => {
            task.status = TaskStatus {
                state: TaskState::Canceled,
                message: None,
                timestamp,
            };
        }
        Change::Status {
            state,
            message,
            resumed,
        } => {
            let message = message.map(|m| adopt(*m, task));
            if let Some(message) = &message {
                task.history.push(message.clone());
            }
            task.status = if resumed {
                // Gone on to the waiting follow-up: submitted, as after a continue.
                TaskStatus {
                    state: TaskState::Submitted,
                    message: None,
                    timestamp,
                }
            } else {
                TaskStatus {
                    state,
                    message,
                    timestamp,
                }
            };
        }
        Change::Artifact {
            artifact, append, ..
        } => merge_artifact(&mut task.artifacts, *artifact, append),
        // A reply that answered has no task to change (the fold keeps it aside); one that
        // completed the task is what a completed terminal record with its message is.
        Change::Replied { message, .. } => {
            let completed = Change::Status {
                state: TaskState::Completed,
                message: Some(message),
                resumed: false,
            };
            apply_change(task, completed, timestamp_ms);
        }
        Change::Claimed(claimed) => {
            if claimed.started {
                task.status = TaskStatus {
                    state: TaskState::Working,
                    message: None,
                    timestamp,
                };
            }
        }
    }
}

fn parse<T: DeserializeOwned>(json: &str) -> Option<T> {
    serde_json::from_str(json).ok()
}

/// A reply that answered in its task's place (rule 15), as its sender receives it: in the
/// exchange's context, part of no task.
pub fn answering(mut message: Message, context_id: &str) -> Message {
    message.task_id = None;
    message.context_id = Some(context_id.to_owned());
    message
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
mod tests;
