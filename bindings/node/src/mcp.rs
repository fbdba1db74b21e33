//! `McpBridge`: the SDK's MCP bridge over plain values, and `McpReply`, what `handleRpc`
//! answers. The tool handlers run in `worker` (`Worker.start(log, agent, { tools })`).

use std::collections::HashMap;

use agentlog::mcp::{
    McpBridge as SdkMcpBridge, McpConfig, McpHeaders, McpReply as SdkReply, McpRequest, sse_frames,
};
use napi::Env;
use napi::bindgen_prelude::{Buffer, Either, PromiseRaw};
use napi_derive::napi;
use serde_json::Value;

use agentlog::telemetry::carrying;
use agentlog_wire::trace::TraceContext;

use crate::bridge::{Caller, RpcFrames};
use crate::convert::{from_js, to_js};
use crate::error::OrThrow;
use crate::log::Log;
use crate::trace::TraceCarrier;

/// How an MCP bridge is opened.
#[napi(object)]
#[derive(Debug)]
pub struct McpBridgeOptions {
    /// `serverInfo.name`. Default `agentlog`.
    pub name: Option<String>,
    /// `serverInfo.version`. Default the SDK's version.
    pub version: Option<String>,
    /// `instructions` for the model.
    pub instructions: Option<String>,
}

/// Open the MCP bridge serving `tools` (definitions as `agentlog serve --tools FILE` reads
/// them: an array of tools, or `{tools, resources, resourceTemplates, prompts}`) over `log`,
/// creating each tool agent's topics (`McpBridge.open` in index.js). A bad definition
/// rejects with `config`.
#[napi(
    ts_args_type = "log: Log, tools: Tool[] | McpDefinitions, options?: McpBridgeOptions | null",
    ts_return_type = "Promise<McpBridge>"
)]
pub fn open_mcp_bridge<'env>(
    env: &'env Env,
    log: &Log,
    tools: Value,
    options: Option<McpBridgeOptions>,
) -> napi::Result<PromiseRaw<'env, McpBridge>> {
    let mut config = McpConfig::from_json(from_js(tools), None).or_throw()?;
    if let Some(options) = options {
        if let Some(name) = options.name {
            config.name = name;
        }
        if let Some(version) = options.version {
            config.version = version;
        }
        config.instructions = options.instructions;
    }
    let log = log.inner.clone();
    env.spawn_future(async move {
        let inner = SdkMcpBridge::open(log, config).await.or_throw()?;
        Ok(McpBridge { inner })
    })
}

/// Which lists a reload changed.
#[napi(object)]
#[derive(Debug)]
pub struct ListChanged {
    /// `tools/list`'s.
    pub tools: bool,
    /// `prompts/list`'s.
    pub prompts: bool,
    /// The configured resources' or templates'.
    pub resources: bool,
}

/// What `handleRpc` is told about the request besides its body.
#[napi(object)]
#[derive(Debug)]
pub struct McpRpcOptions {
    /// The HTTP request's headers (names in any case): `MCP-Protocol-Version`, `Mcp-Method`
    /// and `Mcp-Name` are checked against the body, as the `/mcp` route does; its
    /// `traceparent`/`tracestate` are the caller's trace context (before a calling handler's
    /// turn's and `params._meta`'s; a bad one is ignored). Leave it out for a transport
    /// without headers.
    pub headers: Option<HashMap<String, String>>,
    /// Who is calling (default: anonymous).
    pub caller: Option<Caller>,
    /// The client takes `text/event-stream`: a call with a progress token is answered as
    /// SSE frames.
    pub accepts_stream: Option<bool>,
    /// Internal, set by index.js (callers leave it out): the calling handler's turn's W3C
    /// trace context, which the call carries on when its headers have none.
    #[napi(js_name = "_trace")]
    pub trace: Option<TraceCarrier>,
}

/// The MCP bridge over the tools' topics: `tools/list`, `tools/call` (a durable task a
/// worker answers), MCP tasks, both protocol eras.
#[napi]
#[derive(Debug, Clone)]
pub struct McpBridge {
    pub(crate) inner: SdkMcpBridge,
}

