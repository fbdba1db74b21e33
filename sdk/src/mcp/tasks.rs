//! MCP tasks over the A2A tasks of the tools' topics: the Tasks extension (modern
//! `tasks/get`, `tasks/update`, `tasks/cancel`) and the legacy experimental variant
//! (`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`).
//!
//! An MCP task id is `<agent>:<A2A task id>`: the agent says which tool topics hold it
//! (one lookup, no search), the A2A id is derived from a random message id, so nobody can
//! guess it, and every lookup is the caller's own (another caller's task answers exactly as
//! an unknown one: -32602).

use agentlog_wire::a2a::{CancelTaskRequest, GetTaskRequest, SubscribeToTaskRequest, Task};
use agentlog_wire::mcp::call::result_of;
use agentlog_wire::mcp::{
    META_RELATED_TASK, McpTask, McpTaskStatus, PendingInput, TASKS_EXTENSION,
};
use agentlog_wire::timestamp::format_millis;
use futures::StreamExt;
use serde_json::{Map, Value, json};

use super::answer::{Answer, answer};
use super::rpc::Ctx;
use super::{Entry, McpBridge};
use crate::agent::Caller;
use crate::bridge::Bridge;
use crate::error::{Error, ErrorKind};

/// The last ask of a live task, when keys of it are still unanswered.
fn unanswered(task: &Task) -> Option<PendingInput> {
    if McpTaskStatus::of(task.status.state).is_terminal() {
        return None;
    }
    PendingInput::of(&task.history).filter(|pending| !pending.is_answered())
}

impl McpBridge {
    /// The MCP view of an A2A task of `entry`'s agent; `legacy` reads a tool error as
    /// `failed` (the legacy variant's rule).
    pub(super) fn mcp_task(&self, entry: &Entry, task: &Task, legacy: bool) -> McpTask {
        self.task_of(&entry.config.agent(), &entry.bridge, task, legacy)
    }

    pub(super) fn task_of(
        &self,
        agent: &str,
        bridge: &Bridge,
        task: &Task,
        legacy: bool,
    ) -> McpTask {
        let mut status = McpTaskStatus::of(task.status.state);
        let mut message = task.status.message.as_ref();
        // A partial `tasks/update` resumed the A2A task, but the tool still waits for the
        // rest: the MCP task stays input_required (`agentlog_wire::mcp::input`).
        let pending = unanswered(task);
        if status == McpTaskStatus::Working
            && let Some(pending) = &pending
        {
            status = McpTaskStatus::InputRequired;
            message = pending.ask.as_ref().or(message);
        }
        if legacy
            && status == McpTaskStatus::Completed
            && result_of(message).is_ok_and(|r| r.is_error == Some(true))
        {
            status = McpTaskStatus::Failed;
        }
        let created_ms = task
            .history
            .first()
            .and_then(|m| m.metadata.as_ref())
            .and_then(|m| m.get("agentlog.mcp"))
            .and_then(|m| m.get("createdAtMs"))
            .and_then(Value::as_u64);
        let updated = task.status.timestamp.clone();
        let created = created_ms.map(format_millis).or_else(|| updated.clone());
        let status_message = message
            .map(|m| {
                m.parts
                    .iter()
                    .filter_map(|p| p.as_text())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|t| !t.is_empty());
        let retention = bridge.retention_ms();
        McpTask {
            task_id: format!("{agent}:{}", task.id),
            status,
            status_message,
            last_updated_at: updated.or_else(|| created.clone()).unwrap_or_default(),
            created_at: created.unwrap_or_default(),
            ttl_ms: (retention > 0).then_some(retention),
            poll_interval_ms: Some(
                u64::try_from(self.inner.config.poll_interval.as_millis()).unwrap_or(u64::MAX),
            ),
        }
    }

    /// The agent, its bridge and the A2A id of an MCP task id.
    pub(super) fn locate<'a>(
        &'a self,
        task_id: &'a str,
    ) -> crate::Result<(&'a str, &'a Bridge, &'a str)> {
        let unknown = || {
            Error::new(
                ErrorKind::TaskNotFound,
                format!("Task not found: {task_id}"),
            )
            .with_detail("taskId", task_id)
        };
        let (agent, id) = task_id.rsplit_once(':').ok_or_else(unknown)?;
        let bridge = self.inner.bridges.get(agent).ok_or_else(unknown)?;
        Ok((agent, bridge, id))
    }

