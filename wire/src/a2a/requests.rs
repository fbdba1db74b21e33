//! Request and response bodies of the task operations (`SendMessage`, `GetTask`, `ListTasks`, ...).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Message, Task, TaskPushNotificationConfig, is_false, opt_i32};
use crate::TaskState;

/// `SendMessage` / `SendStreamingMessage` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The tenant, from the chosen card interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The message. Required.
    pub message: Message,
    /// How to handle the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// Options of a send.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts in the output.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "accepted_output_modes"
    )]
    pub accepted_output_modes: Vec<String>,
    /// Where to push updates of the task.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "task_push_notification_config"
    )]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// How many history messages to return: unset = server default, 0 = none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_i32",
        alias = "history_length"
    )]
    pub history_length: Option<i32>,
    /// Return right after creating the task instead of waiting for a terminal or interrupted
    /// state (0.3: `blocking: false`). Serialized only when `true`.
    #[serde(
        default,
        skip_serializing_if = "is_false",
        alias = "return_immediately"
    )]
    pub return_immediately: bool,
}

/// `GetTask` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id. Required.
    pub id: String,
    /// How many history messages to return: unset = server default, 0 = none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_i32",
        alias = "history_length"
    )]
    pub history_length: Option<i32>,
}

/// `CancelTask` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id. Required.
    pub id: String,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `SubscribeToTask` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id. Required.
    pub id: String,
}

/// `ListTasks` params: filters and paging, all optional.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Only tasks of this context.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "context_id")]
    pub context_id: Option<String>,
    /// Only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// Page size: default 50, 1 to 100.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_i32",
        alias = "page_size"
    )]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "page_token")]
    pub page_token: Option<String>,
    /// How many history messages per task.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_i32",
        alias = "history_length"
    )]
    pub history_length: Option<i32>,
    /// Only tasks whose status timestamp is at or after this ISO 8601 time.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "status_timestamp_after"
    )]
    pub status_timestamp_after: Option<String>,
    /// Include artifacts (omitted unless `true`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "include_artifacts"
    )]
    pub include_artifacts: Option<bool>,
}

/// `ListTasks` result. Every field is always serialized.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The page, newest status first (present even when empty).
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// Cursor of the next page; `""` on the last page.
    #[serde(default, alias = "next_page_token")]
    pub next_page_token: String,
    /// The page size used.
    #[serde(default, alias = "page_size")]
    pub page_size: i32,
    /// How many tasks match in all.
    #[serde(default, alias = "total_size")]
    pub total_size: i32,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::a2a::{Part, from_json};
    use serde_json::json;

    fn round_trip<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
        json: &str,
    ) -> T {
        let value: T = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), json);
        value
    }

    #[test]
    fn spec_4_1_send_request_parses() {
        // §4.1, the params of the JSON-RPC request. `returnImmediately:false` is the default and
        // is not written back; everything else re-serializes to the same JSON.
        let params = json!({"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]},
                            "configuration":{"returnImmediately":false,"historyLength":10}});
        let request: SendMessageRequest = from_json("SendMessageRequest", &params).unwrap();
        assert_eq!(request.message.parts, vec![Part::text("hi")]);
        let configuration = request.configuration.clone().unwrap();
        assert_eq!(configuration.history_length, Some(10));
        assert!(!configuration.return_immediately);
        let mut expected = params;
        expected["configuration"]
            .as_object_mut()
            .unwrap()
            .remove("returnImmediately");
        assert_eq!(serde_json::to_value(&request).unwrap(), expected);
    }

    #[test]
    fn send_request_round_trips() {
        let request: SendMessageRequest = round_trip(concat!(
            r#"{"tenant":"acme","message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"#,
            r#""configuration":{"acceptedOutputModes":["text/plain"],"taskPushNotificationConfig":{"url":"https://h/cb","token":"k"},"#,
            r#""historyLength":0,"returnImmediately":true},"metadata":{"a":1}}"#
        ));
        assert!(request.configuration.unwrap().return_immediately);
    }

    #[test]
    fn send_request_snake_case_and_string_numbers() {
        let request: SendMessageRequest = serde_json::from_value(json!({
            "message": {"message_id": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"accepted_output_modes": ["a"], "history_length": "5", "return_immediately": true,
                              "task_push_notification_config": {"task_id": "t", "url": "u"}},
            "unknown": true
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            concat!(
                r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"#,
                r#""configuration":{"acceptedOutputModes":["a"],"taskPushNotificationConfig":{"taskId":"t","url":"u"},"historyLength":5,"returnImmediately":true}}"#
            )
        );
    }

    #[test]
    fn bad_history_length_names_the_field() {
        let params = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                            "configuration": {"historyLength": "ten"}});
        let err = from_json::<SendMessageRequest>("SendMessageRequest", &params).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid SendMessageRequest: invalid value: string \"ten\", expected a 32-bit integer at `configuration.historyLength`"
        );
        let err = from_json::<GetTaskRequest>(
            "GetTaskRequest",
            &json!({"id": "t", "historyLength": 1e10}),
        );
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("expected a 32-bit integer")
        );
    }

    #[test]
    fn task_requests_round_trip() {
        round_trip::<GetTaskRequest>(r#"{"id":"t"}"#);
        round_trip::<GetTaskRequest>(r#"{"tenant":"x","id":"t","historyLength":3}"#);
        round_trip::<CancelTaskRequest>(r#"{"id":"t","metadata":{"why":"bored"}}"#);
        round_trip::<SubscribeToTaskRequest>(r#"{"tenant":"x","id":"t"}"#);
        let get: GetTaskRequest =
            serde_json::from_value(json!({"id": "t", "history_length": 2})).unwrap();
        assert_eq!(get.history_length, Some(2));
        let err = serde_json::from_value::<CancelTaskRequest>(json!({"metadata": {}})).unwrap_err();
        assert_eq!(err.to_string(), "missing field `id`");
    }

    #[test]
    fn list_tasks_round_trips() {
        round_trip::<ListTasksRequest>("{}");
        let request: ListTasksRequest = round_trip(concat!(
            r#"{"tenant":"x","contextId":"c","status":"TASK_STATE_WORKING","pageSize":10,"pageToken":"p","#,
            r#""historyLength":0,"statusTimestampAfter":"2026-01-01T00:00:00Z","includeArtifacts":true}"#
        ));
        assert_eq!(request.status, Some(TaskState::Working));
        let request: ListTasksRequest = serde_json::from_value(json!({
            "context_id": "c", "status": "working", "page_size": "7", "include_artifacts": false
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            r#"{"contextId":"c","status":"TASK_STATE_WORKING","pageSize":7,"includeArtifacts":false}"#
        );
    }

    #[test]
    fn list_tasks_response_always_has_every_field() {
        round_trip::<ListTasksResponse>(
            r#"{"tasks":[],"nextPageToken":"","pageSize":50,"totalSize":0}"#,
        );
        let response = ListTasksResponse::default();
        assert_eq!(
            serde_json::to_string(&response).unwrap(),
            r#"{"tasks":[],"nextPageToken":"","pageSize":0,"totalSize":0}"#
        );
        let response: ListTasksResponse = serde_json::from_value(json!({
            "tasks": [{"id": "t", "context_id": "c", "status": {"state": "TASK_STATE_COMPLETED"}}],
            "next_page_token": "n", "page_size": 1, "total_size": 2
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&response).unwrap(),
            r#"{"tasks":[{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}],"nextPageToken":"n","pageSize":1,"totalSize":2}"#
        );
    }
}
