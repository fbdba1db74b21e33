//! Every JSON-RPC and A2A error code, in one table.
//!
//! Source: A2A spec §5.4 and §9.5 (`../shared/reference/a2a-protocol.md` §4.2). The HTTP status
//! is the one the spec gives for the REST binding; JSON-RPC errors themselves travel with HTTP 200.

use serde_json::{Map, Value, json};
use strum::{EnumIter, IntoStaticStr};

/// The `ErrorInfo.domain` of every A2A error.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// The ProtoJSON `@type` of a `google.rpc.ErrorInfo`.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// A JSON-RPC 2.0 or A2A error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EnumIter, IntoStaticStr)]
#[non_exhaustive]
pub enum ErrorCode {
    /// -32700: the body is not valid JSON.
    ParseError,
    /// -32600: not a valid JSON-RPC request object.
    InvalidRequest,
    /// -32601: unknown method.
    MethodNotFound,
    /// -32602: invalid method parameters.
    InvalidParams,
    /// -32603: internal error.
    InternalError,
    /// -32001: no such task (or not visible to the caller).
    TaskNotFound,
    /// -32002: the task cannot be canceled in its current state.
    TaskNotCancelable,
    /// -32003: push notifications are not supported.
    PushNotificationNotSupported,
    /// -32004: the operation is not supported (or not in this task state).
    UnsupportedOperation,
    /// -32005: a content type in the request is not supported.
    ContentTypeNotSupported,
    /// -32006: the agent produced an invalid response.
    InvalidAgentResponse,
    /// -32007: no extended agent card is configured.
    ExtendedAgentCardNotConfigured,
    /// -32008: the client must support a required extension.
    ExtensionSupportRequired,
    /// -32009: the requested protocol version is not supported.
    VersionNotSupported,
    /// -31401: no credentials, or bad ones (sent with HTTP 401). A2A assigns no JSON-RPC code
    /// to authentication failures; this is the convention of the official Go SDK.
    Unauthenticated,
    /// -31403: valid credentials without the permission (scope) the method needs (sent with
    /// HTTP 403); the Go SDK's convention, as for [`ErrorCode::Unauthenticated`].
    PermissionDenied,
}

/// One row of the error table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorSpec {
    /// The JSON-RPC `error.code`.
    pub code: i32,
    /// The `ErrorInfo.reason` (UPPER_SNAKE, without "Error").
    pub reason: &'static str,
    /// The default human message.
    pub message: &'static str,
    /// HTTP status in the REST binding.
    pub http_status: u16,
    /// Whether retrying the same request unchanged may succeed.
    pub retryable: bool,
}

impl ErrorCode {
    /// The table.
    pub const fn spec(self) -> ErrorSpec {
        use ErrorCode::*;
        let (code, reason, message, http_status, retryable) = match self {
            ParseError => (-32700, "PARSE_ERROR", "Invalid JSON payload", 400, false),
            InvalidRequest => (
                -32600,
                "INVALID_REQUEST",
                "Request payload validation error",
                400,
                false,
            ),
            MethodNotFound => (-32601, "METHOD_NOT_FOUND", "Method not found", 404, false),
            InvalidParams => (-32602, "INVALID_PARAMS", "Invalid parameters", 400, false),
            InternalError => (-32603, "INTERNAL_ERROR", "Internal error", 500, true),
            TaskNotFound => (-32001, "TASK_NOT_FOUND", "Task not found", 404, false),
            TaskNotCancelable => (
                -32002,
                "TASK_NOT_CANCELABLE",
                "Task cannot be canceled",
                400,
                false,
            ),
            PushNotificationNotSupported => (
                -32003,
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
                "Push Notification is not supported",
                400,
                false,
            ),
            UnsupportedOperation => (
                -32004,
                "UNSUPPORTED_OPERATION",
                "This operation is not supported",
                400,
                false,
            ),
            ContentTypeNotSupported => (
                -32005,
                "CONTENT_TYPE_NOT_SUPPORTED",
                "Incompatible content types",
                400,
                false,
            ),
            InvalidAgentResponse => (
                -32006,
                "INVALID_AGENT_RESPONSE",
                "Invalid agent response",
                500,
                false,
            ),
            ExtendedAgentCardNotConfigured => (
                -32007,
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                "Extended agent card is not configured",
                400,
                false,
            ),
            ExtensionSupportRequired => (
                -32008,
                "EXTENSION_SUPPORT_REQUIRED",
                "A required extension is not supported by the client",
                400,
                false,
            ),
            VersionNotSupported => (
                -32009,
                "VERSION_NOT_SUPPORTED",
                "Protocol version is not supported",
                400,
                false,
            ),
            Unauthenticated => (
                -31401,
                "UNAUTHENTICATED",
                "Authentication required",
                401,
                false,
            ),
            PermissionDenied => (-31403, "PERMISSION_DENIED", "Permission denied", 403, false),
        };
        ErrorSpec {
            code,
            reason,
            message,
            http_status,
            retryable,
        }
    }

    /// The JSON-RPC code.
    pub const fn code(self) -> i32 {
        self.spec().code
    }

