//! The worker's run loop: poll the commands topic, hand each command's turn to a supervisor
//! ([`super::turn`]), commit what is finished, and sweep for lost commands.
//!
//! The commands topic only hands out work; the events topic decides (through the fold's
//! claims). The loop keeps, per partition, the offsets still in flight ([`Pending`]) and
//! commits up to the first of them, so a command whose turn this worker has not settled is
//! delivered again to whoever owns the partition next.
//!
//! A first turn claimed in its bridge's append (`reserve.rs`) gets its supervisor as soon as
//! the claim lands, from whichever partition it is: the loop is told while it polls. Its
//! copy, if it comes here, is that supervisor's offset to commit.

use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::trace::TraceContext;
use agentlog_wire::{Record, RecordBody};
use foldhash::HashMap;
use tokio::sync::mpsc;
use tokio::task::{Id, JoinError, JoinSet};

use super::attempt::TurnKey;
use super::backlog::Backlog;
use super::pending::Pending;
use super::shared::Queued;
use super::shared::{Backoff, Outcome, Shared};
use super::sweep::Sweeper;
use super::turn::supervise;
use crate::error::{Error, ErrorKind, Result};
use crate::log::{Delivery, GroupConsumer, StoredRecord};

/// How long one poll waits for records; also how often the loop looks at the stop signal,
/// commits finished work and sweeps while idle.
const POLL_TIMEOUT: Duration = Duration::from_millis(250);
/// The most records taken in one poll.
const POLL_MAX: usize = 64;
/// After a poll that brought no turn to supervise (only copies of turns settled or supervised
/// already: what a worker whose bridge hands it its turns in-process mostly gets), how long
/// the next poll waits: the copies that come meanwhile are taken in one poll, not one each.
/// A poll that brought work, or a full one (the queue is behind), is followed at once, so a
/// turn's pickup never waits for this and the queue keeps up with any rate of copies.
const GATHER: Duration = Duration::from_millis(4);
/// How often finished work is committed while busy: a commit is a write (a round trip to
/// Iggy, a file replaced on the embedded log), and what it saves is only redelivery, which
/// the claims make harmless (a settled turn's command is skipped).
const COMMIT_EVERY: Duration = Duration::from_millis(100);
/// After the grace period and firing the handlers' tokens, how long to wait before aborting.
const ABORT_AFTER: Duration = Duration::from_secs(1);

/// A supervisor in flight.
struct Running {
    partition: u32,
    /// The copy it came with (none yet for a first claim from the bridge's append).
    offset: Option<u64>,
    turn: TurnKey,
}

/// The loop's own state; only the loop touches it.
struct Loop {
    shared: Arc<Shared>,
    pending: Pending,
    running: HashMap<Id, Running>,
    /// The turns supervised here, and by whom: one supervisor per turn, whatever copies
    /// arrive.
    turns: HashMap<TurnKey, Id>,
    set: JoinSet<Outcome>,
    sweeper: Sweeper,
}

/// Run until [`Shared::stop`] fires, then drain (bounded) and leave the group; what each poll
/// read goes to `backlog`.
pub(super) async fn run(
    shared: Arc<Shared>,
    mut consumer: Box<dyn GroupConsumer>,
    mut claimed: mpsc::UnboundedReceiver<TurnKey>,
    backlog: Backlog,
) -> Result<()> {
    let mut state = Loop {
        sweeper: Sweeper::new(shared.requeue_after),
        shared: shared.clone(),
        pending: Pending::default(),
        running: HashMap::default(),
        turns: HashMap::default(),
        set: JoinSet::new(),
    };
    let mut backoff = Backoff::default();
    let mut committed_at = tokio::time::Instant::now();
    let mut gather = false;
    while !shared.stop.is_cancelled() {
        if std::mem::take(&mut gather) {
            let pause = tokio::time::sleep(GATHER);
            tokio::pin!(pause);
            loop {
                tokio::select! {
                    () = &mut pause => break,
                    () = shared.stop.cancelled() => break,
                    Some(turn) = claimed.recv() => state.supervise_claimed(turn),
                }
            }
        }
        state.reap_ready();
        if committed_at.elapsed() >= COMMIT_EVERY {
            state.commit(consumer.as_mut()).await;
            committed_at = tokio::time::Instant::now();
        }
        let owned = consumer.owned_partitions();
        backlog.owned(&owned);
        state
            .sweeper
            .sweep(&shared, &owned, &state.turns, &backlog)
            .await;
        // The poll is never dropped half-way (a backend may have taken records): first
        // claims landing meanwhile get their supervisors beside it.
        let poll = consumer.poll(POLL_MAX, POLL_TIMEOUT);
        tokio::pin!(poll);
        let polled = loop {
            tokio::select! {
                polled = &mut poll => break polled,
                Some(turn) = claimed.recv() => state.supervise_claimed(turn),
            }
        };
        match polled {
            Ok(None) => backoff.reset(),
            Ok(Some(delivery)) => {
                backoff.reset();
                if let Some(last) = delivery.records.last() {
                    backlog.advanced(delivery.partition, last.offset + 1);
                }
                let polled = delivery.records.len();
                let started = state.dispatch(delivery, &mut claimed).await;
                gather = gathers_next(started, polled);
            }
            Err(error) => {
                tracing::warn!(error = %error.report(), "worker: polling the commands topic failed; retrying");
                backoff.sleep(&shared.stop).await;
            }
        }
    }
    state.drain().await;
    state.commit(consumer.as_mut()).await;
    consumer.leave().await
}

