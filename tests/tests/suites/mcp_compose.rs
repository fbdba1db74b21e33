//! MRTR, then a task (`ToolConfig::input_before_task`) as plain JSON-RPC against
//! `McpBridge::handle`: with the Tasks extension declared, the first round of such a tool is
//! a sync call (its ask answers `input_required`, no task id), and the retry answering it
//! answers a `CreateTaskResult` for that same A2A task, on any bridge, which `tasks/get` then
//! shows completing; a first round that does not ask answers its result; retries are refused
//! as other MRTR retries are; clients without the extension keep the tool's task support.

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, TaskSupport, ToolConfig};
use agentlog::worker::{ToolCall, Tools, Worker, tool_fn};
use agentlog_integration::mcp_rpc::{rpc_as, two_bridges, wait_status};
use agentlog_wire::TaskState;
use agentlog_wire::a2a::{GetTaskRequest, ListTasksRequest, Task};
use agentlog_wire::mcp::input::deadline_of;
use agentlog_wire::mcp::{CallToolResult, Tool};
use serde_json::{Map, Value, json};

const AGENT: &str = "mcp.compose";

fn tool(name: &str, support: TaskSupport) -> ToolConfig {
    ToolConfig {
        agent: Some(AGENT.into()),
        task_support: support,
        input_before_task: true,
        ..ToolConfig::new(Tool::new(name, json!({"type": "object"})))
    }
}

fn config() -> McpConfig {
    McpConfig::new(vec![
        tool("greet", TaskSupport::Required),
        tool("twice", TaskSupport::Required),
        tool("quick", TaskSupport::Required),
        tool("maybe", TaskSupport::Optional),
    ])
}

fn elicit(key: &str) -> Map<String, Value> {
    let mut requests = Map::new();
    requests.insert(
        key.to_owned(),
        json!({"method": "elicitation/create", "params": {"message": format!("{key}?")}}),
    );
    requests
}

fn name_of(call: &ToolCall, key: &str) -> Option<String> {
    let responses = call.input_responses.as_ref()?;
    let name = responses.get(key)?.pointer("/content/name")?.as_str()?;
    Some(name.to_owned())
}

/// `greet` and `maybe` ask `user_name`, then greet; `twice` asks `first`, then `second`,
/// then answers the second; `quick` answers at once.
fn tools() -> Tools {
    let greet = || {
        tool_fn(|call: ToolCall| async move {
            match name_of(&call, "user_name") {
                Some(name) => Ok(CallToolResult::text(format!("Hello, {name}!"))),
                None => {
                    call.ask("your name?", elicit("user_name")).await?;
                    Ok(CallToolResult::text("asked"))
                }
            }
        })
    };
    Tools::new()
        .tool("greet", greet())
        .tool("maybe", greet())
        .tool(
            "twice",
            tool_fn(|call: ToolCall| async move {
                let responses = call.input_responses.clone().unwrap_or_default();
                // Each round's responses answer that round's ask.
                if let Some(second) = name_of(&call, "second") {
                    return Ok(CallToolResult::text(format!("second: {second}")));
                }
                let key = if responses.contains_key("first") {
                    "second"
                } else {
                    "first"
                };
                call.ask("one more", elicit(key)).await?;
                Ok(CallToolResult::text("asked"))
            }),
        )
        .tool(
            "quick",
            tool_fn(|_: ToolCall| async { Ok(CallToolResult::text("quick")) }),
        )
}

/// A modern `_meta` declaring elicitation, and the Tasks extension when `tasks`.
fn meta(tasks: bool) -> Value {
    let mut capabilities = json!({"elicitation": {}});
    if tasks {
        capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": capabilities})
}

fn accept(key: &str, name: &str) -> Value {
    json!({key: {"action": "accept", "content": {"name": name}}})
}

fn retry(tool: &str, responses: &Value, state: &str) -> Value {
    json!({"name": tool, "arguments": {}, "inputResponses": responses, "requestState": state})
}

/// Alice's A2A tasks on the tool agent, as `mcp` sees them.
async fn tasks(mcp: &McpBridge) -> Vec<Task> {
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
        tasks.push(bridge.get_task(&alice, request).await.expect("task"));
    }
    tasks
}

/// (A2A id, state, history length) of each of Alice's tasks.
async fn summary(mcp: &McpBridge) -> Vec<(String, TaskState, usize)> {
    let tasks = tasks(mcp).await;
    tasks
        .into_iter()
        .map(|t| (t.id, t.status.state, t.history.len()))
        .collect()
}

async fn open() -> (McpBridge, McpBridge, Worker) {
    two_bridges(config, AGENT, tools()).await
}

