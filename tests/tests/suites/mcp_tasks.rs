//! MCP tasks as plain JSON-RPC against `McpBridge::handle`: every task method and its errors
//! in both eras, a task created on one bridge and read, updated and cancelled on another, a
//! restart mid-task, and the hop guard across protocols (A2A → MCP → the same A2A agent).

use std::time::Duration;

use agentlog::log::Log;
use agentlog::mcp::{McpBridge, McpConfig, McpReply, McpRequest, TaskSupport, ToolConfig};
use agentlog::worker::{ToolCall, Tools, Worker, WorkerConfig, tool_fn};
use agentlog::{Caller, ErrorKind};
use agentlog_integration::backends::Dir;
use agentlog_integration::bridge_suite::Backend;
use agentlog_integration::mcp_rpc::{create, modern, rpc, rpc_as, wait_status};
use agentlog_wire::mcp::{CallToolResult, Tool};
use serde_json::{Value, json};

fn tool(name: &str, support: TaskSupport) -> ToolConfig {
    ToolConfig {
        task_support: support,
        agent: Some("mcp.tasks".into()),
        ..ToolConfig::new(Tool::new(name, json!({"type": "object"})))
    }
}

fn config() -> McpConfig {
    McpConfig::new(vec![
        tool("quick", TaskSupport::Optional),
        tool("oops", TaskSupport::Optional),
        tool("slow", TaskSupport::Required),
        tool("ask", TaskSupport::Optional),
    ])
}

/// `slow` waits until cancelled; `ask` asks for input, then answers with what came back.
fn tools() -> Tools {
    Tools::new()
        .tool(
            "quick",
            tool_fn(|_: ToolCall| async { Ok(CallToolResult::text("quick done")) }),
        )
        .tool(
            "oops",
            tool_fn(|_: ToolCall| async { Ok(CallToolResult::error("bad input")) }),
        )
        .tool(
            "slow",
            tool_fn(|call: ToolCall| async move {
                call.task.cancellation().cancelled().await;
                Ok(CallToolResult::text("cancelled"))
            }),
        )
        .tool(
            "ask",
            tool_fn(|call: ToolCall| async move {
                match call.input_responses {
                    None => {
                        call.task.input_required("which colour?").await?;
                        Ok(CallToolResult::text("asked"))
                    }
                    Some(responses) => Ok(CallToolResult::text(format!(
                        "got {}",
                        Value::Object(responses)
                    ))),
                }
            }),
        )
}

async fn worker(log: &Log, lease: Duration) -> Worker {
    let config = WorkerConfig::new("mcp.tasks").lease(lease);
    Worker::start(log.clone(), config, tools())
        .await
        .expect("worker")
}

