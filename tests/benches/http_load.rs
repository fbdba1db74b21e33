//! HTTP load benchmark of the router (`agentlog::http`) on a loopback port: JSON-RPC
//! `SendMessage` (returnImmediately), `GetTask` and the blocking round trip through the demo
//! worker, at 1 and 32 keep-alive connections, against a bare axum handler answering a fixed
//! JSON-RPC body (the ceiling of the HTTP layer), and an MCP `tools/call` round trip through
//! the demo tools' worker (`/mcp`, the legacy era a stateless client speaks) beside the A2A
//! blocking one, and an MCP `resources/read` of a finished task's artifact (no worker: the view)
//! beside that `tools/call`. Prints a table; see `benches/README.md`.
//!
//! `cargo bench -p agentlog-integration --bench http_load`
//! (`HTTP_LOAD_FILTER=<text>[|<text>...]` keeps only the cases whose label contains one of them;
//! `HTTP_LOAD_ROUNDS=<n>` sets the rounds, 3 by default.)
//!
//! Server and client share the machine: the server runs on a 2-worker tokio runtime, the
//! client (hyper's bare HTTP/1.1 connections, one task per connection) on a current-thread
//! runtime on the main thread. Every figure therefore includes the client's CPU cost; the
//! ratio to the bare handler cancels most of it.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::http::mcp::McpHttpConfig;
use agentlog::http::{HttpConfig, router, serve};
use agentlog::log::Log;
use agentlog::log::embedded::{EmbeddedLog, EmbeddedOptions, FsyncPolicy};
use agentlog::mcp::{McpBridge, McpConfig};
use agentlog::worker::{Worker, WorkerConfig};
use agentlog_integration::bench::{median, process_cpu_time};
use agentlog_server::agents::DemoHandler;
use agentlog_server::agents::demo_tools::{DEMO_TOOLS_AGENT, demo_tool_handlers, demo_tools};
use axum::Router;
use axum::routing::post;
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

/// Measured time per run, after `WARM_UP`.
const CASE_TIME: Duration = Duration::from_secs(2);
/// Every case runs once per round; figures are medians over rounds (`HTTP_LOAD_ROUNDS`).
const ROUNDS: usize = 3;
const WARM_UP: Duration = Duration::from_millis(500);
const CONNECTIONS: [usize; 2] = [1, 32];

/// What the bare handler answers: a typical `SendMessage` reply.
const FIXED_REPLY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"0b4f2a1e-7d3c-8a55-9e10-4c2b6d8f1a3e","contextId":"5e7a9c1b-3d2f-8b44-a6e0-1f9d3c5b7a2e","status":{"state":"TASK_STATE_SUBMITTED","timestamp":"2026-11-30T08:33:02.578Z"},"history":[{"messageId":"m-0-0","contextId":"5e7a9c1b-3d2f-8b44-a6e0-1f9d3c5b7a2e","taskId":"0b4f2a1e-7d3c-8a55-9e10-4c2b6d8f1a3e","role":"ROLE_USER","parts":[{"text":"hi"}]}]}}}"#;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Bare,
    /// Our router and `Bridge::handle` with no log work: `GetExtendedAgentCard` (answered -32004).
    RouterOnly,
    Send,
    Get,
    Blocking,
    /// `tools/call` of the demo `greet` tool, answered by its worker.
    McpCall,
    /// `resources/read` of the artifact of a task the demo A2A worker finished before the run.
    McpRead,
}

#[derive(Clone, Copy)]
struct Case {
    kind: Kind,
    fsync: FsyncPolicy,
}

impl Case {
    fn label(self) -> String {
        let fsync = match self.fsync {
            FsyncPolicy::Always => "Always".to_owned(),
            FsyncPolicy::Interval(d) => format!("Interval({}ms)", d.as_millis()),
            FsyncPolicy::Never => "Never".to_owned(),
        };
        match self.kind {
            Kind::Bare => "bare axum handler".to_owned(),
            Kind::RouterOnly => "router, no log work (GetExtendedAgentCard)".to_owned(),
            Kind::Send => format!("SendMessage, returnImmediately [{fsync}]"),
            Kind::Get => format!("GetTask [{fsync}]"),
            Kind::Blocking => format!("SendMessage, blocking, demo worker [{fsync}]"),
            Kind::McpCall => format!("MCP tools/call (greet), demo tool worker [{fsync}]"),
            Kind::McpRead => format!("MCP resources/read, a task's artifact [{fsync}]"),
        }
    }
}

