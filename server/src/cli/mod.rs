//! The `agentlog` command: serve an agent over HTTP, run workers, talk to any A2A agent, and read
//! an agent's log.
//!
//! [`main`] is the whole program (the binary only calls it). Each subcommand lives in its own
//! module; the A2A client the client subcommands share is in `client`, terminal output (colour,
//! spinner, how tasks and records are printed) in `output`. The rules are written in
//! `skills/cli/SKILL.md`.

mod card;
mod client;
mod command;
mod diagnostics;
mod exec;
mod keygen;
#[cfg(feature = "otel")]
mod otel;
mod output;
mod pusher;
mod serve;
mod serve_args;
mod serve_auth;
mod serve_card;
mod serve_console;
mod serve_grpc;
mod serve_mcp;
mod serve_members;
mod serve_peers;
mod serve_push;
mod signing;
mod tail;
mod tasks;
mod token;
mod trace_env;
mod worker;

use std::fmt;
use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use agentlog::retention::parse_duration;

/// The default `--log` of `serve`, `worker` and `tail`: the embedded durable log in
/// `./agentlog-data` (resolved against the current directory).
pub const DEFAULT_LOG: &str = "file://./agentlog-data";

/// The default `--agent`.
pub const DEFAULT_AGENT: &str = "demo";

const AFTER_HELP: &str = "\
EXAMPLES:
  # an agent with the built-in demo worker, its log in ./agentlog-data
  agentlog serve --demo

  # talk to it (or to any A2A 1.0 agent)
  agentlog send http://127.0.0.1:8080 hello
  agentlog send --stream http://127.0.0.1:8080 'sleep 3'
  agentlog list http://127.0.0.1:8080
  agentlog card http://127.0.0.1:8080 --verify card.key.pub   # its card, signature checked

  # read what the agent's log holds (stop the server first: the embedded log is single-process)
  agentlog tail --log file://./agentlog-data --agent demo

Run `agentlog <command> --help` for a command's options and examples.";

/// agentlog: A2A agents on a durable log.
///
/// `serve` answers A2A JSON-RPC over HTTP and writes every call to the log; workers (the
/// built-in demo, `agentlog worker`, or your own code with the SDK) answer from the log.
/// `send`, `get`, `cancel` and `list` talk to any A2A 1.0 agent over HTTP; `card` prints an
/// agent's card and checks its signatures.
#[derive(Debug, Parser)]
#[command(name = "agentlog", version, after_long_help = AFTER_HELP)]
pub struct Cli {
    /// When to colour the output: auto (when stdout is a terminal and NO_COLOR is unset),
    /// always or never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,

    /// How diagnostics (warnings, and what `RUST_LOG` asks for; default `warn,agentlog=info`)
    /// are written to stderr: text for people, or one JSON object per line for machines.
    #[arg(long, global = true, value_enum, default_value_t = diagnostics::LogFormat::Text)]
    log_format: diagnostics::LogFormat,

    /// Threads of the runtime that serves requests, runs workers and drives the log (default:
    /// one per core this process may run on). Fewer than the cores suits a machine shared with
    /// other busy processes: threads that outnumber the free cores are preempted and wait on
    /// each other (see tests/benches/README.md, "Runtime threads").
    #[arg(long, global = true, env = "AGENTLOG_THREADS", value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,

    #[command(subcommand)]
    command: Command,
}

/// When to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ColorChoice {
    // When stdout is a terminal and `NO_COLOR` is unset. (Plain comments: doc comments would
    // make clap print a paragraph per value in every subcommand's --help.)
    Auto,
    Always,
    Never,
}

// Parsed once per process: the size of `serve`'s arguments costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    Serve(serve_args::ServeArgs),
    Worker(worker::WorkerArgs),
    Pusher(pusher::PusherArgs),
    Send(tasks::SendArgs),
    Get(tasks::GetArgs),
    Cancel(tasks::CancelArgs),
    List(tasks::ListArgs),
    Tail(tail::TailArgs),
    Keygen(keygen::KeygenArgs),
    Token(token::TokenArgs),
    Card(card::CardArgs),
}

/// `--log` and `--agent`, shared by the commands that open the log.
#[derive(Debug, Clone, Args)]
struct LogArgs {
    /// The log: file:///dir or file://./relative/dir (embedded, durable; a plain path works
    /// too), memory:// (embedded, in memory, gone on exit) or iggy://user:pass@host:port
    /// (Apache Iggy).
    #[arg(long, value_name = "URL", default_value = DEFAULT_LOG)]
    log: String,

    /// The agent's name: its topics are `agentlog/<agent>.events` and `.commands`.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_AGENT)]
    agent: String,
}

