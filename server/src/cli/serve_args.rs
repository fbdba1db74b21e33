//! The flags of `agentlog serve` (what `serve.rs` runs with them).

use std::net::SocketAddr;

use clap::Args;

use super::serve_auth::AuthArgs;
use super::{LogArgs, TopicArgs};
use agentlog::bridge::LimitsConfig;

const EXAMPLES: &str = "\
EXAMPLES:
  agentlog serve --demo
      the demo agent on http://127.0.0.1:8080/, its log in ./agentlog-data
  agentlog serve --demo --listen 127.0.0.1:0 --log memory://
      a free port (printed) and a log that lives only as long as the process
  agentlog serve --agent translator --name Translator --description 'Translates text'
      no worker in this process: run workers with `agentlog worker` or the SDK
  agentlog serve --agent translator --card translator-card.json
      the card's version, provider, skills and modes from a file (A2A 1.0 AgentCard JSON)
  agentlog keygen --out card.key && agentlog serve --demo --signing-key card.key
      the card signed (A2A §8.4) by card.key; check it with
      `agentlog card http://127.0.0.1:8080 --verify card.key.pub`
  agentlog serve --demo --signing-key old.key --signing-key new.key
      signed by both keys while clients move from the old key to the new one
  agentlog serve --listen 0.0.0.0:8080 --public-url https://agents.example.com/ \\
      --log iggy://iggy:iggy@127.0.0.1:8090
      behind a proxy: the card tells clients the public URL
  agentlog serve --agent translator --log iggy://iggy:iggy@iggy:8090 --listen 0.0.0.0:8080 \\
      --member-name b1 --advertise http://b1.internal:8080 --peer-key peer.key
      one of several bridges sharing the agent's partitions, each holding its share (they
      find each other on the log; Ctrl-C or SIGTERM hands this one's share over first)
  agentlog serve --demo --push-allow-private
      push notifications to webhooks on this machine too (by default only public
      addresses are sent to); every update of a task goes to its webhooks, retried

Prints one line, `agentlog serving agent \"demo\" at http://127.0.0.1:8080/ (...)`, once it
is ready: it has replayed the log (until then /readyz answers 503, and so does JSON-RPC, with a
retryable error). /healthz is liveness. The agent card is at <URL>.well-known/agent-card.json;
it lists one JSONRPC 1.0 interface (plus a 0.3 one with --with-v03-interface; the endpoint
answers 0.3 method names either way). Stops on Ctrl-C or SIGTERM (a --member-name member first
hands its partitions over while it serves on, up to --leave-timeout): stops accepting, lets open
requests finish (up to 10 s) while the demo worker lets running tasks finish (up to 10 s, then
releases them to another worker), then closes the log.

Diagnostics go to stderr: RUST_LOG picks them (default warn,agentlog=info), --log-format json
writes one JSON object per line.

The embedded log (file://) is written by one process: while `serve` runs, `agentlog worker`
cannot open the same directory (`agentlog tail` can: it reads beside the writer). Share an
iggy:// log to run workers alongside.";

/// Serve an agent: A2A JSON-RPC over HTTP, every call written to the log.
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLES)]
pub(super) struct ServeArgs {
    /// Where to listen; port 0 picks a free port (the printed URL shows the real one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub(super) listen: SocketAddr,

    /// The most connections held open at once; past it a new one is answered 503 (a
    /// retryable JSON-RPC error) and closed.
    #[arg(long, value_name = "N", default_value_t = agentlog::http::DEFAULT_MAX_CONNECTIONS)]
    pub(super) max_connections: usize,

    /// The most blocking SendMessage calls waiting at once; past it a blocking send is
    /// refused (retryable, nothing written).
    #[arg(long, value_name = "N", default_value_t = LimitsConfig::default().blocking_sends)]
    pub(super) max_blocking_sends: usize,

    /// The most streams (SendStreamingMessage, SubscribeToTask) open at once, over all callers.
    #[arg(long, value_name = "N", default_value_t = LimitsConfig::default().streams)]
    pub(super) max_streams: usize,

    /// The most streams one caller has open at once.
    #[arg(long, value_name = "N", default_value_t = LimitsConfig::default().streams_per_caller)]
    pub(super) max_streams_per_caller: usize,

