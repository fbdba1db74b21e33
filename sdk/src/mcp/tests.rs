//! Tests of the transport-free MCP core: tools/list, tools/call through a worker, the eras.
#![allow(clippy::unwrap_used)]

use agentlog_wire::RecordBody;
use agentlog_wire::mcp::call::CALL_MEDIA_TYPE;
use agentlog_wire::mcp::{CallToolResult, Tool};
use futures::StreamExt;
use serde_json::{Value, json};

use super::*;
use crate::agent::Caller;
use crate::worker::{ToolCall, Tools, Worker, WorkerConfig, tool_fn};

pub(crate) fn tool(name: &str, schema: Value) -> ToolConfig {
    ToolConfig::new(Tool {
        description: Some(format!("the {name} tool")),
        ..Tool::new(name, schema)
    })
}

fn add_schema() -> Value {
    json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
           "required": ["a", "b"], "additionalProperties": false})
}

/// The tools the tests' worker serves.
pub(crate) fn test_tools() -> Tools {
    Tools::new()
        .tool(
            "add",
            tool_fn(|call: ToolCall| async move {
                let a = call.arguments["a"].as_f64().unwrap_or_default();
                let b = call.arguments["b"].as_f64().unwrap_or_default();
                Ok(CallToolResult::structured(json!({"sum": a + b})))
            }),
        )
        .tool(
            "steps",
            tool_fn(|call: ToolCall| async move {
                for (i, p) in [0.0, 50.0, 50.0, 100.0].into_iter().enumerate() {
                    call.task
                        .report(p, Some(100.0), Some(&format!("step {i}")))
                        .await?;
                }
                Ok(CallToolResult::text("stepped"))
            }),
        )
        .tool(
            "broken",
            tool_fn(|_call: ToolCall| async move { Err("it broke".into()) }),
        )
}

async fn setup() -> (McpBridge, Vec<Worker>, crate::log::Log) {
    let log = crate::log::open("memory://").await.unwrap();
    let mut steps = tool("steps", json!({"type": "object"}));
    steps.agent = Some("mcp.shared".into());
    let mut broken = tool("broken", json!({"type": "object"}));
    broken.agent = Some("mcp.shared".into());
    let config = McpConfig::new(vec![tool("add", add_schema()), steps, broken]);
    let mcp = McpBridge::open(log.clone(), config).await.unwrap();
    let mut workers = Vec::new();
    for (agent, bridge) in mcp.bridges() {
        let config = WorkerConfig {
            view: Some(bridge.view().clone()),
            ..WorkerConfig::new(agent)
        };
        workers.push(
            Worker::start(log.clone(), config, test_tools())
                .await
                .unwrap(),
        );
    }
    (mcp, workers, log)
}

pub(crate) fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

async fn rpc(mcp: &McpBridge, body: Value) -> (u16, Value) {
    let bytes = serde_json::to_vec(&body).unwrap();
    match mcp
        .handle(McpRequest {
            body: &bytes,
            caller: Caller::anonymous(),
            headers: None,
            accepts_stream: false,
        })
        .await
    {
        McpReply::Json { status, body } => (status, serde_json::from_slice(&body).unwrap()),
        other => panic!("not JSON: {other:?}"),
    }
}

fn call(name: &str, arguments: Value, meta: Option<Value>) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
}

#[tokio::test]
async fn tools_are_listed_in_name_order_per_era_and_paged() {
    let (mcp, _workers, _log) = setup().await;
    let (status, legacy) = rpc(
        &mcp,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, 200);
    let names: Vec<&str> = legacy["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "broken", "steps"]);
    assert_eq!(
        legacy["result"]["tools"][0]["execution"],
        json!({"taskSupport": "forbidden"})
    );
    assert!(legacy["result"].get("ttlMs").is_none());
    let (_, modern) = rpc(&mcp, json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}})).await;
    let result = &modern["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(result["ttlMs"], 60000);
    assert!(result["tools"][0].get("execution").is_none());
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "agentlog"
    );

    let log = crate::log::open("memory://").await.unwrap();
    let config = McpConfig {
        page_size: 2,
        ..McpConfig::new(vec![
            tool("c", json!({"type": "object"})),
            tool("a", json!({"type": "object"})),
            tool("b", json!({"type": "object"})),
        ])
    };
    let paged = McpBridge::open(log, config).await.unwrap();
    let (_, first) = rpc(
        &paged,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": ""}}),
    )
    .await;
    assert_eq!(first["result"]["tools"].as_array().unwrap().len(), 2);
    assert_eq!(first["result"]["nextCursor"], "c");
    let (_, second) = rpc(
        &paged,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "c"}}),
    )
    .await;
    assert_eq!(second["result"]["tools"][0]["name"], "c");
    assert!(second["result"].get("nextCursor").is_none());
    let (status, bad) = rpc(
        &paged,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "zz"}}),
    )
    .await;
    assert_eq!((status, bad["error"]["code"].as_i64()), (200, Some(-32602)));
}

