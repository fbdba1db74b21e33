//! Legacy `notifications/cancelled {requestId}` cancels the sync `tools/call` it names, through
//! any bridge: the call on bridge A, the notification on bridge B, the worker's handler sees
//! the cancellation and the call answers as cancelled. Another caller's notification, or one
//! naming another id, cancels nothing. A notification whose sender goes away before its 202
//! (a client closing right after it cancelled) still cancels, and so does one that overtakes
//! its call.

use std::sync::Arc;

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, McpReply, McpRequest, ToolConfig};
use agentlog::worker::{ToolCall, Tools, tool_fn};
use agentlog_integration::mcp_rpc::{SOON, two_bridges};
use agentlog_wire::TaskState;
use agentlog_wire::a2a::ListTasksRequest;
use agentlog_wire::mcp::{CallToolResult, Tool};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const AGENT: &str = "mcp.cancel";

fn config() -> McpConfig {
    McpConfig::new(vec![ToolConfig {
        agent: Some(AGENT.into()),
        ..ToolConfig::new(Tool::new("hang", json!({"type": "object"})))
    }])
}

/// `hang` says it started, waits for its cancellation, and says it saw it.
fn tools(events: mpsc::UnboundedSender<&'static str>) -> Tools {
    let events = Arc::new(events);
    Tools::new().tool(
        "hang",
        tool_fn(move |call: ToolCall| {
            let events = events.clone();
            async move {
                let _ = events.send("started");
                call.task.cancellation().cancelled().await;
                let _ = events.send("cancelled");
                Ok(CallToolResult::text("cancelled"))
            }
        }),
    )
}

/// One legacy JSON-RPC message (no `_meta`), as `caller`.
async fn send(mcp: &McpBridge, caller: &Caller, body: Value) -> McpReply {
    let body = body.to_string();
    let request = McpRequest {
        body: body.as_bytes(),
        caller: caller.clone(),
        headers: None,
        accepts_stream: false,
    };
    mcp.handle(request).await
}

async fn cancelled(mcp: &McpBridge, caller: &Caller, request_id: Value) {
    let reply = send(
        mcp,
        caller,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": request_id, "reason": "test"}}),
    )
    .await;
    assert!(matches!(reply, McpReply::Accepted), "{reply:?}");
}

/// The state of alice's only task, as bridge `mcp` sees it now.
async fn state(mcp: &McpBridge) -> TaskState {
    let page = mcp.bridges()[AGENT]
        .list_tasks(&Caller::principal("alice"), ListTasksRequest::default())
        .await
        .expect("list");
    assert_eq!(page.tasks.len(), 1, "{page:?}");
    page.tasks[0].status.state
}

/// Two bridges and a worker, and alice's legacy sync call of `hang` with JSON-RPC id `id`
/// through bridge A, once its handler has started; then the handler's events.
async fn a_hanging_call(
    id: u64,
) -> (
    McpBridge,
    McpBridge,
    agentlog::worker::Worker,
    tokio::task::JoinHandle<McpReply>,
    mpsc::UnboundedReceiver<&'static str>,
) {
    let (events, mut seen) = mpsc::unbounded_channel();
    let (a, b, worker) = two_bridges(config, AGENT, tools(events)).await;
    let call = tokio::spawn({
        let a = a.clone();
        async move {
            let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                              "params": {"name": "hang", "arguments": {}}});
            send(&a, &Caller::principal("alice"), body).await
        }
    });
    let started = tokio::time::timeout(SOON, seen.recv()).await;
    assert_eq!(started, Ok(Some("started")));
    (a, b, worker, call, seen)
}

#[tokio::test]
async fn a_legacy_cancel_notification_cancels_the_sync_call_it_names_on_any_bridge() {
    let (a, b, _worker, call, mut seen) = a_hanging_call(42).await;
    let alice = Caller::principal("alice");

    // Another caller's notification, another id, a string of the same digits, or a modern
    // notification (a modern call is cancelled by its client going away): nothing.
    cancelled(&b, &Caller::principal("bob"), json!(42)).await;
    cancelled(&b, &alice, json!(41)).await;
    cancelled(&b, &alice, json!("42")).await;
    let modern = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
        "requestId": 42,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    assert!(matches!(send(&b, &alice, modern).await, McpReply::Accepted));
    assert!(!state(&b).await.is_terminal());
    assert!(seen.try_recv().is_err(), "the handler was cancelled");

    // The call's own id, on the other bridge: the handler sees it, the call answers.
    cancelled(&b, &alice, json!(42)).await;
    let seen = tokio::time::timeout(SOON, seen.recv()).await;
    assert_eq!(seen, Ok(Some("cancelled")));
    let reply = tokio::time::timeout(SOON, call)
        .await
        .expect("the call answered")
        .expect("joined");
    let McpReply::Json { status, body } = reply else {
        panic!("{reply:?}");
    };
    let body: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], 42, "{body}");
    assert_eq!(body["error"]["message"], "the call was cancelled", "{body}");
    assert_eq!(state(&a).await, TaskState::Canceled);

    // Once it is over, the same notification again is accepted and changes nothing.
    cancelled(&a, &alice, json!(42)).await;
    assert_eq!(state(&a).await, TaskState::Canceled);
}

#[tokio::test]
async fn a_cancel_notification_whose_sender_goes_away_before_the_answer_still_cancels() {
    let (a, b, _worker, call, mut seen) = a_hanging_call(7).await;
    let alice = Caller::principal("alice");

    // The notification's request is polled once, then dropped, as a server drops the
    // request of a connection its client closed (the notification, answered at once, may be
    // done by then; its cancel goes on either way).
    let body = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": 7}})
    .to_string();
    let request = McpRequest {
        body: body.as_bytes(),
        caller: alice.clone(),
        headers: None,
        accepts_stream: false,
    };
    let mut notified = Box::pin(b.handle(request));
    let _ = futures::poll!(notified.as_mut());
    drop(notified);

    let seen = tokio::time::timeout(SOON, seen.recv()).await;
    assert_eq!(seen, Ok(Some("cancelled")));
    let reply = tokio::time::timeout(SOON, call)
        .await
        .expect("the call answered");
    assert!(
        matches!(reply, Ok(McpReply::Json { status: 200, .. })),
        "{reply:?}"
    );
    assert_eq!(state(&a).await, TaskState::Canceled);
}

#[tokio::test]
async fn a_cancel_notification_that_overtakes_its_call_cancels_it_once_it_shows() {
    let (events, _seen) = mpsc::unbounded_channel();
    let (a, b, _worker) = two_bridges(config, AGENT, tools(events)).await;
    let alice = Caller::principal("alice");
    // Answered at once; the call it names is looked for a while.
    cancelled(&b, &alice, json!(9)).await;
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "hang", "arguments": {}}});
    let reply = tokio::time::timeout(SOON, send(&a, &alice, body))
        .await
        .expect("the call answered");
    let McpReply::Json { body, .. } = reply else {
        panic!("{reply:?}");
    };
    let body: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(body["error"]["message"], "the call was cancelled", "{body}");
}
