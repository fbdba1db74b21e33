//! `agentlog serve`: an agent's A2A JSON-RPC endpoint over HTTP, on the log.

use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::output::Out;
use super::serve_args::ServeArgs;
use super::serve_auth::{self, CardFileExtras};
use super::serve_card::{bare_card, card, card_file};
use super::{CliError, CliResult};
use crate::agents::{ConformanceHandler, conformance, demo_skills};
use agentlog::bridge::{Bridge, BridgeConfig, LimitsConfig};
use agentlog::http::{Allowed, HttpConfig, ServeConfig, router, serve_with};
use agentlog::security::SigningKey;
use agentlog::worker::{Worker, WorkerConfig};

/// `agentlog serve`.
pub(super) async fn run(args: ServeArgs, out: &Out) -> CliResult {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::msg(format!("cannot read the current directory: {e}")))?;
    let mut log_url = args
        .topics
        .apply(&super::resolve_log_url(&args.log.log, &cwd)?)?;
    if args.truncate_corrupt {
        log_url = with_truncate_corrupt(&log_url)?;
    }
    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|e| CliError::msg(format!("cannot listen on {}: {e}", args.listen)))?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::msg(format!("cannot read the listening address: {e}")))?;
    let grpc = super::serve_grpc::bind(&args.grpc).await?;
    let public_url = public_url(args.public_url.as_deref(), local)?;
    let mut scale_out = super::serve_members::scale_out(&args.peers)?;
    let mut allowed = Allowed::for_base_url(&public_url);
    allowed.hosts.extend(args.allowed_hosts.iter().cloned());
    if let Some(scale_out) = &scale_out {
        allowed.hosts.extend(scale_out.hosts());
    }
    allowed.origins.extend(args.allowed_origins.iter().cloned());
    let mut http = HttpConfig::new()
        .body_timeout(args.body_timeout)
        .allowed(allowed.clone());
    let endpoint = public_url
        .join(http.rpc_path.trim_start_matches('/'))
        .map_err(|e| CliError::msg(format!("bad --public-url: {e}")))?;
    let (mut base, extras, mut skill_schemas) = match &args.card {
        Some(path) => card_file(path, &args.log.agent)?,
        None => (
            bare_card(&args.log.agent)?,
            CardFileExtras::default(),
            Default::default(),
        ),
    };
    // The definitions' tools that are skills too join the card's skills.
    let mut definitions = super::serve_mcp::definitions(&args.mcp, args.demo)?;
    if let Some(definitions) = definitions.as_mut() {
        super::serve_mcp::add_tool_skills(
            definitions,
            &args.log.agent,
            &mut base,
            &mut skill_schemas,
        )?;
    }
    let auth = serve_auth::edge_auth(&args.auth, &extras)?;
    serve_auth::check_anonymous(&args.auth, auth.as_ref(), args.listen)?;
    let mut card = card(&args, base, endpoint.as_str());
    if let Some(grpc) = &grpc {
        grpc.declare(&mut card, &public_url);
    }
    if let Some(auth) = &auth
        && card.security_schemes.is_empty()
    {
        auth.declare(&mut card);
    }
    card.validate()
        .map_err(|e| CliError::msg(format!("the agent card is not valid: {e}")))?;
    let extended_card = serve_auth::extended_card(&card, &extras)?;
    if extended_card.is_some() && auth.is_none() {
        return Err(CliError::msg(
            "an extendedCard is for authenticated callers: configure authentication too",
        ));
    }
    let auth_banner = serve_auth::describe(auth.as_ref());
    http.auth = auth;
    let signing_keys = signing_keys(&args.signing.signing_key)?;
    // The router signs the card; signing it here first turns a card that cannot be signed
    // into a refusal to start rather than an unsigned card.
    agentlog::security::sign_card(&card, &signing_keys)
        .map_err(|e| CliError::msg(format!("cannot sign the agent card: {e}")))?;
    http.signing_keys = signing_keys.clone();

    // The first card key signs the records too.
    let signer = signing_keys
        .first()
        .cloned()
        .map(agentlog::security::RecordSigner::new);
    let verifier = args.signing.verifier()?;
    let (log, log_metrics) = super::open_counted_log(&log_url).await?;
    http.log_metrics = Some(log_metrics);
    let mut config = BridgeConfig::new(&args.log.agent);
    config.card = card;
    config.skill_schemas = skill_schemas;
    if args.demo {
        config
            .skill_schemas
            .entry(demo_skills::SHOUT.to_owned())
            .or_insert_with(demo_skills::shout_schema);
    }
    config.extended_card = extended_card;
    config.signer = signer.clone();
    config.trust = verifier.clone();
    config.max_hops = args.signing.max_hops;
    if let Some(id) = &args.signing.bridge_id {
        config.id = id.clone();
    }
    config.limits = LimitsConfig::new()
        .blocking_sends(args.max_blocking_sends)
        .streams(args.max_streams)
        .streams_per_caller(args.max_streams_per_caller);
    if args.conformance {
        config.extension_scope = conformance::extension_scope();
    }
    config.push = args.push.destinations();
    if let Some(scale_out) = &mut scale_out {
        let opened = scale_out.open(&log, &config.topics, signer.clone(), verifier.clone());
        let (holding, forwarding) = opened.await?;
        config.holding = Some(holding);
        http.forward = Some(forwarding);
    }
    let bridge = Bridge::open(log.clone(), config).await?;
    let push = super::serve_push::start(
        &args.push,
        &log,
        &bridge,
        signing_keys.first(),
        signer.clone(),
        public_url.as_str(),
    )
    .await?;
    http.push = push.published.clone();
    let mcp = super::serve_mcp::open(
        &args.mcp,
        definitions,
        args.demo,
        &log,
        &bridge,
        &public_url,
        &allowed,
        http.auth.clone(),
        http.forward.clone(),
    )
    .await?;
    // After the MCP route: its tool views are asked too before a move here is said ready.
    if let Some(scale_out) = &mut scale_out {
        scale_out.start(&bridge).await?;
    }
    let worker = if args.demo || args.conformance {
        let mut config = WorkerConfig::new(&args.log.agent);
        // A member's view holds its share only; the worker takes turns of every partition
        // its consumer group gives it, so it follows them in a view of its own.
        if scale_out.is_none() {
            config.view = Some(bridge.view().clone());
        }
        config.signer = signer;
        config.trust = verifier;
        Some(if args.conformance {
            Worker::start(log.clone(), config, ConformanceHandler).await?
        } else {
            Worker::start(log.clone(), config, demo_skills::demo_skills()).await?
        })
    } else {
        None
    };

    let stop = CancellationToken::new();
    let view = bridge.view().clone();
    let mcp_bridges = mcp.as_ref().map(|m| m.bridges.clone()).unwrap_or_default();
    let console = super::serve_console::open(
        &args.console,
        local,
        &public_url,
        &bridge,
        &mcp_bridges,
        http.auth.as_ref(),
        &allowed,
    );
    let (mcp_router, mcp_worker, mcp_banner) = match mcp {
        Some(mcp) => (
            Some(mcp.router),
            mcp.worker,
            format!("; MCP at {} ({} tools)", mcp.url, mcp.tools),
        ),
        None => (None, None, String::new()),
    };
    let grpc_banner = match &grpc {
        Some(grpc) => format!("; gRPC at {}", grpc.address(&public_url)),
        None => String::new(),
    };
    let grpc_forward = http
        .forward
        .clone()
        .map(|f| f.rpc_path(http.rpc_path.clone()));
    let grpc_server = grpc.map(|grpc| {
        grpc.spawn(
            bridge.clone(),
            http.auth.clone(),
            grpc_forward,
            stop.clone(),
        )
    });
    // The workers' queue lag on `/metrics`, beside the view's.
    http.worker_backlogs = worker
        .iter()
        .chain(mcp_worker.iter())
        .map(Worker::backlog)
        .collect();
    let mut app = router(bridge, http);
    if let Some(mcp_router) = mcp_router {
        app = app.merge(mcp_router);
    }
    let console_banner = match console {
        Some((console_router, url)) => {
            app = app.merge(console_router);
            format!("; console at {url}")
        }
        None => String::new(),
    };
    let mut serving = ServeConfig::new()
        .max_connections(args.max_connections)
        .header_timeout(args.header_timeout);
    if let Some(per_peer) = args.max_connections_per_peer {
        serving = serving.max_connections_per_peer(per_peer);
    }
    let mut server = tokio::spawn(serve_with(
        listener,
        app,
        serving,
        stop.clone().cancelled_owned(),
    ));
    // The server answers at once (liveness; JSON-RPC refused with 503 while the view
    // replays); the banner waits for the replay, so that "serving" means ready.
    if tokio::time::timeout(std::time::Duration::from_secs(1), view.wait_caught_up())
        .await
        .is_err()
    {
        super::output::note("agentlog: replaying the log before serving requests");
        view.wait_caught_up().await;
    }
    let signal = super::shutdown_signal();
    let peers_banner = match &scale_out {
        Some(scale_out) => format!("; {}", scale_out.describe()),
        None => String::new(),
    };
    out.line(&format!(
        "agentlog serving agent {:?} at {public_url} (log: {}; {}; {auth_banner}{}{console_banner}{mcp_banner}{grpc_banner}{peers_banner})",
        args.log.agent,
        super::display_log_url(&log_url),
        if args.conformance {
            "conformance worker on"
        } else if worker.is_some() {
            "demo worker on"
        } else {
            "no worker in this process"
        },
        signed_by(&signing_keys),
    ));

    let stopped_early = tokio::select! {
        () = signal => None,
        // The server stops by itself only on an error.
        result = &mut server => Some(result),
    };
    if stopped_early.is_none() {
        super::output::note("agentlog: shutting down");
    }
    // A dynamic member hands its partitions over while it still serves them.
    if let Some(scale_out) = &mut scale_out {
        scale_out.leave(&view).await;
    }
    // Drain: the server stops accepting and lets open requests finish (for up to
    // `http::SHUTDOWN_GRACE`) while the worker lets running turns finish (for up to its
    // shutdown timeout) and then releases the rest for another worker to take over; both
    // need the log, which closes last.
    stop.cancel();
    let drain_server = async {
        match stopped_early {
            Some(result) => result,
            None => server.await,
        }
    };
    let drain_worker = async {
        let (a2a, mcp) = tokio::join!(
            async {
                match worker {
                    Some(worker) => worker.shutdown().await,
                    None => Ok(()),
                }
            },
            async {
                match mcp_worker {
                    Some(worker) => worker.shutdown().await,
                    None => Ok(()),
                }
            }
        );
        a2a.and(mcp)
    };
    let drain_grpc = async {
        match grpc_server {
            Some(server) => server.await,
            None => Ok(Ok(())),
        }
    };
    let (served, stopped, grpc_served) = tokio::join!(drain_server, drain_worker, drain_grpc);
    // What was in flight is sent again by the next sender; the progress so far is committed.
    if let Some(pusher) = &push.pusher {
        pusher.stop().await;
    }
    // A checkpoint of where the view stands, so that the next start replays nothing.
    if let Err(error) = view.checkpoint().await {
        tracing::warn!(error = %error.report(), "could not write a checkpoint at shutdown; the next start replays more");
    }
    let closed = log.close().await;
    match served {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(CliError::msg(format!("the HTTP server failed: {e}"))),
        Err(e) => return Err(CliError::msg(format!("the HTTP server stopped: {e}"))),
    }
    match grpc_served {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            return Err(CliError::msg(format!(
                "the gRPC server failed: {}",
                e.report()
            )));
        }
        Err(e) => return Err(CliError::msg(format!("the gRPC server stopped: {e}"))),
    }
    stopped?;
    closed?;
    Ok(())
}

