//! The bridge suite: every task verb end to end (bridge → log → worker → log → bridge), run
//! against any backend through a [`Subject`].
//!
//! Each case serves its own agent (fresh topics), so cases can share one broker. Waits are
//! bounded by generous limits only; nothing asserts on speed.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentlog::bridge::{Bridge, BridgeConfig, StreamEvent, TaskStream};
use agentlog::log::Log;
use agentlog::worker::{Handler, TaskContext, Worker, WorkerConfig, handler_fn};
use agentlog::{Caller, ErrorKind};
use agentlog_server::agents::DemoHandler;
use agentlog_wire::TaskState;
use agentlog_wire::a2a::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
};
use futures::StreamExt;

mod replicas;
mod streams;

use replicas::{
    many_concurrent_tasks_with_cancels, restart_answers_identically, two_bridges_two_workers,
};
use streams::{list_tasks_filters_and_pages, streams_snapshot_then_events};

/// A backend the suite runs on.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// A short name for messages.
    fn name(&self) -> &str;
    /// A log over fresh storage.
    async fn log(&self) -> Log;
    /// A second handle onto the same storage, as another replica would have (for a broker, a
    /// second connection; in process, the same handle).
    async fn replica(&self, log: &Log) -> Log;
    /// Close `log` and open its storage again, as after a process restart; `None` when the
    /// storage does not outlive its handle (memory).
    async fn restart(&self, log: &Log) -> Option<Log>;
}

/// Upper bound for anything that should happen "soon".
pub const SOON: Duration = Duration::from_secs(20);

/// Run every case against `subject`.
pub async fn run_all(subject: &dyn Backend) {
    crate::run_cases!(
        subject,
        "b",
        [
            send_get_and_blocking,
            unknown_ids_are_not_found,
            tasks_are_visible_only_to_their_owner,
            cancel_reaches_the_worker,
            idempotent_send,
            multi_turn,
            streams_snapshot_then_events,
            list_tasks_filters_and_pages,
            handler_errors_and_panics_fail_the_task,
            protocol_03_methods,
            two_bridges_two_workers,
            restart_answers_identically,
            many_concurrent_tasks_with_cancels,
        ]
    );
}

/// A request to send `text` as message `id`.
pub fn request(id: &str, text: &str, return_immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        tenant: None,
        message: Message::user_text(id, text),
        configuration: Some(SendMessageConfiguration {
            return_immediately,
            ..Default::default()
        }),
        metadata: None,
    }
}

/// A follow-up to `task_id`.
pub fn follow_up(task_id: &str, id: &str, text: &str) -> SendMessageRequest {
    let mut r = request(id, text, false);
    r.message.task_id = Some(task_id.to_owned());
    r
}

pub fn task(response: SendMessageResponse) -> Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(m) => panic!("expected a task, got message {m:?}"),
    }
}

pub fn config(agent: &str) -> BridgeConfig {
    let mut config = BridgeConfig::new(agent);
    config.blocking_timeout = SOON;
    config
}

pub async fn bridge(log: &Log, agent: &str) -> Bridge {
    Bridge::open(log.clone(), config(agent))
        .await
        .expect("bridge")
}

async fn worker(log: &Log, agent: &str, handler: impl Handler) -> Worker {
    Worker::start(log.clone(), WorkerConfig::new(agent), handler)
        .await
        .expect("worker")
}

/// A bridge and a demo worker for `agent` over a fresh log of `subject`.
async fn demo_agent(subject: &dyn Backend, agent: &str) -> (Bridge, Worker) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let w = worker(&log, agent, DemoHandler).await;
    (b, w)
}

pub fn get(id: &str) -> GetTaskRequest {
    GetTaskRequest {
        tenant: None,
        id: id.to_owned(),
        history_length: None,
    }
}

pub fn cancel(id: &str) -> CancelTaskRequest {
    CancelTaskRequest {
        tenant: None,
        id: id.to_owned(),
        metadata: None,
    }
}

fn subscribe(id: &str) -> SubscribeToTaskRequest {
    SubscribeToTaskRequest {
        tenant: None,
        id: id.to_owned(),
    }
}

pub async fn collect(mut stream: TaskStream) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(SOON, stream.next())
        .await
        .expect("stream event in time")
    {
        events.push(event.expect("stream event"));
    }
    events
}

