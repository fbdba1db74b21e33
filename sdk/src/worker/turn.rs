//! One command record's supervision: wait for its turn, claim it, run the handler under a
//! renewed lease, and settle the turn (the records that end it are written by `settle`).
//!
//! A command or continue record on the workers' queue names a turn: (task, client message).
//! The events topic decides what happens to it (the fold's claims, rules 10 to 13):
//!
//! - the task is over, or the turn is past (answered, or asked for input): nothing to do;
//! - the turn is queued behind the current one (a follow-up): wait until it is the turn;
//! - the turn is unclaimed, or its claim's lease ran out: claim it, with the task's next
//!   attempt number, and run it if the claim applied (another worker may have won);
//! - another attempt holds it under a live lease: wait until the lease ends or the task moves.
//!
//! While the handler runs, the supervisor renews the lease every third of it, and watches the
//! task: a terminal record (a cancel) or another worker's takeover fires the handler's token.
//! If the handler returns with the turn still open while follow-ups wait, the supervisor
//! takes the first one and runs the handler again for it instead of completing the task.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::attempt::{Attempt, millis, now_ms};
use super::claim::{Stance, claim, stance};
use super::context::{Parts, Progress, TaskContext};
use super::settle::{Ran, confirm, fail_unrunnable, release, settle};
use super::shared::{Backoff, Outcome, Queued, Shared};
use crate::telemetry::Span;
use crate::view::{TaskEvent, TaskInfo};
use agentlog_wire::RecordBody;
use agentlog_wire::a2a::Role;
use agentlog_wire::fold::{Change, ClaimKind};
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::broadcast::error::RecvError;

