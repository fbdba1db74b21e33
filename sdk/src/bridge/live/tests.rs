//! A blocking send's answer from the view's events is what a fold of the log gives.
#![allow(clippy::unwrap_used)]

use agentlog_wire::a2a::{Artifact, Message, Part, SendMessageResponse};
use agentlog_wire::fold::fold;
use agentlog_wire::{Record, TaskState};

use crate::agent::Caller;
use crate::bridge::test_support::send_request;
use crate::bridge::{Bridge, BridgeConfig};
use crate::log::Log;
use crate::log::layers::{LogMetrics, LogOp, MetricsLayer};
use crate::worker::{TaskContext, Worker, WorkerConfig, handler_fn};

/// A handler whose work the message names: artifact chunks and a status message, an
/// interruption, a reply in the task's place, a failure.
async fn handle(task: TaskContext) -> Result<(), crate::worker::HandlerError> {
    let chunk = |text: &str| Artifact {
        artifact_id: "out".to_owned(),
        name: Some("out".to_owned()),
        description: None,
        parts: vec![Part::text(text)],
        metadata: None,
        extensions: Vec::new(),
    };
    match task.text().as_str() {
        "chunks" => {
            task.working(Some("on it")).await?;
            task.artifact(chunk("a"), false, false).await?;
            task.artifact(chunk("b"), true, true).await?;
            task.complete(Some("done")).await?;
        }
        "ask" => task.input_required("which one?").await?,
        "reply" => task.reply_text("an answer, no task").await?,
        "fail" => task.fail("it broke").await?,
        _ => task.complete(None).await?,
    }
    Ok(())
}

/// The task's records on the log, in log order.
async fn records_of(log: &Log, bridge: &Bridge, task_id: &str) -> Vec<Record> {
    let topic = &bridge.config().topics.events;
    let partition = bridge.view().partition_of(task_id);
    let stored = log.read(topic, partition, 0, 100_000).await.unwrap();
    stored
        .iter()
        .map(|s| Record::decode(&s.payload).unwrap())
        .filter(|r| r.header.task_id == task_id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_answer_from_the_views_events_is_the_fold_of_the_log() {
    let log = crate::log::open("memory://").await.unwrap();
    let metrics = LogMetrics::new();
    let metered = log.clone().layer(MetricsLayer::new(metrics.clone()));
    let bridge = Bridge::open(metered, BridgeConfig::new("live"))
        .await
        .unwrap();
    // The worker on its own view and handle: only the bridge's reads are counted.
    let worker = Worker::start(log.clone(), WorkerConfig::new("live"), handler_fn(handle))
        .await
        .unwrap();
    let caller = Caller::anonymous();
    let texts = ["chunks", "ask", "reply", "fail", "plain"];
    let rounds = 8;
    for round in 0..rounds {
        for (i, text) in texts.iter().enumerate() {
            let message_id = format!("m-{round}-{i}");
            let mut request = send_request(&message_id, false);
            request.message = Message::user_text(message_id.clone(), *text);
            let answer = if round % 2 == 0 {
                bridge.send_message(&caller, request).await.unwrap()
            } else {
                // The JSON-RPC path: params as received, the command applied inline.
                let raw = serde_json::to_string(&request).unwrap();
                bridge
                    .send_message_raw(&caller, request, Some(&raw))
                    .await
                    .unwrap()
            };
            let task_id =
                agentlog_wire::ids::task_id(&caller.tenant, &caller.principal, &message_id);
            let folded = fold(&records_of(&log, &bridge, &task_id).await);
            match answer {
                SendMessageResponse::Task(task) => {
                    assert_eq!(Some(&task), folded.task(), "{text}");
                    let expected = match *text {
                        "ask" => TaskState::InputRequired,
                        "fail" => TaskState::Failed,
                        _ => TaskState::Completed,
                    };
                    assert_eq!(task.status.state, expected, "{text}");
                }
                SendMessageResponse::Message(answer) => {
                    assert_eq!(*text, "reply");
                    assert_eq!(Some(&answer), folded.answer());
                }
            }
        }
    }
    // Sends follow their task live, not from the log: registered before the append, whether
    // the command is applied by the send (the JSON-RPC rounds) or by the follower with the
    // records after it (the others), a send hears every change after its command.
    assert_eq!(
        metrics.calls(LogOp::ReadAt),
        0,
        "a send read its task back instead of following it"
    );
    worker.shutdown().await.unwrap();
}