/// The first round of `tool`: an `input_required` answer with no task id; its requestState.
async fn first_round(mcp: &McpBridge, tool: &str) -> String {
    let alice = Caller::principal("alice");
    let (status, body) = rpc_as(
        mcp,
        &alice,
        "tools/call",
        json!({"name": tool, "arguments": {}}),
        Some(meta(true)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let asked = &body["result"];
    assert_eq!(asked["resultType"], "input_required", "{body}");
    assert!(asked.get("taskId").is_none(), "{body}");
    assert!(asked["inputRequests"].is_object(), "{body}");
    asked["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned()
}

#[tokio::test]
async fn the_first_round_answers_input_required_and_the_retry_answering_it_is_the_task() {
    let (a, b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let state = first_round(&a, "greet").await;
    let mcp_task_id = state.rsplit_once('#').expect("<task>#<round>").0.to_owned();
    let before = summary(&a).await;
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0].1, TaskState::InputRequired);
    assert_eq!(mcp_task_id, format!("{AGENT}:{}", before[0].0));

    // Refused as other retries are, and nothing written: garbage, tampered, a round that
    // never was, another caller's, another tool's, other arguments.
    let ada = accept("user_name", "Ada");
    let other_arguments = json!({"name": "greet", "arguments": {"x": 1},
                                 "inputResponses": ada, "requestState": state});
    let refusals = [
        (alice.clone(), retry("greet", &ada, "nope")),
        (
            alice.clone(),
            retry("greet", &ada, &format!("{state}-TAMPERED")),
        ),
        (
            alice.clone(),
            retry("greet", &ada, &format!("{mcp_task_id}#2")),
        ),
        (Caller::principal("bob"), retry("greet", &ada, &state)),
        (alice.clone(), retry("quick", &ada, &state)),
        (alice.clone(), other_arguments),
    ];
    for (caller, params) in refusals {
        let (status, body) =
            rpc_as(&b, &caller, "tools/call", params.clone(), Some(meta(true))).await;
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (400, Some(-32602)),
            "{params}: {body}"
        );
    }
    assert_eq!(summary(&b).await, before);

    // The retry on the other bridge: the same A2A task, as an MCP task.
    let (status, body) = rpc_as(
        &b,
        &alice,
        "tools/call",
        retry("greet", &ada, &state),
        Some(meta(true)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let task = &body["result"];
    assert_eq!(task["resultType"], "task", "{body}");
    assert_eq!(task["taskId"], mcp_task_id.as_str(), "{body}");
    assert_eq!(task["status"], "working", "{body}");
    assert!(task.get("requestState").is_none(), "{body}");
    assert!(task.get("inputRequests").is_none(), "{body}");

    let done = wait_status(&a, &mcp_task_id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Ada!",
        "{done}"
    );
    let after = summary(&a).await;
    assert_eq!(after.len(), 1, "one A2A task throughout: {after:?}");

    // The old state again, now that the task is done: answered as the task is, nothing new.
    let (status, body) = rpc_as(
        &a,
        &alice,
        "tools/call",
        retry("greet", &ada, &state),
        Some(meta(true)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["content"][0]["text"], "Hello, Ada!",
        "{body}"
    );
    assert_eq!(summary(&a).await, after);
}

#[tokio::test]
async fn once_a_task_its_next_ask_waits_for_tasks_update_with_no_deadline() {
    let (a, b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let state = first_round(&a, "twice").await;
    let asked = tasks(&a).await;
    let first_ask = asked[0].status.message.as_ref().expect("the ask");
    assert!(
        deadline_of(first_ask).is_some(),
        "a sync round's ask expires"
    );

    let (_, body) = rpc_as(
        &b,
        &alice,
        "tools/call",
        retry("twice", &accept("first", "Ada"), &state),
        Some(meta(true)),
    )
    .await;
    assert_eq!(body["result"]["resultType"], "task", "{body}");
    let task_id = body["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();

    let waiting = wait_status(&a, &task_id, "input_required").await;
    let wanted: Vec<&String> = waiting["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .collect();
    assert_eq!(wanted, ["second"], "{waiting}");
    let second_ask = tasks(&a).await[0].status.message.clone().expect("the ask");
    assert_eq!(deadline_of(&second_ask), None, "a task's ask waits");

    let (status, body) = rpc_as(
        &b,
        &alice,
        "tasks/update",
        json!({"taskId": task_id, "inputResponses": accept("second", "Lovelace")}),
        Some(meta(true)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let done = wait_status(&b, &task_id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "second: Lovelace",
        "{done}"
    );
}

#[tokio::test]
async fn a_first_round_that_does_not_ask_answers_its_result() {
    let (a, _b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let (status, body) = rpc_as(
        &a,
        &alice,
        "tools/call",
        json!({"name": "quick", "arguments": {}}),
        Some(meta(true)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "quick", "{body}");
    assert!(body["result"].get("taskId").is_none(), "{body}");
}

#[tokio::test]
async fn without_the_extension_the_tool_keeps_its_task_support() {
    let (a, b, _worker) = open().await;
    let alice = Caller::principal("alice");
    // Required: -32021 naming the extension, nothing written.
    let (status, body) = rpc_as(
        &a,
        &alice,
        "tools/call",
        json!({"name": "greet", "arguments": {}}),
        Some(meta(false)),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32021)),
        "{body}"
    );
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}}),
        "{body}"
    );
    assert!(summary(&a).await.is_empty());

    // Optional: plain MRTR, the retry answered on the request.
    let (_, body) = rpc_as(
        &a,
        &alice,
        "tools/call",
        json!({"name": "maybe", "arguments": {}}),
        Some(meta(false)),
    )
    .await;
    assert_eq!(body["result"]["resultType"], "input_required", "{body}");
    let state = body["result"]["requestState"].as_str().expect("state");
    let (status, body) = rpc_as(
        &b,
        &alice,
        "tools/call",
        retry("maybe", &accept("user_name", "Ada"), state),
        Some(meta(false)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    assert_eq!(
        body["result"]["content"][0]["text"], "Hello, Ada!",
        "{body}"
    );
}
