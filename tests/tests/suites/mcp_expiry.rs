//! The expiry of abandoned MRTR calls: a modern sync call whose tool asks
//! (`ToolCall::ask`) records a deadline (`Tools::input_timeout`) in its input-required status;
//! once it has passed, the workers' sweeper cancels the task (a cancel request on the log), and
//! a retry answers -32602 "Invalid or expired requestState". A retry before the deadline still
//! continues the call; two workers sweeping at once leave every task cancelled once, as both
//! views and both bridges read it; a worker started after the first one stopped (a restart,
//! over a log on disk) expires the task at the recorded deadline.

use std::time::Duration;

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, ToolConfig};
use agentlog::worker::{ToolCall, Tools, Worker, WorkerConfig, tool_fn};
use agentlog_integration::mcp_rpc::{SOON, rpc};
use agentlog_wire::a2a::{GetTaskRequest, ListTasksRequest, Task};
use agentlog_wire::mcp::input::deadline_of;
use agentlog_wire::mcp::{CallToolResult, Tool};
use agentlog_wire::trace::TraceContext;
use agentlog_wire::{Record, RecordBody, TaskState};
use serde_json::{Value, json};

const AGENT: &str = "mcp.expiry";

fn config() -> McpConfig {
    McpConfig::new(vec![ToolConfig {
        agent: Some(AGENT.into()),
        ..ToolConfig::new(Tool::new("confirm", json!({"type": "object"})))
    }])
}

/// `confirm` asks one elicitation, then answers what came back; its input waits `timeout`.
fn tools(timeout: Duration) -> Tools {
    Tools::new()
        .tool(
            "confirm",
            tool_fn(|call: ToolCall| async move {
                let Some(responses) = call.input_responses else {
                    let requests = json!({"ok": {"method": "elicitation/create",
                        "params": {"message": "sure?"}}});
                    let requests = requests.as_object().cloned().expect("an object");
                    call.ask("sure?", requests).await?;
                    return Ok(CallToolResult::text("asked"));
                };
                Ok(CallToolResult::structured(Value::Object(responses)))
            }),
        )
        .input_timeout("confirm", timeout)
}

fn worker_config() -> WorkerConfig {
    WorkerConfig::new(AGENT)
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
}

/// A sync call of `confirm`: its `requestState` (it must answer input_required).
async fn ask(mcp: &McpBridge) -> String {
    ask_with(mcp, meta()).await
}

