//! Unit tests of the 0.3 codec: observed 0.3 JSON, round trips through the 1.0 model, and errors.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;
use crate::TaskState;
use crate::a2a::{Message, Part, PartContent, Role, SendMessageResponse, StreamResponse, Task};

/// §7: a `message/send` result observed from the a2a-sdk 0.3 compat layer.
fn observed_task() -> Value {
    json!({"artifacts":[{"artifactId":"a1","name":"echo","parts":[{"kind":"text","text":"echo: hi"}]}],
           "contextId":"c1","history":[{"contextId":"c1","kind":"message","messageId":"m1",
           "parts":[{"kind":"text","text":"hi"}],"role":"user","taskId":"t1"}],
           "id":"t1","kind":"task","status":{"state":"completed","timestamp":"2026-11-30T08:33:02.578676Z"}})
}

#[test]
fn observed_task_parses_and_re_serializes() {
    let task = task_from_v03(&observed_task()).unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.history[0].role, Role::User);
    assert_eq!(
        serde_json::to_string(&task).unwrap(),
        concat!(
            r#"{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-11-30T08:33:02.578676Z"},"#,
            r#""artifacts":[{"artifactId":"a1","name":"echo","parts":[{"text":"echo: hi"}]}],"#,
            r#""history":[{"messageId":"m1","contextId":"c1","taskId":"t1","role":"ROLE_USER","parts":[{"text":"hi"}]}]}"#
        )
    );
    assert_eq!(task_to_v03(&task), observed_task());
    let response = send_response_from_v03(&observed_task()).unwrap();
    assert_eq!(send_response_to_v03(&response), observed_task());
}

#[test]
fn observed_final_status_update_round_trips() {
    let observed = json!({"contextId":"c","final":true,"kind":"status-update",
                          "status":{"state":"completed","timestamp":"2026-01-01T00:00:00Z"},"taskId":"t"});
    let (event, final_) = status_update_from_v03(&observed).unwrap();
    assert!(final_);
    assert_eq!(
        serde_json::to_string(&StreamResponse::StatusUpdate(event.clone())).unwrap(),
        r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-01T00:00:00Z"}}}"#
    );
    assert_eq!(status_update_to_v03(&event, true), observed);
    let mut not_final = observed.clone();
    not_final["final"] = json!(false);
    assert_eq!(status_update_to_v03(&event, false), not_final);
    let (event, final_) = stream_response_from_v03(&observed).unwrap();
    assert!(final_);
    assert_eq!(stream_response_to_v03(&event, true), observed);
}

#[test]
fn status_update_with_message_round_trips() {
    let v03 = json!({"kind":"status-update","taskId":"t","contextId":"c","final":false,"metadata":{"k":1},
                     "status":{"state":"input-required","message":{"kind":"message","messageId":"s",
                     "role":"agent","parts":[{"kind":"text","text":"which one?"}]}}});
    let (event, final_) = status_update_from_v03(&v03).unwrap();
    assert!(!final_);
    assert_eq!(event.status.state, TaskState::InputRequired);
    assert_eq!(
        event.status.message,
        Some(Message::agent_text("s", "which one?"))
    );
    assert_eq!(status_update_to_v03(&event, false), v03);
}

#[test]
fn artifact_update_round_trips() {
    let v03 = json!({"kind":"artifact-update","taskId":"t","contextId":"c","append":true,"lastChunk":false,
                     "artifact":{"artifactId":"a","parts":[{"kind":"data","data":{"n":1}}]}});
    let event = artifact_update_from_v03(&v03).unwrap();
    assert!(event.append && !event.last_chunk);
    assert_eq!(
        serde_json::to_string(&StreamResponse::ArtifactUpdate(event.clone())).unwrap(),
        r#"{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"data":{"n":1}}]},"append":true}}"#
    );
    assert_eq!(artifact_update_to_v03(&event), v03);
    let (stream, final_) = stream_response_from_v03(&v03).unwrap();
    assert!(!final_);
    assert_eq!(stream_response_to_v03(&stream, true), v03);
    // 0.3 may leave out both flags.
    let mut bare = v03.clone();
    bare.as_object_mut().unwrap().remove("append");
    bare.as_object_mut().unwrap().remove("lastChunk");
    let event = artifact_update_from_v03(&bare).unwrap();
    assert!(!event.append && !event.last_chunk);
}

