//! MCP resource subscriptions across two replicas over real HTTP: a legacy session's
//! `resources/subscribe` POSTed to one replica and its stream (`GET` with `Mcp-Session-Id`)
//! held by the other hear of a task changed through the second; the modern
//! `subscriptions/listen {resourceSubscriptions}` likewise; a task made through one replica
//! is `notifications/resources/list_changed` on a stream held by the other; what is refused.

use std::net::SocketAddr;
use std::time::Duration;

use agentlog::agent::Caller;
use agentlog::http::mcp::{McpHttpConfig, router as mcp_router};
use agentlog::mcp::{McpBridge, McpConfig, McpReply, McpRequest, McpStream};
use agentlog::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
use agentlog::{Bridge, BridgeConfig};
use agentlog_wire::a2a::{Artifact, Part, SendMessageRequest, SendMessageResponse};
use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A bound on waiting for a notification (a failure, not a timing assertion).
const SOON: Duration = Duration::from_secs(20);

struct Replica {
    addr: SocketAddr,
    docs: Bridge,
    mcp: McpBridge,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn replica(log: &agentlog::log::Log) -> Replica {
    let docs = Bridge::open(log.clone(), BridgeConfig::new("docs"))
        .await
        .expect("docs");
    let definitions = json!({"resources": [
        {"uri": "docs://readme", "name": "readme", "mimeType": "text/markdown", "text": "# Read me"}
    ]});
    let config = McpConfig::from_json(definitions, None)
        .expect("definitions")
        .a2a(vec![docs.clone()]);
    let mcp = McpBridge::open(log.clone(), config).await.expect("mcp");
    let router = agentlog::http::router(docs.clone(), agentlog::http::HttpConfig::default())
        .merge(mcp_router(mcp.clone(), McpHttpConfig::default()).expect("router"));
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
        mcp,
        _stop: stop,
    }
}

/// The `docs` worker: "wait" asks for input; the answer gets an artifact and completes.
async fn worker(log: &agentlog::log::Log) -> Worker {
    let handler = handler_fn(|task: TaskContext| async move {
        if task.text() == "wait" {
            task.input_required("go on?").await?;
            return Ok(());
        }
        let artifact = Artifact {
            artifact_id: "summary".into(),
            name: None,
            description: None,
            parts: vec![Part::text(format!("about {}", task.text()))],
            metadata: None,
            extensions: Vec::new(),
        };
        task.artifact(artifact, false, true).await?;
        task.complete(None).await?;
        Ok(())
    });
    Worker::start(log.clone(), WorkerConfig::new("docs"), handler)
        .await
        .expect("worker")
}

/// A `docs` task waiting for input, sent through `replica`: its resource URI and A2A id.
async fn waiting_task(replica: &Replica, message_id: &str) -> (String, String) {
    let send: SendMessageRequest = serde_json::from_value(json!({"message": {
        "messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "wait"}]}}))
    .expect("request");
    let SendMessageResponse::Task(task) = replica
        .docs
        .send_message(&Caller::anonymous(), send)
        .await
        .expect("sent")
    else {
        panic!("not a task");
    };
    assert_eq!(task.status.state.to_string(), "TASK_STATE_INPUT_REQUIRED");
    (format!("agentlog://tasks/docs%3A{}", task.id), task.id)
}

/// Answer the waiting task through `replica`: it gets an artifact and completes.
async fn finish(replica: &Replica, task_id: &str) {
    let send: SendMessageRequest = serde_json::from_value(json!({"message": {
        "messageId": format!("go-{task_id}"), "taskId": task_id, "role": "ROLE_USER",
        "parts": [{"text": "go"}]}}))
    .expect("request");
    replica
        .docs
        .send_message(&Caller::anonymous(), send)
        .await
        .expect("continued");
}

/// One HTTP request to `/mcp`: status, the session header, the response.
async fn request(
    addr: SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Option<String>, hyper::body::Incoming) {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let mut builder = hyper::Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", format!("127.0.0.1:{}", addr.port()))
        .header("accept", "application/json, text/event-stream");
    if body.is_some() {
        builder = builder.header("content-type", "application/json");
    }
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let response = sender
        .send_request(builder.body(Full::new(Bytes::from(body))).expect("request"))
        .await
        .expect("send");
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().expect("ascii").to_owned());
    (response.status().as_u16(), session, response.into_body())
}

/// A legacy POST: status, session header, JSON body.
async fn post(
    addr: SocketAddr,
    session: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, Option<String>, Value) {
    let headers: Vec<(&str, &str)> = session.map(|s| ("mcp-session-id", s)).into_iter().collect();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (status, session, body) = request(addr, "POST", &headers, Some(body)).await;
    let bytes = body.collect().await.expect("body").to_bytes();
    let json = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)));
    (status, session, json)
}

