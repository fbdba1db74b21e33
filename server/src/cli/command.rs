//! [`ExecHandler`]: a command run for each turn, its message on stdin and its stdout the
//! answer (`agentlog worker --exec`; `--tool` runs it for tool calls, `exec.rs`).

use std::process::Stdio;

use agentlog::worker::{Handler, HandlerError, TaskContext};
use agentlog_wire::a2a::{Artifact, Part};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// The most bytes of a command's stderr kept (for the failure message); the rest is read and
/// dropped, so that the command never blocks on a full pipe.
const MAX_STDERR: usize = 64 << 10;

/// Runs a command per task: the message text on stdin, stdout the answer.
#[derive(Debug)]
pub(super) struct ExecHandler {
    pub(super) argv: Vec<String>,
    /// The most bytes of stdout taken.
    pub(super) max_output: usize,
}

/// Up to `max` bytes of `from`, and whether there were more (the rest is drained, unread, when
/// `drain`; else left unread).
async fn read_capped(
    mut from: impl tokio::io::AsyncRead + Unpin,
    max: usize,
    drain: bool,
) -> std::io::Result<(Vec<u8>, bool)> {
    use tokio::io::AsyncReadExt;
    let mut kept = Vec::new();
    (&mut from)
        .take(max as u64 + 1)
        .read_to_end(&mut kept)
        .await?;
    let over = kept.len() > max;
    kept.truncate(max);
    if over && drain {
        tokio::io::copy(&mut from, &mut tokio::io::sink()).await?;
    }
    Ok((kept, over))
}

/// What a command left: its exit status and stdout, or why it has no answer.
pub(super) enum Ran {
    Exited(std::process::ExitStatus, Vec<u8>, Vec<u8>),
    /// Its stdout passed the limit (it was killed).
    TooMuch,
}

impl ExecHandler {
    /// Wait for `child`, reading its stdout (up to `max_output`) and stderr as it runs.
    pub(super) async fn run(&self, child: &mut tokio::process::Child) -> std::io::Result<Ran> {
        let stderr = child
            .stderr
            .take()
            .map(|stderr| tokio::spawn(read_capped(stderr, MAX_STDERR, true)));
        let (stdout, too_much) = match child.stdout.take() {
            Some(stdout) => read_capped(stdout, self.max_output, false).await?,
            None => (Vec::new(), false),
        };
        if too_much {
            child.kill().await?;
            return Ok(Ran::TooMuch);
        }
        let status = child.wait().await?;
        let stderr = match stderr {
            Some(read) => read.await.map_err(std::io::Error::other)??.0,
            None => Vec::new(),
        };
        Ok(Ran::Exited(status, stdout, stderr))
    }
}

#[async_trait::async_trait]
impl Handler for ExecHandler {
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        let Some((program, args)) = self.argv.split_first() else {
            task.fail("no command to run").await?;
            return Ok(());
        };
        // What the command needs for its side effects to happen once: a retried turn (its
        // worker died mid-run) has an attempt above 1 and the same idempotency key.
        let mut child = match Command::new(program)
            .args(args)
            .env("AGENTLOG_TASK_ID", task.task_id())
            .env("AGENTLOG_ATTEMPT", task.attempt().to_string())
            .env("AGENTLOG_IDEMPOTENCY_KEY", task.idempotency_key())
            // The task's bridge path: `agentlog send` run by the command carries it on.
            .env(
                agentlog::hops::HOPS_ENV,
                serde_json::to_string(task.hops()).unwrap_or_else(|_| "[]".to_owned()),
            )
            .envs(super::trace_env::of(&task))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
        {
            Ok(child) => child,
            Err(e) => {
                task.fail(&format!("cannot run {program}: {e}")).await?;
                return Ok(());
            }
        };
        if let Some(mut stdin) = child.stdin.take() {
            let text = task.text();
            // Written on the side: a command may print before it has read all its input.
            tokio::spawn(async move {
                // A command that exits without reading its input is not an error.
                let _ = stdin.write_all(text.as_bytes()).await;
                let _ = stdin.shutdown().await;
            });
        }
        let ran = tokio::select! {
            ran = self.run(&mut child) => ran,
            // Dropping the child (at the end of this function) kills it.
            () = task.cancellation().cancelled() => return Ok(()),
        };
        let (status, stdout, stderr) = match ran {
            Ok(Ran::Exited(status, stdout, stderr)) => (status, stdout, stderr),
            Ok(Ran::TooMuch) => {
                let why = format!(
                    "{program} printed more than {} bytes (--max-output); it was stopped",
                    self.max_output
                );
                task.fail(&why).await?;
                return Ok(());
            }
            Err(e) => {
                task.fail(&format!("{program} failed: {e}")).await?;
                return Ok(());
            }
        };
        if !status.success() {
            let stderr = String::from_utf8_lossy(&stderr);
            let stderr = stderr.trim();
            let text = if stderr.is_empty() {
                format!("{program} exited with {status}")
            } else {
                stderr.to_owned()
            };
            task.fail(&text).await?;
            return Ok(());
        }
        let stdout = String::from_utf8_lossy(&stdout);
        let stdout = stdout.trim();
        if stdout.is_empty() {
            task.complete(None).await?;
        } else {
            let artifact = Artifact {
                artifact_id: "output".to_owned(),
                name: Some("output".to_owned()),
                description: None,
                parts: vec![Part::text(stdout)],
                metadata: None,
                extensions: Vec::new(),
            };
            task.artifact(artifact, false, true).await?;
            task.complete(Some(stdout)).await?;
        }
        Ok(())
    }
}
