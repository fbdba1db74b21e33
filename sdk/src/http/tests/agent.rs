//! The agent behind the router tests: the lifecycles they need, through the public
//! `TaskContext` (the program's demo agent lives in the server crate).
//!
//! - `sleep N`: works N seconds (a `working` update first), then completes with an artifact;
//! - `input`: asks for input; the follow-up completes the task with its text;
//! - anything else: `echo: <text>` as two chunks of the artifact `echo`, then completes.

use std::time::Duration;

use agentlog_wire::a2a::{Artifact, Part};

use crate::worker::{Handler, HandlerError, TaskContext};

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TestAgent;

#[async_trait::async_trait]
impl Handler for TestAgent {
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        let text = task.text();
        if task.history().len() > 1 {
            task.complete(Some(&text)).await?;
            return Ok(());
        }
        let command = text.trim();
        if let Some(seconds) = command
            .strip_prefix("sleep ")
            .and_then(|n| n.trim().parse::<f64>().ok())
        {
            task.working(Some("working")).await?;
            tokio::select! {
                () = task.cancellation().cancelled() => return Ok(()),
                () = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {}
            }
            task.artifact(artifact("sleep", format!("slept {seconds} s")), false, true)
                .await?;
            task.complete(None).await?;
        } else if command == "input" {
            task.input_required("what should I echo?").await?;
        } else {
            let answer = format!("echo: {text}");
            let middle = answer
                .char_indices()
                .nth(answer.chars().count() / 2)
                .map_or(answer.len(), |(at, _)| at);
            let (head, tail) = answer.split_at(middle);
            task.artifact(artifact("echo", head.to_owned()), false, false)
                .await?;
            task.artifact(artifact("echo", tail.to_owned()), true, true)
                .await?;
            task.complete(None).await?;
        }
        Ok(())
    }
}

fn artifact(id: &str, text: String) -> Artifact {
    Artifact {
        artifact_id: id.to_owned(),
        name: Some(id.to_owned()),
        description: None,
        parts: vec![Part::text(text)],
        metadata: None,
        extensions: Vec::new(),
    }
}