    /// The code for a JSON-RPC error number, if it is one of ours.
    pub fn from_code(code: i32) -> Option<Self> {
        use strum::IntoEnumIterator;
        Self::iter().find(|c| c.code() == code)
    }

    /// Whether the code is an A2A-specific one (-32001 ... -32009) rather than JSON-RPC's own
    /// (or the authentication convention's -31401 and -31403).
    pub const fn is_a2a(self) -> bool {
        let code = self.code();
        code <= -32001 && code >= -32099
    }
}

/// A JSON-RPC error object: code, message and the structured details.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// Which error.
    pub code: ErrorCode,
    /// Human-readable message.
    pub message: String,
    /// `ErrorInfo.metadata`: string facts about the error (`taskId`, `field`, ...).
    pub metadata: Map<String, Value>,
}

impl RpcError {
    /// An error with the table's default message.
    pub fn new(code: ErrorCode) -> Self {
        Self {
            code,
            message: code.spec().message.to_owned(),
            metadata: Map::new(),
        }
    }

    /// An error with a specific message.
    pub fn with_message(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            metadata: Map::new(),
        }
    }

    /// Add an `ErrorInfo.metadata` entry (values are strings per `google.rpc.ErrorInfo`).
    pub fn with_meta(mut self, key: &str, value: impl Into<String>) -> Self {
        self.metadata
            .insert(key.to_owned(), Value::String(value.into()));
        self
    }

    /// The 1.0 error object: `data` is an array holding one `google.rpc.ErrorInfo`.
    pub fn to_json_v1(&self) -> Value {
        let spec = self.code.spec();
        json!({
            "code": spec.code,
            "message": self.message,
            "data": [{
                "@type": ERROR_INFO_TYPE,
                "reason": spec.reason,
                "domain": ERROR_DOMAIN,
                "metadata": self.metadata,
            }],
        })
    }

    /// The 0.3 error object: `data` is free-form in 0.3; we send the metadata object when
    /// there is any and omit `data` otherwise.
    pub fn to_json_v03(&self) -> Value {
        let mut obj = json!({"code": self.code.code(), "message": self.message});
        if !self.metadata.is_empty() {
            obj["data"] = Value::Object(self.metadata.clone());
        }
        obj
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.code())
    }
}

impl std::error::Error for RpcError {}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    #[test]
    fn pins_every_code() {
        let pinned: Vec<(ErrorCode, i32, &str)> = vec![
            (ErrorCode::ParseError, -32700, "PARSE_ERROR"),
            (ErrorCode::InvalidRequest, -32600, "INVALID_REQUEST"),
            (ErrorCode::MethodNotFound, -32601, "METHOD_NOT_FOUND"),
            (ErrorCode::InvalidParams, -32602, "INVALID_PARAMS"),
            (ErrorCode::InternalError, -32603, "INTERNAL_ERROR"),
            (ErrorCode::TaskNotFound, -32001, "TASK_NOT_FOUND"),
            (ErrorCode::TaskNotCancelable, -32002, "TASK_NOT_CANCELABLE"),
            (
                ErrorCode::PushNotificationNotSupported,
                -32003,
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ),
            (
                ErrorCode::UnsupportedOperation,
                -32004,
                "UNSUPPORTED_OPERATION",
            ),
            (
                ErrorCode::ContentTypeNotSupported,
                -32005,
                "CONTENT_TYPE_NOT_SUPPORTED",
            ),
            (
                ErrorCode::InvalidAgentResponse,
                -32006,
                "INVALID_AGENT_RESPONSE",
            ),
            (
                ErrorCode::ExtendedAgentCardNotConfigured,
                -32007,
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ),
            (
                ErrorCode::ExtensionSupportRequired,
                -32008,
                "EXTENSION_SUPPORT_REQUIRED",
            ),
            (
                ErrorCode::VersionNotSupported,
                -32009,
                "VERSION_NOT_SUPPORTED",
            ),
            (ErrorCode::Unauthenticated, -31401, "UNAUTHENTICATED"),
            (ErrorCode::PermissionDenied, -31403, "PERMISSION_DENIED"),
        ];
        assert_eq!(pinned.len(), ErrorCode::iter().count());
        for (code, number, reason) in pinned {
            assert_eq!(code.code(), number);
            assert_eq!(code.spec().reason, reason);
            assert_eq!(ErrorCode::from_code(number), Some(code));
        }
        assert_eq!(ErrorCode::from_code(-32010), None);
        assert_eq!(ErrorCode::from_code(0), None);
    }

    #[test]
    fn renders_error_info_in_v1() {
        let err = RpcError::new(ErrorCode::TaskNotFound).with_meta("taskId", "nope");
        assert_eq!(
            err.to_json_v1(),
            json!({"code": -32001, "message": "Task not found", "data": [{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org",
                "metadata": {"taskId": "nope"}}]})
        );
        assert_eq!(
            err.to_json_v03(),
            json!({"code": -32001, "message": "Task not found", "data": {"taskId": "nope"}})
        );
    }
}
