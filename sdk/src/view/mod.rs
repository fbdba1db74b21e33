//! The task view: what a bridge (or a worker) knows about tasks, rebuilt from the events topic.
//!
//! The view follows the partitions it holds of an agent's events topic (every one, unless told
//! otherwise: [`part`]) and keeps, per task, only what it needs to answer quickly: the owner, the context id, the
//! [`TaskMachine`] (state, status time, applied message ids while the task is live), and the
//! offsets of the task's applied records, each marked with whether it carries content. A full
//! [`Task`] (history, artifacts) is never kept: [`TaskView::get`] and [`TaskView::load`] read
//! back only the task's content records, by offset, and fold them with the status the machine
//! holds ([`fold_content`]), so their cost depends on the task's size, not on the log's length.
//!
//! Only records that the machine applies are remembered, and the fold of exactly those
//! records gives the same task as the fold of all of them (ignored records change nothing).
//! Of those, the ones without content (a cancel, a status without a message) only set the
//! status, which the machine already holds; `fold_content` is tested to give the same task.
//!
//! The view writes nothing anywhere: dropping it and starting again over the same log gives
//! the same answers.

mod ahead;
mod checkpoint;
mod compact;
mod follow;
mod handoff;
mod hold;
mod key;
mod list;
mod own;
mod part;
mod persist;
mod pins;
mod polled;
mod read;
mod subscribe;
mod tasks;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agentlog_wire::fold::{Change, Claim, StatusMark};
use agentlog_wire::{RecordBody, TaskState};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agent::Caller;
use crate::error::Result;
use crate::log::raw::Prefetcher;
use crate::log::{Applier, Log, TopicRef, partition_for_key};
use crate::retention::now_ms;

pub use compact::{CompactTopics, Compacted};
pub(crate) use handoff::{LocalWorker, ReservedTurn};
pub use hold::PartitionPin;
pub use own::OwnCommand;
use part::Part;
pub use part::PartitionStatus;
pub use persist::CheckpointInfo;
pub use pins::PartitionPins;
pub use read::TurnOrigin;
pub(crate) use subscribe::NewTaskWatch;
pub(crate) use tasks::applied::Applied;
pub use tasks::index::ListFilter;
use tasks::{Entry, applied};

/// How `ListTasks` orders tasks of equal status time (descending, after the status time): a
/// hash of the id every replica computes alike, for merging the pages of several views.
pub(crate) fn list_tie(task_id: &str) -> u32 {
    key::stable_hash(key::KeyRef::of(task_id))
}

/// One applied record of a task, as subscribers receive it.
#[derive(Debug, Clone)]
pub struct TaskEvent {
    /// The record's offset in the task's partition of the events topic: its log position.
    pub offset: u64,
    /// The task.
    pub task_id: Arc<str>,
    /// The task's context.
    pub context_id: Arc<str>,
    /// The record's timestamp, Unix milliseconds.
    pub timestamp_ms: u64,
    /// The task's state after the record.
    pub state: TaskState,
    /// What the record changed.
    pub change: Change,
}

/// What the view knows about one task at one moment.
#[derive(Debug, Clone)]
pub struct TaskInfo {
    /// The task id.
    pub id: Arc<str>,
    /// The task's context.
    pub context_id: Arc<str>,
    /// The partition holding the task's records.
    pub partition: u32,
    /// The current state.
    pub state: TaskState,
    /// When the status was set, Unix milliseconds.
    pub status_timestamp_ms: u64,
    /// Whether the record that set the status carried a message.
    pub status_has_message: bool,
    /// The `messageId` the task currently waits on a worker for (the latest client message).
    pub last_message_id: Option<Arc<str>>,
    /// The claim on the current turn, if a worker holds it.
    pub claim: Option<Claim>,
    /// How many claims the task has had (the latest claim's attempt number).
    pub attempts: u32,
    /// Follow-up messages queued behind the current turn, oldest first.
    pub pending: Vec<Arc<str>>,
    /// The task's applied records, in order.
    pub(crate) records: Arc<[Applied]>,
    /// A reply answered in the task's place (fold rule 15): there is no task for readers,
    /// only the answer for the sender of its command ([`TaskView::answer`]).
    pub answered: bool,
    /// The client has seen the task (fold rule 15): a reply would complete it.
    pub shown: bool,
}