#[test]
fn every_part_shape_round_trips() {
    let v03 = json!({"kind":"message","messageId":"m","contextId":"c","taskId":"t","role":"agent",
    "metadata":{"a":1},"extensions":["urn:e"],"referenceTaskIds":["r"],
    "parts":[
        {"kind":"text","text":"hi","metadata":{"p":0}},
        {"kind":"file","file":{"bytes":"iVBORw==","name":"a.png","mimeType":"image/png"}},
        {"kind":"file","file":{"uri":"https://x/doc.pdf","mimeType":"application/pdf"}},
        {"kind":"file","file":{"uri":"https://x/y"}},
        {"kind":"data","data":{"k":[1,2]}}
    ]});
    let message = message_from_v03(&v03).unwrap();
    assert_eq!(
        serde_json::to_string(&message).unwrap(),
        concat!(
            r#"{"messageId":"m","contextId":"c","taskId":"t","role":"ROLE_AGENT","parts":["#,
            r#"{"text":"hi","metadata":{"p":0}},{"raw":"iVBORw==","filename":"a.png","mediaType":"image/png"},"#,
            r#"{"url":"https://x/doc.pdf","mediaType":"application/pdf"},{"url":"https://x/y"},{"data":{"k":[1,2]}}],"#,
            r#""metadata":{"a":1},"extensions":["urn:e"],"referenceTaskIds":["r"]}"#
        )
    );
    assert_eq!(message_to_v03(&message), v03);
    for (part, expected) in message.parts.iter().zip(v03["parts"].as_array().unwrap()) {
        assert_eq!(&part_to_v03(part), expected);
        assert_eq!(&part_from_v03(expected).unwrap(), part);
    }
}

#[test]
fn one_point_oh_parts_and_snake_case_are_accepted() {
    let message = message_from_v03(&json!({
        "message_id": "m", "role": "ROLE_USER", "context_id": "c",
        "parts": [{"text": "a"}, {"raw": "-_8", "media_type": "x/y"}, {"file": {"uri": "u", "mime_type": "t/p"}}]
    }))
    .unwrap();
    assert_eq!(message.parts[0], Part::text("a"));
    assert_eq!(message.parts[1].content, PartContent::Raw(vec![0xfb, 0xff]));
    assert_eq!(message.parts[1].media_type.as_deref(), Some("x/y"));
    assert_eq!(
        part_to_v03(&message.parts[2]),
        json!({"kind":"file","file":{"uri":"u","mimeType":"t/p"}})
    );
}

#[test]
fn bad_parts_are_rejected_with_their_path() {
    let message =
        |part: Value| json!({"message": {"messageId": "m", "role": "user", "parts": [part]}});
    let reason = |params: Value| send_params_from_v03(&params).unwrap_err().to_string();
    assert_eq!(
        reason(message(
            json!({"kind": "file", "file": {"bytes": "aGk=", "uri": "u"}})
        )),
        "invalid message/send params: a file needs one of `bytes` or `uri`, found both at `message.parts[0]`"
    );
    assert_eq!(
        reason(message(json!({"kind": "image"}))),
        "invalid message/send params: unknown part kind \"image\", expected `text`, `file` or `data` at `message.parts[0]`"
    );
    assert_eq!(
        reason(message(json!({"kind": "text"}))),
        "invalid message/send params: a text part needs `text` at `message.parts[0]`"
    );
    assert_eq!(
        reason(message(json!({"kind": "text", "text": 5}))),
        "invalid message/send params: invalid type: integer `5`, expected a string at `message.parts[0].text`"
    );
    assert_eq!(
        reason(json!({"configuration": {}})),
        "invalid message/send params: missing field `message`"
    );
}

#[test]
fn blocking_false_is_return_immediately_true() {
    let params = |configuration: Value| {
        json!({"message": {"kind": "message", "messageId": "m", "role": "user",
                           "parts": [{"kind": "text", "text": "hi"}]},
               "configuration": configuration, "metadata": {"x": 1}})
    };
    let request = send_params_from_v03(&params(json!({"blocking": false}))).unwrap();
    assert_eq!(
        serde_json::to_string(&request).unwrap(),
        concat!(
            r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"#,
            r#""configuration":{"returnImmediately":true},"metadata":{"x":1}}"#
        )
    );
    for blocking in [json!({"blocking": true}), json!({})] {
        let request = send_params_from_v03(&params(blocking)).unwrap();
        assert!(!request.configuration.unwrap().return_immediately);
    }
    let request = send_params_from_v03(&params(json!({
        "acceptedOutputModes": ["text/plain"], "historyLength": 3, "blocking": true,
        "pushNotificationConfig": {"id": "p", "url": "https://h/cb", "token": "k",
                                   "authentication": {"schemes": ["Bearer"], "credentials": "s"}}
    })))
    .unwrap();
    assert_eq!(
        serde_json::to_value(request.configuration.unwrap()).unwrap(),
        json!({"acceptedOutputModes": ["text/plain"], "historyLength": 3,
               "taskPushNotificationConfig": {"id": "p", "url": "https://h/cb", "token": "k",
                                              "authentication": {"scheme": "Bearer", "credentials": "s"}}})
    );
    let request = send_params_from_v03(
        &json!({"message": {"messageId": "m", "role": "user", "parts": [{"text": "x"}]}}),
    );
    assert_eq!(request.unwrap().configuration, None);
}

