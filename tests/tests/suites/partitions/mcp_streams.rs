//! `/mcp`'s streams between members: watches through a task's old holder hearing it on after it
//! moves away, a subscription to a task URI through non-owners (a modern
//! listen forwarded whole, a legacy session's stream held elsewhere), a relayed ask answered
//! through another member, and the caller's `resources/list` changes heard from every member.

use std::time::Duration;

use agentlog::security::owners::OwnerMap;
use agentlog_wire::mcp::resource::task_uri;
use futures::StreamExt as _;

use super::mcp::{TOOLS, call_as_task, mcp, partition_of_mcp, tool_worker};
use super::*;

/// The `data:` messages of an SSE answer, as they come.
pub(super) struct Frames {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    text: String,
    ready: std::collections::VecDeque<Value>,
}

impl Frames {
    fn of(answer: reqwest::Response) -> Self {
        Self {
            body: answer.bytes_stream().map(|c| c.map(|b| b.to_vec())).boxed(),
            text: String::new(),
            ready: Default::default(),
        }
    }

    /// The next messages, up to the first holding `wanted` (within 20 s).
    async fn until(&mut self, wanted: &str) -> Vec<Value> {
        let mut messages = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            while let Some(message) = self.ready.pop_front() {
                let done = message.to_string().contains(wanted);
                messages.push(message);
                if done {
                    return messages;
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.body.next())
                .await
                .unwrap_or_else(|_| panic!("no {wanted} in {messages:?}"))
                .expect("the stream goes on")
                .expect("a chunk");
            self.text.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = self.text.find("\n\n") {
                let frame: String = self.text.drain(..end + 2).collect();
                for data in frame.lines().filter_map(|l| l.strip_prefix("data: ")) {
                    self.ready
                        .push_back(serde_json::from_str(data).expect("json"));
                }
            }
        }
    }
}

/// A legacy (2025-06-18) session initialized through member `i`: its `Mcp-Session-Id`.
async fn legacy_session(cluster: &Cluster, i: usize) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let answer = cluster
        .client
        .post(format!("{}/mcp", cluster.member(i).url))
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .expect("initialized");
    answer.headers()["mcp-session-id"]
        .to_str()
        .expect("a session")
        .to_owned()
}

