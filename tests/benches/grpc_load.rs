//! gRPC beside JSON-RPC, one server, one run: GetTask and SendMessage (returnImmediately and
//! blocking, the demo worker answering) at 1 and 32 connections, each a closed loop of one
//! request in flight per connection, JSON-RPC over HTTP/1.1 keep-alive (hyper) and gRPC over
//! HTTP/2 (tonic, one channel per connection). Prints requests per second and the gRPC /
//! JSON-RPC ratio per case; the server runs on two worker threads, the clients on one, in this
//! process (so the ratio, not the figures, is what carries to another machine).
//!
//! `cargo bench -p agentlog-integration --bench grpc_load`; `GRPC_LOAD_SECONDS` (default 3) per
//! case after half a second of warm-up, `GRPC_LOAD_ROUNDS` (default 1) rounds, the best kept.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use agentlog::grpc::GrpcConfig;
use agentlog::grpc::proto::a2a_service_client::A2aServiceClient;
use agentlog::grpc::proto::{self as pb};
use agentlog::http::{HttpConfig, router, serve};
use agentlog::log::Log;
use agentlog::log::embedded::{EmbeddedLog, EmbeddedOptions, FsyncPolicy};
use agentlog::worker::{Worker, WorkerConfig};
use agentlog::{Bridge, BridgeConfig};
use agentlog_server::agents::DemoHandler;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

/// One HTTP/2 connection as tonic's client service, without `Channel`'s buffer task: each
/// call goes straight to the connection, as each JSON-RPC request goes to its hyper sender.
#[derive(Clone)]
struct H2(hyper::client::conn::http2::SendRequest<tonic::body::Body>);

impl tower::Service<http::Request<tonic::body::Body>> for H2 {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = hyper::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, hyper::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), hyper::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(self.0.send_request(request))
    }
}

async fn grpc_connection(address: SocketAddr) -> A2aServiceClient<H2> {
    let stream = TcpStream::connect(address).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let origin = format!("http://{address}").parse().unwrap();
    A2aServiceClient::with_origin(H2(sender), origin)
}

const WARM_UP: Duration = Duration::from_millis(500);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    Get,
    SendImmediately,
    SendBlocking,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Get => "GetTask",
            Case::SendImmediately => "SendMessage returnImmediately",
            Case::SendBlocking => "SendMessage blocking",
        }
    }
}

struct Server {
    http: SocketAddr,
    grpc: SocketAddr,
    bare: SocketAddr,
    task_id: String,
    _stop: tokio::sync::watch::Sender<()>,
    _worker: Worker,
    _dir: tempfile::TempDir,
}

fn start(rt: &Runtime) -> Server {
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::new(
            EmbeddedLog::open(
                dir.path().to_path_buf(),
                EmbeddedOptions::default().fsync(FsyncPolicy::Never),
            )
            .unwrap(),
        );
        let bridge = Bridge::open(log.clone(), BridgeConfig::new("bench"))
            .await
            .unwrap();
        let mut config = WorkerConfig::new("bench");
        config.view = Some(bridge.view().clone());
        let worker = Worker::start(log, config, DemoHandler).await.unwrap();
        let request = serde_json::from_value(serde_json::json!({
            "message": {"messageId": "seed", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}))
        .unwrap();
        let answer = bridge
            .send_message(&agentlog::Caller::anonymous(), request)
            .await
            .unwrap();
        let agentlog_wire::a2a::SendMessageResponse::Task(task) = answer else {
            panic!("a task")
        };
        let (stop, stopped) = tokio::sync::watch::channel(());
        let until = |mut stopped: tokio::sync::watch::Receiver<()>| async move {
            let _ = stopped.changed().await;
        };
        let http_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http = http_listener.local_addr().unwrap();
        let app = router(bridge.clone(), HttpConfig::default());
        tokio::spawn(serve(http_listener, app, until(stopped.clone())));
        let grpc_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let grpc = grpc_listener.local_addr().unwrap();
        let bare_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let bare = bare_listener.local_addr().unwrap();
        let incoming = futures::stream::unfold(bare_listener, |listener| async move {
            let (socket, _) = listener.accept().await.ok()?;
            socket.set_nodelay(true).ok()?;
            Some((Ok::<_, std::io::Error>(socket), listener))
        });
        let canned = Bare(task.clone().into());
        tokio::spawn(
            tonic::transport::Server::builder().serve_with_incoming_shutdown(
                agentlog::grpc::proto::a2a_service_server::A2aServiceServer::new(canned),
                incoming,
                until(stopped.clone()),
            ),
        );
        tokio::spawn(agentlog::grpc::serve(
            grpc_listener,
            bridge,
            GrpcConfig::new(),
            until(stopped),
        ));
        Server {
            http,
            grpc,
            bare,
            task_id: task.id,
            _stop: stop,
            _worker: worker,
            _dir: dir,
        }
    })
}

