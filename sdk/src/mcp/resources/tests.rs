//! Resources end to end in process: configured ones, tasks of a tool agent and of an A2A
//! agent read back as their caller, paging, isolation, cache hints per era.
#![allow(clippy::unwrap_used)]

use agentlog_wire::a2a::{
    Artifact, ListTasksRequest, Part, PartContent, SendMessageRequest, SendMessageResponse,
};
use serde_json::{Value, json};

use super::super::tests::{modern_meta, test_tools, tool};
use super::super::{McpBridge, McpConfig, McpReply, McpRequest};
use super::{Position, not_found};
use crate::agent::Caller;
use crate::bridge::{Bridge, BridgeConfig};
use crate::error::ErrorKind;
use crate::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::{FutureExt as _, StreamExt as _};

fn artifact(id: &str, parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: id.into(),
        name: None,
        description: None,
        parts,
        metadata: None,
        extensions: Vec::new(),
    }
}

/// A bridge serving tool `add` (agent `mcp.add`), the A2A agent `docs` (whose tasks write a
/// text and a PNG artifact), two configured resources and a template.
pub(crate) async fn setup(page_size: usize) -> (McpBridge, Bridge, Vec<Worker>) {
    let log = crate::log::open("memory://").await.unwrap();
    let docs = Bridge::open(log.clone(), BridgeConfig::new("docs"))
        .await
        .unwrap();
    let definitions = json!({
        "resources": [
            {"uri": "test://static-text", "name": "static-text", "mimeType": "text/plain", "text": "static"},
            {"uri": "test://static-binary", "name": "static-binary", "mimeType": "image/png", "blob": "iVBORw=="}
        ],
        "resourceTemplates": [
            {"uriTemplate": "test://template/{id}/data", "name": "data", "mimeType": "application/json",
             "text": "{\"id\":\"{id}\"}", "completions": {"id": ["123", "124", "200"]}}
        ]
    });
    let config = McpConfig::from_json(definitions, None)
        .unwrap()
        .tools(vec![tool("add", json!({"type": "object"}))])
        .tasks_page_size(page_size)
        .a2a(vec![docs.clone()]);
    let mcp = McpBridge::open(log.clone(), config).await.unwrap();
    let mut workers = Vec::new();
    for (agent, bridge) in mcp.bridges() {
        let config = WorkerConfig::new(agent).view(bridge.view().clone());
        workers.push(
            Worker::start(log.clone(), config, test_tools())
                .await
                .unwrap(),
        );
    }
    let handler = handler_fn(|task: TaskContext| async move {
        let notes = artifact(
            "notes",
            vec![Part::text(format!("notes on {}", task.text()))],
        );
        task.artifact(notes, false, true).await?;
        let png = Part {
            media_type: Some("image/png".into()),
            ..Part::from_content(PartContent::Raw(vec![0x89, b'P', b'N', b'G']))
        };
        task.artifact(artifact("logo image", vec![png]), false, true)
            .await?;
        task.complete(None).await?;
        Ok(())
    });
    let config = WorkerConfig::new("docs").view(docs.view().clone());
    workers.push(Worker::start(log, config, handler).await.unwrap());
    (mcp, docs, workers)
}

pub(crate) async fn rpc_as(mcp: &McpBridge, caller: Caller, body: Value) -> (u16, Value) {
    let bytes = serde_json::to_vec(&body).unwrap();
    let request = McpRequest {
        body: &bytes,
        caller,
        headers: None,
        accepts_stream: false,
    };
    match mcp.handle(request).await {
        McpReply::Json { status, body } => (status, serde_json::from_slice(&body).unwrap()),
        other => panic!("not JSON: {other:?}"),
    }
}

fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// A finished `docs` task of `caller`: its MCP-style id `docs:<A2A id>`.
async fn docs_task(docs: &Bridge, caller: &Caller, text: &str) -> String {
    let send: SendMessageRequest = serde_json::from_value(json!({"message": {
        "messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]}}))
    .unwrap();
    match docs.send_message(caller, send).await.unwrap() {
        SendMessageResponse::Task(task) => format!("docs:{}", task.id),
        other => panic!("{other:?}"),
    }
}

fn uris(listed: &Value) -> Vec<String> {
    listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_tasks_artifacts_read_back_as_its_caller_and_nobody_else() {
    let (mcp, docs, _workers) = setup(50).await;
    let ada = Caller::principal("ada");
    let task_id = docs_task(&docs, &ada, "cats").await;
    let encoded = task_id.replace(':', "%3A");
    let read = |uri: String, caller: Caller| {
        let mcp = mcp.clone();
        async move { rpc_as(&mcp, caller, request("resources/read", json!({"uri": uri}))).await }
    };
    let (status, whole) = read(format!("agentlog://tasks/{task_id}"), ada.clone()).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        whole["result"]["contents"],
        json!([
            {"uri": format!("agentlog://tasks/{encoded}/artifacts/notes"), "mimeType": "text/plain", "text": "notes on cats"},
            {"uri": format!("agentlog://tasks/{encoded}/artifacts/logo%20image"), "mimeType": "image/png", "blob": "iVBORw=="}
        ])
    );
    // Legacy results carry no cache hints.
    assert!(whole["result"].get("ttlMs").is_none());
    let (_, image) = read(
        format!("agentlog://tasks/{encoded}/artifacts/logo%20image"),
        ada.clone(),
    )
    .await;
    assert_eq!(image["result"]["contents"][0]["blob"], "iVBORw==");
    // Another principal, another tenant, an unknown artifact or agent: not found, the URI in data.
    for (uri, caller) in [
        (
            format!("agentlog://tasks/{encoded}"),
            Caller::principal("bob"),
        ),
        (
            format!("agentlog://tasks/{encoded}"),
            ada.clone().in_tenant("t2"),
        ),
        (
            format!("agentlog://tasks/{encoded}/artifacts/nope"),
            ada.clone(),
        ),
        ("agentlog://tasks/nobody%3Ax".to_owned(), ada.clone()),
        ("agentlog://tasks/no-colon".to_owned(), ada.clone()),
        ("test://unknown".to_owned(), ada.clone()),
    ] {
        let (status, refused) = read(uri.clone(), caller).await;
        assert_eq!(
            (status, refused["error"]["code"].as_i64()),
            (200, Some(-32602)),
            "{uri}: {refused}"
        );
        assert_eq!(refused["error"]["data"]["uri"], uri.as_str());
    }
    let (status, modern) = rpc_as(
        &mcp,
        Caller::principal("bob"),
        request(
            "resources/read",
            json!({"uri": "test://nope", "_meta": modern_meta()}),
        ),
    )
    .await;
    assert_eq!(
        (status, modern["error"]["code"].as_i64()),
        (400, Some(-32602))
    );
}

#[tokio::test]
async fn a_tool_calls_task_reads_as_its_result() {
    let (mcp, _docs, _workers) = setup(50).await;
    let call = request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
    );
    let (_, answered) = rpc_as(&mcp, Caller::anonymous(), call).await;
    assert_eq!(answered["result"]["structuredContent"]["sum"], 3.0);
    let (_, listed) = rpc_as(
        &mcp,
        Caller::anonymous(),
        request("resources/list", json!({})),
    )
    .await;
    let listed = &listed["result"]["resources"];
    let task = listed.as_array().unwrap().last().unwrap();
    assert!(
        task["name"].as_str().unwrap().starts_with("mcp.add:"),
        "{listed}"
    );
    assert_eq!(task["title"], "mcp.add task (completed)");
    let uri = task["uri"].as_str().unwrap();
    let (_, read) = rpc_as(
        &mcp,
        Caller::anonymous(),
        request(
            "resources/read",
            json!({"uri": uri, "_meta": modern_meta()}),
        ),
    )
    .await;
    let result = &read["result"];
    assert_eq!(
        result["contents"],
        json!([{"uri": uri, "mimeType": "text/plain", "text": "{\"sum\":3.0}"}])
    );
    // A finished task's read keeps, but only for its caller.
    assert_eq!(
        (result["cacheScope"].as_str(), result["ttlMs"].as_u64()),
        (Some("private"), Some(60_000))
    );
    assert_eq!(result["resultType"], "complete");
}

#[tokio::test]
async fn configured_resources_list_first_then_the_callers_tasks_a_page_at_a_time() {
    let (mcp, docs, _workers) = setup(3).await;
    let ada = Caller::principal("ada");
    let mut tasks = Vec::new();
    for topic in ["a", "b", "c"] {
        tasks.push(docs_task(&docs, &ada, topic).await);
    }
    docs_task(&docs, &Caller::principal("bob"), "not ada's").await;
    let mut seen = Vec::new();
    let mut params = json!({"_meta": modern_meta()});
    loop {
        let (status, page) =
            rpc_as(&mcp, ada.clone(), request("resources/list", params.clone())).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["result"]["cacheScope"], "private");
        assert_eq!(page["result"]["ttlMs"], 0);
        seen.extend(uris(&page));
        match page["result"]["nextCursor"].as_str() {
            Some(next) => params["cursor"] = json!(next),
            None => break,
        }
    }
    // The caller's tasks in ListTasks' order (newest status first; tasks finishing within
    // the same millisecond keep the index's order, not their creation order).
    let listed = docs
        .list_tasks(&ada, ListTasksRequest::default())
        .await
        .unwrap();
    let newest_first: Vec<String> = listed
        .tasks
        .iter()
        .map(|task| format!("agentlog://tasks/docs%3A{}", task.id))
        .collect();
    assert_eq!(newest_first.len(), tasks.len());
    let mut want = vec![
        "test://static-text".to_owned(),
        "test://static-binary".to_owned(),
    ];
    want.extend(newest_first);
    assert_eq!(seen, want);
    // Another caller, or the same principal in another tenant, sees the configured resources
    // only.
    for other in [Caller::principal("carol"), ada.clone().in_tenant("t2")] {
        let (_, listed) = rpc_as(&mcp, other, request("resources/list", json!({}))).await;
        assert_eq!(
            uris(&listed),
            ["test://static-text", "test://static-binary"]
        );
    }
    let (_, bad) = rpc_as(
        &mcp,
        ada,
        request("resources/list", json!({"cursor": "garbage"})),
    )
    .await;
    assert_eq!(bad["error"]["code"], -32602);
}

#[tokio::test]
async fn the_callers_new_tasks_change_its_resource_list_a_burst_at_a_time() {
    let (mcp, docs, _workers) = setup(50).await;
    let ada = Caller::principal("ada");
    let mut changes = mcp.task_list_changes(&ada);
    // Each send returns once its bridge's view applied the task's records: what the view
    // tells of them has been told.
    docs_task(&docs, &Caller::principal("bob"), "not ada's").await;
    docs_task(&docs, &ada.clone().in_tenant("t2"), "not this ada's").await;
    assert_eq!(
        changes.next().now_or_never(),
        None,
        "another caller's tasks"
    );
    docs_task(&docs, &ada, "one").await;
    assert_eq!(changes.next().now_or_never(), Some(Some(())));
    assert_eq!(
        changes.next().now_or_never(),
        None,
        "its later records are no change"
    );
    // A tool call's task and an A2A task, on two agents: one burst, one change.
    let call = request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
    );
    let (status, answered) = rpc_as(&mcp, ada.clone(), call).await;
    assert_eq!(status, 200, "{answered}");
    docs_task(&docs, &ada, "two").await;
    assert_eq!(changes.next().now_or_never(), Some(Some(())));
    assert_eq!(changes.next().now_or_never(), None);
}

#[tokio::test]
async fn configured_resources_and_templates_read_and_list_per_era() {
    let (mcp, _docs, _workers) = setup(50).await;
    let anyone = Caller::anonymous;
    let (_, text) = rpc_as(
        &mcp,
        anyone(),
        request(
            "resources/read",
            json!({"uri": "test://static-text", "_meta": modern_meta()}),
        ),
    )
    .await;
    assert_eq!(
        text["result"]["contents"],
        json!([{"uri": "test://static-text", "mimeType": "text/plain", "text": "static"}])
    );
    assert_eq!(text["result"]["cacheScope"], "public");
    let (_, blob) = rpc_as(
        &mcp,
        anyone(),
        request("resources/read", json!({"uri": "test://static-binary"})),
    )
    .await;
    assert_eq!(
        blob["result"]["contents"],
        json!([{"uri": "test://static-binary", "mimeType": "image/png", "blob": "iVBORw=="}])
    );
    let (_, data) = rpc_as(
        &mcp,
        anyone(),
        request("resources/read", json!({"uri": "test://template/123/data"})),
    )
    .await;
    assert_eq!(data["result"]["contents"][0]["text"], "{\"id\":\"123\"}");
    let (_, templates) = rpc_as(
        &mcp,
        anyone(),
        request("resources/templates/list", json!({"_meta": modern_meta()})),
    )
    .await;
    let listed: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        [
            "agentlog://tasks/{taskId}",
            "agentlog://tasks/{taskId}/artifacts/{artifactId}",
            "test://template/{id}/data"
        ]
    );
    assert_eq!(templates["result"]["cacheScope"], "public");
    let (_, listed) = rpc_as(&mcp, anyone(), request("resources/list", json!({}))).await;
    assert_eq!(listed["result"]["resources"][0]["size"], 6);
    assert!(listed["result"].get("cacheScope").is_none());
    let (_, missing) = rpc_as(&mcp, anyone(), request("resources/read", json!({}))).await;
    assert_eq!(missing["error"]["code"], -32602);
    // Both eras declare resources, subscribable; completions because a template is configured.
    let (_, discover) = rpc_as(
        &mcp,
        anyone(),
        request("server/discover", json!({"_meta": modern_meta()})),
    )
    .await;
    let capabilities = &discover["result"]["capabilities"];
    assert_eq!(
        (&capabilities["resources"], &capabilities["completions"]),
        (&json!({"subscribe": true, "listChanged": true}), &json!({}))
    );
    assert!(capabilities.get("prompts").is_none());
    let (_, init) = rpc_as(
        &mcp,
        anyone(),
        request("initialize", json!({"protocolVersion": "2025-11-25"})),
    )
    .await;
    assert_eq!(
        init["result"]["capabilities"]["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    // No prompts configured: the prompt methods are unknown.
    let (_, prompts) = rpc_as(&mcp, anyone(), request("prompts/list", json!({}))).await;
    assert_eq!(prompts["error"]["code"], -32601);
}

#[test]
fn list_cursors_round_trip_and_garbage_is_refused() {
    for position in [
        Position::Configured(3),
        Position::Tasks(None),
        Position::Tasks(Some((1_700_000_000_000, "demo:t1".into()))),
    ] {
        assert_eq!(Position::decode(&position.encode()).unwrap(), position);
    }
    for bad in [
        "!",
        "bm9wZQ",
        &URL_SAFE_NO_PAD.encode("[\"r\", -1]"),
        &URL_SAFE_NO_PAD.encode("[\"t\", 1]"),
    ] {
        assert_eq!(
            Position::decode(bad).map_err(|e| e.kind()).err(),
            Some(ErrorKind::InvalidParams)
        );
    }
    let error = not_found("x://y").to_mcp();
    assert_eq!(error["data"]["uri"], "x://y");
}
