//! MCP resources, prompts and completions over real HTTP, in both eras: a task written
//! through one replica is read as a resource through another (the log is the truth), its
//! artifacts with their media types; the configured resources, template and prompts; the
//! modern headers (`Mcp-Name` is the URI of `resources/read`, the name of `prompts/get`),
//! statuses and cache hints.

use std::net::SocketAddr;

use agentlog::agent::Caller;
use agentlog::http::mcp::{McpHttpConfig, router as mcp_router};
use agentlog::mcp::{McpBridge, McpConfig};
use agentlog::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
use agentlog::{Bridge, BridgeConfig};
use agentlog_wire::a2a::{Artifact, Part, PartContent, SendMessageRequest, SendMessageResponse};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

/// The definitions both replicas serve.
fn definitions() -> Value {
    json!({
        "resources": [
            {"uri": "docs://readme", "name": "readme", "mimeType": "text/markdown", "text": "# Read me"}
        ],
        "resourceTemplates": [
            {"uriTemplate": "docs://pages/{page}", "name": "page", "mimeType": "text/plain",
             "text": "page {page}", "completions": {"page": ["intro", "install", "usage"]}}
        ],
        "prompts": [
            {"name": "summarize", "description": "Summarizes a page",
             "arguments": [{"name": "page", "required": true, "values": ["intro", "install"]}],
             "messages": [
                 {"role": "user", "content": {"type": "resource", "resource":
                     {"uri": "docs://pages/{page}", "mimeType": "text/plain", "text": "page {page}"}}},
                 {"role": "user", "content": {"type": "text", "text": "Summarize the {page} page."}}
             ]}
        ]
    })
}

/// One replica: its A2A bridge of agent `docs` and its MCP bridge, served over HTTP.
struct Replica {
    addr: SocketAddr,
    docs: Bridge,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn replica(log: &agentlog::log::Log) -> Replica {
    let docs = Bridge::open(log.clone(), BridgeConfig::new("docs"))
        .await
        .expect("docs");
    let config = McpConfig::from_json(definitions(), None)
        .expect("definitions")
        .a2a(vec![docs.clone()]);
    let mcp = McpBridge::open(log.clone(), config).await.expect("mcp");
    let router = agentlog::http::router(docs.clone(), agentlog::http::HttpConfig::default())
        .merge(mcp_router(mcp, McpHttpConfig::default()).expect("router"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(agentlog::http::serve(listener, router, async move {
        let _ = stopped.await;
    }));
    Replica {
        addr,
        docs,
        _stop: stop,
    }
}

/// The `docs` worker: a text artifact naming the message, and a PNG.
async fn worker(log: &agentlog::log::Log) -> Worker {
    let handler = handler_fn(|task: TaskContext| async move {
        let artifact = |id: &str, parts| Artifact {
            artifact_id: id.into(),
            name: None,
            description: None,
            parts,
            metadata: None,
            extensions: Vec::new(),
        };
        let text = artifact(
            "summary",
            vec![Part::text(format!("about {}", task.text()))],
        );
        task.artifact(text, false, true).await?;
        let png = Part {
            media_type: Some("image/png".into()),
            ..Part::from_content(PartContent::Raw(vec![0x89, b'P', b'N', b'G']))
        };
        task.artifact(artifact("chart", vec![png]), false, true)
            .await?;
        task.complete(None).await?;
        Ok(())
    });
    Worker::start(log.clone(), WorkerConfig::new("docs"), handler)
        .await
        .expect("worker")
}

/// POST a JSON-RPC request: the status and the body.
async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: Value) -> (u16, Value) {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let mut request = hyper::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", format!("127.0.0.1:{}", addr.port()))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    let response = sender.send_request(request).await.expect("send");
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)));
    (status, body)
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A legacy request (no `_meta`, no headers).
async fn legacy(addr: SocketAddr, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    post(addr, &[], body).await
}

/// A modern request with its headers; `name` the `Mcp-Name` header when there is one.
async fn modern(
    addr: SocketAddr,
    method: &str,
    mut params: Value,
    name: Option<&str>,
) -> (u16, Value) {
    params["_meta"] = meta();
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    post(addr, &headers, body).await
}

