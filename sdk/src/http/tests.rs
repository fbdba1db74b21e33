//! Router tests: `oneshot` requests over an in-memory log, no port; one test on loopback.
//! Timeouts are only upper bounds against hangs; nothing asserts on timing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::bridge::BridgeConfig;
use crate::worker::{DemoHandler, Worker, WorkerConfig};

const PATIENCE: Duration = Duration::from_secs(60);

async fn bridge() -> Bridge {
    let log = crate::log::open("memory://").await.unwrap();
    Bridge::open(log, BridgeConfig::new("t")).await.unwrap()
}

async fn app() -> Router {
    router(bridge().await, HttpConfig::default())
}

/// A router and the demo worker behind it.
async fn app_with_worker(config: HttpConfig) -> (Router, Worker) {
    app_on(crate::log::open("memory://").await.unwrap(), config).await
}

/// A router over `log` and the demo worker behind it (the auth tests use it too).
pub(super) async fn app_on(log: crate::log::Log, config: HttpConfig) -> (Router, Worker) {
    let bridge = Bridge::open(log.clone(), BridgeConfig::new("t"))
        .await
        .unwrap();
    let mut worker_config = WorkerConfig::new("t");
    worker_config.view = Some(bridge.view().clone());
    let worker = Worker::start(log, worker_config, DemoHandler)
        .await
        .unwrap();
    (router(bridge, config), worker)
}

pub(super) struct Reply {
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    pub(super) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub(super) fn content_type(&self) -> &str {
        self.headers
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap())
            .unwrap_or_default()
    }

    pub(super) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The SSE frames of an event-stream body.
    pub(super) fn frames(&self) -> Vec<Frame> {
        assert!(
            self.content_type().starts_with("text/event-stream"),
            "not SSE: {} {}",
            self.content_type(),
            self.text()
        );
        parse_sse(&self.text())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Frame {
    id: Option<String>,
    pub(super) event: Option<String>,
    data: String,
}

impl Frame {
    pub(super) fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

fn parse_sse(text: &str) -> Vec<Frame> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut frame = Frame {
                id: None,
                event: None,
                data: String::new(),
            };
            let mut any = false;
            for line in block.lines() {
                let value = |prefix: &str| {
                    line.strip_prefix(prefix)
                        .map(|v| v.strip_prefix(' ').unwrap_or(v).to_owned())
                };
                if let Some(v) = value("id:") {
                    frame.id = Some(v);
                } else if let Some(v) = value("event:") {
                    frame.event = Some(v);
                } else if let Some(v) = value("data:") {
                    frame.data.push_str(&v);
                    any = true;
                }
            }
            any.then_some(frame)
        })
        .collect()
}

pub(super) async fn call(app: &Router, request: Request<Body>) -> Reply {
    let response = tokio::time::timeout(PATIENCE, app.clone().oneshot(request))
        .await
        .expect("the router answers in time")
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = tokio::time::timeout(
        PATIENCE,
        axum::body::to_bytes(response.into_body(), usize::MAX),
    )
    .await
    .expect("the body ends in time")
    .unwrap();
    Reply {
        status,
        headers,
        body,
    }
}

pub(super) fn rpc_request(body: impl Into<Body>) -> Request<Body> {
    Request::post("/")
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .unwrap()
}

async fn rpc(app: &Router, body: Value) -> Reply {
    call(app, rpc_request(body.to_string())).await
}

fn send_params(text: &str, return_immediately: bool) -> Value {
    json!({
        "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                    "parts": [{"text": text}]},
        "configuration": {"returnImmediately": return_immediately}
    })
}

pub(super) fn envelope(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

// ---------------------------------------------------------------------------------------
// Bad input: a table.

/// How a case's request differs from a good one, and what must come back.
struct Case {
    name: &'static str,
    body: Vec<u8>,
    content_type: Option<&'static str>,
    headers: Vec<(&'static str, &'static str)>,
    /// Send the body as a stream of chunks with no `Content-Length`.
    chunked: bool,
    status: StatusCode,
    code: i64,
    /// Substrings of `error.message`.
    says: &'static [&'static str],
}

