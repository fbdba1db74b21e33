//! Typed calls (the gRPC binding's) about partitions held elsewhere. Members reach one another
//! over their HTTP URLs whatever binding the caller used, so no binding needs its peers' own
//! addresses: a call about a partition this bridge does not hold goes to the partition's owner
//! (else its successor) as the JSON-RPC request it stands for (its params encoded from the
//! wire types), with the caller's metadata as headers (its credentials, which the owner checks
//! again; `a2a-version`, `a2a-extensions` and the trace context have the same names in gRPC
//! metadata and A2A's HTTP headers) and the peers' mark, so the owner serves it and never
//! forwards it again. The owner's answer comes back as the call's [`Answer`]: a result
//! decoded into the wire types, an error relayed with its kind and metadata ([`Relayed`]), a
//! stream event by event as the SSE frames arrive (it ends when the owner's does).
//! `ListTasks` asks every owner for its page as over JSON-RPC; the binding answers its own
//! partitions and merges ([`CallRoute::FanOut`]).

use std::collections::VecDeque;

use agentlog_wire::a2a::{
    ListTaskPushNotificationConfigsResponse, SendMessageResponse, StreamResponse, Task,
    TaskPushNotificationConfig,
};
use agentlog_wire::jsonrpc::{Method as RpcMethod, Operation};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, Method};
use bytes::Bytes;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::list::Pages;
use super::relayed::Relayed;
use super::{FanOut, Forwarder, Holder, To, forwarded_headers};
use crate::agent::Caller;
use crate::bridge::{Answer, Bridge, Call, StreamEvent, TaskStream};
use crate::error::{Error, ErrorKind};

/// Where a typed call is served.
pub(crate) enum CallRoute {
    /// Here: the view holds the call's partition, or stands in for its holders, or the call
    /// is about no partition.
    Here,
    /// A peer answered: its answer.
    Answered(Box<Answer>),
    /// A peer's refusal, or nobody answering (a retryable unavailable).
    Refused(Relayed),
    /// A `ListTasks`: answer it over `local` here, then merge the peers' `pages`
    /// ([`Pages::merge_into`]).
    FanOut {
        /// The partitions this bridge lists (its own, and those it stands in for).
        local: Vec<u32>,
        /// The other owners' pages.
        pages: Pages,
    },
}

impl Forwarder {
    /// Where `call`, of `caller`, with the call's `metadata` (gRPC's, as HTTP headers), is
    /// served for `bridge`.
    pub(crate) async fn route_call(
        &self,
        bridge: &Bridge,
        call: &Call,
        caller: &Caller,
        metadata: &HeaderMap,
    ) -> CallRoute {
        let operation = call.operation();
        let verb = method_of(operation).as_str();
        if operation == Operation::ListTasks {
            let plan = FanOut::plan(&self.config.owners.current());
            let body = match rpc_body(call) {
                Ok(body) => body,
                Err(error) => return CallRoute::Refused(Relayed::of(&error)),
            };
            let headers = call_headers(metadata);
            return match plan
                .fetch(self, &headers, &self.config.rpc_path, &body)
                .await
            {
                Ok(pages) => {
                    let mut local = plan.local().to_vec();
                    local.extend(&pages.stand_in);
                    CallRoute::FanOut { local, pages }
                }
                Err(refusal) => {
                    let body = axum::body::to_bytes(refusal.into_body(), 1 << 20).await;
                    CallRoute::Refused(Relayed::of_body(&body.unwrap_or_default()))
                }
            };
        }
        let Some(task) = call.task_id(caller) else {
            return CallRoute::Here;
        };
        let view = bridge.view();
        let p = view.partition_of(&task);
        if view.holds(p) {
            return CallRoute::Here;
        }
        let body = match rpc_body(call) {
            Ok(body) => body,
            Err(error) => return CallRoute::Refused(Relayed::of(&error)),
        };
        let head_within = match operation {
            Operation::SendMessage => self.config.blocking_timeout,
            _ => self.config.timeout,
        };
        let to = To {
            method: &Method::POST,
            path: &self.config.rpc_path,
            partitions: None,
        };
        let headers = call_headers(metadata);
        match self
            .to_holder(view, p, verb, &to, &headers, &body, head_within)
            .await
        {
            Holder::Here => CallRoute::Here,
            Holder::Nobody(error) => CallRoute::Refused(Relayed::of(&error)),
            Holder::Answered(answer) => answer_of(operation, answer).await,
        }
    }
}

