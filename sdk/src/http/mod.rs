//! The HTTP face of a [`Bridge`]: an axum router serving A2A over JSON-RPC and HTTP+JSON,
//! the agent card, `/healthz` and `/metrics` (feature `http`).
//!
//! [`router`] returns a [`Router`] with its state applied, so a host application can
//! `merge` or `nest` it, and tests drive it with `tower::ServiceExt::oneshot` without a port;
//! [`serve`] runs it on a listener with `TCP_NODELAY` and graceful shutdown.
//!
//! # Routes
//!
//! | route | answer |
//! | --- | --- |
//! | `POST {rpc_path}` | JSON-RPC: `application/json`, or `text/event-stream` for streaming methods |
//! | `POST {base}/message:send`, `…/message:stream`, `GET {base}/tasks`, `GET {base}/tasks/{id}`, `POST {base}/tasks/{id}:cancel`, `GET`/`POST {base}/tasks/{id}:subscribe`, `{base}/tasks/{id}/pushNotificationConfigs[/{configId}]`, `GET {base}/extendedAgentCard`, and each under `{base}/{tenant}/…` | A2A's HTTP+JSON binding (`base` is `rpc_path` without its trailing slash): the same bridge through the same checks, answered in that binding's shapes (see the `rest` module). The served card lists an `HTTP+JSON` interface after each JSON-RPC 1.0 one |
//! | `GET /.well-known/agent-card.json`, `GET /.well-known/agent.json` (legacy 0.2) | the agent card (its interfaces at [`HttpConfig::interface_url`] when set, then [`HttpConfig::extra_interfaces`]) |
//! | the same two under `{rpc_path}` when it is not `/` | the agent card (the JS client resolves the card relative to its base URL) |
//! | `GET /healthz` | `200 ok`: liveness |
//! | `GET /readyz` | `200 {"ready":true,"partitions":{"held":[...],"replaying":[...]}}` once the task view has replayed the log and the log takes appends; else `503`, `Retry-After: 1`, `{"ready":false,"reason":...,"error":{"kind":...,"retryable":true},"partitions":...}` |
//! | `GET /metrics` | OpenMetrics text (see below) |
//! | `GET /.well-known/jwks.json` (with [`HttpConfig::push`]) | the keys that sign push notifications, a JWKS (public, not guarded) |
//! | `GET /peers` (with [`HttpConfig::forward`]) | this member's [`PeerList`]: its index, every member's URL, the partition count (members refuse to start beside one that disagrees) |
//! | any other method on `{rpc_path}` | `405` JSON, `Allow: POST` |
//! | anything else | `404` JSON |
//!
//! The MCP route (`POST /mcp`) is a router of its own, [`mcp::router`], merged beside this
//! one (`router(..).merge(mcp::router(..)?)`); its checks are in its module docs. So is the
//! web console (`/console`, its assets and `/console/api/…`), [`console::router`], over one
//! or more bridges; its routes and who sees what are in its module docs.
//!
//! `rpc_path` is matched literally, with or without a trailing slash (`/a2a` and `/a2a/`
//! both serve), never as an axum path pattern, so any string is a valid `rpc_path` and
//! building the router cannot panic. If it equals one of the fixed paths above, the RPC
//! endpoint wins for that path.
//!
//! # JSON-RPC over HTTP: the choices
//!
//! - **JSON-RPC errors travel with HTTP 200**, parse errors included (A2A §9, as the official
//!   SDKs do). Only transport-level refusals use HTTP statuses, each still carrying a
//!   JSON-RPC error body (`id: null`, code -32600 unless said) so JSON-RPC clients can read
//!   them:
//!   - `415` when `Content-Type` is missing or is neither `application/json` nor
//!     `application/a2a+json` (parameters such as `; charset=utf-8` are allowed), with
//!     -32005 ContentTypeNotSupported (what the A2A conformance kit expects);
//!   - `413` when the body exceeds [`HttpConfig::body_limit_bytes`].
//! - **`A2A-Version`** is handed to [`Bridge::handle`](crate::bridge::Bridge::handle) as sent (a value that is not valid
//!   UTF-8 is passed lossily, so it is refused with -32009 like any unsupported version); a
//!   missing header is accepted, as documented there.
//! - **A streaming method's stream is `200 text/event-stream`**: each event is one SSE frame
//!   `id: <log position>` + `data: <complete JSON-RPC response>`; an error once the stream
//!   has started is a single frame `event: error` + `data: <JSON-RPC error response>` (the
//!   framing of the official Python server), after which the stream ends. A keep-alive
//!   comment is sent every 15 s of silence. An error found **before** the stream starts
//!   (unknown task, a finished task to subscribe to, invalid params, a refused message) is a
//!   plain `application/json` JSON-RPC error response, as A2A §3.1.6 requires; the official
//!   Python and JS clients read both.
//! - **`A2A-Extensions`** (and 0.3's `X-A2A-Extensions`): the extension URIs the request
//!   activates, handed to the bridge in [`RpcOptions`](crate::bridge::RpcOptions); a send that
//!   leaves out one the card marks `required` is refused with -32008. The response echoes, in
//!   its own `A2A-Extensions` header, the requested URIs the card declares (see
//!   [`bridge::extensions`](crate::bridge::extensions)).
//! - **`Last-Event-ID: N`** on a streaming method resumes right after log position `N`
//!   (`resume_after = Some(N)`), replaying what the client missed with no gap and no
//!   duplicate. A value that is not a decimal `u64` is refused with -32602 naming the
//!   `Last-Event-ID` field, as a plain JSON-RPC error response (the stream never starts):
//!   silently ignoring it would restart the stream with a snapshot and hide a client or
//!   proxy bug. The header is ignored on non-streaming methods.
//! - **Not ready yet**: while the bridge's task view replays the log (after a start or a
//!   restart over a long log), every JSON-RPC request is refused at once with `503`,
//!   `Retry-After: 1` and a JSON-RPC error body (-32603, kind `unavailable`, retryable), as
//!   the other transport-level refusals; see the `health` module.
//! - **Host and Origin** are checked first ([`Allowed`], against DNS rebinding): a request
//!   naming a host that is not allowed, or from a browser page of an origin that is not, is
//!   `403` (two `Host` headers, or none on HTTP/1.1: `400`); an allowed origin gets CORS
//!   answers. The card, `/healthz`, `/readyz` and `/metrics` are not guarded.
//! - **A refusal keeps the connection usable**: the request's body is read before it is
//!   answered (within the limit and deadline), else the answer says `Connection: close`.
//! - **Caller identity** comes from [`HttpConfig::auth`]: without it every request is
//!   [`Caller::anonymous`]; with it every JSON-RPC request is authenticated before the bridge
//!   sees it, and refused with `401`/`403` and a challenge (see the [`auth`] module).
//! - Responses other than SSE and metrics are `application/json`. The agent card has a strong
//!   `ETag` (a SHA-256 prefix of its bytes, computed once), `Cache-Control: public,
//!   max-age=300` and a `Last-Modified` (when the router was built), and answers
//!   `If-None-Match` (or, without it, `If-Modified-Since`) with `304`. With
//!   [`HttpConfig::signing_keys`] it carries one detached JWS signature per key (A2A §8.4)
//!   on every card path, made once when the router is built; the `ETag` covers them.
//!
//! # Metrics
//!
//! - `agentlog_rpc_requests_total{method,code}`: `method` is the JSON-RPC method name when it
//!   is one A2A defines, else `unknown`; `code` is `0` for a success, else the JSON-RPC error
//!   code (for a stream: `0` once it started; an error before it is a JSON reply with its code).
//! - `agentlog_rpc_request_duration_seconds{method}`: time until the reply's head (for a
//!   stream, until it starts, not until it ends).
//! - `agentlog_forwards_total{verb,outcome}` (with [`HttpConfig::forward`]): requests about a
//!   partition held elsewhere by method and by who answered (`owner`, `successor`, `here`,
//!   `unavailable`), and peers' marked requests served here (`received`); see `forward`.
//! - `agentlog_view_lag_records`: records in the log not yet applied by the task view,
//!   measured by a scrape (at most once a second).
//! - `agentlog_worker_queue_lag_records{topic}` (with [`HttpConfig::worker_backlogs`]):
//!   records on the commands topic's partitions a worker of the process owns that its loop
//!   has not read yet ([`Backlog`](crate::worker::Backlog)), measured with the view's lag.
//!   It stays near zero whatever the load; growing, it says the worker reads its queue
//!   slower than the bridges fill it, and every turn sent through another process waits.
//! - `agentlog_view_records_total`, `agentlog_view_undecodable_records_total`: records the
//!   view has seen, and those it skipped because they could not be decoded.
//! - `agentlog_records_rejected_total{reason}` (with a trust configured,
//!   `BridgeConfig::trust`): records ignored because the trust does not allow them, by
//!   `reason`: `unsigned`, `unknown_key`, `retired_key`, `kind_not_allowed`, `bad_signature`
//!   (`skills/security/records.md`).
//!
//! With [`HttpConfig::log_metrics`] set (the [`LogMetrics`] of a [`MetricsLayer`] on the
//! bridge's log; `agentlog serve` sets it), the log's operations too, labelled with `op`, the
//! operation's name (`append`, `append_all`, `read`, `read_at`, `poll`, `commit`, ... see
//! [`LogOp`]); an operation's series appear once it was called:
//! - `agentlog_log_operations_total{op,outcome}`: calls by `outcome`, `ok` or the error's
//!   kind (`unavailable`, `timeout`, `corrupt`, ... as in `ErrorKind::as_str`; a kind's series
//!   appears once it occurred). Under a `RetryLayer` every attempt counts.
//! - `agentlog_log_operation_duration_seconds{op}`: a histogram of call durations, 10 µs
//!   doubling to ~21 s (a `poll` includes its wait for records).
//! - `agentlog_log_records_total{op}`, `agentlog_log_bytes_total{op}`: records and payload
//!   bytes appended (`append`, `append_all`) or returned (`read`, `read_at`, `poll`).
//!
//! With [`HttpConfig::push`] from a sender running in the process: the push sender's
//! `agentlog_push_delivered_total`, `agentlog_push_failed_attempts_total`,
//! `agentlog_push_dead_letters_total`, `agentlog_push_refused_total` (given up at once),
//! `agentlog_push_circuit_opens_total`, and the gauges `agentlog_push_pending` and
//! `agentlog_push_tracked_tasks` (`skills/push/SKILL.md`).
//!
//! [`log_metrics_router`] serves the log's metrics alone, for a process without a bridge;
//! [`worker_metrics_router`] with a worker's queue lag (`agentlog worker --metrics-listen`);
//! [`push_metrics_router`] with a push sender's (`agentlog pusher --metrics-listen`).
//!
//! The method label comes from a second, borrowing [`parse_request`] of the body (small next
//! to the work behind any request; see the router-only case of the HTTP benchmark); the code
//! from the reply's prefix (a success body starts with `{"jsonrpc":"2.0","id":<id>,"result"`),
//! so a success body is never parsed again, and only error bodies are.
//!
//! # Layers, outermost first
//!
//! The router adds no tower layers: the body limit is enforced in the RPC handler (so the
//! 413 carries our JSON-RPC body, not axum's plain-text rejection), and requests are counted
//! and timed in the handler (so the method label needs no second body buffer). A host that
//! adds `TraceLayer` or auth layers puts them outside: `router(..).layer(..)`.
//!
//! [`parse_request`]: agentlog_wire::jsonrpc::parse_request
//! [`MetricsLayer`]: crate::log::layers::MetricsLayer
//! [`LogOp`]: crate::log::layers::LogOp

