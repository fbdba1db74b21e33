//! `lf.a2a.v1.A2AService` over a [`Bridge`]: each RPC is admitted (credentials and the
//! method's scope, `a2a-version`), its request converted to the wire types, handed to
//! [`Bridge::handle`] as a typed [`Call`], and the [`Answer`] converted back. No task logic
//! lives here.

use std::pin::Pin;

use agentlog_wire::jsonrpc::Operation;
use futures::{Stream, StreamExt};
use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::{Request, Response, Status};

use super::proto as pb;
use super::proto::a2a_service_server::A2aService;
use super::status::status;
#[cfg(feature = "http")]
use super::status::status_of;
use super::trailer::EXTENSIONS;
use crate::agent::Caller;
use crate::bridge::{Answer, Bridge, Call, RpcReply, RpcRequest, TaskStream, extensions};
use crate::edge::{EdgeAuth, Refusal};
use crate::error::{Error, ErrorKind, Result};

/// The metadata key of the request's A2A protocol version.
const VERSION: &str = "a2a-version";

/// A stream of events as the streaming RPCs answer.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

/// The A2A gRPC service over one bridge (what [`super::service`] serves).
#[derive(Debug, Clone)]
pub struct A2aGrpc {
    bridge: Bridge,
    auth: Option<EdgeAuth>,
    /// Calls about partitions held elsewhere go to their owners (`GrpcConfig::forward`).
    #[cfg(feature = "http")]
    forward: Option<std::sync::Arc<crate::http::forward::Forwarder>>,
}

impl A2aGrpc {
    pub(super) fn new(bridge: Bridge, auth: Option<EdgeAuth>) -> Self {
        Self {
            bridge,
            auth,
            #[cfg(feature = "http")]
            forward: None,
        }
    }

    #[cfg(feature = "http")]
    pub(super) fn forward(mut self, forward: Option<crate::http::Forwarding>) -> Self {
        self.forward =
            forward.map(|f| std::sync::Arc::new(crate::http::forward::Forwarder::new(f)));
        self
    }

    /// Admit `request`, convert its message with `convert`, and answer it through the
    /// bridge: the answer and the extensions to echo.
    async fn run<T>(
        &self,
        request: Request<T>,
        operation: Operation,
        convert: impl FnOnce(T) -> Result<Call>,
    ) -> Result<(Answer, String), Status> {
        let (metadata, _, message) = request.into_parts();
        let caller = self.admit(&metadata, operation).await?;
        // A2A §3.2.6: no version is 0.3, whose gRPC service (`a2a.v1`) is not this one.
        let version = match metadata.get(VERSION) {
            Some(value) => String::from_utf8_lossy(value.as_bytes()).into_owned(),
            None => return Err(status(&missing_version())),
        };
        let requested: Vec<String> = metadata
            .get_all(EXTENSIONS)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(extensions::parse_header)
            .map(str::to_owned)
            .collect();
        let activated = extensions::activated(self.bridge.agent_card(), &requested).join(", ");
        let call = convert(message).map_err(|e| status(&e))?;
        // Where it is served: a call about a partition held elsewhere is answered by its
        // owner (`http::forward`'s typed calls); `ListTasks` merges every owner's page.
        #[cfg(feature = "http")]
        let (partitions, fanned) = match &self.forward {
            None => (None, None),
            Some(forwarder) => {
                use crate::http::forward::CallRoute;
                let route = forwarder.route_call(&self.bridge, &call, &caller, metadata.as_ref());
                match route.await {
                    CallRoute::Here => (None, None),
                    CallRoute::Answered(answer) => return Ok((*answer, activated)),
                    CallRoute::Refused(refusal) => {
                        return Err(status_of(refusal.kind, &refusal.rpc));
                    }
                    CallRoute::FanOut { local, pages } => (Some(local), Some(pages)),
                }
            }
        };
        #[cfg(not(feature = "http"))]
        let partitions = None;
        let request = RpcRequest::call(call, caller)
            .a2a_version(Some(&version))
            .extensions(requested)
            .trace(trace_of(&metadata))
            .partitions(partitions);
        let answer = match self.bridge.handle(request).await {
            RpcReply::Answer(Ok(answer)) => answer,
            RpcReply::Answer(Err(error)) => return Err(status(&error)),
            RpcReply::Json(_) | RpcReply::Stream(_) => return Err(status(&unexpected())),
        };
        #[cfg(feature = "http")]
        let answer = match (answer, fanned) {
            (Answer::Tasks(local), Some(pages)) => match pages.merge_into(local) {
                Ok(merged) => Answer::Tasks(merged),
                Err(refusal) => return Err(status_of(refusal.kind, &refusal.rpc)),
            },
            (answer, _) => answer,
        };
        Ok((answer, activated))
    }

