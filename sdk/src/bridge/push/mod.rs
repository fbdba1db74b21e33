//! The four push-config methods. A config is a record on its task's log (fold rule 16), so
//! every replica reads the same configs after any restart, and they live and expire with the
//! task: a task another caller owns, or one that expired, has none to show (task not found).
//!
//! What a read gives back of a config: everything but `authentication.credentials`. The
//! client that registered the credentials has them; a read answers the scheme alone, so a
//! secret written once is never echoed (the spec leaves this open, A2A#1681).

use agentlog_wire::a2a::{
    DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    SendMessageRequest, TaskPushNotificationConfig,
};
use agentlog_wire::fold::{PushConfigs, fold_push};
use agentlog_wire::{Record, RecordBody};

use super::{Bridge, Topics, not_found};
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};
use crate::security::Destinations;
use crate::view::TaskInfo;

/// The longest config id and webhook URL taken: ids travel in records as 16-bit strings.
const MAX_ID_LEN: usize = 256;
const MAX_URL_LEN: usize = 8 * 1024;
/// `ListTaskPushNotificationConfigs` page size when the request gives none, and the largest.
const MAX_PAGE_SIZE: usize = 100;

impl Bridge {
    /// `CreateTaskPushNotificationConfig`: register a config on the task (replacing the one of
    /// the same id), written on the task's log. Without an `id` the bridge assigns one (a v4
    /// UUID). The answer is the config as stored, without its credentials.
    pub async fn create_push_config(
        &self,
        caller: &Caller,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig> {
        let destinations = self.push_destinations()?;
        let task_id = config
            .task_id
            .clone()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| invalid("taskId", "taskId is required".into()))?;
        check_config(&config, destinations)?;
        let _pinned = self.sync_task(&task_id).await?;
        let info = self.owned(caller, &task_id)?;
        let tenant = config.tenant.clone();
        let mut stored = config;
        let id = stored
            .id
            .take()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        stored.id = Some(id);
        stored.task_id = Some(task_id.clone());
        // The record's header carries the tenant.
        stored.tenant = None;
        let text = serde_json::to_string(&stored).map_err(|e| {
            Error::new(ErrorKind::Internal, "cannot encode the config").with_source(e)
        })?;
        let record = Record {
            header: self.header(
                caller,
                &task_id,
                &info.context_id,
                format!("push-{}", uuid::Uuid::new_v4()),
                vec![self.inner.config.id.clone()],
            ),
            body: RecordBody::PushConfig { config: text },
        };
        self.commit(&record, Topics::Events).await?;
        Ok(shown(stored, tenant))
    }

    /// `GetTaskPushNotificationConfig`: the config, without its credentials; task not found
    /// (-32001) for a config the task does not have.
    pub async fn get_push_config(
        &self,
        caller: &Caller,
        request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig> {
        self.push_destinations()?;
        let (_, configs) = self.push_configs(caller, &request.task_id).await?;
        let registration = configs.get(&request.id).ok_or_else(|| {
            Error::new(
                ErrorKind::TaskNotFound,
                format!(
                    "Task {} has no push notification config {}",
                    request.task_id, request.id
                ),
            )
            .with_detail("taskId", &request.task_id)
            .with_detail("configId", &request.id)
        })?;
        Ok(shown(registration.config.clone(), request.tenant))
    }

    /// `ListTaskPushNotificationConfigs`: the task's configs in registration order, without
    /// their credentials, `pageSize` (1 to 100, default 100) a page.
    pub async fn list_push_configs(
        &self,
        caller: &Caller,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse> {
        self.push_destinations()?;
        let size = match request.page_size {
            None | Some(0) => MAX_PAGE_SIZE,
            Some(n) if (1..=MAX_PAGE_SIZE as i32).contains(&n) => n as usize,
            Some(n) => {
                return Err(invalid(
                    "pageSize",
                    format!("pageSize {n} is out of range (1 to {MAX_PAGE_SIZE})"),
                ));
            }
        };
        let from = match request.page_token.as_deref() {
            None | Some("") => 0,
            Some(token) => token
                .parse::<usize>()
                .map_err(|_| invalid("pageToken", format!("pageToken {token:?} is not ours")))?,
        };
        let (_, configs) = self.push_configs(caller, &request.task_id).await?;
        let all = configs.configs();
        let page: Vec<_> = all
            .iter()
            .skip(from)
            .take(size)
            .map(|r| shown(r.config.clone(), request.tenant.clone()))
            .collect();
        let next = from + page.len();
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: page,
            next_page_token: if next < all.len() {
                next.to_string()
            } else {
                String::new()
            },
        })
    }

