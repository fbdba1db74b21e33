//! [`Requeues`]: when a retried send may put its turn on the workers' queue again.
//!
//! A retry of a turn no worker has claimed yet re-queues it, in case the first copy was lost
//! (the workers' sweeper would too, within a few seconds). Unbounded, a client retrying in a
//! loop would append a copy per retry. So a bridge re-queues a turn only once it has waited
//! [`REQUEUE_GRACE`] for a claim, and at most once per grace: what it remembers is the tasks
//! it re-queued within the last grace, nothing older.

use std::collections::HashMap;
use std::sync::Mutex;

/// How long a turn waits for a claim before a retry re-queues it, and how long after a
/// re-queue before another, in milliseconds.
pub(super) const REQUEUE_GRACE_MS: u64 = 1_000;

/// Above this many remembered tasks, the stale ones are forgotten on the next insert.
const PRUNE_ABOVE: usize = 1024;

/// The tasks this bridge re-queued lately, by when.
#[derive(Debug, Default)]
pub(super) struct Requeues {
    at: Mutex<HashMap<String, u64>>,
}

impl Requeues {
    /// Whether a retry at `now_ms` of task `task_id`, whose turn has waited for a claim since
    /// `waiting_since_ms`, re-queues it; if so, it is remembered.
    pub(super) fn allow(&self, task_id: &str, waiting_since_ms: u64, now_ms: u64) -> bool {
        if now_ms.saturating_sub(waiting_since_ms) < REQUEUE_GRACE_MS {
            return false;
        }
        let mut at = self.at.lock().unwrap_or_else(|e| e.into_inner());
        if at
            .get(task_id)
            .is_some_and(|last| now_ms.saturating_sub(*last) < REQUEUE_GRACE_MS)
        {
            return false;
        }
        if at.len() >= PRUNE_ABOVE {
            at.retain(|_, last| now_ms.saturating_sub(*last) < REQUEUE_GRACE_MS);
        }
        at.insert(task_id.to_owned(), now_ms);
        true
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_is_requeued_after_the_grace_and_once_per_grace() {
        let requeues = Requeues::default();
        let grace = REQUEUE_GRACE_MS;
        // Submitted at 0: too soon, then once, then not again within the grace.
        assert!(!requeues.allow("t", 0, grace - 1));
        assert!(requeues.allow("t", 0, grace));
        assert!(!requeues.allow("t", 0, grace + 1));
        assert!(!requeues.allow("t", 0, 2 * grace - 1));
        assert!(requeues.allow("t", 0, 2 * grace));
        // Another task is its own.
        assert!(requeues.allow("u", 0, 2 * grace));
    }

    #[tokio::test]
    async fn retries_in_a_loop_add_one_queue_copy_per_grace() {
        use crate::Caller;
        use crate::bridge::test_support::{records_on, send_request};
        use crate::bridge::{Bridge, BridgeConfig};

        let log = crate::log::open("memory://").await.unwrap();
        let bridge = Bridge::open(log.clone(), BridgeConfig::new("q"))
            .await
            .unwrap();
        let send = || send_request("m-1", true);
        let commands = bridge.config().topics.commands.clone();
        let copies = || records_on(&log, &commands);
        let caller = Caller::anonymous();
        // No worker: the turn waits for a claim.
        for _ in 0..20 {
            bridge.send_message(&caller, send()).await.unwrap();
        }
        assert_eq!(
            copies().await,
            1,
            "retries within the grace re-queue nothing"
        );
        tokio::time::sleep(std::time::Duration::from_millis(REQUEUE_GRACE_MS + 100)).await;
        for _ in 0..20 {
            bridge.send_message(&caller, send()).await.unwrap();
        }
        assert_eq!(copies().await, 2, "one re-queue per grace");
    }

    #[test]
    fn memory_holds_only_the_last_grace() {
        let requeues = Requeues::default();
        for n in 0..PRUNE_ABOVE {
            assert!(requeues.allow(&format!("t{n}"), 0, REQUEUE_GRACE_MS));
        }
        // A grace later, the next insert forgets them all.
        assert!(requeues.allow("late", 0, 3 * REQUEUE_GRACE_MS));
        assert_eq!(requeues.at.lock().unwrap().len(), 1);
    }
}
