//! Every message and enum the RPCs carry, wire → proto → bytes → proto → wire: the A2A
//! objects of the shared fixture vectors (`fixtures/`), and what they do not hold built here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{
    AgentCard, Artifact, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, Message,
    OAuthFlows, Role, SecurityScheme, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskArtifactUpdateEvent, TaskPushNotificationConfig,
    TaskStatusUpdateEvent, card_payload,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::ErrorKind;
use crate::grpc::proto as pb;

/// `value` to its proto, through the proto's bytes, and back: the same value.
fn round_trip<W, P>(what: &str, value: &W)
where
    W: Clone + PartialEq + Debug + Into<P>,
    P: prost::Message + Default + TryInto<W>,
    <P as TryInto<W>>::Error: Debug,
{
    assert_eq!(&there_and_back::<W, P>(value), value, "{what}");
}

fn there_and_back<W, P>(value: &W) -> W
where
    W: Clone + Into<P>,
    P: prost::Message + Default + TryInto<W>,
    <P as TryInto<W>>::Error: Debug,
{
    let proto: P = value.clone().into();
    let decoded = P::decode(proto.encode_to_vec().as_slice()).expect("decodes");
    decoded.try_into().expect("converts back")
}

fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures")
        .join(name);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The 1.0 objects of the fixture files, by the key that holds them.
#[derive(Default)]
struct Found {
    tasks: Vec<Task>,
    messages: Vec<Message>,
    artifacts: Vec<Artifact>,
    sends: Vec<SendMessageRequest>,
    cards: Vec<AgentCard>,
}

fn parse<T: DeserializeOwned>(value: &Value) -> Option<T> {
    match value {
        // Records hold their JSON payloads as text.
        Value::String(text) => serde_json::from_str(text).ok(),
        other => serde_json::from_value(other.clone()).ok(),
    }
}

fn walk(value: &Value, found: &mut Found) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match key.as_str() {
                    "task" => found.tasks.extend(parse(v)),
                    "answer" | "message" => found.messages.extend(parse(v)),
                    "artifact" => found.artifacts.extend(parse(v)),
                    "params" | "v1" => found.sends.extend(parse(v)),
                    "card" => found.cards.extend(parse(v)),
                    _ => {}
                }
                walk(v, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
        _ => {}
    }
}

fn fixtures() -> Found {
    let mut found = Found::default();
    for name in [
        "fold.json",
        "records.json",
        "v03.json",
        "card_signatures.json",
    ] {
        walk(&fixture(name), &mut found);
    }
    assert!(found.tasks.len() >= 40, "{} tasks", found.tasks.len());
    assert!(found.messages.len() >= 20 && found.artifacts.len() >= 100);
    assert!(found.sends.len() >= 50 && found.cards.len() >= 5);
    found
}

#[test]
fn the_fixtures_a2a_objects_round_trip() {
    let found = fixtures();
    for task in &found.tasks {
        round_trip::<_, pb::Task>("task", task);
        round_trip::<_, pb::StreamResponse>("stream task", &StreamResponse::Task(task.clone()));
        round_trip::<_, pb::SendMessageResponse>(
            "send task",
            &SendMessageResponse::Task(task.clone()),
        );
        let status = TaskStatusUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: task.status.clone(),
            metadata: task.metadata.clone(),
        };
        round_trip::<_, pb::StreamResponse>("status", &StreamResponse::StatusUpdate(status));
    }
    for message in &found.messages {
        round_trip::<_, pb::Message>("message", message);
        round_trip::<_, pb::StreamResponse>(
            "stream msg",
            &StreamResponse::Message(message.clone()),
        );
        round_trip::<_, pb::SendMessageResponse>(
            "send msg",
            &SendMessageResponse::Message(message.clone()),
        );
    }
    for (i, artifact) in found.artifacts.iter().enumerate() {
        round_trip::<_, pb::Artifact>("artifact", artifact);
        let update = TaskArtifactUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            artifact: artifact.clone(),
            append: i % 2 == 0,
            last_chunk: i % 3 == 0,
            metadata: None,
        };
        round_trip::<_, pb::StreamResponse>(
            "artifact update",
            &StreamResponse::ArtifactUpdate(update),
        );
    }
    for send in &found.sends {
        round_trip::<_, pb::SendMessageRequest>("send", send);
    }
    for card in &found.cards {
        // The signature vectors' cards hold what the proto cannot tell apart (an empty
        // description and none, `1.0` and `1`): the same card is the same signed payload.
        let back = there_and_back::<_, pb::AgentCard>(card);
        assert_eq!(card_payload(&back).unwrap(), card_payload(card).unwrap());
    }
    let page = ListTasksResponse {
        tasks: found.tasks.clone(),
        next_page_token: "next".into(),
        page_size: 50,
        total_size: 70,
    };
    round_trip::<_, pb::ListTasksResponse>("page", &page);
}

