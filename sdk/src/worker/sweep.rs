//! The sweeper: puts back on the workers' queue a turn whose command never reached it.
//!
//! A bridge appends a command to the events topic (the log of record) and then its copy to
//! the commands topic. A crash between the two appends, or a failed second append, leaves a
//! task `submitted` that no worker will ever be handed. So each worker looks, about once a
//! second, at the partitions it owns in the worker group: a task there whose turn has waited
//! for a claim for [`WorkerConfig::requeue_after`](super::WorkerConfig) (default 3 s), or whose
//! claim's lease is over (its holder gone: a first claim written with its command has no copy
//! to bring a takeover, `reserve.rs`), and that this worker is not already supervising gets a
//! copy of its turn's record (the command or continue itself, read back from the events topic)
//! on the commands topic. The worker that owns the partition receives it and claims the turn
//! as usual.
//!
//! Any number of workers sweep at once without doing work twice: each sweeps only the
//! partitions it owns, each turn at most once per worker, and the claim decides who runs a
//! turn, so a copy that was not needed after all (the first one was still queued, or two
//! owners swept during a rebalance) is skipped by whoever receives it. Bridges run no
//! sweeper: a task only needs one once a worker is there to run it, and then the worker that
//! would run it sweeps it.
//!
//! A turn waits for its copy behind whatever the queue holds before it, so a worker behind on
//! its queue (busier than its handlers: a burst of `returnImmediately` sends) would take every
//! turn waiting that long for lost. A turn is put back only once the loop has read its
//! partition past where the copy would be: its end when the sweep first saw the turn waiting
//! (a partition the loop has read nothing from since it got it does not wait). Otherwise each
//! sweep would put back thousands of copies, each a read and an append the loop waits on,
//! and the queue would fall further behind the longer the burst lasted.
//!
//! The bound: a lost command is back on the queue within `requeue_after` plus one sweep
//! period (1 s) plus an append, so at most 5 s with the defaults, and a dead holder's turn
//! within a sweep period of its lease's end, while the owning worker keeps up with its queue
//! and has a free supervisor slot to receive it.
//!
//! The same sweep releases the first claims this worker wrote in its bridge's appends that
//! it never adopted (`reserve.rs`), and cancels the input-required tasks of those partitions whose ask's deadline
//! has passed (an abandoned MCP call: [`super::expiry`]), within one sweep period of it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::{Record, RecordBody, TaskState};

use tokio::time::Instant;

use super::attempt::{TurnKey, millis, now_ms};
use super::backlog::Backlog;
use super::shared::Shared;
use crate::error::Result;

/// How often a worker sweeps.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// How long a turn this worker put back is remembered (so it is put back once).
const REMEMBER: Duration = Duration::from_secs(600);

/// One worker's sweeper state.
#[derive(Debug)]
pub(super) struct Sweeper {
    requeue_after: Duration,
    next: Instant,
    /// Turns this worker put back on the queue, and when.
    requeued: HashMap<TurnKey, Instant>,
    /// Turns seen waiting past `requeue_after`, each with its partition's end on the
    /// commands topic when first seen: their copies, if any, lie before it.
    overdue: HashMap<TurnKey, u64>,
    /// The asks waiting in the owned partitions, with their deadlines.
    expiry: super::expiry::InputExpiry,
}

impl Sweeper {
    pub(super) fn new(requeue_after: Duration) -> Self {
        Self {
            requeue_after,
            next: Instant::now() + SWEEP_EVERY,
            requeued: HashMap::new(),
            overdue: HashMap::new(),
            expiry: super::expiry::InputExpiry::default(),
        }
    }

