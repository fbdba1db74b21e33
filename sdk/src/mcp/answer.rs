//! A call's answer ([`Answer`]): a `tools/call` result, or a JSON-RPC error object; and the
//! answer a task that ended gives its call. Shared by the calls followed on the request and
//! the tasks' methods.

use agentlog_wire::TaskState;
use agentlog_wire::a2a::Message;
use agentlog_wire::mcp::call::{ERROR_MEDIA_TYPE, data_part, result_of};
use agentlog_wire::mcp::{CallToolResult, TASKS_EXTENSION};
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};

/// A task method's answer: a result, or the error the call is answered with.
pub(super) type Answer = Result<Map<String, Value>>;

/// The answer a task that ended (or stopped for input) with `message` gives a call.
pub(super) fn answer(state: TaskState, message: Option<&Message>) -> Answer {
    let failed = |message: String| Error::new(ErrorKind::ToolFailed, message);
    match state {
        TaskState::Completed => match result_of(message) {
            Ok(result) => match serde_json::to_value(result) {
                Ok(Value::Object(result)) => Ok(result),
                _ => Err(failed("the tool's result cannot be encoded".into())),
            },
            Err(e) => Err(failed(format!(
                "the tool's result is not a CallToolResult: {e}"
            ))),
        },
        TaskState::Canceled => Err(failed("the call was cancelled".into())),
        // A tool failure the model can read: the tool needs input this call cannot carry.
        TaskState::InputRequired | TaskState::AuthRequired => {
            let text = format!(
                "the tool asked for {state} ({}); this call cannot carry the question: input is asked on a call's event stream (Accept: text/event-stream), by MRTR, or of a task (the {TASKS_EXTENSION} extension), and only as keyed requests",
                text_of(message)
            );
            Ok(object(CallToolResult::error(text)))
        }
        _ => Err(message
            .and_then(|m| data_part(m, ERROR_MEDIA_TYPE))
            .and_then(recorded_error)
            .unwrap_or_else(|| failed(format!("the tool failed: {}", text_of(message))))),
    }
}

/// The error a worker recorded in a failed status (a JSON-RPC error object: the worker's own
/// refusal of the call's params is -32602, anything else the tool's failure); `None` when it
/// is not one.
fn recorded_error(error: &Value) -> Option<Error> {
    let code = error.get("code")?.as_i64()?;
    let message = error.get("message")?.as_str()?;
    let kind = match code {
        -32602 => ErrorKind::InvalidParams,
        _ => ErrorKind::ToolFailed,
    };
    let recorded = Error::new(kind, message);
    Some(match error.get("data") {
        Some(data) => recorded.with_data(data.clone()),
        None => recorded,
    })
}

fn text_of(message: Option<&Message>) -> String {
    message
        .map(|m| {
            m.parts
                .iter()
                .filter_map(|p| p.as_text())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "no message".to_owned())
}

/// A `CallToolResult` as the JSON object it is.
pub(super) fn object(result: CallToolResult) -> Map<String, Value> {
    match serde_json::to_value(result) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agentlog_wire::a2a::{Message, Role};
    use agentlog_wire::mcp::call::typed_part;
    use serde_json::json;

    use super::*;

    fn failed_with(error: Value) -> Answer {
        let message = Message {
            parts: vec![typed_part(error, ERROR_MEDIA_TYPE)],
            ..Message::new_text(Role::Agent, "m", "")
        };
        answer(TaskState::Failed, Some(&message))
    }

    #[test]
    fn a_recorded_error_is_typed_by_its_code() {
        let refused = failed_with(json!({"code": -32602, "message": "invalid tools/call params"}));
        let refused = refused.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::InvalidParams);
        assert_eq!(refused.to_mcp()["message"], "invalid tools/call params");
        let failed = failed_with(json!({"code": -32603, "message": "the tool failed: boom"}));
        let failed = failed.unwrap_err().to_mcp();
        assert_eq!(
            (failed["code"].as_i64(), failed["message"].as_str()),
            (Some(-32603), Some("the tool failed: boom"))
        );
        // Not an error object: the tool failed, saying what its message said.
        let odd = failed_with(json!({"code": "x"})).unwrap_err();
        assert_eq!(odd.kind(), ErrorKind::ToolFailed);
        let cancelled = answer(TaskState::Canceled, None).unwrap_err();
        assert_eq!(cancelled.kind(), ErrorKind::ToolFailed);
    }
}
