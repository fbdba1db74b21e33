//! MCP requests about one task (`tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`
//! by their `taskId`; `resources/read` of a task's or an artifact's URI), whose task's
//! partition this bridge does not hold in the view of the task's agent: forwarded once to the
//! partition's owner (else its successor) with the body and the caller's headers unchanged
//! (`Mcp-Session-Id` among them) and the peers' mark, the answer piped back as it comes (JSON,
//! or SSE frame by frame). A marked request is served where it lands, the partition held on
//! demand. Anything else is served here: a new call (its id is minted in a held partition),
//! lists, and the legacy sessions' requests (`GET`/`DELETE` with `Mcp-Session-Id`,
//! `resources/subscribe`), which any replica serves because the sessions' agent holds every
//! partition.

use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Forwarder, Holder, Route, To, forwarded_headers, piped};
use crate::error::Error;
use crate::mcp::McpBridge;

/// The head of an MCP request: what names its task.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(default, rename = "taskId")]
    task_id: Option<String>,
    #[serde(default)]
    uri: Option<String>,
}

/// The methods forwarded, as the forward counts' `verb`.
const VERBS: [&str; 5] = [
    "tasks/get",
    "tasks/result",
    "tasks/cancel",
    "tasks/update",
    "resources/read",
];

/// The MCP task (`<agent>:<A2A id>`) a request body is about, with its method (one of
/// [`VERBS`]) and its JSON-RPC id.
fn task_of(body: &[u8]) -> Option<(&'static str, String, Option<&RawValue>)> {
    let head: Head<'_> = serde_json::from_slice(body).ok()?;
    let verb = VERBS
        .into_iter()
        .find(|v| head.method.as_deref() == Some(*v))?;
    let params = head.params?;
    let task = match verb {
        "resources/read" => match agentlog_wire::mcp::resource::TaskResource::of(&params.uri?)? {
            agentlog_wire::mcp::resource::TaskResource::Task(task)
            | agentlog_wire::mcp::resource::TaskResource::Artifact(task, _) => task,
        },
        _ => params.task_id?,
    };
    Some((verb, task, head.id))
}

impl Forwarder {
    /// Where the MCP request (`parts`, its body `raw` as received) is served, `mcp` being the
    /// bridge whose agents' views say which partitions are held here.
    pub(in crate::http) async fn route_mcp(
        &self,
        mcp: &McpBridge,
        parts: &Parts,
        raw: &[u8],
    ) -> Route {
        let Some((verb, task, id)) = task_of(raw) else {
            return Route::Here;
        };
        let Some((agent, a2a_id)) = task.rsplit_once(':') else {
            return Route::Here;
        };
        let Some(bridge) = mcp.task_bridge(agent) else {
            return Route::Here;
        };
        let view = bridge.view();
        let p = view.partition_of(a2a_id);
        if self.marked(parts, raw) {
            self.count(verb, "received");
            if view.holds(p) {
                return Route::Here;
            }
            return match view.hold_on_demand(p).await {
                Ok(()) => Route::Here,
                Err(error) => Route::Refused(refusal(id, &error)),
            };
        }
        if view.holds(p) {
            return Route::Here;
        }
        let to = To {
            method: &parts.method,
            path: super::path_of(parts),
            partitions: None,
        };
        let headers = forwarded_headers(&parts.headers);
        // A legacy `tasks/result` answers when the task settles.
        let timeout = match verb {
            "tasks/result" => self.config.blocking_timeout,
            _ => self.config.timeout,
        };
        match self
            .to_holder(view, p, verb, &to, &headers, raw, timeout)
            .await
        {
            Holder::Here => Route::Here,
            Holder::Answered(answer) => Route::Piped(piped(answer)),
            Holder::Nobody(error) => Route::Refused(refusal(id, &error)),
        }
    }
}

/// A retryable refusal in MCP's shape: the error (`Error::to_mcp`) with the request's id, the
/// status of the one error table, `Retry-After: 1`.
fn refusal(id: Option<&RawValue>, error: &Error) -> Response {
    let id = id.map_or(serde_json::Value::Null, |id| {
        serde_json::from_str(id.get()).unwrap_or_default()
    });
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error.to_mcp()});
    let status = StatusCode::from_u16(error.kind().info().mcp_status)
        .unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let mut response =
        super::super::errors::json(status, serde_json::to_vec(&body).unwrap_or_default());
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_request_names_its_task_by_task_id_or_resource_uri() {
        let get =
            br#"{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"mcp.demo:t-1"}}"#;
        let (verb, task, id) = task_of(get).unwrap();
        assert_eq!(
            (verb, task.as_str(), id.map(RawValue::get)),
            ("tasks/get", "mcp.demo:t-1", Some("3"))
        );
        let read = br#"{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"agentlog://tasks/demo%3At-2/artifacts/a"}}"#;
        assert_eq!(task_of(read).unwrap().1, "demo:t-2");
        for other in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"docs://x"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}"#,
            b"nope",
        ] {
            assert!(task_of(other).is_none());
        }
    }
}