#[test]
fn task_params() {
    let get =
        get_task_params_from_v03(&json!({"id": "t", "historyLength": 2, "metadata": {}})).unwrap();
    assert_eq!(
        serde_json::to_string(&get).unwrap(),
        r#"{"id":"t","historyLength":2}"#
    );
    let cancel = task_id_params_from_v03(&json!({"id": "t", "metadata": {"m": 1}})).unwrap();
    assert_eq!(
        serde_json::to_string(&cancel).unwrap(),
        r#"{"id":"t","metadata":{"m":1}}"#
    );
    let err = task_id_params_from_v03(&json!({"id": 7})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid task id params: invalid type: integer `7`, expected a string at `id`"
    );
    assert_eq!(err.kind(), "invalid_json");
    // Positional params are never bound to fields.
    assert!(get_task_params_from_v03(&json!(["t"])).is_err());
    assert!(task_id_params_from_v03(&json!(["t", {}])).is_err());
    let send = json!({"message": {"kind": "message", "messageId": "m", "role": "user",
                                  "parts": [{"kind": "text", "text": "hi"}]}, "configuration": []});
    assert!(send_params_from_v03(&send).is_err());
    // A message of another kind is another object.
    let task = json!({"message": {"kind": "task", "messageId": "m", "role": "user",
                                  "parts": [{"kind": "text", "text": "hi"}]}});
    assert!(send_params_from_v03(&task).is_err());
}

#[test]
fn push_configs_round_trip() {
    let v03 = json!({"taskId": "t", "pushNotificationConfig": {"id": "p", "url": "https://h/cb", "token": "k",
                     "authentication": {"schemes": ["Bearer"], "credentials": "s"}}});
    let config = push_config_from_v03(&v03).unwrap();
    assert_eq!(
        serde_json::to_string(&config).unwrap(),
        r#"{"id":"p","taskId":"t","url":"https://h/cb","token":"k","authentication":{"scheme":"Bearer","credentials":"s"}}"#
    );
    assert_eq!(push_config_to_v03(&config), v03);
    let get = push_config_id_params_from_v03(&json!({"id": "t", "pushNotificationConfigId": "p"}))
        .unwrap();
    assert_eq!(
        serde_json::to_string(&get).unwrap(),
        r#"{"taskId":"t","id":"p"}"#
    );
    let get = push_config_id_params_from_v03(&json!({"id": "t"})).unwrap();
    assert_eq!(get.id, "t");
    let list = list_push_configs_params_from_v03(&json!({"id": "t"})).unwrap();
    assert_eq!(serde_json::to_string(&list).unwrap(), r#"{"taskId":"t"}"#);
}

#[test]
fn v1_task_survives_a_v03_round_trip() {
    let json = concat!(
        r#"{"id":"t","contextId":"c","status":{"state":"TASK_STATE_AUTH_REQUIRED","#,
        r#""message":{"messageId":"s","role":"ROLE_AGENT","parts":[{"text":"log in"}]},"timestamp":"2026-01-01T00:00:00.000Z"},"#,
        r#""artifacts":[{"artifactId":"a","name":"n","description":"d","parts":[{"raw":"AAE=","filename":"f.bin","mediaType":"application/octet-stream"}],"#,
        r#""metadata":{"k":"v"},"extensions":["urn:e"]}],"#,
        r#""history":[{"messageId":"m","contextId":"c","taskId":"t","role":"ROLE_USER","parts":[{"url":"https://x"}]}],"metadata":{"z":1}}"#
    );
    let task: Task = serde_json::from_str(json).unwrap();
    let v03 = task_to_v03(&task);
    assert_eq!(v03["status"]["state"], json!("auth-required"));
    assert_eq!(v03["history"][0]["kind"], json!("message"));
    let back = task_from_v03(&v03).unwrap();
    assert_eq!(back, task);
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
    let (event, _) = stream_response_from_v03(&v03).unwrap();
    assert_eq!(event, StreamResponse::Task(task));
}

#[test]
fn unknown_kinds_are_errors() {
    let err = stream_response_from_v03(&json!({"kind": "nope"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid 0.3 stream event: unknown kind \"nope\", expected one of `task`, `message`, `status-update`, `artifact-update`"
    );
    let err = send_response_from_v03(&json!({"id": "t"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid 0.3 send result: missing field `kind` (one of `task`, `message`)"
    );
    let message = json!({"kind": "message", "messageId": "m", "role": "agent", "parts": [{"kind": "text", "text": "x"}]});
    let response = send_response_from_v03(&message).unwrap();
    assert_eq!(
        response,
        SendMessageResponse::Message(Message::agent_text("m", "x"))
    );
    assert_eq!(send_response_to_v03(&response), message);
}