struct Server {
    address: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
    _worker: Option<Worker>,
    _dir: tempfile::TempDir,
    /// The resource `McpRead` reads.
    uri: Option<String>,
}

fn start(server_rt: &Runtime, case: Case) -> Server {
    server_rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mut worker = None;
        let mut uri = None;
        let app = if case.kind == Kind::Bare {
            Router::new().route(
                "/",
                post(|_body: Bytes| async {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        FIXED_REPLY,
                    )
                }),
            )
        } else {
            let log = Log::new(
                EmbeddedLog::open(
                    dir.path().to_path_buf(),
                    EmbeddedOptions::default().fsync(case.fsync),
                )
                .unwrap(),
            );
            if case.kind == Kind::McpRead {
                let bridge = Bridge::open(log.clone(), BridgeConfig::new("bench"))
                    .await
                    .unwrap();
                let mut config = WorkerConfig::new("bench");
                config.view = Some(bridge.view().clone());
                worker = Some(Worker::start(log.clone(), config, DemoHandler).await.unwrap());
                let request = serde_json::from_str(
                    r#"{"message":{"messageId":"read-me","role":"ROLE_USER","parts":[{"text":"hello"}]}}"#,
                )
                .unwrap();
                let caller = agentlog::Caller::anonymous();
                let agentlog_wire::a2a::SendMessageResponse::Task(task) =
                    bridge.send_message(&caller, request).await.unwrap()
                else {
                    panic!("the demo answered a message");
                };
                assert_eq!(task.artifacts.len(), 1, "{task:?}");
                uri = Some(format!(
                    "agentlog://tasks/bench%3A{}/artifacts/{}",
                    task.id, task.artifacts[0].artifact_id
                ));
                let config = McpConfig::new(demo_tools()).a2a(vec![bridge]);
                let mcp = McpBridge::open(log, config).await.unwrap();
                let http = McpHttpConfig::new().allowed(agentlog::http::Allowed {
                    hosts: vec!["*".to_owned()],
                    ..Default::default()
                });
                agentlog::http::mcp::router(mcp, http).unwrap()
            } else if case.kind == Kind::McpCall {
                let mcp = McpBridge::open(log.clone(), McpConfig::new(demo_tools()))
                    .await
                    .unwrap();
                let mut config = WorkerConfig::new(DEMO_TOOLS_AGENT);
                config.view = Some(mcp.bridges()[DEMO_TOOLS_AGENT].view().clone());
                worker = Some(
                    Worker::start(log, config, demo_tool_handlers())
                        .await
                        .unwrap(),
                );
                let http = McpHttpConfig::new().allowed(agentlog::http::Allowed {
                    hosts: vec!["*".to_owned()],
                    ..Default::default()
                });
                agentlog::http::mcp::router(mcp, http).unwrap()
            } else {
                let bridge = Bridge::open(log.clone(), BridgeConfig::new("bench"))
                    .await
                    .unwrap();
                if case.kind == Kind::Blocking {
                    let mut config = WorkerConfig::new("bench");
                    config.view = Some(bridge.view().clone());
                    worker = Some(Worker::start(log, config, DemoHandler).await.unwrap());
                }
                router(bridge, HttpConfig::default())
            }
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let done = tokio::spawn(serve(listener, app, async move {
            let _ = stopped.await;
        }));
        Server {
            address,
            stop,
            done,
            _worker: worker,
            _dir: dir,
            uri,
        }
    })
}

