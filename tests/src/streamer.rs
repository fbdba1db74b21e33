//! What the turn and fault suites check turns with: a handler that streams an artifact
//! chunk by chunk, each chunk naming its attempt, and readers of a task's records on the log.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentlog::AgentTopics;
use agentlog::log::Log;
use agentlog::worker::{Handler, HandlerError, TaskContext};
use agentlog_wire::Record;
use agentlog_wire::a2a::{Artifact, Part, Task};
use agentlog_wire::fold::{TaskFold, fold};

/// How many chunks the SIGKILL test's child streams per task (`src/bin/turn_child.rs`).
pub const CHILD_CHUNKS: usize = 30;

/// A handler that streams `chunks` chunks `a<attempt>:<i>` into the artifact `out`, one every
/// `delay` (holding the last one until `release`, if set), then completes; on attempt 1 it stops after `hang_after` chunks and waits for its
/// cancellation (a worker that hangs, or dies, mid-turn). Counts its runs.
#[derive(Debug, Clone)]
pub struct Streamer {
    /// Chunks per run.
    pub chunks: usize,
    /// The pause after each chunk.
    pub delay: Duration,
    /// On attempt 1, stop after this many chunks and wait for the cancellation.
    pub hang_after: Option<usize>,
    /// When set, each run waits before its last chunk until this turns true (a test holds
    /// every turn open for as long as it needs, whatever the machine's speed).
    pub release: Option<tokio::sync::watch::Receiver<bool>>,
    /// Runs of the handler.
    pub runs: Arc<AtomicUsize>,
    /// Runs that were retries (attempt > 1).
    pub retries: Arc<AtomicUsize>,
}

impl Streamer {
    /// `chunks` chunks, `delay` apart, no hang.
    pub fn new(chunks: usize, delay: Duration) -> Self {
        Self {
            chunks,
            delay,
            hang_after: None,
            release: None,
            runs: Arc::new(AtomicUsize::new(0)),
            retries: Arc::new(AtomicUsize::new(0)),
        }
    }
}

/// Chunk `i` of attempt `attempt`.
fn chunk(attempt: u32, i: usize) -> Artifact {
    Artifact {
        artifact_id: "out".into(),
        name: None,
        description: None,
        parts: vec![Part::text(format!("a{attempt}:{i}"))],
        metadata: None,
        extensions: Vec::new(),
    }
}

#[async_trait::async_trait]
impl Handler for Streamer {
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if task.is_retry() {
            self.retries.fetch_add(1, Ordering::SeqCst);
        }
        for i in 0..self.chunks {
            if self.hang_after == Some(i) && task.attempt() == 1 {
                task.cancellation().cancelled().await;
                return Ok(());
            }
            if i + 1 == self.chunks
                && let Some(release) = &self.release
            {
                let mut release = release.clone();
                tokio::select! {
                    () = task.cancellation().cancelled() => return Ok(()),
                    released = release.wait_for(|go| *go) => { released?; }
                }
            }
            // Every chunk appends: a retry's first one starts the artifact over by itself.
            task.artifact(chunk(task.attempt(), i), true, i + 1 == self.chunks)
                .await?;
            tokio::select! {
                () = task.cancellation().cancelled() => return Ok(()),
                () = tokio::time::sleep(self.delay) => {}
            }
        }
        Ok(())
    }
}

/// The artifact holds exactly the `chunks` chunks of one attempt, in order; which attempt.
pub fn one_attempt(task: &Task, chunks: usize) -> u32 {
    assert_eq!(task.artifacts.len(), 1, "{task:?}");
    let texts: Vec<&str> = task.artifacts[0]
        .parts
        .iter()
        .filter_map(Part::as_text)
        .collect();
    assert_eq!(texts.len(), chunks, "task {}: {texts:?}", task.id);
    let attempt = texts[0]
        .strip_prefix('a')
        .and_then(|t| t.split(':').next())
        .and_then(|n| n.parse().ok())
        .expect("an attempt number");
    for (i, text) in texts.iter().enumerate() {
        assert_eq!(
            *text,
            format!("a{attempt}:{i}"),
            "task {}: {texts:?}",
            task.id
        );
    }
    attempt
}

/// Every record of `task_id` on the agent's events topic, in log order.
pub async fn task_records(log: &Log, agent: &str, task_id: &str) -> Vec<Record> {
    let topic = AgentTopics::of(agent).events;
    let partitions = log.partitions(&topic).await.expect("partitions");
    let partition = agentlog::log::partition_for_key(task_id.as_bytes(), partitions);
    let mut records = partition_records(log, &topic, partition).await;
    records.retain(|r| r.header.task_id == task_id);
    records
}

/// Every record of one partition of `topic`, in log order.
pub async fn partition_records(
    log: &Log,
    topic: &agentlog::log::TopicRef,
    partition: u32,
) -> Vec<Record> {
    let mut out = Vec::new();
    let mut from = 0;
    loop {
        let batch = log.read(topic, partition, from, 1024).await.expect("read");
        let Some(last) = batch.last() else { break };
        from = last.offset + 1;
        out.extend(
            batch
                .iter()
                .map(|s| Record::decode(&s.payload).expect("a record")),
        );
    }
    out
}

/// The text of a task's status message (empty without one).
pub fn status_text(task: &agentlog_wire::a2a::Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.parts.iter().filter_map(|p| p.as_text()).collect())
        .unwrap_or_default()
}

/// The fold of `task_id`'s records as they are on the log.
pub async fn fold_log(log: &Log, agent: &str, task_id: &str) -> TaskFold {
    fold(&task_records(log, agent, task_id).await)
}
