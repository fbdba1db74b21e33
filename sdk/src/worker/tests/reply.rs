//! Answering with a message (fold rule 15) through a real worker and bridge: the reply is the
//! send's answer, there is no task for readers, a retry answers the same, a stream is that one
//! message; once the client has seen the task, a reply completes it instead.

#![allow(clippy::unwrap_used)]

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{
    GetTaskRequest, ListTasksRequest, Message, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest,
};
use futures::StreamExt;

use super::*;
use crate::agent::Caller;
use crate::error::ErrorKind;

/// A handler that answers `direct …` with a message, and `late …` with an artifact first.
fn replier() -> impl Handler {
    handler_fn(|task: TaskContext| async move {
        let text = task.text();
        if let Some(rest) = text.strip_prefix("late ") {
            let artifact = agentlog_wire::a2a::Artifact {
                artifact_id: "a".into(),
                name: None,
                description: None,
                parts: vec![agentlog_wire::a2a::Part::text(rest)],
                metadata: None,
                extensions: Vec::new(),
            };
            task.artifact(artifact, false, true).await?;
        }
        task.reply_text(&format!("answer to {text}")).await?;
        Ok(())
    })
}

async fn send(h: &Harness, message: Message) -> SendMessageResponse {
    h.bridge
        .send_message(&Caller::anonymous(), request(message, false))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_reply_answers_the_send_and_there_is_no_task() {
    let h = Harness::new("agent", replier()).await;
    let caller = Caller::anonymous();
    let message = user("direct hi");
    let SendMessageResponse::Message(answer) = send(&h, message.clone()).await else {
        panic!("expected a message");
    };
    assert_eq!(
        answer.parts,
        vec![agentlog_wire::a2a::Part::text("answer to direct hi")]
    );
    assert_eq!(answer.role, agentlog_wire::a2a::Role::Agent);
    assert_eq!(answer.task_id, None);
    let task_id =
        agentlog_wire::ids::task_id(&caller.tenant, &caller.principal, &message.message_id);
    let context_id =
        agentlog_wire::ids::context_id(&caller.tenant, &caller.principal, &message.message_id);
    assert_eq!(answer.context_id.as_deref(), Some(context_id.as_str()));

    // GetTask, CancelTask, SubscribeToTask: task not found; ListTasks: not listed.
    let get = GetTaskRequest {
        tenant: None,
        id: task_id.clone(),
        history_length: None,
    };
    let error = h.bridge.get_task(&caller, get).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::TaskNotFound);
    let subscribe = SubscribeToTaskRequest {
        tenant: None,
        id: task_id.clone(),
    };
    let Err(error) = h.bridge.subscribe_to_task(&caller, subscribe, None).await else {
        panic!("subscribed to an answered exchange");
    };
    assert_eq!(error.kind(), ErrorKind::TaskNotFound);
    let listed = h
        .bridge
        .list_tasks(&caller, ListTasksRequest::default())
        .await
        .unwrap();
    assert!(listed.tasks.iter().all(|t| t.id != task_id), "{listed:?}");

    // A follow-up naming the exchange as a task: not found either.
    let mut follow = user("more");
    follow.task_id = Some(task_id.clone());
    let error = h
        .bridge
        .send_message(&caller, request(follow, false))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::TaskNotFound);

    // The retried send answers the same, blocking or not, and runs nothing again.
    for immediately in [false, true] {
        let again = h
            .bridge
            .send_message(&caller, request(message.clone(), immediately))
            .await
            .unwrap();
        assert_eq!(again, SendMessageResponse::Message(answer.clone()));
    }
    let records = &h.events().await[&task_id];
    let replies = records
        .iter()
        .filter(|r| matches!(r.body, agentlog_wire::RecordBody::Reply { .. }))
        .count();
    assert_eq!(replies, 1);
    h.shutdown().await;
}

#[tokio::test]
async fn a_streaming_send_answered_by_a_reply_streams_that_one_message() {
    let h = Harness::new("agent", replier()).await;
    let caller = Caller::anonymous();
    let message = user("direct stream");
    for _ in 0..2 {
        // The send, then its retry: the same single event.
        let stream = h
            .bridge
            .send_streaming_message(&caller, request(message.clone(), false), None, None)
            .await
            .unwrap();
        let events: Vec<_> = stream.collect().await;
        assert_eq!(events.len(), 1, "{events:?}");
        let event = events[0].as_ref().unwrap();
        assert!(event.last);
        let StreamResponse::Message(answer) = &event.response else {
            panic!("expected a message, got {:?}", event.response);
        };
        assert_eq!(
            answer.parts,
            vec![agentlog_wire::a2a::Part::text("answer to direct stream")]
        );
    }
    h.shutdown().await;
}

#[tokio::test]
async fn a_reply_after_the_client_saw_the_task_completes_it() {
    let h = Harness::new("agent", replier()).await;
    // After an artifact: the blocking send gets the completed task, the reply its message.
    let SendMessageResponse::Task(task) = send(&h, user("late work")).await else {
        panic!("expected a task");
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.artifacts.len(), 1);
    let status = task.status.message.as_ref().unwrap();
    assert_eq!(
        status.parts,
        vec![agentlog_wire::a2a::Part::text("answer to late work")]
    );
    assert_eq!(h.get(&task.id).await.status.state, TaskState::Completed);

    // With returnImmediately the client holds the task from the start: completed too.
    let id = h.send_immediately("direct but immediate").await;
    h.wait_for_state(&id, TaskState::Completed).await;
    let task = h.get(&id).await;
    let status = task.status.message.as_ref().unwrap();
    assert_eq!(
        status.parts,
        vec![agentlog_wire::a2a::Part::text(
            "answer to direct but immediate"
        )]
    );

    // A streaming send of it: the task, then its events, ending completed with the reply.
    let stream = h
        .bridge
        .send_streaming_message(
            &Caller::anonymous(),
            request(user("late s"), false),
            None,
            None,
        )
        .await
        .unwrap();
    let events: Vec<_> = stream.map(Result::unwrap).collect().await;
    assert!(
        matches!(events[0].response, StreamResponse::Task(_)),
        "{events:?}"
    );
    let StreamResponse::StatusUpdate(last) = &events.last().unwrap().response else {
        panic!("{events:?}");
    };
    assert_eq!(last.status.state, TaskState::Completed);
    assert!(last.status.message.is_some());
    h.shutdown().await;
}
