//! The JSON-RPC 2.0 envelope and the A2A method names.
//!
//! The request `id` is kept as raw JSON text and echoed byte for byte, whatever its JSON type
//! (the JS client rejects a response whose id differs in type). Dispatch never matches bare
//! strings: [`Method`] names every 1.0 and 0.3 method.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use strum::{Display, EnumIter, EnumString, IntoStaticStr};

use crate::{ErrorCode, RpcError};

/// An A2A protocol version, `Major.Minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumIter, IntoStaticStr)]
pub enum ProtocolVersion {
    /// A2A 1.0: PascalCase methods, ProtoJSON shapes.
    #[strum(to_string = "1.0")]
    V1_0,
    /// A2A 0.3: slash methods, `kind` discriminators, lowercase enums.
    #[strum(to_string = "0.3")]
    V0_3,
}

impl ProtocolVersion {
    /// Parse an `A2A-Version` value. Per spec §3.6 only `Major.Minor` counts, so `1.0.1`
    /// means 1.0 and a bare `1` means 1.0. Returns `None` for a version not served here.
    pub fn from_header(value: &str) -> Option<Self> {
        let value = value.trim();
        let mut parts = value.split('.');
        let major = parts.next()?.parse::<u32>().ok()?;
        let minor = match parts.next() {
            Some(minor) => minor.parse::<u32>().ok()?,
            None => 0,
        };
        if let Some(patch) = parts.next() {
            patch.parse::<u32>().ok()?;
        }
        if parts.next().is_some() {
            return None;
        }
        match (major, minor) {
            (1, 0) => Some(ProtocolVersion::V1_0),
            (0, 3) => Some(ProtocolVersion::V0_3),
            _ => None,
        }
    }
}

/// What a method does, independent of the protocol version that named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EnumIter)]
pub enum Operation {
    /// Send a message, answer with a task or message.
    SendMessage,
    /// Send a message, answer with a stream of events.
    SendStreamingMessage,
    /// Read a task.
    GetTask,
    /// List the caller's tasks.
    ListTasks,
    /// Cancel a task.
    CancelTask,
    /// Stream a task's events.
    SubscribeToTask,
    /// Create a push-notification config.
    CreateTaskPushNotificationConfig,
    /// Read a push-notification config.
    GetTaskPushNotificationConfig,
    /// List push-notification configs.
    ListTaskPushNotificationConfigs,
    /// Delete a push-notification config.
    DeleteTaskPushNotificationConfig,
    /// Read the authenticated extended agent card.
    GetExtendedAgentCard,
}

impl Operation {
    /// Whether the answer is a `text/event-stream`.
    pub const fn is_streaming(self) -> bool {
        matches!(
            self,
            Operation::SendStreamingMessage | Operation::SubscribeToTask
        )
    }
}

/// Every JSON-RPC method name of A2A 1.0 (PascalCase) and 0.3 (slash-separated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, EnumIter, IntoStaticStr)]
pub enum Method {
    /// `SendMessage` (1.0).
    SendMessage,
    /// `SendStreamingMessage` (1.0).
    SendStreamingMessage,
    /// `GetTask` (1.0).
    GetTask,
    /// `ListTasks` (1.0).
    ListTasks,
    /// `CancelTask` (1.0).
    CancelTask,
    /// `SubscribeToTask` (1.0).
    SubscribeToTask,
    /// `CreateTaskPushNotificationConfig` (1.0).
    CreateTaskPushNotificationConfig,
    /// `GetTaskPushNotificationConfig` (1.0).
    GetTaskPushNotificationConfig,
    /// `ListTaskPushNotificationConfigs` (1.0).
    ListTaskPushNotificationConfigs,
    /// `DeleteTaskPushNotificationConfig` (1.0).
    DeleteTaskPushNotificationConfig,
    /// `GetExtendedAgentCard` (1.0).
    GetExtendedAgentCard,
    /// `message/send` (0.3).
    #[strum(serialize = "message/send")]
    V03MessageSend,
    /// `message/stream` (0.3).
    #[strum(serialize = "message/stream")]
    V03MessageStream,
    /// `tasks/get` (0.3).
    #[strum(serialize = "tasks/get")]
    V03TasksGet,
    /// `tasks/cancel` (0.3).
    #[strum(serialize = "tasks/cancel")]
    V03TasksCancel,
    /// `tasks/resubscribe` (0.3).
    #[strum(serialize = "tasks/resubscribe")]
    V03TasksResubscribe,
    /// `tasks/pushNotificationConfig/set` (0.3).
    #[strum(serialize = "tasks/pushNotificationConfig/set")]
    V03PushConfigSet,
    /// `tasks/pushNotificationConfig/get` (0.3).
    #[strum(serialize = "tasks/pushNotificationConfig/get")]
    V03PushConfigGet,
    /// `tasks/pushNotificationConfig/list` (0.3).
    #[strum(serialize = "tasks/pushNotificationConfig/list")]
    V03PushConfigList,
    /// `tasks/pushNotificationConfig/delete` (0.3).
    #[strum(serialize = "tasks/pushNotificationConfig/delete")]
    V03PushConfigDelete,
    /// `agent/getAuthenticatedExtendedCard` (0.3).
    #[strum(serialize = "agent/getAuthenticatedExtendedCard")]
    V03GetAuthenticatedExtendedCard,
}

