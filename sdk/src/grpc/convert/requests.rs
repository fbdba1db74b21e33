//! The requests of the RPCs, the answers that are not tasks, and push configs.

use agentlog_wire::a2a::{
    AuthenticationInfo, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse,
    SendMessageConfiguration, SendMessageRequest, SubscribeToTaskRequest,
    TaskPushNotificationConfig,
};

use super::task::{state_from, state_to};
use super::{from_timestamp, metadata_from, metadata_to, optional, required, text, to_timestamp};
use crate::bridge::Call;
use crate::error::{Error, Result};
use crate::grpc::proto as pb;

/// `GetExtendedAgentCard`'s request, which holds only a tenant, as its call.
impl From<pb::GetExtendedAgentCardRequest> for Call {
    fn from(r: pb::GetExtendedAgentCardRequest) -> Self {
        Call::GetExtendedAgentCard {
            tenant: optional(r.tenant),
        }
    }
}

impl From<AuthenticationInfo> for pb::AuthenticationInfo {
    fn from(a: AuthenticationInfo) -> Self {
        pb::AuthenticationInfo {
            scheme: a.scheme,
            credentials: text(a.credentials),
        }
    }
}

impl From<pb::AuthenticationInfo> for AuthenticationInfo {
    fn from(a: pb::AuthenticationInfo) -> Self {
        AuthenticationInfo {
            scheme: a.scheme,
            credentials: optional(a.credentials),
        }
    }
}

impl From<TaskPushNotificationConfig> for pb::TaskPushNotificationConfig {
    fn from(c: TaskPushNotificationConfig) -> Self {
        pb::TaskPushNotificationConfig {
            tenant: text(c.tenant),
            id: text(c.id),
            task_id: text(c.task_id),
            url: c.url,
            token: text(c.token),
            authentication: c.authentication.map(Into::into),
        }
    }
}

impl From<pb::TaskPushNotificationConfig> for TaskPushNotificationConfig {
    fn from(c: pb::TaskPushNotificationConfig) -> Self {
        TaskPushNotificationConfig {
            tenant: optional(c.tenant),
            id: optional(c.id),
            task_id: optional(c.task_id),
            url: c.url,
            token: optional(c.token),
            authentication: c.authentication.map(Into::into),
        }
    }
}

impl From<SendMessageConfiguration> for pb::SendMessageConfiguration {
    fn from(c: SendMessageConfiguration) -> Self {
        pb::SendMessageConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            task_push_notification_config: c.task_push_notification_config.map(Into::into),
            history_length: c.history_length,
            return_immediately: c.return_immediately,
        }
    }
}

impl From<pb::SendMessageConfiguration> for SendMessageConfiguration {
    fn from(c: pb::SendMessageConfiguration) -> Self {
        SendMessageConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            task_push_notification_config: c.task_push_notification_config.map(Into::into),
            history_length: c.history_length,
            return_immediately: c.return_immediately,
        }
    }
}

impl From<SendMessageRequest> for pb::SendMessageRequest {
    fn from(r: SendMessageRequest) -> Self {
        pb::SendMessageRequest {
            tenant: text(r.tenant),
            message: Some(r.message.into()),
            configuration: r.configuration.map(Into::into),
            metadata: metadata_to(r.metadata),
        }
    }
}

impl TryFrom<pb::SendMessageRequest> for SendMessageRequest {
    type Error = Error;

    fn try_from(r: pb::SendMessageRequest) -> Result<Self> {
        Ok(SendMessageRequest {
            tenant: optional(r.tenant),
            message: required("SendMessageRequest.message", r.message)?.try_into()?,
            configuration: r.configuration.map(Into::into),
            metadata: metadata_from("SendMessageRequest.metadata", r.metadata)?,
        })
    }
}

impl From<GetTaskRequest> for pb::GetTaskRequest {
    fn from(r: GetTaskRequest) -> Self {
        pb::GetTaskRequest {
            tenant: text(r.tenant),
            id: r.id,
            history_length: r.history_length,
        }
    }
}

impl From<pb::GetTaskRequest> for GetTaskRequest {
    fn from(r: pb::GetTaskRequest) -> Self {
        GetTaskRequest {
            tenant: optional(r.tenant),
            id: r.id,
            history_length: r.history_length,
        }
    }
}

impl From<ListTasksRequest> for pb::ListTasksRequest {
    fn from(r: ListTasksRequest) -> Self {
        pb::ListTasksRequest {
            tenant: text(r.tenant),
            context_id: text(r.context_id),
            status: r.status.map(state_to).unwrap_or_default(),
            page_size: r.page_size,
            page_token: text(r.page_token),
            history_length: r.history_length,
            status_timestamp_after: r.status_timestamp_after.as_deref().and_then(to_timestamp),
            include_artifacts: r.include_artifacts,
        }
    }
}

impl TryFrom<pb::ListTasksRequest> for ListTasksRequest {
    type Error = Error;

    fn try_from(r: pb::ListTasksRequest) -> Result<Self> {
        // 0, TASK_STATE_UNSPECIFIED, is the proto's "no filter".
        let status = match r.status {
            0 => None,
            state => Some(state_from("ListTasksRequest.status", state)?),
        };
        Ok(ListTasksRequest {
            tenant: optional(r.tenant),
            context_id: optional(r.context_id),
            status,
            page_size: r.page_size,
            page_token: optional(r.page_token),
            history_length: r.history_length,
            status_timestamp_after: r
                .status_timestamp_after
                .map(|t| from_timestamp("ListTasksRequest.statusTimestampAfter", t))
                .transpose()?,
            include_artifacts: r.include_artifacts,
        })
    }
}

