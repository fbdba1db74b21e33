//! The `initialize` era's server-to-client requests, relayed through the log: a legacy sync
//! `tools/call` on an event stream whose tool asks (`ToolCall::ask`, an input-required status
//! holding keyed `elicitation/create`, `sampling/createMessage` or `roots/list` requests, as
//! for MRTR) sends each request on the call's stream, with a JSON-RPC id naming the ask
//! ([`ask_id`]: the tool agent, the A2A task and the key). The client POSTs its response to
//! any replica; [`McpBridge::take_response`] finds the task from the id (as the caller: only
//! its owner answers it) and appends the result as the input responses a `tasks/update` would
//! (a continue the worker's next turn reads in `ToolCall::input_responses`). The replica
//! holding the stream follows the task through it ([`Relay`]) and sends the tool's next asks,
//! then its result. A client's error response (it does not take the request) cancels the call.
//!
//! Nothing is held in memory across requests: the ask and the answer are records, so a
//! restarted replica or another one takes the response, and an ask nobody answers expires
//! (`Tools::input_timeout`). A call whose client takes no event stream, or a tool asking with
//! no keyed request, is answered with a tool error naming the question, as before.

use std::collections::{HashSet, VecDeque};

use agentlog_wire::a2a::{CancelTaskRequest, GetTaskRequest};
use agentlog_wire::mcp::PendingInput;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use super::McpBridge;
use super::followup::{at_once, input_message};
use crate::agent::Caller;
use crate::bridge::Bridge;
use crate::error::{Error, ErrorKind, Result};

/// The prefix of the ids of relayed requests.
const ASK_PREFIX: &str = "agentlog-ask:";

/// The requests a client can be sent.
const METHODS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];

/// The JSON-RPC id of the request relaying key `key` of the ask of A2A task `task_id` on tool
/// agent `agent`.
pub(super) fn ask_id(agent: &str, task_id: &str, key: &str) -> String {
    let named = json!([agent, task_id, key]).to_string();
    format!("{ASK_PREFIX}{}", URL_SAFE_NO_PAD.encode(named))
}

/// What [`ask_id`] encoded: (agent, A2A task id, key).
pub(crate) fn parse_ask_id(id: &str) -> Option<(String, String, String)> {
    let encoded = id.strip_prefix(ASK_PREFIX)?;
    let bytes = URL_SAFE_NO_PAD.decode(encoded).ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    match value.as_array().map(Vec::as_slice) {
        Some([Value::String(a), Value::String(t), Value::String(k)]) => {
            Some((a.clone(), t.clone(), k.clone()))
        }
        _ => None,
    }
}

/// A JSON-RPC response a client POSTed: its id, and its result or error.
pub(super) struct ClientResponse {
    id: Value,
    outcome: std::result::Result<Value, Value>,
}

impl ClientResponse {
    /// `body` as a JSON-RPC response (`id`, and `result` or `error`, no `method`), if it is one.
    pub(super) fn of(body: &[u8]) -> Option<Self> {
        let Value::Object(mut object) = serde_json::from_slice(body).ok()? else {
            return None;
        };
        if object.contains_key("method") || object.get("jsonrpc")? != "2.0" {
            return None;
        }
        let id = object.remove("id")?;
        let outcome = match (object.remove("result"), object.remove("error")) {
            (Some(result), None) => Ok(result),
            (None, Some(error)) => Err(error),
            _ => return None,
        };
        Some(Self { id, outcome })
    }
}

/// A legacy call's relay: the requests sent on its stream so far, and those to send next.
#[derive(Debug)]
pub(super) struct Relay {
    agent: String,
    sent: HashSet<String>,
    pub(super) queued: VecDeque<Value>,
}

/// What an interruption of a relayed call comes to.
pub(super) enum Relayed {
    /// Requests were queued, or all were sent already: follow the task on.
    Waiting,
    /// Not something a client can answer (no keyed request, or one MCP has no method for).
    No,
}

impl Relay {
    pub(super) fn new(agent: String) -> Self {
        Self {
            agent,
            sent: HashSet::new(),
            queued: VecDeque::new(),
        }
    }