impl Method {
    /// What the method does.
    pub const fn operation(self) -> Operation {
        use Method::*;
        match self {
            SendMessage | V03MessageSend => Operation::SendMessage,
            SendStreamingMessage | V03MessageStream => Operation::SendStreamingMessage,
            GetTask | V03TasksGet => Operation::GetTask,
            ListTasks => Operation::ListTasks,
            CancelTask | V03TasksCancel => Operation::CancelTask,
            SubscribeToTask | V03TasksResubscribe => Operation::SubscribeToTask,
            CreateTaskPushNotificationConfig | V03PushConfigSet => {
                Operation::CreateTaskPushNotificationConfig
            }
            GetTaskPushNotificationConfig | V03PushConfigGet => {
                Operation::GetTaskPushNotificationConfig
            }
            ListTaskPushNotificationConfigs | V03PushConfigList => {
                Operation::ListTaskPushNotificationConfigs
            }
            DeleteTaskPushNotificationConfig | V03PushConfigDelete => {
                Operation::DeleteTaskPushNotificationConfig
            }
            GetExtendedAgentCard | V03GetAuthenticatedExtendedCard => {
                Operation::GetExtendedAgentCard
            }
        }
    }

    /// The protocol version whose naming the method uses. Dispatch follows the name (slash
    /// names get 0.3 semantics whatever the header says), as the official Python server does.
    pub const fn version(self) -> ProtocolVersion {
        use Method::*;
        match self {
            V03MessageSend
            | V03MessageStream
            | V03TasksGet
            | V03TasksCancel
            | V03TasksResubscribe
            | V03PushConfigSet
            | V03PushConfigGet
            | V03PushConfigList
            | V03PushConfigDelete
            | V03GetAuthenticatedExtendedCard => ProtocolVersion::V0_3,
            _ => ProtocolVersion::V1_0,
        }
    }

    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A parsed JSON-RPC request. Borrowed from the body, so parsing copies nothing.
#[derive(Debug)]
pub struct Request<'a> {
    /// The request id as raw JSON (`null` when absent), echoed verbatim.
    pub id: &'a RawValue,
    /// The method name, unescaped (`"tasks\/get"` is `tasks/get`); borrowed from the body
    /// unless it had escapes.
    pub method: Cow<'a, str>,
    /// The params as raw JSON, exactly as sent; `None` when absent.
    pub params: Option<&'a RawValue>,
}

impl Request<'_> {
    /// The method, or -32601 naming the unknown method.
    pub fn method(&self) -> Result<Method, RpcError> {
        self.method.parse().map_err(|_| {
            RpcError::with_message(
                ErrorCode::MethodNotFound,
                format!("Method not found: {}", self.method),
            )
            .with_meta("method", &*self.method)
        })
    }
}

/// A request that could not be parsed: the id to answer with (raw JSON, `null` if unknown)
/// and the error.
#[derive(Debug)]
pub struct BadRequest {
    /// The id to echo, as raw JSON text.
    pub id: Box<RawValue>,
    /// -32700 or -32600.
    pub error: RpcError,
}

/// A JSON string, borrowed when it has no escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    /// `null` is kept (as `Some`): JSON-RPC's params are an object or an array, never null.
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
}

