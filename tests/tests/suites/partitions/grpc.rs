//! gRPC between members: a call about a partition the member does not hold goes to its owner
//! (over the members' HTTP URLs, as the JSON-RPC request it stands for), streams event by
//! event, errors with their code and `ErrorInfo`; `ListTasks` merges every owner's page.

use agentlog::agent::Caller;
use agentlog::grpc::proto::a2a_service_client::A2aServiceClient;
use agentlog::grpc::proto::{self as pb, send_message_response, stream_response};
use agentlog::grpc::{Authenticator, Identity, Refusal, bearer_token};
use futures::StreamExt;
use tonic::transport::Channel;
use tonic_types::StatusExt;

use super::*;

async fn client(cluster: &Cluster, i: usize) -> A2aServiceClient<Channel> {
    let channel = Channel::from_shared(cluster.member(i).grpc.clone())
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    A2aServiceClient::new(channel)
}

/// `message` as a gRPC request with the 1.0 version metadata.
fn request<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("a2a-version", "1.0".parse().expect("ascii"));
    request
}

fn send_request(message_id: &str, immediately: bool) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: message_id.to_owned(),
            role: pb::Role::User.into(),
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Text("hello".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        configuration: Some(pb::SendMessageConfiguration {
            return_immediately: immediately,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn get(id: &str) -> tonic::Request<pb::GetTaskRequest> {
    request(pb::GetTaskRequest {
        id: id.to_owned(),
        ..Default::default()
    })
}

/// A message whose new task member `owner` of `n` owns.
fn message_owned_by(prefix: &str, owner: u32, n: u32) -> String {
    (0..)
        .map(|k| format!("{prefix}-{k}"))
        .find(|m| partition(&agentlog_wire::ids::task_id("", "", m)) % n == owner)
        .expect("a message")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_calls_through_a_non_owner_are_the_owners_answers() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let mut clients = Vec::new();
    for i in 0..4 {
        clients.push(client(&cluster, i).await);
    }
    // Sent round robin over gRPC: each task is held by its owner only.
    let mut tasks = Vec::new();
    for k in 0..40 {
        let sent = clients[k % 4]
            .send_message(request(send_request(&format!("g-{k}"), true)))
            .await
            .expect("sent")
            .into_inner();
        let Some(send_message_response::Payload::Task(task)) = sent.payload else {
            panic!("a task: {sent:?}");
        };
        tasks.push(task.id);
    }
    for i in 0..4u32 {
        let view = cluster.member(i as usize).bridge.view();
        let share = tasks.iter().filter(|t| partition(t) % 4 == i).count();
        assert_eq!(view.task_count(), share, "member {i} holds its share only");
        assert_eq!(view.held_partitions(), urls_members(i).owned_by(i, P));
    }
    // Every task through every member: the owner's answer, forwarded by the others.
    for id in &tasks {
        let owner = (partition(id) % 4) as usize;
        let direct = clients[owner].get_task(get(id)).await.expect("owner");
        for (via, client) in clients.iter_mut().enumerate() {
            let got = client.get_task(get(id)).await.expect("forwarded");
            assert_eq!(got.get_ref(), direct.get_ref(), "{id} through {via}");
        }
    }
    // Member 1 forwarded each call about a task it does not own, once.
    let not_its = |t: &String| partition(t) % 4 != 1;
    let gets = tasks.iter().filter(|t| not_its(t)).count() as u64;
    let sends = tasks
        .iter()
        .skip(1)
        .step_by(4)
        .filter(|t| not_its(t))
        .count() as u64;
    assert_eq!(cluster.forwards(1, "GetTask", "owner").await, gets);
    assert_eq!(cluster.forwards(1, "SendMessage", "owner").await, sends);
    // Each forward was received once, by the owner, and served there.
    let (mut sent, mut received) = (0, 0);
    for i in 0..4 {
        sent += cluster.forwards(i, "GetTask", "owner").await;
        received += cluster.forwards(i, "GetTask", "received").await;
    }
    assert_eq!((sent, received), (3 * 40, 3 * 40));
    // An error comes back with its code and ErrorInfo, as the owner gives it.
    let unknown = (0..)
        .map(|k| format!("no-such-task-{k}"))
        .find(|id| partition(id) % 4 == 2)
        .expect("an id");
    let direct = clients[2]
        .get_task(get(&unknown))
        .await
        .expect_err("unknown");
    let forwarded = clients[0]
        .get_task(get(&unknown))
        .await
        .expect_err("unknown");
    assert_eq!(forwarded.code(), tonic::Code::NotFound);
    assert_eq!(forwarded.message(), direct.message());
    let info = forwarded.get_details_error_info().expect("an ErrorInfo");
    assert_eq!(info.reason, "TASK_NOT_FOUND");
    assert_eq!(info.metadata["taskId"], unknown);
    // A cancel through a non-owner reaches the task.
    let task = tasks
        .iter()
        .find(|t| partition(t) % 4 == 3)
        .expect("a task");
    let canceled = clients[1]
        .cancel_task(request(pb::CancelTaskRequest {
            id: task.clone(),
            ..Default::default()
        }))
        .await
        .expect("canceled")
        .into_inner();
    assert_eq!(canceled.id, *task);
    assert_eq!(
        canceled.status.expect("status").state(),
        pb::TaskState::Canceled
    );
    assert!(!cluster.member(1).bridge.view().holds(partition(task)));
}

fn urls_members(i: u32) -> Members {
    Members::new(i, 4, urls(4)).expect("members")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_stream_through_a_non_owner_comes_event_by_event() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 2).await;
    let worker = agentlog::worker::Worker::start(
        log.clone(),
        agentlog::worker::WorkerConfig::new(AGENT),
        agentlog_server::agents::DemoHandler,
    )
    .await
    .expect("worker");
    let message = message_owned_by("gs", 1, 2);
    let mut through = client(&cluster, 0).await;
    let stream = through
        .send_streaming_message(request(send_request(&message, false)))
        .await
        .expect("a stream")
        .into_inner();
    let events: Vec<pb::StreamResponse> =
        stream.map(|event| event.expect("an event")).collect().await;
    assert!(events.len() >= 2, "{events:?}");
    let Some(stream_response::Payload::Task(first)) = &events[0].payload else {
        panic!("the task first: {events:?}");
    };
    let Some(stream_response::Payload::StatusUpdate(last)) = &events[events.len() - 1].payload
    else {
        panic!("a status last: {events:?}");
    };
    assert_eq!(
        last.status.as_ref().expect("status").state(),
        pb::TaskState::Completed
    );
    assert_eq!(
        cluster.forwards(0, "SendStreamingMessage", "owner").await,
        1
    );
    assert!(!cluster.member(0).bridge.view().holds(partition(&first.id)));
    // The same task read through its owner and through the forwarder: one answer.
    let mut owner = client(&cluster, 1).await;
    let direct = owner.get_task(get(&first.id)).await.expect("owner");
    let forwarded = through.get_task(get(&first.id)).await.expect("forwarded");
    assert_eq!(direct.get_ref(), forwarded.get_ref());
    // A subscription to the finished task: the owner's answer, whatever it is.
    let subscribe = || {
        request(pb::SubscribeToTaskRequest {
            id: first.id.clone(),
            ..Default::default()
        })
    };
    let direct = owner.subscribe_to_task(subscribe()).await;
    let forwarded = through.subscribe_to_task(subscribe()).await;
    match (direct, forwarded) {
        (Err(direct), Err(forwarded)) => {
            assert_eq!(direct.code(), forwarded.code());
            assert_eq!(direct.message(), forwarded.message());
        }
        (Ok(direct), Ok(forwarded)) => {
            let direct: Vec<_> = direct.into_inner().collect().await;
            let forwarded: Vec<_> = forwarded.into_inner().collect().await;
            assert_eq!(format!("{direct:?}"), format!("{forwarded:?}"));
        }
        (direct, forwarded) => panic!("{direct:?} / {forwarded:?}"),
    }
    worker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_list_tasks_pages_and_tokens_are_those_of_one_view_holding_everything() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    for k in 0..45 {
        cluster
            .send(k % 4, &format!("gl-{k}"))
            .await
            .expect("acknowledged");
    }
    let single = Cluster::start(&log, 1).await;
    let mut one = client(&single, 0).await;
    for via in 0..4 {
        let mut four = client(&cluster, via).await;
        let mut token = String::new();
        let mut pages = 0;
        loop {
            let list = || {
                request(pb::ListTasksRequest {
                    page_size: Some(6),
                    page_token: token.clone(),
                    ..Default::default()
                })
            };
            let merged = four.list_tasks(list()).await.expect("four").into_inner();
            let reference = one.list_tasks(list()).await.expect("one").into_inner();
            assert_eq!(merged, reference, "page {pages} through member {via}");
            pages += 1;
            token = merged.next_page_token;
            if token.is_empty() {
                break;
            }
        }
        assert_eq!(pages, 8, "45 tasks in pages of 6");
    }
    assert_eq!(cluster.forwards(2, "ListTasks", "owner").await, 3 * 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_call_whose_owner_is_gone_goes_to_the_successor_then_is_unavailable() {
    let log = memory_log().await;
    let mut cluster = Cluster::start(&log, 4).await;
    let message = message_owned_by("gg", 1, 4);
    let task = cluster.send(1, &message).await.expect("sent");
    cluster.kill(1).await;
    let mut through = client(&cluster, 0).await;
    let got = through.get_task(get(&task)).await.expect("the successor's");
    assert_eq!(got.get_ref().id, task);
    assert_eq!(cluster.forwards(0, "GetTask", "successor").await, 1);
    assert!(cluster.member(2).bridge.view().holds(partition(&task)));
    cluster.kill(2).await;
    let refused = through.get_task(get(&task)).await.expect_err("nobody");
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    let info = refused.get_details_error_info().expect("an ErrorInfo");
    assert_eq!(info.metadata["kind"], "unavailable");
    // ListTasks: not a short page.
    let list = through
        .list_tasks(request(pb::ListTasksRequest::default()))
        .await
        .expect_err("nobody holds two members' partitions");
    assert_eq!(list.code(), tonic::Code::Unavailable);
}

/// Any bearer token is alice's, with every scope: a forwarder that checks nothing.
#[derive(Debug)]
struct Lenient;

/// Only the token `alice`: the owners' check.
#[derive(Debug)]
struct Strict;

fn alice(scopes: &[&str]) -> Identity {
    Identity {
        caller: Caller::principal("alice"),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
    }
}

const SCOPES: &[&str] = &["tasks:send", "tasks:read", "tasks:cancel"];

#[async_trait::async_trait]
impl Authenticator for Lenient {
    async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Identity, Refusal> {
        match bearer_token(headers)? {
            None => Err(Refusal::Missing),
            Some(_) => Ok(alice(SCOPES)),
        }
    }

    fn security_scheme(&self) -> (String, agentlog_wire::a2a::SecurityScheme) {
        Strict.security_scheme()
    }
}

#[async_trait::async_trait]
impl Authenticator for Strict {
    async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Identity, Refusal> {
        match bearer_token(headers)? {
            None => Err(Refusal::Missing),
            Some("alice") => Ok(alice(SCOPES)),
            Some(_) => Err(Refusal::Invalid("unknown token".into())),
        }
    }

    fn security_scheme(&self) -> (String, agentlog_wire::a2a::SecurityScheme) {
        let scheme = agentlog_wire::a2a::SecurityScheme::HttpAuthSecurityScheme {
            description: None,
            scheme: "Bearer".into(),
            bearer_format: None,
        };
        ("bearer".into(), scheme)
    }
}

fn with_token<T>(mut request: tonic::Request<T>, token: &str) -> tonic::Request<T> {
    let value = format!("Bearer {token}").parse().expect("ascii");
    request.metadata_mut().insert("authorization", value);
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_grpc_call_carries_the_callers_credentials_which_the_owner_checks() {
    let log = memory_log().await;
    // The gRPC listeners take any token; the owners' HTTP routers only alice's.
    let cluster = Cluster::start_with(
        &log,
        2,
        Some(EdgeAuth::new(Strict)),
        Some(EdgeAuth::new(Lenient)),
    )
    .await;
    let message = (0..)
        .map(|k| format!("ga-{k}"))
        .find(|m| partition(&agentlog_wire::ids::task_id("", "alice", m)) % 2 == 1)
        .expect("a message");
    let mut through = client(&cluster, 0).await;
    let sent = through
        .send_message(with_token(request(send_request(&message, true)), "alice"))
        .await
        .expect("alice's send, forwarded")
        .into_inner();
    let Some(send_message_response::Payload::Task(task)) = sent.payload else {
        panic!("a task: {sent:?}");
    };
    assert_eq!(task.id, agentlog_wire::ids::task_id("", "alice", &message));
    assert_eq!(cluster.forwards(0, "SendMessage", "owner").await, 1);
    let got = through
        .get_task(with_token(get(&task.id), "alice"))
        .await
        .expect("alice's read");
    assert_eq!(got.get_ref().id, task.id);
    // The forwarder let mallory in; the owner, checking again, does not.
    let refused = through
        .get_task(with_token(get(&task.id), "mallory"))
        .await
        .expect_err("the owner refuses");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    let refused = through.get_task(get(&task.id)).await.expect_err("no token");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
}
