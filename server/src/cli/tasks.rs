//! The client subcommands: `send`, `get`, `cancel` and `list`, against any A2A 1.0 agent.

use std::io::Read;

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, Message,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse, Task,
};
use clap::Args;
use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::client::A2aClient;
use super::output::{Out, artifact_name, parts_text};
use super::{CliError, CliResult};

const SEND_EXAMPLES: &str = "\
EXAMPLES:
  agentlog send http://127.0.0.1:8080 hello
      wait for the answer: prints the task id, its state and its artifacts
  agentlog send --stream http://127.0.0.1:8080 sleep 3
      print the task's events as they happen
  agentlog send http://127.0.0.1:8080 input
  agentlog send http://127.0.0.1:8080 --task <TASK_ID> parrot
      answer a task that asked for input
  agentlog send --no-wait http://127.0.0.1:8080 sleep 30
      return at once; follow up with `agentlog get`
  echo 'long text' | agentlog send http://127.0.0.1:8080 -
  agentlog send --json http://127.0.0.1:8080 hello | jq -r .task.id

Run by an `agentlog worker --exec` command, it carries the task's bridge path (AGENTLOG_HOPS)
in the message metadata (agentlog.hops): a call back to an agent already on the path is refused
(error -32600, loop_detected) instead of looping.

The exit status is 0 whenever the agent answered, whatever state the task ended in; a
JSON-RPC error (e.g. `error: Task not found: abc (-32001)`) or an unreachable agent exits 1.";

const GET_EXAMPLES: &str = "\
EXAMPLES:
  agentlog get http://127.0.0.1:8080 <TASK_ID>
  agentlog get --history 2 http://127.0.0.1:8080 <TASK_ID>
      only the 2 newest messages of the task's history
  agentlog get --json http://127.0.0.1:8080 <TASK_ID> | jq .status.state";

const CANCEL_EXAMPLES: &str = "\
EXAMPLES:
  agentlog send --no-wait http://127.0.0.1:8080 sleep 30
  agentlog cancel http://127.0.0.1:8080 <TASK_ID>

Canceling a task that already ended fails with `Task cannot be canceled (-32002)`.";

const LIST_EXAMPLES: &str = "\
EXAMPLES:
  agentlog list http://127.0.0.1:8080
  agentlog list --state input-required http://127.0.0.1:8080
  agentlog list --context <CONTEXT_ID> --page-size 10 http://127.0.0.1:8080
  agentlog list --page-token <TOKEN> http://127.0.0.1:8080
      the next page, as printed at the end of the previous one

Tasks come newest status first. --state takes completed, failed, canceled, rejected, working,
submitted, input-required, auth-required (or the TASK_STATE_… names).";

/// `--token`, shared by the commands that call an agent.
#[derive(Debug, Clone, Args)]
pub(super) struct TokenArg {
    /// A bearer token for an agent that requires authentication (or set AGENTLOG_TOKEN).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "AGENTLOG_TOKEN",
        hide_env_values = true
    )]
    pub(super) token: Option<String>,
}

/// Send a message to an agent and print the task it creates or continues.
///
/// URL is the agent's base URL: its card is read from URL/.well-known/agent-card.json and the
/// card's first JSONRPC 1.0 interface is used. Without a card there, URL itself is taken as
/// the JSON-RPC endpoint.
#[derive(Debug, Args)]
#[command(after_long_help = SEND_EXAMPLES)]
pub(super) struct SendArgs {
    /// The agent's URL.
    url: String,

    #[command(flatten)]
    token: TokenArg,

    /// The message text (several words are joined with spaces; `-` reads standard input).
    #[arg(required = true, num_args = 1.., value_name = "TEXT")]
    text: Vec<String>,

    /// Print the task's events as they arrive (SendStreamingMessage).
    #[arg(long, conflicts_with = "no_wait")]
    stream: bool,

    /// Continue this task (answer a task that asked for input).
    #[arg(long, value_name = "TASK_ID")]
    task: Option<String>,

    /// Put the message in this context (conversation).
    #[arg(long, value_name = "CONTEXT_ID")]
    context: Option<String>,

