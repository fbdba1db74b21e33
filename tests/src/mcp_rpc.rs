//! MCP JSON-RPC against `McpBridge::handle`, as the MCP tests call it: one request in, its
//! JSON reply out, as `alice` unless said otherwise, in the modern era (`modern`).

use std::time::Duration;

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, McpReply, McpRequest};
use agentlog::worker::{Tools, Worker, WorkerConfig};
use serde_json::{Value, json};

/// How long a task may take to reach a status.
pub const SOON: Duration = Duration::from_secs(20);

/// The modern era's `_meta` (`extension`: the client declares the Tasks extension).
pub fn modern(extension: bool) -> Value {
    let caps = if extension {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps})
}

/// Two bridges of `config` over one in-memory log and a worker of `tools` for tool agent
/// `agent` (a 10 s lease): what the cross-replica MCP tests start from.
pub async fn two_bridges(
    config: impl Fn() -> McpConfig,
    agent: &str,
    tools: Tools,
) -> (McpBridge, McpBridge, Worker) {
    let log = agentlog::log::open("memory://").await.expect("log");
    let a = McpBridge::open(log.clone(), config()).await.expect("mcp a");
    let b = McpBridge::open(log.clone(), config()).await.expect("mcp b");
    let worker_config = WorkerConfig::new(agent).lease(Duration::from_secs(10));
    let worker = Worker::start(log, worker_config, tools)
        .await
        .expect("worker");
    (a, b, worker)
}

/// One request as `caller`, with `meta` as its `_meta`: the HTTP status and the reply.
pub async fn rpc_as(
    mcp: &McpBridge,
    caller: &Caller,
    method: &str,
    mut params: Value,
    meta: Option<Value>,
) -> (u16, Value) {
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let request = McpRequest {
        body: body.as_bytes(),
        caller: caller.clone(),
        headers: None,
        accepts_stream: false,
    };
    match mcp.handle(request).await {
        McpReply::Json { status, body } => (status, serde_json::from_slice(&body).expect("json")),
        other => panic!("{method}: {other:?}"),
    }
}

/// `rpc_as` as `alice`.
pub async fn rpc(
    mcp: &McpBridge,
    method: &str,
    params: Value,
    meta: Option<Value>,
) -> (u16, Value) {
    rpc_as(mcp, &Caller::principal("alice"), method, params, meta).await
}

/// Poll `tasks/get` (modern) until the status is `want`.
pub async fn wait_status(mcp: &McpBridge, task_id: &str, want: &str) -> Value {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let (_, body) = rpc(
            mcp,
            "tasks/get",
            json!({"taskId": task_id}),
            Some(modern(true)),
        )
        .await;
        if body["result"]["status"] == want {
            return body["result"].clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{task_id} never became {want}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A modern `tools/call` of `name` that must come back as a task: its id.
pub async fn create(mcp: &McpBridge, name: &str) -> String {
    let (status, body) = rpc(mcp, "tools/call", json!({"name": name}), Some(modern(true))).await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    assert_eq!(result["resultType"], "task", "{body}");
    assert_eq!(result["status"], "working");
    assert!(
        result["createdAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert_eq!(result["pollIntervalMs"], 500);
    result["taskId"].as_str().expect("taskId").to_owned()
}
