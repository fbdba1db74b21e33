//! Forwarding between bridges that share an agent's partitions
//! (`skills/a2a-bridge/partitions.md`): a request about a partition this bridge does not hold
//! goes, once, to the partition's owner, with its body and the caller's headers unchanged plus
//! the peers' mark ([`FORWARDED_BY`]), and the owner's answer (SSE streams included, frame by
//! frame) is piped back. An owner that does not answer (a refused connection, or no answer
//! head within [`Forwarding::timeout`]) is replaced by the partition's successor, which holds
//! the partition on demand; neither: a retryable unavailable (503, `Retry-After: 1`), never
//! "not found". A request whose mark verifies is served where it lands, held on demand if
//! need be, and never forwarded again; one whose mark does not verify is a client's.
//!
//! `ListTasks` is about every partition: [`list`] asks each owner for its partitions' page and
//! merges them. The gRPC binding's typed calls are forwarded by the same rules ([`call`]), as
//! the JSON-RPC requests they stand for.

mod call;
mod list;
mod list_changes;
mod mcp;
mod relayed;

use std::time::Duration;

use agentlog_wire::jsonrpc::{self, BadRequest, Operation};
use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde::{Deserialize, Serialize};

pub(crate) use call::CallRoute;
pub(super) use list::{FanOut, merge};
pub(super) use list_changes::until_ends;

use super::errors::rpc_error_refusal;
use super::metrics::ForwardLabels;
use crate::agent::Caller;
use crate::error::{Error, ErrorKind};
use crate::security::owners::{Owners, Peer};
use crate::security::peers::{FORWARDED_BY, PeerKey};
use crate::view::TaskView;

/// The header naming the partitions a peer's marked `ListTasks` is about (comma-separated);
/// the mark covers it.
pub const PARTITIONS: &str = "agentlog-partitions";

/// How a bridge forwards requests about partitions it does not hold (`HttpConfig::forward`,
/// and `GrpcConfig::forward` for the gRPC binding: clones share their forward counts).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Forwarding {
    /// Who owns each partition, read afresh by every request.
    pub owners: Owners,
    /// The key the peers share (`--peer-key`).
    pub key: PeerKey,
    /// How long a peer may take to accept the connection and send its answer's head before
    /// the successor is asked instead. Default 2 s.
    pub timeout: Duration,
    /// How long a blocking `SendMessage`'s answer may take (it comes whole when the task
    /// settles, up to the owner's blocking timeout). Default 70 s.
    pub blocking_timeout: Duration,
    /// The peers' JSON-RPC path, where a typed call (the gRPC binding's) is forwarded as
    /// JSON-RPC: the HTTP router's `rpc_path`. Default `/`.
    pub rpc_path: String,
    /// `agentlog_forwards_total`, shared by every binding forwarding by these settings (the
    /// HTTP router's `/metrics` shows them).
    counts: Family<ForwardLabels, Counter>,
}

impl PartialEq for Forwarding {
    /// The same settings (the counts are not settings).
    fn eq(&self, other: &Self) -> bool {
        self.owners == other.owners
            && self.key == other.key
            && self.timeout == other.timeout
            && self.blocking_timeout == other.blocking_timeout
            && self.rpc_path == other.rpc_path
    }
}

impl Eq for Forwarding {}

impl Forwarding {
    /// Forwarding by `owners`' map, marked with `key`; the default timeouts.
    pub fn new(owners: Owners, key: PeerKey) -> Self {
        Self {
            owners,
            key,
            timeout: Duration::from_secs(2),
            blocking_timeout: Duration::from_secs(70),
            rpc_path: "/".to_owned(),
            counts: Family::default(),
        }
    }

    /// The forward counts, for the router's registry.
    pub(super) fn counts(&self) -> Family<ForwardLabels, Counter> {
        self.counts.clone()
    }
}

setters!(Forwarding {
    timeout: Duration,
    blocking_timeout: Duration,
    rpc_path: String,
});

/// What a binding keeps to forward: the settings and one HTTP client (its pool of
/// connections to the peers).
#[derive(Debug, Clone)]
pub(crate) struct Forwarder {
    config: Forwarding,
    client: reqwest::Client,
}

/// What `GET /peers` answers on a member: its index, every member's URL and the partition
/// count, so that a member starting can refuse to join members that disagree with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PeerList {
    /// The answering member's index.
    pub member: u32,
    /// Every member's URL, in member order.
    pub peers: Vec<String>,
    /// The partitions of the agent's events topic.
    pub partitions: u32,
}

impl PeerList {
    /// The list of `map`.
    pub fn of(map: &crate::security::owners::OwnerMap) -> Self {
        Self {
            member: map.me(),
            peers: map.urls().map(str::to_owned).collect(),
            partitions: map.partitions(),
        }
    }
}

