//! `serve --grpc-listen`: the gRPC listener beside the HTTP one, its interface in the card after
//! the HTTP ones, a call over it, and SIGTERM stopping both servers with a gRPC stream open.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentlog::grpc::proto::a2a_service_client::A2aServiceClient;
use agentlog::grpc::proto::{self as pb, send_message_response};
use tonic::transport::Channel;

use crate::support::*;

fn request<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("a2a-version", "1.0".parse().unwrap());
    request
}

fn send(id: &str, text: &str, immediately: bool) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: id.into(),
            role: pb::Role::User.into(),
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Text(text.into())),
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

#[test]
fn grpc_beside_http_in_the_card_served_and_stopped_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (server, banner) =
        Server::start_with("memory://", &["--grpc-listen", "127.0.0.1:0"], dir.path());
    let address = banner
        .split("; gRPC at ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("the banner names the gRPC address: {banner}"))
        .to_owned();
    assert!(!address.ends_with(":0"), "{address}");
    let reply = http_get(&format!("{}.well-known/agent-card.json", server.url));
    let card: serde_json::Value =
        serde_json::from_str(reply.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let last = interfaces.last().unwrap();
    assert_eq!(interfaces[0]["protocolBinding"], "JSONRPC");
    assert_eq!(last["protocolBinding"], "GRPC");
    assert_eq!(last["protocolVersion"], "1.0");
    assert_eq!(last["url"], address.as_str());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let open_stream = runtime.block_on(async {
        let channel = Channel::from_shared(format!("http://{address}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client = A2aServiceClient::new(channel);
        let answer = client
            .send_message(request(send("g-1", "hello", false)))
            .await
            .unwrap()
            .into_inner();
        let Some(send_message_response::Payload::Task(task)) = answer.payload else {
            panic!("a task: {answer:?}");
        };
        let state = task.status.unwrap().state;
        assert_eq!(state, i32::from(pb::TaskState::Completed));
        // A stream left open: shutdown must not wait on it beyond its grace.
        client
            .send_streaming_message(request(send("g-2", "sleep 60", false)))
            .await
            .unwrap()
            .into_inner()
    });
    server.stop();
    drop(open_stream);
}