#[tokio::test]
async fn modern_tasks_get_update_cancel_and_their_errors() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let mcp = McpBridge::open(log.clone(), config()).await.expect("mcp");
    let _worker = worker(&log, Duration::from_secs(10)).await;

    // A completed task's tasks/get carries the exact result, also with isError.
    let quick = create(&mcp, "quick").await;
    let done = wait_status(&mcp, &quick, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "quick done");
    assert_eq!(done["resultType"], "complete");
    let oops = create(&mcp, "oops").await;
    let done = wait_status(&mcp, &oops, "completed").await;
    assert_eq!(done["result"]["isError"], true);

    // Without the extension declared: a task-only tool and every tasks/* method are -32021.
    let (status, body) = rpc(
        &mcp,
        "tools/call",
        json!({"name": "slow"}),
        Some(modern(false)),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32021)),
        "{body}"
    );
    assert!(body["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
    let (status, body) = rpc(
        &mcp,
        "tasks/get",
        json!({"taskId": quick}),
        Some(modern(false)),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32021))
    );
    // An optional tool without the extension answers on the request.
    let (_, body) = rpc(
        &mcp,
        "tools/call",
        json!({"name": "quick"}),
        Some(modern(false)),
    )
    .await;
    assert_eq!(body["result"]["content"][0]["text"], "quick done");

    // Unknown ids, and another caller's task, are -32602 alike.
    for id in ["nope", "mcp.tasks:0000", "elsewhere:x"] {
        let (status, body) =
            rpc(&mcp, "tasks/get", json!({"taskId": id}), Some(modern(true))).await;
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (400, Some(-32602)),
            "{id}"
        );
    }
    let (_, body) = rpc_as(
        &mcp,
        &Caller::principal("mallory"),
        "tasks/get",
        json!({"taskId": quick}),
        Some(modern(true)),
    )
    .await;
    assert_eq!(body["error"]["code"], -32602);
    let (_, body) = rpc_as(
        &mcp,
        &Caller::principal("mallory"),
        "tasks/cancel",
        json!({"taskId": quick}),
        Some(modern(true)),
    )
    .await;
    assert_eq!(body["error"]["code"], -32602);
    let (_, body) = rpc(&mcp, "tasks/get", json!({}), Some(modern(true))).await;
    assert_eq!(body["error"]["code"], -32602);
    // The legacy-only methods are unknown in the modern era.
    let (status, _) = rpc(
        &mcp,
        "tasks/result",
        json!({"taskId": quick}),
        Some(modern(true)),
    )
    .await;
    assert_eq!(status, 404);

    // Cancel: an ack, the task settles cancelled; a finished one acks too.
    let slow = create(&mcp, "slow").await;
    wait_status(&mcp, &slow, "working").await;
    let (_, body) = rpc(
        &mcp,
        "tasks/cancel",
        json!({"taskId": slow}),
        Some(modern(true)),
    )
    .await;
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    wait_status(&mcp, &slow, "cancelled").await;
    let (_, body) = rpc(
        &mcp,
        "tasks/cancel",
        json!({"taskId": quick}),
        Some(modern(true)),
    )
    .await;
    assert!(body.get("result").is_some(), "{body}");

    // Update: an input-required task resumes with the responses.
    let ask = create(&mcp, "ask").await;
    let waiting = wait_status(&mcp, &ask, "input_required").await;
    assert_eq!(waiting["statusMessage"], "which colour?");
    let (_, body) = rpc(&mcp, "tasks/update", json!({"taskId": ask, "inputResponses": {"colour": {"action": "accept", "content": {"c": "red"}}}}), Some(modern(true))).await;
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    let done = wait_status(&mcp, &ask, "completed").await;
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("red"),
        "{done}"
    );
    let (_, body) = rpc(
        &mcp,
        "tasks/update",
        json!({"taskId": ask}),
        Some(modern(true)),
    )
    .await;
    assert_eq!(body["error"]["code"], -32602);
}

