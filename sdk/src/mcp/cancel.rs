//! Legacy `notifications/cancelled {requestId}`: the sync `tools/call` that request started is
//! cancelled, through any replica.
//!
//! A legacy sync call's command carries a context id derived from the caller and the call's
//! JSON-RPC id ([`request_context`]), so the notification finds the call by the view's
//! owner+context index (`Bridge::list_tasks` with that context and a running state; no scan
//! of the caller's other tasks) and cancels it. Another caller's ids derive other contexts in
//! another owner's range, so a notification only ever reaches the sender's own calls. Without
//! sessions every anonymous client is one caller: two of them using the same id at the same
//! time share a context, and the newest running call of it is the one cancelled. A call not
//! found yet (its request still on its way) is looked for again for a moment; the notification
//! is answered at once, its work done on a task of its own.

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{CancelTaskRequest, ListTasksRequest, Task};
use serde_json::{Map, Value};

use super::McpBridge;
use crate::agent::Caller;
use crate::bridge::Bridge;

/// The context of a legacy sync call with JSON-RPC id `id` made by `caller`. The id is taken
/// as compact JSON, so `7` and `"7"` are different requests, as JSON-RPC has it.
pub(super) fn request_context(caller: &Caller, id: &Value) -> String {
    agentlog_wire::ids::context_id(
        &caller.tenant,
        &caller.principal,
        &format!("mcp-request:{id}"),
    )
}

impl McpBridge {
    /// Cancel the running sync call of `caller` that `params.requestId` names, if there is
    /// one. A notification has no answer, so nothing found (or a failure) is only logged.
    pub(super) async fn cancel_request(
        &self,
        caller: &Caller,
        params: Option<&Map<String, Value>>,
    ) {
        let Some(id) = params
            .and_then(|p| p.get("requestId"))
            .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
        else {
            tracing::debug!("notifications/cancelled without a string or integer requestId");
            return;
        };
        let context = request_context(caller, id);
        // The call's task may not show yet (its request still on its way, or its view a
        // moment behind): looked for again, briefly, before the notification is let go.
        let deadline = tokio::time::Instant::now() + FIND_WITHIN;
        loop {
            match self.cancel_context(caller, &context).await {
                Found::Done => return,
                Found::Nothing | Found::Retry if tokio::time::Instant::now() >= deadline => {
                    tracing::debug!("notifications/cancelled: no running call of request {id}");
                    return;
                }
                Found::Nothing | Found::Retry => tokio::time::sleep(LOOK_AGAIN).await,
            }
        }
    }

    /// Cancel the newest running call of `context`, if there is one.
    async fn cancel_context(&self, caller: &Caller, context: &str) -> Found {
        let mut newest: Option<(&Bridge, Task)> = None;
        for bridge in self.inner.bridges.values() {
            // A call runs on one tool agent's topics; which one the id does not say.
            for state in [TaskState::Working, TaskState::Submitted] {
                let request = ListTasksRequest {
                    context_id: Some(context.to_owned()),
                    status: Some(state),
                    page_size: Some(1),
                    history_length: Some(0),
                    ..ListTasksRequest::default()
                };
                let page = match bridge.list_tasks(caller, request).await {
                    Ok(page) => page,
                    Err(e) => {
                        tracing::debug!(error = %e.report(), "notifications/cancelled: listing {context}");
                        continue;
                    }
                };
                for task in page.tasks {
                    let newer = newest
                        .as_ref()
                        .is_none_or(|(_, n)| task.status.timestamp > n.status.timestamp);
                    if newer {
                        newest = Some((bridge, task));
                    }
                }
            }
        }
        let Some((bridge, task)) = newest else {
            return Found::Nothing;
        };
        let request = CancelTaskRequest {
            tenant: None,
            id: task.id,
            metadata: None,
        };
        // A call that ended meanwhile is not cancelable: nothing to do either way.
        match bridge.cancel_task(caller, request).await {
            Err(e) if e.is_retryable() => Found::Retry,
            Err(e) => {
                tracing::debug!(error = %e.report(), "notifications/cancelled: cancelling in {context}");
                Found::Done
            }
            Ok(_) => Found::Done,
        }
    }
}

/// How long a notification looks for its call, and how often.
const FIND_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);
const LOOK_AGAIN: std::time::Duration = std::time::Duration::from_millis(50);

/// What one look for a notification's call did.
enum Found {
    /// Cancelled it, or found it over.
    Done,
    /// No running call of the context.
    Nothing,
    /// The cancel failed with a retryable error.
    Retry,
}
