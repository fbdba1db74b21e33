//! Over HTTP, without a port: extensions (the `A2A-Extensions` header, a required one missing,
//! the echo, the handler seeing them) and an agent answering with a message (`{"message"}`,
//! a one-frame stream, no task for `GetTask`).

#![allow(clippy::unwrap_used)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use serde_json::{Value, json};

use super::*;
use crate::bridge::BridgeConfig;
use crate::worker::{TaskContext, Worker, WorkerConfig, handler_fn};

const REQUIRED: &str = "urn:agentlog:test:required";
const OPTIONAL: &str = "urn:agentlog:test:optional";

/// A router whose card declares a required and an optional extension, over a worker that
/// answers every message with a message naming the extensions it saw.
async fn app() -> (Router, Worker) {
    let log = crate::log::open("memory://").await.unwrap();
    let mut config = BridgeConfig::new("ext");
    config.card.capabilities.extensions = serde_json::from_value(json!([
        {"uri": REQUIRED, "required": true},
        {"uri": OPTIONAL, "description": "optional"}
    ]))
    .unwrap();
    let bridge = Bridge::open(log.clone(), config).await.unwrap();
    let mut worker_config = WorkerConfig::new("ext");
    worker_config.view = Some(bridge.view().clone());
    let handler = handler_fn(|task: TaskContext| async move {
        task.reply_text(&format!("saw [{}]", task.extensions().join(" ")))
            .await?;
        Ok(())
    });
    let worker = Worker::start(log, worker_config, handler).await.unwrap();
    (router(bridge, HttpConfig::default()), worker)
}

fn send(method: &str, message_id: &str) -> Value {
    let params = json!({"message": {"messageId": message_id, "role": "ROLE_USER",
                                    "parts": [{"text": "hi"}]}});
    envelope(json!(1), method, params)
}

async fn post(app: &Router, body: &Value, extensions: Option<&str>) -> Reply {
    let mut request = Request::post("/")
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(extensions) = extensions {
        request = request.header("A2A-Extensions", extensions);
    }
    call(app, request.body(Body::from(body.to_string())).unwrap()).await
}

#[tokio::test]
async fn a_send_without_a_required_extension_is_refused_with_32008_and_writes_nothing() {
    let (app, worker) = app().await;
    for method in ["SendMessage", "SendStreamingMessage"] {
        let reply = post(&app, &send(method, &format!("m-{method}")), None).await;
        // Before any stream: plain JSON (A2A §3.1.6).
        assert!(
            reply.content_type().starts_with("application/json"),
            "{method}"
        );
        assert_eq!(reply.json()["error"]["code"], -32008, "{method}");
        let message = reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(message.contains(REQUIRED), "{message}");
        // An optional one alone does not do.
        let reply = post(&app, &send(method, &format!("m2-{method}")), Some(OPTIONAL)).await;
        assert_eq!(reply.json()["error"]["code"], -32008);
    }
    let listed = post(&app, &envelope(json!(2), "ListTasks", json!({})), None).await;
    assert_eq!(listed.json()["result"]["tasks"], json!([]));
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn activated_extensions_reach_the_handler_and_are_echoed_and_the_answer_is_a_message() {
    let (app, worker) = app().await;
    let header = format!("urn:not-declared, {OPTIONAL},{REQUIRED}");
    let reply = post(&app, &send("SendMessage", "m-1"), Some(&header)).await;
    // Only the declared ones are activated, in the card's order.
    assert_eq!(
        reply.headers["a2a-extensions"],
        format!("{REQUIRED}, {OPTIONAL}").as_str()
    );
    let message = &reply.json()["result"]["message"];
    assert_eq!(message["role"], "ROLE_AGENT", "{}", reply.json());
    assert_eq!(
        message["parts"][0]["text"],
        format!("saw [{REQUIRED} {OPTIONAL}]").as_str()
    );
    assert!(message.get("taskId").is_none(), "{message}");
    assert!(reply.json()["result"].get("task").is_none());

    // There is no task: GetTask answers task-not-found.
    let task_id = agentlog_wire::ids::task_id("", "", "m-1");
    let get = envelope(json!(3), "GetTask", json!({"id": task_id}));
    assert_eq!(post(&app, &get, None).await.json()["error"]["code"], -32001);

    // A streaming send answered with a message: exactly one frame, the message.
    let reply = post(&app, &send("SendStreamingMessage", "m-2"), Some(REQUIRED)).await;
    assert!(reply.content_type().starts_with("text/event-stream"));
    let frames = reply.frames();
    assert_eq!(frames.len(), 1, "{}", reply.text());
    let result = &frames[0].json()["result"];
    assert_eq!(
        result["message"]["parts"][0]["text"],
        format!("saw [{REQUIRED}]").as_str()
    );

    // The message's own `extensions` activate too (no header).
    let mut body = send("SendMessage", "m-3");
    body["params"]["message"]["extensions"] = json!([REQUIRED]);
    let reply = post(&app, &body, None).await;
    assert_eq!(
        reply.json()["result"]["message"]["parts"][0]["text"],
        format!("saw [{REQUIRED}]").as_str()
    );
    worker.shutdown().await.unwrap();
}