impl TaskInfo {
    /// The offset of the last applied record: the position of a snapshot taken now.
    pub fn position(&self) -> u64 {
        applied::position(&self.records)
    }

    /// The offsets of the applied records the view lists, in order: all of them, unless the
    /// task has more than [`MAX_LISTED`](applied::MAX_LISTED) (then [`TaskView::task_records`]
    /// reads the rest from the log).
    pub fn offsets(&self) -> impl Iterator<Item = u64> + '_ {
        applied::listed(&self.records).iter().map(|r| r.offset())
    }

    /// Whether the task waits for a worker to claim its turn (submitted, unclaimed).
    pub fn awaits_claim(&self) -> bool {
        self.state == TaskState::Submitted && self.claim.is_none()
    }

    fn status(&self) -> StatusMark {
        StatusMark {
            state: self.state,
            timestamp_ms: self.status_timestamp_ms,
            has_message: self.status_has_message,
        }
    }
}

struct Inner {
    log: Log,
    topic: TopicRef,
    partitions: u32,
    /// Loads a task's records ahead of a `GetTask`'s read of them, where the log can.
    prefetcher: Option<Prefetcher>,
    /// Every partition of the topic, held or not ([`part`]).
    parts: Box<[Part]>,
    records_seen: AtomicU64,
    undecodable: AtomicU64,
    /// `true` while every partition the view holds as assigned has applied everything its
    /// log held when its hold began: the view answers from its present.
    caught_up: watch::Sender<bool>,
    options: ViewOptions,
    /// Cancelled when the last clone of the view drops; each hold's follower has a child.
    shutdown: CancellationToken,
    /// New commands kept parsed for a worker's first turn.
    handoff: handoff::Handoff,
    /// The folds of tasks read again unchanged.
    polled: polled::Polled,
    /// The view as the applier of this process's appends ([`TaskView::applier`]).
    applier: Applier,
}

impl Inner {
    /// The share of the partition `task_id` lives in.
    fn part_of(&self, task_id: &str) -> (u32, &Part) {
        let partition = partition_for_key(task_id.as_bytes(), self.partitions);
        // `partition_for_key` is below the count, and there is a part per partition.
        (partition, &self.parts[partition as usize])
    }
}

/// How a view starts and what it keeps beside the log.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ViewOptions {
    /// The topic of checkpoints (`AgentTopics::checkpoints`): the view starts from the newest
    /// usable one there (else it replays the log from its start).
    pub checkpoints: Option<TopicRef>,
    /// Write a checkpoint there this often once caught up, when at least
    /// `checkpoint_records` records were applied since the last one. `None`: only read them.
    pub checkpoint_every: Option<std::time::Duration>,
    /// See `checkpoint_every`.
    pub checkpoint_records: u64,
    /// Also delete, every `checkpoint_every`, the log's segments only expired tasks needed
    /// ([`TaskView::compact`]), and those of these topics. For the one view per log that
    /// writes (a bridge's); a backend that manages its own retention (Iggy) has none.
    pub compact: Option<CompactTopics>,
    /// Apply only the records this verifier admits (signed by a trusted key allowed their
    /// kind); the others are skipped, counted by reason and warned with their position.
    /// `None` applies every record that decodes. A view's own appends
    /// ([`apply_own`](TaskView::apply_own)) are not checked again.
    pub verifier: Option<crate::security::RecordVerifier>,
    /// The partitions to hold from the start ([`TaskView::hold`] adds more); `None`: every one.
    pub holding: Option<Vec<u32>>,
}

impl ViewOptions {
    /// No checkpoints, no compaction, no verifier.
    pub fn new() -> Self {
        Self::default()
    }
}

setters!(ViewOptions {
    checkpoint_records: u64,
} optional {
    checkpoints: TopicRef,
    checkpoint_every: std::time::Duration,
    compact: CompactTopics,
    verifier: crate::security::RecordVerifier,
    holding: Vec<u32>,
});

impl ViewOptions {
    /// Start from the checkpoints on `topic`, and write one every minute when 10,000 records
    /// or more came since the last.
    pub fn checkpointed(topic: TopicRef) -> Self {
        Self {
            checkpoints: Some(topic),
            checkpoint_every: Some(std::time::Duration::from_secs(60)),
            checkpoint_records: 10_000,
            compact: None,
            verifier: None,
            holding: None,
        }
    }

