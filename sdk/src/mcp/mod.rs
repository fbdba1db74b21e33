//! The MCP bridge, the A2A bridge's sibling: MCP clients list tools and call them, each call
//! a durable task on the tool's topics that a worker answers and any replica reads back.
//!
//! [`McpBridge`] is transport-free, like [`Bridge`]: [`McpBridge::handle`] takes a JSON-RPC
//! body (and, over HTTP, the MCP headers) and gives a JSON body, an accepted notification,
//! or a stream of JSON-RPC messages (progress, then the response). It owns no state but one
//! A2A [`Bridge`] per tool agent, whose view, records, fold and workers it shares: a tool
//! call is an A2A command carrying the call's params byte-exact
//! (`agentlog_wire::mcp::call`). The HTTP route is `crate::http::mcp`.
//!
//! Both protocol eras are served on one endpoint, told apart per request
//! ([`Era::of`](agentlog_wire::mcp::Era::of)). The method table, the status codes and the
//! mapping onto the log are in `skills/mcp-bridge/SKILL.md`.

mod answer;
mod call;
mod cancel;
mod catalog;
mod command;
mod config;
mod followup;
mod list;
mod listen;
mod mrtr;
mod params;
mod prompts;
mod relay;
mod reload;
mod reply;
mod resources;
mod rpc;
mod running;
mod served;
mod sessions;
mod shares;
mod skills;
mod tasks;
mod tool_skill;
mod watch;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use agentlog_wire::mcp::call as wire_call;
use agentlog_wire::mcp::{
    LEGACY_VERSIONS, META_SERVER_INFO, MODERN_VERSION, TASKS_EXTENSION, Tool,
};
use serde_json::{Map, Value, json};

use crate::bridge::{Bridge, BridgeConfig};
use crate::error::{Error, ErrorKind, Result};
use crate::log::Log;

pub use catalog::{PromptConfig, ResourceBody, ResourceConfig, ResourceTemplateConfig};
pub use config::{McpConfig, TaskSupport, ToolConfig, tools_from_json};
pub(crate) use relay::parse_ask_id;
pub use reload::ListChanged;
pub(crate) use rpc::trace_in_meta;
pub use rpc::{McpHeaders, McpReply, McpRequest, McpStream, sse_frames};
pub use sessions::SESSIONS_AGENT;
pub(crate) use shares::ListShare;
pub use skills::tool_skills;
pub use tool_skill::ToolSkill;

/// The MCP bridge over the tools' topics. Cheap to clone.
#[derive(Debug, Clone)]
pub struct McpBridge {
    /// The definitions served: a request reads the current ones once, at its start
    /// ([`McpBridge::current`]), and keeps them to its end.
    inner: Arc<Inner>,
    /// What reloads share: the current definitions and the list changes (`reload`).
    live: Arc<reload::Live>,
}