/// Poll `GetTask` until `pred` holds (bounded).
pub async fn wait_for(
    bridge: &Bridge,
    caller: &Caller,
    id: &str,
    pred: impl Fn(&Task) -> bool,
) -> Task {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let t = bridge.get_task(caller, get(id)).await.expect("get");
        if pred(&t) {
            return t;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {id} stuck in {:?}",
            t.status.state
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The kind of the error `result` must be.
pub fn kind<T>(result: agentlog::Result<T>) -> ErrorKind {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.kind(),
    }
}

fn text_of(task: &Task) -> String {
    task.artifacts
        .iter()
        .flat_map(|a| a.parts.iter().filter_map(|p| p.as_text()))
        .collect()
}

async fn send_get_and_blocking(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let alice = Caller::principal("alice");
    // Without a worker: returnImmediately answers at once with the submitted task.
    let submitted = task(
        b.send_message(&alice, request("m-1", "hello", true))
            .await
            .expect("send"),
    );
    assert_eq!(submitted.status.state, TaskState::Submitted);
    assert_eq!(submitted.history.len(), 1);
    assert_eq!(
        submitted.history[0].task_id.as_deref(),
        Some(submitted.id.as_str())
    );
    let got = b.get_task(&alice, get(&submitted.id)).await.expect("get");
    assert_eq!(got, submitted);
    // A worker picks it up; a blocking send waits for the end.
    let w = worker(&log, agent, DemoHandler).await;
    let done = wait_for(&b, &alice, &submitted.id, |t| t.status.state.is_terminal()).await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(text_of(&done), "echo: hello");
    let mut blocking = request("m-2", "world", false);
    if let Some(c) = blocking.configuration.as_mut() {
        c.history_length = Some(0);
    }
    let t = task(
        b.send_message(&alice, blocking)
            .await
            .expect("blocking send"),
    );
    assert_eq!(t.status.state, TaskState::Completed);
    assert_eq!(text_of(&t), "echo: world");
    assert!(t.history.is_empty(), "historyLength 0 omits history");
    let full = b.get_task(&alice, get(&t.id)).await.expect("get");
    assert!(!full.history.is_empty());
    let one = b
        .get_task(
            &alice,
            GetTaskRequest {
                history_length: Some(1),
                ..get(&t.id)
            },
        )
        .await
        .expect("get");
    assert_eq!(one.history.len(), 1);
    assert_eq!(one.history[0], *full.history.last().expect("history"));
    w.shutdown().await.expect("shutdown");
}

async fn unknown_ids_are_not_found(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::anonymous();
    assert_eq!(
        kind(b.get_task(&c, get("nope")).await),
        ErrorKind::TaskNotFound
    );
    assert_eq!(
        kind(b.cancel_task(&c, cancel("nope")).await),
        ErrorKind::TaskNotFound
    );
    assert_eq!(
        b.subscribe_to_task(&c, subscribe("nope"), None)
            .await
            .map(|_| ())
            .expect_err("subscribe")
            .kind(),
        ErrorKind::TaskNotFound
    );
    assert_eq!(
        kind(b.send_message(&c, follow_up("nope", "m-x", "hi")).await),
        ErrorKind::TaskNotFound
    );
    assert_eq!(
        kind(b.get_task(&c, get("")).await),
        ErrorKind::InvalidParams
    );
}

async fn tasks_are_visible_only_to_their_owner(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let alice = Caller::principal("alice");
    let mallory = Caller::principal("mallory");
    let other_tenant = Caller::principal("alice").in_tenant("other");
    let t = task(
        b.send_message(&alice, request("m-1", "input", true))
            .await
            .expect("send"),
    );
    for caller in [&mallory, &other_tenant, &Caller::anonymous()] {
        assert_eq!(
            kind(b.get_task(caller, get(&t.id)).await),
            ErrorKind::TaskNotFound
        );
        assert_eq!(
            kind(b.cancel_task(caller, cancel(&t.id)).await),
            ErrorKind::TaskNotFound
        );
        assert_eq!(
            kind(b.send_message(caller, follow_up(&t.id, "m-2", "x")).await),
            ErrorKind::TaskNotFound
        );
        assert_eq!(
            b.subscribe_to_task(caller, subscribe(&t.id), None)
                .await
                .map(|_| ())
                .expect_err("subscribe")
                .kind(),
            ErrorKind::TaskNotFound
        );
        let list = b
            .list_tasks(caller, ListTasksRequest::default())
            .await
            .expect("list");
        assert!(list.tasks.is_empty());
        assert_eq!(list.total_size, 0);
    }
    // The same message id from another caller is another task.
    let m = task(
        b.send_message(&mallory, request("m-1", "input", true))
            .await
            .expect("send"),
    );
    assert_ne!(m.id, t.id);
    let list = b
        .list_tasks(&alice, ListTasksRequest::default())
        .await
        .expect("list");
    assert_eq!(
        list.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        vec![t.id.as_str()]
    );
}

async fn cancel_reaches_the_worker(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let fired = Arc::new(AtomicUsize::new(0));
    let seen = fired.clone();
    // The claim alone makes the task `working` (fold rule 10): the test cancels only once
    // the handler's own status is written, so that the cancel meets the handler waiting on
    // its token rather than still writing that status (it then fails, as it should).
    let started = Arc::new(tokio::sync::Notify::new());
    let running = started.clone();
    let w = worker(
        &log,
        agent,
        handler_fn(move |task: TaskContext| {
            let seen = seen.clone();
            let running = running.clone();
            async move {
                task.working(Some("started")).await?;
                running.notify_one();
                tokio::select! {
                    () = task.cancellation().cancelled() => { seen.fetch_add(1, Ordering::SeqCst); }
                    () = tokio::time::sleep(Duration::from_secs(60)) => {}
                }
                Ok(())
            }
        }),
    )
    .await;
    let c = Caller::anonymous();
    let t = task(
        b.send_message(&c, request("m-1", "long", true))
            .await
            .expect("send"),
    );
    tokio::time::timeout(SOON, started.notified())
        .await
        .expect("the handler never started");
    let canceled = b.cancel_task(&c, cancel(&t.id)).await.expect("cancel");
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let deadline = tokio::time::Instant::now() + SOON;
    while fired.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the handler's token never fired"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let again = b
        .cancel_task(&c, cancel(&t.id))
        .await
        .expect_err("second cancel");
    assert_eq!(again.kind(), ErrorKind::TaskNotCancelable);
    // Still canceled afterwards, whatever the worker wrote.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        b.get_task(&c, get(&t.id)).await.expect("get").status.state,
        TaskState::Canceled
    );
    w.shutdown().await.expect("shutdown");
}