    /// Queue the requests of the task's outstanding ask not sent yet (a re-ask after a
    /// partial answer sends nothing again).
    pub(super) async fn ask(
        &mut self,
        bridge: &Bridge,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Relayed> {
        let request = GetTaskRequest {
            tenant: None,
            id: task_id.to_owned(),
            history_length: None,
        };
        let task = bridge.get_task(caller, request).await?;
        let Some(pending) = PendingInput::of(&task.history).filter(|p| !p.is_answered()) else {
            return Ok(Relayed::No);
        };
        let requests = pending.outstanding();
        let method = |request: &Value| {
            request
                .get("method")
                .and_then(Value::as_str)
                .filter(|m| METHODS.contains(m))
                .map(str::to_owned)
        };
        if requests.values().any(|request| method(request).is_none()) {
            return Ok(Relayed::No);
        }
        for (key, request) in requests {
            if !self.sent.insert(key.clone()) {
                continue;
            }
            let mut message = json!({
                "jsonrpc": "2.0",
                "id": ask_id(&self.agent, task_id, &key),
                "method": method(&request),
            });
            if let Some(params) = request.get("params") {
                message["params"] = params.clone();
            }
            self.queued.push_back(message);
        }
        Ok(Relayed::Waiting)
    }
}

impl McpBridge {
    /// A client's response to a relayed request: written as the ask's answer (a result), or
    /// the call cancelled (an error). `Err` for an id this server never sent to this caller;
    /// an answer already given (or a call that ended) is taken and changes nothing.
    pub(super) async fn take_response(
        &self,
        caller: &Caller,
        response: ClientResponse,
    ) -> Result<()> {
        let unknown = || {
            Error::new(
                ErrorKind::InvalidRequest,
                "Invalid request: a response to no request this server sent",
            )
            .with_detail("field", "id")
        };
        let (agent, task_id, key) = response
            .id
            .as_str()
            .and_then(parse_ask_id)
            .ok_or_else(unknown)?;
        let bridge = self.inner.bridges.get(&agent).ok_or_else(unknown)?;
        let request = GetTaskRequest {
            tenant: None,
            id: task_id.clone(),
            history_length: None,
        };
        let task = bridge.get_task(caller, request).await.map_err(|e| {
            if e.kind() == ErrorKind::TaskNotFound {
                unknown()
            } else {
                e
            }
        })?;
        if task.status.state.is_terminal() {
            return Ok(());
        }
        let Some(pending) = PendingInput::of(&task.history) else {
            return Err(unknown());
        };
        if !pending.requests.contains_key(&key) {
            return Err(unknown());
        }
        let result = match response.outcome {
            Ok(Value::Object(result)) => result,
            // The client will not (or cannot) answer: the call ends, cancelled.
            outcome => {
                tracing::debug!(
                    ?outcome,
                    "a client refused a relayed request: cancelling its call"
                );
                let request = CancelTaskRequest {
                    tenant: None,
                    id: task_id,
                    metadata: None,
                };
                return match bridge.cancel_task(caller, request).await {
                    Err(e) if e.kind() != ErrorKind::TaskNotCancelable => Err(e),
                    _ => Ok(()),
                };
            }
        };
        let mut answered = Map::new();
        answered.insert(key, Value::Object(result));
        let wanted = pending.still_wanted(&answered);
        if wanted.is_empty() {
            return Ok(());
        }
        bridge
            .send_message(caller, at_once(input_message(&task_id, wanted)))
            .await?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_ask_id_names_its_agent_task_and_key() {
        let id = ask_id("mcp.demo", "0f3a", "user:name");
        assert!(id.starts_with(ASK_PREFIX));
        assert_eq!(
            parse_ask_id(&id),
            Some(("mcp.demo".into(), "0f3a".into(), "user:name".into()))
        );
        for garbage in ["7", "agentlog-ask:!!", "agentlog-ask:WzFd"] {
            assert_eq!(parse_ask_id(garbage), None, "{garbage}");
        }
    }

    #[test]
    fn only_responses_are_client_responses() {
        let response = |body: &str| ClientResponse::of(body.as_bytes()).map(|r| (r.id, r.outcome));
        assert_eq!(
            response(r#"{"jsonrpc":"2.0","id":"a","result":{"action":"accept"}}"#),
            Some((json!("a"), Ok(json!({"action": "accept"}))))
        );
        assert_eq!(
            response(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#),
            Some((json!(1), Err(json!({"code": -32601, "message": "no"}))))
        );
        for not in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#,
            r#"{"id":1,"result":{}}"#,
            "[]",
        ] {
            assert!(response(not).is_none(), "{not}");
        }
    }
}