#[tokio::test]
async fn a_call_runs_through_a_worker_and_is_recorded_byte_exact() {
    let (mcp, _workers, log) = setup().await;
    let raw = r#"{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"add","arguments":{"b":2, "a":1.5}}}"#;
    let reply = mcp
        .handle(McpRequest {
            body: raw.as_bytes(),
            caller: Caller::principal("alice"),
            headers: None,
            accepts_stream: false,
        })
        .await;
    let McpReply::Json { status, body } = reply else {
        panic!("{reply:?}")
    };
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], "c1");
    assert_eq!(body["result"]["structuredContent"], json!({"sum": 3.5}));
    assert!(
        body["result"].get("resultType").is_none(),
        "legacy results have no resultType"
    );
    // The command holds the params exactly as sent, the caller, and the bridge path.
    let topic = &mcp.bridges()["mcp.add"].config().topics.events;
    let mut commands = Vec::new();
    for partition in 0..4 {
        for stored in log.read(topic, partition, 0, 100).await.unwrap() {
            let record = agentlog_wire::Record::decode(&stored.payload).unwrap();
            if let RecordBody::Command { params, .. } = &record.body {
                commands.push((record.header.clone(), params.clone()));
            }
        }
    }
    assert_eq!(commands.len(), 1);
    let (header, params) = &commands[0];
    assert!(
        params.contains(r#"{"name":"add","arguments":{"b":2, "a":1.5}}"#),
        "{params}"
    );
    assert!(params.contains(CALL_MEDIA_TYPE));
    assert_eq!(header.principal, "alice");
    assert_eq!(header.bridge_hops, ["mcp.add"]);
}

#[tokio::test]
async fn modern_results_carry_their_type_and_errors_their_status() {
    let (mcp, _workers, _log) = setup().await;
    let (status, body) = rpc(
        &mcp,
        call("add", json!({"a": 1, "b": 2}), Some(modern_meta())),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(
        body["result"]["content"][0],
        json!({"type": "text", "text": "{\"sum\":3.0}"})
    );
    // An unknown tool is a protocol error: -32602, 400 in the modern era, 200 in the legacy one.
    let (status, body) = rpc(&mcp, call("nope", json!({}), Some(modern_meta()))).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32602))
    );
    let (status, body) = rpc(&mcp, call("nope", json!({}), None)).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (200, Some(-32602))
    );
    // A handler's Err is a protocol failure, with the tool's message.
    let (status, body) = rpc(&mcp, call("broken", json!({}), None)).await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32603);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("it broke"),
        "{body}"
    );
}

#[tokio::test]
async fn invalid_arguments_are_a_tool_error_and_write_nothing() {
    let (mcp, _workers, log) = setup().await;
    let (status, body) = rpc(&mcp, call("add", json!({"a": "one"}), None)).await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["isError"], true);
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Invalid arguments for tool add") && text.contains("/a"),
        "{text}"
    );
    let topic = &mcp.bridges()["mcp.add"].config().topics.events;
    for partition in 0..4 {
        assert!(log.read(topic, partition, 0, 10).await.unwrap().is_empty());
    }
    // Arguments that are not an object are invalid params.
    let (_, body) = rpc(&mcp, call("add", json!([1]), None)).await;
    assert_eq!(body["error"]["code"], -32602);
}

