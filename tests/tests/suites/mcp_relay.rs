//! The `initialize` era's server-to-client requests relayed through the log, against
//! `McpBridge::handle` on two bridges over one log: a legacy call on an event stream through
//! bridge A sends its tool's elicitation and sampling requests on that stream, the client's
//! responses POSTed to bridge B are the answers its worker gets, and A's stream ends with the
//! result; a refusal cancels the call; responses to nothing, or from another caller, are
//! refused and write nothing.

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, McpReply, McpRequest, McpStream, ToolConfig};
use agentlog::worker::{ToolCall, Tools, Worker, tool_fn};
use agentlog_integration::mcp_rpc::{SOON, two_bridges};
use agentlog_wire::mcp::{CallToolResult, Tool};
use futures::StreamExt as _;
use serde_json::{Value, json};

const AGENT: &str = "mcp.relay";

fn config() -> McpConfig {
    McpConfig::new(vec![ToolConfig {
        agent: Some(AGENT.into()),
        ..ToolConfig::new(Tool::new("survey", json!({"type": "object"})))
    }])
}

/// `survey` asks a name (elicitation) and a poem (sampling) at once, then answers both.
fn tools() -> Tools {
    Tools::new().tool(
        "survey",
        tool_fn(|call: ToolCall| async move {
            let Some(responses) = call.input_responses else {
                let requests = json!({
                    "name": {"method": "elicitation/create", "params": {"message": "name?",
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}},
                    "poem": {"method": "sampling/createMessage", "params": {"maxTokens": 10,
                        "messages": [{"role": "user", "content": {"type": "text", "text": "a poem"}}]}},
                });
                let requests = requests.as_object().cloned().expect("an object");
                call.ask("two questions", requests).await?;
                return Ok(CallToolResult::text("asked"));
            };
            let name = &responses["name"]["content"]["name"];
            let poem = &responses["poem"]["content"]["text"];
            Ok(CallToolResult::text(format!("{name} wrote {poem}")))
        }),
    )
}

async fn open() -> (McpBridge, McpBridge, Worker) {
    two_bridges(config, AGENT, tools()).await
}

/// A legacy call of `survey` as `caller` from a client taking an event stream.
async fn call(mcp: &McpBridge, caller: &Caller) -> McpStream {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "survey", "arguments": {}}})
    .to_string();
    let request = McpRequest {
        body: body.as_bytes(),
        caller: caller.clone(),
        headers: None,
        accepts_stream: true,
    };
    match mcp.handle(request).await {
        McpReply::Stream(stream) => stream,
        other => panic!("not a stream: {other:?}"),
    }
}

async fn next(stream: &mut McpStream) -> Value {
    let frame = tokio::time::timeout(SOON, stream.next())
        .await
        .expect("a message in time")
        .expect("the stream is open");
    serde_json::from_slice(&frame).expect("json")
}

/// POST a client's response: the HTTP status and the body (none: 202).
async fn respond(mcp: &McpBridge, caller: &Caller, response: Value) -> (u16, Option<Value>) {
    let body = response.to_string();
    let request = McpRequest {
        body: body.as_bytes(),
        caller: caller.clone(),
        headers: None,
        accepts_stream: false,
    };
    match mcp.handle(request).await {
        McpReply::Accepted => (202, None),
        McpReply::Json { status, body } => {
            (status, Some(serde_json::from_slice(&body).expect("json")))
        }
        McpReply::Stream(_) => panic!("a stream"),
    }
}

/// The two requests of the ask, by method.
async fn requests(stream: &mut McpStream) -> (Value, Value) {
    let (mut elicitation, mut sampling) = (None, None);
    for _ in 0..2 {
        let request = next(stream).await;
        assert!(request["id"].as_str().is_some(), "{request}");
        match request["method"].as_str() {
            Some("elicitation/create") => elicitation = Some(request),
            Some("sampling/createMessage") => sampling = Some(request),
            _ => panic!("not a relayed request: {request}"),
        }
    }
    (
        elicitation.expect("elicitation"),
        sampling.expect("sampling"),
    )
}

#[tokio::test]
async fn a_legacy_calls_requests_are_answered_through_another_replica() {
    let (a, b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let mut stream = call(&a, &alice).await;
    let (elicitation, sampling) = requests(&mut stream).await;
    assert_eq!(elicitation["params"]["message"], "name?");
    assert_eq!(sampling["params"]["maxTokens"], 10);
    // Another caller cannot answer them, nor can an id nobody sent.
    let bob = Caller::principal("bob");
    let answer = |id: &Value, result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
    let name = answer(
        &elicitation["id"],
        json!({"action": "accept", "content": {"name": "Ada"}}),
    );
    let (status, refused) = respond(&b, &bob, name.clone()).await;
    assert_eq!(status, 400);
    assert_eq!(refused.expect("an error")["error"]["code"], -32600);
    let (status, _) = respond(&b, &alice, answer(&json!("agentlog-ask:e30"), json!({}))).await;
    assert_eq!(status, 400);
    // Alice answers through B, the name twice (the second changes nothing).
    for response in [name.clone(), name] {
        assert_eq!(respond(&b, &alice, response).await, (202, None));
    }
    let poem = answer(
        &sampling["id"],
        json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "haiku"}}),
    );
    assert_eq!(respond(&b, &alice, poem).await, (202, None));
    let result = next(&mut stream).await;
    assert_eq!(result["id"], 7, "{result}");
    assert_eq!(
        result["result"]["content"][0]["text"], r#""Ada" wrote "haiku""#,
        "{result}"
    );
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn a_client_refusing_a_request_cancels_the_call() {
    let (a, b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let mut stream = call(&a, &alice).await;
    let (elicitation, _) = requests(&mut stream).await;
    let refusal = json!({"jsonrpc": "2.0", "id": elicitation["id"],
        "error": {"code": -32601, "message": "Method not found"}});
    assert_eq!(respond(&b, &alice, refusal).await, (202, None));
    let answer = next(&mut stream).await;
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(
        answer["error"]["message"], "the call was cancelled",
        "{answer}"
    );
}
