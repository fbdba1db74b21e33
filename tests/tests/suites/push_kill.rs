//! kill -9 mid-delivery: of `agentlog serve` (sending in process, on `file://`), and of
//! `agentlog pusher` (sending apart from `serve --push external`, on Apache Iggy, SKIPPED
//! without an `iggy-server`). Started again, the sender loses nothing: every update of every
//! task reaches the receiver, in order per task; the duplicates are counted and bounded by
//! what the receiver had just got when the sender died (in flight, not yet committed), also
//! beside a config whose receiver kept failing (parked, it does not hold the others back
//! more than about a second).

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use agentlog::push::verify::{Expect, Keys, verify};
use agentlog_integration::iggy_server::IggyServer;
use agentlog_integration::push_receiver::{Got, Receiver, get_text, post_json};
use agentlog_integration::push_suite::{ECHO, SOON, kind, task_of};
use serde_json::json;

use crate::child::{Killed, agentlog as spawn};

const TASKS: usize = 30;

/// What a restarted sender may send again: what arrived in this window before the kill (in
/// flight, or done and not yet committed).
const IN_FLIGHT: Duration = Duration::from_secs(1);

/// Beside a parked config: its anchor moves on once a second (`PARK_AFTER`), so up to that
/// much more of the others' notifications may be sent again.
const IN_FLIGHT_BESIDE_PARKED: Duration = Duration::from_secs(2);

/// `serve --demo` on `log` with `extra` flags: the child and its URL.
fn serve(log: &str, extra: &[&str]) -> (Killed, String) {
    let mut args = vec!["serve", "--demo", "--listen", "127.0.0.1:0", "--log", log];
    args.extend_from_slice(extra);
    let (child, line) = spawn(&args);
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    (child, url)
}

fn kill(child: Killed) {
    drop(child);
}

/// Send an echo task with `hook` inline.
async fn send_task(url: &str, message_id: &str, hook: &str) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"returnImmediately": true,
            "taskPushNotificationConfig": {"url": hook, "token": "tok"}}}});
    let answer = post_json(url, &body).await;
    assert!(answer["result"]["task"]["id"].is_string(), "{answer}");
}

