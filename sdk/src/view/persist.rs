//! Starting a view from a checkpoint, and writing checkpoints ([`checkpoint`] has the format
//! and the checks).

use std::sync::Weak;
use std::sync::atomic::Ordering;

use tokio_util::sync::CancellationToken;

use super::checkpoint::{self, Manifest, Position, codec};
use super::tasks::Tasks;
use super::{Inner, TaskView};
use crate::error::{Error, ErrorKind, Result};
use crate::log::{Log, TopicRef, partition_for_key};
use crate::retention::now_ms;

/// A checkpoint the view wrote or started from.
#[derive(Debug, Clone)]
pub(super) struct CheckpointMark {
    /// Per partition, the next offset it had not applied.
    pub positions: Vec<u64>,
    /// The view's `records_seen` when it was taken.
    pub records_seen: u64,
    /// Where it is on the checkpoint topic.
    pub manifest: Manifest,
}

/// The newest two checkpoints a view knows (wrote, or started from): what a compaction may
/// delete below.
#[derive(Debug, Default)]
pub(super) struct KnownCheckpoints {
    /// The one before `last`.
    pub previous: Option<CheckpointMark>,
    /// The newest.
    pub last: Option<CheckpointMark>,
}

/// What [`TaskView::checkpoint`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// Per partition, the next offset the checkpoint had not applied.
    pub positions: Vec<u64>,
    /// Its size, bytes.
    pub bytes: usize,
    /// How many tasks it holds.
    pub tasks: usize,
}

/// The tasks of the newest usable checkpoint of `topic` on `checkpoints` (the newest two are
/// tried), or `None` (warned about) if there is none.
pub(super) async fn restore(
    log: &Log,
    topic: &TopicRef,
    checkpoints: &TopicRef,
    partitions: u32,
    count_live: bool,
) -> Option<(Tasks, CheckpointMark)> {
    let manifests = match checkpoint::manifests(log, checkpoints, 2).await {
        Ok(manifests) => manifests,
        Err(error) => {
            tracing::warn!(%checkpoints, error = %error.report(), "cannot read the checkpoints; replaying the log from its start");
            return None;
        }
    };
    for manifest in manifests {
        let usable = async {
            let bytes = checkpoint::read(log, checkpoints, &manifest)
                .await
                .map_err(|e| e.report().to_string())?;
            let decoded = codec::decode(&bytes).map_err(|e| e.to_string())?;
            checkpoint::verify(log, topic, partitions, &decoded).await?;
            let positions: Vec<u64> = decoded.positions.iter().map(|p| p.next).collect();
            let tasks = Tasks::from_checkpoint(decoded, partitions, count_live, |id| {
                partition_for_key(id.as_bytes(), partitions)
            })
            .map_err(|e| e.to_string())?;
            Ok::<_, String>((tasks, positions))
        };
        match usable.await {
            Ok((tasks, positions)) => {
                tracing::info!(
                    %topic, checkpoint = manifest.offset, tasks = tasks.entries.len(), ?positions,
                    "task view starts from a checkpoint"
                );
                let mark = CheckpointMark {
                    positions,
                    records_seen: 0,
                    manifest,
                };
                return Some((tasks, mark));
            }
            Err(why) => tracing::warn!(
                %checkpoints, offset = manifest.offset,
                "ignoring a checkpoint: {why}; trying an older one, else replaying the log"
            ),
        }
    }
    None
}

impl TaskView {
    /// Write a checkpoint of the view as it is now to its checkpoint topic (`None` when it has
    /// none). Views configured to do so write them on their own; this is for a clean shutdown
    /// and for tests.
    pub async fn checkpoint(&self) -> Result<Option<CheckpointInfo>> {
        self.inner.write_checkpoint().await
    }

    /// The positions of the checkpoint the view started from, if it started from one.
    pub fn restored_from(&self) -> Option<&[u64]> {
        self.inner.restored.as_deref()
    }
}

/// Ends the checkpoint being encoded when dropped: also when the future writing it is.
struct EndsOnDrop<'a>(&'a Inner);

impl Drop for EndsOnDrop<'_> {
    fn drop(&mut self) {
        self.0.write().end_checkpoint();
    }
}

/// Slots a checkpoint encodes under one hold of the read lock (a few milliseconds' work).
const CHECKPOINT_SLICE: u32 = 4096;