#[napi]
impl McpBridge {
    /// The tool definitions served, as given (`agent`, `taskSupport` filled in).
    #[napi(getter, ts_return_type = "Tool[]")]
    pub fn tools(&self) -> napi::Result<Value> {
        to_js(&self.inner.config().tools)
    }

    /// Serve `definitions` (as `McpBridge.open` takes them) from now on, keeping this
    /// bridge's name, version and instructions: the clients listening are told which lists
    /// changed, and so is the caller. A bad definition rejects with `config` and changes
    /// nothing.
    #[napi(
        ts_args_type = "definitions: Tool[] | McpDefinitions",
        ts_return_type = "Promise<ListChanged>"
    )]
    pub async fn reload(&self, definitions: Value) -> napi::Result<ListChanged> {
        let served = self.inner.config();
        let mut config = McpConfig::from_json(from_js(definitions), None).or_throw()?;
        config.name = served.name;
        config.version = served.version;
        config.instructions = served.instructions;
        let changed = self.inner.reload(config).await.or_throw()?;
        Ok(ListChanged {
            tools: changed.tools,
            prompts: changed.prompts,
            resources: changed.resources,
        })
    }

    /// The tool agents (whose workers answer the calls), sorted.
    #[napi(getter)]
    pub fn agents(&self) -> Vec<String> {
        let mut agents: Vec<String> = self.inner.bridges().keys().cloned().collect();
        agents.sort();
        agents
    }

    /// Answer one JSON-RPC message: the HTTP status and a JSON body, SSE frames, or
    /// neither (202). Never rejects for a bad request: every problem is in the reply.
    #[napi]
    pub async fn handle_rpc(
        &self,
        body: Either<String, Buffer>,
        options: Option<McpRpcOptions>,
    ) -> napi::Result<McpReply> {
        let body: Vec<u8> = match body {
            Either::A(text) => text.into_bytes(),
            Either::B(buffer) => buffer.to_vec(),
        };
        let (headers, caller, accepts_stream, turn) = match options {
            Some(o) => (
                o.headers,
                o.caller,
                o.accepts_stream.unwrap_or(false),
                TraceCarrier::context(o.trace),
            ),
            None => (None, None, false, None),
        };
        let pairs = || {
            headers
                .iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), v.as_str()))
        };
        // The headers' context is the caller's, as on the `/mcp` route; without one, the
        // handler's turn's, else `params._meta`'s (read by the SDK).
        let trace = TraceContext::from_pairs(pairs()).or(turn);
        let request = McpRequest {
            body: &body,
            caller: Caller::of(caller),
            headers: headers.as_ref().map(|_| McpHeaders::from_pairs(pairs())),
            accepts_stream,
        };
        let reply = carrying(trace, self.inner.handle(request)).await;
        let (status, content_type) = (reply.status(), reply.content_type());
        let (body, frames) = match reply {
            SdkReply::Json { body, .. } => (Some(body), None),
            SdkReply::Accepted => (None, None),
            SdkReply::Stream(messages) => (None, Some(RpcFrames::new(sse_frames(messages)))),
        };
        Ok(McpReply {
            status,
            content_type,
            body,
            frames,
        })
    }
}

/// What `McpBridge.handleRpc` answers.
#[napi]
pub struct McpReply {
    status: u16,
    content_type: Option<&'static str>,
    body: Option<Vec<u8>>,
    frames: Option<RpcFrames>,
}

impl std::fmt::Debug for McpReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpReply")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

#[napi]
impl McpReply {
    /// The HTTP status to answer with.
    #[napi(getter)]
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The response's `Content-Type` (`null` without a body).
    #[napi(getter)]
    pub fn content_type(&self) -> Option<String> {
        self.content_type.map(str::to_owned)
    }

    /// The JSON-RPC response, unless the reply is a stream or 202.
    #[napi(getter)]
    pub fn body(&self) -> Option<Buffer> {
        self.body.clone().map(Buffer::from)
    }

    /// The SSE frames (progress notifications, then the response) of a stream reply; the
    /// same stream on every read.
    #[napi(getter)]
    pub fn frames(&self) -> Option<RpcFrames> {
        self.frames.as_ref().map(|f| f.share())
    }
}
