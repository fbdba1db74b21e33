//! Legacy `tasks/list {cursor?}` as plain JSON-RPC: pages over every tool agent in one order
//! (newest status first), a cursor that tasks created between pages do not shift, the
//! caller's own tasks only (another caller's cursor shows nothing of theirs), bad cursors
//! refused.

use std::collections::BTreeSet;
use std::time::Duration;

use agentlog::Caller;
use agentlog::mcp::{McpBridge, McpConfig, ToolConfig};
use agentlog::worker::{ToolCall, Tools, Worker, WorkerConfig, tool_fn};
use agentlog_integration::mcp_rpc::rpc_as;
use agentlog_wire::mcp::{CallToolResult, Tool};
use serde_json::json;

fn tool(name: &str, agent: &str) -> ToolConfig {
    ToolConfig {
        agent: Some(agent.into()),
        ..ToolConfig::new(Tool::new(name, json!({"type": "object"})))
    }
}

async fn worker(log: &agentlog::log::Log, agent: &str, tool: &str) -> Worker {
    let config = WorkerConfig::new(agent).lease(Duration::from_secs(10));
    let tools = Tools::new().tool(
        tool,
        tool_fn(|_: ToolCall| async { Ok(CallToolResult::text("done")) }),
    );
    Worker::start(log.clone(), config, tools)
        .await
        .expect("worker")
}

/// A legacy sync call of `name` as `caller`: one finished task.
async fn call(mcp: &McpBridge, caller: &Caller, name: &str) {
    let (status, body) = rpc_as(mcp, caller, "tools/call", json!({"name": name}), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "done", "{body}");
}

/// One page as `caller`: its task ids and its `nextCursor`.
async fn page(
    mcp: &McpBridge,
    caller: &Caller,
    cursor: Option<&str>,
) -> (Vec<String>, Option<String>) {
    let params = match cursor {
        Some(cursor) => json!({"cursor": cursor}),
        None => json!({}),
    };
    let (status, body) = rpc_as(mcp, caller, "tasks/list", params, None).await;
    assert_eq!(status, 200, "{body}");
    let ids = body["result"]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["taskId"].as_str().expect("taskId").to_owned())
        .collect();
    (
        ids,
        body["result"]["nextCursor"].as_str().map(str::to_owned),
    )
}

#[tokio::test]
async fn legacy_tasks_list_pages_every_agent_in_one_order_and_inserts_do_not_shift_it() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let config = McpConfig::new(vec![tool("one", "mcp.list.a"), tool("two", "mcp.list.b")])
        .tasks_page_size(2);
    let mcp = McpBridge::open(log.clone(), config).await.expect("mcp");
    let _a = worker(&log, "mcp.list.a", "one").await;
    let _b = worker(&log, "mcp.list.b", "two").await;
    let (alice, bob) = (Caller::principal("alice"), Caller::principal("bob"));
    for name in ["one", "two", "one", "two", "one"] {
        call(&mcp, &alice, name).await;
    }
    call(&mcp, &bob, "one").await;

    // Everything on one page as the reference order.
    let (first, cursor) = page(&mcp, &alice, None).await;
    assert_eq!(first.len(), 2);
    let cursor = cursor.expect("more pages");
    // Tasks created after the first page, on both agents, are newer than the cursor (status
    // times are milliseconds: one created in the cursor's own millisecond would sort by its
    // id's hash, so let that millisecond pass).
    tokio::time::sleep(Duration::from_millis(5)).await;
    let mut newer = BTreeSet::new();
    for name in ["two", "one"] {
        call(&mcp, &alice, name).await;
    }
    let (now, _) = page(&mcp, &alice, None).await;
    newer.extend(now);

    let mut seen = first.clone();
    let mut next = Some(cursor.clone());
    let mut pages = 1;
    while let Some(cursor) = next {
        let (ids, cursor) = page(&mcp, &alice, Some(&cursor)).await;
        assert!(ids.len() <= 2, "{ids:?}");
        seen.extend(ids);
        next = cursor;
        pages += 1;
        assert!(pages < 10, "{seen:?}");
    }
    // Alice's five first tasks, each once, from both agents, and none created later.
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), 5, "{seen:?}");
    assert!(
        seen.iter().all(|id| !newer.contains(id)),
        "{seen:?} {newer:?}"
    );
    for agent in ["mcp.list.a:", "mcp.list.b:"] {
        assert!(seen.iter().any(|id| id.starts_with(agent)), "{seen:?}");
    }
    assert_eq!(pages, 3);

    // Listed again from the start: the seven, newest first, the two newest the latest ones.
    let mut all = Vec::new();
    let mut next = None;
    loop {
        let (ids, cursor) = page(&mcp, &alice, next.as_deref()).await;
        all.extend(ids);
        match cursor {
            Some(cursor) => next = Some(cursor),
            None => break,
        }
    }
    assert_eq!(all.len(), 7, "{all:?}");
    assert_eq!(all[2..], seen[..], "{all:?}");

    // Bob sees his one task, also with alice's cursor (a position, not a permission).
    let (ids, more) = page(&mcp, &bob, None).await;
    assert_eq!((ids.len(), more), (1, None), "{ids:?}");
    let (ids, _) = page(&mcp, &bob, Some(&cursor)).await;
    assert!(ids.iter().all(|id| !seen.contains(id)), "{ids:?}");

    // Cursors this server never issued: -32602 (legacy errors travel on 200).
    for bad in [json!("garbage!"), json!("W10"), json!(7)] {
        let (status, body) = rpc_as(&mcp, &alice, "tasks/list", json!({"cursor": bad}), None).await;
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (200, Some(-32602)),
            "{body}"
        );
    }
}
