//! The worker's side of a bridge's first-turn claims ([`LocalWorker`]): the claim is made
//! and its slot kept here (`reserve.rs` keeps them until adopted).

use std::sync::{Arc, Weak};

use agentlog_wire::{Record, RecordHeader};
use bytes::Bytes;

use super::attempt::{Attempt, TaskRef, TurnKey};
use super::shared::Shared;
use crate::agent::Caller;
use crate::view::{LocalWorker, ReservedTurn};

/// The worker's side of [`LocalWorker`], registered on the view it shares with its bridge.
pub(super) struct Pickup {
    shared: Weak<Shared>,
}

impl Pickup {
    pub(super) fn new(shared: Weak<Shared>) -> Pickup {
        Pickup { shared }
    }
}

impl LocalWorker for Pickup {
    fn reserve(&self, header: &RecordHeader) -> Option<Box<dyn ReservedTurn>> {
        let shared = self.shared.upgrade()?;
        // A worker checking commands' signatures decides on each copy as it comes.
        if shared.stop.is_cancelled() || shared.trust.is_some() {
            return None;
        }
        let reservations = &shared.reservations;
        let permit = shared.permits.clone().try_acquire_owned().ok()?;
        let task = TaskRef {
            id: header.task_id.clone(),
            context_id: header.context_id.clone(),
            caller: Caller {
                principal: header.principal.clone(),
                tenant: header.tenant.clone(),
            },
        };
        let turn: Arc<str> = header.message_id.as_str().into();
        let attempt = Attempt::new(task, 1, turn, shared.writer.clone(), shared.lease);
        // The claim is written by the command's append, under the call's span: it carries the
        // command's trace context (the turn's records carry the turn's once it is loaded).
        let call = agentlog_wire::trace::TraceContext::from_content_type(&header.content_type);
        attempt.set_trace(call.as_ref(), call.clone());
        let claim = attempt.claim_record(&header.message_id, false);
        let bytes = match shared.writer.payload(&claim) {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::debug!(error = %error.report(), "worker: cannot write a first claim; the copy decides");
                return None;
            }
        };
        let key = (header.task_id.clone(), header.message_id.clone());
        if !reservations.keep(key.clone(), attempt, permit) {
            return None;
        }
        Some(Box::new(Reserved {
            shared: self.shared.clone(),
            key,
            claim,
            bytes,
        }))
    }
}

/// A claim handed to a bridge for its append.
struct Reserved {
    shared: Weak<Shared>,
    key: TurnKey,
    claim: Record,
    bytes: Bytes,
}

impl ReservedTurn for Reserved {
    fn claim(&self) -> (&Record, &Bytes) {
        (&self.claim, &self.bytes)
    }
}

impl Drop for Reserved {
    /// The bridge is done with the append. Had it failed, part of it (the events batch, claim
    /// and all) may still be on the log: a supervisor looks either way, and the sweep
    /// releases a claim nobody adopted.
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.reservations.landed(&self.key);
        }
    }
}
