//! Prompts and resources answered by a worker through the log, against `McpBridge::handle` on
//! two bridges over one log: a 2026-07-28 `prompts/get` whose worker asks answers
//! `input_required`, and the retry through the other bridge gets the prompt; a legacy one on an
//! event stream gets the ask as a request, answered through the other bridge; the arguments are
//! checked before anything is written; `tools/call` never reaches a prompt's handler; a
//! template's reads are answered by its worker in both eras; completions of a prompt's
//! argument and a template's variable are the worker's when configured values do not answer
//! them.

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, McpReply, McpRequest};
use agentlog::worker::{
    HandlerError, ToolCall, Tools, Worker, completion_fn, prompt_fn, resource_fn,
};
use agentlog_integration::mcp_rpc::{SOON, rpc_as, two_bridges};
use agentlog_wire::mcp::{Completion, ResourceContents};
use futures::StreamExt as _;
use serde_json::{Map, Value, json};

const AGENT: &str = "mcp.served";

fn config() -> McpConfig {
    McpConfig::from_json(
        json!({"prompts": [{"name": "brief", "description": "A brief on a topic",
            "arguments": [{"name": "topic", "required": true},
                          {"name": "tone", "values": ["dry", "warm"]}],
            "agent": AGENT, "completionAgent": AGENT}],
               "resourceTemplates": [{"uriTemplate": "notes://{id}", "name": "note",
            "mimeType": "text/plain", "agent": AGENT, "completionAgent": AGENT}]}),
        None,
    )
    .expect("definitions")
}

/// `brief` asks for an audience, then answers a message naming the topic and the audience.
async fn brief(call: ToolCall) -> Result<Map<String, Value>, HandlerError> {
    let topic = call.arguments["topic"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let Some(responses) = call.input_responses.clone() else {
        let requests = json!({"audience": {"method": "elicitation/create", "params": {
            "message": "For whom?", "requestedSchema": {"type": "object",
                "properties": {"who": {"type": "string"}}}}}});
        call.ask(
            "for whom?",
            requests.as_object().cloned().unwrap_or_default(),
        )
        .await?;
        return Ok(Map::new());
    };
    let who = responses["audience"]["content"]["who"]
        .as_str()
        .unwrap_or("?");
    let result = json!({"description": "A brief",
        "messages": [{"role": "user", "content": {"type": "text", "text": format!("Brief {who} on {topic}.")}}]});
    Ok(result.as_object().cloned().unwrap_or_default())
}

async fn open() -> (McpBridge, McpBridge, Worker) {
    let note = resource_fn(|call: ToolCall| async move {
        let uri = call.arguments["uri"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let id = call.arguments["id"].as_str().unwrap_or_default().to_owned();
        Ok(vec![ResourceContents::text(
            &uri,
            Some("text/plain"),
            format!("note {id}"),
        )])
    });
    // Topics known to the worker, and the tone already chosen when there is one.
    let topics = completion_fn(|call: ToolCall| async move {
        let typed = call.arguments["value"].as_str().unwrap_or_default();
        let tone = call.arguments["context"]["tone"].as_str().unwrap_or("any");
        let names = ["logs", "latency", "disks"].map(|t| format!("{t} ({tone})"));
        Ok(Completion::of(names.iter().map(String::as_str), typed))
    });
    // More ids than a completion may carry.
    let ids = completion_fn(|call: ToolCall| async move {
        assert_eq!(call.arguments["argument"], "id");
        let ids: Vec<String> = (0..150).map(|i| format!("{i}")).collect();
        Ok(Completion {
            values: ids,
            total: 150,
            has_more: false,
        })
    });
    let tools = Tools::new()
        .prompt("brief", prompt_fn(brief))
        .prompt_completion("brief", topics)
        .resource("notes://{id}", note)
        .resource_completion("notes://{id}", ids);
    two_bridges(config, AGENT, tools).await
}

fn modern() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
}

#[tokio::test]
async fn a_modern_prompts_get_asks_and_the_retry_through_another_bridge_answers() {
    let (a, b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let get = json!({"name": "brief", "arguments": {"topic": "logs"}});
    let (status, body) = rpc_as(&a, &alice, "prompts/get", get.clone(), Some(modern())).await;
    assert_eq!(status, 200, "{body}");
    let asked = &body["result"];
    assert_eq!(asked["resultType"], "input_required", "{body}");
    assert_eq!(
        asked["inputRequests"]["audience"]["method"],
        "elicitation/create"
    );
    let mut retry = get;
    retry["inputResponses"] = json!({"audience": {"action": "accept", "content": {"who": "ops"}}});
    retry["requestState"] = asked["requestState"].clone();
    let (status, body) = rpc_as(&b, &alice, "prompts/get", retry.clone(), Some(modern())).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    assert_eq!(
        body["result"]["messages"][0]["content"]["text"],
        "Brief ops on logs."
    );
    assert_eq!(body["result"]["description"], "A brief");
    // Another caller's retry is refused, as a tool's.
    let (status, body) = rpc_as(
        &b,
        &Caller::principal("bob"),
        "prompts/get",
        retry,
        Some(modern()),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{body}"
    );
}

#[tokio::test]
async fn arguments_are_checked_first_and_tools_call_never_reaches_a_prompt() {
    let (a, _b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let (status, body) = rpc_as(
        &a,
        &alice,
        "prompts/get",
        json!({"name": "brief"}),
        Some(modern()),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{body}"
    );
    let (_, body) = rpc_as(
        &a,
        &alice,
        "tools/call",
        json!({"name": "prompts/get:brief", "arguments": {"topic": "x"}}),
        None,
    )
    .await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    // Nothing was written on the prompt's agent.
    let bridge = &a.bridges()[AGENT];
    let listed = bridge
        .list_tasks(&alice, Default::default())
        .await
        .expect("listed");
    assert!(listed.tasks.is_empty(), "{:?}", listed.tasks);
}

#[tokio::test]
async fn a_legacy_prompts_get_relays_its_ask_and_takes_the_answer_through_another_bridge() {
    let (a, b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
        "params": {"name": "brief", "arguments": {"topic": "disks"}}})
    .to_string();
    let request = McpRequest {
        body: body.as_bytes(),
        caller: alice.clone(),
        headers: None,
        accepts_stream: true,
    };
    let McpReply::Stream(mut stream) = a.handle(request).await else {
        panic!("not a stream");
    };
    let mut next = async || -> Value {
        let frame = tokio::time::timeout(SOON, stream.next())
            .await
            .expect("in time")
            .expect("a frame");
        serde_json::from_slice(&frame).expect("json")
    };
    let asked = next().await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let response = json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"who": "sre"}}})
    .to_string();
    let request = McpRequest {
        body: response.as_bytes(),
        caller: alice.clone(),
        headers: None,
        accepts_stream: false,
    };
    assert!(matches!(b.handle(request).await, McpReply::Accepted));
    let answer = next().await;
    assert_eq!(answer["id"], 3, "{answer}");
    assert_eq!(
        answer["result"]["messages"][0]["content"]["text"], "Brief sre on disks.",
        "{answer}"
    );
    assert!(answer["result"].get("resultType").is_none(), "{answer}");
}

