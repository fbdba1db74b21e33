//! One A2A 1.0 call, typed, and its answer: the core [`Bridge::handle`] runs every request
//! through. A JSON-RPC body (1.0 or 0.3) becomes a [`Call`] in [`super::rpc`] and its
//! [`Answer`] becomes JSON again there; a binding that decodes its own wire format (gRPC)
//! hands the bridge a [`Call`] of the wire types and gets the [`Answer`] itself, with no JSON
//! in between. Either way the operations are dispatched here, once.

use std::borrow::Cow;

use agentlog_wire::a2a::{
    self, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig,
};
use agentlog_wire::jsonrpc::Operation;

use super::Bridge;
use super::stream::TaskStream;
use super::tenant;
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};

/// One A2A 1.0 operation with its request, in the wire types ([`agentlog_wire::a2a`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Call {
    /// `SendMessage`.
    SendMessage(SendMessageRequest),
    /// `SendStreamingMessage`.
    SendStreamingMessage(SendMessageRequest),
    /// `GetTask`.
    GetTask(GetTaskRequest),
    /// `ListTasks`.
    ListTasks(ListTasksRequest),
    /// `CancelTask`.
    CancelTask(CancelTaskRequest),
    /// `SubscribeToTask`.
    SubscribeToTask(SubscribeToTaskRequest),
    /// `CreateTaskPushNotificationConfig`.
    CreateTaskPushNotificationConfig(TaskPushNotificationConfig),
    /// `GetTaskPushNotificationConfig`.
    GetTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest),
    /// `ListTaskPushNotificationConfigs`.
    ListTaskPushNotificationConfigs(ListTaskPushNotificationConfigsRequest),
    /// `DeleteTaskPushNotificationConfig`.
    DeleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest),
    /// `GetExtendedAgentCard`: its request holds only the tenant.
    GetExtendedAgentCard {
        /// The tenant the request names.
        tenant: Option<String>,
    },
}

impl Call {
    /// The operation this is.
    pub fn operation(&self) -> Operation {
        match self {
            Call::SendMessage(_) => Operation::SendMessage,
            Call::SendStreamingMessage(_) => Operation::SendStreamingMessage,
            Call::GetTask(_) => Operation::GetTask,
            Call::ListTasks(_) => Operation::ListTasks,
            Call::CancelTask(_) => Operation::CancelTask,
            Call::SubscribeToTask(_) => Operation::SubscribeToTask,
            Call::CreateTaskPushNotificationConfig(_) => {
                Operation::CreateTaskPushNotificationConfig
            }
            Call::GetTaskPushNotificationConfig(_) => Operation::GetTaskPushNotificationConfig,
            Call::ListTaskPushNotificationConfigs(_) => Operation::ListTaskPushNotificationConfigs,
            Call::DeleteTaskPushNotificationConfig(_) => {
                Operation::DeleteTaskPushNotificationConfig
            }
            Call::GetExtendedAgentCard { .. } => Operation::GetExtendedAgentCard,
        }
    }

    /// The task the call is about, for `caller`: its id, or a new task's (`SendMessage` without
    /// a `taskId`: derived from the caller in the tenant the bridge will work in and the
    /// `messageId`). `None` for a call about no task, or one the bridge will refuse anyway.
    /// What the forwarder routes a typed call by.
    #[cfg(feature = "http")]
    pub(crate) fn task_id(&self, caller: &Caller) -> Option<String> {
        match self {
            Call::SendMessage(r) | Call::SendStreamingMessage(r) => match &r.message.task_id {
                Some(task_id) => Some(task_id.clone()),
                None => {
                    let caller = tenant::scoped(caller, self.tenant()).ok()?;
                    let message_id = &r.message.message_id;
                    Some(agentlog_wire::ids::task_id(
                        &caller.tenant,
                        &caller.principal,
                        message_id,
                    ))
                }
            },
            Call::GetTask(r) => Some(r.id.clone()),
            Call::CancelTask(r) => Some(r.id.clone()),
            Call::SubscribeToTask(r) => Some(r.id.clone()),
            Call::CreateTaskPushNotificationConfig(r) => r.task_id.clone(),
            Call::GetTaskPushNotificationConfig(r) => Some(r.task_id.clone()),
            Call::ListTaskPushNotificationConfigs(r) => Some(r.task_id.clone()),
            Call::DeleteTaskPushNotificationConfig(r) => Some(r.task_id.clone()),
            Call::ListTasks(_) | Call::GetExtendedAgentCard { .. } => None,
        }
    }

