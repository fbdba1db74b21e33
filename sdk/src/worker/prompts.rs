//! Prompts answered by a worker (`Tools::prompt`), beside tools: the MCP bridge makes a
//! `prompts/get` of a prompt configured with an agent a call on that agent's topics named
//! `prompts/get:<prompt>` (`agentlog_wire::mcp::call::prompt_call_name`), and this handler's
//! `GetPromptResult` rides back as the call result's `structuredContent`. The handler gets a
//! [`ToolCall`]: its `arguments` are the prompt's arguments (strings), and it may
//! [`ask`](ToolCall::ask) the client for input as a tool does (MRTR on a 2026-07-28
//! `prompts/get`, relayed requests on a legacy one).

use std::future::Future;

use agentlog_wire::mcp::CallToolResult;
use serde_json::{Map, Value};

use super::handler::HandlerError;
use super::tools::{ToolCall, ToolHandler, Tools};

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

/// A prompt handler as the call handler the bridge's request reaches.
struct AsCall<H>(H);

#[async_trait::async_trait]
impl<H: PromptHandler> ToolHandler for AsCall<H> {
    async fn call(&self, call: ToolCall) -> Result<CallToolResult, HandlerError> {
        let result = self.0.get(call).await?;
        Ok(CallToolResult {
            structured_content: Some(Value::Object(result)),
            ..CallToolResult::default()
        })
    }
}

impl Tools {
    /// Answer `prompts/get` of prompt `name` with `handler` (the prompt is configured with
    /// this worker's agent: `PromptConfig::agent`, `"agent"` in a definitions file).
    pub fn prompt(self, name: &str, handler: impl PromptHandler) -> Self {
        self.tool(
            agentlog_wire::mcp::call::prompt_call_name(name),
            AsCall(handler),
        )
    }
}
