//! Prompts answered by a worker through the log, as a tool call is: a `prompts/get` of a prompt
//! configured with an `agent` is a call on that agent's topics whose params are
//! `{name: "prompts/get:<prompt>", arguments: <the prompt's arguments>}` (plus the request's
//! `_meta`, `inputResponses` and `requestState`), answered by the worker's `Tools::prompt`
//! handler with the `GetPromptResult` as the call result's `structuredContent`
//! ([`unwrap`]). Everything a sync tool call has comes with it: MRTR (`ToolCall::ask` answers
//! `input_required`, the retry continues the task on any replica), a legacy call's relayed
//! requests, progress, logs, cancellation, the ask's expiry.
//!
//! These calls are reached only through their method: `tools/call` never finds them (their
//! names are not tool names), and `tools/list` does not list them.

use agentlog_wire::mcp::Tool;
use agentlog_wire::mcp::call::prompt_call_name;
use serde_json::{Map, Value, json};

use super::{Entry, McpBridge, TaskSupport, ToolConfig};
use crate::error::{Error, ErrorKind, Result};

/// The entry of the worker call answering prompt `name` on `agent`.
pub(super) fn prompt_entry(
    name: &str,
    agent: &str,
    bridge: crate::bridge::Bridge,
) -> Result<Entry> {
    let tool = Tool::new(prompt_call_name(name), json!({"type": "object"}));
    let config = ToolConfig {
        agent: Some(agent.to_owned()),
        task_support: TaskSupport::Forbidden,
        ..ToolConfig::new(tool.clone())
    };
    let validator = crate::bridge::Schema::compile(&tool.input_schema)
        .map_err(|e| Error::new(ErrorKind::Config, format!("prompt {name:?}: {e}")))?;
    let listed = serde_json::to_value(&tool).unwrap_or(Value::Null);
    Ok(Entry {
        config,
        modern: listed.clone(),
        legacy: listed,
        validator,
        mirrored: Vec::new(),
        bridge,
    })
}

/// The result a worker's answer carries: a call result's `structuredContent` (an
/// `input_required` answer passes as it is); a tool error is the worker's failure.
pub(super) fn unwrap(result: Map<String, Value>) -> Result<Map<String, Value>> {
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return Ok(result);
    }
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text: Vec<&str> = result
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect();
        return Err(Error::new(
            ErrorKind::ToolFailed,
            format!("the prompt's worker failed: {}", text.join(" ")),
        ));
    }
    match result.get("structuredContent") {
        Some(Value::Object(answer)) => Ok(answer.clone()),
        _ => Err(Error::new(
            ErrorKind::ToolFailed,
            "the worker's answer carries no result object",
        )),
    }
}

impl McpBridge {
    /// The served entry of a worker-answered request named `name`.
    pub(super) fn served_entry(&self, name: &str) -> Result<&Entry> {
        self.inner.served.get(name).ok_or_else(|| {
            Error::new(ErrorKind::InvalidParams, format!("Unknown request: {name}"))
                .with_detail("name", name)
        })
    }

    /// Whether `prompts/get`'s `params` name a prompt a worker answers.
    pub(super) fn worker_prompt(&self, params: Option<&Map<String, Value>>) -> bool {
        params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .and_then(|name| self.inner.catalog.prompts.get(name))
            .is_some_and(|prompt| prompt.agent.is_some())
    }

    /// The call params answering `prompts/get` with `params` (checked as a configured
    /// prompt's): its JSON text, as recorded.
    pub(super) fn prompt_call(&self, params: &Map<String, Value>) -> Result<String> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // The arguments checked as a configured prompt's are (unknown, types, required).
        self.prompt_arguments(name, params)?;
        let mut call = Map::new();
        call.insert("name".into(), json!(prompt_call_name(name)));
        let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
        call.insert("arguments".into(), arguments);
        for member in ["_meta", "inputResponses", "requestState"] {
            if let Some(value) = params.get(member) {
                call.insert(member.into(), value.clone());
            }
        }
        Ok(Value::Object(call).to_string())
    }
}
