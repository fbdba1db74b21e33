//! The task state dictionary: pinned `u8` codes, both A2A spellings, the legal transitions.
//!
//! Codes are the `TaskState` enum numbers of the A2A 1.0 proto (`lf.a2a.v1.TaskState`), so a
//! code read off the log means the same thing in every language. **Codes are never reused**:
//! a retired state keeps its number forever and new states take new numbers.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use strum::{Display, EnumIter, EnumString, IntoStaticStr};

use crate::WireError;

/// An A2A task state, with its pinned wire code.
///
/// `Display` gives the 1.0 name (`TASK_STATE_INPUT_REQUIRED`); `FromStr` accepts the 1.0 and
/// the 0.3 (`input-required`) spellings; [`TaskState::as_v03_str`] gives the 0.3 name.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Display,
    EnumString,
    EnumIter,
    IntoStaticStr,
)]
#[repr(u8)]
pub enum TaskState {
    /// No state given (0.3: `unknown`).
    #[strum(to_string = "TASK_STATE_UNSPECIFIED", serialize = "unknown")]
    Unspecified = 0,
    /// Accepted, not yet picked up by a worker.
    #[strum(to_string = "TASK_STATE_SUBMITTED", serialize = "submitted")]
    Submitted = 1,
    /// A worker is on it.
    #[strum(to_string = "TASK_STATE_WORKING", serialize = "working")]
    Working = 2,
    /// Finished successfully. Terminal.
    #[strum(to_string = "TASK_STATE_COMPLETED", serialize = "completed")]
    Completed = 3,
    /// Finished with an error. Terminal.
    #[strum(to_string = "TASK_STATE_FAILED", serialize = "failed")]
    Failed = 4,
    /// Canceled by the client. Terminal.
    #[strum(to_string = "TASK_STATE_CANCELED", serialize = "canceled")]
    Canceled = 5,
    /// The agent needs more input from the client. Interrupted.
    #[strum(to_string = "TASK_STATE_INPUT_REQUIRED", serialize = "input-required")]
    InputRequired = 6,
    /// The agent declined the task. Terminal.
    #[strum(to_string = "TASK_STATE_REJECTED", serialize = "rejected")]
    Rejected = 7,
    /// The agent needs authorization to go on. Interrupted.
    #[strum(to_string = "TASK_STATE_AUTH_REQUIRED", serialize = "auth-required")]
    AuthRequired = 8,
}

impl TaskState {
    /// The pinned wire code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The state for a wire code, or `None` for a code this version does not know.
    pub const fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => TaskState::Unspecified,
            1 => TaskState::Submitted,
            2 => TaskState::Working,
            3 => TaskState::Completed,
            4 => TaskState::Failed,
            5 => TaskState::Canceled,
            6 => TaskState::InputRequired,
            7 => TaskState::Rejected,
            8 => TaskState::AuthRequired,
            _ => return None,
        })
    }

    /// The 1.0 ProtoJSON name, e.g. `TASK_STATE_INPUT_REQUIRED`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The 0.3 name, e.g. `input-required`.
    pub const fn as_v03_str(self) -> &'static str {
        match self {
            TaskState::Unspecified => "unknown",
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Canceled => "canceled",
            TaskState::InputRequired => "input-required",
            TaskState::Rejected => "rejected",
            TaskState::AuthRequired => "auth-required",
        }
    }

    /// Completed, failed, canceled or rejected: nothing follows.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Input-required or auth-required: the task waits for the client.
    pub const fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Whether a task in `self` may move to `next`. The legal-transition table:
    ///
    /// | from | to |
    /// | --- | --- |
    /// | unspecified | submitted |
    /// | submitted | working, input-required, auth-required, any terminal |
    /// | working | working (progress), input-required, auth-required, any terminal |
    /// | input-required, auth-required | submitted (a follow-up message), working, input-required, auth-required, any terminal |
    /// | any terminal | nothing |
    pub const fn can_transition_to(self, next: TaskState) -> bool {
        use TaskState::*;
        match self {
            Unspecified => matches!(next, Submitted),
            Submitted => !matches!(next, Unspecified | Submitted),
            Working => !matches!(next, Unspecified | Submitted),
            InputRequired | AuthRequired => !matches!(next, Unspecified),
            Completed | Failed | Canceled | Rejected => false,
        }
    }
}

/// A state code as read off the log: known or not, it re-encodes to the same byte.
///
/// Records written by a newer producer may carry a state this version does not know; keeping
/// the raw code lets a relay or a re-encoder pass it on unchanged, while the fold ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateCode(pub u8);

impl StateCode {
    /// The known state, or [`WireError::UnknownStateCode`].
    pub fn state(self) -> Result<TaskState, WireError> {
        TaskState::from_code(self.0).ok_or(WireError::UnknownStateCode(self.0))
    }
}

