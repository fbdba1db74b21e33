//! The MCP route over real HTTP: plain JSON-RPC requests, as the official clients send them,
//! against `agentlog::http::mcp::router` merged beside the A2A router, tools answered by a
//! worker on the same log.

use std::net::SocketAddr;

use agentlog::http::mcp::{McpHttpConfig, router as mcp_router};
use agentlog::mcp::{McpBridge, McpConfig, ToolConfig};
use agentlog::worker::{ToolCall, Tools, Worker, WorkerConfig, tool_fn};
use agentlog_wire::mcp::{CallToolResult, Tool};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

fn tool(name: &str) -> ToolConfig {
    ToolConfig::new(Tool {
        description: Some(format!("the {name} tool")),
        ..Tool::new(
            name,
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        )
    })
}

/// A server with an `echo`, a `count` (progress) and a `route` (mirrored arguments) tool,
/// and its workers.
struct Server {
    addr: SocketAddr,
    log: agentlog::log::Log,
    mcp: McpBridge,
    _workers: Vec<Worker>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn server() -> Server {
    let log = agentlog::log::open("memory://").await.expect("log");
    let mut route = tool("route");
    route.tool.input_schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "limit": {"type": "integer", "x-mcp-header": "Limit"}}, "required": ["region"]});
    let mcp = McpBridge::open(
        log.clone(),
        McpConfig::new(vec![tool("echo"), tool("count"), route]),
    )
    .await
    .expect("mcp");
    let tools = || {
        Tools::new()
            .tool(
                "echo",
                tool_fn(|call: ToolCall| async move {
                    let text = call
                        .arguments
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    Ok(CallToolResult::text(text))
                }),
            )
            .tool(
                "count",
                tool_fn(|call: ToolCall| async move {
                    for i in 1..=3 {
                        call.task.report(f64::from(i), Some(3.0), None).await?;
                    }
                    Ok(CallToolResult::text("counted"))
                }),
            )
            .tool(
                "route",
                tool_fn(|call: ToolCall| async move {
                    Ok(CallToolResult::text(format!(
                        "routed to {}",
                        call.arguments["region"]
                    )))
                }),
            )
    };
    let mut workers = Vec::new();
    for (agent, bridge) in mcp.bridges() {
        let config = WorkerConfig::new(agent).view(bridge.view().clone());
        workers.push(
            Worker::start(log.clone(), config, tools())
                .await
                .expect("worker"),
        );
    }
    let a2a = agentlog::Bridge::open(log.clone(), agentlog::BridgeConfig::new("a2a"))
        .await
        .expect("a2a");
    let router = agentlog::http::router(a2a, agentlog::http::HttpConfig::default())
        .merge(mcp_router(mcp.clone(), McpHttpConfig::default()).expect("router"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(agentlog::http::serve(listener, router, async move {
        let _ = stopped.await;
    }));
    Server {
        addr,
        log,
        mcp,
        _workers: workers,
        _stop: stop,
    }
}

/// The answer to one request: status, content type, body.
struct Answer {
    status: u16,
    content_type: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

async fn send(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    send_to(addr, method, "/mcp", headers, body).await
}

async fn send_to(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let mut request = hyper::Request::builder().method(method).uri(path);
    let mut has_host = false;
    for (k, v) in headers {
        has_host |= k.eq_ignore_ascii_case("host");
        request = request.header(*k, *v);
    }
    if !has_host {
        request = request.header("host", format!("127.0.0.1:{}", addr.port()));
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("request");
    let response = sender.send_request(request).await.expect("send");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    Answer {
        status,
        content_type,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

const JSON_HEADERS: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

async fn post(addr: SocketAddr, extra: &[(&str, &str)], body: Value) -> Answer {
    let mut headers = JSON_HEADERS.to_vec();
    headers.extend_from_slice(extra);
    send(addr, "POST", &headers, &body.to_string()).await
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

fn modern_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    headers
}

#[tokio::test]
async fn the_legacy_handshake_then_list_and_call() {
    let server = server().await;
    let init = post(server.addr, &[], json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})).await;
    assert_eq!(init.status, 200, "{}", init.body);
    assert!(init.content_type.starts_with("application/json"));
    assert_eq!(init.json()["result"]["protocolVersion"], "2025-11-25");
    let legacy = [("mcp-protocol-version", "2025-11-25")];
    let initialized = post(
        server.addr,
        &legacy,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!((initialized.status, initialized.body.as_str()), (202, ""));
    // No standalone stream, no sessions.
    for method in ["GET", "DELETE"] {
        let answer = send(server.addr, method, &[("accept", "text/event-stream")], "").await;
        assert_eq!(answer.status, 405, "{method}");
    }
    let list = post(
        server.addr,
        &legacy,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert_eq!(
        list.json()["result"]["tools"].as_array().map(Vec::len),
        Some(3)
    );
    let call = post(
        server.addr,
        &legacy,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}}}),
    )
    .await;
    assert_eq!(
        call.json()["result"]["content"],
        json!([{"type": "text", "text": "hi"}])
    );
    // A legacy request naming an unknown version is refused; an unknown tool is a JSON-RPC error on 200.
    let bad = post(
        server.addr,
        &[("mcp-protocol-version", "1999-01-01")],
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    )
    .await;
    assert_eq!(bad.status, 400);
    let unknown = post(
        server.addr,
        &legacy,
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "nope"}}),
    )
    .await;
    assert_eq!(
        (unknown.status, unknown.json()["error"]["code"].as_i64()),
        (200, Some(-32602))
    );
}

