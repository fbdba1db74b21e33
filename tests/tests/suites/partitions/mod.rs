//! Bridges sharing an agent's partitions (`skills/a2a-bridge/partitions.md`), several in one
//! process over one `memory://` log, each on a real loopback listener with its own router:
//! every member holds its share, a request about another member's partition is forwarded
//! (once) to its owner, `ListTasks` merges every owner's page, and a bridge that goes away is
//! stood in for by its successor with nothing acknowledged lost. Each member serves gRPC too
//! (`grpc.rs`) and MCP (`mcp.rs`: its tool agents hold the member's share as well; `mcp_streams.rs`).

mod grpc;
mod mcp;
mod mcp_streams;
mod resume;

use std::collections::BTreeSet;
use std::time::Duration;

use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::grpc::{EdgeAuth, GrpcConfig};
use agentlog::http::mcp::McpHttpConfig;
use agentlog::http::{Forwarding, HttpConfig, router, serve};
use agentlog::log::{Log, partition_for_key};
use agentlog::mcp::McpBridge;
use agentlog::security::owners::Owners;
use agentlog::security::peers::{FORWARDED_BY, Members, PeerKey};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const P: u32 = 16;
const AGENT: &str = "scaled";
const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

/// One member: its bridge, its MCP bridge, its URL, its gRPC address and what stops its
/// servers.
struct Member {
    bridge: Bridge,
    mcp: McpBridge,
    url: String,
    grpc: String,
    /// Who owns each partition, as its forwarders read it (a move sets a new map).
    owners: Owners,
    /// What its HTTP server serves (to serve it again on the same port).
    app: axum::Router,
    stop: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<()>,
    grpc_server: tokio::task::JoinHandle<agentlog::Result<()>>,
}

struct Cluster {
    members: Vec<Option<Member>>,
    client: reqwest::Client,
}

async fn memory_log() -> Log {
    agentlog::log::open(&format!("memory://?partitions={P}"))
        .await
        .expect("log")
}

impl Cluster {
    /// `n` members over `log`, each serving on a loopback port.
    async fn start(log: &Log, n: u32) -> Self {
        Self::start_with(log, n, None, None).await
    }

    /// As [`start`](Self::start), the HTTP routers authenticating with `http_auth` and the
    /// gRPC listeners with `grpc_auth`.
    async fn start_with(
        log: &Log,
        n: u32,
        http_auth: Option<EdgeAuth>,
        grpc_auth: Option<EdgeAuth>,
    ) -> Self {
        let mut listeners = Vec::new();
        for _ in 0..n {
            listeners.push(TcpListener::bind("127.0.0.1:0").await.expect("bind"));
        }
        let urls: Vec<String> = listeners
            .iter()
            .map(|l| format!("http://{}", l.local_addr().expect("addr")))
            .collect();
        let mut members = Vec::new();
        for (i, listener) in (0..n).zip(listeners) {
            let grpc_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let grpc = format!("http://{}", grpc_listener.local_addr().expect("addr"));
            let map = Members::new(i, n, urls.clone()).expect("members");
            let mut config = BridgeConfig::new(AGENT);
            config.holding = Some(map.owned_by(i, P));
            config.blocking_timeout = Duration::from_secs(2);
            let bridge = Bridge::open(log.clone(), config).await.expect("bridge");
            let owners = Owners::new(map.owner_map(P).expect("map"));
            let forwarding = Forwarding::new(owners.clone(), PeerKey::new(KEY).expect("key"));
            let mut grpc_config = GrpcConfig::new().forward(forwarding.clone());
            grpc_config.auth = grpc_auth.clone();
            let grpc_server = tokio::spawn(agentlog::grpc::serve(
                grpc_listener,
                bridge.clone(),
                grpc_config,
                std::future::pending(),
            ));
            // `/mcp` beside it, its tool agents holding the member's share as the A2A agent's
            // view does, the A2A agent's tasks its resources too.
            let mut mcp = mcp::config();
            mcp.bridge = bridge.config().clone();
            mcp.a2a = vec![bridge.clone()];
            let mcp_bridge = McpBridge::open(log.clone(), mcp).await.expect("mcp");
            let mcp_http = McpHttpConfig::new().forward(forwarding.clone());
            let mcp = agentlog::http::mcp::router(mcp_bridge.clone(), mcp_http).expect("mcp route");
            let mut http = HttpConfig::new().forward(forwarding);
            http.auth = http_auth.clone();
            let app = router(bridge.clone(), http).merge(mcp);
            let (stop, stopped) = oneshot::channel::<()>();
            let served = app.clone();
            let server = tokio::spawn(async move {
                let stopped = async {
                    let _ = stopped.await;
                };
                serve(listener, served, stopped).await.expect("serve");
            });
            members.push(Some(Member {
                bridge,
                mcp: mcp_bridge,
                url: urls[i as usize].clone(),
                grpc,
                owners,
                app,
                stop,
                server,
                grpc_server,
            }));
        }
        Self {
            members,
            client: reqwest::Client::new(),
        }
    }

