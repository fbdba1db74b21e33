//! Reading 0.3: each 0.3 params object, result or event as its 1.0 model value.

use serde_json::Value;

use super::repr::{
    PushConfig, PushConfigIdParams, SendParams, TaskIdParams, TaskPushConfig, TaskQueryParams,
    V03ArtifactUpdate, V03Message, V03Part, V03StatusUpdate, V03Task,
};
use crate::WireError;
use crate::a2a::{
    CancelTaskRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, Message, Part, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskArtifactUpdateEvent,
    TaskPushNotificationConfig, TaskStatusUpdateEvent, from_json,
};

/// `message/send` and `message/stream` params (`MessageSendParams`) as a 1.0 request.
///
/// `configuration.blocking: false` becomes `returnImmediately: true`; an absent `blocking` keeps
/// the 1.0 default (wait). `pushNotificationConfig` becomes `taskPushNotificationConfig`.
pub fn send_params_from_v03(params: &Value) -> Result<SendMessageRequest, WireError> {
    let params: SendParams = from_json("message/send params", params)?;
    let configuration = params.configuration.map(|c| SendMessageConfiguration {
        accepted_output_modes: c.accepted_output_modes,
        task_push_notification_config: c
            .push_notification_config
            .map(PushConfig::into_v1)
            .or(c.task_push_notification_config),
        history_length: c.history_length,
        return_immediately: match c.blocking {
            Some(blocking) => !blocking,
            None => c.return_immediately.unwrap_or(false),
        },
    });
    Ok(SendMessageRequest {
        tenant: None,
        message: params.message.into(),
        configuration,
        metadata: params.metadata,
    })
}

/// `tasks/get` params (`TaskQueryParams {id, historyLength, metadata}`); 1.0 has no metadata here.
pub fn get_task_params_from_v03(params: &Value) -> Result<GetTaskRequest, WireError> {
    let params: TaskQueryParams = from_json("tasks/get params", params)?;
    Ok(GetTaskRequest {
        tenant: None,
        id: params.id,
        history_length: params.history_length,
    })
}

/// `tasks/cancel` and `tasks/resubscribe` params (`TaskIdParams {id, metadata}`).
pub fn task_id_params_from_v03(params: &Value) -> Result<CancelTaskRequest, WireError> {
    let params: TaskIdParams = from_json("task id params", params)?;
    Ok(CancelTaskRequest {
        tenant: None,
        id: params.id,
        metadata: params.metadata,
    })
}

/// `tasks/pushNotificationConfig/set` params (`{taskId, pushNotificationConfig{…}}`) as a
/// flattened 1.0 config.
pub fn push_config_from_v03(params: &Value) -> Result<TaskPushNotificationConfig, WireError> {
    let params: TaskPushConfig = from_json("tasks/pushNotificationConfig/set params", params)?;
    let mut config = params.push_notification_config.into_v1();
    config.task_id = Some(params.task_id);
    Ok(config)
}

/// `tasks/pushNotificationConfig/get` and `…/delete` params (`{id, pushNotificationConfigId}`,
/// `id` being the task). Without a config id, the config id is the task id (0.3's default).
pub fn push_config_id_params_from_v03(
    params: &Value,
) -> Result<GetTaskPushNotificationConfigRequest, WireError> {
    let params: PushConfigIdParams = from_json("push notification config params", params)?;
    Ok(GetTaskPushNotificationConfigRequest {
        tenant: None,
        id: params
            .push_notification_config_id
            .unwrap_or_else(|| params.id.clone()),
        task_id: params.id,
    })
}

/// `tasks/pushNotificationConfig/list` params (`{id}`, the task).
pub fn list_push_configs_params_from_v03(
    params: &Value,
) -> Result<ListTaskPushNotificationConfigsRequest, WireError> {
    let params: TaskIdParams = from_json("tasks/pushNotificationConfig/list params", params)?;
    Ok(ListTaskPushNotificationConfigsRequest {
        tenant: None,
        task_id: params.id,
        page_size: None,
        page_token: None,
    })
}

/// A 0.3 message (`kind: "message"`, role `user`|`agent`, 0.3 parts).
pub fn message_from_v03(value: &Value) -> Result<Message, WireError> {
    from_json::<V03Message>("0.3 message", value).map(Message::from)
}

/// A 0.3 part: `{"kind":"text"|"file"|"data",…}`, or a 1.0-shaped part.
pub fn part_from_v03(value: &Value) -> Result<Part, WireError> {
    from_json::<V03Part>("0.3 part", value).map(|part| part.0)
}

/// A 0.3 task (`kind: "task"`, lowercase states).
pub fn task_from_v03(value: &Value) -> Result<Task, WireError> {
    from_json::<V03Task>("0.3 task", value).map(Task::from)
}

/// A 0.3 `status-update` event and its `final` flag.
pub fn status_update_from_v03(value: &Value) -> Result<(TaskStatusUpdateEvent, bool), WireError> {
    let event: V03StatusUpdate = from_json("0.3 status-update", value)?;
    let final_ = event.final_;
    Ok((
        TaskStatusUpdateEvent {
            task_id: event.task_id,
            context_id: event.context_id,
            status: event.status.into(),
            metadata: event.metadata,
        },
        final_,
    ))
}

/// A 0.3 `artifact-update` event.
pub fn artifact_update_from_v03(value: &Value) -> Result<TaskArtifactUpdateEvent, WireError> {
    let event: V03ArtifactUpdate = from_json("0.3 artifact-update", value)?;
    Ok(TaskArtifactUpdateEvent {
        task_id: event.task_id,
        context_id: event.context_id,
        artifact: event.artifact.into(),
        append: event.append.unwrap_or(false),
        last_chunk: event.last_chunk.unwrap_or(false),
        metadata: event.metadata,
    })
}

/// A 0.3 stream event, by its `kind`, and whether it is `final` (only status updates can be).
pub fn stream_response_from_v03(value: &Value) -> Result<(StreamResponse, bool), WireError> {
    match kind_of(value) {
        Some("task") => task_from_v03(value).map(|task| (StreamResponse::Task(task), false)),
        Some("message") => {
            message_from_v03(value).map(|message| (StreamResponse::Message(message), false))
        }
        Some("status-update") => status_update_from_v03(value)
            .map(|(event, final_)| (StreamResponse::StatusUpdate(event), final_)),
        Some("artifact-update") => artifact_update_from_v03(value)
            .map(|event| (StreamResponse::ArtifactUpdate(event), false)),
        other => Err(unknown_kind(
            "0.3 stream event",
            other,
            "`task`, `message`, `status-update`, `artifact-update`",
        )),
    }
}

/// A 0.3 `message/send` result: a bare task or message, by its `kind`.
pub fn send_response_from_v03(value: &Value) -> Result<SendMessageResponse, WireError> {
    match kind_of(value) {
        Some("task") => task_from_v03(value).map(SendMessageResponse::Task),
        Some("message") => message_from_v03(value).map(SendMessageResponse::Message),
        other => Err(unknown_kind("0.3 send result", other, "`task`, `message`")),
    }
}

/// The `kind` member of a 0.3 object.
fn kind_of(value: &Value) -> Option<&str> {
    value.get("kind").and_then(Value::as_str)
}

/// The error for a missing or unexpected `kind`.
fn unknown_kind(what: &'static str, kind: Option<&str>, expected: &str) -> WireError {
    let reason = match kind {
        Some(kind) => format!("unknown kind {kind:?}, expected one of {expected}"),
        None => format!("missing field `kind` (one of {expected})"),
    };
    WireError::InvalidJson { what, reason }
}
