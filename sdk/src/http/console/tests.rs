//! Console tests: `oneshot` requests over an in-memory log, no port. The browser test (a real
//! Chromium against `agentlog serve`) is `tests/console/`.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use futures::StreamExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::bridge::BridgeConfig;
use crate::edge::Identity;
use crate::http::auth::ApiKeys;

/// A `SendMessage` of "hi" under `message_id`, answered at once.
fn send_request(
    message_id: &str,
    return_immediately: bool,
) -> agentlog_wire::a2a::SendMessageRequest {
    serde_json::from_value(json!({
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"returnImmediately": return_immediately},
    }))
    .unwrap()
}

/// Upper bound against hangs only.
const PATIENCE: Duration = Duration::from_secs(30);

async fn bridge(agent: &str) -> Bridge {
    let log = crate::log::open("memory://").await.unwrap();
    Bridge::open(log, BridgeConfig::new(agent)).await.unwrap()
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri)
        .header(header::HOST, "127.0.0.1")
        .body(Body::empty())
        .unwrap()
}

fn with_key(mut request: Request<Body>, key: &str) -> Request<Body> {
    request
        .headers_mut()
        .insert("x-api-key", key.parse().unwrap());
    request
}

async fn call(app: &Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = tokio::time::timeout(PATIENCE, app.clone().oneshot(request))
        .await
        .unwrap()
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The `data:` of each SSE frame of `response` up to the `caught-up` one, parsed.
async fn records_until_caught_up(app: &Router, request: Request<Body>) -> Vec<Value> {
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body().into_data_stream();
    let mut text = String::new();
    let mut records = Vec::new();
    loop {
        let chunk = tokio::time::timeout(PATIENCE, body.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(cut) = text.find("\n\n") {
            let frame: String = text.drain(..cut + 2).collect();
            if frame.contains("event: caught-up") {
                return records;
            }
            if let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) {
                records.push(serde_json::from_str(data).unwrap());
            }
        }
    }
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_and_fetch_nothing_elsewhere() {
    let app = router(
        vec![(bridge("a").await, ConsoleBinding::A2a)],
        ConsoleConfig::new(),
    );
    for (path, kind) in [
        ("/console", "text/html"),
        ("/console/", "text/html"),
        ("/console/console.js", "text/javascript"),
        ("/console/console.css", "text/css"),
    ] {
        let response = app.clone().oneshot(get(path)).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let content_type = response.headers()[header::CONTENT_TYPE].to_str().unwrap();
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
        let policy = response.headers()["content-security-policy"]
            .to_str()
            .unwrap();
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    }
    // Everything the page loads is its own: no URL with a scheme in any asset.
    for asset in [INDEX_HTML, CONSOLE_JS, CONSOLE_CSS] {
        assert!(!asset.contains("://"), "an asset names another host");
    }
    let (status, _) = call(&app, get("/console/nothing")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let post = Request::post("/console/api/tasks")
        .header(header::HOST, "127.0.0.1")
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(&app, post).await.0, StatusCode::METHOD_NOT_ALLOWED);
    // DNS rebinding: a host that is not allowed gets nothing.
    let foreign = Request::get("/console/api/agents")
        .header(header::HOST, "evil.example")
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(&app, foreign).await.0, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn tasks_list_filter_count_read_follow_and_cancel_through_the_bridge() {
    let a2a = bridge("agent").await;
    let tools = bridge("mcp.tools").await;
    let anonymous = Caller::anonymous();
    for id in ["m-1", "m-2", "m-3"] {
        a2a.send_message(&anonymous, send_request(id, true))
            .await
            .unwrap();
    }
    tools
        .send_message(&anonymous, send_request("t-1", true))
        .await
        .unwrap();
    let app = router(
        vec![
            (a2a.clone(), ConsoleBinding::A2a),
            (tools.clone(), ConsoleBinding::Mcp),
        ],
        ConsoleConfig::new(),
    );
    let (status, agents) = call(&app, get("/console/api/agents")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        agents,
        json!({"agents": [{"name": "agent", "binding": "a2a"}, {"name": "mcp.tools", "binding": "mcp"}], "auth": false})
    );
    let ids = |page: &Value| -> Vec<String> {
        page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, all) = call(&app, get("/console/api/tasks")).await;
    assert_eq!(ids(&all).len(), 4);
    assert_eq!(all["nextPageToken"], "");
    let (_, mcp) = call(&app, get("/console/api/tasks?binding=mcp")).await;
    assert_eq!(ids(&mcp), [agentlog_wire::ids::task_id("", "", "t-1")]);
    assert_eq!(mcp["tasks"][0]["binding"], "mcp");
    // Pages of two over both agents: every task once.
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let uri = format!("/console/api/tasks?pageSize=2&pageToken={token}");
        let (status, page) = call(&app, get(&uri)).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        seen.extend(ids(&page));
        token = page["nextPageToken"].as_str().unwrap().to_owned();
        if token.is_empty() {
            break;
        }
    }
    seen.sort();
    let mut expected = ids(&all);
    expected.sort();
    assert_eq!(seen, expected);
    let (status, bad) = call(&app, get("/console/api/tasks?state=TASK_STATE_NOPE")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    assert_eq!(bad["error"]["kind"], "invalid_params");

    // Cancel one, then the counts and the state filter see it.
    let task_id = agentlog_wire::ids::task_id("", "", "m-2");
    let cancel = Request::post(format!("/console/api/tasks/agent/{task_id}/cancel"))
        .header(header::HOST, "127.0.0.1")
        .body(Body::empty())
        .unwrap();
    let (status, canceled) = call(&app, cancel).await;
    assert_eq!(status, StatusCode::OK, "{canceled}");
    assert_eq!(canceled["task"]["status"]["state"], "TASK_STATE_CANCELED");
    let (_, counts) = call(&app, get("/console/api/counts")).await;
    assert_eq!(counts["counts"]["TASK_STATE_SUBMITTED"], 3);
    assert_eq!(counts["counts"]["TASK_STATE_CANCELED"], 1);
    let (_, only) = call(&app, get("/console/api/tasks?state=TASK_STATE_CANCELED")).await;
    assert_eq!(ids(&only), std::slice::from_ref(&task_id));
    let (status, task) = call(&app, get(&format!("/console/api/tasks/agent/{task_id}"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(task["task"]["id"], task_id.as_str());

    // Its records: the command, then the cancel request, in log order.
    let records = records_until_caught_up(
        &app,
        get(&format!("/console/api/tasks/agent/{task_id}/records")),
    )
    .await;
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["command", "cancel"]);
    assert_eq!(records[0]["summary"], "hi");
    assert!(records.iter().all(|r| r["verdict"] == "applied"));
    // Resuming after the first skips it.
    let mut resume = get(&format!("/console/api/tasks/agent/{task_id}/records"));
    let first = records[0]["offset"].to_string();
    resume
        .headers_mut()
        .insert("last-event-id", first.parse().unwrap());
    let rest = records_until_caught_up(&app, resume).await;
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["kind"], "cancel");
    // A task of another agent is not found under this one; an unknown agent is refused.
    let tool_task = agentlog_wire::ids::task_id("", "", "t-1");
    let (status, missing) = call(&app, get(&format!("/console/api/tasks/agent/{tool_task}"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    assert_eq!(missing["error"]["kind"], "task_not_found");
    let (status, _) = call(&app, get(&format!("/console/api/tasks/nobody/{tool_task}"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn with_auth_each_caller_sees_only_its_own_tasks() {
    let a2a = bridge("agent").await;
    let identity = |principal: &str, scopes: &[&str]| Identity {
        caller: Caller::principal(principal),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
    };
    let keys = ApiKeys::default()
        .with_key(
            "alice-key",
            identity("alice", &["tasks:read", "tasks:cancel"]),
        )
        .with_key("bob-key", identity("bob", &["tasks:read"]));
    let auth = EdgeAuth::new(keys);
    let alice = Caller::principal("alice");
    a2a.send_message(&alice, send_request("m-1", true))
        .await
        .unwrap();
    let task_id = agentlog_wire::ids::task_id("", "alice", "m-1");
    let app = router(
        vec![(a2a, ConsoleBinding::A2a)],
        ConsoleConfig::new().auth(auth),
    );
    // The page is public; its data is not.
    let (status, _) = call(&app, get("/console")).await;
    assert_eq!(status, StatusCode::OK);
    let response = app
        .clone()
        .oneshot(get("/console/api/tasks"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.headers().contains_key(header::WWW_AUTHENTICATE));
    let (status, _) = call(&app, with_key(get("/console/api/tasks"), "guess")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (_, agents) = call(&app, with_key(get("/console/api/agents"), "alice-key")).await;
    assert_eq!(agents["auth"], true);
    let (_, mine) = call(&app, with_key(get("/console/api/tasks"), "alice-key")).await;
    assert_eq!(mine["tasks"][0]["id"], task_id.as_str());
    let (_, theirs) = call(&app, with_key(get("/console/api/tasks"), "bob-key")).await;
    assert_eq!(theirs["tasks"], json!([]));
    let task_uri = format!("/console/api/tasks/agent/{task_id}");
    let (status, _) = call(&app, with_key(get(&task_uri), "bob-key")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(
        &app,
        with_key(get(&format!("{task_uri}/records")), "bob-key"),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Canceling needs tasks:cancel, which bob's key lacks.
    let cancel = |key: &str| {
        with_key(
            Request::post(format!("{task_uri}/cancel"))
                .header(header::HOST, "127.0.0.1")
                .body(Body::empty())
                .unwrap(),
            key,
        )
    };
    assert_eq!(call(&app, cancel("bob-key")).await.0, StatusCode::FORBIDDEN);
    let (status, canceled) = call(&app, cancel("alice-key")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(canceled["task"]["status"]["state"], "TASK_STATE_CANCELED");
    // A tenant the credentials do not hold is refused.
    let (status, _) = call(
        &app,
        with_key(get("/console/api/tasks?tenant=acme"), "alice-key"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_calls_trace_context_is_on_its_records() {
    let a2a = bridge("agent").await;
    let app = crate::http::router(a2a.clone(), crate::http::HttpConfig::default()).merge(router(
        vec![(a2a, ConsoleBinding::A2a)],
        ConsoleConfig::new(),
    ));
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params":
        serde_json::to_value(send_request("m-traced", true)).unwrap()});
    let post = Request::post("/")
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/json")
        .header("traceparent", parent)
        .header("tracestate", "a=1")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, sent) = call(&app, post).await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    let task_id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let mut headers = axum::http::HeaderMap::new();
    headers.append("traceparent", parent.parse().unwrap());
    headers.append("tracestate", "a=1".parse().unwrap());
    headers.append("tracestate", "b=2".parse().unwrap());
    assert_eq!(
        crate::http::trace_of(&headers).unwrap().tracestate(),
        "a=1,b=2"
    );
    // Two parents are none at all (W3C).
    headers.append("traceparent", parent.parse().unwrap());
    assert_eq!(crate::http::trace_of(&headers), None);
    // Canceled without the header: that record carries none.
    let cancel = Request::post(format!("/console/api/tasks/agent/{task_id}/cancel"))
        .header(header::HOST, "127.0.0.1")
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(&app, cancel).await.0, StatusCode::OK);
    let records = records_until_caught_up(
        &app,
        get(&format!("/console/api/tasks/agent/{task_id}/records")),
    )
    .await;
    let traces: Vec<(&str, &Value)> = records
        .iter()
        .map(|r| (r["kind"].as_str().unwrap(), &r["trace"]))
        .collect();
    assert_eq!(
        traces,
        [("command", &json!(parent)), ("cancel", &Value::Null)]
    );
}
