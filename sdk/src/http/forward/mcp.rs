//! MCP requests about one task (`tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`
//! by their `taskId`; `resources/read` and legacy `resources/subscribe` of a task's or an
//! artifact's URI; an MRTR retry's `tools/call` by its `requestState`; a client's response to
//! a relayed request by its id), whose task's partition this bridge does not hold in the view
//! of the task's agent: forwarded once to the partition's owner (else its successor) with the
//! body and the caller's headers unchanged (`Mcp-Session-Id` among them) and the peers' mark,
//! the answer piped back as it comes (JSON, or SSE frame by frame). A `subscriptions/listen`
//! whose tasks (`taskIds`, task URIs) are all held by one other member goes there whole; one
//! mixing members' tasks is served here, each task's partition held while watched
//! (`crate::mcp`'s shares). A marked request is served where it lands, the partition held on
//! demand.
//!
//! `tasks/list` and `resources/list` are about every partition: each other owner is asked for
//! its partitions' page ([`super::PARTITIONS`], the fan-out `ListTasks` makes) and this bridge
//! merges them with its own (`Route::FanOut`; a member answering its share: `Route::Share`).
//! A legacy `notifications/cancelled` is told to every member too (its call's task is in the
//! share of the member the call was made through). Anything else is served here: a new call (its id is minted in a held partition), the
//! other lists, and the legacy sessions' requests (`GET`/`DELETE` with `Mcp-Session-Id`,
//! `resources/unsubscribe`), which any replica serves because the sessions' agent holds every
//! partition.

use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{FanOut, Forwarder, Holder, PARTITIONS, Route, To, forwarded_headers, piped};
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
    #[serde(default, rename = "requestState")]
    request_state: Option<String>,
    #[serde(default)]
    notifications: Option<Notifications>,
}

#[derive(Deserialize)]
struct Notifications {
    #[serde(default, rename = "taskIds")]
    task_ids: Option<Vec<String>>,
    #[serde(default, rename = "resourceSubscriptions")]
    resource_subscriptions: Option<Vec<String>>,
}

/// A client's JSON-RPC response (to a request relayed on a call's stream).
#[derive(Deserialize)]
struct ClientAnswer {
    id: Option<String>,
}

/// What an MCP request is about, as the forward reads it.
#[derive(Debug)]
enum About<'a> {
    /// One MCP task (`<agent>:<A2A id>`), by the method `verb` (the forward counts' label).
    Task {
        verb: &'static str,
        task: String,
        id: Option<&'a RawValue>,
    },
    /// A listen's tasks.
    Listen {
        tasks: Vec<String>,
        id: Option<&'a RawValue>,
    },
    /// A listing of tasks over every partition.
    List { verb: &'static str },
    /// A legacy `notifications/cancelled`: its call's task may be any member's.
    Cancelled,
}

/// The task a resource URI names, if it names one.
fn task_of_uri(uri: &str) -> Option<String> {
    use agentlog_wire::mcp::resource::TaskResource;
    match TaskResource::of(uri)? {
        TaskResource::Task(task) | TaskResource::Artifact(task, _) => Some(task),
    }
}

