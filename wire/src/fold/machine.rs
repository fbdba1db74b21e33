//! [`TaskMachine`]: the state-level half of the fold, which decides every record.

// A child, not a sibling, so it reads the machine's private fields without widening them.
mod snapshot;

use std::collections::VecDeque;

use super::seen::Seen;

use super::{Change, Outcome, PushChange, is_push, parse_change};
use crate::{Record, RecordBody, RecordHeader, TaskState};

pub use snapshot::MachineSnapshot;

/// How a claim applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClaimKind {
    /// The turn's first claim.
    First,
    /// The holder renewed (or, with a lease already over, released) its claim.
    Renewal,
    /// Another attempt took the turn over after the lease ran out.
    Takeover,
    /// The holder took the first queued follow-up: that message is now the turn.
    Advance,
}

/// A claim as applied: who holds which turn, under which attempt, until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// How it applied.
    pub kind: ClaimKind,
    /// The claim found the task submitted and moved it to `working`: a worker started on the
    /// turn (rule 10).
    pub started: bool,
    /// The turn: the `messageId` of the client message the holder answers.
    pub turn: Box<str>,
    /// The claim's current state.
    pub claim: Claim,
}

/// The claim on a task's current turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The attempt (the task's claims count from 1); the holder's records carry it.
    pub attempt: u32,
    /// Which try of this turn the attempt is: 1 for the turn's first claim, one more per
    /// takeover. A handler reads it to tell a retry.
    pub turn_attempt: u32,
    /// The `source` of the worker holding the claim.
    pub holder: Box<str>,
    /// Until when the claim holds, Unix milliseconds.
    pub lease_until_ms: u64,
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
/// [`TaskFold`](super::TaskFold) wraps it to build the whole [`Task`](crate::a2a::Task); the
/// bridge's view keeps one per task so that it decides exactly as the fold does while holding a
/// few dozen bytes per task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskMachine {
    state: Option<TaskState>,
    status_timestamp_ms: u64,
    /// Whether the record that set the status carried a message.
    status_has_message: bool,
    last_message_id: Option<Box<str>>,
    /// What only a live task has; `None` once the task is terminal (and whenever it would
    /// be empty), so that a finished task pays one null pointer for it.
    live: Option<Box<Live>>,
    /// The task's claims so far: the last attempt number given out.
    attempts: u32,
    /// How long the task stays answerable once terminal, in milliseconds (its command's; 0 =
    /// forever, rule 14).
    retention_ms: u64,
    /// [`SHOWN`], [`ANSWERED`] and [`PUSH_CONFIGS`]: one byte, where three flags would make
    /// the machine (and every task the view keeps) a word longer.
    marks: u8,
}

/// The client has seen the task (rule 15): a status or artifact record applied, a follow-up
/// came, or the command asked for the task at once (`returnImmediately`). A reply then
/// completes the task instead of answering in its place.
const SHOWN: u8 = 1;
/// The task ended with a reply that answered in its place (rule 15): readers answer it as a
/// task that never existed.
const ANSWERED: u8 = 2;
/// A push config was registered in this incarnation (rule 16), by a push record or inline on
/// a client message: a sender reads the task's configs back only when set.
const PUSH_CONFIGS: u8 = 4;

/// The part of a [`TaskMachine`] that only a live task needs.
#[derive(Debug, Clone, Default, PartialEq)]
struct Live {
    /// `message_id`s applied so far (rule 8: the client messages', and the newest others').
    seen: Option<Seen>,
    /// The claim on the current turn, if any (none before the turn's first claim and after an
    /// interruption).
    claim: Option<Claim>,
    /// Follow-ups queued behind the current turn, oldest first (rule 12); usually none.
    pending: VecDeque<Box<str>>,
}

impl Live {
    fn is_empty(&self) -> bool {
        self.seen.is_none() && self.claim.is_none() && self.pending.is_empty()
    }
}