/// The JSON-RPC method of an operation (1.0's names).
fn method_of(operation: Operation) -> RpcMethod {
    match operation {
        Operation::SendMessage => RpcMethod::SendMessage,
        Operation::SendStreamingMessage => RpcMethod::SendStreamingMessage,
        Operation::GetTask => RpcMethod::GetTask,
        Operation::ListTasks => RpcMethod::ListTasks,
        Operation::CancelTask => RpcMethod::CancelTask,
        Operation::SubscribeToTask => RpcMethod::SubscribeToTask,
        Operation::CreateTaskPushNotificationConfig => RpcMethod::CreateTaskPushNotificationConfig,
        Operation::GetTaskPushNotificationConfig => RpcMethod::GetTaskPushNotificationConfig,
        Operation::ListTaskPushNotificationConfigs => RpcMethod::ListTaskPushNotificationConfigs,
        Operation::DeleteTaskPushNotificationConfig => RpcMethod::DeleteTaskPushNotificationConfig,
        Operation::GetExtendedAgentCard => RpcMethod::GetExtendedAgentCard,
    }
}

/// The JSON-RPC request `call` stands for.
fn rpc_body(call: &Call) -> Result<Vec<u8>, Error> {
    let params = match call {
        Call::SendMessage(r) | Call::SendStreamingMessage(r) => serde_json::to_value(r),
        Call::GetTask(r) => serde_json::to_value(r),
        Call::ListTasks(r) => serde_json::to_value(r),
        Call::CancelTask(r) => serde_json::to_value(r),
        Call::SubscribeToTask(r) => serde_json::to_value(r),
        Call::CreateTaskPushNotificationConfig(r) => serde_json::to_value(r),
        Call::GetTaskPushNotificationConfig(r) => serde_json::to_value(r),
        Call::ListTaskPushNotificationConfigs(r) => serde_json::to_value(r),
        Call::DeleteTaskPushNotificationConfig(r) => serde_json::to_value(r),
        Call::GetExtendedAgentCard { tenant } => Ok(serde_json::json!({ "tenant": tenant })),
    }
    .map_err(|e| Error::new(ErrorKind::Internal, "a call cannot be encoded").with_source(e))?;
    let method = method_of(call.operation()).as_str();
    serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": method, "params": params,
    }))
    .map_err(|e| Error::new(ErrorKind::Internal, "a call cannot be encoded").with_source(e))
}

/// The caller's metadata as a JSON-RPC request's headers: gRPC's own (`content-type`,
/// `te`, `grpc-*`) left out, a JSON content type in.
fn call_headers(metadata: &HeaderMap) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(metadata.len() + 1);
    for (name, value) in forwarded_headers(metadata).iter() {
        let grpcs = name == CONTENT_TYPE || name.as_str().starts_with("grpc-");
        if !grpcs {
            headers.append(name.clone(), value.clone());
        }
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers
}

/// A peer's answer to the call of `operation`, as the call's.
async fn answer_of(operation: Operation, answer: reqwest::Response) -> CallRoute {
    let streamed = answer
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if streamed && operation.is_streaming() {
        return CallRoute::Answered(Box::new(Answer::Stream(events(answer))));
    }
    let body = match answer.bytes().await {
        Ok(body) => body,
        Err(error) => {
            return CallRoute::Refused(Relayed::of(&Error::new(
                ErrorKind::Unavailable,
                format!("a peer's answer was cut off: {error}"),
            )));
        }
    };
    match decode(operation, &body) {
        Some(answer) => CallRoute::Answered(Box::new(answer)),
        None => CallRoute::Refused(Relayed::of_body(&body)),
    }
}

/// The result in a JSON-RPC success `body`, as `operation`'s answer; `None` for anything
/// else (an error).
fn decode(operation: Operation, body: &[u8]) -> Option<Answer> {
    fn result<T: DeserializeOwned>(body: &[u8]) -> Option<T> {
        #[derive(serde::Deserialize)]
        struct Reply<T> {
            result: Option<T>,
        }
        serde_json::from_slice::<Reply<T>>(body).ok()?.result
    }
    Some(match operation {
        Operation::SendMessage => Answer::Send(result::<SendMessageResponse>(body)?),
        Operation::GetTask | Operation::CancelTask => Answer::Task(result::<Task>(body)?),
        Operation::CreateTaskPushNotificationConfig | Operation::GetTaskPushNotificationConfig => {
            Answer::PushConfig(result::<TaskPushNotificationConfig>(body)?)
        }
        Operation::ListTaskPushNotificationConfigs => {
            Answer::PushConfigs(result::<ListTaskPushNotificationConfigsResponse>(body)?)
        }
        Operation::DeleteTaskPushNotificationConfig => {
            result::<Value>(body)?;
            Answer::Deleted
        }
        Operation::ListTasks
        | Operation::GetExtendedAgentCard
        | Operation::SendStreamingMessage
        | Operation::SubscribeToTask => return None,
    })
}

