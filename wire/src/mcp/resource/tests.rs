#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;
use crate::TaskState;
use crate::a2a::{Artifact, Message, Role, TaskStatus};
use crate::mcp::CallToolResult;
use crate::mcp::call::typed_part;

fn task(artifacts: Vec<Artifact>, status: TaskStatus) -> Task {
    Task {
        id: "t1".into(),
        context_id: "c".into(),
        status,
        artifacts,
        history: Vec::new(),
        metadata: None,
    }
}

fn artifact(id: &str, parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: id.into(),
        name: None,
        description: None,
        parts,
        metadata: None,
        extensions: Vec::new(),
    }
}

fn status(state: TaskState, parts: Vec<Part>) -> TaskStatus {
    TaskStatus {
        state,
        message: Some(Message {
            parts,
            ..Message::new_text(Role::Agent, "m", "")
        }),
        timestamp: Some("2026-01-02T03:04:05.000Z".into()),
    }
}

#[test]
fn task_uris_round_trip() {
    let uri = task_uri("demo:ab12");
    assert_eq!(uri, "agentlog://tasks/demo%3Aab12");
    assert_eq!(
        TaskResource::of(&uri),
        Some(TaskResource::Task("demo:ab12".into()))
    );
    let uri = artifact_uri("demo:ab12", "echo 1");
    assert_eq!(uri, "agentlog://tasks/demo%3Aab12/artifacts/echo%201");
    assert_eq!(
        TaskResource::of(&uri),
        Some(TaskResource::Artifact("demo:ab12".into(), "echo 1".into()))
    );
    assert_eq!(
        TaskResource::of("agentlog://tasks/demo:ab12"),
        Some(TaskResource::Task("demo:ab12".into()))
    );
    for other in [
        "agentlog://tasks/",
        "agentlog://tasks/a/b",
        "test://static-text",
        "agentlog://tasks/a/artifacts/",
    ] {
        assert_eq!(TaskResource::of(other), None, "{other}");
    }
}

#[test]
fn artifacts_read_as_their_parts_with_media_types() {
    let png = Part {
        media_type: Some("image/png".into()),
        ..Part::from_content(PartContent::Raw(vec![0x89, b'P', b'N', b'G']))
    };
    let t = task(
        vec![
            artifact("echo", vec![Part::text("echo: "), Part::text("hi")]),
            artifact("image", vec![png, Part::data(json!({"a": 1}))]),
        ],
        TaskStatus::new(TaskState::Completed),
    );
    let contents = serde_json::to_value(task_contents("demo:t1", &t)).unwrap();
    assert_eq!(
        contents,
        json!([
            {"uri": "agentlog://tasks/demo%3At1/artifacts/echo", "mimeType": "text/plain", "text": "echo: "},
            {"uri": "agentlog://tasks/demo%3At1/artifacts/echo", "mimeType": "text/plain", "text": "hi"},
            {"uri": "agentlog://tasks/demo%3At1/artifacts/image", "mimeType": "image/png", "blob": "iVBORw=="},
            {"uri": "agentlog://tasks/demo%3At1/artifacts/image", "mimeType": "application/json", "text": "{\"a\":1}"}
        ])
    );
    let image = artifact_contents("demo:t1", &t, "image").unwrap();
    assert_eq!(image.len(), 2);
    assert!(matches!(&image[0], ResourceContents::Blob { blob, .. } if blob == "iVBORw=="));
    assert_eq!(artifact_contents("demo:t1", &t, "nope"), None);
}

#[test]
fn a_tool_calls_task_reads_as_its_result_and_a_bare_task_as_its_status() {
    let result = CallToolResult {
        content: vec![
            ContentBlock::text("hello"),
            ContentBlock::Image {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
                annotations: None,
                meta: None,
            },
            ContentBlock::Resource {
                resource: json!({"uri": "test://r", "mimeType": "text/plain", "text": "embedded"}),
                annotations: None,
                meta: None,
            },
        ],
        ..CallToolResult::default()
    };
    let done = task(
        Vec::new(),
        status(
            TaskState::Completed,
            vec![typed_part(
                serde_json::to_value(result).unwrap(),
                RESULT_MEDIA_TYPE,
            )],
        ),
    );
    let contents = serde_json::to_value(task_contents("mcp.x:t1", &done)).unwrap();
    assert_eq!(
        contents,
        json!([
            {"uri": "agentlog://tasks/mcp.x%3At1", "mimeType": "text/plain", "text": "hello"},
            {"uri": "agentlog://tasks/mcp.x%3At1", "mimeType": "image/png", "blob": "AAAA"},
            {"uri": "test://r", "mimeType": "text/plain", "text": "embedded"}
        ])
    );
    let working = task(
        Vec::new(),
        status(TaskState::Working, vec![Part::text("halfway")]),
    );
    let contents = task_contents("demo:t1", &working);
    let [
        ResourceContents::Text {
            text, mime_type, ..
        },
    ] = contents.as_slice()
    else {
        panic!("{contents:?}");
    };
    assert_eq!(mime_type.as_deref(), Some(STATUS_MEDIA_TYPE));
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"taskId": "demo:t1", "status": "working", "statusMessage": "halfway",
               "lastUpdatedAt": "2026-01-02T03:04:05.000Z"})
    );
    let listed = serde_json::to_value(task_listing("demo:t1", &working)).unwrap();
    assert_eq!(
        listed,
        json!({"uri": "agentlog://tasks/demo%3At1", "name": "demo:t1", "title": "demo task (working)",
               "description": "halfway", "annotations": {"lastModified": "2026-01-02T03:04:05.000Z"}})
    );
}

#[test]
fn contents_are_text_or_blob_on_the_wire() {
    let text: ResourceContents = serde_json::from_value(json!({"uri": "u", "text": "t"})).unwrap();
    assert_eq!(text, ResourceContents::text("u", None, "t"));
    let blob: ResourceContents =
        serde_json::from_value(json!({"uri": "u", "mimeType": "image/png", "blob": "AA=="}))
            .unwrap();
    assert_eq!(blob, ResourceContents::blob("u", Some("image/png"), &[0]));
    assert!(serde_json::from_value::<ResourceContents>(json!({"uri": "u"})).is_err());
}