impl Loop {
    /// Hand every record of a delivery to a supervisor, in order; whether any started one.
    /// First claims landing meanwhile (`claimed`) get theirs while it waits for a slot.
    async fn dispatch(
        &mut self,
        delivery: Delivery,
        claimed: &mut mpsc::UnboundedReceiver<TurnKey>,
    ) -> bool {
        let mut started = false;
        let partition = delivery.partition;
        for stored in &delivery.records {
            self.pending.start(partition, stored.offset);
        }
        for stored in &delivery.records {
            let Some((turn, queued)) = turn_of(stored, &self.shared) else {
                self.pending.finish(partition, stored.offset);
                continue;
            };
            if let Some(id) = self.turns.get(&turn) {
                // Another copy of a turn supervised here already: this one adds nothing,
                // unless the supervisor has none (a first claim): then it is the one to
                // commit once the turn settles.
                match self.running.get_mut(id) {
                    Some(running) if running.offset.is_none() && running.partition == partition => {
                        running.offset = Some(stored.offset);
                    }
                    _ => self.pending.finish(partition, stored.offset),
                }
                continue;
            }
            if self.settled(&turn) {
                self.pending.finish(partition, stored.offset);
                continue;
            }
            if !self.wait_for_slot(claimed).await {
                // Stopping: the rest stay in flight, so they are not committed and come again.
                return started;
            }
            self.spawn(partition, Some(stored.offset), turn, queued);
            started = true;
        }
        started
    }

    /// Whether the view shows `turn` settled: its message the task's last, and the task over
    /// or waiting on its caller. A view behind the log shows an older state, never this one
    /// too early, so nothing is dropped that a supervisor would have run. Most copies a
    /// worker beside its bridge gets are of turns that bridge handed it and that ran before
    /// their copy came.
    fn settled(&self, turn: &TurnKey) -> bool {
        self.shared
            .view
            .lookup_any(&turn.0)
            .is_some_and(|(info, _)| {
                info.last_message_id.as_deref() == Some(turn.1.as_str())
                    && (info.state.is_terminal() || info.state.is_interrupted())
            })
    }

    /// A first claim of `turn` landed in this process's bridge's append: make sure a
    /// supervisor takes it (one may have come with the copy already).
    fn supervise_claimed(&mut self, turn: TurnKey) {
        if self.turns.contains_key(&turn) {
            return;
        }
        let partition = self.shared.view.partition_of(&turn.0);
        // The claim kept for it carries the command's context already.
        let queued = Queued {
            written_ms: super::attempt::now_ms(),
            ..Queued::default()
        };
        self.spawn(partition, None, turn, queued);
    }

    /// Wait until fewer than the most turns allowed are supervised; `false` if stopping.
    /// First claims landing meanwhile get their supervisors (their handler permits were
    /// taken with the claim): copies waiting for a slot do not hold them up.
    async fn wait_for_slot(&mut self, claimed: &mut mpsc::UnboundedReceiver<TurnKey>) -> bool {
        while self.set.len() >= self.shared.max_supervised {
            tokio::select! {
                () = self.shared.stop.cancelled() => return false,
                Some(joined) = self.set.join_next_with_id() => self.reap(joined),
                Some(turn) = claimed.recv() => self.supervise_claimed(turn),
            }
        }
        true
    }

    fn spawn(&mut self, partition: u32, offset: Option<u64>, turn: TurnKey, queued: Queued) {
        let (task_id, message_id) = turn.clone();
        let handle = self
            .set
            .spawn(supervise(self.shared.clone(), task_id, message_id, queued));
        self.turns.insert(turn.clone(), handle.id());
        self.running.insert(
            handle.id(),
            Running {
                partition,
                offset,
                turn,
            },
        );
    }

