//! `tools/call` started and followed: the call is checked and becomes a command on the tool's
//! topics (or a task), a worker answers it, and its events are read until that answer. The
//! reply on the request (JSON or an event stream) is `super::reply`.

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{CancelTaskRequest, Message, SendMessageResponse, StreamResponse};
use agentlog_wire::mcp::call::{ERROR_MEDIA_TYPE, data_part, log_of, progress_of, result_of};
use agentlog_wire::mcp::{CallToolParams, CallToolResult, LoggingLevel, TASKS_EXTENSION};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::rpc::{Ctx, McpReply, error_reply};
use super::{McpBridge, TaskSupport};
use crate::agent::Caller;
use crate::bridge::{Bridge, StreamEvent, TaskStream, TurnEvents};
use crate::error::{Error, ErrorKind, Result};

/// What a running call yields.
pub(super) enum CallEvent {
    /// A `notifications/progress` or `notifications/message` message.
    Notification(Value),
    /// The call's answer: a result, or a JSON-RPC error object.
    Done(std::result::Result<Map<String, Value>, Value>),
}

/// Cancels the call's task when dropped before the answer came (modern era: a client that
/// goes away cancels its call; legacy: a disconnect is not a cancel, so it is never armed).
struct CancelOnDrop {
    bridge: Bridge,
    caller: Caller,
    task_id: String,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (bridge, caller) = (self.bridge.clone(), self.caller.clone());
        let request = CancelTaskRequest {
            tenant: None,
            id: std::mem::take(&mut self.task_id),
            metadata: None,
        };
        // Drop cannot wait; the cancel request is a record any replica then folds.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = bridge.cancel_task(&caller, request).await {
                    tracing::debug!("cancelling an abandoned MCP call: {e}");
                }
            });
        }
    }
}

/// Where a running call's events come from.
pub(super) enum Follow {
    /// The turn this call started (a new call, or an MRTR retry's continue).
    Turn(TurnEvents),
    /// A task already running when an MRTR retry came, from its snapshot on.
    Task(TaskStream),
}

impl Follow {
    async fn next(&mut self) -> Option<Result<StreamEvent>> {
        match self {
            Follow::Turn(events) => events.next().await,
            Follow::Task(stream) => futures::StreamExt::next(stream).await,
        }
    }
}

/// A call on the log: its task's events, read until the answer.
pub(super) struct Running {
    events: Follow,
    guard: CancelOnDrop,
    pub(super) progress_token: Option<Value>,
    last_progress: Option<f64>,
    /// The least severe log level the client takes (`None`: no log messages).
    pub(super) log_level: Option<LoggingLevel>,
    /// A modern call: a tool asking for input answers `input_required` (MRTR) with the
    /// request's capabilities, under this tool agent's MCP task id.
    mrtr: Option<super::mrtr::Mrtr>,
    done: bool,
}

impl Running {
    /// Follow `events` of the A2A task `task_id` of `bridge` for `caller`, cancelling it if
    /// dropped before the answer when `cancel_on_drop` (a modern call).
    pub(super) fn new(
        events: Follow,
        bridge: &Bridge,
        caller: &Caller,
        task_id: String,
        progress_token: Option<Value>,
        mrtr: Option<super::mrtr::Mrtr>,
    ) -> Self {
        Self {
            events,
            guard: CancelOnDrop {
                bridge: bridge.clone(),
                caller: caller.clone(),
                task_id,
                armed: mrtr.is_some(),
            },
            progress_token,
            last_progress: None,
            log_level: None,
            mrtr,
            done: false,
        }
    }

    /// Forward the tool's log messages of `level` and more severe ones.
    pub(super) fn logs(mut self, level: Option<LoggingLevel>) -> Self {
        self.log_level = level;
        self
    }

    pub(super) async fn next(&mut self) -> Option<CallEvent> {
        while !self.done {
            let Some(event) = self.events.next().await else {
                self.done = true;
                let error = Error::new(
                    ErrorKind::Internal,
                    "the call's stream ended before its answer",
                );
                return Some(CallEvent::Done(Err(error.to_mcp())));
            };
            let event = match event {
                Ok(event) => event,
                Err(e) => {
                    self.done = true;
                    return Some(CallEvent::Done(Err(e.to_mcp())));
                }
            };
            // A snapshot shows a status written before the call followed the task: its log
            // message, if it is one, was not logged while this call waited.
            let snapshot = matches!(event.response, StreamResponse::Task(_));
            let (state, message) = match event.response {
                StreamResponse::Task(task) => (task.status.state, task.status.message),
                StreamResponse::StatusUpdate(update) => {
                    (update.status.state, update.status.message)
                }
                StreamResponse::Message(message) => (TaskState::Completed, Some(message)),
                StreamResponse::ArtifactUpdate(_) => continue,
            };
            if state.is_terminal() || state.is_interrupted() {
                self.done = true;
                if state.is_interrupted()
                    && let Some(mrtr) = &self.mrtr
                    && let Some((answer, cancel)) = mrtr
                        .ask(&self.guard.bridge, &self.guard.caller, &self.guard.task_id)
                        .await
                {
                    // The task waits for the client's retry, unless it can never come.
                    self.guard.armed = cancel;
                    return Some(CallEvent::Done(answer));
                }
                // A call answered on the request is over once answered: a tool asking for
                // input it cannot get (legacy, or no keyed requests) makes it a tool error,
                // and its task is cancelled.
                self.guard.armed = state.is_interrupted();
                return Some(CallEvent::Done(answer(state, message.as_ref())));
            }
            if let Some(notification) = self.progress(message.as_ref()) {
                return Some(CallEvent::Notification(notification));
            }
            if let Some(notification) = self.log(message.as_ref()).filter(|_| !snapshot) {
                return Some(CallEvent::Notification(notification));
            }
        }
        None
    }

