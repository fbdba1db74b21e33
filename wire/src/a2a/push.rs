//! Push notification configs and the params of their four operations.

use serde::{Deserialize, Serialize};

use super::opt_i32;

/// Where and how to push a task's updates (flattened in 1.0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The config id (server-assigned when absent on create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The task.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "task_id")]
    pub task_id: Option<String>,
    /// The webhook URL. Required.
    pub url: String,
    /// A token the agent echoes in each notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How the agent authenticates to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// Credentials for a webhook: sent as `Authorization: {scheme} {credentials}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// The HTTP auth scheme, e.g. `Bearer`. Required.
    pub scheme: String,
    /// The credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// `GetTaskPushNotificationConfig` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPushNotificationConfigRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The config id. Required.
    pub id: String,
}

/// `DeleteTaskPushNotificationConfig` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteTaskPushNotificationConfigRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The config id. Required.
    pub id: String,
}

/// `ListTaskPushNotificationConfigs` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// Page size.
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
}

/// `ListTaskPushNotificationConfigs` result. Both fields are always serialized.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// The page (present even when empty).
    #[serde(default)]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// Cursor of the next page; `""` on the last page.
    #[serde(default, alias = "next_page_token")]
    pub next_page_token: String,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_round_trips() {
        for json in [
            r#"{"url":"https://h/cb"}"#,
            r#"{"tenant":"x","id":"p","taskId":"t","url":"https://h/cb","token":"k","authentication":{"scheme":"Bearer","credentials":"s"}}"#,
        ] {
            let config: TaskPushNotificationConfig = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_string(&config).unwrap(), json);
        }
        let err =
            serde_json::from_value::<TaskPushNotificationConfig>(json!({"id": "p"})).unwrap_err();
        assert_eq!(err.to_string(), "missing field `url`");
    }

    #[test]
    fn tck_snake_case_params_are_accepted() {
        // The TCK sends `{"task_id":…,"id":…}` for get and delete.
        let get: GetTaskPushNotificationConfigRequest =
            serde_json::from_value(json!({"task_id": "t", "id": "p"})).unwrap();
        assert_eq!(
            serde_json::to_string(&get).unwrap(),
            r#"{"taskId":"t","id":"p"}"#
        );
        let delete: DeleteTaskPushNotificationConfigRequest =
            serde_json::from_value(json!({"task_id": "t", "id": "p", "x": 1})).unwrap();
        assert_eq!(
            serde_json::to_string(&delete).unwrap(),
            r#"{"taskId":"t","id":"p"}"#
        );
        let list: ListTaskPushNotificationConfigsRequest =
            serde_json::from_value(json!({"task_id": "t", "page_size": 2, "page_token": "n"}))
                .unwrap();
        assert_eq!(
            serde_json::to_string(&list).unwrap(),
            r#"{"taskId":"t","pageSize":2,"pageToken":"n"}"#
        );
    }

    #[test]
    fn list_response_always_has_both_fields() {
        assert_eq!(
            serde_json::to_string(&ListTaskPushNotificationConfigsResponse::default()).unwrap(),
            r#"{"configs":[],"nextPageToken":""}"#
        );
        let json = r#"{"configs":[{"id":"p","taskId":"t","url":"u"}],"nextPageToken":"n"}"#;
        let response: ListTaskPushNotificationConfigsResponse = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&response).unwrap(), json);
    }
}
