//! Following a partition: read what is there, then await the end offset moving.

use tokio::sync::watch;

use super::{Log, StoredRecord, TopicRef};
use crate::error::Result;

/// Reads one partition from an offset and then waits for new records, without spinning.
#[derive(Debug)]
pub struct Follower {
    log: Log,
    topic: TopicRef,
    partition: u32,
    next: u64,
    end: watch::Receiver<u64>,
    batch: usize,
}

impl Follower {
    /// Follow `partition` of `topic` starting at offset `from`.
    pub async fn new(log: Log, topic: TopicRef, partition: u32, from: u64) -> Result<Self> {
        let end = log.watch_end(&topic, partition).await?;
        Ok(Self {
            log,
            topic,
            partition,
            next: from,
            end,
            batch: 1024,
        })
    }

    /// The offset of the next record this follower will return.
    pub fn position(&self) -> u64 {
        self.next
    }

    /// The next records at or after [`position`](Self::position); waits until there is at
    /// least one.
    pub async fn next_batch(&mut self) -> Result<Vec<StoredRecord>> {
        loop {
            let records = self
                .log
                .read(&self.topic, self.partition, self.next, self.batch)
                .await?;
            if let Some(last) = records.last() {
                self.next = last.offset + 1;
                return Ok(records);
            }
            // Nothing past `next` yet: wait for the end offset to move beyond it.
            let next = self.next;
            self.end
                .wait_for(|end| *end > next)
                .await
                .map_err(|_| super::closed_error())?;
        }
    }
}
