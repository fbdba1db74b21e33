//! `tools/call` started and followed: the call is checked and becomes a command on the tool's
//! topics (or a task), a worker answers it, and its events are read until that answer. The
//! reply on the request (JSON or an event stream) is `super::reply`.

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{
    GetTaskRequest, SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest,
};
use agentlog_wire::mcp::call::call_of;
use agentlog_wire::mcp::input::{MCP_METADATA_KEY, deadline_of};
use agentlog_wire::mcp::{
    CallToolParams, CallToolResult, LoggingLevel, McpTaskStatus, PendingInput, TASKS_EXTENSION,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::answer::{answer, object};
use super::followup::{at_once, input_message};
use super::mrtr::{Mrtr, check_responses, input_before_task, refused};
use super::rpc::{Ctx, McpReply, error_reply};
use super::running::{Follow, Running, Started};
use super::{Entry, McpBridge, TaskSupport};
use crate::bridge::Bridge;
use crate::error::{Error, ErrorKind, Result};

impl McpBridge {
    /// `tools/call`: check, record, wait for the answer.
    pub(super) async fn call_tool(
        &self,
        ctx: &Ctx<'_>,
        raw: &str,
        params: Option<Map<String, Value>>,
    ) -> McpReply {
        let modern = ctx.era.is_modern();
        let started = match self.start_call(ctx, raw, params).await {
            Ok(started) => started,
            Err(error) => return error_reply(ctx.id, &error, modern),
        };
        self.reply(ctx, started).await
    }

    /// Check the call and put it on the log; or answer it at once (invalid arguments).
    async fn start_call(
        &self,
        ctx: &Ctx<'_>,
        raw: &str,
        params: Option<Map<String, Value>>,
    ) -> Result<Started> {
        // The params as parsed from `raw`: the command's data part, so kept whole.
        let data = Value::Object(params.unwrap_or_default());
        let params = CallToolParams::deserialize(&data).map_err(|e| {
            Error::new(
                ErrorKind::InvalidParams,
                format!("invalid tools/call params: {e}"),
            )
        })?;
        // A request a worker answers (`super::served`) is found by its method, a tool only by
        // `tools/call`.
        let entry = if ctx.method == "tools/call" {
            self.entry(&params.name)?
        } else {
            self.served_entry(&params.name)?
        };
        let log_level = log_level(&ctx.era, &params)?;
        // The x-mcp-header rule is the 2026-07-28 transport's: legacy clients mirror nothing,
        // and a transport without headers has none to check (as for `Mcp-Name`).
        if let (true, Some(headers)) = (ctx.era.is_modern(), ctx.headers) {
            super::params::check(&entry.mirrored, params.arguments.as_ref(), headers)?;
        }
        // What `params.arguments` holds, or an empty object for none (absent or null).
        let no_arguments = Value::Object(Map::new());
        let arguments = data
            .get("arguments")
            .filter(|a| a.is_object())
            .unwrap_or(&no_arguments);
        let problems: Vec<String> = entry
            .validator
            .problems(arguments)
            .iter()
            .map(ToString::to_string)
            .collect();
        if !problems.is_empty() {
            // A tool-level failure the model can correct (SEP-1303); nothing is written.
            let text = format!(
                "Invalid arguments for tool {}: {}",
                params.name,
                problems.join("; ")
            );
            return Ok(Started::Answered(Ok(object(CallToolResult::error(text)))));
        }
        check_capabilities(
            &ctx.era,
            entry.config.required_capabilities.as_ref(),
            &params.name,
        )?;
        if let Some(responses) = &params.input_responses {
            check_responses(responses)?;
        }
        if let (Some(state), Some(mrtr)) = (&params.request_state, Mrtr::of(ctx, entry)) {
            // An MRTR retry continues the task its state names instead of starting one.
            return self.resume(ctx, entry, &params, state, mrtr).await;
        }
        let as_task = runs_as_task(&ctx.era, entry.config.task_support, &params)?;
        // MRTR, then a task: the first round is followed like a sync call, and the retry
        // answering its ask makes the task (`super::mrtr`).
        let as_task = as_task && !input_before_task(ctx, entry);
        // A legacy sync call is cancelled by a notification naming its JSON-RPC id: its
        // context is derived from that id, so the notification finds it (`super::cancel`).
        let context = (!as_task && !ctx.era.is_modern()).then(|| {
            let id = serde_json::from_str(ctx.id.get()).unwrap_or(Value::Null);
            super::cancel::request_context(ctx.caller, &id)
        });
        let minted = entry.bridge.mint_message_id(ctx.caller);
        let (request, text, message_id) = super::command::command(
            &ctx.era,
            raw,
            data,
            &params,
            as_task,
            context.as_deref(),
            minted,
        )?;
        if as_task {
            let response = entry
                .bridge
                .send_message_raw(ctx.caller, request, Some(&text))
                .await?;
            let SendMessageResponse::Task(task) = response else {
                return Err(Error::new(
                    ErrorKind::Internal,
                    "a task was asked for, a message came",
                ));
            };
            // The command is on the log: every replica's tasks/get (which catches its view up
            // with the log first) finds the task from now on.
            let task = self.mcp_task(entry, &task, !ctx.era.is_modern());
            return Ok(Started::Task(task));
        }
        let events = entry
            .bridge
            .send_minted_turn(ctx.caller, request, Some(&text))
            .await?;
        let task_id =
            agentlog_wire::ids::task_id(&ctx.caller.tenant, &ctx.caller.principal, &message_id);
        let running = Running::new(
            Follow::Turn(events),
            &entry.bridge,
            ctx.caller,
            task_id,
            params.progress_token().cloned(),
            Mrtr::of(ctx, entry),
        )
        .logs(log_level);
        // Legacy: a tool's asks go to the client as requests on the call's stream.
        let running = if !ctx.era.is_modern() && ctx.accepts_stream {
            running.relayed(entry.config.agent())
        } else {
            running
        };
        Ok(Started::Running(Box::new(running)))
    }
}

/// The least severe log level a call takes: modern, the level its `_meta` asks (none: no log
/// messages); legacy, every level (`logging/setLevel` would set it for a session, and a
/// stateless bridge has none to keep it in).
pub(super) fn log_level(
    era: &agentlog_wire::mcp::Era,
    params: &CallToolParams,
) -> Result<Option<LoggingLevel>> {
    if !era.is_modern() {
        return Ok(Some(LoggingLevel::Debug));
    }
    LoggingLevel::of_meta(params.meta.as_ref()).map_err(|e| {
        Error::new(ErrorKind::InvalidParams, e).with_detail(
            "field",
            format!("_meta.{}", agentlog_wire::mcp::META_LOG_LEVEL),
        )
    })
}

/// A modern call must declare the client capabilities its tool needs.
fn check_capabilities(
    era: &agentlog_wire::mcp::Era,
    required: Option<&Map<String, Value>>,
    tool: &str,
) -> Result<()> {
    let (Some(required), agentlog_wire::mcp::Era::Modern { capabilities, .. }) = (required, era)
    else {
        return Ok(());
    };
    let missing: Map<String, Value> = required
        .iter()
        .filter(|(name, _)| !capabilities.contains_key(*name))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = missing.keys().map(String::as_str).collect();
    Err(Error::new(
        ErrorKind::ExtensionSupportRequired,
        format!(
            "tool {tool} needs the client capabilities {}, which this request does not declare",
            names.join(", ")
        ),
    )
    .with_data(json!({"requiredCapabilities": missing})))
}

/// Whether a call runs as a task: the tool allows it and the client asked (modern: declared
/// the Tasks extension on this request; legacy: sent `task`). A tool that runs only as a task
/// refuses other calls.
fn runs_as_task(
    era: &agentlog_wire::mcp::Era,
    support: TaskSupport,
    params: &CallToolParams,
) -> Result<bool> {
    let asked = match era {
        agentlog_wire::mcp::Era::Modern { .. } => era.declares_extension(TASKS_EXTENSION),
        agentlog_wire::mcp::Era::Legacy => params.task.is_some(),
    };
    match (support, asked) {
        (TaskSupport::Forbidden, true) if !era.is_modern() => Err(Error::new(
            ErrorKind::InvalidParams,
            format!(
                "tool {} does not run as a task (execution.taskSupport is forbidden)",
                params.name
            ),
        )
        .with_detail("field", "task")),
        // Modern: the server decides; a forbidden tool answers on the request.
        (TaskSupport::Forbidden, _) => Ok(false),
        (TaskSupport::Required, false) if era.is_modern() => Err(Error::new(
            ErrorKind::ExtensionSupportRequired,
            format!(
                "tool {} runs only as a task: declare the {TASKS_EXTENSION} extension",
                params.name
            ),
        )
        .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))),
        (TaskSupport::Required, false) => Err(Error::new(
            ErrorKind::InvalidParams,
            format!(
                "tool {} runs only as a task: call it with \"task\"",
                params.name
            ),
        )
        .with_detail("field", "task")),
        (_, asked) => Ok(asked),
    }
}

