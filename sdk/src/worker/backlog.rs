//! How far behind its commands queue a worker is: the records on the partitions it owns
//! that its run loop has not read yet. A worker slower than the bridges feeding it (its
//! loop, not its handlers: a turn waiting for a handler slot has been read) shows here long
//! before anyone notices its turns start late; `/metrics` serves it as
//! `agentlog_worker_queue_lag_records`.

use std::sync::{Arc, Mutex};

use foldhash::HashMap;

use crate::error::Result;
use crate::log::{Log, TopicRef};

/// A handle on a running worker's read positions ([`Worker::backlog`](super::Worker::backlog)),
/// cheap to clone; it outlives the worker (then it reports what the worker last read).
#[derive(Clone)]
pub struct Backlog {
    inner: Arc<Inner>,
}

struct Inner {
    log: Log,
    topic: TopicRef,
    read: Mutex<Read>,
}

/// The loop's view of its queue, as of its last poll.
#[derive(Default)]
struct Read {
    /// The partitions the worker's group gave it.
    owned: Vec<u32>,
    /// Per owned partition read from since it was given: the next offset to read.
    next: HashMap<u32, u64>,
}

impl Backlog {
    pub(super) fn new(log: Log, topic: TopicRef) -> Backlog {
        Backlog {
            inner: Arc::new(Inner {
                log,
                topic,
                read: Mutex::default(),
            }),
        }
    }

    fn read(&self) -> std::sync::MutexGuard<'_, Read> {
        // Plain numbers: a panic half-way leaves a figure at worst one poll old.
        self.inner.read.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The commands topic the worker reads.
    pub fn topic(&self) -> &TopicRef {
        &self.inner.topic
    }

    /// The partitions the worker owns now: positions of those it lost are forgotten (whoever
    /// has them now starts from the group's committed offset, not from here).
    pub(super) fn owned(&self, owned: &[u32]) {
        let mut read = self.read();
        if read.owned != owned {
            read.next.retain(|p, _| owned.contains(p));
            read.owned = owned.to_vec();
        }
    }

    /// The loop has read `partition` up to `next` (exclusive).
    pub(super) fn advanced(&self, partition: u32, next: u64) {
        let mut read = self.read();
        let position = read.next.entry(partition).or_insert(next);
        *position = (*position).max(next);
    }

    /// The next offset the loop reads on `partition`, if it has read from it since it was
    /// given.
    pub(super) fn position(&self, partition: u32) -> Option<u64> {
        self.read().next.get(&partition).copied()
    }

    /// How many records the log holds on the worker's partitions past what its loop has
    /// read; one end-offset probe of the log. A partition counts from the worker's first
    /// read of it since it was given (its group's committed offset is the backend's to know),
    /// which a loop reaches within one round of polls over its partitions.
    pub async fn records(&self) -> Result<u64> {
        let ends = self.ends().await?;
        Ok(self.behind(&ends))
    }

    /// The end offset of every partition of the commands topic, as of now.
    pub(super) async fn ends(&self) -> Result<Vec<u64>> {
        self.inner.log.end_offsets(&self.inner.topic).await
    }

    fn behind(&self, ends: &[u64]) -> u64 {
        let read = self.read();
        read.next
            .iter()
            .filter_map(|(p, next)| {
                let end = ends.get(usize::try_from(*p).ok()?)?;
                Some(end.saturating_sub(*next))
            })
            .sum()
    }
}

impl std::fmt::Debug for Backlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backlog")
            .field("topic", &self.inner.topic)
            .finish_non_exhaustive()
    }
}

/// Two handles are equal when they watch the same worker.
impl PartialEq for Backlog {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for Backlog {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    async fn backlog() -> Backlog {
        let log = crate::log::open("memory://").await.unwrap();
        Backlog::new(log, TopicRef::new("s", "t.commands"))
    }

    #[tokio::test]
    async fn counts_what_the_owned_partitions_hold_past_their_reads() {
        let backlog = backlog().await;
        backlog.owned(&[0, 2]);
        backlog.advanced(0, 10);
        backlog.advanced(2, 5);
        // A late report of an older read does not move the position back.
        backlog.advanced(0, 7);
        assert_eq!(backlog.behind(&[25, 100, 5]), 15);
        // A partition lost is forgotten; one never read from counts from its first read.
        backlog.owned(&[2, 3]);
        assert_eq!(backlog.behind(&[25, 100, 9, 40]), 4);
        backlog.advanced(3, 38);
        assert_eq!(backlog.behind(&[25, 100, 9, 40]), 6);
    }
}
