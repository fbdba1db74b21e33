//! `agentlog serve --member-name` processes sharing an agent's partitions over one
//! `iggy-server` (SKIPPED without one), P = 16, under a round-robin load as a plain balancer
//! would send it:
//! - a planned join (a third bridge starts) and a planned leave (SIGTERM of one, taken out
//!   of the balancer first): 0 errors of any kind, every acknowledged task readable after;
//! - of four members, one `kill -9`ed and restarted under its name keeps its slot and
//!   partitions and its successor releases the copies it held meanwhile (each member's
//!   `/readyz` then lists exactly its share); then the `iggy-server` is SIGKILLed and
//!   restarted under the four: nothing acknowledged is lost and nobody is evicted.
//!
//! The members topic is read by the test itself (`MemberFold` over a follower of
//! `<agent>.members`), so it waits for the assignment the bridges act on, not for time.

use std::time::Duration;

use agentlog::log::{Follower, Log};
use agentlog::members::members_topic;
use agentlog_integration::iggy_server::IggyServer;
use agentlog_wire::members::{Assignment, MemberBody, MemberFold, MemberRecord};
use serde_json::{Value, json};

use crate::child::{Killed, agentlog as spawn};
use crate::partitions_dynamic::{Load, all_readable, rpc, send_params};

const P: u32 = 16;
const AGENT: &str = "dyn";
const PER_PHASE: usize = 30;

/// A free loopback port (bound and released: a member binds it next).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// `serve` as member `name` on `port`, leased for long enough that a member killed and
/// restarted in the test (however slow the machine) comes back within its lease.
fn start(log: &str, name: &str, port: u16, key: &std::path::Path) -> Killed {
    let args = [
        "serve",
        "--demo",
        "--agent",
        AGENT,
        "--partitions",
        "16",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--log",
        log,
        "--member-name",
        name,
        "--advertise",
        &url(port),
        "--peer-key",
        &key.display().to_string(),
        "--member-lease",
        "60s",
    ];
    let (child, line) = spawn(&args);
    assert!(line.contains(&format!("member {name:?}")), "{line}");
    child
}

/// SIGTERM: the member leaves, handing its partitions over, and exits; whether it exited 0.
async fn terminate(mut member: Killed) -> bool {
    let pid = member.0.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(sent.success());
    tokio::task::spawn_blocking(move || member.0.wait().expect("wait").success())
        .await
        .expect("wait")
}

/// The members' fold as the bridges read it, and each partition's newest `ready` by its
/// owner (name, time), read as records arrive.
struct Folder {
    follower: Follower,
    fold: MemberFold,
    marks: Vec<Option<(String, u64)>>,
}

impl Folder {
    async fn new(log: &Log) -> Self {
        let topic = members_topic("agentlog", AGENT);
        Self {
            follower: Follower::new(log.clone(), topic, 0, 0)
                .await
                .expect("follow"),
            fold: MemberFold::new(P),
            marks: vec![None; P as usize],
        }
    }

