//! `agentlog pusher`: the push notification sender on its own, for deployments that run it
//! apart from `serve` (which then runs with `--push external`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::output::Out;
use super::serve_push::SenderArgs;
use super::{CliError, CliResult, LogArgs};
use agentlog::http::{push_metrics_router, serve};
use agentlog::push::Pusher;

const EXAMPLES: &str = "\
EXAMPLES:
  agentlog pusher --log iggy://iggy:iggy@127.0.0.1:8090 --agent translator \\
      --push-key push.key --push-issuer https://agents.example.com/
      send the agent's push notifications while `agentlog serve --push external
      --push-key push.key` answers its clients; several pushers share the work
  agentlog pusher --log iggy://iggy:iggy@127.0.0.1:8090 --push-key push.key \\
      --metrics-listen 127.0.0.1:9465
      also serve its counters (agentlog_push_*: delivered, failed attempts, dead letters,
      pending; and the log's agentlog_log_*) on http://127.0.0.1:9465/metrics

Every update of a task with push configs is POSTed to each of its webhooks, in log order per
webhook, retried (--push-attempts, --push-retry-delay, --push-max-delay, --push-max-age), and
given up only with a dead-letter record on the task's log (`agentlog tail` shows them). The
pushers of an agent form one consumer group: each update goes to each webhook once, however
many run (beside `serve --push on` too), and a restarted one resumes where the group stopped.

The embedded log (file://) is written by one process: a pusher apart from `serve` needs a
shared log (iggy://). Prints one line once running; stops on Ctrl-C or SIGTERM.";

/// Send an agent's push notifications (the sender of `serve`, run on its own).
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLES)]
pub(super) struct PusherArgs {
    #[command(flatten)]
    log: LogArgs,

    #[command(flatten)]
    sender: SenderArgs,

    /// The bridge's ed25519 key (PKCS#8 PEM): signs the dead-letter records (as the bridge
    /// signs its own) and, without --push-key, the notifications. Default: unsigned records.
    #[arg(long = "signing-key", value_name = "FILE")]
    signing_key: Option<PathBuf>,

    /// A trust file (see `serve --trust`): only records signed by a trusted key allowed their
    /// kind are told of.
    #[arg(long, value_name = "FILE")]
    trust: Option<PathBuf>,

    /// Serve the sender's metrics (OpenMetrics: agentlog_push_* as on serve's /metrics, the
    /// log's agentlog_log_*) on GET http://ADDR/metrics; port 0 picks a free port (the
    /// printed line shows it). Default: no metrics endpoint.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
}

/// `agentlog pusher`.
pub(super) async fn run(args: PusherArgs, out: &Out) -> CliResult {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::msg(format!("cannot read the current directory: {e}")))?;
    let url = super::resolve_log_url(&args.log.log, &cwd)?;
    let signer = args
        .signing_key
        .as_deref()
        .map(super::signing::signer)
        .transpose()?;
    let card_key = match &args.signing_key {
        Some(path) => Some(
            agentlog::security::SigningKey::load(path)
                .map_err(|e| CliError::msg(format!("bad --signing-key: {}", e.message())))?,
        ),
        None => None,
    };
    let key = args.sender.key(card_key.as_ref())?;
    let mut config = args
        .sender
        .config(&args.log.agent, &args.log.agent, key, signer)?;
    config.trust = args
        .trust
        .as_deref()
        .map(super::signing::verifier)
        .transpose()?;
    let metrics_listener = match args.metrics_listen {
        Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| {
            CliError::msg(format!("cannot listen on {addr} (--metrics-listen): {e}"))
        })?),
        None => None,
    };
    let verifier = config.trust.clone();
    let (log, log_metrics) = super::open_counted_log(&url).await?;
    let pusher = Pusher::start(log.clone(), config).await?;
    let stop = CancellationToken::new();
    let mut metrics_at = String::new();
    let metrics_server = match metrics_listener {
        Some(listener) => {
            let local = listener.local_addr().map_err(|e| {
                CliError::msg(format!("cannot read the metrics listening address: {e}"))
            })?;
            metrics_at = format!("; metrics: http://{local}/metrics");
            Some(tokio::spawn(serve(
                listener,
                push_metrics_router(log_metrics, verifier, pusher.published()),
                stop.clone().cancelled_owned(),
            )))
        }
        None => None,
    };
    let signal = super::shutdown_signal();
    out.line(&format!(
        "agentlog pusher for agent {:?} (log: {}; notifications signed by key {}{metrics_at})",
        args.log.agent,
        super::display_log_url(&url),
        pusher
            .signer()
            .jwks()
            .pointer("/keys/0/kid")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default(),
    ));
    signal.await;
    super::output::note("agentlog: shutting down (committing what was sent)");
    pusher.stop().await;
    let closed = log.close().await;
    // The metrics endpoint stays up until the sender stopped, so a last scrape sees it all.
    stop.cancel();
    if let Some(server) = metrics_server
        && let Ok(Err(e)) = server.await
    {
        super::output::note(&format!("agentlog: the metrics endpoint failed: {e}"));
    }
    closed?;
    Ok(())
}
