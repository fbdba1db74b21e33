//! A2A's HTTP+JSON binding (spec §11), on the JSON-RPC endpoint's base path: each route
//! becomes the JSON-RPC request it stands for ([`params`]), goes through the same checks,
//! authentication and [`Bridge::handle`](crate::bridge::Bridge::handle) as a JSON-RPC
//! request, and its answer is written in the binding's shape ([`reply`]): so the two
//! bindings cannot answer differently. Every route also serves under `/{tenant}/…`, the
//! tenant the request's (see the bridge's tenant rules).
//!
//! - Request bodies: `application/json` or `application/a2a+json`, as for JSON-RPC (a
//!   `:cancel` may come without one); responses `application/json`.
//! - Errors: a `google.rpc.Status` JSON body (`code` = the HTTP status, `status` the gRPC
//!   code's name, an `ErrorInfo` with the A2A reason in `details`), with the HTTP status of
//!   the error table.
//! - Streams (`message:stream`, `:subscribe`): SSE, one bare `StreamResponse` per `data:`
//!   with `id:` the log position (`Last-Event-ID` resumes, as on JSON-RPC); an error once the
//!   stream has started is one `event: error` frame whose data is the Status.

mod params;
mod reply;
mod route;

use std::time::Instant;

use axum::body::Body;
use axum::http::request::Parts;
use axum::response::Response;

pub(super) use route::{Matched, Route, route};

use super::AppState;
use super::body::read_body_within;
use super::metrics::UNKNOWN_METHOD;
use super::rpc::{self, ACCEPTED_TYPES, NotCalled, accepted_content_type, call, echo_extensions};
use crate::error::{Error, ErrorKind};

/// Answer one request of the binding (its host and origin already admitted).
pub(super) async fn serve(
    state: &AppState,
    parts: Parts,
    body: Body,
    tenant: Option<String>,
    route: Route,
) -> Response {
    let start = Instant::now();
    let inner = &state.inner;
    let metrics = &inner.metrics;
    let refused = |code: i64, refusal: Response| {
        metrics.observe(route.method(), code, start.elapsed());
        refusal
    };
    if let Some(refusal) = super::health::gate(state) {
        let refusal = rpc::refuse(state, &parts, body, refusal).await;
        return refused(-32603, reply::restyle(refusal).await);
    }
    let typed = parts.headers.contains_key(axum::http::header::CONTENT_TYPE);
    let needs_type = route.takes_body() && (typed || !matches!(route, Route::Cancel(_)));
    if needs_type && !accepted_content_type(&parts.headers) {
        let error = Error::new(
            ErrorKind::ContentTypeNotSupported,
            format!(
                "Content-Type must be {} or {}",
                ACCEPTED_TYPES[0], ACCEPTED_TYPES[1]
            ),
        );
        let refusal = rpc::refuse(state, &parts, body, reply::error(&error)).await;
        return refused(-32005, refusal);
    }
    let read = read_body_within(&parts.headers, body, inner.body_limit, inner.body_timeout);
    let body = match read.await {
        Ok(body) => body,
        Err(refusal) => return refused(-32600, reply::restyle(refusal).await),
    };
    let query = parts.uri.query();
    let rpc_body = match params::rpc_body(&route, tenant.as_deref(), query, &body) {
        Ok(rpc_body) => rpc_body,
        Err(error) => {
            let code = i64::from(error.to_rpc().code.code());
            return refused(code, reply::error(&error));
        }
    };
    match call(state, &parts, &body, &rpc_body, start).await {
        Err(NotCalled::Refused(refusal)) => reply::restyle(refusal).await,
        Err(NotCalled::Piped(answer)) => answer,
        Ok(called) => {
            let (code, response) = reply::respond(called.reply);
            let method = match called.probe.method {
                UNKNOWN_METHOD => route.method(),
                method => method,
            };
            metrics.observe(method, code, start.elapsed());
            echo_extensions(response, &called.activated)
        }
    }
}
