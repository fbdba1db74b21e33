//! Benchmark: what a forward costs, and how long a killed member's partitions take to move.
//!
//! Two members sharing an agent (`serve --member`, here in one process over one `memory://`
//! log, each router on a loopback listener). The same `GetTask`s go to the task's owner
//! (direct) and to the other member (forwarded: it sends the request on, marked, and pipes the
//! answer back), in alternating rounds over one keep-alive connection, one at a time. The
//! process's CPU time (`/proc/self/stat`: the client, both members and the log, every thread)
//! per request is compared: the difference is what the forward adds over both bridges, the
//! measure a shared machine does not skew the way wall time is skewed.
//!
//! Then member 1 is stopped and each of its partitions is asked for through member 0, which
//! holds it on demand (the successor): the time from that first request to its answer is the
//! partition's move time (restore and catch-up of that partition; there is no checkpoint here,
//! so it replays the partition).
//!
//! `cargo bench -p agentlog-integration --bench forward`
//! (`FORWARD_TASKS=<n>` tasks written first, 2,000 by default; `FORWARD_REQUESTS=<n>` requests
//! per arm and round, 5,000; `FORWARD_ROUNDS=<n>` rounds, 3.)
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::http::{Forwarding, HttpConfig, router, serve};
use agentlog::log::partition_for_key;
use agentlog::security::owners::Owners;
use agentlog::security::peers::{Members, PeerKey};
use agentlog_integration::bench::{block_on, env_number, median, process_cpu_time};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const P: u32 = 16;
const AGENT: &str = "forward";

fn main() {
    block_on(run());
}

async fn run() {
    let tasks = env_number("FORWARD_TASKS", 2_000usize);
    let requests = env_number("FORWARD_REQUESTS", 5_000usize);
    let rounds = env_number("FORWARD_ROUNDS", 3usize);
    let log = agentlog::log::open(&format!("memory://?partitions={P}"))
        .await
        .unwrap();
    let mut listeners = Vec::new();
    for _ in 0..2 {
        listeners.push(TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let urls: Vec<String> = listeners
        .iter()
        .map(|l| format!("http://{}", l.local_addr().unwrap()))
        .collect();
    let mut stops = Vec::new();
    for (i, listener) in (0..2).zip(listeners) {
        let members = Members::new(i, 2, urls.clone()).unwrap();
        let config = BridgeConfig::new(AGENT).holding(members.owned_by(i, P));
        let bridge = Bridge::open(log.clone(), config).await.unwrap();
        let key = PeerKey::new(&[b'k'; 32]).unwrap();
        let forwarding = Forwarding::new(Owners::new(members.owner_map(P).unwrap()), key);
        let app = router(bridge, HttpConfig::new().forward(forwarding));
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            serve(listener, app, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        stops.push((stop, server));
    }
    let client = reqwest::Client::new();
    let call = |i: usize, method: &'static str, params: Value| {
        let client = client.clone();
        let url = format!("{}/", urls[i]);
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
            let answer = client
                .post(url)
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).unwrap())
                .send()
                .await
                .unwrap();
            let status = answer.status().as_u16();
            (status, answer.json::<Value>().await.unwrap())
        }
    };
    // Tasks of both members, written through their owners.
    let mut ids = Vec::with_capacity(tasks);
    for k in 0..tasks {
        let message = format!("m-{k}");
        let id = agentlog_wire::ids::task_id("", "", &message);
        let owner = (partition_for_key(id.as_bytes(), P) % 2) as usize;
        let params = json!({
            "message": {"messageId": message, "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"returnImmediately": true},
        });
        let (_, answer) = call(owner, "SendMessage", params).await;
        assert_eq!(answer["result"]["task"]["id"], id.as_str());
        ids.push((id, owner));
    }

    println!(
        "## A forwarded GetTask against a direct one (2 members, P = {P}, {tasks} tasks; CPU of the whole process per request, median of {rounds} rounds of {requests})\n"
    );
    let (mut direct, mut forwarded, mut wall_direct, mut wall_forwarded) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        for forward in [round % 2 == 1, round % 2 == 0] {
            let cpu = process_cpu_time().unwrap();
            let started = Instant::now();
            for n in 0..requests {
                let (id, owner) = &ids[n % ids.len()];
                let via = if forward { 1 - owner } else { *owner };
                let (status, answer) = call(via, "GetTask", json!({"id": id})).await;
                assert_eq!(status, 200);
                assert_eq!(answer["result"]["id"], id.as_str());
            }
            let wall = started.elapsed().as_secs_f64() * 1e6 / requests as f64;
            let cpu = (process_cpu_time().unwrap() - cpu).as_secs_f64() * 1e6 / requests as f64;
            if forward {
                forwarded.push(cpu);
                wall_forwarded.push(wall);
            } else {
                direct.push(cpu);
                wall_direct.push(wall);
            }
        }
    }
    let (direct, forwarded) = (median(direct), median(forwarded));
    println!("| path | CPU µs / request | wall µs / request |");
    println!("| --- | --- | --- |");
    println!(
        "| direct (to the owner) | {direct:.1} | {:.1} |",
        median(wall_direct)
    );
    println!(
        "| forwarded (to the other member) | {forwarded:.1} | {:.1} |",
        median(wall_forwarded)
    );
    println!(
        "| **the forward's cost** | **{:.1}** | |\n",
        forwarded - direct
    );

    // Member 1 goes away; member 0 (its successor) takes each of its partitions on demand.
    let (stop, server) = stops.pop().unwrap();
    let _ = stop.send(());
    server.await.unwrap();
    let mut moves = Vec::new();
    for p in (0..P).filter(|p| p % 2 == 1) {
        let Some((id, _)) = ids
            .iter()
            .find(|(id, _)| partition_for_key(id.as_bytes(), P) == p)
        else {
            continue;
        };
        let started = Instant::now();
        let (status, answer) = call(0, "GetTask", json!({"id": id})).await;
        assert_eq!((status, &answer["result"]["id"]), (200, &json!(id)));
        moves.push(started.elapsed().as_secs_f64() * 1e3);
    }
    moves.sort_by(f64::total_cmp);
    println!(
        "## Move time after a kill ({} partitions of ~{} tasks, replayed from the log)\n",
        moves.len(),
        tasks / P as usize
    );
    println!("| p50 ms | max ms |");
    println!("| --- | --- |");
    println!(
        "| {:.1} | {:.1} |",
        median(moves.iter().copied()),
        moves.last().copied().unwrap_or(0.0)
    );
    let (stop, server) = stops.pop().unwrap();
    let _ = stop.send(());
    server.await.unwrap();
}
