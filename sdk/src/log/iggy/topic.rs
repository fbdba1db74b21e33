//! What this process knows about one topic: its Iggy identifiers, how to route to each
//! partition, and the last end offset seen per partition.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use iggy::prelude::{Identifier, IggyMessage, Partition, Partitioning, TopicDetails};
use tokio::sync::{Notify, watch};

use super::errors::map_err;
use super::tail::Tail;
use crate::error::{Error, ErrorKind, Result};
use crate::log::raw::Place;
use crate::log::{StoredRecord, TopicRef};

/// The per-topic state shared by appends, reads, watchers and the end-offset poller.
///
/// Built once per topic and cached for the life of the [`IggyLog`](super::IggyLog): the
/// partition count of an Iggy topic only changes when someone adds partitions, which
/// `ensure_topic` never does, so appends route without a metadata round trip.
#[derive(Debug)]
pub(super) struct TopicHandle {
    pub(super) name: TopicRef,
    pub(super) stream_id: Identifier,
    pub(super) topic_id: Identifier,
    /// One explicit route per partition, built once so an append does not allocate one.
    routes: Vec<Partitioning>,
    /// The highest end offset seen per partition; watchers subscribe here.
    ends: Vec<watch::Sender<u64>>,
    /// Per partition: how many records this handle's batch in flight carries (the server
    /// may show them before their confirmation comes back).
    in_flight: Vec<AtomicU64>,
    /// Whether an end-offset poller is running for this topic (see `poller`).
    pub(super) polling: Mutex<bool>,
    /// Whether `ensure_topic` has given the topic this handle's settings (its message
    /// expiry); a handle cached by another call (an append) has not.
    ensured: AtomicBool,
    /// Notified whenever an end moves: a group member here waits on it between polls, so a
    /// record appended through this handle is picked up without waiting out a pause.
    pub(super) moved: Notify,
    /// Per partition: its newest records ([`Tail`]).
    tails: Vec<Tail>,
    /// End-offset probes: how many started, the newest answer, and the turn to start one
    /// ([`TopicHandle::probe`]).
    probes_started: AtomicU64,
    last_probe: Mutex<Option<(u64, Vec<u64>)>>,
    probing: tokio::sync::Mutex<()>,
}

impl TopicHandle {
    /// The handle of `name`, from the server's description of the topic; each partition
    /// keeps up to `tail_budget` bytes of its newest records.
    pub(super) fn new(name: TopicRef, details: &TopicDetails, tail_budget: usize) -> Result<Self> {
        let (stream_id, topic_id) = identifiers(&name)?;
        let count = details.partitions_count;
        let routes = (0..count).map(Partitioning::partition_id).collect();
        let ends = (0..count).map(|_| watch::Sender::new(0)).collect();
        let handle = Self {
            name,
            stream_id,
            topic_id,
            routes,
            ends,
            in_flight: (0..count).map(|_| AtomicU64::new(0)).collect(),
            polling: Mutex::new(false),
            ensured: AtomicBool::new(false),
            moved: Notify::new(),
            tails: (0..count).map(|_| Tail::new(tail_budget)).collect(),
            probes_started: AtomicU64::new(0),
            last_probe: Mutex::new(None),
            probing: tokio::sync::Mutex::new(()),
        };
        handle.observe(details);
        Ok(handle)
    }

    /// Whether `ensure_topic` settled this topic's settings already.
    pub(super) fn is_ensured(&self) -> bool {
        self.ensured.load(Ordering::Acquire)
    }

    /// Note that `ensure_topic` settled this topic's settings.
    pub(super) fn mark_ensured(&self) {
        self.ensured.store(true, Ordering::Release);
    }

    /// The number of partitions.
    pub(super) fn partitions(&self) -> u32 {
        // At most `partitions_count`, a u32.
        self.routes.len() as u32
    }

