//! The one error type of the `agentlog` crate.
//!
//! Callers branch on [`Error::kind`]; the message is for humans. Every kind maps, through
//! [`ErrorKind::info`], to one JSON-RPC code, one HTTP status and one retryability flag: the
//! router, the bridge and both language bindings read that same table.

use std::fmt;

use agentlog_wire::ErrorCode;

mod grpc_code;

pub use grpc_code::GrpcCode;

/// What went wrong, coarse enough to act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request body is not JSON.
    Parse,
    /// The request is JSON but not a valid JSON-RPC request.
    InvalidRequest,
    /// The method is not one this server knows.
    MethodNotFound,
    /// A parameter is missing, of the wrong type or out of range.
    InvalidParams,
    /// No task with that id is visible to the caller.
    TaskNotFound,
    /// The task is terminal (or already being canceled) and cannot be canceled.
    TaskNotCancelable,
    /// Push notifications are not offered by this agent.
    PushNotificationNotSupported,
    /// The operation is not supported in the task's current state or by this agent.
    UnsupportedOperation,
    /// The request's content type is not accepted.
    ContentTypeNotSupported,
    /// The requested A2A protocol version is not served.
    VersionNotSupported,
    /// The agent declares an extended card but none is configured.
    ExtendedAgentCardNotConfigured,
    /// The agent's card marks an extension required and the request did not activate it.
    ExtensionSupportRequired,
    /// No credentials, or bad ones: HTTP 401 with a `WWW-Authenticate` challenge.
    Unauthenticated,
    /// Valid credentials without the scope the method needs: HTTP 403.
    PermissionDenied,
    /// The call would visit a bridge already on its path, or go past the most hops allowed.
    LoopDetected,
    /// An MCP header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) is missing or does
    /// not match the request body.
    HeaderMismatch,
    /// The operation did not finish within its deadline; retrying may succeed.
    Timeout,
    /// The log backend cannot be reached right now; retrying may succeed.
    Unavailable,
    /// The server holds as many waiting calls as it takes (blocking sends, streams); retrying
    /// later may succeed.
    Overloaded,
    /// Stored bytes failed their checksum or could not be decoded.
    Corrupt,
    /// The configuration (a log URL, a data directory in use, ...) is wrong.
    Config,
    /// A bug or an unexpected condition.
    Internal,
    /// A tool's worker failed the call (or cancelled it, or answered with something that is
    /// not a tool result): the message says what the worker said.
    ToolFailed,
}

