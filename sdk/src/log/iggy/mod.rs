//! The Apache Iggy backend (`iggy://user:pass@host:port`), through the official `iggy` crate
//! over TCP.
//!
//! # Mapping
//! - A [`TopicRef`] is an Iggy stream and topic addressed by name; both are created on demand
//!   by [`LogBackend::ensure_topic`] (idempotent, safe against concurrent creators).
//! - Partitions and offsets are Iggy's own (0-based). An append picks its partition with
//!   [`partition_for_key`], which is exactly what Iggy's `Partitioning::messages_key`
//!   computes, and sends to that partition explicitly: keys of any length work and no topic
//!   metadata is fetched per append (partition counts are cached per handle). The offsets of
//!   an append come from the server's send confirmation (`base_offset`).
//! - Consumer groups are Iggy consumer groups; see the `group` module for ownership, commits and the
//!   recovery from ghost members after a server restart.
//!
//! # Headers
//! Nothing goes into Iggy's user headers. Our records are opaque payloads whose own encoding
//! already carries every header (task id, context, ...), so the bytes stored are the same on
//! every backend, a signature over a record covers its headers, and Iggy's 100 KB limit on
//! user headers never applies. Message ids are left to the client (random); they are not used.
//!
//! # Limits
//! Iggy refuses empty payloads (an append holding one fails with
//! [`ErrorKind::InvalidParams`]); our encoded records are never empty. One payload is at most
//! 64 MB.
//!
//! # Durability
//! Topics are created with `messages_required_to_save = 1`: the server writes every batch to
//! its files before acknowledging it, so an acknowledged append survives a crash or SIGKILL of
//! the server (with the server's default, acknowledged messages were lost). Power loss is only
//! covered with [`IggyOptions::fsync`], which costs an fsync per batch. Both are fixed when the
//! topic is created; an existing topic keeps them.
//!
//! # Retention: the server's message expiry
//! Iggy deletes old records itself, so [`LogBackend::segments`] lists none and
//! [`LogBackend::delete_segments`] deletes none. Topics are created with a message expiry of
//! twice the log's retention ([`IggyOptions::retention`], `retention=` in the URL; 7 days
//! unless set, so 14 days), so a task's earlier records outlive its finished state by the
//! retention; a retention of 0 means `NeverExpire`. `ensure_topic` updates an existing topic
//! whose expiry differs (that setting alone: partitions, `messages_required_to_save` and the
//! rest stay) and says so at info level.
//!
//! What the server does with it (apache/iggy `core/server/src/segment_cleaner.rs` and
//! `core/partitions`, the build these notes were checked against): a cleaner on each shard
//! wakes every `data_maintenance.messages.interval` (1 minute by default; `cleaner_enabled`
//! defaults to true) and, per partition of a topic with a finite expiry, deletes the leading
//! run of *sealed* segments whose newest message is at least the expiry old
//! (`max_timestamp + expiry <= now`), oldest first, stopping at the first one that is not,
//! and never the active segment; at most 16 segments per pass, and never a segment holding
//! offsets past the lowest offset any consumer or consumer group has stored (a group that
//! stopped committing holds every later segment). Expiry is per segment, not per message: a
//! record lives at least the expiry, and longer until its segment is sealed (segments are
//! 1 GiB per topic unless created otherwise, so a quiet partition may expire nothing for a
//! long time). A read from an offset the server has deleted starts at the first segment
//! left: the records from the next offset that exists, as on the embedded log.
//!
//! # No deduplication
//! Iggy stores a message as often as it is sent, and the client resends a request whose
//! connection dropped. Consumers must deduplicate; records carry their own ids and the
//! bridge's fold does.
//!
//! # Connections, batches and what is kept
//! The `iggy` client answers one call per connection at a time, so a handle spreads its calls
//! over a few connections (the `pool` module). The appends waiting for one partition at the
//! same moment go out as one batch (the `appender` module: group commit, one batch in flight
//! per partition). `end_offsets` is one `get_topic` shared by every caller that arrived
//! before it started. Each partition's newest records, appended or read, are kept in memory
//! (the `tail` module), so a read of a recent task costs no round trip.
//!
//! # Following
//! Iggy has no long-poll or push, so [`LogBackend::watch_end`] is served by one adaptive
//! poller per watched topic, on a connection of its own (see the `poller` module).
//!
//! # Reconnecting
//! Every connection signs in by itself and reconnects after the server comes back (within a
//! few hundred milliseconds, see [`IggyOptions`]); the same handle keeps working.