#[tokio::test]
async fn modern_requests_carry_headers_that_match_the_body() {
    let server = server().await;
    let discover = post(server.addr, &modern_headers("server/discover", None),
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}})).await;
    assert_eq!(discover.status, 200, "{}", discover.body);
    assert_eq!(discover.json()["result"]["resultType"], "complete");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hé"}, "_meta": meta()}});
    let ok = post(
        server.addr,
        &modern_headers("tools/call", Some("echo")),
        body.clone(),
    )
    .await;
    assert_eq!(ok.json()["result"]["content"][0]["text"], "hé");
    for headers in [
        modern_headers("tools/call", None),
        modern_headers("tools/call", Some("count")),
        modern_headers("tools/list", Some("echo")),
        vec![("mcp-method", "tools/call"), ("mcp-name", "echo")],
    ] {
        let answer = post(server.addr, &headers, body.clone()).await;
        assert_eq!(
            (answer.status, answer.json()["error"]["code"].as_i64()),
            (400, Some(-32020)),
            "{headers:?}"
        );
    }
    // A modern header without the modern _meta (or half of it) is -32602; a body naming
    // another version than its header is a mismatch, even an unknown version.
    for params in [
        json!({}),
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
    ] {
        let answer = post(
            server.addr,
            &modern_headers("server/discover", None),
            json!({"jsonrpc": "2.0", "id": 11, "method": "server/discover", "params": params}),
        )
        .await;
        assert_eq!(
            (answer.status, answer.json()["error"]["code"].as_i64()),
            (400, Some(-32602)),
            "{}",
            answer.body
        );
        assert_eq!(answer.json()["id"], 11);
    }
    let mut future = meta();
    future["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let mismatch = post(server.addr, &modern_headers("server/discover", None),
        json!({"jsonrpc": "2.0", "id": 12, "method": "server/discover", "params": {"_meta": future}})).await;
    assert_eq!(
        (mismatch.status, mismatch.json()["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    // Unknown methods are 404 -32601 in the modern era; a bad version 400 -32022.
    let ping = post(
        server.addr,
        &modern_headers("ping", None),
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": meta()}}),
    )
    .await;
    assert_eq!(
        (ping.status, ping.json()["error"]["code"].as_i64()),
        (404, Some(-32601))
    );
    let mut old = meta();
    old["io.modelcontextprotocol/protocolVersion"] = json!("2030-01-01");
    let version = post(
        server.addr,
        &[
            ("mcp-protocol-version", "2030-01-01"),
            ("mcp-method", "tools/list"),
        ],
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": old}}),
    )
    .await;
    assert_eq!(
        (version.status, version.json()["error"]["code"].as_i64()),
        (400, Some(-32022))
    );
}

#[tokio::test]
async fn progress_comes_on_an_event_stream_before_the_result() {
    let server = server().await;
    let answer = post(server.addr, &modern_headers("tools/call", Some("count")), json!({"jsonrpc": "2.0", "id": 9,
        "method": "tools/call", "params": {"name": "count", "_meta": {"progressToken": "tok",
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}})).await;
    assert_eq!(answer.status, 200);
    assert!(
        answer.content_type.starts_with("text/event-stream"),
        "{}",
        answer.content_type
    );
    let messages: Vec<Value> = answer
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("frame"))
        .collect();
    let progress: Vec<f64> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap_or(-1.0))
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0]);
    let last = messages.last().expect("a result");
    assert_eq!(
        (last["id"].as_i64(), &last["result"]["content"][0]["text"]),
        (Some(9), &json!("counted"))
    );
}