/// The JSON-RPC messages of an SSE body, as they come.
fn messages(mut body: hyper::body::Incoming) -> mpsc::UnboundedReceiver<Value> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut text = String::new();
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(data) = frame.into_data() else {
                continue;
            };
            text.push_str(&String::from_utf8_lossy(&data));
            while let Some(end) = text.find("\n\n") {
                let event: String = text.drain(..end + 2).collect();
                for line in event.lines() {
                    if let Some(json) = line.strip_prefix("data:") {
                        let _ = tx.send(serde_json::from_str(json.trim()).expect("json"));
                    }
                }
            }
        }
    });
    rx
}

async fn next(messages: &mut mpsc::UnboundedReceiver<Value>) -> Value {
    tokio::time::timeout(SOON, messages.recv())
        .await
        .expect("a notification in time")
        .expect("the stream is open")
}

/// A 2026-07-28 `subscriptions/listen` (request id `id`) of the anonymous caller on `mcp`,
/// asking for `notifications`: the reply.
async fn listen_reply(mcp: &McpBridge, id: &str, notifications: Value) -> McpReply {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"notifications": notifications,
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let request = McpRequest {
        body: body.as_bytes(),
        caller: Caller::anonymous(),
        headers: None,
        accepts_stream: true,
    };
    mcp.handle(request).await
}

/// [`listen_reply`]'s stream, and its first frame (the acknowledgement).
async fn listen(mcp: &McpBridge, id: &str, notifications: Value) -> (McpStream, Value) {
    let McpReply::Stream(mut stream) = listen_reply(mcp, id, notifications).await else {
        panic!("not a stream");
    };
    let ack = next_frame(&mut stream).await;
    (stream, ack)
}

/// The next frame of an in-process listen stream, as JSON.
async fn next_frame(stream: &mut McpStream) -> Value {
    let bytes = tokio::time::timeout(SOON, stream.next())
        .await
        .expect("a frame in time")
        .expect("the stream is open");
    serde_json::from_slice(&bytes).expect("json")
}