/// The events of a peer's SSE answer, as they arrive: each frame's `data` a JSON-RPC
/// response holding a `StreamResponse` (its `id` the position), an error frame the stream's
/// last item. The stream ends when the peer's does.
fn events(answer: reqwest::Response) -> TaskStream {
    struct State {
        body: futures::stream::BoxStream<'static, reqwest::Result<Bytes>>,
        buffer: Vec<u8>,
        ready: VecDeque<crate::error::Result<StreamEvent>>,
        done: bool,
    }
    let state = State {
        body: answer.bytes_stream().boxed(),
        buffer: Vec::new(),
        ready: VecDeque::new(),
        done: false,
    };
    Box::pin(futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.ready.pop_front() {
                if item.is_err() {
                    state.done = true;
                    state.ready.clear();
                }
                return Some((item, state));
            }
            if state.done {
                return None;
            }
            match state.body.next().await {
                Some(Ok(chunk)) => {
                    state.buffer.extend_from_slice(&chunk);
                    while let Some(frame) = take_frame(&mut state.buffer) {
                        if let Some(item) = frame_event(&frame) {
                            state.ready.push_back(item);
                        }
                    }
                }
                Some(Err(error)) => {
                    state.done = true;
                    let error = Error::new(
                        ErrorKind::Unavailable,
                        format!("a peer's stream was cut off: {error}"),
                    );
                    return Some((Err(error), state));
                }
                None => return None,
            }
        }
    }))
}

/// The first whole SSE frame in `buffer` (up to a blank line), taken out of it.
fn take_frame(buffer: &mut Vec<u8>) -> Option<Vec<u8>> {
    let end = buffer.windows(2).position(|w| w == b"\n\n")?;
    let frame = buffer[..end].to_vec();
    buffer.drain(..end + 2);
    Some(frame)
}

/// The event of one SSE frame; `None` for a frame without data (a keep-alive comment).
fn frame_event(frame: &[u8]) -> Option<crate::error::Result<StreamEvent>> {
    let text = String::from_utf8_lossy(frame);
    let mut position = 0;
    let mut data = String::new();
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(id) = field(line, "id") {
            position = id.trim().parse().unwrap_or(0);
        } else if let Some(more) = field(line, "data") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(more);
        }
    }
    if data.is_empty() {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Reply {
        result: Option<StreamResponse>,
    }
    Some(match serde_json::from_str::<Reply>(&data) {
        Ok(Reply {
            result: Some(response),
        }) => Ok(StreamEvent {
            position,
            response,
            last: false,
        }),
        _ => Err(Relayed::of_body(data.as_bytes()).into_error()),
    })
}

/// The value of an SSE line of field `name` (one optional space after the colon).
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let value = line.strip_prefix(name)?.strip_prefix(':')?;
    Some(value.strip_prefix(' ').unwrap_or(value))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_split_at_blank_lines_and_keep_alives_skipped() {
        let mut buffer = b": keep-alive\n\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"statusUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\nid: 8\nda".to_vec();
        let first = take_frame(&mut buffer).unwrap();
        assert!(frame_event(&first).is_none());
        let second = take_frame(&mut buffer).unwrap();
        let event = frame_event(&second).unwrap().unwrap();
        assert_eq!(event.position, 7);
        assert!(matches!(event.response, StreamResponse::StatusUpdate(_)));
        assert!(take_frame(&mut buffer).is_none());
        assert_eq!(buffer, b"id: 8\nda");
    }

    #[test]
    fn an_error_is_relayed_with_its_kind_and_metadata() {
        let error = Error::task_not_found("t-1");
        let body = agentlog_wire::jsonrpc::error_body(
            &serde_json::value::RawValue::from_string("1".into()).unwrap(),
            &error.to_rpc(),
            agentlog_wire::jsonrpc::ProtocolVersion::V1_0,
        );
        let relayed = Relayed::of_body(&body);
        assert_eq!(relayed.kind, ErrorKind::TaskNotFound);
        assert_eq!(relayed.rpc.metadata["taskId"], "t-1");
        let back = relayed.into_error();
        assert_eq!(back.kind(), ErrorKind::TaskNotFound);
        let unavailable = Error::new(ErrorKind::Unavailable, "retry");
        let body = serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "error": unavailable.to_rpc().to_json_v1()
        }))
        .unwrap();
        assert_eq!(Relayed::of_body(&body).kind, ErrorKind::Unavailable);
        assert_eq!(Relayed::of_body(b"nope").kind, ErrorKind::Internal);
    }

    #[test]
    fn a_calls_metadata_goes_on_without_grpcs_own_headers() {
        let mut metadata = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer t"),
            ("a2a-version", "1.0"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", "5S"),
            (
                "traceparent",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ),
        ] {
            metadata.insert(
                axum::http::HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let headers = call_headers(&metadata);
        assert_eq!(headers["content-type"], "application/json");
        assert_eq!(headers["authorization"], "Bearer t");
        assert_eq!(headers["a2a-version"], "1.0");
        assert!(headers.contains_key("traceparent"));
        assert!(!headers.contains_key("te") && !headers.contains_key("grpc-timeout"));
    }
}