    /// `DeleteTaskPushNotificationConfig`: remove the config (a record on the task's log).
    /// Idempotent: a config the task does not have is deleted already (nothing is written);
    /// an unknown task is task not found.
    pub async fn delete_push_config(
        &self,
        caller: &Caller,
        request: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<()> {
        self.push_destinations()?;
        let (info, configs) = self.push_configs(caller, &request.task_id).await?;
        if configs.get(&request.id).is_none() {
            return Ok(());
        }
        let record = Record {
            header: self.header(
                caller,
                &request.task_id,
                &info.context_id,
                format!("push-{}", uuid::Uuid::new_v4()),
                vec![self.inner.config.id.clone()],
            ),
            body: RecordBody::PushConfigDeleted {
                config_id: request.id,
            },
        };
        self.commit(&record, Topics::Events).await?;
        Ok(())
    }

    /// Where configs may send, when push notifications are served; -32003 otherwise.
    pub(crate) fn push_destinations(&self) -> Result<&Destinations> {
        self.inner.config.push.as_ref().ok_or_else(not_supported)
    }

    /// The caller's task as the view has it now, unless it is not theirs, expired, or a reply
    /// answered in its place (then there is no task: not found).
    fn owned(&self, caller: &Caller, task_id: &str) -> Result<TaskInfo> {
        self.inner
            .view
            .lookup(caller, task_id)
            .filter(|info| !info.answered)
            .ok_or_else(|| not_found(task_id))
    }

    /// The caller's task and its configs, read back from the log as of the request.
    async fn push_configs(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<(TaskInfo, PushConfigs)> {
        if task_id.is_empty() {
            return Err(invalid("taskId", "taskId is required".into()));
        }
        let _pinned = self.sync_task(task_id).await?;
        let info = self.owned(caller, task_id)?;
        let view = &self.inner.view;
        if !view.has_push_configs(task_id) {
            return Ok((info, PushConfigs::new()));
        }
        let records = view.task_records(&info, false).await?;
        let configs = fold_push(records.iter().map(|(offset, record)| (*offset, record)));
        Ok((info, configs))
    }
}

/// Check a config before it is registered: its URL by `destinations` (a literal address is
/// judged now, a name again at each delivery), no line breaks in what becomes a header.
pub(crate) fn check_config(
    config: &TaskPushNotificationConfig,
    destinations: &Destinations,
) -> Result<()> {
    if config.url.len() > MAX_URL_LEN {
        return Err(invalid(
            "url",
            format!("the URL is longer than {MAX_URL_LEN} bytes"),
        ));
    }
    destinations.check_url(&config.url)?;
    if config.id.as_ref().is_some_and(|id| id.len() > MAX_ID_LEN) {
        return Err(invalid(
            "id",
            format!("the id is longer than {MAX_ID_LEN} bytes"),
        ));
    }
    let header_safe = |field: &'static str, value: Option<&str>| {
        if value.is_some_and(|v| v.chars().any(|c| c.is_control())) {
            Err(invalid(field, format!("{field} holds a control character")))
        } else {
            Ok(())
        }
    };
    header_safe("token", config.token.as_deref())?;
    if let Some(auth) = &config.authentication {
        if auth.scheme.is_empty()
            || !auth
                .scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~+".contains(c))
        {
            return Err(invalid(
                "authentication.scheme",
                format!("{:?} is not an HTTP authentication scheme", auth.scheme),
            ));
        }
        header_safe("authentication.credentials", auth.credentials.as_deref())?;
    }
    Ok(())
}

/// Check the push config a send carries inline (`configuration.taskPushNotificationConfig`)
/// when push notifications are served: the task keeps it (fold rule 16). Without them it is
/// not looked at.
pub(super) fn check_inline(
    config: &super::BridgeConfig,
    request: &SendMessageRequest,
) -> Result<()> {
    match (&config.push, inline(request)) {
        (Some(destinations), Some(push)) => check_config(push, destinations),
        _ => Ok(()),
    }
}

/// Whether a send carries a push config inline.
pub(super) fn carries_config(request: &SendMessageRequest) -> bool {
    inline(request).is_some()
}

fn inline(request: &SendMessageRequest) -> Option<&TaskPushNotificationConfig> {
    request
        .configuration
        .as_ref()?
        .task_push_notification_config
        .as_ref()
}

/// A config as a read shows it: without its credentials, with the request's tenant.
fn shown(
    mut config: TaskPushNotificationConfig,
    tenant: Option<String>,
) -> TaskPushNotificationConfig {
    if let Some(auth) = config.authentication.as_mut() {
        auth.credentials = None;
    }
    config.tenant = tenant.filter(|t| !t.is_empty());
    config
}

fn invalid(field: &'static str, message: String) -> Error {
    Error::new(ErrorKind::InvalidParams, message).with_detail("field", field)
}

/// What every push-config operation answers when push notifications are not served.
pub(super) fn not_supported() -> Error {
    Error::new(
        ErrorKind::PushNotificationNotSupported,
        "Push notifications are not supported by this agent",
    )
}

#[cfg(test)]
mod tests;
