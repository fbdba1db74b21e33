//! The Model Context Protocol's JSON-RPC types the MCP bridge speaks: tools, tool calls and
//! their results, tasks, resources (a task read as one), prompts and completions, the
//! protocol versions and the MCP-defined error codes. No I/O.
//!
//! Two eras share one endpoint (spec 2026-07-28): the **modern** one, where every request
//! carries its version and the client's capabilities in `params._meta` and there is no
//! handshake, and the **legacy** one (up to 2025-11-25), with the `initialize` handshake.
//! [`Era::of`] tells them apart per request; there is no connection state.
//!
//! How a tool call becomes records on the log (the call's params kept byte-exact inside an
//! A2A command) is in [`call`]'s docs and `skills/mcp-bridge/SKILL.md`.

pub mod call;
pub mod input;
pub mod log;
pub mod prompt;
pub mod resource;
pub mod task;
pub mod tool;
pub mod uri_template;

use serde_json::{Map, Value};

pub use call::{CallToolParams, CallToolResult, ContentBlock};
pub use input::{PendingInput, missing_capabilities};
pub use log::{LogMessage, LoggingLevel};
pub use prompt::{Completion, Prompt, PromptArgument, PromptMessage, PromptRole};
pub use resource::{Resource, ResourceContents, ResourceTemplate, TaskResource};
pub use task::{McpTask, McpTaskStatus};
pub use tool::{Tool, ToolAnnotations, validate_tool_name};
pub use uri_template::UriTemplate;

/// The modern protocol revision (no handshake, no sessions).
pub const MODERN_VERSION: &str = "2026-07-28";

/// The legacy revisions served through `initialize`, newest first. An `initialize` naming
/// another version is answered with the first (the spec's rule for an unknown version).
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The version a legacy request without `MCP-Protocol-Version` is taken to speak (the
/// Streamable HTTP transport's rule).
pub const LEGACY_DEFAULT_VERSION: &str = "2025-03-26";

/// `_meta` key of a modern request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of a modern request's client capabilities (required with the version).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of a modern request's client info (optional).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the level a modern request asks log messages at (absent: none are sent).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of the server info in modern results.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key naming the task a legacy `tasks/result` answer belongs to.
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// The Tasks extension's identifier (modern era).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// agentlog's vendor `_meta` key carrying the bridge path of the call (the hop guard across
/// protocols): a JSON array of bridge ids, oldest first, as A2A's `agentlog.hops` metadata.
pub const META_HOPS: &str = "dev.agentlog/hops";

/// The MCP-defined JSON-RPC error codes (the rest are JSON-RPC's own, -32700 to -32603).
pub mod codes {
    /// A header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) is missing or does not
    /// match the body.
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The request needs a client capability it did not declare (`data.requiredCapabilities`).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// The modern protocol version requested is not served (`data: {supported, requested}`).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
}

/// Which era a request belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28 and later: the version named in `_meta`.
    Modern {
        /// The version requested.
        version: String,
        /// The client's capabilities for this request.
        capabilities: Map<String, Value>,
    },
    /// Up to 2025-11-25: the `initialize` handshake (or no version at all).
    Legacy,
}

impl Era {
    /// The era of a request from its params' `_meta`: modern when it names a protocol
    /// version. A modern request whose version is not a string, or that lacks (or sends a
    /// non-object) `clientCapabilities`, is an error message for -32602.
    pub fn of(params: Option<&Map<String, Value>>) -> Result<Era, String> {
        let Some(meta) = params
            .and_then(|p| p.get("_meta"))
            .and_then(Value::as_object)
        else {
            return Ok(Era::Legacy);
        };
        let Some(version) = meta.get(META_PROTOCOL_VERSION) else {
            return Ok(Era::Legacy);
        };
        let version = version
            .as_str()
            .ok_or_else(|| format!("_meta[\"{META_PROTOCOL_VERSION}\"] must be a string"))?;
        let capabilities = match meta.get(META_CLIENT_CAPABILITIES) {
            Some(Value::Object(caps)) => caps.clone(),
            Some(_) => {
                return Err(format!(
                    "_meta[\"{META_CLIENT_CAPABILITIES}\"] must be an object"
                ));
            }
            None => {
                return Err(format!(
                    "a request naming {META_PROTOCOL_VERSION} must carry _meta[\"{META_CLIENT_CAPABILITIES}\"]"
                ));
            }
        };
        Ok(Era::Modern {
            version: version.to_owned(),
            capabilities,
        })
    }

    /// Whether this is the modern era.
    pub fn is_modern(&self) -> bool {
        matches!(self, Era::Modern { .. })
    }

    /// Whether a modern client declared extension `uri` in its capabilities.
    pub fn declares_extension(&self, uri: &str) -> bool {
        match self {
            Era::Modern { capabilities, .. } => capabilities
                .get("extensions")
                .and_then(Value::as_object)
                .is_some_and(|e| e.contains_key(uri)),
            Era::Legacy => false,
        }
    }
}

/// Whether `version` is a legacy revision this crate serves.
pub fn is_legacy_version(version: &str) -> bool {
    LEGACY_VERSIONS.contains(&version)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_era_comes_from_meta() {
        assert_eq!(Era::of(None).unwrap(), Era::Legacy);
        assert_eq!(
            Era::of(Some(&params(json!({"name": "x"})))).unwrap(),
            Era::Legacy
        );
        let modern = Era::of(Some(&params(json!({"_meta": {
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}
        }}))))
        .unwrap();
        assert!(modern.is_modern());
        assert!(modern.declares_extension(TASKS_EXTENSION));
        assert!(!modern.declares_extension("other"));
        assert!(!Era::Legacy.declares_extension(TASKS_EXTENSION));
        for bad in [
            json!({"_meta": {META_PROTOCOL_VERSION: 1, META_CLIENT_CAPABILITIES: {}}}),
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}),
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: []}}),
        ] {
            assert!(Era::of(Some(&params(bad))).is_err());
        }
    }

    #[test]
    fn legacy_versions_are_known() {
        assert!(is_legacy_version("2025-11-25"));
        assert!(is_legacy_version("2024-11-05"));
        assert!(!is_legacy_version(MODERN_VERSION));
    }
}
