//! A2A's gRPC binding over a real listener, with tonic's client: every RPC, its metadata
//! (`a2a-version`, `a2a-extensions` and the trailer echoing them, `authorization`), every A2A
//! error with its status code and `ErrorInfo`, tenants, and tasks crossing between gRPC and
//! JSON-RPC on one bridge (the demo agent, on an in-memory log).

use std::net::SocketAddr;
use std::time::Duration;

use agentlog::grpc::proto::a2a_service_client::A2aServiceClient;
use agentlog::grpc::proto::{self as pb, send_message_response, stream_response};
use agentlog::grpc::{ERROR_DOMAIN, GrpcConfig};
use agentlog::http::HttpConfig;
use agentlog::http::auth::{Authenticator, EdgeAuth, Identity, Refusal, bearer_token};
use agentlog::worker::{Worker, WorkerConfig};
use agentlog::{Bridge, BridgeConfig, Caller};
use agentlog_server::agents::DemoHandler;
use agentlog_wire::a2a::{AgentExtension, SecurityScheme};
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_types::StatusExt;

mod errors;

const AGENT: &str = "grpc-suite";
const REQUIRED: &str = "urn:agentlog:test:required";

/// A bridge with the demo worker, served over gRPC and HTTP until dropped.
struct Server {
    grpc: SocketAddr,
    http: SocketAddr,
    _worker: Worker,
    _stop: tokio::sync::watch::Sender<()>,
}

async fn start(auth: Option<EdgeAuth>) -> Server {
    let log = agentlog::log::open("memory://").await.expect("log");
    let mut config = BridgeConfig::new(AGENT);
    // A required extension (only of messages whose id says so), and an extended card the
    // card declares but none is configured: their errors.
    config.card.capabilities.extensions.push(AgentExtension {
        uri: REQUIRED.into(),
        description: None,
        required: true,
        params: None,
    });
    config.card.capabilities.extended_agent_card = Some(true);
    config.extension_scope =
        agentlog::bridge::extensions::ExtensionScope::Matching(std::sync::Arc::new(|m| {
            m.message_id.starts_with("ext-")
        }));
    let bridge = Bridge::open(log.clone(), config).await.expect("bridge");
    let worker_config = WorkerConfig::new(AGENT).view(bridge.view().clone());
    let worker = Worker::start(log, worker_config, DemoHandler)
        .await
        .expect("worker");
    let (stop, stopped) = tokio::sync::watch::channel(());
    let (http, grpc) = serve_both(bridge, auth, stopped).await;
    Server {
        grpc,
        http,
        _worker: worker,
        _stop: stop,
    }
}

/// Serve `bridge` over HTTP (JSON-RPC and HTTP+JSON) and gRPC on free loopback ports, both
/// behind `auth`, until `stopped` changes or is dropped: the HTTP and the gRPC address.
pub(crate) async fn serve_both(
    bridge: Bridge,
    auth: Option<EdgeAuth>,
    stopped: tokio::sync::watch::Receiver<()>,
) -> (SocketAddr, SocketAddr) {
    let until = |mut stopped: tokio::sync::watch::Receiver<()>| async move {
        let _ = stopped.changed().await;
    };
    let grpc_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let grpc = grpc_listener.local_addr().expect("addr");
    let mut grpc_config = GrpcConfig::new();
    grpc_config.auth = auth.clone();
    tokio::spawn(agentlog::grpc::serve(
        grpc_listener,
        bridge.clone(),
        grpc_config,
        until(stopped.clone()),
    ));
    let http_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let http = http_listener.local_addr().expect("addr");
    let mut http_config = HttpConfig::default();
    http_config.auth = auth;
    let router = agentlog::http::router(bridge, http_config);
    tokio::spawn(agentlog::http::serve(http_listener, router, until(stopped)));
    (http, grpc)
}

async fn client(server: &Server) -> A2aServiceClient<Channel> {
    let channel = Channel::from_shared(format!("http://{}", server.grpc))
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    A2aServiceClient::new(channel)
}