/// `--retention` and `--partitions`, shared by the commands that create topics or tasks
/// (`serve`, `worker`): both go into the log URL.
#[derive(Debug, Clone, Args)]
struct TopicArgs {
    /// How long a finished task stays answerable (GetTask, ListTasks, a retried send): 7d
    /// unless the log URL says (`?retention=`); `0` keeps tasks forever. Running and
    /// input-required tasks are never expired. The log deletes what only expired tasks
    /// needed, and Iggy topics expire messages after twice this. A task keeps the retention
    /// it was created with.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    retention: Option<std::time::Duration>,

    /// Partitions of the agent's topics (1 to 1000), the unit bridges and workers share work
    /// by: new topics get N (4 unless this or the log URL's `?partitions=` says), and an
    /// existing topic with another count is refused, since the count cannot change later.
    /// Without it an existing topic keeps its count. For a deployment that may grow past a
    /// few replicas pick 64 or so (docs/operations.md, "Partitions": on Iggy many cost the server).
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(agentlog::log::MAX_PARTITIONS)))]
    partitions: Option<u32>,
}

impl TopicArgs {
    /// `url` with the retention and the partition count in it (`retention=<ms>ms`,
    /// `partitions=N`), those given that the URL has not; a URL that says otherwise is
    /// refused.
    fn apply(&self, url: &str) -> CliResult<String> {
        let url = match self.retention {
            None => url.to_owned(),
            Some(retention) => {
                let ms = agentlog::retention::millis(retention);
                with_option(url, "retention", &format!("{ms}ms"), |given| {
                    parse_duration(given).is_ok_and(|d| d == retention)
                })
                .map_err(|given| {
                    CliError::msg(format!(
                        "--retention {ms}ms contradicts the log URL's retention={given}; give one of them"
                    ))
                })?
            }
        };
        match self.partitions {
            None => Ok(url),
            Some(n) => with_option(&url, "partitions", &n.to_string(), |given| {
                given.parse::<u32>().is_ok_and(|given| given == n)
            })
            .map_err(|given| {
                CliError::msg(format!(
                    "--partitions {n} contradicts the log URL's partitions={given}; give one of them"
                ))
            }),
        }
    }
}

/// `url` with `key=value` added unless it has `key` already: then `url` itself if `same`
/// says its value means the same, else `Err` with that value.
fn with_option(
    url: &str,
    key: &str,
    value: &str,
    same: impl Fn(&str) -> bool,
) -> Result<String, String> {
    let given = url::Url::parse(url).ok().and_then(|parsed| {
        parsed
            .query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, value)| value.into_owned())
    });
    match given {
        None => {
            let separator = if url.contains('?') { '&' } else { '?' };
            Ok(format!("{url}{separator}{key}={value}"))
        }
        Some(given) if same(&given) => Ok(url.to_owned()),
        Some(given) => Err(given),
    }
}

/// Why a command failed: printed as one `error: …` line on stderr, exit status 1.
#[derive(Debug)]
pub enum CliError {
    /// The agent answered with a JSON-RPC error.
    Rpc {
        /// The JSON-RPC error code, e.g. -32001.
        code: i64,
        /// The error's message.
        message: String,
    },
    /// Anything else.
    Other(String),
}

impl CliError {
    /// An error with a message.
    pub fn msg(message: impl Into<String>) -> Self {
        CliError::Other(message.into())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Rpc { code, message } => write!(f, "{message} ({code})"),
            CliError::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for CliError {}

impl From<agentlog::Error> for CliError {
    fn from(err: agentlog::Error) -> Self {
        CliError::Other(err.report().to_string())
    }
}

/// The result of a subcommand.
type CliResult<T = ()> = std::result::Result<T, CliError>;

/// Run the `agentlog` command with the process's arguments and return its exit status:
/// 0 on success, 1 on failure (after one `error: …` line on stderr), 2 on a usage error.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // --help and --version are "errors" that print to stdout and exit 0.
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
        }
    };
    diagnostics::install(cli.log_format, cli.color);
    // Spans are exported by the programs that do the work and the client calls, when the
    // OTEL_* variables ask.
    #[cfg(feature = "otel")]
    let export = match &cli.command {
        Command::Serve(_) => Some("serve"),
        Command::Worker(_) => Some("worker"),
        Command::Pusher(_) => Some("pusher"),
        // A client's calls are spans too: the parent of what the agent does for them.
        Command::Send(_) => Some("send"),
        Command::Get(_) => Some("get"),
        Command::Cancel(_) => Some("cancel"),
        Command::List(_) => Some("list"),
        _ => None,
    }
    .map(otel::start)
    .transpose();
    #[cfg(feature = "otel")]
    let export = match export {
        Ok(export) => export,
        Err(err) => return fail(&err),
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = cli.threads {
        builder.worker_threads(usize::from(threads));
    }
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return fail(&CliError::msg(format!("cannot start the runtime: {err}"))),
    };
    let ran = runtime.block_on(run(cli));
    drop(runtime);
    #[cfg(feature = "otel")]
    if let Some(export) = export {
        otel::finish(export);
    }
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(&err),
    }
}

