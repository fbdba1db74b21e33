//! What an [`McpBridge`](super::McpBridge) serves: its tools and how it answers.

use std::path::Path;
use std::time::Duration;

use agentlog_wire::mcp::Tool;
use serde::{Deserialize, Serialize};

use super::catalog::{
    PromptConfig, ResourceConfig, ResourceTemplateConfig, prompts_from_json, resources_from_json,
    templates_from_json,
};
use crate::bridge::{Bridge, BridgeConfig};
use crate::error::{Error, ErrorKind, Result};

/// Whether a tool's calls may run as MCP tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Always answered on the request (the default).
    #[default]
    Forbidden,
    /// As a task when the client supports tasks (modern: declares the Tasks extension;
    /// legacy: asks with `task`), else on the request.
    Optional,
    /// Only as a task: a client without task support gets -32021.
    Required,
}

/// One tool: its definition and where its calls go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolConfig {
    /// The definition `tools/list` serves.
    #[serde(flatten)]
    pub tool: Tool,
    /// The agent whose topics carry the tool's calls (workers serving it join that agent's
    /// worker group). Default `mcp.<name>`: one agent per tool. Tools naming one agent share
    /// its topics, and its workers serve them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Whether calls may run as tasks. Default forbidden.
    #[serde(default)]
    pub task_support: TaskSupport,
    /// MRTR, then a task (modern calls declaring the Tasks extension, on a tool whose calls
    /// may be tasks): the first round runs as a sync call: if the tool asks, the call answers
    /// `input_required` (MRTR); the retry that answers it becomes the task (a
    /// `CreateTaskResult` for the same A2A task). A first round that does not ask answers its
    /// result. Default false: such calls are tasks before the tool runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub input_before_task: bool,
    /// Client capabilities a call needs (a capabilities object, e.g. `{"sampling": {}}`): a
    /// modern request not declaring them all gets -32021 naming the missing ones, before
    /// anything is written. Legacy requests carry no capabilities and are not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_capabilities: Option<serde_json::Map<String, serde_json::Value>>,
    /// Also a skill of the A2A agent (`serve --tools`), answered by the same handler:
    /// [`tool_skills`](super::tool_skills) lists it on the card and puts the tool's calls on
    /// that agent's topics. Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<super::tool_skill::ToolSkill>,
}

impl ToolConfig {
    /// A tool with its default agent and no task support.
    pub fn new(tool: Tool) -> Self {
        Self {
            tool,
            agent: None,
            task_support: TaskSupport::Forbidden,
            input_before_task: false,
            required_capabilities: None,
            skill: None,
        }
    }

    /// The agent whose topics carry the tool's calls.
    pub fn agent(&self) -> String {
        self.agent
            .clone()
            .unwrap_or_else(|| format!("mcp.{}", self.tool.name))
    }
}

/// Tool definitions from JSON, as `serve --tools FILE` and the bindings take them: an array
/// of [`ToolConfig`]s (the MCP `Tool` fields plus `agent`, `taskSupport`, `inputBeforeTask`,
/// `requiredCapabilities`), or an object holding one under `tools`. Anything else is a
/// config error naming what is wrong. (Names and schemas are checked by
/// [`McpBridge::open`](super::McpBridge::open).)
pub fn tools_from_json(value: serde_json::Value) -> Result<Vec<ToolConfig>> {
    let list = match value {
        serde_json::Value::Object(mut object) => object.remove("tools").ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                "tool definitions: an object needs a \"tools\" array",
            )
        })?,
        other => other,
    };
    serde_json::from_value(list).map_err(|e| {
        Error::new(ErrorKind::Config, format!("bad tool definitions: {e}")).with_source(e)
    })
}

/// How an MCP bridge behaves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct McpConfig {
    /// The tools, served in name order.
    pub tools: Vec<ToolConfig>,
    /// Static resources, listed in this order before the caller's tasks.
    pub resources: Vec<ResourceConfig>,
    /// Resource templates served from configuration, listed after the tasks' own two.
    pub resource_templates: Vec<ResourceTemplateConfig>,
    /// Prompts, served in name order.
    pub prompts: Vec<PromptConfig>,
    /// A2A bridges whose tasks are resources too (`agentlog://tasks/<agent>:<id>`), beside
    /// the tool agents' own: the agent `serve` serves, for one.
    pub a2a: Vec<Bridge>,
    /// `serverInfo.name`. Default `agentlog`.
    pub name: String,
    /// `serverInfo.version`. Default this crate's version.
    pub version: String,
    /// `instructions` for the model, if any.
    pub instructions: Option<String>,
    /// Tools per `tools/list` page. Default 100.
    pub page_size: usize,
    /// Tasks per legacy `tasks/list` page (1 to 100). Default 50.
    pub tasks_page_size: usize,
    /// The freshness hint on modern list and discover results (`ttlMs`). Default 60 s.
    pub cache_ttl: Duration,
    /// How often a client should poll a task (`pollIntervalMs`). Default 500 ms.
    pub poll_interval: Duration,
    /// What every tool agent's A2A bridge starts from (retention, timeouts, signing, trust,
    /// the hop limit); its topics, card and id are set per agent, the id being the agent's
    /// name (the hop guard).
    pub bridge: BridgeConfig,
}

setters!(McpConfig {
    tools: Vec<ToolConfig>,
    resources: Vec<ResourceConfig>,
    resource_templates: Vec<ResourceTemplateConfig>,
    prompts: Vec<PromptConfig>,
    a2a: Vec<Bridge>,
    name: String,
    version: String,
    page_size: usize,
    tasks_page_size: usize,
    cache_ttl: Duration,
    poll_interval: Duration,
    bridge: BridgeConfig,
} optional {
    instructions: String,
});

