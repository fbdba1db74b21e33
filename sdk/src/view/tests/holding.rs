//! Unit tests of a view holding some partitions: what it knows and refuses, releasing and
#![allow(clippy::unwrap_used)]
//! holding again, and `ListTasks` over partitions paging as one index does.

use std::time::Duration;

use super::PATIENCE;
use super::append;
use super::retention::{caller, command, memory_log, random_history};
use crate::error::ErrorKind;
use crate::log::{Log, TopicRef, partition_for_key};
use crate::retention::now_ms;
use crate::view::{ListFilter, TaskView, ViewOptions};

/// Every task id of `history`, sorted.
fn ids_of(history: &[agentlog_wire::Record]) -> Vec<String> {
    let mut ids: Vec<String> = history.iter().map(|r| r.header.task_id.clone()).collect();
    ids.sort();
    ids.dedup();
    ids
}

async fn ready(log: &Log, events: &TopicRef, options: ViewOptions) -> TaskView {
    let view = TaskView::start_with(log.clone(), events.clone(), options)
        .await
        .unwrap();
    tokio::time::timeout(PATIENCE, view.wait_caught_up())
        .await
        .unwrap();
    view.sync(None, PATIENCE).await.unwrap();
    view
}

/// What `view` answers about `id`, comparable.
fn answer(view: &TaskView, id: &str) -> Option<String> {
    view.lookup(&caller(), id).map(|i| {
        format!(
            "{:?} {} {:?} {:?} {:?}",
            i.state,
            i.status_timestamp_ms,
            i.last_message_id,
            i.claim,
            i.offsets().collect::<Vec<_>>()
        )
    })
}

#[tokio::test]
async fn a_view_of_some_partitions_knows_their_tasks_alone_and_refuses_the_others() {
    let (log, events, _) = memory_log(4).await;
    let history = random_history(5, 60, 500, 0);
    for record in &history {
        append(&log, &events, record).await;
    }
    let ids = ids_of(&history);
    let all = ready(&log, &events, ViewOptions::default()).await;
    let some = ready(&log, &events, ViewOptions::new().holding(vec![1, 3])).await;
    assert_eq!(some.held_partitions(), vec![1, 3]);
    assert!(some.caught_up());
    let held = |id: &str| [1, 3].contains(&partition_for_key(id.as_bytes(), 4));
    let mut expected = 0;
    for id in &ids {
        if held(id) {
            assert_eq!(answer(&some, id), answer(&all, id), "{id}");
            assert_eq!(
                some.get(&caller(), id).await.unwrap(),
                all.get(&caller(), id).await.unwrap()
            );
            expected += usize::from(all.lookup_any(id).is_some());
        } else {
            assert_eq!(answer(&some, id), None, "{id}");
        }
    }
    assert!(expected > 0 && expected < all.task_count());
    assert_eq!(some.task_count(), expected);
    let status = some.partition_status();
    assert_eq!(status.iter().map(|s| s.tasks).sum::<usize>(), expected);
    assert!(status.iter().all(|s| s.ready && s.assigned));
    // A request about a partition not held: unavailable (retry elsewhere), never "not found".
    for partition in [0, 2] {
        let refused = some.sync(Some(partition), PATIENCE).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Unavailable, "{refused}");
        let refused = some.sync_to(partition, 1, PATIENCE).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Unavailable, "{refused}");
    }
    some.sync(Some(1), PATIENCE).await.unwrap();
    // The list is of the held partitions' tasks, in the order of the whole view's.
    let filter = ListFilter {
        page_size: 100,
        ..ListFilter::default()
    };
    let (page, total) = some.list(&caller(), &filter);
    let (whole, _) = all.list(&caller(), &filter);
    let whole_held: Vec<_> = whole
        .iter()
        .filter(|t| held(&t.id))
        .map(|t| &t.id)
        .collect();
    assert_eq!(page.iter().map(|t| &t.id).collect::<Vec<_>>(), whole_held);
    assert_eq!(total, page.len());
}

