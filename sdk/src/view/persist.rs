//! Starting a partition's hold from its checkpoint, and writing checkpoints, one per partition
//! ([`checkpoint`] has the format and the checks).

use std::sync::Weak;
use std::sync::atomic::Ordering;

use tokio_util::sync::CancellationToken;

use super::checkpoint::{self, Position, codec};
use super::part::{CheckpointMark, Part};
use super::tasks::Tasks;
use super::{Inner, TaskView};
use crate::error::{Error, ErrorKind, Result};
use crate::log::{TopicRef, partition_for_key};
use crate::retention::now_ms;

/// What [`TaskView::checkpoint`] wrote: a checkpoint of each partition the view holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// Per partition of the topic, the next offset its checkpoint had not applied (0 for a
    /// partition not held: none written).
    pub positions: Vec<u64>,
    /// Their size, bytes.
    pub bytes: usize,
    /// How many tasks they hold.
    pub tasks: usize,
}

/// The tasks of `partition` in its newest usable checkpoint on `checkpoints` (the newest two
/// that hold it are tried), or `None` (warned about) if there is none.
pub(super) async fn restore(
    inner: &Inner,
    checkpoints: &TopicRef,
    partition: u32,
    count_live: bool,
) -> Option<(Tasks, CheckpointMark)> {
    let (log, topic, partitions) = (&inner.log, &inner.topic, inner.partitions);
    let manifests = match checkpoint::manifests(log, checkpoints, partition, 2).await {
        Ok(manifests) => manifests,
        Err(error) => {
            tracing::warn!(%checkpoints, partition, error = %error.report(), "cannot read the checkpoints; replaying the partition from its start");
            return None;
        }
    };
    for manifest in manifests {
        let usable = async {
            let bytes = checkpoint::read(log, checkpoints, &manifest)
                .await
                .map_err(|e| e.report().to_string())?;
            let decoded = codec::decode(&bytes).map_err(|e| e.to_string())?;
            checkpoint::verify(log, topic, partitions, partition, &decoded).await?;
            let position = decoded
                .positions
                .get(partition as usize)
                .map_or(0, |p| p.next);
            // One of every partition (written before they were per partition): its tasks of
            // this one.
            let tasks = Tasks::from_checkpoint(decoded, count_live, |id| {
                manifest.of.is_some() || partition_for_key(id.as_bytes(), partitions) == partition
            })
            .map_err(|e| e.to_string())?;
            Ok::<_, String>((tasks, position))
        };
        match usable.await {
            Ok((tasks, position)) => {
                tracing::info!(
                    %topic, partition, checkpoint = manifest.offset, tasks = tasks.entries.len(), position,
                    "a partition of the task view starts from a checkpoint"
                );
                let mark = CheckpointMark {
                    position,
                    records_applied: 0,
                    manifest,
                };
                return Some((tasks, mark));
            }
            Err(why) => tracing::warn!(
                %checkpoints, partition, offset = manifest.offset,
                "ignoring a checkpoint: {why}; trying an older one, else replaying the partition"
            ),
        }
    }
    None
}

impl TaskView {
    /// Write a checkpoint of each partition the view holds, as it is now, to its checkpoint
    /// topic (`None` when it has none). Views configured to do so write them on their own;
    /// this is for a clean shutdown and for tests.
    pub async fn checkpoint(&self) -> Result<Option<CheckpointInfo>> {
        if self.inner.options.checkpoints.is_none() {
            return Ok(None);
        }
        let mut info = CheckpointInfo {
            positions: vec![0; self.inner.parts.len()],
            bytes: 0,
            tasks: 0,
        };
        for partition in self.held_partitions() {
            if let Some(written) = self.inner.write_checkpoint(partition).await? {
                if let Some(position) = info.positions.get_mut(partition as usize) {
                    *position = written.position;
                }
                info.bytes += written.bytes;
                info.tasks += written.tasks;
            }
        }
        Ok(Some(info))
    }

