//! `/mcp` between members: each member's tool agents hold its share of the partitions, a call
//! made through any member is a task in that member's share, a request about a task whose
//! partition the member does not hold (a task method, a resource read, a subscription) goes to
//! its owner and comes back as it is, and `tasks/list` and `resources/list` merge every
//! owner's page into what one bridge holding everything answers. Streams: `mcp_streams.rs`.

use std::time::Duration;

use agentlog::mcp::{McpConfig, TaskSupport, ToolConfig};
use agentlog::security::owners::OwnerMap;
use agentlog::worker::{ToolCall, Tools, Worker, WorkerConfig, tool_fn};
use agentlog_wire::mcp::resource::task_uri;
use agentlog_wire::mcp::{CallToolResult, Tool};

use super::*;

/// The tool agent of the members' MCP tools.
pub(super) const TOOLS: &str = "mcp.scaled";

/// The members' MCP definitions: `quick` answers at once, `slow` after a second and a half,
/// `hang` once cancelled, `confirm` once asked (MRTR); small task pages, so that listings take
/// several.
pub(super) fn config() -> McpConfig {
    let tool = |name: &str| ToolConfig {
        task_support: TaskSupport::Optional,
        agent: Some(TOOLS.into()),
        ..ToolConfig::new(Tool::new(name, json!({"type": "object"})))
    };
    let tools = ["quick", "slow", "hang", "confirm"].map(tool).to_vec();
    let mut config = McpConfig::new(tools);
    config.tasks_page_size = 7;
    config
}

pub(super) async fn tool_worker(log: &Log) -> Worker {
    let tools = Tools::new()
        .tool(
            "quick",
            tool_fn(|_: ToolCall| async { Ok(CallToolResult::text("quick done")) }),
        )
        .tool(
            "slow",
            tool_fn(|_: ToolCall| async {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                Ok(CallToolResult::text("slow done"))
            }),
        )
        .tool(
            "hang",
            tool_fn(|call: ToolCall| async move {
                call.task.cancellation().cancelled().await;
                Ok(CallToolResult::text("cancelled"))
            }),
        )
        .tool(
            "confirm",
            tool_fn(|call: ToolCall| async move {
                let Some(responses) = call.input_responses else {
                    let requests = json!({"name": {"method": "elicitation/create",
                        "params": {"message": "name?"}}});
                    let requests = requests.as_object().cloned().expect("an object");
                    call.ask("a question", requests).await?;
                    return Ok(CallToolResult::text("asked"));
                };
                Ok(CallToolResult::structured(Value::Object(responses)))
            }),
        );
    let config = WorkerConfig::new(TOOLS).lease(Duration::from_secs(10));
    Worker::start(log.clone(), config, tools)
        .await
        .expect("worker")
}

/// A legacy-era MCP request to member `i`'s `/mcp`: the status and the body.
pub(super) async fn mcp(cluster: &Cluster, i: usize, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let answer = cluster
        .client
        .post(format!("{}/mcp", cluster.member(i).url))
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("an answer");
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("a JSON body"))
}

/// A legacy tool call through member `i` made a task: its MCP id.
pub(super) async fn call_as_task(cluster: &Cluster, i: usize, tool: &str) -> String {
    let params = json!({"name": tool, "arguments": {}, "task": {"ttl": 60000}});
    let (status, body) = mcp(cluster, i, "tools/call", params).await;
    assert_eq!(status, 200, "{body}");
    body["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {body}"))
        .to_owned()
}

/// The partition of an MCP task (`<agent>:<A2A id>`).
pub(super) fn partition_of_mcp(task: &str) -> u32 {
    partition(task.rsplit_once(':').expect("agent:id").1)
}