#[tokio::test]
async fn a_legacy_subscription_made_through_one_replica_is_heard_on_the_other() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let (a, b) = (replica(&log).await, replica(&log).await);
    let _worker = worker(&log).await;
    let (uri, task_id) = waiting_task(&a, "m-1").await;
    let initialize = json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}});
    let (status, session, result) = post(a.addr, None, "initialize", initialize).await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(
        result["result"]["capabilities"]["resources"]["subscribe"],
        true
    );
    let session = session.expect("a legacy initialize gets a session id");
    // Any other request gets none.
    let (_, none, _) = post(a.addr, None, "ping", json!({})).await;
    assert_eq!(none, None);

    // The stream on replica A; the subscriptions through replica B.
    let (status, _, body) = request(a.addr, "GET", &[("mcp-session-id", &session)], None).await;
    assert_eq!(status, 200);
    let mut stream = messages(body);
    let artifact = format!("{uri}/artifacts/summary");
    for watched in [&uri, &artifact, &"docs://readme".to_owned()] {
        let (status, _, ok) = post(
            b.addr,
            Some(&session),
            "resources/subscribe",
            json!({"uri": watched}),
        )
        .await;
        assert_eq!((status, &ok["result"]), (200, &json!({})), "{ok}");
    }
    // The task changes through replica B: the artifact, then the end.
    finish(&b, &task_id).await;
    let mut heard = Vec::new();
    while !heard.contains(&artifact) {
        let message = next(&mut stream).await;
        assert_eq!(
            message["method"], "notifications/resources/updated",
            "{message}"
        );
        heard.push(message["params"]["uri"].as_str().expect("uri").to_owned());
    }
    assert!(heard.contains(&uri), "{heard:?}");
    assert!(
        heard.iter().all(|h| *h == uri || *h == artifact),
        "{heard:?}"
    );

    // A stream opened later, on replica B, hears of the changes since subscribing too.
    let (status, _, body) = request(b.addr, "GET", &[("mcp-session-id", &session)], None).await;
    assert_eq!(status, 200);
    let mut later = messages(body);
    let message = next(&mut later).await;
    assert_eq!(message["method"], "notifications/resources/updated");

    let (status, _, ok) = post(
        a.addr,
        Some(&session),
        "resources/unsubscribe",
        json!({"uri": uri}),
    )
    .await;
    assert_eq!((status, &ok["result"]), (200, &json!({})));
    // Refusals, nothing written: no session, a URI nobody serves.
    let (status, _, refused) = post(a.addr, None, "resources/subscribe", json!({"uri": uri})).await;
    assert_eq!(
        (status, refused["error"]["code"].as_i64()),
        (400, Some(-32600))
    );
    let (_, _, refused) = post(
        a.addr,
        Some(&session),
        "resources/subscribe",
        json!({"uri": "docs://none"}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602);
    assert_eq!(refused["error"]["data"]["uri"], "docs://none");
    // Another caller's task is not found either (an anonymous one is everyone's; not here).
    let (status, _, _) = request(a.addr, "GET", &[("mcp-session-id", "a b")], None).await;
    assert_eq!(status, 400);
    // The session ends: its streams end.
    let (status, _, _) = request(b.addr, "DELETE", &[("mcp-session-id", &session)], None).await;
    assert_eq!(status, 200);
    for stream in [&mut stream, &mut later] {
        loop {
            match tokio::time::timeout(SOON, stream.recv()).await {
                Ok(Some(_)) => continue,
                Ok(None) => break,
                Err(_) => panic!("the session's stream did not end"),
            }
        }
    }
    // An ended session is not found, on either replica.
    for addr in [a.addr, b.addr] {
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
        let (status, _, _) =
            request(addr, "POST", &[("mcp-session-id", &session)], Some(body)).await;
        assert_eq!(status, 404);
        let (status, _, _) = request(addr, "GET", &[("mcp-session-id", &session)], None).await;
        assert_eq!(status, 404);
    }
    // Without the session header GET is still 405.
    let (status, _, _) = request(a.addr, "GET", &[], None).await;
    assert_eq!(status, 405);
}

#[tokio::test]
async fn a_modern_listen_hears_of_a_resource_changed_through_another_replica() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let (a, b) = (replica(&log).await, replica(&log).await);
    let _worker = worker(&log).await;
    let (uri, task_id) = waiting_task(&a, "m-2").await;
    let asked = json!({"resourceSubscriptions": [uri, "docs://readme", "docs://none"]});
    let (mut stream, ack) = listen(&a.mcp, "listen-1", asked).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": [uri, "docs://readme"]})
    );
    finish(&b, &task_id).await;
    let updated = next_frame(&mut stream).await;
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], uri.as_str());
    assert_eq!(
        updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    // Not a list of strings: -32602.
    let asked = json!({"resourceSubscriptions": "docs://readme"});
    let McpReply::Json { status, body } = listen_reply(&a.mcp, "listen-3", asked).await else {
        panic!("not JSON");
    };
    let refused: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(
        (status, refused["error"]["code"].as_i64()),
        (400, Some(-32602))
    );
}

#[tokio::test]
async fn a_task_made_through_one_replica_changes_the_resource_list_heard_on_the_other() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let (a, b) = (replica(&log).await, replica(&log).await);
    let _worker = worker(&log).await;
    // 2026-07-28: a listen stream on replica A asking for the resources' list.
    let asked = json!({"resourcesListChanged": true});
    let (mut stream, ack) = listen(&a.mcp, "listen-2", asked).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourcesListChanged": true})
    );
    // The `initialize` era: a session's stream on replica A hears it unasked.
    let initialize = json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}});
    let (_, session, _) = post(a.addr, None, "initialize", initialize).await;
    let session = session.expect("a session id");
    let (status, _, body) = request(a.addr, "GET", &[("mcp-session-id", &session)], None).await;
    assert_eq!(status, 200);
    let mut legacy = messages(body);

    // A task of this caller made through replica B.
    let (uri, _) = waiting_task(&b, "m-3").await;
    let changed = next_frame(&mut stream).await;
    assert_eq!(changed["method"], "notifications/resources/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-2"
    );
    let message = next(&mut legacy).await;
    assert_eq!(message["method"], "notifications/resources/list_changed");
    // What changed: replica A lists it.
    let (_, _, listed) = post(a.addr, None, "resources/list", json!({})).await;
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&uri.as_str()), "{uris:?}");
}
