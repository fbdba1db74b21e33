//! The trace context of an MCP request: its `params._meta` (`traceparent`, `tracestate`) when
//! nothing carries one already.
#![allow(clippy::unwrap_used)]

use agentlog_wire::mcp::CallToolResult;
use agentlog_wire::trace::TraceContext;
use serde_json::{Value, json};

use crate::agent::Caller;
use crate::mcp::tests::tool;
use crate::mcp::{McpBridge, McpConfig, McpReply, McpRequest};
use crate::worker::{ToolCall, Tools, Worker, WorkerConfig, tool_fn};

const META: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const HEADER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// An MCP bridge over memory:// with one tool, `seen`, whose handler answers with the trace
/// context its turn was called with.
async fn setup() -> (McpBridge, Vec<Worker>) {
    let log = crate::log::open("memory://").await.unwrap();
    let config = McpConfig::new(vec![tool("seen", json!({"type": "object"}))]);
    let mcp = McpBridge::open(log.clone(), config).await.unwrap();
    let seen = Tools::new().tool(
        "seen",
        tool_fn(|call: ToolCall| async move {
            let context = call
                .task
                .trace_context()
                .map(|c| json!({"traceparent": c.traceparent(), "tracestate": c.tracestate()}));
            Ok(CallToolResult::structured(json!({ "context": context })))
        }),
    );
    let mut workers = Vec::new();
    for (agent, bridge) in mcp.bridges() {
        let config = WorkerConfig {
            view: Some(bridge.view().clone()),
            ..WorkerConfig::new(agent)
        };
        workers.push(
            Worker::start(log.clone(), config, seen.clone())
                .await
                .unwrap(),
        );
    }
    (mcp, workers)
}

/// The context the `seen` tool's turn saw when called with `meta` as `params._meta`.
async fn seen_with(mcp: &McpBridge, meta: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "seen", "arguments": {}, "_meta": meta}});
    let bytes = serde_json::to_vec(&body).unwrap();
    let request = McpRequest {
        body: &bytes,
        caller: Caller::anonymous(),
        headers: None,
        accepts_stream: false,
    };
    let McpReply::Json { status, body } = mcp.handle(request).await else {
        panic!("a JSON reply");
    };
    assert_eq!(status, 200);
    let reply: Value = serde_json::from_slice(&body).unwrap();
    reply["result"]["structuredContent"]["context"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_calls_turn_has_the_context_of_its_meta_unless_one_is_carried() {
    let (mcp, workers) = setup().await;
    // MCP's carrier (SEP-414): `traceparent` and `tracestate` in `params._meta`.
    let seen = seen_with(&mcp, json!({"traceparent": META, "tracestate": "a=1"})).await;
    assert_eq!(seen, json!({"traceparent": META, "tracestate": "a=1"}));
    // A context that is not W3C's is dropped, as a header's would be.
    let bad = seen_with(
        &mcp,
        json!({"traceparent": "00-nothex-00f067aa0ba902b7-01"}),
    )
    .await;
    assert_eq!(bad, Value::Null);
    assert_eq!(
        seen_with(&mcp, json!({"traceparent": 7})).await,
        Value::Null
    );
    assert_eq!(seen_with(&mcp, json!({})).await, Value::Null);
    // One the transport carried (its HTTP headers) is the call's own: `_meta` is not read.
    let header = TraceContext::parse(HEADER, None).unwrap();
    let carried =
        crate::telemetry::carrying(Some(header), seen_with(&mcp, json!({"traceparent": META})))
            .await;
    assert_eq!(carried, json!({"traceparent": HEADER, "tracestate": ""}));
    for worker in workers {
        worker.shutdown().await.unwrap();
    }
}