#[tokio::test]
async fn transport_refusals_come_with_their_status() {
    let server = server().await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    // DNS rebinding: a foreign Host or Origin.
    let evil_host = send(
        server.addr,
        "POST",
        &[
            JSON_HEADERS[0],
            JSON_HEADERS[1],
            ("host", "evil.example.com"),
        ],
        &list,
    )
    .await;
    assert_eq!(evil_host.status, 403);
    let evil_origin = send(
        server.addr,
        "POST",
        &[
            JSON_HEADERS[0],
            JSON_HEADERS[1],
            ("origin", "http://evil.example.com"),
        ],
        &list,
    )
    .await;
    assert_eq!(evil_origin.status, 403);
    let local_origin = send(
        server.addr,
        "POST",
        &[
            JSON_HEADERS[0],
            JSON_HEADERS[1],
            ("origin", "http://localhost:5173"),
        ],
        &list,
    )
    .await;
    assert_eq!(local_origin.status, 200);
    let text = send(
        server.addr,
        "POST",
        &[("content-type", "text/plain"), JSON_HEADERS[1]],
        &list,
    )
    .await;
    assert_eq!(text.status, 415);
    let accept = send(
        server.addr,
        "POST",
        &[JSON_HEADERS[0], ("accept", "text/html")],
        &list,
    )
    .await;
    assert_eq!(accept.status, 406);
    let parse = send(server.addr, "POST", &JSON_HEADERS, "{nope").await;
    assert_eq!(
        (parse.status, parse.json()["error"]["code"].as_i64()),
        (400, Some(-32700))
    );
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(2 << 20)
    );
    let large = send(server.addr, "POST", &JSON_HEADERS, &big).await;
    assert_eq!(large.status, 413);
    // The A2A router still answers beside it.
    let card = send_to(server.addr, "GET", "/.well-known/agent-card.json", &[], "").await;
    assert_eq!(card.status, 200, "{}", card.body);
    assert_eq!(card.json()["name"], "a2a");
}

/// How many records the tool agent `agent`'s events topic holds.
async fn records(server: &Server, agent: &str) -> usize {
    let topics = server.mcp.bridges()[agent].config().topics.clone();
    let topic = topics.events;
    let mut count = 0;
    for partition in 0..topics.partitions {
        count += server
            .log
            .read(&topic, partition, 0, usize::MAX)
            .await
            .expect("read")
            .len();
    }
    count
}

#[tokio::test]
async fn mirrored_arguments_must_match_their_mcp_param_headers() {
    let server = server().await;
    let list = post(
        server.addr,
        &modern_headers("tools/list", None),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}),
    )
    .await;
    let tools = list.json()["result"]["tools"].clone();
    let route = tools
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "route"))
        .expect("route");
    assert_eq!(
        route["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    let call = |id: u64, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "route", "arguments": arguments, "_meta": meta()}})
    };
    let headers = |extra: &[(&'static str, &'static str)]| {
        let mut headers = modern_headers("tools/call", Some("route"));
        headers.extend_from_slice(extra);
        headers
    };
    // A non-ASCII value comes base64-wrapped; an integer compares as a number.
    let ok = post(
        server.addr,
        &headers(&[
            ("Mcp-Param-Region", "=?base64?5p2x5Lqs?="),
            ("mcp-param-limit", "5.0"),
        ]),
        call(2, json!({"region": "東京", "limit": 5})),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(
        ok.json()["result"]["content"][0]["text"],
        "routed to \"東京\""
    );
    let written = records(&server, "mcp.route").await;
    assert!(written >= 3, "a command, a claim and a terminal: {written}");
    for (extra, arguments) in [
        (&[][..], json!({"region": "eu"})),
        (&[("mcp-param-region", "us")][..], json!({"region": "eu"})),
        (
            &[("mcp-param-region", "eu"), ("mcp-param-limit", "6")][..],
            json!({"region": "eu", "limit": 5}),
        ),
        (
            &[("mcp-param-region", "eu"), ("mcp-param-limit", "5")][..],
            json!({"region": "eu"}),
        ),
        (
            &[("mcp-param-region", "=?base64?ZXU?=")][..],
            json!({"region": "eu"}),
        ),
    ] {
        let refused = post(server.addr, &headers(extra), call(3, arguments.clone())).await;
        assert_eq!(
            (refused.status, refused.json()["error"]["code"].as_i64()),
            (400, Some(-32020)),
            "{extra:?} {arguments}: {}",
            refused.body
        );
    }
    assert_eq!(
        records(&server, "mcp.route").await,
        written,
        "a refused call writes nothing"
    );
    // Legacy requests mirror nothing, and are not checked.
    let legacy = post(server.addr, &[("mcp-protocol-version", "2025-11-25")],
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "route", "arguments": {"region": "eu"}}})).await;
    assert_eq!(
        legacy.json()["result"]["content"][0]["text"],
        "routed to \"eu\"",
        "{}",
        legacy.body
    );
}
