//! `agentlog serve`'s MCP side: `--tools FILE` (and the demo tools, resources and prompts with
//! `--demo`) served on the MCP route beside the A2A endpoint, in the same router and process;
//! the A2A agent's tasks are resources there too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use axum::Router;
use clap::Args;

use super::{CliError, CliResult};
use crate::agents::demo_list_changes::{list_change_tools, with_list_change_handlers};
use crate::agents::demo_resources::demo_definitions;
use crate::agents::demo_tools::{DEMO_TOOLS_AGENT, demo_tool_handlers, demo_tools};
use agentlog::bridge::Bridge;
use agentlog::http::auth::EdgeAuth;
use agentlog::http::mcp::{McpAuth, McpHttpConfig, router};
use agentlog::http::{Allowed, Forwarding};
use agentlog::log::Log;
use agentlog::mcp::{McpBridge, McpConfig};
use agentlog::worker::{Worker, WorkerConfig};
use agentlog_wire::a2a::AgentCard;

/// The MCP flags of `serve`.
#[derive(Debug, Args)]
pub(super) struct McpArgs {
    /// Serve the MCP tools defined in FILE on the MCP route (default /mcp): a JSON array of
    /// tool definitions (`name`, `title`, `description`, `inputSchema`, `outputSchema`,
    /// `annotations`, plus agentlog's `agent` — the topics its calls go to, default
    /// `mcp.<name>` — `taskSupport` (forbidden, optional, required) and
    /// `requiredCapabilities`), or an object with such an array under `tools` and, beside it,
    /// `resources`, `resourceTemplates` and `prompts` arrays (docs/mcp.md has the format).
    /// Tool calls are answered by workers of their agents (`agentlog worker --tool NAME
    /// --exec CMD`). With --demo the demo tools, resources and prompts are served too (the
    /// tools answered in this process). On SIGHUP the file is read again and served from
    /// then on (clients listening are told which lists changed); a file that does not check
    /// is refused and the definitions served stay.
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,

    /// The MCP route's path.
    #[arg(long, value_name = "PATH", default_value = "/mcp")]
    mcp_path: String,
}

/// The MCP route and the worker answering the demo tools.
pub(super) struct Mcp {
    pub(super) router: Router,
    pub(super) worker: Option<Worker>,
    /// Where the route answers (`<public_url><path>`).
    pub(super) url: String,
    pub(super) tools: usize,
    /// The tool agents' bridges (the web console shows their tasks).
    pub(super) bridges: Vec<Bridge>,
}

/// Open the MCP bridge when there are tools to serve (`--tools`, or `--demo`); `a2a` is the
/// A2A agent's bridge, whose configuration (signing, trust, retention, hops) the tool agents
/// start from and whose tasks are resources too, `public_url` the base URL clients name,
/// `auth` the A2A endpoint's edge auth, which the MCP route enforces too (as an OAuth
/// resource server at `<public_url><path>`), `forward` a member's forwarding (requests about
/// tasks held elsewhere go to their owners).
#[allow(clippy::too_many_arguments)]
pub(super) async fn open(
    args: &McpArgs,
    definitions: Option<McpConfig>,
    demo: bool,
    log: &Log,
    a2a: &Bridge,
    public_url: &url::Url,
    allowed: &Allowed,
    auth: Option<EdgeAuth>,
    forward: Option<Forwarding>,
) -> CliResult<Option<Mcp>> {
    let Some(mut config) = definitions else {
        return Ok(None);
    };
    let count = config.tools.len();
    let template = a2a.config();
    config.bridge = template.clone();
    config.a2a = vec![a2a.clone()];
    let mcp = McpBridge::open(log.clone(), config).await?;
    #[cfg(unix)]
    reload_on_hangup(
        mcp.clone(),
        args.tools.clone(),
        demo,
        a2a.config().topics.agent.clone(),
    )?;
    let worker = match mcp.bridges().get(DEMO_TOOLS_AGENT).filter(|_| demo) {
        Some(bridge) => {
            let mut config = WorkerConfig::new(DEMO_TOOLS_AGENT);
            // A member's tool agent holds its share only; the worker takes turns of every
            // partition its consumer group gives it, so it follows them in a view of its own.
            if template.holding.is_none() {
                config.view = Some(bridge.view().clone());
            }
            config.signer = template.signer.clone();
            config.trust = template.trust.clone();
            // The list-change hooks reload this process's bridge, so only this worker has them.
            let handlers = with_list_change_handlers(demo_tool_handlers(), mcp.clone());
            Some(Worker::start(log.clone(), config, handlers).await?)
        }
        None => None,
    };
    let mut http = McpHttpConfig::new()
        .path(args.mcp_path.clone())
        .allowed(allowed.clone());
    http.forward = forward;
    if let Some(edge) = auth {
        let bad = |why: String| CliError::msg(format!("bad --mcp-path: {why}"));
        let resource = public_url
            .join(args.mcp_path.trim_start_matches('/'))
            .map_err(|e| bad(e.to_string()))?;
        http.auth = Some(McpAuth::new(edge, resource).map_err(|e| bad(e.message().to_owned()))?);
    }
    let url = http.url(public_url);
    let bridges = mcp.bridges().values().cloned().collect();
    let router =
        router(mcp, http).map_err(|e| CliError::msg(format!("bad --mcp-path: {}", e.message())))?;
    Ok(Some(Mcp {
        router,
        worker,
        url,
        tools: count,
        bridges,
    }))
}

