//! A tool asking for input over the Tasks extension: `tasks/update` answers the keys of its
//! `inputRequests`, a partial answer leaves the task `input_required` with the rest (the
//! extension's rule), unknown and already-answered keys are ignored and write nothing, and
//! the tool runs again only once every key has its response, on any bridge.

use std::time::Duration;

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, TaskSupport, ToolConfig};
use agentlog::worker::{ToolCall, Tools, tool_fn};
use agentlog_integration::mcp_rpc::{create, modern, rpc, two_bridges, wait_status};
use agentlog_wire::a2a::GetTaskRequest;
use agentlog_wire::mcp::{CallToolResult, Tool};
use serde_json::{Map, Value, json};

const AGENT: &str = "mcp.input";

fn config() -> McpConfig {
    McpConfig::new(vec![ToolConfig {
        task_support: TaskSupport::Optional,
        agent: Some(AGENT.into()),
        ..ToolConfig::new(Tool::new("confirm", json!({"type": "object"})))
    }])
}

/// `confirm` asks for two inputs, then answers with what came back and how many turns ran
/// the tool itself.
fn tools() -> Tools {
    Tools::new().tool(
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
}

/// The A2A history length of an MCP task: what the log holds for it.
async fn history_len(mcp: &McpBridge, task_id: &str) -> usize {
    let (_, id) = task_id.rsplit_once(':').expect("agent:id");
    let request = GetTaskRequest {
        tenant: None,
        id: id.to_owned(),
        history_length: None,
    };
    mcp.bridges()[AGENT]
        .get_task(&Caller::principal("alice"), request)
        .await
        .expect("task")
        .history
        .len()
}

async fn update(mcp: &McpBridge, task_id: &str, responses: Value) {
    let (status, body) = rpc(
        mcp,
        "tasks/update",
        json!({"taskId": task_id, "inputResponses": responses}),
        Some(modern(true)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
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

#[tokio::test]
async fn a_partial_update_leaves_the_task_input_required_until_every_key_is_answered() {
    let (a, b, _worker) = two_bridges(config, AGENT, tools()).await;

    let task = create(&a, "confirm").await;
    let asked = wait_status(&a, &task, "input_required").await;
    assert_eq!(asked["statusMessage"], "two questions", "{asked}");
    assert_eq!(keys(&asked["inputRequests"]), ["name", "ok"], "{asked}");

    // One key (and one nobody asked for): the task waits for the other, on every bridge,
    // and the tool asks again rather than running (the A2A task went back to the worker).
    let before = history_len(&a, &task).await;
    update(
        &a,
        &task,
        json!({"name": {"action": "accept", "content": {"v": "Ada"}}, "nope": {}}),
    )
    .await;
    for mcp in [&a, &b] {
        let (_, body) = rpc(
            mcp,
            "tasks/get",
            json!({"taskId": task}),
            Some(modern(true)),
        )
        .await;
        let got = &body["result"];
        assert_eq!(got["status"], "input_required", "{body}");
        assert_eq!(keys(&got["inputRequests"]), ["ok"], "{body}");
        assert_eq!(got["statusMessage"], "two questions", "{body}");
    }
    // The worker's turn asks again: the continue and the new ask are recorded.
    let deadline = tokio::time::Instant::now() + agentlog_integration::mcp_rpc::SOON;
    while history_len(&a, &task).await < before + 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the worker never asked again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let asked_again = wait_status(&b, &task, "input_required").await;
    assert_eq!(keys(&asked_again["inputRequests"]), ["ok"], "{asked_again}");

    // Only keys already answered, or unknown: an ack, and nothing written.
    let settled = history_len(&a, &task).await;
    update(
        &b,
        &task,
        json!({"name": {"action": "decline"}, "other": 1}),
    )
    .await;
    assert_eq!(history_len(&a, &task).await, settled);

    // The last key, on the other bridge: the tool runs once with every first answer.
    update(
        &b,
        &task,
        json!({"ok": {"action": "accept", "content": {"v": true}}}),
    )
    .await;
    let done = wait_status(&a, &task, "completed").await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({
            "name": {"action": "accept", "content": {"v": "Ada"}},
            "ok": {"action": "accept", "content": {"v": true}},
        }),
        "{done}"
    );
}
