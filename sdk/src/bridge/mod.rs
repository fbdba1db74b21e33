//! The stateless A2A bridge: A2A calls become records on the log; every answer is a fold.
//!
//! A [`Bridge`] owns nothing but a [`TaskView`] that it rebuilds from the agent's events topic,
//! so any number of bridges over the same log (in one process or many, restarted or not)
//! answer alike. Transports are thin shells over it: [`Bridge::handle`] takes a JSON-RPC
//! request ([`RpcRequest`]) and gives a JSON body or an event stream, or takes a typed call
//! ([`Call`], the gRPC binding's) and gives its [`Answer`]; the typed verbs serve Rust
//! callers.
//!
//! How each verb maps onto the log is written in `skills/a2a-bridge/SKILL.md`.

mod call;
mod card;
pub mod extensions;
pub mod json;
mod limits;
mod live;
mod media;
mod pull;
mod push;
mod requeue;
mod rpc;
mod schema;
mod send;
mod skills;
mod stream;
mod tasks;
mod tenant;
#[cfg(test)]
mod test_support;
mod timeline;
pub mod trace;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::a2a::{AgentCard, Task};
use agentlog_wire::{Record, RecordHeader};
use bytes::Bytes;

use crate::agent::{AgentTopics, Caller};
use crate::error::{Error, ErrorKind, Result};
use crate::log::{AppendBatch, Appended, Applier, Log};
use crate::security::{Destinations, RecordSigner, RecordVerifier};
use crate::view::{CompactTopics, PartitionPin, TaskView, ViewOptions};

pub use call::{Answer, Call};
pub use card::{
    card_from_file, card_from_json, card_over_defaults, default_card, default_skill, finish_card,
};
pub use limits::LimitsConfig;
pub(crate) use live::TurnEvents;
pub use pull::PulledStream;
pub use rpc::{RpcBody, RpcReply, RpcRequest, RpcStream, SseFrames};
pub(crate) use schema::Schema;
pub use skills::{skill_schemas_from_file, skill_schemas_from_json};
// The push sender tells a record's change as a stream would (feature `http`).
#[cfg(feature = "http")]
pub(crate) use stream::to_response;
pub use stream::{StreamEvent, TaskStream};
pub(crate) use tasks::encode_cursor as page_token;
pub(crate) use tasks::{list_position, merge_newest};
pub use timeline::{Timeline, TimelineRecord, Verdict};

/// How a bridge behaves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BridgeConfig {
    /// The agent served, and so its topics.
    pub topics: AgentTopics,
    /// The agent card served to clients; its `skills` are the agent's skills.
    pub card: AgentCard,
    /// The JSON Schema each skill's input must match, by the id of a skill on the card: a
    /// message naming that skill (`crate::skill`) is refused (-32602, naming the failing
    /// path; nothing written) unless its one data part matches. Card JSON gives them as a
    /// skill's `inputSchema` ([`skill_schemas_from_json`]). Default none.
    pub skill_schemas: BTreeMap<String, serde_json::Value>,
    /// How long a blocking `SendMessage` waits for a terminal or interrupted state before it
    /// answers with the task as it is (still working). Default 60 s.
    pub blocking_timeout: Duration,
    /// How long a request waits for the view to catch up with the log (read-your-writes)
    /// before it fails with a retryable timeout. Default 10 s.
    pub sync_timeout: Duration,
    /// The `source` written in this bridge's records.
    pub source: String,
    /// How long the tasks this bridge creates stay answerable once finished (written into
    /// each command: every replica expires a task alike, and tasks already on the log keep
    /// theirs). `Duration::ZERO` keeps them forever. `None`: the log URL's `retention`, else
    /// [`DEFAULT_RETENTION`] (7 days).
    pub retention: Option<Duration>,
    /// How often the bridge's view writes a checkpoint to the agent's checkpoint topic (when
    /// 10,000 records or more came since the last), so that a restart replays only what came
    /// after it. Default 60 s; `None` writes none (the view still starts from one it finds).
    pub checkpoint_every: Option<Duration>,
    /// How many blocking sends and streams the bridge holds open at once (see
    /// [`LimitsConfig`] for the defaults); past them a call is refused, retryable
    /// ([`ErrorKind::Overloaded`]), before anything is written.
    pub limits: LimitsConfig,
    /// The card `GetExtendedAgentCard` serves to authenticated callers; setting it sets
    /// `capabilities.extendedAgentCard` on the public card. Default `None`: the method
    /// answers -32004 (or -32007 when the public card declares the capability anyway).
    pub extended_card: Option<AgentCard>,
    /// The id this bridge stamps at the end of the bridge path of every record it writes
    /// (the hop guard, [`crate::hops`]): a call arriving with this id on its path already is
    /// refused. Default: the agent's name, so every replica of an agent has the same.
    pub id: String,
    /// The most bridges a call may go through (the path's length, this bridge included);
    /// past it a call is refused ([`ErrorKind::LoopDetected`]). Default 8.
    pub max_hops: u8,
    /// Signs every record this bridge writes (commands, continues, cancel requests);
    /// `None` writes them unsigned.
    pub signer: Option<RecordSigner>,
    /// With a trust configured, the bridge's view applies only the records it admits
    /// (`skills/security/records.md`); `None` applies every record.
    pub trust: Option<RecordVerifier>,
    /// Which sends must activate the card's required extensions: every send by default.
    pub extension_scope: extensions::ExtensionScope,
    /// Push notifications served: set it when a push sender runs over the log
    /// (`agentlog::push`). The four config methods then work, a config's URL is checked
    /// against these destinations when registered, and the card declares
    /// `capabilities.pushNotifications`. `None` (default): the methods answer -32003.
    pub push: Option<Destinations>,
    /// The partitions of the events topic the bridge's view holds (a member's share when
    /// bridges share the agent, `skills/a2a-bridge/partitions.md`); a request about another
    /// is refused as unavailable unless it is held on demand. `None` (default): every one.
    pub holding: Option<Vec<u32>>,
}