/// On each SIGHUP, the definitions read again (`--tools FILE`, and the demo's with `--demo`;
/// tools that are skills of `agent` put on its topics, as at start) and served from then on
/// (`McpBridge::reload`); what happened is logged. The A2A card is not reread: a skill added
/// to the file is an MCP tool until the next start.
#[cfg(unix)]
fn reload_on_hangup(
    mcp: McpBridge,
    tools: Option<PathBuf>,
    demo: bool,
    agent: String,
) -> CliResult<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups = signal(SignalKind::hangup())
        .map_err(|e| CliError::msg(format!("cannot take SIGHUP (to reload --tools): {e}")))?;
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            let read = read_definitions(tools.as_deref(), demo).and_then(|config| {
                let mut config = config.unwrap_or_else(|| McpConfig::new(Vec::new()));
                agentlog::mcp::tool_skills(&mut config, &agent)
                    .map_err(|e| CliError::msg(format!("bad --tools: {}", e.message())))?;
                Ok(config)
            });
            let reloaded = match read {
                Ok(config) => mcp.reload(config).await.map_err(|e| e.report().to_string()),
                Err(e) => Err(e.to_string()),
            };
            match reloaded {
                Ok(changed) => tracing::info!(
                    tools = changed.tools,
                    prompts = changed.prompts,
                    resources = changed.resources,
                    "SIGHUP: MCP definitions reloaded (true: that list changed)"
                ),
                Err(error) => tracing::warn!(
                    %error,
                    "SIGHUP: the MCP definitions were not reloaded; the ones served stay"
                ),
            }
        }
    });
    Ok(())
}

/// What the MCP route serves, when there is something to serve: `--tools`' definitions,
/// and the demo's with `--demo`.
pub(super) fn definitions(args: &McpArgs, demo: bool) -> CliResult<Option<McpConfig>> {
    read_definitions(args.tools.as_deref(), demo)
}

fn read_definitions(tools: Option<&Path>, demo: bool) -> CliResult<Option<McpConfig>> {
    let mut config = match tools {
        Some(path) => definitions_file(path)?,
        None if demo => McpConfig::new(Vec::new()),
        None => return Ok(None),
    };
    if demo {
        config.tools.extend(demo_tools());
        config.tools.extend(list_change_tools());
        let fixtures = demo_definitions()?;
        config.resources.extend(fixtures.resources);
        config
            .resource_templates
            .extend(fixtures.resource_templates);
        config.prompts.extend(fixtures.prompts);
    }
    Ok(Some(config))
}

/// The skills the definitions' tools declare (`"skill"`) added to `card`, with their input
/// schemas: each is a tool and a skill of A2A agent `agent`, whose topics carry its calls.
/// A skill id the card lists already is refused (a message names one skill).
pub(super) fn add_tool_skills(
    config: &mut McpConfig,
    agent: &str,
    card: &mut AgentCard,
    schemas: &mut BTreeMap<String, serde_json::Value>,
) -> CliResult<()> {
    let bad = |why: String| CliError::msg(format!("bad --tools: {why}"));
    let skills =
        agentlog::mcp::tool_skills(config, agent).map_err(|e| bad(e.message().to_owned()))?;
    for (skill, schema) in skills {
        if card.skills.iter().any(|s| s.id == skill.id) {
            return Err(bad(format!(
                "tool {:?} is a skill, and the card lists a skill of that id already",
                skill.id
            )));
        }
        schemas.insert(skill.id.clone(), schema);
        card.skills.push(skill);
    }
    Ok(())
}

/// The definitions in `path` (a resource's or a prompt's `file` relative to its directory).
fn definitions_file(path: &Path) -> CliResult<McpConfig> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::msg(format!("cannot read --tools {}: {e}", path.display())))?;
    let bad = |why: String| CliError::msg(format!("bad --tools {}: {why}", path.display()));
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    McpConfig::from_json(value, path.parent()).map_err(|e| bad(e.message().to_owned()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_file_is_an_array_or_an_object_with_definitions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        std::fs::write(
            &path,
            r#"[{"name": "a", "inputSchema": {"type": "object"}, "taskSupport": "optional"}]"#,
        )
        .unwrap();
        assert_eq!(definitions_file(&path).unwrap().tools[0].tool.name, "a");
        std::fs::write(
            &path,
            r#"{"tools": [{"name": "b", "inputSchema": {"type": "object"}, "agent": "x"}]}"#,
        )
        .unwrap();
        assert_eq!(definitions_file(&path).unwrap().tools[0].agent(), "x");
        std::fs::write(dir.path().join("notes.txt"), "some notes").unwrap();
        std::fs::write(
            &path,
            r#"{"resources": [{"uri": "docs://notes", "name": "notes", "mimeType": "text/plain", "file": "notes.txt"}]}"#,
        )
        .unwrap();
        let config = definitions_file(&path).unwrap();
        assert_eq!(
            config.resources[0].body,
            agentlog::mcp::ResourceBody::Text("some notes".into())
        );
        for bad in [
            "{}",
            "[{\"name\": 1}]",
            "nope",
            r#"{"resources": [{"uri": "x://", "name": "x", "file": "gone"}]}"#,
        ] {
            std::fs::write(&path, bad).unwrap();
            assert!(definitions_file(&path).is_err(), "{bad}");
        }
    }
}