    /// Start from the checkpoints on `topic`, and write none.
    pub fn restore_only(topic: TopicRef) -> Self {
        Self {
            checkpoints: Some(topic),
            ..Self::default()
        }
    }
}

/// A live view of an events topic. Cheap to clone; followers stop when the last clone drops.
#[derive(Clone)]
pub struct TaskView {
    inner: Arc<Inner>,
    _guard: Arc<ShutdownOnDrop>,
}

impl std::fmt::Debug for TaskView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskView")
            .field("topic", &self.inner.topic)
            .field("partitions", &self.inner.partitions)
            .finish_non_exhaustive()
    }
}

struct ShutdownOnDrop(CancellationToken);

impl Drop for ShutdownOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl TaskView {
    /// Start following `topic` (which must exist) from offset 0 on every partition.
    pub async fn start(log: Log, topic: TopicRef) -> Result<Self> {
        Self::start_with(log, topic, ViewOptions::default()).await
    }

    /// Start following `topic` (which must exist), holding the partitions `options` names
    /// (every one by default): each from its newest usable checkpoint if `options` names their
    /// topic, else from offset 0.
    pub async fn start_with(log: Log, topic: TopicRef, options: ViewOptions) -> Result<Self> {
        let partitions = log.partitions(&topic).await?;
        let count_live = options.compact.is_some();
        let holding: Vec<u32> = match &options.holding {
            Some(holding) => holding.clone(),
            None => (0..partitions).collect(),
        };
        let shutdown = CancellationToken::new();
        let inner = Arc::new(Inner {
            log: log.clone(),
            prefetcher: log.prefetcher(&topic),
            topic: topic.clone(),
            partitions,
            parts: (0..partitions).map(|_| Part::new(count_live)).collect(),
            records_seen: AtomicU64::new(0),
            undecodable: AtomicU64::new(0),
            caught_up: watch::channel(holding.is_empty()).0,
            handoff: handoff::Handoff::default(),
            polled: polled::Polled::default(),
            applier: Applier::new(),
            shutdown: shutdown.clone(),
            options,
        });
        let view = Self {
            inner,
            _guard: Arc::new(ShutdownOnDrop(shutdown.clone())),
        };
        // The restores side by side: a restart is ready sooner.
        futures::future::try_join_all(holding.iter().map(|p| view.hold(*p))).await?;
        if view.inner.options.checkpoint_every.is_some() {
            tokio::spawn(persist::checkpoint_periodically(
                Arc::downgrade(&view.inner),
                shutdown.clone(),
            ));
        }
        tokio::spawn(follow::expire_periodically(
            Arc::downgrade(&view.inner),
            shutdown,
        ));
        Ok(view)
    }

    /// Whether the view has replayed the log it started on: every partition it holds as
    /// assigned has applied every record its log held when the hold began. Until then a read
    /// waits for the replay (up to its sync timeout), and a readiness probe should say "not
    /// ready".
    pub fn caught_up(&self) -> bool {
        *self.inner.caught_up.borrow()
    }

    /// Wait until [`caught_up`](Self::caught_up).
    pub async fn wait_caught_up(&self) {
        let mut rx = self.inner.caught_up.subscribe();
        // The sender lives as long as `self`: an error cannot happen while we hold it.
        let _ = rx.wait_for(|caught_up| *caught_up).await;
    }

    /// The partition a task's records live in.
    pub fn partition_of(&self, task_id: &str) -> u32 {
        partition_for_key(task_id.as_bytes(), self.inner.partitions)
    }

    /// The number of partitions of the topic (held or not).
    pub fn partitions(&self) -> u32 {
        self.inner.partitions
    }

    /// The claim on the task's current turn, if any: what a worker checks after writing one.
    pub fn claim_of(&self, task_id: &str) -> Option<Claim> {
        let tasks = self.inner.part_of(task_id).1.read();
        tasks.entries.get(task_id)?.machine.claim().cloned()
    }