mod appender;
mod errors;
mod group;
mod options;
mod poller;
mod pool;
mod tail;
mod topic;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use bytes::Bytes;
use iggy::prelude::{
    Client, Consumer, IggyClient, MessageClient, PollingStrategy, StreamClient, SystemClient,
    TopicClient, TopicCreateOptions, TopicDetails, TopicUpdateOptions,
};
use tokio::sync::{OnceCell, watch};
use tokio_util::sync::CancellationToken;

use self::appender::Appenders;
use self::errors::{STREAM_EXISTS, TOPIC_EXISTS, map_err};
use self::group::IggyGroupConsumer;
pub use self::options::IggyOptions;
use self::pool::Pool;
use self::topic::{TopicHandle, identifiers, record};
use crate::error::{Error, ErrorKind, Result};
use crate::log::raw::{LogBackend, Place, Prefetcher};
use crate::log::{
    AppendBatch, Appended, GroupConsumer, SegmentInfo, StoredRecord, TopicRef, partition_for_key,
};

/// A log on an Apache Iggy server.
///
/// One handle holds a few connections for appends, reads and administration
/// ([`IggyOptions::connections`]), one more (opened on first use) for the end-offset
/// pollers, and one per consumer-group member.
pub struct IggyLog {
    options: IggyOptions,
    pool: Arc<Pool>,
    /// The pollers' connection, kept apart so polling never queues behind an append.
    watch_client: OnceCell<Arc<IggyClient>>,
    topics: RwLock<HashMap<TopicRef, Arc<TopicHandle>>>,
    /// The group-commit senders of each topic's partitions, beside its handle.
    appenders: RwLock<HashMap<TopicRef, Arc<Appenders>>>,
    /// The consumer used for reads by offset (nothing is ever stored for it).
    reader: Consumer,
    closed: CancellationToken,
}

impl IggyLog {
    /// Connect and sign in.
    ///
    /// Fails with [`ErrorKind::Config`] for a malformed address or refused credentials and
    /// with [`ErrorKind::Unavailable`] if the server cannot be reached.
    pub async fn connect(options: IggyOptions) -> Result<IggyLog> {
        let pool = Arc::new(Pool::connect(&options, options.connections).await?);
        Ok(Self {
            options,
            pool,
            watch_client: OnceCell::new(),
            topics: RwLock::new(HashMap::new()),
            appenders: RwLock::new(HashMap::new()),
            reader: Consumer::default(),
            closed: CancellationToken::new(),
        })
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.is_cancelled() {
            return Err(crate::log::closed_error());
        }
        Ok(())
    }

    /// The cached handle of `topic`, if any.
    fn cached(&self, topic: &TopicRef) -> Option<Arc<TopicHandle>> {
        self.topics
            .read()
            .ok()
            .and_then(|topics| topics.get(topic).cloned())
    }