#[tokio::test]
async fn a_released_partition_is_dropped_and_a_new_hold_restores_its_checkpoint_and_catches_up() {
    let (log, events, checkpoints) = memory_log(4).await;
    let history = random_history(9, 80, 900, 0);
    let (first, rest) = history.split_at(400);
    let (middle, last) = rest.split_at(250);
    for record in first {
        append(&log, &events, record).await;
    }
    let view = ready(
        &log,
        &events,
        ViewOptions::restore_only(checkpoints.clone()),
    )
    .await;
    let written = view.checkpoint().await.unwrap().unwrap();
    for record in middle {
        append(&log, &events, record).await;
    }
    view.sync(None, PATIENCE).await.unwrap();
    let ids = ids_of(&history);
    let in_two = |id: &String| partition_for_key(id.as_bytes(), 4) == 2;
    let before = view.task_count();
    let of_two = ids.iter().filter(|id| in_two(id)).count();
    assert!(of_two > 0);

    view.release(2).await.unwrap();
    assert_eq!(view.held_partitions(), vec![0, 1, 3]);
    assert!(view.task_count() < before);
    assert_eq!(
        view.inner.parts[2].read().entries.len(),
        0,
        "its tasks are gone"
    );
    assert!(
        ids.iter()
            .filter(|id| in_two(id))
            .all(|id| answer(&view, id).is_none())
    );
    let refused = view.sync(Some(2), PATIENCE).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Unavailable);
    assert!(view.caught_up(), "the partitions it holds are");
    // Releasing twice, or one never held, does nothing.
    view.release(2).await.unwrap();

    // Records of the released partition keep coming; a new hold starts from its checkpoint.
    for record in last {
        append(&log, &events, record).await;
    }
    view.hold(2).await.unwrap();
    let restored = view.restored_from().unwrap();
    assert_eq!(restored[2], written.positions[2]);
    assert!(restored[2] > 0);
    tokio::time::timeout(PATIENCE, view.wait_caught_up())
        .await
        .unwrap();
    assert!(view.partition_ready(2));
    view.sync(None, PATIENCE).await.unwrap();
    let replayed = ready(&log, &events, ViewOptions::default()).await;
    for id in &ids {
        assert_eq!(answer(&view, id), answer(&replayed, id), "{id}");
    }
    assert_eq!(view.task_count(), replayed.task_count());
    let status = view.partition_status();
    let two = status.iter().find(|s| s.partition == 2).unwrap();
    assert_eq!(two.restored_from, Some(written.positions[2]));
    assert!(two.ready_after.is_some());
}

#[tokio::test]
async fn a_hold_on_demand_is_not_the_views_assignment() {
    let (log, events, _) = memory_log(2).await;
    let view = ready(&log, &events, ViewOptions::new().holding(vec![0])).await;
    view.hold_on_demand(1).await.unwrap();
    let assigned: Vec<(u32, bool)> = view
        .partition_status()
        .iter()
        .map(|s| (s.partition, s.assigned))
        .collect();
    assert_eq!(assigned, vec![(0, true), (1, false)]);
    // Holding it as assigned later makes it part of the assignment.
    view.hold(1).await.unwrap();
    assert!(view.partition_status().iter().all(|s| s.assigned));
    let refused = view.hold(2).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Config);
}

/// Every page of the caller's tasks under `filter` (page size 7), followed by cursor, with
/// each page's total.
fn every_page(view: &TaskView, filter: &ListFilter) -> Vec<(Vec<String>, usize)> {
    let mut pages = Vec::new();
    let mut filter = ListFilter {
        page_size: 7,
        ..filter.clone()
    };
    loop {
        let (page, total) = view.list(&caller(), &filter);
        // A request's listing, pinned, pages alike.
        let (pinned, pinned_total) = view.pin_held().list(&caller(), &filter).unwrap();
        assert_eq!(pinned_total, total);
        assert_eq!(
            pinned.iter().map(|t| &t.id).collect::<Vec<_>>(),
            page.iter().map(|t| &t.id).collect::<Vec<_>>()
        );
        let Some(last) = page.last() else {
            pages.push((Vec::new(), total));
            return pages;
        };
        filter.cursor = Some((last.status_timestamp_ms, last.id.to_string()));
        pages.push((page.iter().map(|t| t.id.to_string()).collect(), total));
    }
}