/// A member's raw value, `null` included (an `Option` would read `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Parse a JSON-RPC 2.0 request body.
///
/// - not JSON → -32700;
/// - JSON but not an object (batches are not part of A2A) → -32600;
/// - an `id` that is not a string, a number or `null` (JSON-RPC 2.0 §4) → -32600, answered
///   with a `null` id (an invalid id is never echoed);
/// - `jsonrpc` other than `"2.0"`, `method` missing or not a string, `params` neither an
///   object nor an array → -32600, echoing the id when there is one.
pub fn parse_request(body: &[u8]) -> Result<Request<'_>, BadRequest> {
    let null = || RawValue::NULL.to_owned();
    let text = std::str::from_utf8(body).map_err(|_| BadRequest {
        id: null(),
        error: RpcError::with_message(ErrorCode::ParseError, "Invalid JSON payload: not UTF-8"),
    })?;
    let not_json = |e: serde_json::Error| BadRequest {
        id: null(),
        error: RpcError::with_message(ErrorCode::ParseError, format!("Invalid JSON payload: {e}")),
    };
    if !text.trim_start().starts_with('{') {
        serde_json::from_str::<IgnoredAny>(text).map_err(not_json)?;
        return Err(BadRequest {
            id: null(),
            error: RpcError::with_message(
                ErrorCode::InvalidRequest,
                "Invalid request: the body must be a JSON-RPC request object",
            ),
        });
    }
    // One pass in the common case: the envelope's parse checks all of the JSON (unknown
    // members are skipped, not trusted). Only a failure reads again, to tell -32700 from -32600.
    let envelope: Envelope<'_> =
        serde_json::from_str(text).map_err(|e| match serde_json::from_str::<IgnoredAny>(text) {
            Err(syntax) => not_json(syntax),
            Ok(_) => BadRequest {
                id: null(),
                error: RpcError::with_message(
                    ErrorCode::InvalidRequest,
                    format!("Invalid request: {e}"),
                ),
            },
        })?;
    if let Some(id) = envelope.id
        && !is_valid_id(id)
    {
        return Err(BadRequest {
            id: null(),
            error: RpcError::with_message(
                ErrorCode::InvalidRequest,
                "Invalid request: \"id\" must be a string, a number or null",
            ),
        });
    }
    let id = envelope.id;
    let invalid = |why: &str| BadRequest {
        id: id.map(RawValue::to_owned).unwrap_or_else(null),
        error: RpcError::with_message(ErrorCode::InvalidRequest, format!("Invalid request: {why}")),
    };
    match envelope.jsonrpc.map(RawValue::get) {
        Some("\"2.0\"") => {}
        Some(_) => return Err(invalid("\"jsonrpc\" must be \"2.0\"")),
        None => return Err(invalid("missing \"jsonrpc\": \"2.0\"")),
    }
    let method = envelope
        .method
        .ok_or_else(|| invalid("missing \"method\""))?;
    let Text(method) =
        serde_json::from_str(method.get()).map_err(|_| invalid("\"method\" must be a string"))?;
    if let Some(params) = envelope.params {
        let first = params.get().trim_start().as_bytes().first().copied();
        if !matches!(first, Some(b'{') | Some(b'[')) {
            return Err(invalid("\"params\" must be an object"));
        }
    }
    Ok(Request {
        id: id.unwrap_or(RawValue::NULL),
        method,
        params: envelope.params,
    })
}

/// Whether a raw JSON value may be a JSON-RPC id: a string, a number or `null`. The value
/// already parsed as JSON, so its first byte tells its type.
fn is_valid_id(id: &RawValue) -> bool {
    matches!(
        id.get().as_bytes().first(),
        Some(b'"' | b'-' | b'0'..=b'9' | b'n')
    )
}

#[derive(Serialize)]
struct SuccessBody<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: &'a T,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    error: serde_json::Value,
}

/// A success response: `{"jsonrpc":"2.0","id":<id>,"result":<result>}`.
pub fn success_body<T: Serialize>(id: &RawValue, result: &T) -> Vec<u8> {
    serde_json::to_vec(&SuccessBody {
        jsonrpc: "2.0",
        id,
        result,
    })
    .unwrap_or_else(|e| {
        error_body(
            id,
            &RpcError::with_message(
                ErrorCode::InternalError,
                format!("cannot encode result: {e}"),
            ),
            ProtocolVersion::V1_0,
        )
    })
}