#[test]
fn every_enum_value_round_trips_and_unknown_ones_are_refused() {
    for state in [
        TaskState::Unspecified,
        TaskState::Submitted,
        TaskState::Working,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::InputRequired,
        TaskState::Rejected,
        TaskState::AuthRequired,
    ] {
        let number = super::task::state_to(state);
        assert_eq!(
            pb::TaskState::try_from(number).unwrap().as_str_name(),
            state.to_string()
        );
        assert_eq!(super::task::state_from("s", number).unwrap(), state);
    }
    for role in [Role::Unspecified, Role::User, Role::Agent] {
        let number = super::task::role_to(role);
        assert_eq!(
            pb::Role::try_from(number).unwrap().as_str_name(),
            role.as_str()
        );
        assert_eq!(super::task::role_from("r", number).unwrap(), role);
    }
    let error = super::task::state_from("ListTasksRequest.status", 99).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidParams);
    assert!(super::task::role_from("Message.role", -1).is_err());
}

#[test]
fn every_request_round_trips() {
    let send: SendMessageRequest = serde_json::from_value(json!({
        "tenant": "acme",
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [
            {"text": "hi", "mediaType": "text/plain", "metadata": {"k": [1, 2.5, null, true, "s", {"n": -3}]}},
            {"raw": "aGVsbG8=", "filename": "h.bin"}, {"url": "https://h/f"}, {"data": {"x": {"y": [1]}}}],
            "contextId": "c", "taskId": "t", "extensions": ["urn:e"], "referenceTaskIds": ["r"]},
        "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 0, "returnImmediately": true,
            "taskPushNotificationConfig": {"url": "https://h/cb", "token": "k",
                "authentication": {"scheme": "Bearer", "credentials": "c"}}},
        "metadata": {"a": 1}
    }))
    .unwrap();
    round_trip::<_, pb::SendMessageRequest>("send", &send);
    let get = GetTaskRequest {
        tenant: Some("acme".into()),
        id: "t".into(),
        history_length: Some(0),
    };
    round_trip::<_, pb::GetTaskRequest>("get", &get);
    let list: ListTasksRequest = serde_json::from_value(json!({
        "tenant": "x", "contextId": "c", "status": "TASK_STATE_WORKING", "pageSize": 10,
        "pageToken": "p", "historyLength": 2, "statusTimestampAfter": "2026-01-01T00:00:00.250Z",
        "includeArtifacts": true
    }))
    .unwrap();
    round_trip::<_, pb::ListTasksRequest>("list", &list);
    round_trip::<_, pb::ListTasksRequest>("list none", &ListTasksRequest::default());
    let cancel = CancelTaskRequest {
        tenant: None,
        id: "t".into(),
        metadata: serde_json::from_value(json!({"why": "bored"})).unwrap(),
    };
    round_trip::<_, pb::CancelTaskRequest>("cancel", &cancel);
    let subscribe = SubscribeToTaskRequest {
        tenant: Some("x".into()),
        id: "t".into(),
    };
    round_trip::<_, pb::SubscribeToTaskRequest>("subscribe", &subscribe);
    let config: TaskPushNotificationConfig = serde_json::from_value(json!({
        "tenant": "x", "id": "p", "taskId": "t", "url": "https://h/cb", "token": "k",
        "authentication": {"scheme": "Bearer", "credentials": "c"}
    }))
    .unwrap();
    round_trip::<_, pb::TaskPushNotificationConfig>("push config", &config);
    let get_config = GetTaskPushNotificationConfigRequest {
        tenant: Some("x".into()),
        task_id: "t".into(),
        id: "p".into(),
    };
    round_trip::<_, pb::GetTaskPushNotificationConfigRequest>("get config", &get_config);
    let delete_config = DeleteTaskPushNotificationConfigRequest {
        tenant: None,
        task_id: "t".into(),
        id: "p".into(),
    };
    round_trip::<_, pb::DeleteTaskPushNotificationConfigRequest>("delete config", &delete_config);
    let list_configs = ListTaskPushNotificationConfigsRequest {
        tenant: Some("x".into()),
        task_id: "t".into(),
        page_size: Some(5),
        page_token: Some("p".into()),
    };
    round_trip::<_, pb::ListTaskPushNotificationConfigsRequest>("list configs", &list_configs);
    let configs = ListTaskPushNotificationConfigsResponse {
        configs: vec![config],
        next_page_token: "n".into(),
    };
    round_trip::<_, pb::ListTaskPushNotificationConfigsResponse>("configs", &configs);
    let card = pb::GetExtendedAgentCardRequest {
        tenant: "acme".into(),
    };
    assert_eq!(
        crate::bridge::Call::from(card),
        crate::bridge::Call::GetExtendedAgentCard {
            tenant: Some("acme".into())
        }
    );
}

