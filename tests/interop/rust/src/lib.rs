//! Interop with the official Rust A2A client: `a2a-client-lf` (its JSON-RPC and REST
//! transports) with `a2a-grpc`'s gRPC transport, against `agentlog serve --demo
//! --grpc-listen`. What the scenarios of `tests/rust_client.rs` share: the server's URL, a
//! client held to one binding of the card, requests and the text of an answer.
//!
//! `tests/interop/run.sh` starts the server and names it in `AGENTLOG_URL`; without it (a
//! plain `cargo test --workspace`) every scenario prints `SKIPPED` and passes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a::{
    A2AError, AgentCard, Message, Part, Role, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, Task, TaskState,
};
use a2a_client::agent_card::AgentCardResolver;
use a2a_client::{A2AClient, A2AClientFactory, Transport};
use a2a_grpc::GrpcTransportFactory;

/// Every binding the served card lists, in its order: each scenario runs over all three.
pub const BINDINGS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];

/// A client of the official SDK, its transport chosen at run time.
pub type Client = A2AClient<Box<dyn Transport>>;

/// The server under test (`AGENTLOG_URL`, ending in `/`), or `None` after printing why the
/// calling scenario is skipped.
pub fn server_url(scenario: &str) -> Option<String> {
    match std::env::var("AGENTLOG_URL") {
        Ok(url) if !url.is_empty() => Some(if url.ends_with('/') { url } else { url + "/" }),
        _ => {
            println!(
                "SKIPPED {scenario}: AGENTLOG_URL is not set (tests/interop/run.sh starts `agentlog serve --demo --grpc-listen` and sets it)"
            );
            None
        }
    }
}

/// The server's card, through the client's own resolver.
pub async fn card(base: &str) -> Result<AgentCard, A2AError> {
    AgentCardResolver::new(None).resolve(base).await
}

/// A client that speaks `binding` of `card`: the factory knows all three transports and
/// prefers `binding`; the interface it picked must be that one (the factory falls back to
/// another binding when one fails to connect, which would hide a broken binding).
pub async fn client_over(card: &AgentCard, binding: &str) -> Result<Client, String> {
    let factory = A2AClientFactory::builder()
        .register(Arc::new(GrpcTransportFactory::new()))
        .preferred_bindings(vec![binding.to_owned()])
        .build();
    let (client, interface) = factory
        .create_from_card_with_interface(card)
        .await
        .map_err(|e| format!("{binding}: no client: {e:?}"))?;
    if interface.protocol_binding != binding {
        return Err(format!("{binding}: the factory picked {interface:?}"));
    }
    Ok(client)
}

/// A user message of one text part, new id, in `task` / `context` when given.
pub fn user_message(text: &str, task: Option<&str>, context: Option<&str>) -> Message {
    let mut message = Message::new(Role::User, vec![Part::text(text)]);
    message.task_id = task.map(str::to_owned);
    message.context_id = context.map(str::to_owned);
    message
}

/// A SendMessage request of `message`; `return_immediately` asks not to wait for the task.
pub fn request(message: Message, return_immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        message,
        configuration: return_immediately.then_some(SendMessageConfiguration {
            accepted_output_modes: None,
            task_push_notification_config: None,
            history_length: None,
            return_immediately: Some(true),
        }),
        metadata: None,
        tenant: None,
    }
}

/// The task of an answer, or what it was instead.
pub fn task_of(answer: SendMessageResponse) -> Result<Task, String> {
    match answer {
        SendMessageResponse::Task(task) => Ok(task),
        SendMessageResponse::Message(message) => Err(format!("a message, not a task: {message:?}")),
    }
}

/// The text of `parts`, joined.
pub fn text_of(parts: &[Part]) -> String {
    parts.iter().filter_map(Part::as_text).collect()
}

/// The text of every artifact of `task` named or identified `name`, joined.
pub fn artifact_text(task: &Task, name: &str) -> String {
    task.artifacts
        .iter()
        .flatten()
        .filter(|a| a.artifact_id == name || a.name.as_deref() == Some(name))
        .map(|a| text_of(&a.parts))
        .collect()
}

/// Read task `id` until its state is one of `states`, for at most `within`.
pub async fn wait_for(
    client: &Client,
    id: &str,
    states: &[TaskState],
    within: Duration,
) -> Result<Task, String> {
    let deadline = Instant::now() + within;
    loop {
        let request = a2a::GetTaskRequest {
            id: id.to_owned(),
            history_length: None,
            tenant: None,
        };
        let task = client
            .get_task(&request)
            .await
            .map_err(|e| format!("GetTask {id}: {e:?}"))?;
        if states.contains(&task.status.state) {
            return Ok(task);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "task {id} still {:?} after {within:?}",
                task.status.state
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
