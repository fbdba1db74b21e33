//! `agentlog tail`: an agent's records, as people read them.

use agentlog_wire::a2a::{Artifact, Message, SendMessageRequest};
use agentlog_wire::timestamp::format_millis;
use agentlog_wire::{Record, RecordBody, StateCode};
use clap::Args;
use tokio::sync::mpsc;

use super::output::{Out, note, one_line, parts_text};
use super::{CliError, CliResult, LogArgs};
use agentlog::agent::AgentTopics;
use agentlog::log::embedded::EmbeddedLog;
use agentlog::log::{Follower, Log, LogUrl, StoredRecord, TopicRef};

mod members;

/// Records read per call.
const BATCH: usize = 1024;

/// How often `--follow` looks again for a log or an agent topic that does not exist yet.
const TOPIC_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// The widest text summary printed per record.
const SUMMARY_CHARS: usize = 100;

const EXAMPLES: &str = "\
EXAMPLES:
  agentlog tail --log file://./agentlog-data --agent demo --follow
  agentlog tail --log iggy://iggy:iggy@127.0.0.1:8090 --agent demo --follow
  agentlog tail --agent demo --task <TASK_ID>
  agentlog tail --log iggy://iggy:iggy@127.0.0.1:8090 --agent demo --members
      the bridges' membership records (serve --member-name) instead of the tasks'

Each line is one record of the agent's events topic (the task log of record):

  P:OFFSET  TIME  KIND  TASK  SUMMARY

P is the partition, OFFSET the record's offset in it; records of one partition come in offset
order, partitions are interleaved by time. KIND is command (a new task), continue (a follow-up
message), cancel (a cancel request), status, artifact or terminal.

An embedded log (file://) is read beside the server or worker that writes it, read-only:
tail takes no lock and changes nothing, and --follow looks at the files every few
milliseconds while records arrive. --follow may start before the server: it waits for the
log and the agent's topic to appear (saying so on stderr).";

/// Print an agent's records: every task's commands, statuses, artifacts and ends.
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLES)]
pub(super) struct TailArgs {
    #[command(flatten)]
    log: LogArgs,

    /// Keep printing new records as they are written (until Ctrl-C).
    #[arg(long, short)]
    follow: bool,

    /// Only this task's records.
    #[arg(long, value_name = "TASK_ID", conflicts_with = "members")]
    task: Option<String>,

    /// The records of the agent's bridges' dynamic membership (`serve --member-name`) on
    /// <agent>.members instead: joins, heartbeats, leaves, evictions, readies, snapshots.
    #[arg(long)]
    members: bool,
}

/// `agentlog tail`.
pub(super) async fn run(args: TailArgs, out: &Out) -> CliResult {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::msg(format!("cannot read the current directory: {e}")))?;
    let url = super::resolve_log_url(&args.log.log, &cwd)?;
    let log: Log = match url.parse::<LogUrl>() {
        Ok(LogUrl::Memory) => {
            return Err(CliError::msg(
                "memory:// is private to the process that opened it; tail a file:// or iggy:// log",
            ));
        }
        Ok(LogUrl::File(dir, ..)) if !dir.is_dir() && !args.follow => {
            return Err(CliError::msg(format!("no log at {}", dir.display())));
        }
        // Read-only, beside the server or worker that owns the directory (if any).
        Ok(LogUrl::File(dir, ..)) => {
            let waiting = format!("no log at {} yet; waiting for it", dir.display());
            if wait_for(&waiting, async || Ok(dir.is_dir().then_some(())))
                .await?
                .is_none()
            {
                return Ok(());
            }
            Log::new(EmbeddedLog::open_read_only(dir).map_err(|e| super::open_error(&url, &e))?)
        }
        _ => super::open_log(&url).await?,
    };
    let result = tail(&log, &args, out).await;
    let closed = log.close().await;
    result?;
    closed?;
    Ok(())
}

