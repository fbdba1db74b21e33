//! `agentlog worker`: a worker process for an agent, running the demo handler or a command.

use std::net::SocketAddr;

use clap::Args;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::command::ExecHandler;
use super::output::Out;
use super::{CliError, CliResult, LogArgs, TopicArgs};
use crate::agents::demo_skills::demo_skills;
use agentlog::http::{serve, worker_metrics_router};
use agentlog::worker::{Handler, Worker, WorkerConfig};

const EXAMPLES: &str = "\
EXAMPLES:
  agentlog worker --log iggy://iggy:iggy@127.0.0.1:8090 --agent demo
      the built-in demo agent (echo, `sleep N`, `input`, `fail`, `reply TEXT`; skill `shout`)
  agentlog worker --log iggy://iggy:iggy@127.0.0.1:8090 --agent upper --exec 'tr a-z A-Z'
      each task runs `tr a-z A-Z` with the message on stdin; its stdout is the answer
  agentlog worker --agent wc --exec \"sh -c 'wc -w | tr -d \\\" \\\"'\"
      use `sh -c` for pipes and redirections
  agentlog worker --log iggy://iggy:iggy@127.0.0.1:8090 --tool upper --exec \"sh -c 'jq -r .text | tr a-z A-Z'\"
      answer MCP tool `upper` (served by `agentlog serve --tools FILE`): the call's arguments
      as JSON on stdin, stdout the result
  agentlog worker --log iggy://iggy:iggy@127.0.0.1:8090 --metrics-listen 127.0.0.1:9464
      also serve the log's metrics (agentlog_log_*) and the worker's queue lag
      (agentlog_worker_queue_lag_records) on http://127.0.0.1:9464/metrics

Workers of one agent share its tasks, so run as many as you like against a shared log
(iggy://). The embedded log (file://) is single-process: a worker can only share it with a
server in the same process, which is what `agentlog serve --demo` does.

With --exec, the command is split into words like a shell would (quotes, backslashes) but run
without a shell. A task completes with the command's trimmed stdout as its message and as the
artifact `output`; a non-zero exit fails the task with the command's stderr; canceling the task
kills the command. The command's environment has AGENTLOG_TASK_ID, AGENTLOG_ATTEMPT (1, or more
when the task's turn is run again after a worker died mid-run) and AGENTLOG_IDEMPOTENCY_KEY (the
same in every run of the turn): pass the key to whatever the command changes, so it happens once.
It also has AGENTLOG_HOPS, the task's bridge path as a JSON array (e.g. [\"a\"]): an
`agentlog send` the command runs reads it and carries the path on, so a call that would come
back to a bridge on it is refused (the hop guard) instead of looping. And TRACEPARENT and
TRACESTATE, the W3C trace context of the turn (empty when the call came without one): an
`agentlog send` the command runs sends them on, so its call is part of the same trace.
Stops on Ctrl-C or SIGTERM, finishing running tasks first (up to 10 s; the rest are released to
the other workers).";

/// Run a worker for an agent: take its tasks from the log and answer them.
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLES)]
pub(super) struct WorkerArgs {
    #[command(flatten)]
    log: LogArgs,

    #[command(flatten)]
    topics: TopicArgs,

    #[command(flatten)]
    signing: super::signing::WorkerSigningArgs,

    /// Run this command for each task instead of the demo handler.
    #[arg(long, value_name = "COMMAND")]
    exec: Option<String>,

    /// Serve MCP tool NAME with --exec: each call runs the command with the call's arguments
    /// (JSON) on stdin; its stdout answers (a JSON CallToolResult, or text), a non-zero exit
    /// is a tool error. The worker serves the tool's agent, `mcp.<NAME>` unless --agent names
    /// another (the tool definition's `agent`; for a tool that is a skill too, the A2A agent
    /// `serve` serves, whose messages for that skill it answers with the same command).
    #[arg(long, value_name = "NAME", requires = "exec")]
    tool: Option<String>,

