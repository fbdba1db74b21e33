//! What a push sender counts, for `/metrics` (`agentlog_push_*`) and tests.

use std::sync::atomic::{AtomicU64, Ordering};

/// The push sender's counters. Relaxed atomics: each is a count on its own.
#[derive(Debug, Default)]
pub struct PushMetrics {
    pub(super) delivered: AtomicU64,
    pub(super) failed_attempts: AtomicU64,
    pub(super) dead_letters: AtomicU64,
    pub(super) refused: AtomicU64,
    pub(super) circuit_opens: AtomicU64,
    pub(super) pending: AtomicU64,
    pub(super) tracked: AtomicU64,
}

/// The counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushCounts {
    /// Notifications a receiver took (a 2xx answer).
    pub delivered: u64,
    /// Attempts that failed and were tried again or given up (a circuit that was open counts).
    pub failed_attempts: u64,
    /// Notifications given up: a dead-letter record each.
    pub dead_letters: u64,
    /// Of those, the ones given up at once: a refused destination, or a 4xx answer.
    pub refused: u64,
    /// How often an endpoint's circuit opened.
    pub circuit_opens: u64,
    /// Notifications queued or being sent now.
    pub pending: u64,
    /// Tasks with configs the sender follows now.
    pub tracked: u64,
}

impl PushMetrics {
    /// The counters now.
    pub fn counts(&self) -> PushCounts {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        PushCounts {
            delivered: get(&self.delivered),
            failed_attempts: get(&self.failed_attempts),
            dead_letters: get(&self.dead_letters),
            refused: get(&self.refused),
            circuit_opens: get(&self.circuit_opens),
            pending: get(&self.pending),
            tracked: get(&self.tracked),
        }
    }

    pub(super) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn set(counter: &AtomicU64, value: usize) {
        counter.store(value as u64, Ordering::Relaxed);
    }
}
