//! Prompts and resources answered by a worker through the log, as a tool call is: a
//! `prompts/get` of a prompt configured with an `agent` is a call on that agent's topics whose
//! params are `{name: "prompts/get:<prompt>", arguments: <the prompt's arguments>}`, and a
//! `resources/read` of a URI matching a template configured with an `agent` (and no configured
//! resource or task before it) one of `{name: "resources/read:<uriTemplate>", arguments: {uri,
//! <each variable's value>}}` (each plus the request's `_meta`, `inputResponses` and
//! `requestState`), answered by the worker's `Tools::prompt` or `Tools::resource` handler with
//! the `GetPromptResult` or `ReadResourceResult` as the call result's `structuredContent`
//! ([`unwrap`]; a modern read is private and stale at once: a worker's answer may change). Everything a sync tool call has comes with it: MRTR (`ToolCall::ask` answers
//! `input_required`, the retry continues the task on any replica), a legacy call's relayed
//! requests, progress, logs, cancellation, the ask's expiry.
//!
//! A `completion/complete` of a prompt argument or template variable with no configured values,
//! whose prompt or template names a `completionAgent`, is a call too:
//! `{name: "completion/complete:ref/prompt:<prompt>"` (or `…:ref/resource:<uriTemplate>`),
//! `arguments: {argument, value, context}}` (`context` the request's `context.arguments`, or
//! `{}`), answered by `Tools::prompt_completion` or `Tools::resource_completion` with
//! `{completion: {values, total?, hasMore?}}` (at most 100 values kept). An argument the prompt
//! does not declare completes to nothing without a call.
//!
//! These calls are reached only through their method: `tools/call` never finds them (their
//! names are not tool names), and `tools/list` does not list them.

use agentlog_wire::mcp::call::{
    prompt_completion_call_name, resource_call_name, resource_completion_call_name,
};
use agentlog_wire::mcp::prompt::MAX_COMPLETIONS;
use agentlog_wire::mcp::{TaskResource, Tool};
use serde_json::{Map, Value, json};

use super::{Entry, McpBridge, TaskSupport, ToolConfig};
use crate::error::{Error, ErrorKind, Result};

/// The entry of the worker call named `call` (answering a prompt or a template) on `agent`.
pub(super) fn served_entry(
    call: String,
    agent: &str,
    bridge: crate::bridge::Bridge,
) -> Result<Entry> {
    let tool = Tool::new(call.clone(), json!({"type": "object"}));
    let config = ToolConfig {
        agent: Some(agent.to_owned()),
        task_support: TaskSupport::Forbidden,
        ..ToolConfig::new(tool.clone())
    };
    let validator = crate::bridge::Schema::compile(&tool.input_schema)
        .map_err(|e| Error::new(ErrorKind::Config, format!("{call:?}: {e}")))?;
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

/// The result a worker's answer to `method` carries: a call result's `structuredContent` (an
/// `input_required` answer passes as it is), a modern read's with its cache hints; a tool
/// error is the worker's failure.
pub(super) fn unwrap(
    result: Map<String, Value>,
    method: &str,
    modern: bool,
) -> Result<Map<String, Value>> {
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
            format!("the {method} worker failed: {}", text.join(" ")),
        ));
    }
    match result.get("structuredContent") {
        Some(Value::Object(answer)) if method == "completion/complete" => completion(answer),
        Some(Value::Object(answer)) if method == "resources/read" && modern => {
            let mut answer = answer.clone();
            answer.insert("ttlMs".into(), json!(0));
            answer.insert("cacheScope".into(), json!("private"));
            Ok(answer)
        }
        Some(Value::Object(answer)) => Ok(answer.clone()),
        _ => Err(Error::new(
            ErrorKind::ToolFailed,
            "the worker's answer carries no result object",
        )),
    }
}