    /// The most bytes of an --exec command's stdout taken as its answer (it is written to the
    /// log twice: as the artifact and the status message): a command that prints more is
    /// killed and its task fails, saying so. Its stderr is kept up to 64 KiB.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_OUTPUT)]
    max_output: usize,

    /// The most tasks handled at once.
    #[arg(long, value_name = "N", default_value_t = 64)]
    concurrency: usize,

    /// How long this worker's claim on a running task holds without a renewal (it renews
    /// every third of it): if the worker dies, another takes its tasks over this long after
    /// its last renewal. Shorter means faster takeovers; longer tolerates longer stalls.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = super::parse_duration)]
    lease: std::time::Duration,

    /// Serve the log's metrics (OpenMetrics: operations by outcome, durations, records and
    /// bytes; `agentlog_log_*`) and how far behind its queue the worker is
    /// (`agentlog_worker_queue_lag_records`) on GET http://ADDR/metrics; port 0 picks a free
    /// port (the printed line shows it). Default: no metrics endpoint.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
}

/// `agentlog worker`.
pub(super) async fn run(args: WorkerArgs, out: &Out) -> CliResult {
    match &args.exec {
        Some(command) if args.tool.is_some() => {
            let tool = args.tool.clone().unwrap_or_default();
            agentlog_wire::mcp::validate_tool_name(&tool)
                .map_err(|e| CliError::msg(format!("bad --tool: {e}")))?;
            let exec = ExecHandler {
                argv: split_command(command)?,
                max_output: args.max_output,
            };
            let what = format!("tool {tool}: exec {command}");
            let tools = agentlog::worker::Tools::new().tool(
                tool.clone(),
                super::exec::ToolExec {
                    tool: tool.clone(),
                    exec,
                },
            );
            // A tool that is a skill of its agent too (`"skill"` in the definitions) is
            // answered over A2A by the same command.
            let handler = agentlog::worker::Skills::new().tools(tools);
            work(&args, out, &what, handler).await
        }
        Some(command) => {
            let argv = split_command(command)?;
            let what = format!("exec {command}");
            let handler = ExecHandler {
                argv,
                max_output: args.max_output,
            };
            work(&args, out, &what, handler).await
        }
        None => work(&args, out, "demo", demo_skills()).await,
    }
}

async fn work(args: &WorkerArgs, out: &Out, what: &str, handler: impl Handler) -> CliResult {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::msg(format!("cannot read the current directory: {e}")))?;
    let url = args
        .topics
        .apply(&super::resolve_log_url(&args.log.log, &cwd)?)?;
    let metrics_listener = match args.metrics_listen {
        Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| {
            CliError::msg(format!("cannot listen on {addr} (--metrics-listen): {e}"))
        })?),
        None => None,
    };
    let signer = args.signing.record_signer()?;
    let verifier = args.signing.verifier()?;
    let (log, log_metrics) = super::open_counted_log(&url).await?;
    // A tool's worker serves the tool's agent unless --agent names one.
    let agent = match &args.tool {
        Some(tool) if args.log.agent == super::DEFAULT_AGENT => format!("mcp.{tool}"),
        _ => args.log.agent.clone(),
    };
    let mut config = WorkerConfig::new(&agent);
    config.concurrency = args.concurrency.max(1);
    config.lease = args.lease;
    config.signer = signer;
    config.trust = verifier.clone();
    let worker = Worker::start(log.clone(), config, handler).await?;
    let stop = CancellationToken::new();
    let mut metrics_at = String::new();
    let metrics_server = match metrics_listener {
        Some(listener) => {
            let local = listener.local_addr().map_err(|e| {
                CliError::msg(format!("cannot read the metrics listening address: {e}"))
            })?;
            metrics_at = format!("; metrics: http://{local}/metrics");
            Some(tokio::spawn(serve(
                listener,
                worker_metrics_router(log_metrics, verifier, worker.backlog()),
                stop.clone().cancelled_owned(),
            )))
        }
        None => None,
    };
    let signal = super::shutdown_signal();
    out.line(&format!(
        "agentlog worker for agent {:?} (log: {}; handler: {what}{metrics_at})",
        agent,
        super::display_log_url(&url)
    ));
    signal.await;
    super::output::note("agentlog: shutting down (finishing running tasks)");
    let stopped = worker.shutdown().await;
    let closed = log.close().await;
    // The metrics endpoint stays up until the log is closed, so a last scrape sees it all.
    stop.cancel();
    if let Some(server) = metrics_server
        && let Ok(Err(e)) = server.await
    {
        super::output::note(&format!("agentlog: the metrics endpoint failed: {e}"));
    }
    stopped?;
    closed?;
    Ok(())
}