impl TaskMachine {
    /// A machine waiting for its task's command.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decide the next record of the task, in log order. The caller routes records by task id.
    pub fn apply(&mut self, record: &Record) -> Result<Change, Outcome> {
        self.apply_parsed(record, None)
    }

    /// [`apply`](Self::apply) with the record's payload already parsed ([`Parsed::of`] the
    /// same record): a reader parses outside whatever lock it applies under.
    pub fn apply_parsed(
        &mut self,
        record: &Record,
        parsed: Option<Parsed>,
    ) -> Result<Change, Outcome> {
        let change = self.decide(record, parsed)?;
        let ts = record.header.timestamp_ms;
        match &change {
            Change::Created(request) => {
                // A new task, or a new incarnation of an expired one (rule 14).
                *self = Self {
                    retention_ms: command_retention(record),
                    marks: mark(SHOWN, returns_immediately(request))
                        | mark(PUSH_CONFIGS, carries_config(request)),
                    ..Self::default()
                };
                self.submit(&request.message.message_id, ts);
            }
            Change::Continued(request) => {
                self.marks |= mark(PUSH_CONFIGS, carries_config(request));
                self.submit(&request.message.message_id, ts);
            }
            Change::FollowedUp(request) => {
                self.marks |= SHOWN | mark(PUSH_CONFIGS, carries_config(request));
                self.live_mut()
                    .pending
                    .push_back(request.message.message_id.as_str().into());
            }
            Change::Canceled => self.set(TaskState::Canceled, ts, false),
            Change::Replied { answered, .. } => {
                self.set(TaskState::Completed, ts, true);
                self.marks |= mark(ANSWERED, *answered);
            }
            Change::Status {
                state,
                message,
                resumed,
            } => {
                self.marks |= SHOWN;
                self.set(*state, ts, message.is_some());
                if state.is_interrupted() {
                    // The turn is over: nobody holds the task until its next turn's claim.
                    self.set_claim(None);
                }
                if *resumed && let Some(next) = self.pop_pending() {
                    self.submit(&next, ts);
                }
            }
            Change::Artifact { .. } => self.marks |= SHOWN,
            Change::Claimed(claimed) => {
                self.attempts = self.attempts.max(claimed.claim.attempt);
                if claimed.started {
                    self.set(TaskState::Working, ts, false);
                }
                if claimed.kind == ClaimKind::Advance {
                    self.pop_pending();
                    self.last_message_id = Some(claimed.turn.clone());
                }
                self.set_claim(Some(claimed.claim.clone()));
            }
            Change::Push(push) => {
                self.marks |= mark(PUSH_CONFIGS, matches!(**push, PushChange::Registered(_)));
                // Rule 16: no duplicate by id, so not remembered.
                return Ok(change);
            }
        }
        let client = matches!(
            change,
            Change::Created(_) | Change::Continued(_) | Change::FollowedUp(_)
        );
        self.remember(&record.header.message_id, client);
        Ok(change)
    }

    fn pop_pending(&mut self) -> Option<Box<str>> {
        let next = self.live.as_mut()?.pending.pop_front();
        self.tidy();
        next
    }

    /// The live part, made if the task had none.
    fn live_mut(&mut self) -> &mut Live {
        self.live.get_or_insert_default()
    }

    fn set_claim(&mut self, claim: Option<Claim>) {
        if claim.is_none() && self.live.is_none() {
            return;
        }
        self.live_mut().claim = claim;
        self.tidy();
    }

    /// Drop the live part once empty: equal machines hold equal parts.
    fn tidy(&mut self) {
        if self.live.as_deref().is_some_and(Live::is_empty) {
            self.live = None;
        }
    }

