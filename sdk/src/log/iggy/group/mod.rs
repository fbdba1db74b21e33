//! Consumer-group members on Iggy consumer groups, including recovery from the "ghost member"
//! problem after a server restart.
//!
//! Each member is its own connection (Iggy tracks membership per client session). A member
//! asks the server which partitions it owns (`SyncConsumerGroup`) and polls those partitions
//! explicitly: from its own cursor when it has returned records of that partition already
//! (Iggy's `next` only advances on a stored offset, and our contract lets a member poll again
//! before committing), else with `next`, which resumes after the group's committed offset.
//! A round skips a partition whose end has not passed what the member has seen there (its
//! cursor, or the end before a poll that found nothing); the ends come from one description
//! of the topic a round, so an idle member asks once a pause, not once a partition, and every
//! partition is polled anyway every `SWEEP_EVERY` (longer on a wide topic, where each sweep
//! is a burst of the server's work for a safety net). A new member's first round polls only
//! the partitions that hold records.
//!
//! Ghosts: a server restart keeps the members it had but not their sessions, so the old
//! members hold their partitions forever and the reconnected client, a new session, is not a
//! member (polls fail with 5006). When a member finds the group holding members that are no
//! longer connected, it reads the group's committed offsets, deletes and recreates the group,
//! joins it and stores the offsets again. A group whose members are all connected is joined
//! as it is, so several members recovering at once do not keep deleting each other.

mod ghosts;
mod positions;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use iggy::prelude::{
    Client, Consumer, ConsumerGroupClient, ConsumerOffsetClient, Identifier, IggyClient,
    MessageClient, PollingStrategy, TopicClient,
};
use iggy_binary_protocol::codes::SYNC_CONSUMER_GROUP_CODE;
use iggy_binary_protocol::requests::consumer_groups::SyncConsumerGroupRequest;
use iggy_binary_protocol::responses::consumer_groups::SyncConsumerGroupResponse;
use iggy_binary_protocol::{WireDecode, WireEncode, WireIdentifier};
use tokio::time::Instant;

use self::positions::Positions;
use crate::error::{Error, ErrorKind, Result};
use crate::log::iggy::errors::{
    GROUP_NOT_FOUND, NOT_A_MEMBER, PARTITION_NOT_OWNED, RESOURCE_NOT_FOUND, map_err,
};
use crate::log::iggy::options::IggyOptions;
use crate::log::iggy::topic::{TopicHandle, record};
use crate::log::{Delivery, GroupConsumer, TopicRef};

/// First pause of a poll that found nothing.
const POLL_PAUSE_MIN: Duration = Duration::from_millis(1);
/// Longest pause between two empty rounds of a poll.
const POLL_PAUSE_MAX: Duration = Duration::from_millis(20);
/// How often a round polls every owned partition whatever the topic's description says
/// (between, a partition whose end has not passed what the member has seen is skipped). A
/// safety net only: the description's ends are what read-your-writes relies on too.
const SWEEP_EVERY: Duration = Duration::from_secs(10);
/// How much longer the sweep's period grows per owned partition past 66 (150 s at 1000).
const SWEEP_PER_PARTITION: Duration = Duration::from_millis(150);
/// How often a member asks which partitions it owns, to pick up partitions handed to it when
/// another member leaves (partitions taken away are noticed at once: their polls fail).
const RESYNC_EVERY: Duration = Duration::from_millis(250);
/// The partition id Iggy answers an empty poll with when the member's assignment is stale.
const RESYNC_SENTINEL: u32 = iggy_common::RESYNC_REQUIRED_PARTITION_SENTINEL;

/// One member of an Iggy consumer group.
pub(super) struct IggyGroupConsumer {
    client: Arc<IggyClient>,
    /// The topic as this process sees it: its appends wake a waiting poll.
    handle: Arc<TopicHandle>,
    topic: TopicRef,
    stream_id: Identifier,
    topic_id: Identifier,
    group: String,
    group_id: Identifier,
    consumer: Consumer,
    partitions: u32,
    /// The encoded `SyncConsumerGroup` request; the same bytes every time.
    sync_request: Bytes,
    /// The partitions the server last said this member owns.
    owned: Vec<u32>,
    /// When `owned` was last refreshed; `None` forces a refresh before the next poll.
    synced_at: Option<Instant>,
    /// Per owned partition, the member's cursor and how far it knows it is done.
    positions: Positions,
    /// Where the next poll starts in `owned`, so busy partitions do not starve the others.
    turn: usize,
    /// When the next round over every owned partition is due, and the pause before the one
    /// after an empty round (doubling from [`POLL_PAUSE_MIN`] to [`POLL_PAUSE_MAX`]).
    full_round_at: Instant,
    pause: Duration,
    /// When a round last polled every owned partition ([`SWEEP_EVERY`]), or the member was
    /// made.
    swept_at: Instant,
    left: bool,
}