async fn tail(log: &Log, args: &TailArgs, out: &Out) -> CliResult {
    if args.members {
        return members::tail(log, args, out).await;
    }
    let topic = AgentTopics::of(&args.log.agent).events;
    let Some(ends) = end_offsets(log, &topic, args).await? else {
        return Ok(()); // Ctrl-C while waiting for the topic
    };
    let mut partitions = Vec::with_capacity(ends.len());
    for (partition, end) in (0u32..).zip(&ends) {
        partitions.push(read_all(log, &topic, partition, *end).await?);
    }
    let filter = args.task.as_deref();
    for record in merge_by_time(partitions) {
        print_record(out, &record, filter);
    }
    if !args.follow {
        return Ok(());
    }
    let (tx, mut rx) = mpsc::channel::<agentlog::Result<Vec<StoredRecord>>>(64);
    let mut followers = tokio::task::JoinSet::new();
    for (partition, end) in (0u32..).zip(&ends) {
        let mut follower = Follower::new(log.clone(), topic.clone(), partition, *end).await?;
        let tx = tx.clone();
        followers.spawn(async move {
            loop {
                let batch = follower.next_batch().await;
                let failed = batch.is_err();
                if tx.send(batch).await.is_err() || failed {
                    return;
                }
            }
        });
    }
    drop(tx);
    let signal = super::shutdown_signal();
    tokio::pin!(signal);
    loop {
        tokio::select! {
            () = &mut signal => return Ok(()),
            batch = rx.recv() => match batch {
                Some(Ok(records)) => {
                    for record in &records {
                        print_record(out, &Decoded::from(record), filter);
                    }
                }
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
        }
    }
}

/// The end offsets of the agent's events topic. If it does not exist yet: an error, or with
/// `--follow`, wait for a server or worker to create it (`None` on Ctrl-C meanwhile).
async fn end_offsets(log: &Log, topic: &TopicRef, args: &TailArgs) -> CliResult<Option<Vec<u64>>> {
    let agent = &args.log.agent;
    let waiting = format!("agent {agent:?} has no records yet; waiting for its topic {topic}");
    wait_for(&waiting, async || match log.end_offsets(topic).await {
        Ok(ends) => Ok(Some(ends)),
        Err(e) if e.kind() != agentlog::ErrorKind::InvalidParams => Err(CliError::msg(format!(
            "cannot read {topic}: {}",
            e.report()
        ))),
        Err(_) if !args.follow => Err(CliError::msg(format!(
            "agent {agent:?} has no records in this log (no topic {topic})"
        ))),
        Err(_) => Ok(None),
    })
    .await
}

/// Ask `ready` every [`TOPIC_POLL`] until it gives a value, saying once on stderr what this
/// waits for (`waiting`) if it does not at once. `None` on Ctrl-C meanwhile.
async fn wait_for<T>(
    waiting: &str,
    mut ready: impl AsyncFnMut() -> CliResult<Option<T>>,
) -> CliResult<Option<T>> {
    let signal = super::shutdown_signal();
    tokio::pin!(signal);
    let mut told = false;
    loop {
        if let Some(value) = ready().await? {
            return Ok(Some(value));
        }
        if !told {
            note(&format!("{waiting} (Ctrl-C to stop)"));
            told = true;
        }
        tokio::select! {
            () = &mut signal => return Ok(None),
            () = tokio::time::sleep(TOPIC_POLL) => {}
        }
    }
}

/// Every record of `partition` before `end`.
async fn read_all(
    log: &Log,
    topic: &TopicRef,
    partition: u32,
    end: u64,
) -> CliResult<Vec<Decoded>> {
    let mut records = Vec::new();
    let mut next = 0;
    while next < end {
        let batch = log.read(topic, partition, next, BATCH).await?;
        let Some(last) = batch.last() else { break };
        next = last.offset + 1;
        records.extend(batch.iter().map(Decoded::from));
    }
    Ok(records)
}

/// A stored record and its decoding.
#[derive(Debug)]
struct Decoded {
    partition: u32,
    offset: u64,
    record: Result<Record, String>,
}

impl From<&StoredRecord> for Decoded {
    fn from(stored: &StoredRecord) -> Self {
        Self {
            partition: stored.partition,
            offset: stored.offset,
            record: Record::decode(&stored.payload).map_err(|e| e.to_string()),
        }
    }
}

impl Decoded {
    fn timestamp_ms(&self) -> u64 {
        self.record.as_ref().map_or(0, |r| r.header.timestamp_ms)
    }
}

/// All partitions' records in one sequence: each partition's in offset order, the
/// partitions interleaved by record time (the earliest head first).
fn merge_by_time(partitions: Vec<Vec<Decoded>>) -> Vec<Decoded> {
    let total = partitions.iter().map(Vec::len).sum();
    let mut heads: Vec<std::iter::Peekable<std::vec::IntoIter<Decoded>>> = partitions
        .into_iter()
        .map(|p| p.into_iter().peekable())
        .collect();
    let mut merged = Vec::with_capacity(total);
    loop {
        let next = heads
            .iter_mut()
            .enumerate()
            .filter_map(|(i, h)| h.peek().map(|d| (d.timestamp_ms(), i)))
            .min();
        let Some((_, i)) = next else { break };
        if let Some(record) = heads[i].next() {
            merged.push(record);
        }
    }
    merged
}

fn print_record(out: &Out, decoded: &Decoded, task_filter: Option<&str>) {
    let position = format!("{}:{}", decoded.partition, decoded.offset);
    let record = match &decoded.record {
        Ok(record) => record,
        Err(e) => {
            if task_filter.is_none() {
                out.line(&format!(
                    "{position:<8}  {}",
                    out.dim(&format!("<undecodable: {e}>"))
                ));
            }
            return;
        }
    };
    if task_filter.is_some_and(|t| t != record.header.task_id) {
        return;
    }
    let (kind, summary) = summarize(out, record);
    let kind_pad = " ".repeat(8usize.saturating_sub(kind.len()));
    out.line(&format!(
        "{position:<8}  {}  {}{kind_pad}  {}  {summary}",
        out.dim(&format_millis(record.header.timestamp_ms)),
        out.cyan(kind),
        record.header.task_id,
    ));
}

/// The record's kind and a one-line summary of what it says.
fn summarize(out: &Out, record: &Record) -> (&'static str, String) {
    match &record.body {
        RecordBody::Claim {
            turn,
            lease_until_ms,
        } => (
            "claim",
            format!(
                "attempt {} by {} of turn {turn}, leased until {}",
                record.header.attempt,
                record.header.source,
                format_millis(*lease_until_ms)
            ),
        ),
        RecordBody::Command { params, .. } => ("command", request_text(params)),
        RecordBody::Continue { params } => ("continue", request_text(params)),
        RecordBody::CancelRequest { .. } => ("cancel", String::new()),
        RecordBody::StatusUpdate { state, message } => ("status", state_text(out, *state, message)),
        RecordBody::Terminal { state, message } => ("terminal", state_text(out, *state, message)),
        RecordBody::Reply { message } => ("reply", message_text(message)),
        RecordBody::PushConfig { config } => ("push config", push_config_text(config)),
        RecordBody::PushConfigDeleted { config_id } => ("push deleted", config_id.clone()),
        RecordBody::PushProgress { config_id, next } => (
            "push progress",
            format!("config {config_id}: done before the update at offset {next}"),
        ),
        RecordBody::PushDeadLetter {
            config_id,
            update,
            attempts,
            reason,
        } => (
            "push dead letter",
            format!(
                "config {config_id}, the update at offset {update}, after {attempts} attempts: {reason}"
            ),
        ),
        RecordBody::ArtifactUpdate {
            append,
            last_chunk,
            artifact,
        } => {
            let text = match serde_json::from_str::<Artifact>(artifact) {
                Ok(artifact) => {
                    let mut flags = Vec::new();
                    if *append {
                        flags.push("append");
                    }
                    if *last_chunk {
                        flags.push("last");
                    }
                    let flags = if flags.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", flags.join(", "))
                    };
                    format!(
                        "{}{flags}: {:?}",
                        super::output::artifact_name(&artifact),
                        one_line(&parts_text(&artifact.parts), SUMMARY_CHARS)
                    )
                }
                Err(e) => format!("<bad artifact: {e}>"),
            };
            ("artifact", text)
        }
    }
}

