//! Reloading an MCP bridge's definitions (`McpBridge::reload`): the next requests see them, a
//! `subscriptions/listen` stream that asked for list changes and a legacy session's stream hear
//! `notifications/…/list_changed` for each list that changed (and only those), a listing
//! that stays the same is no change, a subscribed configured resource whose text changed is
//! `notifications/resources/updated`, and definitions that do not check change nothing.

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, McpReply, McpRequest, McpStream, ToolConfig};
use agentlog_integration::mcp_rpc::{SOON, modern, rpc};
use agentlog_wire::mcp::Tool;
use futures::StreamExt as _;
use serde_json::{Value, json};

fn definitions(tools: &[&str], prompt: &str, text: &str) -> McpConfig {
    let tools: Vec<Value> = tools
        .iter()
        .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
        .collect();
    McpConfig::from_json(
        json!({"tools": tools,
               "prompts": [{"name": prompt, "messages": [{"role": "user",
                   "content": {"type": "text", "text": "hi"}}]}],
               "resources": [{"uri": "docs://readme", "name": "readme",
                   "mimeType": "text/plain", "text": text}]}),
        None,
    )
    .expect("definitions")
}

async fn next(stream: &mut McpStream) -> Value {
    let frame = tokio::time::timeout(SOON, stream.next())
        .await
        .expect("in time")
        .expect("a frame");
    serde_json::from_slice(&frame).expect("json")
}

async fn listen(mcp: &McpBridge, notifications: Value) -> McpStream {
    let body = json!({"jsonrpc": "2.0", "id": "s1", "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": modern(false)}})
    .to_string();
    let request = McpRequest {
        body: body.as_bytes(),
        caller: Caller::principal("alice"),
        headers: None,
        accepts_stream: true,
    };
    match mcp.handle(request).await {
        McpReply::Stream(stream) => stream,
        other => panic!("listen: {other:?}"),
    }
}

fn names(listed: &Value, member: &str) -> Vec<String> {
    listed["result"][member]
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_reload_serves_the_new_definitions_and_tells_the_streams_that_asked() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let mcp = McpBridge::open(log, definitions(&["a"], "greet", "v1"))
        .await
        .expect("mcp");
    let mut tools_only = listen(&mcp, json!({"toolsListChanged": true})).await;
    let ack = next(&mut tools_only).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "{ack}"
    );
    let mut all = listen(
        &mcp,
        json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}),
    )
    .await;
    next(&mut all).await;
    let alice = Caller::principal("alice");
    let mut session = mcp.session_stream(&alice, "s-1").await.expect("session");
    let mut readme = listen(&mcp, json!({"resourceSubscriptions": ["docs://readme"]})).await;
    next(&mut readme).await;

    // A tool added: the tools' list changed, nothing else.
    let changed = mcp
        .reload(definitions(&["a", "b"], "greet", "v1"))
        .await
        .expect("reload");
    assert!(changed.tools && !changed.prompts && !changed.resources);
    let (_, listed) = rpc(&mcp, "tools/list", json!({}), None).await;
    assert_eq!(names(&listed, "tools"), ["a", "b"]);
    for stream in [&mut tools_only, &mut all] {
        let heard = next(stream).await;
        assert_eq!(
            heard["method"], "notifications/tools/list_changed",
            "{heard}"
        );
        assert_eq!(
            heard["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "s1"
        );
    }
    let heard = next(&mut session).await;
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );

    // The same listings (a resource's text changed, not the list): no change. Then a renamed
    // prompt: the prompts' list only, which the tools-only stream did not ask for.
    let same = mcp
        .reload(definitions(&["a", "b"], "greet", "v2"))
        .await
        .expect("reload");
    assert!(!same.any());
    let (_, read) = rpc(
        &mcp,
        "resources/read",
        json!({"uri": "docs://readme"}),
        None,
    )
    .await;
    assert_eq!(read["result"]["contents"][0]["text"], "v2");
    // The text changed under a subscription (the reload before did not change it).
    let heard = next(&mut readme).await;
    assert_eq!(
        heard["method"], "notifications/resources/updated",
        "{heard}"
    );
    assert_eq!(heard["params"]["uri"], "docs://readme");
    mcp.reload(definitions(&["a", "b"], "welcome", "v2"))
        .await
        .expect("reload");
    let heard = next(&mut all).await;
    assert_eq!(
        heard["method"], "notifications/prompts/list_changed",
        "{heard}"
    );
    let heard = next(&mut session).await;
    assert_eq!(
        heard["method"], "notifications/prompts/list_changed",
        "{heard}"
    );
    let (_, listed) = rpc(&mcp, "prompts/list", json!({}), Some(modern(false))).await;
    assert_eq!(names(&listed, "prompts"), ["welcome"]);

    // Definitions that do not check: refused, the ones served stay, nobody is told.
    let bad = McpConfig::new(vec![ToolConfig::new(Tool::new(
        "bad name!",
        json!({"type": "object"}),
    ))]);
    assert!(mcp.reload(bad).await.is_err());
    let (_, listed) = rpc(&mcp, "tools/list", json!({}), None).await;
    assert_eq!(names(&listed, "tools"), ["a", "b"]);
    // The tools-only stream's next notification is the next tools change's.
    mcp.reload(definitions(&["b"], "welcome", "v2"))
        .await
        .expect("reload");
    let heard = next(&mut tools_only).await;
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );
}

#[tokio::test]
async fn list_change_flags_are_checked_and_acknowledged_as_served() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let config = McpConfig::from_json(json!([]), None).expect("definitions");
    let mcp = McpBridge::open(log, config).await.expect("mcp");
    // No prompts served: promptsListChanged is not honored.
    let mut stream = listen(
        &mcp,
        json!({"promptsListChanged": true, "resourcesListChanged": true}),
    )
    .await;
    let ack = next(&mut stream).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourcesListChanged": true}),
        "{ack}"
    );
    let (status, body) = rpc(
        &mcp,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": "yes"}}),
        Some(modern(false)),
    )
    .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!(-32602)),
        "{body}"
    );
}
