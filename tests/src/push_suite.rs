//! The push sender on every backend: every update of many tasks reaches a real receiver in
//! order per task, signed; two senders in one group send each update once per config; a
//! sender stopped and started again (and one over a reopened log) resumes where the group
//! stopped. The fault cases (a receiver down, always failing, forbidden destinations) are in
//! `tests/tests/suites/push_faults.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use agentlog::log::Log;
use agentlog::push::verify::{Expect, Keys, verify};
use agentlog::push::{Pusher, PusherConfig, RetryPolicy};
use agentlog::security::Destinations;
use agentlog::worker::{Worker, WorkerConfig};
use agentlog::{Bridge, BridgeConfig, Caller};
use agentlog_server::agents::DemoHandler;
use serde_json::{Value, json};

use crate::bridge_suite::Backend;
use crate::push_receiver::{Got, Receiver};

/// How long a case waits for what it expects.
pub const SOON: Duration = Duration::from_secs(30);

/// Run every case against `subject`.
pub async fn run_all(subject: &dyn Backend) {
    crate::run_cases!(
        subject,
        "p",
        [
            every_update_reaches_its_webhook_in_order_signed,
            two_senders_send_each_update_once_per_config,
            a_sender_started_again_resumes_where_the_group_stopped,
            senders_of_views_of_their_own_hold_their_share_and_lose_nothing_across_moves,
        ]
    );
}

/// An agent: a bridge serving push configs (any address), the demo worker.
#[derive(Debug)]
pub struct Agent {
    /// The bridge.
    pub bridge: Bridge,
    worker: Worker,
}

impl Agent {
    /// The agent `name` over `log`.
    pub async fn start(log: &Log, name: &str) -> Self {
        let config = BridgeConfig::new(name).push(Destinations::new().allow_private(true));
        let bridge = Bridge::open(log.clone(), config).await.expect("bridge");
        let worker = Worker::start(
            log.clone(),
            WorkerConfig::new(name).view(bridge.view().clone()),
            DemoHandler,
        )
        .await
        .expect("worker");
        Self { bridge, worker }
    }

    /// Send `text` as message `message_id` with push configs `configs` inline (the first)
    /// and registered after (the others); the task's id.
    pub async fn send(&self, message_id: &str, text: &str, configs: &[Value]) -> String {
        let mut params = json!({
            "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]},
            "configuration": {"returnImmediately": true},
        });
        if let Some(first) = configs.first() {
            params["configuration"]["taskPushNotificationConfig"] = first.clone();
        }
        let answer = self.call("SendMessage", params).await;
        let task = answer["result"]["task"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no task: {answer}"))
            .to_owned();
        for config in configs.iter().skip(1) {
            let mut config = config.clone();
            config["taskId"] = json!(task);
            let created = self.call("CreateTaskPushNotificationConfig", config).await;
            assert!(created.get("result").is_some(), "{created}");
        }
        task
    }

    /// A JSON-RPC call through the bridge's one entry.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let body = body.to_string();
        let reply = self
            .bridge
            .handle(agentlog::bridge::RpcRequest::new(
                body.as_bytes(),
                Caller::anonymous(),
            ))
            .await;
        let agentlog::bridge::RpcReply::Json(bytes) = reply else {
            panic!("{method}: not a JSON reply");
        };
        serde_json::from_slice(&bytes).expect("JSON")
    }

    /// Stop the worker.
    pub async fn stop(self) {
        self.worker.shutdown().await.expect("worker shutdown");
    }
}

/// A sender of agent `name` over `log`, sharing `bridge`'s view, to any address.
pub async fn pusher(log: &Log, name: &str, bridge: &Bridge, retry: RetryPolicy) -> Pusher {
    let config = PusherConfig::new(name).retry(retry);
    pusher_with(log, bridge, config).await
}

/// A sender with `config` (to any address) over `log`, sharing `bridge`'s view.
pub async fn pusher_with(log: &Log, bridge: &Bridge, config: PusherConfig) -> Pusher {
    let config = config.destinations(Destinations::new().allow_private(true));
    Pusher::start_with_view(log.clone(), config, bridge.view().clone())
        .await
        .expect("pusher")
}

/// The kind of a notification (`task`, `statusUpdate`, ...) and its state, if it has one.
pub fn kind(got: &Got) -> String {
    let body = got.json();
    let Some((kind, value)) = body.as_object().and_then(|o| o.iter().next()) else {
        return format!("not a StreamResponse: {body}");
    };
    match value["status"]["state"].as_str() {
        Some(state) => format!("{kind} {}", state.trim_start_matches("TASK_STATE_")),
        None => kind.clone(),
    }
}

/// The task a notification is about.
pub fn task_of(got: &Got) -> String {
    let body = got.json();
    let Some((kind, value)) = body.as_object().and_then(|o| o.iter().next()) else {
        return String::new();
    };
    let field = if kind == "task" { "id" } else { "taskId" };
    value[field].as_str().unwrap_or_default().to_owned()
}