/// How an [`ErrorKind`] is reported on each surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindInfo {
    /// Stable snake_case name, used as `code` in the bindings.
    pub name: &'static str,
    /// The protocol error this kind is reported as.
    pub rpc: ErrorCode,
    /// HTTP status when the kind is reported outside a JSON-RPC body (REST, 413, ...).
    pub http_status: u16,
    /// Whether the same call may succeed if retried unchanged.
    pub retryable: bool,
    /// The gRPC status the kind is reported with (and the `status` name of the HTTP+JSON
    /// binding's error body).
    pub grpc: GrpcCode,
    /// The JSON-RPC code the MCP bridge reports the kind with: JSON-RPC's own codes and the
    /// MCP-defined -32020 to -32022, never A2A's (the MCP spec reserves -32000..-32099).
    pub mcp: i32,
    /// The HTTP status of an MCP error reply in the 2026-07-28 era (its transport's table:
    /// -32700, -32600, -32602 and -32020..-32022 are 400, -32601 is 404, the rest 200).
    pub mcp_status: u16,
    /// The HTTP status of an MCP error reply in the `initialize` era: 200 (its clients read
    /// JSON-RPC errors there and raise a transport error otherwise), except for a body that
    /// is not a request at all (400).
    pub mcp_legacy_status: u16,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 23] = [
        ErrorKind::Parse,
        ErrorKind::InvalidRequest,
        ErrorKind::MethodNotFound,
        ErrorKind::InvalidParams,
        ErrorKind::TaskNotFound,
        ErrorKind::TaskNotCancelable,
        ErrorKind::PushNotificationNotSupported,
        ErrorKind::UnsupportedOperation,
        ErrorKind::ContentTypeNotSupported,
        ErrorKind::VersionNotSupported,
        ErrorKind::ExtendedAgentCardNotConfigured,
        ErrorKind::ExtensionSupportRequired,
        ErrorKind::Unauthenticated,
        ErrorKind::PermissionDenied,
        ErrorKind::LoopDetected,
        ErrorKind::HeaderMismatch,
        ErrorKind::Timeout,
        ErrorKind::Unavailable,
        ErrorKind::Overloaded,
        ErrorKind::Corrupt,
        ErrorKind::Config,
        ErrorKind::Internal,
        ErrorKind::ToolFailed,
    ];

    /// The one table: name, protocol code, HTTP status, retryability.
    pub const fn info(self) -> KindInfo {
        use ErrorCode as C;
        let (name, rpc, http_status, retryable) = match self {
            ErrorKind::Parse => ("parse", C::ParseError, 400, false),
            ErrorKind::InvalidRequest => ("invalid_request", C::InvalidRequest, 400, false),
            ErrorKind::MethodNotFound => ("method_not_found", C::MethodNotFound, 404, false),
            ErrorKind::InvalidParams => ("invalid_params", C::InvalidParams, 400, false),
            ErrorKind::TaskNotFound => ("task_not_found", C::TaskNotFound, 404, false),
            ErrorKind::TaskNotCancelable => {
                ("task_not_cancelable", C::TaskNotCancelable, 400, false)
            }
            ErrorKind::PushNotificationNotSupported => (
                "push_notification_not_supported",
                C::PushNotificationNotSupported,
                400,
                false,
            ),
            ErrorKind::UnsupportedOperation => {
                ("unsupported_operation", C::UnsupportedOperation, 400, false)
            }
            ErrorKind::ContentTypeNotSupported => (
                "content_type_not_supported",
                C::ContentTypeNotSupported,
                415,
                false,
            ),
            ErrorKind::VersionNotSupported => {
                ("version_not_supported", C::VersionNotSupported, 400, false)
            }
            ErrorKind::ExtendedAgentCardNotConfigured => (
                "extended_agent_card_not_configured",
                C::ExtendedAgentCardNotConfigured,
                400,
                false,
            ),
            ErrorKind::ExtensionSupportRequired => (
                "extension_support_required",
                C::ExtensionSupportRequired,
                400,
                false,
            ),
            ErrorKind::Unauthenticated => ("unauthenticated", C::Unauthenticated, 401, false),
            ErrorKind::PermissionDenied => ("permission_denied", C::PermissionDenied, 403, false),
            // The request's own path is at fault; 508 is HTTP's "Loop Detected".
            ErrorKind::LoopDetected => ("loop_detected", C::InvalidRequest, 508, false),
            ErrorKind::HeaderMismatch => ("header_mismatch", C::InvalidRequest, 400, false),
            ErrorKind::Timeout => ("timeout", C::InternalError, 504, true),
            ErrorKind::Unavailable => ("unavailable", C::InternalError, 503, true),
            ErrorKind::Overloaded => ("overloaded", C::InternalError, 503, true),
            ErrorKind::Corrupt => ("corrupt", C::InternalError, 500, false),
            ErrorKind::Config => ("config", C::InternalError, 500, false),
            ErrorKind::Internal => ("internal", C::InternalError, 500, false),
            // The worker behind the tool failed: HTTP's "Bad Gateway".
            ErrorKind::ToolFailed => ("tool_failed", C::InternalError, 502, false),
        };
        let mcp = self.mcp_code();
        KindInfo {
            name,
            rpc,
            http_status,
            retryable,
            grpc: self.grpc_code(),
            mcp,
            mcp_status: match mcp {
                -32700 | -32600 | -32602 | -32022 | -32021 | -32020 => 400,
                -32601 => 404,
                _ => 200,
            },
            mcp_legacy_status: match mcp {
                -32700 | -32600 => 400,
                _ => 200,
            },
        }
    }

    /// The gRPC column of the table ([`KindInfo::grpc`]): A2A's errors as spec 1.0.1's
    /// table has them, the rest as gRPC's own codes mean them.
    const fn grpc_code(self) -> GrpcCode {
        match self {
            ErrorKind::Parse
            | ErrorKind::InvalidRequest
            | ErrorKind::InvalidParams
            | ErrorKind::ContentTypeNotSupported
            | ErrorKind::HeaderMismatch => GrpcCode::InvalidArgument,
            ErrorKind::MethodNotFound => GrpcCode::Unimplemented,
            ErrorKind::TaskNotFound => GrpcCode::NotFound,
            ErrorKind::TaskNotCancelable
            | ErrorKind::PushNotificationNotSupported
            | ErrorKind::UnsupportedOperation
            | ErrorKind::VersionNotSupported
            | ErrorKind::ExtendedAgentCardNotConfigured
            | ErrorKind::ExtensionSupportRequired
            | ErrorKind::LoopDetected => GrpcCode::FailedPrecondition,
            ErrorKind::Unauthenticated => GrpcCode::Unauthenticated,
            ErrorKind::PermissionDenied => GrpcCode::PermissionDenied,
            ErrorKind::Timeout => GrpcCode::DeadlineExceeded,
            ErrorKind::Unavailable => GrpcCode::Unavailable,
            ErrorKind::Overloaded => GrpcCode::ResourceExhausted,
            ErrorKind::Corrupt => GrpcCode::DataLoss,
            ErrorKind::Config | ErrorKind::Internal | ErrorKind::ToolFailed => GrpcCode::Internal,
        }
    }

    /// The MCP column of the table ([`KindInfo::mcp`]).
    const fn mcp_code(self) -> i32 {
        use agentlog_wire::mcp::codes;
        match self {
            ErrorKind::Parse => -32700,
            ErrorKind::InvalidRequest
            | ErrorKind::ContentTypeNotSupported
            | ErrorKind::Unauthenticated
            | ErrorKind::PermissionDenied
            | ErrorKind::LoopDetected => -32600,
            ErrorKind::MethodNotFound
            | ErrorKind::PushNotificationNotSupported
            | ErrorKind::ExtendedAgentCardNotConfigured => -32601,
            // MCP answers an unknown or expired task id, and a task method's bad state, -32602.
            ErrorKind::InvalidParams
            | ErrorKind::TaskNotFound
            | ErrorKind::TaskNotCancelable
            | ErrorKind::UnsupportedOperation => -32602,
            ErrorKind::HeaderMismatch => codes::HEADER_MISMATCH,
            // A required extension not declared: MCP's missing client capability.
            ErrorKind::ExtensionSupportRequired => codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
            ErrorKind::VersionNotSupported => codes::UNSUPPORTED_PROTOCOL_VERSION,
            ErrorKind::Timeout
            | ErrorKind::Unavailable
            | ErrorKind::Overloaded
            | ErrorKind::Corrupt
            | ErrorKind::Config
            | ErrorKind::Internal
            | ErrorKind::ToolFailed => -32603,
        }
    }

    /// The kind a JSON-RPC error `code` reports, `kind` its `ErrorInfo.metadata.kind` when
    /// it has one (several kinds share a code; [`Error::to_rpc`] names the kind then): what a
    /// binding that relays the bridge's JSON-RPC answers reports it as.
    pub fn from_rpc(code: ErrorCode, kind: Option<&str>) -> ErrorKind {
        let named = kind.and_then(|name| ErrorKind::ALL.into_iter().find(|k| k.as_str() == name));
        named
            .filter(|k| k.info().rpc == code)
            .or_else(|| ErrorKind::ALL.into_iter().find(|k| k.info().rpc == code))
            .unwrap_or(ErrorKind::Internal)
    }

    /// Stable snake_case name of the kind.
    pub const fn as_str(self) -> &'static str {
        self.info().name
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An `agentlog` error: a kind to branch on, a message for humans, an optional cause.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    details: Vec<(&'static str, String)>,
    /// Structured `data` for the MCP error object (`{supported, requested}`, ...).
    data: Option<serde_json::Value>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of `kind` with a human-readable message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            details: Vec::new(),
            data: None,
            source: None,
        }
    }

    /// -32001: no task `task_id` (or not one the caller may see: the same answer).
    pub fn task_not_found(task_id: &str) -> Self {
        Error::new(
            ErrorKind::TaskNotFound,
            format!("Task not found: {task_id}"),
        )
        .with_detail("taskId", task_id)
    }

    /// Attach a fact about the error (`taskId`, `field`, ...), reported in the JSON-RPC
    /// error's `ErrorInfo.metadata`.
    pub fn with_detail(mut self, key: &'static str, value: impl Into<String>) -> Self {
        self.details.push((key, value.into()));
        self
    }

    /// Attach the structured `data` of the MCP error object ([`to_mcp`](Self::to_mcp)).
    pub fn with_data(mut self, data: serde_json::Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Add one field to the MCP error object's `data` (an object; a `data` attached before
    /// that is not an object is replaced).
    pub fn with_data_field(mut self, key: &str, value: serde_json::Value) -> Self {
        let mut data = match self.data.take() {
            Some(serde_json::Value::Object(data)) => data,
            _ => serde_json::Map::new(),
        };
        data.insert(key.to_owned(), value);
        self.data = Some(serde_json::Value::Object(data));
        self
    }

    /// The JSON-RPC error object the MCP bridge answers with: `{code, message, data?}`, the
    /// code from [`KindInfo::mcp`]; the server's own trouble gets the generic message and an
    /// `errorId`, as in [`to_rpc`](Self::to_rpc). `data` is the details as an object with
    /// the fields [`with_data`](Self::with_data) attached (a `data` that is not an object
    /// stands alone), or absent when there are neither.
    pub fn to_mcp(&self) -> serde_json::Value {
        let rpc = self.to_rpc();
        let mut error = serde_json::Map::new();
        error.insert("code".into(), self.kind.info().mcp.into());
        error.insert("message".into(), rpc.message.into());
        let details = rpc.metadata.into_iter();
        let data = match &self.data {
            Some(serde_json::Value::Object(attached)) => {
                let mut data: serde_json::Map<String, serde_json::Value> = details.collect();
                data.extend(attached.clone());
                Some(serde_json::Value::Object(data))
            }
            Some(data) => Some(data.clone()),
            None if details.len() == 0 => None,
            None => Some(serde_json::Value::Object(details.collect())),
        };
        if let Some(data) = data {
            error.insert("data".into(), data);
        }
        serde_json::Value::Object(error)
    }

    /// The facts attached with [`with_detail`](Self::with_detail).
    pub fn details(&self) -> &[(&'static str, String)] {
        &self.details
    }

    /// The JSON-RPC error this error is reported as: the kind's code and the details as
    /// `ErrorInfo.metadata`. A request's own fault (bad params, no such task, ...) keeps its
    /// message, without the cause chain. The server's own trouble (unavailable, corrupt,
    /// misconfigured, a bug) may name files, offsets and causes: the client gets the kind's
    /// generic message and an `errorId`, and the whole error goes to the server's log under
    /// that id.
    pub fn to_rpc(&self) -> agentlog_wire::RpcError {
        let info = self.kind.info();
        let server_side = matches!(
            self.kind,
            ErrorKind::Unavailable | ErrorKind::Corrupt | ErrorKind::Config | ErrorKind::Internal
        );
        let error_id = server_side.then(|| uuid::Uuid::new_v4().to_string());
        let message = match &error_id {
            Some(id) => {
                tracing::warn!(error_id = %id, kind = info.name, error = %self.report(), "a request failed on the server's side");
                format!(
                    "{} ({}); the server's log has the details under errorId {id}",
                    info.rpc.spec().message,
                    info.name
                )
            }
            None => self.message.clone(),
        };
        let mut rpc = agentlog_wire::RpcError::with_message(info.rpc, message);
        for (key, value) in &self.details {
            rpc = rpc.with_meta(key, value.clone());
        }
        if let Some(id) = error_id {
            rpc = rpc.with_meta("errorId", id);
        }
        // Several kinds share -32603 (and -32600); say which, so that whether a retry may
        // help, and the status another binding gives it, survive the code.
        if info.rpc == ErrorCode::InternalError || ErrorKind::from_rpc(info.rpc, None) != self.kind
        {
            rpc = rpc.with_meta("kind", info.name);
        }
        rpc
    }

    /// The error with its causes, for a log line or a program's last words ([`Report`]).
    pub fn report(&self) -> Report<'_> {
        Report(self)
    }

    /// Attach the underlying cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human-readable message, without the cause.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the same call may succeed if retried unchanged.
    pub fn is_retryable(&self) -> bool {
        self.kind.info().retryable
    }
}

/// The message alone: the cause is [`source`](std::error::Error::source)'s, so that a
/// reporter walking the chain prints each once. [`Error::report`] prints the whole chain.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// An error and its causes on one line, `message: cause: cause` ([`Error::report`]): what
/// logs and a program's last words print.
pub struct Report<'a>(&'a Error);

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)?;
        let mut cause = std::error::Error::source(self.0);
        while let Some(error) = cause {
            write!(f, ": {error}")?;
            cause = error.source();
        }
        Ok(())
    }
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        let kind = match err.kind() {
            std::io::ErrorKind::TimedOut => ErrorKind::Timeout,
            std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::NotConnected
            | std::io::ErrorKind::BrokenPipe => ErrorKind::Unavailable,
            _ => ErrorKind::Internal,
        };
        Error::new(kind, "I/O error").with_source(err)
    }
}

#[cfg(test)]
mod tests;