struct Inner {
    /// By name, so `tools/list` is deterministic and its cursor is a name.
    tools: BTreeMap<String, Entry>,
    /// One A2A bridge per tool agent.
    bridges: HashMap<String, Bridge>,
    /// Every bridge whose tasks are resources, by agent: the tool agents' and
    /// [`McpConfig::a2a`].
    task_bridges: BTreeMap<String, Bridge>,
    /// The configured resources, templates and prompts.
    catalog: catalog::Catalog,
    /// The requests a worker answers (`served`), by call name.
    served: BTreeMap<String, Entry>,
    /// The bridge of [`SESSIONS_AGENT`]: the legacy sessions' resource subscriptions.
    sessions: Bridge,
    config: McpConfig,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpBridge")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("agents", &self.bridges.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A served tool.
struct Entry {
    config: ToolConfig,
    /// The tool as `tools/list` shows it, per era (legacy adds `execution.taskSupport`).
    modern: Value,
    legacy: Value,
    validator: crate::bridge::Schema,
    /// The arguments its modern calls mirror into `Mcp-Param-*` headers (`x-mcp-header`).
    mirrored: Vec<params::Mirrored>,
    bridge: Bridge,
}

impl McpBridge {
    /// Check the tools (names, schemas), compile their input schemas, and open one A2A
    /// bridge per tool agent (creating its topics if needed); check the resources, templates
    /// and prompts. A bad definition is a config error.
    pub async fn open(log: Log, config: McpConfig) -> Result<Self> {
        let inner = Inner::build(&log, config, HashMap::new(), None).await?;
        Ok(Self::live(log, inner))
    }
}

impl Inner {
    /// The definitions of `config` checked and compiled, over the agent bridges in `bridges`
    /// (reused; the missing ones opened) and `sessions` (opened when `None`).
    async fn build(
        log: &Log,
        config: McpConfig,
        mut bridges: HashMap<String, Bridge>,
        sessions: Option<Bridge>,
    ) -> Result<Self> {
        let mut tools = BTreeMap::new();
        for tool in &config.tools {
            let name = tool.tool.name.clone();
            tool.tool
                .validate()
                .map_err(|e| Error::new(ErrorKind::Config, format!("tool {name:?}: {e}")))?;
            // Conforming clients drop a tool whose x-mcp-header annotations break the
            // spec's constraints, so such a definition is refused rather than served.
            let mirrored = params::mirrored(&tool.tool.input_schema).map_err(|e| {
                Error::new(
                    ErrorKind::Config,
                    format!("tool {name:?}: its inputSchema's {e}"),
                )
            })?;
            let validator =
                crate::bridge::Schema::compile(&tool.tool.input_schema).map_err(|e| {
                    Error::new(
                        ErrorKind::Config,
                        format!("tool {name:?}: its inputSchema does not compile: {e}"),
                    )
                })?;
            let agent = tool.agent();
            let bridge = match bridges.get(&agent) {
                Some(bridge) => bridge.clone(),
                None => {
                    let agent_config = agent_config(&config.bridge, &agent);
                    let bridge = shares::open_tool_bridge(log, agent_config).await?;
                    bridges.insert(agent, bridge.clone());
                    bridge
                }
            };
            let modern = serde_json::to_value(&tool.tool)
                .map_err(|e| Error::new(ErrorKind::Config, "tool").with_source(e))?;
            let mut legacy = modern.clone();
            if let Some(object) = legacy.as_object_mut() {
                let support = serde_json::to_value(tool.task_support).unwrap_or(Value::Null);
                object.insert("execution".into(), json!({"taskSupport": support}));
            }
            let entry = Entry {
                config: tool.clone(),
                modern,
                legacy,
                validator,
                mirrored,
                bridge,
            };
            if tools.insert(name.clone(), entry).is_some() {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("tool {name:?} is defined twice"),
                ));
            }
        }
        let catalog = catalog::Catalog::new(
            &config.resources,
            &config.resource_templates,
            &config.prompts,
        )?;
        let mut task_bridges: BTreeMap<String, Bridge> = bridges
            .iter()
            .map(|(agent, bridge)| (agent.clone(), bridge.clone()))
            .collect();
        for bridge in &config.a2a {
            task_bridges
                .entry(bridge.config().topics.agent.clone())
                .or_insert_with(|| bridge.clone());
        }
        // The requests a worker answers (`served`), each by its call name.
        let mut wanted: Vec<(String, &str)> = Vec::new();
        for prompt in &config.prompts {
            let name = &prompt.prompt.name;
            if let Some(agent) = &prompt.agent {
                wanted.push((wire_call::prompt_call_name(name), agent));
            }
            if let Some(agent) = &prompt.completion_agent {
                wanted.push((wire_call::prompt_completion_call_name(name), agent));
            }
        }
        for template in &config.resource_templates {
            let uri_template = &template.template.uri_template;
            if let Some(agent) = &template.agent {
                wanted.push((wire_call::resource_call_name(uri_template), agent));
            }
            if let Some(agent) = &template.completion_agent {
                wanted.push((
                    wire_call::resource_completion_call_name(uri_template),
                    agent,
                ));
            }
        }
        let mut served = BTreeMap::new();
        for (call, agent) in wanted {
            let bridge = match bridges.get(agent) {
                Some(bridge) => bridge.clone(),
                None => {
                    let agent_config = agent_config(&config.bridge, agent);
                    let bridge = shares::open_tool_bridge(log, agent_config).await?;
                    bridges.insert(agent.to_owned(), bridge.clone());
                    bridge
                }
            };
            served.insert(call.clone(), served::served_entry(call, agent, bridge)?);
        }
        let sessions = match sessions {
            Some(sessions) => sessions,
            None => {
                let mut sessions = agent_config(&config.bridge, SESSIONS_AGENT);
                sessions.card.default_input_modes =
                    vec![agentlog_wire::mcp::call::SUBSCRIPTIONS_MEDIA_TYPE.to_owned()];
                sessions.card.description =
                    "The MCP sessions' resource subscriptions, kept by agentlog".to_owned();
                // Any member serves a session's stream and end: every partition held.
                sessions.holding = None;
                Bridge::open(log.clone(), sessions).await?
            }
        };
        Ok(Inner {
            tools,
            bridges,
            task_bridges,
            catalog,
            served,
            sessions,
            config,
        })
    }
}

