//! Consumer-group members on Iggy consumer groups, including recovery from the "ghost member"
//! problem after a server restart.
//!
//! Each member is its own connection (Iggy tracks membership per client session). A member
//! asks the server which partitions it owns (`SyncConsumerGroup`) and polls those partitions
//! explicitly: from its own cursor when it has returned records of that partition already
//! (Iggy's `next` only advances on a stored offset, and our contract lets a member poll again
//! before committing), else with `next`, which resumes after the group's committed offset.
//!
//! Ghosts: a server restart keeps the members it had but not their sessions, so the old
//! members hold their partitions forever and the reconnected client, a new session, is not a
//! member (polls fail with 5006). When a member finds the group holding members that are no
//! longer connected, it reads the group's committed offsets, deletes and recreates the group,
//! joins it and stores the offsets again. A group whose members are all connected is joined
//! as it is, so several members recovering at once do not keep deleting each other.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use iggy::prelude::{
    Client, Consumer, ConsumerGroupClient, ConsumerGroupDetails, ConsumerOffsetClient, Identifier,
    IggyClient, MessageClient, PollingStrategy, StreamClient, SystemClient, TopicClient,
};
use iggy_binary_protocol::codes::SYNC_CONSUMER_GROUP_CODE;
use iggy_binary_protocol::requests::consumer_groups::SyncConsumerGroupRequest;
use iggy_binary_protocol::responses::consumer_groups::SyncConsumerGroupResponse;
use iggy_binary_protocol::{WireDecode, WireEncode, WireIdentifier};
use tokio::time::Instant;

use super::errors::{
    GROUP_EXISTS, GROUP_NOT_FOUND, NOT_A_MEMBER, PARTITION_NOT_OWNED, RESOURCE_NOT_FOUND, map_err,
};
use super::options::IggyOptions;
use super::topic::{TopicHandle, record};
use crate::error::{Error, ErrorKind, Result};
use crate::log::{Delivery, GroupConsumer, TopicRef};

