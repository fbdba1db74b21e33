//! One partition of the events topic as the view holds it: its tasks and their lock, its feed
//! (who applies it), its applied position, its readiness and its checkpoints (`hold.rs` holds
//! and releases it).
//!
//! Every partition of the topic has a [`Part`]; one not held keeps no tasks and no follower.
//! Owning a partition is placement, not safety: any view that has applied p up to the end read
//! after a request arrived answers it exactly, so a view may hold a partition another also
//! holds, and a request about a partition it does not hold is refused as unavailable (retry
//! elsewhere), never answered "not found".

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::ahead::{Ahead, Own};
use super::checkpoint::Manifest;
use super::tasks::Tasks;
use crate::log::raw::Place;

/// One partition's share of the view.
pub(super) struct Part {
    /// Readers (lookups, GetTask, ListTasks) share it; applying a record takes it alone.
    /// `parking_lot`'s, not std's, because it is fair: a waiting writer stops new readers and
    /// gets the lock when the last one leaves. std's lets a reader that takes it again at
    /// once (a checkpoint encoding slice after slice) starve the appliers, and with them
    /// every request waiting for the view to catch up.
    pub(super) tasks: RwLock<Tasks>,
    /// The next offset to apply: published under the tasks lock (a checkpoint reads it with
    /// the tasks).
    pub(super) applied: watch::Sender<u64>,
    /// The next offset to apply, held by whoever applies: the background follower, or a
    /// request that needs the view caught up (it applies the records itself instead of
    /// waiting for the follower to be scheduled).
    pub(super) feed: tokio::sync::Mutex<u64>,
    /// Records this process appended that wait for the view to reach them ([`Ahead`]).
    ahead: Mutex<Ahead>,
    /// The end of the records kept `ahead`: it wakes the background follower to reach them,
    /// as the log's end does not (it was appended for the view, which applies it itself).
    pub(super) kept_end: watch::Sender<u64>,
    /// The partition is held and has applied everything its log held when the hold began.
    pub(super) ready: watch::Sender<bool>,
    pub(super) held: AtomicBool,
    /// Held as part of the view's assignment (its readiness is the view's), not on demand.
    pub(super) assigned: AtomicBool,
    /// Counts holds: what a hold's readiness marker checks it still belongs to.
    pub(super) generation: AtomicU64,
    /// Serialises holding and releasing; the follower of the current hold.
    pub(super) holding: tokio::sync::Mutex<Option<CancellationToken>>,
    /// Records applied, for when a checkpoint is due.
    pub(super) records_applied: AtomicU64,
    pub(super) checkpoints_known: Mutex<KnownCheckpoints>,
    /// Held while a checkpoint of the partition is written: one at a time.
    pub(super) checkpointing: tokio::sync::Mutex<()>,
    /// The position of the checkpoint the current hold started from, if it did.
    pub(super) restored: Mutex<Option<u64>>,
    /// How long the current hold took from `hold` to ready, once it is.
    pub(super) ready_after: Mutex<Option<Duration>>,
    /// When the current hold began, Unix ms (this process's clock).
    pub(super) held_at_ms: AtomicU64,
    /// Released soon ([`TaskView::retire`](super::TaskView::retire)): still followed and
    /// readable by the requests that began before, held for none that begin now.
    pub(super) retiring: AtomicBool,
    /// The requests that pinned the partition's tasks from their sync to their read
    /// ([`TaskView::pin`](super::TaskView::pin)): a retired partition is released once none
    /// is left. Its lock orders a pin with a release (`hold.rs`).
    pub(super) pins: watch::Sender<usize>,
}

impl Part {
    pub(super) fn new(count_live: bool) -> Self {
        Self {
            tasks: RwLock::new(Tasks::new(count_live)),
            applied: watch::channel(0).0,
            feed: tokio::sync::Mutex::new(0),
            ahead: Mutex::new(Ahead::default()),
            kept_end: watch::channel(0).0,
            ready: watch::channel(false).0,
            held: AtomicBool::new(false),
            assigned: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            holding: tokio::sync::Mutex::new(None),
            records_applied: AtomicU64::new(0),
            checkpoints_known: Mutex::new(KnownCheckpoints::default()),
            checkpointing: tokio::sync::Mutex::new(()),
            restored: Mutex::new(None),
            ready_after: Mutex::new(None),
            held_at_ms: AtomicU64::new(0),
            retiring: AtomicBool::new(false),
            pins: watch::channel(0).0,
        }
    }

