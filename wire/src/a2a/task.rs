//! [`Task`], its [`TaskStatus`] and its output [`Artifact`]s.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Message, Part};
use crate::TaskState;

/// Where a task stands: its state, an optional message from the agent, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state. Required.
    pub state: TaskState,
    /// A message accompanying the state, e.g. what input is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the state was entered, ISO 8601 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    /// A status with only a state.
    pub fn new(state: TaskState) -> Self {
        Self {
            state,
            message: None,
            timestamp: None,
        }
    }
}

/// An output of a task: named content made of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task. Required.
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content. Required, at least one (always serialized).
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// URIs of the extensions that contributed to the artifact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A unit of work: status, outputs and the messages exchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Server-generated id. Required.
    pub id: String,
    /// The conversation the task belongs to (always serialized).
    #[serde(default, alias = "context_id")]
    pub context_id: String,
    /// Current status. Required.
    pub status: TaskStatus,
    /// Outputs so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Messages exchanged, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn minimal_task_always_has_context_id() {
        let task = Task {
            id: "t".into(),
            context_id: String::new(),
            status: TaskStatus::new(TaskState::Submitted),
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
        };
        let json = r#"{"id":"t","contextId":"","status":{"state":"TASK_STATE_SUBMITTED"}}"#;
        assert_eq!(serde_json::to_string(&task).unwrap(), json);
        assert_eq!(serde_json::from_str::<Task>(json).unwrap(), task);
    }

    #[test]
    fn full_task_round_trips() {
        let json = concat!(
            r#"{"id":"t","contextId":"c","status":{"state":"TASK_STATE_INPUT_REQUIRED","#,
            r#""message":{"messageId":"s","role":"ROLE_AGENT","parts":[{"text":"more?"}]},"timestamp":"2026-01-01T00:00:00.000Z"},"#,
            r#""artifacts":[{"artifactId":"a","name":"n","description":"d","parts":[{"text":"x"}],"metadata":{"k":"v"},"extensions":["urn:e"]}],"#,
            r#""history":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}],"metadata":{"z":null}}"#
        );
        let task: Task = serde_json::from_str(json).unwrap();
        assert_eq!(task.status.state, TaskState::InputRequired);
        assert_eq!(serde_json::to_string(&task).unwrap(), json);
    }

    #[test]
    fn snake_case_unknown_fields_and_v03_state_names() {
        let task: Task = serde_json::from_value(json!({
            "id": "t", "context_id": "c", "kind": "task",
            "status": {"state": "completed", "extra": 1},
            "artifacts": [{"artifact_id": "a", "parts": [{"text": "x"}]}]
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&task).unwrap(),
            r#"{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"x"}]}]}"#
        );
    }

    #[test]
    fn wrong_types_are_errors() {
        let err = serde_json::from_value::<Task>(
            json!({"id": 1, "status": {"state": "TASK_STATE_WORKING"}}),
        );
        assert_eq!(
            err.unwrap_err().to_string(),
            "invalid type: integer `1`, expected a string"
        );
        let err = serde_json::from_value::<Task>(json!({"id": "t"}));
        assert_eq!(err.unwrap_err().to_string(), "missing field `status`");
    }
}
