//! The web console: a page at `/console` showing an agent's tasks and each task's records
//! as the log holds them, live (feature `http`).
//!
//! [`router`] serves it beside the A2A router (`router(..).merge(console::router(..))`), over
//! one or more bridges: the A2A agent's and the MCP tool agents' (an MCP call is a task on
//! its tool agent). Everything is in the binary: one HTML page, its CSS and its JavaScript
//! (`assets/`, no CDN, no build step, nothing fetched at run time but the JSON below).
//!
//! # Routes
//!
//! | route | answer |
//! | --- | --- |
//! | `GET /console` | the page (the task list; `#/task/<agent>/<id>` shows a task) |
//! | `GET /console/console.js`, `GET /console/console.css` | its script and style |
//! | `GET /console/api/agents` | `{"agents":[{"name","binding"}],"auth":bool}`: `binding` is `a2a` or `mcp` |
//! | `GET /console/api/tasks?agent=&binding=&state=&context=&since=&pageSize=&pageToken=&tenant=` | the caller's tasks of the chosen agents, newest status first: `ListTasks` on each, merged |
//! | `GET /console/api/counts?agent=&binding=&tenant=` | how many of the caller's tasks are in each state (`ListTasks`' `totalSize` per state) |
//! | `GET /console/api/tasks/{agent}/{id}?tenant=` | the task (`GetTask`) |
//! | `GET /console/api/tasks/{agent}/{id}/records?tenant=` | SSE: the task's records in log order ([`Bridge::timeline`]), then each one as it is appended; `event: caught-up` once the history is out; `Last-Event-ID` (an offset) resumes after it |
//! | `POST /console/api/tasks/{agent}/{id}/cancel?tenant=` | `CancelTask`: the task |
//!
//! # Who sees what
//!
//! Every read goes through the bridge's own paths (`Bridge::handle` with a typed call, and
//! [`Bridge::timeline`]) with the request's caller, so the console shows exactly what that
//! caller could read over A2A: its own tasks, in its tenant. Without [`ConsoleConfig::auth`]
//! the caller is anonymous (a loopback server's default); with it, every `api/` request
//! needs the same credentials as a JSON-RPC request (`Authorization: Bearer …`, the page
//! keeps the token in the tab's session storage) and the scope of the method it stands for
//! (`tasks:read` to read, `tasks:cancel` to cancel). The page and its assets are public:
//! they hold no data. Every route is behind the same Host and Origin checks as the RPC
//! endpoint ([`Allowed`]), against DNS rebinding. A push config is shown by its id and URL
//! without the query; its token and credentials never leave the server.
//!
//! Errors are `{"error":{"code","kind","message"}}` with the kind's HTTP status (401/403 with
//! a `WWW-Authenticate` challenge from auth, as on the RPC endpoint).

mod api;
mod records;

use std::sync::Arc;

use agentlog_wire::jsonrpc::Operation;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;

use super::auth::{EdgeAuth, Refusal};
use super::{Allowed, errors, guard};
use crate::agent::Caller;
use crate::bridge::Bridge;
use crate::error::Error;

/// Where the console is served.
pub const CONSOLE_PATH: &str = "/console";

const INDEX_HTML: &str = include_str!("assets/index.html");
const CONSOLE_JS: &str = include_str!("assets/console.js");
const CONSOLE_CSS: &str = include_str!("assets/console.css");

/// Which protocol a console agent's tasks come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsoleBinding {
    /// A2A: the agent's own tasks (JSON-RPC, HTTP+JSON and gRPC alike: the log does not
    /// say which one a task came by).
    A2a,
    /// MCP: a tool agent's tasks, one per `tools/call`.
    Mcp,
}

impl ConsoleBinding {
    fn as_str(self) -> &'static str {
        match self {
            ConsoleBinding::A2a => "a2a",
            ConsoleBinding::Mcp => "mcp",
        }
    }
}