#[tokio::test]
async fn a_task_written_through_one_replica_is_read_through_another() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let a = replica(&log).await;
    let b = replica(&log).await;
    let _worker = worker(&log).await;
    let send: SendMessageRequest = serde_json::from_value(json!({"message": {
        "messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "logs"}]}}))
    .expect("request");
    let SendMessageResponse::Task(task) = a
        .docs
        .send_message(&Caller::anonymous(), send)
        .await
        .expect("sent")
    else {
        panic!("not a task");
    };
    assert_eq!(task.artifacts.len(), 2);
    let uri = format!("agentlog://tasks/docs%3A{}", task.id);
    // Legacy, through the other replica: every artifact part with its media type.
    let (status, read) = legacy(b.addr, "resources/read", json!({"uri": uri})).await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(
        read["result"]["contents"],
        json!([
            {"uri": format!("{uri}/artifacts/summary"), "mimeType": "text/plain", "text": "about logs"},
            {"uri": format!("{uri}/artifacts/chart"), "mimeType": "image/png", "blob": "iVBORw=="}
        ])
    );
    // Modern: the URI is the Mcp-Name; the finished task's read keeps, privately.
    let chart = format!("{uri}/artifacts/chart");
    let (status, read) = modern(
        b.addr,
        "resources/read",
        json!({"uri": chart}),
        Some(&chart),
    )
    .await;
    assert_eq!(status, 200, "{read}");
    let result = &read["result"];
    assert_eq!(result["contents"][0]["blob"], "iVBORw==");
    assert_eq!(
        (
            &result["resultType"],
            &result["cacheScope"],
            &result["ttlMs"]
        ),
        (&json!("complete"), &json!("private"), &json!(60_000))
    );
    for name in [None, Some("docs://other")] {
        let (status, refused) = modern(b.addr, "resources/read", json!({"uri": chart}), name).await;
        assert_eq!(
            (status, refused["error"]["code"].as_i64()),
            (400, Some(-32020)),
            "{name:?}"
        );
    }
    // The task is on both replicas' listings, after the configured resource.
    for replica in [&a, &b] {
        let (_, listed) = modern(replica.addr, "resources/list", json!({}), None).await;
        let uris: Vec<&str> = listed["result"]["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .map(|r| r["uri"].as_str().expect("uri"))
            .collect();
        assert_eq!(uris, ["docs://readme", uri.as_str()]);
        assert_eq!(listed["result"]["cacheScope"], "private");
    }
    // Not found: -32602 naming the URI (400 in the modern era, 200 in the legacy one).
    let missing = format!("{uri}/artifacts/none");
    let (status, refused) = modern(
        b.addr,
        "resources/read",
        json!({"uri": missing}),
        Some(&missing),
    )
    .await;
    assert_eq!(
        (status, refused["error"]["code"].as_i64()),
        (400, Some(-32602))
    );
    assert_eq!(refused["error"]["data"]["uri"], missing.as_str());
    let (status, refused) = legacy(b.addr, "resources/read", json!({"uri": "docs://none"})).await;
    assert_eq!(
        (status, refused["error"]["code"].as_i64()),
        (200, Some(-32602))
    );
}

#[tokio::test]
async fn configured_resources_prompts_and_completions_in_both_eras() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let server = replica(&log).await;
    let addr = server.addr;
    let (_, init) = legacy(
        addr,
        "initialize",
        json!({"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    let (_, discover) = modern(addr, "server/discover", json!({}), None).await;
    for capabilities in [
        &init["result"]["capabilities"],
        &discover["result"]["capabilities"],
    ] {
        for capability in ["tools", "prompts"] {
            assert_eq!(
                capabilities[capability],
                json!({"listChanged": true}),
                "{capability}: {capabilities}"
            );
        }
        assert_eq!(capabilities["completions"], json!({}));
        assert_eq!(
            capabilities["resources"],
            json!({"subscribe": true, "listChanged": true})
        );
    }
    let (_, page) = legacy(
        addr,
        "resources/read",
        json!({"uri": "docs://pages/install"}),
    )
    .await;
    assert_eq!(page["result"]["contents"][0]["text"], "page install");
    let (_, templates) = modern(addr, "resources/templates/list", json!({}), None).await;
    assert_eq!(
        templates["result"]["resourceTemplates"][2]["uriTemplate"],
        "docs://pages/{page}"
    );
    assert_eq!(templates["result"]["cacheScope"], "public");
    let (_, prompts) = legacy(addr, "prompts/list", json!({})).await;
    assert_eq!(prompts["result"]["prompts"][0]["name"], "summarize");
    let params = json!({"name": "summarize", "arguments": {"page": "usage"}});
    let (status, got) = modern(addr, "prompts/get", params.clone(), Some("summarize")).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(
        got["result"]["messages"][0]["content"]["resource"]["uri"],
        "docs://pages/usage"
    );
    assert_eq!(
        got["result"]["messages"][1]["content"]["text"],
        "Summarize the usage page."
    );
    let (status, refused) = modern(addr, "prompts/get", params, Some("other")).await;
    assert_eq!(
        (status, refused["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    let (status, refused) = modern(
        addr,
        "prompts/get",
        json!({"name": "summarize"}),
        Some("summarize"),
    )
    .await;
    assert_eq!(
        (status, refused["error"]["code"].as_i64()),
        (400, Some(-32602))
    );
    let complete = json!({"ref": {"type": "ref/resource", "uri": "docs://pages/{page}"},
                          "argument": {"name": "page", "value": "in"}});
    for (status, got) in [
        legacy(addr, "completion/complete", complete.clone()).await,
        modern(addr, "completion/complete", complete, None).await,
    ] {
        assert_eq!(status, 200, "{got}");
        assert_eq!(
            got["result"]["completion"]["values"],
            json!(["intro", "install"])
        );
    }
    // Subscriptions are the 2026-07-28 era's subscriptions/listen, not a method of their own.
    let (status, refused) = modern(
        addr,
        "resources/subscribe",
        json!({"uri": "docs://readme"}),
        None,
    )
    .await;
    assert_eq!(
        (status, refused["error"]["code"].as_i64()),
        (404, Some(-32601))
    );
}