    fn member(&self, i: usize) -> &Member {
        self.members[i].as_ref().expect("a live member")
    }

    /// Stop member `i`'s servers and drop its bridge: its ports refuse connections.
    async fn kill(&mut self, i: usize) {
        let member = self.members[i].take().expect("a live member");
        let _ = member.stop.send(());
        member.server.await.expect("server");
        member.grpc_server.abort();
        let _ = member.grpc_server.await;
        drop(member.bridge);
        drop(member.mcp);
    }

    /// A JSON-RPC call to member `i`: the HTTP status and the body.
    async fn rpc(&self, i: usize, method: &str, params: Value) -> (u16, Value) {
        self.rpc_with(i, method, params, &[]).await
    }

    async fn rpc_with(
        &self,
        i: usize,
        method: &str,
        params: Value,
        headers: &[(&str, String)],
    ) -> (u16, Value) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let body = serde_json::to_vec(&body).expect("json");
        let mut request = self
            .client
            .post(format!("{}/", self.member(i).url))
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let answer = request.body(body).send().await.expect("an answer");
        let status = answer.status().as_u16();
        let text = answer.text().await.expect("a body");
        (status, serde_json::from_str(&text).expect("a JSON body"))
    }

    /// Send a new message `id` through member `i`, answered at once: the task's id, or the
    /// status and body of the refusal.
    async fn send(&self, i: usize, id: &str) -> Result<String, (u16, Value)> {
        let params = json!({
            "message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hello"}]},
            "configuration": {"returnImmediately": true},
        });
        let (status, body) = self.rpc(i, "SendMessage", params).await;
        match body["result"]["task"]["id"].as_str() {
            Some(id) => Ok(id.to_owned()),
            None => Err((status, body)),
        }
    }

    /// `agentlog_forwards_total{verb,outcome}` of member `i`.
    async fn forwards(&self, i: usize, verb: &str, outcome: &str) -> u64 {
        let text = self
            .client
            .get(format!("{}/metrics", self.member(i).url))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        let series = format!("agentlog_forwards_total{{verb=\"{verb}\",outcome=\"{outcome}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&series))
            .map_or(0, |n| n.trim().parse().expect("a count"))
    }
}

fn partition(task_id: &str) -> u32 {
    partition_for_key(task_id.as_bytes(), P)
}

