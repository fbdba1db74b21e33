//! First turns this worker claims in its bridge's append: a bridge sharing the worker's view
//! asks for a claim as it writes a new task's command (`pickup.rs`), appends it right after
//! the command in the same batch, and a supervisor adopts it as soon as it lands (the run
//! loop is told), so the turn runs without a claim round trip of its own, and the command
//! goes without a copy on the workers' queue.
//!
//! A claim is offered only while a handler slot is free (it is kept for the turn); it is the
//! task's first (attempt 1), written as this worker writes every record. Should this process
//! die, the sweep of the worker owning the partition finds the claim's lease over and puts the
//! turn back on the queue (a copy that comes here anyway, say of a second send of the same
//! message, is the adopting supervisor's to commit). A claim whose append failed part-way is
//! kept as landed (it may be on the log); one nobody adopted within `requeue_after` is
//! released by the sweep.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use foldhash::HashMap;
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use super::attempt::{Attempt, TurnKey};
use crate::view::TaskInfo;

/// The claims made for a bridge's appends, until adopted or given up.
pub(super) struct Reservations {
    held: Mutex<HashMap<TurnKey, Held>>,
    /// Tells the run loop of each claim that landed, so that a supervisor takes it.
    landed: mpsc::UnboundedSender<TurnKey>,
    /// Wakes the supervisors waiting for a claim to land (`landing`).
    landing: tokio::sync::Notify,
}

struct Held {
    /// The claim's attempt; its first record (the claim) is written.
    attempt: Attempt,
    permit: OwnedSemaphorePermit,
    /// The bridge's append carrying the claim succeeded.
    landed: bool,
    since: Instant,
}