/// `GET /peers`: this member's [`PeerList`].
pub(super) fn peers(owners: Owners) -> axum::routing::MethodRouter<super::AppState> {
    axum::routing::get(move || {
        let list = PeerList::of(&owners.current());
        async move {
            let body = serde_json::to_vec(&list).unwrap_or_default();
            super::errors::json(StatusCode::OK, body)
        }
    })
}

/// Where a request is served.
pub(super) enum Route {
    /// Here, over the partitions the view holds.
    Here,
    /// Here, a `ListTasks` over these partitions only (a peer's marked share of a fan-out).
    Share(Vec<u32>),
    /// A peer answered: its answer, to pipe back as it is.
    Piped(Response),
    /// Nobody could serve it: the refusal (retryable).
    Refused(Response),
    /// A `ListTasks` to answer from every owner's page.
    FanOut(FanOut),
}

/// Who answered a request about a partition held elsewhere.
enum Holder {
    /// This bridge (it holds the partition, or stands in for its holders).
    Here,
    /// The owner or the successor: its answer.
    Answered(reqwest::Response),
    /// Nobody: why (retryable).
    Nobody(Error),
}

/// Where a forwarded request goes on a peer.
struct To<'a> {
    method: &'a axum::http::Method,
    /// The path with its query.
    path: &'a str,
    /// A fan-out share's partitions, for the header [`PARTITIONS`].
    partitions: Option<&'a str>,
}

/// Why a peer gave no answer.
#[derive(Debug)]
struct NoAnswer(String);

