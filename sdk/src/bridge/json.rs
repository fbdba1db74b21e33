//! The bridge's verbs in plain JSON, for hosts that hold A2A 1.0 JSON rather than the typed
//! requests: the language bindings (`bindings/python`, `bindings/node`) take a verb's params
//! from a dict or object, call the typed verb, and hand back its result or stream events as
//! JSON. Reading the params and the shape of an event are written here once, so both
//! bindings report the same errors and give the same events.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::StreamEvent;
use crate::error::{Error, ErrorKind, Result};

/// A verb's params (`what` names the request type: `SendMessageRequest`, `GetTaskRequest`,
/// ...) from A2A 1.0 JSON. Refused as JSON-RPC refuses them: [`ErrorKind::InvalidParams`],
/// the message naming the field at fault.
pub fn from_params<T: DeserializeOwned>(what: &'static str, params: &Value) -> Result<T> {
    agentlog_wire::a2a::from_json(what, params)
        .map_err(|e| Error::new(ErrorKind::InvalidParams, format!("Invalid parameters: {e}")))
}

/// A verb's result as A2A 1.0 JSON.
pub fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<Value> {
    serde_json::to_value(value)
        .map_err(|e| Error::new(ErrorKind::Internal, "cannot encode the result").with_source(e))
}

impl StreamEvent {
    /// The event as the bindings give it: `{"position": <log position>, "last": <bool>,
    /// "event": <A2A 1.0 StreamResponse>}`. `position` is what a client resumes after.
    pub fn to_json(&self) -> Result<Value> {
        Ok(json!({
            "position": self.position,
            "last": self.last,
            "event": to_json(&self.response)?,
        }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentlog_wire::a2a::{GetTaskRequest, StreamResponse, Task};

    #[test]
    fn params_are_read_and_bad_ones_name_the_field() {
        let request: GetTaskRequest =
            from_params("GetTaskRequest", &json!({"id": "t-1", "historyLength": 2})).unwrap();
        assert_eq!(
            (request.id.as_str(), request.history_length),
            ("t-1", Some(2))
        );
        let error = from_params::<GetTaskRequest>("GetTaskRequest", &json!({"id": 5})).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidParams);
        assert!(error.message().contains("id"), "{error}");
    }

    #[test]
    fn an_event_carries_its_position_and_whether_it_is_the_last() {
        let task: Task = from_params(
            "Task",
            &json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}),
        )
        .unwrap();
        let event = StreamEvent {
            position: 7,
            response: StreamResponse::Task(task),
            last: false,
        };
        let value = event.to_json().unwrap();
        assert_eq!(value["position"], 7);
        assert_eq!(value["last"], false);
        assert_eq!(
            value["event"]["task"]["status"]["state"],
            "TASK_STATE_WORKING"
        );
    }

    #[test]
    fn an_sse_frame_is_the_routers_framing() {
        let stream = super::super::RpcStream {
            id: serde_json::value::to_raw_value(&3).unwrap(),
            version: agentlog_wire::jsonrpc::ProtocolVersion::V1_0,
            events: Box::pin(futures::stream::empty()),
        };
        let task: Task = from_params(
            "Task",
            &json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}),
        )
        .unwrap();
        let event = Ok(StreamEvent {
            position: 12,
            response: StreamResponse::Task(task),
            last: false,
        });
        let frame = String::from_utf8(stream.sse_frame(&event)).unwrap();
        let data = String::from_utf8(stream.frame(&event)).unwrap();
        assert_eq!(frame, format!("id: 12\ndata: {data}\n\n"));
        assert!(
            data.starts_with(r#"{"jsonrpc":"2.0","id":3,"result":"#),
            "{data}"
        );
        let failed = Err(Error::new(ErrorKind::TaskNotFound, "gone"));
        let frame = String::from_utf8(stream.sse_frame(&failed)).unwrap();
        assert!(frame.starts_with("event: error\ndata: {"), "{frame}");
        assert!(
            frame.contains("-32001") && frame.ends_with("}\n\n"),
            "{frame}"
        );
    }

    #[tokio::test]
    async fn sse_frames_end_after_an_error_frame() {
        use futures::StreamExt as _;
        let task: Task = from_params(
            "Task",
            &json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}),
        )
        .unwrap();
        let event = |position, last| {
            Ok(StreamEvent {
                position,
                response: StreamResponse::Task(task.clone()),
                last,
            })
        };
        let stream = super::super::RpcStream {
            id: serde_json::value::to_raw_value(&3).unwrap(),
            version: agentlog_wire::jsonrpc::ProtocolVersion::V1_0,
            events: Box::pin(futures::stream::iter([
                event(1, false),
                Err(Error::new(ErrorKind::TaskNotFound, "gone")),
                event(2, false),
            ])),
        };
        let frames: Vec<String> = stream
            .into_sse_frames()
            .map(|f| String::from_utf8(f).unwrap())
            .collect()
            .await;
        assert_eq!(frames.len(), 2, "{frames:?}");
        assert!(frames[0].starts_with("id: 1\ndata: "), "{}", frames[0]);
        assert!(frames[1].starts_with("event: error\n"), "{}", frames[1]);
        // The event marked last ends it too.
        let stream = super::super::RpcStream {
            id: serde_json::value::to_raw_value(&3).unwrap(),
            version: agentlog_wire::jsonrpc::ProtocolVersion::V1_0,
            events: Box::pin(futures::stream::iter([
                event(1, false),
                event(2, true),
                event(3, false),
            ])),
        };
        let frames: Vec<Vec<u8>> = stream.into_sse_frames().collect().await;
        assert_eq!(frames.len(), 2);
    }
}