/// Supervise the turn `(task_id, turn)` a record on the queue names, until it needs nothing
/// more from this worker.
pub(super) async fn supervise(
    shared: Arc<Shared>,
    task_id: String,
    turn: String,
    queued: Queued,
) -> Outcome {
    let Queued {
        written_ms,
        retention_ms,
        trace,
    } = queued;
    let view = &shared.view;
    let partition = view.partition_of(&task_id);
    let mut backoff = Backoff::default();
    // A handler permit taken after waiting for one: the task is looked at again before it is
    // claimed (it may have moved on meanwhile), and the permit kept for that claim.
    let mut waited: Option<OwnedSemaphorePermit> = None;
    // The first look may skip the sync when the view already shows the turn ready to claim
    // (the bridge in this process applied its command): a claim made on a view that missed
    // another worker's loses to it by log order, and the look after the claim syncs. Any
    // other first look (no such task, a claim to wait on) syncs before it decides.
    let mut first = true;
    // A bridge sends a command and its copy at once, so a fresh copy may arrive before its
    // record is in the log: while it is fresh, a turn the log does not show yet is looked at
    // again (for as long as the sweeper would wait before queueing it anew), not dropped.
    // Past its task's retention a copy may name a task that ran and expired meanwhile (a
    // queue further behind than a short retention): that one is dropped at once, not looked
    // at again while slots fill up; were it only late, the sweeper queues it anew once its
    // record lands.
    let fresh_for = match retention_ms {
        0 => millis(shared.requeue_after),
        retention => retention.min(millis(shared.requeue_after)),
    };
    let fresh = || now_ms().saturating_sub(written_ms) < fresh_for;
    let source = shared.writer.source.as_str();
    let reservations = &shared.reservations;
    // Ready: the view shows the turn free to claim, or holding the first claim this
    // process's bridge wrote for this worker (`reserve.rs`), which is then taken as is.
    let ready_now = || {
        view.lookup_any(&task_id).is_some_and(|(info, _)| {
            if reservations.waits(&task_id, &turn) {
                reservations.shows(&task_id, &turn, &info, source)
            } else {
                matches!(stance(&info, &turn, now_ms()), Stance::Claim(_))
            }
        })
    };
    loop {
        let mut ready = first && ready_now();
        if first && !ready {
            // This process's bridge may be writing it: wait for its view, not the log's end.
            view.own_command_landed(&task_id, shared.sync_timeout).await;
            // Another process's bridge wrote it: the view's follower brings it, as soon as a
            // sync would and without asking the log for its end.
            let left = fresh_for.saturating_sub(now_ms().saturating_sub(written_ms));
            if left > 0 && view.lookup_any(&task_id).is_none() {
                let wait = Duration::from_millis(left).min(shared.sync_timeout);
                view.wait_shown(&task_id, wait).await;
            }
            ready = ready_now();
        }
        first = false;
        // Pinned from before the sync to after the look below: a partition retired meanwhile
        // (a view shared with a bridge that moves it) keeps the task for that look, however
        // long the sync takes, rather than showing no task and dropping the command.
        let pinned = if ready {
            // Decided below from the same view.
            None
        } else {
            match view.pin_synced(partition, shared.sync_timeout).await {
                Ok(pin) => Some(pin),
                Err(error) => {
                    tracing::warn!(task_id, error = %error.report(), "worker: the task view is not catching up; retrying");
                    if !backoff.sleep(&shared.stop).await {
                        return Outcome::Abandoned;
                    }
                    continue;
                }
            }
        };
        let watched = view.watch(&task_id);
        let applied = watched.is_some() && view.has_applied(&task_id, &turn);
        drop(pinned);
        let Some((info, caller, mut events)) = watched else {
            if fresh() {
                if !backoff.sleep(&shared.stop).await {
                    return Outcome::Abandoned;
                }
                continue;
            }
            tracing::debug!(
                task_id,
                "worker: no such task in the log; skipping its command"
            );
            return Outcome::Done;
        };
        if let Some((attempt, permit)) = reservations.adopt(&task_id, &turn, &info, source) {
            match run(&shared, attempt, permit, events, info).await {
                Ran::Done => return Outcome::Done,
                Ran::Abandoned => return Outcome::Abandoned,
                Ran::Lost => {
                    backoff.reset();
                    continue;
                }
            }
        }
        match stance(&info, &turn, now_ms()) {
            Stance::Over if !info.state.is_terminal() && !applied && fresh() => {
                if !backoff.sleep(&shared.stop).await {
                    return Outcome::Abandoned;
                }
            }
            Stance::Over => return Outcome::Done,
            Stance::Wait(until) => {
                // No handler slot is held while waiting on another attempt's lease.
                waited = None;
                // The claim may be this process's bridge's, kept for this worker, its append
                // not said landed when this looked (the copy came first): it is adopted once
                // it lands, not waited out until the sweep releases it.
                let landing = reservations.landing();
                if reservations.shows(&task_id, &turn, &info, source) {
                    continue;
                }
                let own = info.claim.as_ref().is_some_and(|c| *c.holder == *source);
                let lands_later = own && reservations.lands_later(&task_id, &turn);
                let landed = async {
                    if lands_later {
                        landing.await;
                    } else {
                        std::future::pending::<()>().await;
                    }
                };
                let wake = async {
                    match until {
                        Some(until) => {
                            let wait = until.saturating_sub(now_ms());
                            tokio::time::sleep(Duration::from_millis(wait)).await;
                        }
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = shared.stop.cancelled() => return Outcome::Abandoned,
                    () = wake => {}
                    () = landed => {}
                    _ = events.recv() => {}
                }
            }
            Stance::Claim(number) => {
                let permit = match waited.take() {
                    Some(permit) => permit,
                    None => match shared.permits.clone().try_acquire_owned() {
                        Ok(permit) => permit,
                        Err(_) => {
                            waited = Some(tokio::select! {
                                () = shared.stop.cancelled() => return Outcome::Abandoned,
                                permit = shared.permits.clone().acquire_owned() => match permit {
                                    Ok(permit) => permit,
                                    Err(_) => return Outcome::Abandoned,
                                },
                            });
                            continue;
                        }
                    },
                };
                match claim(&shared, &info, caller, number, trace.as_ref()).await {
                    // The events subscribed to before the claim go to the run: nothing between
                    // the two is missed, and the task's channel is not made twice.
                    Ok(Some(attempt)) => match run(&shared, attempt, permit, events, info).await {
                        Ran::Done => return Outcome::Done,
                        Ran::Abandoned => return Outcome::Abandoned,
                        Ran::Lost => backoff.reset(),
                    },
                    // Another worker's claim came first: look again.
                    Ok(None) => {}
                    Err(error) => {
                        tracing::warn!(task_id, error = %error.report(), "worker: cannot claim the turn; retrying");
                        if !backoff.sleep(&shared.stop).await {
                            return Outcome::Abandoned;
                        }
                    }
                }
            }
        }
    }
}

/// Run the handler for `attempt`'s turn, and again for each follow-up it moves on to;
/// `events` are the task's, subscribed to before the claim.
async fn run(
    shared: &Shared,
    attempt: Arc<Attempt>,
    _permit: OwnedSemaphorePermit,
    mut events: Events,
    claimed: TaskInfo,
) -> Ran {
    // The first turn's task is the one just claimed; a follow-up's is looked up anew.
    let mut known = Some(claimed);
    loop {
        match run_turn(shared, &attempt, &mut events, known.take()).await {
            Turn::Over(ran) => return ran,
            Turn::NextFollowUp(next) => {
                if !advance(shared, &attempt, next).await {
                    // The follow-up did not become this attempt's turn: look again.
                    return Ran::Lost;
                }
            }
        }
    }
}

/// A task's events, as [`TaskView::watch`](crate::view::TaskView::watch) gives them.
type Events = tokio::sync::broadcast::Receiver<Arc<TaskEvent>>;

enum Turn {
    Over(Ran),
    /// The handler returned with the turn open and this follow-up waits: run it next.
    NextFollowUp(Arc<str>),
}

/// One run of the handler for the attempt's current turn: `claimed` is the task as seen when
/// the attempt claimed this turn (its history is the handler's), `None` to look it up. A
/// `turn` span covers it once the turn's origin is read (its parent the call's), ending with
/// how it went.
async fn run_turn(
    shared: &Shared,
    attempt: &Arc<Attempt>,
    events: &mut Events,
    claimed: Option<TaskInfo>,
) -> Turn {
    let mut span = Span::none();
    let turn = run_turn_in(shared, attempt, events, claimed, &mut span).await;
    if span.is_some() {
        let outcome = match &turn {
            Turn::Over(Ran::Done) => "done",
            Turn::Over(Ran::Lost) => "lost",
            Turn::Over(Ran::Abandoned) => "abandoned",
            Turn::NextFollowUp(_) => "follow-up",
        };
        span.set("agentlog.outcome", outcome);
    }
    turn
}

async fn run_turn_in(
    shared: &Shared,
    attempt: &Arc<Attempt>,
    events: &mut Events,
    claimed: Option<TaskInfo>,
    span: &mut Span,
) -> Turn {
    let view = &shared.view;
    let task_id = attempt.task.id.as_str();
    let turn = attempt.turn();
    let info = match claimed {
        Some(info) => info,
        None => match view.lookup_any(task_id) {
            Some((info, _)) if holds(&info, attempt, &shared.writer.source) => info,
            _ => return Turn::Over(Ran::Lost),
        },
    };
    // A follow-up that was queued already, or arrives while the handler runs.
    let mut followed_up = !info.pending.is_empty();
    let token = shared.force.child_token();
    let mut backoff = Backoff::default();
    let (task, origin) = loop {
        match view.load_turn(&info, Some(&turn)).await {
            Ok(loaded) => break loaded,
            Err(error) => {
                tracing::warn!(task_id, error = %error.report(), "worker: cannot load the task; retrying");
                if !backoff.sleep(&shared.force).await {
                    return Turn::Over(release(attempt).await);
                }
            }
        }
    };
    let restart = if attempt.turn_attempt > 1 {
        earlier_artifacts(shared, &info, attempt).await
    } else {
        HashSet::new()
    };
    let found = task.history.iter().rposition(|m| *m.message_id == *turn);
    let role = found.map(|i| task.history[i].role);
    // What this attempt writes for the turn carries the turn's context, as a span of its own.
    *span = attempt.turn_span(origin.trace.as_ref());
    let turn_context = span.trace_context(origin.trace.as_ref());
    let own = attempt.set_trace(origin.trace.as_ref(), turn_context);
    let ctx = TaskContext::new(Parts {
        attempt: attempt.clone(),
        message_index: found.unwrap_or(0),
        history: task.history,
        cancellation: token.clone(),
        restart,
        view: view.clone(),
        sync_timeout: shared.sync_timeout,
        hops: origin.hops,
        trace: origin.trace,
        span: own,
    });
    let Some(ctx) = ctx.filter(|_| role == Some(Role::User)) else {
        // No handler can answer a turn whose message is missing or not the user's.
        let why = match role {
            None => format!("the task's history lacks message {turn}, which this turn answers"),
            Some(_) => format!("message {turn} is not a user message (role ROLE_USER)"),
        };
        tracing::warn!(task_id, why, "worker: failing a task it cannot run");
        return Turn::Over(fail_unrunnable(shared, attempt, &why).await);
    };

    let handler = shared.handler.clone();
    let run_ctx = ctx.clone();
    let scope = span.clone();
    // The calls the handler makes to bridges in this process carry the turn's context on.
    let carried = ctx.span_context().cloned();
    let mut handle = tokio::spawn(async move {
        let run = run_ctx.sends_on_yield(handler.handle(run_ctx.clone()));
        scope
            .in_scope(crate::telemetry::carrying(carried, run))
            .await
    });
    // If this supervisor is aborted (shutdown, or a crash-like abort), the handler goes too.
    let _abort = AbortOnDrop(handle.abort_handle());
    let renew_every = (attempt.lease / 3).max(Duration::from_millis(10));
    let mut renewal =
        tokio::time::interval_at(tokio::time::Instant::now() + renew_every, renew_every);
    let mut lease_until = now_ms().saturating_add(millis(attempt.lease));
    let mut lost = false;
    let mut watching = true;
    let result = loop {
        tokio::select! {
            result = &mut handle => break result,
            event = events.recv(), if watching => match event {
                Ok(event) => {
                    followed_up |= matches!(event.change, Change::FollowedUp(_));
                    if ends_attempt(&event, attempt, &shared.writer.source) {
                        token.cancel();
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    followed_up = true;
                    if view.lookup_any(task_id).is_none_or(|(now, _)| {
                        now.state.is_terminal() || !holds(&now, attempt, &shared.writer.source)
                    }) {
                        token.cancel();
                    }
                }
                Err(RecvError::Closed) => watching = false,
            },
            _ = renewal.tick(), if !lost && !token.is_cancelled() => match attempt.renew().await {
                Ok(until) => lease_until = until,
                Err(error) if now_ms() < lease_until => {
                    tracing::warn!(task_id, error = %error.report(), "worker: cannot renew the claim; retrying");
                }
                Err(error) => {
                    tracing::warn!(task_id, error = %error.report(), "worker: the claim's lease ran out before a renewal; stopping the handler");
                    lost = true;
                    token.cancel();
                }
            },
        }
    };

    if shared.force.is_cancelled() {
        return Turn::Over(release(attempt).await);
    }
    if lost || (token.is_cancelled() && !ended(view, task_id)) {
        // Another attempt took the turn (or the lease ran out): not settled, look again.
        return Turn::Over(Ran::Lost);
    }
    if token.is_cancelled() {
        // The log says the task ended: nothing to write.
        return Turn::Over(Ran::Done);
    }
    // What the handler reported is on the log before the turn is judged; a report that
    // failed unseen fails the turn as the handler's own error would.
    let flushed = span.in_scope(ctx.flush()).await;
    let failure = match result {
        Ok(Ok(())) => flushed.err().map(|error| error.to_string()),
        Ok(Err(error)) => Some(error.to_string()),
        Err(error) if error.is_panic() => {
            let payload = error.into_panic();
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Some(format!("handler panicked: {text}"))
        }
        Err(_) => return Turn::Over(release(attempt).await),
    };
    if ctx.progress() != Progress::Open {
        if let Some(failure) = failure {
            tracing::warn!(
                task_id,
                failure,
                "worker: handler failed after ending its turn; the reported outcome stands"
            );
        }
        return Turn::Over(span.in_scope(confirm(shared, &ctx, &turn)).await);
    }
    if failure.is_none()
        && followed_up
        && let Some(next) = view.first_pending(task_id)
    {
        return Turn::NextFollowUp(next);
    }
    if failure.is_some() {
        span.fail("handler_failed");
    }
    span.in_scope(async {
        Turn::Over(match settle(shared, &ctx, failure.as_deref()).await {
            Ran::Done => confirm(shared, &ctx, &turn).await,
            other => other,
        })
    })
    .await
}

/// Whether the task is over (or gone from the view).
fn ended(view: &crate::view::TaskView, task_id: &str) -> bool {
    view.lookup_any(task_id)
        .is_none_or(|(info, _)| info.state.is_terminal())
}

/// Whether `attempt` holds `info`'s current turn.
fn holds(info: &TaskInfo, attempt: &Attempt, source: &str) -> bool {
    info.claim
        .as_ref()
        .is_some_and(|c| c.attempt == attempt.number && *c.holder == *source)
}

/// Whether an event ends the handler's run: the task ended, or another attempt took over.
fn ends_attempt(event: &TaskEvent, attempt: &Attempt, source: &str) -> bool {
    if event.state.is_terminal() {
        return true;
    }
    match &event.change {
        Change::Claimed(claimed) => {
            claimed.kind == ClaimKind::Takeover
                && (claimed.claim.attempt != attempt.number || *claimed.claim.holder != *source)
        }
        _ => false,
    }
}

/// The artifact ids earlier attempts of this turn wrote to, which this attempt starts over.
async fn earlier_artifacts(shared: &Shared, info: &TaskInfo, attempt: &Attempt) -> HashSet<String> {
    let first_of_turn = attempt.number.saturating_sub(attempt.turn_attempt - 1);
    let records = match shared.view.task_records(info, false).await {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(task_id = %info.id, error = %error.report(), "worker: cannot read what earlier attempts wrote");
            return HashSet::new();
        }
    };
    records
        .iter()
        .filter(|(_, r)| (first_of_turn..attempt.number).contains(&r.header.attempt))
        .filter_map(|(_, r)| match &r.body {
            RecordBody::ArtifactUpdate { artifact, .. } => {
                serde_json::from_str::<agentlog_wire::a2a::Artifact>(artifact)
                    .ok()
                    .map(|a| a.artifact_id)
            }
            _ => None,
        })
        .collect()
}

/// Take the follow-up `next` (the handler returned with the turn open); `false` if the claim
/// did not move to it (the task moved on first).
async fn advance(shared: &Shared, attempt: &Attempt, next: Arc<str>) -> bool {
    let view = &shared.view;
    let appended = match attempt
        .writer
        .append(&[attempt.claim_record(&next, false)])
        .await
    {
        Ok(appended) => appended,
        Err(error) => {
            tracing::warn!(task_id = attempt.task.id, error = %error.report(), "worker: cannot take the next follow-up; leaving it to a takeover");
            return false;
        }
    };
    let partition = view.partition_of(&attempt.task.id);
    let Ok(_pinned) = view
        .pin_synced_to(partition, appended.first_offset + 1, shared.sync_timeout)
        .await
    else {
        return false;
    };
    let moved = view.lookup_any(&attempt.task.id).is_some_and(|(info, _)| {
        info.last_message_id.as_deref() == Some(&*next)
            && holds(&info, attempt, &shared.writer.source)
    });
    if moved {
        attempt.set_turn(next);
    }
    moved
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentlog_wire::TaskState;
    use agentlog_wire::fold::Claim;

    fn info(state: TaskState, claim: Option<(u32, &str, u64)>) -> TaskInfo {
        TaskInfo {
            id: "t".into(),
            context_id: "c".into(),
            partition: 0,
            state,
            status_timestamp_ms: 0,
            status_has_message: false,
            last_message_id: Some("m1".into()),
            claim: claim.map(|(attempt, holder, lease_until_ms)| Claim {
                attempt,
                turn_attempt: 1,
                holder: holder.into(),
                lease_until_ms,
            }),
            attempts: claim.map_or(0, |c| c.0),
            pending: vec!["m2".into()],
            records: Arc::from(Vec::new()),
            answered: false,
            shown: false,
        }
    }

    #[test]
    fn the_stance_follows_the_task_and_the_lease() {
        use TaskState::*;
        assert_eq!(stance(&info(Submitted, None), "m1", 100), Stance::Claim(1));
        assert_eq!(
            stance(&info(Working, Some((3, "w", 200))), "m1", 100),
            Stance::Wait(Some(200))
        );
        assert_eq!(
            stance(&info(Working, Some((3, "w", 200))), "m1", 200),
            Stance::Claim(4)
        );
        assert_eq!(
            stance(&info(Working, Some((3, "w", 200))), "m2", 100),
            Stance::Wait(None)
        );
        assert_eq!(
            stance(&info(Working, Some((3, "w", 200))), "m0", 100),
            Stance::Over
        );
        assert_eq!(stance(&info(InputRequired, None), "m1", 100), Stance::Over);
        assert_eq!(stance(&info(Completed, None), "m1", 100), Stance::Over);
    }
}