    /// [`apply`](Self::apply) of a command record (`header`) whose params the caller has
    /// already parsed into a [`SendMessageRequest`] whose message id is `message_id`: the same
    /// decision and the same state, without parsing the params again (a bridge applying the
    /// command it just wrote, with retention `retention_ms`, whose request asked for the task
    /// at once when `return_immediately`). The caller vouches that the parse succeeded on
    /// exactly the record's params text; the change (the request) is not returned.
    ///
    /// [`SendMessageRequest`]: crate::a2a::SendMessageRequest
    pub fn apply_parsed_command(
        &mut self,
        header: &RecordHeader,
        message_id: &str,
        retention_ms: u64,
        return_immediately: bool,
    ) -> Result<(), Outcome> {
        if self.state.is_some() && !self.is_expired(header.timestamp_ms) {
            return Err(Outcome::Duplicate);
        }
        *self = Self {
            retention_ms,
            marks: mark(SHOWN, return_immediately),
            ..Self::default()
        };
        self.submit(message_id, header.timestamp_ms);
        self.remember(&header.message_id, true);
        Ok(())
    }

    /// A client message (command or continue) was applied: the task waits on a worker for it.
    fn submit(&mut self, message_id: &str, timestamp_ms: u64) {
        self.last_message_id = Some(message_id.into());
        self.set_claim(None);
        self.set(TaskState::Submitted, timestamp_ms, false);
    }

    /// Remember an applied record's `message_id` (of a client message or not), to refuse
    /// its duplicates while live.
    fn remember(&mut self, id: &str, client: bool) {
        if id.is_empty() || self.is_terminal() {
            return;
        }
        self.live_mut()
            .seen
            .get_or_insert_default()
            .insert(id, client);
    }

    fn set(&mut self, state: TaskState, timestamp_ms: u64, has_message: bool) {
        self.state = Some(state);
        self.status_timestamp_ms = timestamp_ms;
        self.status_has_message = has_message;
        if state.is_terminal() {
            self.live = None;
        }
    }

    fn decide(&self, record: &Record, parsed: Option<Parsed>) -> Result<Change, Outcome> {
        // The record's payload as a change, parsed here unless the caller already did.
        let parsed = move || parsed.map_or_else(|| parse_change(&record.body), |p| p.0);
        let Some(current) = self.state else {
            return match &record.body {
                RecordBody::Command { .. } => parsed(),
                _ => Err(Outcome::Orphan),
            };
        };
        if let RecordBody::Command { .. } = &record.body {
            // Rule 14: a command written once the task has expired starts it afresh.
            if self.is_expired(record.header.timestamp_ms) {
                return parsed();
            }
            return Err(Outcome::Duplicate);
        }
        if is_push(&record.body) {
            return parsed();
        }
        if current.is_terminal() {
            return Err(Outcome::AfterTerminal);
        }
        let id = record.header.message_id.as_str();
        if !id.is_empty() && self.seen().is_some_and(|seen| seen.contains(id)) {
            return Err(Outcome::Duplicate);
        }
        match &record.body {
            RecordBody::Command { .. } => Err(Outcome::Duplicate),
            RecordBody::Continue { .. } => {
                let Change::Continued(request) = parsed()? else {
                    return Err(Outcome::Invalid);
                };
                if current.is_interrupted() {
                    Ok(Change::Continued(request))
                } else if matches!(current, TaskState::Submitted | TaskState::Working) {
                    Ok(Change::FollowedUp(request))
                } else {
                    Err(Outcome::IllegalTransition)
                }
            }
            RecordBody::Claim {
                turn,
                lease_until_ms,
            } => self
                .decide_claim(&record.header, turn, *lease_until_ms)
                .map(|claimed| Change::Claimed(Box::new(claimed))),
            RecordBody::StatusUpdate { state, .. } | RecordBody::Terminal { state, .. } => {
                self.fence(&record.header)?;
                let terminal_record = matches!(record.body, RecordBody::Terminal { .. });
                let state = state.state().map_err(|_| Outcome::IllegalTransition)?;
                if state.is_terminal() != terminal_record || !current.can_transition_to(state) {
                    return Err(Outcome::IllegalTransition);
                }
                let mut change = parsed()?;
                if let Change::Status { resumed, .. } = &mut change {
                    *resumed = state.is_interrupted() && self.pending().next().is_some();
                }
                Ok(change)
            }
            RecordBody::ArtifactUpdate { .. } => {
                self.fence(&record.header)?;
                parsed()
            }
            RecordBody::Reply { .. } => {
                self.fence(&record.header)?;
                if !current.can_transition_to(TaskState::Completed) {
                    return Err(Outcome::IllegalTransition);
                }
                let mut change = parsed()?;
                if let Change::Replied { answered, .. } = &mut change {
                    *answered = !self.is_shown();
                }
                Ok(change)
            }
            RecordBody::CancelRequest { .. }
            | RecordBody::PushConfig { .. }
            | RecordBody::PushConfigDeleted { .. }
            | RecordBody::PushDeadLetter { .. }
            | RecordBody::PushProgress { .. } => parsed(),
        }
    }