impl Inner {
    async fn write_checkpoint(&self) -> Result<Option<CheckpointInfo>> {
        let Some(topic) = &self.options.checkpoints else {
            return Ok(None);
        };
        // One checkpoint at a time: the tasks hold the state of the one being encoded.
        let _one = self.checkpointing.lock().await;
        // The positions, and the tasks as they stand with them, taken under one lock: the
        // positions move only under it.
        let (positions, mut body, count_at, records_seen) = {
            let mut tasks = self.write();
            let positions: Vec<u64> = self.applied.iter().map(|a| *a.borrow()).collect();
            let mut body = Vec::with_capacity(tasks.entries.len() * 96);
            let count_at = tasks.begin_checkpoint(&mut body);
            let seen = self.records_seen.load(Ordering::Relaxed);
            (positions, body, count_at, seen)
        };
        let encoding = EndsOnDrop(self);
        // The tasks a slice of slots at a time, records applying in between.
        let mut count = 0;
        loop {
            let (encoded, done) = self
                .read()
                .encode_checkpoint_slice(&mut body, CHECKPOINT_SLICE);
            count += encoded;
            if done {
                break;
            }
            tokio::task::yield_now().await;
        }
        drop(encoding);
        codec::patch_count(&mut body, count_at, count);
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        let mut marks = Vec::with_capacity(positions.len());
        for (partition, next) in (0u32..).zip(positions.iter().copied()) {
            let anchor = match next.checked_sub(1) {
                None => (0, 0),
                Some(before) => {
                    let found = self.log.read_at(&self.topic, partition, &[before]).await?;
                    let record = found.first().filter(|r| r.offset == before).ok_or_else(|| {
                        Error::new(
                            ErrorKind::Corrupt,
                            format!("{}: no record at partition {partition} offset {before}, which the view applied", self.topic),
                        )
                    })?;
                    Position::anchor_of(&record.payload)
                }
            };
            marks.push(Position { next, anchor });
        }
        let mut bytes = Vec::with_capacity(body.len() + 64 + 16 * marks.len());
        codec::encode_header(
            &mut bytes,
            now_ms(),
            &self.topic.stream,
            &self.topic.topic,
            &marks,
        );
        bytes.extend_from_slice(&body);
        drop(body);
        codec::seal(&mut bytes);
        let manifest = checkpoint::store(&self.log, topic, &bytes).await?;
        tracing::debug!(topic = %self.topic, checkpoint = manifest.offset, tasks = count, bytes = bytes.len(), "wrote a checkpoint");
        let mut known = self
            .checkpoints_known
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        known.previous = known.last.take();
        known.last = Some(CheckpointMark {
            positions: positions.clone(),
            records_seen,
            manifest,
        });
        drop(known);
        Ok(Some(CheckpointInfo {
            positions,
            bytes: bytes.len(),
            tasks: count,
        }))
    }

    /// Whether enough happened since the last checkpoint to write another.
    fn checkpoint_due(&self) -> bool {
        if !*self.caught_up.borrow() {
            return false;
        }
        let seen = self.records_seen.load(Ordering::Relaxed);
        let last = self
            .checkpoints_known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last
            .as_ref()
            .map(|mark| mark.records_seen);
        match last {
            Some(at) => seen.saturating_sub(at) >= self.options.checkpoint_records.max(1),
            None => seen >= self.options.checkpoint_records.max(1),
        }
    }
}

/// Every `checkpoint_every`: write a checkpoint when one is due, then compact the log if the
/// view is to.
pub(super) async fn checkpoint_periodically(inner: Weak<Inner>, shutdown: CancellationToken) {
    let Some(every) = inner.upgrade().and_then(|i| i.options.checkpoint_every) else {
        return;
    };
    let mut chore = super::follow::Chore::new(inner, every, shutdown);
    while let Some(inner) = chore.next().await {
        if inner.checkpoint_due()
            && let Err(error) = inner.write_checkpoint().await
        {
            tracing::warn!(topic = %inner.topic, error = %error.report(), "could not write a checkpoint; trying again later");
        }
        if let Some(others) = &inner.options.compact
            && let Err(error) = inner.compact(Some(others)).await
        {
            tracing::warn!(topic = %inner.topic, error = %error.report(), "could not delete expired segments; trying again later");
        }
    }
}