impl From<ListTasksResponse> for pb::ListTasksResponse {
    fn from(r: ListTasksResponse) -> Self {
        pb::ListTasksResponse {
            tasks: r.tasks.into_iter().map(Into::into).collect(),
            next_page_token: r.next_page_token,
            page_size: r.page_size,
            total_size: r.total_size,
        }
    }
}

impl TryFrom<pb::ListTasksResponse> for ListTasksResponse {
    type Error = Error;

    fn try_from(r: pb::ListTasksResponse) -> Result<Self> {
        Ok(ListTasksResponse {
            tasks: r
                .tasks
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
            next_page_token: r.next_page_token,
            page_size: r.page_size,
            total_size: r.total_size,
        })
    }
}

impl From<CancelTaskRequest> for pb::CancelTaskRequest {
    fn from(r: CancelTaskRequest) -> Self {
        pb::CancelTaskRequest {
            tenant: text(r.tenant),
            id: r.id,
            metadata: metadata_to(r.metadata),
        }
    }
}

impl TryFrom<pb::CancelTaskRequest> for CancelTaskRequest {
    type Error = Error;

    fn try_from(r: pb::CancelTaskRequest) -> Result<Self> {
        Ok(CancelTaskRequest {
            tenant: optional(r.tenant),
            id: r.id,
            metadata: metadata_from("CancelTaskRequest.metadata", r.metadata)?,
        })
    }
}

impl From<SubscribeToTaskRequest> for pb::SubscribeToTaskRequest {
    fn from(r: SubscribeToTaskRequest) -> Self {
        pb::SubscribeToTaskRequest {
            tenant: text(r.tenant),
            id: r.id,
        }
    }
}

impl From<pb::SubscribeToTaskRequest> for SubscribeToTaskRequest {
    fn from(r: pb::SubscribeToTaskRequest) -> Self {
        SubscribeToTaskRequest {
            tenant: optional(r.tenant),
            id: r.id,
        }
    }
}

impl From<GetTaskPushNotificationConfigRequest> for pb::GetTaskPushNotificationConfigRequest {
    fn from(r: GetTaskPushNotificationConfigRequest) -> Self {
        pb::GetTaskPushNotificationConfigRequest {
            tenant: text(r.tenant),
            task_id: r.task_id,
            id: r.id,
        }
    }
}

impl From<pb::GetTaskPushNotificationConfigRequest> for GetTaskPushNotificationConfigRequest {
    fn from(r: pb::GetTaskPushNotificationConfigRequest) -> Self {
        GetTaskPushNotificationConfigRequest {
            tenant: optional(r.tenant),
            task_id: r.task_id,
            id: r.id,
        }
    }
}

impl From<DeleteTaskPushNotificationConfigRequest> for pb::DeleteTaskPushNotificationConfigRequest {
    fn from(r: DeleteTaskPushNotificationConfigRequest) -> Self {
        pb::DeleteTaskPushNotificationConfigRequest {
            tenant: text(r.tenant),
            task_id: r.task_id,
            id: r.id,
        }
    }
}

impl From<pb::DeleteTaskPushNotificationConfigRequest> for DeleteTaskPushNotificationConfigRequest {
    fn from(r: pb::DeleteTaskPushNotificationConfigRequest) -> Self {
        DeleteTaskPushNotificationConfigRequest {
            tenant: optional(r.tenant),
            task_id: r.task_id,
            id: r.id,
        }
    }
}

impl From<ListTaskPushNotificationConfigsRequest> for pb::ListTaskPushNotificationConfigsRequest {
    fn from(r: ListTaskPushNotificationConfigsRequest) -> Self {
        pb::ListTaskPushNotificationConfigsRequest {
            tenant: text(r.tenant),
            task_id: r.task_id,
            page_size: r.page_size.unwrap_or_default(),
            page_token: text(r.page_token),
        }
    }
}

impl From<pb::ListTaskPushNotificationConfigsRequest> for ListTaskPushNotificationConfigsRequest {
    fn from(r: pb::ListTaskPushNotificationConfigsRequest) -> Self {
        ListTaskPushNotificationConfigsRequest {
            tenant: optional(r.tenant),
            task_id: r.task_id,
            page_size: (r.page_size != 0).then_some(r.page_size),
            page_token: optional(r.page_token),
        }
    }
}

impl From<ListTaskPushNotificationConfigsResponse> for pb::ListTaskPushNotificationConfigsResponse {
    fn from(r: ListTaskPushNotificationConfigsResponse) -> Self {
        pb::ListTaskPushNotificationConfigsResponse {
            configs: r.configs.into_iter().map(Into::into).collect(),
            next_page_token: r.next_page_token,
        }
    }
}

impl From<pb::ListTaskPushNotificationConfigsResponse> for ListTaskPushNotificationConfigsResponse {
    fn from(r: pb::ListTaskPushNotificationConfigsResponse) -> Self {
        ListTaskPushNotificationConfigsResponse {
            configs: r.configs.into_iter().map(Into::into).collect(),
            next_page_token: r.next_page_token,
        }
    }
}
