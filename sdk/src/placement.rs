//! Placement: a bridge's view holding what its dynamic membership assigns it
//! (`skills/a2a-bridge/partitions.md`, "Dynamic membership").
//!
//! [`hold_assigned`] follows a member's assignment: it holds every partition the member
//! should hold ([`MemberView::held`]: its targets and those it still serves while they move
//! away), releases those it held for the assignment and no longer should, and says a
//! partition moved to it is ready once the view has caught it up to the log's end
//! ([`TaskView::sync`]), which switches the map to it (and the old holder releases it in
//! turn). Partitions held on demand (a successor standing in) are not its to release.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::members::{MemberView, MemberWatch, ReadyReporter};
use crate::view::TaskView;

/// Keep `view` holding what the assignment in `watch` gives this member, and report each
/// partition moved to it ready once caught up (each catch-up waits up to `catch_up`, and is
/// tried again at the next change of the assignment if it took longer). Returns when the
/// member stops.
pub async fn hold_assigned(
    view: TaskView,
    mut watch: MemberWatch,
    reporter: ReadyReporter,
    catch_up: Duration,
) {
    let mut assigned: BTreeSet<u32> = BTreeSet::new();
    let mut reported: BTreeSet<(u32, u64)> = BTreeSet::new();
    loop {
        let current: Arc<MemberView> = watch.borrow_and_update().clone();
        let wanted: BTreeSet<u32> = current.held().into_iter().collect();
        let to_hold: Vec<u32> = wanted.difference(&assigned).copied().collect();
        for p in to_hold {
            match view.hold(p).await {
                Ok(()) => {
                    assigned.insert(p);
                }
                Err(error) => {
                    tracing::warn!(partition = p, error = %error.report(), "cannot hold an assigned partition");
                }
            }
        }
        let to_release: Vec<u32> = assigned.difference(&wanted).copied().collect();
        for p in to_release {
            if let Err(error) = view.release(p).await {
                tracing::warn!(partition = p, error = %error.report(), "cannot release a partition");
            }
            assigned.remove(&p);
        }
        let incoming = current.incoming();
        reported.retain(|moved| incoming.contains(moved));
        for (p, since) in incoming {
            if reported.contains(&(p, since)) || !assigned.contains(&p) {
                continue;
            }
            reported.insert((p, since));
            let (view, reporter) = (view.clone(), reporter.clone());
            tokio::spawn(async move {
                // Caught up to the end read now: all the old holder had applied.
                match view.sync(Some(p), catch_up).await {
                    Ok(()) => {
                        if let Err(error) = reporter.ready(p, since).await {
                            tracing::warn!(partition = p, error = %error.report(), "cannot say a partition is ready");
                        }
                    }
                    Err(error) => {
                        tracing::info!(partition = p, error = %error.report(), "a moved partition is not caught up yet");
                    }
                }
            });
        }
        if watch.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::log::{self, Log, TopicRef};
    use crate::members::{Membership, MembershipConfig};
    use crate::view::ViewOptions;

    const P: u32 = 4;

    async fn until(watch: &MemberWatch, what: impl Fn(&MemberView) -> bool) {
        let mut watch = watch.clone();
        tokio::time::timeout(Duration::from_secs(20), watch.wait_for(|v| what(v)))
            .await
            .expect("the assignment never got there")
            .unwrap();
    }

    fn settled(v: &MemberView) -> bool {
        v.assignment.members.len() == 2 && v.assignment.moves.iter().all(Option::is_none)
    }

    #[tokio::test]
    async fn views_hold_their_share_and_a_move_switches_once_caught_up() {
        let log = log::open("memory://").await.unwrap();
        let events = TopicRef::new("agentlog", "echo.events");
        log.ensure_topic(&events, P).await.unwrap();
        let view = |log: &Log| {
            TaskView::start_with(
                log.clone(),
                events.clone(),
                ViewOptions::new().holding(Vec::new()),
            )
        };
        let config = |name: &str| {
            MembershipConfig::new("echo", name, format!("http://{name}"))
                .lease(Duration::from_secs(5))
                .heartbeat(Duration::from_millis(100))
        };
        let (view_a, view_b) = (view(&log).await.unwrap(), view(&log).await.unwrap());
        let a = Membership::join(log.clone(), config("a"), P).await.unwrap();
        let catch_up = Duration::from_secs(5);
        let holding_a = tokio::spawn(hold_assigned(
            view_a.clone(),
            a.watch(),
            a.reporter(),
            catch_up,
        ));
        let b = Membership::join(log.clone(), config("b"), P).await.unwrap();
        let holding_b = tokio::spawn(hold_assigned(
            view_b.clone(),
            b.watch(),
            b.reporter(),
            catch_up,
        ));
        // b holds its share, catches it up and says so; the map switches and a releases it.
        until(&a.watch(), settled).await;
        until(&b.watch(), settled).await;
        let map = a.view();
        let (share_a, share_b) = (map.assignment.targets_of(0), map.assignment.targets_of(1));
        assert_eq!((share_a.len(), share_b.len()), (2, 2));
        // Stopped, each placement has applied the last map its member saw (a watch hands
        // over its last value before it reports closed): each view holds its own share only.
        a.stop().await;
        b.stop().await;
        holding_a.await.unwrap();
        holding_b.await.unwrap();
        assert_eq!(view_a.held_partitions(), share_a);
        assert_eq!(view_b.held_partitions(), share_b);
    }
}