/// The `data:` messages of an SSE answer, until one holds `wanted` (within 20 s).
async fn until_message(answer: reqwest::Response, wanted: &str) -> Vec<Value> {
    Frames::of(answer).until(wanted).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_ask_answered_through_another_member_reaches_the_call() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let worker = tool_worker(&log).await;
    // A legacy call on an event stream through member 0: its tool's ask comes as a request.
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "confirm", "arguments": {}}});
    let answer = cluster
        .client
        .post(format!("{}/mcp", cluster.member(0).url))
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("a stream");
    let mut frames = Frames::of(answer);
    let asked = frames.until("elicitation/create").await;
    let id = asked.last().expect("the request")["id"].clone();
    // The client's answer POSTed to member 2: forwarded to the task's owner by its id.
    let response = json!({"jsonrpc": "2.0", "id": id,
        "result": {"action": "accept", "content": {"v": "Ada"}}});
    let posted = cluster
        .client
        .post(format!("{}/mcp", cluster.member(2).url))
        .header("accept", "application/json, text/event-stream")
        .json(&response)
        .send()
        .await
        .expect("taken");
    assert_eq!(posted.status().as_u16(), 202);
    let answered = frames.until("structuredContent").await;
    let result = &answered.last().expect("the result")["result"];
    assert_eq!(
        result["structuredContent"]["name"]["content"]["v"], "Ada",
        "{result}"
    );
    assert_eq!(cluster.forwards(2, "response", "owner").await, 1);
    worker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_uri_subscribed_through_non_owners_hears_its_update() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let worker = tool_worker(&log).await;

    // Modern: a listen through member 2 for a task member 0 holds goes there whole.
    let task = call_as_task(&cluster, 0, "slow").await;
    let uri = task_uri(&task);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": [uri]}, "_meta": meta}});
    let answer = cluster
        .client
        .post(format!("{}/mcp", cluster.member(2).url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .json(&body)
        .send()
        .await
        .expect("a stream");
    assert_eq!(answer.status().as_u16(), 200);
    let heard = until_message(answer, "notifications/resources/updated").await;
    assert_eq!(
        heard[0]["params"]["notifications"]["resourceSubscriptions"],
        json!([uri])
    );
    assert_eq!(heard.last().expect("an update")["params"]["uri"], uri);
    assert_eq!(
        cluster.forwards(2, "subscriptions/listen", "owner").await,
        1
    );

    // Legacy: the session made through member 1, the subscription POSTed through member 3
    // (forwarded to member 0, which checks it), the stream held by member 2.
    let task = call_as_task(&cluster, 0, "slow").await;
    let uri = task_uri(&task);
    let session = legacy_session(&cluster, 1).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": {"uri": uri}});
    let answer = cluster
        .client
        .post(format!("{}/mcp", cluster.member(3).url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .json(&subscribe)
        .send()
        .await
        .expect("subscribed");
    let subscribed: Value = answer.json().await.expect("json");
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    assert_eq!(cluster.forwards(3, "resources/subscribe", "owner").await, 1);
    let stream = cluster
        .client
        .get(format!("{}/mcp", cluster.member(2).url))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("a stream");
    assert_eq!(stream.status().as_u16(), 200);
    // Member 2 follows it holding its partition while the stream watches it.
    let view = cluster.member(2).mcp.bridges()[TOOLS].view().clone();
    let p = partition_of_mcp(&task);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !view.holds(p) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            view.held_partitions()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let heard = until_message(stream, "notifications/resources/updated").await;
    assert_eq!(heard.last().expect("an update")["params"]["uri"], uri);
    // The stream gone, member 2 gives the partition it held for it back.
    let share = Members::new(2, 4, urls(4)).expect("m").owned_by(2, P);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while view.held_partitions() != share {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            view.held_partitions()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.shutdown().await.expect("shutdown");
}

/// A modern listen for the caller's list changes through member `i`: its stream.
async fn listen_for_list_changes(cluster: &Cluster, i: usize) -> Frames {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen", "params": {
        "notifications": {"resourcesListChanged": true}, "_meta": meta}});
    let answer = cluster
        .client
        .post(format!("{}/mcp", cluster.member(i).url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .json(&body)
        .send()
        .await
        .expect("a stream");
    assert_eq!(answer.status().as_u16(), 200);
    Frames::of(answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_list_changes_are_heard_from_every_member() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let worker = tool_worker(&log).await;
    // Modern: a listen through member 1; a task made through member 3, in member 3's share.
    let mut listen = listen_for_list_changes(&cluster, 1).await;
    listen
        .until("notifications/subscriptions/acknowledged")
        .await;
    // Each other member listens for member 1 once its listen is on.
    listens_reach(&cluster, 1, 3).await;
    let task = call_as_task(&cluster, 3, "quick").await;
    assert_eq!(partition_of_mcp(&task) % 4, 3);
    let heard = listen.until("notifications/resources/list_changed").await;
    let changed = heard.last().expect("a change");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "l"
    );
    // Legacy: a session's stream on member 0 hears a task made through member 2.
    let session = legacy_session(&cluster, 0).await;
    let stream = cluster
        .client
        .get(format!("{}/mcp", cluster.member(0).url))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("a stream");
    assert_eq!(stream.status().as_u16(), 200);
    listens_reach(&cluster, 0, 3).await;
    let task = call_as_task(&cluster, 2, "quick").await;
    assert_eq!(partition_of_mcp(&task) % 4, 2);
    let heard = Frames::of(stream)
        .until("notifications/resources/list_changed")
        .await;
    assert_eq!(heard.last().expect("a change")["params"], json!({}));
    worker.shutdown().await.expect("shutdown");
}

/// Put in force, on every member, a map where the partitions `moved` are `to`'s and the
/// others stay their static owners'.
pub(super) fn move_partitions(cluster: &Cluster, moved: &[u32], to: u32) {
    let owners: Vec<u32> = (0..P)
        .map(|q| if moved.contains(&q) { to } else { q % 4 })
        .collect();
    let successors: Vec<u32> = owners.iter().map(|o| (o + 1) % 4).collect();
    let urls: Vec<String> = (0..4).map(|i| cluster.member(i).url.clone()).collect();
    for i in 0..4 {
        let map = OwnerMap::new(i as u32, urls.clone(), owners.clone(), successors.clone());
        cluster.member(i).owners.set(map.expect("map"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_through_the_old_holder_keep_hearing_their_task_after_it_moves_away() {
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let worker = tool_worker(&log).await;
    // A task of member 0's share, waiting to be cancelled.
    let task = call_as_task(&cluster, 0, "hang").await;
    let (uri, p) = (task_uri(&task), partition_of_mcp(&task));
    assert_eq!(p % 4, 0);

    // Watched through member 0, where its partition is held as assigned: a modern listen of
    // the task and of its URI, a legacy session's stream, a legacy tasks/result waiting.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "subscriptions/listen", "params": {
        "notifications": {"taskIds": [task], "resourceSubscriptions": [uri]}, "_meta": meta}});
    let answer = cluster
        .client
        .post(format!("{}/mcp", cluster.member(0).url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .json(&body)
        .send()
        .await
        .expect("a stream");
    let mut listen = Frames::of(answer);
    listen
        .until("notifications/subscriptions/acknowledged")
        .await;
    let session = legacy_session(&cluster, 0).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": {"uri": uri}});
    let subscribed = cluster
        .client
        .post(format!("{}/mcp", cluster.member(0).url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .json(&subscribe)
        .send()
        .await
        .expect("subscribed");
    assert_eq!(subscribed.status().as_u16(), 200);
    let stream = cluster
        .client
        .get(format!("{}/mcp", cluster.member(0).url))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("a stream");
    assert_eq!(stream.status().as_u16(), 200);
    let mut session_stream = Frames::of(stream);
    let result = {
        let (client, url, task) = (
            cluster.client.clone(),
            cluster.member(0).url.clone(),
            task.clone(),
        );
        tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result",
                "params": {"taskId": task}});
            let answer = client.post(format!("{url}/mcp")).json(&body).send().await;
            answer
                .expect("an answer")
                .json::<Value>()
                .await
                .expect("json")
        })
    };
    // And a legacy sync call through member 0, following its own task there.
    let call = {
        let (client, url) = (cluster.client.clone(), cluster.member(0).url.clone());
        tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                "params": {"name": "hang", "arguments": {}}});
            let answer = client.post(format!("{url}/mcp")).json(&body).send().await;
            let answer = answer.expect("an answer");
            answer.json::<Value>().await.expect("json")
        })
    };
    // The session's stream finds its subscription, the result its task, the call starts.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let view = cluster.member(0).mcp.bridges()[TOOLS].view().clone();
    let moved: Vec<u32> = view
        .partition_status()
        .into_iter()
        .filter(|s| s.tasks > 0)
        .map(|s| s.partition)
        .collect();
    assert!(moved.contains(&p), "{moved:?}");
    assert_eq!(
        view.partition_status()
            .iter()
            .map(|s| s.tasks)
            .sum::<usize>(),
        2,
        "the task and the call's"
    );

    // The partitions move to member 1; member 0 retires them at once (new requests go to
    // member 1), and past the grace a partition nothing keeps would be released.
    move_partitions(&cluster, &moved, 1);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while moved.iter().any(|q| view.holds(*q)) {
        assert!(tokio::time::Instant::now() < deadline, "not retired");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let grace = cluster.member(0).mcp.bridges()[TOOLS].config().sync_timeout;
    tokio::time::sleep(grace + Duration::from_secs(2)).await;

    // Cancelled through member 2 (forwarded to member 1): every watch through member 0 hears
    // it.
    let (status, cancelled) = mcp(&cluster, 2, "tasks/cancel", json!({"taskId": task})).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cluster.forwards(2, "tasks/cancel", "owner").await, 1);
    let heard = listen.until("\"cancelled\"").await;
    assert_eq!(
        heard.last().expect("a task")["method"],
        "notifications/tasks"
    );
    let updated = session_stream
        .until("notifications/resources/updated")
        .await;
    assert_eq!(updated.last().expect("an update")["params"]["uri"], uri);
    let answered = tokio::time::timeout(Duration::from_secs(20), result)
        .await
        .expect("tasks/result answered")
        .expect("joined");
    assert_eq!(
        answered["error"]["message"], "the call was cancelled",
        "{answered}"
    );
    // The sync call cancelled through member 2 too (told to every member): answered as
    // cancelled, not cut.
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 77}});
    let told = cluster
        .client
        .post(format!("{}/mcp", cluster.member(2).url))
        .json(&notification)
        .send()
        .await
        .expect("accepted");
    assert_eq!(told.status().as_u16(), 202);
    let answered = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the call answered")
        .expect("joined");
    assert_eq!(
        answered["error"]["message"], "the call was cancelled",
        "{answered}"
    );
    // The watches gone, member 0 lets the partitions go.
    drop((listen, session_stream));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while moved.iter().any(|q| view.pin(*q).is_some()) {
        assert!(tokio::time::Instant::now() < deadline, "never released");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.shutdown().await.expect("shutdown");
}

