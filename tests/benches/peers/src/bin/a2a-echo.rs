//! The a2a-rs peer: `a2a-server-lf`'s JSON-RPC router over its in-memory task store, with
//! an agent doing the demo echo's work (three artifact chunks of "echo: <text>", then
//! completed). Prints its URL, as `agentlog serve` does.

use std::sync::Arc;

use a2a::{
    A2AError, Artifact, Part, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore};
use futures::stream::{self, BoxStream};

struct Echo;

fn status(ctx: &ExecutorContext, state: TaskState) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: None,
        },
        metadata: None,
    })
}

impl AgentExecutor for Echo {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let text = ctx.message.as_ref().and_then(|m| m.text()).unwrap_or_default();
        let answer: Vec<char> = format!("echo: {text}").chars().collect();
        let size = answer.len().div_ceil(3).max(1);
        let pieces: Vec<String> = answer.chunks(size).map(|c| c.iter().collect()).collect();
        let last = pieces.len().saturating_sub(1);
        let mut events = vec![Ok(status(&ctx, TaskState::Working))];
        for (i, piece) in pieces.into_iter().enumerate() {
            events.push(Ok(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: ctx.task_id.clone(),
                context_id: ctx.context_id.clone(),
                artifact: Artifact {
                    artifact_id: "echo".into(),
                    name: Some("echo".to_owned()),
                    description: None,
                    parts: vec![Part::text(piece)],
                    metadata: None,
                    extensions: None,
                },
                append: Some(i > 0),
                last_chunk: Some(i == last),
                metadata: None,
            })));
        }
        events.push(Ok(status(&ctx, TaskState::Completed)));
        Box::pin(stream::iter(events))
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        Box::pin(stream::iter(vec![Ok(status(&ctx, TaskState::Canceled))]))
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let handler = Arc::new(DefaultRequestHandler::new(Echo, InMemoryTaskStore::new()));
    let router = a2a_server::jsonrpc::jsonrpc_router(handler);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("a2a-rs echo agent on http://{}/", listener.local_addr()?);
    axum::serve(listener, router).await
}
