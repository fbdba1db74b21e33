//! `/healthz` (liveness) and `/readyz` (readiness), and the gate that refuses JSON-RPC
//! requests while the bridge is not ready.
//!
//! Liveness is the process answering. Readiness is the bridge able to answer *correctly and
//! soon*: its task view has replayed the log it started on, and the log takes appends. While
//! the view replays, a read would wait for it (up to the bridge's sync timeout) and then fail,
//! so JSON-RPC requests are refused at once with `503`, `Retry-After: 1` and a retryable
//! JSON-RPC error (kind `unavailable`): a load balancer sends the client elsewhere, a client
//! retries. A log that stops taking appends (closed, a write error, its server gone) makes
//! `/readyz` answer `503` too, but requests still reach the bridge, which reports each
//! failure as it happens.

use std::time::Duration;

use axum::extract::State;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;

use super::AppState;
use super::errors::{json, rpc_error_refusal};
use crate::error::{Error, ErrorKind};

/// How long `/readyz` waits for the log to say whether it takes appends.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /healthz`: the process is alive.
pub(super) async fn health() -> &'static str {
    "ok"
}

/// `GET /readyz`: `200 {"ready":true,"partitions":{"held":[…],"replaying":[…]}}`, or `503` with
/// why not, a retryable error and the partitions.
pub(super) async fn ready(State(state): State<AppState>) -> Response {
    let bridge = &state.inner.bridge;
    let refusal = match replaying(&state) {
        Some(error) => Some(error),
        None => probe(bridge.log().clone()).await.err(),
    };
    // The partitions the view holds, and those of them still replaying (a partition held on
    // demand beyond the assignment replays without making the bridge unready).
    let status = bridge.view().partition_status();
    let partitions = serde_json::json!({
        "held": status.iter().map(|s| s.partition).collect::<Vec<_>>(),
        "replaying": status.iter().filter(|s| !s.ready).map(|s| s.partition).collect::<Vec<_>>(),
    });
    match refusal {
        None => {
            let body = serde_json::json!({"ready": true, "partitions": partitions});
            json(
                StatusCode::OK,
                serde_json::to_vec(&body).unwrap_or_default(),
            )
        }
        Some(error) => {
            let info = error.kind().info();
            let body = serde_json::json!({
                "ready": false,
                "reason": error.report().to_string(),
                "error": {"kind": info.name, "retryable": true},
                "partitions": partitions,
            });
            unavailable(json(
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::to_vec(&body).unwrap_or_default(),
            ))
        }
    }
}

/// The refusal of a JSON-RPC request while the view replays the log, if it does.
pub(super) fn gate(state: &AppState) -> Option<Response> {
    let error = replaying(state)?;
    Some(unavailable(rpc_error_refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        &error.to_rpc(),
    )))
}

/// Why the bridge is not ready because its view still replays the log, if it does.
fn replaying(state: &AppState) -> Option<Error> {
    let view = state.inner.bridge.view();
    (!view.caught_up()).then(|| {
        Error::new(
            ErrorKind::Unavailable,
            "not ready: the task view is still replaying the log; retry shortly",
        )
    })
}

/// Ask the log whether it takes appends, giving up after [`PROBE_TIMEOUT`]. The call runs in
/// a task of its own, so that giving up never cuts it in the middle (an Iggy connection cut
/// mid-call stays broken for seconds).
async fn probe(log: crate::log::Log) -> crate::Result<()> {
    let call = tokio::spawn(async move { log.ready().await });
    match tokio::time::timeout(PROBE_TIMEOUT, call).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(join)) => {
            Err(Error::new(ErrorKind::Internal, "the log probe panicked").with_source(join))
        }
        Err(_) => Err(Error::new(
            ErrorKind::Timeout,
            format!("the log did not answer a readiness probe within {PROBE_TIMEOUT:?}"),
        )),
    }
}

fn unavailable(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use serde_json::Value;
    use tower::ServiceExt;

    use crate::bridge::{Bridge, BridgeConfig};
    use crate::http::{HttpConfig, router};
    use crate::log::layers::{FaultLayer, Faults, LogOp};

    async fn get(
        app: &axum::Router,
        request: Request<Body>,
    ) -> (StatusCode, Option<String>, Value) {
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let retry = response
            .headers()
            .get(RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, retry, serde_json::from_slice(&body).unwrap())
    }

    fn readyz() -> Request<Body> {
        Request::get("/readyz").body(Body::empty()).unwrap()
    }

    fn get_task() -> Request<Body> {
        Request::post("/")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Body::from(
                r#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"t"}}"#,
            ))
            .unwrap()
    }

    use super::*;

    #[tokio::test]
    async fn ready_once_the_view_replayed_the_log_and_the_log_takes_appends() {
        let log = crate::log::open("memory://").await.unwrap();
        // A log with history: a bridge starting over it has something to replay.
        let first = Bridge::open(log.clone(), BridgeConfig::new("a"))
            .await
            .unwrap();
        let request = agentlog_wire::a2a::SendMessageRequest {
            tenant: None,
            message: agentlog_wire::a2a::Message::user_text("m-1", "hi"),
            configuration: Some(agentlog_wire::a2a::SendMessageConfiguration {
                return_immediately: true,
                ..Default::default()
            }),
            metadata: None,
        };
        first
            .send_message(&crate::Caller::anonymous(), request)
            .await
            .unwrap();

        // The second bridge's reads are slow: its view replays for a while.
        let faults = Faults::new();
        faults.delay(LogOp::Read, Duration::from_millis(500));
        let slow = log.clone().layer(FaultLayer::new(faults.clone()));
        let bridge = Bridge::open(slow, BridgeConfig::new("a")).await.unwrap();
        let app = router(bridge.clone(), HttpConfig::default());
        let (status, retry, body) = get(&app, readyz()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_eq!(retry.as_deref(), Some("1"));
        assert_eq!(body["ready"], false);
        assert_eq!(body["error"]["retryable"], true);
        assert!(
            body["reason"].as_str().unwrap().contains("replaying"),
            "{body}"
        );
        let replaying = body["partitions"]["replaying"].as_array().unwrap();
        assert!(!replaying.is_empty(), "{body}");
        // JSON-RPC is refused at once, retryably, rather than left to wait for the replay.
        let (status, retry, body) = get(&app, get_task()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry.as_deref(), Some("1"));
        assert_eq!(body["error"]["code"], -32603);
        assert_eq!(
            body["error"]["data"][0]["metadata"]["kind"], "unavailable",
            "{body}"
        );

        bridge.view().wait_caught_up().await;
        faults.clear_delays();
        let (status, _, body) = get(&app, readyz()).await;
        assert_eq!(
            (status, body),
            (
                StatusCode::OK,
                serde_json::json!({"ready": true, "partitions": {"held": [0, 1, 2, 3], "replaying": []}})
            )
        );
        let (status, _, body) = get(&app, get_task()).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["error"]["code"], -32001, "a plain answer now: {body}");

        // A log that no longer takes appends is not ready either.
        log.close().await.unwrap();
        let (status, _, body) = get(&app, readyz()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            body["reason"].as_str().unwrap().contains("closed"),
            "{body}"
        );
    }
}
