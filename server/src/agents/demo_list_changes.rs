//! The MCP conformance suite's hooks for list-changed notifications
//! (`sep-2575-server-sends-tools-list-changed-on-subscription` and its prompts twin): the tools
//! `test_trigger_tool_change` and `test_trigger_prompt_change` each toggle a definition
//! (`test_dynamic_tool`, `test_dynamic_prompt`) in the served definitions through
//! `McpBridge::reload`, so the streams listening for that list hear it changed.
//!
//! A reload is the process's own, so these reload the bridge of the process whose worker
//! answers the call: `serve --demo` serves them with its in-process demo worker only.

use agentlog::mcp::{McpBridge, PromptConfig, TaskSupport, ToolConfig};
use agentlog::worker::{ToolCall, Tools, tool_fn};
use agentlog_wire::mcp::{CallToolResult, Prompt, PromptMessage};
use serde_json::json;

use super::tool_config::{config, no_arguments};

const TOOL_TRIGGER: &str = "test_trigger_tool_change";
const PROMPT_TRIGGER: &str = "test_trigger_prompt_change";
const DYNAMIC_TOOL: &str = "test_dynamic_tool";
const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

/// The two trigger tools' definitions.
pub fn list_change_tools() -> Vec<ToolConfig> {
    vec![
        config(
            TOOL_TRIGGER,
            "Adds or removes test_dynamic_tool (the tools' list changes)",
            no_arguments(),
            TaskSupport::Forbidden,
        ),
        config(
            PROMPT_TRIGGER,
            "Adds or removes test_dynamic_prompt (the prompts' list changes)",
            no_arguments(),
            TaskSupport::Forbidden,
        ),
    ]
}

fn dynamic_prompt() -> agentlog::Result<PromptConfig> {
    let prompt: Prompt = serde_json::from_value(json!({"name": DYNAMIC_PROMPT,
        "description": "A prompt test_trigger_prompt_change adds and removes"}))
    .map_err(|e| agentlog::Error::new(agentlog::ErrorKind::Internal, e.to_string()))?;
    let message: PromptMessage = serde_json::from_value(
        json!({"role": "user", "content": {"type": "text", "text": "A dynamic prompt."}}),
    )
    .map_err(|e| agentlog::Error::new(agentlog::ErrorKind::Internal, e.to_string()))?;
    Ok(PromptConfig::new(prompt, vec![message]))
}

/// Serve `mcp`'s definitions again with `change` applied.
async fn toggle(
    mcp: &McpBridge,
    change: impl FnOnce(&mut agentlog::mcp::McpConfig) -> agentlog::Result<()>,
) -> Result<CallToolResult, agentlog::worker::HandlerError> {
    let mut served = mcp.config();
    change(&mut served).map_err(|e| e.report().to_string())?;
    mcp.reload(served)
        .await
        .map_err(|e| e.report().to_string())?;
    Ok(CallToolResult::text("changed"))
}

/// `tools` answering the triggers (and the dynamic tool) by reloading `mcp`.
pub fn with_list_change_handlers(tools: Tools, mcp: McpBridge) -> Tools {
    let for_tools = mcp.clone();
    tools
        .tool(
            TOOL_TRIGGER,
            tool_fn(move |_call: ToolCall| {
                let mcp = for_tools.clone();
                async move {
                    toggle(&mcp, |config| {
                        let before = config.tools.len();
                        config.tools.retain(|t| t.tool.name != DYNAMIC_TOOL);
                        if config.tools.len() == before {
                            config.tools.push(super::tool_config::config(
                                DYNAMIC_TOOL,
                                "A tool test_trigger_tool_change adds and removes",
                                no_arguments(),
                                TaskSupport::Forbidden,
                            ));
                        }
                        Ok(())
                    })
                    .await
                }
            }),
        )
        .tool(
            PROMPT_TRIGGER,
            tool_fn(move |_call: ToolCall| {
                let mcp = mcp.clone();
                async move {
                    toggle(&mcp, |config| {
                        let before = config.prompts.len();
                        config.prompts.retain(|p| p.prompt.name != DYNAMIC_PROMPT);
                        if config.prompts.len() == before {
                            config.prompts.push(dynamic_prompt()?);
                        }
                        Ok(())
                    })
                    .await
                }
            }),
        )
        .tool(
            DYNAMIC_TOOL,
            tool_fn(|_call: ToolCall| async { Ok(CallToolResult::text("dynamic")) }),
        )
}