    /// Sweep `owned` partitions if a sweep is due, skipping the turns in `supervised` and
    /// those whose copies may still be ahead of the loop (`read`).
    pub(super) async fn sweep(
        &mut self,
        shared: &Shared,
        owned: &[u32],
        supervised: &foldhash::HashMap<TurnKey, tokio::task::Id>,
        read: &Backlog,
    ) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.next = now + SWEEP_EVERY;
        // First claims written for this process's bridge whose copies went elsewhere (the
        // partition moved): released, so the worker holding the copy takes over at once.
        for attempt in shared.reservations.take_stale(self.requeue_after) {
            if let Err(error) = attempt.release().await {
                tracing::warn!(task_id = attempt.task.id, error = %error.report(), "worker: cannot release an unused first claim; its lease ends it");
            }
        }
        self.requeued
            .retain(|_, at| now.duration_since(*at) < REMEMBER);
        // An unclaimed turn's copy may be on its way still; a claim whose lease is over had
        // no copy, or its holder's is gone with it.
        let now_ms = now_ms();
        let unclaimed_before = now_ms.saturating_sub(millis(self.requeue_after));
        let mut overdue = HashMap::new();
        // The commands topic's ends, asked once a sweep and only for a turn newly overdue.
        let mut ends: Option<Vec<u64>> = None;
        for &partition in owned {
            for (task_id, turn) in shared
                .view
                .awaiting_claim(partition, unclaimed_before, now_ms)
            {
                let key = (task_id.to_string(), turn.to_string());
                if supervised.contains_key(&key) || self.requeued.contains_key(&key) {
                    continue;
                }
                if let Some(next) = read.position(partition) {
                    let copy_before = match self.overdue.get(&key) {
                        Some(end) => *end,
                        None => match ends_now(read, &mut ends).await {
                            Some(ends) => ends.get(partition as usize).copied().unwrap_or(0),
                            None => break,
                        },
                    };
                    if next < copy_before {
                        // Its copy may be queued still, behind what the loop has not read.
                        overdue.insert(key, copy_before);
                        continue;
                    }
                }
                match requeue(shared, &task_id, &turn).await {
                    Ok(true) => {
                        tracing::info!(task_id = %task_id, turn = %turn, "worker: put a turn whose command never reached the queue back on it");
                        self.requeued.insert(key, now);
                    }
                    Ok(false) => {}
                    Err(error) => {
                        tracing::warn!(task_id = %task_id, error = %error.report(), "worker: cannot put a lost command back on the queue; trying again next sweep");
                    }
                }
            }
        }
        // Those no longer waiting (claimed, read, moved away) are forgotten.
        self.overdue = overdue;
        self.expiry.sweep(shared, owned).await;
    }
}

/// The commands topic's ends, probed at the first turn of a sweep that needs them; `None`
/// (warned) when the log cannot say.
async fn ends_now<'a>(read: &Backlog, ends: &'a mut Option<Vec<u64>>) -> Option<&'a [u64]> {
    if ends.is_none() {
        match read.ends().await {
            Ok(found) => *ends = Some(found),
            Err(error) => {
                tracing::warn!(error = %error.report(), "worker: cannot read the commands topic's ends; sweeping next time");
                return None;
            }
        }
    }
    ends.as_deref()
}

/// Append a copy of the record that started `turn` of `task_id` to the commands topic;
/// `false` if the task no longer waits for it.
async fn requeue(shared: &Shared, task_id: &Arc<str>, turn: &str) -> Result<bool> {
    let view = &shared.view;
    let Some((info, _)) = view.lookup_any(task_id) else {
        return Ok(false);
    };
    // Unclaimed, or claimed under a lease that is over (its holder gone, and with it the
    // copy that would have brought a takeover: `reserve.rs`).
    let lease_over = matches!(info.state, TaskState::Submitted | TaskState::Working)
        && info
            .claim
            .as_ref()
            .is_some_and(|claim| claim.lease_until_ms <= now_ms());
    if !(info.awaits_claim() || lease_over) || info.last_message_id.as_deref() != Some(turn) {
        return Ok(false);
    }
    let records = view.task_records(&info, true).await?;
    let Some(record) = records
        .into_iter()
        .map(|(_, record)| record)
        .rev()
        .find(|r| is_turn_start(r, turn))
    else {
        return Ok(false);
    };
    let bytes = super::attempt::encode(&record)?;
    let writer = &shared.writer;
    writer
        .log
        .append(&writer.commands, task_id.as_bytes(), vec![bytes])
        .await?;
    Ok(true)
}

/// Whether `record` is the client record that started `turn`.
fn is_turn_start(record: &Record, turn: &str) -> bool {
    record.header.message_id == turn
        && matches!(
            record.body,
            RecordBody::Command { .. } | RecordBody::Continue { .. }
        )
}