impl IggyGroupConsumer {
    /// Connect a new session and make it a member of `group` on `topic`.
    pub(super) async fn join(
        options: &IggyOptions,
        handle: &Arc<TopicHandle>,
        group: &str,
    ) -> Result<Self> {
        let named = |name: &str| {
            WireIdentifier::named(name).map_err(|e| {
                Error::new(ErrorKind::InvalidParams, format!("bad name {name:?}")).with_source(e)
            })
        };
        let sync_request = SyncConsumerGroupRequest {
            stream_id: named(&handle.name.stream)?,
            topic_id: named(&handle.name.topic)?,
            group_id: named(group)?,
        }
        .to_bytes();
        let group_id = Identifier::named(group)
            .map_err(|e| map_err(e, format_args!("group name {group:?}")))?;
        let client = Arc::new(options.connect().await?);
        let mut member = Self {
            client,
            handle: Arc::clone(handle),
            topic: handle.name.clone(),
            stream_id: handle.stream_id.clone(),
            topic_id: handle.topic_id.clone(),
            group: group.to_owned(),
            consumer: Consumer::group(group_id.clone()),
            group_id,
            partitions: handle.partitions(),
            sync_request,
            owned: Vec::new(),
            synced_at: None,
            positions: Positions::default(),
            turn: 0,
            full_round_at: Instant::now(),
            pause: POLL_PAUSE_MIN,
            // The first round describes the topic and polls only the partitions that hold
            // records: a new member of a wide, mostly empty topic asks the server little.
            swept_at: Instant::now(),
            left: false,
        };
        member.enter().await?;
        Ok(member)
    }

    /// Become a member: create the group if needed, clear it of ghosts, join, learn the
    /// assignment. A new member starts every partition from the committed offset.
    async fn enter(&mut self) -> Result<()> {
        let details = self
            .client
            .get_consumer_group(&self.stream_id, &self.topic_id, &self.group_id)
            .await
            .map_err(|e| map_err(e, self.doing("reading")))?;
        match details {
            None => self.create().await?,
            Some(details) if self.ghosts(&details).await? > 0 => {
                return self.recreate().await;
            }
            Some(_) => {}
        }
        self.join_as_is().await
    }