    /// The progress notification a working status carries, when the client asked for
    /// progress and it goes forward (the spec: strictly increasing).
    fn progress(&mut self, message: Option<&Message>) -> Option<Value> {
        let token = self.progress_token.clone()?;
        let report = progress_of(message?)?;
        if self
            .last_progress
            .is_some_and(|last| report.progress <= last)
        {
            return None;
        }
        self.last_progress = Some(report.progress);
        let mut params = json!({"progressToken": token, "progress": report.progress});
        if let Some(total) = report.total {
            params["total"] = json!(total);
        }
        if let Some(text) = report.message {
            params["message"] = json!(text);
        }
        Some(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}))
    }

    /// The log notification a working status carries, when the client takes its level.
    fn log(&self, message: Option<&Message>) -> Option<Value> {
        let least = self.log_level?;
        let log = log_of(message?).filter(|log| log.level >= least)?;
        Some(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": log}))
    }
}

/// The answer a task that ended (or stopped for input) with `message` gives a call.
pub(super) fn answer(
    state: TaskState,
    message: Option<&Message>,
) -> std::result::Result<Map<String, Value>, Value> {
    match state {
        TaskState::Completed => match result_of(message) {
            Ok(result) => match serde_json::to_value(result) {
                Ok(Value::Object(result)) => Ok(result),
                _ => Err(json!({"code": -32603, "message": "the tool's result cannot be encoded"})),
            },
            Err(e) => Err(json!({"code": -32603, "message": format!("the tool's result is not a CallToolResult: {e}")})),
        },
        TaskState::Canceled => Err(json!({"code": -32603, "message": "the call was cancelled"})),
        // A tool failure the model can read: the tool needs input this call cannot carry.
        TaskState::InputRequired | TaskState::AuthRequired => {
            let text = format!(
                "the tool asked for {state} ({}); this bridge relays input requests only for tasks (declare the {TASKS_EXTENSION} extension)",
                text_of(message)
            );
            Ok(object(CallToolResult::error(text)))
        }
        _ => Err(message
            .and_then(|m| data_part(m, ERROR_MEDIA_TYPE))
            .filter(|e| e.get("code").is_some_and(Value::is_i64) && e.get("message").is_some_and(Value::is_string))
            .cloned()
            .unwrap_or_else(|| json!({"code": -32603, "message": format!("the tool failed: {}", text_of(message))}))),
    }
}

fn text_of(message: Option<&Message>) -> String {
    message
        .map(|m| {
            m.parts
                .iter()
                .filter_map(|p| p.as_text())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "no message".to_owned())
}

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
        let entry = self.entry(&params.name)?;
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
            .iter_errors(arguments)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
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
            super::mrtr::check_responses(responses)?;
        }
        if let (Some(state), Some(mrtr)) =
            (&params.request_state, super::mrtr::Mrtr::of(ctx, entry))
        {
            // An MRTR retry continues the task its state names instead of starting one.
            return self.resume(ctx, entry, &params, state, mrtr).await;
        }
        let as_task = runs_as_task(&ctx.era, entry.config.task_support, &params)?;
        // MRTR, then a task: the first round is followed like a sync call, and the retry
        // answering its ask makes the task (`super::mrtr`).
        let as_task = as_task && !super::mrtr::input_before_task(ctx, entry);
        // A legacy sync call is cancelled by a notification naming its JSON-RPC id: its
        // context is derived from that id, so the notification finds it (`super::cancel`).
        let context = (!as_task && !ctx.era.is_modern()).then(|| {
            let id = serde_json::from_str(ctx.id.get()).unwrap_or(Value::Null);
            super::cancel::request_context(ctx.caller, &id)
        });
        let (request, text, message_id) =
            super::command::command(&ctx.era, raw, data, &params, as_task, context.as_deref())?;
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
            super::mrtr::Mrtr::of(ctx, entry),
        )
        .logs(log_level);
        Ok(Started::Running(running))
    }
}

/// How a call started.
pub(super) enum Started {
    /// Answered without waiting for a worker: a result, or a JSON-RPC error object.
    Answered(std::result::Result<Map<String, Value>, Value>),
    /// On the log, answered on the request.
    Running(Running),
    /// On the log as a task.
    Task(agentlog_wire::mcp::McpTask),
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

fn object(result: CallToolResult) -> Map<String, Value> {
    match serde_json::to_value(result) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}
