//! An [`Error`] as the gRPC binding reports it (A2A §10.6): the status code of the error
//! table's gRPC column ([`KindInfo::grpc`](crate::error::KindInfo)), the message a JSON-RPC
//! client would read, and in `grpc-status-details-bin` a `google.rpc.Status` whose details
//! hold an `ErrorInfo{reason, domain: "a2a-protocol.org", metadata}` (the A2A reason and the
//! error's facts) and, for a request naming the field it got wrong, a `BadRequest` field
//! violation.

use std::collections::HashMap;

use serde_json::Value;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use agentlog_wire::RpcError;

use crate::error::{Error, ErrorKind};

/// The `ErrorInfo.domain` of every A2A error.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// `error` as a gRPC status.
pub fn status(error: &Error) -> Status {
    status_of(error.kind(), &error.to_rpc())
}

/// The status of an error of `kind` as JSON-RPC carries it (`rpc`: a peer's, relayed).
pub(crate) fn status_of(kind: ErrorKind, rpc: &RpcError) -> Status {
    let metadata: HashMap<String, String> = rpc
        .metadata
        .iter()
        .map(|(key, value)| {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (key.clone(), text)
        })
        .collect();
    let field = metadata.get("field").cloned();
    let mut details = ErrorDetails::with_error_info(rpc.code.spec().reason, ERROR_DOMAIN, metadata);
    if let Some(field) = field {
        details.add_bad_request_violation(field, rpc.message.clone());
    }
    let code = Code::from_i32(kind.info().grpc.number());
    Status::with_error_details(code, rpc.message.clone(), details)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_tables_code_and_an_error_info() {
        for kind in ErrorKind::ALL {
            let error = Error::new(kind, "m").with_detail("taskId", "t-1");
            let status = status(&error);
            assert_eq!(status.code() as i32, kind.info().grpc.number(), "{kind}");
            let info = status.get_details_error_info().unwrap();
            assert_eq!(info.domain, ERROR_DOMAIN);
            assert_eq!(info.reason, kind.info().rpc.spec().reason, "{kind}");
            assert_eq!(info.metadata["taskId"], "t-1");
        }
        let not_found = status(&Error::task_not_found("x"));
        assert_eq!(not_found.code(), Code::NotFound);
        assert_eq!(
            not_found.get_details_error_info().unwrap().reason,
            "TASK_NOT_FOUND"
        );
        let bad = status(
            &Error::new(ErrorKind::InvalidParams, "no").with_detail("field", "message.role"),
        );
        let violations = bad.get_details_bad_request().unwrap().field_violations;
        assert_eq!(violations[0].field, "message.role");
    }
}