/// Whether an answer is the retryable unavailable (what the move window may show): 503,
/// `Retry-After`, -32603.
fn retryable(status: u16, body: &Value) -> bool {
    status == 503 && body["error"]["code"] == -32603
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_member_holds_its_share_and_any_member_answers_for_every_task() {
    for n in [1u32, 2, 4] {
        let log = memory_log().await;
        let cluster = Cluster::start(&log, n).await;
        // A plain balancer's round robin.
        let mut acknowledged = Vec::new();
        for k in 0..400 {
            let id = cluster
                .send(k % n as usize, &format!("m-{k}"))
                .await
                .expect("acknowledged");
            acknowledged.push(id);
        }
        for i in 0..n {
            let view = cluster.member(i as usize).bridge.view();
            let share = acknowledged
                .iter()
                .filter(|t| partition(t) % n == i)
                .count();
            // Exactly the tasks of its partitions: each held once, by its owner.
            assert_eq!(view.task_count(), share, "member {i} of {n}");
            assert_eq!(
                view.held_partitions(),
                Members::new(i, n, urls(n)).expect("m").owned_by(i, P)
            );
        }
        // Read-your-writes across every pair: sent through a, read through b at once.
        for a in 0..n as usize {
            for b in 0..n as usize {
                for round in 0..8 {
                    let id = cluster
                        .send(a, &format!("ryw-{a}-{b}-{round}"))
                        .await
                        .expect("sent");
                    let (status, body) = cluster.rpc(b, "GetTask", json!({"id": id})).await;
                    assert_eq!(status, 200);
                    assert_eq!(body["result"]["id"], id.as_str(), "{body}");
                }
            }
        }
    }
}

fn urls(n: u32) -> Vec<String> {
    (0..n).map(|i| format!("http://m{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_message_sent_through_its_owner_and_a_forwarder_at_once_makes_one_task() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    for k in 0..16 {
        let message = format!("twice-{k}");
        let task_id = agentlog_wire::ids::task_id("", "", &message);
        let owner = (partition(&task_id) % 4) as usize;
        let other = (owner + 1 + k % 3) % 4;
        let (a, b) = tokio::join!(cluster.send(owner, &message), cluster.send(other, &message));
        assert_eq!(a.expect("owner"), task_id);
        assert_eq!(b.expect("forwarder"), task_id);
    }
    // Sixteen tasks, each once.
    let (_, listed) = cluster.rpc(2, "ListTasks", json!({"pageSize": 100})).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 16, "{listed}");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 16);
    assert_eq!(listed["result"]["totalSize"], 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tasks_pages_and_tokens_are_those_of_one_view_holding_everything() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    for k in 0..60 {
        cluster
            .send(k % 4, &format!("l-{k}"))
            .await
            .expect("acknowledged");
    }
    // One member of one (every partition) over the same log: the reference.
    let single = Cluster::start(&log, 1).await;
    for via in 0..4 {
        let mut token = String::new();
        let mut pages = 0;
        loop {
            let params = json!({"pageSize": 7, "pageToken": token});
            let (_, four) = cluster.rpc(via, "ListTasks", params.clone()).await;
            let (_, one) = single.rpc(0, "ListTasks", params).await;
            assert_eq!(four, one, "page {pages} through member {via}");
            pages += 1;
            token = four["result"]["nextPageToken"]
                .as_str()
                .expect("a token")
                .to_owned();
            if token.is_empty() {
                break;
            }
        }
        assert_eq!(pages, 9, "60 tasks in pages of 7");
    }
    // The HTTP+JSON binding fans out alike.
    let rest = |url: &str| format!("{url}/tasks?pageSize=5");
    let four: Value = reqwest::get(rest(&cluster.member(3).url))
        .await
        .expect("rest")
        .json()
        .await
        .expect("json");
    let one: Value = reqwest::get(rest(&single.member(0).url))
        .await
        .expect("rest")
        .json()
        .await
        .expect("json");
    assert_eq!(four, one);
    assert_eq!(four["tasks"].as_array().map(Vec::len), Some(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_members_partitions_are_served_by_its_successor_and_nothing_is_lost() {
    let log = memory_log().await;
    let mut cluster = Cluster::start(&log, 4).await;
    let mut acknowledged = Vec::new();
    for k in 0..200 {
        acknowledged.push(cluster.send(k % 4, &format!("k-{k}")).await.expect("sent"));
    }
    let killed = 2;
    cluster.kill(killed).await;
    let alive: Vec<usize> = (0..4).filter(|i| *i != killed).collect();
    // Sends go on through the survivors, retried with the same messageId on a retryable
    // refusal only.
    let mut retried = 0;
    for k in 200..300 {
        let via = alive[k % alive.len()];
        let id = loop {
            match cluster.send(via, &format!("k-{k}")).await {
                Ok(id) => break id,
                Err((status, body)) => {
                    assert!(retryable(status, &body), "only retryable errors: {body}");
                    retried += 1;
                }
            }
        };
        acknowledged.push(id);
    }
    // Every acknowledged task, through every survivor: found, none lost.
    let mut unavailable = 0;
    for id in &acknowledged {
        for via in &alive {
            loop {
                let (status, body) = cluster.rpc(*via, "GetTask", json!({"id": id})).await;
                if status == 200 && body["result"]["id"] == id.as_str() {
                    break;
                }
                assert!(retryable(status, &body), "task {id} through {via}: {body}");
                unavailable += 1;
            }
        }
    }
    // The successor holds the killed member's partitions on demand.
    let successor = cluster.member(3).bridge.view().held_partitions();
    for p in (0..P).filter(|p| p % 4 == killed as u32) {
        assert!(successor.contains(&p), "{successor:?}");
    }
    let (_, listed) = cluster.rpc(0, "ListTasks", json!({"pageSize": 100})).await;
    assert_eq!(listed["result"]["totalSize"], 300, "{listed}");
    eprintln!("killed member: {retried} sends and {unavailable} reads retried, 0 lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_marked_request_is_served_where_it_lands_and_a_forged_mark_is_ignored() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    // A task of member 0's, which member 1 does not hold.
    let message = (0..)
        .map(|k| format!("mark-{k}"))
        .find(|m| partition(&agentlog_wire::ids::task_id("", "", m)).is_multiple_of(4))
        .expect("a message");
    let task = agentlog_wire::ids::task_id("", "", &message);
    let p = partition(&task);
    cluster.send(0, &message).await.expect("sent");
    let body = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task}}),
    )
    .expect("json");
    let now = agentlog::retention::now_ms();

    // Forged (another key): treated as a client's, forwarded once to the owner.
    let forged = PeerKey::new(&[7; 32])
        .expect("key")
        .mark(3, "POST", "/", &body, now);
    let (status, answer) = cluster
        .rpc_with(1, "GetTask", json!({"id": task}), &[(FORWARDED_BY, forged)])
        .await;
    assert_eq!((status, &answer["result"]["id"]), (200, &json!(task)));
    assert_eq!(cluster.forwards(1, "GetTask", "owner").await, 1);
    assert!(!cluster.member(1).bridge.view().holds(p));

    // A peer's mark: served where it lands (held on demand), not forwarded.
    let mark = PeerKey::new(KEY)
        .expect("key")
        .mark(3, "POST", "/", &body, now);
    let (status, answer) = cluster
        .rpc_with(1, "GetTask", json!({"id": task}), &[(FORWARDED_BY, mark)])
        .await;
    assert_eq!((status, &answer["result"]["id"]), (200, &json!(task)));
    assert_eq!(cluster.forwards(1, "GetTask", "received").await, 1);
    assert_eq!(cluster.forwards(1, "GetTask", "owner").await, 1);
    assert!(cluster.member(1).bridge.view().holds(p));
    // The owner saw the forged one's forward only.
    assert_eq!(cluster.forwards(0, "GetTask", "received").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_stream_comes_frame_by_frame_with_its_ids_and_rest_is_forwarded_too() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 2).await;
    let worker = agentlog::worker::Worker::start(
        log.clone(),
        agentlog::worker::WorkerConfig::new(AGENT),
        agentlog_server::agents::DemoHandler,
    )
    .await
    .expect("worker");
    // A message whose task member 1 owns, streamed through member 0.
    let message = (0..)
        .map(|k| format!("s-{k}"))
        .find(|m| partition(&agentlog_wire::ids::task_id("", "", m)) % 2 == 1)
        .expect("a message");
    let task = agentlog_wire::ids::task_id("", "", &message);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {
        "message": {"messageId": message, "role": "ROLE_USER", "parts": [{"text": "hello"}]}}});
    let answer = cluster
        .client
        .post(format!("{}/", cluster.member(0).url))
        .header("content-type", "application/json")
        .json(&body)
        .send()
        .await
        .expect("stream");
    assert_eq!(
        answer.headers()["content-type"].to_str().expect("type"),
        "text/event-stream"
    );
    let text = answer.text().await.expect("frames");
    let ids: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|n| n.parse().expect("a position"))
        .collect();
    assert!(ids.len() >= 2, "{text}");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(text.contains("TASK_STATE_COMPLETED"), "{text}");
    assert_eq!(
        cluster.forwards(0, "SendStreamingMessage", "owner").await,
        1
    );
    // HTTP+JSON: GET /tasks/{id} through the member that does not hold it.
    let got: Value = reqwest::get(format!("{}/tasks/{task}", cluster.member(0).url))
        .await
        .expect("rest")
        .json()
        .await
        .expect("json");
    assert_eq!(got["id"], task.as_str(), "{got}");
    assert_eq!(cluster.forwards(0, "GetTask", "owner").await, 1);
    worker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_whose_owner_and_successor_are_gone_is_a_retryable_503_never_not_found() {
    let log = memory_log().await;
    let mut cluster = Cluster::start(&log, 4).await;
    // A task of member 1's, whose successor is member 2.
    let message = (0..)
        .map(|k| format!("gone-{k}"))
        .find(|m| partition(&agentlog_wire::ids::task_id("", "", m)) % 4 == 1)
        .expect("a message");
    let task = cluster.send(0, &message).await.expect("sent");
    cluster.kill(1).await;
    cluster.kill(2).await;
    let answer = cluster
        .client
        .post(format!("{}/", cluster.member(0).url))
        .header("content-type", "application/json")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task}}))
        .send()
        .await
        .expect("an answer");
    assert_eq!(answer.status().as_u16(), 503);
    assert_eq!(answer.headers()["retry-after"], "1");
    let body: Value = answer.json().await.expect("json");
    assert!(retryable(503, &body), "{body}");
    assert_eq!(cluster.forwards(0, "GetTask", "unavailable").await, 1);
    // HTTP+JSON: the same refusal in its shape.
    let rest = reqwest::get(format!("{}/tasks/{task}", cluster.member(3).url))
        .await
        .expect("rest");
    assert_eq!(rest.status().as_u16(), 503);
    // ListTasks: not a short page.
    let (status, listed) = cluster.rpc(3, "ListTasks", json!({})).await;
    assert!(retryable(status, &listed), "{listed}");
}