/// Cut member `i`'s connections at once and serve it again on the same port (a restart of
/// its HTTP server: its streams end).
async fn restart_http(cluster: &mut Cluster, i: usize) {
    let member = cluster.members[i].as_mut().expect("a live member");
    member.server.abort();
    let _ = (&mut member.server).await;
    let address = member.url.trim_start_matches("http://").to_owned();
    let listener = TcpListener::bind(&address).await.expect("the same port");
    let (stop, stopped) = oneshot::channel::<()>();
    let app = member.app.clone();
    member.stop = stop;
    member.server = tokio::spawn(async move {
        let stopped = async {
            let _ = stopped.await;
        };
        serve(listener, app, stopped).await.expect("serve");
    });
}

/// A task made through member `i`, in a partition member `not` has no copy of (not even
/// one it is letting go): only `i` hears of it.
async fn call_outside(cluster: &Cluster, i: usize, not: usize) {
    let view = cluster.member(not).mcp.bridges()[TOOLS].view().clone();
    loop {
        let task = call_as_task(cluster, i, "quick").await;
        assert_eq!(partition_of_mcp(&task) % 4, i as u32);
        if view.pin(partition_of_mcp(&task)).is_none() {
            return;
        }
    }
}

/// Wait until member `i` has opened `n` listens for list changes on its peers, exactly.
async fn listened(cluster: &Cluster, i: usize, n: u64) {
    assert_eq!(
        listens_reach(cluster, i, n).await,
        n,
        "listens on member {i}"
    );
}