/// First pause of a poll that found nothing.
const POLL_PAUSE_MIN: Duration = Duration::from_millis(1);
/// Longest pause between two empty rounds of a poll.
const POLL_PAUSE_MAX: Duration = Duration::from_millis(20);
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
    /// Per owned partition, the offset after the last record this member returned.
    cursors: HashMap<u32, u64>,
    /// Where the next poll starts in `owned`, so busy partitions do not starve the others.
    turn: usize,
    /// When the next round over every owned partition is due, and the pause before the one
    /// after an empty round (doubling from [`POLL_PAUSE_MIN`] to [`POLL_PAUSE_MAX`]).
    full_round_at: Instant,
    pause: Duration,
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
            cursors: HashMap::new(),
            turn: 0,
            full_round_at: Instant::now(),
            pause: POLL_PAUSE_MIN,
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

    /// How many members of the group belong to sessions that no longer exist.
    ///
    /// Member ids are slots, not client ids, so ghosts are counted: the members of the group
    /// minus the memberships that connected clients report.
    async fn ghosts(&self, details: &ConsumerGroupDetails) -> Result<usize> {
        if details.members.is_empty() {
            return Ok(0);
        }
        let gone = |what: &str| {
            Error::new(
                ErrorKind::Unavailable,
                format!("{} disappeared", self.doing(what)),
            )
        };
        let stream = self
            .client
            .get_stream(&self.stream_id)
            .await
            .map_err(|e| map_err(e, self.doing("reading the stream of")))?
            .ok_or_else(|| gone("the stream of"))?;
        let topic = self
            .client
            .get_topic(&self.stream_id, &self.topic_id)
            .await
            .map_err(|e| map_err(e, self.doing("reading the topic of")))?
            .ok_or_else(|| gone("the topic of"))?;
        let clients = self
            .client
            .get_clients()
            .await
            .map_err(|e| map_err(e, "listing connected clients"))?;
        let mut live = 0;
        for client in clients.iter().filter(|c| c.consumer_groups_count > 0) {
            let Some(info) = self
                .client
                .get_client(client.client_id)
                .await
                .map_err(|e| map_err(e, "reading a connected client"))?
            else {
                continue; // disconnected meanwhile
            };
            live += info
                .consumer_groups
                .iter()
                .filter(|g| {
                    (g.stream_id, g.topic_id, g.group_id) == (stream.id, topic.id, details.id)
                })
                .count();
        }
        // A member that left while we counted would pass for a ghost: count members again and
        // take the smaller number.
        let members_now = self
            .client
            .get_consumer_group(&self.stream_id, &self.topic_id, &self.group_id)
            .await
            .map_err(|e| map_err(e, self.doing("reading")))?
            .map_or(0, |now| now.members.len());
        Ok(details.members.len().min(members_now).saturating_sub(live))
    }

    /// Join the group as it is and learn the assignment.
    async fn join_as_is(&mut self) -> Result<()> {
        self.client
            .join_consumer_group(&self.stream_id, &self.topic_id, &self.group_id)
            .await
            .map_err(|e| map_err(e, self.doing("joining")))?;
        self.cursors.clear();
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

    /// Replace a group that holds ghost members by a fresh one with the same committed
    /// offsets, and join it.
    async fn recreate(&mut self) -> Result<()> {
        tracing::info!(topic = %self.topic, group = %self.group, "consumer group holds members from before a server restart; recreating it");
        let mut committed = Vec::new();
        for partition in 0..self.partitions {
            let stored = self
                .client
                .get_consumer_offset(
                    &self.consumer,
                    &self.stream_id,
                    &self.topic_id,
                    Some(partition),
                )
                .await
                .map_err(|e| map_err(e, self.doing("reading the offsets of")))?;
            if let Some(info) = stored {
                committed.push((partition, info.stored_offset));
            }
        }
        match self
            .client
            .delete_consumer_group(&self.stream_id, &self.topic_id, &self.group_id)
            .await
        {
            Err(e) if !GROUP_NOT_FOUND.contains(&e.as_code()) => {
                return Err(map_err(e, self.doing("deleting")));
            }
            _ => {}
        }
        self.create().await?;
        self.join_as_is().await?;
        for (partition, offset) in committed {
            // Right after recreating we are normally the only member and own every partition;
            // a member that joined meanwhile owns some, and those restart from their start
            // (at-least-once: consumers deduplicate).
            if let Err(e) = self
                .client
                .store_consumer_offset(
                    &self.consumer,
                    &self.stream_id,
                    &self.topic_id,
                    Some(partition),
                    offset,
                )
                .await
            {
                tracing::warn!(topic = %self.topic, group = %self.group, partition, error = %e, "could not restore a committed offset");
            }
        }
        Ok(())
    }

    /// Create the group; another member creating it first is fine.
    async fn create(&self) -> Result<()> {
        match self
            .client
            .create_consumer_group(&self.stream_id, &self.topic_id, &self.group)
            .await
        {
            Err(e) if e.as_code() != GROUP_EXISTS => Err(map_err(e, self.doing("creating"))),
            _ => Ok(()),
        }
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
        self.cursors.retain(|p, _| owned.binary_search(p).is_ok());
        self.owned = owned;
        self.synced_at = Some(Instant::now());
        Ok(true)
    }

    /// One round over the owned partitions; the first with records wins. With `moved_only`,
    /// only the partitions this process saw grow past the member's cursor (after a wake by a
    /// local append: a full round would ask every partition for nothing).
    async fn poll_round(&mut self, count: u32, moved_only: bool) -> Result<Option<Delivery>> {
        if self.synced_at.is_none_or(|at| at.elapsed() >= RESYNC_EVERY) {
            self.sync().await?;
        }
        let owned = self.owned.len();
        for step in 0..owned {
            let index = (self.turn + step) % owned;
            let Some(&partition) = self.owned.get(index) else {
                break;
            };
            if moved_only
                && self
                    .cursors
                    .get(&partition)
                    .is_some_and(|&next| self.handle.end(partition) <= next)
            {
                continue;
            }
            // Records this process appended (or read) are kept by the handle: past the first
            // poll of a partition, the member's cursor reads them there without a round trip
            // (the server would answer the same records; a record at an offset never changes).
            if let Some(&next) = self.cursors.get(&partition)
                && let Some(tail) = self.handle.tail(partition)
            {
                let records = tail.read(partition, next, count as usize);
                if let Some(last) = records.last() {
                    self.turn = index + 1;
                    self.cursors.insert(partition, last.offset + 1);
                    return Ok(Some(Delivery { partition, records }));
                }
            }
            let strategy = match self.cursors.get(&partition) {
                Some(&next) => PollingStrategy::offset(next),
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
                continue;
            }
            self.turn = index + 1;
            let records: Vec<_> = polled
                .messages
                .into_iter()
                .map(|message| record(partition, message))
                .collect();
            if let Some(last) = records.last() {
                self.cursors.insert(partition, last.offset + 1);
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
            // Every partition is asked when a full round is due (records written elsewhere
            // show only so); between, only those this process saw grow.
            let full = Instant::now() >= self.full_round_at;
            // A dropped connection or a rejoin in progress is retried until the deadline; only
            // if it is still failing then does the caller see the error.
            let round = self.poll_round(count, !full).await;
            if full {
                // Records another process wrote may come in a burst: ask again soon. A round
                // that found none, or only records this process appended (whose appends wake
                // this wait themselves), backs off.
                let news = match &round {
                    Ok(Some(delivery)) => delivery
                        .records
                        .last()
                        .is_some_and(|last| last.offset >= self.handle.end(delivery.partition)),
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
                if let Some(cursor) = self.cursors.get_mut(&partition) {
                    *cursor = (*cursor).max(next_offset);
                }
                Ok(())
            }
            Err(e) if e.as_code() == RESOURCE_NOT_FOUND || e.as_code() == PARTITION_NOT_OWNED => {
                // The partition moved to another member, which redelivers from the last
                // commit that did land (at-least-once; consumers deduplicate).
                tracing::debug!(topic = %self.topic, group = %self.group, partition, "commit on a partition this member no longer owns");
                self.cursors.remove(&partition);
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
            .field("cursors", &self.cursors)
            .finish_non_exhaustive()
    }
}
