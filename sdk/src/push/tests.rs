//! The sender end to end in one process: a bridge, a worker, a sender and a real webhook
//! receiver (an axum server), on an in-memory log.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::verify::{Expect, Keys, verify};
use super::{Pusher, PusherConfig, RetryPolicy};
use crate::bridge::{Bridge, BridgeConfig, RpcReply, RpcRequest};
use crate::security::Destinations;
use crate::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
use crate::{Caller, log::Log};

/// One request a receiver got: its headers, its body parsed and as sent.
type Request = (HeaderMap, Value, Vec<u8>);

/// What a receiver got.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Request>>>);

/// A webhook receiver answering `status` to every POST; its URL.
async fn receiver(status: StatusCode) -> (String, Received) {
    let received = Received::default();
    let kept = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                kept.0.lock().push((headers, value, body.to_vec()));
                status
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

impl Received {
    async fn wait_for(&self, count: usize) -> Vec<Request> {
        for _ in 0..500 {
            if self.0.lock().len() >= count {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.0.lock().clone()
    }
}

async fn agent(log: &Log) -> (Bridge, Worker) {
    let open = Destinations::new().allow_private(true);
    let bridge = Bridge::open(log.clone(), BridgeConfig::new("pushed").push(open))
        .await
        .unwrap();
    let worker = Worker::start(
        log.clone(),
        WorkerConfig::new("pushed").view(bridge.view().clone()),
        handler_fn(|task: TaskContext| async move {
            task.working(Some("on it")).await?;
            task.complete(Some("done")).await?;
            Ok(())
        }),
    )
    .await
    .unwrap();
    (bridge, worker)
}

async fn send(bridge: &Bridge, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
    let body = body.to_string();
    let RpcReply::Json(bytes) = bridge
        .handle(RpcRequest::new(body.as_bytes(), Caller::anonymous()))
        .await
    else {
        panic!("not JSON");
    };
    serde_json::from_slice(&bytes).unwrap()
}

fn kinds(received: &[Request]) -> Vec<String> {
    received
        .iter()
        .map(|(_, body, _)| {
            let (kind, value) = body.as_object().unwrap().iter().next().unwrap();
            let state = value["status"]["state"].as_str().unwrap_or_default();
            format!("{kind} {state}")
        })
        .collect()
}

#[tokio::test]
async fn every_update_of_a_task_reaches_its_webhook_in_order_signed_and_authorized() {
    let log = crate::log::open("memory://").await.unwrap();
    let (bridge, _worker) = agent(&log).await;
    let (url, received) = receiver(StatusCode::OK).await;
    let config = PusherConfig::new("pushed").destinations(Destinations::new().allow_private(true));
    let pusher = Pusher::start_with_view(log.clone(), config, bridge.view().clone())
        .await
        .unwrap();
    let answer = send(
        &bridge,
        json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
               "configuration": {"taskPushNotificationConfig": {"url": url, "token": "tok",
                   "authentication": {"scheme": "Bearer", "credentials": "secret"}}}}),
    )
    .await;
    let task_id = answer["result"]["task"]["id"].as_str().unwrap().to_owned();
    let got = received.wait_for(4).await;
    assert_eq!(
        kinds(&got),
        [
            "task TASK_STATE_SUBMITTED",
            "statusUpdate TASK_STATE_WORKING",
            "statusUpdate TASK_STATE_WORKING",
            "task TASK_STATE_COMPLETED"
        ]
    );
    let keys = Keys::from_jwks(&pusher.signer().jwks().to_string()).unwrap();
    for (headers, _, raw) in &got {
        assert_eq!(headers["authorization"], "Bearer secret");
        assert_eq!(headers["x-a2a-notification-token"], "tok");
        assert_eq!(headers["content-type"], "application/json");
        let jwt = headers[super::SIGNATURE_HEADER].to_str().unwrap();
        let claims = verify(
            jwt,
            raw,
            &keys,
            &Expect::new(url.clone()).issuer("pushed".into()),
        )
        .unwrap();
        assert_eq!(claims.task_id, task_id);
    }
    let last = &got[3].1["task"];
    assert_eq!(last["history"].as_array().unwrap().len(), 3, "{last}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(received.0.lock().len(), 4, "nothing more");
    assert_eq!(pusher.metrics().counts().delivered, 4);
    pusher.stop().await;
}

#[tokio::test]
async fn a_receiver_that_always_fails_gets_a_dead_letter_per_update_and_a_healthy_one_everything() {
    let log = crate::log::open("memory://").await.unwrap();
    let (bridge, _worker) = agent(&log).await;
    let (bad, failing) = receiver(StatusCode::INTERNAL_SERVER_ERROR).await;
    let (good, healthy) = receiver(StatusCode::OK).await;
    let retry = RetryPolicy::new()
        .attempts(3)
        .first_delay(Duration::from_millis(20))
        .max_delay(Duration::from_millis(40));
    let config = PusherConfig::new("pushed")
        .destinations(Destinations::new().allow_private(true))
        .retry(retry)
        .breaker_failures(100);
    let pusher = Pusher::start_with_view(log.clone(), config, bridge.view().clone())
        .await
        .unwrap();
    let answer = send(
        &bridge,
        json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
               "configuration": {"returnImmediately": true,
                   "taskPushNotificationConfig": {"id": "bad", "url": bad}}}),
    )
    .await;
    let task_id = answer["result"]["task"]["id"].as_str().unwrap().to_owned();
    let create = json!({"jsonrpc": "2.0", "id": 2, "method": "CreateTaskPushNotificationConfig",
                        "params": {"taskId": task_id, "id": "good", "url": good}})
    .to_string();
    bridge
        .handle(RpcRequest::new(create.as_bytes(), Caller::anonymous()))
        .await;
    let got = healthy.wait_for(1).await;
    assert!(!got.is_empty());
    for _ in 0..300 {
        if pusher.metrics().counts().dead_letters >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let counts = pusher.metrics().counts();
    assert_eq!(counts.dead_letters, 4, "{counts:?}");
    assert_eq!(failing.0.lock().len(), 4 * 3, "three attempts each");
    // The dead letters are on the task's log.
    let (info, _) = bridge.view().lookup_any(&task_id).unwrap();
    let letters = bridge
        .view()
        .task_records(&info, false)
        .await
        .unwrap()
        .into_iter()
        .filter(|(_, r)| matches!(r.body, agentlog_wire::RecordBody::PushDeadLetter { .. }))
        .count();
    assert_eq!(letters, 4);
    pusher.stop().await;
}

/// The offsets and encodings of `task_id`'s records on the log, in order.
async fn encoded(bridge: &Bridge, task_id: &str) -> Vec<(u64, Vec<u8>)> {
    let view = bridge.view();
    view.sync(None, Duration::from_secs(5)).await.unwrap();
    let (info, _) = view.lookup_any(task_id).unwrap();
    let mut records = view.task_records(&info, false).await.unwrap();
    records.sort_by_key(|(at, _)| *at);
    records
        .into_iter()
        .map(|(at, record)| (at, record.encode().unwrap()))
        .collect()
}

#[tokio::test]
async fn records_of_tasks_without_configs_are_passed_over_unread_until_a_config_comes() {
    let log = crate::log::open("memory://").await.unwrap();
    let open = Destinations::new().allow_private(true);
    // No worker: the tasks stay submitted, their records only those the calls write.
    let bridge = Bridge::open(log.clone(), BridgeConfig::new("pushed").push(open))
        .await
        .unwrap();
    let config = PusherConfig::new("pushed");
    let mut tracker = super::tracked::Tracker::new(
        bridge.view().clone(),
        false,
        log.clone(),
        config.topics.events.clone(),
        100,
        Duration::from_secs(5),
    );
    let message =
        |id: &str| json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hi"}]});
    let plain = send(
        &bridge,
        json!({"message": message("m-1"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let plain = plain["result"]["task"]["id"].as_str().unwrap().to_owned();
    let inline = send(
        &bridge,
        json!({"message": message("m-2"), "configuration": {"returnImmediately": true,
            "taskPushNotificationConfig": {"url": "http://127.0.0.1:9/hook"}}}),
    )
    .await;
    let inline = inline["result"]["task"]["id"].as_str().unwrap().to_owned();
    let view = bridge.view().clone();
    for partition in 0..view.partitions() {
        tracker.assigned(partition, 0);
    }
    let passes =
        async |tracker: &mut super::tracked::Tracker, task: &str, at: u64, bytes: &[u8]| {
            tracker
                .passes_over(view.partition_of(task), at, bytes)
                .await
                .unwrap()
        };
    let plain_records = encoded(&bridge, &plain).await;
    assert!(!plain_records.is_empty());
    for (at, bytes) in &plain_records {
        assert!(
            passes(&mut tracker, &plain, *at, bytes).await,
            "a task without configs"
        );
    }
    // A message carrying a config inline is read in full, and so is its task's every record.
    for (at, bytes) in encoded(&bridge, &inline).await {
        assert!(!passes(&mut tracker, &inline, at, &bytes).await);
    }
    // A config registered later: its record is read in full, and the task's later records.
    let create = json!({"jsonrpc": "2.0", "id": 2, "method": "CreateTaskPushNotificationConfig",
                        "params": {"taskId": plain, "id": "late", "url": "http://127.0.0.1:9/late"}})
    .to_string();
    bridge
        .handle(RpcRequest::new(create.as_bytes(), Caller::anonymous()))
        .await;
    let later = encoded(&bridge, &plain).await;
    let (at, bytes) = later.last().unwrap();
    assert_eq!(
        agentlog_wire::Record::peek(bytes).unwrap().0,
        agentlog_wire::RecordKind::PushConfig
    );
    assert!(!passes(&mut tracker, &plain, *at, bytes).await);
    let (at, bytes) = &plain_records[plain_records.len() - 1];
    assert!(
        !passes(&mut tracker, &plain, *at, bytes).await,
        "the view knows of the config now"
    );
    // A record that does not read is left to the full reading.
    assert!(!passes(&mut tracker, &plain, *at, b"\x04").await);
}