    // The lock does not poison: a panic while holding it leaves plain data behind, served.
    pub(super) fn read(&self) -> RwLockReadGuard<'_, Tasks> {
        self.tasks.read()
    }

    pub(super) fn write(&self) -> RwLockWriteGuard<'_, Tasks> {
        self.tasks.write()
    }

    pub(super) fn held(&self) -> bool {
        self.held.load(Ordering::Acquire)
    }

    /// Held, and not retiring: held for a request that begins now.
    pub(super) fn serves(&self) -> bool {
        self.held() && !self.retiring.load(Ordering::Acquire)
    }

    /// Held as part of the view's assignment.
    pub(super) fn assigned(&self) -> bool {
        self.assigned.load(Ordering::Acquire)
    }

    /// The position of the checkpoint the current hold started from, if it did.
    pub(super) fn restored(&self) -> Option<u64> {
        *Self::lock(&self.restored)
    }

    pub(super) fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// The next offset to apply.
    pub(super) fn applied_next(&self) -> u64 {
        *self.applied.borrow()
    }

    /// Drop the tasks expired by now, once the partition has replayed its log: a replay keeps
    /// every task until it is done, so that a command after a task's terminal record folds
    /// as rule 14 says (a duplicate, or a new incarnation, by its timestamp) and not as the
    /// first command of a task dropped a moment before. Readers never see an expired task
    /// either way. How many went.
    pub(super) fn expire_locked(&self, tasks: &mut Tasks) -> usize {
        if !self.is_ready() {
            return 0;
        }
        tasks.index_ready();
        tasks.expire(crate::retention::now_ms())
    }

    pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        // Plain data: nothing is left half-done by a panic elsewhere.
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keep records this process appended until the view reaches them ([`Ahead::keep`]),
    /// and wake the follower to reach them.
    pub(super) fn keep_ahead(&self, records: impl IntoIterator<Item = (u64, Place, Own)>) {
        let mut end = 0;
        let records = records
            .into_iter()
            .inspect(|(offset, ..)| end = end.max(offset + 1));
        Self::lock(&self.ahead).keep(records);
        self.kept_end.send_if_modified(|kept| {
            let moved = end > *kept;
            if moved {
                *kept = end;
            }
            moved
        });
    }

    /// The records kept from `next` on with no gap, taken out ([`Ahead::take_from`]).
    pub(super) fn take_ahead(&self, next: u64) -> Vec<(u64, Place, Own)> {
        Self::lock(&self.ahead).take_from(next)
    }

    /// The first offset from `next` on that a kept record holds ([`Ahead::first_from`]).
    pub(super) fn first_kept(&self, next: u64) -> Option<u64> {
        Self::lock(&self.ahead).first_from(next)
    }

    pub(super) fn known(&self) -> std::sync::MutexGuard<'_, KnownCheckpoints> {
        Self::lock(&self.checkpoints_known)
    }
}

/// What one held partition looks like now: for `/readyz` and `/metrics`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionStatus {
    /// The partition.
    pub partition: u32,
    /// It has applied everything its log held when the hold began.
    pub ready: bool,
    /// Held as part of the view's assignment, not on demand.
    pub assigned: bool,
    /// The tasks the view holds of it.
    pub tasks: usize,
    /// The next offset to apply.
    pub applied: u64,
    /// The position of the checkpoint the hold started from, if it did.
    pub restored_from: Option<u64>,
    /// How long the hold took to be ready, once it is.
    pub ready_after: Option<Duration>,
    /// When the hold began, Unix ms (this process's clock): placement tells one on-demand
    /// copy from a later one of the same partition by it.
    pub held_at_ms: u64,
}

/// A checkpoint of one partition the view wrote or started its hold from.
#[derive(Debug, Clone)]
pub(super) struct CheckpointMark {
    /// The next offset of the partition it had not applied.
    pub position: u64,
    /// The partition's `records_applied` when it was taken.
    pub records_applied: u64,
    /// Where it is on the checkpoint topic.
    pub manifest: Manifest,
}

/// The newest two checkpoints of a partition a view knows (wrote, or started its hold from):
/// what a compaction may delete below.
#[derive(Debug, Default)]
pub(super) struct KnownCheckpoints {
    /// The one before `last`.
    pub previous: Option<CheckpointMark>,
    /// The newest.
    pub last: Option<CheckpointMark>,
}