    fn reap_ready(&mut self) {
        while let Some(joined) = self.set.try_join_next_with_id() {
            self.reap(joined);
        }
    }

    fn reap(&mut self, joined: std::result::Result<(Id, Outcome), JoinError>) {
        let (id, outcome) = match joined {
            Ok((id, outcome)) => (id, outcome),
            Err(error) => {
                if error.is_panic() {
                    tracing::error!(%error, "worker: a turn's supervisor panicked; its command stays uncommitted");
                }
                (error.id(), Outcome::Abandoned)
            }
        };
        let Some(running) = self.running.remove(&id) else {
            return;
        };
        self.turns.remove(&running.turn);
        if outcome == Outcome::Done
            && let Some(offset) = running.offset
        {
            self.pending.finish(running.partition, offset);
        }
    }

    async fn commit(&mut self, consumer: &mut dyn GroupConsumer) {
        for (partition, next) in self.pending.commits() {
            match consumer.commit(partition, next).await {
                Ok(()) => self.pending.committed(partition, next),
                // Kept pending: the next round commits again.
                Err(error) => {
                    tracing::warn!(partition, next, error = %error.report(), "worker: commit failed; retrying later");
                }
            }
        }
    }

    /// Waiting supervisors stop at once; running handlers get the grace period, then their
    /// tokens fire (their turns are released for a takeover), then they are aborted.
    async fn drain(&mut self) {
        let grace = tokio::time::sleep(self.shared.shutdown_timeout);
        tokio::pin!(grace);
        loop {
            tokio::select! {
                () = &mut grace => break,
                joined = self.set.join_next_with_id() => match joined {
                    Some(joined) => self.reap(joined),
                    None => return,
                },
            }
        }
        tracing::warn!(
            running = self.set.len(),
            "worker: handlers still running after the shutdown grace period; canceling them"
        );
        self.shared.force.cancel();
        let abort = tokio::time::sleep(ABORT_AFTER);
        tokio::pin!(abort);
        loop {
            tokio::select! {
                () = &mut abort => break,
                joined = self.set.join_next_with_id() => match joined {
                    Some(joined) => self.reap(joined),
                    None => return,
                },
            }
        }
        self.set.abort_all();
        while let Some(joined) = self.set.join_next_with_id().await {
            self.reap(joined);
        }
    }
}

/// The turn a commands record names and what the record says of it, if it is a command or a
/// continue that decodes (and that the trust admits, if one is configured).
fn turn_of(stored: &StoredRecord, shared: &Shared) -> Option<(TurnKey, Queued)> {
    let record = match Record::decode(&stored.payload) {
        Ok(record) => record,
        Err(error) => {
            tracing::warn!(
                partition = stored.partition, offset = stored.offset, %error,
                "worker: skipping a command that does not decode"
            );
            return None;
        }
    };
    if let Some(trust) = &shared.trust
        && !trust.admit_encoded(
            &stored.payload,
            &record,
            &shared.writer.commands,
            stored.partition,
            stored.offset,
        )
    {
        return None;
    }
    let retention_ms = match record.body {
        RecordBody::Command { retention_ms, .. } => retention_ms,
        RecordBody::Continue { .. } => 0,
        _ => return None,
    };
    let queued = Queued {
        written_ms: record.header.timestamp_ms,
        retention_ms,
        trace: TraceContext::from_content_type(&record.header.content_type),
    };
    Some(((record.header.task_id, record.header.message_id), queued))
}

/// Whether the poll after one that brought `polled` records waits [`GATHER`] first: only
/// when it started no supervisor and was not full (a full one says more wait).
fn gathers_next(started: bool, polled: usize) -> bool {
    !started && polled < POLL_MAX
}

/// The error for a run loop that did not return normally.
pub(super) fn join_error(error: JoinError) -> Error {
    Error::new(ErrorKind::Internal, "the worker's run loop panicked").with_source(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_poll_that_started_nothing_and_was_not_full_gathers() {
        assert!(gathers_next(false, 1));
        assert!(gathers_next(false, POLL_MAX - 1));
        // Behind on the queue: a loop pausing after every full poll would take at most
        // POLL_MAX copies a GATHER, fewer than a busy bridge writes.
        assert!(!gathers_next(false, POLL_MAX));
        // Work started: the next poll at once, as ever.
        assert!(!gathers_next(true, 1));
    }
}
