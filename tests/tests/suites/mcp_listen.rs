//! `subscriptions/listen` with the Tasks extension's `notifications/tasks`, as plain JSON-RPC
//! against `McpBridge::handle`: the acknowledgement names the caller's own tasks only, each
//! task's whole state comes on subscribing and on every change (input asked, answered,
//! completed; cancelled) through another bridge than the one the tasks are driven on, every
//! frame carries the subscription id, and the stream ends with the listen result once every
//! task followed has ended. Asking without the extension is -32021.

use agentlog::Caller;
use agentlog::mcp::{
    McpBridge, McpConfig, McpReply, McpRequest, McpStream, TaskSupport, ToolConfig,
};
use agentlog::worker::{ToolCall, Tools, tool_fn};
use agentlog_integration::mcp_rpc::{SOON, create, modern, rpc, rpc_as, two_bridges};
use agentlog_wire::mcp::{CallToolResult, Tool};
use futures::StreamExt as _;
use serde_json::{Value, json};

const AGENT: &str = "mcp.listen";

fn tool(name: &str) -> ToolConfig {
    ToolConfig {
        task_support: TaskSupport::Optional,
        agent: Some(AGENT.into()),
        ..ToolConfig::new(Tool::new(name, json!({"type": "object"})))
    }
}

/// `ask` asks one question, then answers with the response; `slow` waits to be cancelled.
fn tools() -> Tools {
    Tools::new()
        .tool(
            "ask",
            tool_fn(|call: ToolCall| async move {
                let Some(responses) = call.input_responses else {
                    let requests = json!({"colour": {"method": "elicitation/create",
                        "params": {"message": "colour?"}}});
                    let requests = requests.as_object().cloned().expect("an object");
                    call.ask("which colour?", requests).await?;
                    return Ok(CallToolResult::text("asked"));
                };
                Ok(CallToolResult::structured(Value::Object(responses)))
            }),
        )
        .tool(
            "slow",
            tool_fn(|call: ToolCall| async move {
                call.task.cancellation().cancelled().await;
                Ok(CallToolResult::text("cancelled"))
            }),
        )
}

fn listen_body(task_ids: Value, extension: bool) -> String {
    json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": {
        "notifications": {"taskIds": task_ids}, "_meta": modern(extension)}})
    .to_string()
}

/// The next frame of a listen stream, in time.
async fn next(stream: &mut McpStream) -> Value {
    let frame = tokio::time::timeout(SOON, stream.next()).await;
    let frame = frame.expect("a frame in time").expect("a frame");
    serde_json::from_slice(&frame).expect("json")
}

async fn listen(mcp: &McpBridge, body: &str) -> McpReply {
    mcp.handle(McpRequest {
        body: body.as_bytes(),
        caller: Caller::principal("alice"),
        headers: None,
        accepts_stream: true,
    })
    .await
}

#[tokio::test]
async fn a_listen_stream_carries_each_asked_task_as_it_changes_and_ends_with_them() {
    let config = || McpConfig::new(vec![tool("ask"), tool("slow")]);
    let (a, b, _worker) = two_bridges(config, AGENT, tools()).await;

    let asking = create(&a, "ask").await;
    let slow = create(&a, "slow").await;
    let (_, body) = rpc_as(
        &a,
        &Caller::principal("bob"),
        "tools/call",
        json!({"name": "slow"}),
        Some(modern(true)),
    )
    .await;
    let bobs = body["result"]["taskId"]
        .as_str()
        .expect("bob's task")
        .to_owned();

    // Without the extension: -32021, before anything is followed.
    let McpReply::Json { status, body } = listen(&b, &listen_body(json!([asking]), false)).await
    else {
        panic!("not json");
    };
    let body: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32021)),
        "{body}"
    );

    let asked = json!([asking, slow, bobs, "mcp.listen:nope", "garbage", asking]);
    let McpReply::Stream(mut stream) = listen(&b, &listen_body(asked, true)).await else {
        panic!("not a stream");
    };
    let ack = next(&mut stream).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([asking, slow]),
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );

    // Each task's state, until `ask` waits for input and `slow` works.
    let mut waiting = false;
    let mut working = false;
    while !(waiting && working) {
        let frame = next(&mut stream).await;
        assert_eq!(frame["method"], "notifications/tasks", "{frame}");
        assert_eq!(
            frame["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "sub-1"
        );
        let task = &frame["params"];
        if task["taskId"] == asking.as_str() && task["status"] == "input_required" {
            assert!(task["inputRequests"]["colour"].is_object(), "{frame}");
            waiting = true;
        }
        working |= task["taskId"] == slow.as_str() && task["status"] == "working";
        assert_ne!(task["taskId"], bobs.as_str(), "{frame}");
    }

    // Answered and cancelled on the other bridge: both end, then so does the stream.
    let (_, body) = rpc(
        &a,
        "tasks/update",
        json!({"taskId": asking, "inputResponses": {"colour": {"action": "accept", "content": {"c": "teal"}}}}),
        Some(modern(true)),
    )
    .await;
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    let (_, body) = rpc(
        &a,
        "tasks/cancel",
        json!({"taskId": slow}),
        Some(modern(true)),
    )
    .await;
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    let (mut completed, mut cancelled) = (false, false);
    loop {
        let frame = next(&mut stream).await;
        if frame.get("id").is_some() {
            assert_eq!(frame["id"], "sub-1", "{frame}");
            assert_eq!(frame["result"]["resultType"], "complete", "{frame}");
            assert_eq!(
                frame["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                "sub-1"
            );
            break;
        }
        let task = &frame["params"];
        if task["status"] == "completed" {
            assert_eq!(task["taskId"], asking.as_str(), "{frame}");
            assert_eq!(
                task["result"]["structuredContent"]["colour"]["content"]["c"], "teal",
                "{frame}"
            );
            completed = true;
        }
        if task["status"] == "cancelled" {
            assert_eq!(task["taskId"], slow.as_str(), "{frame}");
            cancelled = true;
        }
    }
    assert!(completed && cancelled);
    assert!(stream.next().await.is_none());

    // A finished task: its last state at once, then the end.
    let McpReply::Stream(mut stream) = listen(&b, &listen_body(json!([asking]), true)).await else {
        panic!("not a stream");
    };
    let frames: Vec<Value> = (&mut stream)
        .map(|f| serde_json::from_slice(&f).expect("json"))
        .collect()
        .await;
    assert_eq!(frames.len(), 3, "{frames:?}");
    assert_eq!(frames[1]["params"]["status"], "completed", "{frames:?}");
}
