//! Every request no fixed route took: the JSON-RPC endpoint, the HTTP+JSON binding's routes
//! under its base, the card under the RPC prefix, or 404. Matched here, not as axum routes,
//! because `rpc_path` may be any string and the binding's `:cancel` suffixes are inside a
//! segment (see the module docs of [`super`]).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::response::Response;

use super::rest::{self, Matched, Route};
use super::rpc::{refuse, rpc};
use super::{AppState, card, errors, guard};

/// Every request no fixed route took: the RPC endpoint, the card under the RPC prefix, or
/// 404.
pub(super) async fn dispatch(State(state): State<AppState>, request: Request) -> Response {
    let path = request.uri().path();
    let inner = &state.inner;
    if inner.rpc_paths.iter().any(|p| p == path) {
        return endpoint(state, request, Binding::JsonRpc).await;
    }
    // Under the base, at a segment boundary (`/a2a` does not own `/a2abc/…`).
    let under_base = path
        .strip_prefix(inner.rest_base.as_str())
        .filter(|rest| rest.starts_with('/'));
    if let Some(rest_path) = under_base {
        match rest::route(request.method(), rest_path) {
            Matched::Route { tenant, route } => {
                return endpoint(state, request, Binding::Rest(tenant, route)).await;
            }
            Matched::WrongMethod(allow) => {
                return errors::method_not_allowed(request.method().as_str(), path, allow);
            }
            Matched::None => {}
        }
    }
    if inner.prefixed_card_paths.iter().any(|p| p == path) {
        return match *request.method() {
            Method::GET => card::serve_card(&inner.card, request.headers()),
            Method::HEAD => {
                let mut response = card::serve_card(&inner.card, request.headers());
                *response.body_mut() = Body::empty();
                response
            }
            _ => errors::method_not_allowed(request.method().as_str(), path, "GET, HEAD"),
        };
    }
    errors::not_found(request.method().as_str(), path)
}

/// Which binding a request is for.
enum Binding {
    /// `POST {rpc_path}`.
    JsonRpc,
    /// A route of the HTTP+JSON binding, with the tenant of its path.
    Rest(Option<String>, Route),
}

/// An endpoint: the host and origin checks (and a CORS preflight), then a POST is a
/// JSON-RPC request and anything else `405`, or the HTTP+JSON route.
async fn endpoint(state: AppState, request: Request, binding: Binding) -> Response {
    let (parts, body) = request.into_parts();
    let inner = &state.inner;
    let origin = match inner.allowed.admit(&parts) {
        Ok(origin) => origin,
        Err(refusal) => return refuse(&state, &parts, body, refusal).await,
    };
    if let Some(preflight) = guard::preflight(&parts, origin.as_ref()) {
        return refuse(&state, &parts, body, preflight).await;
    }
    let mut response = match binding {
        Binding::Rest(tenant, route) => rest::serve(&state, parts, body, tenant, route).await,
        Binding::JsonRpc if parts.method == Method::POST => rpc(state.clone(), parts, body).await,
        Binding::JsonRpc => {
            let path = parts.uri.path();
            let refusal = errors::method_not_allowed(parts.method.as_str(), path, "POST");
            refuse(&state, &parts, body, refusal).await
        }
    };
    guard::cors(&mut response, origin);
    response
}
