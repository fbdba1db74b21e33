//! The `list` part: `ListTasks` over N members (each a router on a loopback listener, the
//! static map of `serve --member`), the latency of a whole fan-out and of one forwarded share
//! alone (a peer's marked request for its partitions), and at N = 4 the time each partition
//! of a stopped member takes to answer through another member (its successor holds it on
//! demand from the partition's checkpoint).

use std::time::Instant;

use agentlog::http::PARTITIONS;
use agentlog::log::partition_for_key;
use agentlog::security::peers::{FORWARDED_BY, Members, PeerKey};
use agentlog_integration::bench::{env_number, median, task_id, task_records, write_tasks_with};
use serde_json::{Value, json};

use crate::member::{Member, Serving};
use crate::{P, config, memory_log, topics};

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

struct Client {
    http: reqwest::Client,
    urls: Vec<String>,
}

impl Client {
    /// A JSON-RPC call to member `i` (with `headers`): its latency in µs, status and body.
    async fn rpc(
        &self,
        i: usize,
        method: &str,
        params: Value,
        headers: &[(&str, String)],
    ) -> (f64, u16, Value) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let body = serde_json::to_vec(&body).unwrap();
        let mut request = self
            .http
            .post(format!("{}/", self.urls[i]))
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let started = Instant::now();
        let answer = request.body(body).send().await.unwrap();
        let status = answer.status().as_u16();
        let body: Value = answer.json().await.unwrap();
        (started.elapsed().as_secs_f64() * 1e6, status, body)
    }

    /// A share of a fan-out as member 0 would ask member `i` for it: marked, with the
    /// partitions `i` owns.
    async fn share(&self, i: usize, n: u32, key: &PeerKey) -> (f64, u16, Value) {
        let partitions: Vec<String> = (0..P)
            .filter(|p| p % n == i as u32)
            .map(|p| p.to_string())
            .collect();
        let partitions = partitions.join(",");
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 50}});
        let bytes = serde_json::to_vec(&body).unwrap();
        let mark = key.mark(
            0,
            "POST",
            &format!("/\n{partitions}"),
            &bytes,
            agentlog::retention::now_ms(),
        );
        self.rpc(
            i,
            "ListTasks",
            json!({"pageSize": 50}),
            &[(FORWARDED_BY, mark), (PARTITIONS, partitions)],
        )
        .await
    }
}

fn summary(mut v: Vec<f64>) -> (Vec<f64>, String) {
    v.sort_by(f64::total_cmp);
    let text = format!(
        "{:.0} / {:.0} / {:.0} / {:.0}",
        quantile(&v, 0.5),
        quantile(&v, 0.9),
        quantile(&v, 0.99),
        v[v.len() - 1]
    );
    (v, text)
}

pub async fn list() -> Value {
    let tasks = env_number("SCALE_LIST_TASKS", 20_000usize);
    let requests = env_number("SCALE_LIST_REQUESTS", 2_000usize);
    println!(
        "\n## ListTasks over N members ({tasks} tasks, page size 50, {requests} requests each; latency µs p50 / p90 / p99 / max; CPU: the members' threads)\n"
    );
    println!(
        "| N | what | latency µs | CPU µs a request, all members | CPU µs a share, the asked member |"
    );
    println!("| --- | --- | --- | --- | --- |");
    let key = PeerKey::new(KEY).unwrap();
    let mut out = json!({"tasks": tasks, "requests": requests});
    for n in [1u32, 2, 4] {
        let log = memory_log().await;
        let topics = topics();
        topics.ensure(&log).await.unwrap();
        // The tasks of an anonymous caller: this bench's requests carry no credentials.
        let now = agentlog::retention::now_ms();
        write_tasks_with(&log, &topics, 0..tasks, move |t| {
            let mut records = task_records(t, now);
            for record in &mut records {
                record.header.principal = String::new();
            }
            records
        })
        .await;
        let listeners: Vec<_> = (0..n)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let urls: Vec<String> = listeners
            .iter()
            .map(|l| format!("http://{}", l.local_addr().unwrap()))
            .collect();
        let mut members = Vec::new();
        for (i, listener) in (0..n).zip(listeners) {
            let serving = Serving {
                listener,
                members: Members::new(i, n, urls.clone()).unwrap(),
                key: PeerKey::new(KEY).unwrap(),
            };
            members.push(Some(
                Member::start(log.clone(), config(i, n), Some(serving)).await,
            ));
        }
        for member in members.iter().flatten() {
            member.bridge.view().sync(None, crate::SYNC).await.unwrap();
        }
        let client = Client {
            http: reqwest::Client::new(),
            urls,
        };
        let cpu = |members: &[Option<Member>]| -> Vec<u64> {
            members
                .iter()
                .map(|m| m.as_ref().map_or(0, |m| m.sched().cpu_ns))
                .collect()
        };
        for k in 0..100 {
            client
                .rpc(k % n as usize, "ListTasks", json!({"pageSize": 50}), &[])
                .await;
        }
        let before = cpu(&members);
        let mut whole = Vec::with_capacity(requests);
        for k in 0..requests {
            let (micros, status, body) = client
                .rpc(k % n as usize, "ListTasks", json!({"pageSize": 50}), &[])
                .await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["result"]["tasks"].as_array().unwrap().len(), 50);
            whole.push(micros);
        }
        let after = cpu(&members);
        let cpu_whole: f64 = after
            .iter()
            .zip(&before)
            .map(|(a, b)| (a - b) as f64)
            .sum::<f64>()
            / requests as f64
            / 1e3;
        let (whole, text) = summary(whole);
        println!("| {n} | whole ListTasks (round robin) | {text} | {cpu_whole:.0} | |");
        let mut result = json!({"n": n, "whole_us": whole, "whole_cpu_us": cpu_whole});
        if n >= 2 {
            let before = cpu(&members);
            let mut shares = Vec::with_capacity(requests);
            for k in 0..requests {
                let i = 1 + k % (n as usize - 1);
                let (micros, status, body) = client.share(i, n, &key).await;
                assert_eq!(status, 200, "{body}");
                shares.push(micros);
            }
            let after = cpu(&members);
            let cpu_share: f64 = after
                .iter()
                .zip(&before)
                .map(|(a, b)| (a - b) as f64)
                .sum::<f64>()
                / requests as f64
                / 1e3;
            let (shares, text) = summary(shares);
            println!(
                "| {n} | one forwarded share ({} partitions) | {text} | | {cpu_share:.0} |",
                P / n
            );
            result["share_us"] = json!(shares);
            result["share_cpu_us"] = json!(cpu_share);
        }
        if n == 4 {
            result["moves"] = moves(&mut members, &client, tasks).await;
        }
        for member in members.into_iter().flatten() {
            member.stop().await;
        }
        out[format!("n{n}")] = result;
    }
    out
}

