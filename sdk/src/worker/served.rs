//! Prompts and resources answered by a worker (`Tools::prompt`, `Tools::resource`), beside
//! tools: the MCP bridge makes a `prompts/get` of a prompt configured with an agent a call on
//! that agent's topics named `prompts/get:<prompt>`
//! (`agentlog_wire::mcp::call::prompt_call_name`), and a `resources/read` of a URI matching a
//! template configured with one a call named `resources/read:<uriTemplate>`
//! (`resource_call_name`); the handler's `GetPromptResult` or contents ride back as the call
//! result's `structuredContent`. The handler gets a [`ToolCall`]: its `arguments` are the
//! prompt's arguments (strings), or the URI (`uri`) and each template variable's value, and it
//! may [`ask`](ToolCall::ask) the client for input as a tool does (MRTR on a 2026-07-28
//! request, relayed requests on a legacy one).
//!
//! Completions likewise (`Tools::prompt_completion`, `Tools::resource_completion`): the
//! bridge calls the prompt's or template's `completionAgent` for an argument or variable with
//! no configured values, the [`ToolCall`]'s `arguments` being `{argument, value, context}`
//! (the argument's name, what the user typed so far, the values of the arguments already
//! given), and the handler answers a [`Completion`] (at most 100 values are kept).
//!
//! A handler in another language (the bindings') returns JSON: [`HandlerResult::from_value`]
//! reads it as the result its trait answers, so every binding checks it alike.

use std::future::Future;

use agentlog_wire::a2a::{from_json, json_type};
use agentlog_wire::mcp::{CallToolResult, Completion, PromptMessage, ResourceContents};
use serde_json::{Map, Value, json};

use super::handler::HandlerError;
use super::tools::{ToolCall, ToolHandler, Tools};
use crate::error::{Error, ErrorKind, Result};

/// A prompt's, resource's or completion's result read from the JSON a handler written in
/// another language returned. A value of the wrong shape is [`ErrorKind::ToolFailed`] (the
/// handler, not the client, is at fault: the request fails with -32603) saying what is wrong.
pub trait HandlerResult: Sized {
    /// `value` read as this result.
    fn from_value(value: Value) -> Result<Self>;
}

fn misshapen(message: String) -> Error {
    Error::new(ErrorKind::ToolFailed, message)
}

/// A prompt handler's `GetPromptResult`: an object with `messages` (each a `PromptMessage`)
/// and an optional string `description`; kept as given (`_meta` and the like pass through).
impl HandlerResult for Map<String, Value> {
    fn from_value(value: Value) -> Result<Self> {
        let Value::Object(result) = value else {
            return Err(misshapen(format!(
                "the prompt handler returned {}, not a GetPromptResult object {{description?, messages}}",
                json_type(&value)
            )));
        };
        let messages = result.get("messages").unwrap_or(&Value::Null);
        from_json::<Vec<PromptMessage>>("messages", messages)
            .map_err(|e| misshapen(format!("the prompt handler returned {e}")))?;
        match result.get("description") {
            None | Some(Value::String(_)) => Ok(result),
            Some(other) => Err(misshapen(format!(
                "the prompt handler returned a description that is {}, not a string",
                json_type(other)
            ))),
        }
    }
}

/// A resource handler's contents: an array of `{uri, mimeType?, text}` or `{uri, mimeType?,
/// blob}` (base64).
impl HandlerResult for Vec<ResourceContents> {
    fn from_value(value: Value) -> Result<Self> {
        from_json("contents", &value)
            .map_err(|e| misshapen(format!("the resource handler returned {e}")))
    }
}

/// A completion handler's values: an array of strings (all of them: `total` is its length),
/// or `{values, total?, hasMore?}`.
impl HandlerResult for Completion {
    fn from_value(value: Value) -> Result<Self> {
        let bad = |what: &Value| {
            misshapen(format!(
                "the completion handler returned {}, not an array of strings nor {{values, total?, hasMore?}}",
                json_type(what)
            ))
        };
        let (values, total, has_more) = match value {
            Value::Array(values) => (values, None, None),
            Value::Object(mut given) => match given.remove("values") {
                Some(Value::Array(values)) => (
                    values,
                    given.get("total").and_then(Value::as_u64),
                    given.get("hasMore").and_then(Value::as_bool),
                ),
                other => return Err(bad(&other.unwrap_or(Value::Null))),
            },
            other => return Err(bad(&other)),
        };
        let values = values
            .into_iter()
            .map(|value| match value {
                Value::String(value) => Ok(value),
                other => Err(misshapen(format!(
                    "the completion handler returned a value that is {}, not a string",
                    json_type(&other)
                ))),
            })
            .collect::<Result<Vec<String>>>()?;
        let total = total.map_or(values.len(), |t| usize::try_from(t).unwrap_or(usize::MAX));
        Ok(Completion {
            total,
            has_more: has_more.unwrap_or(false),
            values,
        })
    }
}

/// A prompt's code: answers one `prompts/get` with a `GetPromptResult` object
/// (`{description?, messages}`). `Err` fails the request (the client gets a JSON-RPC error).
#[async_trait::async_trait]
pub trait PromptHandler: Send + Sync + 'static {
    /// Answer one `prompts/get`.
    async fn get(&self, call: ToolCall) -> Result<Map<String, Value>, HandlerError>;
}