#[tokio::test]
async fn progress_streams_strictly_increasing_before_the_result() {
    let (mcp, _workers, _log) = setup().await;
    let body = serde_json::to_vec(&call(
        "steps",
        json!({}),
        Some(json!({"progressToken": "p1"})),
    ))
    .unwrap();
    let reply = mcp
        .handle(McpRequest {
            body: &body,
            caller: Caller::anonymous(),
            headers: None,
            accepts_stream: true,
        })
        .await;
    let McpReply::Stream(stream) = reply else {
        panic!("{reply:?}")
    };
    let messages: Vec<Value> = stream
        .map(|b| serde_json::from_slice(&b).unwrap())
        .collect()
        .await;
    let progress: Vec<f64> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p1");
            assert_eq!(m["params"]["total"], 100.0);
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 7);
    assert_eq!(last["result"]["content"][0]["text"], "stepped");
    // Without a stream the same call answers JSON.
    let (_, body) = rpc(
        &mcp,
        call("steps", json!({}), Some(json!({"progressToken": 2}))),
    )
    .await;
    assert_eq!(body["result"]["content"][0]["text"], "stepped");
}

#[tokio::test]
async fn eras_versions_and_headers_are_checked() {
    let (mcp, _workers, _log) = setup().await;
    let (_, init) = rpc(&mcp, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "agentlog");
    let (_, init) = rpc(&mcp, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}})).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let (_, ping) = rpc(&mcp, json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await;
    assert_eq!(ping["result"], json!({}));
    // Modern: the handshake methods do not exist; discover does.
    for method in ["initialize", "ping", "logging/setLevel"] {
        let (status, body) = rpc(&mcp, json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": {"_meta": modern_meta()}})).await;
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (404, Some(-32601)),
            "{method}"
        );
    }
    let (_, discover) = rpc(&mcp, json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {"_meta": modern_meta()}})).await;
    assert_eq!(discover["result"]["supportedVersions"][0], "2026-07-28");
    assert_eq!(discover["result"]["resultType"], "complete");
    assert!(
        discover["result"]["capabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_some()
    );
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let (status, body) = rpc(
        &mcp,
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta}}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32022))
    );
    assert_eq!(
        body["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2099-01-01"})
    );
    // Over HTTP the headers must match the body.
    let body =
        serde_json::to_vec(&call("add", json!({"a": 1, "b": 1}), Some(modern_meta()))).unwrap();
    let headers = |name: Option<&str>| McpHeaders {
        protocol_version: Some("2026-07-28".into()),
        method: Some("tools/call".into()),
        name: name.map(str::to_owned),
        ..McpHeaders::default()
    };
    for name in [None, Some("other")] {
        let reply = mcp
            .handle(McpRequest {
                body: &body,
                caller: Caller::anonymous(),
                headers: Some(headers(name)),
                accepts_stream: false,
            })
            .await;
        let McpReply::Json { status, body } = reply else {
            panic!()
        };
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (400, Some(-32020)),
            "{name:?}"
        );
    }
    let reply = mcp
        .handle(McpRequest {
            body: &body,
            caller: Caller::anonymous(),
            headers: Some(headers(Some("add"))),
            accepts_stream: false,
        })
        .await;
    assert!(
        matches!(reply, McpReply::Json { status: 200, .. }),
        "{reply:?}"
    );
    // Notifications are accepted; a body that is no request is 400.
    let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let reply = mcp
        .handle(McpRequest {
            body: note,
            caller: Caller::anonymous(),
            headers: None,
            accepts_stream: false,
        })
        .await;
    assert!(matches!(reply, McpReply::Accepted));
    let reply = mcp
        .handle(McpRequest {
            body: b"{",
            caller: Caller::anonymous(),
            headers: None,
            accepts_stream: false,
        })
        .await;
    assert!(matches!(reply, McpReply::Json { status: 400, .. }));
}

