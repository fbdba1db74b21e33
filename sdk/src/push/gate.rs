//! How many requests go to one endpoint at once, handed out oldest notification first: the
//! lanes waiting on a busy endpoint are served in the order their notifications were read,
//! so an endpoint's deliveries follow the log and a partition's commit point (its oldest
//! notification not done) stays close behind what was delivered. First come first served
//! would let a lane that came back for its next notification pass older ones, leaving many
//! delivered notifications above the commit point to be sent again after a crash.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// A count of permits, granted oldest first.
#[derive(Debug)]
pub(super) struct Gate {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    free: usize,
    /// Waiters by (when their notification was read, arrival), oldest first.
    waiting: BinaryHeap<Reverse<(Instant, u64, Waiter)>>,
    arrivals: u64,
}

/// A waiter's channel; compared by nothing (the heap orders by the fields before it).
#[derive(Debug)]
struct Waiter(oneshot::Sender<()>);

impl PartialEq for Waiter {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Waiter {}
impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Waiter {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

/// A waiter's place: dropped before it took its permit (its task cancelled), it gives back a
/// permit already sent to it.
struct Waiting<'a> {
    gate: &'a Gate,
    rx: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            rx.close();
            if rx.try_recv().is_ok() {
                self.gate.release();
            }
        }
    }
}

/// A permit; given back when dropped.
#[derive(Debug)]
pub(super) struct Permit<'a>(&'a Gate);

impl Gate {
    pub(super) fn new(permits: usize) -> Self {
        Self {
            state: Mutex::new(State {
                free: permits.max(1),
                waiting: BinaryHeap::new(),
                arrivals: 0,
            }),
        }
    }

    /// A permit, for a notification read at `since`: at once if one is free and nobody older
    /// waits, else when the older waiters were served.
    pub(super) async fn acquire(&self, since: Instant) -> Permit<'_> {
        let wait = {
            let mut state = self.state.lock();
            if state.free > 0 && state.waiting.is_empty() {
                state.free -= 1;
                return Permit(self);
            }
            let (tx, rx) = oneshot::channel();
            state.arrivals += 1;
            let arrival = state.arrivals;
            state.waiting.push(Reverse((since, arrival, Waiter(tx))));
            rx
        };
        let mut waiting = Waiting {
            gate: self,
            rx: Some(wait),
        };
        let granted = match waiting.rx.as_mut() {
            Some(rx) => rx.await.is_ok(),
            None => false,
        };
        waiting.rx = None;
        if granted {
            Permit(self)
        } else {
            // The gate dropped the waiter without a permit: it cannot (`release` sends or
            // keeps the permit), but waiting again is the answer if it ever did.
            Box::pin(self.acquire(since)).await
        }
    }

    fn release(&self) {
        let mut state = self.state.lock();
        while let Some(Reverse((_, _, Waiter(tx)))) = state.waiting.pop() {
            // A waiter that gave up (its task was cancelled) cannot take it: the next one.
            if tx.send(()).is_ok() {
                return;
            }
        }
        state.free += 1;
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn permits_go_to_the_oldest_notification_first() {
        let gate = Arc::new(Gate::new(1));
        let first = gate.acquire(Instant::now()).await;
        let base = Instant::now();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        // Arrive youngest first.
        for age in [3u64, 1, 2] {
            let gate = gate.clone();
            let order = order.clone();
            waiters.push(tokio::spawn(async move {
                let _permit = gate.acquire(base + Duration::from_millis(age)).await;
                order.lock().push(age);
            }));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(first);
        for waiter in waiters {
            waiter.await.unwrap();
        }
        assert_eq!(*order.lock(), [1, 2, 3]);
        // All permits are back.
        let _a = gate.acquire(Instant::now()).await;
        assert_eq!(gate.state.lock().free, 0);
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_passes_its_turn_on() {
        let gate = Arc::new(Gate::new(1));
        let held = gate.acquire(Instant::now()).await;
        let gone = {
            let gate = gate.clone();
            tokio::spawn(async move {
                let _ = gate.acquire(Instant::now()).await;
            })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        gone.abort();
        let _ = gone.await;
        drop(held);
        let _again = tokio::time::timeout(Duration::from_secs(1), gate.acquire(Instant::now()))
            .await
            .unwrap();
    }
}