    /// Who calls: anonymous without edge auth; with it, the credentials' caller if they are
    /// good and grant the operation's scope.
    async fn admit(&self, metadata: &MetadataMap, operation: Operation) -> Result<Caller, Status> {
        let Some(auth) = &self.auth else {
            return Ok(Caller::anonymous());
        };
        let identity = auth
            .authenticator
            .authenticate(metadata.as_ref())
            .await
            .map_err(|refusal| status(&refused(&refusal)))?;
        let scope = auth.scopes.for_operation(operation);
        if !identity.has_scope(scope) {
            let error = Error::new(
                ErrorKind::PermissionDenied,
                format!(
                    "this method needs the scope {scope:?}, which the credentials do not grant"
                ),
            )
            .with_detail("error", "insufficient_scope")
            .with_detail("scope", scope);
            return Err(status(&error));
        }
        Ok(identity.caller)
    }
}

fn missing_version() -> Error {
    Error::new(
        ErrorKind::VersionNotSupported,
        "no a2a-version metadata, which means A2A 0.3 (spec §3.2.6); this service speaks 1.0",
    )
    .with_detail("version", "0.3")
}

/// A refusal as the error HTTP answers for it: the same kind, message and ErrorInfo metadata
/// (RFC 6750's `error` code where it has one).
fn refused(refusal: &Refusal) -> Error {
    let (kind, code) = match refusal {
        Refusal::Unavailable(_) => (ErrorKind::Unavailable, None),
        Refusal::Missing => (ErrorKind::Unauthenticated, None),
        Refusal::Malformed(_) => (ErrorKind::Unauthenticated, Some("invalid_request")),
        Refusal::Invalid(_) => (ErrorKind::Unauthenticated, Some("invalid_token")),
    };
    let error = Error::new(kind, refusal.description());
    match code {
        Some(code) => error.with_detail("error", code),
        None => error,
    }
}

fn unexpected() -> Error {
    Error::new(
        ErrorKind::Internal,
        "the bridge answered a typed call unexpectedly",
    )
}

/// `message` as the response, the activated extensions in its `a2a-extensions` header (which
/// [`super::trailer::Trailers`] moves to the trailers).
fn reply<T>(message: T, activated: &str) -> Response<T> {
    let mut response = Response::new(message);
    if !activated.is_empty()
        && let Ok(value) = MetadataValue::try_from(activated)
    {
        response.metadata_mut().insert(EXTENSIONS, value);
    }
    response
}

/// A task stream as the RPC's: each event converted, ending after the one marked `last`, or
/// with an error's status. A client that cancels drops it, which ends the subscription and
/// nothing else.
fn events(stream: TaskStream) -> EventStream {
    Box::pin(futures::stream::unfold(Some(stream), |state| async move {
        let mut stream = state?;
        match stream.next().await? {
            Ok(event) => {
                let more = (!event.last).then_some(stream);
                Some((Ok(event.response.into()), more))
            }
            Err(error) => Some((Err(status(&error)), None)),
        }
    }))
}

/// What a typed call answered, expected to be of one variant.
macro_rules! expect {
    ($answer:expr, $variant:ident) => {
        match $answer {
            Answer::$variant(value) => value,
            _ => return Err(status(&unexpected())),
        }
    };
}