    /// Join the group as it is and learn the assignment.
    async fn join_as_is(&mut self) -> Result<()> {
        self.client
            .join_consumer_group(&self.stream_id, &self.topic_id, &self.group_id)
            .await
            .map_err(|e| map_err(e, self.doing("joining")))?;
        self.positions.clear();
        self.synced_at = None;
        if !self.sync_once().await? {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "{} does not list this member right after it joined",
                    self.doing("")
                ),
            ));
        }
        Ok(())
    }

    /// Refresh the assignment, rejoining if the server no longer knows this member.
    async fn sync(&mut self) -> Result<()> {
        if self.sync_once().await? {
            return Ok(());
        }
        self.enter().await
    }

    /// Ask which partitions this member owns. `Ok(false)`: it is not a member (any more).
    async fn sync_once(&mut self) -> Result<bool> {
        let response = match self
            .client
            .send_binary_request(SYNC_CONSUMER_GROUP_CODE, self.sync_request.clone())
            .await
        {
            Ok(response) => response,
            Err(e) if e.as_code() == NOT_A_MEMBER || GROUP_NOT_FOUND.contains(&e.as_code()) => {
                return Ok(false);
            }
            Err(e) => return Err(map_err(e, self.doing("syncing with"))),
        };
        if response.is_empty() {
            // The server answers an assignment, possibly empty, to any member.
            return Ok(false);
        }
        let (assignment, _) = SyncConsumerGroupResponse::decode(&response).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                self.doing("decoding the assignment of"),
            )
            .with_source(e)
        })?;
        let mut owned = assignment.partitions;
        owned.sort_unstable();
        self.positions.retain(&owned);
        self.owned = owned;
        self.synced_at = Some(Instant::now());
        Ok(true)
    }

    /// Learn every partition's end from one description of the topic, shared with whoever
    /// else asks the handle at the same time.
    async fn learn_ends(&self) -> Result<()> {
        let disappeared = || {
            Error::new(
                ErrorKind::Internal,
                format!("topic {} disappeared", self.topic),
            )
        };
        self.handle
            .probe(|| async {
                self.client
                    .get_topic(&self.stream_id, &self.topic_id)
                    .await
                    .map_err(|e| map_err(e, self.doing("describing the topic of")))?
                    .ok_or_else(disappeared)
            })
            .await
            .map(drop)
    }

    /// One round over the owned partitions; the first with records wins. Unless `sweep`, a
    /// partition whose end (as this handle last saw it) has not passed what the member has
    /// seen there is skipped: an idle member of a wide topic would otherwise ask every
    /// partition for nothing, every pause.
    async fn poll_round(&mut self, count: u32, sweep: bool) -> Result<Option<Delivery>> {
        if self.synced_at.is_none_or(|at| at.elapsed() >= RESYNC_EVERY) {
            self.sync().await?;
        }
        let owned = self.owned.len();
        for step in 0..owned {
            let index = (self.turn + step) % owned;
            let Some(&partition) = self.owned.get(index) else {
                break;
            };
            let end = self.handle.end(partition);
            if !sweep && self.positions.caught_up(partition, end) {
                continue;
            }
            // Records this process appended (or read) are kept by the handle: past the first
            // poll of a partition, the member's cursor reads them there without a round trip
            // (the server would answer the same records; a record at an offset never changes).
            if let Some(next) = self.positions.cursor(partition)
                && let Some(tail) = self.handle.tail(partition)
            {
                let records = tail.read(partition, next, count as usize);
                if let Some(last) = records.last() {
                    self.turn = index + 1;
                    self.positions.returned(partition, last.offset + 1);
                    return Ok(Some(Delivery { partition, records }));
                }
            }
            let strategy = match self.positions.cursor(partition) {
                Some(next) => PollingStrategy::offset(next),
                None => PollingStrategy::next(),
            };
            let polled = match self
                .client
                .poll_messages(
                    &self.stream_id,
                    &self.topic_id,
                    Some(partition),
                    &self.consumer,
                    &strategy,
                    count,
                    false,
                )
                .await
            {
                Ok(polled) => polled,
                Err(e) if e.as_code() == NOT_A_MEMBER => {
                    self.enter().await?;
                    return Ok(None);
                }
                Err(e) if e.as_code() == PARTITION_NOT_OWNED => {
                    self.synced_at = None;
                    return Ok(None);
                }
                Err(e) => return Err(map_err(e, self.doing("polling"))),
            };
            if polled.partition_id == RESYNC_SENTINEL {
                self.synced_at = None;
                return Ok(None);
            }
            if polled.messages.is_empty() {
                self.positions.drained(partition, end);
                continue;
            }
            self.turn = index + 1;
            let records: Vec<_> = polled
                .messages
                .into_iter()
                .map(|message| record(partition, message))
                .collect();
            if let Some(last) = records.last() {
                self.positions.returned(partition, last.offset + 1);
            }
            return Ok(Some(Delivery { partition, records }));
        }
        Ok(None)
    }

    async fn store(&self, partition: u32, last_done: u64) -> Result<(), iggy::prelude::IggyError> {
        self.client
            .store_consumer_offset(
                &self.consumer,
                &self.stream_id,
                &self.topic_id,
                Some(partition),
                last_done,
            )
            .await
    }

    fn doing(&self, verb: &str) -> String {
        format!("{verb} consumer group {:?} on {}", self.group, self.topic)
    }
}

