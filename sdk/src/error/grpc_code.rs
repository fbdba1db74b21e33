//! gRPC's status codes (`google.rpc.Code`): the column of the error table the gRPC binding
//! answers with, and the `status` name the HTTP+JSON binding's error body carries.

/// A gRPC status code, with its number on the wire and its canonical name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum GrpcCode {
    /// Not an error.
    Ok = 0,
    /// The operation was cancelled, typically by the caller.
    Cancelled = 1,
    /// An error of no other code.
    Unknown = 2,
    /// The request is malformed, whatever the server's state.
    InvalidArgument = 3,
    /// The deadline passed before the operation finished.
    DeadlineExceeded = 4,
    /// The entity asked for does not exist (for this caller).
    NotFound = 5,
    /// The entity a create asked for exists already.
    AlreadyExists = 6,
    /// The caller may not do this.
    PermissionDenied = 7,
    /// A quota or capacity ran out; retrying later may succeed.
    ResourceExhausted = 8,
    /// The system is not in the state the operation needs.
    FailedPrecondition = 9,
    /// Aborted, typically by a concurrency conflict.
    Aborted = 10,
    /// Past the valid range.
    OutOfRange = 11,
    /// Not implemented or not supported by this server.
    Unimplemented = 12,
    /// An invariant broke: a bug.
    Internal = 13,
    /// The service cannot be reached now; retrying may succeed.
    Unavailable = 14,
    /// Data was lost or corrupted.
    DataLoss = 15,
    /// The request has no valid credentials.
    Unauthenticated = 16,
}

impl GrpcCode {
    /// The code's number on the wire (`grpc-status`).
    pub const fn number(self) -> i32 {
        self as i32
    }

    /// The canonical name, as `google.rpc.Status.status` in JSON spells it (`NOT_FOUND`).
    pub const fn name(self) -> &'static str {
        match self {
            GrpcCode::Ok => "OK",
            GrpcCode::Cancelled => "CANCELLED",
            GrpcCode::Unknown => "UNKNOWN",
            GrpcCode::InvalidArgument => "INVALID_ARGUMENT",
            GrpcCode::DeadlineExceeded => "DEADLINE_EXCEEDED",
            GrpcCode::NotFound => "NOT_FOUND",
            GrpcCode::AlreadyExists => "ALREADY_EXISTS",
            GrpcCode::PermissionDenied => "PERMISSION_DENIED",
            GrpcCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            GrpcCode::FailedPrecondition => "FAILED_PRECONDITION",
            GrpcCode::Aborted => "ABORTED",
            GrpcCode::OutOfRange => "OUT_OF_RANGE",
            GrpcCode::Unimplemented => "UNIMPLEMENTED",
            GrpcCode::Internal => "INTERNAL",
            GrpcCode::Unavailable => "UNAVAILABLE",
            GrpcCode::DataLoss => "DATA_LOSS",
            GrpcCode::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_grpcs() {
        // Pinned by the gRPC spec (statuscodes.md); never renumbered.
        let pinned = [
            (GrpcCode::Ok, 0, "OK"),
            (GrpcCode::InvalidArgument, 3, "INVALID_ARGUMENT"),
            (GrpcCode::NotFound, 5, "NOT_FOUND"),
            (GrpcCode::PermissionDenied, 7, "PERMISSION_DENIED"),
            (GrpcCode::FailedPrecondition, 9, "FAILED_PRECONDITION"),
            (GrpcCode::Unimplemented, 12, "UNIMPLEMENTED"),
            (GrpcCode::Internal, 13, "INTERNAL"),
            (GrpcCode::Unavailable, 14, "UNAVAILABLE"),
            (GrpcCode::Unauthenticated, 16, "UNAUTHENTICATED"),
        ];
        for (code, number, name) in pinned {
            assert_eq!((code.number(), code.name()), (number, name));
        }
    }
}
