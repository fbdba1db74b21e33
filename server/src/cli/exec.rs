//! `agentlog worker --tool NAME --exec CMD`: a command answering an MCP tool's calls.
//!
//! Each call runs the command once with the call's arguments (a JSON object) on stdin and
//! `AGENTLOG_TOOL` in its environment besides `--exec`'s usual ones. A zero exit answers the
//! call: stdout that is a JSON `CallToolResult` (an object with a `content` array) is the
//! result as it is; other stdout is one text block (trimmed). A non-zero exit is a tool
//! error (`isError: true`, the command's stderr as text), for the model to read. Cancelling
//! the call kills the command.

use std::process::Stdio;

use agentlog_wire::mcp::CallToolResult;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::command::{ExecHandler, Ran};
use agentlog::worker::{HandlerError, ToolCall, ToolHandler};

/// Runs a command per tool call.
#[derive(Debug)]
pub(super) struct ToolExec {
    pub(super) tool: String,
    pub(super) exec: ExecHandler,
}

#[async_trait::async_trait]
impl ToolHandler for ToolExec {
    async fn call(&self, call: ToolCall) -> Result<CallToolResult, HandlerError> {
        let Some((program, args)) = self.exec.argv.split_first() else {
            return Err("no command to run".into());
        };
        let task = &call.task;
        let mut child = Command::new(program)
            .args(args)
            .env("AGENTLOG_TOOL", &self.tool)
            .env("AGENTLOG_TASK_ID", task.task_id())
            .env("AGENTLOG_ATTEMPT", task.attempt().to_string())
            .env("AGENTLOG_IDEMPOTENCY_KEY", task.idempotency_key())
            .env(
                agentlog::hops::HOPS_ENV,
                serde_json::to_string(task.hops()).unwrap_or_else(|_| "[]".to_owned()),
            )
            .envs(super::trace_env::of(task))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            let input = serde_json::Value::Object(call.arguments.clone()).to_string();
            tokio::spawn(async move {
                // A command that exits without reading its input is not an error.
                let _ = stdin.write_all(input.as_bytes()).await;
                let _ = stdin.shutdown().await;
            });
        }
        let ran = tokio::select! {
            ran = self.exec.run(&mut child) => ran?,
            // The task is cancelled on the log already; dropping the child kills it.
            () = task.cancellation().cancelled() => return Ok(CallToolResult::error("cancelled")),
        };
        let (status, stdout, stderr) = match ran {
            Ran::Exited(status, stdout, stderr) => (status, stdout, stderr),
            Ran::TooMuch => {
                return Err(format!(
                    "{program} printed more than {} bytes (--max-output); it was stopped",
                    self.exec.max_output
                )
                .into());
            }
        };
        Ok(answer(program, status, &stdout, &stderr))
    }
}

/// The result of a command that exited.
fn answer(
    program: &str,
    status: std::process::ExitStatus,
    stdout: &[u8],
    stderr: &[u8],
) -> CallToolResult {
    if !status.success() {
        let stderr = String::from_utf8_lossy(stderr);
        let stderr = stderr.trim();
        return CallToolResult::error(if stderr.is_empty() {
            format!("{program} exited with {status}")
        } else {
            stderr.to_owned()
        });
    }
    let stdout = String::from_utf8_lossy(stdout);
    let stdout = stdout.trim();
    let looks_like_result = serde_json::from_str::<serde_json::Value>(stdout)
        .ok()
        .filter(|v| v.get("content").is_some_and(serde_json::Value::is_array));
    match looks_like_result.map(serde_json::from_value::<CallToolResult>) {
        Some(Ok(result)) => result,
        _ => CallToolResult::text(stdout),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn stdout_is_a_result_or_text_and_a_failure_is_a_tool_error() {
        let ok = std::process::ExitStatus::from_raw(0);
        let failed = std::process::ExitStatus::from_raw(1 << 8);
        assert_eq!(answer("x", ok, b" hi\n", b""), CallToolResult::text("hi"));
        let json = br#"{"content":[{"type":"text","text":"t"}],"isError":true}"#;
        assert_eq!(answer("x", ok, json, b""), CallToolResult::error("t"));
        assert_eq!(
            answer("x", ok, br#"{"a":1}"#, b""),
            CallToolResult::text(r#"{"a":1}"#)
        );
        assert_eq!(
            answer("x", failed, b"", b"boom\n"),
            CallToolResult::error("boom")
        );
        assert!(answer("x", failed, b"", b"").is_error == Some(true));
    }

    #[tokio::test]
    async fn a_tool_call_runs_the_command_with_its_arguments_on_stdin() {
        use agentlog::mcp::{McpBridge, McpConfig, McpReply, McpRequest, ToolConfig};
        use agentlog::worker::{Tools, Worker, WorkerConfig};
        let log = agentlog::log::open("memory://").await.unwrap();
        let tool = |name: &str| {
            ToolConfig::new(agentlog_wire::mcp::Tool::new(
                name,
                serde_json::json!({"type": "object"}),
            ))
        };
        let mcp = McpBridge::open(
            log.clone(),
            McpConfig::new(vec![tool("upper"), tool("boom")]),
        )
        .await
        .unwrap();
        let mut workers = Vec::new();
        for (name, script) in [
            ("upper", "tr a-z A-Z; echo \" $AGENTLOG_TOOL\""),
            ("boom", "echo bad >&2; exit 3"),
        ] {
            let handler = ToolExec {
                tool: name.into(),
                exec: ExecHandler {
                    argv: vec!["sh".into(), "-c".into(), script.into()],
                    max_output: 1 << 20,
                },
            };
            let config = WorkerConfig::new(&format!("mcp.{name}"))
                .view(mcp.bridges()[&format!("mcp.{name}")].view().clone());
            workers.push(
                Worker::start(log.clone(), config, Tools::new().tool(name, handler))
                    .await
                    .unwrap(),
            );
        }
        let call = |name: &str| {
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": name, "arguments": {"text": "hi"}}})
            .to_string()
        };
        let mut answers = Vec::new();
        for name in ["upper", "boom"] {
            let body = call(name);
            let reply = mcp
                .handle(McpRequest {
                    body: body.as_bytes(),
                    caller: agentlog::Caller::anonymous(),
                    headers: None,
                    accepts_stream: false,
                })
                .await;
            let McpReply::Json { body, .. } = reply else {
                panic!("{reply:?}")
            };
            answers.push(serde_json::from_slice::<serde_json::Value>(&body).unwrap());
        }
        assert_eq!(
            answers[0]["result"]["content"][0]["text"], "{\"TEXT\":\"HI\"} upper",
            "{}",
            answers[0]
        );
        assert_eq!(answers[1]["result"]["isError"], true);
        assert_eq!(answers[1]["result"]["content"][0]["text"], "bad");
    }
}