/// The keys of `--signing-key`, in order; the same key twice is refused (it would only
/// repeat its signature).
fn signing_keys(paths: &[std::path::PathBuf]) -> CliResult<Vec<SigningKey>> {
    let mut keys: Vec<SigningKey> = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let key = SigningKey::load(path)
            .map_err(|e| CliError::msg(format!("bad --signing-key: {}", e.message())))?;
        if let Some(j) = keys.iter().position(|k| k.kid() == key.kid()) {
            return Err(CliError::msg(format!(
                "--signing-key {} and {} are the same key ({})",
                paths[j].display(),
                paths[i].display(),
                key.kid()
            )));
        }
        keys.push(key);
    }
    Ok(keys)
}

/// `; card signed by key <kid>[, <kid>]` for the banner, or nothing.
fn signed_by(keys: &[SigningKey]) -> String {
    if keys.is_empty() {
        return String::new();
    }
    let kids: Vec<&str> = keys.iter().map(SigningKey::kid).collect();
    format!("; card signed by key {}", kids.join(", "))
}

/// A `file://` log URL with `truncate_corrupt=true` added (`--truncate-corrupt`).
fn with_truncate_corrupt(url: &str) -> CliResult<String> {
    if !url.starts_with("file://") {
        return Err(CliError::msg(format!(
            "--truncate-corrupt repairs an embedded log (file://), not {}",
            super::display_log_url(url)
        )));
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{separator}truncate_corrupt=true"))
}

/// The base URL clients use: `--public-url`, else the listen address
/// ([`base_url`](agentlog::http::base_url)).
fn public_url(given: Option<&str>, local: SocketAddr) -> CliResult<url::Url> {
    agentlog::http::base_url(given, local)
        .map_err(|e| CliError::msg(format!("--public-url: {}", e.message())))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_public_url_defaults_to_the_listen_address() {
        let local: SocketAddr = "0.0.0.0:9000".parse().unwrap();
        assert_eq!(
            public_url(None, local).unwrap().as_str(),
            "http://127.0.0.1:9000/"
        );
        assert_eq!(
            public_url(Some("https://a.example/x"), local)
                .unwrap()
                .as_str(),
            "https://a.example/x/"
        );
        assert!(public_url(Some("ftp://x"), local).is_err());
    }
}