impl From<TaskState> for StateCode {
    fn from(state: TaskState) -> Self {
        StateCode(state.code())
    }
}

impl fmt::Display for StateCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match TaskState::from_code(self.0) {
            Some(state) => state.fmt(f),
            None => write!(f, "unknown state code {}", self.0),
        }
    }
}

/// Serialized as the 1.0 name.
impl Serialize for TaskState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Accepts the 1.0 name, the 0.3 name, or the proto enum number (ProtoJSON allows numbers).
impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr<'a> {
            Name(&'a str),
            Owned(String),
            Number(u64),
        }
        let unknown = |what: &dyn fmt::Display| {
            serde::de::Error::custom(format!("unknown task state {what}"))
        };
        match Repr::deserialize(deserializer)? {
            Repr::Name(name) => name.parse().map_err(|_| unknown(&format!("{name:?}"))),
            Repr::Owned(name) => name.parse().map_err(|_| unknown(&format!("{name:?}"))),
            Repr::Number(n) => u8::try_from(n)
                .ok()
                .and_then(TaskState::from_code)
                .ok_or_else(|| unknown(&n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    const PINNED: [(TaskState, u8, &str, &str); 9] = [
        (
            TaskState::Unspecified,
            0,
            "TASK_STATE_UNSPECIFIED",
            "unknown",
        ),
        (TaskState::Submitted, 1, "TASK_STATE_SUBMITTED", "submitted"),
        (TaskState::Working, 2, "TASK_STATE_WORKING", "working"),
        (TaskState::Completed, 3, "TASK_STATE_COMPLETED", "completed"),
        (TaskState::Failed, 4, "TASK_STATE_FAILED", "failed"),
        (TaskState::Canceled, 5, "TASK_STATE_CANCELED", "canceled"),
        (
            TaskState::InputRequired,
            6,
            "TASK_STATE_INPUT_REQUIRED",
            "input-required",
        ),
        (TaskState::Rejected, 7, "TASK_STATE_REJECTED", "rejected"),
        (
            TaskState::AuthRequired,
            8,
            "TASK_STATE_AUTH_REQUIRED",
            "auth-required",
        ),
    ];

    #[test]
    fn pins_every_code_and_name() {
        assert_eq!(TaskState::iter().count(), PINNED.len());
        for (state, code, v1, v03) in PINNED {
            assert_eq!(state.code(), code);
            assert_eq!(TaskState::from_code(code), Some(state));
            assert_eq!(state.to_string(), v1);
            assert_eq!(state.as_v03_str(), v03);
            assert_eq!(v1.parse::<TaskState>().ok(), Some(state));
            assert_eq!(v03.parse::<TaskState>().ok(), Some(state));
        }
    }

    #[test]
    fn rejects_every_unknown_code() {
        for code in 9..=u8::MAX {
            assert_eq!(TaskState::from_code(code), None, "code {code}");
            assert_eq!(
                StateCode(code).state(),
                Err(WireError::UnknownStateCode(code))
            );
        }
    }

    #[test]
    fn unknown_names_are_errors() {
        for name in [
            "",
            "COMPLETED",
            "task_state_completed",
            "input_required",
            "done",
        ] {
            assert!(name.parse::<TaskState>().is_err(), "{name}");
            assert!(serde_json::from_value::<TaskState>(serde_json::json!(name)).is_err());
        }
        assert!(serde_json::from_value::<TaskState>(serde_json::json!(9)).is_err());
    }

    #[test]
    fn json_is_the_v1_name_and_accepts_both() {
        let json = serde_json::to_string(&TaskState::InputRequired).ok();
        assert_eq!(json.as_deref(), Some("\"TASK_STATE_INPUT_REQUIRED\""));
        for input in ["\"input-required\"", "\"TASK_STATE_INPUT_REQUIRED\"", "6"] {
            assert_eq!(
                serde_json::from_str::<TaskState>(input).ok(),
                Some(TaskState::InputRequired)
            );
        }
    }

    #[test]
    fn terminal_and_interrupted_partition_the_states() {
        for state in TaskState::iter() {
            assert!(!(state.is_terminal() && state.is_interrupted()));
            if state.is_terminal() {
                assert!(TaskState::iter().all(|next| !state.can_transition_to(next)));
            }
        }
        assert!(TaskState::Submitted.can_transition_to(TaskState::Working));
        assert!(TaskState::Working.can_transition_to(TaskState::Working));
        assert!(TaskState::InputRequired.can_transition_to(TaskState::Submitted));
        assert!(!TaskState::Working.can_transition_to(TaskState::Submitted));
        assert!(!TaskState::Unspecified.can_transition_to(TaskState::Completed));
    }
}