fn send_body(conn: usize, i: u64, return_immediately: bool) -> Bytes {
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"SendMessage","params":{{"message":{{"messageId":"m-{conn}-{i}","role":"ROLE_USER","parts":[{{"text":"hi"}}]}},"configuration":{{"returnImmediately":{return_immediately}}}}}}}"#
    ))
}

fn get_body(i: u64, task_id: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"GetTask","params":{{"id":"{task_id}"}}}}"#
    ))
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(address: SocketAddr) -> Sender {
    let stream = TcpStream::connect(address).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    sender
}

fn tool_call_body(i: u64) -> Bytes {
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"greet","arguments":{{"name":"bench {i}"}}}}}}"#
    ))
}

fn read_body(i: u64, uri: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"resources/read","params":{{"uri":"{uri}"}}}}"#
    ))
}

/// One request to `path`; `Ok(true)` for a JSON-RPC success.
async fn request(sender: &mut Sender, path: &str, body: Bytes) -> bool {
    sender.ready().await.unwrap();
    let request = Request::post(path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(Full::new(body))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let ok = response.status() == 200;
    let body = response.into_body().collect().await.unwrap().to_bytes();
    ok && body.windows(9).any(|w| w == br#""result":"#)
}

struct Outcome {
    requests: u64,
    errors: u64,
    latency_us: Histogram<u64>,
    elapsed: Duration,
    /// CPU time of the whole process (server and client) over the measured window.
    cpu: Option<Duration>,
}

async fn load(address: SocketAddr, case: Case, connections: usize, task_id: Arc<str>) -> Outcome {
    let start = Instant::now();
    let measure_from = start + WARM_UP;
    let end = measure_from + CASE_TIME;
    let cpu_at_start = tokio::spawn(async move {
        tokio::time::sleep_until(measure_from.into()).await;
        process_cpu_time()
    });
    let mut tasks = Vec::new();
    for conn in 0..connections {
        let task_id = task_id.clone();
        tasks.push(tokio::spawn(async move {
            let mut sender = connect(address).await;
            let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
            let (mut requests, mut errors) = (0u64, 0u64);
            let mut i = 0u64;
            loop {
                let now = Instant::now();
                if now >= end {
                    break;
                }
                i += 1;
                let body = match case.kind {
                    Kind::RouterOnly => Bytes::from(format!(
                        r#"{{"jsonrpc":"2.0","id":{i},"method":"GetExtendedAgentCard"}}"#
                    )),
                    Kind::Bare | Kind::Send => send_body(conn, i, true),
                    Kind::Blocking => send_body(conn, i, false),
                    Kind::Get => get_body(i, &task_id),
                    Kind::McpCall => tool_call_body(i),
                    Kind::McpRead => read_body(i, &task_id),
                };
                let path = if matches!(case.kind, Kind::McpCall | Kind::McpRead) {
                    "/mcp"
                } else {
                    "/"
                };
                // The router-only case is answered with an error by design.
                let ok = request(&mut sender, path, body).await != (case.kind == Kind::RouterOnly);
                if now >= measure_from {
                    requests += 1;
                    errors += u64::from(!ok);
                    latency
                        .record(now.elapsed().as_micros().max(1) as u64)
                        .unwrap();
                }
            }
            (requests, errors, latency)
        }));
    }
    let mut outcome = Outcome {
        requests: 0,
        errors: 0,
        latency_us: Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap(),
        elapsed: Duration::ZERO,
        cpu: None,
    };
    for task in tasks {
        let (requests, errors, latency) = task.await.unwrap();
        outcome.requests += requests;
        outcome.errors += errors;
        outcome.latency_us.add(latency).unwrap();
    }
    // Requests that started before `end` finish after it; count the time they took.
    outcome.elapsed = start.elapsed().saturating_sub(WARM_UP);
    if let (Ok(Some(from)), Some(to)) = (cpu_at_start.await, process_cpu_time()) {
        outcome.cpu = Some(to.saturating_sub(from));
    }
    // Let the connection tasks see their senders dropped and close, so the server's
    // graceful shutdown does not wait for them.
    tokio::time::sleep(Duration::from_millis(20)).await;
    outcome
}

fn main() {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let default_fsync = EmbeddedOptions::default().fsync;
    let mut policies = vec![default_fsync];
    for other in [
        FsyncPolicy::Always,
        FsyncPolicy::Interval(Duration::from_millis(100)),
        FsyncPolicy::Never,
    ] {
        if !policies.contains(&other) {
            policies.push(other);
        }
    }
    let mut cases = vec![
        Case {
            kind: Kind::Bare,
            fsync: default_fsync,
        },
        Case {
            kind: Kind::RouterOnly,
            fsync: default_fsync,
        },
    ];
    cases.extend(policies.iter().map(|&fsync| Case {
        kind: Kind::Send,
        fsync,
    }));
    for kind in [Kind::Get, Kind::Blocking, Kind::McpCall, Kind::McpRead] {
        cases.push(Case {
            kind,
            fsync: default_fsync,
        });
    }

    // `HTTP_LOAD_FILTER=Never` runs only the cases whose label contains it (for profiling);
    // `bare|returnImmediately [Interval` keeps the two cases of the ratio.
    if let Ok(filter) = std::env::var("HTTP_LOAD_FILTER") {
        cases.retain(|case| filter.split('|').any(|f| case.label().contains(f)));
    }
    let rounds: usize = agentlog_integration::bench::env_number("HTTP_LOAD_ROUNDS", ROUNDS);
    println!(
        "HTTP load: {rounds} rounds of every case, {CASE_TIME:?} per run after {WARM_UP:?} warm-up; \
         medians over rounds; embedded log in a tempdir; default fsync policy = {default_fsync:?}; \
         cores = {}",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    // runs[case][connections]: one entry per round.
    let mut runs: Vec<Vec<Vec<Run>>> = vec![vec![Vec::new(); CONNECTIONS.len()]; cases.len()];
    for round in 0..rounds {
        // Every case once per round, so a slow spell of the machine hits all cases alike.
        for (k, &case) in cases.iter().enumerate() {
            for (c, &connections) in CONNECTIONS.iter().enumerate() {
                let run = run_case(&server_rt, &client_rt, case, connections);
                eprintln!(
                    "round {}: {} at {connections}: {:.0} req/s",
                    round + 1,
                    case.label(),
                    run.rate
                );
                runs[k][c].push(run);
            }
        }
    }
    println!(
        "| {:<52} | conns | {:>9} | {:>8} | {:>8} | {:>6} | {:>17} | {:>10} |",
        "case", "req/s", "p50 µs", "p99 µs", "errors", "req/s min–max", "CPU µs/req"
    );
    println!(
        "|{:-<54}|-------|{:-<11}|{:-<10}|{:-<10}|{:-<8}|{:-<19}|{:-<12}|",
        "", "", "", "", "", "", ""
    );
    for (k, case) in cases.iter().enumerate() {
        for (c, &connections) in CONNECTIONS.iter().enumerate() {
            let rounds = &runs[k][c];
            let rates: Vec<f64> = rounds.iter().map(|r| r.rate).collect();
            let (min, max) = rates
                .iter()
                .fold((f64::MAX, 0.0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
            println!(
                "| {:<52} | {:>5} | {:>9.0} | {:>8.0} | {:>8.0} | {:>6} | {:>17} | {:>10.1} |",
                case.label(),
                connections,
                median(rates.iter().copied()),
                median(rounds.iter().map(|r| r.p50_us as f64)),
                median(rounds.iter().map(|r| r.p99_us as f64)),
                rounds.iter().map(|r| r.errors).sum::<u64>(),
                format!("{min:.0}–{max:.0}"),
                median(rounds.iter().map(|r| r.cpu_us)),
            );
        }
    }
    let blocking = cases.iter().position(|c| c.kind == Kind::Blocking);
    let mcp = cases.iter().position(|c| c.kind == Kind::McpCall);
    if let (Some(blocking), Some(mcp)) = (blocking, mcp) {
        println!();
        for (c, connections) in CONNECTIONS.iter().enumerate() {
            print_ratio(
                &format!(
                    "A2A blocking SendMessage / MCP tools/call at {connections} connection(s)"
                ),
                &runs[blocking][c],
                &runs[mcp][c],
                |a2a, mcp| a2a.rate / mcp.rate.max(f64::MIN_POSITIVE),
            );
        }
    }
    let read = cases.iter().position(|c| c.kind == Kind::McpRead);
    if let (Some(read), Some(mcp)) = (read, mcp) {
        println!();
        for (c, connections) in CONNECTIONS.iter().enumerate() {
            print_ratio(
                &format!(
                    "MCP resources/read / MCP tools/call at {connections} connection(s) (target >= 1.5)"
                ),
                &runs[read][c],
                &runs[mcp][c],
                |read, call| read.rate / call.rate.max(f64::MIN_POSITIVE),
            );
        }
    }
    let bare = cases.iter().position(|c| c.kind == Kind::Bare);
    let send = cases
        .iter()
        .position(|c| c.kind == Kind::Send && c.fsync == default_fsync);
    if let (Some(bare), Some(send)) = (bare, send) {
        println!();
        for (c, connections) in CONNECTIONS.iter().enumerate() {
            let (send, bare) = (&runs[send][c], &runs[bare][c]);
            print_ratio(
                &format!("SendMessage [{default_fsync:?}] / bare at {connections} connection(s)"),
                send,
                bare,
                |send, bare| send.rate / bare.rate.max(f64::MIN_POSITIVE),
            );
            // The same ratio from CPU per request (the whole process: server and client),
            // which a slow spell of the machine moves less than the rate.
            print_ratio(
                "  by CPU per request (bare / SendMessage)",
                send,
                bare,
                |send, bare| bare.cpu_us / send.cpu_us.max(f64::MIN_POSITIVE),
            );
        }
    }
}

/// Print `label`, the median of each round's `ratio` of the SendMessage run to the bare one
/// (runs of one round are minutes apart at most), and the rounds' ratios.
fn print_ratio(label: &str, send: &[Run], bare: &[Run], ratio: impl Fn(&Run, &Run) -> f64) {
    let ratios: Vec<f64> = send.iter().zip(bare).map(|(s, b)| ratio(s, b)).collect();
    let list: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    println!(
        "{label}: median {:.2} (rounds: {})",
        median(ratios.iter().copied()),
        list.join(", ")
    );
}

/// One case at one connection count, on a fresh server.
#[derive(Clone)]
struct Run {
    rate: f64,
    p50_us: u64,
    p99_us: u64,
    errors: u64,
    /// CPU µs of the whole process (server and client) per request; 0 where unknown.
    cpu_us: f64,
}

fn run_case(server_rt: &Runtime, client_rt: &Runtime, case: Case, connections: usize) -> Run {
    let server = start(server_rt, case);
    let task_id: Arc<str> = client_rt.block_on(async {
        if let Some(uri) = &server.uri {
            return uri.as_str().into();
        }
        if case.kind != Kind::Get {
            return "".into();
        }
        let mut sender = connect(server.address).await;
        let request = Request::post("/")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .body(Full::new(send_body(9999, 0, true)))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let reply: serde_json::Value = serde_json::from_slice(&body).unwrap();
        reply["result"]["task"]["id"].as_str().unwrap().into()
    });
    let outcome = client_rt.block_on(load(server.address, case, connections, task_id));
    // A figure of refusals would pass for one of answers.
    assert_eq!(
        outcome.errors,
        0,
        "{} at {connections}: answers that were not what the case expects",
        case.label()
    );
    let _ = server.stop.send(());
    server_rt.block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(15), server.done).await;
    });
    Run {
        rate: outcome.requests as f64 / outcome.elapsed.as_secs_f64(),
        p50_us: outcome.latency_us.value_at_quantile(0.5),
        p99_us: outcome.latency_us.value_at_quantile(0.99),
        errors: outcome.errors,
        cpu_us: outcome.cpu.map_or(0.0, |cpu| {
            cpu.as_secs_f64() * 1e6 / outcome.requests.max(1) as f64
        }),
    }
}