    /// The most connections held open at once from one IP address (default: three quarters
    /// of --max-connections, so other addresses keep a quarter); behind a proxy, where every
    /// client has the proxy's address, set it to --max-connections.
    #[arg(long, value_name = "N")]
    pub(super) max_connections_per_peer: Option<usize>,

    /// How long a request's head may take to arrive (then the connection is closed; an idle
    /// keep-alive connection is closed after it too).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = super::parse_duration)]
    pub(super) header_timeout: std::time::Duration,

    /// How long a request body may take to arrive once its head has (then 408).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = super::parse_duration)]
    pub(super) body_timeout: std::time::Duration,

    /// A Host name the A2A and MCP endpoints answer besides loopback and the --public-url
    /// host (DNS rebinding protection); `*` answers any (behind a proxy that checks it).
    /// Repeatable.
    #[arg(long = "allowed-host", alias = "mcp-allow-host", value_name = "HOST")]
    pub(super) allowed_hosts: Vec<String>,

    /// An Origin browsers may call the A2A and MCP endpoints from (CORS), besides loopback
    /// and the --public-url origin: `scheme://host` (any port) or `scheme://host:port`; `*`
    /// allows any. Repeatable.
    #[arg(
        long = "allowed-origin",
        alias = "mcp-allow-origin",
        value_name = "ORIGIN"
    )]
    pub(super) allowed_origins: Vec<String>,

    #[command(flatten)]
    pub(super) log: LogArgs,

    #[command(flatten)]
    pub(super) topics: TopicArgs,

    #[command(flatten)]
    pub(super) auth: AuthArgs,

    #[command(flatten)]
    pub(super) signing: super::signing::ServeSigningArgs,

    #[command(flatten)]
    pub(super) mcp: super::serve_mcp::McpArgs,

    #[command(flatten)]
    pub(super) grpc: super::serve_grpc::GrpcArgs,

    #[command(flatten)]
    pub(super) push: super::serve_push::PushArgs,

    #[command(flatten)]
    pub(super) console: super::serve_console::ConsoleArgs,

    #[command(flatten)]
    pub(super) peers: super::serve_peers::PeerArgs,

    /// Also run the built-in demo worker in this process (echo, `sleep N`, `input`, `fail`, `reply TEXT`;
    /// the skill `shout`, its input checked by a schema),
    /// and describe it in the card's skills; and serve the demo MCP tools on /mcp (echo and
    /// the MCP conformance suite's fixture tools), answered in this process too.
    #[arg(long)]
    pub(super) demo: bool,

    /// Run the built-in conformance agent in this process instead: the agent the official
    /// A2A conformance kit (a2a-tck) drives, by the prefix of each messageId. Its card
    /// declares the kit's required extension, required of the kit's probe messages only
    /// (tests/conformance/README.md).
    #[arg(long, conflicts_with = "demo")]
    pub(super) conformance: bool,

    /// The agent's human-readable name in the card (default: the --agent name).
    #[arg(long, value_name = "TEXT")]
    pub(super) name: Option<String>,

    /// What the agent does, for the card.
    #[arg(long, value_name = "TEXT")]
    pub(super) description: Option<String>,

    /// The URL clients reach this server at, written in the card (default:
    /// http://<listen address>/; an unspecified address such as 0.0.0.0 shows as loopback).
    #[arg(long, value_name = "URL")]
    pub(super) public_url: Option<String>,

    /// Also list a JSONRPC 0.3 interface in the card, for 0.3-only clients.
    #[arg(long)]
    pub(super) with_v03_interface: bool,

    /// A JSON file with the agent card's contents, in the A2A 1.0 `AgentCard` shape (any
    /// subset: name, description, version, provider, skills, defaultInputModes, ...). Fields
    /// it leaves out keep their defaults; `supportedInterfaces` is always this server's and
    /// `capabilities.streaming` is always true; --name and --description win over the file.
    /// Its `signatures` are dropped (they cannot cover the card served): see --signing-key.
    #[arg(long, value_name = "FILE")]
    pub(super) card: Option<std::path::PathBuf>,

    /// Open a damaged embedded log (file://) by cutting each partition at its first damaged
    /// batch, as after a power loss, instead of refusing to start; what was after the damage
    /// is lost (a warning names each cut). The same as `?truncate_corrupt=true` in the URL.
    #[arg(long)]
    pub(super) truncate_corrupt: bool,
}