    async fn get(&self, ctx: &Ctx<'_>, task_id: &str) -> crate::Result<(McpTask, Task)> {
        self.get_as(ctx.caller, task_id, !ctx.era.is_modern()).await
    }

    /// The MCP task `task_id` of `caller` (`legacy`: that era's status rule) and its A2A task.
    async fn get_as(
        &self,
        caller: &Caller,
        task_id: &str,
        legacy: bool,
    ) -> crate::Result<(McpTask, Task)> {
        let (agent, bridge, id) = self.locate(task_id)?;
        let request = GetTaskRequest {
            tenant: None,
            id: id.to_owned(),
            history_length: None,
        };
        let task = bridge.get_task(caller, request).await.map_err(|e| {
            if e.kind() == ErrorKind::TaskNotFound {
                Error::new(
                    ErrorKind::TaskNotFound,
                    format!("Task not found: {task_id}"),
                )
                .with_detail("taskId", task_id)
            } else {
                e
            }
        })?;
        Ok((self.task_of(agent, bridge, &task, legacy), task))
    }

    /// A `tasks/*` method.
    pub(super) async fn task_method(
        &self,
        ctx: &Ctx<'_>,
        method: &str,
        params: Option<&Map<String, Value>>,
    ) -> Answer {
        let modern = ctx.era.is_modern();
        // The legacy variant's methods do not exist in the extension, declared or not.
        if modern && matches!(method, "tasks/result" | "tasks/list") {
            return Err(Error::new(
                ErrorKind::MethodNotFound,
                format!("Method not found: {method}"),
            )
            .with_detail("method", method));
        }
        if modern && !ctx.era.declares_extension(TASKS_EXTENSION) {
            return Err(Error::new(
                ErrorKind::ExtensionSupportRequired,
                format!("{method} needs the {TASKS_EXTENSION} extension: declare it in clientCapabilities.extensions"),
            )
            .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})));
        }
        if method == "tasks/list" && !modern {
            return self.list(ctx, params).await;
        }
        let task_id = match params.and_then(|p| p.get("taskId")) {
            Some(Value::String(id)) => id.as_str(),
            _ => {
                return Err(Error::new(ErrorKind::InvalidParams, "taskId is required")
                    .with_detail("field", "taskId"));
            }
        };
        match (method, modern) {
            ("tasks/get", _) => self.get_answer(ctx, task_id).await,
            ("tasks/update", true) => self.update(ctx, task_id, params).await,
            ("tasks/cancel", _) => self.cancel(ctx, task_id).await,
            ("tasks/result", false) => self.result(ctx, task_id).await,
            _ => Err(Error::new(
                ErrorKind::MethodNotFound,
                format!("Method not found: {method}"),
            )
            .with_detail("method", method)),
        }
    }

    /// `tasks/get`: modern, the task with its result or error once it has one; legacy, the
    /// task alone (the result is `tasks/result`'s).
    async fn get_answer(&self, ctx: &Ctx<'_>, task_id: &str) -> Answer {
        if ctx.era.is_modern() {
            return self.detailed(ctx.caller, task_id).await;
        }
        let (mcp, _) = self.get(ctx, task_id).await?;
        Ok(mcp.legacy())
    }

    /// The extension's `DetailedTask` of `caller`'s task `task_id`: the task with its result
    /// or error once it has one, or its outstanding `inputRequests` (what modern `tasks/get`
    /// and `notifications/tasks` carry).
    pub(super) async fn detailed(&self, caller: &Caller, task_id: &str) -> Answer {
        let (mcp, task) = self.get_as(caller, task_id, false).await?;
        let mut result = mcp.modern();
        match mcp.status {
            McpTaskStatus::Completed | McpTaskStatus::Failed => {
                match answer(task.status.state, task.status.message.as_ref()) {
                    Ok(call) => result.insert("result".into(), Value::Object(call)),
                    Err(error) => result.insert("error".into(), error.to_mcp()),
                };
            }
            McpTaskStatus::InputRequired => {
                // What the tool asked for (`ToolCall::ask`) and is not answered yet, keyed
                // as it gave it.
                if let Some(pending) = unanswered(&task) {
                    result.insert("inputRequests".into(), Value::Object(pending.outstanding()));
                }
            }
            _ => {}
        }
        Ok(result)
    }

    /// `tasks/update`: the input responses go to the task as a follow-up message (resuming an
    /// input-required task); an ack either way (the extension: eventual). Unknown and
    /// already-answered keys are dropped, and nothing is written when none is left; a partial
    /// answer leaves the task input_required (`agentlog_wire::mcp::input`).
    async fn update(
        &self,
        ctx: &Ctx<'_>,
        task_id: &str,
        params: Option<&Map<String, Value>>,
    ) -> crate::Result<Map<String, Value>> {
        let responses = match params.and_then(|p| p.get("inputResponses")) {
            Some(Value::Object(responses)) => responses.clone(),
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidParams,
                    "inputResponses must be an object",
                )
                .with_detail("field", "inputResponses"));
            }
        };
        let (_, bridge, id) = self.locate(task_id)?;
        let (mcp, task) = self.get(ctx, task_id).await?;
        if mcp.status != McpTaskStatus::InputRequired {
            return Ok(Map::new());
        }
        let responses = match PendingInput::of(&task.history) {
            Some(pending) => pending.still_wanted(&responses),
            None => responses,
        };
        if !responses.is_empty() {
            let request = super::followup::at_once(super::followup::input_message(id, responses));
            bridge.send_message(ctx.caller, request).await?;
        }
        Ok(Map::new())
    }

    /// `tasks/cancel`: a cancel request on the log. Modern: an empty ack, also for a task
    /// already finished (cooperative and eventual); legacy: the task, cancelled, and -32602
    /// for a finished one.
    async fn cancel(&self, ctx: &Ctx<'_>, task_id: &str) -> Answer {
        let (agent, bridge, id) = self.locate(task_id)?;
        let request = CancelTaskRequest {
            tenant: None,
            id: id.to_owned(),
            metadata: None,
        };
        match bridge.cancel_task(ctx.caller, request).await {
            Ok(_) if ctx.era.is_modern() => Ok(Map::new()),
            Ok(task) => Ok(self.task_of(agent, bridge, &task, true).legacy()),
            Err(e) if e.kind() == ErrorKind::TaskNotCancelable && ctx.era.is_modern() => {
                Ok(Map::new())
            }
            Err(e) if e.kind() == ErrorKind::TaskNotFound => Err(Error::new(
                ErrorKind::TaskNotFound,
                format!("Task not found: {task_id}"),
            )
            .with_detail("taskId", task_id)),
            Err(e) => Err(e),
        }
    }

    /// `tasks/result` (legacy): wait until the task ends, then its call's result or error,
    /// with the related-task `_meta`.
    async fn result(&self, ctx: &Ctx<'_>, task_id: &str) -> Answer {
        let (_, bridge, id) = self.locate(task_id)?;
        // Pinned from the first look to the answer, the waits between looks too: a move of
        // the partition away meanwhile (retired here) keeps it followed until the task ends.
        let view = bridge.view();
        let _pinned = view.pin(view.partition_of(id));
        loop {
            let (_, task) = self.get(ctx, task_id).await?;
            if task.status.state.is_terminal() {
                let related = json!({"taskId": task_id});
                return match answer(task.status.state, task.status.message.as_ref()) {
                    Ok(mut result) => {
                        result.insert("_meta".into(), json!({META_RELATED_TASK: related}));
                        Ok(result)
                    }
                    Err(error) => Err(error.with_data_field(META_RELATED_TASK, related)),
                };
            }
            let request = SubscribeToTaskRequest {
                tenant: None,
                id: id.to_owned(),
            };
            // Watch until it ends; a task that ended meanwhile refuses the subscription, and
            // the next look finds it terminal.
            if let Ok(mut stream) = bridge.subscribe_to_task(ctx.caller, request, None).await {
                while let Some(Ok(event)) = stream.next().await {
                    if event.last {
                        break;
                    }
                }
            }
        }
    }
}