/// Send `TASKS` echo tasks, each with the receiver's hook inline, and wait until all (and
/// `others` sent before) finished.
async fn send_tasks(url: &str, receiver: &Receiver, others: usize) {
    for n in 0..TASKS {
        send_task(url, &format!("k-{n}"), &receiver.url("/hook")).await;
    }
    let deadline = Instant::now() + SOON;
    loop {
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                          "params": {"pageSize": 100, "status": "TASK_STATE_COMPLETED"}});
        let page = post_json(url, &list).await;
        if page["result"]["tasks"].as_array().map_or(0, Vec::len) == TASKS + others {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the tasks did not finish: {page}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Wait until the receiver has at least `count` notifications, then say when.
async fn after(receiver: &Receiver, count: usize) -> Instant {
    let got = receiver.wait_for(count, SOON).await;
    assert!(got.len() >= count, "only {} notifications", got.len());
    Instant::now()
}

/// Check that nothing was lost and count the duplicates: every task's notifications, first
/// sightings in order, are the echo's; the duplicates are at most what the receiver got in
/// the `window` before the kill (what was in flight or not yet committed).
async fn nothing_lost(receiver: &Receiver, killed_at: Instant, window: Duration) -> usize {
    let expected = TASKS * ECHO.len();
    let deadline = Instant::now() + SOON;
    let distinct = |got: &[Got]| {
        got.iter()
            .map(|g| g.body.clone())
            .collect::<HashSet<_>>()
            .len()
    };
    while distinct(&receiver.got()) < expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = receiver.got();
    let mut seen = HashSet::new();
    let mut tasks: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for got in &got {
        if seen.insert(got.body.clone()) {
            tasks.entry(task_of(got)).or_default().push(kind(got));
        }
    }
    assert_eq!(tasks.len(), TASKS);
    for (task, kinds) in &tasks {
        assert_eq!(kinds, &ECHO, "task {task}: every update, in order");
    }
    let duplicates = got.len() - seen.len();
    let just_before = got
        .iter()
        .filter(|g| g.at <= killed_at && killed_at.duration_since(g.at) < window)
        .count();
    eprintln!(
        "{} notifications for {expected} updates: {duplicates} duplicates; {just_before} arrived in the {window:?} before the kill",
        got.len()
    );
    assert!(
        duplicates <= just_before,
        "{duplicates} duplicates, more than the {just_before} in flight"
    );
    duplicates
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_serve_mid_delivery_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = format!("file://{}", dir.path().display());
    let receiver = Receiver::start(200).await;
    // A slow receiver: the tasks finish long before their notifications are all sent.
    receiver.delay(Duration::from_millis(100));
    let (child, url) = serve(&log, &["--push-allow-private"]);
    send_tasks(&url, &receiver, 0).await;
    let killed_at = after(&receiver, TASKS * ECHO.len() / 3).await;
    kill(child);
    let at_kill = receiver.count();
    assert!(at_kill < TASKS * ECHO.len(), "killed mid-delivery");
    receiver.delay(Duration::ZERO);
    let (child, _) = serve(&log, &["--push-allow-private"]);
    nothing_lost(&receiver, killed_at, IN_FLIGHT).await;
    kill(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_beside_a_failing_config_repeats_only_about_a_second_of_the_others() {
    // One partition: the failing config's task shares it with every other.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = format!("file://{}?partitions=1", dir.path().display());
    let receiver = Receiver::start(200).await;
    receiver.delay(Duration::from_millis(200));
    let failing = Receiver::start(500).await;
    let (child, url) = serve(&log, &["--push-allow-private"]);
    // Its task first: from its first notification on, that config is retried, and parked
    // (its progress on the log) rather than holding the partition's back.
    send_task(&url, "failing", &failing.url("/hook")).await;
    send_tasks(&url, &receiver, 1).await;
    let killed_at = after(&receiver, TASKS * ECHO.len() * 2 / 3).await;
    kill(child);
    let tried = failing.count();
    assert!(
        tried >= 2,
        "the failing config was retried: {tried} attempts"
    );
    assert!(receiver.count() < TASKS * ECHO.len(), "killed mid-delivery");
    receiver.delay(Duration::ZERO);
    failing.answer(200);
    let (child, _) = serve(&log, &["--push-allow-private"]);
    nothing_lost(&receiver, killed_at, IN_FLIGHT_BESIDE_PARKED).await;
    // The failing config, resumed where its progress record said: every update, in order
    // (first sightings: its first notification was tried before the kill too).
    let got = failing.wait_for(tried + ECHO.len(), SOON).await;
    let mut seen = HashSet::new();
    let firsts: Vec<String> = got
        .iter()
        .filter(|g| seen.insert(g.body.clone()))
        .map(kind)
        .collect();
    assert_eq!(firsts, ECHO, "the failing config's updates once it answers");
    kill(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_agentlog_pusher_mid_delivery_loses_nothing() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("push.key");
    agentlog::security::SigningKey::generate()
        .expect("key")
        .write_pair(&key)
        .expect("write key");
    let key = key.display().to_string();
    let log = server.url();
    let (serving, url) = serve(
        &log,
        &[
            "--push",
            "external",
            "--push-key",
            &key,
            "--push-allow-private",
        ],
    );
    let pusher_args = [
        "pusher",
        "--log",
        &log,
        "--push-allow-private",
        "--push-key",
        &key,
        "--push-issuer",
        &url,
    ];
    let (pusher, line) = spawn(&pusher_args);
    assert!(
        line.starts_with("agentlog pusher for agent \"demo\""),
        "{line}"
    );
    let receiver = Receiver::start(200).await;
    receiver.delay(Duration::from_millis(100));
    send_tasks(&url, &receiver, 0).await;
    let killed_at = after(&receiver, TASKS * ECHO.len() / 3).await;
    kill(pusher);
    let at_kill = receiver.count();
    assert!(at_kill < TASKS * ECHO.len(), "killed mid-delivery");
    receiver.delay(Duration::ZERO);
    let mut with_metrics = pusher_args.to_vec();
    with_metrics.extend(["--metrics-listen", "127.0.0.1:0"]);
    let (pusher, line) = spawn(&with_metrics);
    let metrics_url = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .map(|w| format!("http://{}", w.trim_end_matches(')')))
        .unwrap_or_else(|| panic!("no metrics URL in {line:?}"));
    nothing_lost(&receiver, killed_at, IN_FLIGHT).await;
    // The restarted pusher's /metrics counts what it delivered: at least what the first left.
    let metrics = get_text(&metrics_url).await;
    let delivered: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("agentlog_push_delivered_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no agentlog_push_delivered_total in\n{metrics}"));
    // Less only by what the killed one had sent and the receiver read after the kill: at most
    // an endpoint's requests at once (8).
    let delivered = delivered as usize;
    assert!(
        delivered + 8 >= TASKS * ECHO.len() - at_kill && delivered <= receiver.count() - at_kill,
        "{delivered} delivered by the restarted pusher\n{metrics}"
    );
    assert!(
        metrics.contains("agentlog_push_dead_letters_total 0"),
        "{metrics}"
    );
    // Signed with the key `serve` publishes.
    let jwks = get_text(&format!("{url}.well-known/jwks.json")).await;
    let keys = Keys::from_jwks(&jwks).expect("jwks");
    let expect = Expect::new(receiver.url("/hook")).issuer(url.clone());
    for got in receiver.got() {
        let jwt = got
            .header(agentlog::push::SIGNATURE_HEADER)
            .expect("signed");
        verify(jwt, &got.body, &keys, &expect).expect("verifies against serve's JWKS");
    }
    kill(pusher);
    kill(serving);
}