/// `--max-output`'s default: 4 MiB.
const DEFAULT_MAX_OUTPUT: usize = 4 << 20;

/// Split a command line into words as a POSIX shell would for a simple command: whitespace
/// separates, single quotes keep everything, double quotes keep all but `\"` and `\\`, and a
/// backslash outside quotes escapes the next character. No expansion of any kind.
fn split_command(line: &str) -> CliResult<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(unclosed(line, "'")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(unclosed(line, "\"")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(unclosed(line, "\"")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(CliError::msg("--exec needs a command"));
    }
    Ok(words)
}

fn unclosed(line: &str, quote: &str) -> CliError {
    CliError::msg(format!("--exec {line:?}: unclosed {quote}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentlog::bridge::{Bridge, BridgeConfig};
    use agentlog::{Caller, log::embedded::EmbeddedLog};
    use agentlog_wire::TaskState;
    use agentlog_wire::a2a::{
        CancelTaskRequest, GetTaskRequest, Message, SendMessageConfiguration, SendMessageRequest,
        SendMessageResponse, Task,
    };
    use std::time::Duration;

    struct Setup {
        bridge: Bridge,
        worker: Worker,
    }

    async fn setup(command: &str) -> Setup {
        setup_with(command, DEFAULT_MAX_OUTPUT).await
    }

    async fn setup_with(command: &str, max_output: usize) -> Setup {
        let log = agentlog::log::Log::new(EmbeddedLog::in_memory());
        let bridge = Bridge::open(log.clone(), BridgeConfig::new("exec"))
            .await
            .unwrap();
        let mut config = WorkerConfig::new("exec");
        config.view = Some(bridge.view().clone());
        let handler = ExecHandler {
            argv: split_command(command).unwrap(),
            max_output,
        };
        let worker = Worker::start(log, config, handler).await.unwrap();
        Setup { bridge, worker }
    }

    async fn send(bridge: &Bridge, text: &str, immediately: bool) -> Task {
        let request = SendMessageRequest {
            tenant: None,
            message: Message::user_text(uuid::Uuid::new_v4().to_string(), text),
            configuration: Some(SendMessageConfiguration {
                return_immediately: immediately,
                ..SendMessageConfiguration::default()
            }),
            metadata: None,
        };
        match bridge
            .send_message(&Caller::anonymous(), request)
            .await
            .unwrap()
        {
            SendMessageResponse::Task(task) => task,
            SendMessageResponse::Message(m) => panic!("a message: {m:?}"),
        }
    }

    fn status_text(task: &Task) -> String {
        crate::cli::output::parts_text(&task.status.message.as_ref().unwrap().parts)
    }

    #[tokio::test]
    async fn stdout_completes_the_task_and_is_its_artifact() {
        let s = setup("tr a-z A-Z").await;
        let task = send(&s.bridge, "hello", false).await;
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(status_text(&task), "HELLO");
        assert_eq!(task.artifacts[0].artifact_id, "output");
        s.worker.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn the_command_gets_the_tasks_bridge_path() {
        let s = setup("sh -c 'printf %s \"$AGENTLOG_HOPS\"'").await;
        let task = send(&s.bridge, "x", false).await;
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(status_text(&task), r#"["exec"]"#);
        s.worker.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn the_command_gets_the_turns_span_as_its_trace_parent() {
        let s = setup("sh -c 'printf %s \"$TRACEPARENT|$TRACESTATE\"'").await;
        // Untraced: empty, whatever the worker's own environment holds.
        let task = send(&s.bridge, "x", false).await;
        assert_eq!(status_text(&task), "|");
        let call = agentlog_wire::trace::TraceContext::parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("a=1"),
        )
        .unwrap();
        let traced =
            agentlog::bridge::trace::traced(Some(call.clone()), send(&s.bridge, "y", false));
        let text = status_text(&traced.await);
        let (parent, state) = text.split_once('|').unwrap();
        let span = agentlog_wire::trace::TraceContext::parse(parent, Some(state)).unwrap();
        assert_eq!(span.trace_id(), call.trace_id());
        assert_ne!(span.parent_id(), call.parent_id());
        assert_eq!(span.tracestate(), "a=1");
        s.worker.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn a_failing_command_fails_the_task_with_its_stderr() {
        let s = setup("sh -c 'echo broken >&2; exit 3'").await;
        let task = send(&s.bridge, "x", false).await;
        assert_eq!(task.status.state, TaskState::Failed);
        assert_eq!(status_text(&task), "broken");
        let s2 = setup("/nonexistent/program").await;
        let task = send(&s2.bridge, "x", false).await;
        assert_eq!(task.status.state, TaskState::Failed);
        assert!(status_text(&task).starts_with("cannot run /nonexistent/program"));
        s.worker.shutdown().await.unwrap();
        s2.worker.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn output_past_the_limit_stops_the_command_and_fails_the_task() {
        // Endless output: only the limit ends it.
        let s = setup_with("yes", 1000).await;
        let task = send(&s.bridge, "x", false).await;
        assert_eq!(task.status.state, TaskState::Failed);
        assert_eq!(
            status_text(&task),
            "yes printed more than 1000 bytes (--max-output); it was stopped"
        );
        // At the limit exactly: the answer. Endless stderr is read and dropped past 64 KiB.
        let s2 = setup_with("sh -c 'head -c 1000 /dev/zero | tr \\0 a'", 1000).await;
        let task = send(&s2.bridge, "x", false).await;
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(status_text(&task).len(), 1000);
        let s3 = setup_with("sh -c 'head -c 1000000 /dev/zero >&2; exit 1'", 1000).await;
        let task = send(&s3.bridge, "x", false).await;
        assert_eq!(task.status.state, TaskState::Failed);
        s.worker.shutdown().await.unwrap();
        s2.worker.shutdown().await.unwrap();
        s3.worker.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn canceling_the_task_kills_the_command() {
        let s = setup("sleep 600").await;
        let task = send(&s.bridge, "x", true).await;
        let caller = Caller::anonymous();
        let get = GetTaskRequest {
            tenant: None,
            id: task.id.clone(),
            history_length: None,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while s
            .bridge
            .get_task(&caller, get.clone())
            .await
            .unwrap()
            .status
            .state
            != TaskState::Working
        {
            assert!(tokio::time::Instant::now() < deadline, "never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let cancel = CancelTaskRequest {
            tenant: None,
            id: task.id.clone(),
            metadata: None,
        };
        let canceled = s.bridge.cancel_task(&caller, cancel).await.unwrap();
        assert_eq!(canceled.status.state, TaskState::Canceled);
        // Shutdown waits for the handler: it returns only because the child was killed.
        tokio::time::timeout(Duration::from_secs(5), s.worker.shutdown())
            .await
            .unwrap()
            .unwrap();
    }

    #[test]
    fn commands_split_like_a_shell() {
        let split = |s: &str| split_command(s).unwrap();
        assert_eq!(split("tr a-z A-Z"), vec!["tr", "a-z", "A-Z"]);
        assert_eq!(
            split(r#"sh -c 'wc -w | tr -d " "'"#),
            vec!["sh", "-c", r#"wc -w | tr -d " ""#]
        );
        assert_eq!(
            split(r#"echo "a \"b\" \n" c\ d ''"#),
            vec!["echo", r#"a "b" \n"#, "c d", ""]
        );
        assert!(split_command("  ").is_err());
        assert!(split_command("echo 'x").is_err());
        assert!(split_command("echo \"x").is_err());
    }
}