setters!(BridgeConfig {
    topics: AgentTopics,
    card: AgentCard,
    skill_schemas: BTreeMap<String, serde_json::Value>,
    blocking_timeout: Duration,
    sync_timeout: Duration,
    source: String,
    limits: LimitsConfig,
    id: String,
    max_hops: u8,
    extension_scope: extensions::ExtensionScope,
} optional {
    retention: Duration,
    checkpoint_every: Duration,
    extended_card: AgentCard,
    signer: RecordSigner,
    trust: RecordVerifier,
    push: Destinations,
    holding: Vec<u32>,
});

impl BridgeConfig {
    /// Defaults for `agent`: its topics in the default stream, a minimal card.
    pub fn new(agent: &str) -> Self {
        Self {
            topics: AgentTopics::of(agent),
            card: default_card(agent),
            skill_schemas: BTreeMap::new(),
            blocking_timeout: Duration::from_secs(60),
            sync_timeout: Duration::from_secs(10),
            source: format!("bridge-{}", uuid::Uuid::new_v4().simple()),
            retention: None,
            checkpoint_every: Some(Duration::from_secs(60)),
            limits: LimitsConfig::default(),
            extended_card: None,
            id: agent.to_owned(),
            max_hops: crate::hops::DEFAULT_MAX_HOPS,
            signer: None,
            trust: None,
            extension_scope: extensions::ExtensionScope::default(),
            push: None,
            holding: None,
        }
    }
}

/// The A2A bridge over one agent's topics. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Bridge {
    inner: Arc<BridgeInner>,
}

#[derive(Debug)]
struct BridgeInner {
    log: Log,
    config: BridgeConfig,
    view: TaskView,
    /// The turns this bridge re-queued lately, so that retries do not flood the queue.
    requeues: requeue::Requeues,
    /// The blocking sends and streams open.
    limits: limits::Limits,
    /// The card's skills' input schemas, compiled.
    skills: skills::SkillSchemas,
}

