//! The MCP route with edge auth, without a port: the resource server's challenges, its
//! metadata, scopes per method, and the token's principal owning the tasks it makes.

use super::*;
use agentlog_wire::mcp::{CallToolResult, Tool};

use crate::http::mcp::{McpAuth, McpHttpConfig};
use crate::mcp::{McpBridge, McpConfig, TaskSupport, ToolConfig};
use crate::worker::{ToolCall, Tools, WorkerConfig, tool_fn};

/// The agent whose topics the tools' calls go to.
const TOOLS_AGENT: &str = "mcp.auth-tests";

/// `greet` (answers at once) and `slow_compute` (sleeps `seconds`; a task when the client
/// takes tasks).
fn tools() -> (Vec<ToolConfig>, Tools) {
    let config = |name: &str, schema: Value, support: TaskSupport| {
        let mut config = ToolConfig::new(Tool::new(name, schema));
        config.agent = Some(TOOLS_AGENT.to_owned());
        config.task_support = support;
        config
    };
    let configs = vec![
        config(
            "greet",
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            TaskSupport::Forbidden,
        ),
        config(
            "slow_compute",
            json!({"type": "object", "properties": {"seconds": {"type": "number"}}}),
            TaskSupport::Optional,
        ),
    ];
    let handlers = Tools::new()
        .tool(
            "greet",
            tool_fn(|call: ToolCall| async move {
                let name = call.arguments["name"].as_str().unwrap_or("you").to_owned();
                Ok(CallToolResult::text(format!("Hello, {name}!")))
            }),
        )
        .tool(
            "slow_compute",
            tool_fn(|call: ToolCall| async move {
                let seconds = call.arguments["seconds"].as_f64().unwrap_or(1.0);
                tokio::select! {
                    () = call.task.cancellation().cancelled() => {}
                    () = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {}
                }
                Ok(CallToolResult::text("computed"))
            }),
        );
    (configs, handlers)
}

const RESOURCE: &str = "https://agent.example/mcp";
const METADATA: &str = "https://agent.example/.well-known/oauth-protected-resource/mcp";

async fn mcp_app() -> (Router, Worker) {
    let log = crate::log::open("memory://").await.unwrap();
    let (configs, handlers) = tools();
    let mcp = McpBridge::open(log.clone(), McpConfig::new(configs))
        .await
        .unwrap();
    let worker = Worker::start(log, WorkerConfig::new(TOOLS_AGENT), handlers)
        .await
        .unwrap();
    let edge = EdgeAuth::new(JwtAuthenticator::new(&config()).unwrap());
    let http = McpHttpConfig {
        auth: Some(McpAuth::new(edge, RESOURCE.parse().unwrap()).unwrap()),
        ..McpHttpConfig::default()
    };
    (crate::http::mcp::router(mcp, http).unwrap(), worker)
}

