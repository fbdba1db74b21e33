//! Placement: a bridge's view holding what its dynamic membership assigns it
//! (`skills/a2a-bridge/partitions.md`, "Dynamic membership").
//!
//! [`hold_assigned`] follows a member's assignment:
//! - it holds every partition the member should hold ([`MemberView::held`]: its targets and
//!   those it still serves while they move away) and releases those it held for the
//!   assignment and no longer should;
//! - a partition moving to it is held on demand while it catches up (the old holder serves
//!   it meanwhile, so the bridge's readiness, and its requests, do not wait for it), said
//!   ready once the view has caught it up to the log's end ([`TaskView::sync`]), which
//!   switches the map to it (the old holder releases it in turn), and then held as assigned;
//! - a partition it owns without a move (held at start, after a restart, or taken over at
//!   an eviction) is said held once caught up ([`ReadyReporter::holding`]);
//! - a copy held on demand (a successor standing in for an owner that did not answer, or a
//!   request that found a stale map) is released once the partition's owner holds it caught
//!   up and has been heard from since the copy began ([`MemberView::owner_holds`]): the owner
//!   is back, was there all along, or another member took the partition over, and serves it.
//!   The loop wakes on every record of the members topic (heartbeats too), so a copy taken
//!   between two changes of the assignment is looked at again within a heartbeat.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::error::ErrorKind;
use crate::members::{MemberView, MemberWatch, ReadyReporter};
use crate::security::owners::Owners;
use crate::view::{PartitionStatus, TaskView};

/// How long a failed write or catch-up waits before it is tried again (the log was out of
/// reach).
const RETRY: Duration = Duration::from_millis(250);

/// How often a partition moving here, caught up, looks whether the other views have it too.
const WARM_LOOK: Duration = Duration::from_millis(10);

/// Keep `view` holding what the assignment in `watch` gives this member, and say each
/// partition it catches up ready (each catch-up waits up to `catch_up` at a time, tried
/// again while the partition is still its to catch up). Returns when the member stops.
pub async fn hold_assigned(
    view: TaskView,
    watch: MemberWatch,
    reporter: ReadyReporter,
    catch_up: Duration,
) {
    hold_assigned_warming(view, watch, reporter, catch_up, None).await;
}

/// [`hold_assigned`], a partition moving here said ready only once `others`' views have it
/// caught up too ([`Owners::warm`]: an MCP route's tool agents, which warm what moves here
/// from the map `others` holds), or `catch_up` after the view had (a view still behind then
/// catches up under its requests, within their sync timeout).
pub async fn hold_assigned_warming(
    view: TaskView,
    mut watch: MemberWatch,
    reporter: ReadyReporter,
    catch_up: Duration,
    others: Option<Owners>,
) {
    // Held as assigned, and held on demand while moving here.
    let mut assigned: BTreeSet<u32> = BTreeSet::new();
    let mut warming: BTreeSet<u32> = BTreeSet::new();
    let mut reported: BTreeSet<(u32, u64)> = BTreeSet::new();
    let mut copies: BTreeMap<u32, SeenCopy> = BTreeMap::new();
    loop {
        let current: Arc<MemberView> = watch.borrow_and_update().clone();
        let wanted: BTreeSet<u32> = current.held().into_iter().collect();
        let incoming: BTreeMap<u32, u64> = current.incoming().into_iter().collect();
        for p in wanted.iter().copied() {
            if assigned.contains(&p) {
                continue;
            }
            if incoming.contains_key(&p) {
                if !warming.contains(&p) {
                    match view.hold_on_demand(p).await {
                        Ok(()) => {
                            warming.insert(p);
                        }
                        Err(error) => {
                            tracing::warn!(partition = p, error = %error.report(), "cannot hold a partition moving here");
                        }
                    }
                }
                continue;
            }
            match view.hold(p).await {
                Ok(()) => {
                    assigned.insert(p);
                    // Moved here: its `ready` said so already. Otherwise say it is held.
                    if !warming.remove(&p) {
                        tokio::spawn(say_held(
                            view.clone(),
                            watch.clone(),
                            reporter.clone(),
                            p,
                            catch_up,
                        ));
                    }
                }
                Err(error) => {
                    tracing::warn!(partition = p, error = %error.report(), "cannot hold an assigned partition");
                }
            }
        }
        let to_release: Vec<u32> = assigned
            .union(&warming)
            .filter(|p| !wanted.contains(p))
            .copied()
            .collect();
        for p in to_release {
            // Requests that found it held here finish first; new ones are forwarded.
            if let Err(error) = view.retire(p, catch_up).await {
                tracing::warn!(partition = p, error = %error.report(), "cannot release a partition");
            }
            assigned.remove(&p);
            warming.remove(&p);
        }
        reported.retain(|(p, since)| incoming.get(p) == Some(since));
        for (p, since) in incoming {
            if reported.contains(&(p, since)) || !(warming.contains(&p) || assigned.contains(&p)) {
                continue;
            }
            reported.insert((p, since));
            tokio::spawn(say_ready(
                view.clone(),
                watch.clone(),
                reporter.clone(),
                (p, since),
                (catch_up, others.clone()),
            ));
        }
        let held = Held {
            assigned: &assigned,
            warming: &warming,
        };
        release_stale_copies(&view, &current, held, &mut copies, catch_up).await;
        if watch.changed().await.is_err() {
            return;
        }
    }
}