    /// Return as soon as the task is created instead of waiting for it to finish or ask for
    /// input.
    #[arg(long)]
    no_wait: bool,

    /// Print the JSON-RPC result instead (with --stream: one JSON line per event).
    #[arg(long)]
    json: bool,
}

/// Print a task: its state, status message, artifacts and history.
#[derive(Debug, Args)]
#[command(after_long_help = GET_EXAMPLES)]
pub(super) struct GetArgs {
    /// The agent's URL.
    url: String,

    #[command(flatten)]
    token: TokenArg,

    /// The task's id.
    task_id: String,

    /// Only the N newest messages of the task's history (0: none). Default: all.
    #[arg(long, value_name = "N")]
    history: Option<i32>,

    /// Print the JSON-RPC result instead.
    #[arg(long)]
    json: bool,
}

/// Cancel a task and print it.
#[derive(Debug, Args)]
#[command(after_long_help = CANCEL_EXAMPLES)]
pub(super) struct CancelArgs {
    /// The agent's URL.
    url: String,

    #[command(flatten)]
    token: TokenArg,

    /// The task's id.
    task_id: String,

    /// Print the JSON-RPC result instead.
    #[arg(long)]
    json: bool,
}

/// List your tasks at an agent, newest first.
#[derive(Debug, Args)]
#[command(after_long_help = LIST_EXAMPLES)]
pub(super) struct ListArgs {
    /// The agent's URL.
    url: String,

    #[command(flatten)]
    token: TokenArg,

    /// Only tasks of this context.
    #[arg(long, value_name = "CONTEXT_ID")]
    context: Option<String>,

    /// Only tasks in this state.
    #[arg(long, value_name = "STATE", value_parser = parse_state)]
    state: Option<TaskState>,

    /// Tasks per page, 1 to 100 (the agent's default is 50).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(1..=100))]
    page_size: Option<i32>,

    /// The page after the one that printed this token.
    #[arg(long, value_name = "TOKEN")]
    page_token: Option<String>,

    /// Print the JSON-RPC result instead.
    #[arg(long)]
    json: bool,
}

fn parse_state(value: &str) -> Result<TaskState, String> {
    value
        .parse::<TaskState>()
        .ok()
        .filter(|s| *s != TaskState::Unspecified)
        .ok_or_else(|| {
            "expected completed, failed, canceled, rejected, working, submitted, \
             input-required or auth-required"
                .to_owned()
        })
}

/// The bridge path in `AGENTLOG_HOPS` (set by `agentlog worker --exec` for its command), to
/// carry on the message sent; empty when unset or empty.
fn hops_from_env() -> CliResult<Vec<String>> {
    let Some(text) = std::env::var_os(agentlog::hops::HOPS_ENV) else {
        return Ok(Vec::new());
    };
    let text = text.to_string_lossy();
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .as_ref()
        .and_then(agentlog::hops::parse_path)
        .ok_or_else(|| {
            CliError::msg(format!(
                "{} must be a JSON array of bridge ids (as `agentlog worker --exec` sets it), not {text}",
                agentlog::hops::HOPS_ENV
            ))
        })
}

