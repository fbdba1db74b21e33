use agentlog_wire::mcp::{Completion, ResourceContents};
use serde_json::{Map, Value, json};

use super::HandlerResult;
use crate::error::ErrorKind;

/// The kind and message `value` is refused with as a `T`.
fn refused<T: HandlerResult + std::fmt::Debug>(value: Value) -> (ErrorKind, String) {
    let error = T::from_value(value).expect_err("refused");
    (error.kind(), error.to_string())
}

#[test]
fn a_prompt_result_is_an_object_with_messages_kept_as_given() {
    let given = json!({"description": "d", "messages": [
        {"role": "user", "content": {"type": "text", "text": "hi"}},
        {"role": "assistant", "content": {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}}],
        "_meta": {"k": 1}});
    let read = Map::<String, Value>::from_value(given.clone()).expect("a prompt result");
    assert_eq!(Value::Object(read), given);
    assert!(Map::<String, Value>::from_value(json!({"messages": []})).is_ok());
    for (value, says) in [
        (
            json!("text"),
            "returned a string, not a GetPromptResult object",
        ),
        (json!({}), "invalid messages"),
        (json!({"messages": "hi"}), "invalid messages"),
        (json!({"messages": [{"role": "user"}]}), "content"),
        (
            json!({"messages": [{"role": "nobody", "content": {"type": "text", "text": "x"}}]}),
            "nobody",
        ),
        (
            json!({"messages": [], "description": 3}),
            "description that is a number",
        ),
    ] {
        let (kind, message) = refused::<Map<String, Value>>(value.clone());
        assert_eq!(kind, ErrorKind::ToolFailed, "{value}");
        assert!(
            message.starts_with("the prompt handler returned"),
            "{message}"
        );
        assert!(message.contains(says), "{value}: {message}");
    }
}

#[test]
fn resource_contents_are_text_or_blobs_with_their_uris() {
    let read = Vec::<ResourceContents>::from_value(json!([
        {"uri": "test://a", "mimeType": "text/plain", "text": "hello"},
        {"uri": "test://b", "blob": "iVBORw=="}]))
    .expect("contents");
    assert_eq!(
        read,
        [
            ResourceContents::text("test://a", Some("text/plain"), "hello".to_owned()),
            ResourceContents::blob("test://b", None, &[0x89, 0x50, 0x4e, 0x47]),
        ]
    );
    for value in [
        json!({"uri": "test://a", "text": "not in an array"}),
        json!([{"text": "no uri"}]),
        json!([{"uri": "test://a"}]),
        json!(null),
    ] {
        let (kind, message) = refused::<Vec<ResourceContents>>(value.clone());
        assert_eq!(kind, ErrorKind::ToolFailed, "{value}");
        assert!(
            message.starts_with("the resource handler returned invalid contents"),
            "{message}"
        );
    }
}

#[test]
fn completions_are_an_array_of_strings_or_values_with_total_and_has_more() {
    let all = Completion::from_value(json!(["paris", "park"])).expect("an array");
    assert_eq!(
        all,
        Completion {
            values: vec!["paris".into(), "park".into()],
            total: 2,
            has_more: false
        }
    );
    let some = Completion::from_value(json!({"values": ["a"], "total": 40, "hasMore": true}))
        .expect("an object");
    assert_eq!(
        some,
        Completion {
            values: vec!["a".into()],
            total: 40,
            has_more: true
        }
    );
    let counted = Completion::from_value(json!({"values": ["a", "b"]})).expect("no total");
    assert_eq!((counted.total, counted.has_more), (2, false));
    for (value, says) in [
        (
            json!("paris"),
            "returned a string, not an array of strings nor",
        ),
        (json!({"total": 3}), "returned null, not an array"),
        (json!({"values": "a"}), "returned a string, not an array"),
        (json!(["a", 1]), "a value that is a number, not a string"),
        (
            json!({"values": [null]}),
            "a value that is null, not a string",
        ),
    ] {
        let (kind, message) = refused::<Completion>(value.clone());
        assert_eq!(kind, ErrorKind::ToolFailed, "{value}");
        assert!(message.contains(says), "{value}: {message}");
    }
}