/// How the console behaves.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ConsoleConfig {
    /// Who may read: as [`HttpConfig::auth`](super::HttpConfig::auth). Default `None`:
    /// every caller is anonymous.
    pub auth: Option<EdgeAuth>,
    /// The hosts and origins served (as the RPC endpoint's). Default: loopback only.
    pub allowed: Allowed,
}

impl ConsoleConfig {
    /// The defaults (each field says its own).
    pub fn new() -> Self {
        Self::default()
    }
}

setters!(ConsoleConfig {
    allowed: Allowed,
} optional {
    auth: EdgeAuth,
});

/// One agent the console shows.
#[derive(Debug, Clone)]
struct Agent {
    name: String,
    binding: ConsoleBinding,
    bridge: Bridge,
}

#[derive(Debug)]
struct Console {
    agents: Vec<Agent>,
    auth: Option<EdgeAuth>,
    allowed: Allowed,
}

type ConsoleState = Arc<Console>;

/// The console's routes over `bridges` (each agent once; the first is listed first), to
/// merge beside [`router`](super::router). See the module docs.
pub fn router(bridges: Vec<(Bridge, ConsoleBinding)>, config: ConsoleConfig) -> Router {
    let mut agents: Vec<Agent> = Vec::new();
    for (bridge, binding) in bridges {
        let name = bridge.config().topics.agent.clone();
        if !agents.iter().any(|a| a.name == name) {
            agents.push(Agent {
                name,
                binding,
                bridge,
            });
        }
    }
    let state: ConsoleState = Arc::new(Console {
        agents,
        auth: config.auth,
        allowed: config.allowed,
    });
    Router::new()
        .route(CONSOLE_PATH, any(serve))
        .route(&format!("{CONSOLE_PATH}/"), any(serve))
        .route(&format!("{CONSOLE_PATH}/{{*rest}}"), any(serve))
        .with_state(state)
}

/// Every console request: the host and origin checks, then the route.
async fn serve(State(console): State<ConsoleState>, request: Request) -> Response {
    let (parts, _body) = request.into_parts();
    let origin = match console.allowed.admit(&parts) {
        Ok(origin) => origin,
        Err(refusal) => return refusal,
    };
    if let Some(preflight) = guard::preflight(&parts, origin.as_ref()) {
        return preflight;
    }
    let mut response = route(&console, &parts).await;
    guard::cors(&mut response, origin);
    response
}

async fn route(console: &Console, parts: &Parts) -> Response {
    let path = parts.uri.path();
    let rest = path
        .strip_prefix(CONSOLE_PATH)
        .unwrap_or_default()
        .trim_start_matches('/');
    let segments: Vec<&str> = rest.split('/').collect();
    let method = &parts.method;
    let get = method == Method::GET || method == Method::HEAD;
    match segments.as_slice() {
        [""] | ["index.html"] if get => asset(INDEX_HTML, "text/html; charset=utf-8"),
        ["console.js"] if get => asset(CONSOLE_JS, "text/javascript; charset=utf-8"),
        ["console.css"] if get => asset(CONSOLE_CSS, "text/css; charset=utf-8"),
        ["api", "agents"] if get => api::agents(console, parts).await,
        ["api", "tasks"] if get => api::list(console, parts).await,
        ["api", "counts"] if get => api::counts(console, parts).await,
        ["api", "tasks", agent, id] if get => api::task(console, parts, agent, id).await,
        ["api", "tasks", agent, id, "records"] if get => {
            records::follow(console, parts, agent, id).await
        }
        ["api", "tasks", agent, id, "cancel"] if method == Method::POST => {
            api::cancel(console, parts, agent, id).await
        }
        ["" | "index.html" | "console.js" | "console.css"]
        | ["api", "agents" | "tasks" | "counts"]
        | ["api", "tasks", _, _]
        | ["api", "tasks", _, _, "records"] => {
            errors::method_not_allowed(method.as_str(), path, "GET, HEAD")
        }
        ["api", "tasks", _, _, "cancel"] => {
            errors::method_not_allowed(method.as_str(), path, "POST")
        }
        _ => errors::not_found(method.as_str(), path),
    }
}