    /// Rule 11: whether a worker record was written by the current claim.
    fn fence(&self, header: &RecordHeader) -> Result<(), Outcome> {
        let holds = match self.claim() {
            None => self.attempts == 0 && header.attempt == 0,
            Some(claim) => claim.attempt == header.attempt && *claim.holder == *header.source,
        };
        if holds { Ok(()) } else { Err(Outcome::Fenced) }
    }

    /// Rules 10 and 13: how a claim on `turn` applies, if it does. The task is live.
    fn decide_claim(
        &self,
        header: &RecordHeader,
        turn: &str,
        lease_until_ms: u64,
    ) -> Result<Claimed, Outcome> {
        let live = matches!(self.state, Some(TaskState::Submitted | TaskState::Working));
        if header.attempt == 0 || !live {
            return Err(Outcome::Fenced);
        }
        let next = self.attempts.checked_add(1);
        let by_holder =
            |claim: &Claim| claim.attempt == header.attempt && *claim.holder == *header.source;
        let (kind, turn_attempt) = if self.last_message_id.as_deref() == Some(turn) {
            match self.claim() {
                None if Some(header.attempt) == next => (ClaimKind::First, 1),
                Some(claim) if by_holder(claim) => (ClaimKind::Renewal, claim.turn_attempt),
                Some(claim)
                    if Some(header.attempt) == next
                        && header.timestamp_ms >= claim.lease_until_ms =>
                {
                    (ClaimKind::Takeover, claim.turn_attempt.saturating_add(1))
                }
                _ => return Err(Outcome::Fenced),
            }
        } else {
            let first_pending = self.pending().next();
            match self.claim() {
                Some(claim) if by_holder(claim) && first_pending == Some(turn) => {
                    (ClaimKind::Advance, 1)
                }
                _ => return Err(Outcome::Fenced),
            }
        };
        Ok(Claimed {
            kind,
            started: self.state == Some(TaskState::Submitted),
            turn: turn.into(),
            claim: Claim {
                attempt: header.attempt,
                turn_attempt,
                holder: header.source.as_str().into(),
                lease_until_ms,
            },
        })
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

    /// Whether the task ended with a reply that answered in its place (rule 15): readers
    /// answer it as a task that never existed; its reply is the answer of its command's send.
    pub fn is_answered(&self) -> bool {
        self.marks & ANSWERED != 0
    }

    /// Whether a push config was registered in this incarnation (rule 16), by a push record
    /// or inline on a client message (it may have been deleted since: the records say).
    pub fn has_push_configs(&self) -> bool {
        self.marks & PUSH_CONFIGS != 0
    }

    /// Whether the client has seen the task (rule 15): a reply would complete it rather than
    /// answer in its place.
    pub fn is_shown(&self) -> bool {
        self.marks & SHOWN != 0
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
        self.seen().is_some_and(|seen| seen.contains(message_id))
    }

    /// The claim on the current turn, if any.
    pub fn claim(&self) -> Option<&Claim> {
        self.live.as_ref()?.claim.as_ref()
    }

    fn seen(&self) -> Option<&Seen> {
        self.live.as_ref()?.seen.as_ref()
    }

    /// How many claims the task has had: the attempt number of its latest.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The follow-ups queued behind the current turn, oldest first (rule 12).
    pub fn pending(&self) -> impl Iterator<Item = &str> + '_ {
        self.live
            .iter()
            .flat_map(|live| live.pending.iter().map(|id| &**id))
    }