impl McpBridge {
    /// The tools served now, in `tools/list` order.
    pub fn tools(&self) -> Vec<Tool> {
        let now = self.current();
        now.inner
            .tools
            .values()
            .map(|e| e.config.tool.clone())
            .collect()
    }

    /// The bridge whose tasks are `agent`'s resources and MCP tasks (a tool agent's or an
    /// A2A agent's of [`McpConfig::a2a`]), as the definitions served now have it.
    pub(crate) fn task_bridge(&self, agent: &str) -> Option<Bridge> {
        self.current().inner.task_bridges.get(agent).cloned()
    }

    /// The A2A bridge of each tool agent, by agent name (for workers in the same process,
    /// readiness and metrics), as opened (a reload's new agents are not among them).
    pub fn bridges(&self) -> &HashMap<String, Bridge> {
        &self.inner.bridges
    }

    /// The configuration served now (the last [`reload`](Self::reload)'s, else `open`'s).
    pub fn config(&self) -> McpConfig {
        self.current().inner.config.clone()
    }

    fn entry(&self, name: &str) -> Result<&Entry> {
        self.inner.tools.get(name).ok_or_else(|| {
            Error::new(ErrorKind::InvalidParams, format!("Unknown tool: {name}"))
                .with_detail("name", name)
        })
    }

    fn server_info(&self) -> Value {
        json!({"name": self.inner.config.name, "version": self.inner.config.version})
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.inner.config.cache_ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// `server/discover` (modern): versions, capabilities, cache hints.
    fn discover(&self) -> Map<String, Value> {
        let mut versions = vec![MODERN_VERSION];
        versions.extend(LEGACY_VERSIONS);
        let mut result = Map::new();
        result.insert("supportedVersions".into(), json!(versions));
        let mut capabilities = self.capabilities();
        capabilities.insert("extensions".into(), json!({TASKS_EXTENSION: {}}));
        result.insert("capabilities".into(), Value::Object(capabilities));
        if let Some(instructions) = &self.inner.config.instructions {
            result.insert("instructions".into(), json!(instructions));
        }
        result.insert("ttlMs".into(), json!(self.ttl_ms()));
        result.insert("cacheScope".into(), json!("public"));
        result.insert("serverInfo".into(), self.server_info());
        result
    }

    /// The capabilities both eras declare: tools, logging and resources (every task is one;
    /// subscribable) always; prompts when some are configured; completions when there is
    /// something to complete (prompts, or configured templates). The lists may change on a
    /// reload (`reload`), so they declare `listChanged`.
    fn capabilities(&self) -> Map<String, Value> {
        let mut capabilities = Map::new();
        capabilities.insert("tools".into(), json!({"listChanged": true}));
        capabilities.insert("logging".into(), json!({}));
        // Subscriptions: legacy `resources/subscribe`, modern `subscriptions/listen`.
        capabilities.insert(
            "resources".into(),
            json!({"subscribe": true, "listChanged": true}),
        );
        let catalog = &self.inner.catalog;
        if !catalog.prompts.is_empty() {
            capabilities.insert("prompts".into(), json!({"listChanged": true}));
        }
        if !catalog.prompts.is_empty() || !catalog.templates.is_empty() {
            capabilities.insert("completions".into(), json!({}));
        }
        capabilities
    }

    /// `initialize` (legacy): the version agreed, capabilities, server info.
    fn initialize(&self, params: Option<&Map<String, Value>>) -> Map<String, Value> {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        // An unknown version is answered with our latest legacy one (the client decides).
        let version = requested
            .filter(|v| LEGACY_VERSIONS.contains(v))
            .unwrap_or(LEGACY_VERSIONS[0]);
        let mut result = Map::new();
        result.insert("protocolVersion".into(), json!(version));
        let mut capabilities = self.capabilities();
        capabilities.insert(
            "tasks".into(),
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        );
        result.insert("capabilities".into(), Value::Object(capabilities));
        result.insert("serverInfo".into(), self.server_info());
        if let Some(instructions) = &self.inner.config.instructions {
            result.insert("instructions".into(), json!(instructions));
        }
        result
    }

    /// `tools/list`: a page of tools in name order after `cursor` (the name of the first
    /// tool of the page; an empty one starts from the beginning).
    fn list_tools(
        &self,
        params: Option<&Map<String, Value>>,
        modern: bool,
    ) -> Result<Map<String, Value>> {
        let cursor = cursor(params)?.unwrap_or_default();
        if !cursor.is_empty() && !self.inner.tools.contains_key(cursor) {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!("Invalid cursor: {cursor}"),
            )
            .with_detail("field", "cursor"));
        }
        let page = self.inner.config.page_size.max(1);
        let mut from = self.inner.tools.range(cursor.to_owned()..);
        let tools: Vec<Value> = from
            .by_ref()
            .take(page)
            .map(|(_, e)| {
                if modern {
                    e.modern.clone()
                } else {
                    e.legacy.clone()
                }
            })
            .collect();
        let mut result = Map::new();
        result.insert("tools".into(), Value::Array(tools));
        if let Some((next, _)) = from.next() {
            result.insert("nextCursor".into(), json!(next));
        }
        if modern {
            self.cache_hints(&mut result, Cache::Public);
        }
        Ok(result)
    }

    /// A modern cacheable result's `ttlMs` and `cacheScope`.
    fn cache_hints(&self, result: &mut Map<String, Value>, cache: Cache) {
        let (ttl, scope) = match cache {
            Cache::Public => (self.ttl_ms(), "public"),
            Cache::Private => (self.ttl_ms(), "private"),
            Cache::Stale => (0, "private"),
        };
        result.insert("ttlMs".into(), json!(ttl));
        result.insert("cacheScope".into(), json!(scope));
    }

    /// Decorate a modern result: `resultType` (unless it has one) and the server info in `_meta`.
    fn modern_result(
        &self,
        mut result: Map<String, Value>,
        result_type: &str,
    ) -> Map<String, Value> {
        // An `input_required` answer names its own type.
        result
            .entry("resultType")
            .or_insert_with(|| json!(result_type));
        let meta = result
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(META_SERVER_INFO.into(), self.server_info());
        }
        result
    }
}