/// The notifications of each task, in arrival order.
pub fn by_task(got: &[Got]) -> BTreeMap<String, Vec<String>> {
    let mut tasks: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for got in got {
        tasks.entry(task_of(got)).or_default().push(kind(got));
    }
    tasks
}

/// What the demo's echo tells a webhook registered with its message: the task, its worker
/// starting, three chunks, the finished task.
pub const ECHO: [&str; 6] = [
    "task SUBMITTED",
    "statusUpdate WORKING",
    "artifactUpdate",
    "artifactUpdate",
    "artifactUpdate",
    "task COMPLETED",
];

fn hook(receiver: &Receiver, path: &str) -> Value {
    json!({"url": receiver.url(path), "token": "tok",
           "authentication": {"scheme": "Bearer", "credentials": "secret"}})
}

async fn every_update_reaches_its_webhook_in_order_signed(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let a = Agent::start(&log, agent).await;
    let sender = pusher(&log, agent, &a.bridge, RetryPolicy::new()).await;
    let receiver = Receiver::start(200).await;
    const TASKS: usize = 100;
    let mut ids = Vec::new();
    for n in 0..TASKS {
        ids.push(
            a.send(
                &format!("m-{n}"),
                &format!("hi {n}"),
                &[hook(&receiver, "/hook")],
            )
            .await,
        );
    }
    let got = receiver.wait_for(TASKS * ECHO.len(), SOON).await;
    let tasks = by_task(&got);
    assert_eq!(tasks.len(), TASKS);
    for id in &ids {
        assert_eq!(tasks[id], ECHO, "task {id}");
    }
    let keys = Keys::from_jwks(&sender.signer().jwks().to_string()).expect("jwks");
    let expect = Expect::new(receiver.url("/hook")).issuer(agent.to_owned());
    for got in &got {
        assert_eq!(got.header("authorization"), Some("Bearer secret"));
        assert_eq!(got.header("x-a2a-notification-token"), Some("tok"));
        assert_eq!(got.header("content-type"), Some("application/json"));
        let jwt = got
            .header(agentlog::push::SIGNATURE_HEADER)
            .expect("a signature");
        let claims = verify(jwt, &got.body, &keys, &expect).expect("verifies");
        assert_eq!(claims.task_id, task_of(got));
    }
    // Nothing more comes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.count(), TASKS * ECHO.len());
    sender.stop().await;
    a.stop().await;
}