    /// Whether a push config was registered on the task in its current incarnation (fold rule
    /// 16; it may have been deleted since: its records say). A task the view does not know has
    /// none.
    pub fn has_push_configs(&self, task_id: &str) -> bool {
        let tasks = self.inner.part_of(task_id).1.read();
        tasks
            .entries
            .get(task_id)
            .is_some_and(|entry| entry.machine.has_push_configs())
    }

    /// How many finished tasks wait to expire (they have a retention), for metrics and tests.
    pub fn expiring_count(&self) -> usize {
        self.inner
            .parts
            .iter()
            .map(|p| p.read().expiring.len())
            .sum()
    }

    /// Drop the tasks expired by now (a view does this on its own as records arrive and
    /// every second; readers never see an expired task either way). How many went.
    pub fn expire_now(&self) -> usize {
        self.inner
            .parts
            .iter()
            .map(|part| part.expire_locked(&mut part.write()))
            .sum()
    }

    /// Whether the turn answering `turn` of the task is over ([`TaskMachine::turn_is_over`];
    /// a task the view does not know counts as over).
    ///
    /// [`TaskMachine::turn_is_over`]: agentlog_wire::fold::TaskMachine::turn_is_over
    pub fn turn_is_over(&self, task_id: &str, turn: &str) -> bool {
        let tasks = self.inner.part_of(task_id).1.read();
        tasks
            .entries
            .get(task_id)
            .is_none_or(|entry| entry.machine.turn_is_over(turn))
    }

    /// The oldest follow-up queued behind the task's current turn, if any.
    pub fn first_pending(&self, task_id: &str) -> Option<Arc<str>> {
        let tasks = self.inner.part_of(task_id).1.read();
        tasks
            .entries
            .get(task_id)?
            .machine
            .pending()
            .next()
            .map(Arc::from)
    }

    /// The offset of the command that created the task, if the view has it: which of several
    /// commands for one task id the fold took (the first in log order).
    pub fn command_offset(&self, task_id: &str) -> Option<u64> {
        let tasks = self.inner.part_of(task_id).1.read();
        tasks
            .entries
            .get(task_id)?
            .records
            .first()
            .map(|r| r.offset())
    }

    /// Whether the live task `task_id` applied a record with `message_id` (a client message
    /// or a worker's record; always `false` once the task is terminal).
    pub fn has_applied(&self, task_id: &str, message_id: &str) -> bool {
        let tasks = self.inner.part_of(task_id).1.read();
        tasks
            .entries
            .get(task_id)
            .is_some_and(|entry| entry.machine.has_applied(message_id))
    }

    /// The client message `message_id` of the task `info` describes, read back from its
    /// command or continue record: what a retried send is compared with.
    pub async fn client_message(
        &self,
        info: &TaskInfo,
        message_id: &str,
    ) -> Result<Option<agentlog_wire::a2a::Message>> {
        let records = self.task_records(info, true).await?;
        Ok(records.into_iter().find_map(|(_, record)| {
            let (RecordBody::Command { params, .. } | RecordBody::Continue { params }) =
                &record.body
            else {
                return None;
            };
            if record.header.message_id != message_id {
                return None;
            }
            serde_json::from_str::<agentlog_wire::a2a::SendMessageRequest>(params)
                .ok()
                .map(|request| request.message)
        }))
    }

    /// How many records the log holds that the view has not applied yet, over the partitions
    /// it holds.
    pub async fn lag(&self) -> Result<u64> {
        let ends = self.inner.log.end_offsets(&self.inner.topic).await?;
        Ok(ends
            .iter()
            .zip(self.inner.parts.iter())
            .filter(|(_, part)| part.held())
            .map(|(end, part)| end.saturating_sub(part.applied_next()))
            .sum())
    }

    /// The verifier the view checks records with, if a trust is configured (its counts are
    /// what `/metrics` shows as `agentlog_records_rejected_total`).
    pub fn verifier(&self) -> Option<&crate::security::RecordVerifier> {
        self.inner.options.verifier.as_ref()
    }

    /// Records seen and records that could not be decoded (and were skipped).
    pub fn counters(&self) -> (u64, u64) {
        (
            self.inner.records_seen.load(Ordering::Relaxed),
            self.inner.undecodable.load(Ordering::Relaxed),
        )
    }

    /// How many tasks the view knows (over the partitions it holds).
    pub fn task_count(&self) -> usize {
        self.inner
            .parts
            .iter()
            .map(|p| p.read().entries.len())
            .sum()
    }

