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
use crate::worker::{Worker, WorkerConfig};
pub(super) use agent::TestAgent;

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
    let worker = Worker::start(log, worker_config, TestAgent).await.unwrap();
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

pub(super) async fn call(app: &Router, mut request: Request<Body>) -> Reply {
    // What every HTTP/1.1 client sends (the guarded routes refuse a request without it).
    if !request.headers().contains_key(header::HOST) {
        let loopback = header::HeaderValue::from_static("127.0.0.1");
        request.headers_mut().insert(header::HOST, loopback);
    }
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

/// The text of a JSON-RPC request with id 7 and `params` spliced in as given.
fn rpc_text(method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{params}}}"#)
}

pub(super) fn envelope(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

mod agent;
mod bad_input;
mod card;
mod extension;
mod port;
mod rest;
mod streaming;
