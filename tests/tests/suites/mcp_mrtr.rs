//! MRTR on sync `tools/call`s as plain JSON-RPC against `McpBridge::handle`: a tool that asks
//! answers `input_required` with its requests and a `requestState`; the retry with
//! `inputResponses` continues that task on any bridge (a partial one asks again for the rest,
//! under a new state); states that are garbage, tampered, another caller's or another call's
//! are refused and write nothing; a kind the client did not declare is -32021 and cancels the
//! task; a legacy call that asks without an event stream is a tool error and cancels it.

use std::time::Duration;

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, ToolConfig};
use agentlog::worker::{ToolCall, Tools, Worker, tool_fn};
use agentlog_integration::mcp_rpc::{SOON, rpc_as, two_bridges};
use agentlog_wire::TaskState;
use agentlog_wire::a2a::{GetTaskRequest, ListTasksRequest};
use agentlog_wire::mcp::{CallToolResult, Tool};
use serde_json::{Map, Value, json};

const AGENT: &str = "mcp.mrtr";

fn tool(name: &str) -> ToolConfig {
    ToolConfig {
        agent: Some(AGENT.into()),
        ..ToolConfig::new(Tool::new(name, json!({"type": "object"})))
    }
}

fn config() -> McpConfig {
    McpConfig::new(vec![tool("confirm"), tool("other")])
}

/// `confirm` asks for a name and a yes (two elicitations), then answers with what came
/// back; `other` answers at once.
fn tools() -> Tools {
    Tools::new()
        .tool(
            "confirm",
            tool_fn(|call: ToolCall| async move {
                let Some(responses) = call.input_responses else {
                    let requests = json!({
                        "name": {"method": "elicitation/create", "params": {"message": "name?"}},
                        "ok": {"method": "elicitation/create", "params": {"message": "sure?"}},
                    });
                    let requests = requests.as_object().cloned().expect("an object");
                    call.ask("two questions", requests).await?;
                    return Ok(CallToolResult::text("asked"));
                };
                Ok(CallToolResult::structured(Value::Object(responses)))
            }),
        )
        .tool(
            "other",
            tool_fn(|_: ToolCall| async { Ok(CallToolResult::text("other")) }),
        )
}

/// A modern `_meta` declaring `capabilities`.
fn meta(capabilities: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": capabilities})
}

fn elicitation() -> Value {
    meta(json!({"elicitation": {}}))
}

fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .map(Map::keys)
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect()
}

/// Alice's tasks on the tool agent, as `mcp` sees them: (A2A id, state, history length).
async fn tasks(mcp: &McpBridge) -> Vec<(String, TaskState, usize)> {
    let bridge = &mcp.bridges()[AGENT];
    let alice = Caller::principal("alice");
    let page = bridge
        .list_tasks(&alice, ListTasksRequest::default())
        .await
        .expect("list");
    let mut tasks = Vec::new();
    for task in page.tasks {
        let request = GetTaskRequest {
            tenant: None,
            id: task.id.clone(),
            history_length: None,
        };
        let full = bridge.get_task(&alice, request).await.expect("task");
        tasks.push((task.id, full.status.state, full.history.len()));
    }
    tasks
}