impl McpConfig {
    /// Defaults serving `tools`.
    pub fn new(tools: Vec<ToolConfig>) -> Self {
        Self {
            tools,
            resources: Vec::new(),
            resource_templates: Vec::new(),
            prompts: Vec::new(),
            a2a: Vec::new(),
            name: "agentlog".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            page_size: 100,
            tasks_page_size: 50,
            cache_ttl: Duration::from_secs(60),
            poll_interval: Duration::from_millis(500),
            bridge: BridgeConfig::new("mcp"),
        }
    }

    /// Defaults serving a definitions file's contents, as `serve --tools FILE` reads it: an
    /// array of tools ([`tools_from_json`]), or an object with `tools`, `resources`,
    /// `resourceTemplates` and `prompts` arrays (any may be absent). A resource's or a
    /// prompt content's `file` is read now, relative to `base` (the file's directory).
    /// Anything else is a config error naming what is wrong.
    pub fn from_json(value: serde_json::Value, base: Option<&Path>) -> Result<Self> {
        let serde_json::Value::Object(mut object) = value else {
            return Ok(Self::new(tools_from_json(value)?));
        };
        if !["tools", "resources", "resourceTemplates", "prompts"]
            .iter()
            .any(|member| object.contains_key(*member))
        {
            return Err(Error::new(
                ErrorKind::Config,
                "definitions: an object needs a \"tools\", \"resources\", \"resourceTemplates\" or \"prompts\" array",
            ));
        }
        let mut take = |member: &str| {
            object
                .remove(member)
                .unwrap_or_else(|| serde_json::json!([]))
        };
        let tools = tools_from_json(take("tools"))?;
        let resources = resources_from_json(take("resources"), base)?;
        let resource_templates = templates_from_json(take("resourceTemplates"), base)?;
        let prompts = prompts_from_json(take("prompts"), base)?;
        Ok(Self::new(tools)
            .resources(resources)
            .resource_templates(resource_templates)
            .prompts(prompts))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_config_is_the_tool_plus_where_it_runs() {
        let config: ToolConfig = serde_json::from_value(json!({
            "name": "add",
            "inputSchema": {"type": "object"},
            "taskSupport": "optional"
        }))
        .unwrap();
        assert_eq!(config.agent(), "mcp.add");
        assert_eq!(config.task_support, TaskSupport::Optional);
        assert!(!config.input_before_task);
        let composed: ToolConfig = serde_json::from_value(json!({
            "name": "ask", "inputSchema": {"type": "object"},
            "taskSupport": "required", "inputBeforeTask": true
        }))
        .unwrap();
        assert!(composed.input_before_task);
        assert_eq!(
            serde_json::to_value(&composed).unwrap()["inputBeforeTask"],
            true
        );
        assert!(
            serde_json::to_value(&config)
                .unwrap()
                .get("inputBeforeTask")
                .is_none()
        );
        let shared: ToolConfig = serde_json::from_value(json!({
            "name": "sub", "inputSchema": {"type": "object"}, "agent": "math"
        }))
        .unwrap();
        assert_eq!(shared.agent(), "math");
        assert_eq!(shared.task_support, TaskSupport::Forbidden);
    }

    #[test]
    fn tool_definitions_are_an_array_or_an_object_with_one() {
        let tools = tools_from_json(json!([{"name": "a", "inputSchema": {"type": "object"}}]));
        assert_eq!(tools.unwrap()[0].tool.name, "a");
        let tools = tools_from_json(json!({"tools": [
            {"name": "b", "inputSchema": {"type": "object"}, "agent": "x"}
        ]}));
        assert_eq!(tools.unwrap()[0].agent(), "x");
        for bad in [
            json!({}),
            json!([{"name": 1}]),
            json!("nope"),
            json!([{"name": "c"}]),
        ] {
            let error = tools_from_json(bad.clone()).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Config, "{bad}");
        }
        let error = tools_from_json(json!([{"name": "c"}])).unwrap_err();
        assert!(
            error.message().contains("inputSchema"),
            "{}",
            error.message()
        );
    }

    #[test]
    fn a_definitions_file_holds_tools_resources_templates_and_prompts() {
        let config = McpConfig::from_json(
            json!({
                "tools": [{"name": "a", "inputSchema": {"type": "object"}}],
                "resources": [{"uri": "docs://a", "name": "a", "text": "A"}],
                "resourceTemplates": [{"uriTemplate": "docs://{x}", "name": "x", "text": "{x}"}],
                "prompts": [{"name": "p", "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}]
            }),
            None,
        )
        .unwrap();
        assert_eq!(
            (
                config.tools.len(),
                config.resources.len(),
                config.resource_templates.len(),
                config.prompts.len()
            ),
            (1, 1, 1, 1)
        );
        let only_prompts = McpConfig::from_json(json!({"prompts": []}), None).unwrap();
        assert!(only_prompts.tools.is_empty());
        let tools = McpConfig::from_json(
            json!([{"name": "b", "inputSchema": {"type": "object"}}]),
            None,
        );
        assert_eq!(tools.unwrap().tools[0].tool.name, "b");
        for bad in [
            json!({}),
            json!({"resources": [{"uri": "x://"}]}),
            json!({"prompts": {}}),
        ] {
            let error = McpConfig::from_json(bad.clone(), None).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Config, "{bad}");
        }
    }
}
