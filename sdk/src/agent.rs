//! Who calls, and where an agent's records live.

use crate::error::{Error, ErrorKind, Result};
use crate::log::{Log, TopicRef};

/// The default stream holding every agent's topics.
pub const DEFAULT_STREAM: &str = "agentlog";

/// The default number of partitions of an agent's topics.
pub const DEFAULT_PARTITIONS: u32 = 4;

/// The authenticated caller of a verb. An empty principal is the anonymous caller; an empty
/// tenant is the default tenant. Every record carries both, and a task is visible only to the
/// caller that created it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Caller {
    /// Who: a user or service identity (empty = anonymous).
    pub principal: String,
    /// Which tenant (empty = default).
    pub tenant: String,
}

impl Caller {
    /// The anonymous caller of the default tenant.
    pub fn anonymous() -> Self {
        Self::default()
    }

    /// A caller with a principal in the default tenant.
    pub fn principal(principal: impl Into<String>) -> Self {
        Self {
            principal: principal.into(),
            tenant: String::new(),
        }
    }

    /// The same caller in `tenant`.
    pub fn in_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }
}

/// An agent's topics: two keyed (and so partitioned) by task id, and one for checkpoints:
///
/// - `<agent>.events`, the task log of record: every record that changes a task, written by
///   bridges (command, continue, cancel request) and by workers (status, artifact, terminal),
///   in one order per task. A task's state is the fold of its records here.
/// - `<agent>.commands`, the workers' queue: a copy of each command and continue, consumed by
///   the agent's worker group. It decides nothing; it only hands out work.
/// - `<agent>.checkpoints` (as many partitions as `events`; one for a topic made before
///   checkpoints were per partition): snapshots of each partition of the task view at known
///   positions of `events`, so that a restarting bridge or worker replays only what came
///   after one. Only an accelerator: a view without it replays `events` from its start.
///
/// A bridge appends to `events` first (the commit point) and to `commands` second, so a
/// worker never receives work for a task that the log of record does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTopics {
    /// The agent's name.
    pub agent: String,
    /// The task log of record.
    pub events: TopicRef,
    /// The workers' queue.
    pub commands: TopicRef,
    /// The view checkpoints.
    pub checkpoints: TopicRef,
    /// Partitions of `events` and `commands` when they are created, unless the log handle
    /// names a count ([`Log::partition_count`]).
    pub partitions: u32,
}

impl AgentTopics {
    /// The topics of `agent` in `stream`.
    pub fn new(stream: &str, agent: &str, partitions: u32) -> Self {
        Self {
            agent: agent.to_owned(),
            events: TopicRef::new(stream, format!("{agent}.events")),
            commands: TopicRef::new(stream, format!("{agent}.commands")),
            checkpoints: TopicRef::new(stream, format!("{agent}.checkpoints")),
            partitions: partitions.max(1),
        }
    }

    /// The topics of `agent` in the default stream with the default partition count.
    pub fn of(agent: &str) -> Self {
        Self::new(DEFAULT_STREAM, agent, DEFAULT_PARTITIONS)
    }

    /// The consumer group the agent's workers share.
    pub fn worker_group(&self) -> String {
        format!("{}.workers", self.agent)
    }

    /// Create the topics that do not exist: `events` and `commands` with the log handle's
    /// partition count ([`Log::partition_count`], `partitions=` of its URL), else with
    /// [`partitions`](Self::partitions). A topic's partition count never changes (a task's
    /// partition is its id's hash modulo the count), so when the handle names a count, an
    /// existing topic with another one is refused with [`ErrorKind::Config`] naming both;
    /// without one, an existing topic keeps its own.
    pub async fn ensure(&self, log: &Log) -> Result<()> {
        let asked = log.partition_count();
        let partitions = asked.unwrap_or(self.partitions);
        for topic in [&self.events, &self.commands] {
            log.ensure_topic(topic, partitions).await?;
            if let Some(asked) = asked {
                let has = log.partitions(topic).await?;
                if has != asked {
                    return Err(Error::new(
                        ErrorKind::Config,
                        format!(
                            "topic {topic} has {has} partitions, not the {asked} asked for \
                             (partitions= of the log URL, or --partitions): a topic's partition \
                             count cannot change; ask for {has}, or use another agent name or log"
                        ),
                    ));
                }
            }
        }
        // A partition's checkpoints in a partition of their own (an existing topic keeps its
        // count: it holds every partition's then).
        log.ensure_topic(&self.checkpoints, partitions).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_documented_ones() {
        let topics = AgentTopics::of("echo");
        assert_eq!(topics.events.to_string(), "agentlog/echo.events");
        assert_eq!(topics.commands.to_string(), "agentlog/echo.commands");
        assert_eq!(topics.checkpoints.to_string(), "agentlog/echo.checkpoints");
        assert_eq!(topics.worker_group(), "echo.workers");
    }

    #[tokio::test]
    async fn a_partition_count_asked_for_creates_or_must_match() {
        let log = crate::log::open("memory://").await.expect("memory://");
        let topics = AgentTopics::of("a");
        topics
            .ensure(&log.clone().with_partition_count(16))
            .await
            .expect("created with 16");
        assert_eq!(log.partitions(&topics.events).await.ok(), Some(16));
        assert_eq!(log.partitions(&topics.commands).await.ok(), Some(16));
        assert_eq!(log.partitions(&topics.checkpoints).await.ok(), Some(16));
        // Asked for the same, or not asked: the topics are taken as they are.
        topics
            .ensure(&log.clone().with_partition_count(16))
            .await
            .expect("the same count");
        topics.ensure(&log).await.expect("no count asked");
        assert_eq!(log.partitions(&topics.events).await.ok(), Some(16));
        // Another count is refused, naming both.
        let refused = topics
            .ensure(&log.clone().with_partition_count(4))
            .await
            .expect_err("another count");
        assert_eq!(refused.kind(), ErrorKind::Config);
        let message = refused.to_string();
        assert!(
            message.contains("has 16 partitions") && message.contains("the 4 asked for"),
            "{message}"
        );
        // Without a count, a new topic gets the default.
        let fresh = AgentTopics::of("b");
        fresh.ensure(&log).await.expect("default");
        assert_eq!(
            log.partitions(&fresh.events).await.ok(),
            Some(DEFAULT_PARTITIONS)
        );
    }
}
