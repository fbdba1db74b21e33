//! [`DemoHandler`]: a built-in agent that shows every kind of task lifecycle, for
//! `agentlog serve --demo` and for tests.

use std::time::Duration;

use agentlog_wire::a2a::{Artifact, Part};
use tokio::time::Instant;

use agentlog::worker::{Handler, HandlerError, TaskContext};

/// How often a `sleep` task reports progress.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// The demo agent. By the message's text:
///
/// - `sleep N` (seconds, may be fractional): works N seconds, reporting progress about every
///   250 ms, then completes with the artifact "slept N s". Stops at once when canceled.
/// - `input`: asks "what should I echo?"; the follow-up message completes the task with the
///   follow-up's text as the final message.
/// - `fail`: fails with "you asked me to fail".
/// - `reply TEXT`: answers with the message `TEXT` instead of a task ([`TaskContext::reply`]).
/// - anything else: streams `echo: <text>` as three chunks of the artifact `echo`, then
///   completes.
///
/// A follow-up message (any turn after the first) is always echoed back and completes.
#[derive(Debug, Clone, Copy, Default)]
pub struct DemoHandler;

#[async_trait::async_trait]
impl Handler for DemoHandler {
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        let text = task.text();
        if task.history().len() > 1 {
            task.complete(Some(&text)).await?;
            return Ok(());
        }
        let command = text.trim();
        if let Some(seconds) = parse_sleep(command) {
            return sleep(&task, seconds).await;
        }
        if let Some(answer) = command.strip_prefix("reply ") {
            task.reply_text(answer.trim()).await?;
            return Ok(());
        }
        match command {
            "input" => task.input_required("what should I echo?").await?,
            "fail" => task.fail("you asked me to fail").await?,
            _ => echo(&task, &text).await?,
        }
        Ok(())
    }
}

/// The seconds of `sleep N`, if the text is that and N is a usable duration.
fn parse_sleep(text: &str) -> Option<(f64, Duration)> {
    let n: f64 = text.strip_prefix("sleep ")?.trim().parse().ok()?;
    Some((n, Duration::try_from_secs_f64(n).ok()?))
}

async fn sleep(task: &TaskContext, (n, total): (f64, Duration)) -> Result<(), HandlerError> {
    let start = Instant::now();
    let end = start + total;
    let cancel = task.cancellation();
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let tick = (now + PROGRESS_EVERY).min(end);
        tokio::select! {
            () = cancel.cancelled() => return Ok(()),
            () = tokio::time::sleep_until(tick) => {}
        }
        if tick < end {
            let elapsed = start.elapsed().as_secs_f64();
            task.working(Some(&format!("working… {elapsed:.1}s/{n}s")))
                .await?;
        }
    }
    let artifact = Artifact {
        artifact_id: "sleep".to_owned(),
        name: Some("sleep".to_owned()),
        description: None,
        parts: vec![Part::text(format!("slept {n} s"))],
        metadata: None,
        extensions: Vec::new(),
    };
    task.artifact(artifact, false, true).await?;
    task.complete(None).await?;
    Ok(())
}

async fn echo(task: &TaskContext, text: &str) -> Result<(), HandlerError> {
    let answer = format!("echo: {text}");
    let chunks = chunks(&answer, 3);
    let last = chunks.len().saturating_sub(1);
    for (i, chunk) in chunks.into_iter().enumerate() {
        let artifact = Artifact {
            artifact_id: "echo".to_owned(),
            name: Some("echo".to_owned()),
            description: None,
            parts: vec![Part::text(chunk)],
            metadata: None,
            extensions: Vec::new(),
        };
        task.artifact(artifact, i > 0, i == last).await?;
    }
    task.complete(None).await?;
    Ok(())
}

/// `text` cut into at most `n` pieces of about equal length (on character boundaries),
/// at least one.
fn chunks(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(n.max(1)).max(1);
    let mut out: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::agents::tests::Harness;
    use agentlog_wire::TaskState;
    use agentlog_wire::a2a::{Message, PartContent};

    #[test]
    fn chunks_cover_the_text_in_three_pieces() {
        assert_eq!(chunks("echo: hello", 3), vec!["echo", ": he", "llo"]);
        assert_eq!(chunks("ab", 3), vec!["a", "b"]);
        assert_eq!(chunks("", 3), vec![""]);
        assert_eq!(chunks("héllo wörld", 3).concat(), "héllo wörld");
    }

    #[test]
    fn sleep_takes_a_usable_number_of_seconds() {
        assert_eq!(
            parse_sleep("sleep 1.5").map(|s| s.1),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_sleep("sleep 0").map(|s| s.1), Some(Duration::ZERO));
        for bad in [
            "sleep",
            "sleep -1",
            "sleep x",
            "sleep NaN",
            "sleeps 1",
            "sleep 1e300",
        ] {
            assert_eq!(parse_sleep(bad), None, "{bad}");
        }
    }

    fn text_of(parts: &[Part]) -> String {
        parts
            .iter()
            .filter_map(|p| match &p.content {
                PartContent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn echo_streams_three_chunks_then_completes() {
        let h = Harness::new("demo", DemoHandler).await;
        let task = h.send("hello world").await;
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(task.artifacts.len(), 1);
        let artifact = &task.artifacts[0];
        assert_eq!(artifact.artifact_id, "echo");
        assert_eq!(artifact.name.as_deref(), Some("echo"));
        assert_eq!(artifact.parts.len(), 3);
        assert_eq!(text_of(&artifact.parts), "echo: hello world");
        h.shutdown().await;
    }

    #[tokio::test]
    async fn sleep_reports_progress_and_completes() {
        let h = Harness::new("demo", DemoHandler).await;
        let task = h.send("sleep 0.6").await;
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(text_of(&task.artifacts[0].parts), "slept 0.6 s");
        assert!(
            task.history
                .iter()
                .any(|m| text_of(&m.parts).starts_with("working… "))
        );
        h.shutdown().await;
    }

    #[tokio::test]
    async fn sleep_stops_when_canceled() {
        let h = Harness::new("demo", DemoHandler).await;
        let id = h.send_immediately("sleep 600").await;
        h.wait_for_state(&id, TaskState::Working).await;
        let task = h.cancel(&id).await;
        assert_eq!(task.status.state, TaskState::Canceled);
        // Shutdown waits for the handler, whose 600 s sleep ends only by the cancel: the
        // harness's grace period is longer than its shutdown timeout, so a handler that
        // ignored the token would fail this test.
        h.shutdown().await;
    }

    #[tokio::test]
    async fn input_then_follow_up_is_echoed() {
        let h = Harness::new("demo", DemoHandler).await;
        let task = h.send("input").await;
        assert_eq!(task.status.state, TaskState::InputRequired);
        let question = task.status.message.as_ref().unwrap();
        assert_eq!(text_of(&question.parts), "what should I echo?");
        let mut follow_up = Message::user_text(uuid::Uuid::new_v4().to_string(), "parrot");
        follow_up.task_id = Some(task.id.clone());
        let task = h.send_message(follow_up).await;
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(text_of(&task.status.message.unwrap().parts), "parrot");
        h.shutdown().await;
    }

    #[tokio::test]
    async fn fail_fails() {
        let h = Harness::new("demo", DemoHandler).await;
        let task = h.send("fail").await;
        assert_eq!(task.status.state, TaskState::Failed);
        assert_eq!(
            text_of(&task.status.message.unwrap().parts),
            "you asked me to fail"
        );
        h.shutdown().await;
    }
}