async fn idempotent_send(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let handler = handler_fn(move |task: TaskContext| {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            task.complete(Some("done")).await?;
            Ok(())
        }
    });
    let w = worker(&log, agent, handler).await;
    let c = Caller::principal("alice");
    let a = bridge(&log, agent).await;
    let first = task(
        a.send_message(&c, request("same", "x", false))
            .await
            .expect("send"),
    );
    assert_eq!(first.status.state, TaskState::Completed);
    let again = task(
        a.send_message(&c, request("same", "x", false))
            .await
            .expect("send again"),
    );
    assert_eq!(again.id, first.id);
    // Through another replica, and through a bridge created anew.
    let b = bridge(&log, agent).await;
    let third = task(
        b.send_message(&c, request("same", "x", true))
            .await
            .expect("send on b"),
    );
    assert_eq!(third.id, first.id);
    drop(a);
    let a2 = bridge(&log, agent).await;
    assert_eq!(
        a2.get_task(&c, get(&first.id)).await.expect("get"),
        b.get_task(&c, get(&first.id)).await.expect("get")
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the handler runs once");
    w.shutdown().await.expect("shutdown");
}

async fn multi_turn(subject: &dyn Backend, agent: &str) {
    let (b, w) = demo_agent(subject, agent).await;
    let c = Caller::anonymous();
    let t = task(
        b.send_message(&c, request("m-1", "input", false))
            .await
            .expect("send"),
    );
    assert_eq!(t.status.state, TaskState::InputRequired);
    assert!(!t.context_id.is_empty());
    // A contradicting context.
    let mut wrong = follow_up(&t.id, "m-2", "paris");
    wrong.message.context_id = Some("another-context".into());
    assert_eq!(
        b.send_message(&c, wrong).await.expect_err("context").kind(),
        ErrorKind::InvalidParams
    );
    let mut right = follow_up(&t.id, "m-2", "paris");
    right.message.context_id = Some(t.context_id.clone());
    let done = task(b.send_message(&c, right).await.expect("continue"));
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(done.id, t.id);
    assert!(done.history.len() >= 3, "history: {:?}", done.history);
    assert!(
        text_of(&done).contains("paris") || format!("{:?}", done.status.message).contains("paris")
    );
    let late = b
        .send_message(&c, follow_up(&t.id, "m-3", "again"))
        .await
        .expect_err("terminal");
    assert_eq!(late.kind(), ErrorKind::UnsupportedOperation);
    // A second task in the same conversation shares the context.
    let mut same_context = request("m-4", "hi", false);
    same_context.message.context_id = Some(t.context_id.clone());
    let t2 = task(b.send_message(&c, same_context).await.expect("send"));
    assert_eq!(t2.context_id, t.context_id);
    w.shutdown().await.expect("shutdown");
}