/// Every page of a legacy listing (`tasks/list` or `resources/list`) through member `i`.
async fn pages(cluster: &Cluster, i: usize, method: &str) -> Vec<Value> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let (status, body) = mcp(cluster, i, method, params).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.get("error").is_none(), "{body}");
        cursor = body["result"]["nextCursor"].as_str().map(str::to_owned);
        pages.push(body);
        if cursor.is_none() {
            return pages;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tasks_made_through_every_member_are_held_by_it_alone_and_read_through_any() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let worker = tool_worker(&log).await;
    let mut tasks = Vec::new();
    for k in 0..40 {
        let via = k % 4;
        let task = call_as_task(&cluster, via, "quick").await;
        // Its id is minted in a partition the member holds: no forward.
        assert_eq!(partition_of_mcp(&task) % 4, via as u32, "{task}");
        tasks.push(task);
    }
    for task in &tasks {
        for via in 0..4 {
            let (_, result) = mcp(&cluster, via, "tasks/result", json!({"taskId": task})).await;
            assert_eq!(
                result["result"]["content"][0]["text"], "quick done",
                "{result}"
            );
            let (_, got) = mcp(&cluster, via, "tasks/get", json!({"taskId": task})).await;
            assert_eq!(got["result"]["status"], "completed", "{got}");
        }
    }
    for i in 0..4usize {
        let share: Vec<&String> = tasks
            .iter()
            .filter(|t| partition_of_mcp(t) % 4 == i as u32)
            .collect();
        let view = cluster.member(i).mcp.bridges()[TOOLS].view();
        // Its share of the partitions, and exactly the tasks in them.
        assert_eq!(
            view.held_partitions(),
            Members::new(i as u32, 4, urls(4))
                .expect("m")
                .owned_by(i as u32, P)
        );
        assert_eq!(view.task_count(), share.len(), "member {i}");
        let elsewhere = (tasks.len() - share.len()) as u64;
        assert_eq!(cluster.forwards(i, "tasks/get", "owner").await, elsewhere);
        assert_eq!(
            cluster.forwards(i, "tasks/result", "owner").await,
            elsewhere
        );
    }
    worker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_list_and_resources_list_are_those_of_one_bridge_holding_everything() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let worker = tool_worker(&log).await;
    for k in 0..30 {
        call_as_task(&cluster, k % 4, "quick").await;
        if k % 3 == 0 {
            cluster.send(k % 4, &format!("r-{k}")).await.expect("sent");
        }
    }
    // Settled: the listings no longer change.
    let tasks = pages(&cluster, 0, "tasks/list").await;
    for page in &tasks {
        for task in page["result"]["tasks"].as_array().expect("tasks") {
            let id = task["taskId"].as_str().expect("id");
            let (_, result) = mcp(&cluster, 0, "tasks/result", json!({"taskId": id})).await;
            assert!(result.get("result").is_some(), "{result}");
        }
    }
    let single = Cluster::start(&log, 1).await;
    for method in ["tasks/list", "resources/list"] {
        let one = pages(&single, 0, method).await;
        for via in 0..4 {
            let four = pages(&cluster, via, method).await;
            assert_eq!(four, one, "{method} through member {via}");
        }
        let listed: usize = one
            .iter()
            .map(|p| {
                p["result"][if method == "tasks/list" {
                    "tasks"
                } else {
                    "resources"
                }]
                .as_array()
                .map_or(0, Vec::len)
            })
            .sum();
        // 30 tool tasks; resources: the A2A agent's 10 too.
        let want = if method == "tasks/list" { 30 } else { 40 };
        assert_eq!(listed, want, "{method}");
        assert_eq!(one.len(), want.div_ceil(7), "{method}: pages of 7");
    }
    for i in 0..4 {
        assert!(cluster.forwards(i, "tasks/list", "owner").await >= 3);
    }
    worker.shutdown().await.expect("shutdown");
}

