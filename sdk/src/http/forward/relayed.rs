//! [`Relayed`]: an error as a peer answered a forwarded request (or as this bridge refused
//! it), kept with its kind and metadata, for the typed calls and the `ListTasks` fan-out.

use agentlog_wire::{ErrorCode, RpcError};
use serde_json::Value;

use crate::error::{Error, ErrorKind};

/// An error as a peer answered it (or as this bridge refused): its kind by the one error
/// table and the JSON-RPC error itself, message and metadata unchanged.
#[derive(Debug)]
pub(crate) struct Relayed {
    /// The kind (the gRPC code comes from it).
    pub(crate) kind: ErrorKind,
    /// The error as JSON-RPC carries it.
    pub(crate) rpc: RpcError,
}

impl Relayed {
    pub(super) fn of(error: &Error) -> Self {
        Self {
            kind: error.kind(),
            rpc: error.to_rpc(),
        }
    }

    /// The error in a JSON-RPC error body (or, for one that cannot be read, an internal one).
    pub(super) fn of_body(body: &[u8]) -> Self {
        #[derive(serde::Deserialize)]
        struct Envelope {
            error: Option<WireError>,
        }
        #[derive(serde::Deserialize)]
        struct WireError {
            code: i32,
            message: String,
            #[serde(default)]
            data: Value,
        }
        let Some(error) = serde_json::from_slice::<Envelope>(body)
            .ok()
            .and_then(|envelope| envelope.error)
        else {
            return Self::of(&Error::new(
                ErrorKind::Internal,
                "a peer's answer cannot be read",
            ));
        };
        let code = ErrorCode::from_code(error.code).unwrap_or(ErrorCode::InternalError);
        let metadata = crate::http::errors::error_metadata(&error.data);
        let kind = ErrorKind::from_rpc(code, metadata.get("kind").and_then(Value::as_str));
        Self {
            kind,
            rpc: RpcError {
                code,
                message: error.message,
                metadata,
            },
        }
    }

    /// As an [`Error`] (a stream's items are): the kind and message, and the metadata the
    /// bridge's errors carry (named in [`DETAILS`]).
    pub(super) fn into_error(self) -> Error {
        let mut error = Error::new(self.kind, self.rpc.message);
        for key in DETAILS {
            if let Some(Value::String(value)) = self.rpc.metadata.get(*key) {
                error = error.with_detail(key, value.clone());
            }
        }
        error
    }
}

/// The metadata keys of the bridge's errors, kept by [`Relayed::into_error`].
const DETAILS: &[&str] = &[
    "argument",
    "configId",
    "error",
    "extensions",
    "field",
    "header",
    "mediaType",
    "method",
    "name",
    "path",
    "scope",
    "skill",
    "taskId",
    "tenant",
    "uri",
    "version",
];
