//! Reading A2A JSON into the model, with errors that say which field is wrong.
//!
//! serde's "missing field `message`" names the field, but "invalid type: integer `5`, expected a
//! string" does not. On failure the input is re-read as text and the error position is turned into
//! a field path (`message.parts[0].text`), appended as ``at `path` ``. A struct is read from
//! an object only, never from an array bound by position ([`Objects`]).

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::objects::Objects;
use crate::WireError;

/// Reads `value` as a `T`; `what` names the thing being read in the error (`SendMessageRequest`).
pub fn from_json<T: DeserializeOwned>(what: &'static str, value: &Value) -> Result<T, WireError> {
    T::deserialize(Objects(value)).map_err(|first| {
        let text = value.to_string();
        let reason = match read::<T>(text.as_bytes()) {
            Err(located) => describe(text.as_bytes(), &located),
            Ok(_) => first.to_string(),
        };
        WireError::InvalidJson { what, reason }
    })
}

/// What JSON type `value` is, as an error message says it ("a string", "an object", "null").
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reads JSON bytes as a `T`; `what` names the thing being read in the error.
pub fn from_slice<T: DeserializeOwned>(what: &'static str, bytes: &[u8]) -> Result<T, WireError> {
    read(bytes).map_err(|err| WireError::InvalidJson {
        what,
        reason: describe(bytes, &err),
    })
}

/// `serde_json::from_slice` through [`Objects`].
fn read<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = T::deserialize(Objects(&mut deserializer))?;
    deserializer.end()?;
    Ok(value)
}

/// serde's message, plus the field path for data errors (syntax errors keep line and column).
fn describe(text: &[u8], err: &serde_json::Error) -> String {
    let full = err.to_string();
    if !err.is_data() {
        return full;
    }
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full);
    let path = path_at(text, offset_of(text, err.line(), err.column()));
    if path.is_empty() {
        message.to_owned()
    } else {
        format!("{message} at `{path}`")
    }
}

/// Byte offset of a serde_json (1-based line, column) position: the bytes read so far.
fn offset_of(text: &[u8], line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        text.iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(line - 2)
            .map_or(text.len(), |(i, _)| i + 1)
    };
    (line_start + column).min(text.len())
}

/// One level of nesting while scanning.
enum Frame {
    /// Inside an object: the key whose value is being read, if any.
    Object {
        key: Option<String>,
        expecting_key: bool,
    },
    /// Inside an array: the index of the element being read.
    Array(usize),
}

/// The path (`a.b[2].c`) of the value being read after `text[..end]`.
fn path_at(text: &[u8], end: usize) -> String {
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < end {
        match text[i] {
            b'"' => {
                let start = i + 1;
                i = start;
                while i < end && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object { key, expecting_key }) = stack.last_mut()
                    && *expecting_key
                {
                    *key = Some(String::from_utf8_lossy(&text[start..i.min(end)]).into_owned());
                    *expecting_key = false;
                }
            }
            b'{' => stack.push(Frame::Object {
                key: None,
                expecting_key: true,
            }),
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { key, expecting_key }) => {
                    *key = None;
                    *expecting_key = true;
                }
                Some(Frame::Array(index)) => *index += 1,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(key), .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Object { key: None, .. } => {}
            Frame::Array(index) => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::a2a::{Message, SendMessageRequest};
    use serde_json::json;

    fn reason(err: WireError) -> String {
        match err {
            WireError::InvalidJson { reason, .. } => reason,
            other => panic!("unexpected error {other:?}"),
        }
    }

    #[test]
    fn arrays_are_never_read_as_objects() {
        use crate::a2a::{GetTaskRequest, ListTasksRequest};
        assert!(from_slice::<GetTaskRequest>("GetTaskRequest", br#"["t-1"]"#).is_err());
        assert!(from_slice::<ListTasksRequest>("ListTasksRequest", b"[]").is_err());
        let send = br#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":[]}"#;
        let err = from_slice::<SendMessageRequest>("SendMessageRequest", send).unwrap_err();
        let reason = reason(err);
        assert!(reason.ends_with("at `configuration`"), "{reason}");
        let value: serde_json::Value = serde_json::from_slice(send).unwrap();
        assert!(from_json::<SendMessageRequest>("SendMessageRequest", &value).is_err());
        let message = json!({"messageId": "m", "role": "ROLE_USER", "parts": [["hi"]]});
        assert!(from_json::<Message>("Message", &message).is_err());
    }

    #[test]
    fn missing_field_is_named() {
        let err =
            from_json::<SendMessageRequest>("SendMessageRequest", &json!({"configuration": {}}));
        let err = err.expect_err("no message");
        assert_eq!(
            err.to_string(),
            "invalid SendMessageRequest: missing field `message`"
        );
    }

    #[test]
    fn wrong_type_names_the_path() {
        let value =
            json!({"message": {"messageId": 5, "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
        let err =
            from_json::<SendMessageRequest>("SendMessageRequest", &value).expect_err("bad id");
        assert_eq!(
            reason(err),
            "invalid type: integer `5`, expected a string at `message.messageId`"
        );
        let value =
            json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a"}, {"text": 7}]});
        let err = from_json::<Message>("Message", &value).expect_err("bad text");
        assert_eq!(
            reason(err),
            "invalid type: integer `7`, expected a string at `parts[1].text`"
        );
    }

    #[test]
    fn oneof_errors_name_the_element() {
        let value = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a"}, {"text": "b", "url": "u"}]});
        let err = from_json::<Message>("Message", &value).expect_err("two members");
        assert_eq!(
            reason(err),
            "a part needs exactly one of `text`, `raw`, `url`, `data`, found `text` and `url` at `parts[1]`"
        );
    }

    #[test]
    fn missing_nested_field_names_the_parent() {
        let value = json!({"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}});
        let err = from_json::<SendMessageRequest>("SendMessageRequest", &value).expect_err("no id");
        assert_eq!(reason(err), "missing field `messageId` at `message`");
    }

    #[test]
    fn json_types_are_named_as_errors_say_them() {
        let named: Vec<&str> = [
            json!(null),
            json!(true),
            json!(1),
            json!("s"),
            json!([]),
            json!({}),
        ]
        .iter()
        .map(json_type)
        .collect();
        assert_eq!(
            named,
            [
                "null",
                "a boolean",
                "a number",
                "a string",
                "an array",
                "an object"
            ]
        );
    }

    #[test]
    fn from_slice_handles_pretty_input_and_syntax_errors() {
        let text = b"{\n  \"message\": {\n    \"messageId\": \"m\",\n    \"role\": 9,\n    \"parts\": []\n  }\n}";
        let err =
            from_slice::<SendMessageRequest>("SendMessageRequest", text).expect_err("bad role");
        assert_eq!(reason(err), "unknown role 9 at `message.role`");
        let err = from_slice::<SendMessageRequest>("SendMessageRequest", b"{\"message\":")
            .expect_err("eof");
        assert_eq!(reason(err), "EOF while parsing a value at line 1 column 11");
    }
}