#[tokio::test]
async fn legacy_tasks_result_list_and_cancel() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let mcp = McpBridge::open(log.clone(), config()).await.expect("mcp");
    let _worker = worker(&log, Duration::from_secs(10)).await;
    let (_, body) = rpc(
        &mcp,
        "tools/call",
        json!({"name": "quick", "task": {"ttl": 60000}}),
        None,
    )
    .await;
    let task = &body["result"]["task"];
    assert_eq!(task["status"], "working", "{body}");
    assert!(task.get("pollInterval").is_some() && task.get("ttlMs").is_none());
    let id = task["taskId"].as_str().expect("id").to_owned();
    // tasks/result waits for the end, then answers the call's result.
    let (_, body) = rpc(&mcp, "tasks/result", json!({"taskId": id}), None).await;
    assert_eq!(body["result"]["content"][0]["text"], "quick done");
    assert_eq!(
        body["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    let (_, body) = rpc(&mcp, "tasks/get", json!({"taskId": id}), None).await;
    assert_eq!(body["result"]["status"], "completed");
    // Legacy reads a tool error as failed.
    let (_, body) = rpc(
        &mcp,
        "tools/call",
        json!({"name": "oops", "task": {}}),
        None,
    )
    .await;
    let oops = body["result"]["task"]["taskId"]
        .as_str()
        .expect("id")
        .to_owned();
    rpc(&mcp, "tasks/result", json!({"taskId": oops}), None).await;
    let (_, body) = rpc(&mcp, "tasks/get", json!({"taskId": oops}), None).await;
    assert_eq!(body["result"]["status"], "failed");
    // tasks/list: the caller's own tasks only.
    let (_, body) = rpc(&mcp, "tasks/list", json!({}), None).await;
    assert_eq!(
        body["result"]["tasks"].as_array().map(Vec::len),
        Some(2),
        "{body}"
    );
    let (_, body) = rpc_as(
        &mcp,
        &Caller::principal("bob"),
        "tasks/list",
        json!({}),
        None,
    )
    .await;
    assert_eq!(body["result"]["tasks"], json!([]));
    // Cancel: the task, cancelled; a finished one is -32602 in this era.
    let (_, body) = rpc(
        &mcp,
        "tools/call",
        json!({"name": "slow", "task": {}}),
        None,
    )
    .await;
    let slow = body["result"]["task"]["taskId"]
        .as_str()
        .expect("id")
        .to_owned();
    let (_, body) = rpc(&mcp, "tasks/cancel", json!({"taskId": slow}), None).await;
    assert_eq!(body["result"]["status"], "cancelled", "{body}");
    let (status, body) = rpc(&mcp, "tasks/cancel", json!({"taskId": id}), None).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (200, Some(-32602))
    );
    // A task-only tool needs `task`; a forbidden one refuses it; tasks/update is modern only.
    let (_, body) = rpc(&mcp, "tools/call", json!({"name": "slow"}), None).await;
    assert_eq!(body["error"]["code"], -32602);
    let (_, body) = rpc(
        &mcp,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {}}),
        None,
    )
    .await;
    assert_eq!(body["error"]["code"], -32601);
}

#[tokio::test]
async fn a_task_created_on_one_bridge_is_read_updated_and_cancelled_on_another() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let a = McpBridge::open(log.clone(), config()).await.expect("a");
    let b = McpBridge::open(log.clone(), config()).await.expect("b");
    let _worker = worker(&log, Duration::from_secs(10)).await;
    let ask = create(&a, "ask").await;
    // Readable on B at once: the answer came after the command was on the log.
    let (_, body) = rpc(&b, "tasks/get", json!({"taskId": ask}), Some(modern(true))).await;
    assert!(body["result"]["status"].is_string(), "{body}");
    wait_status(&b, &ask, "input_required").await;
    rpc(
        &b,
        "tasks/update",
        json!({"taskId": ask, "inputResponses": {"k": {"action": "accept"}}}),
        Some(modern(true)),
    )
    .await;
    wait_status(&a, &ask, "completed").await;
    let slow = create(&a, "slow").await;
    let (_, body) = rpc(
        &b,
        "tasks/cancel",
        json!({"taskId": slow}),
        Some(modern(true)),
    )
    .await;
    assert!(body.get("result").is_some(), "{body}");
    wait_status(&a, &slow, "cancelled").await;
}

#[tokio::test]
async fn a_task_survives_a_restart_of_its_bridge() {
    let dir = Dir::new();
    let log = dir.log().await;
    let mcp = McpBridge::open(log.clone(), config()).await.expect("mcp");
    let _worker = worker(&log, Duration::from_secs(10)).await;
    let ask = create(&mcp, "ask").await;
    wait_status(&mcp, &ask, "input_required").await;
    // The bridge goes away mid-task; a new one rebuilds its view from the file log.
    drop(mcp);
    let mcp = McpBridge::open(log.clone(), config())
        .await
        .expect("mcp again");
    let (_, body) = rpc(
        &mcp,
        "tasks/get",
        json!({"taskId": ask}),
        Some(modern(true)),
    )
    .await;
    assert_eq!(body["result"]["status"], "input_required", "{body}");
    rpc(
        &mcp,
        "tasks/update",
        json!({"taskId": ask, "inputResponses": {"k": {"action": "accept"}}}),
        Some(modern(true)),
    )
    .await;
    let done = wait_status(&mcp, &ask, "completed").await;
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("got"),
        "{done}"
    );
}