#[tokio::test]
async fn list_pages_and_cursors_over_four_partitions_are_those_of_one() {
    let (one, events, _) = memory_log(1).await;
    let (four, _, _) = memory_log(4).await;
    // Many tasks of equal status time: the tie-break orders them, across partitions too.
    let now = now_ms();
    for n in 0..60u64 {
        let record = command(&format!("t{n}"), "hi", now - 1_000 + n % 3, 0);
        for log in [&one, &four] {
            append(log, &events, &record).await;
        }
    }
    let one = ready(&one, &events, ViewOptions::default()).await;
    let four = ready(&four, &events, ViewOptions::default()).await;
    assert_eq!(four.partitions(), 4);
    for filter in [
        ListFilter::default(),
        ListFilter {
            status_after_ms: Some(now - 999),
            ..ListFilter::default()
        },
        ListFilter {
            context_id: Some("ctx-t5".into()),
            ..ListFilter::default()
        },
    ] {
        let pages = every_page(&one, &filter);
        assert!(pages.len() > 1 || filter.context_id.is_some());
        assert_eq!(every_page(&four, &filter), pages, "{filter:?}");
    }
    // Nothing is waited for: a sync of every partition held returns at once.
    tokio::time::timeout(Duration::from_secs(5), four.sync(None, PATIENCE))
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn views_holding_the_members_shares_hold_all_tasks_once_each_in_proportion() {
    use crate::security::peers::Members;
    let log = crate::log::open("memory://").await.unwrap();
    let events = TopicRef::new("s", "a.events");
    log.ensure_topic(&events, 16).await.unwrap();
    let now = now_ms();
    let tasks = 4_000usize;
    for n in 0..tasks {
        append(&log, &events, &command(&format!("task-{n}"), "hi", now, 0)).await;
    }
    for count in [1u32, 2, 4] {
        let urls: Vec<String> = (0..count).map(|i| format!("http://b{i}")).collect();
        let mut held = 0;
        for index in 0..count {
            let members = Members::new(index, count, urls.clone()).unwrap();
            let share = members.owned_by(index, 16);
            let view = ready(&log, &events, ViewOptions::new().holding(share.clone())).await;
            assert_eq!(view.held_partitions(), share);
            let expected = tasks / count as usize;
            let got = view.task_count();
            // Ids hash evenly: each member's share of the tasks is its share of the
            // partitions, within 1 % of all tasks.
            assert!(
                got.abs_diff(expected) <= tasks / 100,
                "member {index}/{count}: {got} tasks, {expected} expected"
            );
            for status in view.partition_status() {
                assert_eq!(members.owner(status.partition), index);
            }
            held += got;
        }
        assert_eq!(held, tasks, "{count} members: every task held once");
    }
}

#[tokio::test]
async fn a_retired_partition_serves_the_requests_under_way_and_no_new_one() {
    let (log, events, _) = memory_log(2).await;
    let task = (0..)
        .map(|k| format!("retired-{k}"))
        .find(|t| partition_for_key(t.as_bytes(), 2) == 1)
        .unwrap();
    append(&log, &events, &command(&task, "hi", now_ms(), 0)).await;
    let view = ready(&log, &events, ViewOptions::new().holding(vec![0, 1])).await;
    // A request found partition 1 held and synced; then it is retired.
    view.sync(Some(1), PATIENCE).await.unwrap();
    view.retire(1, Duration::from_secs(3600)).await.unwrap();
    // Not held for a request that begins now; still readable by the one under way.
    assert!(!view.holds(1));
    assert_eq!(view.held_partitions(), vec![0]);
    assert!(answer(&view, &task).is_some());
    view.sync(Some(1), PATIENCE).await.unwrap();
    // Its assignment is not the view's any more: the view is ready without it.
    assert!(view.caught_up());
    // Held on demand meanwhile (a peer's marked request): served, still retiring.
    view.hold_on_demand(1).await.unwrap();
    assert!(!view.holds(1));
    // Held as assigned again: kept, and the pending release does nothing.
    view.hold(1).await.unwrap();
    assert!(view.holds(1));
    assert_eq!(view.held_partitions(), vec![0, 1]);
    // Retired with no grace, then released outright: gone.
    view.retire(1, Duration::ZERO).await.unwrap();
    view.release(1).await.unwrap();
    assert!(answer(&view, &task).is_none());
    assert_eq!(
        view.sync(Some(1), PATIENCE).await.unwrap_err().kind(),
        ErrorKind::Unavailable
    );
}

/// A retire's grace in the tests of pins: short, so that stalling past it is quick.
const GRACE: Duration = Duration::from_millis(50);

/// Two partitions' view with `per_partition` tasks in each, caught up.
async fn two_partitions(per_partition: usize) -> TaskView {
    let (log, events, _) = memory_log(2).await;
    let now = now_ms();
    for p in 0..2u32 {
        let ids = (0..)
            .map(|k| format!("pinned-{k}"))
            .filter(|t| partition_for_key(t.as_bytes(), 2) == p)
            .take(per_partition);
        for (n, id) in ids.enumerate() {
            append(
                &log,
                &events,
                &command(&id, "hi", now - 1_000 + n as u64, 0),
            )
            .await;
        }
    }
    ready(&log, &events, ViewOptions::default()).await
}

async fn until_released(view: &TaskView, partition: u32) {
    tokio::time::timeout(PATIENCE, async {
        while view.holds_data(partition) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("released");
}

fn ids(page: &[crate::view::TaskInfo]) -> Vec<String> {
    page.iter().map(|t| t.id.to_string()).collect()
}

#[tokio::test]
async fn a_list_stalled_past_a_retires_grace_between_its_sync_and_its_read_lists_every_task() {
    let view = two_partitions(6).await;
    let filter = ListFilter {
        page_size: 100,
        ..ListFilter::default()
    };
    let (before, total) = view.list(&caller(), &filter);
    assert_eq!((before.len(), total), (12, 12));
    // A listing of the whole view and a member's share naming partition 1: pinned, then
    // synced; then partition 1 moves away and both stall far past the grace.
    let whole = view.pin_held();
    assert_eq!(whole.partitions(), [0, 1]);
    whole.sync(PATIENCE).await.unwrap();
    let mut share = view.pins();
    assert!(share.add(1) && share.add(1), "pinned once");
    assert_eq!(share.partitions(), [1]);
    share.sync(PATIENCE).await.unwrap();
    view.retire(1, GRACE).await.unwrap();
    tokio::time::sleep(GRACE * 8).await;
    // Neither comes short of partition 1 (its tasks are still there, followed).
    let (page, total) = whole.list(&caller(), &filter).unwrap();
    assert_eq!((ids(&page), total), (ids(&before), 12));
    let (page, total) = share.list(&caller(), &filter).unwrap();
    assert_eq!(total, 6);
    assert!(page.iter().all(|t| t.partition == 1));
    // A listing of the whole view that begins now leaves partition 1 to its new holder; a
    // share naming it still reads it while it is there.
    let now = view.pin_held();
    assert_eq!(now.partitions(), [0]);
    assert_eq!(now.list(&caller(), &filter).unwrap().1, 6);
    drop(now);
    share.sync(PATIENCE).await.unwrap();
    // Done: the release follows; a listing naming partition 1 then finds it gone.
    drop(whole);
    tokio::time::sleep(GRACE * 4).await;
    assert!(view.holds_data(1), "the share still pins it");
    drop(share);
    until_released(&view, 1).await;
    assert!(!view.pins().add(1));
    assert_eq!(view.list(&caller(), &filter).1, 6);
}

#[tokio::test]
async fn a_pinned_list_of_a_partition_released_outright_is_refused_not_short() {
    let view = two_partitions(3).await;
    let pins = view.pin_held();
    pins.sync(PATIENCE).await.unwrap();
    // A plain release does not wait for pins.
    view.release(1).await.unwrap();
    let refused = pins.list(&caller(), &ListFilter::default()).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Unavailable);
    let refused = pins.sync(PATIENCE).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Unavailable);
}

#[tokio::test]
async fn a_workers_look_after_its_sync_finds_its_task_across_a_retire_and_its_grace() {
    let view = two_partitions(1).await;
    let task = "pinned-0";
    let p = view.partition_of(task);
    // A worker's sync, pinned, then a move of the partition and a stall past the grace.
    let pin = view.pin_synced(p, PATIENCE).await.unwrap();
    view.retire(p, GRACE).await.unwrap();
    tokio::time::sleep(GRACE * 8).await;
    assert!(view.watch(task).is_some());
    assert!(view.lookup_any(task).is_some());
    let again = view.pin_synced_to(p, 1, PATIENCE).await.unwrap();
    drop((pin, again));
    until_released(&view, p).await;
    assert!(view.lookup_any(task).is_none());
    let refused = view.pin_synced(p, PATIENCE).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Unavailable);
}
