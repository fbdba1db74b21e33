//! A stream through a non-owner, cut by its partition's move to another member, resumed with
//! `Last-Event-ID` through a third member: no event missed, none twice.

use std::sync::Arc;

use agentlog::security::owners::OwnerMap;
use agentlog::worker::{Handler, HandlerError, TaskContext, Worker, WorkerConfig};
use futures::StreamExt;
use tokio::sync::Semaphore;

use super::*;

const STEPS: usize = 6;

/// Reports `step i` each time the test adds a permit, then completes: the test decides when
/// each event is written, so nothing waits on time.
#[derive(Clone)]
struct Gated(Arc<Semaphore>);

#[async_trait::async_trait]
impl Handler for Gated {
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        for i in 0..=STEPS {
            let permit = self.0.acquire().await.map_err(|e| e.to_string())?;
            permit.forget();
            if i == STEPS {
                task.complete(Some("done")).await?;
            } else {
                task.working(Some(&format!("step {i}"))).await?;
            }
        }
        Ok(())
    }
}

/// An SSE answer read frame by frame: each frame's `id` and JSON `data`.
struct Frames {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
}

impl Frames {
    async fn of(answer: reqwest::Response) -> Self {
        let kind = answer.headers()["content-type"].to_str().expect("type");
        if kind != "text/event-stream" {
            let kind = kind.to_owned();
            panic!(
                "a {kind} answer, not a stream: {}",
                answer.text().await.expect("body")
            );
        }
        Self {
            body: answer.bytes_stream().boxed(),
            buffer: Vec::new(),
        }
    }

    /// The next frame with data, `None` when the stream ends.
    async fn next(&mut self) -> Option<(u64, Value)> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let frame = String::from_utf8(self.buffer.drain(..end + 2).collect()).ok()?;
                let id = frame.lines().find_map(|l| l.strip_prefix("id: "));
                let data = frame.lines().find_map(|l| l.strip_prefix("data: "));
                if let (Some(id), Some(data)) = (id, data) {
                    let data = serde_json::from_str(data).expect("JSON data");
                    return Some((id.parse().expect("a position"), data));
                }
                continue;
            }
            match self.body.next().await? {
                Ok(chunk) => self.buffer.extend_from_slice(&chunk),
                // A cut stream ends like a closed one: the client resumes either way.
                Err(_) => return None,
            }
        }
    }
}

/// What an event says: its state and its status text.
fn summary(event: &Value) -> (String, String) {
    let result = &event["result"];
    let status = if result["task"].is_object() {
        &result["task"]["status"]
    } else {
        &result["statusUpdate"]["status"]
    };
    let text = status["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    (
        status["state"].as_str().unwrap_or_default().to_owned(),
        text.to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumed_through_another_member_across_a_move_misses_nothing_and_repeats_nothing()
{
    let log = memory_log().await;
    let cluster = Cluster::start(&log, 4).await;
    let gate = Arc::new(Semaphore::new(0));
    let worker = Worker::start(log.clone(), WorkerConfig::new(AGENT), Gated(gate.clone()))
        .await
        .expect("worker");
    // A task of member 1's, streamed through member 0.
    let message = (0..)
        .map(|k| format!("r-{k}"))
        .find(|m| partition(&agentlog_wire::ids::task_id("", "", m)) % 4 == 1)
        .expect("a message");
    let task = agentlog_wire::ids::task_id("", "", &message);
    let p = partition(&task);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {
        "message": {"messageId": message, "role": "ROLE_USER", "parts": [{"text": "go"}]}}});
    let answer = cluster
        .client
        .post(format!("{}/", cluster.member(0).url))
        .json(&body)
        .send()
        .await
        .expect("a stream");
    let mut first = Frames::of(answer).await;
    let mut seen: Vec<(u64, (String, String))> = Vec::new();
    gate.add_permits(2);
    while !seen.iter().any(|(_, (_, text))| text == "step 1") {
        let (id, event) = first.next().await.expect("an event before the move");
        seen.push((id, summary(&event)));
    }

    // The move: member 2 holds p caught up (as placement has a partition moving in before the
    // map names its new owner: until then member 2 answers nothing, not ready), every member's
    // map says so, member 1 lets p go (its subscribers' streams close).
    let holder = cluster.member(2).bridge.view();
    holder.hold(p).await.expect("hold");
    tokio::time::timeout(Duration::from_secs(60), holder.wait_caught_up())
        .await
        .expect("member 2 catches p up");
    let owners: Vec<u32> = (0..P).map(|q| if q == p { 2 } else { q % 4 }).collect();
    let successors: Vec<u32> = owners.iter().map(|o| (o + 1) % 4).collect();
    let urls: Vec<String> = (0..4).map(|i| cluster.member(i).url.clone()).collect();
    for i in 0..4 {
        let map = OwnerMap::new(i as u32, urls.clone(), owners.clone(), successors.clone());
        cluster.member(i).owners.set(map.expect("map"));
    }
    cluster
        .member(1)
        .bridge
        .view()
        .release(p)
        .await
        .expect("release");
    // The released partition's subscribers see their streams end (a bound, not a wait: a
    // stream left open would hang the test).
    let drained = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some((id, event)) = first.next().await {
            seen.push((id, summary(&event)));
        }
    });
    drained.await.expect("the first stream ends at the move");
    // The rest of the task happens while nobody streams it.
    gate.add_permits(STEPS + 1 - 2);

    // Resumed through member 3, after the last event seen: forwarded to p's new owner.
    let last = seen.last().expect("events").0;
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task}});
    let answer = cluster
        .client
        .post(format!("{}/", cluster.member(3).url))
        .header("last-event-id", last.to_string())
        .json(&body)
        .send()
        .await
        .expect("a resumed stream");
    let mut resumed = Frames::of(answer).await;
    let before = seen.len();
    while let Some((id, event)) = resumed.next().await {
        seen.push((id, summary(&event)));
    }
    assert!(seen.len() - before > STEPS - 2, "resumed: {seen:?}");

    // Every event once, in order: the task, six steps, the completion.
    let positions: Vec<u64> = seen.iter().map(|(id, _)| *id).collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "no duplicate: {positions:?}"
    );
    let texts: Vec<&str> = seen
        .iter()
        .map(|(_, (_, text))| text.as_str())
        .filter(|text| text.starts_with("step "))
        .collect();
    let expected: Vec<String> = (0..STEPS).map(|i| format!("step {i}")).collect();
    assert_eq!(texts, expected, "no gap: {seen:?}");
    assert_eq!(seen[0].1.0, "TASK_STATE_SUBMITTED", "{seen:?}");
    assert_eq!(
        seen.last().map(|(_, (state, _))| state.as_str()),
        Some("TASK_STATE_COMPLETED")
    );
    assert_eq!(cluster.forwards(3, "SubscribeToTask", "owner").await, 1);
    assert_eq!(cluster.forwards(2, "SubscribeToTask", "received").await, 1);
    assert!(!cluster.member(1).bridge.view().holds(p));
    worker.shutdown().await.expect("shutdown");
}