    /// The handle of an existing `topic`, fetching its description once.
    async fn handle(&self, topic: &TopicRef) -> Result<Arc<TopicHandle>> {
        self.check_open()?;
        if let Some(handle) = self.cached(topic) {
            return Ok(handle);
        }
        let details = self.describe(topic).await?.ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidParams,
                format!("topic {topic} does not exist (ensure_topic creates it)"),
            )
        })?;
        self.remember(topic, &details)
    }

    /// Cache a handle built from `details`; a handle cached meanwhile wins.
    fn remember(&self, topic: &TopicRef, details: &TopicDetails) -> Result<Arc<TopicHandle>> {
        let handle = Arc::new(TopicHandle::new(
            topic.clone(),
            details,
            self.options.tail_bytes,
        )?);
        let mut topics = self
            .topics
            .write()
            .map_err(|_| Error::new(ErrorKind::Internal, "topic cache poisoned"))?;
        Ok(Arc::clone(topics.entry(topic.clone()).or_insert(handle)))
    }

    /// The group-commit senders of `topic` (described by `handle`).
    fn appenders(&self, topic: &TopicRef, handle: &TopicHandle) -> Result<Arc<Appenders>> {
        let poisoned = || Error::new(ErrorKind::Internal, "appender cache poisoned");
        if let Some(appenders) = self.appenders.read().map_err(|_| poisoned())?.get(topic) {
            return Ok(Arc::clone(appenders));
        }
        let mut all = self.appenders.write().map_err(|_| poisoned())?;
        let appenders = all
            .entry(topic.clone())
            .or_insert_with(|| Arc::new(Appenders::new(handle.partitions())));
        Ok(Arc::clone(appenders))
    }

    /// The server's description of `topic`, or `None` if it does not exist.
    async fn describe(&self, topic: &TopicRef) -> Result<Option<TopicDetails>> {
        let (stream_id, topic_id) = identifiers(topic)?;
        self.pool
            .get()
            .get_topic(&stream_id, &topic_id)
            .await
            .map_err(|e| map_err(e, format_args!("describing {topic}")))
    }

    /// Create `topic` (and its stream) with this handle's settings, and describe it. Another
    /// process (or task) may create either one between our look and our create: "already
    /// exists" is success, and the description is of what exists.
    async fn create(&self, topic: &TopicRef, partitions: u32) -> Result<TopicDetails> {
        let (stream_id, _) = identifiers(topic)?;
        if let Err(e) = self.pool.get().create_stream(&topic.stream).await
            && e.as_code() != STREAM_EXISTS
        {
            return Err(map_err(
                e,
                format_args!("creating stream {:?}", topic.stream),
            ));
        }
        let settings = TopicCreateOptions {
            partitions_count: Some(partitions),
            messages_required_to_save: Some(1),
            enforce_fsync: Some(self.options.fsync),
            message_expiry: Some(self.options.message_expiry()),
            ..TopicCreateOptions::default()
        };
        if let Err(e) = self
            .pool
            .get()
            .create_topic(&stream_id, &topic.topic, &settings)
            .await
            && e.as_code() != TOPIC_EXISTS
        {
            return Err(map_err(e, format_args!("creating topic {topic}")));
        }
        self.describe(topic).await?.ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                format!("topic {topic} was created but is not there (deleted meanwhile?)"),
            )
        })
    }

    /// Give an existing topic this handle's message expiry if it has another one (created
    /// with another retention, or before topics had one). The update patches that one
    /// setting; partitions, `messages_required_to_save` and the rest stay.
    async fn settle_expiry(&self, topic: &TopicRef, details: &TopicDetails) -> Result<()> {
        let wanted = self.options.message_expiry();
        if details.message_expiry == wanted {
            return Ok(());
        }
        let (stream_id, topic_id) = identifiers(topic)?;
        let update = TopicUpdateOptions {
            message_expiry: Some(wanted),
            ..TopicUpdateOptions::default()
        };
        self.pool
            .get()
            .update_topic(&stream_id, &topic_id, &topic.topic, &update)
            .await
            .map_err(|e| map_err(e, format_args!("setting the message expiry of {topic}")))?;
        tracing::info!(
            %topic,
            from = %details.message_expiry,
            to = %wanted,
            "iggy: updated the topic's message expiry to twice the log's retention"
        );
        Ok(())
    }

    async fn watch_client(&self) -> Result<&Arc<IggyClient>> {
        self.watch_client
            .get_or_try_init(|| async { self.options.connect().await.map(Arc::new) })
            .await
    }
}