/// `agentlog send`.
pub(super) async fn send(args: SendArgs, out: &Out) -> CliResult {
    let text = message_text(&args.text)?;
    // A command run by `agentlog worker --exec` has its turn's span in TRACEPARENT.
    let client = A2aClient::discover(&args.url)
        .await?
        .with_token(args.token.token.as_deref())?
        .with_trace(super::trace_env::from_env());
    let mut message = Message::user_text(uuid::Uuid::new_v4().to_string(), text);
    message.task_id = args.task.clone();
    message.context_id = args.context.clone();
    agentlog::hops::stamp(&mut message, &hops_from_env()?);
    let request = SendMessageRequest {
        tenant: client.tenant().map(str::to_owned),
        message,
        configuration: args.no_wait.then(|| SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    };
    let params = to_params(&request)?;
    if args.stream {
        return send_streaming(&client, &params, &args, out).await;
    }
    let spinner = (!args.no_wait).then(|| out.spinner("waiting for the agent…"));
    let result = client.call("SendMessage", &params).await;
    drop(spinner);
    let result = result?;
    if args.json {
        out.line(&pretty(&result));
        return Ok(());
    }
    match from_result::<SendMessageResponse>(result, "SendMessageResponse")? {
        SendMessageResponse::Task(task) => {
            out.task(&task, false);
            next_step_hint(out, &args.url, &task.id, task.status.state);
        }
        SendMessageResponse::Message(message) => out.field("reply", &out.message_line(&message)),
    }
    Ok(())
}

async fn send_streaming(
    client: &A2aClient,
    params: &Value,
    args: &SendArgs,
    out: &Out,
) -> CliResult {
    let mut events = client.stream("SendStreamingMessage", params).await?;
    let mut printer = EventPrinter::default();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(err) => {
                printer.close_line(out);
                return Err(err);
            }
        };
        if args.json {
            out.line(&event.to_string());
            continue;
        }
        let event = from_result::<StreamResponse>(event, "StreamResponse")?;
        printer.print(out, &event);
    }
    printer.close_line(out);
    if let (Some(task_id), Some(state)) = (&printer.task_id, printer.state) {
        next_step_hint(out, &args.url, task_id, state);
    }
    Ok(())
}

/// Prints stream events live; artifact chunks are written as they come, on one line per
/// artifact.
#[derive(Debug, Default)]
struct EventPrinter {
    /// The artifact whose line is open (chunks still coming).
    open_artifact: Option<String>,
    task_id: Option<String>,
    state: Option<TaskState>,
}

impl EventPrinter {
    fn print(&mut self, out: &Out, event: &StreamResponse) {
        match event {
            StreamResponse::ArtifactUpdate(update) => {
                let artifact = &update.artifact;
                let continues = update.append
                    && self.open_artifact.as_deref() == Some(artifact.artifact_id.as_str());
                if !continues {
                    self.close_line(out);
                    out.raw(&format!(
                        "{}{}{}: ",
                        out.dim("artifact"),
                        " ",
                        out.cyan(artifact_name(artifact))
                    ));
                }
                out.raw(&parts_text(&artifact.parts));
                if update.last_chunk {
                    out.raw("\n");
                    self.open_artifact = None;
                } else {
                    self.open_artifact = Some(artifact.artifact_id.clone());
                }
            }
            StreamResponse::Task(task) => {
                self.close_line(out);
                self.task_id = Some(task.id.clone());
                self.state = Some(task.status.state);
                out.field("task", &out.bold(&task.id));
                if !task.context_id.is_empty() {
                    out.field("context", &task.context_id);
                }
                out.field("state", &status_text(out, task));
            }
            StreamResponse::StatusUpdate(update) => {
                self.close_line(out);
                self.state = Some(update.status.state);
                let mut line = out.state(update.status.state);
                if let Some(message) = &update.status.message {
                    line.push_str(": ");
                    line.push_str(&parts_text(&message.parts));
                }
                out.field("state", &line);
            }
            StreamResponse::Message(message) => {
                self.close_line(out);
                out.field("reply", &out.message_line(message));
            }
        }
    }

    /// End an artifact line that is still open.
    fn close_line(&mut self, out: &Out) {
        if self.open_artifact.take().is_some() {
            out.raw("\n");
        }
    }
}

fn status_text(out: &Out, task: &Task) -> String {
    let mut line = out.state(task.status.state);
    if let Some(message) = &task.status.message {
        line.push_str(": ");
        line.push_str(&parts_text(&message.parts));
    }
    line
}

/// Tell a person what to run next when the task waits for them or is still running.
fn next_step_hint(out: &Out, url: &str, task_id: &str, state: TaskState) {
    if state.is_interrupted() {
        out.hint(&format!(
            "answer with: agentlog send {url} --task {task_id} '<your answer>'"
        ));
    } else if !state.is_terminal() {
        out.hint(&format!("follow it with: agentlog get {url} {task_id}"));
    }
}

/// `agentlog get`.
pub(super) async fn get(args: GetArgs, out: &Out) -> CliResult {
    let client = A2aClient::discover(&args.url)
        .await?
        .with_token(args.token.token.as_deref())?
        .with_trace(super::trace_env::from_env());
    let request = GetTaskRequest {
        tenant: client.tenant().map(str::to_owned),
        id: args.task_id,
        history_length: args.history,
    };
    let result = client.call("GetTask", &to_params(&request)?).await?;
    print_task(out, result, args.json, true)
}