/// A modern sync `tools/call` of `tool` to member `i`'s `/mcp`, declaring elicitation: the
/// status and the body.
async fn modern_call(cluster: &Cluster, i: usize, tool: &str, extra: Value) -> (u16, Value) {
    let mut params = json!({"name": tool, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
    if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
        params.extend(extra.clone());
    }
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params});
    let answer = cluster
        .client
        .post(format!("{}/mcp", cluster.member(i).url))
        .header("accept", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body)
        .send()
        .await
        .expect("an answer");
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("a JSON body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mrtr_retry_through_a_non_owner_continues_the_task_on_its_owner() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let worker = tool_worker(&log).await;
    let (status, asked) = modern_call(&cluster, 0, "confirm", json!({})).await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].as_str().expect("a state");
    let task = state.rsplit_once('#').expect("<task>#<round>").0;
    assert_eq!(partition_of_mcp(task) % 4, 0, "{task}");
    let responses = json!({"name": {"action": "accept", "content": {"v": "Ada"}}});
    let retry = json!({"inputResponses": responses, "requestState": state});
    let (status, answered) = modern_call(&cluster, 3, "confirm", retry).await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(
        answered["result"]["structuredContent"], responses,
        "{answered}"
    );
    assert_eq!(cluster.forwards(3, "tools/call", "owner").await, 1);
    worker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_cancel_notification_through_another_member_cancels_the_call() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let worker = tool_worker(&log).await;
    let (url, client) = (cluster.member(0).url.clone(), cluster.client.clone());
    // A sync call through member 0: its task is in member 0's share.
    let call = tokio::spawn(async move {
        let body = json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
            "params": {"name": "hang", "arguments": {}}});
        let answer = client
            .post(format!("{url}/mcp"))
            .header("accept", "application/json")
            .json(&body)
            .send()
            .await
            .expect("an answer");
        answer.json::<Value>().await.expect("json")
    });
    let view = cluster.member(0).mcp.bridges()[TOOLS].view().clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while view.task_count() == 0 {
        assert!(tokio::time::Instant::now() < deadline, "no task");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The notification through member 2, which holds none of it: told to every member.
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 42}});
    let answer = cluster
        .client
        .post(format!("{}/mcp", cluster.member(2).url))
        .header("accept", "application/json")
        .json(&notification)
        .send()
        .await
        .expect("accepted");
    assert_eq!(answer.status().as_u16(), 202);
    let answered = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the call answered")
        .expect("joined");
    assert_eq!(
        answered["error"]["message"], "the call was cancelled",
        "{answered}"
    );
    assert_eq!(
        cluster
            .forwards(2, "notifications/cancelled", "owner")
            .await,
        3
    );
    worker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_read_of_a_task_through_a_non_owner_is_the_owners_answer() {
    let log = memory_log().await;
    let mut cluster = Cluster::start(&log, 4).await;
    let mut tasks = Vec::new();
    for k in 0..24 {
        tasks.push(cluster.send(k % 4, &format!("mr-{k}")).await.expect("sent"));
    }
    for id in &tasks {
        let params = json!({"uri": task_uri(&format!("{AGENT}:{id}"))});
        let owner = (partition(id) % 4) as usize;
        let (status, direct) = mcp(&cluster, owner, "resources/read", params.clone()).await;
        assert_eq!(status, 200, "{direct}");
        assert!(direct["result"]["contents"].is_array(), "{direct}");
        for via in 0..4 {
            let (status, got) = mcp(&cluster, via, "resources/read", params.clone()).await;
            assert_eq!((status, &got), (200, &direct), "{id} through {via}");
        }
    }
    // Each member forwarded the reads of the tasks it does not hold, once, and holds none
    // of their partitions.
    for i in 0..4u32 {
        let elsewhere = tasks.iter().filter(|t| partition(t) % 4 != i).count() as u64;
        assert_eq!(
            cluster
                .forwards(i as usize, "resources/read", "owner")
                .await,
            elsewhere
        );
        assert_eq!(
            cluster.member(i as usize).bridge.view().held_partitions(),
            Members::new(i, 4, urls(4)).expect("m").owned_by(i, P)
        );
    }
    // An unknown task of another member's partition: the owner's not-found, as it is.
    let unknown = (0..)
        .map(|k| format!("nothing-{k}"))
        .find(|id| partition(id) % 4 == 1)
        .expect("an id");
    let params = json!({"uri": task_uri(&format!("{AGENT}:{unknown}"))});
    let (status, direct) = mcp(&cluster, 1, "resources/read", params.clone()).await;
    let (_, forwarded) = mcp(&cluster, 0, "resources/read", params.clone()).await;
    assert_eq!(forwarded, direct);
    assert_eq!(direct["error"]["code"], -32602, "{direct} ({status})");
    // Owner and successor gone: a retryable error, never not found: a read, a task method
    // of a tool task, and the listings.
    let tool_task = call_as_task(&cluster, 1, "quick").await;
    assert_eq!(partition_of_mcp(&tool_task) % 4, 1);
    cluster.kill(1).await;
    cluster.kill(2).await;
    let task = tasks
        .iter()
        .find(|t| partition(t) % 4 == 1)
        .expect("a task");
    let params = json!({"uri": task_uri(&format!("{AGENT}:{task}"))});
    let (_, refused) = mcp(&cluster, 0, "resources/read", params).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert_eq!(refused["id"], 7);
    let (_, refused) = mcp(&cluster, 3, "tasks/get", json!({"taskId": tool_task})).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    for method in ["tasks/list", "resources/list"] {
        let (status, refused) = mcp(&cluster, 0, method, json!({})).await;
        assert!(retryable(status, &refused), "{method}: {status} {refused}");
    }
}