/// Wait until member `i` has opened at least `n` listens for list changes on its peers;
/// how many it has.
async fn listens_reach(cluster: &Cluster, i: usize, n: u64) -> u64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let now = cluster
            .forwards(i, "subscriptions/listen", "listened")
            .await;
        if now >= n {
            return now;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "member {i} listened {now} times, not {n}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_are_heard_from_a_member_joining_and_from_one_whose_stream_was_cut() {
    let log = memory_log().await;
    let mut cluster = Cluster::start(&log, 4).await;
    let worker = tool_worker(&log).await;
    // Member 1 starts out knowing three members: 3 is not one yet.
    let urls: Vec<String> = (0..3).map(|i| cluster.member(i).url.clone()).collect();
    let owners: Vec<u32> = (0..P).map(|p| p % 3).collect();
    let successors: Vec<u32> = owners.iter().map(|o| (o + 1) % 3).collect();
    let three = OwnerMap::new(1, urls, owners, successors).expect("map");
    let four = cluster.member(1).owners.current();
    cluster.member(1).owners.set(three);
    let mut listen = listen_for_list_changes(&cluster, 1).await;
    listen
        .until("notifications/subscriptions/acknowledged")
        .await;
    listened(&cluster, 1, 2).await;
    // Member 3 joins the map: listened to as well, its caller's new task heard.
    cluster.member(1).owners.set((*four).clone());
    listened(&cluster, 1, 3).await;
    call_outside(&cluster, 3, 1).await;
    listen.until("notifications/resources/list_changed").await;
    // Member 3's server restarts: the stream to it ends, and is opened again.
    restart_http(&mut cluster, 3).await;
    listened(&cluster, 1, 4).await;
    call_outside(&cluster, 3, 1).await;
    listen.until("notifications/resources/list_changed").await;
    worker.shutdown().await.expect("shutdown");
}
