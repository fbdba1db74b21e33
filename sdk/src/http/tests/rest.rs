//! The HTTP+JSON binding through the router: every route, its errors and streams, and tenant
//! paths; the same tasks as JSON-RPC's.

use axum::http::Method;

use super::*;
use crate::agent::Caller;
use crate::http::auth::{ApiKeys, EdgeAuth, Identity};

fn rest(method: Method, path: &str, body: Option<Value>) -> Request<Body> {
    let builder = Request::builder().method(method).uri(path);
    match body {
        Some(body) => builder
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
        None => builder.body(Body::empty()).unwrap(),
    }
}

fn message(message_id: &str, text: &str) -> Value {
    json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

/// The `google.rpc.Status` of an error reply, checked for its shape: `(status, reason)`.
fn status_of(reply: &Reply) -> (String, String) {
    let body = reply.json();
    let error = &body["error"];
    assert_eq!(error["code"], reply.status.as_u16(), "{body}");
    assert_eq!(
        error["details"][0]["@type"],
        "type.googleapis.com/google.rpc.ErrorInfo"
    );
    assert_eq!(error["details"][0]["domain"], "a2a-protocol.org");
    (
        error["status"].as_str().unwrap().to_owned(),
        error["details"][0]["reason"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn every_route_answers_as_json_rpc_does() {
    let (app, _worker) = app_with_worker(HttpConfig::default()).await;
    let card = call(
        &app,
        Request::get("/.well-known/agent-card.json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let bindings: Vec<Value> = card.json()["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["protocolBinding"].clone())
        .collect();
    assert_eq!(bindings, [json!("JSONRPC"), json!("HTTP+JSON")]);

    let sent = call(
        &app,
        rest(Method::POST, "/message:send", Some(message("m-1", "hi"))),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    assert_eq!(sent.content_type(), "application/json");
    let task = sent.json()["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let id = task["id"].as_str().unwrap().to_owned();

    let got = call(
        &app,
        rest(Method::GET, &format!("/tasks/{id}?historyLength=0"), None),
    )
    .await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.json()["id"], id.as_str());
    assert!(
        got.json()
            .get("history")
            .is_none_or(|h| h.as_array().unwrap().is_empty())
    );
    // The same task as JSON-RPC sees it.
    let by_rpc = rpc(&app, envelope(json!(1), "GetTask", json!({"id": id}))).await;
    assert_eq!(by_rpc.json()["result"]["status"], got.json()["status"]);

    let listed = call(
        &app,
        rest(
            Method::GET,
            "/tasks?pageSize=10&includeArtifacts=true",
            None,
        ),
    )
    .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text());
    assert_eq!(listed.json()["tasks"][0]["id"], id.as_str());

    let missing = call(&app, rest(Method::GET, "/tasks/nope", None)).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(
        status_of(&missing),
        ("NOT_FOUND".into(), "TASK_NOT_FOUND".into())
    );
    assert_eq!(
        missing.json()["error"]["details"][0]["metadata"]["taskId"],
        "nope"
    );

    let cancel = call(
        &app,
        rest(Method::POST, &format!("/tasks/{id}:cancel"), None),
    )
    .await;
    assert_eq!(cancel.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        status_of(&cancel),
        ("FAILED_PRECONDITION".into(), "TASK_NOT_CANCELABLE".into())
    );

    let push = call(
        &app,
        rest(
            Method::POST,
            &format!("/tasks/{id}/pushNotificationConfigs"),
            Some(json!({"url": "https://h/x"})),
        ),
    )
    .await;
    assert_eq!(status_of(&push).1, "PUSH_NOTIFICATION_NOT_SUPPORTED");
    // The card declares no extended card.
    let card = call(&app, rest(Method::GET, "/extendedAgentCard", None)).await;
    assert_eq!(status_of(&card).1, "UNSUPPORTED_OPERATION");
}

#[tokio::test]
async fn streams_are_bare_stream_responses_and_a_running_task_can_be_subscribed_to() {
    let (app, _worker) = app_with_worker(HttpConfig::default()).await;
    let streamed = call(
        &app,
        rest(
            Method::POST,
            "/message:stream",
            Some(message("m-2", "hello")),
        ),
    )
    .await;
    assert_eq!(streamed.status, StatusCode::OK);
    let frames = streamed.frames();
    assert!(frames[0].json().get("task").is_some(), "{:?}", frames[0]);
    assert!(frames.iter().all(|f| f.json().get("jsonrpc").is_none()));
    let last = frames.last().unwrap().json();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );

    // Each of GET and POST subscribes to a task still running (a second of work).
    let mut last_id = String::new();
    for (n, method) in [Method::GET, Method::POST].into_iter().enumerate() {
        let mut slow = message(&format!("slow-{n}"), "sleep 1");
        slow["configuration"] = json!({"returnImmediately": true});
        let started = call(&app, rest(Method::POST, "/message:send", Some(slow))).await;
        let id = started.json()["task"]["id"].as_str().unwrap().to_owned();
        let subscribed = call(
            &app,
            rest(method.clone(), &format!("/tasks/{id}:subscribe"), None),
        )
        .await;
        let frames = subscribed.frames();
        assert_eq!(
            frames[0].json()["task"]["id"],
            id.as_str(),
            "{method}: {frames:?}"
        );
        let end = frames.last().unwrap().json();
        assert_eq!(
            end["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{end}"
        );
        last_id = id;
    }
    // A finished task has nothing to subscribe to: a plain error, before any stream.
    let done = call(
        &app,
        rest(Method::POST, &format!("/tasks/{last_id}:subscribe"), None),
    )
    .await;
    assert_eq!(done.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        status_of(&done),
        ("FAILED_PRECONDITION".into(), "UNSUPPORTED_OPERATION".into())
    );
}

#[tokio::test]
async fn bad_requests_get_the_bindings_errors() {
    let app = app().await;
    let untyped = Request::post("/message:send")
        .body(Body::from("{}"))
        .unwrap();
    let refused = call(&app, untyped).await;
    assert_eq!(refused.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(status_of(&refused).1, "CONTENT_TYPE_NOT_SUPPORTED");

    let not_json = Request::post("/message:send")
        .header(header::CONTENT_TYPE, "application/a2a+json")
        .body(Body::from("{nope"))
        .unwrap();
    let refused = call(&app, not_json).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        status_of(&refused),
        ("INVALID_ARGUMENT".into(), "PARSE_ERROR".into())
    );

    let bad_query = call(&app, rest(Method::GET, "/tasks?pageSize=many", None)).await;
    assert_eq!(
        status_of(&bad_query),
        ("INVALID_ARGUMENT".into(), "INVALID_PARAMS".into())
    );

    let wrong = call(&app, rest(Method::GET, "/message:send", None)).await;
    assert_eq!(wrong.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong.headers[header::ALLOW], "POST");
}

#[tokio::test]
async fn tenant_paths_partition_tasks_and_a_token_keeps_its_tenant() {
    let (app, _worker) = app_with_worker(HttpConfig::default()).await;
    let mut ids = Vec::new();
    for tenant in ["acme", "globex"] {
        let sent = call(
            &app,
            rest(
                Method::POST,
                &format!("/{tenant}/message:send"),
                Some(message("same", "hi")),
            ),
        )
        .await;
        assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
        ids.push(sent.json()["task"]["id"].as_str().unwrap().to_owned());
    }
    assert_ne!(
        ids[0], ids[1],
        "the same messageId under two tenants is two tasks"
    );
    let elsewhere = call(
        &app,
        rest(Method::GET, &format!("/globex/tasks/{}", ids[0]), None),
    )
    .await;
    assert_eq!(elsewhere.status, StatusCode::NOT_FOUND);
    let home = call(
        &app,
        rest(Method::GET, &format!("/acme/tasks/{}", ids[0]), None),
    )
    .await;
    assert_eq!(home.status, StatusCode::OK);
    // The request's tenant field is the same thing on JSON-RPC.
    let by_field = rpc(
        &app,
        envelope(json!(1), "GetTask", json!({"id": ids[0], "tenant": "acme"})),
    )
    .await;
    assert_eq!(by_field.json()["result"]["id"], ids[0].as_str());
    let default_tenant = call(&app, rest(Method::GET, &format!("/tasks/{}", ids[0]), None)).await;
    assert_eq!(default_tenant.status, StatusCode::NOT_FOUND);

    let keys = ApiKeys::default().with_key(
        "k",
        Identity {
            caller: Caller::principal("alice").in_tenant("acme"),
            scopes: vec![
                "tasks:send".into(),
                "tasks:read".into(),
                "tasks:cancel".into(),
            ],
        },
    );
    let config = HttpConfig::default().auth(EdgeAuth::new(keys));
    let (guarded, _worker) = app_with_worker(config).await;
    let with_key = |mut request: Request<Body>| {
        request
            .headers_mut()
            .insert("x-api-key", header::HeaderValue::from_static("k"));
        request
    };
    let own = call(
        &guarded,
        with_key(rest(
            Method::POST,
            "/acme/message:send",
            Some(message("a", "hi")),
        )),
    )
    .await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.text());
    let other = call(
        &guarded,
        with_key(rest(
            Method::POST,
            "/globex/message:send",
            Some(message("b", "hi")),
        )),
    )
    .await;
    assert_eq!(other.status, StatusCode::FORBIDDEN);
    assert_eq!(
        status_of(&other),
        ("PERMISSION_DENIED".into(), "PERMISSION_DENIED".into())
    );
    let anonymous = call(&guarded, rest(Method::GET, "/tasks", None)).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert!(anonymous.headers.contains_key(header::WWW_AUTHENTICATE));
    assert_eq!(status_of(&anonymous).0, "UNAUTHENTICATED");
}

#[tokio::test]
async fn under_a_prefixed_rpc_path_the_routes_start_at_a_segment_boundary() {
    let config = HttpConfig::default().rpc_path("/a2a".to_owned());
    let (app, _worker) = app_with_worker(config).await;
    let sent = call(
        &app,
        rest(
            Method::POST,
            "/a2a/message:send",
            Some(message("p-1", "hi")),
        ),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let tenanted = call(
        &app,
        rest(
            Method::POST,
            "/a2a/acme/message:send",
            Some(message("p-2", "hi")),
        ),
    )
    .await;
    assert_eq!(tenanted.status, StatusCode::OK, "{}", tenanted.text());
    // Not a tenant "bc" under "/a2a": another path altogether.
    let beside = call(
        &app,
        rest(
            Method::POST,
            "/a2abc/message:send",
            Some(message("p-3", "hi")),
        ),
    )
    .await;
    assert_eq!(beside.status, StatusCode::NOT_FOUND);
}