impl Bridge {
    /// Create the agent's topics if needed and start following its events topic.
    pub async fn open(log: Log, mut config: BridgeConfig) -> Result<Self> {
        config.retention = Some(
            config
                .retention
                .or_else(|| log.retention())
                .unwrap_or(DEFAULT_RETENTION),
        );
        if config.extended_card.is_some() {
            config.card.capabilities.extended_agent_card = Some(true);
        }
        if config.push.is_some() {
            config.card.capabilities.push_notifications = Some(true);
        }
        let skills = skills::SkillSchemas::compile(&config.card, &config.skill_schemas)?;
        config.topics.ensure(&log).await?;
        let options = ViewOptions {
            checkpoint_every: config.checkpoint_every,
            compact: Some(CompactTopics {
                commands: config.topics.commands.clone(),
                commands_retention_ms: millis(config.retention.unwrap_or(DEFAULT_RETENTION)),
            }),
            verifier: config.trust.clone(),
            holding: config.holding.clone(),
            ..ViewOptions::checkpointed(config.topics.checkpoints.clone())
        };
        let view = TaskView::start_with(log.clone(), config.topics.events.clone(), options).await?;
        let config_limits = config.limits;
        Ok(Self {
            inner: Arc::new(BridgeInner {
                log,
                config,
                view,
                requeues: requeue::Requeues::default(),
                limits: limits::Limits::new(config_limits),
                skills,
            }),
        })
    }

    /// The agent card.
    pub fn agent_card(&self) -> &AgentCard {
        &self.inner.config.card
    }

    /// `GetExtendedAgentCard`: the extended card, for authenticated callers only. Without
    /// one, -32004 (the public card does not declare it), or -32007 when the public card
    /// declares the capability but none is configured (A2A §3.3).
    pub fn extended_card(&self, caller: &Caller) -> Result<AgentCard> {
        let declared = self.agent_card().capabilities.extended_agent_card == Some(true);
        match &self.inner.config.extended_card {
            None if declared => Err(Error::new(
                ErrorKind::ExtendedAgentCardNotConfigured,
                "This agent declares an extended agent card but has none configured",
            )),
            None => Err(Error::new(
                ErrorKind::UnsupportedOperation,
                "This agent has no extended agent card",
            )),
            // A principal is what authentication gives; anonymous callers get the public card.
            Some(_) if caller.principal.is_empty() => Err(Error::new(
                ErrorKind::Unauthenticated,
                "The extended agent card is for authenticated callers",
            )),
            Some(card) => Ok(card.clone()),
        }
    }

    /// The retention written into the commands of the tasks this bridge creates, in
    /// milliseconds (0 = forever).
    pub(crate) fn retention_ms(&self) -> u64 {
        millis(self.inner.config.retention.unwrap_or(DEFAULT_RETENTION))
    }

    /// The bridge's configuration (its `retention` resolved).
    pub fn config(&self) -> &BridgeConfig {
        &self.inner.config
    }

    /// The task view (for metrics and workers in the same process).
    pub fn view(&self) -> &TaskView {
        &self.inner.view
    }

    /// The log.
    pub fn log(&self) -> &Log {
        &self.inner.log
    }

    fn header(
        &self,
        caller: &Caller,
        task_id: &str,
        context_id: &str,
        message_id: String,
        bridge_hops: Vec<String>,
    ) -> RecordHeader {
        RecordHeader {
            task_id: task_id.to_owned(),
            context_id: context_id.to_owned(),
            message_id,
            source: self.inner.config.source.clone(),
            principal: caller.principal.clone(),
            tenant: caller.tenant.clone(),
            hops: u8::try_from(bridge_hops.len()).unwrap_or(u8::MAX),
            attempt: 0,
            deadline_ms: 0,
            timestamp_ms: now_ms(),
            content_type: trace::content_type(),
            key_id: String::new(),
            bridge_hops,
            signature: Vec::new(),
        }
    }

    /// Append a record to the agent's topics named by `to`, keyed by its task id. With
    /// [`Topics::Both`] the events topic (the commit point) comes first and the commands copy
    /// is acknowledged only with it. Returns where the record landed in the first topic.
    ///
    /// A new record is signed with [`BridgeConfig::signer`]; a copy queued again
    /// ([`Topics::Commands`]) goes as the log holds it, signature and all.
    async fn commit(&self, record: &Record, to: Topics) -> Result<Appended> {
        self.commit_with(record, to, None, None).await
    }

