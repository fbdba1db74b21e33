//! Who a partition wakes when its end moves: every plain watch, and each applier's watch
//! unless the records were made for that applier ([`Applier`]: it applied them itself).

use std::sync::{Mutex, PoisonError};

use tokio::sync::watch;

use crate::log::Applier;

/// A partition's end watches. Dropped when the log closes, which wakes every watcher with an
/// error.
#[derive(Debug)]
pub(crate) struct Watchers {
    /// Every plain watch ([`watch_end`](crate::log::raw::LogBackend::watch_end)).
    all: watch::Sender<u64>,
    /// One watch per applier that asked for one, moved by every append not made for it.
    /// Few (one per task view of the topic in this process).
    appliers: Mutex<Vec<(Applier, watch::Sender<u64>)>>,
}

impl Watchers {
    /// Watches of a partition ending at `end`.
    pub fn new(end: u64) -> Self {
        Self {
            all: watch::channel(end).0,
            appliers: Mutex::default(),
        }
    }

    /// A plain watch: moved by every append.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.all.subscribe()
    }

    /// `applier`'s watch: moved by every append not made for it.
    pub fn subscribe_for(&self, applier: Applier) -> watch::Receiver<u64> {
        let mut appliers = self.appliers();
        if let Some((_, watch)) = appliers.iter().find(|(a, _)| *a == applier) {
            return watch.subscribe();
        }
        let (watch, receiver) = watch::channel(*self.all.borrow());
        appliers.push((applier, watch));
        receiver
    }

    /// Move every watch to `end`, but `by`'s: the records up to it were made for `by`, which
    /// applies them itself. Never backwards (two in-memory appends may announce out of order).
    pub fn announce(&self, end: u64, by: Option<Applier>) {
        move_to(&self.all, end);
        let mut appliers = self.appliers();
        // An applier that stopped watching leaves its watch behind: dropped here.
        appliers.retain(|(_, watch)| !watch.is_closed());
        for (applier, watch) in appliers.iter() {
            if by != Some(*applier) {
                move_to(watch, end);
            }
        }
    }

    fn appliers(&self) -> std::sync::MutexGuard<'_, Vec<(Applier, watch::Sender<u64>)>> {
        // A list of senders: a panic while it was held leaves nothing half-done.
        self.appliers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn move_to(watch: &watch::Sender<u64>, end: u64) {
    watch.send_if_modified(|current| {
        let moved = end > *current;
        if moved {
            *current = end;
        }
        moved
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_applier_is_not_woken_by_its_own_appends() {
        let watchers = Watchers::new(0);
        let (mine, other) = (Applier::new(), Applier::new());
        let plain = watchers.subscribe();
        let own = watchers.subscribe_for(mine);
        let others = watchers.subscribe_for(other);
        watchers.announce(1, Some(mine));
        assert!(plain.has_changed().expect("open"));
        assert!(others.has_changed().expect("open"));
        assert!(!own.has_changed().expect("open"), "woken by its own append");
        assert_eq!(*own.borrow(), 0);
        // The next append made by anyone else moves it past both.
        watchers.announce(2, None);
        assert!(own.has_changed().expect("open"));
        assert_eq!(*own.borrow(), 2);
    }

    #[test]
    fn watches_never_move_backwards_and_closed_ones_are_dropped() {
        let watchers = Watchers::new(5);
        let applier = Applier::new();
        let mut own = watchers.subscribe_for(applier);
        assert_eq!(*own.borrow_and_update(), 5);
        watchers.announce(4, None);
        assert!(!own.has_changed().expect("open"));
        // Two subscriptions of one applier share its watch.
        let again = watchers.subscribe_for(applier);
        assert_eq!(watchers.appliers().len(), 1);
        drop((own, again));
        watchers.announce(6, None);
        assert!(watchers.appliers().is_empty());
    }
}