/// A modern-era call (the tasks extension declared) as the holder of `token`, if any.
async fn mcp(app: &Router, token: Option<&str>, method: &str, params: Value) -> Reply {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let authorization = token.map(bearer);
    // The modern era's Mcp-Name: the tool's name, or the task's id.
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .map(str::to_owned);
    let mut headers = vec![
        ("host", "127.0.0.1"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = &name {
        headers.push(("mcp-name", name));
    }
    if let Some(authorization) = &authorization {
        headers.push(("authorization", authorization));
    }
    post(app, "/mcp", &headers, &body.to_string()).await
}

#[tokio::test]
async fn without_a_good_token_the_route_challenges_with_its_metadata_and_scope() {
    let (app, _worker) = mcp_app().await;
    let call = json!({"name": "greet", "arguments": {"name": "ada"}});

    let missing = mcp(&app, None, "tools/call", call.clone()).await;
    assert_eq!(
        missing.status,
        StatusCode::UNAUTHORIZED,
        "{:?}",
        missing.body
    );
    assert_eq!(
        missing.challenge(),
        format!(r#"Bearer realm="agentlog", resource_metadata="{METADATA}", scope="tasks:send""#)
    );
    // Discovery needs a token too; the challenge then asks for every scope.
    let listing = mcp(&app, None, "tools/list", json!({})).await;
    assert_eq!(listing.status, StatusCode::UNAUTHORIZED);
    assert!(
        listing
            .challenge()
            .ends_with(r#"scope="tasks:send tasks:read tasks:cancel""#),
        "{}",
        listing.challenge()
    );

    let mut wrong_audience = claims("alice", ALL_SCOPES);
    wrong_audience["aud"] = json!("another-agent");
    let invalid = mcp(&app, Some(&ed(&wrong_audience)), "tools/call", call.clone()).await;
    assert_eq!(invalid.status, StatusCode::UNAUTHORIZED);
    assert!(
        invalid.challenge().contains(r#"error="invalid_token""#)
            && invalid
                .challenge()
                .contains(&format!(r#"resource_metadata="{METADATA}""#)),
        "{}",
        invalid.challenge()
    );

    let reader = ed(&claims("alice", "tasks:read"));
    let narrow = mcp(&app, Some(&reader), "tools/call", call.clone()).await;
    assert_eq!(narrow.status, StatusCode::FORBIDDEN, "{:?}", narrow.body);
    assert_eq!(
        narrow.challenge(),
        format!(
            r#"Bearer realm="agentlog", error="insufficient_scope", scope="tasks:send", resource_metadata="{METADATA}""#
        )
    );
    assert_eq!(narrow.body["error"]["code"], -32600);
    // The narrow token still lists the tools.
    let listed = mcp(&app, Some(&reader), "tools/list", json!({})).await;
    assert_eq!(listed.status, StatusCode::OK, "{:?}", listed.body);
    assert!(listed.body["result"]["tools"].is_array());

    let in_query = post(
        &app,
        &format!("/mcp?access_token={}", good_token()),
        &[
            ("host", "127.0.0.1"),
            ("authorization", &bearer(&good_token())),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string(),
    )
    .await;
    assert_eq!(in_query.status, StatusCode::BAD_REQUEST);
    assert!(in_query.challenge().contains(r#"error="invalid_request""#));

    let good = mcp(&app, Some(&good_token()), "tools/call", call).await;
    assert_eq!(good.status, StatusCode::OK, "{:?}", good.body);
    assert_eq!(good.body["result"]["content"][0]["text"], "Hello, ada!");
}

#[tokio::test]
async fn the_protected_resource_metadata_is_served_at_both_well_known_paths() {
    let (app, _worker) = mcp_app().await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = app
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let metadata: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            metadata,
            json!({
                "resource": RESOURCE,
                "authorization_servers": [ISSUER],
                "scopes_supported": ["tasks:send", "tasks:read", "tasks:cancel"],
                "bearer_methods_supported": ["header"],
            }),
            "{path}"
        );
    }
}

#[tokio::test]
async fn a_task_belongs_to_the_token_s_principal() {
    let (app, _worker) = mcp_app().await;
    let alice = ed(&claims("alice", ALL_SCOPES));
    let bob = ed(&claims("bob", ALL_SCOPES));
    let created = mcp(
        &app,
        Some(&alice),
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 30}}),
    )
    .await;
    assert_eq!(created.status, StatusCode::OK, "{:?}", created.body);
    assert_eq!(
        created.body["result"]["resultType"], "task",
        "{:?}",
        created.body
    );
    let task_id = created.body["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();

    let mine = mcp(&app, Some(&alice), "tasks/get", json!({"taskId": task_id})).await;
    assert_eq!(
        mine.body["result"]["taskId"],
        task_id.as_str(),
        "{:?}",
        mine.body
    );
    // Bob gets what a task that does not exist gets, for reads and for cancels.
    let unknown = format!("{TOOLS_AGENT}:{}", uuid::Uuid::new_v4());
    for method in ["tasks/get", "tasks/cancel"] {
        let theirs = mcp(&app, Some(&bob), method, json!({"taskId": task_id})).await;
        let none = mcp(&app, Some(&bob), method, json!({"taskId": unknown})).await;
        assert_eq!(
            (theirs.status, theirs.code()),
            (none.status, none.code()),
            "{method}: {:?} / {:?}",
            theirs.body,
            none.body
        );
        assert!(
            theirs.body["error"].is_object(),
            "{method}: {:?}",
            theirs.body
        );
    }
    let cancelled = mcp(
        &app,
        Some(&alice),
        "tasks/cancel",
        json!({"taskId": task_id}),
    )
    .await;
    assert!(cancelled.body["result"].is_object(), "{:?}", cancelled.body);
}