    /// The route to `partition`, or an error if the topic has no such partition.
    pub(super) fn route(&self, partition: u32) -> Result<&Partitioning> {
        self.routes.get(partition as usize).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "partition {partition} does not exist in {} ({} partitions)",
                    self.name,
                    self.partitions()
                ),
            )
        })
    }

    /// A watch of `partition`'s end offset.
    pub(super) fn subscribe(&self, partition: u32) -> Result<watch::Receiver<u64>> {
        self.route(partition)?;
        self.ends
            .get(partition as usize)
            .map(watch::Sender::subscribe)
            .ok_or_else(|| Error::new(ErrorKind::Internal, "end watch missing"))
    }

    /// The highest end offset of `partition` this handle has seen (0 if none).
    pub(super) fn end(&self, partition: u32) -> u64 {
        self.ends
            .get(partition as usize)
            .map_or(0, |sender| *sender.borrow())
    }

    /// Whether anyone still watches any partition of this topic.
    pub(super) fn watched(&self) -> bool {
        self.ends.iter().any(|end| end.receiver_count() > 0)
    }

    /// Raise `partition`'s end to `end` (never lower it); returns whether it moved.
    pub(super) fn bump(&self, partition: u32, end: u64) -> bool {
        let moved = self.ends.get(partition as usize).is_some_and(|sender| {
            sender.send_if_modified(|current| {
                let moved = end > *current;
                if moved {
                    *current = end;
                }
                moved
            })
        });
        if moved {
            self.moved.notify_waiters();
        }
        moved
    }

    /// Keep `payloads`, the records at `first..` of `partition`, as its newest ([`Tail`]).
    pub(super) fn keep(
        &self,
        partition: u32,
        first: u64,
        payloads: impl IntoIterator<Item = Bytes>,
    ) {
        if let Some(tail) = self.tails.get(partition as usize) {
            tail.keep(first, payloads);
        }
    }

    /// The newest records of `partition` this handle keeps.
    pub(super) fn tail(&self, partition: u32) -> Option<&Tail> {
        self.tails.get(partition as usize)
    }

    /// The end offsets as of a probe that started after this call did: one probe answers
    /// every caller that arrived before it started (read-your-writes needs the ends as of
    /// the caller's arrival, not a round trip of its own). `fetch` makes a probe.
    pub(super) async fn probe<F, Fut>(&self, fetch: F) -> Result<Vec<u64>>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<TopicDetails>>,
    {
        let arrived = self.probes_started.load(Ordering::Acquire);
        let _turn = self.probing.lock().await;
        if let Some(ends) = self.probe_since(arrived) {
            return Ok(ends);
        }
        let number = self.probes_started.fetch_add(1, Ordering::AcqRel) + 1;
        let details = fetch().await?;
        self.observe(&details);
        let mut ends = end_offsets(&details);
        ends.truncate(self.partitions() as usize);
        if let Ok(mut last) = self.last_probe.lock() {
            *last = Some((number, ends.clone()));
        }
        Ok(ends)
    }

    /// The newest probe's answer if that probe started after `arrived` probes had.
    fn probe_since(&self, arrived: u64) -> Option<Vec<u64>> {
        let last = self.last_probe.lock().ok()?;
        match &*last {
            Some((number, ends)) if *number > arrived => Some(ends.clone()),
            _ => None,
        }
    }

    /// Note that a batch of `records` to `partition` is in flight (0: it came back).
    pub(super) fn set_in_flight(&self, partition: u32, records: u64) {
        if let Some(count) = self.in_flight.get(partition as usize) {
            count.store(records, Ordering::Release);
        }
    }

    /// Take the end offsets in a fresh description of the topic; returns whether any moved.
    pub(super) fn observe(&self, details: &TopicDetails) -> bool {
        let mut moved = false;
        for partition in &details.partitions {
            moved |= self.bump(partition.id, end_offset(partition));
        }
        moved
    }

    /// [`observe`](Self::observe), returning whether the ends show records this handle did
    /// not append: only those say that another process is writing. (Its own appends bump the
    /// ends themselves, and a batch in flight may show before its confirmation does.)
    pub(super) fn observe_news(&self, details: &TopicDetails) -> bool {
        let mut news = false;
        for partition in &details.partitions {
            let end = end_offset(partition);
            // In flight first: the appender bumps the end before it clears its count, so a
            // count read as cleared comes with the end it bumped.
            let in_flight = self
                .in_flight
                .get(partition.id as usize)
                .map_or(0, |count| count.load(Ordering::Acquire));
            news |= end > self.end(partition.id).saturating_add(in_flight);
            self.bump(partition.id, end);
        }
        news
    }
}

/// The Iggy identifiers (by name) of a topic's stream and topic.
pub(super) fn identifiers(topic: &TopicRef) -> Result<(Identifier, Identifier)> {
    let stream = Identifier::named(&topic.stream)
        .map_err(|e| map_err(e, format_args!("stream name {:?}", topic.stream)))?;
    let name = Identifier::named(&topic.topic)
        .map_err(|e| map_err(e, format_args!("topic name {:?}", topic.topic)))?;
    Ok((stream, name))
}