/// What the MCP request `body` is about, when a forward may be (module docs).
fn about(body: &[u8]) -> Option<About<'_>> {
    let head = serde_json::from_slice::<Head<'_>>(body).ok()?;
    if head.method.is_none() {
        // A client's response to a relayed request names its task in its id.
        let response: ClientAnswer = serde_json::from_slice(body).ok()?;
        let (agent, task, _) = crate::mcp::parse_ask_id(&response.id?)?;
        return Some(About::Task {
            verb: "response",
            task: format!("{agent}:{task}"),
            id: None,
        });
    }
    let method = head.method.as_deref()?;
    let id = head.id;
    if method == "notifications/cancelled" {
        return Some(About::Cancelled);
    }
    if let Some(verb) = ["tasks/list", "resources/list"]
        .into_iter()
        .find(|v| *v == method)
    {
        return Some(About::List { verb });
    }
    let params = head.params?;
    let (verb, task) = match method {
        "tasks/get" => ("tasks/get", params.task_id?),
        "tasks/result" => ("tasks/result", params.task_id?),
        "tasks/cancel" => ("tasks/cancel", params.task_id?),
        "tasks/update" => ("tasks/update", params.task_id?),
        "resources/read" => ("resources/read", task_of_uri(&params.uri?)?),
        "resources/subscribe" => ("resources/subscribe", task_of_uri(&params.uri?)?),
        // An MRTR retry: its state is `<MCP task id>#<round>`.
        "tools/call" => {
            let state = params.request_state?;
            let (task, _) = state.rsplit_once('#')?;
            ("tools/call", task.to_owned())
        }
        "subscriptions/listen" => {
            let asked = params.notifications?;
            let uris = asked.resource_subscriptions.unwrap_or_default();
            let mut tasks = asked.task_ids.unwrap_or_default();
            for uri in &uris {
                // A URI naming no task (a configured resource) is heard where the listen is.
                tasks.push(task_of_uri(uri)?);
            }
            return (!tasks.is_empty()).then_some(About::Listen { tasks, id });
        }
        _ => return None,
    };
    Some(About::Task { verb, task, id })
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
        let Some(about) = about(raw) else {
            return Route::Here;
        };
        let (verb, tasks, id) = match about {
            About::List { verb } => {
                if self.marked(parts, raw) {
                    self.count(verb, "received");
                    return match parts.headers.get(PARTITIONS).map(super::parse_partitions) {
                        Some(Some(partitions)) => Route::Share(partitions),
                        _ => Route::Here,
                    };
                }
                let plan = FanOut::plan(&self.config.owners.current());
                return Route::FanOut(plan.of_verb(verb));
            }
            About::Cancelled => {
                if !self.marked(parts, raw) {
                    self.tell_every_member(parts, raw).await;
                }
                return Route::Here;
            }
            About::Task { verb, task, id } => (verb, vec![task], id),
            About::Listen { tasks, id } => ("subscriptions/listen", tasks, id),
        };
        // Each task's view and partition; a task of no agent served here is answered here.
        let mut located = Vec::with_capacity(tasks.len());
        for task in &tasks {
            let Some((agent, a2a_id)) = task.rsplit_once(':') else {
                return Route::Here;
            };
            let Some(bridge) = mcp.task_bridge(agent) else {
                return Route::Here;
            };
            let p = bridge.view().partition_of(a2a_id);
            located.push((bridge, p));
        }
        let Some((bridge, p)) = located.first().cloned() else {
            return Route::Here;
        };
        let view = bridge.view();
        if self.marked(parts, raw) {
            self.count(verb, "received");
            if located.len() > 1 || view.holds(p) {
                return Route::Here;
            }
            return match view.hold_on_demand(p).await {
                Ok(()) => Route::Here,
                Err(error) => Route::Refused(refusal(id, &error)),
            };
        }
        if located.iter().any(|(bridge, p)| bridge.view().holds(*p)) {
            return Route::Here;
        }
        // A listen goes whole to one member only: one mixing members' tasks is heard here.
        let map = self.config.owners.current();
        let owner = |p: u32| map.owner(p).map(|o| o.index);
        if located.iter().any(|(_, q)| owner(*q) != owner(p)) {
            return Route::Here;
        }
        let to = To {
            method: &parts.method,
            path: super::path_of(parts),
            partitions: None,
        };
        let headers = forwarded_headers(&parts.headers);
        // A legacy `tasks/result` answers when the task settles, as does an MRTR retry.
        let timeout = match verb {
            "tasks/result" | "tools/call" => self.config.blocking_timeout,
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

impl Forwarder {
    /// Send a notification (`parts`, `raw`) to every other member, marked (each acts on the
    /// partitions it holds); one that does not answer misses it, as a notification may.
    /// Awaited on a task of its own: a client that goes away before the 202 does not stop it.
    async fn tell_every_member(&self, parts: &Parts, raw: &[u8]) {
        let forwarder = self.clone();
        let (method, path) = (parts.method.clone(), super::path_of(parts).to_owned());
        let headers = forwarded_headers(&parts.headers);
        let raw = raw.to_vec();
        let telling = async move {
            let to = To {
                method: &method,
                path: &path,
                partitions: None,
            };
            let map = forwarder.config.owners.current();
            let me = map.me();
            let peers: Vec<_> = (0..map.members())
                .filter(|i| *i != me)
                .filter_map(|i| map.member(i))
                .collect();
            let told = peers.iter().map(|peer| {
                let (headers, to, forwarder, raw) = (headers.clone(), &to, &forwarder, &raw);
                async move {
                    let sent = forwarder
                        .send(peer, to, headers, raw, me, forwarder.config.timeout)
                        .await;
                    let outcome = if sent.is_ok() { "owner" } else { "unavailable" };
                    forwarder.count("notifications/cancelled", outcome);
                }
            });
            futures::future::join_all(told).await;
        };
        let _ = tokio::spawn(crate::telemetry::current().bind(telling)).await;
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

    fn task(verb: &'static str, task: &str) -> Option<(&'static str, String)> {
        Some((verb, task.to_owned()))
    }

    fn task_of(body: &[u8]) -> Option<(&'static str, String)> {
        match about(body)? {
            About::Task { verb, task, .. } => Some((verb, task)),
            _ => None,
        }
    }

    #[test]
    fn a_request_names_its_task_by_task_id_resource_uri_state_or_ask() {
        let get =
            br#"{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"mcp.demo:t-1"}}"#;
        match about(get).unwrap() {
            About::Task { verb, task, id } => assert_eq!(
                (verb, task.as_str(), id.map(RawValue::get)),
                ("tasks/get", "mcp.demo:t-1", Some("3"))
            ),
            other => panic!("{other:?}"),
        }
        let read = br#"{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"agentlog://tasks/demo%3At-2/artifacts/a"}}"#;
        assert_eq!(task_of(read), task("resources/read", "demo:t-2"));
        let subscribe = br#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"agentlog://tasks/demo%3At-3"}}"#;
        assert_eq!(task_of(subscribe), task("resources/subscribe", "demo:t-3"));
        let retry = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestState":"mcp.x:t-4#2"}}"#;
        assert_eq!(task_of(retry), task("tools/call", "mcp.x:t-4"));
        let ask = {
            use base64::Engine as _;
            let named = serde_json::json!(["mcp.x", "t-5", "k"]).to_string();
            let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(named);
            format!("agentlog-ask:{encoded}")
        };
        let response = serde_json::to_vec(
            &serde_json::json!({"jsonrpc": "2.0", "id": ask, "result": {"action": "accept"}}),
        )
        .unwrap();
        assert_eq!(task_of(&response), task("response", "mcp.x:t-5"));
        for other in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"docs://x"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe","params":{"uri":"agentlog://tasks/a%3Ab"}}"#,
            b"nope",
        ] {
            assert!(about(other).is_none());
        }
    }

    #[test]
    fn lists_fan_out_and_a_listen_names_all_its_tasks_or_none() {
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}"#;
        assert!(matches!(
            about(list),
            Some(About::List { verb: "tasks/list" })
        ));
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#;
        assert!(matches!(
            about(list),
            Some(About::List {
                verb: "resources/list"
            })
        ));
        let listen = br#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["a:1"],"resourceSubscriptions":["agentlog://tasks/b%3A2"]}}}"#;
        match about(listen).unwrap() {
            About::Listen { tasks, .. } => assert_eq!(tasks, ["a:1", "b:2"]),
            other => panic!("{other:?}"),
        }
        // A configured resource among them: heard where the listen lands.
        let mixed = br#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["a:1"],"resourceSubscriptions":["docs://x"]}}}"#;
        assert!(about(mixed).is_none());
        let cancelled =
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#;
        assert!(matches!(about(cancelled), Some(About::Cancelled)));
    }
}