    /// [`commit`](Self::commit), with `claim` (a worker's first claim on the turn the record
    /// starts: `worker/reserve.rs`) right after the record in the events topic's batch, that
    /// batch made for `applied_by` (the view, when the caller offers it every record of the
    /// batch: [`TaskView::applier`](crate::view::TaskView::applier)). A claimed record
    /// ([`Topics::Both`]) goes without its copy: the claim hands its turn to the worker, and
    /// should that worker's process die, the sweep of the worker owning the partition puts
    /// the turn back on the queue once the claim's lease is over.
    async fn commit_with(
        &self,
        record: &Record,
        to: Topics,
        claim: Option<Bytes>,
        applied_by: Option<Applier>,
    ) -> Result<Appended> {
        let config = &self.inner.config;
        let bytes = match (&config.signer, to) {
            (Some(signer), Topics::Events | Topics::Both) => {
                let bytes = signer.encode(record)?;
                // The view reads it back: no need to check this process's own signature.
                if let Some(trust) = &config.trust {
                    trust.remember_own(&bytes, record.body.kind(), signer);
                }
                bytes
            }
            _ => record.encode().map_err(|e| {
                Error::new(ErrorKind::InvalidParams, "the record cannot be encoded").with_source(e)
            })?,
        };
        let bytes = Bytes::from(bytes);
        let key = record.header.task_id.as_bytes();
        let topics = &self.inner.config.topics;
        let log = &self.inner.log;
        match to {
            Topics::Events => return log.append(&topics.events, key, vec![bytes]).await,
            Topics::Commands => return log.append(&topics.commands, key, vec![bytes]).await,
            Topics::Both => {}
        }
        let copied = claim.is_none();
        let mut batches = vec![AppendBatch {
            topic: &topics.events,
            key,
            payloads: std::iter::once(bytes.clone()).chain(claim).collect(),
            applied_by,
        }];
        if copied {
            batches.push(AppendBatch {
                topic: &topics.commands,
                key,
                payloads: vec![bytes],
                applied_by: None,
            });
        }
        // One round on backends that support it; a copy is acknowledged only with the event.
        let appended = log.append_all(batches).await?;
        appended
            .first()
            .copied()
            .ok_or_else(|| Error::new(ErrorKind::Internal, "append_all returned no result"))
    }

    /// Bring the view up to `task_id`'s partition's end for a request about to read the
    /// task; the pin it returns keeps the partition's tasks until the request drops it (a
    /// partition retired meanwhile is not released under the read, however long it stalls).
    async fn sync_task(&self, task_id: &str) -> Result<PartitionPin> {
        let view = &self.inner.view;
        let partition = view.partition_of(task_id);
        // Taken before the sync: the sync then finds the tasks it pins.
        let pin = view.pin(partition);
        self.sync_pinned(partition, pin).await
    }

    /// [`sync_task`](Self::sync_task) for a read of a task, but no sync when the view shows it
    /// finished well before its expiry ([`TaskView::is_settled`](crate::view::TaskView::is_settled)):
    /// nothing appended since changes what the read answers.
    async fn sync_unless_settled(&self, task_id: &str) -> Result<PartitionPin> {
        let view = &self.inner.view;
        let partition = view.partition_of(task_id);
        // Pinned first: the view then holds what it says of the task until the read is done.
        match view.pin(partition) {
            Some(pin) if view.is_settled(task_id) => Ok(pin),
            pin => self.sync_pinned(partition, pin).await,
        }
    }

    /// Sync the view to `partition`'s end, `pin` taken before; the pin, if the partition was
    /// held when it was taken.
    async fn sync_pinned(&self, partition: u32, pin: Option<PartitionPin>) -> Result<PartitionPin> {
        let sync = self
            .inner
            .view
            .sync(Some(partition), self.inner.config.sync_timeout);
        trace::sync_span(partition, sync).await?;
        pin.ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                format!("partition {partition} was not held here when the request began; retry"),
            )
        })
    }
}

/// Where [`Bridge::commit`] writes a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Topics {
    /// The events topic only (a cancel request: it decides, it is no work).
    Events,
    /// The commands topic only (queueing again a command the log of record already has).
    Commands,
    /// The events topic, then the commands copy (a new command or a follow-up), but for a
    /// command a worker of this process claims in the same append: that one needs no copy.
    Both,
}

/// Keep at most the `history_length` newest history messages (A2A: unset = all, 0 = none).
pub(crate) fn trim_history(mut task: Task, history_length: Option<i32>) -> Task {
    if let Some(n) = history_length {
        let n = usize::try_from(n.max(0)).unwrap_or(0);
        if task.history.len() > n {
            task.history.drain(..task.history.len() - n);
        }
    }
    task
}

pub(crate) use crate::retention::now_ms;
use crate::retention::{DEFAULT_RETENTION, millis};

pub(crate) fn not_found(task_id: &str) -> Error {
    Error::task_not_found(task_id)
}
