//! The official Rust A2A client (`a2a-client-lf` 0.2.9 with `a2a-grpc` 0.3.11) against
//! `agentlog serve --demo --grpc-listen` (named by `AGENTLOG_URL`), each scenario over
//! JSON-RPC, HTTP+JSON and gRPC: the card, blocking and non-blocking sends, GetTask with
//! history lengths, cancel, the typed errors, ListTasks' filters and paging, a message as the
//! answer, streaming, subscribing, input-required, and a task crossing bindings. The demo
//! worker answers `echo: <text>` in chunks, keeps `sleep N` working N seconds, asks on
//! `input`, and answers `reply TEXT` with a message.

use std::time::Duration;

use a2a::event::StreamResponse;
use a2a::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, Role, SendMessageResponse,
    SubscribeToTaskRequest, Task, TaskState, error_code,
};
use agentlog_interop::{
    BINDINGS, Client, artifact_text, card, client_over, request, server_url, task_of, text_of,
    user_message, wait_for,
};
use futures::StreamExt as _;

const TERMINAL: [TaskState; 4] = [
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::Rejected,
];

/// A client over `binding` of the server's card.
async fn client(base: &str, binding: &str) -> Client {
    let card = card(base).await.expect("the card");
    client_over(&card, binding).await.expect("a client")
}

async fn send(client: &Client, text: &str, immediately: bool) -> Task {
    let answer = client
        .send_message(&request(user_message(text, None, None), immediately))
        .await
        .expect("SendMessage");
    task_of(answer).expect("a task")
}

fn get(id: &str, history_length: Option<i32>) -> GetTaskRequest {
    GetTaskRequest {
        id: id.to_owned(),
        history_length,
        tenant: None,
    }
}

fn cancel(id: &str) -> CancelTaskRequest {
    CancelTaskRequest {
        id: id.to_owned(),
        metadata: None,
        tenant: None,
    }
}

fn list(context: &str) -> ListTasksRequest {
    ListTasksRequest {
        context_id: Some(context.to_owned()),
        status: None,
        page_size: None,
        page_token: None,
        history_length: None,
        status_timestamp_after: None,
        include_artifacts: None,
        tenant: None,
    }
}

/// Every event of a stream, failing on an error.
async fn collect(
    stream: futures::stream::BoxStream<'static, Result<StreamResponse, a2a::A2AError>>,
) -> Vec<StreamResponse> {
    let events: Vec<_> = stream.collect().await;
    events
        .into_iter()
        .map(|e| e.expect("a stream event"))
        .collect()
}

fn last_state(events: &[StreamResponse]) -> Option<TaskState> {
    match events.last()? {
        StreamResponse::StatusUpdate(update) => Some(update.status.state.clone()),
        StreamResponse::Task(task) => Some(task.status.state.clone()),
        _ => None,
    }
}

