//! A call on the log, followed until its answer ([`Running`]), and how a call started
//! ([`Started`]): what `tools/call` and an MRTR retry both build, and the reply sends.

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{CancelTaskRequest, Message, StreamResponse, SubscribeToTaskRequest};
use agentlog_wire::mcp::LoggingLevel;
use agentlog_wire::mcp::call::{log_of, progress_of};
use serde_json::{Value, json};

use super::answer::{Answer, answer};
use super::mrtr::Mrtr;
use super::relay::{Relay, Relayed};
use crate::agent::Caller;
use crate::bridge::{Bridge, StreamEvent, TaskStream, TurnEvents};
use crate::error::{Error, ErrorKind, Result};
use crate::view::PartitionPin;

/// What a running call yields.
pub(super) enum CallEvent {
    /// A `notifications/progress` or `notifications/message` message.
    Notification(Value),
    /// The call's answer: a result, or a JSON-RPC error object.
    Done(Answer),
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
                    tracing::debug!(error = %e.report(), "cancelling an abandoned MCP call");
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
    mrtr: Option<Mrtr>,
    /// A legacy call on an event stream: a tool's asks are sent to the client as requests
    /// (`super::relay`).
    relay: Option<Box<Relay>>,
    done: bool,
    /// The task's partition pinned while the call follows it: a move of it away (retired
    /// here) keeps it followed until the answer.
    _pinned: Option<PartitionPin>,
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
        mrtr: Option<Mrtr>,
    ) -> Self {
        let view = bridge.view();
        let pinned = view.pin(view.partition_of(&task_id));
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
            relay: None,
            done: false,
            _pinned: pinned,
        }
    }

    /// Relay the tool's asks to the client as requests on the call's stream (a legacy call
    /// whose client takes one), `agent` being the tool's agent.
    pub(super) fn relayed(mut self, agent: String) -> Self {
        self.relay = Some(Box::new(Relay::new(agent)));
        self
    }

    /// Forward the tool's log messages of `level` and more severe ones.
    pub(super) fn logs(mut self, level: Option<LoggingLevel>) -> Self {
        self.log_level = level;
        self
    }

    pub(super) async fn next(&mut self) -> Option<CallEvent> {
        while !self.done {
            if let Some(request) = self.relay.as_mut().and_then(|r| r.queued.pop_front()) {
                return Some(CallEvent::Notification(request));
            }
            let Some(event) = self.events.next().await else {
                self.done = true;
                let error = Error::new(
                    ErrorKind::Internal,
                    "the call's stream ended before its answer",
                );
                return Some(CallEvent::Done(Err(error)));
            };
            let event = match event {
                Ok(event) => event,
                Err(e) => {
                    self.done = true;
                    return Some(CallEvent::Done(Err(e)));
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
            if state.is_interrupted()
                && let Some(relay) = &mut self.relay
            {
                let (bridge, caller) = (&self.guard.bridge, &self.guard.caller);
                match relay.ask(bridge, caller, &self.guard.task_id).await {
                    Ok(Relayed::Waiting) => {
                        // Through the interruption: the task from this event on.
                        let request = SubscribeToTaskRequest {
                            tenant: None,
                            id: self.guard.task_id.clone(),
                        };
                        let after = Some(event.position);
                        match bridge.subscribe_to_task(caller, request, after).await {
                            Ok(stream) => self.events = Follow::Task(stream),
                            Err(e) => {
                                self.done = true;
                                return Some(CallEvent::Done(Err(e)));
                            }
                        }
                        continue;
                    }
                    Ok(Relayed::No) => {}
                    Err(e) => {
                        self.done = true;
                        return Some(CallEvent::Done(Err(e)));
                    }
                }
            }
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

/// How a call started.
pub(super) enum Started {
    /// Answered without waiting for a worker: a result, or an error.
    Answered(Answer),
    /// On the log, answered on the request.
    Running(Box<Running>),
    /// On the log as a task.
    Task(agentlog_wire::mcp::McpTask),
}