impl Forwarder {
    pub(crate) fn new(config: Forwarding) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeout)
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(60))
            .build()
            // Plain settings that cannot fail but for a missing TLS backend, which the
            // default client reports the same way.
            .unwrap_or_default();
        Self { config, client }
    }

    /// Count one request about a partition held elsewhere (or a peer's, received).
    fn count(&self, verb: &'static str, outcome: &'static str) {
        self.config
            .counts
            .get_or_create(&ForwardLabels { verb, outcome })
            .inc();
    }

    /// Where `parts` and its body `raw` (as received; `parsed` its JSON-RPC form, the same
    /// body for JSON-RPC, the translation for HTTP+JSON) are served, for `caller`, by the
    /// router of `inner` (its bridge's view, its metrics).
    pub(super) async fn route(
        &self,
        inner: &super::Inner,
        parts: &Parts,
        raw: &[u8],
        parsed: &Result<jsonrpc::Request<'_>, BadRequest>,
        caller: &Caller,
        verb: &'static str,
    ) -> Route {
        let view = inner.bridge.view();
        let Ok(request) = parsed else {
            return Route::Here;
        };
        let Ok(method) = request.method() else {
            return Route::Here;
        };
        let operation = method.operation();
        if self.marked(parts, raw) {
            self.count(verb, "received");
            if operation == Operation::ListTasks
                && let Some(partitions) = parts.headers.get(PARTITIONS)
            {
                return match parse_partitions(partitions) {
                    Some(partitions) => Route::Share(partitions),
                    None => Route::Here,
                };
            }
            return match partition_of(view, operation, request, caller) {
                Some(p) if !view.holds(p) => match view.hold_on_demand(p).await {
                    Ok(()) => Route::Here,
                    Err(error) => Route::Refused(unavailable(&error)),
                },
                _ => Route::Here,
            };
        }
        if operation == Operation::ListTasks {
            return Route::FanOut(FanOut::plan(&self.config.owners.current()));
        }
        let Some(p) = partition_of(view, operation, request, caller) else {
            return Route::Here;
        };
        if view.holds(p) {
            return Route::Here;
        }
        let head_within = match operation {
            Operation::SendMessage => self.config.blocking_timeout,
            _ => self.config.timeout,
        };
        let to = To {
            method: &parts.method,
            path: path_of(parts),
            partitions: None,
        };
        let headers = forwarded_headers(&parts.headers);
        match self
            .to_holder(view, p, verb, &to, &headers, raw, head_within)
            .await
        {
            Holder::Here => Route::Here,
            Holder::Answered(answer) => Route::Piped(piped(answer)),
            Holder::Nobody(error) => Route::Refused(unavailable(&error)),
        }
    }

    /// Send a request about partition `p` (`to`, `headers`, `body`) to p's owner, else its
    /// successor (each given `head_within` for its answer's head); this bridge stands in
    /// when it is either (holding p on demand).
    #[allow(clippy::too_many_arguments)]
    async fn to_holder(
        &self,
        view: &TaskView,
        p: u32,
        verb: &'static str,
        to: &To<'_>,
        headers: &HeaderMap,
        body: &[u8],
        head_within: Duration,
    ) -> Holder {
        let map = self.config.owners.current();
        let (Some(owner), Some(successor)) = (map.owner(p), map.successor(p)) else {
            // A map of another partition count: nothing to forward by.
            return Holder::Here;
        };
        let mut why = Vec::new();
        for (peer, outcome) in [(owner, "owner"), (successor, "successor")] {
            if peer.index == map.me() {
                // Held by nobody reachable: this bridge stands in.
                return match view.hold_on_demand(p).await {
                    Ok(()) => {
                        self.count(verb, "here");
                        Holder::Here
                    }
                    Err(error) => {
                        self.count(verb, "unavailable");
                        Holder::Nobody(error)
                    }
                };
            }
            match self
                .send(&peer, to, headers.clone(), body, map.me(), head_within)
                .await
            {
                Ok(answer) => {
                    self.count(verb, outcome);
                    return Holder::Answered(answer);
                }
                Err(NoAnswer(reason)) => why.push(format!("member {}: {reason}", peer.index)),
            }
        }
        self.count(verb, "unavailable");
        Holder::Nobody(Error::new(
            ErrorKind::Unavailable,
            format!(
                "partition {p} is held by no bridge that answers ({}); retry shortly",
                why.join("; ")
            ),
        ))
    }

    /// Whether the request carries a peer's mark that verifies.
    fn marked(&self, parts: &Parts, raw: &[u8]) -> bool {
        let Some(mark) = parts
            .headers
            .get(FORWARDED_BY)
            .and_then(|m| m.to_str().ok())
        else {
            return false;
        };
        let signed = signed_path(path_of(parts), parts.headers.get(PARTITIONS));
        let now = crate::retention::now_ms();
        self.config
            .key
            .verify(mark, parts.method.as_str(), &signed, raw, now)
            .is_some()
    }

    /// Send the request (`to`, `headers`, `body`) to `peer`, marked by member `me`, and wait
    /// up to `head_within` for its answer's head.
    async fn send(
        &self,
        peer: &Peer,
        to: &To<'_>,
        mut headers: HeaderMap,
        body: &[u8],
        me: u32,
        head_within: Duration,
    ) -> Result<reqwest::Response, NoAnswer> {
        let url = format!("{}{}", origin(&peer.url), to.path);
        let partitions = to.partitions.and_then(|p| HeaderValue::from_str(p).ok());
        let signed = signed_path(to.path, partitions.as_ref());
        if let Some(partitions) = partitions {
            headers.insert(HeaderName::from_static(PARTITIONS), partitions);
        }
        let now = crate::retention::now_ms();
        let mark = self
            .config
            .key
            .mark(me, to.method.as_str(), &signed, body, now);
        if let Ok(mark) = HeaderValue::from_str(&mark) {
            headers.insert(HeaderName::from_static(FORWARDED_BY), mark);
        }
        let request = self
            .client
            .request(to.method.clone(), url)
            .headers(headers)
            .body(body.to_vec())
            .send();
        match tokio::time::timeout(head_within, request).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err(NoAnswer(describe(&error))),
            Err(_) => Err(NoAnswer(format!("no answer within {head_within:?}"))),
        }
    }
}

/// What the mark covers as the path: the path with its query, and the partitions a fan-out's
/// share is about.
fn signed_path(path: &str, partitions: Option<&HeaderValue>) -> String {
    match partitions {
        None => path.to_owned(),
        Some(partitions) => format!("{path}\n{}", String::from_utf8_lossy(partitions.as_bytes())),
    }
}

fn path_of(parts: &Parts) -> &str {
    parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path(), |p| p.as_str())
}

/// `scheme://authority` of a member's URL (its path is this server's own, the request's).
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(slash) => &url[..after_scheme + slash],
        None => url,
    }
}

fn describe(error: &reqwest::Error) -> String {
    if error.is_connect() {
        "connection refused or unreachable".to_owned()
    } else if error.is_timeout() {
        "timed out".to_owned()
    } else {
        error.to_string()
    }
}

/// Headers that belong to one connection, not to the request (RFC 9110 §7.6.1), and those
/// the client sets itself.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
    ) || name.as_str() == FORWARDED_BY
        || name.as_str() == PARTITIONS
}