    /// The tenant the request names, if any.
    fn tenant(&self) -> Option<&str> {
        match self {
            Call::SendMessage(r) | Call::SendStreamingMessage(r) => r.tenant.as_deref(),
            Call::GetTask(r) => r.tenant.as_deref(),
            Call::ListTasks(r) => r.tenant.as_deref(),
            Call::CancelTask(r) => r.tenant.as_deref(),
            Call::SubscribeToTask(r) => r.tenant.as_deref(),
            Call::CreateTaskPushNotificationConfig(r) => r.tenant.as_deref(),
            Call::GetTaskPushNotificationConfig(r) => r.tenant.as_deref(),
            Call::ListTaskPushNotificationConfigs(r) => r.tenant.as_deref(),
            Call::DeleteTaskPushNotificationConfig(r) => r.tenant.as_deref(),
            Call::GetExtendedAgentCard { tenant } => tenant.as_deref(),
        }
    }
}

/// What a [`Call`] answers, by operation.
#[non_exhaustive]
pub enum Answer {
    /// `SendMessage`: the task, or the message that answered in its place.
    Send(SendMessageResponse),
    /// `GetTask`, `CancelTask`: the task.
    Task(Task),
    /// `ListTasks`: a page.
    Tasks(ListTasksResponse),
    /// `SendStreamingMessage`, `SubscribeToTask`: the events (the first of a subscription a
    /// `Task`), ending after the one marked `last` or an error.
    Stream(TaskStream),
    /// `GetExtendedAgentCard`.
    Card(Box<AgentCard>),
    /// `CreateTaskPushNotificationConfig`, `GetTaskPushNotificationConfig`.
    PushConfig(TaskPushNotificationConfig),
    /// `ListTaskPushNotificationConfigs`.
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    /// `DeleteTaskPushNotificationConfig`: nothing.
    Deleted,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Send(r) => f.debug_tuple("Send").field(r).finish(),
            Answer::Task(t) => f.debug_tuple("Task").field(t).finish(),
            Answer::Tasks(t) => f.debug_tuple("Tasks").field(t).finish(),
            Answer::Stream(_) => f.write_str("Stream(..)"),
            Answer::Card(c) => f.debug_tuple("Card").field(c).finish(),
            Answer::PushConfig(c) => f.debug_tuple("PushConfig").field(c).finish(),
            Answer::PushConfigs(c) => f.debug_tuple("PushConfigs").field(c).finish(),
            Answer::Deleted => f.write_str("Deleted"),
        }
    }
}

/// What the operations need of a request besides its params.
pub(super) struct CallOptions<'a> {
    pub(super) extensions: &'a [String],
    pub(super) resume_after: Option<u64>,
    /// A `ListTasks` over these partitions only (a peer's share of a fan-out).
    pub(super) partitions: Option<&'a [u32]>,
}

impl Bridge {
    /// Run `call` for `caller`: the one dispatch of every binding's requests. `raw` is a
    /// send's params exactly as received when the request came as that JSON text (the command
    /// record carries it as is); without it the request is encoded here.
    pub(super) async fn dispatch(
        &self,
        caller: &Caller,
        call: Call,
        raw: Option<&str>,
        options: &CallOptions<'_>,
    ) -> Result<Answer> {
        let traced = crate::telemetry::enabled();
        if traced {
            note_call(&call);
        }
        let answer = self.dispatch_call(caller, call, raw, options).await;
        if traced {
            note_answer(&answer);
        }
        answer
    }

    async fn dispatch_call(
        &self,
        caller: &Caller,
        call: Call,
        raw: Option<&str>,
        options: &CallOptions<'_>,
    ) -> Result<Answer> {
        let caller = &tenant::scoped(caller, call.tenant())?;
        match call {
            Call::SendMessage(mut request) => {
                let raw = self.activate(&mut request, options, raw);
                let (request, text) = as_received(request, raw)?;
                let response = self.send_message_raw(caller, request, Some(&text)).await?;
                Ok(Answer::Send(response))
            }
            Call::SendStreamingMessage(mut request) => {
                let raw = self.activate(&mut request, options, raw);
                let (request, text) = as_received(request, raw)?;
                let stream = self
                    .send_streaming_message(caller, request, Some(&text), options.resume_after)
                    .await?;
                Ok(Answer::Stream(stream))
            }
            Call::GetTask(request) => Ok(Answer::Task(self.get_task(caller, request).await?)),
            Call::CancelTask(request) => Ok(Answer::Task(self.cancel_task(caller, request).await?)),
            Call::ListTasks(request) => Ok(Answer::Tasks(
                self.list_tasks_in(caller, request, options.partitions)
                    .await?,
            )),
            Call::SubscribeToTask(request) => Ok(Answer::Stream(
                self.subscribe_to_task(caller, request, options.resume_after)
                    .await?,
            )),
            Call::CreateTaskPushNotificationConfig(config) => Ok(Answer::PushConfig(
                self.create_push_config(caller, config).await?,
            )),
            Call::GetTaskPushNotificationConfig(request) => Ok(Answer::PushConfig(
                self.get_push_config(caller, request).await?,
            )),
            Call::ListTaskPushNotificationConfigs(request) => Ok(Answer::PushConfigs(
                self.list_push_configs(caller, request).await?,
            )),
            Call::DeleteTaskPushNotificationConfig(request) => {
                self.delete_push_config(caller, request).await?;
                Ok(Answer::Deleted)
            }
            Call::GetExtendedAgentCard { .. } => {
                Ok(Answer::Card(Box::new(self.extended_card(caller)?)))
            }
        }
    }

