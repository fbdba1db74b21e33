//! Appliers: readers that apply the records they append themselves, as they make them (a task
//! view folds its bridge's commands and its workers' reports without reading them back).
//!
//! Such a reader watches a partition's end for the records *others* append; waking it for its
//! own would only have it find them applied already (a wasted wake-up, often of another
//! runtime thread). So a watch taken for an applier
//! ([`LogBackend::watch_end_for`](super::raw::LogBackend::watch_end_for)) is not moved by the
//! appends acknowledged as made for it ([`AppendBatch::applied_by`](super::AppendBatch)), and
//! the applier promises to apply each such batch itself, or to wake its own follower when it
//! cannot (records kept for later, a batch it declined). A backend that cannot tell appends
//! apart (Iggy, whose watch polls the server) wakes every watch for every append, which is
//! only the wake-up this saves.

use std::sync::atomic::{AtomicU64, Ordering};

/// One reader that applies its own appends ([module docs](self)): an id, distinct from every
/// other made in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Applier(u64);

impl Applier {
    /// A new applier, distinct from every other in this process.
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl Default for Applier {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_applier_is_distinct() {
        let (a, b) = (Applier::new(), Applier::default());
        assert_ne!(a, b);
        assert_eq!(a, a.clone());
    }
}
