//! A call's answer ([`Answer`]): a `tools/call` result, or a JSON-RPC error object; and the
//! answer a task that ended gives its call. Shared by the calls followed on the request and
//! the tasks' methods.

use agentlog_wire::TaskState;
use agentlog_wire::a2a::Message;
use agentlog_wire::mcp::call::{ERROR_MEDIA_TYPE, data_part, result_of};
use agentlog_wire::mcp::{CallToolResult, TASKS_EXTENSION};
use serde_json::{Map, Value, json};

/// A task method's answer: a result, or a JSON-RPC error object.
pub(super) type Answer = std::result::Result<Map<String, Value>, Value>;

/// The answer a task that ended (or stopped for input) with `message` gives a call.
pub(super) fn answer(state: TaskState, message: Option<&Message>) -> Answer {
    match state {
        TaskState::Completed => match result_of(message) {
            Ok(result) => match serde_json::to_value(result) {
                Ok(Value::Object(result)) => Ok(result),
                _ => Err(json!({"code": -32603, "message": "the tool's result cannot be encoded"})),
            },
            Err(e) => Err(json!({"code": -32603, "message": format!("the tool's result is not a CallToolResult: {e}")})),
        },
        TaskState::Canceled => Err(json!({"code": -32603, "message": "the call was cancelled"})),
        // A tool failure the model can read: the tool needs input this call cannot carry.
        TaskState::InputRequired | TaskState::AuthRequired => {
            let text = format!(
                "the tool asked for {state} ({}); this bridge relays input requests only for tasks (declare the {TASKS_EXTENSION} extension)",
                text_of(message)
            );
            Ok(object(CallToolResult::error(text)))
        }
        _ => Err(message
            .and_then(|m| data_part(m, ERROR_MEDIA_TYPE))
            .filter(|e| e.get("code").is_some_and(Value::is_i64) && e.get("message").is_some_and(Value::is_string))
            .cloned()
            .unwrap_or_else(|| json!({"code": -32603, "message": format!("the tool failed: {}", text_of(message))}))),
    }
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