/// [`ask`] with `meta` as the request's `_meta`.
async fn ask_with(mcp: &McpBridge, meta: Value) -> String {
    let (status, body) = rpc(mcp, "tools/call", json!({"name": "confirm"}), Some(meta)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "input_required", "{body}");
    body["result"]["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned()
}

/// The retry answering the ask of `state`.
async fn retry(mcp: &McpBridge, state: &str) -> (u16, Value) {
    let params = json!({"name": "confirm", "requestState": state,
        "inputResponses": {"ok": {"action": "accept", "content": {}}}});
    rpc(mcp, "tools/call", params, Some(meta())).await
}

/// The A2A task of an MCP `requestState` (`<agent>:<task id>#<round>`).
fn task_id(state: &str) -> String {
    let task = state.rsplit_once('#').expect("<task>#<round>").0;
    task.split_once(':').expect("<agent>:<id>").1.to_owned()
}

async fn task(mcp: &McpBridge, id: &str) -> Task {
    let request = GetTaskRequest {
        tenant: None,
        id: id.to_owned(),
        history_length: None,
    };
    let bridge = &mcp.bridges()[AGENT];
    bridge
        .get_task(&Caller::principal("alice"), request)
        .await
        .expect("task")
}

/// Wait until task `id` is `want` as `mcp` reads it.
async fn wait_state(mcp: &McpBridge, id: &str, want: TaskState) -> Task {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let task = task(mcp, id).await;
        if task.status.state == want {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{id} never {want}: {:?}",
            task.status.state
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The deadline the task's ask recorded (the input-required status message in its history).
fn recorded_deadline(task: &Task) -> Option<u64> {
    task.history.iter().rev().find_map(deadline_of)
}

/// The cancel requests on the agent's events topic, by task id.
async fn cancels(log: &agentlog::log::Log) -> std::collections::HashMap<String, usize> {
    let mut counts = std::collections::HashMap::new();
    for record in cancel_requests(log).await {
        *counts.entry(record.header.task_id).or_default() += 1;
    }
    counts
}

/// The cancel request records on the agent's events topic.
async fn cancel_requests(log: &agentlog::log::Log) -> Vec<Record> {
    let topics = agentlog::AgentTopics::of(AGENT);
    let mut found = Vec::new();
    let partitions = log.partitions(&topics.events).await.expect("partitions");
    for partition in 0..partitions {
        let mut offset = 0;
        loop {
            let batch = log
                .read(&topics.events, partition, offset, 500)
                .await
                .expect("read");
            let Some(last) = batch.last() else { break };
            offset = last.offset + 1;
            for stored in &batch {
                let record = Record::decode(&stored.payload).expect("record");
                if matches!(record.body, RecordBody::CancelRequest { .. }) {
                    found.push(record);
                }
            }
        }
    }
    found
}

#[tokio::test]
async fn an_abandoned_call_expires_and_its_retry_is_refused() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let mcp = McpBridge::open(log.clone(), config()).await.expect("mcp");
    let _worker = Worker::start(
        log.clone(),
        worker_config(),
        tools(Duration::from_millis(300)),
    )
    .await
    .expect("worker");
    let asked_at = agentlog::retention::now_ms();
    // Traced in its `_meta`, as an MCP client propagates a trace.
    let mut traced = meta();
    traced["traceparent"] = json!(TRACEPARENT);
    let state = ask_with(&mcp, traced).await;
    let id = task_id(&state);
    let waiting = task(&mcp, &id).await;
    assert_eq!(waiting.status.state, TaskState::InputRequired);
    let deadline = recorded_deadline(&waiting).expect("a deadline with the ask");
    assert!(
        (asked_at + 300..asked_at + 300 + 5_000).contains(&deadline),
        "asked at {asked_at}, deadline {deadline}"
    );
    let cancelled = wait_state(&mcp, &id, TaskState::Canceled).await;
    assert!(agentlog::retention::now_ms() >= deadline);
    assert_eq!(recorded_deadline(&cancelled), Some(deadline));
    let (status, body) = retry(&mcp, &state).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("expired")),
        "{body}"
    );
    assert_eq!(cancels(&log).await.get(&id), Some(&1));
    assert_eq!(task(&mcp, &id).await.history.len(), cancelled.history.len());
    // The sweeper's cancel carries the asking turn's trace context: the caller's trace.
    let cancel = cancel_requests(&log)
        .await
        .into_iter()
        .find(|r| r.header.task_id == id);
    let trace = cancel.and_then(|r| TraceContext::from_content_type(&r.header.content_type));
    let trace = trace.expect("the cancel carries a trace context");
    let wanted = TraceContext::parse(TRACEPARENT, None).expect("valid");
    assert_eq!(trace.trace_id(), wanted.trace_id());
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[tokio::test]
async fn a_retry_before_the_deadline_continues_the_call_and_zero_never_expires() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let mcp = McpBridge::open(log.clone(), config()).await.expect("mcp");
    let worker = Worker::start(log.clone(), worker_config(), tools(Duration::from_secs(30)))
        .await
        .expect("worker");
    let state = ask(&mcp).await;
    let (status, body) = retry(&mcp, &state).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    assert_eq!(
        body["result"]["structuredContent"]["ok"]["action"],
        "accept"
    );
    let done = task(&mcp, &task_id(&state)).await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert!(recorded_deadline(&done).is_some());
    worker.shutdown().await.expect("shutdown");

    // A timeout of 0 records no deadline: the call waits until its owner cancels it.
    let _worker = Worker::start(log.clone(), worker_config(), tools(Duration::ZERO))
        .await
        .expect("worker");
    let state = ask(&mcp).await;
    let id = task_id(&state);
    let waiting = task(&mcp, &id).await;
    assert_eq!(recorded_deadline(&waiting), None);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(task(&mcp, &id).await.status.state, TaskState::InputRequired);
    assert!(cancels(&log).await.is_empty());
}