#[async_trait]
impl GroupConsumer for IggyGroupConsumer {
    async fn poll(&mut self, max: usize, timeout: Duration) -> Result<Option<Delivery>> {
        let count = u32::try_from(max).unwrap_or(u32::MAX);
        if count == 0 {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                "poll: max must be at least 1",
            ));
        }
        let deadline = Instant::now() + timeout;
        loop {
            // Made before the round, so an append through this process during it is not
            // missed: the wait below ends at it.
            let handle = Arc::clone(&self.handle);
            let moved = handle.moved.notified();
            tokio::pin!(moved);
            // When a full round is due the topic's description says which partitions grew
            // (records written elsewhere show only so), and every partition is polled once a
            // sweep is due; between, only those this process saw grow are.
            let full = Instant::now() >= self.full_round_at;
            let sweep_every = SWEEP_EVERY.max(SWEEP_PER_PARTITION * self.owned.len() as u32);
            let sweep = full && self.swept_at.elapsed() >= sweep_every;
            // Records past the ends this handle knew before the round were written elsewhere.
            let known: Vec<(u32, u64)> = if full {
                let handle = &self.handle;
                self.owned.iter().map(|&p| (p, handle.end(p))).collect()
            } else {
                Vec::new()
            };
            // A dropped connection or a rejoin in progress is retried until the deadline; only
            // if it is still failing then does the caller see the error.
            let round = async {
                if full && !sweep {
                    self.learn_ends().await?;
                }
                self.poll_round(count, sweep).await
            }
            .await;
            if sweep && matches!(round, Ok(None)) {
                self.swept_at = Instant::now();
            }
            if full {
                // Records another process wrote may come in a burst: ask again soon. A round
                // that found none, or only records this process appended (whose appends wake
                // this wait themselves), backs off.
                let news = match &round {
                    Ok(Some(delivery)) => delivery.records.last().is_some_and(|last| {
                        known
                            .binary_search_by_key(&delivery.partition, |&(p, _)| p)
                            .is_ok_and(|i| known.get(i).is_some_and(|&(_, end)| last.offset >= end))
                    }),
                    _ => false,
                };
                self.pause = if news {
                    POLL_PAUSE_MIN
                } else {
                    (self.pause * 2).min(POLL_PAUSE_MAX)
                };
                self.full_round_at = Instant::now() + self.pause;
            }
            let failure = match round {
                Ok(Some(delivery)) => return Ok(Some(delivery)),
                Ok(None) => None,
                Err(e) if e.is_retryable() => Some(e),
                Err(e) => return Err(e),
            };
            let now = Instant::now();
            if now >= deadline {
                return failure.map_or(Ok(None), Err);
            }
            let wake = self.full_round_at.min(deadline);
            tokio::select! {
                () = tokio::time::sleep_until(wake) => {}
                () = &mut moved => {}
            }
        }
    }

    /// Iggy stores the offset of the last record *processed*; ours is the next one to process,
    /// hence the `- 1` (and nothing to store for 0).
    async fn commit(&mut self, partition: u32, next_offset: u64) -> Result<()> {
        let Some(last_done) = next_offset.checked_sub(1) else {
            return Ok(());
        };
        let mut result = self.store(partition, last_done).await;
        if matches!(&result, Err(e) if e.as_code() == NOT_A_MEMBER) {
            self.enter().await?;
            result = self.store(partition, last_done).await;
        }
        match result {
            Ok(()) => {
                self.positions.committed(partition, next_offset);
                Ok(())
            }
            Err(e) if e.as_code() == RESOURCE_NOT_FOUND || e.as_code() == PARTITION_NOT_OWNED => {
                // The partition moved to another member, which redelivers from the last
                // commit that did land (at-least-once; consumers deduplicate).
                tracing::debug!(topic = %self.topic, group = %self.group, partition, "commit on a partition this member no longer owns");
                self.positions.forget(partition);
                self.synced_at = None;
                Ok(())
            }
            Err(e) => Err(map_err(e, self.doing("committing to"))),
        }
    }

    fn owned_partitions(&self) -> Vec<u32> {
        self.owned.clone()
    }

    async fn leave(mut self: Box<Self>) -> Result<()> {
        self.left = true;
        let left = self
            .client
            .leave_consumer_group(&self.stream_id, &self.topic_id, &self.group_id)
            .await;
        // The session ends either way; a member that is already gone has nothing to leave.
        let _ = self.client.shutdown().await;
        match left {
            Err(e) if e.as_code() != NOT_A_MEMBER && !GROUP_NOT_FOUND.contains(&e.as_code()) => {
                Err(map_err(e, self.doing("leaving")))
            }
            _ => Ok(()),
        }
    }
}

impl Drop for IggyGroupConsumer {
    /// A member dropped without [`leave`](GroupConsumer::leave) leaves in a background task
    /// when a Tokio runtime is around; otherwise its connection closes and the server removes
    /// it within about half a second.
    fn drop(&mut self) {
        if self.left {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = Arc::clone(&self.client);
        let (stream_id, topic_id, group_id) = (
            self.stream_id.clone(),
            self.topic_id.clone(),
            self.group_id.clone(),
        );
        runtime.spawn(async move {
            let _ = client
                .leave_consumer_group(&stream_id, &topic_id, &group_id)
                .await;
            let _ = client.shutdown().await;
        });
    }
}

impl fmt::Debug for IggyGroupConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IggyGroupConsumer")
            .field("topic", &self.topic)
            .field("group", &self.group)
            .field("owned", &self.owned)
            .field("positions", &self.positions)
            .finish_non_exhaustive()
    }
}