/// The ceiling: tonic serving GetTask with a fixed task, no bridge behind it.
#[derive(Clone)]
struct Bare(pb::Task);

type Unary<T> = Result<tonic::Response<T>, tonic::Status>;
type Events = std::pin::Pin<
    Box<dyn futures::Stream<Item = Result<pb::StreamResponse, tonic::Status>> + Send>,
>;

fn none<T>() -> Result<T, tonic::Status> {
    Err(tonic::Status::unimplemented("bare"))
}

#[tonic::async_trait]
impl agentlog::grpc::proto::a2a_service_server::A2aService for Bare {
    async fn send_message(
        &self,
        _: tonic::Request<pb::SendMessageRequest>,
    ) -> Unary<pb::SendMessageResponse> {
        none()
    }
    type SendStreamingMessageStream = Events;
    async fn send_streaming_message(
        &self,
        _: tonic::Request<pb::SendMessageRequest>,
    ) -> Unary<Events> {
        none()
    }
    async fn get_task(&self, _: tonic::Request<pb::GetTaskRequest>) -> Unary<pb::Task> {
        Ok(tonic::Response::new(self.0.clone()))
    }
    async fn list_tasks(
        &self,
        _: tonic::Request<pb::ListTasksRequest>,
    ) -> Unary<pb::ListTasksResponse> {
        none()
    }
    async fn cancel_task(&self, _: tonic::Request<pb::CancelTaskRequest>) -> Unary<pb::Task> {
        none()
    }
    type SubscribeToTaskStream = Events;
    async fn subscribe_to_task(
        &self,
        _: tonic::Request<pb::SubscribeToTaskRequest>,
    ) -> Unary<Events> {
        none()
    }
    async fn create_task_push_notification_config(
        &self,
        _: tonic::Request<pb::TaskPushNotificationConfig>,
    ) -> Unary<pb::TaskPushNotificationConfig> {
        none()
    }
    async fn get_task_push_notification_config(
        &self,
        _: tonic::Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Unary<pb::TaskPushNotificationConfig> {
        none()
    }
    async fn list_task_push_notification_configs(
        &self,
        _: tonic::Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Unary<pb::ListTaskPushNotificationConfigsResponse> {
        none()
    }
    async fn get_extended_agent_card(
        &self,
        _: tonic::Request<pb::GetExtendedAgentCardRequest>,
    ) -> Unary<pb::AgentCard> {
        none()
    }
    async fn delete_task_push_notification_config(
        &self,
        _: tonic::Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Unary<()> {
        none()
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn json_rpc_connection(address: SocketAddr) -> Sender {
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

async fn json_rpc(sender: &mut Sender, body: String) -> bool {
    sender.ready().await.unwrap();
    let request = Request::post("/")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let ok = body.windows(9).any(|w| w == br#""result":"#);
    if !ok && std::env::var_os("GRPC_LOAD_DEBUG").is_some() {
        eprintln!("{}", String::from_utf8_lossy(&body));
    }
    ok
}

fn json_body(case: Case, conn: usize, i: u64, task_id: &str) -> String {
    match case {
        Case::Get => format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"GetTask","params":{{"id":"{task_id}"}}}}"#
        ),
        Case::SendImmediately | Case::SendBlocking => format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"SendMessage","params":{{"message":{{"messageId":"j-{conn}-{i}","role":"ROLE_USER","parts":[{{"text":"hi"}}]}},"configuration":{{"returnImmediately":{}}}}}}}"#,
            case == Case::SendImmediately
        ),
    }
}

fn grpc_request<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("a2a-version", "1.0".parse().unwrap());
    request
}

