//! The conformance agent's scenarios through a real bridge and worker (in-memory log), and
//! what the A2A conformance kit checks around them that no other test here did: a
//! subscription that lives through an interruption, a chunked streamed artifact in order.

#![allow(clippy::unwrap_used)]

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{
    Message, PartContent, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
};
use futures::StreamExt;

use super::*;
use crate::agents::tests::{Harness, request};
use agentlog::agent::Caller;

/// Whether a part's content is the one a scenario adds.
type PartCheck = fn(&PartContent) -> bool;

fn message(id: &str) -> Message {
    Message::user_text(format!("{id}-{}", uuid::Uuid::new_v4()), "from the kit")
}

async fn send(h: &Harness, prefix: &str) -> SendMessageResponse {
    h.bridge
        .send_message(&Caller::anonymous(), request(message(prefix), false))
        .await
        .unwrap()
}

async fn task(h: &Harness, prefix: &str) -> Task {
    match send(h, prefix).await {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(m) => panic!("{prefix}: a message {m:?}"),
    }
}

fn status_text(task: &Task) -> String {
    let message = task.status.message.as_ref().unwrap();
    match &message.parts[0].content {
        PartContent::Text(text) => text.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn every_blocking_scenario_ends_as_the_kit_expects() {
    let h = Harness::new("tck", ConformanceHandler).await;
    let done = task(&h, "tck-complete-task").await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(status_text(&done), "Hello from TCK");

    let cases: [(&str, PartCheck); 4] = [
        (
            "tck-artifact-text",
            |c| matches!(c, PartContent::Text(t) if t == "Generated text content"),
        ),
        (
            "tck-artifact-file-url",
            |c| matches!(c, PartContent::Url(u) if u == "https://example.com/output.txt"),
        ),
        (
            "tck-artifact-file",
            |c| matches!(c, PartContent::Raw(b) if b == b"tck"),
        ),
        (
            "tck-artifact-data",
            |c| matches!(c, PartContent::Data(d) if d["count"] == 42),
        ),
    ];
    for (prefix, expected) in cases {
        let done = task(&h, prefix).await;
        assert_eq!(done.status.state, TaskState::Completed, "{prefix}");
        assert_eq!(done.artifacts.len(), 1, "{prefix}");
        let part = &done.artifacts[0].parts[0];
        assert!(expected(&part.content), "{prefix}: {part:?}");
        if prefix.contains("file") {
            assert_eq!(part.filename.as_deref(), Some("output.txt"));
            assert_eq!(part.media_type.as_deref(), Some("text/plain"));
        }
    }
    let SendMessageResponse::Message(answer) = send(&h, "tck-message-response").await else {
        panic!("tck-message-response answers with a message");
    };
    assert_eq!(
        answer.parts[0].content,
        PartContent::Text("Direct message response".into())
    );
    let waiting = task(&h, "tck-input-required").await;
    assert_eq!(waiting.status.state, TaskState::InputRequired);
    let rejected = task(&h, "tck-reject-task").await;
    assert_eq!(rejected.status.state, TaskState::Rejected);
    assert_eq!(status_text(&rejected), "rejected");
    assert_eq!(
        task(&h, "tck-stream-002").await.status.state,
        TaskState::Completed
    );
    let other = task(&h, "tck-something-else").await;
    assert!(status_text(&other).starts_with("Unhandled messageId prefix: tck-something-else"));
    h.shutdown().await;
}

#[tokio::test]
async fn a_chunked_streamed_artifact_arrives_in_order_after_working() {
    let h = Harness::new("tck", ConformanceHandler).await;
    let stream = h
        .bridge
        .send_streaming_message(
            &Caller::anonymous(),
            request(message("tck-stream-artifact-chunked"), false),
            None,
            None,
        )
        .await
        .unwrap();
    let events: Vec<_> = stream.map(Result::unwrap).collect().await;
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match &e.response {
            StreamResponse::Task(t) => format!("task {}", t.status.state),
            StreamResponse::StatusUpdate(s) => format!("status {}", s.status.state),
            StreamResponse::ArtifactUpdate(a) => {
                format!("artifact append={} last={}", a.append, a.last_chunk)
            }
            StreamResponse::Message(_) => "message".into(),
        })
        .collect();
    // The task first (held until the handler showed it: fold rule 15), working (the claim,
    // then the handler's own report, which showed the task), the two chunks, completed;
    // positions strictly increase.
    assert_eq!(
        kinds,
        [
            "task TASK_STATE_SUBMITTED",
            "status TASK_STATE_WORKING",
            "status TASK_STATE_WORKING",
            "artifact append=true last=false",
            "artifact append=true last=true",
            "status TASK_STATE_COMPLETED",
        ],
        "{events:?}"
    );
    assert!(events.windows(2).all(|w| w[0].position < w[1].position));
    assert!(events.last().unwrap().last);
    h.shutdown().await;
}

#[tokio::test]
async fn a_subscription_lives_through_an_interruption_until_the_task_ends() {
    let h = Harness::new("tck", ConformanceHandler).await;
    let caller = Caller::anonymous();
    let waiting = task(&h, "tck-input-required").await;
    let subscribe = SubscribeToTaskRequest {
        tenant: None,
        id: waiting.id.clone(),
    };
    let mut stream = h
        .bridge
        .subscribe_to_task(&caller, subscribe, None)
        .await
        .unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert!(
        matches!(&first.response, StreamResponse::Task(t) if t.status.state == TaskState::InputRequired)
    );
    assert!(!first.last, "an interrupted task's subscription stays open");
    let mut follow_up = Message::user_text(uuid::Uuid::new_v4().to_string(), "go on");
    follow_up.task_id = Some(waiting.id.clone());
    h.bridge
        .send_message(&caller, request(follow_up, false))
        .await
        .unwrap();
    let rest: Vec<_> = stream.map(Result::unwrap).collect().await;
    let last = rest.last().unwrap();
    assert!(last.last);
    assert!(
        matches!(&last.response, StreamResponse::StatusUpdate(s) if s.status.state == TaskState::Completed),
        "{rest:?}"
    );
    h.shutdown().await;
}
