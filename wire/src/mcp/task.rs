//! MCP tasks (the Tasks extension, and the legacy experimental variant): a tool call the
//! server answers with a handle, read back with `tasks/get`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::TaskState;

/// A task's status, as MCP names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpTaskStatus {
    /// Running (A2A submitted or working).
    Working,
    /// Waiting for the client (A2A input-required or auth-required).
    InputRequired,
    /// Done; the result is the call's result (also with `isError: true`).
    Completed,
    /// A protocol-level failure (A2A failed or rejected).
    Failed,
    /// Cancelled (A2A canceled).
    Cancelled,
}

impl McpTaskStatus {
    /// The MCP status of an A2A task state (an unknown state reads as working: it is not
    /// terminal).
    pub fn of(state: TaskState) -> Self {
        match state {
            TaskState::Completed => McpTaskStatus::Completed,
            TaskState::Failed | TaskState::Rejected => McpTaskStatus::Failed,
            TaskState::Canceled => McpTaskStatus::Cancelled,
            TaskState::InputRequired | TaskState::AuthRequired => McpTaskStatus::InputRequired,
            _ => McpTaskStatus::Working,
        }
    }

    /// Whether the status never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            McpTaskStatus::Completed | McpTaskStatus::Failed | McpTaskStatus::Cancelled
        )
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            McpTaskStatus::Working => "working",
            McpTaskStatus::InputRequired => "input_required",
            McpTaskStatus::Completed => "completed",
            McpTaskStatus::Failed => "failed",
            McpTaskStatus::Cancelled => "cancelled",
        }
    }
}

/// A task's fields, written per era by [`McpTask::modern`] and [`McpTask::legacy`].
#[derive(Debug, Clone, PartialEq)]
pub struct McpTask {
    /// The handle: unguessable, checked against the caller on every `tasks/*` call.
    pub task_id: String,
    /// Where it stands.
    pub status: McpTaskStatus,
    /// A human-readable note on the status.
    pub status_message: Option<String>,
    /// ISO 8601.
    pub created_at: String,
    /// ISO 8601.
    pub last_updated_at: String,
    /// How long the task is kept from its creation, in ms; `None` = no limit.
    pub ttl_ms: Option<u64>,
    /// How often a client should poll, in ms.
    pub poll_interval_ms: Option<u64>,
}

impl McpTask {
    /// The Tasks extension's `Task` members (flat in a `CreateTaskResult` and a `tasks/get`
    /// result).
    pub fn modern(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("taskId".into(), json!(self.task_id));
        map.insert("status".into(), json!(self.status.as_str()));
        if let Some(message) = &self.status_message {
            map.insert("statusMessage".into(), json!(message));
        }
        map.insert("createdAt".into(), json!(self.created_at));
        map.insert("lastUpdatedAt".into(), json!(self.last_updated_at));
        map.insert("ttlMs".into(), json!(self.ttl_ms));
        if let Some(poll) = self.poll_interval_ms {
            map.insert("pollIntervalMs".into(), json!(poll));
        }
        map
    }

    /// The legacy experimental `Task` (2025-11-25: `ttl`, `pollInterval`).
    pub fn legacy(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("taskId".into(), json!(self.task_id));
        map.insert("status".into(), json!(self.status.as_str()));
        if let Some(message) = &self.status_message {
            map.insert("statusMessage".into(), json!(message));
        }
        map.insert("createdAt".into(), json!(self.created_at));
        map.insert("lastUpdatedAt".into(), json!(self.last_updated_at));
        map.insert("ttl".into(), json!(self.ttl_ms));
        if let Some(poll) = self.poll_interval_ms {
            map.insert("pollInterval".into(), json!(poll));
        }
        map
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_from_a2a_states() {
        assert_eq!(
            McpTaskStatus::of(TaskState::Submitted),
            McpTaskStatus::Working
        );
        assert_eq!(
            McpTaskStatus::of(TaskState::Working),
            McpTaskStatus::Working
        );
        assert_eq!(
            McpTaskStatus::of(TaskState::AuthRequired),
            McpTaskStatus::InputRequired
        );
        assert_eq!(
            McpTaskStatus::of(TaskState::Rejected),
            McpTaskStatus::Failed
        );
        assert_eq!(
            McpTaskStatus::of(TaskState::Canceled),
            McpTaskStatus::Cancelled
        );
        assert!(McpTaskStatus::Completed.is_terminal());
        assert!(!McpTaskStatus::InputRequired.is_terminal());
        assert_eq!(
            serde_json::to_value(McpTaskStatus::InputRequired).unwrap(),
            json!("input_required")
        );
    }

    #[test]
    fn a_task_is_written_per_era() {
        let task = McpTask {
            task_id: "t".into(),
            status: McpTaskStatus::Working,
            status_message: None,
            created_at: "2026-12-01T00:00:00.000Z".into(),
            last_updated_at: "2026-12-01T00:00:01.000Z".into(),
            ttl_ms: None,
            poll_interval_ms: Some(500),
        };
        let modern = Value::Object(task.modern());
        assert_eq!(modern["ttlMs"], Value::Null);
        assert_eq!(modern["pollIntervalMs"], json!(500));
        let legacy = Value::Object(task.legacy());
        assert_eq!(legacy["pollInterval"], json!(500));
        assert!(legacy.get("ttlMs").is_none());
    }
}