#[tokio::test]
async fn the_card_lists_every_binding_and_each_client_speaks_its_own() {
    let Some(base) = server_url("rust_client card") else {
        return;
    };
    let card = card(&base).await.expect("the card");
    assert_eq!(card.name, "demo");
    let listed: Vec<_> = card
        .supported_interfaces
        .iter()
        .map(|i| (i.protocol_binding.as_str(), i.protocol_version.as_str()))
        .collect();
    assert_eq!(
        listed,
        [("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("GRPC", "1.0")]
    );
    assert_eq!(card.supported_interfaces[0].url, base);
    assert!(!card.supported_interfaces[2].url.contains("://"));
    for binding in BINDINGS {
        let client = client_over(&card, binding).await.expect("a client");
        let task = send(&client, "which binding", false).await;
        assert_eq!(task.status.state, TaskState::Completed, "{binding}");
        assert_eq!(artifact_text(&task, "echo"), "echo: which binding");
    }
}

#[tokio::test]
async fn a_blocking_send_then_get_task_with_history_lengths() {
    let Some(base) = server_url("rust_client blocking send") else {
        return;
    };
    for binding in BINDINGS {
        let client = client(&base, binding).await;
        let task = send(&client, "hello", false).await;
        assert_eq!(task.status.state, TaskState::Completed, "{binding}");
        assert_eq!(artifact_text(&task, "echo"), "echo: hello", "{binding}");
        let history = task.history.clone().unwrap_or_default();
        assert!(
            history.iter().any(|m| text_of(&m.parts) == "hello"),
            "{binding}"
        );

        let again = client
            .get_task(&get(&task.id, None))
            .await
            .expect("GetTask");
        assert_eq!(again.id, task.id, "{binding}");
        assert_eq!(again.status.state, TaskState::Completed, "{binding}");
        assert_eq!(artifact_text(&again, "echo"), "echo: hello", "{binding}");
        let trimmed = client
            .get_task(&get(&task.id, Some(0)))
            .await
            .expect("GetTask");
        assert!(trimmed.history.unwrap_or_default().is_empty(), "{binding}");
        let one = client
            .get_task(&get(&task.id, Some(1)))
            .await
            .expect("GetTask");
        assert_eq!(one.history.unwrap_or_default().len(), 1, "{binding}");
    }
}

#[tokio::test]
async fn a_non_blocking_send_then_polling() {
    let Some(base) = server_url("rust_client non-blocking send") else {
        return;
    };
    for binding in BINDINGS {
        let client = client(&base, binding).await;
        let task = send(&client, "sleep 1", true).await;
        assert!(
            !TERMINAL.contains(&task.status.state),
            "{binding}: {:?}",
            task.status
        );
        let done = wait_for(&client, &task.id, &TERMINAL, Duration::from_secs(15))
            .await
            .expect("finished");
        assert_eq!(done.status.state, TaskState::Completed, "{binding}");
        assert_eq!(artifact_text(&done, "sleep"), "slept 1 s", "{binding}");
    }
}

#[tokio::test]
async fn cancel_then_cancel_again_is_task_not_cancelable() {
    let Some(base) = server_url("rust_client cancel") else {
        return;
    };
    for binding in BINDINGS {
        let client = client(&base, binding).await;
        let task = send(&client, "sleep 30", true).await;
        let canceled = client
            .cancel_task(&cancel(&task.id))
            .await
            .expect("CancelTask");
        assert_eq!(canceled.id, task.id, "{binding}");
        assert_eq!(canceled.status.state, TaskState::Canceled, "{binding}");
        let got = client
            .get_task(&get(&task.id, None))
            .await
            .expect("GetTask");
        assert_eq!(got.status.state, TaskState::Canceled, "{binding}");
        let again = client.cancel_task(&cancel(&task.id)).await;
        let error = again.expect_err("a second cancel");
        assert_eq!(
            error.code,
            error_code::TASK_NOT_CANCELABLE,
            "{binding}: {error:?}"
        );
    }
}

#[tokio::test]
async fn unknown_ids_are_task_not_found() {
    let Some(base) = server_url("rust_client unknown ids") else {
        return;
    };
    for binding in BINDINGS {
        let client = client(&base, binding).await;
        let id = format!("no-such-task-{}", a2a::new_task_id());
        let error = client.get_task(&get(&id, None)).await.expect_err("GetTask");
        assert_eq!(
            error.code,
            error_code::TASK_NOT_FOUND,
            "{binding}: {error:?}"
        );
        let error = client
            .cancel_task(&cancel(&id))
            .await
            .expect_err("CancelTask");
        assert_eq!(
            error.code,
            error_code::TASK_NOT_FOUND,
            "{binding}: {error:?}"
        );
        let subscribe = SubscribeToTaskRequest {
            id: id.clone(),
            tenant: None,
        };
        // Refused before the stream, or as its one event: either way TaskNotFound.
        let error = match client.subscribe_to_task(&subscribe).await {
            Err(error) => error,
            Ok(mut stream) => match stream.next().await {
                Some(Err(error)) => error,
                other => panic!("{binding}: SubscribeToTask of {id} gave {other:?}"),
            },
        };
        assert_eq!(
            error.code,
            error_code::TASK_NOT_FOUND,
            "{binding}: {error:?}"
        );
    }
}

#[tokio::test]
async fn list_tasks_filters_and_pages() {
    let Some(base) = server_url("rust_client list") else {
        return;
    };
    for binding in BINDINGS {
        let client = client(&base, binding).await;
        let context = a2a::new_context_id();
        let mut ids = Vec::new();
        for text in ["list one", "list two"] {
            let answer = client
                .send_message(&request(user_message(text, None, Some(&context)), false))
                .await
                .expect("SendMessage");
            let task = task_of(answer).expect("a task");
            assert_eq!(task.context_id, context, "{binding}");
            ids.push(task.id);
        }
        let listed = client.list_tasks(&list(&context)).await.expect("ListTasks");
        let got: Vec<_> = listed.tasks.iter().map(|t| t.id.clone()).collect();
        assert_eq!(
            got,
            [ids[1].clone(), ids[0].clone()],
            "{binding}: newest first"
        );
        assert_eq!(listed.next_page_token, "", "{binding}");
        assert!(
            listed
                .tasks
                .iter()
                .all(|t| t.artifacts.clone().unwrap_or_default().is_empty()),
            "{binding}: artifacts only when asked"
        );

        let page = client
            .list_tasks(&ListTasksRequest {
                page_size: Some(1),
                ..list(&context)
            })
            .await
            .expect("ListTasks");
        assert_eq!(page.tasks.len(), 1, "{binding}");
        assert_eq!(page.tasks[0].id, ids[1], "{binding}");
        assert!(!page.next_page_token.is_empty(), "{binding}");
        let next = client
            .list_tasks(&ListTasksRequest {
                page_size: Some(1),
                page_token: Some(page.next_page_token.clone()),
                ..list(&context)
            })
            .await
            .expect("ListTasks");
        assert_eq!(next.tasks.len(), 1, "{binding}");
        assert_eq!(next.tasks[0].id, ids[0], "{binding}");

        let with = client
            .list_tasks(&ListTasksRequest {
                include_artifacts: Some(true),
                ..list(&context)
            })
            .await
            .expect("ListTasks");
        assert_eq!(
            artifact_text(&with.tasks[1], "echo"),
            "echo: list one",
            "{binding}"
        );
        let working = client
            .list_tasks(&ListTasksRequest {
                status: Some(TaskState::Working),
                ..list(&context)
            })
            .await
            .expect("ListTasks");
        assert!(working.tasks.is_empty(), "{binding}");
    }
}

#[tokio::test]
async fn a_message_as_the_answer_blocking_and_streaming() {
    let Some(base) = server_url("rust_client message answer") else {
        return;
    };
    for binding in BINDINGS {
        let client = client(&base, binding).await;
        let answer = client
            .send_message(&request(user_message("reply hi there", None, None), false))
            .await
            .expect("SendMessage");
        let SendMessageResponse::Message(message) = answer else {
            panic!("{binding}: expected a message, got {answer:?}");
        };
        assert_eq!(message.role, Role::Agent, "{binding}");
        assert_eq!(text_of(&message.parts), "hi there", "{binding}");
        assert!(message.task_id.is_none(), "{binding}");

        let stream = client
            .send_streaming_message(&request(user_message("reply streamed", None, None), false))
            .await
            .expect("SendStreamingMessage");
        let events = collect(stream).await;
        assert_eq!(events.len(), 1, "{binding}: {events:?}");
        let StreamResponse::Message(message) = &events[0] else {
            panic!("{binding}: expected a message, got {events:?}");
        };
        assert_eq!(text_of(&message.parts), "streamed", "{binding}");
    }
}

#[tokio::test]
async fn a_streaming_send_starts_with_the_task_and_ends_completed() {
    let Some(base) = server_url("rust_client streaming") else {
        return;
    };
    for binding in BINDINGS {
        let client = client(&base, binding).await;
        let stream = client
            .send_streaming_message(&request(user_message("hello stream", None, None), false))
            .await
            .expect("SendStreamingMessage");
        let events = collect(stream).await;
        let StreamResponse::Task(task) = &events[0] else {
            panic!("{binding}: the first event is not the task: {events:?}");
        };
        assert_eq!(last_state(&events), Some(TaskState::Completed), "{binding}");
        let chunks: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                StreamResponse::ArtifactUpdate(update) => Some(update),
                _ => None,
            })
            .collect();
        assert!(!chunks.is_empty(), "{binding}");
        assert!(chunks.iter().all(|c| c.task_id == task.id), "{binding}");
        assert!(!chunks[0].append.unwrap_or(false), "{binding}");
        assert!(
            chunks[1..].iter().all(|c| c.append == Some(true)),
            "{binding}"
        );
        assert_eq!(
            chunks.last().and_then(|c| c.last_chunk),
            Some(true),
            "{binding}"
        );
        let text: String = chunks.iter().map(|c| text_of(&c.artifact.parts)).collect();
        assert_eq!(text, "echo: hello stream", "{binding}");
    }
}