    /// The task if it exists and `caller` may see it; also a task a reply answered in its
    /// place (`answered`: its sender's retry needs it; readers answer it as not found).
    pub fn lookup(&self, caller: &Caller, task_id: &str) -> Option<TaskInfo> {
        let (partition, part) = self.inner.part_of(task_id);
        let tasks = part.read();
        let entry = tasks.owned(caller, task_id, now_ms())?;
        Some(info(partition, entry))
    }

    /// The task whoever owns it (for workers, which act for every caller), with its owner.
    pub fn lookup_any(&self, task_id: &str) -> Option<(TaskInfo, Caller)> {
        let (partition, part) = self.inner.part_of(task_id);
        let tasks = part.read();
        let entry = tasks.live_entry(task_id, now_ms())?;
        let owner = tasks.owners.caller(entry.owner).clone();
        Some((info(partition, entry), owner))
    }
}

/// What the view knows of `entry`, a task of `partition`.
fn info(partition: u32, entry: &Entry) -> TaskInfo {
    let id = entry.id.to_arc();
    TaskInfo {
        partition,
        id,
        context_id: entry.context.to_arc(),
        state: entry.machine.state().unwrap_or(TaskState::Unspecified),
        status_timestamp_ms: entry.machine.status_timestamp_ms(),
        status_has_message: entry.machine.status().is_some_and(|s| s.has_message),
        last_message_id: entry.machine.last_message_id().map(Arc::from),
        claim: entry.machine.claim().cloned(),
        attempts: entry.machine.attempts(),
        pending: entry.machine.pending().map(Arc::from).collect(),
        records: entry.records.as_slice().into(),
        answered: entry.machine.is_answered(),
        shown: entry.machine.is_shown(),
    }
}

impl TaskView {
    /// The tasks of `partition` whose turn waits for a worker's claim (Unix milliseconds):
    /// submitted and unclaimed since before `unclaimed_before_ms`, or claimed under a lease
    /// over since before `lease_over_before_ms`; oldest first, with the turn (the
    /// `messageId`) each waits on: what a sweeper puts back on the workers' queue.
    ///
    /// The first call starts the index (a view nobody sweeps keeps none).
    pub fn awaiting_claim(
        &self,
        partition: u32,
        unclaimed_before_ms: u64,
        lease_over_before_ms: u64,
    ) -> Vec<(Arc<str>, Arc<str>)> {
        let Some(part) = self.inner.parts.get(partition as usize) else {
            return Vec::new();
        };
        let mut tasks = part.write();
        tasks.track_awaiting();
        let Some(awaiting) = tasks.awaiting.as_ref() else {
            return Vec::new();
        };
        awaiting
            .since_before(unclaimed_before_ms.max(lease_over_before_ms))
            .filter_map(|(since, slot)| {
                let entry = tasks.entries.entry(slot)?;
                let machine = &entry.machine;
                let before = if machine.awaits_claim() {
                    unclaimed_before_ms
                } else {
                    lease_over_before_ms
                };
                let turn = machine.last_message_id().filter(|_| since < before)?;
                Some((entry.id.to_arc(), Arc::from(turn)))
            })
            .collect()
    }

    /// The input-required tasks of `partition`, oldest first, with since when each waits
    /// (its status time, Unix milliseconds): what a sweeper expires abandoned asks among.
    ///
    /// The first call starts the index (a view nobody sweeps keeps none).
    pub fn awaiting_input(&self, partition: u32) -> Vec<(Arc<str>, u64)> {
        let Some(part) = self.inner.parts.get(partition as usize) else {
            return Vec::new();
        };
        let mut tasks = part.write();
        tasks.track_awaiting_input();
        let Some(waiting) = tasks.awaiting_input.as_ref() else {
            return Vec::new();
        };
        waiting
            .all()
            .filter_map(|(since, slot)| Some((tasks.entries.entry(slot)?.id.to_arc(), since)))
            .collect()
    }
}

#[cfg(test)]
impl TaskView {
    /// The tasks of the partition `task_id` lives in, read-locked.
    fn read_of(&self, task_id: &str) -> parking_lot::RwLockReadGuard<'_, tasks::Tasks> {
        self.inner.part_of(task_id).1.read()
    }
}