fn case(name: &'static str, body: impl Into<Vec<u8>>, code: i64) -> Case {
    Case {
        name,
        body: body.into(),
        content_type: Some("application/json"),
        headers: Vec::new(),
        chunked: false,
        status: StatusCode::OK,
        code,
        says: &[],
    }
}

impl Case {
    fn says(mut self, says: &'static [&'static str]) -> Self {
        self.says = says;
        self
    }
    fn content_type(mut self, content_type: Option<&'static str>) -> Self {
        self.content_type = content_type;
        self
    }
    fn header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }
    fn status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }
    fn chunked(mut self) -> Self {
        self.chunked = true;
        self
    }
}

fn rpc_text(method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{params}}}"#)
}

const MSG: &str = r#"{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}"#;

fn bad_cases() -> Vec<Case> {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"{}"}}]}}}}}}"#,
        "x".repeat(1024 * 1024)
    );
    vec![
        // -32700: not JSON.
        case("empty body", "", -32700).says(&["Invalid JSON"]),
        case("lone brace", "{", -32700),
        case("plain text", "hello", -32700),
        case("trailing comma", r#"{"jsonrpc":"2.0","id":1,}"#, -32700),
        case(
            "truncated",
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask""#,
            -32700,
        ),
        case("single quotes", "{'jsonrpc':'2.0'}", -32700),
        case("trailing garbage", r#"{"jsonrpc":"2.0"} x"#, -32700),
        case("NaN literal", r#"{"jsonrpc":"2.0","id":NaN}"#, -32700),
        case(
            "not UTF-8",
            &b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\"}"[..],
            -32700,
        ),
        case("unclosed batch", "[1,2", -32700),
        // -32600: JSON, but not a JSON-RPC request object.
        case("empty batch", "[]", -32600),
        case(
            "batch of one",
            format!("[{}]", rpc_text("GetTask", r#"{"id":"x"}"#)),
            -32600,
        ),
        case("string", r#""GetTask""#, -32600),
        case("number", "42", -32600),
        case("null", "null", -32600),
        case("boolean", "true", -32600),
        case("empty object", "{}", -32600).says(&["jsonrpc"]),
        case(
            "jsonrpc 1.0",
            r#"{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"x"}}"#,
            -32600,
        ),
        case(
            "jsonrpc as number",
            r#"{"jsonrpc":2.0,"id":1,"method":"GetTask","params":{"id":"x"}}"#,
            -32600,
        ),
        case("missing method", r#"{"jsonrpc":"2.0","id":1}"#, -32600).says(&["method"]),
        case(
            "method not a string",
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            -32600,
        ),
        case("params a string", rpc_text("GetTask", r#""x""#), -32600).says(&["params"]),
        case("params a number", rpc_text("GetTask", "3"), -32600),
        // -32601: unknown methods.
        case("camelCase method", rpc_text("sendMessage", "{}"), -32601).says(&["sendMessage"]),
        case(
            "0.3 name that never existed",
            rpc_text("tasks/list", "{}"),
            -32601,
        ),
        case("empty method", rpc_text("", "{}"), -32601),
        case("near miss", rpc_text("message/sendx", "{}"), -32601),
        // -32602: parameters.
        case(
            "SendMessage without params",
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage"}"#,
            -32602,
        )
        .says(&["params"]),
        case(
            "SendMessage without message",
            rpc_text("SendMessage", "{}"),
            -32602,
        )
        .says(&["message"]),
        case(
            "parts not a list",
            rpc_text(
                "SendMessage",
                r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":"hi"}}"#,
            ),
            -32602,
        )
        .says(&["message.parts"]),
        case(
            "unknown role",
            rpc_text(
                "SendMessage",
                r#"{"message":{"messageId":"m","role":"ROLE_X","parts":[{"text":"hi"}]}}"#,
            ),
            -32602,
        )
        .says(&["message.role"]),
        case(
            "historyLength a string",
            rpc_text(
                "SendMessage",
                &format!(r#"{{"message":{MSG},"configuration":{{"historyLength":"ten"}}}}"#),
            ),
            -32602,
        )
        .says(&["configuration.historyLength"]),
        case(
            "historyLength negative",
            rpc_text(
                "SendMessage",
                &format!(r#"{{"message":{MSG},"configuration":{{"historyLength":-1}}}}"#),
            ),
            -32602,
        )
        .says(&["historyLength"]),
        case(
            "GetTask id a number",
            rpc_text("GetTask", r#"{"id":5}"#),
            -32602,
        )
        .says(&["id"]),
        case(
            "GetTask without params",
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask"}"#,
            -32602,
        ),
        case(
            "GetTask historyLength a string",
            rpc_text("GetTask", r#"{"id":"x","historyLength":"all"}"#),
            -32602,
        )
        .says(&["historyLength"]),
        case(
            "GetTask params a list",
            rpc_text("GetTask", r#"["x"]"#),
            -32602,
        ),
        case(
            "ListTasks pageSize a string",
            rpc_text("ListTasks", r#"{"pageSize":"x"}"#),
            -32602,
        )
        .says(&["pageSize"]),
        case(
            "ListTasks pageSize 0",
            rpc_text("ListTasks", r#"{"pageSize":0}"#),
            -32602,
        )
        .says(&["pageSize"]),
        case(
            "ListTasks pageSize 1000",
            rpc_text("ListTasks", r#"{"pageSize":1000}"#),
            -32602,
        )
        .says(&["pageSize"]),
        case(
            "CancelTask id a list",
            rpc_text("CancelTask", r#"{"id":[]}"#),
            -32602,
        )
        .says(&["id"]),
        case(
            "0.3 send without message",
            rpc_text("message/send", "{}"),
            -32602,
        ),
        case(
            "SubscribeToTask id a number",
            rpc_text("SubscribeToTask", r#"{"id":1}"#),
            -32602,
        )
        .says(&["id"]),
        case(
            "bad Last-Event-ID",
            rpc_text("SubscribeToTask", r#"{"id":"x"}"#),
            -32602,
        )
        .header("last-event-id", "abc")
        .says(&["Last-Event-ID"]),
        // A2A errors.
        case(
            "GetTask unknown id",
            rpc_text("GetTask", r#"{"id":"nope"}"#),
            -32001,
        )
        .says(&["nope"]),
        case(
            "CancelTask unknown id",
            rpc_text("CancelTask", r#"{"id":"nope"}"#),
            -32001,
        ),
        case(
            "SubscribeToTask unknown id",
            rpc_text("SubscribeToTask", r#"{"id":"nope"}"#),
            -32001,
        )
        .says(&["not found"]),
        case(
            "0.3 get unknown id",
            rpc_text("tasks/get", r#"{"id":"nope"}"#),
            -32001,
        ),
        case(
            "push config",
            rpc_text(
                "CreateTaskPushNotificationConfig",
                r#"{"taskId":"t","url":"http://x"}"#,
            ),
            -32003,
        ),
        case(
            "extended card",
            rpc_text("GetExtendedAgentCard", "{}"),
            -32004,
        ),
        case(
            "A2A-Version 2.0",
            rpc_text("GetTask", r#"{"id":"x"}"#),
            -32009,
        )
        .header("a2a-version", "2.0")
        .says(&["2.0"]),
        case(
            "A2A-Version garbage",
            rpc_text("GetTask", r#"{"id":"x"}"#),
            -32009,
        )
        .header("a2a-version", "latest"),
        case(
            "A2A-Version 0.2",
            rpc_text("GetTask", r#"{"id":"x"}"#),
            -32009,
        )
        .header("a2a-version", "0.2"),
        // Transport refusals: an HTTP status and a JSON-RPC body.
        case("oversize body", big.clone(), -32600)
            .status(StatusCode::PAYLOAD_TOO_LARGE)
            .says(&["exceeds 1048576 bytes"]),
        case("oversize chunked body", big, -32600)
            .chunked()
            .status(StatusCode::PAYLOAD_TOO_LARGE)
            .says(&["exceeds 1048576 bytes"]),
        case(
            "no content type",
            rpc_text("GetTask", r#"{"id":"x"}"#),
            -32005,
        )
        .content_type(None)
        .status(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        .says(&["application/json", "application/a2a+json"]),
        case(
            "a part of a media type the agent does not take",
            rpc_text(
                "SendMessage",
                r#"{"message":{"messageId":"m-media","role":"ROLE_USER","parts":[{"raw":"dGNr","mediaType":"application/x-unsupported-tck-type"}]}}"#,
            ),
            -32005,
        )
        .says(&["application/x-unsupported-tck-type", "text/plain"]),
        case("text/plain", rpc_text("GetTask", r#"{"id":"x"}"#), -32005)
            .content_type(Some("text/plain"))
            .status(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        case("form", rpc_text("GetTask", r#"{"id":"x"}"#), -32005)
            .content_type(Some("application/x-www-form-urlencoded"))
            .status(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        case(
            "json lookalike",
            rpc_text("GetTask", r#"{"id":"x"}"#),
            -32005,
        )
        .content_type(Some("application/jsonx"))
        .status(StatusCode::UNSUPPORTED_MEDIA_TYPE),
    ]
}

#[tokio::test]
async fn bad_requests_get_the_right_errors_and_the_server_stays_up() {
    let app = app().await;
    let cases = bad_cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let mut builder = Request::post("/");
        if let Some(content_type) = case.content_type {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        for (name, value) in &case.headers {
            builder = builder.header(*name, *value);
        }
        let body = if case.chunked {
            let chunks: Vec<Result<Bytes, std::io::Error>> = case
                .body
                .chunks(64 * 1024)
                .map(|c| Ok(Bytes::copy_from_slice(c)))
                .collect();
            Body::from_stream(futures::stream::iter(chunks))
        } else {
            Body::from(case.body.clone())
        };
        let reply = call(&app, builder.body(body).unwrap()).await;
        // Every error before a stream starts is plain JSON, streaming methods' too (§3.1.6).
        if !reply.content_type().starts_with("application/json") {
            failures.push(format!(
                "{}: content type {}",
                case.name,
                reply.content_type()
            ));
            continue;
        }
        let error = reply.json();
        let code = error["error"]["code"].as_i64();
        let message = error["error"]["message"].as_str().unwrap_or_default();
        let said = case.says.iter().all(|s| message.contains(s));
        if reply.status != case.status || code != Some(case.code) || !said {
            failures.push(format!(
                "{}: got {} {error}, want {} {} saying {:?}",
                case.name, reply.status, case.status, case.code, case.says
            ));
        }
        if error["jsonrpc"] != "2.0" {
            failures.push(format!("{}: not a JSON-RPC body: {error}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Still serving.
    let reply = rpc(
        &app,
        envelope(json!(1), "SendMessage", send_params("hi", true)),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let task = &reply.json()["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED", "{task}");
    let id = task["id"].as_str().unwrap();
    let reply = rpc(&app, envelope(json!(2), "GetTask", json!({"id": id}))).await;
    assert_eq!(reply.json()["result"]["id"], id);
}

#[tokio::test]
async fn both_content_types_and_parameters_are_accepted() {
    let app = app().await;
    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON;charset=UTF-8",
        "application/a2a+json",
        "application/a2a+json; charset=utf-8",
    ] {
        let request = Request::post("/")
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(rpc_text("GetTask", r#"{"id":"nope"}"#)))
            .unwrap();
        let reply = call(&app, request).await;
        assert_eq!(reply.status, StatusCode::OK, "{content_type}");
        assert_eq!(reply.content_type(), "application/json");
        assert_eq!(reply.json()["error"]["code"], -32001, "{content_type}");
    }
}

#[tokio::test]
async fn ids_are_echoed_with_their_json_type() {
    let app = app().await;
    for id in [json!("abc"), json!(7), json!(1.5), Value::Null, json!("")] {
        // An error reply...
        let reply = rpc(&app, envelope(id.clone(), "GetTask", json!({"id": "nope"}))).await;
        assert_eq!(reply.json()["id"], id);
        // ...and a success.
        let reply = rpc(
            &app,
            envelope(id.clone(), "SendMessage", send_params("x", true)),
        )
        .await;
        let body = reply.json();
        assert_eq!(body["id"], id, "{body}");
        assert!(body["result"]["task"].is_object(), "{body}");
    }
    // The exact text, not only the value: `1.50` stays `1.50`.
    let reply = call(
        &app,
        rpc_request(r#"{"jsonrpc":"2.0","id":1.50,"method":"GetTask","params":{"id":"n"}}"#),
    )
    .await;
    assert!(reply.text().contains(r#""id":1.50"#), "{}", reply.text());
}

#[tokio::test]
async fn a2a_version_values_that_are_served_pass() {
    let app = app().await;
    for version in ["1.0", "1.0.1", "0.3", " 1.0 ", ""] {
        let request = Request::post("/")
            .header(header::CONTENT_TYPE, "application/json")
            .header("a2a-version", version)
            .body(Body::from(rpc_text("GetTask", r#"{"id":"nope"}"#)))
            .unwrap();
        let reply = call(&app, request).await;
        assert_eq!(reply.json()["error"]["code"], -32001, "{version:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Streaming.

#[tokio::test]
async fn streaming_send_yields_the_task_then_events_each_with_an_id_and_resumes() {
    let (app, worker) = app_with_worker(HttpConfig::default()).await;
    let reply = rpc(
        &app,
        // Slow enough that the stream starts before the task ends.
        envelope(
            json!("s1"),
            "SendStreamingMessage",
            send_params("sleep 0.6", false),
        ),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let frames = reply.frames();
    assert!(frames.len() >= 3, "{frames:?}");
    let first = frames[0].json();
    assert!(first["result"]["task"].is_object(), "{first}");
    let task_id = first["result"]["task"]["id"].as_str().unwrap().to_owned();
    let mut last_position = None;
    for frame in &frames {
        assert_eq!(frame.event, None, "{frame:?}");
        let position: u64 = frame.id.as_deref().expect("an id line").parse().unwrap();
        assert!(Some(position) >= last_position, "positions never go back");
        last_position = Some(position);
        assert_eq!(
            frame.json()["id"],
            "s1",
            "every frame carries the request id"
        );
    }
    let last = frames.last().unwrap().json();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
    assert!(
        frames
            .iter()
            .any(|f| f.json()["result"]["artifactUpdate"].is_object())
    );

    // Resume after the first frame: exactly the frames that followed it.
    let request = Request::post("/")
        .header(header::CONTENT_TYPE, "application/json")
        .header("last-event-id", frames[0].id.clone().unwrap())
        .body(Body::from(
            envelope(json!("s1"), "SubscribeToTask", json!({"id": task_id})).to_string(),
        ))
        .unwrap();
    let resumed = call(&app, request).await.frames();
    assert_eq!(resumed, frames[1..].to_vec());

    // Without Last-Event-ID, subscribing to the finished task is refused before any stream:
    // a plain JSON-RPC error response (A2A §3.1.6), not an SSE stream.
    let reply = rpc(
        &app,
        envelope(json!(3), "SubscribeToTask", json!({"id": task_id})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.content_type().starts_with("application/json"));
    assert_eq!(reply.json()["error"]["code"], -32004);
    assert_eq!(reply.json()["id"], 3);
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn blocking_send_completes_through_the_worker() {
    let (app, worker) = app_with_worker(HttpConfig::default()).await;
    let reply = rpc(
        &app,
        envelope(json!(1), "SendMessage", send_params("round trip", false)),
    )
    .await;
    let body = reply.json();
    let task = &body["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
    let parts = task["artifacts"][0]["parts"].as_array().unwrap();
    let text: String = parts.iter().map(|p| p["text"].as_str().unwrap()).collect();
    assert_eq!(text, "echo: round trip");
    worker.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------------------
// The card, health, metrics, routing.

#[tokio::test]
async fn the_card_has_an_etag_and_answers_304() {
    let bridge = bridge().await;
    let expected = serde_json::to_value(bridge.agent_card()).unwrap();
    let app = router(bridge, HttpConfig::default());
    let mut etags = Vec::new();
    for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
        let reply = call(&app, Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(reply.content_type(), "application/json");
        assert_eq!(reply.json(), expected);
        assert_eq!(reply.headers[header::CACHE_CONTROL], "public, max-age=300");
        let etag = reply.headers[header::ETAG].to_str().unwrap().to_owned();
        assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34);
        etags.push(etag);
    }
    assert_eq!(etags[0], etags[1]);
    let etag = &etags[0];
    for (if_none_match, status) in [
        (etag.clone(), StatusCode::NOT_MODIFIED),
        (format!("W/{etag}"), StatusCode::NOT_MODIFIED),
        (format!("\"other\", {etag}"), StatusCode::NOT_MODIFIED),
        ("*".to_owned(), StatusCode::NOT_MODIFIED),
        ("\"other\"".to_owned(), StatusCode::OK),
    ] {
        let request = Request::get("/.well-known/agent-card.json")
            .header(header::IF_NONE_MATCH, &if_none_match)
            .body(Body::empty())
            .unwrap();
        let reply = call(&app, request).await;
        assert_eq!(reply.status, status, "{if_none_match}");
        assert_eq!(reply.headers[header::ETAG], etag.as_str());
        if status == StatusCode::NOT_MODIFIED {
            assert!(reply.body.is_empty());
        }
    }
    // Last-Modified, and If-Modified-Since when no If-None-Match is sent.
    let reply = call(
        &app,
        Request::get("/.well-known/agent-card.json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let last_modified = reply.headers[header::LAST_MODIFIED]
        .to_str()
        .unwrap()
        .to_owned();
    let built = httpdate::parse_http_date(&last_modified).unwrap();
    let earlier = httpdate::fmt_http_date(built - Duration::from_secs(1));
    let later = httpdate::fmt_http_date(built + Duration::from_secs(3600));
    for (headers, status) in [
        (
            vec![(header::IF_MODIFIED_SINCE, last_modified.clone())],
            StatusCode::NOT_MODIFIED,
        ),
        (
            vec![(header::IF_MODIFIED_SINCE, later)],
            StatusCode::NOT_MODIFIED,
        ),
        (vec![(header::IF_MODIFIED_SINCE, earlier)], StatusCode::OK),
        (
            vec![(header::IF_MODIFIED_SINCE, "not a date".to_owned())],
            StatusCode::OK,
        ),
        // If-None-Match wins over If-Modified-Since.
        (
            vec![
                (header::IF_NONE_MATCH, "\"other\"".to_owned()),
                (header::IF_MODIFIED_SINCE, last_modified.clone()),
            ],
            StatusCode::OK,
        ),
    ] {
        let mut request = Request::get("/.well-known/agent-card.json");
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        let reply = call(&app, request.body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, status, "{headers:?}");
        assert_eq!(reply.headers[header::LAST_MODIFIED], last_modified.as_str());
    }
}

#[tokio::test]
async fn a_prefixed_rpc_path_serves_rpc_and_the_card_under_it() {
    let app = router(
        bridge().await,
        HttpConfig {
            rpc_path: "/a2a".to_owned(),
            ..HttpConfig::default()
        },
    );
    for path in ["/a2a", "/a2a/"] {
        let request = Request::post(path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(rpc_text("GetTask", r#"{"id":"n"}"#)))
            .unwrap();
        assert_eq!(call(&app, request).await.json()["error"]["code"], -32001);
    }
    for path in [
        "/.well-known/agent-card.json",
        "/a2a/.well-known/agent-card.json",
        "/a2a/.well-known/agent.json",
    ] {
        let reply = call(&app, Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert!(reply.headers.contains_key(header::ETAG));
    }
    let reply = call(&app, rpc_request(rpc_text("GetTask", "{}"))).await;
    assert_eq!(
        reply.status,
        StatusCode::NOT_FOUND,
        "/ is not the RPC path here"
    );
    let reply = call(
        &app,
        Request::head("/a2a/.well-known/agent-card.json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.body.is_empty());
}

#[tokio::test]
async fn health_routing_errors_and_methods() {
    let app = app().await;
    let reply = call(&app, Request::get("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!(
        (reply.status, reply.text().as_str()),
        (StatusCode::OK, "ok")
    );

    let reply = call(&app, Request::get("/nope").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.json()["error"]["code"], 404);
    assert_eq!(reply.json()["error"]["status"], "NOT_FOUND");

    for method in ["GET", "PUT", "DELETE"] {
        let request = Request::builder()
            .method(method)
            .uri("/")
            .body(Body::empty())
            .unwrap();
        let reply = call(&app, request).await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(reply.headers[header::ALLOW], "POST");
        assert_eq!(reply.json()["error"]["code"], 405);
    }
    let reply = call(&app, Request::post("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn metrics_count_requests_by_method_and_code() {
    let app = app().await;
    rpc(
        &app,
        envelope(json!(1), "SendMessage", send_params("a", true)),
    )
    .await;
    rpc(&app, envelope(json!(2), "GetTask", json!({"id": "nope"}))).await;
    rpc(&app, envelope(json!(3), "GetTask", json!({"id": "nope"}))).await;
    rpc(&app, envelope(json!(4), "NoSuchMethod", json!({}))).await;
    call(&app, rpc_request("{")).await;
    rpc(
        &app,
        envelope(json!(5), "SubscribeToTask", json!({"id": "nope"})),
    )
    .await;
    let reply = call(&app, Request::get("/metrics").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(
        reply
            .content_type()
            .starts_with("application/openmetrics-text")
    );
    let text = reply.text();
    for line in [
        r#"agentlog_rpc_requests_total{method="SendMessage",code="0"} 1"#,
        r#"agentlog_rpc_requests_total{method="GetTask",code="-32001"} 2"#,
        r#"agentlog_rpc_requests_total{method="unknown",code="-32601"} 1"#,
        r#"agentlog_rpc_requests_total{method="unknown",code="-32700"} 1"#,
        r#"agentlog_rpc_requests_total{method="SubscribeToTask",code="-32001"} 1"#,
        r#"agentlog_rpc_request_duration_seconds_count{method="GetTask"} 2"#,
        "agentlog_view_lag_records ",
        "agentlog_view_records_total ",
        "agentlog_view_undecodable_records_total 0",
        // A current-thread test runtime: one worker.
        "agentlog_runtime_worker_threads 1",
        "# EOF",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[tokio::test]
async fn metrics_count_log_operations_when_given_the_logs_metrics() {
    use crate::log::layers::{FaultLayer, Faults, LogMetrics, MetricsLayer};
    let faults = Faults::new();
    let metrics = LogMetrics::new();
    let log = crate::log::open("memory://")
        .await
        .unwrap()
        .layer(FaultLayer::new(faults.clone()))
        .layer(MetricsLayer::new(metrics.clone()));
    let bridge = Bridge::open(log.clone(), BridgeConfig::new("t"))
        .await
        .unwrap();
    let config = HttpConfig {
        log_metrics: Some(metrics.clone()),
        ..HttpConfig::default()
    };
    let counted = router(bridge, config);
    rpc(
        &counted,
        envelope(json!(1), "SendMessage", send_params("a", true)),
    )
    .await;
    faults.drop_connection(1);
    let topic = crate::log::TopicRef::new("agentlog", "t.events");
    assert!(log.end_offsets(&topic).await.is_err());
    let text = call(
        &counted,
        Request::get("/metrics").body(Body::empty()).unwrap(),
    )
    .await
    .text();
    for line in [
        r#"agentlog_log_operations_total{op="append_all",outcome="ok"} 1"#,
        r#"agentlog_log_operations_total{op="end_offsets",outcome="unavailable"} 1"#,
        r#"agentlog_log_operation_duration_seconds_count{op="append_all"} 1"#,
        r#"agentlog_log_operation_duration_seconds_bucket{le="+Inf",op="append_all"} 1"#,
        // The command goes to the events topic and its copy to the commands topic.
        r#"agentlog_log_records_total{op="append_all"} 2"#,
        r#"agentlog_log_bytes_total{op="append_all"} "#,
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    // Kinds that did not occur, and operations never called, have no series.
    assert!(!text.contains(r#"outcome="corrupt""#), "{text}");
    assert!(!text.contains(r#"op="leave""#), "{text}");
    // Without the field, no log metrics.
    let plain = call(
        &app().await,
        Request::get("/metrics").body(Body::empty()).unwrap(),
    )
    .await
    .text();
    assert!(!plain.contains("agentlog_log_operations_total{"), "{plain}");
}

#[tokio::test]
async fn scraping_in_a_loop_reaches_the_log_at_most_once_a_second() {
    use crate::log::layers::{LogMetrics, LogOp, MetricsLayer};
    let metrics = LogMetrics::new();
    let log = crate::log::open("memory://")
        .await
        .unwrap()
        .layer(MetricsLayer::new(metrics.clone()));
    let bridge = Bridge::open(log, BridgeConfig::new("t")).await.unwrap();
    let app = router(bridge, HttpConfig::default());
    let scrape = || call(&app, Request::get("/metrics").body(Body::empty()).unwrap());
    let before = metrics.calls(LogOp::EndOffsets);
    let first = scrape().await.text();
    assert!(first.contains("agentlog_view_lag_records 0"), "{first}");
    for _ in 0..50 {
        assert_eq!(scrape().await.status, StatusCode::OK);
    }
    let measured = metrics.calls(LogOp::EndOffsets) - before;
    assert_eq!(measured, 1, "51 scrapes asked the log {measured} times");
}

#[tokio::test]
async fn the_log_metrics_router_serves_only_the_logs_metrics() {
    use crate::log::layers::{LogMetrics, MetricsLayer};
    let metrics = LogMetrics::new();
    let log = crate::log::open("memory://")
        .await
        .unwrap()
        .layer(MetricsLayer::new(metrics.clone()));
    let topic = crate::log::TopicRef::new("s", "t");
    log.ensure_topic(&topic, 1).await.unwrap();
    log.append(&topic, b"k", vec![Bytes::from_static(b"abcd")])
        .await
        .unwrap();
    let app = log_metrics_router(metrics);
    let reply = call(&app, Request::get("/metrics").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(
        reply
            .content_type()
            .starts_with("application/openmetrics-text")
    );
    let text = reply.text();
    for line in [
        r#"agentlog_log_operations_total{op="ensure_topic",outcome="ok"} 1"#,
        r#"agentlog_log_records_total{op="append"} 1"#,
        r#"agentlog_log_bytes_total{op="append"} 4"#,
        "# EOF",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    assert!(!text.contains("agentlog_rpc_"), "{text}");
    let reply = call(&app, Request::get("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

// ---------------------------------------------------------------------------------------
// A real port.

/// A `GetTask` of an unknown task over `stream` as raw HTTP/1.1, and the whole response.
async fn raw_get_task(mut stream: tokio::net::TcpStream) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = rpc_text("GetTask", r#"{"id":"nope"}"#);
    let request = format!(
        "POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(PATIENCE, stream.read_to_string(&mut response))
        .await
        .unwrap()
        .unwrap();
    response
}

#[tokio::test]
async fn accepted_sockets_get_nodelay() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (mut accepted, _) = listener.accept().await.unwrap();
    assert!(!accepted.nodelay().unwrap());
    tune_accepted(&mut accepted);
    assert!(accepted.nodelay().unwrap());
    drop(client);
}

#[tokio::test]
async fn serves_on_loopback_and_shuts_down() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, app().await, async move {
        let _ = stopped.await;
    }));
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let response = raw_get_task(stream).await;
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(response.contains("-32001"), "{response}");
    stop.send(()).unwrap();
    tokio::time::timeout(PATIENCE, server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_gets_408() {
    let config = HttpConfig {
        body_timeout: Duration::from_millis(100),
        ..HttpConfig::default()
    };
    let app = router(bridge().await, config);
    // The head, a first chunk, then nothing more.
    let first = futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from_static(
        b"{\"jsonrpc\":",
    ))]);
    let trickle = futures::StreamExt::chain(first, futures::stream::pending());
    let started = std::time::Instant::now();
    let reply = call(&app, rpc_request(Body::from_stream(trickle))).await;
    assert_eq!(reply.status, StatusCode::REQUEST_TIMEOUT);
    assert!(started.elapsed() < Duration::from_secs(5));
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert!(body["id"].is_null());
    // The server still serves.
    let fine = rpc(&app, envelope(json!(1), "GetTask", json!({"id": "nope"}))).await;
    assert_eq!(fine.status, StatusCode::OK);
}

#[tokio::test]
async fn connections_past_the_bound_get_503_at_once() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(super::serve_bounded(listener, app().await, 1, async move {
        let _ = stopped.await;
    }));
    // One connection open and idle holds the only place.
    let idle = tokio::net::TcpStream::connect(address).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let refused = tokio::net::TcpStream::connect(address).await.unwrap();
    let response = raw_get_task(refused).await;
    assert!(response.starts_with("HTTP/1.1 503"), "{response}");
    assert!(response.contains("retry-after: 1"), "{response}");
    assert!(response.contains("\"kind\":\"overloaded\""), "{response}");
    // Its place given back, the next connection is served.
    drop(idle);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let served = tokio::net::TcpStream::connect(address).await.unwrap();
    let response = raw_get_task(served).await;
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    stop.send(()).unwrap();
    tokio::time::timeout(PATIENCE, server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