    /// Per partition of the topic, the position of the checkpoint its hold started from (0
    /// for one that did not), if any held partition started from one.
    pub fn restored_from(&self) -> Option<Vec<u64>> {
        let positions: Vec<Option<u64>> = self
            .inner
            .parts
            .iter()
            .map(|part| part.held().then(|| part.restored()).flatten())
            .collect();
        positions
            .iter()
            .any(Option::is_some)
            .then(|| positions.iter().map(|p| p.unwrap_or(0)).collect())
    }
}

/// One partition's checkpoint, written.
struct Written {
    position: u64,
    bytes: usize,
    tasks: usize,
}

/// Ends the checkpoint being encoded when dropped: also when the future writing it is.
struct EndsOnDrop<'a>(&'a Part);

impl Drop for EndsOnDrop<'_> {
    fn drop(&mut self) {
        self.0.write().end_checkpoint();
    }
}

/// Slots a checkpoint encodes under one hold of the read lock (a few milliseconds' work).
const CHECKPOINT_SLICE: u32 = 4096;

impl Inner {
    /// Write a checkpoint of `partition` (held) as it is now; `None` when the view has no
    /// checkpoint topic or does not hold it.
    async fn write_checkpoint(&self, partition: u32) -> Result<Option<Written>> {
        let Some(topic) = &self.options.checkpoints else {
            return Ok(None);
        };
        let part = self.part(partition)?;
        if !part.held() {
            return Ok(None);
        }
        // One checkpoint of a partition at a time: its tasks hold the state of the one being
        // encoded.
        let _one = part.checkpointing.lock().await;
        // The position, and the tasks as they stand with it, taken under one lock: the
        // position moves only under it.
        let (next, mut body, count_at, records_applied) = {
            let mut tasks = part.write();
            let next = part.applied_next();
            let mut body = Vec::with_capacity(tasks.entries.len() * 96);
            let count_at = tasks.begin_checkpoint(&mut body);
            let applied = part.records_applied.load(Ordering::Relaxed);
            (next, body, count_at, applied)
        };
        let encoding = EndsOnDrop(part);
        // The tasks a slice of slots at a time, records applying in between.
        let mut count = 0;
        loop {
            let (encoded, done) = part
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
        // The other partitions' positions are 0: nothing of them is in it.
        let mut marks = vec![Position::default(); self.parts.len()];
        if let Some(mark) = marks.get_mut(partition as usize) {
            *mark = Position { next, anchor };
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
        let manifest = checkpoint::store(&self.log, topic, partition, &bytes).await?;
        tracing::debug!(topic = %self.topic, partition, checkpoint = manifest.offset, tasks = count, bytes = bytes.len(), "wrote a checkpoint");
        let mut known = part.known();
        known.previous = known.last.take();
        known.last = Some(CheckpointMark {
            position: next,
            records_applied,
            manifest,
        });
        drop(known);
        Ok(Some(Written {
            position: next,
            bytes: bytes.len(),
            tasks: count,
        }))
    }

    /// Whether enough happened in `partition` since its last checkpoint to write another: a
    /// share of `checkpoint_records` as the partition is of the topic (so that the log is
    /// written and replayed as much as with one checkpoint of every partition). Only the
    /// partition's owner writes them: a view holding it on demand does not.
    fn checkpoint_due(&self, part: &Part) -> bool {
        if !part.held() || !part.assigned() || !part.is_ready() {
            return false;
        }
        let applied = part.records_applied.load(Ordering::Relaxed);
        let last = part.known().last.as_ref().map(|mark| mark.records_applied);
        let every = (self.options.checkpoint_records / u64::from(self.partitions.max(1))).max(1);
        applied.saturating_sub(last.unwrap_or(0)) >= every
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
        for partition in 0..inner.partitions {
            let due = inner
                .parts
                .get(partition as usize)
                .is_some_and(|part| inner.checkpoint_due(part));
            if due && let Err(error) = inner.write_checkpoint(partition).await {
                tracing::warn!(topic = %inner.topic, partition, error = %error.report(), "could not write a checkpoint; trying again later");
            }
        }
        if let Some(others) = &inner.options.compact
            && let Err(error) = inner.compact(Some(others)).await
        {
            tracing::warn!(topic = %inner.topic, error = %error.report(), "could not delete expired segments; trying again later");
        }
    }
}