/// Section 4's full count, slow in a debug build (run it with `--ignored`): 10,000 rounds of
/// read-your-writes across every ordered pair of four members, one of them killed halfway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "10,000 rounds: run with --ignored"]
async fn read_your_writes_across_every_pair_10_000_times_with_a_kill_halfway() {
    const ROUNDS: usize = 10_000;
    let log = memory_log().await;
    let mut cluster = Cluster::start(&log, 4).await;
    let mut alive: Vec<usize> = (0..4).collect();
    let (mut not_found, mut retried) = (0, 0);
    let started = std::time::Instant::now();
    for round in 0..ROUNDS {
        if round == ROUNDS / 2 {
            cluster.kill(3).await;
            alive.pop();
        }
        let a = alive[round % alive.len()];
        let b = alive[(round / alive.len()) % alive.len()];
        let id = loop {
            match cluster.send(a, &format!("ryw-{round}")).await {
                Ok(id) => break id,
                Err((status, body)) => {
                    assert!(retryable(status, &body), "{body}");
                    retried += 1;
                }
            }
        };
        loop {
            let (status, body) = cluster.rpc(b, "GetTask", json!({"id": id})).await;
            if body["error"]["code"] == -32001 {
                not_found += 1;
            }
            if status == 200 {
                assert_eq!(body["result"]["id"], id.as_str());
                break;
            }
            assert!(retryable(status, &body), "{body}");
            retried += 1;
        }
    }
    assert_eq!(not_found, 0);
    eprintln!(
        "read-your-writes: {ROUNDS} rounds over every pair of 4 members (one killed halfway) in {:?}: 0 not found, {retried} retried",
        started.elapsed()
    );
}