fn fail(err: &CliError) -> ExitCode {
    let line = err.to_string().replace(['\n', '\r'], " ");
    if diagnostics::json() {
        tracing::error!(target: "agentlog::cli", "{line}");
    } else {
        output::note(&format!("error: {line}"));
    }
    ExitCode::FAILURE
}

async fn run(cli: Cli) -> CliResult {
    let out = output::Out::new(cli.color);
    match cli.command {
        Command::Serve(args) => serve::run(args, &out).await,
        Command::Worker(args) => worker::run(args, &out).await,
        Command::Pusher(args) => pusher::run(args, &out).await,
        Command::Send(args) => tasks::send(args, &out).await,
        Command::Get(args) => tasks::get(args, &out).await,
        Command::Cancel(args) => tasks::cancel(args, &out).await,
        Command::List(args) => tasks::list(args, &out).await,
        Command::Tail(args) => tail::run(args, &out).await,
        Command::Keygen(args) => keygen::run(args, &out),
        Command::Token(args) => token::run(args, &out),
        Command::Card(args) => card::run(args, &out).await,
    }
}

/// A `--log` value as a URL [`agentlog::log::open`] accepts: a relative `file://` URL
/// (`file://./data`, `file://data`) or a plain path is resolved against `cwd`.
fn resolve_log_url(value: &str, cwd: &Path) -> CliResult<String> {
    let value = value.trim();
    let (path, query) = if let Some(rest) = value.strip_prefix("file://") {
        if rest.starts_with('/') {
            return Ok(value.to_owned());
        }
        match rest.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (rest, None),
        }
    } else if value.contains("://") {
        return Ok(value.to_owned());
    } else {
        (value, None)
    };
    // A scheme's name alone (`memory`, `iggy:`) is a slip for its URL, not a directory to
    // create by that name: `--log memory` would otherwise keep the log on disk in ./memory.
    let bare = path.trim_end_matches(['/', ':']);
    if query.is_none() && ["memory", "file", "iggy", "iggys"].contains(&bare) {
        return Err(CliError::msg(format!(
            "bad log URL {value:?}: did you mean {bare}://? (a directory by that name: file://./{bare})"
        )));
    }
    if path.is_empty() {
        return Err(CliError::msg(format!(
            "bad log URL {value:?}: no directory; try file://./agentlog-data"
        )));
    }
    let absolute = cwd.join(path);
    let mut url = url::Url::from_file_path(&absolute).map_err(|()| {
        CliError::msg(format!(
            "bad log URL {value:?}: {} is not a usable path",
            absolute.display()
        ))
    })?;
    url.set_query(query);
    Ok(normalize_file_url(url))
}