/// What the page may load and do: its own script, style and API only, never framed (the
/// cancel button must not be clickjacked).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(text: &'static str, content_type: &'static str) -> Response {
    let mut response = text.into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        HeaderName::from_static("content-security-policy"),
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        HeaderName::from_static("x-frame-options"),
        HeaderValue::from_static("DENY"),
    );
    response
}

impl Console {
    /// The agent named `name` (a path segment, percent-decoded).
    #[allow(clippy::result_large_err)] // the error is the response to send, built rarely
    fn agent(&self, name: &str) -> Result<&Agent, Response> {
        let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
        self.agents.iter().find(|a| a.name == name).ok_or_else(|| {
            json_error(&Error::new(
                crate::ErrorKind::InvalidParams,
                format!("this console serves no agent {name:?}"),
            ))
        })
    }

    /// The request's caller for `operation`: anonymous without auth; with it, the
    /// credentials' identity, if it has the operation's scope.
    #[allow(clippy::result_large_err)] // the error is the response to send, built rarely
    async fn caller(&self, parts: &Parts, operation: Operation) -> Result<Caller, Response> {
        let Some(auth) = &self.auth else {
            return Ok(Caller::anonymous());
        };
        if super::auth::token_in_query(parts.uri.query()) {
            return Err(refuse(
                auth,
                &Refusal::Malformed(
                    "a token in the query string is refused: send it as `Authorization: Bearer <token>`"
                        .to_owned(),
                ),
            ));
        }
        let identity = auth
            .authenticator
            .authenticate(&parts.headers)
            .await
            .map_err(|refusal| refuse(auth, &refusal))?;
        let scope = auth.scopes.for_operation(operation);
        if !identity.has_scope(scope) {
            let mut response = body(
                StatusCode::FORBIDDEN,
                "permission_denied",
                i64::from(agentlog_wire::ErrorCode::PermissionDenied.code()),
                &format!("this needs the scope {scope:?}, which the credentials do not grant"),
            );
            if let Ok(value) =
                HeaderValue::from_str(&super::auth::challenge(auth, None, Some(scope)))
            {
                response.headers_mut().insert(WWW_AUTHENTICATE, value);
            }
            return Err(response);
        }
        Ok(identity.caller)
    }
}

/// 401 (400 for malformed credentials, 503 when they cannot be checked now) with a challenge.
fn refuse(auth: &EdgeAuth, refusal: &Refusal) -> Response {
    let (status, kind) = match refusal {
        Refusal::Missing | Refusal::Invalid(_) => (StatusCode::UNAUTHORIZED, "unauthenticated"),
        Refusal::Malformed(_) => (StatusCode::BAD_REQUEST, "unauthenticated"),
        Refusal::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
    };
    let mut response = body(
        status,
        kind,
        i64::from(agentlog_wire::ErrorCode::Unauthenticated.code()),
        refusal.description(),
    );
    if !matches!(refusal, Refusal::Unavailable(_))
        && let Ok(value) = HeaderValue::from_str(&super::auth::challenge(auth, Some(refusal), None))
    {
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    response
}

/// `error` as the console's error body, with its kind's HTTP status.
fn json_error(error: &Error) -> Response {
    let rpc = error.to_rpc();
    let info = error.kind().info();
    let status =
        StatusCode::from_u16(info.http_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    body(status, info.name, i64::from(rpc.code.code()), &rpc.message)
}

fn body(status: StatusCode, kind: &str, code: i64, message: &str) -> Response {
    let value = serde_json::json!({"error": {"code": code, "kind": kind, "message": message}});
    json(status, &value)
}

fn json(status: StatusCode, value: &serde_json::Value) -> Response {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "{}".to_owned());
    let mut response = (status, Body::from(text)).into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The query's value of `key`, if given and not empty.
fn query(parts: &Parts, key: &str) -> Option<String> {
    let query = parts.uri.query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
