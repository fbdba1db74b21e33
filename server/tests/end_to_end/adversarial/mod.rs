//! Hostile input against a real `agentlog serve --demo`, over sockets: the JSON-RPC envelope,
//! the params of every method in 1.0 and 0.3, HTTP itself (partial heads, slow bodies,
//! pipelining, duplicate and conflicting headers, absolute-form targets, huge headers, DNS
//! rebinding, CORS), `/mcp`, slow clients, and a server with JWT auth. Every case asserts the
//! status and JSON-RPC code the spec or our docs give. After every group the server still
//! serves a normal send and get; at the end nothing a refused request sent was written, and
//! every task acknowledged during the run reads back with its state after a restart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod auth;
mod cases;
mod client;
mod envelope;
mod mcp;
mod params;
mod raw_http;
mod slow;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::support::{Server, ok};
use serde_json::{Value, json};

use self::client::{Conn, post, raw, rpc};

/// The server's flags: short deadlines so slow clients are cut within the test, and a small
/// connection bound so one address can try to hold all of it.
fn flags() -> Vec<String> {
    let timeout = format!("{}s", raw_http::TIMEOUT.as_secs());
    let max = raw_http::MAX_CONNECTIONS.to_string();
    [
        "--max-connections",
        &max,
        "--header-timeout",
        &timeout,
        "--body-timeout",
        &timeout,
    ]
    .map(str::to_owned)
    .to_vec()
}

fn start(log: &str, extra: &[String], dir: &std::path::Path) -> (Server, SocketAddr) {
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let (server, _) = Server::start_with(log, &extra, dir);
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("the server's address");
    (server, addr)
}

/// One JSON-RPC exchange on a fresh connection; its JSON body.
fn call(addr: SocketAddr, method: &str, params: &str, headers: &[&str]) -> Value {
    let response = Conn::open(addr)
        .exchange(&post("/", &rpc(method, params), headers))
        .expect("an answer");
    assert_eq!(response.status, 200, "{method}: {}", response.text());
    response.json()
}

/// Every task the anonymous caller has, by id, with its state.
fn all_tasks(addr: SocketAddr) -> BTreeMap<String, String> {
    let mut tasks = BTreeMap::new();
    let mut token = String::new();
    loop {
        let params = json!({"pageSize": 100, "pageToken": token}).to_string();
        let page = call(addr, "ListTasks", &params, &[]);
        let result = &page["result"];
        for task in result["tasks"].as_array().expect("tasks") {
            let id = task["id"].as_str().expect("an id").to_owned();
            let state = task["status"]["state"]
                .as_str()
                .expect("a state")
                .to_owned();
            tasks.insert(id, state);
        }
        token = result["nextPageToken"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if token.is_empty() {
            return tasks;
        }
    }
}

/// What a caller does after each group: the server is alive and serves a send and a get.
/// The task's id and state go to `acknowledged`.
fn still_serving(
    addr: SocketAddr,
    group: &str,
    acknowledged: &mut BTreeMap<String, String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    let health = Conn::open(addr).exchange(&raw("GET /healthz HTTP/1.1\nHost: 127.0.0.1\n\n", b""));
    if health.as_ref().map(|r| r.status) != Some(200) {
        failures.push(format!("[after {group}] /healthz: {health:?}"));
    }
    let message = json!({"message": {"messageId": format!("adv-after-{group}"), "role": "ROLE_USER",
                                     "parts": [{"text": format!("after {group}")}]}});
    let sent = call(addr, "SendMessage", &message.to_string(), &[]);
    let task = &sent["result"]["task"];
    let (Some(id), Some("TASK_STATE_COMPLETED")) =
        (task["id"].as_str(), task["status"]["state"].as_str())
    else {
        failures.push(format!("[after {group}] a normal send: {sent}"));
        return failures;
    };
    let got = call(addr, "GetTask", &json!({"id": id}).to_string(), &[]);
    if got["result"]["status"]["state"] != "TASK_STATE_COMPLETED" {
        failures.push(format!("[after {group}] a normal get: {got}"));
    }
    acknowledged.insert(id.to_owned(), "TASK_STATE_COMPLETED".to_owned());
    failures
}

#[test]
fn hostile_input_is_refused_with_the_right_codes_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = format!("file://{}", dir.path().join("log").display());
    let (server, addr) = start(&log, &flags(), dir.path());
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    let mut acknowledged = BTreeMap::new();
    let groups = [
        ("envelope", envelope::cases()),
        ("params", params::cases()),
        ("raw http", raw_http::cases(addr)),
        ("mcp", mcp::cases()),
    ];
    for (group, cases) in &groups {
        counts.push((*group, cases.len()));
        failures.extend(cases::run(group, addr, cases));
        failures.extend(still_serving(addr, group, &mut acknowledged));
    }
    failures.extend(raw_http::sequences(addr));
    failures.extend(still_serving(addr, "raw http sequences", &mut acknowledged));
    failures.extend(slow::normal_clients_are_served_while_slow_ones_wait(addr));
    failures.extend(still_serving(addr, "slow clients", &mut acknowledged));

    // Nothing refused was written: the only tasks are the normal sends between groups.
    let tasks = all_tasks(addr);
    if tasks != acknowledged {
        failures.push(format!(
            "[log] the tasks are not those acknowledged: {tasks:?} against {acknowledged:?}"
        ));
    }
    server.stop();
    let (server, addr) = start(&log, &flags(), dir.path());
    let after = all_tasks(addr);
    if after != acknowledged {
        failures.push(format!("[restart] {after:?} against {acknowledged:?}"));
    }
    for (id, state) in &acknowledged {
        let got = call(addr, "GetTask", &json!({"id": id}).to_string(), &[]);
        if got["result"]["status"]["state"] != state.as_str() {
            failures.push(format!("[restart] GetTask {id}: {got}"));
        }
    }
    server.stop();

    // A server with edge auth.
    let key = dir.path().join("issuer.key");
    ok(&["keygen", "--out", key.to_str().unwrap()]);
    let issuer = auth::Issuer::load(&key);
    let mut with_auth = flags();
    with_auth.extend(
        [
            "--jwt-issuer",
            auth::ISSUER,
            "--jwt-audience",
            auth::AUDIENCE,
            "--jwt-key",
        ]
        .map(str::to_owned),
    );
    with_auth.push(format!("{}.pub", key.display()));
    let (server, addr) = start("memory://", &with_auth, dir.path());
    let cases = auth::cases(&issuer);
    counts.push(("auth", cases.len()));
    failures.extend(cases::run("auth", addr, &cases));
    let health = Conn::open(addr).exchange(&raw("GET /healthz HTTP/1.1\nHost: 127.0.0.1\n\n", b""));
    if health.as_ref().map(|r| r.status) != Some(200) {
        failures.push(format!("[after auth] /healthz: {health:?}"));
    }
    server.stop();

    let total: usize = counts.iter().map(|(_, n)| n).sum();
    eprintln!("adversarial cases: {counts:?}, {total} in all, plus the sequences and slow clients");
    assert!(
        total >= 300,
        "the suite keeps at least 300 cases, has {total}"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