async fn handler_errors_and_panics_fail_the_task(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let w = worker(
        &log,
        agent,
        handler_fn(|task: TaskContext| async move {
            match task.text().as_str() {
                "error" => Err("the model is down".into()),
                "panic" => panic!("boom"),
                _ => {
                    task.complete(Some("fine")).await?;
                    Ok(())
                }
            }
        }),
    )
    .await;
    let c = Caller::anonymous();
    let failed = task(
        b.send_message(&c, request("m-1", "error", false))
            .await
            .expect("send"),
    );
    assert_eq!(failed.status.state, TaskState::Failed);
    assert!(format!("{:?}", failed.status.message).contains("the model is down"));
    let panicked = task(
        b.send_message(&c, request("m-2", "panic", false))
            .await
            .expect("send"),
    );
    assert_eq!(panicked.status.state, TaskState::Failed);
    assert!(format!("{:?}", panicked.status.message).contains("boom"));
    let fine = task(
        b.send_message(&c, request("m-3", "ok", false))
            .await
            .expect("send"),
    );
    assert_eq!(
        fine.status.state,
        TaskState::Completed,
        "the worker kept running"
    );
    w.shutdown().await.expect("shutdown");
}

async fn protocol_03_methods(subject: &dyn Backend, agent: &str) {
    use agentlog::bridge::{RpcReply, RpcRequest};
    let (b, w) = demo_agent(subject, agent).await;
    let c = Caller::anonymous();
    let rpc = |body: serde_json::Value| {
        let b = b.clone();
        let c = c.clone();
        async move {
            let body = body.to_string();
            match b.handle(RpcRequest::new(body.as_bytes(), c)).await {
                RpcReply::Json(bytes) => {
                    serde_json::from_slice::<serde_json::Value>(&bytes).expect("json")
                }
                other => panic!("expected JSON, got {other:?}"),
            }
        }
    };
    let sent = rpc(serde_json::json!({"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"v03-1","role":"user","parts":[{"kind":"text","text":"hi"}]}}})).await;
    assert_eq!(sent["id"], 1);
    assert_eq!(sent["result"]["kind"], "task");
    assert_eq!(sent["result"]["status"]["state"], "completed");
    let id = sent["result"]["id"].as_str().expect("task id").to_owned();
    let got =
        rpc(serde_json::json!({"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id": id}}))
            .await;
    assert_eq!(got["result"]["artifacts"][0]["parts"][0]["kind"], "text");
    let cancel = rpc(
        serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tasks/cancel","params":{"id": id}}),
    )
    .await;
    assert_eq!(cancel["error"]["code"], -32002);
    let missing = rpc(
        serde_json::json!({"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"nope"}}),
    )
    .await;
    assert_eq!(missing["error"]["code"], -32001);
    let v1 =
        rpc(serde_json::json!({"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id": id}}))
            .await;
    assert_eq!(v1["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    // message/stream frames carry `kind` and `final`.
    let body = serde_json::json!({"jsonrpc":"2.0","id":5,"method":"message/stream","params":{"message":{"kind":"message","messageId":"v03-2","role":"user","parts":[{"kind":"text","text":"yo"}]}}}).to_string();
    let reply = b
        .handle(RpcRequest::new(body.as_bytes(), c.clone()).a2a_version(Some("0.3")))
        .await;
    let RpcReply::Stream(mut stream) = reply else {
        panic!("expected a stream")
    };
    let mut frames = Vec::new();
    while let Some(event) = tokio::time::timeout(SOON, stream.events.next())
        .await
        .expect("frame")
    {
        let frame: serde_json::Value =
            serde_json::from_slice(&stream.frame(&event)).expect("frame json");
        assert_eq!(frame["id"], 5);
        frames.push(frame["result"].clone());
    }
    assert_eq!(frames[0]["kind"], "task");
    assert_eq!(frames.last().expect("frames")["final"], true);
    w.shutdown().await.expect("shutdown");
}