/// `file:///a/./b` becomes `file:///a/b` (the `url` crate keeps `.` segments of a path).
fn normalize_file_url(url: url::Url) -> String {
    let segments: Vec<&str> = url
        .path_segments()
        .map(|s| s.filter(|s| *s != ".").collect())
        .unwrap_or_default();
    let mut out = format!("file:///{}", segments.join("/"));
    if let Some(query) = url.query() {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// The log URL as shown to people: an Iggy password is masked.
fn display_log_url(url: &str) -> String {
    agentlog::log::redacted(url)
}

/// Open the log a resolved `--log` names, with a hint when an embedded log is in use.
async fn open_log(url: &str) -> CliResult<agentlog::log::Log> {
    agentlog::log::open(url)
        .await
        .map_err(|err| open_error(url, &err))
}

/// [`open_log`] under a `TracingLayer` (each call a debug event: `RUST_LOG=agentlog::log=debug`)
/// and a `MetricsLayer`, and the counters it fills: how `serve` and `worker` open the log they
/// write, so `/metrics` can show its operations.
async fn open_counted_log(
    url: &str,
) -> CliResult<(agentlog::log::Log, agentlog::log::layers::LogMetrics)> {
    use agentlog::log::layers::{LogMetrics, MetricsLayer, TracingLayer};
    let metrics = LogMetrics::new();
    let log = open_log(url)
        .await?
        .layer(TracingLayer::new())
        .layer(MetricsLayer::new(metrics.clone()));
    // Appends as spans only while they are exported: no wrapper to pass through otherwise.
    let log = if agentlog::telemetry::enabled() {
        log.layer(agentlog::log::layers::SpanLayer::new())
    } else {
        log
    };
    Ok((log, metrics))
}

/// The one line for a log that cannot be opened.
fn open_error(url: &str, err: &agentlog::Error) -> CliError {
    let mut line = format!(
        "cannot open the log {}: {}",
        display_log_url(url),
        err.report()
    );
    if err.kind() == agentlog::ErrorKind::Config && err.message().contains("in use") {
        line.push_str(
            " (the embedded log is single-process: stop the other process first, \
             or share an iggy:// log)",
        );
    }
    if err.kind() == agentlog::ErrorKind::Corrupt && url.starts_with("file://") {
        line.push_str(
            " (damage a power loss can leave: `agentlog serve --truncate-corrupt`, or \
             ?truncate_corrupt=true in the URL, cuts each partition at it and loses what follows)",
        );
    }
    CliError::msg(line)
}

/// Ctrl-C or (on Unix) SIGTERM. The handlers are installed when this is called, not when the
/// future is first polled: call it before saying "ready", so that a signal sent right after
/// that line is never the default one that kills the process.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let (interrupt, terminate) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let wait = |signal: Option<tokio::signal::unix::Signal>| async move {
                match signal {
                    Some(mut signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = wait(interrupt) => {}
                () = wait(terminate) => {}
            }
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn retention_goes_into_the_log_url_once() {
        let week = TopicArgs {
            retention: Some(std::time::Duration::from_secs(7 * 86_400)),
            partitions: None,
        };
        assert_eq!(
            week.apply("file:///d").unwrap(),
            "file:///d?retention=604800000ms"
        );
        assert_eq!(
            week.apply("iggy://u:p@h:1?x=1").unwrap(),
            "iggy://u:p@h:1?x=1&retention=604800000ms"
        );
        assert_eq!(
            week.apply("file:///d?retention=7d").unwrap(),
            "file:///d?retention=7d"
        );
        assert!(week.apply("file:///d?retention=1d").is_err());
        let none = TopicArgs {
            retention: None,
            partitions: None,
        };
        assert_eq!(none.apply("memory://").unwrap(), "memory://");
    }

    #[test]
    fn partitions_go_into_the_log_url_once() {
        let both = TopicArgs {
            retention: Some(std::time::Duration::from_secs(1)),
            partitions: Some(64),
        };
        assert_eq!(
            both.apply("memory://").unwrap(),
            "memory://?retention=1000ms&partitions=64"
        );
        assert_eq!(
            both.apply("file:///d?partitions=64").unwrap(),
            "file:///d?partitions=64&retention=1000ms"
        );
        let err = both.apply("file:///d?partitions=16").unwrap_err();
        assert!(err.to_string().contains("partitions=16"), "{err}");
        // Out of range on the command line is a usage error.
        let parsed = Cli::try_parse_from(["agentlog", "serve", "--partitions", "1001"]);
        assert!(parsed.is_err());
        let parsed = Cli::try_parse_from(["agentlog", "worker", "--partitions", "0"]);
        assert!(parsed.is_err());
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn relative_file_urls_and_plain_paths_resolve_against_the_directory() {
        let cwd = Path::new("/home/me/work");
        for (input, expected) in [
            (
                "file://./agentlog-data",
                "file:///home/me/work/agentlog-data",
            ),
            ("file://data", "file:///home/me/work/data"),
            ("data/log", "file:///home/me/work/data/log"),
            (
                "./data?fsync=never",
                "file:///home/me/work/data%3Ffsync=never",
            ),
            (
                "file://./data?fsync=never",
                "file:///home/me/work/data?fsync=never",
            ),
            ("file:///var/lib/x", "file:///var/lib/x"),
            ("memory://", "memory://"),
            ("iggy://u:p@h:1", "iggy://u:p@h:1"),
            ("/abs/dir", "file:///abs/dir"),
        ] {
            assert_eq!(resolve_log_url(input, cwd).unwrap(), expected, "{input}");
        }
        assert!(resolve_log_url("file://", cwd).is_err());
        for slip in ["memory", "memory:", "memory:/", "iggy:", "file"] {
            let err = resolve_log_url(slip, cwd).unwrap_err().to_string();
            assert!(err.contains("did you mean"), "{slip}: {err}");
        }
        assert_eq!(
            resolve_log_url("./memory", cwd).unwrap(),
            "file:///home/me/work/memory"
        );
    }

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            display_log_url("iggy://iggy:secret@127.0.0.1:8090"),
            "iggy://iggy:***@127.0.0.1:8090"
        );
        assert_eq!(display_log_url("memory://"), "memory://");
    }

    #[test]
    fn rpc_errors_read_as_one_line_with_the_code() {
        let err = CliError::Rpc {
            code: -32001,
            message: "Task not found: abc".into(),
        };
        assert_eq!(err.to_string(), "Task not found: abc (-32001)");
    }
}