async fn grpc_call(
    client: &mut A2aServiceClient<H2>,
    case: Case,
    conn: usize,
    i: u64,
    task_id: &str,
) -> bool {
    match case {
        Case::Get => client
            .get_task(grpc_request(pb::GetTaskRequest {
                id: task_id.to_owned(),
                ..Default::default()
            }))
            .await
            .is_ok(),
        Case::SendImmediately | Case::SendBlocking => {
            let send = pb::SendMessageRequest {
                message: Some(pb::Message {
                    message_id: format!("g-{conn}-{i}"),
                    role: pb::Role::User.into(),
                    parts: vec![pb::Part {
                        content: Some(pb::part::Content::Text("hi".into())),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                configuration: Some(pb::SendMessageConfiguration {
                    return_immediately: case == Case::SendImmediately,
                    ..Default::default()
                }),
                ..Default::default()
            };
            client.send_message(grpc_request(send)).await.is_ok()
        }
    }
}

/// Requests per second of `connections` closed loops over `grpc` or JSON-RPC for `case`.
async fn load(
    server: &Server,
    grpc: bool,
    bare: bool,
    case: Case,
    connections: usize,
    round: usize,
) -> f64 {
    let seconds: u64 = std::env::var("GRPC_LOAD_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let start = Instant::now();
    let measure_from = start + WARM_UP;
    let end = measure_from + Duration::from_secs(seconds);
    let mut loops = Vec::new();
    for conn in 0..connections {
        let task_id = server.task_id.clone();
        let http = server.http;
        let grpc_address = if bare { server.bare } else { server.grpc };
        // Message ids unique per binding, round and connection: every send is a new task.
        let conn = conn + 1000 * round + usize::from(grpc) * 100_000;
        loops.push(tokio::spawn(async move {
            let mut counted = 0u64;
            let mut failed = 0u64;
            let mut i = 0u64;
            if grpc {
                let mut client = grpc_connection(grpc_address).await;
                while Instant::now() < end {
                    i += 1;
                    let ok = grpc_call(&mut client, case, conn, i, &task_id).await;
                    if Instant::now() >= measure_from {
                        counted += 1;
                        failed += u64::from(!ok);
                    }
                }
            } else {
                let mut sender = json_rpc_connection(http).await;
                while Instant::now() < end {
                    i += 1;
                    let ok = json_rpc(&mut sender, json_body(case, conn, i, &task_id)).await;
                    if Instant::now() >= measure_from {
                        counted += 1;
                        failed += u64::from(!ok);
                    }
                }
            }
            (counted, failed)
        }));
    }
    let (mut counted, mut failed) = (0, 0);
    for l in loops {
        let (c, f) = l.await.unwrap();
        counted += c;
        failed += f;
    }
    assert_eq!(failed, 0, "{} failed", case.name());
    let elapsed = start.elapsed().saturating_sub(WARM_UP).as_secs_f64();
    counted as f64 / elapsed
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
    let rounds: usize = std::env::var("GRPC_LOAD_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let server = start(&server_rt);
    println!(
        "{:<32} {:>5} {:>12} {:>12} {:>7}",
        "case", "conns", "JSON-RPC/s", "gRPC/s", "ratio"
    );
    for case in [Case::Get, Case::SendImmediately, Case::SendBlocking] {
        for connections in [1, 32] {
            let (mut json, mut grpc) = (0f64, 0f64);
            for round in 0..rounds {
                // Alternating which goes first, so that drift favours neither.
                let order = if round % 2 == 0 {
                    [false, true]
                } else {
                    [true, false]
                };
                for over_grpc in order {
                    let rate = client_rt.block_on(load(
                        &server,
                        over_grpc,
                        false,
                        case,
                        connections,
                        round,
                    ));
                    let best = if over_grpc { &mut grpc } else { &mut json };
                    *best = best.max(rate);
                }
            }
            println!(
                "{:<32} {connections:>5} {json:>12.0} {grpc:>12.0} {:>7.2}",
                case.name(),
                grpc / json
            );
        }
    }
    // The ceiling of the gRPC side: tonic and HTTP/2 alone, a fixed task for GetTask.
    for connections in [1, 32] {
        let rate = client_rt.block_on(load(&server, true, true, Case::Get, connections, 0));
        println!(
            "{:<32} {connections:>5} {:>12} {rate:>12.0}",
            "GetTask, bare tonic", "-"
        );
    }
}
