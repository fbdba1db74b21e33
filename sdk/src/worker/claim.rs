//! Where a turn stands and how a worker claims it: the fold's claims (rules 10 to 13) as a
//! supervisor reads them ([`stance`]), and the claim's append ([`claim`]).

use std::sync::Arc;

use agentlog_wire::trace::TraceContext;

use super::attempt::{Attempt, TaskRef};
use super::shared::Shared;
use crate::agent::Caller;
use crate::error::Result;
use crate::view::TaskInfo;

/// What a command record's turn needs now, as the task log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stance {
    /// The task is over or the turn is past: nothing to do.
    Over,
    /// Wait for the task to change, or until this time (a lease's end, Unix ms).
    Wait(Option<u64>),
    /// Claim the turn with this attempt number.
    Claim(u32),
}

/// Where the turn `turn` stands for a worker, as `info` shows the task at `now` (Unix ms).
pub(super) fn stance(info: &TaskInfo, turn: &str, now: u64) -> Stance {
    if info.state.is_terminal() {
        return Stance::Over;
    }
    if info.last_message_id.as_deref() != Some(turn) {
        return if info.pending.iter().any(|p| **p == *turn) {
            Stance::Wait(None)
        } else {
            Stance::Over
        };
    }
    if info.state.is_interrupted() {
        return Stance::Over;
    }
    let next = info.attempts.saturating_add(1);
    match &info.claim {
        None => Stance::Claim(next),
        Some(claim) if claim.lease_until_ms <= now => Stance::Claim(next),
        Some(claim) => Stance::Wait(Some(claim.lease_until_ms)),
    }
}

/// Claim `info`'s turn under attempt `number` (the claim moves a submitted task to `working`),
/// and tell whether the claim applied. `trace` is the context the turn's command or continue
/// carries (its copy on the workers' queue): the claim carries it, as a first claim written
/// in the command's own append does, so what the claim starts (its `working` notified) is in
/// the caller's trace; the turn's records carry the turn's span once it is loaded.
pub(super) async fn claim(
    shared: &Shared,
    info: &TaskInfo,
    caller: Caller,
    number: u32,
    trace: Option<&TraceContext>,
) -> Result<Option<Arc<Attempt>>> {
    let Some(turn) = info.last_message_id.clone() else {
        return Ok(None);
    };
    let task = TaskRef {
        id: info.id.to_string(),
        context_id: info.context_id.to_string(),
        caller,
    };
    let attempt = Attempt::new(
        task,
        number,
        turn.clone(),
        shared.writer.clone(),
        shared.lease,
    );
    attempt.set_trace(trace, trace.cloned());
    // On a submitted task the claim is also its WORKING status (fold rule 10).
    let records = [attempt.claim_record(&turn, false)];
    let view = &shared.view;
    let appended = shared.writer.append_for(&records, view).await?;
    let claim = match view.apply_own(
        info.partition,
        appended.first_offset,
        appended.place,
        &records,
    ) {
        Some(claim) => claim,
        None => {
            let end = appended.first_offset + records.len() as u64;
            let _pinned = view
                .pin_synced_to(info.partition, end, shared.sync_timeout)
                .await?;
            view.claim_of(&info.id)
        }
    };
    let held = claim
        .filter(|c| c.attempt == number && *c.holder == shared.writer.source)
        .map(|c| c.turn_attempt);
    Ok(held.map(|turn_attempt| Arc::new(attempt.with_turn_attempt(turn_attempt))))
}