/// A worker's `{completion: {values, total?, hasMore?}}` checked (values are strings) and held
/// to the spec's 100 values (`hasMore` set when some were cut).
fn completion(answer: &Map<String, Value>) -> Result<Map<String, Value>> {
    let bad = || {
        Error::new(
            ErrorKind::ToolFailed,
            "the completion worker's answer is not {completion: {values: [strings]}}",
        )
    };
    let given = answer
        .get("completion")
        .and_then(Value::as_object)
        .ok_or_else(bad)?;
    let values: Vec<&str> = given
        .get("values")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(Value::as_str)
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    let mut completion = Map::new();
    let cut = values.len() > MAX_COMPLETIONS;
    completion.insert(
        "values".into(),
        json!(&values[..values.len().min(MAX_COMPLETIONS)]),
    );
    match given.get("total").and_then(Value::as_u64) {
        Some(total) => completion.insert("total".into(), json!(total)),
        None if cut => completion.insert("total".into(), json!(values.len())),
        None => None,
    };
    let more = cut || given.get("hasMore").and_then(Value::as_bool) == Some(true);
    if more || given.contains_key("hasMore") {
        completion.insert("hasMore".into(), json!(more));
    }
    let mut result = Map::new();
    result.insert("completion".into(), Value::Object(completion));
    Ok(result)
}

impl McpBridge {
    /// The call params answering `completion/complete` with `params` when a worker completes
    /// what it names (a declared argument or variable with no configured values, of a prompt
    /// or template with a `completionAgent`): its JSON text, as recorded. Anything else
    /// (bad params included) is `complete`'s.
    pub(super) fn completion_call(&self, params: Option<&Map<String, Value>>) -> Option<String> {
        let params = params?;
        let reference = params.get("ref").and_then(Value::as_object)?;
        let argument = params.get("argument").and_then(Value::as_object)?;
        let name = argument.get("name").and_then(Value::as_str)?;
        let value = argument.get("value").and_then(Value::as_str)?;
        let catalog = &self.inner.catalog;
        let call = match reference.get("type").and_then(Value::as_str)? {
            "ref/prompt" => {
                let prompt_name = reference.get("name").and_then(Value::as_str)?;
                let prompt = catalog.prompts.get(prompt_name)?;
                prompt.completion_agent.as_ref()?;
                let declared = prompt.prompt.arguments.iter().any(|a| a.name == name);
                if !declared || prompt.completions.contains_key(name) {
                    return None;
                }
                prompt_completion_call_name(prompt_name)
            }
            "ref/resource" => {
                let uri = reference.get("uri").and_then(Value::as_str)?;
                let (parsed, template) =
                    catalog.templates.iter().find(|(t, _)| t.as_str() == uri)?;
                template.completion_agent.as_ref()?;
                let declared = parsed.variables().any(|v| v == name);
                if !declared || template.completions.contains_key(name) {
                    return None;
                }
                resource_completion_call_name(uri)
            }
            _ => return None,
        };
        let context = params
            .get("context")
            .and_then(|c| c.get("arguments"))
            .filter(|a| a.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut request = Map::new();
        request.insert("name".into(), json!(call));
        request.insert(
            "arguments".into(),
            json!({"argument": name, "value": value, "context": context}),
        );
        if let Some(meta) = params.get("_meta") {
            request.insert("_meta".into(), meta.clone());
        }
        Some(Value::Object(request).to_string())
    }

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

    /// The call params answering `resources/read` with `params` when a template a worker
    /// answers is what serves its URI (a configured resource, then a task, come first, as in
    /// `read_resource`): its JSON text, as recorded.
    pub(super) fn resource_call(&self, params: Option<&Map<String, Value>>) -> Option<String> {
        let params = params?;
        let uri = params.get("uri").and_then(Value::as_str)?;
        let catalog = &self.inner.catalog;
        if catalog.resource(uri).is_some() || TaskResource::of(uri).is_some() {
            return None;
        }
        let (template, values) = catalog.matching(uri)?;
        template.agent.as_ref()?;
        let mut arguments = Map::new();
        for (name, value) in values {
            arguments.insert(name, json!(value));
        }
        // The URI last: a variable named `uri` does not hide it.
        arguments.insert("uri".into(), json!(uri));
        let mut call = Map::new();
        let name = resource_call_name(&template.template.uri_template);
        call.insert("name".into(), json!(name));
        call.insert("arguments".into(), Value::Object(arguments));
        for member in ["_meta", "inputResponses", "requestState"] {
            if let Some(value) = params.get(member) {
                call.insert(member.into(), value.clone());
            }
        }
        Some(Value::Object(call).to_string())
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
        call.insert(
            "name".into(),
            json!(agentlog_wire::mcp::call::prompt_call_name(name)),
        );
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