/// Catch partition `p` up, retrying each `catch_up` while `still` holds of the assignment
/// and the view holds it; whether it got there.
async fn caught_up(
    view: &TaskView,
    watch: &MemberWatch,
    p: u32,
    catch_up: Duration,
    still: impl Fn(&MemberView) -> bool,
) -> bool {
    loop {
        // Caught up to the end read now: all the old holder had applied.
        match view.sync(Some(p), catch_up).await {
            Ok(()) => return true,
            Err(error) => {
                if !view.holds(p) || !still(&watch.borrow()) || watch.has_changed().is_err() {
                    return false;
                }
                tracing::info!(partition = p, error = %error.report(), "a partition is not caught up yet; waiting on");
                if error.kind() != ErrorKind::Timeout {
                    // The log failed at once: not a busy loop while it is out of reach.
                    tokio::time::sleep(RETRY.min(catch_up)).await;
                }
            }
        }
    }
}

/// Say partition `moved.0`, moving here by the move that began at `moved.1`, ready once it
/// is caught up, in the other views too within `catch_up` (unless the move ended or changed
/// meanwhile).
async fn say_ready(
    view: TaskView,
    watch: MemberWatch,
    reporter: ReadyReporter,
    moved: (u32, u64),
    (catch_up, others): (Duration, Option<Owners>),
) {
    let (p, since) = moved;
    let still = |v: &MemberView| v.incoming().contains(&moved);
    if !caught_up(&view, &watch, p, catch_up, still).await {
        return;
    }
    if let Some(others) = others {
        let warmed = async {
            while !others.warm(p) {
                tokio::time::sleep(WARM_LOOK).await;
            }
        };
        if tokio::time::timeout(catch_up, warmed).await.is_err() {
            tracing::info!(
                partition = p,
                "the other views have not caught a partition moving here up; saying it ready anyway"
            );
        }
        if !still(&watch.borrow()) {
            return;
        }
    }
    while let Err(error) = reporter.ready(p, since).await {
        tracing::warn!(partition = p, error = %error.report(), "cannot say a partition is ready; trying again");
        if !still(&watch.borrow()) || watch.has_changed().is_err() {
            return;
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Say partition `p`, owned here without a move, held once it is caught up (unless it is
/// no longer this member's meanwhile).
async fn say_held(
    view: TaskView,
    watch: MemberWatch,
    reporter: ReadyReporter,
    p: u32,
    catch_up: Duration,
) {
    let still = |v: &MemberView| v.me.is_some() && v.me == v.assignment.owner(p);
    if !caught_up(&view, &watch, p, catch_up, still).await {
        return;
    }
    while let Err(error) = reporter.holding(p).await {
        tracing::warn!(partition = p, error = %error.report(), "cannot say a partition is held; trying again");
        if !still(&watch.borrow()) || watch.has_changed().is_err() {
            return;
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// What the placement holds for the assignment: as assigned, and on demand while moving
/// here.
#[derive(Clone, Copy)]
struct Held<'a> {
    assigned: &'a BTreeSet<u32>,
    warming: &'a BTreeSet<u32>,
}

/// A copy held on demand, as the placement first saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SeenCopy {
    /// When its hold began ([`PartitionStatus::held_at_ms`]): another hold is another copy.
    held_at_ms: u64,
    /// The members topic read up to here when the placement first saw it: its owner must be
    /// heard from past this.
    after: u64,
}

/// Release each copy the view holds on demand (neither assigned nor moving here) whose
/// owner, another member, holds the partition caught up and was heard from after the copy
/// was first seen ([`MemberView::owner_holds`]). A copy is first seen after it began, so a
/// record past that point was read after it began (the log's order, not members' clocks):
/// written after it, or at most the reader's lag before.
async fn release_stale_copies(
    view: &TaskView,
    current: &MemberView,
    held: Held<'_>,
    copies: &mut BTreeMap<u32, SeenCopy>,
    grace: Duration,
) {
    let on_demand: Vec<PartitionStatus> = view
        .partition_status()
        .into_iter()
        .filter(|s| {
            !s.assigned
                && !held.assigned.contains(&s.partition)
                && !held.warming.contains(&s.partition)
        })
        .collect();
    copies.retain(|p, copy| {
        on_demand
            .iter()
            .any(|s| s.partition == *p && s.held_at_ms == copy.held_at_ms)
    });
    for status in on_demand {
        let p = status.partition;
        let Some(copy) = copies.get(&p) else {
            copies.insert(
                p,
                SeenCopy {
                    held_at_ms: status.held_at_ms,
                    after: current.read_to,
                },
            );
            continue;
        };
        if current.owner_holds(p, copy.after) {
            tracing::info!(
                partition = p,
                "releasing a copy held on demand: its owner holds it"
            );
            if let Err(error) = view.retire(p, grace).await {
                tracing::warn!(partition = p, error = %error.report(), "cannot release a partition");
            }
            copies.remove(&p);
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

    /// A member of the `echo` agent named `name`, its lease `lease`, heartbeats every 100 ms.
    fn member(name: &str, lease: Duration) -> MembershipConfig {
        MembershipConfig::new("echo", name, format!("http://{name}"))
            .lease(lease)
            .heartbeat(Duration::from_millis(100))
    }

    /// A view of `events` over `log` holding no partition yet.
    async fn holding_nothing(log: &Log, events: &TopicRef) -> TaskView {
        TaskView::start_with(
            log.clone(),
            events.clone(),
            ViewOptions::new().holding(Vec::new()),
        )
        .await
        .unwrap()
    }

    fn settled(v: &MemberView) -> bool {
        v.assignment.members.len() == 2 && v.assignment.moves.iter().all(Option::is_none)
    }

    #[tokio::test]
    async fn views_hold_their_share_and_a_move_switches_once_caught_up() {
        let log = log::open("memory://").await.unwrap();
        let events = TopicRef::new("agentlog", "echo.events");
        log.ensure_topic(&events, P).await.unwrap();
        let config = |name: &str| member(name, Duration::from_secs(5));
        let (view_a, view_b) = (
            holding_nothing(&log, &events).await,
            holding_nothing(&log, &events).await,
        );
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

    #[tokio::test]
    async fn a_copy_held_on_demand_is_released_once_its_owner_says_it_holds_it() {
        let log = log::open("memory://").await.unwrap();
        let events = TopicRef::new("agentlog", "echo.events");
        log.ensure_topic(&events, P).await.unwrap();
        let config = |name: &str| member(name, Duration::from_secs(30));
        let catch_up = Duration::from_secs(5);
        let (view_a, view_b) = (
            holding_nothing(&log, &events).await,
            holding_nothing(&log, &events).await,
        );
        let a = Membership::join(log.clone(), config("a"), P).await.unwrap();
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
        until(&b.watch(), settled).await;
        let of_a = b.view().assignment.targets_of(0);
        // A partition moved to b was caught up on demand, then held as assigned: b's view
        // was ready throughout and is now.
        assert!(view_b.caught_up());
        // a dies (no leave); b stands in for one of its partitions on demand.
        a.stop().await;
        holding_a.await.unwrap();
        let p = of_a[0];
        view_b.hold_on_demand(p).await.unwrap();
        // a's mark from before it stopped does not release the copy (a is not heard from).
        assert!(!b.view().owner_holds(p, b.view().read_to));
        // a comes back within its lease under its name: it keeps its partitions, holds them
        // again and says so; b releases its copy, and only that.
        let view_a = holding_nothing(&log, &events).await;
        let a = Membership::join(log.clone(), config("a"), P).await.unwrap();
        assert_eq!(a.view().assignment.targets_of(0), of_a);
        let joined = a.view().seen["a"].joined;
        let holding_a = tokio::spawn(hold_assigned(
            view_a.clone(),
            a.watch(),
            a.reporter(),
            catch_up,
        ));
        until(&b.watch(), |v| {
            v.ready[p as usize]
                .as_ref()
                .is_some_and(|m| m.member == "a" && m.offset > joined)
        })
        .await;
        // b's placement releases the copy once it has folded that mark: wait for it to.
        tokio::time::timeout(Duration::from_secs(30), async {
            while view_b.holds(p) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("b releases its copy of a's partition");
        let of_b = b.view().assignment.targets_of(1);
        b.stop().await;
        holding_b.await.unwrap();
        assert!(!view_b.holds(p));
        assert_eq!(view_b.held_partitions(), of_b);
        a.stop().await;
        holding_a.await.unwrap();
        assert_eq!(view_a.held_partitions(), of_a);
    }

    #[tokio::test]
    async fn a_move_is_said_ready_once_the_other_views_have_it_too() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let log = log::open("memory://").await.unwrap();
        let events = TopicRef::new("agentlog", "echo.events");
        log.ensure_topic(&events, P).await.unwrap();
        let config = |name: &str| member(name, Duration::from_secs(30));
        let catch_up = Duration::from_secs(10);
        let a = Membership::join(log.clone(), config("a"), P).await.unwrap();
        let holding_a = tokio::spawn(hold_assigned(
            holding_nothing(&log, &events).await,
            a.watch(),
            a.reporter(),
            catch_up,
        ));
        // b's other views (an MCP route's, say) have nothing caught up until told.
        let b = Membership::join(log.clone(), config("b"), P).await.unwrap();
        let owners = Owners::new(b.view().owner_map().unwrap());
        let warm = Arc::new(AtomicBool::new(false));
        let told = Arc::clone(&warm);
        owners.warm_up(Arc::new(move |_| told.load(Ordering::SeqCst)));
        let holding_b = tokio::spawn(hold_assigned_warming(
            holding_nothing(&log, &events).await,
            b.watch(),
            b.reporter(),
            catch_up,
            Some(owners),
        ));
        // b's view catches its share up at once (an empty log), but the moves stand.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(b.view().incoming().len(), 2);
        warm.store(true, Ordering::SeqCst);
        until(&b.watch(), settled).await;
        a.stop().await;
        b.stop().await;
        holding_a.await.unwrap();
        holding_b.await.unwrap();
    }
}
