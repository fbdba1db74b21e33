//! How the demo tools are defined: the agent they run on and the shape of a definition,
//! shared by `demo_tools.rs` and `demo_input_tools.rs`; the image the demo tools, resources
//! and prompts show.

use agentlog::mcp::{TaskSupport, ToolConfig};
use agentlog_wire::mcp::Tool;
use serde_json::{Value, json};

/// A 1×1 red PNG, base64.
pub(super) const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// The tool agent of every demo tool.
pub const DEMO_TOOLS_AGENT: &str = "mcp.demo";

/// A demo tool's definition, on [`DEMO_TOOLS_AGENT`].
pub(super) fn config(
    name: &str,
    description: &str,
    schema: Value,
    support: TaskSupport,
) -> ToolConfig {
    ToolConfig {
        agent: Some(DEMO_TOOLS_AGENT.to_owned()),
        task_support: support,
        ..ToolConfig::new(Tool {
            description: Some(description.to_owned()),
            ..Tool::new(name, schema)
        })
    }
}

/// The schema of a tool that takes no arguments.
pub(super) fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}
