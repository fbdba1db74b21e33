//! A task's records as the log holds them, each with what the fold made of it: the history
//! an operator reads (the web console), where a client reads the folded task.
//!
//! A [`Timeline`] follows the task's partition from the task's command on, keeps the
//! records whose task id is the task's, and runs them through a [`TaskMachine`] of its own,
//! so each record carries its verdict: applied (a claim says whether it was a takeover),
//! or ignored and why (fenced: written under a claim that no longer holds). It reads every
//! record of the partition from the command on, other tasks' too: O(partition since the
//! task began), fine for one person looking at one task, not for a hot path.

use std::sync::Arc;

use agentlog_wire::Record;
use agentlog_wire::fold::{Change, ClaimKind, Outcome, TaskMachine};

use super::{Bridge, not_found, tenant};
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};
use crate::log::Follower;
use crate::security::RecordVerifier;

/// What the fold made of one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// It changed the task; a claim says how it applied (a takeover: another attempt took
    /// the turn over after the lease ran out).
    Applied(Option<ClaimKind>),
    /// The fold ignored it, for this reason ([`Outcome::Fenced`]: a worker's record not
    /// written under the current claim, or a claim that did not apply).
    Ignored(Outcome),
    /// The configured trust turned it away (unsigned, unknown key, bad signature): the fold
    /// never saw it.
    Rejected,
}

/// One record of a task, where it lies and what the fold made of it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TimelineRecord {
    /// The partition of the agent's events topic holding the task.
    pub partition: u32,
    /// The record's offset in it.
    pub offset: u64,
    /// The record.
    pub record: Record,
    /// What the fold made of it.
    pub verdict: Verdict,
}

/// A task's records in log order, from its command on, then as they are appended
/// ([`Bridge::timeline`]).
#[derive(Debug)]
pub struct Timeline {
    follower: Follower,
    task_id: Arc<str>,
    machine: TaskMachine,
    verifier: Option<RecordVerifier>,
    history_end: u64,
}

impl Bridge {
    /// The records of the caller's task `task_id` (in `tenant`, when named: the bridge's
    /// tenant rules), in log order from its command, followed live. Another caller's task
    /// answers -32001, exactly as a missing one. The view is synced first, so the timeline
    /// holds at least what a `GetTask` now would.
    pub async fn timeline(
        &self,
        caller: &Caller,
        tenant: Option<&str>,
        task_id: &str,
    ) -> Result<Timeline> {
        if task_id.is_empty() {
            return Err(Error::new(ErrorKind::InvalidParams, "id must not be empty")
                .with_detail("field", "id"));
        }
        let caller = tenant::scoped(caller, tenant)?;
        let _pinned = self.sync_task(task_id).await?;
        let view = &self.inner.view;
        let info = view
            .lookup(&caller, task_id)
            .ok_or_else(|| not_found(task_id))?;
        let first = info.offsets().next().unwrap_or(0);
        let topic = self.inner.config.topics.events.clone();
        let ends = self.inner.log.end_offsets(&topic).await?;
        let history_end = ends
            .get(info.partition as usize)
            .copied()
            .unwrap_or_default()
            .max(info.position() + 1);
        let follower = Follower::new(self.inner.log.clone(), topic, info.partition, first).await?;
        Ok(Timeline {
            follower,
            task_id: info.id,
            machine: TaskMachine::new(),
            verifier: view.verifier().cloned(),
            history_end,
        })
    }
}

impl Timeline {
    /// The task id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The partition's end when the timeline was opened: records before it are the task's
    /// history, those after it were appended since.
    pub fn history_end(&self) -> u64 {
        self.history_end
    }

    /// The offset of the next record of the partition this timeline will read.
    pub fn position(&self) -> u64 {
        self.follower.position()
    }

    /// The task's records in the next batch of its partition, waiting until the partition has
    /// one. Empty when the batch held only other tasks' records (then
    /// [`position`](Self::position) moved on).
    pub async fn next(&mut self) -> Result<Vec<TimelineRecord>> {
        let batch = self.follower.next_batch().await?;
        let mut records = Vec::new();
        for stored in batch {
            // A record that does not decode names no task: not this one's.
            let Ok(record) = Record::decode(&stored.payload) else {
                continue;
            };
            if *record.header.task_id != *self.task_id {
                continue;
            }
            let verdict = match &self.verifier {
                Some(verifier) if verifier.check(&record).is_err() => Verdict::Rejected,
                _ => judge(self.machine.apply(&record)),
            };
            records.push(TimelineRecord {
                partition: stored.partition,
                offset: stored.offset,
                record,
                verdict,
            });
        }
        Ok(records)
    }
}

fn judge(decided: std::result::Result<Change, Outcome>) -> Verdict {
    match decided {
        Ok(Change::Claimed(claimed)) => Verdict::Applied(Some(claimed.kind)),
        Ok(_) => Verdict::Applied(None),
        Err(outcome) => Verdict::Ignored(outcome),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