/// The caller's headers, to go on to a peer (its credentials included: the peer checks them
/// again).
fn forwarded_headers(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(headers.len() + 2);
    for (name, value) in headers {
        if !hop_by_hop(name) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// A peer's answer as this server's response: its status, headers and body as they come.
fn piped(answer: reqwest::Response) -> Response {
    let status = answer.status();
    let mut headers = HeaderMap::with_capacity(answer.headers().len());
    for (name, value) in answer.headers() {
        if !hop_by_hop(name) || name == header::CONTENT_LENGTH {
            headers.append(name.clone(), value.clone());
        }
    }
    let mut response = Response::new(Body::from_stream(answer.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// A retryable refusal: 503, `Retry-After: 1`, a JSON-RPC error body (-32603, `unavailable`).
fn unavailable(error: &Error) -> Response {
    let rpc = match error.kind() {
        ErrorKind::Unavailable => error.to_rpc(),
        _ => Error::new(ErrorKind::Unavailable, error.to_string()).to_rpc(),
    };
    let mut response = rpc_error_refusal(StatusCode::SERVICE_UNAVAILABLE, &rpc);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

fn parse_partitions(value: &HeaderValue) -> Option<Vec<u32>> {
    value
        .to_str()
        .ok()?
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.trim().parse().ok())
        .collect()
}

/// The ids in a request's params that name its task.
#[derive(Deserialize)]
struct Ids {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, rename = "taskId")]
    task_id: Option<String>,
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    message: Option<MessageIds>,
}

#[derive(Deserialize)]
struct MessageIds {
    #[serde(default, rename = "taskId")]
    task_id: Option<String>,
    #[serde(default, rename = "messageId")]
    message_id: Option<String>,
}

/// The partition a request is about: its task's, a new task's from the id the bridge will
/// derive for it (tenant, principal, `messageId`). `None` for a request about no task (the
/// extended card) or one the bridge will refuse anyway.
fn partition_of(
    view: &TaskView,
    operation: Operation,
    request: &jsonrpc::Request<'_>,
    caller: &Caller,
) -> Option<u32> {
    let ids: Ids = serde_json::from_str(request.params?.get()).ok()?;
    let task_id = match operation {
        Operation::SendMessage | Operation::SendStreamingMessage => {
            let message = ids.message?;
            match message.task_id {
                Some(task_id) => task_id,
                None => {
                    let tenant = tenant_of(caller, ids.tenant.as_deref());
                    agentlog_wire::ids::task_id(tenant, &caller.principal, &message.message_id?)
                }
            }
        }
        Operation::GetTask | Operation::CancelTask | Operation::SubscribeToTask => ids.id?,
        Operation::CreateTaskPushNotificationConfig
        | Operation::GetTaskPushNotificationConfig
        | Operation::ListTaskPushNotificationConfigs
        | Operation::DeleteTaskPushNotificationConfig => ids.task_id.or(ids.id)?,
        Operation::ListTasks | Operation::GetExtendedAgentCard => return None,
    };
    Some(view.partition_of(&task_id))
}

/// The tenant a request works in, as the bridge decides it: an anonymous caller takes the
/// one it names; anyone else keeps their own (naming another is refused by the bridge).
fn tenant_of<'a>(caller: &'a Caller, named: Option<&'a str>) -> &'a str {
    match named.filter(|t| !t.is_empty()) {
        Some(named) if caller.principal.is_empty() && caller.tenant.is_empty() => named,
        _ => &caller.tenant,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn origins_paths_and_partitions_parse() {
        assert_eq!(origin("http://b0:8080"), "http://b0:8080");
        assert_eq!(origin("http://b0:8080/a2a/"), "http://b0:8080");
        let partitions = HeaderValue::from_static("1,5,9");
        assert_eq!(parse_partitions(&partitions), Some(vec![1, 5, 9]));
        assert_eq!(parse_partitions(&HeaderValue::from_static("1,x")), None);
        assert_eq!(signed_path("/a2a?x=1", None), "/a2a?x=1");
        assert_eq!(signed_path("/", Some(&partitions)), "/\n1,5,9");
    }

    #[test]
    fn the_callers_headers_go_on_but_not_the_connections_or_a_mark() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        headers.insert(header::HOST, HeaderValue::from_static("b1"));
        headers.insert(FORWARDED_BY, HeaderValue::from_static("v1;0;1;00"));
        headers.insert("last-event-id", HeaderValue::from_static("7"));
        let out = forwarded_headers(&headers);
        assert_eq!(out.len(), 2);
        assert!(out.contains_key(header::AUTHORIZATION) && out.contains_key("last-event-id"));
    }

    #[test]
    fn an_anonymous_caller_works_in_the_tenant_it_names() {
        let anonymous = Caller::anonymous();
        assert_eq!(tenant_of(&anonymous, Some("acme")), "acme");
        let alice = Caller::principal("alice").in_tenant("t1");
        assert_eq!(tenant_of(&alice, Some("acme")), "t1");
        assert_eq!(tenant_of(&alice, None), "t1");
    }
}
