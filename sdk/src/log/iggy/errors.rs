//! The one place where Iggy's errors become `agentlog` errors.

use std::fmt;

use iggy::prelude::IggyError;

use crate::error::{Error, ErrorKind};

/// Iggy's numeric code for "stream name already exists".
pub(super) const STREAM_EXISTS: u32 = 1012;
/// Iggy's numeric code for "topic name already exists".
pub(super) const TOPIC_EXISTS: u32 = 2013;
/// Iggy's numeric code for "consumer group name already exists".
pub(super) const GROUP_EXISTS: u32 = 5004;
/// Iggy's numeric codes for "consumer group not found" (by id, by name).
pub(super) const GROUP_NOT_FOUND: [u32; 2] = [5000, 5003];
/// Iggy's numeric code for "this client is not a member of the group" (after a server restart
/// the reconnected session is a new client, so its old membership is gone).
pub(super) const NOT_A_MEMBER: u32 = 5006;
/// Iggy's numeric code for "the partition belongs to another member" (a rebalance moved it).
pub(super) const PARTITION_NOT_OWNED: u32 = 5009;
/// Iggy's numeric code for "resource not found", returned when committing on a partition the
/// member does not own.
pub(super) const RESOURCE_NOT_FOUND: u32 = 20;

/// Map an Iggy error to an [`Error`], saying what we were doing.
///
/// - connection trouble (disconnected, cannot connect, session lost mid-reconnect) is
///   [`ErrorKind::Unavailable`], so callers retry;
/// - a client that was shut down (the log closed) is the closed-log error,
///   [`ErrorKind::Internal`], which is not retried;
/// - bad credentials, missing permissions and malformed addresses are [`ErrorKind::Config`]:
///   retrying will not help until someone fixes the URL;
/// - names, counts and payloads the server refuses are [`ErrorKind::InvalidParams`];
/// - everything else is [`ErrorKind::Internal`].
pub(super) fn map_err(err: IggyError, doing: impl fmt::Display) -> Error {
    let kind = match &err {
        IggyError::Disconnected
        | IggyError::CannotEstablishConnection
        | IggyError::NotConnected
        | IggyError::ConnectionClosed
        | IggyError::StaleClient
        | IggyError::TcpError
        | IggyError::EmptyResponse
        | IggyError::Unauthenticated
        | IggyError::TransientNotCommitted
        | IggyError::TransientNotAccepted
        | IggyError::CannotSendMessagesDueToClientDisconnection => ErrorKind::Unavailable,
        // Our own `close` (or a member's `leave`) shut the client down: it never reconnects,
        // so this is the closed-log error, which no retry may wait out.
        IggyError::ClientShutdown => return crate::log::closed_error().with_source(err),
        IggyError::InvalidCredentials
        | IggyError::InvalidUsername
        | IggyError::InvalidPassword
        | IggyError::UserInactive
        | IggyError::Unauthorized
        | IggyError::InvalidServerAddress
        | IggyError::InvalidClientAddress
        | IggyError::InvalidIpAddress(..)
        | IggyError::InvalidConnectionString
        | IggyError::InvalidConfiguration => ErrorKind::Config,
        IggyError::TaskTimeout => ErrorKind::Timeout,
        IggyError::InvalidStreamName
        | IggyError::InvalidTopicName
        | IggyError::InvalidIdentifier
        | IggyError::InvalidConsumerGroupName
        | IggyError::InvalidMessagesCount
        | IggyError::InvalidPartitionsCount
        | IggyError::TooManyPartitions
        | IggyError::TooBigMessagePayload
        | IggyError::TooBigUserHeaders
        | IggyError::EmptyMessagePayload
        | IggyError::InvalidMessagePayloadLength
        | IggyError::PartitionNotFound(..) => ErrorKind::InvalidParams,
        _ => ErrorKind::Internal,
    };
    Error::new(kind, format!("iggy: {doing}")).with_source(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_trouble_is_retryable() {
        for err in [
            IggyError::Disconnected,
            IggyError::CannotEstablishConnection,
            IggyError::NotConnected,
            IggyError::ConnectionClosed,
        ] {
            let mapped = map_err(err, "appending");
            assert_eq!(mapped.kind(), ErrorKind::Unavailable);
            assert!(mapped.is_retryable());
        }
    }

    #[test]
    fn a_client_shut_down_is_a_closed_log_and_not_retried() {
        let mapped = map_err(IggyError::ClientShutdown, "appending");
        assert_eq!(mapped.kind(), ErrorKind::Internal);
        assert!(!mapped.is_retryable());
    }

    #[test]
    fn auth_and_address_problems_are_config() {
        for err in [
            IggyError::InvalidCredentials,
            IggyError::Unauthorized,
            IggyError::InvalidServerAddress,
        ] {
            assert_eq!(map_err(err, "connecting").kind(), ErrorKind::Config);
        }
    }

    #[test]
    fn the_rest_is_internal_and_keeps_its_code() {
        let mapped = map_err(IggyError::from_code(STREAM_EXISTS), "creating");
        assert_eq!(mapped.kind(), ErrorKind::Internal);
        let source = std::error::Error::source(&mapped).and_then(|s| s.downcast_ref::<IggyError>());
        assert_eq!(source.map(IggyError::as_code), Some(STREAM_EXISTS));
        assert!(mapped.to_string().starts_with("iggy: creating"));
    }

    #[test]
    fn codes_match_the_client_crate() {
        assert_eq!(IggyError::from_code(TOPIC_EXISTS).as_code(), TOPIC_EXISTS);
        assert!(matches!(
            IggyError::from_code(NOT_A_MEMBER),
            IggyError::ConsumerGroupMemberNotFound(..)
        ));
        assert!(matches!(
            IggyError::from_code(PARTITION_NOT_OWNED),
            IggyError::ConsumerGroupPartitionNotOwned(..)
        ));
        assert!(matches!(
            IggyError::from_code(GROUP_EXISTS),
            IggyError::ConsumerGroupNameAlreadyExists(..)
        ));
    }
}