fn request_text(params: &str) -> String {
    match serde_json::from_str::<SendMessageRequest>(params) {
        Ok(request) => format!(
            "{:?}",
            one_line(&parts_text(&request.message.parts), SUMMARY_CHARS)
        ),
        Err(e) => format!("<bad request: {e}>"),
    }
}

/// A push config's id and where it goes: the URL without its query (which may hold a
/// secret), never the token or the credentials.
fn push_config_text(config: &str) -> String {
    match serde_json::from_str::<agentlog_wire::a2a::TaskPushNotificationConfig>(config) {
        Ok(config) => {
            let url = config.url.split(['?', '#']).next().unwrap_or_default();
            format!("{} → {url}", config.id.as_deref().unwrap_or_default())
        }
        Err(e) => format!("<bad config: {e}>"),
    }
}

/// A `Message`'s text on one line, quoted.
fn message_text(message: &str) -> String {
    match serde_json::from_str::<Message>(message) {
        Ok(message) => format!("{:?}", one_line(&parts_text(&message.parts), SUMMARY_CHARS)),
        Err(e) => format!("<bad message: {e}>"),
    }
}

fn state_text(out: &Out, state: StateCode, message: &str) -> String {
    let mut text = match state.state() {
        Ok(state) => out.state(state),
        Err(_) => format!("state {}", state.0),
    };
    if !message.is_empty() {
        text.push_str(": ");
        text.push_str(&message_text(message));
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentlog_wire::RecordHeader;

    fn decoded(partition: u32, offset: u64, timestamp_ms: u64) -> Decoded {
        Decoded {
            partition,
            offset,
            record: Ok(Record {
                header: RecordHeader {
                    task_id: "t".into(),
                    timestamp_ms,
                    ..RecordHeader::default()
                },
                body: RecordBody::CancelRequest {
                    metadata: String::new(),
                },
            }),
        }
    }

    #[test]
    fn merging_keeps_each_partitions_order_and_interleaves_by_time() {
        let merged = merge_by_time(vec![
            vec![decoded(0, 0, 10), decoded(0, 1, 5), decoded(0, 2, 30)],
            vec![decoded(1, 0, 7), decoded(1, 1, 20)],
        ]);
        let order: Vec<(u32, u64)> = merged.iter().map(|d| (d.partition, d.offset)).collect();
        assert_eq!(order, vec![(1, 0), (0, 0), (0, 1), (1, 1), (0, 2)]);
    }

    #[test]
    fn records_summarize_on_one_line() {
        let out = Out::new(super::super::ColorChoice::Never);
        let summarize = |out: &Out, body: &RecordBody| {
            let record = Record {
                header: agentlog_wire::RecordHeader {
                    task_id: "t".into(),
                    source: "worker-1".into(),
                    attempt: 2,
                    ..Default::default()
                },
                body: body.clone(),
            };
            let (kind, text) = summarize(out, &record);
            (kind, text)
        };
        assert_eq!(
            summarize(
                &out,
                &RecordBody::Claim {
                    turn: "m".into(),
                    lease_until_ms: 1_700_000_000_000
                }
            ),
            (
                "claim",
                "attempt 2 by worker-1 of turn m, leased until 2023-11-14T22:13:20.000Z".to_owned()
            )
        );
        let params =
            r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi\nthere"}]}}"#;
        assert_eq!(
            summarize(
                &out,
                &RecordBody::Command {
                    params: params.into(),
                    retention_ms: 0,
                }
            ),
            ("command", "\"hi there\"".to_owned())
        );
        let message = r#"{"messageId":"s","role":"ROLE_AGENT","parts":[{"text":"no"}]}"#;
        assert_eq!(
            summarize(
                &out,
                &RecordBody::Terminal {
                    state: StateCode(4),
                    message: message.into()
                }
            ),
            ("terminal", "failed: \"no\"".to_owned())
        );
        let artifact = r#"{"artifactId":"echo","name":"echo","parts":[{"text":"lo"}]}"#;
        assert_eq!(
            summarize(
                &out,
                &RecordBody::ArtifactUpdate {
                    append: true,
                    last_chunk: true,
                    artifact: artifact.into()
                }
            ),
            ("artifact", "echo (append, last): \"lo\"".to_owned())
        );
    }
}
