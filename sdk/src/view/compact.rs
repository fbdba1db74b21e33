//! Deleting what only expired tasks needed: the log's whole sealed segments that no retained
//! task has a record in, once two checkpoints cover them.
//!
//! Why two checkpoints: a segment in the middle of a partition may go while its neighbours
//! stay, so the records that remain are no longer a log that folds from its start to the same
//! tasks (an expired task whose command stayed but whose terminal record went would look
//! live). A view never folds them again: it starts from a checkpoint past them. Covering the
//! deleted segments with the *older* of the newest two checkpoints keeps that true when the
//! newest one is damaged. A view that finds neither usable replays the records that remain
//! and warns; answers for tasks inside retention are still right (their records are all
//! there), but an expired task whose records were partly deleted may show again until its
//! remaining records expire too (see `skills/log/SKILL.md`).
//!
//! The rule, per partition of the events topic the view holds: a sealed segment is deleted
//! when it ends at or before the older of the partition's newest two checkpoints and no record
//! in it is one a retained task applied (counted per chunk of offsets, [`LiveRecords`]). A
//! segment holding one record of a live task is kept however old; the worst case is one live
//! or retained task per segment, which keeps every segment. The commands topic only hands out
//! work (the workers' sweeper queues again what a worker never took), so its sealed segments
//! go once older than the retention; a checkpoint topic partition's once they are before the
//! older checkpoint of every events partition it keeps (all of them held here, each with two
//! known checkpoints).
//!
//! [`LiveRecords`]: super::tasks::expiry::LiveRecords

use super::{Inner, TaskView};
use crate::error::Result;
use crate::log::TopicRef;
use crate::retention::now_ms;

/// What one [`TaskView::compact`] deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compacted {
    /// Segments deleted, over every topic and partition.
    pub segments: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// The other topics a compaction looks after, and how long their segments are kept.
#[derive(Debug, Clone)]
pub struct CompactTopics {
    /// The workers' queue: sealed segments older than `commands_retention_ms` go.
    pub commands: TopicRef,
    /// How long a commands segment is kept after its last write, ms (0: forever).
    pub commands_retention_ms: u64,
}

impl TaskView {
    /// Delete the log's segments that no retained task needs and that the newest two
    /// checkpoints cover (see the module doc); `others` names the agent's commands topic.
    /// Nothing happens before the view has caught up or before it knows two checkpoints. A
    /// backend that manages its own retention (Iggy) lists no segments: nothing to do.
    pub async fn compact(&self, others: Option<&CompactTopics>) -> Result<Compacted> {
        self.inner.compact(others).await
    }
}

impl Inner {
    pub(super) async fn compact(&self, others: Option<&CompactTopics>) -> Result<Compacted> {
        let mut done = Compacted::default();
        if !*self.caught_up.borrow() {
            return Ok(done);
        }
        // Per held partition, its older and newer known checkpoints.
        let mut known = Vec::with_capacity(self.parts.len());
        for part in self.parts.iter() {
            let marks = part.known();
            known.push(match (part.held(), &marks.previous, &marks.last) {
                (true, Some(previous), Some(last)) => Some((previous.clone(), last.clone())),
                _ => None,
            });
        }
        for (partition, part) in (0u32..).zip(self.parts.iter()) {
            let Some((older, _)) = known.get(partition as usize).and_then(Option::as_ref) else {
                continue;
            };
            let horizon = older.position;
            let segments = self.log.segments(&self.topic, partition).await?;
            let dead: Vec<_> = {
                let tasks = part.read();
                let Some(live) = tasks.live.as_ref() else {
                    continue;
                };
                segments
                    .into_iter()
                    .filter(|s| s.end <= horizon && !live.any_in(s.base..s.end))
                    .collect()
            };
            done.add(&self.delete(&self.topic, partition, &dead).await?);
        }
        if let Some(checkpoints) = &self.options.checkpoints {
            let homes = self.log.partitions(checkpoints).await?.max(1);
            for home in 0..homes {
                // Every events partition this one keeps must have two known checkpoints.
                let before = (home..self.partitions)
                    .step_by(homes as usize)
                    .map(|p| {
                        known
                            .get(p as usize)
                            .and_then(Option::as_ref)
                            .map(|(older, newer)| {
                                older
                                    .manifest
                                    .first_offset()
                                    .min(newer.manifest.first_offset())
                            })
                    })
                    .try_fold(u64::MAX, |min, first| first.map(|f| min.min(f)));
                let Some(before) = before.filter(|b| *b != u64::MAX) else {
                    continue;
                };
                let segments = self.log.segments(checkpoints, home).await?;
                let dead: Vec<_> = segments.into_iter().filter(|s| s.end <= before).collect();
                done.add(&self.delete(checkpoints, home, &dead).await?);
            }
        }
        if let Some(others) = others.filter(|o| o.commands_retention_ms > 0) {
            let cutoff = now_ms().saturating_sub(others.commands_retention_ms);
            for partition in 0..self.partitions {
                let segments = self.log.segments(&others.commands, partition).await?;
                let dead: Vec<_> = segments
                    .into_iter()
                    .filter(|s| s.last_write_ms < cutoff)
                    .collect();
                done.add(&self.delete(&others.commands, partition, &dead).await?);
            }
        }
        if done.segments > 0 {
            tracing::info!(topic = %self.topic, segments = done.segments, bytes = done.bytes, "deleted segments only expired tasks needed");
        }
        Ok(done)
    }

    async fn delete(
        &self,
        topic: &TopicRef,
        partition: u32,
        dead: &[crate::log::SegmentInfo],
    ) -> Result<Compacted> {
        if dead.is_empty() {
            return Ok(Compacted::default());
        }
        let bases: Vec<u64> = dead.iter().map(|s| s.base).collect();
        let segments = self.log.delete_segments(topic, partition, &bases).await?;
        let bytes = if segments == dead.len() {
            dead.iter().map(|s| s.bytes).sum()
        } else {
            0
        };
        Ok(Compacted { segments, bytes })
    }
}

impl Compacted {
    fn add(&mut self, other: &Compacted) {
        self.segments += other.segments;
        self.bytes += other.bytes;
    }
}
