//! Log messages (`notifications/message`) of sync `tools/call`s against `McpBridge::handle`:
//! a tool's `TaskContext::log` reaches the client on the call's event stream, in order with
//! its progress and before the result; modern calls get only the levels their `_meta` asks
//! (none without it), legacy calls every level; `logging/setLevel` is legacy only.

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, McpReply, McpRequest, ToolConfig};
use agentlog::worker::{ToolCall, Tools, Worker, WorkerConfig, tool_fn};
use agentlog_integration::mcp_rpc::rpc;
use agentlog_wire::mcp::{CallToolResult, LoggingLevel, Tool};
use futures::StreamExt;
use serde_json::{Value, json};

const AGENT: &str = "mcp.log";

fn tool(name: &str) -> ToolConfig {
    ToolConfig {
        agent: Some(AGENT.into()),
        ..ToolConfig::new(Tool::new(name, json!({"type": "object"})))
    }
}

/// `chatty` logs at debug, reports progress 1, logs at info, reports 2, logs at error, then
/// answers; `quiet` answers at once.
fn tools() -> Tools {
    Tools::new()
        .tool(
            "chatty",
            tool_fn(|call: ToolCall| async move {
                let task = &call.task;
                task.log(LoggingLevel::Debug, Some("db"), json!({"step": "connect"}))
                    .await?;
                task.report(1.0, Some(2.0), None).await?;
                task.log(LoggingLevel::Info, None, json!("halfway")).await?;
                task.report(2.0, Some(2.0), None).await?;
                task.log(LoggingLevel::Error, Some("db"), json!("slow query"))
                    .await?;
                Ok(CallToolResult::text("done"))
            }),
        )
        .tool(
            "quiet",
            tool_fn(|_: ToolCall| async { Ok(CallToolResult::text("quiet")) }),
        )
}

async fn open() -> (McpBridge, Worker) {
    let log = agentlog::log::open("memory://").await.expect("log");
    let mcp = McpBridge::open(
        log.clone(),
        McpConfig::new(vec![tool("chatty"), tool("quiet")]),
    )
    .await
    .expect("mcp");
    let config = WorkerConfig::new(AGENT).view(mcp.bridges()[AGENT].view().clone());
    let worker = Worker::start(log, config, tools()).await.expect("worker");
    (mcp, worker)
}

/// What a request was answered with.
#[derive(Debug)]
enum Reply {
    Json(u16, Value),
    /// The messages of an event stream, in order.
    Stream(Vec<Value>),
}

/// A `tools/call` of `name` with `meta` as its `_meta` (legacy: none), from a client that
/// takes event streams.
async fn call(mcp: &McpBridge, name: &str, meta: Option<Value>, accepts_stream: bool) -> Reply {
    let mut params = json!({"name": name});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let body = body.to_string();
    let request = McpRequest {
        body: body.as_bytes(),
        caller: Caller::principal("alice"),
        headers: None,
        accepts_stream,
    };
    match mcp.handle(request).await {
        McpReply::Json { status, body } => {
            Reply::Json(status, serde_json::from_slice(&body).expect("json"))
        }
        McpReply::Stream(stream) => Reply::Stream(
            stream
                .map(|m| serde_json::from_slice(&m).expect("a message"))
                .collect()
                .await,
        ),
        McpReply::Accepted => panic!("a call was answered 202"),
    }
}

/// How many tasks alice has on the tool agent.
async fn task_count(mcp: &McpBridge) -> usize {
    let alice = Caller::principal("alice");
    let page = mcp.bridges()[AGENT].list_tasks(&alice, Default::default());
    page.await.expect("list").tasks.len()
}

/// A modern `_meta`, asking log messages at `level` when given (and progress under `tok`).
fn modern(level: Option<&str>, progress: bool) -> Value {
    let mut meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    if let Some(level) = level {
        meta["io.modelcontextprotocol/logLevel"] = json!(level);
    }
    if progress {
        meta["progressToken"] = json!("tok");
    }
    meta
}

/// Each message of a stream in short: `log <level> <data>`, `progress <n>`, or `result <text>`.
fn summary(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match m["method"].as_str() {
            Some("notifications/message") => {
                let params = &m["params"];
                format!(
                    "log {} {}",
                    params["level"].as_str().unwrap_or("?"),
                    params["data"]
                )
            }
            Some("notifications/progress") => format!("progress {}", m["params"]["progress"]),
            _ => format!("result {}", m["result"]["content"][0]["text"]),
        })
        .collect()
}