/// `agentlog cancel`.
pub(super) async fn cancel(args: CancelArgs, out: &Out) -> CliResult {
    let client = A2aClient::discover(&args.url)
        .await?
        .with_token(args.token.token.as_deref())?
        .with_trace(super::trace_env::from_env());
    let request = CancelTaskRequest {
        tenant: client.tenant().map(str::to_owned),
        id: args.task_id,
        metadata: None,
    };
    let result = client.call("CancelTask", &to_params(&request)?).await?;
    print_task(out, result, args.json, false)
}

fn print_task(out: &Out, result: Value, json: bool, history: bool) -> CliResult {
    if json {
        out.line(&pretty(&result));
    } else {
        out.task(&from_result::<Task>(result, "Task")?, history);
    }
    Ok(())
}

/// `agentlog list`.
pub(super) async fn list(args: ListArgs, out: &Out) -> CliResult {
    let client = A2aClient::discover(&args.url)
        .await?
        .with_token(args.token.token.as_deref())?
        .with_trace(super::trace_env::from_env());
    let request = ListTasksRequest {
        tenant: client.tenant().map(str::to_owned),
        context_id: args.context,
        status: args.state,
        page_size: args.page_size,
        page_token: args.page_token,
        ..ListTasksRequest::default()
    };
    let result = client.call("ListTasks", &to_params(&request)?).await?;
    if args.json {
        out.line(&pretty(&result));
        return Ok(());
    }
    let page = from_result::<ListTasksResponse>(result, "ListTasksResponse")?;
    if page.tasks.is_empty() {
        out.line(&out.dim("no tasks"));
        return Ok(());
    }
    let id_width = page
        .tasks
        .iter()
        .map(|t| t.id.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    out.line(&out.dim(&format!(
        "{:<id_width$}  {:<14}  {:<24}  CONTEXT",
        "TASK", "STATE", "UPDATED"
    )));
    for task in &page.tasks {
        let state = task.status.state.as_v03_str();
        let pad = " ".repeat(14usize.saturating_sub(state.len()));
        out.line(&format!(
            "{:<id_width$}  {}{pad}  {:<24}  {}",
            task.id,
            out.state(task.status.state),
            task.status.timestamp.as_deref().unwrap_or("-"),
            task.context_id
        ));
    }
    let mut footer = format!("{} of {} tasks", page.tasks.len(), page.total_size);
    if !page.next_page_token.is_empty() {
        footer.push_str(&format!(
            "; next page: agentlog list {} --page-token {}",
            args.url, page.next_page_token
        ));
    }
    out.line(&out.dim(&footer));
    Ok(())
}

/// The message text from the TEXT arguments; `-` alone reads standard input.
fn message_text(words: &[String]) -> CliResult<String> {
    if let [only] = words
        && only == "-"
    {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::msg(format!("cannot read standard input: {e}")))?;
        return Ok(text.trim_end_matches(['\n', '\r']).to_owned());
    }
    Ok(words.join(" "))
}

fn to_params<T: Serialize>(request: &T) -> CliResult<Value> {
    serde_json::to_value(request)
        .map_err(|e| CliError::msg(format!("cannot encode the request: {e}")))
}

fn from_result<T: DeserializeOwned>(result: Value, what: &str) -> CliResult<T> {
    serde_json::from_value(result)
        .map_err(|e| CliError::msg(format!("the agent answered with a bad {what}: {e}")))
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn states_parse_by_either_name() {
        assert_eq!(parse_state("completed"), Ok(TaskState::Completed));
        assert_eq!(
            parse_state("TASK_STATE_INPUT_REQUIRED"),
            Ok(TaskState::InputRequired)
        );
        assert!(parse_state("done").is_err());
        assert!(parse_state("unknown").is_err());
    }

    #[test]
    fn words_are_joined() {
        let words = vec!["sleep".to_owned(), "3".to_owned()];
        assert_eq!(message_text(&words).unwrap(), "sleep 3");
    }
}