async fn wait_state(mcp: &McpBridge, want: TaskState) {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let now = tasks(mcp).await;
        if now.iter().any(|(_, state, _)| *state == want) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never {want}: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn open() -> (McpBridge, McpBridge, Worker) {
    two_bridges(config, AGENT, tools()).await
}

#[tokio::test]
async fn a_sync_call_that_asks_answers_input_required_and_its_retry_continues_the_task() {
    let (a, b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let call = |extra: Value| {
        let mut params = json!({"name": "confirm", "arguments": {}});
        if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
            params.extend(extra.clone());
        }
        params
    };
    let retry = |responses: &Value, state: &str| {
        call(json!({"inputResponses": responses, "requestState": state}))
    };

    let (status, body) = rpc_as(
        &a,
        &alice,
        "tools/call",
        call(json!({})),
        Some(elicitation()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let asked = &body["result"];
    assert_eq!(asked["resultType"], "input_required", "{body}");
    assert_eq!(keys(&asked["inputRequests"]), ["name", "ok"], "{body}");
    assert!(asked.get("content").is_none(), "{body}");
    let first = asked["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    let task_id = first.rsplit_once('#').expect("<task>#<round>").0.to_owned();
    let before = tasks(&a).await;
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0].1, TaskState::InputRequired);

    // Refused, and nothing written: garbage, tampered, a round that never was, another
    // caller's retry, another tool or other arguments, a response that is no result object.
    let name = json!({"name": {"action": "accept", "content": {"v": "Ada"}}});
    let refusals = [
        (alice.clone(), retry(&name, "nope")),
        (alice.clone(), retry(&name, &format!("{first}-TAMPERED"))),
        (alice.clone(), retry(&name, &format!("{task_id}#0"))),
        (alice.clone(), retry(&name, &format!("{task_id}#2"))),
        (alice.clone(), retry(&name, &format!("x{first}"))),
        (Caller::principal("bob"), retry(&name, &first)),
        (
            alice.clone(),
            json!({"name": "other", "inputResponses": name, "requestState": first}),
        ),
        (
            alice.clone(),
            call(json!({"arguments": {"x": 1}, "inputResponses": name, "requestState": first})),
        ),
        (alice.clone(), retry(&json!({"name": 5}), &first)),
    ];
    for (caller, params) in refusals {
        let (status, body) = rpc_as(
            &b,
            &caller,
            "tools/call",
            params.clone(),
            Some(elicitation()),
        )
        .await;
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (400, Some(-32602)),
            "{params}: {body}"
        );
    }
    assert_eq!(tasks(&b).await, before);

    // One of the two keys, on the other bridge: asked again for the other, under a new state.
    let (status, body) = rpc_as(
        &b,
        &alice,
        "tools/call",
        retry(&name, &first),
        Some(elicitation()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "input_required", "{body}");
    assert_eq!(keys(&body["result"]["inputRequests"]), ["ok"], "{body}");
    let second = body["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_owned();
    assert_ne!(second, first);
    assert!(second.starts_with(&task_id), "{second}");

    // The old state with nothing new: the same question again, as the task is now, and
    // nothing written.
    let settled = tasks(&a).await;
    let (_, body) = rpc_as(
        &a,
        &alice,
        "tools/call",
        retry(&name, &first),
        Some(elicitation()),
    )
    .await;
    assert_eq!(keys(&body["result"]["inputRequests"]), ["ok"], "{body}");
    assert_eq!(body["result"]["requestState"], second.as_str(), "{body}");
    assert_eq!(tasks(&a).await, settled);

    // The last key: the tool runs once with both answers, and the call answers like one.
    let ok = json!({"ok": {"action": "accept", "content": {"v": true}}});
    let (status, body) = rpc_as(
        &a,
        &alice,
        "tools/call",
        retry(&ok, &second),
        Some(elicitation()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    assert_eq!(
        body["result"]["structuredContent"],
        json!({"name": {"action": "accept", "content": {"v": "Ada"}},
               "ok": {"action": "accept", "content": {"v": true}}}),
        "{body}"
    );
    let done = tasks(&b).await;
    assert_eq!(
        (done.len(), done[0].1),
        (1, TaskState::Completed),
        "{done:?}"
    );
}

#[tokio::test]
async fn a_call_asking_for_a_kind_its_client_did_not_declare_is_refused_and_cancelled() {
    let (a, _b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let (status, body) = rpc_as(
        &a,
        &alice,
        "tools/call",
        json!({"name": "confirm", "arguments": {}}),
        Some(meta(json!({"sampling": {}}))),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32021)),
        "{body}"
    );
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}}),
        "{body}"
    );
    wait_state(&a, TaskState::Canceled).await;
}

#[tokio::test]
async fn a_legacy_call_that_asks_is_a_tool_error_and_cancelled() {
    let (a, _b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let (status, body) = rpc_as(
        &a,
        &alice,
        "tools/call",
        json!({"name": "confirm", "arguments": {}}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], true, "{body}");
    assert!(body["result"].get("requestState").is_none(), "{body}");
    wait_state(&a, TaskState::Canceled).await;
}