#[async_trait]
impl LogBackend for IggyLog {
    async fn ensure_topic(&self, topic: &TopicRef, partitions: u32) -> Result<()> {
        self.check_open()?;
        if partitions == 0 {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!("{topic}: a topic needs at least one partition"),
            ));
        }
        if self.cached(topic).is_some_and(|handle| handle.is_ensured()) {
            return Ok(());
        }
        let details = match self.describe(topic).await? {
            Some(details) => details,
            None => self.create(topic, partitions).await?,
        };
        self.settle_expiry(topic, &details).await?;
        self.remember(topic, &details)?.mark_ensured();
        Ok(())
    }

    async fn partitions(&self, topic: &TopicRef) -> Result<u32> {
        Ok(self.handle(topic).await?.partitions())
    }

    /// Every batch sent at once (each its own partition's group commit), so a command and its
    /// copy cost one round trip, not two. A batch is acknowledged only with every batch
    /// before it; a later one may be visible first, or land though an earlier one failed (as
    /// after a crash between the two): a worker handed a command's copy before its event
    /// looks again until the sweeper would queue it anew.
    async fn append_all(&self, batches: Vec<AppendBatch<'_>>) -> Result<Vec<Appended>> {
        let sent = futures::future::join_all(
            batches
                .into_iter()
                .map(|batch| self.append(batch.topic, batch.key, batch.payloads)),
        )
        .await;
        sent.into_iter().collect()
    }

    async fn append(&self, topic: &TopicRef, key: &[u8], payloads: Vec<Bytes>) -> Result<Appended> {
        let partition = partition_for_key(key, self.handle(topic).await?.partitions());
        self.append_to(topic, partition, payloads).await
    }

    /// One partition's group commit (`appender.rs`); an empty batch answers the end.
    async fn append_to(
        &self,
        topic: &TopicRef,
        partition: u32,
        payloads: Vec<Bytes>,
    ) -> Result<Appended> {
        let handle = self.handle(topic).await?;
        handle.route(partition)?;
        if payloads.is_empty() {
            return Ok(Appended {
                partition,
                first_offset: self.end_offset(topic, partition).await?,
                count: 0,
                place: Place::UNKNOWN,
            });
        }
        let count = u32::try_from(payloads.len()).map_err(|_| {
            Error::new(
                ErrorKind::InvalidParams,
                "append: more than u32::MAX records",
            )
        })?;
        let first_offset = self
            .appenders(topic, &handle)?
            .get(&self.pool, &handle, partition)?
            .append(payloads)
            .await?;
        Ok(Appended {
            partition,
            first_offset,
            count,
            place: Place::UNKNOWN,
        })
    }

    async fn read(
        &self,
        topic: &TopicRef,
        partition: u32,
        from: u64,
        max: usize,
    ) -> Result<Vec<StoredRecord>> {
        let handle = self.handle(topic).await?;
        handle.route(partition)?;
        let Ok(count @ 1..) = u32::try_from(max) else {
            return Ok(Vec::new());
        };
        if let Some(tail) = handle.tail(partition) {
            let kept = tail.read(partition, from, max);
            if !kept.is_empty() {
                return Ok(kept);
            }
        }
        let polled = self
            .pool
            .get()
            .poll_messages(
                &handle.stream_id,
                &handle.topic_id,
                Some(partition),
                &self.reader,
                &PollingStrategy::offset(from),
                count,
                false,
            )
            .await
            .map_err(|e| map_err(e, format_args!("reading {topic} partition {partition}")))?;
        let records: Vec<StoredRecord> = polled
            .messages
            .into_iter()
            .filter(|m| m.header.offset >= from)
            .map(|m| record(partition, m))
            .collect();
        if let Some(first) = records.first() {
            handle.keep(
                partition,
                first.offset,
                records.iter().map(|r| r.payload.clone()),
            );
        }
        Ok(records)
    }

    /// None: Iggy gives no places.
    fn prefetcher(&self, _topic: &TopicRef) -> Option<Prefetcher> {
        None
    }

    /// One `get_topic`, shared by every call that arrived before it started.
    async fn end_offsets(&self, topic: &TopicRef) -> Result<Vec<u64>> {
        let handle = self.handle(topic).await?;
        handle
            .probe(|| async {
                self.pool
                    .get()
                    .get_topic(&handle.stream_id, &handle.topic_id)
                    .await
                    .map_err(|e| map_err(e, format_args!("reading the end offsets of {topic}")))?
                    .ok_or_else(|| {
                        Error::new(ErrorKind::Internal, format!("topic {topic} disappeared"))
                    })
            })
            .await
    }

    /// None: the server expires segments itself (the topic's message expiry, see the
    /// module docs), and lists none to delete.
    async fn segments(&self, topic: &TopicRef, partition: u32) -> Result<Vec<SegmentInfo>> {
        self.handle(topic).await?.route(partition)?;
        Ok(Vec::new())
    }

    /// Deletes nothing (see [`segments`](Self::segments)).
    async fn delete_segments(
        &self,
        topic: &TopicRef,
        partition: u32,
        _bases: &[u64],
    ) -> Result<usize> {
        self.handle(topic).await?.route(partition)?;
        Ok(0)
    }

    async fn watch_end(&self, topic: &TopicRef, partition: u32) -> Result<watch::Receiver<u64>> {
        let handle = self.handle(topic).await?;
        // Subscribe before making sure a poller runs: a poller that is about to stop for lack
        // of watchers then either sees this receiver or has already cleared its flag.
        let receiver = handle.subscribe(partition)?;
        let client = self.watch_client().await?;
        poller::ensure(&handle, client, &self.closed).await?;
        Ok(receiver)
    }

    async fn join_group(&self, topic: &TopicRef, group: &str) -> Result<Box<dyn GroupConsumer>> {
        let handle = self.handle(topic).await?;
        Ok(Box::new(
            IggyGroupConsumer::join(&self.options, &handle, group).await?,
        ))
    }

    async fn ready(&self) -> Result<()> {
        self.check_open()?;
        self.pool
            .get()
            .ping()
            .await
            .map_err(|e| map_err(e, "pinging the server"))
    }

    async fn close(&self) -> Result<()> {
        self.closed.cancel();
        if let Ok(mut topics) = self.topics.write() {
            topics.clear();
        }
        if let Ok(mut appenders) = self.appenders.write() {
            appenders.clear();
        }
        if let Some(client) = self.watch_client.get() {
            let _ = client.shutdown().await;
        }
        self.pool.shutdown().await
    }
}

impl fmt::Debug for IggyLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IggyLog")
            .field("options", &self.options)
            .field("closed", &self.closed.is_cancelled())
            .finish_non_exhaustive()
    }
}