async fn two_senders_send_each_update_once_per_config(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let a = Agent::start(&log, agent).await;
    let replica_log = subject.replica(&log).await;
    let b = Agent::start(&replica_log, agent).await;
    // Replicas share one notification key (docs/push.md), so either's JWKS verifies all.
    let key = agentlog::security::SigningKey::generate().expect("key");
    let config = PusherConfig::new(agent).notification_key(key);
    let one = pusher_with(&log, &a.bridge, config.clone()).await;
    let two = pusher_with(&replica_log, &b.bridge, config).await;
    assert_eq!(one.published().jwks(), two.published().jwks());
    // Both members hold their share before any update is written.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let receiver = Receiver::start(200).await;
    const TASKS: usize = 40;
    for n in 0..TASKS {
        let via = if n % 2 == 0 { &a } else { &b };
        let configs = [hook(&receiver, "/one"), hook(&receiver, "/two")];
        via.send(&format!("m-{n}"), "hi", &configs).await;
    }
    // The second config is registered after the send: it may find the task at any point.
    let deadline = tokio::time::Instant::now() + SOON;
    let first = |got: &[Got]| got.iter().filter(|g| g.path == "/one").count();
    while first(&receiver.got()) < TASKS * ECHO.len() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = receiver.got();
    let mut seen = std::collections::HashMap::new();
    for got in &got {
        *seen
            .entry((got.path.clone(), got.body.clone()))
            .or_insert(0) += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent more than once: {}", twice.len());
    assert_eq!(
        first(&got),
        TASKS * ECHO.len(),
        "every update to the first config"
    );
    let counts = (one.metrics().counts(), two.metrics().counts());
    assert_eq!(counts.0.delivered + counts.1.delivered, got.len() as u64);
    assert!(
        counts.0.delivered > 0 && counts.1.delivered > 0,
        "both sent: {counts:?}"
    );
    // A receiver that fetched the JWKS of either replica verifies what both sent.
    for sender in [&one, &two] {
        let keys = Keys::from_jwks(&sender.published().jwks().to_string()).expect("jwks");
        for got in &got {
            let expect = Expect::new(receiver.url(&got.path)).issuer(agent.to_owned());
            let jwt = got
                .header(agentlog::push::SIGNATURE_HEADER)
                .expect("a signature");
            verify(jwt, &got.body, &keys, &expect).expect("verifies against either JWKS");
        }
    }
    one.stop().await;
    two.stop().await;
    a.stop().await;
    b.stop().await;
}

async fn a_sender_started_again_resumes_where_the_group_stopped(
    subject: &dyn Backend,
    agent: &str,
) {
    let log = subject.log().await;
    let a = Agent::start(&log, agent).await;
    let receiver = Receiver::start(200).await;
    let sender = pusher(&log, agent, &a.bridge, RetryPolicy::new()).await;
    for n in 0..10 {
        a.send(&format!("m-{n}"), "hi", &[hook(&receiver, "/hook")])
            .await;
    }
    receiver.wait_for(10 * ECHO.len(), SOON).await;
    sender.stop().await;
    // Updates while no sender runs wait on the log.
    for n in 10..20 {
        a.send(&format!("m-{n}"), "hi", &[hook(&receiver, "/hook")])
            .await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.count(), 10 * ECHO.len(), "no sender, nothing sent");
    // The agent goes too, and its log is reopened where a backend can.
    a.stop().await;
    let log = subject.restart(&log).await.unwrap_or(log);
    let a = Agent::start(&log, agent).await;
    let again = pusher(&log, agent, &a.bridge, RetryPolicy::new()).await;
    let got = receiver.wait_for(20 * ECHO.len(), SOON).await;
    let tasks = by_task(&got);
    assert_eq!(tasks.len(), 20);
    for (id, kinds) in &tasks {
        assert_eq!(kinds, &ECHO, "task {id}: each once, in order");
    }
    again.stop().await;
    a.stop().await;
}

/// A sender over a view of its own ([`Pusher::start`]: `agentlog pusher`, and `serve` when
/// its bridge holds a share), to any address.
async fn own_sender(log: &Log, config: &PusherConfig) -> Pusher {
    let config = config
        .clone()
        .destinations(Destinations::new().allow_private(true));
    Pusher::start(log.clone(), config).await.expect("pusher")
}

/// Send tasks `from..to` through `agent`, each with one webhook; their ids.
async fn send_many(agent: &Agent, receiver: &Receiver, from: usize, to: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for n in from..to {
        ids.push(
            agent
                .send(&format!("m-{n}"), "hi", &[hook(receiver, "/hook")])
                .await,
        );
    }
    ids
}

/// Wait until every task of `ids` got each of its updates at least once, in order: the
/// updates are a subsequence of what it got (a sender that took a partition over sends again
/// what was delivered since the last commit, at least once as ever).
async fn every_update_of(receiver: &Receiver, ids: &[String]) {
    let told = |kinds: &[String]| {
        let mut next = 0;
        for kind in kinds {
            if next < ECHO.len() && kind == ECHO[next] {
                next += 1;
            }
        }
        next
    };
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let tasks = by_task(&receiver.got());
        let missing: Vec<(&String, usize)> = ids
            .iter()
            .map(|id| (id, tasks.get(id).map_or(0, |kinds| told(kinds))))
            .filter(|(_, told)| *told < ECHO.len())
            .collect();
        if missing.is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "updates lost (task, how many of its updates came in order): {missing:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn senders_of_views_of_their_own_hold_their_share_and_lose_nothing_across_moves(
    subject: &dyn Backend,
    agent: &str,
) {
    let log = subject.log().await;
    let a = Agent::start(&log, agent).await;
    let partitions = a.bridge.view().partitions() as usize;
    let receiver = Receiver::start(200).await;
    let key = agentlog::security::SigningKey::generate().expect("key");
    let config = PusherConfig::new(agent).notification_key(key);
    let one = own_sender(&log, &config).await;
    let two = own_sender(&log, &config).await;
    // Both members hold their share before any update is written.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut ids = send_many(&a, &receiver, 0, 20).await;
    every_update_of(&receiver, &ids).await;
    let (held_one, held_two) = (one.partitions_held(), two.partitions_held());
    assert!(
        !held_one.is_empty() && !held_two.is_empty(),
        "each sender's view holds its share: {held_one:?} {held_two:?}"
    );
    assert!(
        held_one.iter().all(|p| !held_two.contains(p)),
        "no partition in both views: {held_one:?} {held_two:?}"
    );
    assert!(held_one.len() < partitions && held_two.len() < partitions);
    // A sender stops mid-stream: the other takes its partitions over, holding them too.
    ids.extend(send_many(&a, &receiver, 20, 30).await);
    one.stop().await;
    ids.extend(send_many(&a, &receiver, 30, 40).await);
    every_update_of(&receiver, &ids).await;
    // A third joins: the group moves some of the second's partitions to it, and the second
    // lets them go.
    let three = own_sender(&log, &config).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    ids.extend(send_many(&a, &receiver, 40, 70).await);
    every_update_of(&receiver, &ids).await;
    let (held_two, held_three) = (two.partitions_held(), three.partitions_held());
    assert!(
        held_two.iter().all(|p| !held_three.contains(p)),
        "no partition in both views after the move: {held_two:?} {held_three:?}"
    );
    assert!(
        held_two.len() < partitions && !held_three.is_empty(),
        "{held_two:?} {held_three:?}"
    );
    two.stop().await;
    three.stop().await;
    a.stop().await;
}
