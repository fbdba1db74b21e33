//! Parking a config whose receiver keeps failing (`progress`' module doc): the push progress
//! record that says where its notifications stand, and what a lane remembers of it.

use std::time::{Duration, Instant};

use agentlog_wire::{Record, RecordBody, RecordHeader};

/// How long a notification fails before its config is parked, and how long a park lasts
/// before the config is parked again further on (while records after it are read). A crash
/// sends again at most about this much of other configs' notifications.
pub(super) const PARK_AFTER: Duration = Duration::from_secs(1);

/// How often a lane waiting to retry checks whether to park.
pub(super) const PARK_CHECK: Duration = Duration::from_millis(250);

/// A lane's parking.
#[derive(Debug, Default)]
pub(super) struct Park {
    /// The message id of the progress record written and not read back yet.
    pub(super) writing: Option<String>,
    /// The anchor: the epoch and offset of the progress record that holds the lane's
    /// notices before it.
    pub(super) anchor: Option<(u64, u64)>,
    /// When the lane last wrote a progress record.
    pub(super) last: Option<Instant>,
}

impl Park {
    /// Whether a lane whose notification has failed since `failing_since` may park now.
    pub(super) fn due(&self, failing_since: Instant) -> bool {
        self.writing.is_none()
            && failing_since.elapsed() >= PARK_AFTER
            && self.last.is_none_or(|last| last.elapsed() >= PARK_AFTER)
    }
}

/// The progress record of config `config_id` of the task in `header`: its notifications
/// before the update at `next` are done.
pub(super) fn record(header: RecordHeader, config_id: &str, next: u64) -> Record {
    Record {
        header,
        body: RecordBody::PushProgress {
            config_id: config_id.to_owned(),
            next,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_parks_after_failing_a_while_and_not_twice_at_once() {
        let mut park = Park::default();
        let now = Instant::now();
        assert!(!park.due(now), "failing only now");
        let long_ago = now.checked_sub(PARK_AFTER * 2).unwrap_or(now);
        assert!(park.due(long_ago));
        park.writing = Some("m".into());
        assert!(!park.due(long_ago), "one record at a time");
        park.writing = None;
        park.last = Some(Instant::now());
        assert!(!park.due(long_ago), "parked just now");
    }
}