    /// Add the extensions `options` activates that the card declares to the request's
    /// message, so the record carries them to the handler. The raw params stay the record's
    /// params unless that changed the message.
    fn activate<'r>(
        &self,
        request: &mut SendMessageRequest,
        options: &CallOptions<'_>,
        raw: Option<&'r str>,
    ) -> Option<&'r str> {
        let card = &self.inner.config.card;
        if super::extensions::activate(card, &mut request.message, options.extensions) {
            None
        } else {
            raw
        }
    }
}

/// The span attribute of the task a call is about.
const TASK_ID: &str = "a2a.task.id";

/// Name the current request span after `call`, with the task it names.
fn note_call(call: &Call) {
    let span = crate::telemetry::current();
    if !span.is_some() {
        return;
    }
    let method = method_name(call.operation());
    span.rename(method);
    span.set("rpc.method", method);
    let task_id = match call {
        Call::SendMessage(r) | Call::SendStreamingMessage(r) => r.message.task_id.as_deref(),
        Call::GetTask(r) => Some(r.id.as_str()),
        Call::CancelTask(r) => Some(r.id.as_str()),
        Call::SubscribeToTask(r) => Some(r.id.as_str()),
        Call::CreateTaskPushNotificationConfig(r) => r.task_id.as_deref(),
        Call::GetTaskPushNotificationConfig(r) => Some(r.task_id.as_str()),
        Call::ListTaskPushNotificationConfigs(r) => Some(r.task_id.as_str()),
        Call::DeleteTaskPushNotificationConfig(r) => Some(r.task_id.as_str()),
        _ => None,
    };
    if let Some(task_id) = task_id {
        span.set(TASK_ID, task_id);
    }
}

/// Mark the current request span with how `answer` went: `ok` or the error's kind, and the
/// task a send created.
fn note_answer(answer: &Result<Answer>) {
    let span = crate::telemetry::current();
    if !span.is_some() {
        return;
    }
    match answer {
        Ok(answer) => {
            span.set(super::trace::OUTCOME, "ok");
            let task_id = match answer {
                Answer::Send(SendMessageResponse::Task(task)) | Answer::Task(task) => {
                    Some(task.id.as_str())
                }
                Answer::Send(SendMessageResponse::Message(message)) => message.task_id.as_deref(),
                _ => None,
            };
            if let Some(task_id) = task_id {
                span.set(TASK_ID, task_id);
            }
        }
        Err(error) => {
            let kind = error.kind().as_str();
            span.set(super::trace::OUTCOME, kind);
            span.set("rpc.jsonrpc.error_code", error.kind().info().rpc.code());
            span.fail(kind);
        }
    }
}

/// An operation's A2A 1.0 method name.
fn method_name(operation: Operation) -> &'static str {
    match operation {
        Operation::SendMessage => "SendMessage",
        Operation::SendStreamingMessage => "SendStreamingMessage",
        Operation::GetTask => "GetTask",
        Operation::ListTasks => "ListTasks",
        Operation::CancelTask => "CancelTask",
        Operation::SubscribeToTask => "SubscribeToTask",
        Operation::CreateTaskPushNotificationConfig => "CreateTaskPushNotificationConfig",
        Operation::GetTaskPushNotificationConfig => "GetTaskPushNotificationConfig",
        Operation::ListTaskPushNotificationConfigs => "ListTaskPushNotificationConfigs",
        Operation::DeleteTaskPushNotificationConfig => "DeleteTaskPushNotificationConfig",
        Operation::GetExtendedAgentCard => "GetExtendedAgentCard",
    }
}

/// The request and the params text its command record carries, the request being exactly
/// what parsing that text gives: the text as received when there is one; else the request
/// encoded and parsed back once, so that the view may apply the new command without reading
/// it back from the log (what a JSON request gets from its own text).
fn as_received(
    request: SendMessageRequest,
    raw: Option<&str>,
) -> Result<(SendMessageRequest, Cow<'_, str>)> {
    if let Some(raw) = raw {
        return Ok((request, Cow::Borrowed(raw)));
    }
    let text = serde_json::to_string(&request)
        .map_err(|e| Error::new(ErrorKind::Internal, "cannot encode the request").with_source(e))?;
    let request = a2a::from_slice("SendMessageRequest", text.as_bytes())
        .map_err(|e| Error::new(ErrorKind::InvalidParams, format!("Invalid parameters: {e}")))?;
    Ok((request, Cow::Owned(text)))
}
