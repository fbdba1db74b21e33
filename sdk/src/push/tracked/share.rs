//! The partitions the sender's own view holds: those the push group gives this sender, so
//! that its memory is its share of the tasks, not all of them. A partition is held when
//! the group first delivers its records (restored from its checkpoint, then caught up as
//! far as reading needs) and released once the group has moved it to another sender, who
//! starts where this one committed and holds it in turn. A bridge's view that the sender
//! shares is the bridge's to hold and release: left as it is.

use super::Tracker;
use crate::error::Result;

impl Tracker {
    /// Hold `partition`, whose records the group delivers to this sender, in its own view.
    pub(in crate::push) async fn hold_share(&self, partition: u32) -> Result<()> {
        if self.own_view && !self.view.holds(partition) {
            self.view.hold(partition).await?;
        }
        Ok(())
    }

    /// Release from the sender's own view each partition the group no longer gives it
    /// (`owned`: its partitions at the last poll). Between two deliveries: nothing reads
    /// the view meanwhile.
    pub(in crate::push) async fn keep_share(&self, owned: &[u32]) {
        if !self.own_view {
            return;
        }
        for partition in self.view.held_partitions() {
            if owned.contains(&partition) {
                continue;
            }
            if let Err(error) = self.view.release(partition).await {
                tracing::warn!(partition, error = %error.report(), "push: cannot release a partition moved to another sender");
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::Tracker;
    use crate::log::{self, TopicRef};
    use crate::view::{TaskView, ViewOptions};

    async fn started(own_view: bool, holding: Option<Vec<u32>>) -> (Tracker, TaskView) {
        let log = log::open("memory://").await.unwrap();
        let events = TopicRef::new("agentlog", "echo.events");
        log.ensure_topic(&events, 4).await.unwrap();
        let mut options = ViewOptions::new();
        options.holding = holding;
        let view = TaskView::start_with(log.clone(), events.clone(), options)
            .await
            .unwrap();
        let tracker = Tracker::new(
            view.clone(),
            own_view,
            log,
            events,
            100,
            Duration::from_secs(5),
        );
        (tracker, view)
    }

    #[tokio::test]
    async fn an_own_view_holds_what_the_group_gives_and_lets_go_of_what_it_moves() {
        let (tracker, view) = started(true, Some(Vec::new())).await;
        assert!(view.held_partitions().is_empty());
        tracker.hold_share(1).await.unwrap();
        tracker.hold_share(3).await.unwrap();
        tracker.hold_share(3).await.unwrap();
        assert_eq!(view.held_partitions(), [1, 3]);
        // The group moved 1 to another sender.
        tracker.keep_share(&[0, 3]).await;
        assert_eq!(view.held_partitions(), [3]);
        tracker.keep_share(&[]).await;
        assert!(view.held_partitions().is_empty());
    }

    #[tokio::test]
    async fn a_bridges_view_is_left_as_the_bridge_holds_it() {
        let (tracker, view) = started(false, None).await;
        tracker.keep_share(&[2]).await;
        assert_eq!(view.held_partitions(), [0, 1, 2, 3]);
        let (tracker, view) = started(false, Some(vec![0])).await;
        tracker.hold_share(2).await.unwrap();
        assert_eq!(view.held_partitions(), [0]);
    }
}