#[tokio::test]
async fn a_tool_needing_a_client_capability_refuses_modern_calls_without_it() {
    let log = crate::log::open("memory://").await.unwrap();
    let mut needs = tool("needs", json!({"type": "object"}));
    needs.required_capabilities = Some(json!({"sampling": {}}).as_object().unwrap().clone());
    let mcp = McpBridge::open(log.clone(), McpConfig::new(vec![needs]))
        .await
        .unwrap();
    let (status, body) = rpc(&mcp, call("needs", json!({}), Some(modern_meta()))).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32021)),
        "{body}"
    );
    assert_eq!(
        body["error"]["data"],
        json!({"requiredCapabilities": {"sampling": {}}})
    );
    let topic = &mcp.bridges()["mcp.needs"].config().topics.events;
    for partition in 0..4 {
        assert!(log.read(topic, partition, 0, 10).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_sync_call_whose_tool_asks_for_input_is_a_tool_error_and_its_task_is_cancelled() {
    let log = crate::log::open("memory://").await.unwrap();
    let mcp = McpBridge::open(
        log.clone(),
        McpConfig::new(vec![tool("ask", json!({"type": "object"}))]),
    )
    .await
    .unwrap();
    let bridge = mcp.bridges()["mcp.ask"].clone();
    let tools = Tools::new().tool(
        "ask",
        tool_fn(|call: ToolCall| async move {
            call.ask("which one?", serde_json::Map::new()).await?;
            Ok(CallToolResult::text("unused"))
        }),
    );
    let config = WorkerConfig {
        view: Some(bridge.view().clone()),
        ..WorkerConfig::new("mcp.ask")
    };
    let _worker = Worker::start(log.clone(), config, tools).await.unwrap();
    let (_, body) = rpc(&mcp, call("ask", json!({}), None)).await;
    assert_eq!(body["result"]["isError"], true, "{body}");
    assert!(
        body["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("which one?")
    );
    // The abandoned task is cancelled on the log.
    let topic = bridge.config().topics.events.clone();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let mut cancels = 0;
        for partition in 0..4 {
            for stored in log.read(&topic, partition, 0, 100).await.unwrap() {
                let record = agentlog_wire::Record::decode(&stored.payload).unwrap();
                cancels += usize::from(matches!(record.body, RecordBody::CancelRequest { .. }));
            }
        }
        if cancels == 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no cancel request written"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Cancel requests on `agent`'s events topic.
async fn cancels(log: &crate::log::Log, mcp: &McpBridge, agent: &str) -> usize {
    let topic = mcp.bridges()[agent].config().topics.events.clone();
    let mut cancels = 0;
    for partition in 0..4 {
        for stored in log.read(&topic, partition, 0, 100).await.unwrap() {
            let record = agentlog_wire::Record::decode(&stored.payload).unwrap();
            cancels += usize::from(matches!(record.body, RecordBody::CancelRequest { .. }));
        }
    }
    cancels
}

#[tokio::test]
async fn a_modern_client_going_away_cancels_its_call_and_a_legacy_one_does_not() {
    let log = crate::log::open("memory://").await.unwrap();
    let mcp = McpBridge::open(
        log.clone(),
        McpConfig::new(vec![tool("wait", json!({"type": "object"}))]),
    )
    .await
    .unwrap();
    let tools = Tools::new().tool(
        "wait",
        tool_fn(|call: ToolCall| async move {
            call.task.cancellation().cancelled().await;
            Ok(CallToolResult::text("cancelled"))
        }),
    );
    let view = mcp.bridges()["mcp.wait"].view().clone();
    let config = WorkerConfig {
        view: Some(view),
        ..WorkerConfig::new("mcp.wait")
    };
    let _worker = Worker::start(log.clone(), config, tools).await.unwrap();
    for (meta, expected) in [(None, 0), (Some(modern_meta()), 1)] {
        let this = mcp.clone();
        let body = serde_json::to_vec(&call("wait", json!({}), meta)).unwrap();
        let running = tokio::spawn(async move {
            this.handle(McpRequest {
                body: &body,
                caller: Caller::anonymous(),
                headers: None,
                accepts_stream: false,
            })
            .await;
        });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        running.abort(); // the client went away: the request's future is dropped
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        while cancels(&log, &mcp, "mcp.wait").await < expected {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no cancel request written"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert_eq!(cancels(&log, &mcp, "mcp.wait").await, expected);
    }
}

#[tokio::test]
async fn bad_tools_are_config_errors() {
    let log = crate::log::open("memory://").await.unwrap();
    for tools in [
        vec![tool("a b", json!({"type": "object"}))],
        vec![tool("a", json!({"type": "string"}))],
        vec![tool(
            "a",
            json!({"type": "object", "properties": {"x": {"type": 5}}}),
        )],
        vec![
            tool("a", json!({"type": "object"})),
            tool("a", json!({"type": "object"})),
        ],
        vec![tool(
            "a",
            // x-mcp-header on a number property (the spec allows string, integer, boolean).
            json!({"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}),
        )],
    ] {
        let error = McpBridge::open(log.clone(), McpConfig::new(tools))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    }
    // A valid annotation is served (`params.rs` has the rule).
    let region = json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
    McpBridge::open(log, McpConfig::new(vec![tool("a", region)]))
        .await
        .unwrap();
}