#[tokio::test]
async fn the_hop_guard_refuses_a2a_to_mcp_to_the_same_a2a_agent() {
    use agentlog::worker::{TaskContext, handler_fn};
    use agentlog_wire::a2a::{SendMessageRequest, SendMessageResponse};
    use agentlog_wire::{RecordBody, TaskState};

    let log = agentlog::log::open("memory://").await.expect("log");
    let agent = agentlog::Bridge::open(log.clone(), agentlog::BridgeConfig::new("planner"))
        .await
        .expect("a2a");
    let mcp = McpBridge::open(
        log.clone(),
        McpConfig::new(vec![tool("lookup", TaskSupport::Forbidden)]),
    )
    .await
    .expect("mcp");
    // The planner's handler calls the lookup tool, carrying its path in _meta.
    let tool_side = mcp.clone();
    let _planner = Worker::start(log.clone(), WorkerConfig::new("planner"), handler_fn(move |ctx: TaskContext| {
        let mcp = tool_side.clone();
        async move {
            let params = json!({"name": "lookup", "arguments": {}, "_meta": {"dev.agentlog/hops": ctx.hops()}});
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
            let reply = mcp.handle(McpRequest { body: body.as_bytes(), caller: ctx.caller().clone(), headers: None, accepts_stream: false }).await;
            let McpReply::Json { body, .. } = reply else { return Err("no JSON".into()) };
            let body: Value = serde_json::from_slice(&body)?;
            ctx.complete(Some(body["result"]["content"][0]["text"].as_str().unwrap_or("?"))).await?;
            Ok(())
        }
    })).await.expect("planner");
    // The tool calls the planner back, stamping its own path: the loop.
    let planner = agent.clone();
    let tools = Tools::new().tool(
        "lookup",
        tool_fn(move |call: ToolCall| {
            let planner = planner.clone();
            async move {
                let mut request = SendMessageRequest {
                    tenant: None,
                    message: agentlog_wire::a2a::Message::user_text(uuid_like(), "again"),
                    configuration: None,
                    metadata: None,
                };
                call.task.stamp(&mut request);
                match planner.send_message(call.task.caller(), request).await {
                    Err(e) if e.kind() == ErrorKind::LoopDetected => {
                        Ok(CallToolResult::error(format!("refused: {}", e.message())))
                    }
                    Err(e) => Err(e.into()),
                    Ok(SendMessageResponse::Task(_) | SendMessageResponse::Message(_)) => {
                        Ok(CallToolResult::text("looped"))
                    }
                }
            }
        }),
    );
    let _tool_worker = Worker::start(log.clone(), WorkerConfig::new("mcp.tasks"), tools)
        .await
        .expect("tool worker");

    let request = SendMessageRequest {
        tenant: None,
        message: agentlog_wire::a2a::Message::user_text("m-1", "plan"),
        configuration: None,
        metadata: None,
    };
    let SendMessageResponse::Task(task) = agent
        .send_message(&Caller::anonymous(), request)
        .await
        .expect("send")
    else {
        panic!("a message answered");
    };
    assert_eq!(task.status.state, TaskState::Completed);
    let text = task
        .status
        .message
        .and_then(|m| m.parts.first().and_then(|p| p.as_text().map(str::to_owned)))
        .unwrap_or_default();
    assert!(
        text.contains("refused") && text.contains("planner → mcp.tasks → planner"),
        "{text}"
    );
    // The refused call wrote nothing: the planner's log holds one command.
    let topic = agentlog::AgentTopics::of("planner").events;
    let mut commands = 0;
    for partition in 0..log.partitions(&topic).await.expect("partitions") {
        for stored in log.read(&topic, partition, 0, 1000).await.expect("read") {
            let record = agentlog_wire::Record::decode(&stored.payload).expect("decode");
            commands += usize::from(matches!(record.body, RecordBody::Command { .. }));
        }
    }
    assert_eq!(commands, 1);
}

fn uuid_like() -> String {
    format!("m-{}", rand::random::<u64>())
}