impl Reservations {
    /// Reservations telling the run loop of each landed claim through `landed`.
    pub(super) fn new(landed: mpsc::UnboundedSender<TurnKey>) -> Reservations {
        Reservations {
            held: Mutex::default(),
            landed,
            landing: tokio::sync::Notify::new(),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<TurnKey, Held>> {
        // Plain data: an entry half-made by a panic is only a missed shortcut.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keep `attempt` (its claim written for a bridge's append) and `permit` for the turn
    /// `key`; `false` if one is kept for it already (two calls of one message: log order
    /// picks the task, so neither gets a shortcut beyond the first).
    pub(super) fn keep(
        &self,
        key: TurnKey,
        attempt: Attempt,
        permit: OwnedSemaphorePermit,
    ) -> bool {
        let mut held = self.held();
        if held.contains_key(&key) {
            return false;
        }
        let entry = Held {
            attempt,
            permit,
            landed: false,
            since: Instant::now(),
        };
        held.insert(key, entry);
        true
    }

    /// The claim kept for `key` is on the log (or may be: its append failed part-way): a
    /// supervisor is to take it.
    pub(super) fn landed(&self, key: &TurnKey) {
        if let Some(entry) = self.held().get_mut(key) {
            entry.landed = true;
            // The loop gone means the worker stops: the claim is released by its lease.
            let _ = self.landed.send(key.clone());
        }
        self.landing.notify_waiters();
    }

    /// Resolves at the next claim that lands (made before looking, it misses none after).
    pub(super) fn landing(&self) -> tokio::sync::futures::Notified<'_> {
        self.landing.notified()
    }

    /// Whether a claim is kept for the turn `(task_id, turn)` whose append has not landed yet.
    pub(super) fn lands_later(&self, task_id: &str, turn: &str) -> bool {
        let held = self.held();
        !held.is_empty()
            && held
                .get(&(task_id.to_owned(), turn.to_owned()))
                .is_some_and(|h| !h.landed)
    }

    /// Whether a landed claim of this process waits for the turn `(task_id, turn)`.
    pub(super) fn waits(&self, task_id: &str, turn: &str) -> bool {
        let held = self.held();
        !held.is_empty()
            && held
                .get(&(task_id.to_owned(), turn.to_owned()))
                .is_some_and(|h| h.landed)
    }

    /// Whether `info` shows the landed claim kept for the turn `(task_id, turn)` holding it.
    pub(super) fn shows(&self, task_id: &str, turn: &str, info: &TaskInfo, source: &str) -> bool {
        let held = self.held();
        !held.is_empty()
            && held
                .get(&(task_id.to_owned(), turn.to_owned()))
                .is_some_and(|entry| holds(entry, turn, info, source))
    }

    /// The attempt and slot kept for the turn `(task_id, turn)`, if `info` shows its claim
    /// holding the turn; the entry is taken then. Otherwise it stays (the view may not show
    /// the claim yet) until adopted or given up.
    pub(super) fn adopt(
        &self,
        task_id: &str,
        turn: &str,
        info: &TaskInfo,
        source: &str,
    ) -> Option<(Arc<Attempt>, OwnedSemaphorePermit)> {
        let mut held = self.held();
        if held.is_empty() {
            return None;
        }
        let key = (task_id.to_owned(), turn.to_owned());
        if !holds(held.get(&key)?, turn, info, source) {
            return None;
        }
        let turn_attempt = info.claim.as_ref()?.turn_attempt;
        let Held {
            attempt, permit, ..
        } = held.remove(&key)?;
        Some((Arc::new(attempt.with_turn_attempt(turn_attempt)), permit))
    }

    /// Take the landed claims kept longer than `age` (nobody adopted them: the copy went to
    /// another worker, or never reached the log), to be released.
    pub(super) fn take_stale(&self, age: std::time::Duration) -> Vec<Attempt> {
        let mut held = self.held();
        if held.is_empty() {
            return Vec::new();
        }
        let stale: Vec<TurnKey> = held
            .iter()
            .filter(|(_, h)| h.landed && h.since.elapsed() >= age)
            .map(|(key, _)| key.clone())
            .collect();
        stale
            .into_iter()
            .filter_map(|key| held.remove(&key))
            .map(|h| h.attempt)
            .collect()
    }
}

/// Whether `info` shows `entry`'s landed claim holding `turn`.
fn holds(entry: &Held, turn: &str, info: &TaskInfo, source: &str) -> bool {
    entry.landed
        && !info.state.is_terminal()
        && info.last_message_id.as_deref() == Some(turn)
        && info
            .claim
            .as_ref()
            .is_some_and(|claim| claim.attempt == entry.attempt.number && *claim.holder == *source)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use tokio::sync::Semaphore;

    use super::*;
    use crate::log::TopicRef;
    use crate::worker::attempt::{TaskRef, Writer};

    #[tokio::test]
    async fn a_supervisor_waiting_on_a_claim_still_landing_is_woken_when_it_lands() {
        let (landed, mut told) = mpsc::unbounded_channel();
        let reservations = Arc::new(Reservations::new(landed));
        let log = crate::log::open("memory://").await.unwrap();
        let writer = Arc::new(Writer::for_tests(log, TopicRef::new("s", "a.events")));
        let task = TaskRef {
            id: "t".into(),
            context_id: "c".into(),
            caller: crate::Caller::anonymous(),
        };
        let attempt = Attempt::new(task, 1, "m".into(), writer, Duration::from_secs(10));
        let permit = Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap();
        let key: TurnKey = ("t".into(), "m".into());
        assert!(reservations.keep(key.clone(), attempt, permit));
        assert!(reservations.lands_later("t", "m") && !reservations.waits("t", "m"));
        // Waiting as a supervisor does: the future made before the look.
        let waiting = {
            let reservations = reservations.clone();
            tokio::spawn(async move {
                let landing = reservations.landing();
                if reservations.lands_later("t", "m") {
                    landing.await;
                }
                reservations.waits("t", "m")
            })
        };
        tokio::task::yield_now().await;
        reservations.landed(&key);
        let woken = tokio::time::timeout(Duration::from_secs(10), waiting).await;
        assert!(woken.unwrap().unwrap(), "woken, the claim landed");
        assert!(!reservations.lands_later("t", "m"));
        assert_eq!(told.recv().await, Some(key));
    }
}