#[tokio::test]
async fn a_templates_reads_are_answered_by_its_worker_in_both_eras() {
    let (a, b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let uri = json!({"uri": "notes://7"});
    let (status, body) = rpc_as(&a, &alice, "resources/read", uri.clone(), Some(modern())).await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    assert_eq!(
        result["contents"],
        json!([{"uri": "notes://7", "mimeType": "text/plain", "text": "note 7"}])
    );
    assert_eq!(
        (
            &result["resultType"],
            &result["ttlMs"],
            &result["cacheScope"]
        ),
        (&json!("complete"), &json!(0), &json!("private"))
    );
    let (status, body) = rpc_as(&b, &alice, "resources/read", uri, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["contents"][0]["text"], "note 7");
    assert!(body["result"].get("ttlMs").is_none(), "{body}");
    // A URI the template does not match is still nobody's.
    let (_, body) = rpc_as(
        &b,
        &alice,
        "resources/read",
        json!({"uri": "other://7"}),
        None,
    )
    .await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
}

#[tokio::test]
async fn completions_without_configured_values_are_the_workers_in_both_eras() {
    let (a, b, _worker) = open().await;
    let alice = Caller::principal("alice");
    let topic = json!({"ref": {"type": "ref/prompt", "name": "brief"},
        "argument": {"name": "topic", "value": "l"}, "context": {"arguments": {"tone": "dry"}}});
    let (status, body) = rpc_as(&a, &alice, "completion/complete", topic, Some(modern())).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["completion"],
        json!({"values": ["logs (dry)", "latency (dry)"], "total": 2, "hasMore": false}),
        "{body}"
    );
    assert_eq!(body["result"]["resultType"], "complete");
    // A configured list answers its own argument, with no call.
    let tone = json!({"ref": {"type": "ref/prompt", "name": "brief"},
        "argument": {"name": "tone", "value": "w"}});
    let (_, body) = rpc_as(&b, &alice, "completion/complete", tone, None).await;
    assert_eq!(
        body["result"]["completion"]["values"],
        json!(["warm"]),
        "{body}"
    );
    // An argument the prompt does not declare completes to nothing, with no call either.
    let unknown = json!({"ref": {"type": "ref/prompt", "name": "brief"},
        "argument": {"name": "mood", "value": ""}});
    let (_, body) = rpc_as(&b, &alice, "completion/complete", unknown, None).await;
    assert_eq!(body["result"]["completion"]["values"], json!([]), "{body}");
    let listed = a.bridges()[AGENT]
        .list_tasks(&alice, Default::default())
        .await
        .expect("listed");
    assert_eq!(
        listed.tasks.len(),
        1,
        "only the topic's completion was a call"
    );
    // A legacy completion of a template's variable, through the other bridge: at most 100.
    let id = json!({"ref": {"type": "ref/resource", "uri": "notes://{id}"},
        "argument": {"name": "id", "value": ""}});
    let (status, body) = rpc_as(&b, &alice, "completion/complete", id, None).await;
    assert_eq!(status, 200, "{body}");
    let completion = &body["result"]["completion"];
    assert_eq!(completion["values"].as_array().map(Vec::len), Some(100));
    assert_eq!(
        (&completion["total"], &completion["hasMore"]),
        (&json!(150), &json!(true))
    );
}