/// `message` with `a2a-version: 1.0` and the metadata `extra` adds.
fn req<T>(message: T, extra: &[(&'static str, &str)]) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("a2a-version", "1.0".parse().expect("ascii"));
    for (key, value) in extra {
        request
            .metadata_mut()
            .insert(*key, value.parse().expect("ascii"));
    }
    request
}

fn message(id: &str, text: &str) -> pb::Message {
    pb::Message {
        message_id: id.into(),
        role: pb::Role::User.into(),
        parts: vec![pb::Part {
            content: Some(pb::part::Content::Text(text.into())),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn send(id: &str, text: &str, immediately: bool) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(message(id, text)),
        configuration: Some(pb::SendMessageConfiguration {
            return_immediately: immediately,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn task_of(response: pb::SendMessageResponse) -> pb::Task {
    match response.payload {
        Some(send_message_response::Payload::Task(task)) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn state(task: &pb::Task) -> pb::TaskState {
    pb::TaskState::try_from(task.status.as_ref().expect("status").state).expect("state")
}

fn get(id: &str, history_length: Option<i32>) -> pb::GetTaskRequest {
    pb::GetTaskRequest {
        id: id.into(),
        history_length,
        ..Default::default()
    }
}

/// The status's code and its ErrorInfo's reason (in the A2A domain).
fn refusal(status: &Status) -> (Code, String) {
    let info = status.get_details_error_info().expect("an ErrorInfo");
    assert_eq!(info.domain, ERROR_DOMAIN);
    (status.code(), info.reason)
}

/// The task `id` once it is in `wanted`, read over gRPC.
async fn wait_for(c: &mut A2aServiceClient<Channel>, id: &str, wanted: pb::TaskState) -> pb::Task {
    for _ in 0..100 {
        let task = c
            .get_task(req(get(id, None), &[]))
            .await
            .expect("get")
            .into_inner();
        if state(&task) == wanted {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never reached {wanted:?}");
}

/// A JSON-RPC call over HTTP/1.1 to the same bridge.
async fn json_rpc(server: &Server, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut socket = tokio::net::TcpStream::connect(server.http)
        .await
        .expect("connect");
    let head = format!(
        "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.http,
        body.len()
    );
    socket.write_all(head.as_bytes()).await.expect("write");
    socket.write_all(body.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).await.expect("read");
    let text = String::from_utf8(answer).expect("utf-8");
    let (_, body) = text.split_once("\r\n\r\n").expect("a head");
    serde_json::from_str(body).expect("JSON")
}

#[tokio::test]
async fn send_blocking_and_immediately_get_with_history_and_stream() {
    let server = start(None).await;
    let mut c = client(&server).await;
    let task = task_of(
        c.send_message(req(send("m-1", "hello", false), &[]))
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&task), pb::TaskState::Completed);
    let artifact = &task.artifacts[0];
    let text: String = artifact
        .parts
        .iter()
        .filter_map(|p| match &p.content {
            Some(pb::part::Content::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "echo: hello");
    // The same message again is the same task.
    let again = task_of(
        c.send_message(req(send("m-1", "hello", false), &[]))
            .await
            .expect("retry")
            .into_inner(),
    );
    assert_eq!(again.id, task.id);

    let queued = task_of(
        c.send_message(req(send("m-2", "sleep 1", true), &[]))
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&queued), pb::TaskState::Submitted);
    wait_for(&mut c, &queued.id, pb::TaskState::Completed).await;

    let full = c
        .get_task(req(get(&task.id, None), &[]))
        .await
        .expect("get")
        .into_inner();
    assert!(!full.history.is_empty());
    let none = c
        .get_task(req(get(&task.id, Some(0)), &[]))
        .await
        .expect("get")
        .into_inner();
    assert!(none.history.is_empty());

    let mut stream = c
        .send_streaming_message(req(send("m-3", "streamed", false), &[]))
        .await
        .expect("stream")
        .into_inner();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.expect("event").payload.expect("payload"));
    }
    let Some(stream_response::Payload::StatusUpdate(last)) = events.last() else {
        panic!("the stream ends with a status: {events:?}");
    };
    let last_state = last.status.as_ref().expect("status").state;
    assert_eq!(last_state, i32::from(pb::TaskState::Completed));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, stream_response::Payload::ArtifactUpdate(_)))
    );
}

#[tokio::test]
async fn list_filters_and_pages_cancel_and_subscribe() {
    let server = start(None).await;
    let mut c = client(&server).await;
    for i in 0..3 {
        let mut request = send(&format!("l-{i}"), "hi", false);
        if let Some(m) = request.message.as_mut() {
            m.context_id = "ctx-list".into();
        }
        c.send_message(req(request, &[])).await.expect("send");
    }
    let list = |page_token: &str| pb::ListTasksRequest {
        context_id: "ctx-list".into(),
        status: pb::TaskState::Completed.into(),
        page_size: Some(2),
        page_token: page_token.into(),
        ..Default::default()
    };
    let first = c
        .list_tasks(req(list(""), &[]))
        .await
        .expect("list")
        .into_inner();
    assert_eq!((first.tasks.len(), first.total_size), (2, 3));
    assert!(!first.next_page_token.is_empty());
    let second = c
        .list_tasks(req(list(&first.next_page_token), &[]))
        .await
        .expect("list")
        .into_inner();
    assert_eq!(second.tasks.len(), 1);
    assert!(second.next_page_token.is_empty());
    let working = pb::ListTasksRequest {
        context_id: "ctx-list".into(),
        status: pb::TaskState::Working.into(),
        ..Default::default()
    };
    assert!(
        c.list_tasks(req(working, &[]))
            .await
            .expect("list")
            .into_inner()
            .tasks
            .is_empty()
    );

    // Cancel a sleeping task; a second cancel is refused.
    let sleeping = task_of(
        c.send_message(req(send("c-1", "sleep 5", true), &[]))
            .await
            .expect("send")
            .into_inner(),
    );
    let cancel = pb::CancelTaskRequest {
        id: sleeping.id.clone(),
        ..Default::default()
    };
    let canceled = c
        .cancel_task(req(cancel.clone(), &[]))
        .await
        .expect("cancel")
        .into_inner();
    assert_eq!(state(&canceled), pb::TaskState::Canceled);
    let again = c.cancel_task(req(cancel, &[])).await.expect_err("terminal");
    assert_eq!(
        refusal(&again),
        (Code::FailedPrecondition, "TASK_NOT_CANCELABLE".into())
    );

    // Subscribe: the first event is the task; a client that goes away ends its stream only.
    let running = task_of(
        c.send_message(req(send("s-1", "sleep 1", true), &[]))
            .await
            .expect("send")
            .into_inner(),
    );
    let subscribe = pb::SubscribeToTaskRequest {
        id: running.id.clone(),
        ..Default::default()
    };
    let mut stream = c
        .subscribe_to_task(req(subscribe, &[]))
        .await
        .expect("subscribe")
        .into_inner();
    let first = stream.next().await.expect("an event").expect("ok");
    assert!(
        matches!(first.payload, Some(stream_response::Payload::Task(ref t)) if t.id == running.id)
    );
    drop(stream);
    wait_for(&mut c, &running.id, pb::TaskState::Completed).await;
}

#[tokio::test]
async fn tenants_and_tasks_crossing_grpc_and_json_rpc() {
    let server = start(None).await;
    let mut c = client(&server).await;
    let in_tenant = |tenant: &str| {
        let mut request = send("same-id", "hi", false);
        request.tenant = tenant.into();
        request
    };
    let acme = task_of(
        c.send_message(req(in_tenant("acme"), &[]))
            .await
            .expect("acme")
            .into_inner(),
    );
    let globex = task_of(
        c.send_message(req(in_tenant("globex"), &[]))
            .await
            .expect("globex")
            .into_inner(),
    );
    assert_ne!(acme.id, globex.id);
    let elsewhere = pb::GetTaskRequest {
        tenant: "globex".into(),
        ..get(&acme.id, None)
    };
    let hidden = c
        .get_task(req(elsewhere, &[]))
        .await
        .expect_err("another tenant's");
    assert_eq!(refusal(&hidden).0, Code::NotFound);

    // Sent over gRPC, read over JSON-RPC; sent over JSON-RPC, read over gRPC.
    let over_grpc = task_of(
        c.send_message(req(send("x-1", "cross", false), &[]))
            .await
            .expect("send")
            .into_inner(),
    );
    let read = json_rpc(&server, "GetTask", json!({"id": over_grpc.id})).await;
    assert_eq!(read["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        read["result"]["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .map(|t| t.starts_with("echo")),
        Some(true)
    );
    let sent = json_rpc(
        &server,
        "SendMessage",
        json!({"message": {"messageId": "x-2", "role": "ROLE_USER", "parts": [{"text": "other way"}]}}),
    )
    .await;
    let id = sent["result"]["task"]["id"].as_str().expect("a task id");
    let task = c
        .get_task(req(get(id, None), &[]))
        .await
        .expect("get")
        .into_inner();
    assert_eq!(state(&task), pb::TaskState::Completed);
    assert_eq!(
        serde_json::to_value(task.context_id).ok(),
        Some(sent["result"]["task"]["contextId"].clone())
    );
}

/// Tokens: `alice` may do anything, `reader` only read.
#[derive(Debug)]
struct Tokens;

#[async_trait::async_trait]
impl Authenticator for Tokens {
    async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Identity, Refusal> {
        let scopes = match bearer_token(headers)? {
            None => return Err(Refusal::Missing),
            Some("alice") => vec![
                "tasks:send".into(),
                "tasks:read".into(),
                "tasks:cancel".into(),
            ],
            Some("reader") => vec!["tasks:read".into()],
            Some(_) => return Err(Refusal::Invalid("unknown token".into())),
        };
        Ok(Identity {
            caller: Caller::principal("alice"),
            scopes,
        })
    }

    fn security_scheme(&self) -> (String, SecurityScheme) {
        let scheme = SecurityScheme::HttpAuthSecurityScheme {
            description: None,
            scheme: "Bearer".into(),
            bearer_format: None,
        };
        ("bearer".into(), scheme)
    }
}

#[tokio::test]
async fn auth_refusals_are_unauthenticated_and_permission_denied() {
    let server = start(Some(EdgeAuth::new(Tokens))).await;
    let mut c = client(&server).await;
    let none = c
        .send_message(req(send("a-1", "hi", false), &[]))
        .await
        .expect_err("anonymous");
    assert_eq!(
        refusal(&none),
        (Code::Unauthenticated, "UNAUTHENTICATED".into())
    );
    let bad = c
        .send_message(req(
            send("a-1", "hi", false),
            &[("authorization", "Bearer mallory")],
        ))
        .await
        .expect_err("bad token");
    assert_eq!(bad.code(), Code::Unauthenticated);
    let short = c
        .send_message(req(
            send("a-1", "hi", false),
            &[("authorization", "Bearer reader")],
        ))
        .await
        .expect_err("no send scope");
    assert_eq!(
        refusal(&short),
        (Code::PermissionDenied, "PERMISSION_DENIED".into())
    );
    let task = task_of(
        c.send_message(req(
            send("a-1", "hi", false),
            &[("authorization", "Bearer alice")],
        ))
        .await
        .expect("alice")
        .into_inner(),
    );
    let read = c
        .get_task(req(
            get(&task.id, None),
            &[("authorization", "Bearer reader")],
        ))
        .await
        .expect("reader reads alice's task");
    assert_eq!(state(&read.into_inner()), pb::TaskState::Completed);
}
