//! The push sender against receivers that fail: one down for five seconds (everything comes
//! once it is up, in order), one that always answers 500 (dead letters after the policy, while
//! a healthy config of the same task gets everything on time), and destinations the guard
//! forbids (refused, no connection made).

use std::time::{Duration, Instant};

use agentlog::push::{Pusher, PusherConfig, RetryPolicy};
use agentlog::security::Destinations;
use agentlog_integration::push_receiver::Receiver;
use agentlog_integration::push_suite::{Agent, ECHO, SOON, by_task, pusher};
use agentlog_integration::streamer::partition_records;
use agentlog_wire::RecordBody;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_down_for_five_seconds_gets_everything_in_order_once_up() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let agent = Agent::start(&log, "down").await;
    let retry = RetryPolicy::new()
        .attempts(30)
        .first_delay(Duration::from_millis(100))
        .max_delay(Duration::from_secs(1));
    let sender = pusher(&log, "down", &agent.bridge, retry).await;
    let receiver = Receiver::start(200).await;
    receiver.down();
    let hook = json!({"url": receiver.url("/hook")});
    for n in 0..5 {
        agent
            .send(&format!("m-{n}"), "hi", std::slice::from_ref(&hook))
            .await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(receiver.count(), 0);
    assert!(sender.metrics().counts().failed_attempts > 0);
    receiver.up().await;
    let got = receiver.wait_for(5 * ECHO.len(), SOON).await;
    let deadline = Instant::now() + SOON;
    while sender.metrics().counts().pending > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let tasks = by_task(&got);
    assert_eq!(tasks.len(), 5);
    for (id, kinds) in &tasks {
        assert_eq!(kinds, &ECHO, "task {id}: everything, in order, once");
    }
    let counts = sender.metrics().counts();
    assert_eq!(
        (counts.delivered, counts.dead_letters),
        (30, 0),
        "{counts:?}"
    );
    sender.stop().await;
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_always_failing_receiver_is_dead_lettered_and_a_healthy_config_gets_everything_on_time()
{
    let log = agentlog::log::open("memory://").await.expect("log");
    let agent = Agent::start(&log, "failing").await;
    let retry = RetryPolicy::new()
        .attempts(4)
        .first_delay(Duration::from_millis(200))
        .max_delay(Duration::from_millis(400));
    // Its circuit would fail attempts without sending: here every attempt is a request.
    let config = PusherConfig::new("failing")
        .destinations(Destinations::new().allow_private(true))
        .retry(retry)
        .breaker_failures(1000);
    let sender = Pusher::start_with_view(log.clone(), config, agent.bridge.view().clone())
        .await
        .expect("pusher");
    let healthy = Receiver::start(200).await;
    let failing = Receiver::start(500).await;
    let started = Instant::now();
    let task = agent
        .send(
            "m-1",
            "hi",
            &[
                json!({"id": "good", "url": healthy.url("/hook")}),
                json!({"id": "bad", "url": failing.url("/hook")}),
            ],
        )
        .await;
    let got = healthy.wait_for(ECHO.len(), SOON).await;
    let on_time = started.elapsed();
    assert_eq!(by_task(&got)[&task], ECHO);
    // Before the failing config's first notification is even given up (4 attempts, 0.2 s
    // apart at least): the failing one holds nothing of the healthy one's.
    assert!(
        on_time < Duration::from_millis(600),
        "the healthy config waited {on_time:?}"
    );
    let mut letters = 0;
    let deadline = Instant::now() + SOON;
    while Instant::now() < deadline {
        letters = sender.metrics().counts().dead_letters;
        if letters > 0
            && failing.count() as u64 == 4 * letters
            && sender.metrics().counts().pending == 0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The failing config was registered after the command: from its snapshot on.
    let told = failing
        .got()
        .iter()
        .map(|g| g.body.clone())
        .collect::<std::collections::BTreeSet<_>>();
    assert_eq!(
        letters,
        told.len() as u64,
        "one dead letter per notification: {:?}",
        failing
            .got()
            .iter()
            .map(agentlog_integration::push_suite::kind)
            .collect::<Vec<_>>()
    );
    assert_eq!(failing.count(), 4 * told.len(), "each sent four times");
    // The dead letters are records on the task's log, saying what was given up (the sender
    // counts one once appended: the bridge's view is caught up with the log first).
    let view = agent.bridge.view();
    view.sync(None, SOON).await.expect("sync");
    let (info, _) = view.lookup_any(&task).expect("task");
    let records = view.task_records(&info, false).await.expect("read");
    let dead: Vec<_> = records
        .iter()
        .filter_map(|(_, r)| match &r.body {
            RecordBody::PushDeadLetter {
                config_id,
                attempts,
                reason,
                ..
            } => Some((config_id.clone(), *attempts, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(dead.len() as u64, letters);
    for (config, attempts, reason) in dead {
        assert_eq!((config.as_str(), attempts), ("bad", 4));
        assert!(reason.contains("500"), "{reason}");
    }
    sender.stop().await;
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_destinations_are_refused_without_a_connection() {
    let log = agentlog::log::open("memory://").await.expect("log");
    // The bridge takes any address; the sender allows public ones only, the default.
    let agent = Agent::start(&log, "guarded").await;
    let config = PusherConfig::new("guarded").retry(RetryPolicy::new().attempts(3));
    let sender = Pusher::start_with_view(log.clone(), config, agent.bridge.view().clone())
        .await
        .expect("pusher");
    let receiver = Receiver::start(200).await;
    let port = receiver.port();
    let destinations = [
        format!("http://127.0.0.1:{port}/loopback"),
        format!("http://localhost:{port}/named"),
        format!("http://[::1]:{port}/v6"),
        format!("http://[::ffff:127.0.0.1]:{port}/mapped"),
        "http://169.254.169.254/latest/meta-data".to_owned(),
        "http://10.0.0.1/private".to_owned(),
    ];
    for (n, url) in destinations.iter().enumerate() {
        agent
            .send(&format!("m-{n}"), "hi", &[json!({"url": url})])
            .await;
    }
    let expected = (destinations.len() * ECHO.len()) as u64;
    let deadline = Instant::now() + SOON;
    while sender.metrics().counts().dead_letters < expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let counts = sender.metrics().counts();
    assert_eq!(
        (counts.dead_letters, counts.refused, counts.delivered),
        (expected, expected, 0),
        "each refused at once: {counts:?}"
    );
    assert_eq!(receiver.connections(), 0, "no connection was made");
    // Every given-up notification says why: not a public address.
    let mut reasons = Vec::new();
    let events = agentlog::AgentTopics::of("guarded").events;
    let mut records = Vec::new();
    for partition in 0..log.partitions(&events).await.expect("partitions") {
        records.extend(partition_records(&log, &events, partition).await);
    }
    for record in records {
        if let RecordBody::PushDeadLetter {
            reason, attempts, ..
        } = record.body
        {
            assert_eq!(attempts, 1);
            reasons.push(reason);
        }
    }
    assert_eq!(reasons.len() as u64, expected);
    assert!(
        reasons.iter().all(|r| r.contains("not a public address")),
        "{reasons:?}"
    );
    // The bridge of a sender's default refuses a literal private address at registration.
    let strict = agentlog::Bridge::open(
        log.clone(),
        agentlog::BridgeConfig::new("guarded").push(Destinations::new()),
    )
    .await
    .expect("bridge");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-x", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"taskPushNotificationConfig": {"url": destinations[0]}}}})
    .to_string();
    let agentlog::bridge::RpcReply::Json(reply) = strict
        .handle(agentlog::bridge::RpcRequest::new(
            body.as_bytes(),
            agentlog::Caller::anonymous(),
        ))
        .await
    else {
        panic!("not JSON");
    };
    let reply: serde_json::Value = serde_json::from_slice(&reply).expect("JSON");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    sender.stop().await;
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_dead_endpoints_hold_bounded_memory_and_every_notification_ends() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let agent = Agent::start(&log, "dead").await;
    const HELD: usize = 200;
    let config = PusherConfig::new("dead")
        .destinations(Destinations::new().allow_private(true))
        .retry(
            RetryPolicy::new()
                .attempts(2)
                .first_delay(Duration::from_millis(10))
                .max_delay(Duration::from_millis(20)),
        )
        .max_pending(HELD);
    let sender = Pusher::start_with_view(log.clone(), config, agent.bridge.view().clone())
        .await
        .expect("pusher");
    // A thousand endpoints nobody listens on (privileged loopback ports: refused at once),
    // registered on a finished task (each told of its end once) as the bridge writes configs,
    // in one append.
    let task = agent.send("m-1", "hi", &[]).await;
    let finished = Instant::now() + SOON;
    let info = loop {
        let (info, _) = agent.bridge.view().lookup_any(&task).expect("task");
        if info.state.is_terminal() {
            break info;
        }
        assert!(Instant::now() < finished, "the task did not finish");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let records: Vec<bytes::Bytes> = (1..=1000u32)
        .map(|port| {
            let record = agentlog_wire::Record {
                header: agentlog_wire::RecordHeader {
                    task_id: task.clone(),
                    context_id: info.context_id.to_string(),
                    message_id: format!("push-{port}"),
                    ..agentlog_wire::RecordHeader::default()
                },
                body: RecordBody::PushConfig {
                    config: json!({"id": format!("d{port}"), "taskId": task,
                                   "url": format!("http://127.0.0.1:{port}/hook")})
                    .to_string(),
                },
            };
            bytes::Bytes::from(record.encode().expect("encode"))
        })
        .collect();
    let events = agentlog::AgentTopics::of("dead").events;
    log.append(&events, task.as_bytes(), records)
        .await
        .expect("append");
    let healthy = Receiver::start(200).await;
    agent
        .send("m-2", "hi", &[json!({"url": healthy.url("/hook")})])
        .await;
    let mut most_held = 0;
    let deadline = Instant::now() + SOON;
    loop {
        let counts = sender.metrics().counts();
        most_held = most_held.max(counts.pending);
        if counts.pending == 0 && counts.dead_letters > 0 && healthy.count() == ECHO.len() {
            break;
        }
        assert!(Instant::now() < deadline, "{counts:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Never more held than the bound and one record's notifications (here one: a config's
    // own), the reader waiting past it; each dead one given up.
    assert!(most_held <= (HELD + 1) as u64, "held {most_held}");
    let letters = sender.metrics().counts().dead_letters;
    assert_eq!(letters, 1000, "dead letters for {task}");
    assert_eq!(
        by_task(&healthy.got()).values().next().map(Vec::len),
        Some(ECHO.len())
    );
    sender.stop().await;
    agent.stop().await;
}
