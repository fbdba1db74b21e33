//! `/mcp` between members: a request about a task whose partition the member does not hold
//! (here a resource read of the A2A agent's task) goes to its owner and comes back as it is.

use agentlog_wire::mcp::resource::task_uri;

use super::*;

/// A legacy-era MCP request to member `i`'s `/mcp`: the status and the body.
async fn mcp(cluster: &Cluster, i: usize, method: &str, params: Value) -> (u16, Value) {
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
    // Owner and successor gone: a retryable error, never not found.
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
}