impl McpBridge {
    /// An MRTR retry of `params` with `state`: check it names the caller's task of this call,
    /// then answer from the task, write the responses it still waits for and follow it, or
    /// follow it as it runs.
    pub(super) async fn resume(
        &self,
        ctx: &Ctx<'_>,
        entry: &Entry,
        params: &CallToolParams,
        state: &str,
        mrtr: Mrtr,
    ) -> Result<Started> {
        let (task_id, round) = state.rsplit_once('#').ok_or_else(refused)?;
        let round: usize = round.parse().map_err(|_| refused())?;
        let (agent, bridge, id) = self.locate(task_id).map_err(|_| refused())?;
        if agent != mrtr.agent {
            return Err(refused());
        }
        let request = GetTaskRequest {
            tenant: None,
            id: id.to_owned(),
            history_length: None,
        };
        let task = bridge.get_task(ctx.caller, request).await.map_err(|e| {
            if e.kind() == ErrorKind::TaskNotFound {
                refused()
            } else {
                e
            }
        })?;
        let call = task
            .history
            .first()
            .and_then(call_of)
            .and_then(std::result::Result::ok)
            .ok_or_else(refused)?;
        let arguments = |p: &CallToolParams| p.arguments.clone().unwrap_or_default();
        if call.name != params.name || arguments(&call) != arguments(params) {
            return Err(refused());
        }
        let pending = PendingInput::of(&task.history);
        if round == 0 || round > pending.as_ref().map_or(0, |p| p.round) {
            return Err(refused());
        }
        // Past the last ask's deadline the call is over, whether or not a sweeper has
        // cancelled its task yet (`worker::expiry`); a task that went on answers as it is.
        let expired = pending
            .as_ref()
            .and_then(|p| p.ask.as_ref())
            .and_then(deadline_of)
            .is_some_and(|deadline| deadline <= crate::retention::now_ms());
        if expired
            && matches!(
                task.status.state,
                TaskState::InputRequired | TaskState::Canceled
            )
        {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                "Invalid or expired requestState: the call's input was not answered before its deadline",
            )
            .with_detail("field", "requestState"));
        }
        let progress = params.progress_token().cloned();
        let log_level = log_level(&ctx.era, params)?;
        let follow = match self.mcp_task(entry, &task, false).status {
            status if status.is_terminal() => {
                return Ok(Started::Answered(answer(
                    task.status.state,
                    task.status.message.as_ref(),
                )));
            }
            McpTaskStatus::InputRequired => {
                let responses = params.input_responses.clone().unwrap_or_default();
                let wanted = match &pending {
                    Some(pending) => pending.still_wanted(&responses),
                    None => responses,
                };
                if wanted.is_empty() {
                    // Nothing new: ask again for what is still outstanding.
                    let asked = mrtr.input_required(&task);
                    let answer = asked.map_or_else(
                        || answer(task.status.state, task.status.message.as_ref()),
                        |(answer, _)| answer,
                    );
                    return Ok(Started::Answered(answer));
                }
                if input_before_task(ctx, entry) {
                    return self.become_task(ctx, entry, bridge, id, wanted).await;
                }
                let request = SendMessageRequest {
                    tenant: None,
                    message: input_message(id, wanted),
                    configuration: None,
                    metadata: None,
                };
                Follow::Turn(bridge.send_turn(ctx.caller, request, None).await?)
            }
            // An old round's retry of a call that became a task answers the task again.
            _ if input_before_task(ctx, entry) => {
                return Ok(Started::Task(self.mcp_task(entry, &task, false)));
            }
            _ => {
                let request = SubscribeToTaskRequest {
                    tenant: None,
                    id: id.to_owned(),
                };
                Follow::Task(bridge.subscribe_to_task(ctx.caller, request, None).await?)
            }
        };
        let running = Running::new(
            follow,
            bridge,
            ctx.caller,
            id.to_owned(),
            progress,
            Some(mrtr),
        )
        .logs(log_level);
        Ok(Started::Running(Box::new(running)))
    }
}

impl McpBridge {
    /// MRTR, then a task: the retry's `responses` go to A2A task `id` as a follow-up marked
    /// as the task's from now on (its later asks wait for `tasks/update` with no deadline),
    /// and the call answers that task once the follow-up is on the log.
    async fn become_task(
        &self,
        ctx: &Ctx<'_>,
        entry: &Entry,
        bridge: &Bridge,
        id: &str,
        responses: Map<String, Value>,
    ) -> Result<Started> {
        let mut message = input_message(id, responses);
        let mut metadata = Map::new();
        metadata.insert(MCP_METADATA_KEY.to_owned(), json!({"task": true}));
        message.metadata = Some(metadata);
        match bridge.send_message(ctx.caller, at_once(message)).await? {
            SendMessageResponse::Task(task) => {
                Ok(Started::Task(self.mcp_task(entry, &task, false)))
            }
            SendMessageResponse::Message(_) => Err(Error::new(
                ErrorKind::Internal,
                "a task was asked for, a message came",
            )),
        }
    }
}