#[tokio::test]
async fn a_modern_call_gets_the_levels_it_asked_in_order_before_the_result() {
    let (mcp, _worker) = open().await;
    let Reply::Stream(messages) =
        call(&mcp, "chatty", Some(modern(Some("info"), false)), true).await
    else {
        panic!("no stream");
    };
    assert_eq!(
        summary(&messages),
        [
            r#"log info "halfway""#,
            r#"log error "slow query""#,
            r#"result "done""#
        ]
    );
    assert_eq!(
        messages[1],
        json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "error", "logger": "db", "data": "slow query"}})
    );
    assert_eq!(messages[2]["id"], 7);
    // With progress asked too: both kinds, in the order the tool wrote them.
    let Reply::Stream(messages) =
        call(&mcp, "chatty", Some(modern(Some("debug"), true)), true).await
    else {
        panic!("no stream");
    };
    assert_eq!(
        summary(&messages),
        [
            r#"log debug {"step":"connect"}"#,
            "progress 1.0",
            r#"log info "halfway""#,
            "progress 2.0",
            r#"log error "slow query""#,
            r#"result "done""#
        ]
    );
    // The most severe level only.
    let Reply::Stream(messages) =
        call(&mcp, "chatty", Some(modern(Some("emergency"), true)), true).await
    else {
        panic!("no stream");
    };
    assert_eq!(
        summary(&messages),
        ["progress 1.0", "progress 2.0", r#"result "done""#]
    );
}

#[tokio::test]
async fn a_modern_call_without_a_log_level_gets_no_log_message() {
    let (mcp, _worker) = open().await;
    let Reply::Json(200, body) = call(&mcp, "chatty", Some(modern(None, false)), true).await else {
        panic!("not a JSON answer");
    };
    assert_eq!(body["result"]["content"][0]["text"], "done", "{body}");
    let Reply::Stream(messages) = call(&mcp, "chatty", Some(modern(None, true)), true).await else {
        panic!("no stream");
    };
    assert_eq!(
        summary(&messages),
        ["progress 1.0", "progress 2.0", r#"result "done""#]
    );
    // A level that is no level is refused before anything is written.
    let before = task_count(&mcp).await;
    let Reply::Json(status, body) =
        call(&mcp, "chatty", Some(modern(Some("loud"), false)), true).await
    else {
        panic!("not a JSON answer");
    };
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{body}"
    );
    assert_eq!(task_count(&mcp).await, before);
}

#[tokio::test]
async fn a_legacy_call_gets_every_level_and_a_quiet_one_answers_json() {
    let (mcp, _worker) = open().await;
    let Reply::Stream(messages) = call(&mcp, "chatty", None, true).await else {
        panic!("no stream");
    };
    assert_eq!(
        summary(&messages),
        [
            r#"log debug {"step":"connect"}"#,
            r#"log info "halfway""#,
            r#"log error "slow query""#,
            r#"result "done""#
        ]
    );
    assert_eq!(messages[0]["params"]["logger"], "db");
    assert!(messages[1]["params"].get("logger").is_none());
    // No log message before the answer: a plain JSON answer.
    let Reply::Json(200, body) = call(&mcp, "quiet", None, true).await else {
        panic!("not a JSON answer");
    };
    assert_eq!(body["result"]["content"][0]["text"], "quiet");
    // A client that takes no event stream gets the answer alone.
    let Reply::Json(200, body) = call(&mcp, "chatty", None, false).await else {
        panic!("not a JSON answer");
    };
    assert_eq!(body["result"]["content"][0]["text"], "done");
}

#[tokio::test]
async fn set_level_is_legacy_only_and_both_eras_advertise_logging() {
    let (mcp, _worker) = open().await;
    let (status, body) = rpc(&mcp, "logging/setLevel", json!({"level": "warning"}), None).await;
    assert_eq!((status, &body["result"]), (200, &json!({})), "{body}");
    for params in [json!({"level": "loud"}), json!({}), json!({"level": 3})] {
        let (status, body) = rpc(&mcp, "logging/setLevel", params.clone(), None).await;
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (200, Some(-32602)),
            "{params}"
        );
    }
    let (status, body) = rpc(
        &mcp,
        "logging/setLevel",
        json!({"level": "info"}),
        Some(modern(None, false)),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (404, Some(-32601))
    );
    let (_, init) = rpc(
        &mcp,
        "initialize",
        json!({"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        None,
    )
    .await;
    assert_eq!(
        init["result"]["capabilities"]["logging"],
        json!({}),
        "{init}"
    );
    let (_, discover) = rpc(
        &mcp,
        "server/discover",
        json!({}),
        Some(modern(None, false)),
    )
    .await;
    assert_eq!(
        discover["result"]["capabilities"]["logging"],
        json!({}),
        "{discover}"
    );
}