    /// Whether the turn answering client message `turn` is over: the task ended, the turn
    /// ended (the task asked for input or auth), or the task moved past it (it is neither the
    /// turn the task waits on nor queued behind it). `false` before the command.
    pub fn turn_is_over(&self, turn: &str) -> bool {
        let Some(state) = self.state else {
            return false;
        };
        if state.is_terminal() {
            return true;
        }
        if self.last_message_id.as_deref() == Some(turn) {
            return state.is_interrupted();
        }
        !self.pending().any(|p| p == turn)
    }

    /// Whether the task waits for a worker to claim its turn: submitted, and unclaimed.
    pub fn awaits_claim(&self) -> bool {
        self.state == Some(TaskState::Submitted) && self.claim().is_none()
    }

    /// How long the task stays answerable once terminal, in milliseconds (0 = forever).
    pub fn retention_ms(&self) -> u64 {
        self.retention_ms
    }

    /// When the task expires (rule 14), Unix milliseconds: its terminal status time plus its
    /// retention. `None` while it is not terminal (a live or interrupted task never expires)
    /// or when it is kept forever.
    pub fn expires_at_ms(&self) -> Option<u64> {
        (self.is_terminal() && self.retention_ms > 0)
            .then(|| self.status_timestamp_ms.saturating_add(self.retention_ms))
    }

    /// Whether the task has expired at `now_ms`: a reader answers it as a task that never
    /// existed.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms().is_some_and(|at| now_ms >= at)
    }
}

/// A record's JSON payload parsed into the change it would make, before any rule decides
/// whether it applies: the part of [`TaskMachine::apply`] that needs no state, so a reader
/// can do it before it takes a lock.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed(Result<Change, Outcome>);

impl Parsed {
    /// Parse `record`'s payload.
    pub fn of(record: &Record) -> Self {
        Self(parse_change(&record.body))
    }

    /// What [`Parsed::of`] gives a status or terminal record setting `state` whose message
    /// is `message` serialized (none: no message), without parsing that JSON back: for the
    /// writer of the record, which holds the message it encoded (a message decodes to what
    /// was encoded).
    pub fn status(state: TaskState, message: Option<crate::a2a::Message>) -> Self {
        Self(Ok(Change::Status {
            state,
            message: message.map(Box::new),
            resumed: false,
        }))
    }
}

/// Whether a command's request asked for the task at once: its client holds the task from
/// the start (rule 15).
fn returns_immediately(request: &crate::a2a::SendMessageRequest) -> bool {
    request
        .configuration
        .as_ref()
        .is_some_and(|c| c.return_immediately)
}

/// `flag` if `set`, else nothing.
const fn mark(flag: u8, set: bool) -> u8 {
    if set { flag } else { 0 }
}

/// Whether a client message's request carries a push config inline (rule 16).
fn carries_config(request: &crate::a2a::SendMessageRequest) -> bool {
    request
        .configuration
        .as_ref()
        .is_some_and(|c| c.task_push_notification_config.is_some())
}

/// The retention a command record gives its task (0 for any other record).
fn command_retention(record: &Record) -> u64 {
    match record.body {
        RecordBody::Command { retention_ms, .. } => retention_ms,
        _ => 0,
    }
}