/// The end offset (next offset to be written) of a partition.
///
/// Iggy reports `current_offset`, the offset of the *last* message, which is 0 both for an
/// empty partition and for one holding a single message; `messages_count` tells them apart.
pub(super) fn end_offset(partition: &Partition) -> u64 {
    if partition.messages_count == 0 && partition.current_offset == 0 {
        0
    } else {
        partition.current_offset + 1
    }
}

/// The end offsets of every partition of a described topic, indexed by partition.
pub(super) fn end_offsets(details: &TopicDetails) -> Vec<u64> {
    let mut ends = vec![0; details.partitions_count as usize];
    for partition in &details.partitions {
        if let Some(end) = ends.get_mut(partition.id as usize) {
            *end = end_offset(partition);
        }
    }
    ends
}

/// An Iggy message carrying `payload` and nothing else (see the module doc on headers).
pub(super) fn message(payload: Bytes) -> Result<IggyMessage> {
    IggyMessage::builder()
        .payload(payload)
        .build()
        .map_err(|e| map_err(e, "building a message (Iggy refuses empty payloads)"))
}

/// Our record from a message polled from `partition`.
pub(super) fn record(partition: u32, message: IggyMessage) -> StoredRecord {
    StoredRecord {
        partition,
        offset: message.header.offset,
        payload: message.payload,
        place: Place::UNKNOWN,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use iggy::prelude::{IggyByteSize, IggyTimestamp};

    fn partition(id: u32, current_offset: u64, messages_count: u64) -> Partition {
        Partition {
            id,
            created_at: IggyTimestamp::now(),
            segments_count: 1,
            current_offset,
            size: IggyByteSize::default(),
            messages_count,
        }
    }

    fn details(ends: &[u64]) -> TopicDetails {
        TopicDetails {
            id: 0,
            created_at: IggyTimestamp::now(),
            name: "t".into(),
            size: IggyByteSize::default(),
            message_expiry: Default::default(),
            compression_algorithm: Default::default(),
            max_topic_size: Default::default(),
            messages_count: ends.iter().sum(),
            partitions_count: ends.len() as u32,
            partitions: (0u32..)
                .zip(ends)
                .map(|(id, &end)| partition(id, end.saturating_sub(1), end))
                .collect(),
            options: Default::default(),
        }
    }

    #[test]
    fn only_records_this_handle_did_not_append_are_news() {
        let handle = TopicHandle::new(TopicRef::new("s", "t"), &details(&[10, 5]), 0).unwrap();
        // A batch of 3 in flight may show on the server before its confirmation comes back.
        handle.set_in_flight(0, 3);
        assert!(!handle.observe_news(&details(&[13, 5])));
        assert_eq!(handle.end(0), 13);
        // Its confirmation bumps the end; one record more is another process's.
        handle.bump(0, 13);
        handle.set_in_flight(0, 0);
        assert!(!handle.observe_news(&details(&[13, 5])));
        assert!(handle.observe_news(&details(&[14, 5])));
        assert!(handle.observe_news(&details(&[14, 6])));
        assert_eq!((handle.end(0), handle.end(1)), (14, 6));
        assert!(!handle.observe_news(&details(&[14, 6])));
    }

    #[test]
    fn end_offset_tells_empty_from_one_message() {
        assert_eq!(end_offset(&partition(0, 0, 0)), 0);
        assert_eq!(end_offset(&partition(0, 0, 1)), 1);
        assert_eq!(end_offset(&partition(0, 41, 42)), 42);
    }

    #[test]
    fn messages_carry_the_payload_and_no_headers() {
        let msg = message(Bytes::from_static(b"record")).ok();
        let msg = msg.as_ref();
        assert_eq!(msg.map(|m| &m.payload[..]), Some(&b"record"[..]));
        assert_eq!(msg.map(|m| m.user_headers.is_none()), Some(true));
        let err = message(Bytes::new()).err().map(|e| e.kind());
        assert_eq!(err, Some(ErrorKind::InvalidParams));
    }

    #[test]
    fn our_partitioner_is_the_one_iggy_uses_for_keys() {
        // `Partitioning::messages_key` routes to XxHash32(key, 0) % n (0-based ids): the same
        // function as `partition_for_key`, so routing ourselves changes nothing.
        for key in [&b"task-1"[..], b"a", b"another key", &[0u8; 200]] {
            for n in 1..9 {
                assert_eq!(
                    crate::log::partition_for_key(key, n),
                    iggy_common::calculate_32(key) % n
                );
            }
        }
    }
}
