//! [`MachineSnapshot`]: a [`TaskMachine`] as plain data, for a reader's checkpoint, and back.

use super::{ANSWERED, Claim, Live, PUSH_CONFIGS, SHOWN, TaskMachine, mark};
use crate::TaskState;
use crate::fold::seen::Seen;

/// Everything a [`TaskMachine`] holds, field by field: what a checkpoint of a reader's view
/// stores, so that a machine restored from it decides every later record as the original
/// would ([`TaskMachine::snapshot`], [`TaskMachine::from_snapshot`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachineSnapshot {
    /// The state, `None` before the command.
    pub state: Option<TaskState>,
    /// When the status was set, Unix milliseconds.
    pub status_timestamp_ms: u64,
    /// Whether the record that set the status carried a message.
    pub status_has_message: bool,
    /// The latest client message id applied.
    pub last_message_id: Option<String>,
    /// The `message_id`s applied while live (`None` once terminal): the client messages'
    /// (sorted), and the newest others' (oldest first), as rule 8 remembers them.
    pub seen: Option<(Vec<String>, Vec<String>)>,
    /// The task's claims so far.
    pub attempts: u32,
    /// The claim on the current turn.
    pub claim: Option<Claim>,
    /// Follow-ups queued behind the current turn, oldest first.
    pub pending: Vec<String>,
    /// The task's retention, milliseconds (0 = forever).
    pub retention_ms: u64,
    /// The client has seen the task (rule 15).
    pub shown: bool,
    /// The task ended answered by a reply (rule 15).
    pub answered: bool,
    /// A push config was registered in this incarnation (rule 16).
    pub push_configs: bool,
}

impl TaskMachine {
    /// The machine's whole state, to store.
    pub fn snapshot(&self) -> MachineSnapshot {
        let seen = self.seen().map(Seen::parts);
        MachineSnapshot {
            state: self.state,
            status_timestamp_ms: self.status_timestamp_ms,
            status_has_message: self.status_has_message,
            last_message_id: self.last_message_id.as_deref().map(str::to_owned),
            seen,
            attempts: self.attempts,
            claim: self.claim().cloned(),
            pending: self.pending().map(str::to_owned).collect(),
            retention_ms: self.retention_ms,
            shown: self.is_shown(),
            answered: self.is_answered(),
            push_configs: self.has_push_configs(),
        }
    }

    /// The machine a [`snapshot`](Self::snapshot) was taken of.
    pub fn from_snapshot(snapshot: MachineSnapshot) -> Self {
        let live = Live {
            seen: snapshot
                .seen
                .map(|(clients, recent)| Seen::from_parts(clients, recent)),
            claim: snapshot.claim,
            pending: snapshot.pending.into_iter().map(Box::from).collect(),
        };
        Self {
            state: snapshot.state,
            status_timestamp_ms: snapshot.status_timestamp_ms,
            status_has_message: snapshot.status_has_message,
            last_message_id: snapshot.last_message_id.map(Box::from),
            live: (!live.is_empty()).then(|| Box::new(live)),
            attempts: snapshot.attempts,
            retention_ms: snapshot.retention_ms,
            marks: mark(SHOWN, snapshot.shown)
                | mark(ANSWERED, snapshot.answered)
                | mark(PUSH_CONFIGS, snapshot.push_configs),
        }
    }
}