/// Every member writes its partitions' checkpoints; member 1 stops; each of its partitions is
/// asked for (GetTask) through member 3: forwarded to member 1, refused, then to member 2
/// (the successor), which holds it on demand from its checkpoint. The time to the answer.
async fn moves(members: &mut [Option<Member>], client: &Client, tasks: usize) -> Value {
    for member in members.iter().flatten() {
        let view = member.bridge.view().clone();
        member
            .run(async move { view.checkpoint().await.unwrap() })
            .await;
    }
    members[1].take().unwrap().stop().await;
    let mut out = Vec::new();
    for p in (0..P).filter(|p| p % 4 == 1) {
        let in_p = (0..tasks)
            .filter(|t| partition_for_key(task_id(*t).as_bytes(), P) == p)
            .count();
        let id = (0..tasks)
            .map(task_id)
            .find(|id| partition_for_key(id.as_bytes(), P) == p)
            .unwrap();
        // The successor's and the forwarder's CPU for each request: the hold's work apart
        // from the wall time the machine's load adds.
        let cpu = |members: &[Option<Member>]| {
            [2, 3].map(|i| members[i].as_ref().unwrap().sched().cpu_ns as f64 / 1e3)
        };
        let before = cpu(members);
        let (first, status, body) = client.rpc(3, "GetTask", json!({"id": id}), &[]).await;
        assert_eq!((status, &body["result"]["id"]), (200, &json!(id)), "{body}");
        let between = cpu(members);
        let (then, status, _) = client.rpc(3, "GetTask", json!({"id": id}), &[]).await;
        assert_eq!(status, 200);
        let after = cpu(members);
        out.push(json!({
            "partition": p, "tasks": in_p, "first_us": first, "then_us": then,
            "first_cpu_us": [between[0] - before[0], between[1] - before[1]],
            "then_cpu_us": [after[0] - between[0], after[1] - between[1]],
        }));
    }
    let firsts: Vec<f64> = out
        .iter()
        .map(|m| m["first_us"].as_f64().unwrap())
        .collect();
    let thens: Vec<f64> = out.iter().map(|m| m["then_us"].as_f64().unwrap()).collect();
    let successor = |key: &str| median(out.iter().map(|m| m[key][0].as_f64().unwrap()));
    println!(
        "| 4 | a stopped member's partition, first GetTask through another member (forwarded, refused, held on demand by the successor from its checkpoint; ~{} tasks a partition): p50 / max | {:.0} / {:.0} | successor {:.0} (the next GetTask: {:.0} µs, successor {:.0}) | |",
        tasks / P as usize,
        median(firsts.iter().copied()),
        firsts.iter().copied().fold(0.0, f64::max),
        successor("first_cpu_us"),
        median(thens.iter().copied()),
        successor("then_cpu_us"),
    );
    Value::Array(out)
}
