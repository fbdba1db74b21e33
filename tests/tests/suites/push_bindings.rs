//! Push configs over every binding a server serves, through a real router and a real gRPC
//! listener: JSON-RPC (1.0 and 0.3 names), HTTP+JSON's routes, gRPC's RPCs, each reading what
//! the others wrote; the card's capability, the keys at `/.well-known/jwks.json` and the
//! sender's counters on `/metrics`.

use agentlog::grpc::GrpcConfig;
use agentlog::grpc::proto::a2a_service_client::A2aServiceClient;
use agentlog::grpc::proto::{self as pb};
use agentlog::http::HttpConfig;
use agentlog::push::RetryPolicy;
use agentlog_integration::push_receiver::{Receiver, call, get_text, post_json};
use agentlog_integration::push_suite::{Agent, SOON, pusher};
use serde_json::{Value, json};
use tonic::transport::Channel;

fn grpc_request<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("a2a-version", "1.0".parse().expect("ascii"));
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_binding_serves_the_same_configs() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let agent = Agent::start(&log, "bound").await;
    let sender = pusher(&log, "bound", &agent.bridge, RetryPolicy::new()).await;
    let (stop, stopped) = tokio::sync::watch::channel(());
    let until = |mut stopped: tokio::sync::watch::Receiver<()>| async move {
        let _ = stopped.changed().await;
    };
    let http_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}/", http_listener.local_addr().expect("addr"));
    let router = agentlog::http::router(
        agent.bridge.clone(),
        HttpConfig::new().push(sender.published()),
    );
    tokio::spawn(agentlog::http::serve(
        http_listener,
        router,
        until(stopped.clone()),
    ));
    let grpc_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let grpc_at = grpc_listener.local_addr().expect("addr");
    tokio::spawn(agentlog::grpc::serve(
        grpc_listener,
        agent.bridge.clone(),
        GrpcConfig::new(),
        until(stopped),
    ));
    let card: Value =
        serde_json::from_str(&get_text(&format!("{base}.well-known/agent-card.json")).await)
            .expect("card");
    assert_eq!(card["capabilities"]["pushNotifications"], true);

    let receiver = Receiver::start(200).await;
    let task = agent.send("m-1", "hi", &[]).await;
    // HTTP+JSON: create (the task from the path), get, list.
    let (status, created) = call(
        "POST",
        &format!("{base}tasks/{task}/pushNotificationConfigs"),
        Some(&json!({"id": "rest", "url": receiver.url("/rest"),
                     "authentication": {"scheme": "Bearer", "credentials": "s"}})),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let created: Value = serde_json::from_str(&created).expect("JSON");
    assert_eq!(created["taskId"], task.as_str());
    assert_eq!(created["authentication"], json!({"scheme": "Bearer"}));
    // gRPC: create, then read what HTTP+JSON wrote.
    let channel = Channel::from_shared(format!("http://{grpc_at}"))
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    let mut grpc = A2aServiceClient::new(channel);
    let made = grpc
        .create_task_push_notification_config(grpc_request(pb::TaskPushNotificationConfig {
            task_id: task.clone(),
            id: "grpc".into(),
            url: receiver.url("/grpc"),
            token: "t".into(),
            ..Default::default()
        }))
        .await
        .expect("create over gRPC")
        .into_inner();
    assert_eq!((made.id.as_str(), made.token.as_str()), ("grpc", "t"));
    let got = grpc
        .get_task_push_notification_config(grpc_request(pb::GetTaskPushNotificationConfigRequest {
            task_id: task.clone(),
            id: "rest".into(),
            ..Default::default()
        }))
        .await
        .expect("get over gRPC")
        .into_inner();
    assert_eq!(got.url, receiver.url("/rest"));
    assert_eq!(
        got.authentication.map(|a| a.credentials),
        Some(String::new())
    );
    let listed = grpc
        .list_task_push_notification_configs(grpc_request(
            pb::ListTaskPushNotificationConfigsRequest {
                task_id: task.clone(),
                ..Default::default()
            },
        ))
        .await
        .expect("list over gRPC")
        .into_inner();
    let ids: Vec<_> = listed.configs.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["rest", "grpc"]);
    // JSON-RPC 0.3 lists both; HTTP+JSON lists both.
    let v03 = post_json(
        &base,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/pushNotificationConfig/list",
                "params": {"id": task}}),
    )
    .await;
    assert_eq!(v03["result"].as_array().map(Vec::len), Some(2), "{v03}");
    let (status, list) = call(
        "GET",
        &format!("{base}tasks/{task}/pushNotificationConfigs"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let list: Value = serde_json::from_str(&list).expect("JSON");
    assert_eq!(list["configs"].as_array().map(Vec::len), Some(2), "{list}");
    // Delete over HTTP+JSON (twice: idempotent) and over gRPC; a missing config is not found.
    for _ in 0..2 {
        let (status, body) = call(
            "DELETE",
            &format!("{base}tasks/{task}/pushNotificationConfigs/rest"),
            None,
        )
        .await;
        assert_eq!((status, body.as_str()), (200, "{}"));
    }
    grpc.delete_task_push_notification_config(grpc_request(
        pb::DeleteTaskPushNotificationConfigRequest {
            task_id: task.clone(),
            id: "grpc".into(),
            ..Default::default()
        },
    ))
    .await
    .expect("delete over gRPC");
    let (status, missing) = call(
        "GET",
        &format!("{base}tasks/{task}/pushNotificationConfigs/rest"),
        None,
    )
    .await;
    assert_eq!(status, 404, "{missing}");
    let status = grpc
        .get_task_push_notification_config(grpc_request(pb::GetTaskPushNotificationConfigRequest {
            task_id: task.clone(),
            id: "grpc".into(),
            ..Default::default()
        }))
        .await
        .expect_err("deleted");
    assert_eq!(status.code(), tonic::Code::NotFound);

    // What was registered was told of: each config its snapshot first (the task may still be
    // running when a config is made, so updates can follow it).
    let got = receiver.wait_for(2, SOON).await;
    for path in ["/rest", "/grpc"] {
        let first = got.iter().find(|g| g.path == path);
        assert!(
            first.is_none_or(|g| g.json().get("task").is_some()),
            "{path}: a snapshot first"
        );
    }
    // The keys and the counters.
    let jwks: Value =
        serde_json::from_str(&get_text(&format!("{base}.well-known/jwks.json")).await)
            .expect("jwks");
    assert_eq!(jwks, sender.signer().jwks());
    let metrics = get_text(&format!("{base}metrics")).await;
    for name in [
        "agentlog_push_delivered_total",
        "agentlog_push_dead_letters_total",
        "agentlog_push_pending",
    ] {
        assert!(metrics.contains(name), "{name} missing from /metrics");
    }
    sender.stop().await;
    agent.stop().await;
    drop(stop);
}
