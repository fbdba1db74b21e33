//! Multi round-trip requests (MRTR, 2026-07-28) on sync `tools/call`s: a tool that asks
//! (`ToolCall::ask`) makes the call answer `resultType: "input_required"` with its
//! `inputRequests` and a `requestState`; the client's retry (`inputResponses` + the state)
//! continues that same task, as `tasks/update` does, and is answered like a new sync call.
//! A tool with `ToolConfig::input_before_task`, called with the Tasks extension declared,
//! composes the two: its first round is such a sync call, and the retry whose responses are
//! written answers a `CreateTaskResult` for that same task instead ([`input_before_task`]).
//!
//! The `requestState` is `<MCP task id>#<round>`: the task id is unguessable (a random
//! message id's) and every lookup is the caller's own, so the state needs no signature while
//! it carries nothing else; the round (the number of asks so far, `PendingInput::round`)
//! makes each round's state differ, and one that names no ask of the task is refused like a
//! tampered one. A retry is refused (-32602, nothing written) unless its state names a task of
//! the caller on this tool's agent, called with the same tool and arguments, and an ask that
//! happened. An old round's state is answered as the task is now.
//!
//! The requests sent are only kinds the request's `clientCapabilities` declare (the spec's
//! MUST NOT); a tool asking for another kind cannot be answered on this call, so the call gets
//! -32021 with `data.requiredCapabilities` (the spec's answer to a request needing a
//! capability it did not declare) and its task is cancelled.
//!
//! An abandoned input-required call (no retry ever comes) expires: the ask records a deadline
//! (`Tools::input_timeout`) past which the workers' sweeper cancels its task
//! (`worker::expiry`), and a retry after it is refused (-32602, "expired").

use agentlog_wire::a2a::{GetTaskRequest, Task};
use agentlog_wire::mcp::{Era, PendingInput, TASKS_EXTENSION, missing_capabilities};
use serde_json::{Map, Value, json};

use super::answer::Answer;
use super::rpc::Ctx;
use super::{Entry, TaskSupport};
use crate::agent::Caller;
use crate::bridge::Bridge;
use crate::error::{Error, ErrorKind, Result};

/// A modern sync call's MRTR context: what the request declared, and the tool agent.
pub(super) struct Mrtr {
    capabilities: Map<String, Value>,
    pub(super) agent: String,
}

impl Mrtr {
    /// A modern call's (legacy calls have no MRTR: `None`).
    pub(super) fn of(ctx: &Ctx<'_>, entry: &Entry) -> Option<Self> {
        match &ctx.era {
            Era::Modern { capabilities, .. } => Some(Self {
                capabilities: capabilities.clone(),
                agent: entry.config.agent(),
            }),
            Era::Legacy => None,
        }
    }

    /// The answer of a call whose task (A2A `task_id` of `bridge`) stopped for input, and
    /// whether the task is to be cancelled; `None` when no keyed request is outstanding (a
    /// plain question MRTR cannot carry).
    pub(super) async fn ask(
        &self,
        bridge: &Bridge,
        caller: &Caller,
        task_id: &str,
    ) -> Option<(Answer, bool)> {
        let request = GetTaskRequest {
            tenant: None,
            id: task_id.to_owned(),
            history_length: None,
        };
        match bridge.get_task(caller, request).await {
            Ok(task) => self.input_required(&task),
            Err(e) => Some((Err(e), true)),
        }
    }

    /// [`Mrtr::ask`] on the task as loaded.
    pub(super) fn input_required(&self, task: &Task) -> Option<(Answer, bool)> {
        let pending = PendingInput::of(&task.history).filter(|p| !p.is_answered())?;
        let requests = pending.outstanding();
        let missing = match missing_capabilities(&requests, &self.capabilities) {
            Ok(missing) => missing,
            Err(method) => {
                let message =
                    format!("the tool asked for input MCP has no request for: {method:?}");
                return Some((Err(Error::new(ErrorKind::ToolFailed, message)), true));
            }
        };
        if !missing.is_empty() {
            let names: Vec<&str> = missing.keys().map(String::as_str).collect();
            let error = Error::new(
                ErrorKind::ExtensionSupportRequired,
                format!(
                    "the tool asks for input this request's clientCapabilities do not declare: {}",
                    names.join(", ")
                ),
            )
            .with_data(json!({"requiredCapabilities": missing}));
            return Some((Err(error), true));
        }
        let mut result = Map::new();
        result.insert("resultType".into(), json!("input_required"));
        result.insert("inputRequests".into(), Value::Object(requests));
        let state = format!("{}:{}#{}", self.agent, task.id, pending.round);
        result.insert("requestState".into(), json!(state));
        Some((Ok(result), false))
    }
}

/// `inputResponses` must map each key to a result object (an `ElicitResult`,
/// `CreateMessageResult` or `ListRootsResult`), checked before anything is written.
pub(super) fn check_responses(responses: &Map<String, Value>) -> Result<()> {
    match responses.iter().find(|(_, response)| !response.is_object()) {
        None => Ok(()),
        Some((key, _)) => Err(Error::new(
            ErrorKind::InvalidParams,
            format!("inputResponses.{key} must be an object (the client's result of that request)"),
        )
        .with_detail("field", format!("inputResponses.{key}"))),
    }
}

pub(super) fn refused() -> Error {
    Error::new(ErrorKind::InvalidParams, "Invalid or expired requestState")
        .with_detail("field", "requestState")
}

/// Whether a modern call of `entry`'s tool is MRTR, then a task
/// ([`ToolConfig::input_before_task`](super::ToolConfig::input_before_task)): the tool
/// composes them, may run as a task, and the request declares the Tasks extension.
pub(super) fn input_before_task(ctx: &Ctx<'_>, entry: &Entry) -> bool {
    entry.config.input_before_task
        && entry.config.task_support != TaskSupport::Forbidden
        && ctx.era.is_modern()
        && ctx.era.declares_extension(TASKS_EXTENSION)
}