/// Build a [`PromptHandler`] from an async closure.
pub fn prompt_fn<F, Fut>(f: F) -> impl PromptHandler
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Map<String, Value>, HandlerError>> + Send,
{
    FnPrompt(f)
}

struct FnPrompt<F>(F);

#[async_trait::async_trait]
impl<F, Fut> PromptHandler for FnPrompt<F>
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Map<String, Value>, HandlerError>> + Send,
{
    async fn get(&self, call: ToolCall) -> Result<Map<String, Value>, HandlerError> {
        (self.0)(call).await
    }
}

/// A resource template's code: answers one `resources/read` of a URI it matches with the
/// URI's contents (text or blob, each with its URI and media type). `Err` fails the request.
#[async_trait::async_trait]
pub trait ResourceHandler: Send + Sync + 'static {
    /// Answer one `resources/read`.
    async fn read(&self, call: ToolCall) -> Result<Vec<ResourceContents>, HandlerError>;
}

/// Build a [`ResourceHandler`] from an async closure.
pub fn resource_fn<F, Fut>(f: F) -> impl ResourceHandler
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send,
{
    FnResource(f)
}

struct FnResource<F>(F);

#[async_trait::async_trait]
impl<F, Fut> ResourceHandler for FnResource<F>
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send,
{
    async fn read(&self, call: ToolCall) -> Result<Vec<ResourceContents>, HandlerError> {
        (self.0)(call).await
    }
}

/// A prompt's or template's completer: answers one `completion/complete` of one of its
/// arguments (or variables) with the values matching what the user typed. `Err` fails the
/// request.
#[async_trait::async_trait]
pub trait CompletionHandler: Send + Sync + 'static {
    /// Answer one `completion/complete`.
    async fn complete(&self, call: ToolCall) -> Result<Completion, HandlerError>;
}

/// Build a [`CompletionHandler`] from an async closure.
pub fn completion_fn<F, Fut>(f: F) -> impl CompletionHandler
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Completion, HandlerError>> + Send,
{
    FnCompletion(f)
}

struct FnCompletion<F>(F);

#[async_trait::async_trait]
impl<F, Fut> CompletionHandler for FnCompletion<F>
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Completion, HandlerError>> + Send,
{
    async fn complete(&self, call: ToolCall) -> Result<Completion, HandlerError> {
        (self.0)(call).await
    }
}

/// A completer as the call handler the bridge's request reaches.
struct CompletionCall<H>(H);

#[async_trait::async_trait]
impl<H: CompletionHandler> ToolHandler for CompletionCall<H> {
    async fn call(&self, call: ToolCall) -> Result<CallToolResult, HandlerError> {
        let completion = self.0.complete(call).await?;
        Ok(answered(json!({"completion": completion})))
    }
}

fn answered(result: Value) -> CallToolResult {
    CallToolResult {
        structured_content: Some(result),
        ..CallToolResult::default()
    }
}

/// A prompt handler as the call handler the bridge's request reaches.
struct PromptCall<H>(H);

#[async_trait::async_trait]
impl<H: PromptHandler> ToolHandler for PromptCall<H> {
    async fn call(&self, call: ToolCall) -> Result<CallToolResult, HandlerError> {
        Ok(answered(Value::Object(self.0.get(call).await?)))
    }
}

/// A resource handler as the call handler the bridge's request reaches.
struct ResourceCall<H>(H);

#[async_trait::async_trait]
impl<H: ResourceHandler> ToolHandler for ResourceCall<H> {
    async fn call(&self, call: ToolCall) -> Result<CallToolResult, HandlerError> {
        let contents = self.0.read(call).await?;
        Ok(answered(json!({"contents": contents})))
    }
}

impl Tools {
    /// Answer `prompts/get` of prompt `name` with `handler` (the prompt is configured with
    /// this worker's agent: `PromptConfig::agent`, `"agent"` in a definitions file).
    pub fn prompt(self, name: &str, handler: impl PromptHandler) -> Self {
        self.tool(
            agentlog_wire::mcp::call::prompt_call_name(name),
            PromptCall(handler),
        )
    }

    /// Complete the arguments of prompt `name` with `handler` (those with no configured
    /// `values`; the prompt names this worker's agent as its `completionAgent`).
    pub fn prompt_completion(self, name: &str, handler: impl CompletionHandler) -> Self {
        self.tool(
            agentlog_wire::mcp::call::prompt_completion_call_name(name),
            CompletionCall(handler),
        )
    }

    /// Complete the variables of resource template `uri_template` with `handler` (those with
    /// no configured `completions`; the template names this worker's agent as its
    /// `completionAgent`).
    pub fn resource_completion(self, uri_template: &str, handler: impl CompletionHandler) -> Self {
        self.tool(
            agentlog_wire::mcp::call::resource_completion_call_name(uri_template),
            CompletionCall(handler),
        )
    }

    /// Answer `resources/read` of the URIs resource template `uri_template` matches with
    /// `handler` (the template, as configured, names this worker's agent:
    /// `ResourceTemplateConfig::agent`, `"agent"` in a definitions file).
    pub fn resource(self, uri_template: &str, handler: impl ResourceHandler) -> Self {
        self.tool(
            agentlog_wire::mcp::call::resource_call_name(uri_template),
            ResourceCall(handler),
        )
    }
}

#[cfg(test)]
mod tests;