pub mod auth;
mod body;
mod card;
mod connections;
pub mod console;
mod dispatch;
mod errors;
pub(crate) mod forward;
mod guard;
mod health;
mod lag;
pub mod mcp;
mod mcp_auth;
mod metrics;
mod push;
mod rest;
mod rpc;
mod server;

pub use forward::{Forwarding, PARTITIONS, PeerList};
pub use guard::Allowed;
pub use server::{
    DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS, SHUTDOWN_GRACE, ServeConfig, serve,
    serve_bounded, serve_with,
};
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;

use crate::bridge::Bridge;
use crate::log::layers::LogMetrics;
use crate::security::SigningKey;

/// How the router behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Where JSON-RPC requests are POSTed. Default `/`. Matched literally, with or without a
    /// trailing slash; a path without a leading `/` gets one.
    pub rpc_path: String,
    /// The largest request body accepted; a larger one gets `413`. Default 1 MiB.
    pub body_limit_bytes: usize,
    /// How long a request's body may take to arrive once its head has; a slower one gets
    /// `408` (a client trickling bytes holds no request open for longer). Default 10 s.
    pub body_timeout: std::time::Duration,
    /// The log's counters, served on `/metrics` as `agentlog_log_*` (see the module docs):
    /// the handle of the [`MetricsLayer`](crate::log::layers::MetricsLayer) on the bridge's
    /// log. Default `None`: no log metrics.
    pub log_metrics: Option<LogMetrics>,
    /// Who may call: every JSON-RPC request is authenticated and its method's scope
    /// checked. Default `None`: every caller is anonymous.
    pub auth: Option<auth::EdgeAuth>,
    /// The keys that sign the served agent card, one signature each (A2A §8.4; see
    /// [`sign_card`](crate::security::sign_card)): two during a key rotation. Default none:
    /// the card is served unsigned.
    pub signing_keys: Vec<SigningKey>,
    /// The URL written into every `supportedInterfaces[].url` of the served card: the
    /// endpoint clients POST to, for a host that knows it only once it listens (port 0, as
    /// the language bindings' `serve` does). The interfaces' versions and bindings stay the
    /// card's. Default `None`: the card's own URLs.
    pub interface_url: Option<String>,
    /// Interfaces the served card lists after its own, their URLs as given (`interface_url`
    /// is not applied to them): another listener's, such as the gRPC binding's
    /// (`grpc::card_interface`) when a host serves it beside the router. Default none.
    pub extra_interfaces: Vec<agentlog_wire::a2a::AgentInterface>,
    /// The hosts the RPC endpoint answers and the browser origins it serves (with CORS),
    /// against DNS rebinding (the [`Allowed`] docs). Default: loopback only;
    /// [`Allowed::for_base_url`] adds the server's public name.
    pub allowed: Allowed,
    /// Push notifications: the keys that sign them, served at `/.well-known/jwks.json`, and
    /// the sender's counters on `/metrics` ([`Pusher::published`](crate::push::Pusher::published)).
    /// Default `None`: neither.
    pub push: Option<crate::push::Published>,
    /// Bridges sharing the agent's partitions: a request about a partition the bridge's view
    /// does not hold is forwarded to its owner, and `ListTasks` asks every owner
    /// (`skills/a2a-bridge/partitions.md`). Default `None`: every request is served here.
    pub forward: Option<Forwarding>,
    /// Workers running in the process ([`Worker::backlog`](crate::worker::Worker::backlog)):
    /// how far behind its commands queue each is, on `/metrics`. Default none.
    pub worker_backlogs: Vec<crate::worker::Backlog>,
}

