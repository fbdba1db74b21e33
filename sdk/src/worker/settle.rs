//! How a turn ends: what a run of the handler comes to ([`Ran`]), and the records that
//! settle the turn (complete or fail it), release it for a takeover, and confirm that the view
//! shows it settled before its command may be committed.

use super::attempt::Attempt;
use super::context::TaskContext;
use super::shared::{Backoff, Shared};
use agentlog_wire::TaskState;

/// How a run of the handler ended.
///
/// Only a settled turn lets its command's offset be committed: the group's committed offset is
/// one per partition, so a member that committed past a turn another attempt still runs would
/// lose that turn's command if that attempt's worker then stopped. A supervisor whose attempt
/// lost the turn therefore keeps watching it (and takes it over again if its holder goes).
pub(super) enum Ran {
    /// The turn is settled in the log: the task ended, or the turn did (asked for input).
    Done,
    /// The worker is shutting down; the turn was released for a takeover.
    Abandoned,
    /// This attempt no longer holds the turn, which is not settled: another attempt took it
    /// over, or renewals failed for longer than the lease. Decide again: wait on the holder's
    /// lease, or claim anew.
    Lost,
}

/// A run that ended its turn (with the handler's or the worker's own record): `Done` once the
/// view shows the turn settled, `Lost` if it is not (the record came after another attempt's
/// takeover and was fenced). Only a settled turn may be committed (see [`Ran`]).
pub(super) async fn confirm(shared: &Shared, ctx: &TaskContext, turn: &str) -> Ran {
    let view = &shared.view;
    let task_id = ctx.task_id();
    // Pinned until the look below: a task gone from the view would count as over.
    let _pinned = match ctx.last_written() {
        Some(offset) => {
            let partition = view.partition_of(task_id);
            match view
                .pin_synced_to(partition, offset + 1, shared.sync_timeout)
                .await
            {
                Ok(pin) => Some(pin),
                Err(error) => {
                    tracing::warn!(task_id, error = %error.report(), "worker: cannot see the turn's end; looking again");
                    return Ran::Lost;
                }
            }
        }
        None => None,
    };
    if view.turn_is_over(task_id, turn) {
        Ran::Done
    } else {
        Ran::Lost
    }
}

/// Release the claim so that another worker takes the turn over at once (shutdown).
pub(super) async fn release(attempt: &Attempt) -> Ran {
    if let Err(error) = attempt.release().await {
        tracing::warn!(task_id = attempt.task.id, error = %error.report(), "worker: cannot release the claim; the turn waits for its lease to end");
    }
    Ran::Abandoned
}

/// Fail a turn no handler can run (its message is missing, or not the user's), retrying
/// while the log is unavailable.
pub(super) async fn fail_unrunnable(shared: &Shared, attempt: &Attempt, why: &str) -> Ran {
    let record = match attempt.status_record(TaskState::Failed, Some(why)) {
        Ok(record) => record,
        Err(error) => {
            tracing::error!(task_id = attempt.task.id, error = %error.report(), "worker: cannot fail the task");
            return Ran::Done;
        }
    };
    let mut backoff = Backoff::default();
    loop {
        match attempt.writer.append(std::slice::from_ref(&record)).await {
            Ok(_) => return Ran::Done,
            Err(error) if error.is_retryable() => {
                tracing::warn!(task_id = attempt.task.id, error = %error.report(), "worker: cannot fail the task; retrying");
                if !backoff.sleep(&shared.force).await {
                    return Ran::Abandoned;
                }
            }
            Err(error) => {
                tracing::error!(task_id = attempt.task.id, error = %error.report(), "worker: cannot fail the task; giving up");
                return Ran::Done;
            }
        }
    }
}

/// Complete (or fail with `failure`) a turn the handler left open, retrying while the log is
/// unavailable.
pub(super) async fn settle(shared: &Shared, ctx: &TaskContext, failure: Option<&str>) -> Ran {
    let mut backoff = Backoff::default();
    loop {
        let written = match failure {
            None => ctx.complete(None).await,
            Some(text) => ctx.fail(text).await,
        };
        match written {
            Ok(()) => return Ran::Done,
            Err(error) if error.is_retryable() => {
                tracing::warn!(task_id = ctx.task_id(), error = %error.report(), "worker: cannot settle the task; retrying");
                if !backoff.sleep(&shared.force).await {
                    return Ran::Abandoned;
                }
            }
            Err(error) => {
                tracing::error!(task_id = ctx.task_id(), error = %error.report(), "worker: cannot settle the task; giving up");
                return Ran::Done;
            }
        }
    }
}