/// An error response, with the error object in the shape of `version`.
pub fn error_body(id: &RawValue, error: &RpcError, version: ProtocolVersion) -> Vec<u8> {
    let error = match version {
        ProtocolVersion::V1_0 => error.to_json_v1(),
        ProtocolVersion::V0_3 => error.to_json_v03(),
    };
    serde_json::to_vec(&ErrorBody {
        jsonrpc: "2.0",
        id,
        error,
    })
    .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    #[test]
    fn every_method_name_round_trips_and_maps_to_an_operation() {
        for method in Method::iter() {
            assert_eq!(method.as_str().parse::<Method>().ok(), Some(method));
            let slash = method.as_str().contains('/');
            assert_eq!(method.version() == ProtocolVersion::V0_3, slash, "{method}");
        }
        for op in Operation::iter() {
            assert!(Method::iter().any(|m| m.operation() == op));
        }
        assert_eq!(
            "message/send".parse::<Method>().ok(),
            Some(Method::V03MessageSend)
        );
        assert!("sendMessage".parse::<Method>().is_err());
        assert!("tasks/list".parse::<Method>().is_err());
    }

    #[test]
    fn ids_are_echoed_with_their_json_type() {
        for id in [
            r#""1""#,
            "1",
            "1.50",
            "-3",
            "null",
            "12345678901234567890123",
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"GetTask","params":{{}}}}"#);
            let req = parse_request(body.as_bytes()).unwrap();
            assert_eq!(req.id.get(), id);
            let out = String::from_utf8(success_body(req.id, &serde_json::json!({}))).unwrap();
            assert_eq!(
                out,
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
            );
        }
    }

    #[test]
    fn bad_envelopes_get_their_codes() {
        let cases: [(&str, i32); 16] = [
            ("{", -32700),
            ("", -32700),
            ("[]", -32600),
            // An array serde could read as the envelope struct, field by field.
            (r#"["2.0",1,"GetTask",{}]"#, -32600),
            ("[1,", -32700),
            // Valid JSON inside, garbage after it.
            (r#"{"jsonrpc":"2.0","id":1,"method":"GetTask"} x"#, -32700),
            // Bad JSON in a member the envelope skips.
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","extra":[1,}"#,
                -32700,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask"}"#,
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":}}"#,
                -32700,
            ),
            ("\"x\"", -32600),
            (r#"{"id":1,"method":"GetTask"}"#, -32600),
            (r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":1}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":1,"method":5}"#, -32600),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":"x"}"#,
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":null}"#,
                -32600,
            ),
        ];
        for (body, code) in cases {
            let err = parse_request(body.as_bytes()).unwrap_err();
            assert_eq!(err.error.code.code(), code, "{body}");
        }
        let err = parse_request(br#"{"jsonrpc":"1.0","id":"abc","method":"GetTask"}"#).unwrap_err();
        assert_eq!(err.id.get(), r#""abc""#);
        // JSON-RPC 2.0 ids are strings, numbers or null; any other id is refused, not echoed.
        for id in [r#"{"a":[1]}"#, "[1]", "true", "false"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"GetTask","params":{{}}}}"#);
            let err = parse_request(body.as_bytes()).unwrap_err();
            assert_eq!(err.error.code, ErrorCode::InvalidRequest, "{id}");
            assert_eq!(err.id.get(), "null", "{id}");
        }
    }

    #[test]
    fn versions_follow_major_minor() {
        assert_eq!(
            ProtocolVersion::from_header("1.0"),
            Some(ProtocolVersion::V1_0)
        );
        assert_eq!(
            ProtocolVersion::from_header("1.0.1"),
            Some(ProtocolVersion::V1_0)
        );
        assert_eq!(
            ProtocolVersion::from_header("1"),
            Some(ProtocolVersion::V1_0)
        );
        assert_eq!(
            ProtocolVersion::from_header("0.3"),
            Some(ProtocolVersion::V0_3)
        );
        assert_eq!(
            ProtocolVersion::from_header(" 0.3.0 "),
            Some(ProtocolVersion::V0_3)
        );
        for bad in ["", "2.0", "0.5", "1.1", "v1", "1.0.x", "1.0.0.0"] {
            assert_eq!(ProtocolVersion::from_header(bad), None, "{bad}");
        }
    }

    #[test]
    fn escaped_method_names_are_read_as_any_json_string() {
        for (sent, method) in [
            (r#""tasks\/get""#, Method::V03TasksGet),
            (r#""Get\u0054ask""#, Method::GetTask),
            (r#""message\/send""#, Method::V03MessageSend),
            (r#""GetTask""#, Method::GetTask),
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":{sent}}}"#);
            let req = parse_request(body.as_bytes()).unwrap();
            assert_eq!(req.method().unwrap(), method, "{sent}");
        }
        let borrowed = parse_request(br#"{"jsonrpc":"2.0","id":1,"method":"GetTask"}"#).unwrap();
        assert!(matches!(borrowed.method, Cow::Borrowed(_)));
        let unknown = parse_request(br#"{"jsonrpc":"2.0","id":1,"method":"tasks\/list"}"#).unwrap();
        let err = unknown.method().unwrap_err();
        assert_eq!(err.code, ErrorCode::MethodNotFound);
        assert!(err.message.contains("tasks/list"), "{}", err.message);
    }

    #[test]
    fn unknown_method_names_it() {
        let req = parse_request(br#"{"jsonrpc":"2.0","id":1,"method":"tasks/list"}"#).unwrap();
        let err = req.method().unwrap_err();
        assert_eq!(err.code, ErrorCode::MethodNotFound);
        assert!(err.message.contains("tasks/list"));
    }
}

#[cfg(test)]
mod proptests;
