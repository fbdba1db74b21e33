//! `serve`'s web console (`/console`, `agentlog::http::console`): on by default where only
//! this machine can reach it with no credentials (a loopback listener without
//! authentication), else when `--console` asks.

use std::net::SocketAddr;

use agentlog::bridge::Bridge;
use agentlog::http::Allowed;
use agentlog::http::auth::EdgeAuth;
use agentlog::http::console::{self, CONSOLE_PATH, ConsoleBinding, ConsoleConfig};
use axum::Router;
use clap::Args;

/// The console's flags.
#[derive(Debug, Args)]
pub(super) struct ConsoleArgs {
    /// Serve the web console at /console (the agent's tasks and each task's records, live)
    /// also where it is off by default: with authentication (it then asks for a token and
    /// shows each caller only its own tasks) or on a listener beyond loopback.
    #[arg(long, conflicts_with = "no_console")]
    console: bool,

    /// Do not serve the web console (on by default on a loopback listener without
    /// authentication).
    #[arg(long)]
    no_console: bool,
}

impl ConsoleArgs {
    /// Whether the console is served for a server listening on `listen` with `auth`.
    fn wanted(&self, listen: SocketAddr, auth: Option<&EdgeAuth>) -> bool {
        self.console || (!self.no_console && auth.is_none() && listen.ip().is_loopback())
    }
}

/// The console's routes over the A2A agent's bridge and the MCP tool agents', and where it
/// answers, if it is served.
pub(super) fn open(
    args: &ConsoleArgs,
    listen: SocketAddr,
    public_url: &url::Url,
    a2a: &Bridge,
    mcp: &[Bridge],
    auth: Option<&EdgeAuth>,
    allowed: &Allowed,
) -> Option<(Router, String)> {
    if !args.wanted(listen, auth) {
        return None;
    }
    let mut bridges = vec![(a2a.clone(), ConsoleBinding::A2a)];
    bridges.extend(mcp.iter().map(|b| (b.clone(), ConsoleBinding::Mcp)));
    let mut config = ConsoleConfig::new().allowed(allowed.clone());
    config.auth = auth.cloned();
    let url = public_url
        .join(CONSOLE_PATH.trim_start_matches('/'))
        .map_or_else(|_| CONSOLE_PATH.to_owned(), |u| u.to_string());
    Some((console::router(bridges, config), url))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(console: bool, no_console: bool) -> ConsoleArgs {
        ConsoleArgs {
            console,
            no_console,
        }
    }

    #[test]
    fn on_by_default_only_on_loopback_without_auth() {
        let loopback: SocketAddr = ([127, 0, 0, 1], 8080).into();
        let anywhere: SocketAddr = ([0, 0, 0, 0], 8080).into();
        let auth = EdgeAuth::new(agentlog::http::auth::ApiKeys::default());
        assert!(args(false, false).wanted(loopback, None));
        assert!(!args(false, false).wanted(anywhere, None));
        assert!(!args(false, false).wanted(loopback, Some(&auth)));
        assert!(args(true, false).wanted(loopback, Some(&auth)));
        assert!(args(true, false).wanted(anywhere, None));
        assert!(!args(false, true).wanted(loopback, None));
    }
}
