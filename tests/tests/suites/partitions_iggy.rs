//! Four `agentlog serve --member i/4` processes over one `iggy-server` (SKIPPED without one),
//! P = 16: sends round-robin through them as a plain balancer would, `kill -9` of one member,
//! and every acknowledged task is still found through every survivor (its successor holds the
//! killed member's partitions on demand), with only retryable refusals meanwhile. Members given
//! another peer list refuse to start. Their `/mcp` demo tools answer through every member.

use std::time::{Duration, Instant};

use agentlog::log::partition_for_key;
use agentlog_integration::iggy_server::IggyServer;

use crate::child::{Killed, agentlog as spawn};
use serde_json::{Value, json};

const P: u32 = 16;
const N: usize = 4;

/// Free loopback ports, one per member (bound and released: the members bind them next).
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect()
}

/// `serve` as member `i` of the members on `ports`, listening on `listen`.
fn member_args(
    log: &str,
    i: usize,
    ports: &[u16],
    listen: u16,
    key: &std::path::Path,
) -> Vec<String> {
    let peers: Vec<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}"))
        .collect();
    [
        "serve",
        "--demo",
        "--agent",
        "scaled",
        "--partitions",
        "16",
        "--listen",
        &format!("127.0.0.1:{listen}"),
        "--log",
        log,
        "--member",
        &format!("{i}/{}", ports.len()),
        "--peers",
        &peers.join(","),
        "--peer-key",
        &key.display().to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

async fn rpc(client: &reqwest::Client, port: u16, method: &str, params: Value) -> (u16, Value) {
    let url = format!("http://127.0.0.1:{port}/");
    post(
        client,
        url,
        ("content-type", "application/json"),
        method,
        params,
    )
    .await
}

/// A legacy MCP request to the member on `port`: the status and the body.
async fn mcp(client: &reqwest::Client, port: u16, method: &str, params: Value) -> (u16, Value) {
    let url = format!("http://127.0.0.1:{port}/mcp");
    post(client, url, ("accept", "application/json"), method, params).await
}

/// A JSON-RPC request POSTed to `url` with `header`: the status and the body.
async fn post(
    client: &reqwest::Client,
    url: String,
    header: (&str, &str),
    method: &str,
    params: Value,
) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer = client
        .post(url)
        .header(header.0, header.1)
        .json(&body)
        .send()
        .await
        .expect("an answer");
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("a JSON body"))
}

/// Send message `id` through the member on `port` until it is acknowledged, retrying only a
/// retryable refusal: the task id and the retries.
async fn send(client: &reqwest::Client, port: u16, id: &str) -> (String, usize) {
    let params = json!({
        "message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hello"}]},
        "configuration": {"returnImmediately": true},
    });
    let mut retries = 0;
    loop {
        let (status, body) = rpc(client, port, "SendMessage", params.clone()).await;
        if let Some(task) = body["result"]["task"]["id"].as_str() {
            return (task.to_owned(), retries);
        }
        assert_eq!(
            (status, &body["error"]["code"]),
            (503, &json!(-32603)),
            "{body}"
        );
        retries += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_a_member_loses_no_acknowledged_task_over_iggy() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let key = dir.path().join("peer.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef").expect("key");
    let ports = free_ports(N);
    let mut members: Vec<Option<Killed>> = Vec::new();
    for i in 0..N {
        let (child, line) = spawn(&member_args(&server.url(), i, &ports, ports[i], &key));
        assert!(line.contains(&format!("member {i}/{N}")), "{line}");
        members.push(Some(child));
    }
    // Another list: refused at start, naming the member that disagrees.
    let mut other = ports.clone();
    other.swap(2, 3);
    let listen = free_ports(1)[0];
    let (_refused, error) = spawn(&member_args(&server.url(), 0, &other, listen, &key));
    assert!(error.contains("--peers"), "{error}");

    let client = reqwest::Client::new();
    // `/mcp`: the demo tools answer a call through every member (each its own share), and a
    // task made through one is read back through the next.
    for i in 0..N {
        let (_, echoed) = mcp(
            &client,
            ports[i],
            "tools/call",
            json!({"name": "echo",
            "arguments": {"text": format!("via {i}")}}),
        )
        .await;
        assert_eq!(
            echoed["result"]["content"][0]["text"],
            format!("via {i}"),
            "{echoed}"
        );
        let (_, made) = mcp(
            &client,
            ports[i],
            "tools/call",
            json!({"name": "slow_compute",
            "arguments": {"seconds": 0}, "task": {"ttl": 60000}}),
        )
        .await;
        let task = made["result"]["task"]["taskId"].as_str().expect("a task");
        let next = ports[(i + 1) % N];
        let (_, result) = mcp(&client, next, "tasks/result", json!({"taskId": task})).await;
        assert!(result["result"]["content"].is_array(), "{result}");
    }
    let mut acknowledged = Vec::new();
    for k in 0..200 {
        let (task, _) = send(&client, ports[k % N], &format!("k-{k}")).await;
        acknowledged.push(task);
    }
    let killed = 2;
    members[killed] = None;
    let killed_at = Instant::now();
    let alive: Vec<u16> = (0..N).filter(|i| *i != killed).map(|i| ports[i]).collect();
    let mut retries = 0;
    for k in 200..300 {
        let (task, r) = send(&client, alive[k % alive.len()], &format!("k-{k}")).await;
        retries += r;
        acknowledged.push(task);
    }
    // The killed member's partitions: the first answer through a survivor after the kill.
    let mut moved = Vec::new();
    for p in (0..P).filter(|p| *p as usize % N == killed) {
        if let Some(task) = acknowledged
            .iter()
            .find(|t| partition_for_key(t.as_bytes(), P) == p)
        {
            let (status, body) = rpc(&client, alive[0], "GetTask", json!({"id": task})).await;
            assert_eq!(
                (status, &body["result"]["id"]),
                (200, &json!(task)),
                "{body}"
            );
            moved.push(killed_at.elapsed());
        }
    }
    let mut not_found = 0;
    for task in &acknowledged {
        for port in &alive {
            let (status, body) = rpc(&client, *port, "GetTask", json!({"id": task})).await;
            if body["error"]["code"] == -32001 {
                not_found += 1;
            }
            assert_eq!(
                (status, &body["result"]["id"]),
                (200, &json!(task)),
                "{body}"
            );
        }
    }
    assert_eq!(not_found, 0);
    let (_, listed) = rpc(&client, alive[1], "ListTasks", json!({"pageSize": 10})).await;
    assert_eq!(listed["result"]["totalSize"], 300, "{listed}");
    eprintln!(
        "[iggy] kill -9 of member {killed}/{N}: 300 acknowledged, 0 lost, 0 not found, {retries} sends retried; its partitions answered {:?} after the kill",
        moved.last()
    );
}