#[tonic::async_trait]
impl A2aService for A2aGrpc {
    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        let (answer, activated) = self
            .run(request, Operation::SendMessage, |r| {
                Ok(Call::SendMessage(r.try_into()?))
            })
            .await?;
        Ok(reply(expect!(answer, Send).into(), &activated))
    }

    type SendStreamingMessageStream = EventStream;

    async fn send_streaming_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let (answer, activated) = self
            .run(request, Operation::SendStreamingMessage, |r| {
                Ok(Call::SendStreamingMessage(r.try_into()?))
            })
            .await?;
        Ok(reply(events(expect!(answer, Stream)), &activated))
    }

    async fn get_task(
        &self,
        request: Request<pb::GetTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        let (answer, activated) = self
            .run(request, Operation::GetTask, |r| Ok(Call::GetTask(r.into())))
            .await?;
        Ok(reply(expect!(answer, Task).into(), &activated))
    }

    async fn list_tasks(
        &self,
        request: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        let (answer, activated) = self
            .run(request, Operation::ListTasks, |r| {
                Ok(Call::ListTasks(r.try_into()?))
            })
            .await?;
        Ok(reply(expect!(answer, Tasks).into(), &activated))
    }

    async fn cancel_task(
        &self,
        request: Request<pb::CancelTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        let (answer, activated) = self
            .run(request, Operation::CancelTask, |r| {
                Ok(Call::CancelTask(r.try_into()?))
            })
            .await?;
        Ok(reply(expect!(answer, Task).into(), &activated))
    }

    type SubscribeToTaskStream = EventStream;

    async fn subscribe_to_task(
        &self,
        request: Request<pb::SubscribeToTaskRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let (answer, activated) = self
            .run(request, Operation::SubscribeToTask, |r| {
                Ok(Call::SubscribeToTask(r.into()))
            })
            .await?;
        Ok(reply(events(expect!(answer, Stream)), &activated))
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        let (answer, activated) = self
            .run(request, Operation::CreateTaskPushNotificationConfig, |r| {
                Ok(Call::CreateTaskPushNotificationConfig(r.into()))
            })
            .await?;
        Ok(reply(expect!(answer, PushConfig).into(), &activated))
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        let (answer, activated) = self
            .run(request, Operation::GetTaskPushNotificationConfig, |r| {
                Ok(Call::GetTaskPushNotificationConfig(r.into()))
            })
            .await?;
        Ok(reply(expect!(answer, PushConfig).into(), &activated))
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        let (answer, activated) = self
            .run(request, Operation::ListTaskPushNotificationConfigs, |r| {
                Ok(Call::ListTaskPushNotificationConfigs(r.into()))
            })
            .await?;
        Ok(reply(expect!(answer, PushConfigs).into(), &activated))
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<Response<pb::AgentCard>, Status> {
        let (answer, activated) = self
            .run(request, Operation::GetExtendedAgentCard, |r| Ok(r.into()))
            .await?;
        Ok(reply((*expect!(answer, Card)).into(), &activated))
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        let (answer, activated) = self
            .run(request, Operation::DeleteTaskPushNotificationConfig, |r| {
                Ok(Call::DeleteTaskPushNotificationConfig(r.into()))
            })
            .await?;
        match answer {
            Answer::Deleted => Ok(reply((), &activated)),
            _ => Err(status(&unexpected())),
        }
    }
}

/// The W3C trace context of a call's metadata (`traceparent`, `tracestate`), as over HTTP.
fn trace_of(metadata: &MetadataMap) -> Option<agentlog_wire::trace::TraceContext> {
    use agentlog_wire::trace::{TRACEPARENT, TRACESTATE, TraceContext};
    TraceContext::from_fields(
        metadata
            .get_all(TRACEPARENT)
            .iter()
            .map(|v| v.to_str().ok()),
        metadata
            .get_all(TRACESTATE)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_trace_context_is_read_from_the_metadata() {
        let mut metadata = MetadataMap::new();
        assert_eq!(trace_of(&metadata), None);
        metadata.insert("traceparent", PARENT.parse().unwrap());
        metadata.append("tracestate", "a=1".parse().unwrap());
        metadata.append("tracestate", "b=2".parse().unwrap());
        let context = trace_of(&metadata).unwrap();
        assert_eq!(context.traceparent(), PARENT);
        assert_eq!(context.tracestate(), "a=1,b=2");
        // Two parents: none (W3C), as for a malformed one.
        metadata.append("traceparent", PARENT.parse().unwrap());
        assert_eq!(trace_of(&metadata), None);
        let mut bad = MetadataMap::new();
        bad.insert("traceparent", "00-nope".parse().unwrap());
        assert_eq!(trace_of(&bad), None);
    }
}