    /// Read on until `what` holds of the assignment and the marks.
    async fn until(&mut self, what: impl Fn(&Assignment, &[Option<(String, u64)>]) -> bool) {
        let reading = async {
            while !what(self.fold.assignment(), &self.marks) {
                self.read_batch().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(120), reading)
            .await
            .expect("the members never got there");
    }

    /// Read on until every record before `end` is folded.
    async fn read_to(&mut self, end: u64) {
        let reading = async {
            while self.follower.position() < end {
                self.read_batch().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(120), reading)
            .await
            .expect("the members topic never got there");
    }

    async fn read_batch(&mut self) {
        let Ok(batch) = self.follower.next_batch().await else {
            // The server restarting: the follower reconnects on a later call.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return;
        };
        for stored in batch {
            let record = MemberRecord::decode(&stored.payload).expect("a record");
            self.fold.apply(&record);
            if let MemberBody::Ready { partition, .. } = record.body {
                let a = self.fold.assignment();
                if a.owner(partition).is_some() && a.owner(partition) == a.slot_of(&record.member) {
                    self.marks[partition as usize] =
                        Some((record.member.clone(), record.timestamp_ms));
                }
            }
        }
    }
}

fn names(a: &Assignment) -> Vec<&str> {
    a.members.iter().map(|m| m.name.as_str()).collect()
}

fn settled(a: &Assignment, expected: &[&str]) -> bool {
    names(a) == expected && a.moves.iter().all(Option::is_none)
}

/// The partitions the member at `url` holds, as its `/readyz` lists them.
async fn held(client: &reqwest::Client, url: &str) -> Vec<u32> {
    let body: Value = client
        .get(format!("{url}/readyz"))
        .send()
        .await
        .expect("readyz")
        .json()
        .await
        .expect("json");
    serde_json::from_value(body["partitions"]["held"].clone()).expect("held")
}

/// Whether an answer is a retryable refusal: JSON-RPC -32603 of kind `unavailable` or
/// `timeout` (HTTP 503 from a gate or a forward, or the error of a call the log was out of
/// reach for).
fn retryable(body: &Value) -> bool {
    let kind = &body["error"]["data"][0]["metadata"]["kind"];
    body["error"]["code"] == -32603 && (kind == "unavailable" || kind == "timeout")
}

/// Send message `id` through `url` until acknowledged, retrying only a retryable refusal:
/// the task and the retries.
async fn send_retrying(client: &reqwest::Client, url: &str, id: &str) -> (String, usize) {
    let mut retries = 0;
    loop {
        let (status, body) = rpc(client, url, "SendMessage", send_params(id)).await;
        if let Some(task) = body["result"]["task"]["id"].as_str() {
            return (task.to_owned(), retries);
        }
        assert!(retryable(&body), "{status} {body}");
        retries += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Read `task` through `url` until found, retrying only a retryable refusal; never "not
/// found".
async fn read_retrying(client: &reqwest::Client, url: &str, task: &str) -> usize {
    let mut retries = 0;
    loop {
        let (status, body) = rpc(client, url, "GetTask", json!({"id": task})).await;
        if body["result"]["id"] == task {
            return retries;
        }
        assert!(retryable(&body), "{task} through {url}: {status} {body}");
        retries += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn peer_key(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let key = dir.path().join("peer.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef").expect("key");
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_members_join_and_leave_under_load_over_iggy_with_no_error() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let key = peer_key(&dir);
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let a = start(&server.url(), "a", ports[0], &key);
    let observer = agentlog::log::open(&server.url()).await.expect("log");
    let mut folder = Folder::new(&observer).await;
    let b = start(&server.url(), "b", ports[1], &key);
    folder.until(|a, _| settled(a, &["a", "b"])).await;
    let mut load = Load::start(vec![url(ports[0]), url(ports[1])]);
    load.rounds(PER_PHASE).await;

    // c joins (its banner says it is ready: it forwards what it does not hold yet); the
    // balancer adds it.
    let c = start(&server.url(), "c", ports[2], &key);
    load.rotation.lock().expect("rotation").push(url(ports[2]));
    load.rounds(PER_PHASE).await;
    folder.until(|a, _| settled(a, &["a", "b", "c"])).await;
    load.rounds(PER_PHASE).await;

    // b is taken out of the balancer, then SIGTERMed: it hands its partitions over while it
    // serves the requests the others forward to it, then exits.
    load.rotation
        .lock()
        .expect("rotation")
        .retain(|u| *u != url(ports[1]));
    load.rounds(1).await;
    let leaving = tokio::spawn(terminate(b));
    folder.until(|a, _| settled(a, &["a", "c"])).await;
    assert!(leaving.await.expect("exit"), "b exits 0 after its leave");
    load.rounds(PER_PHASE).await;

    let (acknowledged, errors) = load.finish().await;
    assert!(errors.is_empty(), "{} errors: {errors:#?}", errors.len());
    all_readable(&acknowledged, &[&url(ports[0]), &url(ports[2])]).await;
    // Each holds its share; together every partition once.
    let client = reqwest::Client::new();
    let (held_a, held_c) = (
        held(&client, &url(ports[0])).await,
        held(&client, &url(ports[2])).await,
    );
    assert_eq!(
        held_a.len() + held_c.len(),
        P as usize,
        "{held_a:?} {held_c:?}"
    );
    eprintln!(
        "[iggy] serve --member-name: join of c and leave of b under load: {} acknowledged, 0 errors",
        acknowledged.len()
    );
    drop((a, c));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_member_restarts_and_an_iggy_restart_loses_nothing_under_four_members() {
    let Some(mut server) = IggyServer::start().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let key = peer_key(&dir);
    let names = ["a", "b", "c", "d"];
    let ports: Vec<u16> = (0..4).map(|_| free_port()).collect();
    let urls: Vec<String> = ports.iter().map(|p| url(*p)).collect();
    let mut members: Vec<Option<Killed>> = vec![Some(start(&server.url(), "a", ports[0], &key))];
    let observer = agentlog::log::open(&server.url()).await.expect("log");
    let mut folder = Folder::new(&observer).await;
    for i in 1..4 {
        members.push(Some(start(&server.url(), names[i], ports[i], &key)));
    }
    folder.until(|a, _| settled(a, &names)).await;
    let before = folder.fold.assignment().clone();
    let client = reqwest::Client::new();
    let mut acknowledged = Vec::new();
    for k in 0..120 {
        let (status, body) = rpc(
            &client,
            &urls[k % 4],
            "SendMessage",
            send_params(&format!("k-{k}")),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        acknowledged.push(
            body["result"]["task"]["id"]
                .as_str()
                .expect("task")
                .to_owned(),
        );
    }

    // kill -9 of b; the load goes on through the others, retrying a retryable refusal only.
    let slot_b = before.slot_of("b").expect("b");
    members[1] = None;
    let alive = [0usize, 2, 3];
    let mut retries = 0;
    for k in 120..180 {
        let (task, r) = send_retrying(&client, &urls[alive[k % 3]], &format!("k-{k}")).await;
        retries += r;
        acknowledged.push(task);
    }
    for task in &acknowledged {
        for i in alive {
            retries += read_retrying(&client, &urls[i], task).await;
        }
    }
    // b comes back under its name on its port within its lease: the same slot and
    // partitions; once it says it holds them, the copies its successor took are released.
    let restarted_at = agentlog::retention::now_ms();
    members[1] = Some(start(&server.url(), "b", ports[1], &key));
    let of_b = before.targets_of(slot_b);
    folder
        .until(|a, marks| {
            a.slot_of("b") == Some(slot_b)
                && of_b.iter().all(|p| {
                    marks[*p as usize]
                        .as_ref()
                        .is_some_and(|(m, at)| m == "b" && *at >= restarted_at)
                })
        })
        .await;
    assert_eq!(folder.fold.assignment(), &before, "nobody moved");
    // Each member's /readyz: exactly its share once the copies are gone.
    for (i, name) in names.iter().enumerate() {
        let share = before.targets_of(before.slot_of(name).expect("slot"));
        let mut seen = held(&client, &urls[i]).await;
        let waited = tokio::time::timeout(Duration::from_secs(60), async {
            while seen != share {
                tokio::time::sleep(Duration::from_millis(100)).await;
                seen = held(&client, &urls[i]).await;
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "{name} holds {seen:?}, its share is {share:?}"
        );
    }

    // The iggy-server is SIGKILLed and restarted under the four: sends go on, retrying a
    // retryable refusal only; nothing acknowledged is lost, nobody is evicted.
    server.kill9_restart().await;
    for k in 180..240 {
        let (task, r) = send_retrying(&client, &urls[k % 4], &format!("k-{k}")).await;
        retries += r;
        acknowledged.push(task);
    }
    for task in &acknowledged {
        for url in &urls {
            retries += read_retrying(&client, url, task).await;
        }
    }
    let (status, listed) = rpc(&client, &urls[2], "ListTasks", json!({"pageSize": 1})).await;
    assert_eq!(
        (status, &listed["result"]["totalSize"]),
        (200, &json!(acknowledged.len())),
        "{listed}"
    );
    // The members as the bridges folded them through the restart, to the topic's end.
    let end = observer
        .end_offset(&members_topic("agentlog", AGENT), 0)
        .await
        .expect("end");
    folder.read_to(end).await;
    assert_eq!(
        folder.fold.assignment(),
        &before,
        "nobody evicted, nothing moved"
    );
    eprintln!(
        "[iggy] kill -9 and restart of b, then an iggy-server SIGKILL and restart under 4 members: {} acknowledged, 0 lost, {retries} retries",
        acknowledged.len()
    );
    drop(members);
}