#[tokio::test]
async fn subscribing_to_a_running_task() {
    let Some(base) = server_url("rust_client subscribe") else {
        return;
    };
    for binding in BINDINGS {
        let client = client(&base, binding).await;
        let task = send(&client, "sleep 1", true).await;
        assert!(!TERMINAL.contains(&task.status.state), "{binding}");
        let stream = client
            .subscribe_to_task(&SubscribeToTaskRequest {
                id: task.id.clone(),
                tenant: None,
            })
            .await
            .expect("SubscribeToTask");
        let events = collect(stream).await;
        let StreamResponse::Task(first) = &events[0] else {
            panic!("{binding}: the first event is not the task: {events:?}");
        };
        assert_eq!(first.id, task.id, "{binding}");
        assert_eq!(last_state(&events), Some(TaskState::Completed), "{binding}");
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                StreamResponse::ArtifactUpdate(update) => Some(text_of(&update.artifact.parts)),
                _ => None,
            })
            .collect();
        assert_eq!(text, "slept 1 s", "{binding}");
    }
}

#[tokio::test]
async fn input_required_then_a_follow_up_completes_the_task() {
    let Some(base) = server_url("rust_client input-required") else {
        return;
    };
    for binding in BINDINGS {
        let client = client(&base, binding).await;
        let task = send(&client, "input", false).await;
        assert_eq!(task.status.state, TaskState::InputRequired, "{binding}");
        let asked = task.status.message.as_ref().map(|m| text_of(&m.parts));
        assert_eq!(asked.as_deref(), Some("what should I echo?"), "{binding}");
        let follow_up = user_message("the follow-up", Some(&task.id), Some(&task.context_id));
        let answer = client
            .send_message(&request(follow_up, false))
            .await
            .expect("SendMessage");
        let done = task_of(answer).expect("a task");
        assert_eq!(done.id, task.id, "{binding}");
        assert_eq!(done.status.state, TaskState::Completed, "{binding}");
        let said = done.status.message.as_ref().map(|m| text_of(&m.parts));
        assert_eq!(said.as_deref(), Some("the follow-up"), "{binding}");
    }
}

#[tokio::test]
async fn a_task_sent_on_one_binding_is_read_and_canceled_on_the_others() {
    let Some(base) = server_url("rust_client across bindings") else {
        return;
    };
    let mut clients = Vec::new();
    for binding in BINDINGS {
        clients.push((binding, client(&base, binding).await));
    }
    for (sender, client) in &clients {
        let task = send(client, "sleep 30", true).await;
        for (reader, other) in &clients {
            let got = other.get_task(&get(&task.id, None)).await.expect("GetTask");
            assert_eq!(got.id, task.id, "sent on {sender}, read on {reader}");
            assert!(!TERMINAL.contains(&got.status.state), "{sender} → {reader}");
        }
        let (canceler, other) = clients
            .iter()
            .find(|(b, _)| b != sender)
            .expect("another binding");
        let canceled = other
            .cancel_task(&cancel(&task.id))
            .await
            .expect("CancelTask");
        assert_eq!(
            canceled.status.state,
            TaskState::Canceled,
            "{sender} → {canceler}"
        );
        let seen = client
            .get_task(&get(&task.id, None))
            .await
            .expect("GetTask");
        assert_eq!(
            seen.status.state,
            TaskState::Canceled,
            "{canceler} → {sender}"
        );
    }
}