#[test]
fn every_security_scheme_and_flow_round_trips() {
    let scopes = || {
        [("read".to_owned(), "Read".to_owned())]
            .into_iter()
            .collect()
    };
    let flows = [
        OAuthFlows::AuthorizationCode {
            authorization_url: "https://a".into(),
            token_url: "https://t".into(),
            refresh_url: Some("https://r".into()),
            scopes: scopes(),
            pkce_required: Some(true),
        },
        OAuthFlows::ClientCredentials {
            token_url: "https://t".into(),
            refresh_url: None,
            scopes: scopes(),
        },
        OAuthFlows::DeviceCode {
            device_authorization_url: "https://d".into(),
            token_url: "https://t".into(),
            refresh_url: None,
            scopes: scopes(),
        },
        OAuthFlows::Implicit {
            authorization_url: "https://a".into(),
            refresh_url: None,
            scopes: scopes(),
        },
        OAuthFlows::Password {
            token_url: "https://t".into(),
            refresh_url: None,
            scopes: scopes(),
        },
    ];
    let mut schemes = vec![
        SecurityScheme::ApiKeySecurityScheme {
            description: Some("key".into()),
            location: "header".into(),
            name: "X-Key".into(),
        },
        SecurityScheme::HttpAuthSecurityScheme {
            description: None,
            scheme: "Bearer".into(),
            bearer_format: Some("JWT".into()),
        },
        SecurityScheme::OpenIdConnectSecurityScheme {
            description: None,
            open_id_connect_url: "https://o".into(),
        },
        SecurityScheme::MtlsSecurityScheme { description: None },
    ];
    schemes.extend(
        flows
            .into_iter()
            .map(|flows| SecurityScheme::Oauth2SecurityScheme {
                description: None,
                flows,
                oauth2_metadata_url: Some("https://m".into()),
            }),
    );
    let mut card = fixtures().cards.remove(0);
    for (i, scheme) in schemes.into_iter().enumerate() {
        round_trip::<_, pb::SecurityScheme>("scheme", &scheme);
        card.security_schemes.insert(format!("s{i}"), scheme);
    }
    card.capabilities.extended_agent_card = Some(true);
    card.provider = Some(agentlog_wire::a2a::AgentProvider {
        url: "https://p".into(),
        organization: "o".into(),
    });
    round_trip::<_, pb::AgentCard>("card with every scheme", &card);
}

#[test]
fn malformed_proto_requests_are_invalid_params() {
    let no_content = pb::Part::default();
    let error = agentlog_wire::a2a::Part::try_from(no_content).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidParams);
    assert!(
        error.message().contains("Part.content"),
        "{}",
        error.message()
    );
    let no_message = pb::SendMessageRequest::default();
    let error = SendMessageRequest::try_from(no_message).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidParams);
    let before_1970 = pb::ListTasksRequest {
        status_timestamp_after: Some(prost_types::Timestamp {
            seconds: -5,
            nanos: 0,
        }),
        ..Default::default()
    };
    assert!(ListTasksRequest::try_from(before_1970).is_err());
    let not_finite = prost_types::Value {
        kind: Some(prost_types::value::Kind::NumberValue(f64::NAN)),
    };
    assert!(super::from_value("v", not_finite).is_err());
}