#[tokio::test]
async fn two_workers_sweeping_cancel_every_abandoned_call_once_as_every_reader_sees_it() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let a = McpBridge::open(log.clone(), config()).await.expect("mcp a");
    let b = McpBridge::open(log.clone(), config()).await.expect("mcp b");
    let timeout = Duration::from_millis(400);
    let one = Worker::start(log.clone(), worker_config(), tools(timeout))
        .await
        .expect("worker one");
    let two = Worker::start(log.clone(), worker_config(), tools(timeout))
        .await
        .expect("worker two");
    let mut ids = Vec::new();
    for i in 0..8 {
        let mcp = if i % 2 == 0 { &a } else { &b };
        ids.push(task_id(&ask(mcp).await));
    }
    for id in &ids {
        wait_state(&a, id, TaskState::Canceled).await;
        wait_state(&b, id, TaskState::Canceled).await;
    }
    let counts = cancels(&log).await;
    for id in &ids {
        let count = counts.get(id).copied().unwrap_or(0);
        // One sweeper owns each partition; a rebalance may let two cancel, which folds the same.
        assert!((1..=2).contains(&count), "{id}: {count} cancel requests");
        for view in [one.view(), two.view()] {
            // A worker's view follows the log on its own: caught up first, as a read is.
            view.sync(None, SOON).await.expect("sync");
            let (info, _) = view.lookup_any(id).expect("in the view");
            assert_eq!(info.state, TaskState::Canceled);
        }
    }
    // What a second sweeper's cancel (an ownership change between two sweeps) would add:
    // the fold keeps the first terminal record, so every reader still agrees.
    let twice = Record {
        header: agentlog_wire::RecordHeader {
            task_id: ids[0].clone(),
            message_id: "expired-again".into(),
            principal: "alice".into(),
            source: "another-worker".into(),
            timestamp_ms: agentlog::retention::now_ms(),
            content_type: "application/json".into(),
            ..Default::default()
        },
        body: RecordBody::CancelRequest {
            metadata: r#"{"agentlog.mcp":{"expired":true}}"#.into(),
        },
    };
    let before = task(&a, &ids[0]).await;
    let topics = agentlog::AgentTopics::of(AGENT);
    let payload = bytes::Bytes::from(twice.encode().expect("encode"));
    log.append(&topics.events, ids[0].as_bytes(), vec![payload])
        .await
        .expect("append");
    for mcp in [&a, &b] {
        let again = wait_state(mcp, &ids[0], TaskState::Canceled).await;
        assert_eq!(again.status.timestamp, before.status.timestamp);
        assert_eq!(again.history.len(), before.history.len());
    }
    let alice = Caller::principal("alice");
    for mcp in [&a, &b] {
        let page = mcp.bridges()[AGENT]
            .list_tasks(&alice, ListTasksRequest::default())
            .await
            .expect("list");
        assert_eq!(page.tasks.len(), ids.len());
        assert!(
            page.tasks
                .iter()
                .all(|t| t.status.state == TaskState::Canceled)
        );
    }
}

#[tokio::test]
async fn a_worker_started_after_a_restart_expires_the_call_at_its_recorded_deadline() {
    use agentlog_integration::backends::Dir;
    use agentlog_integration::bridge_suite::Backend;
    let dir = Dir::new();
    let log = dir.log().await;
    let mcp = McpBridge::open(log.clone(), config()).await.expect("mcp");
    let worker = Worker::start(log.clone(), worker_config(), tools(Duration::from_secs(2)))
        .await
        .expect("worker");
    let state = ask(&mcp).await;
    let id = task_id(&state);
    let deadline = recorded_deadline(&task(&mcp, &id).await).expect("deadline");
    worker.shutdown().await.expect("shutdown");
    drop(mcp);
    assert!(agentlog::retention::now_ms() < deadline, "asked too slowly");
    // The log closes and opens again (its directory on disk); the new worker serves the tool
    // with a far longer timeout, and still expires the call when the recorded deadline passes.
    let log = dir.restart(&log).await.expect("a restart");
    let mcp = McpBridge::open(log.clone(), config())
        .await
        .expect("mcp again");
    let _worker = Worker::start(
        log.clone(),
        worker_config(),
        tools(Duration::from_secs(3600)),
    )
    .await
    .expect("worker again");
    assert_eq!(task(&mcp, &id).await.status.state, TaskState::InputRequired);
    wait_state(&mcp, &id, TaskState::Canceled).await;
    assert!(agentlog::retention::now_ms() >= deadline);
    let (status, body) = retry(&mcp, &state).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{body}"
    );
}

#[tokio::test]
async fn more_abandoned_calls_than_one_sweep_reads_all_expire() {
    // A sweep reads at most 64 deadlines; a worker starting beside more learns the rest over
    // the next sweeps.
    let log = agentlog::log::open("memory://").await.expect("log");
    let mcp = McpBridge::open(log.clone(), config()).await.expect("mcp");
    let worker = Worker::start(log.clone(), worker_config(), tools(Duration::from_secs(2)))
        .await
        .expect("worker");
    let mut ids = Vec::new();
    for _ in 0..100 {
        ids.push(task_id(&ask(&mcp).await));
    }
    worker.shutdown().await.expect("shutdown");
    let _worker = Worker::start(log.clone(), worker_config(), tools(Duration::from_secs(2)))
        .await
        .expect("worker again");
    for id in &ids {
        wait_state(&mcp, id, TaskState::Canceled).await;
    }
    let counts = cancels(&log).await;
    assert!(
        ids.iter().all(|id| counts.get(id) == Some(&1)),
        "{counts:?}"
    );
}