/// How long, and for whom, a modern client may cache a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cache {
    /// The same for every caller, for `McpConfig::cache_ttl`: configuration.
    Public,
    /// The caller's own, for `McpConfig::cache_ttl`: what no longer changes (a finished task).
    Private,
    /// The caller's own, stale at once: what changes as tasks do.
    Stale,
}

/// A list method's `cursor`: `None` when absent, null or empty (the first page); not a
/// string is -32602.
fn cursor(params: Option<&Map<String, Value>>) -> Result<Option<&str>> {
    match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(cursor)) if cursor.is_empty() => Ok(None),
        Some(Value::String(cursor)) => Ok(Some(cursor.as_str())),
        Some(_) => Err(
            Error::new(ErrorKind::InvalidParams, "cursor must be a string")
                .with_detail("field", "cursor"),
        ),
    }
}

/// The A2A bridge settings of tool agent `agent`: the template's (its share of the
/// partitions too), with the agent's topics, id and a card that takes tool calls.
fn agent_config(template: &BridgeConfig, agent: &str) -> BridgeConfig {
    let fresh = BridgeConfig::new(agent);
    let mut card = fresh.card;
    // What the MCP bridge writes: calls, and the input responses that resume a task.
    card.default_input_modes = vec![
        agentlog_wire::mcp::call::CALL_MEDIA_TYPE.to_owned(),
        agentlog_wire::mcp::call::INPUT_RESPONSES_MEDIA_TYPE.to_owned(),
    ];
    card.description = format!("The MCP tools of agent {agent}, served by agentlog");
    BridgeConfig {
        topics: crate::agent::AgentTopics::new(
            &template.topics.events.stream,
            agent,
            template.topics.partitions,
        ),
        card,
        id: agent.to_owned(),
        extended_card: None,
        extension_scope: Default::default(),
        // The tool agent takes calls: the A2A agent's skills are not its.
        skill_schemas: Default::default(),
        // The share of the members' map this bridge holds (`shares`), as the A2A agent's.
        ..template.clone()
    }
}

#[cfg(test)]
mod tests;