/// Put in force, on every member, the map where partition q is `owners[q]`'s (its successor
/// the next member's) and `moving` are moving to their successors.
fn set_maps(cluster: &Cluster, owners: &[u32], moving: &[u32]) {
    let successors: Vec<u32> = owners.iter().map(|o| (o + 1) % 4).collect();
    let urls: Vec<String> = (0..4).map(|i| cluster.member(i).url.clone()).collect();
    for i in 0..4 {
        let map = OwnerMap::new(i as u32, urls.clone(), owners.to_vec(), successors.clone());
        let map = map.expect("map").moving(moving.iter().copied());
        cluster.member(i).owners.set(map);
    }
}

/// Wait (up to 10 s) until `what` holds.
async fn until(what: impl Fn() -> bool, why: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !what() {
        assert!(tokio::time::Instant::now() < deadline, "{why}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_view_warms_a_partition_moving_to_it_before_the_map_switches() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let worker = tool_worker(&log).await;
    let task = call_as_task(&cluster, 0, "quick").await;
    let p = partition_of_mcp(&task);
    let view = |i: usize| cluster.member(i).mcp.bridges()[TOOLS].view().clone();
    let status = |i: usize| {
        view(i)
            .partition_status()
            .into_iter()
            .find(|s| s.partition == p)
    };
    // The move begins: member 0 serves p while member 1, its successor, catches it up.
    let mut owners: Vec<u32> = (0..P).map(|q| q % 4).collect();
    set_maps(&cluster, &owners, &[p]);
    until(
        || status(1).is_some_and(|s| !s.assigned && s.ready),
        "member 1 warms the partition moving to it",
    )
    .await;
    assert!(status(0).is_some_and(|s| s.assigned));
    let (_, got) = mcp(&cluster, 2, "tasks/get", json!({"taskId": task})).await;
    assert!(got.get("result").is_some(), "{got}");
    let warmed = status(1).expect("held").held_at_ms;
    // The map switches: member 1 holds it as assigned by the same hold (nothing to replay),
    // member 0 lets it go, a read through another member is member 1's answer.
    owners[p as usize] = 1;
    set_maps(&cluster, &owners, &[]);
    until(
        || status(1).is_some_and(|s| s.assigned),
        "member 1 holds it as assigned",
    )
    .await;
    assert_eq!(status(1).expect("held").held_at_ms, warmed);
    until(|| !view(0).holds(p), "member 0 retires it").await;
    let (status_code, got) = mcp(&cluster, 3, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(status_code, 200, "{got}");
    assert!(got.get("result").is_some(), "{got}");
    assert_eq!(cluster.forwards(1, "tasks/get", "received").await, 1);
    worker.shutdown().await.expect("shutdown");
}