impl HttpConfig {
    /// The defaults (each field says its own).
    pub fn new() -> Self {
        Self::default()
    }
}

setters!(HttpConfig {
    rpc_path: String,
    body_limit_bytes: usize,
    body_timeout: std::time::Duration,
    signing_keys: Vec<SigningKey>,
    extra_interfaces: Vec<agentlog_wire::a2a::AgentInterface>,
    allowed: Allowed,
    worker_backlogs: Vec<crate::worker::Backlog>,
} optional {
    log_metrics: LogMetrics,
    auth: auth::EdgeAuth,
    interface_url: String,
    push: crate::push::Published,
    forward: Forwarding,
});

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            rpc_path: "/".to_owned(),
            body_limit_bytes: 1024 * 1024,
            body_timeout: std::time::Duration::from_secs(10),
            log_metrics: None,
            auth: None,
            signing_keys: Vec::new(),
            interface_url: None,
            extra_interfaces: Vec::new(),
            allowed: Allowed::default(),
            push: None,
            forward: None,
            worker_backlogs: Vec::new(),
        }
    }
}

/// The base URL clients reach a server listening on `local` at: `public_url` when given
/// (`http` or `https`, its path ending in `/`), else `http://<local>/` with an unspecified
/// address (`0.0.0.0`, `::`) shown as loopback. `agentlog serve` and the bindings' `serve`
/// write it into the card. A public URL that does not parse, or of another scheme, is
/// [`ErrorKind::Config`](crate::ErrorKind::Config).
pub fn base_url(public_url: Option<&str>, local: SocketAddr) -> crate::Result<url::Url> {
    let text = match public_url {
        Some(given) => given.to_owned(),
        None => {
            let mut shown = local;
            if shown.ip().is_unspecified() {
                shown.set_ip(match shown {
                    SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            format!("http://{shown}/")
        }
    };
    let bad = |why: String| {
        crate::Error::new(
            crate::ErrorKind::Config,
            format!("bad public URL {text:?}: {why}"),
        )
    };
    let mut url = url::Url::parse(&text).map_err(|e| bad(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("expected an http:// or https:// URL".to_owned()));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// The W3C trace context of a request's headers: one valid `traceparent` and its
/// `tracestate` ([`TraceContext::from_fields`](agentlog_wire::trace::TraceContext::from_fields)).
pub(crate) fn trace_of(
    headers: &axum::http::HeaderMap,
) -> Option<agentlog_wire::trace::TraceContext> {
    use agentlog_wire::trace::{TRACEPARENT, TRACESTATE, TraceContext};
    TraceContext::from_fields(
        headers.get_all(TRACEPARENT).iter().map(|v| v.to_str().ok()),
        headers
            .get_all(TRACESTATE)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    )
}

/// What every handler shares.
#[derive(Debug, Clone)]
struct AppState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    bridge: Bridge,
    body_limit: usize,
    body_timeout: std::time::Duration,
    /// The RPC path and its trailing-slash twin.
    rpc_paths: Vec<String>,
    /// Where the HTTP+JSON binding's routes start: the RPC path without its trailing slash.
    rest_base: String,
    /// The card paths under the RPC path's prefix (empty when `rpc_path` is `/`).
    prefixed_card_paths: Vec<String>,
    card: card::CardBody,
    metrics: metrics::Metrics,
    auth: Option<auth::EdgeAuth>,
    allowed: Allowed,
    forward: Option<forward::Forwarder>,
}

const CARD_PATH: &str = "/.well-known/agent-card.json";
const LEGACY_CARD_PATH: &str = "/.well-known/agent.json";
const HEALTH_PATH: &str = "/healthz";
const READY_PATH: &str = "/readyz";
const METRICS_PATH: &str = "/metrics";
const PEERS_PATH: &str = "/peers";

/// The router serving `bridge` over HTTP, with its state applied. See the module docs for
/// its routes and behaviour.
pub fn router(bridge: Bridge, config: HttpConfig) -> Router {
    let rpc_path = if config.rpc_path.starts_with('/') {
        config.rpc_path
    } else {
        format!("/{}", config.rpc_path)
    };
    let prefix = rpc_path.trim_end_matches('/');
    let mut rpc_paths = vec![rpc_path.clone()];
    if prefix.is_empty() {
        // "/" has no twin.
    } else if rpc_path.ends_with('/') {
        rpc_paths.push(prefix.to_owned());
    } else {
        rpc_paths.push(format!("{rpc_path}/"));
    }
    let prefixed_card_paths = if prefix.is_empty() {
        Vec::new()
    } else {
        vec![
            format!("{prefix}{CARD_PATH}"),
            format!("{prefix}{LEGACY_CARD_PATH}"),
        ]
    };
    // The served card says how to authenticate (unless the card declares schemes itself).
    let mut served_card = bridge.agent_card().clone();
    if let Some(url) = &config.interface_url {
        for interface in &mut served_card.supported_interfaces {
            interface.url.clone_from(url);
        }
    }
    card::offer_http_json(&mut served_card);
    served_card
        .supported_interfaces
        .extend(config.extra_interfaces);
    if let Some(auth) = &config.auth
        && served_card.security_schemes.is_empty()
    {
        auth.declare(&mut served_card);
    }
    let state = AppState {
        inner: Arc::new(Inner {
            card: card::CardBody::new(&served_card, &config.signing_keys),
            metrics: metrics::Metrics::new(
                bridge.view().clone(),
                config.log_metrics,
                config.push.clone().map(push::PushCounters),
                config
                    .forward
                    .as_ref()
                    .map(Forwarding::counts)
                    .unwrap_or_default(),
                config.worker_backlogs,
            ),
            bridge,
            body_limit: config.body_limit_bytes,
            body_timeout: config.body_timeout,
            auth: config.auth,
            allowed: config.allowed,
            forward: config.forward.clone().map(forward::Forwarder::new),
            rest_base: prefix.to_owned(),
            rpc_paths,
            prefixed_card_paths,
        }),
    };
    let mut router = Router::new();
    for (path, route) in [
        (CARD_PATH, get(card::card)),
        (LEGACY_CARD_PATH, get(card::card)),
        (HEALTH_PATH, get(health::health)),
        (READY_PATH, get(health::ready)),
        (METRICS_PATH, get(metrics::scrape)),
    ] {
        if !state.inner.rpc_paths.iter().any(|p| p == path) {
            router = router.route(path, route);
        }
    }
    if let Some(published) = &config.push
        && !state.inner.rpc_paths.iter().any(|p| p == push::JWKS_PATH)
    {
        router = router.route(push::JWKS_PATH, push::jwks(published));
    }
    if let Some(forward) = &config.forward
        && !state.inner.rpc_paths.iter().any(|p| p == PEERS_PATH)
    {
        router = router.route(PEERS_PATH, forward::peers(forward.owners.clone()));
    }
    // Everything derived from `rpc_path` is matched in the fallback (see the module docs).
    router.fallback(dispatch::dispatch).with_state(state)
}

/// A router serving only `GET /metrics` with the log's counters (`agentlog_log_*`, see the
/// module docs), for a process that has a log but no bridge, such as a worker. Anything
/// else gets `404`.
pub fn log_metrics_router(metrics: LogMetrics) -> Router {
    metrics_router(metrics, None)
}

/// [`log_metrics_router`], and with `verifier` the records it turned away
/// (`agentlog_records_rejected_total{reason}`).
pub fn metrics_router(
    metrics: LogMetrics,
    verifier: Option<crate::security::RecordVerifier>,
) -> Router {
    counters_router(metrics, verifier, None, Vec::new())
}

/// [`metrics_router`] and how far behind its commands queue `worker` is
/// (`agentlog_worker_queue_lag_records{topic}`, see the module docs): what `agentlog worker
/// --metrics-listen` serves.
pub fn worker_metrics_router(
    metrics: LogMetrics,
    verifier: Option<crate::security::RecordVerifier>,
    worker: crate::worker::Backlog,
) -> Router {
    counters_router(metrics, verifier, None, vec![worker])
}

/// [`metrics_router`] and a push sender's counters (`agentlog_push_*`, from `push`'s
/// [`Pusher::published`](crate::push::Pusher::published)): what `agentlog pusher
/// --metrics-listen` serves.
pub fn push_metrics_router(
    metrics: LogMetrics,
    verifier: Option<crate::security::RecordVerifier>,
    push: crate::push::Published,
) -> Router {
    counters_router(metrics, verifier, Some(push), Vec::new())
}

fn counters_router(
    metrics: LogMetrics,
    verifier: Option<crate::security::RecordVerifier>,
    push: Option<crate::push::Published>,
    workers: Vec<crate::worker::Backlog>,
) -> Router {
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(metrics::LogCounters(metrics)));
    if let Some(verifier) = verifier {
        registry.register_collector(Box::new(metrics::RejectedRecords(verifier)));
    }
    if let Some(push) = push {
        registry.register_collector(Box::new(push::PushCounters(push)));
    }
    let lags = Arc::new(lag::Lags::register(&mut registry, None, workers));
    let registry = Arc::new(registry);
    Router::new()
        .route(
            METRICS_PATH,
            get(move || {
                let registry = Arc::clone(&registry);
                let lags = Arc::clone(&lags);
                async move {
                    lags.measure().await;
                    metrics::encode(&registry)
                }
            }),
        )
        .fallback(
            |method: axum::http::Method, uri: axum::http::Uri| async move {
                errors::not_found(method.as_str(), uri.path())
            },
        )
}
